// --convert-wsc-to-nvvm: specialized wsc kernels become NVVM kernels.
// RUN: wsc-opt --convert-wsc-to-nvvm --split-input-file %s | FileCheck %s
// A store whose column origin is a size (memref.dim, lowered before the store
// it feeds) lowers too: it once failed with an internal KeyError (fuzzer).
// RUN: sed 's/"wsc.store"(%acc, %c, %m0, %n0)/"wsc.store"(%acc, %c, %m0, %k)/' %S/../../examples/matmul_v2.mlir | wsc-opt --convert-wsc-to-nvvm - | FileCheck %s --check-prefix=DIM-ORIGIN
// DIM-ORIGIN: llvm.func @matmul(

// V3 (one consumer warpgroup, one producer warp) with 64x64x64 tiles and a
// ring of 2 stages whose stage is a run-time loop value.

// CHECK-LABEL: module attributes {gpu.container_module}
// CHECK: gpu.module @wsc_kernels [#nvvm.target<O = 3, chip = "sm_90a", features = "+ptx90">]
// CHECK: llvm.mlir.global external @wsc_smem() {addr_space = 3 : i32, alignment = 1024 : i64} : !llvm.array<0 x i8>
// CHECK: llvm.func @matmul(%[[TMA:.*]]: !llvm.ptr {llvm.align = 64 : i64, llvm.byval = !llvm.array<128 x i8>, nvvm.grid_constant}, %[[TMB:.*]]: !llvm.ptr {llvm.align = 64 : i64, llvm.byval = !llvm.array<128 x i8>, nvvm.grid_constant}, %{{.*}}: !llvm.ptr {llvm.noalias}, %{{.*}}: i32, %{{.*}}: i32, %{{.*}}: i32, %{{.*}}: i32)
// CHECK-SAME: nvvm.kernel, nvvm.maxntid = array<i32: 160, 1, 1>, nvvm.minctasm = 1 : i32
// CHECK-SAME: wsc.kernel_info = "{{.*}}\22dynamic_smem_bytes\22: 33824
// CHECK-SAME: \22params\22: [{\22kind\22: \22tensor_map\22, \22name\22: \22a\22}, {\22kind\22: \22tensor_map\22, \22name\22: \22b\22}, {\22kind\22: \22pointer\22, \22name\22: \22c\22}, {\22kind\22: \22i32\22, \22name\22: \22m\22}, {\22kind\22: \22i32\22, \22name\22: \22n\22}, {\22kind\22: \22i32\22, \22name\22: \22k\22}, {\22kind\22: \22i32\22, \22name\22: \22ldc\22}]
// CHECK-NOT: "wsc.
// Thread 0 initialises both barrier arrays, fences, then the whole block syncs.
// CHECK: nvvm.read.ptx.sreg.tid.x : i32
// CHECK: nvvm.mbarrier.init %{{.*}}, %{{.*}} : !llvm.ptr<3>, i32
// CHECK: nvvm.mbarrier.init
// CHECK: nvvm.fence.mbarrier.init
// CHECK: nvvm.mbarrier.init
// CHECK: nvvm.mbarrier.init
// CHECK: nvvm.fence.mbarrier.init
// CHECK: nvvm.barrier{{$}}
// The consumer: registers down to its budget, wait (parity loop), 4 k16 WGMMAs
// adding to the accumulator carried across the loop (scale-d <one>).
// CHECK: nvvm.setmaxregister{{ +}}decrease 232
// CHECK: llvm.inline_asm has_side_effects "{{.*}}mbarrier.try_wait.parity.shared::cta.b64
// CHECK: nvvm.wgmma.fence.aligned
// CHECK-COUNT-4: nvvm.wgmma.mma_async %{{.*}}, %{{.*}}, %{{.*}}, <m = 64, n = 64, k = 16>, D[<f32>, <one>], A[<f16>, <one>, <row>], B[<f16>, <one>, <col>]
// CHECK: nvvm.wgmma.commit.group.sync.aligned
// CHECK: nvvm.wgmma.wait.group.sync.aligned 0
// CHECK: nvvm.mbarrier.arrive %{{.*}} : !llvm.ptr<3>
// A wsc.sync inside the role is a named barrier over its threads (bar.sync 1, 128).
// CHECK: nvvm.barrier id = %{{[0-9]+}} number_of_threads = %{{[0-9]+}}
// The epilogue stores column pairs when the tile is inside C, else element by element.
// CHECK: llvm.store %{{.*}}, %{{.*}} {alignment = 8 : i64} : vector<2xf32>, !llvm.ptr
// CHECK: llvm.store %{{.*}}, %{{.*}} {alignment = 4 : i64} : f32, !llvm.ptr
// The producer: registers down to 40, wait for an empty stage, one elected
// thread arms the full barrier and issues both TMA copies (coordinates col, row).
// CHECK: nvvm.setmaxregister{{ +}}decrease 40
// CHECK: mbarrier.try_wait.parity.shared::cta.b64
// CHECK: nvvm.mbarrier.arrive.expect_tx %{{.*}}, %{{.*}} : !llvm.ptr<3>, i32
// CHECK: nvvm.cp.async.bulk.tensor.shared.cluster.global %{{.*}}, %[[TMA]], %{{.*}}, box[%{{.*}}, %{{.*}}] : !llvm.ptr<7>, !llvm.ptr
// CHECK: nvvm.cp.async.bulk.tensor.shared.cluster.global %{{.*}}, %[[TMB]], %{{.*}}, box[%{{.*}}, %{{.*}}] : !llvm.ptr<7>, !llvm.ptr
// CHECK: mbarrier.try_wait.parity.shared::cta.b64
// CHECK: llvm.return
func.func @matmul(%a: memref<?x?xf16>, %b: memref<?x?xf16>, %c: memref<?x?xf32>)
    attributes {wsc.num_threads = 160 : i32} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c64 = arith.constant 64 : index
  %false = arith.constant false
  %true = arith.constant true
  %bx = gpu.block_id x
  %by = gpu.block_id y
  %m0 = arith.muli %bx, %c64 : index
  %n0 = arith.muli %by, %c64 : index
  %k = memref.dim %a, %c1 : memref<?x?xf16>
  %k_tiles = arith.ceildivui %k, %c64 : index
  %sa = "wsc.alloc_shared"() : () -> memref<2x64x64xf16, 3>
  %sb = "wsc.alloc_shared"() : () -> memref<2x64x64xf16, 3>
  %full = "wsc.mbarrier_alloc"() {arrival_count = 1 : i32, num_barriers = 2 : i32} : () -> !wsc.mbarriers
  %empty = "wsc.mbarrier_alloc"() {arrival_count = 128 : i32, num_barriers = 2 : i32} : () -> !wsc.mbarriers
  "wsc.sync"() : () -> ()
  %is_consumer = "wsc.role"() {role = "consumer", thread_begin = 0 : i32, num_threads = 128 : i32, max_registers = 232 : i32} : () -> i1
  scf.if %is_consumer {
    %acc = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 64, 64>, f32>
    %cs:2 = scf.for %kt = %c0 to %k_tiles step %c1 iter_args(%stage = %c0, %phase = %false) -> (index, i1) {
      "wsc.mbarrier_wait"(%full, %stage, %phase) : (!wsc.mbarriers, index, i1) -> ()
      "wsc.wgmma_fence"() : () -> ()
      "wsc.wgmma"(%sa, %sb, %stage, %acc) {a_row = 0 : i32, b_layout = "nk"} : (memref<2x64x64xf16, 3>, memref<2x64x64xf16, 3>, index, !wsc.acc<array<i64: 64, 64>, f32>) -> ()
      "wsc.wgmma_commit_group"() : () -> ()
      "wsc.wgmma_wait_group"() {pending = 0 : i32} : () -> ()
      "wsc.mbarrier_arrive"(%empty, %stage) : (!wsc.mbarriers, index) -> ()
      %next_stage, %next_phase = "wsc.ring_advance"(%stage, %phase) {num_stages = 2 : i32} : (index, i1) -> (index, i1)
      scf.yield %next_stage, %next_phase : index, i1
    }
    "wsc.sync"() : () -> ()
    "wsc.store"(%acc, %c, %m0, %n0) : (!wsc.acc<array<i64: 64, 64>, f32>, memref<?x?xf32>, index, index) -> ()
  }
  %is_producer = "wsc.role"() {role = "producer", thread_begin = 128 : i32, num_threads = 32 : i32, max_registers = 40 : i32} : () -> i1
  scf.if %is_producer {
    %ps:2 = scf.for %kt = %c0 to %k_tiles step %c1 iter_args(%stage = %c0, %phase = %true) -> (index, i1) {
      "wsc.mbarrier_wait"(%empty, %stage, %phase) : (!wsc.mbarriers, index, i1) -> ()
      %k0 = arith.muli %kt, %c64 : index
      %elected = "wsc.elect"() : () -> i1
      scf.if %elected {
        "wsc.mbarrier_arrive_expect_tx"(%full, %stage) {tx_bytes = 16384 : i32} : (!wsc.mbarriers, index) -> ()
        "wsc.tma_load"(%a, %m0, %k0, %sa, %stage, %full) : (memref<?x?xf16>, index, index, memref<2x64x64xf16, 3>, index, !wsc.mbarriers) -> ()
        "wsc.tma_load"(%b, %n0, %k0, %sb, %stage, %full) : (memref<?x?xf16>, index, index, memref<2x64x64xf16, 3>, index, !wsc.mbarriers) -> ()
      }
      %next_stage, %next_phase = "wsc.ring_advance"(%stage, %phase) {num_stages = 2 : i32} : (index, i1) -> (index, i1)
      scf.yield %next_stage, %next_phase : index, i1
    }
    %drain = arith.minui %k_tiles, %c2 : index
    %ds:2 = scf.for %i = %c0 to %drain step %c1 iter_args(%stage = %ps#0, %phase = %ps#1) -> (index, i1) {
      "wsc.mbarrier_wait"(%empty, %stage, %phase) : (!wsc.mbarriers, index, i1) -> ()
      %next_stage, %next_phase = "wsc.ring_advance"(%stage, %phase) {num_stages = 2 : i32} : (index, i1) -> (index, i1)
      scf.yield %next_stage, %next_phase : index, i1
    }
  }
  return
}

// -----

// A one-warpgroup kernel without roles (no setmaxnreg; wsc.sync is bar.sync 0),
// its accumulator's first WGMMA overwriting the zeros (scale-d <zero>),
// B given as [K, N] (N-major: B layout <row>, trans-b 1), bf16 in and out
// (wsc.cast rounds to nearest even), and constant stage operands as
// --unroll-ring-buffer leaves them.

// CHECK-LABEL: module attributes {gpu.container_module}
// CHECK: llvm.func @kn_bf16(
// CHECK-SAME: nvvm.maxntid = array<i32: 128, 1, 1>
// CHECK-SAME: \22params\22: [{\22kind\22: \22tensor_map\22, \22name\22: \22a\22}, {\22kind\22: \22tensor_map\22, \22name\22: \22b\22}, {\22kind\22: \22pointer\22, \22name\22: \22c\22}, {\22kind\22: \22i32\22, \22name\22: \22m\22}, {\22kind\22: \22i32\22, \22name\22: \22n\22}, {\22kind\22: \22i32\22, \22name\22: \22k\22}, {\22kind\22: \22i32\22, \22name\22: \22ldc\22}]
// CHECK-SAME: \22tensor_maps\22: {\22a\22: {\22box\22: [64, 32], \22swizzle\22: \2264B\22, \22tensor\22: \22a\22}, \22b\22: {\22box\22: [32, 64], \22swizzle\22: \22128B\22, \22tensor\22: \22b\22}}
// CHECK-NOT: nvvm.setmaxregister
// CHECK: nvvm.barrier{{$}}
// CHECK: nvvm.cp.async.bulk.tensor.shared.cluster.global
// CHECK: nvvm.cp.async.bulk.tensor.shared.cluster.global
// CHECK: mbarrier.try_wait.parity.shared::cta.b64
// CHECK: nvvm.wgmma.mma_async %{{.*}}, %{{.*}}, %{{.*}}, <m = 64, n = 64, k = 16>, D[<f32>, <zero>], A[<bf16>, <one>, <row>], B[<bf16>, <one>, <row>]
// CHECK: nvvm.wgmma.mma_async %{{.*}}, %{{.*}}, %{{.*}}, <m = 64, n = 64, k = 16>, D[<f32>, <one>], A[<bf16>, <one>, <row>], B[<bf16>, <one>, <row>]
// CHECK: nvvm.wgmma.wait.group.sync.aligned 0
// CHECK: llvm.fptrunc %{{.*}} : f32 to bf16
// CHECK: llvm.store %{{.*}}, %{{.*}} {alignment = 4 : i64} : vector<2xbf16>, !llvm.ptr
func.func @kn_bf16(%a: memref<?x?xbf16>, %b: memref<?x?xbf16>, %c: memref<?x?xbf16>)
    attributes {wsc.num_threads = 128 : i32} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %false = arith.constant false
  %bx = gpu.block_id x
  %by = gpu.block_id y
  %c64 = arith.constant 64 : index
  %m0 = arith.muli %bx, %c64 : index
  %n0 = arith.muli %by, %c64 : index
  %sa = "wsc.alloc_shared"() : () -> memref<2x64x32xbf16, 3>
  %sb = "wsc.alloc_shared"() : () -> memref<2x32x64xbf16, 3>
  %full = "wsc.mbarrier_alloc"() {arrival_count = 1 : i32, num_barriers = 2 : i32} : () -> !wsc.mbarriers
  "wsc.sync"() : () -> ()
  %acc = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 64, 64>, f32>
  %elected = "wsc.elect"() : () -> i1
  scf.if %elected {
    "wsc.mbarrier_arrive_expect_tx"(%full, %c1) {tx_bytes = 8192 : i32} : (!wsc.mbarriers, index) -> ()
    "wsc.tma_load"(%a, %m0, %c0, %sa, %c1, %full) : (memref<?x?xbf16>, index, index, memref<2x64x32xbf16, 3>, index, !wsc.mbarriers) -> ()
    "wsc.tma_load"(%b, %c0, %n0, %sb, %c1, %full) : (memref<?x?xbf16>, index, index, memref<2x32x64xbf16, 3>, index, !wsc.mbarriers) -> ()
  }
  "wsc.mbarrier_wait"(%full, %c1, %false) : (!wsc.mbarriers, index, i1) -> ()
  "wsc.wgmma_fence"() : () -> ()
  "wsc.wgmma"(%sa, %sb, %c1, %acc) {a_row = 0 : i32, b_layout = "kn"} : (memref<2x64x32xbf16, 3>, memref<2x32x64xbf16, 3>, index, !wsc.acc<array<i64: 64, 64>, f32>) -> ()
  "wsc.wgmma_commit_group"() : () -> ()
  "wsc.wgmma_wait_group"() {pending = 0 : i32} : () -> ()
  %h = "wsc.cast"(%acc) : (!wsc.acc<array<i64: 64, 64>, f32>) -> !wsc.acc<array<i64: 64, 64>, bf16>
  "wsc.store"(%h, %c, %m0, %n0) : (!wsc.acc<array<i64: 64, 64>, bf16>, memref<?x?xbf16>, index, index) -> ()
  return
}

// -----

// A [K, N] B stage wider than the product's N: 112 columns of a 128-column
// stage (its rows padded to two 128-byte swizzle atoms, one TMA box each);
// the WGMMA is m64n112 and reads the first 112 columns.

// CHECK-LABEL: llvm.func @kn_padded_b(
// CHECK-SAME: \22b\22: {\22box\22: [64, 64], \22swizzle\22: \22128B\22, \22tensor\22: \22b\22}
// CHECK-COUNT-3: nvvm.cp.async.bulk.tensor.shared.cluster.global
// CHECK: nvvm.wgmma.mma_async %{{.*}}, %{{.*}}, %{{.*}}, <m = 64, n = 112, k = 16>, D[<f32>, <zero>], A[<f16>, <one>, <row>], B[<f16>, <one>, <row>]
func.func @kn_padded_b(%a: memref<?x?xf16>, %b: memref<?x?xf16>, %c: memref<?x?xf32>)
    attributes {wsc.num_threads = 128 : i32} {
  %c0 = arith.constant 0 : index
  %false = arith.constant false
  %bx = gpu.block_id x
  %by = gpu.block_id y
  %c64 = arith.constant 64 : index
  %c112 = arith.constant 112 : index
  %m0 = arith.muli %bx, %c64 : index
  %n0 = arith.muli %by, %c112 : index
  %sa = "wsc.alloc_shared"() : () -> memref<1x64x64xf16, 3>
  %sb = "wsc.alloc_shared"() : () -> memref<1x64x128xf16, 3>
  %full = "wsc.mbarrier_alloc"() {arrival_count = 1 : i32, num_barriers = 1 : i32} : () -> !wsc.mbarriers
  "wsc.sync"() : () -> ()
  %acc = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 64, 112>, f32>
  %elected = "wsc.elect"() : () -> i1
  scf.if %elected {
    "wsc.mbarrier_arrive_expect_tx"(%full, %c0) {tx_bytes = 24576 : i32} : (!wsc.mbarriers, index) -> ()
    "wsc.tma_load"(%a, %m0, %c0, %sa, %c0, %full) : (memref<?x?xf16>, index, index, memref<1x64x64xf16, 3>, index, !wsc.mbarriers) -> ()
    "wsc.tma_load"(%b, %c0, %n0, %sb, %c0, %full) : (memref<?x?xf16>, index, index, memref<1x64x128xf16, 3>, index, !wsc.mbarriers) -> ()
  }
  "wsc.mbarrier_wait"(%full, %c0, %false) : (!wsc.mbarriers, index, i1) -> ()
  "wsc.wgmma_fence"() : () -> ()
  "wsc.wgmma"(%sa, %sb, %c0, %acc) {a_row = 0 : i32, b_layout = "kn"} : (memref<1x64x64xf16, 3>, memref<1x64x128xf16, 3>, index, !wsc.acc<array<i64: 64, 112>, f32>) -> ()
  "wsc.wgmma_commit_group"() : () -> ()
  "wsc.wgmma_wait_group"() {pending = 0 : i32} : () -> ()
  "wsc.store"(%acc, %c, %m0, %n0) : (!wsc.acc<array<i64: 64, 112>, f32>, memref<?x?xf32>, index, index) -> ()
  return
}

// -----

// Swapped operands with B given as [K, N] (C^T = B^T A^T): B's [K, N] stage is
// the WGMMA's A operand, read M-major (A layout <col>, trans-a 1), A's
// K-major [M, K] stage its B operand; the 64 x 16 accumulator is stored
// transposed. The sizes are named after C: A's rows are "m".

// CHECK-LABEL: llvm.func @kn_swapped(
// CHECK-SAME: \22dims\22: {\22k\22: {{\[\[}}\22a\22, 1], [\22b\22, 0]], \22m\22: {{\[\[}}\22a\22, 0], [\22c\22, 0]], \22n\22: {{\[\[}}\22b\22, 1], [\22c\22, 1]]}
// CHECK-SAME: \22tensor_maps\22: {\22a\22: {\22box\22: [16, 64], \22swizzle\22: \22128B\22, \22tensor\22: \22a\22}, \22b\22: {\22box\22: [64, 64], \22swizzle\22: \22128B\22, \22tensor\22: \22b\22}}
// CHECK: nvvm.wgmma.mma_async %{{.*}}, %{{.*}}, %{{.*}}, <m = 64, n = 16, k = 16>, D[<f32>, <zero>], A[<f16>, <one>, <col>], B[<f16>, <one>, <col>]
// CHECK-COUNT-3: nvvm.wgmma.mma_async %{{.*}}, %{{.*}}, %{{.*}}, <m = 64, n = 16, k = 16>, D[<f32>, <one>], A[<f16>, <one>, <col>], B[<f16>, <one>, <col>]
func.func @kn_swapped(%a: memref<?x?xf16>, %b: memref<?x?xf16>, %c: memref<?x?xf32>)
    attributes {wsc.num_threads = 128 : i32} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %false = arith.constant false
  %sa = "wsc.alloc_shared"() : () -> memref<2x16x64xf16, 3>
  %sb = "wsc.alloc_shared"() : () -> memref<2x64x64xf16, 3>
  %full = "wsc.mbarrier_alloc"() {arrival_count = 1 : i32, num_barriers = 2 : i32} : () -> !wsc.mbarriers
  "wsc.sync"() : () -> ()
  %acc = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 64, 16>, f32>
  %elected = "wsc.elect"() : () -> i1
  scf.if %elected {
    "wsc.mbarrier_arrive_expect_tx"(%full, %c1) {tx_bytes = 10240 : i32} : (!wsc.mbarriers, index) -> ()
    "wsc.tma_load"(%a, %c0, %c0, %sa, %c1, %full) : (memref<?x?xf16>, index, index, memref<2x16x64xf16, 3>, index, !wsc.mbarriers) -> ()
    "wsc.tma_load"(%b, %c0, %c0, %sb, %c1, %full) : (memref<?x?xf16>, index, index, memref<2x64x64xf16, 3>, index, !wsc.mbarriers) -> ()
  }
  "wsc.mbarrier_wait"(%full, %c1, %false) : (!wsc.mbarriers, index, i1) -> ()
  "wsc.wgmma_fence"() : () -> ()
  "wsc.wgmma"(%sb, %sa, %c1, %acc) {a_row = 0 : i32, a_transposed, b_layout = "nk"} : (memref<2x64x64xf16, 3>, memref<2x16x64xf16, 3>, index, !wsc.acc<array<i64: 64, 16>, f32>) -> ()
  "wsc.wgmma_commit_group"() : () -> ()
  "wsc.wgmma_wait_group"() {pending = 0 : i32} : () -> ()
  "wsc.store"(%acc, %c, %c0, %c0) {transpose} : (!wsc.acc<array<i64: 64, 16>, f32>, memref<?x?xf32>, index, index) -> ()
  return
}

// -----

// A TMA-store epilogue with an f16 accumulator: WGMMA works on f16x2 pairs,
// each thread stores its pairs at their swizzled offsets (xor), fences them
// for the async proxy, syncs, and one thread copies the tile out as one bulk
// group; the kernel ends waiting for every copy to have read shared memory.
func.func @tma_store_epilogue(%a: memref<?x?xf16>, %b: memref<?x?xf16>, %c: memref<?x?xf16>) attributes {wsc.num_threads = 128 : i32} {
  %c0 = arith.constant 0 : index
  %false = arith.constant false
  %sa = "wsc.alloc_shared"() : () -> memref<1x64x64xf16, 3>
  %sb = "wsc.alloc_shared"() : () -> memref<1x64x64xf16, 3>
  %sc = "wsc.alloc_shared"() : () -> memref<1x64x64xf16, 3>
  %full = "wsc.mbarrier_alloc"() {arrival_count = 1 : i32, num_barriers = 1 : i32} : () -> !wsc.mbarriers
  "wsc.sync"() : () -> ()
  %acc = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 64, 64>, f16>
  %e = "wsc.elect"() : () -> i1
  scf.if %e {
    "wsc.mbarrier_arrive_expect_tx"(%full, %c0) {tx_bytes = 16384 : i32} : (!wsc.mbarriers, index) -> ()
    "wsc.tma_load"(%a, %c0, %c0, %sa, %c0, %full) : (memref<?x?xf16>, index, index, memref<1x64x64xf16, 3>, index, !wsc.mbarriers) -> ()
    "wsc.tma_load"(%b, %c0, %c0, %sb, %c0, %full) : (memref<?x?xf16>, index, index, memref<1x64x64xf16, 3>, index, !wsc.mbarriers) -> ()
  }
  "wsc.mbarrier_wait"(%full, %c0, %false) : (!wsc.mbarriers, index, i1) -> ()
  "wsc.wgmma_fence"() : () -> ()
  "wsc.wgmma"(%sa, %sb, %c0, %acc) {a_row = 0 : i32, b_layout = "nk"} : (memref<1x64x64xf16, 3>, memref<1x64x64xf16, 3>, index, !wsc.acc<array<i64: 64, 64>, f16>) -> ()
  "wsc.wgmma_commit_group"() : () -> ()
  "wsc.wgmma_wait_group"() {pending = 0 : i32} : () -> ()
  "wsc.store_shared"(%acc, %sc, %c0) : (!wsc.acc<array<i64: 64, 64>, f16>, memref<1x64x64xf16, 3>, index) -> ()
  "wsc.fence_proxy_async"() : () -> ()
  "wsc.sync"() : () -> ()
  %e2 = "wsc.elect"() : () -> i1
  scf.if %e2 {
    "wsc.tma_store"(%sc, %c0, %c, %c0, %c0) : (memref<1x64x64xf16, 3>, index, memref<?x?xf16>, index, index) -> ()
    "wsc.tma_store_wait"() {pending = 0 : i32} : () -> ()
  }
  return
}
// The kernel info gives C a tensor map (one 64x64 box, 128-byte swizzle)
// and records the f16 accumulator.
// CHECK-LABEL: llvm.func @tma_store_epilogue
// CHECK-SAME: \22accumulator\22: \22f16\22
// CHECK-SAME: \22c\22: {\22box\22: [64, 64], \22swizzle\22: \22128B\22
// CHECK: nvvm.wgmma.mma_async {{.*}} D[<f16>, <one>], A[<f16>, <one>, <row>], B[<f16>, <one>, <col>] : !llvm.struct<(vector<2xf16>,
// CHECK: [[KEYED:%.*]] = llvm.xor
// CHECK: llvm.store {{.*}} {alignment = 4 : i64} : vector<2xf16>, !llvm.ptr<3>
// CHECK: nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}
// CHECK-NEXT: nvvm.barrier
// CHECK: nvvm.cp.async.bulk.tensor.global.shared.cta %arg2, {{%.*}}, box[{{%.*}}, {{%.*}}] : !llvm.ptr, <3>
// CHECK-NEXT: nvvm.cp.async.bulk.commit.group
// CHECK-NEXT: nvvm.cp.async.bulk.wait_group 0 {read}
// CHECK: nvvm.cp.async.bulk.wait_group 0 {read}
// CHECK-NEXT: llvm.return

// -----

// The coalesced-store epilogue: the threads sync after staging the tile (no
// proxy fence), then each warp copies whole rows, 32 consecutive elements per
// store; C is a plain pointer with its row stride, not a tensor map. The
// tile is copied without bounds checks when it lies inside C, with one
// check per element otherwise.
func.func @coalesced_store_epilogue(%a: memref<?x?xf16>, %b: memref<?x?xf16>, %c: memref<?x?xf16>) attributes {wsc.num_threads = 128 : i32} {
  %c0 = arith.constant 0 : index
  %false = arith.constant false
  %sa = "wsc.alloc_shared"() : () -> memref<1x64x64xf16, 3>
  %sb = "wsc.alloc_shared"() : () -> memref<1x64x64xf16, 3>
  %sc = "wsc.alloc_shared"() : () -> memref<1x64x64xf16, 3>
  %full = "wsc.mbarrier_alloc"() {arrival_count = 1 : i32, num_barriers = 1 : i32} : () -> !wsc.mbarriers
  "wsc.sync"() : () -> ()
  %acc = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 64, 64>, f16>
  %e = "wsc.elect"() : () -> i1
  scf.if %e {
    "wsc.mbarrier_arrive_expect_tx"(%full, %c0) {tx_bytes = 16384 : i32} : (!wsc.mbarriers, index) -> ()
    "wsc.tma_load"(%a, %c0, %c0, %sa, %c0, %full) : (memref<?x?xf16>, index, index, memref<1x64x64xf16, 3>, index, !wsc.mbarriers) -> ()
    "wsc.tma_load"(%b, %c0, %c0, %sb, %c0, %full) : (memref<?x?xf16>, index, index, memref<1x64x64xf16, 3>, index, !wsc.mbarriers) -> ()
  }
  "wsc.mbarrier_wait"(%full, %c0, %false) : (!wsc.mbarriers, index, i1) -> ()
  "wsc.wgmma_fence"() : () -> ()
  "wsc.wgmma"(%sa, %sb, %c0, %acc) {a_row = 0 : i32, b_layout = "nk"} : (memref<1x64x64xf16, 3>, memref<1x64x64xf16, 3>, index, !wsc.acc<array<i64: 64, 64>, f16>) -> ()
  "wsc.wgmma_commit_group"() : () -> ()
  "wsc.wgmma_wait_group"() {pending = 0 : i32} : () -> ()
  "wsc.store_shared"(%acc, %sc, %c0) : (!wsc.acc<array<i64: 64, 64>, f16>, memref<1x64x64xf16, 3>, index) -> ()
  "wsc.sync"() : () -> ()
  "wsc.coalesced_store"(%sc, %c0, %c, %c0, %c0) : (memref<1x64x64xf16, 3>, index, memref<?x?xf16>, index, index) -> ()
  return
}
// CHECK-LABEL: llvm.func @coalesced_store_epilogue
// CHECK-SAME: %arg2: !llvm.ptr {llvm.noalias}
// CHECK-SAME: {\22kind\22: \22pointer\22, \22name\22: \22c\22}
// CHECK: llvm.store {{.*}} : vector<2xf16>, !llvm.ptr<3>
// CHECK-NOT: nvvm.fence.proxy
// CHECK: nvvm.barrier
// CHECK: llvm.cond_br [[WHOLE:%.*]], ^[[UNCHECKED:bb[0-9]+]], ^[[CHECKED:bb[0-9]+]]
// CHECK: ^[[UNCHECKED]]:
// CHECK: llvm.load {{%.*}} : !llvm.ptr<3> -> f16
// CHECK-NEXT: llvm.store {{%.*}}, {{%.*}} : f16, !llvm.ptr
// CHECK: llvm.getelementptr {{%.*}}[32] : (!llvm.ptr) -> !llvm.ptr, f16
// CHECK: ^[[CHECKED]]:
// CHECK: llvm.icmp "slt"
// CHECK: llvm.cond_br
// CHECK: llvm.load {{%.*}} : !llvm.ptr<3> -> f16
// CHECK-NEXT: llvm.store {{%.*}}, {{%.*}} : f16, !llvm.ptr
// CHECK-NOT: cp.async.bulk
// CHECK: llvm.return

// -----

// A kernel in clusters of two blocks (from test/passes/warp-specialize-cluster.mlir,
// specialized): the llvm.func asks for 2x1x1 clusters, its kernel info says so,
// B's tensor map box is one block's slice (64 of the 128 rows), the copy of
// B is multicast to both blocks, and a release arrives on this block's empty
// barrier, then on the other's through mapa.
func.func @cluster_of_two(%arg0: memref<?x?xf16>, %arg1: memref<?x?xf16>, %arg2: memref<?x?xf32>) attributes {wsc.cluster_size = 2 : i32, wsc.num_threads = 160 : i32} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %c128 = arith.constant 128 : index
  %false = arith.constant false
  %dim = memref.dim %arg0, %c1 : memref<?x?xf16>
  %0 = arith.ceildivui %dim, %c64 : index
  %1 = "wsc.alloc_shared"() : () -> memref<2x128x64xf16, 3>
  %2 = "wsc.alloc_shared"() : () -> memref<2x128x64xf16, 3>
  %3 = "wsc.mbarrier_alloc"() {arrival_count = 1 : i32, num_barriers = 2 : i32} : () -> !wsc.mbarriers
  %4 = "wsc.mbarrier_alloc"() {arrival_count = 256 : i32, num_barriers = 2 : i32} : () -> !wsc.mbarriers
  "wsc.cluster_sync"() : () -> ()
  %5 = "wsc.cluster_rank"() : () -> index
  %6 = arith.muli %5, %c128 : index
  %c0_0 = arith.constant 0 : index
  %7 = "wsc.role"() {num_threads = 128 : i32, role = "consumer", thread_begin = 0 : i32} : () -> i1
  scf.if %7 {
    %9 = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 128, 128>, f32>
    %false_1 = arith.constant false
    %10:2 = scf.for %arg3 = %c0 to %0 step %c1 iter_args(%arg4 = %c0_0, %arg5 = %false_1) -> (index, i1) {
      "wsc.mbarrier_wait"(%3, %arg4, %arg5) : (!wsc.mbarriers, index, i1) -> ()
      "wsc.wgmma_fence"() : () -> ()
      "wsc.wgmma"(%1, %2, %arg4, %9) {a_row = 0 : i32, b_layout = "nk"} : (memref<2x128x64xf16, 3>, memref<2x128x64xf16, 3>, index, !wsc.acc<array<i64: 128, 128>, f32>) -> ()
      "wsc.wgmma_commit_group"() : () -> ()
      "wsc.wgmma_wait_group"() {pending = 0 : i32} : () -> ()
      "wsc.mbarrier_arrive"(%4, %arg4) {every_cta} : (!wsc.mbarriers, index) -> ()
      %11:2 = "wsc.ring_advance"(%arg4, %arg5) {num_stages = 2 : i32} : (index, i1) -> (index, i1)
      scf.yield %11#0, %11#1 : index, i1
    }
    "wsc.store"(%9, %arg2, %6, %c0) : (!wsc.acc<array<i64: 128, 128>, f32>, memref<?x?xf32>, index, index) -> ()
  }
  %8 = "wsc.role"() {num_threads = 32 : i32, role = "producer", thread_begin = 128 : i32} : () -> i1
  scf.if %8 {
    %true = arith.constant true
    %9:2 = scf.for %arg3 = %c0 to %0 step %c1 iter_args(%arg4 = %c0_0, %arg5 = %true) -> (index, i1) {
      "wsc.mbarrier_wait"(%4, %arg4, %arg5) : (!wsc.mbarriers, index, i1) -> ()
      %11 = arith.muli %arg3, %c64 : index
      %12 = "wsc.elect"() : () -> i1
      scf.if %12 {
        "wsc.mbarrier_arrive_expect_tx"(%3, %arg4) {tx_bytes = 32768 : i32} : (!wsc.mbarriers, index) -> ()
        "wsc.tma_load"(%arg0, %6, %11, %1, %arg4, %3) : (memref<?x?xf16>, index, index, memref<2x128x64xf16, 3>, index, !wsc.mbarriers) -> ()
        "wsc.tma_load"(%arg1, %c0, %11, %2, %arg4, %3) {multicast} : (memref<?x?xf16>, index, index, memref<2x128x64xf16, 3>, index, !wsc.mbarriers) -> ()
      }
      %13:2 = "wsc.ring_advance"(%arg4, %arg5) {num_stages = 2 : i32} : (index, i1) -> (index, i1)
      scf.yield %13#0, %13#1 : index, i1
    }
    %c2 = arith.constant 2 : index
    %c0_1 = arith.constant 0 : index
    %c1_2 = arith.constant 1 : index
    %10:2 = scf.for %arg3 = %c0_1 to %c2 step %c1_2 iter_args(%arg4 = %9#0, %arg5 = %9#1) -> (index, i1) {
      %11 = arith.addi %arg3, %0 : index
      %12 = arith.cmpi uge, %11, %c2 : index
      scf.if %12 {
        "wsc.mbarrier_wait"(%4, %arg4, %arg5) : (!wsc.mbarriers, index, i1) -> ()
      }
      %13:2 = "wsc.ring_advance"(%arg4, %arg5) {num_stages = 2 : i32} : (index, i1) -> (index, i1)
      scf.yield %13#0, %13#1 : index, i1
    }
  }
  return
}
// CHECK-LABEL: llvm.func @cluster_of_two
// CHECK-SAME: nvvm.cluster_dim = array<i32: 2, 1, 1>
// CHECK-SAME: \22cluster\22: 2
// CHECK-SAME: \22b\22: {\22box\22: [64, 64]
// CHECK: nvvm.cluster.arrive {aligned}
// CHECK-NEXT: nvvm.cluster.wait {aligned}
// CHECK: nvvm.read.ptx.sreg.cluster.ctarank : i32
// CHECK: nvvm.mbarrier.arrive [[OWN:%.*]] : !llvm.ptr<3>
// CHECK: [[PEER:%.*]] = nvvm.mapa [[OWN]], {{%.*}} : !llvm.ptr<3> -> !llvm.ptr<7>
// CHECK-NEXT: nvvm.mbarrier.arrive [[PEER]] : !llvm.ptr<7>
// CHECK: nvvm.cp.async.bulk.tensor.shared.cluster.global {{%.*}}, %arg0,
// CHECK: nvvm.cp.async.bulk.tensor.shared.cluster.global {{%.*}}, %arg1, {{.*}} multicast_mask =

// -----

// Releases of one arrival per warp: the warp synchronizes, then its first
// lane arrives, on this block's barrier and, in a cluster, on the other's.
func.func @per_warp_release() attributes {wsc.cluster_size = 2 : i32, wsc.num_threads = 128 : i32} {
  %c0 = arith.constant 0 : index
  %empty = "wsc.mbarrier_alloc"() {arrival_count = 8 : i32, num_barriers = 1 : i32} : () -> !wsc.mbarriers
  "wsc.cluster_sync"() : () -> ()
  "wsc.mbarrier_arrive"(%empty, %c0) {every_cta, per_warp} : (!wsc.mbarriers, index) -> ()
  "wsc.mbarrier_arrive"(%empty, %c0) {per_warp} : (!wsc.mbarriers, index) -> ()
  return
}
// CHECK-LABEL: llvm.func @per_warp_release
// CHECK: nvvm.bar.warp.sync [[MASK:%.*]] : i32
// CHECK: [[LANE:%.*]] = llvm.and {{%.*}}, {{%.*}} : i32
// CHECK: [[FIRST:%.*]] = llvm.icmp "eq" [[LANE]], {{%.*}} : i32
// CHECK: llvm.cond_br [[FIRST]]
// CHECK: nvvm.mbarrier.arrive [[OWN:%.*]] : !llvm.ptr<3>
// CHECK: nvvm.mapa [[OWN]]
// CHECK: nvvm.bar.warp.sync
// CHECK: llvm.cond_br
// CHECK: nvvm.mbarrier.arrive
// CHECK-NOT: nvvm.mapa
// CHECK: llvm.return

// -----

// The split-K hand-off: each thread stores its registers four at a time in
// fragment order (16-byte vectors), every thread fences, the warpgroup syncs,
// one thread counts the arrival and bar.red tells all whether it was the last;
// the last reads every split from L2 in split order, adds, and resets the counter.
func.func @split_k_hand_off(%c: memref<?x?xf32>, %partials: memref<?xf32>, %counters: memref<?xi32>) attributes {wsc.num_threads = 128 : i32} {
  %c0 = arith.constant 0 : index
  %split = gpu.block_id z
  %acc = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 64, 16>, f32>
  "wsc.partial_store"(%acc, %partials, %c0, %split) {splits = 2 : i32} : (!wsc.acc<array<i64: 64, 16>, f32>, memref<?xf32>, index, index) -> ()
  %last = "wsc.partial_arrive"(%counters, %c0) {splits = 2 : i32} : (memref<?xi32>, index) -> i1
  scf.if %last {
    "wsc.partial_reduce"(%acc, %partials, %counters, %c0) {splits = 2 : i32} : (!wsc.acc<array<i64: 64, 16>, f32>, memref<?xf32>, memref<?xi32>, index) -> ()
    "wsc.store"(%acc, %c, %c0, %c0) : (!wsc.acc<array<i64: 64, 16>, f32>, memref<?x?xf32>, index, index) -> ()
  }
  return
}
// CHECK-LABEL: llvm.func @split_k_hand_off
// CHECK: [[PARTIALS:%.*]] = llvm.addrspacecast %arg1 : !llvm.ptr to !llvm.ptr<1>
// CHECK: llvm.store {{%.*}}, {{%.*}} {alignment = 16 : i64} : vector<4xf32>, !llvm.ptr<1>
// CHECK: llvm.store {{%.*}}, {{%.*}} {alignment = 16 : i64} : vector<4xf32>, !llvm.ptr<1>
// CHECK: llvm.inline_asm has_side_effects "fence.acq_rel.gpu;"
// CHECK: nvvm.barrier{{$}}
// CHECK: llvm.addrspacecast %arg2 : !llvm.ptr to !llvm.ptr<1>
// CHECK: [[LAST:%.*]] = llvm.inline_asm has_side_effects "{{.*}}@leader atom.acq_rel.gpu.global.add.u32 old, [$2], 1; setp.eq.and.u32 last, old, 1, leader; bar.red.or.pred last, 0, last;{{.*}}"
// CHECK: llvm.inline_asm has_side_effects "fence.acq_rel.gpu;"
// CHECK: llvm.inline_asm has_side_effects "ld.global.cg.v4.f32 {$0, $1, $2, $3}, [$4+0];", "=f,=f,=f,=f,l" [[SPLIT0:%.*]] :
// CHECK: llvm.inline_asm has_side_effects "ld.global.cg.v4.f32 {$0, $1, $2, $3}, [$4+0];", "=f,=f,=f,=f,l" [[SPLIT1:%.*]] :
// CHECK-COUNT-4: llvm.fadd
// CHECK: llvm.inline_asm has_side_effects "ld.global.cg.v4.f32 {$0, $1, $2, $3}, [$4+2048];", "=f,=f,=f,=f,l" [[SPLIT0]] :
// CHECK: llvm.inline_asm has_side_effects "ld.global.cg.v4.f32 {$0, $1, $2, $3}, [$4+2048];", "=f,=f,=f,=f,l" [[SPLIT1]] :
// CHECK-COUNT-4: llvm.fadd
// CHECK: llvm.store {{%.*}}, {{%.*}} {alignment = 4 : i64} : i32, !llvm.ptr<1>

// -----

// A partial sum stored by the second warpgroup: its fragment offsets count
// threads from the role's first (tid - 128), also where an operand (the split,
// gpu.block_id z) was lowered before the op.
func.func @split_k_in_the_second_warpgroup(%partials: memref<?xf32>) attributes {wsc.num_threads = 256 : i32} {
  %c0 = arith.constant 0 : index
  %split = gpu.block_id z
  %is_second = "wsc.role"() {role = "consumer", thread_begin = 128 : i32, num_threads = 128 : i32} : () -> i1
  scf.if %is_second {
    %acc = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 64, 8>, f32>
    "wsc.partial_store"(%acc, %partials, %c0, %split) {splits = 2 : i32} : (!wsc.acc<array<i64: 64, 8>, f32>, memref<?xf32>, index, index) -> ()
  }
  return
}
// CHECK-LABEL: llvm.func @split_k_in_the_second_warpgroup
// CHECK: [[BEGIN:%.*]] = llvm.mlir.constant(128 : i32) : i32
// CHECK: [[TID:%.*]] = nvvm.read.ptx.sreg.tid.x : i32
// CHECK: [[LOCAL:%.*]] = llvm.sub [[TID]], [[BEGIN]] : i32
// CHECK: llvm.sext [[LOCAL]] : i32 to i64
// CHECK: llvm.store {{%.*}}, {{%.*}} {alignment = 16 : i64} : vector<4xf32>, !llvm.ptr<1>

// -----

// Element-wise register-tile math, register by register: a filled tile is a
// constant, max keeps NaN (max.NaN.f32), exp2 is ex2.approx.ftz.f32.
func.func @tile_math(%c: memref<?x?xf32>) attributes {wsc.num_threads = 128 : i32} {
  %c0 = arith.constant 0 : index
  %acc = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 64, 8>, f32>
  %half = "wsc.tile_fill"() {value = 0.5 : f32} : () -> !wsc.acc<array<i64: 64, 8>, f32>
  %scaled = "wsc.tile_binary"(%acc, %half) {kind = "mul"} : (!wsc.acc<array<i64: 64, 8>, f32>, !wsc.acc<array<i64: 64, 8>, f32>) -> !wsc.acc<array<i64: 64, 8>, f32>
  %top = "wsc.tile_binary"(%scaled, %acc) {kind = "max"} : (!wsc.acc<array<i64: 64, 8>, f32>, !wsc.acc<array<i64: 64, 8>, f32>) -> !wsc.acc<array<i64: 64, 8>, f32>
  %e = "wsc.tile_unary"(%top) {kind = "exp2"} : (!wsc.acc<array<i64: 64, 8>, f32>) -> !wsc.acc<array<i64: 64, 8>, f32>
  "wsc.store"(%e, %c, %c0, %c0) : (!wsc.acc<array<i64: 64, 8>, f32>, memref<?x?xf32>, index, index) -> ()
  return
}
// CHECK-LABEL: llvm.func @tile_math
// CHECK: llvm.mlir.constant(5.000000e-01 : f32) : f32
// CHECK-COUNT-4: llvm.fmul
// CHECK-COUNT-4: llvm.inline_asm "max.NaN.f32 $0, $1, $2;", "=f,f,f"
// CHECK-NOT: llvm.fcmp
// CHECK-COUNT-4: llvm.inline_asm "ex2.approx.ftz.f32 $0, $1;", "=f,f"

// -----

// Division rounds as IEEE division does: llvm.fdiv (div.rn.f32, not an
// approximate reciprocal), a row vector's register dividing its row's.
func.func @tile_divide(%c: memref<?x?xf32>) attributes {wsc.num_threads = 128 : i32} {
  %c0 = arith.constant 0 : index
  %acc = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 64, 8>, f32>
  %sum = "wsc.tile_row_reduce"(%acc) {kind = "sum"} : (!wsc.acc<array<i64: 64, 8>, f32>) -> !wsc.acc<array<i64: 64, 1>, f32>
  %shares = "wsc.tile_binary"(%acc, %sum) {kind = "div"} : (!wsc.acc<array<i64: 64, 8>, f32>, !wsc.acc<array<i64: 64, 1>, f32>) -> !wsc.acc<array<i64: 64, 8>, f32>
  "wsc.store"(%shares, %c, %c0, %c0) : (!wsc.acc<array<i64: 64, 8>, f32>, memref<?x?xf32>, index, index) -> ()
  return
}
// CHECK-LABEL: llvm.func @tile_divide
// CHECK-NOT: rcp.approx
// CHECK: llvm.fdiv %{{.*}}, %{{.*}} : f32
// CHECK-NOT: rcp.approx
// CHECK: llvm.return

// -----

// A causal mask: index tiles are the element's row and column from the
// fragment layout, as f32; the select compares ordered ("ogt": false for
// NaN) and picks per register.
func.func @causal_mask(%c: memref<?x?xf32>) attributes {wsc.num_threads = 128 : i32} {
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %acc = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 64, 8>, f32>
  %rows = "wsc.tile_iota"(%c64) {along = "rows"} : (index) -> !wsc.acc<array<i64: 64, 8>, f32>
  %cols = "wsc.tile_iota"(%c0) {along = "cols"} : (index) -> !wsc.acc<array<i64: 64, 8>, f32>
  %low = "wsc.tile_fill"() {value = -1.0e+30 : f32} : () -> !wsc.acc<array<i64: 64, 8>, f32>
  %masked = "wsc.tile_select"(%cols, %rows, %low, %acc) {predicate = "gt"} : (!wsc.acc<array<i64: 64, 8>, f32>, !wsc.acc<array<i64: 64, 8>, f32>, !wsc.acc<array<i64: 64, 8>, f32>, !wsc.acc<array<i64: 64, 8>, f32>) -> !wsc.acc<array<i64: 64, 8>, f32>
  "wsc.store"(%masked, %c, %c64, %c0) : (!wsc.acc<array<i64: 64, 8>, f32>, memref<?x?xf32>, index, index) -> ()
  return
}
// CHECK-LABEL: llvm.func @causal_mask
// CHECK: [[COL:%.*]] = llvm.sitofp {{.*}} : i32 to f32
// CHECK: [[ROW:%.*]] = llvm.sitofp {{.*}} : i32 to f32
// CHECK: [[ABOVE:%.*]] = llvm.fcmp "ogt" [[COL]], [[ROW]] : f32
// CHECK: llvm.select [[ABOVE]], {{%.*}}, {{%.*}} : i1, f32

// -----

// A tile of a WGMMA with swapped operands (C^T = B A^T), stored transposed:
// the sizes are named after C (A's rows are m though B's tile is the WGMMA's A
// operand), the WGMMA is m64n16, and each element goes out on its own (its
// fragment neighbours are a row of C apart), unchecked for a whole tile.
// CHECK-LABEL: llvm.func @swapped_store
// CHECK-SAME: \22m\22: {{\[\[}}\22a\22, 0], [\22c\22, 0]], \22n\22: {{\[\[}}\22b\22, 0], [\22c\22, 1]]
// CHECK: <m = 64, n = 16, k = 16>
// CHECK-NOT: vector<2xf16>
// CHECK-COUNT-8: llvm.store {{.*}} {alignment = 2 : i64} : f16, !llvm.ptr
func.func @swapped_store(%a: memref<?x?xf16>, %b: memref<?x?xf16>, %c: memref<?x?xf16>)
    attributes {wsc.num_threads = 128 : i32} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %false = arith.constant false
  %bx = gpu.block_id x
  %by = gpu.block_id y
  %c16 = arith.constant 16 : index
  %c64 = arith.constant 64 : index
  %m0 = arith.muli %bx, %c16 : index
  %n0 = arith.muli %by, %c64 : index
  %sa = "wsc.alloc_shared"() : () -> memref<1x16x64xf16, 3>
  %sb = "wsc.alloc_shared"() : () -> memref<1x64x64xf16, 3>
  %full = "wsc.mbarrier_alloc"() {arrival_count = 1 : i32, num_barriers = 1 : i32} : () -> !wsc.mbarriers
  "wsc.sync"() : () -> ()
  %acc = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 64, 16>, f32>
  %elected = "wsc.elect"() : () -> i1
  scf.if %elected {
    "wsc.mbarrier_arrive_expect_tx"(%full, %c0) {tx_bytes = 10240 : i32} : (!wsc.mbarriers, index) -> ()
    "wsc.tma_load"(%a, %m0, %c0, %sa, %c0, %full) : (memref<?x?xf16>, index, index, memref<1x16x64xf16, 3>, index, !wsc.mbarriers) -> ()
    "wsc.tma_load"(%b, %n0, %c0, %sb, %c0, %full) : (memref<?x?xf16>, index, index, memref<1x64x64xf16, 3>, index, !wsc.mbarriers) -> ()
  }
  "wsc.mbarrier_wait"(%full, %c0, %false) : (!wsc.mbarriers, index, i1) -> ()
  "wsc.wgmma_fence"() : () -> ()
  "wsc.wgmma"(%sb, %sa, %c0, %acc) {a_row = 0 : i32, b_layout = "nk"} : (memref<1x64x64xf16, 3>, memref<1x16x64xf16, 3>, index, !wsc.acc<array<i64: 64, 16>, f32>) -> ()
  "wsc.wgmma_commit_group"() : () -> ()
  "wsc.wgmma_wait_group"() {pending = 0 : i32} : () -> ()
  %h = "wsc.cast"(%acc) : (!wsc.acc<array<i64: 64, 16>, f32>) -> !wsc.acc<array<i64: 64, 16>, f16>
  "wsc.store"(%h, %c, %m0, %n0) {transpose} : (!wsc.acc<array<i64: 64, 16>, f16>, memref<?x?xf16>, index, index) -> ()
  return
}

// -----

// Register tiles read from global memory: a bf16 block (each element widened
// to f32, 0 outside the tensor) and an f16 vector along the columns, which
// shares its size with the stored tile's columns; then tanh.approx. Each load
// is predicated off outside the tensor and addresses its element as one
// register per row (rows r and r + 8 of a thread) or per vector, plus an
// immediate: a thread's second column is 2 bytes on.
// CHECK-LABEL: llvm.func @epilogue_loads
// CHECK-SAME: \22b_dim1\22: {{\[\[}}\22a\22, 1], [\22b\22, 1], [\22c\22, 0]]
// CHECK-SAME: {\22kind\22: \22i32\22, \22name\22: \22ldb\22}
// CHECK: %[[ROW:.*]] = llvm.ptrtoint {{.*}} : !llvm.ptr to i64
// CHECK: %[[ROW8:.*]] = llvm.ptrtoint {{.*}} : !llvm.ptr to i64
// CHECK: %[[COLUMNS:.*]] = llvm.ptrtoint {{.*}} : !llvm.ptr to i64
// CHECK: llvm.inline_asm "{ .reg .pred p; setp.ne.b32 p, $2, 0; mov.b16 $0, 0; @p ld.global.nc.b16 $0, [$1+0]; }", "=h,l,r" %[[ROW]]
// CHECK: llvm.bitcast {{.*}} : i16 to bf16
// CHECK: llvm.fpext {{.*}} : bf16 to f32
// CHECK: llvm.inline_asm {{.*}}[$1+0]; }", "=h,l,r" %[[COLUMNS]]
// CHECK: llvm.bitcast {{.*}} : i16 to f16
// CHECK: tanh.approx.f32
// CHECK: llvm.inline_asm {{.*}}[$1+2]; }", "=h,l,r" %[[ROW]]
func.func @epilogue_loads(%c: memref<?x?xf32>, %r: memref<?x?xbf16>, %v: memref<?xf16>)
    attributes {wsc.num_threads = 128 : i32} {
  %c0 = arith.constant 0 : index
  %res = "wsc.tile_load"(%r, %c0, %c0) : (memref<?x?xbf16>, index, index) -> !wsc.acc<array<i64: 64, 16>, f32>
  %bias = "wsc.tile_broadcast"(%v, %c0) {along = "cols"} : (memref<?xf16>, index) -> !wsc.acc<array<i64: 64, 16>, f32>
  %sum = "wsc.tile_binary"(%res, %bias) {kind = "add"} : (!wsc.acc<array<i64: 64, 16>, f32>, !wsc.acc<array<i64: 64, 16>, f32>) -> !wsc.acc<array<i64: 64, 16>, f32>
  %t = "wsc.tile_unary"(%sum) {kind = "tanh"} : (!wsc.acc<array<i64: 64, 16>, f32>) -> !wsc.acc<array<i64: 64, 16>, f32>
  "wsc.store"(%t, %c, %c0, %c0) : (!wsc.acc<array<i64: 64, 16>, f32>, memref<?x?xf32>, index, index) -> ()
  return
}

// -----

// A row max: each thread combines its registers of a row, then two butterfly
// shuffles (lanes xor 1, xor 2) combine the four lanes that hold the row; a
// 64x16 tile gives a thread two rows. The max is a row vector: a thread holds
// it in two registers, so 2^max is two ex2 (computed once, not for each of
// the 8 elements of x * 2^max that read them).
// CHECK-LABEL: llvm.func @row_max
// CHECK-COUNT-4: nvvm.shfl.sync  bfly
// CHECK-NOT: nvvm.shfl.sync
// CHECK-COUNT-2: ex2.approx
// CHECK-NOT: ex2.approx
// CHECK: llvm.fmul
// CHECK: llvm.return
func.func @row_max(%c: memref<?x?xf32>, %r: memref<?x?xf32>)
    attributes {wsc.num_threads = 128 : i32} {
  %c0 = arith.constant 0 : index
  %x = "wsc.tile_load"(%r, %c0, %c0) : (memref<?x?xf32>, index, index) -> !wsc.acc<array<i64: 64, 16>, f32>
  %m = "wsc.tile_row_reduce"(%x) {kind = "max"} : (!wsc.acc<array<i64: 64, 16>, f32>) -> !wsc.acc<array<i64: 64, 1>, f32>
  %e = "wsc.tile_unary"(%m) {kind = "exp2"} : (!wsc.acc<array<i64: 64, 1>, f32>) -> !wsc.acc<array<i64: 64, 1>, f32>
  %y = "wsc.tile_binary"(%x, %e) {kind = "mul"} : (!wsc.acc<array<i64: 64, 16>, f32>, !wsc.acc<array<i64: 64, 1>, f32>) -> !wsc.acc<array<i64: 64, 16>, f32>
  "wsc.store"(%y, %c, %c0, %c0) : (!wsc.acc<array<i64: 64, 16>, f32>, memref<?x?xf32>, index, index) -> ()
  return
}

// -----

// Tile loads with a fill: elements outside the tensor read as -inf, so that
// a row max of a ragged tile ignores them. An element starts as the fill
// before its predicated load: f32 -inf is 0fFF800000, f16 -inf 0xFC00. A
// fill that a 16-bit element cannot hold (0.1) is selected after widening.
// CHECK-LABEL: llvm.func @tile_load_fill
// CHECK: %[[TENTH:.*]] = llvm.mlir.constant(1.000000e-01 : f32) : f32
// CHECK: llvm.inline_asm "{ .reg .pred p; setp.ne.b32 p, $2, 0; mov.f32 $0, 0fFF800000; @p ld.global.nc.f32 $0, [$1+0]; }"
// CHECK: llvm.inline_asm "{ .reg .pred p; setp.ne.b32 p, $2, 0; mov.b16 $0, 0xFC00; @p ld.global.nc.b16 $0, [$1+0]; }"
// CHECK-NEXT: llvm.bitcast {{.*}} : i16 to f16
// CHECK-NEXT: llvm.fpext {{.*}} : f16 to f32
// CHECK-NEXT: llvm.inline_asm "max.NaN.f32
// CHECK: llvm.inline_asm "{ .reg .pred p; setp.ne.b32 p, $2, 0; mov.b16 $0, 0; @p ld.global.nc.b16 $0, [$1+0]; }"
// CHECK-NEXT: llvm.bitcast {{.*}} : i16 to f16
// CHECK-NEXT: llvm.fpext {{.*}} : f16 to f32
// CHECK-NEXT: llvm.select {{.*}}, {{.*}}, %[[TENTH]] : i1, f32
// CHECK: nvvm.shfl.sync  bfly
func.func @tile_load_fill(%c: memref<?x?xf32>, %r: memref<?x?xf32>, %h: memref<?x?xf16>)
    attributes {wsc.num_threads = 128 : i32} {
  %c0 = arith.constant 0 : index
  %x = "wsc.tile_load"(%r, %c0, %c0) {fill = 0xFF800000 : f32} : (memref<?x?xf32>, index, index) -> !wsc.acc<array<i64: 64, 16>, f32>
  %y = "wsc.tile_load"(%h, %c0, %c0) {fill = 0xFF800000 : f32} : (memref<?x?xf16>, index, index) -> !wsc.acc<array<i64: 64, 16>, f32>
  %z = "wsc.tile_load"(%h, %c0, %c0) {fill = 0.1 : f32} : (memref<?x?xf16>, index, index) -> !wsc.acc<array<i64: 64, 16>, f32>
  %xy = "wsc.tile_binary"(%x, %y) {kind = "max"} : (!wsc.acc<array<i64: 64, 16>, f32>, !wsc.acc<array<i64: 64, 16>, f32>) -> !wsc.acc<array<i64: 64, 16>, f32>
  %s = "wsc.tile_binary"(%xy, %z) {kind = "max"} : (!wsc.acc<array<i64: 64, 16>, f32>, !wsc.acc<array<i64: 64, 16>, f32>) -> !wsc.acc<array<i64: 64, 16>, f32>
  %m = "wsc.tile_row_reduce"(%s) {kind = "max"} : (!wsc.acc<array<i64: 64, 16>, f32>) -> !wsc.acc<array<i64: 64, 1>, f32>
  %b = "wsc.tile_binary"(%s, %m) {kind = "sub"} : (!wsc.acc<array<i64: 64, 16>, f32>, !wsc.acc<array<i64: 64, 1>, f32>) -> !wsc.acc<array<i64: 64, 16>, f32>
  "wsc.store"(%b, %c, %c0, %c0) : (!wsc.acc<array<i64: 64, 16>, f32>, memref<?x?xf32>, index, index) -> ()
  return
}

// -----

// A WGMMA with A in registers: the 64x32 f16 tile (a cast of an f32 tile
// loaded from global memory here) is two K steps of 16; each step takes four
// i32 registers of element pairs, and B by descriptor (N-major: trans-b 1).
// The cast writes its tile in pairs, so reading an A register is a bitcast
// and no instruction after the fence writes a register WGMMA reads. The NVVM
// op reads A only by descriptor, so the step is PTX in inline asm, the
// accumulator tied in and out; the first step overwrites the fresh
// accumulator (scale-d 0), the second adds to it.
// CHECK-LABEL: llvm.func @register_a
// CHECK: llvm.alloca %{{.*}} x !llvm.array<1 x array<8 x vector<2xf16>>>
// CHECK-COUNT-8: llvm.store %{{.*}}, %{{.*}} : vector<2xf16>, !llvm.ptr
// CHECK: nvvm.wgmma.fence.aligned
// CHECK: llvm.bitcast %{{.*}} : vector<2xf16> to i32
// CHECK: setp.ne.b32 p, 0, 0; wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 {$0, {{.*}}, $31}, {$64, $65, $66, $67}, $68, p, 1, 1, 1;
// CHECK: setp.ne.b32 p, 1, 0; wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 {$0, {{.*}}, $31}, {$64, $65, $66, $67}, $68, p, 1, 1, 1;
// CHECK-NOT: wgmma.mma_async
// CHECK: llvm.return
func.func @register_a(%x: memref<?x?xf32>, %c: memref<?x?xf32>)
    attributes {wsc.num_threads = 128 : i32} {
  %c0 = arith.constant 0 : index
  %sb = "wsc.alloc_shared"() : () -> memref<1x32x64xf16, 3>
  %loaded = "wsc.tile_load"(%x, %c0, %c0) : (memref<?x?xf32>, index, index) -> !wsc.acc<array<i64: 64, 32>, f32>
  %p = "wsc.cast"(%loaded) : (!wsc.acc<array<i64: 64, 32>, f32>) -> !wsc.acc<array<i64: 64, 32>, f16>
  %acc = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 64, 64>, f32>
  "wsc.wgmma_fence"() : () -> ()
  "wsc.wgmma_register_a"(%p, %sb, %c0, %acc) {b_layout = "kn"} : (!wsc.acc<array<i64: 64, 32>, f16>, memref<1x32x64xf16, 3>, index, !wsc.acc<array<i64: 64, 64>, f32>) -> ()
  "wsc.wgmma_commit_group"() : () -> ()
  "wsc.wgmma_wait_group"() {pending = 0 : i32} : () -> ()
  "wsc.store"(%acc, %c, %c0, %c0) : (!wsc.acc<array<i64: 64, 64>, f32>, memref<?x?xf32>, index, index) -> ()
  return
}

// -----

// The accumulator's zeros are read (stored) before its first WGMMA: every
// step adds to them (scale-d 1).
// CHECK-LABEL: llvm.func @zeros_read_first
// CHECK-NOT: setp.ne.b32 p, 0, 0
// CHECK-COUNT-2: setp.ne.b32 p, 1, 0; wgmma.mma_async.sync.aligned.m64n64k16
// CHECK-NOT: setp.ne.b32 p, 0, 0
// CHECK: llvm.return
func.func @zeros_read_first(%x: memref<?x?xf32>, %c: memref<?x?xf32>)
    attributes {wsc.num_threads = 128 : i32} {
  %c0 = arith.constant 0 : index
  %sb = "wsc.alloc_shared"() : () -> memref<1x32x64xf16, 3>
  %loaded = "wsc.tile_load"(%x, %c0, %c0) : (memref<?x?xf32>, index, index) -> !wsc.acc<array<i64: 64, 32>, f32>
  %p = "wsc.cast"(%loaded) : (!wsc.acc<array<i64: 64, 32>, f32>) -> !wsc.acc<array<i64: 64, 32>, f16>
  %acc = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 64, 64>, f32>
  "wsc.store"(%acc, %c, %c0, %c0) : (!wsc.acc<array<i64: 64, 64>, f32>, memref<?x?xf32>, index, index) -> ()
  "wsc.wgmma_fence"() : () -> ()
  "wsc.wgmma_register_a"(%p, %sb, %c0, %acc) {b_layout = "kn"} : (!wsc.acc<array<i64: 64, 32>, f16>, memref<1x32x64xf16, 3>, index, !wsc.acc<array<i64: 64, 64>, f32>) -> ()
  "wsc.wgmma_commit_group"() : () -> ()
  "wsc.wgmma_wait_group"() {pending = 0 : i32} : () -> ()
  "wsc.store"(%acc, %c, %c0, %c0) : (!wsc.acc<array<i64: 64, 64>, f32>, memref<?x?xf32>, index, index) -> ()
  return
}

// -----

// An assignment in place of a row reduction of the tile itself: the
// reduction runs once per row (two shuffles for each of a thread's two rows),
// all of it before the tile's registers are stored.
// CHECK-LABEL: llvm.func @assign_row_max
// CHECK-COUNT-4: nvvm.shfl.sync  bfly
// CHECK-NOT: nvvm.shfl.sync
// CHECK: llvm.store
// CHECK-NOT: nvvm.shfl.sync
// CHECK: llvm.return
func.func @assign_row_max(%c: memref<?x?xf32>, %src: memref<?x?xf32>)
    attributes {wsc.num_threads = 128 : i32} {
  %c0 = arith.constant 0 : index
  %m = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 64, 1>, f32>
  %x = "wsc.tile_load"(%src, %c0, %c0) : (memref<?x?xf32>, index, index) -> !wsc.acc<array<i64: 64, 16>, f32>
  %y = "wsc.tile_binary"(%m, %x) {kind = "add"} : (!wsc.acc<array<i64: 64, 1>, f32>, !wsc.acc<array<i64: 64, 16>, f32>) -> !wsc.acc<array<i64: 64, 16>, f32>
  %r = "wsc.tile_row_reduce"(%y) {kind = "max"} : (!wsc.acc<array<i64: 64, 16>, f32>) -> !wsc.acc<array<i64: 64, 1>, f32>
  "wsc.tile_assign"(%m, %r) : (!wsc.acc<array<i64: 64, 1>, f32>, !wsc.acc<array<i64: 64, 1>, f32>) -> ()
  %d = "wsc.tile_binary"(%x, %m) {kind = "sub"} : (!wsc.acc<array<i64: 64, 16>, f32>, !wsc.acc<array<i64: 64, 1>, f32>) -> !wsc.acc<array<i64: 64, 16>, f32>
  "wsc.store"(%d, %c, %c0, %c0) : (!wsc.acc<array<i64: 64, 16>, f32>, memref<?x?xf32>, index, index) -> ()
  return
}

// -----

// A stage's second 64-column block read into registers (the atom 8192 bytes
// in): 16 volatile loads of bf16 pairs per thread (its 32 elements: read
// where the op is, each time), widened to f32.
// The sum of each row, then of each group of 16 rows (one warp's): two
// shuffles for each of the thread's two rows, then the two rows added and
// three shuffles across the lanes 4, 8 and 16 apart; the product is written
// back in place as bf16 pairs, at the first block. The kernel asks for
// three blocks per SM: ptxas is told to fit them (.minnctapersm 3).
// CHECK-LABEL: llvm.func @row_group_sum
// CHECK-SAME: nvvm.minctasm = 3 : i32
// CHECK: llvm.mlir.constant(8192 : i32)
// CHECK-COUNT-16: llvm.load volatile %{{.*}} {alignment = 4 : i64} : !llvm.ptr<3> -> vector<2xbf16>
// CHECK-NOT: -> vector<2xbf16>
// CHECK-COUNT-7: nvvm.shfl.sync  bfly
// CHECK-NOT: nvvm.shfl.sync
// CHECK-COUNT-16: llvm.store %{{.*}}, %{{.*}} {alignment = 4 : i64} : vector<2xbf16>, !llvm.ptr<3>
// CHECK-NOT: vector<2xbf16>, !llvm.ptr<3>
// CHECK: llvm.return
func.func @row_group_sum(%c: memref<?x?xf32>) attributes {wsc.blocks_per_sm = 3 : i32, wsc.num_threads = 128 : i32} {
  %c0 = arith.constant 0 : index
  %sx = "wsc.alloc_shared"() : () -> memref<1x64x128xbf16, 3>
  %x = "wsc.load_shared"(%sx, %c0) {row = 0 : i32, col = 64 : i32} : (memref<1x64x128xbf16, 3>, index) -> !wsc.acc<array<i64: 64, 64>, f32>
  %r = "wsc.tile_row_reduce"(%x) {kind = "sum"} : (!wsc.acc<array<i64: 64, 64>, f32>) -> !wsc.acc<array<i64: 64, 1>, f32>
  %g = "wsc.tile_col_reduce"(%r) {kind = "sum", rows = 16 : i32} : (!wsc.acc<array<i64: 64, 1>, f32>) -> !wsc.acc<array<i64: 64, 1>, f32>
  %y = "wsc.tile_binary"(%x, %g) {kind = "mul"} : (!wsc.acc<array<i64: 64, 64>, f32>, !wsc.acc<array<i64: 64, 1>, f32>) -> !wsc.acc<array<i64: 64, 64>, f32>
  %z = "wsc.cast"(%y) : (!wsc.acc<array<i64: 64, 64>, f32>) -> !wsc.acc<array<i64: 64, 64>, bf16>
  "wsc.store_shared"(%z, %sx, %c0) {row = 0 : i32, col = 0 : i32} : (!wsc.acc<array<i64: 64, 64>, bf16>, memref<1x64x128xbf16, 3>, index) -> ()
  "wsc.store"(%y, %c, %c0, %c0) : (!wsc.acc<array<i64: 64, 64>, f32>, memref<?x?xf32>, index, index) -> ()
  return
}

// -----

// A column sum over pairs of rows of a tile: one shuffle (lanes 4 apart)
// per register, no in-thread add.
// CHECK-LABEL: llvm.func @pair_sum
// CHECK-COUNT-8: nvvm.shfl.sync  bfly
// CHECK-NOT: nvvm.shfl.sync
// CHECK: llvm.return
func.func @pair_sum(%c: memref<?x?xf32>, %src: memref<?x?xf32>) attributes {wsc.num_threads = 128 : i32} {
  %c0 = arith.constant 0 : index
  %x = "wsc.tile_load"(%src, %c0, %c0) : (memref<?x?xf32>, index, index) -> !wsc.acc<array<i64: 64, 16>, f32>
  %g = "wsc.tile_col_reduce"(%x) {kind = "sum", rows = 2 : i32} : (!wsc.acc<array<i64: 64, 16>, f32>) -> !wsc.acc<array<i64: 64, 16>, f32>
  "wsc.store"(%g, %c, %c0, %c0) : (!wsc.acc<array<i64: 64, 16>, f32>, memref<?x?xf32>, index, index) -> ()
  return
}

// -----

// The max of each row of a tile over each pair of warps (32 rows): the
// warp's shuffles as for 16 rows (two per row of the thread, three across
// the lanes 4, 8 and 16 apart), then lane 0 of each warp writes its value to
// the exchange area (16 bytes: one f32 per warp), the block syncs, every
// thread reads its pair's two values and combines them, and the block syncs
// again before the area is reused.
// CHECK-LABEL: llvm.func @max_over_warp_pairs
// CHECK-SAME: \22exchange\22: {\22bytes\22: 16, \22offset\22: 0}
// CHECK-COUNT-7: nvvm.shfl.sync  bfly
// CHECK-NOT: nvvm.shfl.sync
// CHECK: llvm.store %{{.*}}, %{{.*}} : f32, !llvm.ptr<3>
// CHECK-NEXT: llvm.br
// CHECK: nvvm.barrier
// CHECK-COUNT-2: llvm.load %{{.*}} : !llvm.ptr<3> -> f32
// CHECK-NEXT: max.NaN.f32
// CHECK: nvvm.barrier
// CHECK-NOT: nvvm.barrier
// CHECK: llvm.return
func.func @max_over_warp_pairs(%c: memref<?x?xf32>, %src: memref<?x?xf32>) attributes {wsc.num_threads = 128 : i32} {
  %c0 = arith.constant 0 : index
  %x = "wsc.tile_load"(%src, %c0, %c0) : (memref<?x?xf32>, index, index) -> !wsc.acc<array<i64: 64, 8>, f32>
  %r = "wsc.tile_row_reduce"(%x) {kind = "max"} : (!wsc.acc<array<i64: 64, 8>, f32>) -> !wsc.acc<array<i64: 64, 1>, f32>
  %g = "wsc.tile_col_reduce"(%r) {kind = "max", rows = 32 : i32} : (!wsc.acc<array<i64: 64, 1>, f32>) -> !wsc.acc<array<i64: 64, 1>, f32>
  %y = "wsc.tile_binary"(%x, %g) {kind = "sub"} : (!wsc.acc<array<i64: 64, 8>, f32>, !wsc.acc<array<i64: 64, 1>, f32>) -> !wsc.acc<array<i64: 64, 8>, f32>
  "wsc.store"(%y, %c, %c0, %c0) : (!wsc.acc<array<i64: 64, 8>, f32>, memref<?x?xf32>, index, index) -> ()
  return
}

// -----

// A scale per row read into a row vector: two f16 loads per thread (its two
// rows of the 64), made once and read by every element of the product, each
// predicated off past the vector's end (no select of its address).
// CHECK-LABEL: llvm.func @scale_per_row
// CHECK-COUNT-2: @p ld.global.nc.b16
// CHECK-NOT: ld.global.nc.b16
// CHECK: llvm.return
func.func @scale_per_row(%c: memref<?x?xf32>, %x: memref<?x?xf32>, %v: memref<?xf16>)
    attributes {wsc.num_threads = 128 : i32} {
  %c0 = arith.constant 0 : index
  %t = "wsc.tile_load"(%x, %c0, %c0) : (memref<?x?xf32>, index, index) -> !wsc.acc<array<i64: 64, 16>, f32>
  %s = "wsc.tile_broadcast"(%v, %c0) {along = "rows"} : (memref<?xf16>, index) -> !wsc.acc<array<i64: 64, 1>, f32>
  %y = "wsc.tile_binary"(%t, %s) {kind = "mul"} : (!wsc.acc<array<i64: 64, 16>, f32>, !wsc.acc<array<i64: 64, 1>, f32>) -> !wsc.acc<array<i64: 64, 16>, f32>
  "wsc.store"(%y, %c, %c0, %c0) : (!wsc.acc<array<i64: 64, 16>, f32>, memref<?x?xf32>, index, index) -> ()
  return
}

// -----

// Batches of matrices: the TMA copies of matrix z add z as their outermost
// coordinate, in tensor maps of one-matrix boxes; the batch is a size of
// its own, the same for A, B and C (their matrices are taken at one index).
func.func @batched(%a: memref<?x?x?xf16>, %b: memref<?x?x?xf16>, %c: memref<?x?x?xf16>) attributes {wsc.num_threads = 128 : i32} {
  %c0 = arith.constant 0 : index
  %false = arith.constant false
  %z = gpu.block_id z
  %az = "wsc.batch_matrix"(%a, %z) : (memref<?x?x?xf16>, index) -> memref<?x?xf16>
  %bz = "wsc.batch_matrix"(%b, %z) : (memref<?x?x?xf16>, index) -> memref<?x?xf16>
  %cz = "wsc.batch_matrix"(%c, %z) : (memref<?x?x?xf16>, index) -> memref<?x?xf16>
  %sa = "wsc.alloc_shared"() : () -> memref<1x64x64xf16, 3>
  %sb = "wsc.alloc_shared"() : () -> memref<1x64x64xf16, 3>
  %sc = "wsc.alloc_shared"() : () -> memref<1x64x64xf16, 3>
  %full = "wsc.mbarrier_alloc"() {arrival_count = 1 : i32, num_barriers = 1 : i32} : () -> !wsc.mbarriers
  "wsc.sync"() : () -> ()
  %acc = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 64, 64>, f32>
  %e = "wsc.elect"() : () -> i1
  scf.if %e {
    "wsc.mbarrier_arrive_expect_tx"(%full, %c0) {tx_bytes = 16384 : i32} : (!wsc.mbarriers, index) -> ()
    "wsc.tma_load"(%az, %c0, %c0, %sa, %c0, %full) : (memref<?x?xf16>, index, index, memref<1x64x64xf16, 3>, index, !wsc.mbarriers) -> ()
    "wsc.tma_load"(%bz, %c0, %c0, %sb, %c0, %full) : (memref<?x?xf16>, index, index, memref<1x64x64xf16, 3>, index, !wsc.mbarriers) -> ()
  }
  "wsc.mbarrier_wait"(%full, %c0, %false) : (!wsc.mbarriers, index, i1) -> ()
  "wsc.wgmma_fence"() : () -> ()
  "wsc.wgmma"(%sa, %sb, %c0, %acc) {a_row = 0 : i32, b_layout = "nk"} : (memref<1x64x64xf16, 3>, memref<1x64x64xf16, 3>, index, !wsc.acc<array<i64: 64, 64>, f32>) -> ()
  "wsc.wgmma_commit_group"() : () -> ()
  "wsc.wgmma_wait_group"() {pending = 0 : i32} : () -> ()
  %h = "wsc.cast"(%acc) : (!wsc.acc<array<i64: 64, 64>, f32>) -> !wsc.acc<array<i64: 64, 64>, f16>
  "wsc.store_shared"(%h, %sc, %c0) : (!wsc.acc<array<i64: 64, 64>, f16>, memref<1x64x64xf16, 3>, index) -> ()
  "wsc.fence_proxy_async"() : () -> ()
  "wsc.sync"() : () -> ()
  %e2 = "wsc.elect"() : () -> i1
  scf.if %e2 {
    "wsc.tma_store"(%sc, %c0, %cz, %c0, %c0) : (memref<1x64x64xf16, 3>, index, memref<?x?xf16>, index, index) -> ()
  }
  return
}
// CHECK-LABEL: llvm.func @batched
// CHECK-SAME: \22batch\22: {{\[\[}}\22a\22, 0], [\22b\22, 0], [\22c\22, 0]]
// CHECK-SAME: \22k\22: {{\[\[}}\22a\22, 2], [\22b\22, 2]], \22m\22: {{\[\[}}\22a\22, 1], [\22c\22, 1]], \22n\22: {{\[\[}}\22b\22, 1], [\22c\22, 2]]
// CHECK-SAME: \22a\22: {\22box\22: [1, 64, 64]
// CHECK-SAME: \22c\22: {\22box\22: [1, 64, 64]
// CHECK: [[Z:%.*]] = nvvm.read.ptx.sreg.ctaid.z
// CHECK: nvvm.cp.async.bulk.tensor.shared.cluster.global {{%.*}}, %arg0, {{%.*}}, box[{{%.*}}, {{%.*}}, [[Z]]]
// CHECK: nvvm.cp.async.bulk.tensor.shared.cluster.global {{%.*}}, %arg1, {{%.*}}, box[{{%.*}}, {{%.*}}, [[Z]]]
// CHECK: nvvm.cp.async.bulk.tensor.global.shared.cta %arg2, {{%.*}}, box[{{%.*}}, {{%.*}}, [[Z]]]

// -----

// A scalar argument is an f32 parameter of its own, named by position as the
// tensors are, after the sizes and row strides; its splat is that value in
// every register of the tile.
func.func @scaled(%c: memref<?x?xf32>, %alpha: f32) attributes {wsc.num_threads = 128 : i32} {
  %c0 = arith.constant 0 : index
  %acc = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 64, 64>, f32>
  %s = "wsc.tile_splat"(%alpha) : (f32) -> !wsc.acc<array<i64: 64, 64>, f32>
  %r = "wsc.tile_binary"(%acc, %s) {kind = "mul"} : (!wsc.acc<array<i64: 64, 64>, f32>, !wsc.acc<array<i64: 64, 64>, f32>) -> !wsc.acc<array<i64: 64, 64>, f32>
  "wsc.store"(%r, %c, %c0, %c0) : (!wsc.acc<array<i64: 64, 64>, f32>, memref<?x?xf32>, index, index) -> ()
  return
}
// CHECK-LABEL: llvm.func @scaled(%arg0: !llvm.ptr {llvm.noalias}, %arg1: i32, %arg2: i32, %arg3: i32, %arg4: f32)
// CHECK-SAME: {\22kind\22: \22i32\22, \22name\22: \22lda\22}, {\22kind\22: \22f32\22, \22name\22: \22b\22}
// CHECK-NOT: \22b\22: {\22arg\22
// CHECK: llvm.fmul {{%.*}}, %arg4 {{.*}}: f32
// -----
// fp8 (e4m3) operands: a 128-byte K tile is 128 elements, four m64n64k32
// WGMMAs, both operands K-major; TMA moves them as bytes.
// CHECK-LABEL: llvm.func @fp8_matmul
// CHECK-SAME: \22a\22: {\22box\22: [64, 128], \22swizzle\22: \22128B\22
// CHECK-SAME: \22dtype\22: \22f8E4M3FN\22
// CHECK: nvvm.wgmma.mma_async %{{.*}}, %{{.*}}, %{{.*}}, <m = 64, n = 64, k = 32>, D[<f32>, <zero>], A[<e4m3>, <one>, <row>], B[<e4m3>, <one>, <col>]
// CHECK-COUNT-3: nvvm.wgmma.mma_async %{{.*}}, %{{.*}}, %{{.*}}, <m = 64, n = 64, k = 32>, D[<f32>, <one>], A[<e4m3>, <one>, <row>], B[<e4m3>, <one>, <col>]
// CHECK-NOT: nvvm.wgmma.mma_async
func.func @fp8_matmul(%a: memref<?x?xf8E4M3FN>, %b: memref<?x?xf8E4M3FN>, %c: memref<?x?xf32>)
    attributes {wsc.num_threads = 128 : i32} {
  %c0 = arith.constant 0 : index
  %false = arith.constant false
  %sa = "wsc.alloc_shared"() : () -> memref<1x64x128xf8E4M3FN, 3>
  %sb = "wsc.alloc_shared"() : () -> memref<1x64x128xf8E4M3FN, 3>
  %full = "wsc.mbarrier_alloc"() {arrival_count = 1 : i32, num_barriers = 1 : i32} : () -> !wsc.mbarriers
  "wsc.sync"() : () -> ()
  %acc = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 64, 64>, f32>
  %e = "wsc.elect"() : () -> i1
  scf.if %e {
    "wsc.mbarrier_arrive_expect_tx"(%full, %c0) {tx_bytes = 16384 : i32} : (!wsc.mbarriers, index) -> ()
    "wsc.tma_load"(%a, %c0, %c0, %sa, %c0, %full) : (memref<?x?xf8E4M3FN>, index, index, memref<1x64x128xf8E4M3FN, 3>, index, !wsc.mbarriers) -> ()
    "wsc.tma_load"(%b, %c0, %c0, %sb, %c0, %full) : (memref<?x?xf8E4M3FN>, index, index, memref<1x64x128xf8E4M3FN, 3>, index, !wsc.mbarriers) -> ()
  }
  "wsc.mbarrier_wait"(%full, %c0, %false) : (!wsc.mbarriers, index, i1) -> ()
  "wsc.wgmma_fence"() : () -> ()
  "wsc.wgmma"(%sa, %sb, %c0, %acc) {a_row = 0 : i32, b_layout = "nk"} : (memref<1x64x128xf8E4M3FN, 3>, memref<1x64x128xf8E4M3FN, 3>, index, !wsc.acc<array<i64: 64, 64>, f32>) -> ()
  "wsc.wgmma_commit_group"() : () -> ()
  "wsc.wgmma_wait_group"() {pending = 0 : i32} : () -> ()
  "wsc.store"(%acc, %c, %c0, %c0) : (!wsc.acc<array<i64: 64, 64>, f32>, memref<?x?xf32>, index, index) -> ()
  return
}

// -----

// A tile whose origin may be negative (a difference of block offsets): its
// loads and stores compare indices unsigned, so that a row before the
// tensor is outside it too, and the store's whole-tile path also checks
// that the origin is >= 0. An origin made of block indices, sizes and
// constants keeps the signed compares.
// CHECK-LABEL: llvm.func @shifted
// CHECK-NOT: llvm.icmp "slt"
// CHECK: llvm.icmp "ult"
// CHECK: llvm.icmp "sge"
// CHECK-NOT: llvm.icmp "slt"
// CHECK: llvm.return
func.func @shifted(%x: memref<?x?xf32>, %c: memref<?x?xf32>)
    attributes {wsc.num_threads = 128 : i32} {
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %bx = gpu.block_id x
  %top = arith.muli %bx, %c64 : index
  %row = arith.subi %top, %c64 : index
  %t = "wsc.tile_load"(%x, %row, %c0) : (memref<?x?xf32>, index, index) -> !wsc.acc<array<i64: 64, 16>, f32>
  "wsc.store"(%t, %c, %row, %c0) : (!wsc.acc<array<i64: 64, 16>, f32>, memref<?x?xf32>, index, index) -> ()
  return
}

// -----

// CHECK-LABEL: llvm.func @unshifted
// CHECK-NOT: llvm.icmp "ult"
// CHECK-NOT: llvm.icmp "sge"
// CHECK: llvm.return
func.func @unshifted(%x: memref<?x?xf32>, %c: memref<?x?xf32>)
    attributes {wsc.num_threads = 128 : i32} {
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %bx = gpu.block_id x
  %rows = memref.dim %x, %c0 : memref<?x?xf32>
  %tiles = arith.ceildivui %rows, %c64 : index
  %tile = arith.remui %bx, %tiles : index
  %row = arith.muli %tile, %c64 : index
  %t = "wsc.tile_load"(%x, %row, %c0) : (memref<?x?xf32>, index, index) -> !wsc.acc<array<i64: 64, 16>, f32>
  "wsc.store"(%t, %c, %row, %c0) : (!wsc.acc<array<i64: 64, 16>, f32>, memref<?x?xf32>, index, index) -> ()
  return
}

// -----

// Stage 1's row read transposed, a row vector of the tile's 128 rows (a K
// tile's block scales): each thread loads the elements of its four rows one
// by one (volatile f32 loads, read where the op is). A one-row tile is stored
// unswizzled (one TMA box), so no offset is swizzled (stage 1 is 1024 bytes in).
// CHECK-LABEL: llvm.func @stage_row_as_row_vector
// CHECK-SAME: \22rows\22: 1, \22stage_bytes\22: 1024, \22stages\22: 2, \22swizzle\22: \22none\22
// CHECK: llvm.mlir.constant(1024 : i32)
// CHECK-NOT: llvm.xor
// CHECK-COUNT-4: llvm.load volatile %{{.*}} {alignment = 4 : i64} : !llvm.ptr<3> -> f32
// CHECK-NOT: llvm.load volatile
// CHECK-NOT: llvm.xor
// CHECK: llvm.return
func.func @stage_row_as_row_vector(%c: memref<?x?xf32>) attributes {wsc.num_threads = 128 : i32} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %ss = "wsc.alloc_shared"() : () -> memref<2x1x128xf32, 3>
  %scales = "wsc.load_shared"(%ss, %c1) {transpose} : (memref<2x1x128xf32, 3>, index) -> !wsc.acc<array<i64: 128, 1>, f32>
  %ones = "wsc.tile_fill"() {value = 1.0 : f32} : () -> !wsc.acc<array<i64: 128, 8>, f32>
  %scaled = "wsc.tile_binary"(%ones, %scales) {kind = "mul"} : (!wsc.acc<array<i64: 128, 8>, f32>, !wsc.acc<array<i64: 128, 1>, f32>) -> !wsc.acc<array<i64: 128, 8>, f32>
  "wsc.store"(%scaled, %c, %c0, %c0) : (!wsc.acc<array<i64: 128, 8>, f32>, memref<?x?xf32>, index, index) -> ()
  return
}

// -----

// TMA copies K tile 1's scales of the 128 rows from m0 (a row of scale_a's
// transpose) into stage 1 of a one-row ring in one unswizzled box.
// CHECK-LABEL: llvm.func @scale_row_in_one_box
// CHECK-SAME: \22a\22: {\22box\22: [1, 128], \22swizzle\22: \22none\22, \22tensor\22: \22a\22}
// CHECK: nvvm.cp.async.bulk.tensor.shared.cluster.global
// CHECK-NOT: nvvm.cp.async.bulk.tensor
// CHECK: llvm.return
func.func @scale_row_in_one_box(%s: memref<?x?xf32>, %c: memref<?x?xf32>) attributes {wsc.num_threads = 128 : i32} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %false = arith.constant false
  %bx = gpu.block_id x
  %c128 = arith.constant 128 : index
  %m0 = arith.muli %bx, %c128 : index
  %ss = "wsc.alloc_shared"() : () -> memref<2x1x128xf32, 3>
  %full = "wsc.mbarrier_alloc"() {arrival_count = 1 : i32, num_barriers = 2 : i32} : () -> !wsc.mbarriers
  "wsc.sync"() : () -> ()
  %elected = "wsc.elect"() : () -> i1
  scf.if %elected {
    "wsc.mbarrier_arrive_expect_tx"(%full, %c1) {tx_bytes = 512 : i32} : (!wsc.mbarriers, index) -> ()
    "wsc.tma_load"(%s, %c1, %m0, %ss, %c1, %full) : (memref<?x?xf32>, index, index, memref<2x1x128xf32, 3>, index, !wsc.mbarriers) -> ()
  }
  "wsc.mbarrier_wait"(%full, %c1, %false) : (!wsc.mbarriers, index, i1) -> ()
  %scales = "wsc.load_shared"(%ss, %c1) {transpose} : (memref<2x1x128xf32, 3>, index) -> !wsc.acc<array<i64: 128, 1>, f32>
  %ones = "wsc.tile_fill"() {value = 1.0 : f32} : () -> !wsc.acc<array<i64: 128, 8>, f32>
  %scaled = "wsc.tile_binary"(%ones, %scales) {kind = "mul"} : (!wsc.acc<array<i64: 128, 8>, f32>, !wsc.acc<array<i64: 128, 1>, f32>) -> !wsc.acc<array<i64: 128, 8>, f32>
  "wsc.store"(%scaled, %c, %m0, %c0) : (!wsc.acc<array<i64: 128, 8>, f32>, memref<?x?xf32>, index, index) -> ()
  return
}

// -----

// A tile of 16 rows read transposed: each of a thread's eight elements
// from where the 128-byte swizzle atoms of its f32 rows put it: row * 128
// + atom * 2048 (16 rows of 128 bytes) + 4 * column in the atom, the chunk
// bits of that offset flipped at run time, in stage 1 (4096 bytes in).
// CHECK-LABEL: llvm.func @stage_tile_transposed
// CHECK-SAME: \22rows\22: 16, \22stage_bytes\22: 4096, \22stages\22: 2, \22swizzle\22: \22128B\22
// CHECK-DAG: %[[ATOM_BYTES:[0-9]+]] = llvm.mlir.constant(2048 : i32)
// CHECK-DAG: %[[CHUNK_BITS:[0-9]+]] = llvm.mlir.constant(112 : i32)
// CHECK-DAG: %[[STAGE:[0-9]+]] = llvm.mlir.constant(4096 : i32)
// CHECK: llvm.mul %{{[0-9]+}}, %[[ATOM_BYTES]]
// CHECK: %[[CHUNKS:[0-9]+]] = llvm.lshr %[[OFFSET:[0-9]+]], %{{[0-9]+}}
// CHECK: %[[KEY:[0-9]+]] = llvm.and %[[CHUNKS]], %[[CHUNK_BITS]]
// CHECK: %[[SWIZZLED:[0-9]+]] = llvm.xor %[[OFFSET]], %[[KEY]]
// CHECK: llvm.add %[[SWIZZLED]], %[[STAGE]]
// CHECK-COUNT-7: llvm.xor
// CHECK-NOT: llvm.xor
// CHECK: llvm.return
func.func @stage_tile_transposed(%c: memref<?x?xf32>) attributes {wsc.num_threads = 128 : i32} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %ss = "wsc.alloc_shared"() : () -> memref<2x16x64xf32, 3>
  %t = "wsc.load_shared"(%ss, %c1) {transpose} : (memref<2x16x64xf32, 3>, index) -> !wsc.acc<array<i64: 64, 16>, f32>
  "wsc.store"(%t, %c, %c0, %c0) : (!wsc.acc<array<i64: 64, 16>, f32>, memref<?x?xf32>, index, index) -> ()
  return
}
