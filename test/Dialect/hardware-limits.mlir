// Configurations a Hopper GPU cannot run are rejected when the IR is read,
// with a message naming the limit and the value. (Other limits are tested
// where they are checked: the whole kernel's shared memory and register
// budgets in convert-wsc-to-nvvm-invalid.mlir, role ranges and TMA boxes in
// invalid.mlir, matmul configurations, TMA row strides and ptxas in
// test/python/test_limits.py.)
// RUN: wsc-opt --split-input-file --verify-diagnostics %s

// A pass option is held to the same rule, before the pass runs.
// RUN: not wsc-opt --warp-specialize='producer=warpgroup producer-registers=16' %examples/matmul_v2.mlir 2>&1 | FileCheck %s --check-prefix=OPTION
// OPTION: wsc-opt: error: pass 'warp-specialize': option 'producer-registers' must be a multiple of 8 from 24 to 256 (a setmaxnreg budget), got 16

func.func @registers_below_setmaxnreg_range() attributes {wsc.num_threads = 256 : i32} {
  // expected-error @below {{'wsc.role' op max_registers must be a multiple of 8 in [24, 256], got 16}}
  %r = "wsc.role"() {role = "producer", thread_begin = 128 : i32, num_threads = 128 : i32, max_registers = 16 : i32} : () -> i1
  return
}
// -----
func.func @registers_not_a_multiple_of_8() attributes {wsc.num_threads = 256 : i32} {
  // expected-error @below {{'wsc.role' op max_registers must be a multiple of 8 in [24, 256], got 100}}
  %r = "wsc.role"() {role = "consumer", thread_begin = 0 : i32, num_threads = 128 : i32, max_registers = 100 : i32} : () -> i1
  return
}
// -----
// 8 stages of 256x64 f16 are 256 KB, more than a block's 227 KB.
// expected-error @below {{'wsc.alloc_shared' op result needs 8 x 32768 = 262144 bytes of shared memory (8 stages of 256x64xf16, each 1024-byte aligned), more than the 232448 bytes (227 KB) a block may use on sm_90}}
%s = "wsc.alloc_shared"() : () -> memref<8x256x64xf16, 3>
// -----
// Each stage is 1024-byte aligned, so even tiny tiles take 1 KB a stage.
// expected-error @below {{'wsc.alloc_shared' op result needs 228 x 1024 = 233472 bytes of shared memory (228 stages of 8x8xf16, each 1024-byte aligned), more than the 232448 bytes (227 KB) a block may use on sm_90}}
%s = "wsc.alloc_shared"() : () -> memref<228x8x8xf16, 3>
// -----
// expected-error @below {{'wsc.mbarrier_alloc' op num_barriers must be in [1, 227] (one per stage; a ring has at most 227 1024-byte stages in 232448 bytes of shared memory), got 228}}
%b = "wsc.mbarrier_alloc"() {arrival_count = 1 : i32, num_barriers = 228 : i32} : () -> !wsc.mbarriers
// -----
// expected-error @below {{'wsc.mbarrier_alloc' op arrival_count must be in [1, 1048575] (the mbarrier arrival count limit), got 1048576}}
%b = "wsc.mbarrier_alloc"() {arrival_count = 1048576 : i32, num_barriers = 2 : i32} : () -> !wsc.mbarriers
// -----
%b = "wsc.mbarrier_alloc"() {arrival_count = 1 : i32, num_barriers = 2 : i32} : () -> !wsc.mbarriers
%c0 = arith.constant 0 : index
// expected-error @below {{'wsc.mbarrier_arrive_expect_tx' op tx_bytes must be in [1, 1048575] (the mbarrier transaction count limit), got 1048576}}
"wsc.mbarrier_arrive_expect_tx"(%b, %c0) {tx_bytes = 1048576 : i32} : (!wsc.mbarriers, index) -> ()
// -----
%c0 = arith.constant 0 : index
%p = arith.constant 0 : i1
// expected-error @below {{'wsc.ring_advance' op num_stages must be in [1, 227] (a ring has at most 227 1024-byte stages in 232448 bytes of shared memory), got 2147483647}}
%s:2 = "wsc.ring_advance"(%c0, %p) {num_stages = 2147483647 : i32} : (index, i1) -> (index, i1)
// -----
// expected-error @below {{'wsc.acc_alloc' op register tile 512x256 has 131072 elements, more than the 65536 32-bit registers of an SM}}
%acc = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 512, 256>, f32>
// -----
func.func @k_tile_not_a_wgmma_multiple() attributes {wsc.num_threads = 128 : i32} {
  %c0 = arith.constant 0 : index
  %s = "wsc.alloc_shared"() : () -> memref<2x128x40xf16, 3>
  %acc = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 128, 128>, f32>
  // expected-error @below {{'wsc.wgmma' op K tile 40 is not a multiple of 16 (the WGMMA K of f16)}}
  "wsc.wgmma"(%s, %s, %c0, %acc) {a_row = 0 : i32, b_layout = "nk"} : (memref<2x128x40xf16, 3>, memref<2x128x40xf16, 3>, index, !wsc.acc<array<i64: 128, 128>, f32>) -> ()
  return
}
// -----
func.func @a_rows_not_64_aligned() attributes {wsc.num_threads = 128 : i32} {
  %c0 = arith.constant 0 : index
  %a = "wsc.alloc_shared"() : () -> memref<2x128x64xf16, 3>
  %b = "wsc.alloc_shared"() : () -> memref<2x64x64xf16, 3>
  %acc = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 64, 64>, f32>
  // expected-error @below {{'wsc.wgmma' op rows [32, 96) of A are outside its 128-row tile or not 64-aligned}}
  "wsc.wgmma"(%a, %b, %c0, %acc) {a_row = 32 : i32, b_layout = "nk"} : (memref<2x128x64xf16, 3>, memref<2x64x64xf16, 3>, index, !wsc.acc<array<i64: 64, 64>, f32>) -> ()
  return
}
// -----
// A transposed A stage is [K, M]: its M extent is the stage's columns.
func.func @transposed_a_columns_outside_the_tile() attributes {wsc.num_threads = 128 : i32} {
  %c0 = arith.constant 0 : index
  %a = "wsc.alloc_shared"() : () -> memref<2x64x64xf16, 3>
  %b = "wsc.alloc_shared"() : () -> memref<2x16x64xf16, 3>
  %acc = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 64, 16>, f32>
  // expected-error @below {{'wsc.wgmma' op columns [64, 128) of A are outside its 64-column tile or not 64-aligned}}
  "wsc.wgmma"(%a, %b, %c0, %acc) {a_row = 64 : i32, a_transposed, b_layout = "nk"} : (memref<2x64x64xf16, 3>, memref<2x16x64xf16, 3>, index, !wsc.acc<array<i64: 64, 16>, f32>) -> ()
  return
}
// -----
// Outside a role every thread of the block runs the WGMMA: only one warpgroup may.
func.func @wgmma_in_a_two_warpgroup_block() attributes {wsc.num_threads = 256 : i32} {
  %c0 = arith.constant 0 : index
  %s = "wsc.alloc_shared"() : () -> memref<2x128x64xf16, 3>
  %acc = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 128, 128>, f32>
  // expected-error @below {{'wsc.wgmma' op outside a role needs a block of exactly one warpgroup (128 threads)}}
  "wsc.wgmma"(%s, %s, %c0, %acc) {a_row = 0 : i32, b_layout = "nk"} : (memref<2x128x64xf16, 3>, memref<2x128x64xf16, 3>, index, !wsc.acc<array<i64: 128, 128>, f32>) -> ()
  return
}
// -----
// expected-error @below {{'func.func' op attribute 'wsc.num_threads' must be a multiple of 32 in [32, 1024], got 2048}}
func.func @block_too_large() attributes {wsc.num_threads = 2048 : i32} {
  return
}
