// --verify-pipeline simulates each kernel for k_tiles = 1 .. 3*num_stages+1
// and passes protocol-clean IR through unchanged.
// RUN: wsc-opt --verify-pipeline %s | FileCheck %s
// RUN: wsc-opt --verify-pipeline='max-k-tiles=40' %s | FileCheck %s
// RUN: wsc-opt --verify-pipeline='k-tiles=2' %s | FileCheck %s
// RUN: wsc-opt --pass-pipeline='builtin.module(verify-pipeline{max-k-tiles=5})' %s | FileCheck %s

// examples/matmul_v2.mlir: one warpgroup loads, waits and multiplies, with a
// block-wide wsc.sync in the K loop guarding each stage against its refill.
// CHECK-LABEL: func.func @matmul_v2
// CHECK: "wsc.mbarrier_arrive_expect_tx"
// CHECK: "wsc.mbarrier_wait"
// CHECK: "wsc.wgmma_wait_group"() {pending = 0 : i32}
// CHECK: "wsc.sync"
func.func @matmul_v2(%a: memref<?x?xf16>, %b: memref<?x?xf16>, %c: memref<?x?xf32>)
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

// examples/matmul_v3.mlir: the seed's V3, whose producer drains the last
// release of every stage it filled.
// CHECK-LABEL: func.func @matmul_v3
// CHECK: "wsc.role"() {max_registers = 232 : i32, num_threads = 128 : i32, role = "consumer", thread_begin = 0 : i32}
// CHECK: "wsc.mbarrier_arrive"
// CHECK: "wsc.role"() {max_registers = 40 : i32, num_threads = 32 : i32, role = "producer", thread_begin = 128 : i32}
// CHECK: scf.for
// CHECK: scf.for
// CHECK: "wsc.mbarrier_wait"
func.func @matmul_v3(%a: memref<?x?xf16>, %b: memref<?x?xf16>, %c: memref<?x?xf32>)
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
    // Drain: of the 4 positions after the loop, those with a fill 4 positions
    // earlier (k_tiles + i >= 4) wait for that fill's release.
    %ds:2 = scf.for %i = %c0 to %c4 step %c1 iter_args(%stage = %ps#0, %phase = %ps#1) -> (index, i1) {
      %position = arith.addi %i, %k_tiles : index
      %filled = arith.cmpi uge, %position, %c4 : index
      scf.if %filled {
        "wsc.mbarrier_wait"(%empty, %stage, %phase) : (!wsc.mbarriers, index, i1) -> ()
      }
      %next_stage, %next_phase = "wsc.ring_advance"(%stage, %phase) {num_stages = 4 : i32} : (index, i1) -> (index, i1)
      scf.yield %next_stage, %next_phase : index, i1
    }
  }
  return
}

// Two consumer warpgroups, each owning 64 rows of the 128-row C tile (a_row 0
// and 64) and both reading every B tile: each releases every stage, so the
// empty barriers expect 2 x 128 arrivals. The producer warp comes last.
// CHECK-LABEL: func.func @matmul_two_consumers
// CHECK-COUNT-2: "wsc.wgmma"
func.func @matmul_two_consumers(%a: memref<?x?xf16>, %b: memref<?x?xf16>, %c: memref<?x?xf32>)
    attributes {wsc.num_threads = 288 : i32} {
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
  %m1 = arith.addi %m0, %c64 : index
  %n0 = arith.muli %by, %c128 : index
  %k = memref.dim %a, %c1 : memref<?x?xf16>
  %k_tiles = arith.ceildivui %k, %c64 : index
  %sa = "wsc.alloc_shared"() : () -> memref<4x128x64xf16, 3>
  %sb = "wsc.alloc_shared"() : () -> memref<4x128x64xf16, 3>
  %full = "wsc.mbarrier_alloc"() {arrival_count = 1 : i32, num_barriers = 4 : i32} : () -> !wsc.mbarriers
  %empty = "wsc.mbarrier_alloc"() {arrival_count = 256 : i32, num_barriers = 4 : i32} : () -> !wsc.mbarriers
  "wsc.sync"() : () -> ()
  %is_consumer0 = "wsc.role"() {role = "consumer0", thread_begin = 0 : i32, num_threads = 128 : i32} : () -> i1
  scf.if %is_consumer0 {
    %acc = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 64, 128>, f32>
    %cs:2 = scf.for %kt = %c0 to %k_tiles step %c1 iter_args(%stage = %c0, %phase = %false) -> (index, i1) {
      "wsc.mbarrier_wait"(%full, %stage, %phase) : (!wsc.mbarriers, index, i1) -> ()
      "wsc.wgmma_fence"() : () -> ()
      "wsc.wgmma"(%sa, %sb, %stage, %acc) {a_row = 0 : i32, b_layout = "nk"} : (memref<4x128x64xf16, 3>, memref<4x128x64xf16, 3>, index, !wsc.acc<array<i64: 64, 128>, f32>) -> ()
      "wsc.wgmma_commit_group"() : () -> ()
      "wsc.wgmma_wait_group"() {pending = 0 : i32} : () -> ()
      "wsc.mbarrier_arrive"(%empty, %stage) : (!wsc.mbarriers, index) -> ()
      %next_stage, %next_phase = "wsc.ring_advance"(%stage, %phase) {num_stages = 4 : i32} : (index, i1) -> (index, i1)
      scf.yield %next_stage, %next_phase : index, i1
    }
    "wsc.store"(%acc, %c, %m0, %n0) : (!wsc.acc<array<i64: 64, 128>, f32>, memref<?x?xf32>, index, index) -> ()
  }
  %is_consumer1 = "wsc.role"() {role = "consumer1", thread_begin = 128 : i32, num_threads = 128 : i32} : () -> i1
  scf.if %is_consumer1 {
    %acc = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 64, 128>, f32>
    %cs:2 = scf.for %kt = %c0 to %k_tiles step %c1 iter_args(%stage = %c0, %phase = %false) -> (index, i1) {
      "wsc.mbarrier_wait"(%full, %stage, %phase) : (!wsc.mbarriers, index, i1) -> ()
      "wsc.wgmma_fence"() : () -> ()
      "wsc.wgmma"(%sa, %sb, %stage, %acc) {a_row = 64 : i32, b_layout = "nk"} : (memref<4x128x64xf16, 3>, memref<4x128x64xf16, 3>, index, !wsc.acc<array<i64: 64, 128>, f32>) -> ()
      "wsc.wgmma_commit_group"() : () -> ()
      "wsc.wgmma_wait_group"() {pending = 0 : i32} : () -> ()
      "wsc.mbarrier_arrive"(%empty, %stage) : (!wsc.mbarriers, index) -> ()
      %next_stage, %next_phase = "wsc.ring_advance"(%stage, %phase) {num_stages = 4 : i32} : (index, i1) -> (index, i1)
      scf.yield %next_stage, %next_phase : index, i1
    }
    "wsc.store"(%acc, %c, %m1, %n0) : (!wsc.acc<array<i64: 64, 128>, f32>, memref<?x?xf32>, index, index) -> ()
  }
  %is_producer = "wsc.role"() {role = "producer", thread_begin = 256 : i32, num_threads = 32 : i32} : () -> i1
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
    // Drain: of the 4 positions after the loop, those with a fill 4 positions
    // earlier (k_tiles + i >= 4) wait for that fill's release.
    %ds:2 = scf.for %i = %c0 to %c4 step %c1 iter_args(%stage = %ps#0, %phase = %ps#1) -> (index, i1) {
      %position = arith.addi %i, %k_tiles : index
      %filled = arith.cmpi uge, %position, %c4 : index
      scf.if %filled {
        "wsc.mbarrier_wait"(%empty, %stage, %phase) : (!wsc.mbarriers, index, i1) -> ()
      }
      %next_stage, %next_phase = "wsc.ring_advance"(%stage, %phase) {num_stages = 4 : i32} : (index, i1) -> (index, i1)
      scf.yield %next_stage, %next_phase : index, i1
    }
  }
  return
}

// A ring of one stage: every ring_advance wraps and flips the phase, so the
// producer and the consumer take turns on the single stage. Its drain waits
// at the one position after the loop without a guard: that stage was always
// filled.
// CHECK-LABEL: func.func @matmul_one_stage
// CHECK: "wsc.ring_advance"(%{{.*}}, %{{.*}}) {num_stages = 1 : i32}
func.func @matmul_one_stage(%a: memref<?x?xf16>, %b: memref<?x?xf16>, %c: memref<?x?xf32>)
    attributes {wsc.num_threads = 160 : i32} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
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
  %sa = "wsc.alloc_shared"() : () -> memref<1x128x64xf16, 3>
  %sb = "wsc.alloc_shared"() : () -> memref<1x128x64xf16, 3>
  %full = "wsc.mbarrier_alloc"() {arrival_count = 1 : i32, num_barriers = 1 : i32} : () -> !wsc.mbarriers
  %empty = "wsc.mbarrier_alloc"() {arrival_count = 128 : i32, num_barriers = 1 : i32} : () -> !wsc.mbarriers
  "wsc.sync"() : () -> ()
  %is_consumer = "wsc.role"() {role = "consumer", thread_begin = 0 : i32, num_threads = 128 : i32} : () -> i1
  scf.if %is_consumer {
    %acc = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 128, 128>, f32>
    %cs:2 = scf.for %kt = %c0 to %k_tiles step %c1 iter_args(%stage = %c0, %phase = %false) -> (index, i1) {
      "wsc.mbarrier_wait"(%full, %stage, %phase) : (!wsc.mbarriers, index, i1) -> ()
      "wsc.wgmma_fence"() : () -> ()
      "wsc.wgmma"(%sa, %sb, %stage, %acc) {a_row = 0 : i32, b_layout = "nk"} : (memref<1x128x64xf16, 3>, memref<1x128x64xf16, 3>, index, !wsc.acc<array<i64: 128, 128>, f32>) -> ()
      "wsc.wgmma_commit_group"() : () -> ()
      "wsc.wgmma_wait_group"() {pending = 0 : i32} : () -> ()
      "wsc.mbarrier_arrive"(%empty, %stage) : (!wsc.mbarriers, index) -> ()
      %next_stage, %next_phase = "wsc.ring_advance"(%stage, %phase) {num_stages = 1 : i32} : (index, i1) -> (index, i1)
      scf.yield %next_stage, %next_phase : index, i1
    }
    "wsc.store"(%acc, %c, %m0, %n0) : (!wsc.acc<array<i64: 128, 128>, f32>, memref<?x?xf32>, index, index) -> ()
  }
  %is_producer = "wsc.role"() {role = "producer", thread_begin = 128 : i32, num_threads = 32 : i32} : () -> i1
  scf.if %is_producer {
    %ps:2 = scf.for %kt = %c0 to %k_tiles step %c1 iter_args(%stage = %c0, %phase = %true) -> (index, i1) {
      "wsc.mbarrier_wait"(%empty, %stage, %phase) : (!wsc.mbarriers, index, i1) -> ()
      %k0 = arith.muli %kt, %c64 : index
      %elected = "wsc.elect"() : () -> i1
      scf.if %elected {
        "wsc.mbarrier_arrive_expect_tx"(%full, %stage) {tx_bytes = 32768 : i32} : (!wsc.mbarriers, index) -> ()
        "wsc.tma_load"(%a, %m0, %k0, %sa, %stage, %full) : (memref<?x?xf16>, index, index, memref<1x128x64xf16, 3>, index, !wsc.mbarriers) -> ()
        "wsc.tma_load"(%b, %n0, %k0, %sb, %stage, %full) : (memref<?x?xf16>, index, index, memref<1x128x64xf16, 3>, index, !wsc.mbarriers) -> ()
      }
      %next_stage, %next_phase = "wsc.ring_advance"(%stage, %phase) {num_stages = 1 : i32} : (index, i1) -> (index, i1)
      scf.yield %next_stage, %next_phase : index, i1
    }
    %ds:2 = scf.for %i = %c0 to %c1 step %c1 iter_args(%stage = %ps#0, %phase = %ps#1) -> (index, i1) {
      "wsc.mbarrier_wait"(%empty, %stage, %phase) : (!wsc.mbarriers, index, i1) -> ()
      %next_stage, %next_phase = "wsc.ring_advance"(%stage, %phase) {num_stages = 1 : i32} : (index, i1) -> (index, i1)
      scf.yield %next_stage, %next_phase : index, i1
    }
  }
  return
}

// Two rings, each with its own full and empty barriers, whose groups the
// consumer retires in turn: the release of ring 0's stage while ring 1's
// WGMMA on the same stage index is in flight is not early.
// CHECK-LABEL: func.func @two_rings
// CHECK: "wsc.wgmma_wait_group"() {pending = 1 : i32}
// CHECK-NEXT: "wsc.mbarrier_arrive"
func.func @two_rings(%a: memref<?x?xf16>, %b: memref<?x?xf16>, %d: memref<?x?xf16>, %e: memref<?x?xf16>, %c: memref<?x?xf32>, %f: memref<?x?xf32>)
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
  %sd = "wsc.alloc_shared"() : () -> memref<4x64x64xf16, 3>
  %se = "wsc.alloc_shared"() : () -> memref<4x64x64xf16, 3>
  %full0 = "wsc.mbarrier_alloc"() {arrival_count = 1 : i32, num_barriers = 4 : i32} : () -> !wsc.mbarriers
  %empty0 = "wsc.mbarrier_alloc"() {arrival_count = 128 : i32, num_barriers = 4 : i32} : () -> !wsc.mbarriers
  %full1 = "wsc.mbarrier_alloc"() {arrival_count = 1 : i32, num_barriers = 4 : i32} : () -> !wsc.mbarriers
  %empty1 = "wsc.mbarrier_alloc"() {arrival_count = 128 : i32, num_barriers = 4 : i32} : () -> !wsc.mbarriers
  "wsc.sync"() : () -> ()
  %is_consumer = "wsc.role"() {role = "consumer", thread_begin = 0 : i32, num_threads = 128 : i32, max_registers = 232 : i32} : () -> i1
  scf.if %is_consumer {
    %acc0 = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 128, 128>, f32>
    %acc1 = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 64, 64>, f32>
    %cs:2 = scf.for %kt = %c0 to %k_tiles step %c1 iter_args(%stage = %c0, %phase = %false) -> (index, i1) {
      "wsc.mbarrier_wait"(%full0, %stage, %phase) : (!wsc.mbarriers, index, i1) -> ()
      "wsc.wgmma_fence"() : () -> ()
      "wsc.wgmma"(%sa, %sb, %stage, %acc0) {a_row = 0 : i32, b_layout = "nk"} : (memref<4x128x64xf16, 3>, memref<4x128x64xf16, 3>, index, !wsc.acc<array<i64: 128, 128>, f32>) -> ()
      "wsc.wgmma_commit_group"() : () -> ()
      "wsc.mbarrier_wait"(%full1, %stage, %phase) : (!wsc.mbarriers, index, i1) -> ()
      "wsc.wgmma_fence"() : () -> ()
      "wsc.wgmma"(%sd, %se, %stage, %acc1) {a_row = 0 : i32, b_layout = "nk"} : (memref<4x64x64xf16, 3>, memref<4x64x64xf16, 3>, index, !wsc.acc<array<i64: 64, 64>, f32>) -> ()
      "wsc.wgmma_commit_group"() : () -> ()
      "wsc.wgmma_wait_group"() {pending = 1 : i32} : () -> ()
      "wsc.mbarrier_arrive"(%empty0, %stage) : (!wsc.mbarriers, index) -> ()
      "wsc.wgmma_wait_group"() {pending = 0 : i32} : () -> ()
      "wsc.mbarrier_arrive"(%empty1, %stage) : (!wsc.mbarriers, index) -> ()
      %next_stage, %next_phase = "wsc.ring_advance"(%stage, %phase) {num_stages = 4 : i32} : (index, i1) -> (index, i1)
      scf.yield %next_stage, %next_phase : index, i1
    }
    "wsc.store"(%acc0, %c, %m0, %n0) : (!wsc.acc<array<i64: 128, 128>, f32>, memref<?x?xf32>, index, index) -> ()
    "wsc.store"(%acc1, %f, %m0, %n0) : (!wsc.acc<array<i64: 64, 64>, f32>, memref<?x?xf32>, index, index) -> ()
  }
  %is_producer = "wsc.role"() {role = "producer", thread_begin = 128 : i32, num_threads = 32 : i32, max_registers = 40 : i32} : () -> i1
  scf.if %is_producer {
    %ps:2 = scf.for %kt = %c0 to %k_tiles step %c1 iter_args(%stage = %c0, %phase = %true) -> (index, i1) {
      %k0 = arith.muli %kt, %c64 : index
      "wsc.mbarrier_wait"(%empty0, %stage, %phase) : (!wsc.mbarriers, index, i1) -> ()
      %elected = "wsc.elect"() : () -> i1
      scf.if %elected {
        "wsc.mbarrier_arrive_expect_tx"(%full0, %stage) {tx_bytes = 32768 : i32} : (!wsc.mbarriers, index) -> ()
        "wsc.tma_load"(%a, %m0, %k0, %sa, %stage, %full0) : (memref<?x?xf16>, index, index, memref<4x128x64xf16, 3>, index, !wsc.mbarriers) -> ()
        "wsc.tma_load"(%b, %n0, %k0, %sb, %stage, %full0) : (memref<?x?xf16>, index, index, memref<4x128x64xf16, 3>, index, !wsc.mbarriers) -> ()
      }
      "wsc.mbarrier_wait"(%empty1, %stage, %phase) : (!wsc.mbarriers, index, i1) -> ()
      %elected1 = "wsc.elect"() : () -> i1
      scf.if %elected1 {
        "wsc.mbarrier_arrive_expect_tx"(%full1, %stage) {tx_bytes = 16384 : i32} : (!wsc.mbarriers, index) -> ()
        "wsc.tma_load"(%d, %m0, %k0, %sd, %stage, %full1) : (memref<?x?xf16>, index, index, memref<4x64x64xf16, 3>, index, !wsc.mbarriers) -> ()
        "wsc.tma_load"(%e, %n0, %k0, %se, %stage, %full1) : (memref<?x?xf16>, index, index, memref<4x64x64xf16, 3>, index, !wsc.mbarriers) -> ()
      }
      %next_stage, %next_phase = "wsc.ring_advance"(%stage, %phase) {num_stages = 4 : i32} : (index, i1) -> (index, i1)
      scf.yield %next_stage, %next_phase : index, i1
    }
    %ds:2 = scf.for %i = %c0 to %c4 step %c1 iter_args(%stage = %ps#0, %phase = %ps#1) -> (index, i1) {
      %position = arith.addi %i, %k_tiles : index
      %filled = arith.cmpi uge, %position, %c4 : index
      scf.if %filled {
        "wsc.mbarrier_wait"(%empty0, %stage, %phase) : (!wsc.mbarriers, index, i1) -> ()
        "wsc.mbarrier_wait"(%empty1, %stage, %phase) : (!wsc.mbarriers, index, i1) -> ()
      }
      %next_stage, %next_phase = "wsc.ring_advance"(%stage, %phase) {num_stages = 4 : i32} : (index, i1) -> (index, i1)
      scf.yield %next_stage, %next_phase : index, i1
    }
  }
  return
}
