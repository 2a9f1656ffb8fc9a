// Inputs --warp-specialize does not support: each gets a located error.
// RUN: wsc-opt --split-input-file --verify-diagnostics --warp-specialize %s
// RUN: not wsc-opt --split-input-file --warp-specialize=num-consumer-groups=4 %s 2>&1 | FileCheck %s --check-prefix=GROUPS
// RUN: not wsc-opt --split-input-file --warp-specialize='num-consumer-groups=2 producer=warpgroup consumer-registers=256' %s 2>&1 | FileCheck %s --check-prefix=REGISTERS
// RUN: not wsc-opt --split-input-file --warp-specialize='num-consumer-groups=2 producer=warpgroup rebalance-registers=false consumer-registers=200' %s 2>&1 | FileCheck %s --check-prefix=KEEP
// RUN: not wsc-opt --split-input-file --warp-specialize='rebalance-registers=false' %s 2>&1 | FileCheck %s --check-prefix=KEEP-WARP
// RUN: not wsc-opt --warp-specialize=num-consumer-groups=3 %s 2>&1 | FileCheck %s --check-prefix=OPTION
// RUN: not wsc-opt --split-input-file --warp-specialize='wgmma-in-flight=1 num-stages=1' %s 2>&1 | FileCheck %s --check-prefix=INFLIGHT
// RUN: not wsc-opt --split-input-file --warp-specialize=num-stages=100 %s 2>&1 | FileCheck %s --check-prefix=RING
// RUN: not wsc-opt --split-input-file --warp-specialize=num-stages=10 %s 2>&1 | FileCheck %s --check-prefix=RINGS
// RUN: not wsc-opt --warp-specialize='producer=warpgroup num-consumer-groups=2 producer-registers=7' %s 2>&1 | FileCheck %s --check-prefix=BUDGET
// RUN: not wsc-opt --warp-specialize='producer-registers=32' %s 2>&1 | FileCheck %s --check-prefix=BUDGET-WARP
// The seed's V2 kernel without its wsc.wgmma_wait_group, with a group in flight.
// RUN: grep -v wgmma_wait_group %S/../../examples/matmul_v2.mlir | not wsc-opt --warp-specialize='wgmma-in-flight=1' - 2>&1 | FileCheck %s --check-prefix=NO-WAIT
// The seed's V2 kernel whose K loop wraps around at 3 of its 4 stages.
// RUN: sed 's/{num_stages = 4 : i32}/{num_stages = 3 : i32}/' %S/../../examples/matmul_v2.mlir | not wsc-opt --warp-specialize - 2>&1 | FileCheck %s --check-prefix=ADVANCE

// GROUPS: error: --warp-specialize: a 128-row tile cannot be split over 4 consumer warpgroups in multiples of 64 rows
// REGISTERS: error: --warp-specialize: consumer-registers = 256 cannot be met: a block of 384 threads starts with 168 registers per thread and a 40-register producer frees enough for at most 232 per consumer
// KEEP: error: --warp-specialize: consumer-registers = 200 needs rebalance-registers = true: without setmaxnreg every role keeps the registers the block starts with
// KEEP-WARP: error: --warp-specialize: rebalance-registers = false only applies to producer = warpgroup: a producer warp never gives registers away
// OPTION: wsc-opt: error: option 'num-consumer-groups' must be one of 1, 2, 4, got '3'
// INFLIGHT: error: --warp-specialize: wgmma-in-flight = 1 needs at least 2 stages: with 1 the stage a WGMMA group still reads is the one released
// A ring the option makes too big for shared memory is reported at the author's alloc.
// BUDGET: wsc-opt: error: pass 'warp-specialize': option 'producer-registers' must be a multiple of 8 from 24 to 256 (a setmaxnreg budget), got 7
// NO-WAIT: error: --warp-specialize: wgmma-in-flight = 1 turns the K tile's wsc.wgmma_wait_group into the wait that retires the previous K tile's group; this K loop has 0
// ADVANCE: <stdin>:44:32: error: --warp-specialize: the K loop counts 3 stages, but its full barrier array has 4, one a stage: give the wsc.ring_advance num_stages = 4
// BUDGET-WARP: wsc-opt: error: pass 'warp-specialize': 'producer-registers' and 'consumer-registers' apply to 'producer' = warpgroup (setmaxnreg is warpgroup-wide): with a producer warp every role keeps the registers the block starts with
// RING: warp-specialize-invalid.mlir:48:9: error: 'wsc.alloc_shared' op result needs 100 x 16384 = 1638400 bytes of shared memory
// Rings that fit one by one but not together: reported by the pass, not left to the lowering.
// RINGS: warp-specialize-invalid.mlir:36:1: error: 'func.func' op's shared buffers take 327680 bytes together, more than the 232448 bytes (227 KB) a block may use on sm_90
// RINGS-NEXT: warp-specialize-invalid.mlir:48:9: note: this ring buffer takes 163840 bytes

// A supported kernel: no diagnostics with the default options (the error
// under other options is checked by the GROUPS, REGISTERS, KEEP and KEEP-WARP runs).
func.func @supported(%a: memref<?x?xf16>, %b: memref<?x?xf16>, %c: memref<?x?xf32>)
    attributes {wsc.num_threads = 128 : i32} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %c128 = arith.constant 128 : index
  %bx = gpu.block_id x
  %by = gpu.block_id y
  %m0 = arith.muli %bx, %c128 : index
  %n0 = arith.muli %by, %c128 : index
  %k = memref.dim %a, %c1 : memref<?x?xf16>
  %k_tiles = arith.ceildivui %k, %c64 : index
  %sa = "wsc.alloc_shared"() : () -> memref<4x128x64xf16, 3>
  %sb = "wsc.alloc_shared"() : () -> memref<4x128x64xf16, 3>
  %full = "wsc.mbarrier_alloc"() {arrival_count = 1 : i32, num_barriers = 4 : i32} : () -> !wsc.mbarriers
  "wsc.sync"() : () -> ()
  %acc = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 128, 128>, f32>
  %false = arith.constant false
  %stage_n, %phase_n = scf.for %kt = %c0 to %k_tiles step %c1
      iter_args(%stage = %c0, %phase = %false) -> (index, i1) {
    %k0 = arith.muli %kt, %c64 : index
    %elected = "wsc.elect"() : () -> i1
    scf.if %elected {
      "wsc.mbarrier_arrive_expect_tx"(%full, %stage) {tx_bytes = 32768 : i32} : (!wsc.mbarriers, index) -> ()
      "wsc.tma_load"(%a, %m0, %k0, %sa, %stage, %full) : (memref<?x?xf16>, index, index, memref<4x128x64xf16, 3>, index, !wsc.mbarriers) -> ()
      "wsc.tma_load"(%b, %n0, %k0, %sb, %stage, %full) : (memref<?x?xf16>, index, index, memref<4x128x64xf16, 3>, index, !wsc.mbarriers) -> ()
    }
    "wsc.mbarrier_wait"(%full, %stage, %phase) : (!wsc.mbarriers, index, i1) -> ()
    "wsc.wgmma_fence"() : () -> ()
    "wsc.wgmma"(%sa, %sb, %stage, %acc) {a_row = 0 : i32, b_layout = "nk"} : (memref<4x128x64xf16, 3>, memref<4x128x64xf16, 3>, index, !wsc.acc<array<i64: 128, 128>, f32>) -> ()
    "wsc.wgmma_commit_group"() : () -> ()
    "wsc.wgmma_wait_group"() {pending = 0 : i32} : () -> ()
    "wsc.sync"() : () -> ()
    %next_stage, %next_phase = "wsc.ring_advance"(%stage, %phase) {num_stages = 4 : i32} : (index, i1) -> (index, i1)
    scf.yield %next_stage, %next_phase : index, i1
  }
  "wsc.store"(%acc, %c, %m0, %n0) : (!wsc.acc<array<i64: 128, 128>, f32>, memref<?x?xf32>, index, index) -> ()
  return
}

// -----

// A kernel that already has roles.
// expected-error @below {{--warp-specialize: kernel is already specialized (it has wsc.role ops)}}
func.func @already_specialized(%a: memref<?x?xf16>, %b: memref<?x?xf16>, %c: memref<?x?xf32>)
    attributes {wsc.num_threads = 160 : i32} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c64 = arith.constant 64 : index
  %c128 = arith.constant 128 : index
  %false = arith.constant false
  %true = arith.constant true
  %bx = gpu.block_id x
  %by = gpu.block_id y
  %m0 = arith.muli %bx, %c128 : index
  %n0 = arith.muli %by, %c128 : index
  %k = memref.dim %a, %c1 : memref<?x?xf16>
  %k_tiles = arith.ceildivui %k, %c64 : index
  %sa = "wsc.alloc_shared"() : () -> memref<4x128x64xf16, 3>
  %sb = "wsc.alloc_shared"() : () -> memref<4x128x64xf16, 3>
  %full = "wsc.mbarrier_alloc"() {arrival_count = 1 : i32, num_barriers = 4 : i32} : () -> !wsc.mbarriers
  %empty = "wsc.mbarrier_alloc"() {arrival_count = 128 : i32, num_barriers = 4 : i32} : () -> !wsc.mbarriers
  "wsc.sync"() : () -> ()
  %is_consumer = "wsc.role"() {role = "consumer", thread_begin = 0 : i32, num_threads = 128 : i32, max_registers = 232 : i32} : () -> i1
  scf.if %is_consumer {
    %acc = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 128, 128>, f32>
    %cs:2 = scf.for %kt = %c0 to %k_tiles step %c1 iter_args(%stage = %c0, %phase = %false) -> (index, i1) {
      "wsc.mbarrier_wait"(%full, %stage, %phase) : (!wsc.mbarriers, index, i1) -> ()
      "wsc.wgmma_fence"() : () -> ()
      "wsc.wgmma"(%sa, %sb, %stage, %acc) {a_row = 0 : i32, b_layout = "nk"} : (memref<4x128x64xf16, 3>, memref<4x128x64xf16, 3>, index, !wsc.acc<array<i64: 128, 128>, f32>) -> ()
      "wsc.wgmma_commit_group"() : () -> ()
      "wsc.wgmma_wait_group"() {pending = 0 : i32} : () -> ()
      "wsc.mbarrier_arrive"(%empty, %stage) : (!wsc.mbarriers, index) -> ()
      %next_stage, %next_phase = "wsc.ring_advance"(%stage, %phase) {num_stages = 4 : i32} : (index, i1) -> (index, i1)
      scf.yield %next_stage, %next_phase : index, i1
    }
    "wsc.store"(%acc, %c, %m0, %n0) : (!wsc.acc<array<i64: 128, 128>, f32>, memref<?x?xf32>, index, index) -> ()
  }
  %is_producer = "wsc.role"() {role = "producer", thread_begin = 128 : i32, num_threads = 32 : i32, max_registers = 40 : i32} : () -> i1
  scf.if %is_producer {
    %ps:2 = scf.for %kt = %c0 to %k_tiles step %c1 iter_args(%stage = %c0, %phase = %true) -> (index, i1) {
      "wsc.mbarrier_wait"(%empty, %stage, %phase) : (!wsc.mbarriers, index, i1) -> ()
      %k0 = arith.muli %kt, %c64 : index
      %elected = "wsc.elect"() : () -> i1
      scf.if %elected {
        "wsc.mbarrier_arrive_expect_tx"(%full, %stage) {tx_bytes = 32768 : i32} : (!wsc.mbarriers, index) -> ()
        "wsc.tma_load"(%a, %m0, %k0, %sa, %stage, %full) : (memref<?x?xf16>, index, index, memref<4x128x64xf16, 3>, index, !wsc.mbarriers) -> ()
        "wsc.tma_load"(%b, %n0, %k0, %sb, %stage, %full) : (memref<?x?xf16>, index, index, memref<4x128x64xf16, 3>, index, !wsc.mbarriers) -> ()
      }
      %next_stage, %next_phase = "wsc.ring_advance"(%stage, %phase) {num_stages = 4 : i32} : (index, i1) -> (index, i1)
      scf.yield %next_stage, %next_phase : index, i1
    }
    %drain = arith.minui %k_tiles, %c4 : index
    %ds:2 = scf.for %i = %c0 to %drain step %c1 iter_args(%stage = %ps#0, %phase = %ps#1) -> (index, i1) {
      "wsc.mbarrier_wait"(%empty, %stage, %phase) : (!wsc.mbarriers, index, i1) -> ()
      %next_stage, %next_phase = "wsc.ring_advance"(%stage, %phase) {num_stages = 4 : i32} : (index, i1) -> (index, i1)
      scf.yield %next_stage, %next_phase : index, i1
    }
  }
  return
}

// -----

// Releasing after wait_group 1 is the V5 form, not an input.
func.func @wait_group_one(%a: memref<?x?xf16>, %b: memref<?x?xf16>, %c: memref<?x?xf32>)
    attributes {wsc.num_threads = 128 : i32} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %c128 = arith.constant 128 : index
  %bx = gpu.block_id x
  %by = gpu.block_id y
  %m0 = arith.muli %bx, %c128 : index
  %n0 = arith.muli %by, %c128 : index
  %k = memref.dim %a, %c1 : memref<?x?xf16>
  %k_tiles = arith.ceildivui %k, %c64 : index
  %sa = "wsc.alloc_shared"() : () -> memref<4x128x64xf16, 3>
  %sb = "wsc.alloc_shared"() : () -> memref<4x128x64xf16, 3>
  %full = "wsc.mbarrier_alloc"() {arrival_count = 1 : i32, num_barriers = 4 : i32} : () -> !wsc.mbarriers
  "wsc.sync"() : () -> ()
  %acc = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 128, 128>, f32>
  %false = arith.constant false
  %stage_n, %phase_n = scf.for %kt = %c0 to %k_tiles step %c1
      iter_args(%stage = %c0, %phase = %false) -> (index, i1) {
    %k0 = arith.muli %kt, %c64 : index
    %elected = "wsc.elect"() : () -> i1
    scf.if %elected {
      "wsc.mbarrier_arrive_expect_tx"(%full, %stage) {tx_bytes = 32768 : i32} : (!wsc.mbarriers, index) -> ()
      "wsc.tma_load"(%a, %m0, %k0, %sa, %stage, %full) : (memref<?x?xf16>, index, index, memref<4x128x64xf16, 3>, index, !wsc.mbarriers) -> ()
      "wsc.tma_load"(%b, %n0, %k0, %sb, %stage, %full) : (memref<?x?xf16>, index, index, memref<4x128x64xf16, 3>, index, !wsc.mbarriers) -> ()
    }
    "wsc.mbarrier_wait"(%full, %stage, %phase) : (!wsc.mbarriers, index, i1) -> ()
    "wsc.wgmma_fence"() : () -> ()
    "wsc.wgmma"(%sa, %sb, %stage, %acc) {a_row = 0 : i32, b_layout = "nk"} : (memref<4x128x64xf16, 3>, memref<4x128x64xf16, 3>, index, !wsc.acc<array<i64: 128, 128>, f32>) -> ()
    "wsc.wgmma_commit_group"() : () -> ()
    // expected-error @below {{--warp-specialize: only wgmma_wait_group {pending = 0} is supported in the input: the stage is released after it}}
    "wsc.wgmma_wait_group"() {pending = 1 : i32} : () -> ()
    "wsc.sync"() : () -> ()
    %next_stage, %next_phase = "wsc.ring_advance"(%stage, %phase) {num_stages = 4 : i32} : (index, i1) -> (index, i1)
    scf.yield %next_stage, %next_phase : index, i1
  }
  "wsc.store"(%acc, %c, %m0, %n0) : (!wsc.acc<array<i64: 128, 128>, f32>, memref<?x?xf32>, index, index) -> ()
  return
}

// -----

// The full barriers count the one elected producer arrival.
func.func @full_count(%a: memref<?x?xf16>, %b: memref<?x?xf16>, %c: memref<?x?xf32>)
    attributes {wsc.num_threads = 128 : i32} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %c128 = arith.constant 128 : index
  %bx = gpu.block_id x
  %by = gpu.block_id y
  %m0 = arith.muli %bx, %c128 : index
  %n0 = arith.muli %by, %c128 : index
  %k = memref.dim %a, %c1 : memref<?x?xf16>
  %k_tiles = arith.ceildivui %k, %c64 : index
  %sa = "wsc.alloc_shared"() : () -> memref<4x128x64xf16, 3>
  %sb = "wsc.alloc_shared"() : () -> memref<4x128x64xf16, 3>
  // expected-error @below {{--warp-specialize: the full barriers must expect 1 arrival (the elected producer thread), not 2}}
  %full = "wsc.mbarrier_alloc"() {arrival_count = 2 : i32, num_barriers = 4 : i32} : () -> !wsc.mbarriers
  "wsc.sync"() : () -> ()
  %acc = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 128, 128>, f32>
  %false = arith.constant false
  %stage_n, %phase_n = scf.for %kt = %c0 to %k_tiles step %c1
      iter_args(%stage = %c0, %phase = %false) -> (index, i1) {
    %k0 = arith.muli %kt, %c64 : index
    %elected = "wsc.elect"() : () -> i1
    scf.if %elected {
      "wsc.mbarrier_arrive_expect_tx"(%full, %stage) {tx_bytes = 32768 : i32} : (!wsc.mbarriers, index) -> ()
      "wsc.tma_load"(%a, %m0, %k0, %sa, %stage, %full) : (memref<?x?xf16>, index, index, memref<4x128x64xf16, 3>, index, !wsc.mbarriers) -> ()
      "wsc.tma_load"(%b, %n0, %k0, %sb, %stage, %full) : (memref<?x?xf16>, index, index, memref<4x128x64xf16, 3>, index, !wsc.mbarriers) -> ()
    }
    "wsc.mbarrier_wait"(%full, %stage, %phase) : (!wsc.mbarriers, index, i1) -> ()
    "wsc.wgmma_fence"() : () -> ()
    "wsc.wgmma"(%sa, %sb, %stage, %acc) {a_row = 0 : i32, b_layout = "nk"} : (memref<4x128x64xf16, 3>, memref<4x128x64xf16, 3>, index, !wsc.acc<array<i64: 128, 128>, f32>) -> ()
    "wsc.wgmma_commit_group"() : () -> ()
    "wsc.wgmma_wait_group"() {pending = 0 : i32} : () -> ()
    "wsc.sync"() : () -> ()
    %next_stage, %next_phase = "wsc.ring_advance"(%stage, %phase) {num_stages = 4 : i32} : (index, i1) -> (index, i1)
    scf.yield %next_stage, %next_phase : index, i1
  }
  "wsc.store"(%acc, %c, %m0, %n0) : (!wsc.acc<array<i64: 128, 128>, f32>, memref<?x?xf32>, index, index) -> ()
  return
}

// -----

// Copies elected inside a guard (a prefetch's): the elect is not the K loop's.
func.func @copies_elected_in_a_guard(%a: memref<?x?xf16>, %b: memref<?x?xf16>, %c: memref<?x?xf32>)
    attributes {wsc.num_threads = 128 : i32} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %c128 = arith.constant 128 : index
  %bx = gpu.block_id x
  %by = gpu.block_id y
  %m0 = arith.muli %bx, %c128 : index
  %n0 = arith.muli %by, %c128 : index
  %k = memref.dim %a, %c1 : memref<?x?xf16>
  %k_tiles = arith.ceildivui %k, %c64 : index
  %sa = "wsc.alloc_shared"() : () -> memref<4x128x64xf16, 3>
  %sb = "wsc.alloc_shared"() : () -> memref<4x128x64xf16, 3>
  %full = "wsc.mbarrier_alloc"() {arrival_count = 1 : i32, num_barriers = 4 : i32} : () -> !wsc.mbarriers
  "wsc.sync"() : () -> ()
  %acc = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 128, 128>, f32>
  %false = arith.constant false
  %stage_n, %phase_n = scf.for %kt = %c0 to %k_tiles step %c1
      iter_args(%stage = %c0, %phase = %false) -> (index, i1) {
    %k0 = arith.muli %kt, %c64 : index
    %elected = "wsc.elect"() : () -> i1
    %t = arith.constant true
    // expected-error @below {{--warp-specialize: TMA copies must be issued under a wsc.elect in the K loop's body; these are elected inside another condition (such as a prefetch guard): issue them under the elect alone}}
    scf.if %t {
      scf.if %elected {
        "wsc.mbarrier_arrive_expect_tx"(%full, %stage) {tx_bytes = 32768 : i32} : (!wsc.mbarriers, index) -> ()
        "wsc.tma_load"(%a, %m0, %k0, %sa, %stage, %full) : (memref<?x?xf16>, index, index, memref<4x128x64xf16, 3>, index, !wsc.mbarriers) -> ()
        "wsc.tma_load"(%b, %n0, %k0, %sb, %stage, %full) : (memref<?x?xf16>, index, index, memref<4x128x64xf16, 3>, index, !wsc.mbarriers) -> ()
      }
    }
    "wsc.mbarrier_wait"(%full, %stage, %phase) : (!wsc.mbarriers, index, i1) -> ()
    "wsc.wgmma_fence"() : () -> ()
    "wsc.wgmma"(%sa, %sb, %stage, %acc) {a_row = 0 : i32, b_layout = "nk"} : (memref<4x128x64xf16, 3>, memref<4x128x64xf16, 3>, index, !wsc.acc<array<i64: 128, 128>, f32>) -> ()
    "wsc.wgmma_commit_group"() : () -> ()
    "wsc.wgmma_wait_group"() {pending = 0 : i32} : () -> ()
    "wsc.sync"() : () -> ()
    %next_stage, %next_phase = "wsc.ring_advance"(%stage, %phase) {num_stages = 4 : i32} : (index, i1) -> (index, i1)
    scf.yield %next_stage, %next_phase : index, i1
  }
  "wsc.store"(%acc, %c, %m0, %n0) : (!wsc.acc<array<i64: 128, 128>, f32>, memref<?x?xf32>, index, index) -> ()
  return
}

// -----

// An op the pass cannot give to a role.
func.func @store_in_loop(%a: memref<?x?xf16>, %b: memref<?x?xf16>, %c: memref<?x?xf32>)
    attributes {wsc.num_threads = 128 : i32} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %c128 = arith.constant 128 : index
  %bx = gpu.block_id x
  %by = gpu.block_id y
  %m0 = arith.muli %bx, %c128 : index
  %n0 = arith.muli %by, %c128 : index
  %k = memref.dim %a, %c1 : memref<?x?xf16>
  %k_tiles = arith.ceildivui %k, %c64 : index
  %sa = "wsc.alloc_shared"() : () -> memref<4x128x64xf16, 3>
  %sb = "wsc.alloc_shared"() : () -> memref<4x128x64xf16, 3>
  %full = "wsc.mbarrier_alloc"() {arrival_count = 1 : i32, num_barriers = 4 : i32} : () -> !wsc.mbarriers
  "wsc.sync"() : () -> ()
  %acc = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 128, 128>, f32>
  %false = arith.constant false
  %stage_n, %phase_n = scf.for %kt = %c0 to %k_tiles step %c1
      iter_args(%stage = %c0, %phase = %false) -> (index, i1) {
    %k0 = arith.muli %kt, %c64 : index
    %elected = "wsc.elect"() : () -> i1
    scf.if %elected {
      "wsc.mbarrier_arrive_expect_tx"(%full, %stage) {tx_bytes = 32768 : i32} : (!wsc.mbarriers, index) -> ()
      "wsc.tma_load"(%a, %m0, %k0, %sa, %stage, %full) : (memref<?x?xf16>, index, index, memref<4x128x64xf16, 3>, index, !wsc.mbarriers) -> ()
      "wsc.tma_load"(%b, %n0, %k0, %sb, %stage, %full) : (memref<?x?xf16>, index, index, memref<4x128x64xf16, 3>, index, !wsc.mbarriers) -> ()
    }
    "wsc.mbarrier_wait"(%full, %stage, %phase) : (!wsc.mbarriers, index, i1) -> ()
    "wsc.wgmma_fence"() : () -> ()
    "wsc.wgmma"(%sa, %sb, %stage, %acc) {a_row = 0 : i32, b_layout = "nk"} : (memref<4x128x64xf16, 3>, memref<4x128x64xf16, 3>, index, !wsc.acc<array<i64: 128, 128>, f32>) -> ()
    "wsc.wgmma_commit_group"() : () -> ()
    "wsc.wgmma_wait_group"() {pending = 0 : i32} : () -> ()
    // expected-error @below {{--warp-specialize: cannot assign 'wsc.store' in the K loop to the producer or the consumers}}
    "wsc.store"(%acc, %c, %m0, %n0) : (!wsc.acc<array<i64: 128, 128>, f32>, memref<?x?xf32>, index, index) -> ()
    %next_stage, %next_phase = "wsc.ring_advance"(%stage, %phase) {num_stages = 4 : i32} : (index, i1) -> (index, i1)
    scf.yield %next_stage, %next_phase : index, i1
  }
  "wsc.store"(%acc, %c, %m0, %n0) : (!wsc.acc<array<i64: 128, 128>, f32>, memref<?x?xf32>, index, index) -> ()
  return
}

// -----

// The loop must yield the advanced ring position.
func.func @no_stage_phase(%a: memref<?x?xf16>, %b: memref<?x?xf16>, %c: memref<?x?xf32>)
    attributes {wsc.num_threads = 128 : i32} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %c128 = arith.constant 128 : index
  %bx = gpu.block_id x
  %by = gpu.block_id y
  %m0 = arith.muli %bx, %c128 : index
  %n0 = arith.muli %by, %c128 : index
  %k = memref.dim %a, %c1 : memref<?x?xf16>
  %k_tiles = arith.ceildivui %k, %c64 : index
  %sa = "wsc.alloc_shared"() : () -> memref<4x128x64xf16, 3>
  %sb = "wsc.alloc_shared"() : () -> memref<4x128x64xf16, 3>
  %full = "wsc.mbarrier_alloc"() {arrival_count = 1 : i32, num_barriers = 4 : i32} : () -> !wsc.mbarriers
  "wsc.sync"() : () -> ()
  %acc = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 128, 128>, f32>
  %false = arith.constant false
  %stage_n, %phase_n = scf.for %kt = %c0 to %k_tiles step %c1
      iter_args(%stage = %c0, %phase = %false) -> (index, i1) {
    %k0 = arith.muli %kt, %c64 : index
    %elected = "wsc.elect"() : () -> i1
    scf.if %elected {
      "wsc.mbarrier_arrive_expect_tx"(%full, %stage) {tx_bytes = 32768 : i32} : (!wsc.mbarriers, index) -> ()
      "wsc.tma_load"(%a, %m0, %k0, %sa, %stage, %full) : (memref<?x?xf16>, index, index, memref<4x128x64xf16, 3>, index, !wsc.mbarriers) -> ()
      "wsc.tma_load"(%b, %n0, %k0, %sb, %stage, %full) : (memref<?x?xf16>, index, index, memref<4x128x64xf16, 3>, index, !wsc.mbarriers) -> ()
    }
    "wsc.mbarrier_wait"(%full, %stage, %phase) : (!wsc.mbarriers, index, i1) -> ()
    "wsc.wgmma_fence"() : () -> ()
    "wsc.wgmma"(%sa, %sb, %stage, %acc) {a_row = 0 : i32, b_layout = "nk"} : (memref<4x128x64xf16, 3>, memref<4x128x64xf16, 3>, index, !wsc.acc<array<i64: 128, 128>, f32>) -> ()
    "wsc.wgmma_commit_group"() : () -> ()
    "wsc.wgmma_wait_group"() {pending = 0 : i32} : () -> ()
    "wsc.sync"() : () -> ()
    // expected-error @below {{--warp-specialize: the loop must yield wsc.ring_advance of its own (stage, phase)}}
    %next_stage, %next_phase = "wsc.ring_advance"(%stage, %phase) {num_stages = 4 : i32} : (index, i1) -> (index, i1)
    scf.yield %stage, %next_phase : index, i1
  }
  "wsc.store"(%acc, %c, %m0, %n0) : (!wsc.acc<array<i64: 128, 128>, f32>, memref<?x?xf32>, index, index) -> ()
  return
}

// -----

// The drain count assumes one K tile per trip.
func.func @step_two(%a: memref<?x?xf16>, %b: memref<?x?xf16>, %c: memref<?x?xf32>)
    attributes {wsc.num_threads = 128 : i32} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c64 = arith.constant 64 : index
  %c128 = arith.constant 128 : index
  %bx = gpu.block_id x
  %by = gpu.block_id y
  %m0 = arith.muli %bx, %c128 : index
  %n0 = arith.muli %by, %c128 : index
  %k = memref.dim %a, %c1 : memref<?x?xf16>
  %k_tiles = arith.ceildivui %k, %c64 : index
  %sa = "wsc.alloc_shared"() : () -> memref<4x128x64xf16, 3>
  %sb = "wsc.alloc_shared"() : () -> memref<4x128x64xf16, 3>
  %full = "wsc.mbarrier_alloc"() {arrival_count = 1 : i32, num_barriers = 4 : i32} : () -> !wsc.mbarriers
  "wsc.sync"() : () -> ()
  %acc = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 128, 128>, f32>
  %false = arith.constant false
  // expected-error @below {{--warp-specialize: the K loop must count K tiles from 0 in steps of 1}}
  %stage_n, %phase_n = scf.for %kt = %c0 to %k_tiles step %c2
      iter_args(%stage = %c0, %phase = %false) -> (index, i1) {
    %k0 = arith.muli %kt, %c64 : index
    %elected = "wsc.elect"() : () -> i1
    scf.if %elected {
      "wsc.mbarrier_arrive_expect_tx"(%full, %stage) {tx_bytes = 32768 : i32} : (!wsc.mbarriers, index) -> ()
      "wsc.tma_load"(%a, %m0, %k0, %sa, %stage, %full) : (memref<?x?xf16>, index, index, memref<4x128x64xf16, 3>, index, !wsc.mbarriers) -> ()
      "wsc.tma_load"(%b, %n0, %k0, %sb, %stage, %full) : (memref<?x?xf16>, index, index, memref<4x128x64xf16, 3>, index, !wsc.mbarriers) -> ()
    }
    "wsc.mbarrier_wait"(%full, %stage, %phase) : (!wsc.mbarriers, index, i1) -> ()
    "wsc.wgmma_fence"() : () -> ()
    "wsc.wgmma"(%sa, %sb, %stage, %acc) {a_row = 0 : i32, b_layout = "nk"} : (memref<4x128x64xf16, 3>, memref<4x128x64xf16, 3>, index, !wsc.acc<array<i64: 128, 128>, f32>) -> ()
    "wsc.wgmma_commit_group"() : () -> ()
    "wsc.wgmma_wait_group"() {pending = 0 : i32} : () -> ()
    "wsc.sync"() : () -> ()
    %next_stage, %next_phase = "wsc.ring_advance"(%stage, %phase) {num_stages = 4 : i32} : (index, i1) -> (index, i1)
    scf.yield %next_stage, %next_phase : index, i1
  }
  "wsc.store"(%acc, %c, %m0, %n0) : (!wsc.acc<array<i64: 128, 128>, f32>, memref<?x?xf32>, index, index) -> ()
  return
}

// -----

// A persistent kernel whose K loop restarts the ring at stage 0 every tile:
// the producer and the consumers would disagree on which stage is next.
func.func @tile_loop_drops_the_ring(%a: memref<?x?xf16>, %b: memref<?x?xf16>, %c: memref<?x?xf32>)
    attributes {wsc.num_threads = 128 : i32} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %c128 = arith.constant 128 : index
  %k = memref.dim %a, %c1 : memref<?x?xf16>
  %k_tiles = arith.ceildivui %k, %c64 : index
  %sa = "wsc.alloc_shared"() : () -> memref<4x128x64xf16, 3>
  %sb = "wsc.alloc_shared"() : () -> memref<4x128x64xf16, 3>
  %full = "wsc.mbarrier_alloc"() {arrival_count = 1 : i32, num_barriers = 4 : i32} : () -> !wsc.mbarriers
  "wsc.sync"() : () -> ()
  %m = memref.dim %a, %c0 : memref<?x?xf16>
  %n = memref.dim %c, %c1 : memref<?x?xf32>
  %tiles_m = arith.ceildivui %m, %c128 : index
  %tiles_n = arith.ceildivui %n, %c128 : index
  %num_tiles = arith.muli %tiles_m, %tiles_n : index
  %bx = gpu.block_id x
  %grid = gpu.grid_dim x
  %false = arith.constant false
  // expected-error @below {{--warp-specialize: the tile loop must carry exactly the ring's (stage, phase): the K loop starts from them and the tile loop yields the K loop's results}}
  %last_stage, %last_phase = scf.for %tile = %bx to %num_tiles step %grid
      iter_args(%tile_stage = %c0, %tile_phase = %false) -> (index, i1) {
    %row = arith.remui %tile, %tiles_m : index
    %col = arith.divui %tile, %tiles_m : index
    %m0 = arith.muli %row, %c128 : index
    %n0 = arith.muli %col, %c128 : index
    %acc = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 128, 128>, f32>
    %stage_n, %phase_n = scf.for %kt = %c0 to %k_tiles step %c1
        iter_args(%stage = %c0, %phase = %tile_phase) -> (index, i1) {
      %k0 = arith.muli %kt, %c64 : index
      %elected = "wsc.elect"() : () -> i1
      scf.if %elected {
        "wsc.mbarrier_arrive_expect_tx"(%full, %stage) {tx_bytes = 32768 : i32} : (!wsc.mbarriers, index) -> ()
        "wsc.tma_load"(%a, %m0, %k0, %sa, %stage, %full) : (memref<?x?xf16>, index, index, memref<4x128x64xf16, 3>, index, !wsc.mbarriers) -> ()
        "wsc.tma_load"(%b, %n0, %k0, %sb, %stage, %full) : (memref<?x?xf16>, index, index, memref<4x128x64xf16, 3>, index, !wsc.mbarriers) -> ()
      }
      "wsc.mbarrier_wait"(%full, %stage, %phase) : (!wsc.mbarriers, index, i1) -> ()
      "wsc.wgmma_fence"() : () -> ()
      "wsc.wgmma"(%sa, %sb, %stage, %acc) {a_row = 0 : i32, b_layout = "nk"} : (memref<4x128x64xf16, 3>, memref<4x128x64xf16, 3>, index, !wsc.acc<array<i64: 128, 128>, f32>) -> ()
      "wsc.wgmma_commit_group"() : () -> ()
      "wsc.wgmma_wait_group"() {pending = 0 : i32} : () -> ()
      "wsc.sync"() : () -> ()
      %next_stage, %next_phase = "wsc.ring_advance"(%stage, %phase) {num_stages = 4 : i32} : (index, i1) -> (index, i1)
      scf.yield %next_stage, %next_phase : index, i1
    }
    "wsc.store"(%acc, %c, %m0, %n0) : (!wsc.acc<array<i64: 128, 128>, f32>, memref<?x?xf32>, index, index) -> ()
    scf.yield %stage_n, %phase_n : index, i1
  }
  return
}

// -----

// A persistent kernel with a block-wide sync per tile, before the K loop:
// the roles each run their own tile loop, so no op may stand for all of them.
func.func @tile_prologue_syncs(%a: memref<?x?xf16>, %b: memref<?x?xf16>, %c: memref<?x?xf32>)
    attributes {wsc.num_threads = 128 : i32} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %c128 = arith.constant 128 : index
  %k = memref.dim %a, %c1 : memref<?x?xf16>
  %k_tiles = arith.ceildivui %k, %c64 : index
  %sa = "wsc.alloc_shared"() : () -> memref<4x128x64xf16, 3>
  %sb = "wsc.alloc_shared"() : () -> memref<4x128x64xf16, 3>
  %full = "wsc.mbarrier_alloc"() {arrival_count = 1 : i32, num_barriers = 4 : i32} : () -> !wsc.mbarriers
  "wsc.sync"() : () -> ()
  %m = memref.dim %a, %c0 : memref<?x?xf16>
  %n = memref.dim %c, %c1 : memref<?x?xf32>
  %tiles_m = arith.ceildivui %m, %c128 : index
  %tiles_n = arith.ceildivui %n, %c128 : index
  %num_tiles = arith.muli %tiles_m, %tiles_n : index
  %bx = gpu.block_id x
  %grid = gpu.grid_dim x
  %false = arith.constant false
  %last_stage, %last_phase = scf.for %tile = %bx to %num_tiles step %grid
      iter_args(%tile_stage = %c0, %tile_phase = %false) -> (index, i1) {
    %row = arith.remui %tile, %tiles_m : index
    %col = arith.divui %tile, %tiles_m : index
    %m0 = arith.muli %row, %c128 : index
    %n0 = arith.muli %col, %c128 : index
    // expected-error @below {{--warp-specialize: every role runs the tile loop: 'wsc.sync' before the K loop cannot be given to all of them}}
    "wsc.sync"() : () -> ()
    %acc = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 128, 128>, f32>
    %stage_n, %phase_n = scf.for %kt = %c0 to %k_tiles step %c1
        iter_args(%stage = %tile_stage, %phase = %tile_phase) -> (index, i1) {
      %k0 = arith.muli %kt, %c64 : index
      %elected = "wsc.elect"() : () -> i1
      scf.if %elected {
        "wsc.mbarrier_arrive_expect_tx"(%full, %stage) {tx_bytes = 32768 : i32} : (!wsc.mbarriers, index) -> ()
        "wsc.tma_load"(%a, %m0, %k0, %sa, %stage, %full) : (memref<?x?xf16>, index, index, memref<4x128x64xf16, 3>, index, !wsc.mbarriers) -> ()
        "wsc.tma_load"(%b, %n0, %k0, %sb, %stage, %full) : (memref<?x?xf16>, index, index, memref<4x128x64xf16, 3>, index, !wsc.mbarriers) -> ()
      }
      "wsc.mbarrier_wait"(%full, %stage, %phase) : (!wsc.mbarriers, index, i1) -> ()
      "wsc.wgmma_fence"() : () -> ()
      "wsc.wgmma"(%sa, %sb, %stage, %acc) {a_row = 0 : i32, b_layout = "nk"} : (memref<4x128x64xf16, 3>, memref<4x128x64xf16, 3>, index, !wsc.acc<array<i64: 128, 128>, f32>) -> ()
      "wsc.wgmma_commit_group"() : () -> ()
      "wsc.wgmma_wait_group"() {pending = 0 : i32} : () -> ()
      "wsc.sync"() : () -> ()
      %next_stage, %next_phase = "wsc.ring_advance"(%stage, %phase) {num_stages = 4 : i32} : (index, i1) -> (index, i1)
      scf.yield %next_stage, %next_phase : index, i1
    }
    "wsc.store"(%acc, %c, %m0, %n0) : (!wsc.acc<array<i64: 128, 128>, f32>, memref<?x?xf32>, index, index) -> ()
    scf.yield %stage_n, %phase_n : index, i1
  }
  return
}

// -----

// A TMA-store epilogue stages one tile: its buffer has one stage.
func.func @staging_two_stages(%a: memref<?x?xf16>, %b: memref<?x?xf16>, %c: memref<?x?xf16>) attributes {wsc.num_threads = 128 : i32} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %false = arith.constant false
  %k = memref.dim %a, %c1 : memref<?x?xf16>
  %k_tiles = arith.ceildivui %k, %c64 : index
  %sa = "wsc.alloc_shared"() : () -> memref<2x128x64xf16, 3>
  %sb = "wsc.alloc_shared"() : () -> memref<2x128x64xf16, 3>
  // expected-error @below {{--warp-specialize: the staging buffer must be one stage of the 128x128 tile, got 2x128x128}}
  %sc = "wsc.alloc_shared"() : () -> memref<2x128x128xf16, 3>
  %full = "wsc.mbarrier_alloc"() {arrival_count = 1 : i32, num_barriers = 2 : i32} : () -> !wsc.mbarriers
  "wsc.sync"() : () -> ()
  %acc = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 128, 128>, f32>
  %ring:2 = scf.for %kt = %c0 to %k_tiles step %c1 iter_args(%stage = %c0, %phase = %false) -> (index, i1) {
    %k0 = arith.muli %kt, %c64 : index
    %elected = "wsc.elect"() : () -> i1
    scf.if %elected {
      "wsc.mbarrier_arrive_expect_tx"(%full, %stage) {tx_bytes = 32768 : i32} : (!wsc.mbarriers, index) -> ()
      "wsc.tma_load"(%a, %c0, %k0, %sa, %stage, %full) : (memref<?x?xf16>, index, index, memref<2x128x64xf16, 3>, index, !wsc.mbarriers) -> ()
      "wsc.tma_load"(%b, %c0, %k0, %sb, %stage, %full) : (memref<?x?xf16>, index, index, memref<2x128x64xf16, 3>, index, !wsc.mbarriers) -> ()
    }
    "wsc.mbarrier_wait"(%full, %stage, %phase) : (!wsc.mbarriers, index, i1) -> ()
    "wsc.wgmma_fence"() : () -> ()
    "wsc.wgmma"(%sa, %sb, %stage, %acc) {a_row = 0 : i32, b_layout = "nk"} : (memref<2x128x64xf16, 3>, memref<2x128x64xf16, 3>, index, !wsc.acc<array<i64: 128, 128>, f32>) -> ()
    "wsc.wgmma_commit_group"() : () -> ()
    "wsc.wgmma_wait_group"() {pending = 0 : i32} : () -> ()
    "wsc.sync"() : () -> ()
    %next:2 = "wsc.ring_advance"(%stage, %phase) {num_stages = 2 : i32} : (index, i1) -> (index, i1)
    scf.yield %next#0, %next#1 : index, i1
  }
  %h = "wsc.cast"(%acc) : (!wsc.acc<array<i64: 128, 128>, f32>) -> !wsc.acc<array<i64: 128, 128>, f16>
  "wsc.store_shared"(%h, %sc, %c0) : (!wsc.acc<array<i64: 128, 128>, f16>, memref<2x128x128xf16, 3>, index) -> ()
  "wsc.fence_proxy_async"() : () -> ()
  "wsc.sync"() : () -> ()
  %storer = "wsc.elect"() : () -> i1
  scf.if %storer {
    "wsc.tma_store"(%sc, %c0, %c, %c0, %c0) : (memref<2x128x128xf16, 3>, index, memref<?x?xf16>, index, index) -> ()
  }
  return
}

// -----

// Only the copy and its wait go to the elected thread.
func.func @sync_under_elect(%a: memref<?x?xf16>, %b: memref<?x?xf16>, %c: memref<?x?xf16>) attributes {wsc.num_threads = 128 : i32} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %false = arith.constant false
  %k = memref.dim %a, %c1 : memref<?x?xf16>
  %k_tiles = arith.ceildivui %k, %c64 : index
  %sa = "wsc.alloc_shared"() : () -> memref<2x128x64xf16, 3>
  %sb = "wsc.alloc_shared"() : () -> memref<2x128x64xf16, 3>
  %sc = "wsc.alloc_shared"() : () -> memref<1x128x128xf16, 3>
  %full = "wsc.mbarrier_alloc"() {arrival_count = 1 : i32, num_barriers = 2 : i32} : () -> !wsc.mbarriers
  "wsc.sync"() : () -> ()
  %acc = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 128, 128>, f32>
  %ring:2 = scf.for %kt = %c0 to %k_tiles step %c1 iter_args(%stage = %c0, %phase = %false) -> (index, i1) {
    %k0 = arith.muli %kt, %c64 : index
    %elected = "wsc.elect"() : () -> i1
    scf.if %elected {
      "wsc.mbarrier_arrive_expect_tx"(%full, %stage) {tx_bytes = 32768 : i32} : (!wsc.mbarriers, index) -> ()
      "wsc.tma_load"(%a, %c0, %k0, %sa, %stage, %full) : (memref<?x?xf16>, index, index, memref<2x128x64xf16, 3>, index, !wsc.mbarriers) -> ()
      "wsc.tma_load"(%b, %c0, %k0, %sb, %stage, %full) : (memref<?x?xf16>, index, index, memref<2x128x64xf16, 3>, index, !wsc.mbarriers) -> ()
    }
    "wsc.mbarrier_wait"(%full, %stage, %phase) : (!wsc.mbarriers, index, i1) -> ()
    "wsc.wgmma_fence"() : () -> ()
    "wsc.wgmma"(%sa, %sb, %stage, %acc) {a_row = 0 : i32, b_layout = "nk"} : (memref<2x128x64xf16, 3>, memref<2x128x64xf16, 3>, index, !wsc.acc<array<i64: 128, 128>, f32>) -> ()
    "wsc.wgmma_commit_group"() : () -> ()
    "wsc.wgmma_wait_group"() {pending = 0 : i32} : () -> ()
    "wsc.sync"() : () -> ()
    %next:2 = "wsc.ring_advance"(%stage, %phase) {num_stages = 2 : i32} : (index, i1) -> (index, i1)
    scf.yield %next#0, %next#1 : index, i1
  }
  %h = "wsc.cast"(%acc) : (!wsc.acc<array<i64: 128, 128>, f32>) -> !wsc.acc<array<i64: 128, 128>, f16>
  "wsc.store_shared"(%h, %sc, %c0) : (!wsc.acc<array<i64: 128, 128>, f16>, memref<1x128x128xf16, 3>, index) -> ()
  "wsc.fence_proxy_async"() : () -> ()
  "wsc.sync"() : () -> ()
  %storer = "wsc.elect"() : () -> i1
  // expected-error @below {{--warp-specialize: an scf.if in the epilogue must be a wsc.elect guarding wsc.tma_store / wsc.tma_store_wait, or take its condition from arith on block indices, sizes, loop indices and wsc.partial_arrive (the same in every thread)}}
  scf.if %storer {
    "wsc.sync"() : () -> ()
    "wsc.tma_store"(%sc, %c0, %c, %c0, %c0) : (memref<1x128x128xf16, 3>, index, memref<?x?xf16>, index, index) -> ()
  }
  return
}

// -----

// A guard that differs between threads: half of each consumer group would
// skip the epilogue's stores (and any barrier in it).
func.func @epilogue_guard_on_the_thread(%a: memref<?x?xf16>, %b: memref<?x?xf16>, %c: memref<?x?xf32>) attributes {wsc.num_threads = 128 : i32} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %false = arith.constant false
  %k = memref.dim %a, %c1 : memref<?x?xf16>
  %k_tiles = arith.ceildivui %k, %c64 : index
  %sa = "wsc.alloc_shared"() : () -> memref<2x128x64xf16, 3>
  %sb = "wsc.alloc_shared"() : () -> memref<2x128x64xf16, 3>
  %full = "wsc.mbarrier_alloc"() {arrival_count = 1 : i32, num_barriers = 2 : i32} : () -> !wsc.mbarriers
  "wsc.sync"() : () -> ()
  %thread = gpu.thread_id x
  %acc = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 128, 128>, f32>
  %ring:2 = scf.for %kt = %c0 to %k_tiles step %c1 iter_args(%stage = %c0, %phase = %false) -> (index, i1) {
    %k0 = arith.muli %kt, %c64 : index
    %elected = "wsc.elect"() : () -> i1
    scf.if %elected {
      "wsc.mbarrier_arrive_expect_tx"(%full, %stage) {tx_bytes = 32768 : i32} : (!wsc.mbarriers, index) -> ()
      "wsc.tma_load"(%a, %c0, %k0, %sa, %stage, %full) : (memref<?x?xf16>, index, index, memref<2x128x64xf16, 3>, index, !wsc.mbarriers) -> ()
      "wsc.tma_load"(%b, %c0, %k0, %sb, %stage, %full) : (memref<?x?xf16>, index, index, memref<2x128x64xf16, 3>, index, !wsc.mbarriers) -> ()
    }
    "wsc.mbarrier_wait"(%full, %stage, %phase) : (!wsc.mbarriers, index, i1) -> ()
    "wsc.wgmma_fence"() : () -> ()
    "wsc.wgmma"(%sa, %sb, %stage, %acc) {a_row = 0 : i32, b_layout = "nk"} : (memref<2x128x64xf16, 3>, memref<2x128x64xf16, 3>, index, !wsc.acc<array<i64: 128, 128>, f32>) -> ()
    "wsc.wgmma_commit_group"() : () -> ()
    "wsc.wgmma_wait_group"() {pending = 0 : i32} : () -> ()
    "wsc.sync"() : () -> ()
    %next:2 = "wsc.ring_advance"(%stage, %phase) {num_stages = 2 : i32} : (index, i1) -> (index, i1)
    scf.yield %next#0, %next#1 : index, i1
  }
  %low_half = arith.cmpi ult, %thread, %c64 : index
  // expected-error @below {{--warp-specialize: an scf.if in the epilogue must be a wsc.elect guarding wsc.tma_store / wsc.tma_store_wait, or take its condition from arith on block indices, sizes, loop indices and wsc.partial_arrive (the same in every thread)}}
  scf.if %low_half {
    "wsc.store"(%acc, %c, %c0, %c0) : (!wsc.acc<array<i64: 128, 128>, f32>, memref<?x?xf32>, index, index) -> ()
  }
  return
}

// -----

// Only the last split stores: nothing else runs on the split-K guard.
func.func @split_k_guard_with_else(%a: memref<?x?xf16>, %b: memref<?x?xf16>, %c: memref<?x?xf16>, %d: memref<?xf32>, %e: memref<?xi32>) attributes {wsc.num_threads = 128 : i32} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %k = memref.dim %a, %c1 : memref<?x?xf16>
  %kt = arith.ceildivui %k, %c64 : index
  %sa = "wsc.alloc_shared"() : () -> memref<2x128x64xf16, 3>
  %sb = "wsc.alloc_shared"() : () -> memref<2x128x64xf16, 3>
  %full = "wsc.mbarrier_alloc"() {arrival_count = 1 : i32, num_barriers = 2 : i32} : () -> !wsc.mbarriers
  "wsc.sync"() : () -> ()
  %acc = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 128, 128>, f32>
  %split = gpu.block_id z
  %tile = gpu.block_id x
  %c128 = arith.constant 128 : index
  %row = arith.muli %tile, %c128 : index
  %false = arith.constant false
  %r:2 = scf.for %i = %c0 to %kt step %c1 iter_args(%s = %c0, %p = %false) -> (index, i1) {
    %k0 = arith.muli %i, %c64 : index
    %e0 = "wsc.elect"() : () -> i1
    scf.if %e0 {
      "wsc.mbarrier_arrive_expect_tx"(%full, %s) {tx_bytes = 32768 : i32} : (!wsc.mbarriers, index) -> ()
      "wsc.tma_load"(%a, %row, %k0, %sa, %s, %full) : (memref<?x?xf16>, index, index, memref<2x128x64xf16, 3>, index, !wsc.mbarriers) -> ()
      "wsc.tma_load"(%b, %c0, %k0, %sb, %s, %full) : (memref<?x?xf16>, index, index, memref<2x128x64xf16, 3>, index, !wsc.mbarriers) -> ()
    }
    "wsc.mbarrier_wait"(%full, %s, %p) : (!wsc.mbarriers, index, i1) -> ()
    "wsc.wgmma_fence"() : () -> ()
    "wsc.wgmma"(%sa, %sb, %s, %acc) {a_row = 0 : i32, b_layout = "nk"} : (memref<2x128x64xf16, 3>, memref<2x128x64xf16, 3>, index, !wsc.acc<array<i64: 128, 128>, f32>) -> ()
    "wsc.wgmma_commit_group"() : () -> ()
    "wsc.wgmma_wait_group"() {pending = 0 : i32} : () -> ()
    "wsc.sync"() : () -> ()
    %ns, %np = "wsc.ring_advance"(%s, %p) {num_stages = 2 : i32} : (index, i1) -> (index, i1)
    scf.yield %ns, %np : index, i1
  }
  "wsc.partial_store"(%acc, %d, %row, %split) {splits = 4 : i32} : (!wsc.acc<array<i64: 128, 128>, f32>, memref<?xf32>, index, index) -> ()
  %last = "wsc.partial_arrive"(%e, %row) {splits = 4 : i32} : (memref<?xi32>, index) -> i1
  // expected-error @below {{--warp-specialize: a guard in the epilogue has no else region}}
  scf.if %last {
    "wsc.partial_reduce"(%acc, %d, %e, %row) {splits = 4 : i32} : (!wsc.acc<array<i64: 128, 128>, f32>, memref<?xf32>, memref<?xi32>, index) -> ()
    %h = "wsc.cast"(%acc) : (!wsc.acc<array<i64: 128, 128>, f32>) -> !wsc.acc<array<i64: 128, 128>, f16>
    "wsc.store"(%h, %c, %row, %c0) : (!wsc.acc<array<i64: 128, 128>, f16>, memref<?x?xf16>, index, index) -> ()
  } else {
    "wsc.sync"() : () -> ()
  }
  return
}

// -----

// The elected copy group goes to the producer whole: any op in it but the
// copies, their expect_tx and their arithmetic is refused (a store of the
// accumulator there, found by the mutation fuzzer, crashed the pass).
func.func @a_fence_among_the_copies(%a: memref<?x?xf16>, %b: memref<?x?xf16>, %c: memref<?x?xf32>)
    attributes {wsc.num_threads = 128 : i32} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c64 = arith.constant 64 : index
  %c128 = arith.constant 128 : index
  %bx = gpu.block_id x
  %by = gpu.block_id y
  %m0 = arith.muli %bx, %c128 : index
  %n0 = arith.muli %by, %c128 : index
  %k = memref.dim %a, %c1 : memref<?x?xf16>
  %k_tiles = arith.ceildivui %k, %c64 : index
  %sa = "wsc.alloc_shared"() : () -> memref<4x128x64xf16, 3>
  %sb = "wsc.alloc_shared"() : () -> memref<4x128x64xf16, 3>
  %full = "wsc.mbarrier_alloc"() {arrival_count = 1 : i32, num_barriers = 4 : i32} : () -> !wsc.mbarriers
  "wsc.sync"() : () -> ()
  %acc = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 128, 128>, f32>
  %false = arith.constant false
  %stage_n, %phase_n = scf.for %kt = %c0 to %k_tiles step %c1
      iter_args(%stage = %c0, %phase = %false) -> (index, i1) {
    %k0 = arith.muli %kt, %c64 : index
    %elected = "wsc.elect"() : () -> i1
    scf.if %elected {
      // expected-error @below {{--warp-specialize: the elected copy group may hold only TMA copies, their wsc.mbarrier_arrive_expect_tx, arithmetic and block indices and sizes; found 'wsc.fence_proxy_async'}}
      "wsc.fence_proxy_async"() : () -> ()
      "wsc.mbarrier_arrive_expect_tx"(%full, %stage) {tx_bytes = 32768 : i32} : (!wsc.mbarriers, index) -> ()
      "wsc.tma_load"(%a, %m0, %k0, %sa, %stage, %full) : (memref<?x?xf16>, index, index, memref<4x128x64xf16, 3>, index, !wsc.mbarriers) -> ()
      "wsc.tma_load"(%b, %n0, %k0, %sb, %stage, %full) : (memref<?x?xf16>, index, index, memref<4x128x64xf16, 3>, index, !wsc.mbarriers) -> ()
    }
    "wsc.mbarrier_wait"(%full, %stage, %phase) : (!wsc.mbarriers, index, i1) -> ()
    "wsc.wgmma_fence"() : () -> ()
    "wsc.wgmma"(%sa, %sb, %stage, %acc) {a_row = 0 : i32, b_layout = "nk"} : (memref<4x128x64xf16, 3>, memref<4x128x64xf16, 3>, index, !wsc.acc<array<i64: 128, 128>, f32>) -> ()
    "wsc.wgmma_commit_group"() : () -> ()
    "wsc.wgmma_wait_group"() {pending = 0 : i32} : () -> ()
    "wsc.sync"() : () -> ()
    %next_stage, %next_phase = "wsc.ring_advance"(%stage, %phase) {num_stages = 4 : i32} : (index, i1) -> (index, i1)
    scf.yield %next_stage, %next_phase : index, i1
  }
  "wsc.store"(%acc, %c, %m0, %n0) : (!wsc.acc<array<i64: 128, 128>, f32>, memref<?x?xf32>, index, index) -> ()
  return
}

// -----

// A persistent kernel's tile loop may make values before the K loop (arith,
// a tile's matrix of a batch: every role makes its own), nothing else.
func.func @not_a_value(%a: memref<?x?x?xf16>, %b: memref<?x?xf16>, %c: memref<?x?xf32>)
    attributes {wsc.num_threads = 128 : i32} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %false = arith.constant false
  %sa = "wsc.alloc_shared"() : () -> memref<2x128x64xf16, 3>
  %sb = "wsc.alloc_shared"() : () -> memref<2x128x64xf16, 3>
  %full = "wsc.mbarrier_alloc"() {arrival_count = 1 : i32, num_barriers = 2 : i32} : () -> !wsc.mbarriers
  "wsc.sync"() : () -> ()
  %bx = gpu.block_id x
  %grid = gpu.grid_dim x
  %s, %p = scf.for %unit = %bx to %c64 step %grid iter_args(%ts = %c0, %tp = %false) -> (index, i1) {
    %am = "wsc.batch_matrix"(%a, %unit) : (memref<?x?x?xf16>, index) -> memref<?x?xf16>
    // expected-error @below {{every role runs the tile loop: 'wsc.sync' before the K loop cannot be given to all of them}}
    "wsc.sync"() : () -> ()
    %acc = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 128, 128>, f32>
    %sn, %pn = scf.for %kt = %c0 to %c64 step %c1 iter_args(%stage = %ts, %phase = %tp) -> (index, i1) {
      %elected = "wsc.elect"() : () -> i1
      scf.if %elected {
        "wsc.mbarrier_arrive_expect_tx"(%full, %stage) {tx_bytes = 32768 : i32} : (!wsc.mbarriers, index) -> ()
        "wsc.tma_load"(%am, %c0, %c0, %sa, %stage, %full) : (memref<?x?xf16>, index, index, memref<2x128x64xf16, 3>, index, !wsc.mbarriers) -> ()
        "wsc.tma_load"(%b, %c0, %c0, %sb, %stage, %full) : (memref<?x?xf16>, index, index, memref<2x128x64xf16, 3>, index, !wsc.mbarriers) -> ()
      }
      "wsc.mbarrier_wait"(%full, %stage, %phase) : (!wsc.mbarriers, index, i1) -> ()
      "wsc.wgmma_fence"() : () -> ()
      "wsc.wgmma"(%sa, %sb, %stage, %acc) {a_row = 0 : i32, b_layout = "nk"} : (memref<2x128x64xf16, 3>, memref<2x128x64xf16, 3>, index, !wsc.acc<array<i64: 128, 128>, f32>) -> ()
      "wsc.wgmma_commit_group"() : () -> ()
      "wsc.wgmma_wait_group"() {pending = 0 : i32} : () -> ()
      "wsc.sync"() : () -> ()
      %ns, %np = "wsc.ring_advance"(%stage, %phase) {num_stages = 2 : i32} : (index, i1) -> (index, i1)
      scf.yield %ns, %np : index, i1
    }
    "wsc.store"(%acc, %c, %c0, %c0) : (!wsc.acc<array<i64: 128, 128>, f32>, memref<?x?xf32>, index, index) -> ()
    scf.yield %sn, %pn : index, i1
  }
  return
}

// -----

// A stage read into registers after the K loop: the consumers have handed
// every stage back by then (a stage read is split over the consumer groups
// only in the K loop, after the full wait).
func.func @stage_read_after_the_loop(%a: memref<?x?xf16>, %b: memref<?x?xf16>, %c: memref<?x?xf32>)
    attributes {wsc.num_threads = 128 : i32} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %k = memref.dim %a, %c1 : memref<?x?xf16>
  %k_tiles = arith.ceildivui %k, %c64 : index
  %sa = "wsc.alloc_shared"() : () -> memref<2x64x64xf16, 3>
  %sb = "wsc.alloc_shared"() : () -> memref<2x64x64xf16, 3>
  %full = "wsc.mbarrier_alloc"() {arrival_count = 1 : i32, num_barriers = 2 : i32} : () -> !wsc.mbarriers
  "wsc.sync"() : () -> ()
  %acc = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 64, 64>, f32>
  %false = arith.constant false
  %stage_n, %phase_n = scf.for %kt = %c0 to %k_tiles step %c1
      iter_args(%stage = %c0, %phase = %false) -> (index, i1) {
    %k0 = arith.muli %kt, %c64 : index
    %elected = "wsc.elect"() : () -> i1
    scf.if %elected {
      "wsc.mbarrier_arrive_expect_tx"(%full, %stage) {tx_bytes = 16384 : i32} : (!wsc.mbarriers, index) -> ()
      "wsc.tma_load"(%a, %c0, %k0, %sa, %stage, %full) : (memref<?x?xf16>, index, index, memref<2x64x64xf16, 3>, index, !wsc.mbarriers) -> ()
      "wsc.tma_load"(%b, %c0, %k0, %sb, %stage, %full) : (memref<?x?xf16>, index, index, memref<2x64x64xf16, 3>, index, !wsc.mbarriers) -> ()
    }
    "wsc.mbarrier_wait"(%full, %stage, %phase) : (!wsc.mbarriers, index, i1) -> ()
    "wsc.wgmma_fence"() : () -> ()
    "wsc.wgmma"(%sa, %sb, %stage, %acc) {a_row = 0 : i32, b_layout = "nk"} : (memref<2x64x64xf16, 3>, memref<2x64x64xf16, 3>, index, !wsc.acc<array<i64: 64, 64>, f32>) -> ()
    "wsc.wgmma_commit_group"() : () -> ()
    "wsc.wgmma_wait_group"() {pending = 0 : i32} : () -> ()
    "wsc.sync"() : () -> ()
    %next:2 = "wsc.ring_advance"(%stage, %phase) {num_stages = 2 : i32} : (index, i1) -> (index, i1)
    scf.yield %next#0, %next#1 : index, i1
  }
  // expected-error @below {{--warp-specialize: wsc.load_shared is split over the consumer groups only where it reads the K tile's stage of a ring the K loop's copies fill, in the loop's body after its wait on the full barriers; write the producer and consumer roles in the input for any other read, as wsc.kernels.softmax does}}
  %x = "wsc.load_shared"(%sa, %c0) : (memref<2x64x64xf16, 3>, index) -> !wsc.acc<array<i64: 64, 64>, f32>
  "wsc.store"(%x, %c, %c0, %c0) : (!wsc.acc<array<i64: 64, 64>, f32>, memref<?x?xf32>, index, index) -> ()
  "wsc.store"(%acc, %c, %c0, %c0) : (!wsc.acc<array<i64: 64, 64>, f32>, memref<?x?xf32>, index, index) -> ()
  return
}

// -----

// A batch loop around a persistent tile loop around the K loop: one level
// more than the pass takes, refused at the outer loop.
func.func @batch_loop_around_the_tile_loop(%a: memref<?x?xf16>, %b: memref<?x?xf16>, %c: memref<?x?xf32>)
    attributes {wsc.num_threads = 128 : i32} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  %c64 = arith.constant 64 : index
  %c128 = arith.constant 128 : index
  %bx = gpu.block_id x
  %by = gpu.block_id y
  %m0 = arith.muli %bx, %c128 : index
  %n0 = arith.muli %by, %c128 : index
  %k = memref.dim %a, %c1 : memref<?x?xf16>
  %k_tiles = arith.ceildivui %k, %c64 : index
  %false = arith.constant false
  %sa = "wsc.alloc_shared"() : () -> memref<4x128x64xf16, 3>
  %sb = "wsc.alloc_shared"() : () -> memref<4x128x64xf16, 3>
  %full = "wsc.mbarrier_alloc"() {arrival_count = 1 : i32, num_barriers = 4 : i32} : () -> !wsc.mbarriers
  "wsc.sync"() : () -> ()
  %gx = gpu.grid_dim x
  %ntiles = arith.constant 16 : index
  // expected-error @below {{--warp-specialize: expects at most two loops around the TMA loads (a persistent tile loop around the K loop), found three: walk every tile of the outer loop in one tile loop (e.g. a batch index and a tile index computed from one work-item index)}}
  %bs, %bp = scf.for %bt = %c0 to %c2 step %c1 iter_args(%bst = %c0, %bph = %false) -> (index, i1) {
    %ts, %tp = scf.for %t = %bx to %ntiles step %gx iter_args(%tst = %bst, %tph = %bph) -> (index, i1) {
      %acc = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 128, 128>, f32>
      %stage_n, %phase_n = scf.for %kt = %c0 to %k_tiles step %c1 iter_args(%stage = %tst, %phase = %tph) -> (index, i1) {
        %k0 = arith.muli %kt, %c64 : index
        %elected = "wsc.elect"() : () -> i1
        scf.if %elected {
          "wsc.mbarrier_arrive_expect_tx"(%full, %stage) {tx_bytes = 32768 : i32} : (!wsc.mbarriers, index) -> ()
          "wsc.tma_load"(%a, %m0, %k0, %sa, %stage, %full) : (memref<?x?xf16>, index, index, memref<4x128x64xf16, 3>, index, !wsc.mbarriers) -> ()
          "wsc.tma_load"(%b, %n0, %k0, %sb, %stage, %full) : (memref<?x?xf16>, index, index, memref<4x128x64xf16, 3>, index, !wsc.mbarriers) -> ()
        }
        "wsc.mbarrier_wait"(%full, %stage, %phase) : (!wsc.mbarriers, index, i1) -> ()
        "wsc.wgmma_fence"() : () -> ()
        "wsc.wgmma"(%sa, %sb, %stage, %acc) {a_row = 0 : i32, b_layout = "nk"} : (memref<4x128x64xf16, 3>, memref<4x128x64xf16, 3>, index, !wsc.acc<array<i64: 128, 128>, f32>) -> ()
        "wsc.wgmma_commit_group"() : () -> ()
        "wsc.wgmma_wait_group"() {pending = 0 : i32} : () -> ()
        %next_stage, %next_phase = "wsc.ring_advance"(%stage, %phase) {num_stages = 4 : i32} : (index, i1) -> (index, i1)
        scf.yield %next_stage, %next_phase : index, i1
      }
      "wsc.store"(%acc, %c, %m0, %n0) : (!wsc.acc<array<i64: 128, 128>, f32>, memref<?x?xf32>, index, index) -> ()
      scf.yield %stage_n, %phase_n : index, i1
    }
    scf.yield %ts, %tp : index, i1
  }
  return
}

// -----

// Two K loops one after the other: refused at the second.
func.func @two_k_loops_in_turn(%a: memref<?x?xf16>, %b: memref<?x?xf16>, %c: memref<?x?xf32>)
    attributes {wsc.num_threads = 128 : i32} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  %c64 = arith.constant 64 : index
  %c128 = arith.constant 128 : index
  %bx = gpu.block_id x
  %by = gpu.block_id y
  %m0 = arith.muli %bx, %c128 : index
  %n0 = arith.muli %by, %c128 : index
  %k = memref.dim %a, %c1 : memref<?x?xf16>
  %k_tiles = arith.ceildivui %k, %c64 : index
  %false = arith.constant false
  %sa = "wsc.alloc_shared"() : () -> memref<4x128x64xf16, 3>
  %sb = "wsc.alloc_shared"() : () -> memref<4x128x64xf16, 3>
  %full = "wsc.mbarrier_alloc"() {arrival_count = 1 : i32, num_barriers = 4 : i32} : () -> !wsc.mbarriers
  "wsc.sync"() : () -> ()
  %acc = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 128, 128>, f32>
  %s1, %p1 = scf.for %kt = %c0 to %k_tiles step %c1 iter_args(%stage = %c0, %phase = %false) -> (index, i1) {
    %k0 = arith.muli %kt, %c64 : index
    %elected = "wsc.elect"() : () -> i1
    scf.if %elected {
      "wsc.mbarrier_arrive_expect_tx"(%full, %stage) {tx_bytes = 32768 : i32} : (!wsc.mbarriers, index) -> ()
      "wsc.tma_load"(%a, %m0, %k0, %sa, %stage, %full) : (memref<?x?xf16>, index, index, memref<4x128x64xf16, 3>, index, !wsc.mbarriers) -> ()
      "wsc.tma_load"(%b, %n0, %k0, %sb, %stage, %full) : (memref<?x?xf16>, index, index, memref<4x128x64xf16, 3>, index, !wsc.mbarriers) -> ()
    }
    "wsc.mbarrier_wait"(%full, %stage, %phase) : (!wsc.mbarriers, index, i1) -> ()
    "wsc.wgmma_fence"() : () -> ()
    "wsc.wgmma"(%sa, %sb, %stage, %acc) {a_row = 0 : i32, b_layout = "nk"} : (memref<4x128x64xf16, 3>, memref<4x128x64xf16, 3>, index, !wsc.acc<array<i64: 128, 128>, f32>) -> ()
    "wsc.wgmma_commit_group"() : () -> ()
    "wsc.wgmma_wait_group"() {pending = 0 : i32} : () -> ()
    "wsc.sync"() : () -> ()
    %next_stage, %next_phase = "wsc.ring_advance"(%stage, %phase) {num_stages = 4 : i32} : (index, i1) -> (index, i1)
    scf.yield %next_stage, %next_phase : index, i1
  }
  // expected-error @below {{--warp-specialize: expects exactly one K-tile scf.for with TMA loads at the top level of the kernel, found 2}}
  %s2, %p2 = scf.for %kt = %c0 to %k_tiles step %c1 iter_args(%stage = %s1, %phase = %p1) -> (index, i1) {
    %k0 = arith.muli %kt, %c64 : index
    %elected = "wsc.elect"() : () -> i1
    scf.if %elected {
      "wsc.mbarrier_arrive_expect_tx"(%full, %stage) {tx_bytes = 32768 : i32} : (!wsc.mbarriers, index) -> ()
      "wsc.tma_load"(%a, %m0, %k0, %sa, %stage, %full) : (memref<?x?xf16>, index, index, memref<4x128x64xf16, 3>, index, !wsc.mbarriers) -> ()
      "wsc.tma_load"(%b, %n0, %k0, %sb, %stage, %full) : (memref<?x?xf16>, index, index, memref<4x128x64xf16, 3>, index, !wsc.mbarriers) -> ()
    }
    "wsc.mbarrier_wait"(%full, %stage, %phase) : (!wsc.mbarriers, index, i1) -> ()
    "wsc.wgmma_fence"() : () -> ()
    "wsc.wgmma"(%sa, %sb, %stage, %acc) {a_row = 0 : i32, b_layout = "nk"} : (memref<4x128x64xf16, 3>, memref<4x128x64xf16, 3>, index, !wsc.acc<array<i64: 128, 128>, f32>) -> ()
    "wsc.wgmma_commit_group"() : () -> ()
    "wsc.wgmma_wait_group"() {pending = 0 : i32} : () -> ()
    "wsc.sync"() : () -> ()
    %next_stage, %next_phase = "wsc.ring_advance"(%stage, %phase) {num_stages = 4 : i32} : (index, i1) -> (index, i1)
    scf.yield %next_stage, %next_phase : index, i1
  }
  "wsc.store"(%acc, %c, %m0, %n0) : (!wsc.acc<array<i64: 128, 128>, f32>, memref<?x?xf32>, index, index) -> ()
  return
}

// -----

// Register math of the first K tile alone, under an scf.if in the K loop:
// no role takes the if whole (the copies' guard is the only one the pass splits).
func.func @math_under_an_if_in_the_k_loop(%a: memref<?x?xf16>, %b: memref<?x?xf16>, %c: memref<?x?xf32>)
    attributes {wsc.num_threads = 128 : i32} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  %c64 = arith.constant 64 : index
  %c128 = arith.constant 128 : index
  %bx = gpu.block_id x
  %by = gpu.block_id y
  %m0 = arith.muli %bx, %c128 : index
  %n0 = arith.muli %by, %c128 : index
  %k = memref.dim %a, %c1 : memref<?x?xf16>
  %k_tiles = arith.ceildivui %k, %c64 : index
  %false = arith.constant false
  %sa = "wsc.alloc_shared"() : () -> memref<4x128x64xf16, 3>
  %sb = "wsc.alloc_shared"() : () -> memref<4x128x64xf16, 3>
  %full = "wsc.mbarrier_alloc"() {arrival_count = 1 : i32, num_barriers = 4 : i32} : () -> !wsc.mbarriers
  "wsc.sync"() : () -> ()
  %acc = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 128, 128>, f32>
  %stage_n, %phase_n = scf.for %kt = %c0 to %k_tiles step %c1
      iter_args(%stage = %c0, %phase = %false) -> (index, i1) {
    %k0 = arith.muli %kt, %c64 : index
    %elected = "wsc.elect"() : () -> i1
    scf.if %elected {
      "wsc.mbarrier_arrive_expect_tx"(%full, %stage) {tx_bytes = 32768 : i32} : (!wsc.mbarriers, index) -> ()
      "wsc.tma_load"(%a, %m0, %k0, %sa, %stage, %full) : (memref<?x?xf16>, index, index, memref<4x128x64xf16, 3>, index, !wsc.mbarriers) -> ()
      "wsc.tma_load"(%b, %n0, %k0, %sb, %stage, %full) : (memref<?x?xf16>, index, index, memref<4x128x64xf16, 3>, index, !wsc.mbarriers) -> ()
    }
    "wsc.mbarrier_wait"(%full, %stage, %phase) : (!wsc.mbarriers, index, i1) -> ()
    %first = arith.cmpi eq, %kt, %c0 : index
    // expected-error @below {{--warp-specialize: cannot split an scf.if of the K loop between the producer and the consumers: only the elected TMA copies may be guarded; mask register math with wsc.tile_select (kb.where) instead}}
    scf.if %first {
      %half = "wsc.tile_fill"() {value = 5.000000e-01 : f32} : () -> !wsc.acc<array<i64: 128, 128>, f32>
      %scaled = "wsc.tile_binary"(%acc, %half) {kind = "mul"} : (!wsc.acc<array<i64: 128, 128>, f32>, !wsc.acc<array<i64: 128, 128>, f32>) -> !wsc.acc<array<i64: 128, 128>, f32>
      "wsc.tile_assign"(%acc, %scaled) : (!wsc.acc<array<i64: 128, 128>, f32>, !wsc.acc<array<i64: 128, 128>, f32>) -> ()
    }
    "wsc.wgmma_fence"() : () -> ()
    "wsc.wgmma"(%sa, %sb, %stage, %acc) {a_row = 0 : i32, b_layout = "nk"} : (memref<4x128x64xf16, 3>, memref<4x128x64xf16, 3>, index, !wsc.acc<array<i64: 128, 128>, f32>) -> ()
    "wsc.wgmma_commit_group"() : () -> ()
    "wsc.wgmma_wait_group"() {pending = 0 : i32} : () -> ()
    "wsc.sync"() : () -> ()
    %next_stage, %next_phase = "wsc.ring_advance"(%stage, %phase) {num_stages = 4 : i32} : (index, i1) -> (index, i1)
    scf.yield %next_stage, %next_phase : index, i1
  }
  "wsc.store"(%acc, %c, %m0, %n0) : (!wsc.acc<array<i64: 128, 128>, f32>, memref<?x?xf32>, index, index) -> ()
  return
}

// -----

// A K loop from k_tiles / 2: the ring's stages and phases count from K tile 0.
func.func @k_loop_from_half_the_tiles(%a: memref<?x?xf16>, %b: memref<?x?xf16>, %c: memref<?x?xf32>)
    attributes {wsc.num_threads = 128 : i32} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  %c64 = arith.constant 64 : index
  %c128 = arith.constant 128 : index
  %bx = gpu.block_id x
  %by = gpu.block_id y
  %m0 = arith.muli %bx, %c128 : index
  %n0 = arith.muli %by, %c128 : index
  %k = memref.dim %a, %c1 : memref<?x?xf16>
  %k_tiles = arith.ceildivui %k, %c64 : index
  %false = arith.constant false
  %sa = "wsc.alloc_shared"() : () -> memref<4x128x64xf16, 3>
  %sb = "wsc.alloc_shared"() : () -> memref<4x128x64xf16, 3>
  %full = "wsc.mbarrier_alloc"() {arrival_count = 1 : i32, num_barriers = 4 : i32} : () -> !wsc.mbarriers
  "wsc.sync"() : () -> ()
  %acc = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 128, 128>, f32>
  %half_t = arith.divui %k_tiles, %c2 : index
  // expected-error @below {{--warp-specialize: the K loop must count K tiles from 0 in steps of 1 (for %kt = 0 to %k_tiles step 1, a K tile's offset %kt * block_k computed in the body)}}
  %stage_n, %phase_n = scf.for %kt = %half_t to %k_tiles step %c1
      iter_args(%stage = %c0, %phase = %false) -> (index, i1) {
    %k0 = arith.muli %kt, %c64 : index
    %elected = "wsc.elect"() : () -> i1
    scf.if %elected {
      "wsc.mbarrier_arrive_expect_tx"(%full, %stage) {tx_bytes = 32768 : i32} : (!wsc.mbarriers, index) -> ()
      "wsc.tma_load"(%a, %m0, %k0, %sa, %stage, %full) : (memref<?x?xf16>, index, index, memref<4x128x64xf16, 3>, index, !wsc.mbarriers) -> ()
      "wsc.tma_load"(%b, %n0, %k0, %sb, %stage, %full) : (memref<?x?xf16>, index, index, memref<4x128x64xf16, 3>, index, !wsc.mbarriers) -> ()
    }
    "wsc.mbarrier_wait"(%full, %stage, %phase) : (!wsc.mbarriers, index, i1) -> ()
    "wsc.wgmma_fence"() : () -> ()
    "wsc.wgmma"(%sa, %sb, %stage, %acc) {a_row = 0 : i32, b_layout = "nk"} : (memref<4x128x64xf16, 3>, memref<4x128x64xf16, 3>, index, !wsc.acc<array<i64: 128, 128>, f32>) -> ()
    "wsc.wgmma_commit_group"() : () -> ()
    "wsc.wgmma_wait_group"() {pending = 0 : i32} : () -> ()
    "wsc.sync"() : () -> ()
    %next_stage, %next_phase = "wsc.ring_advance"(%stage, %phase) {num_stages = 4 : i32} : (index, i1) -> (index, i1)
    scf.yield %next_stage, %next_phase : index, i1
  }
  "wsc.store"(%acc, %c, %m0, %n0) : (!wsc.acc<array<i64: 128, 128>, f32>, memref<?x?xf32>, index, index) -> ()
  return
}
