// RUN: wsc-opt --warp-specialize %s | FileCheck %s
// RUN: wsc-opt --warp-specialize='num-consumer-groups=2 producer=warpgroup num-stages=3' %s | FileCheck %s --check-prefix=G2
// RUN: wsc-opt --pass-pipeline='builtin.module(warp-specialize{num-stages=2})' %s | FileCheck %s --check-prefix=S2
// RUN: wsc-opt --warp-specialize='wgmma-in-flight=1 num-stages=3' %s | FileCheck %s --check-prefix=INFLIGHT
// RUN: wsc-opt --warp-specialize='num-consumer-groups=2 producer=warpgroup rebalance-registers=false' %s | FileCheck %s --check-prefix=KEEP
// RUN: wsc-opt --warp-specialize='num-consumer-groups=2 producer=warpgroup release=warp' --verify-pipeline %s | FileCheck %s --check-prefix=WARP

// The tutorial's V2 (examples/matmul_v2.mlir): one warpgroup loads, waits and
// multiplies, with a block-wide sync in the K loop.
func.func @matmul(%a: memref<?x?xf16>, %b: memref<?x?xf16>, %c: memref<?x?xf32>)
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

// One consumer warpgroup (threads 0..127) and a producer warp (128..159).
// CHECK-LABEL: func.func @matmul
// CHECK-SAME: wsc.num_threads = 160 : i32
// CHECK: %[[SA:.*]] = "wsc.alloc_shared"() : () -> memref<4x128x64xf16, 3>
// CHECK: %[[SB:.*]] = "wsc.alloc_shared"() : () -> memref<4x128x64xf16, 3>
// The full barriers expect the elected producer thread; the empty barriers one
// arrival per consumer thread. Both are initialised before the sync that makes
// them visible, which comes before the roles split.
// CHECK: %[[FULL:.*]] = "wsc.mbarrier_alloc"() {arrival_count = 1 : i32, num_barriers = 4 : i32}
// CHECK-NEXT: %[[EMPTY:.*]] = "wsc.mbarrier_alloc"() {arrival_count = 128 : i32, num_barriers = 4 : i32}
// CHECK-NEXT: "wsc.sync"()
// CHECK-NOT: "wsc.sync"
// CHECK: %[[STAGE0:.*]] = arith.constant 0 : index
// CHECK: %[[CONSUMER:.*]] = "wsc.role"() {num_threads = 128 : i32, role = "consumer", thread_begin = 0 : i32}
// CHECK-NEXT: scf.if %[[CONSUMER]] {
// CHECK-NEXT: %[[ACC:.*]] = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 128, 128>, f32>
// Consumers start at phase 0: the first wait blocks until the first copy lands.
// CHECK-NEXT: %[[CPHASE0:.*]] = arith.constant false
// CHECK-NEXT: scf.for %{{.*}} = %{{.*}} to %[[KTILES:.*]] step %{{.*}} iter_args(%[[CS:.*]] = %[[STAGE0]], %[[CP:.*]] = %[[CPHASE0]])
// CHECK-NEXT: "wsc.mbarrier_wait"(%[[FULL]], %[[CS]], %[[CP]])
// CHECK-NEXT: "wsc.wgmma_fence"
// CHECK-NEXT: "wsc.wgmma"(%[[SA]], %[[SB]], %[[CS]], %[[ACC]]) {a_row = 0 : i32, b_layout = "nk"}
// CHECK-NEXT: "wsc.wgmma_commit_group"
// CHECK-NEXT: "wsc.wgmma_wait_group"() {pending = 0 : i32}
// The stage is released only after the WGMMAs reading it have completed.
// CHECK-NEXT: "wsc.mbarrier_arrive"(%[[EMPTY]], %[[CS]])
// CHECK-NEXT: %[[CNEXT:.*]]:2 = "wsc.ring_advance"(%[[CS]], %[[CP]]) {num_stages = 4 : i32}
// CHECK-NEXT: scf.yield %[[CNEXT]]#0, %[[CNEXT]]#1
// CHECK: "wsc.store"(%[[ACC]],
// CHECK: %[[PRODUCER:.*]] = "wsc.role"() {num_threads = 32 : i32, role = "producer", thread_begin = 128 : i32}
// CHECK-NEXT: scf.if %[[PRODUCER]] {
// Producers start at phase 1: waits on fresh empty barriers pass at once.
// CHECK-NEXT: %[[PPHASE0:.*]] = arith.constant true
// CHECK-NEXT: %[[PLOOP:.*]]:2 = scf.for %[[KT:.*]] = %{{.*}} to %[[KTILES]] step %{{.*}} iter_args(%[[PS:.*]] = %[[STAGE0]], %[[PP:.*]] = %[[PPHASE0]])
// CHECK-NEXT: "wsc.mbarrier_wait"(%[[EMPTY]], %[[PS]], %[[PP]])
// CHECK-NEXT: %[[K0:.*]] = arith.muli %[[KT]]
// CHECK-NEXT: %[[ELECTED:.*]] = "wsc.elect"
// CHECK-NEXT: scf.if %[[ELECTED]] {
// CHECK-NEXT: "wsc.mbarrier_arrive_expect_tx"(%[[FULL]], %[[PS]]) {tx_bytes = 32768 : i32}
// CHECK-NEXT: "wsc.tma_load"(%{{.*}}, %{{.*}}, %[[K0]], %[[SA]], %[[PS]], %[[FULL]])
// CHECK-NEXT: "wsc.tma_load"(%{{.*}}, %{{.*}}, %[[K0]], %[[SB]], %[[PS]], %[[FULL]])
// CHECK: "wsc.ring_advance"(%[[PS]], %[[PP]]) {num_stages = 4 : i32}
// The drain visits the 4 positions after the loop and waits where a fill
// happened 4 positions earlier: min(num_stages, k_tiles) waits, each for the
// last release of a filled stage.
// CHECK: %[[C4:.*]] = arith.constant 4 : index
// CHECK: scf.for %[[J:.*]] = %{{.*}} to %[[C4]] step %{{.*}} iter_args(%[[DS:.*]] = %[[PLOOP]]#0, %[[DP:.*]] = %[[PLOOP]]#1)
// CHECK-NEXT: %[[POS:.*]] = arith.addi %[[J]], %[[KTILES]]
// CHECK-NEXT: %[[FILLED:.*]] = arith.cmpi uge, %[[POS]], %[[C4]]
// CHECK-NEXT: scf.if %[[FILLED]] {
// CHECK-NEXT: "wsc.mbarrier_wait"(%[[EMPTY]], %[[DS]], %[[DP]])
// CHECK: "wsc.ring_advance"(%[[DS]], %[[DP]]) {num_stages = 4 : i32}
// CHECK: return

// Two consumer warpgroups, each owning 64 rows and sharing B, and a producer
// warpgroup; register budgets recorded for setmaxnreg; a ring of 3 stages.
// G2-LABEL: func.func @matmul
// G2-SAME: wsc.num_threads = 384 : i32
// G2: "wsc.alloc_shared"() : () -> memref<3x128x64xf16, 3>
// G2: "wsc.mbarrier_alloc"() {arrival_count = 1 : i32, num_barriers = 3 : i32}
// G2-NEXT: "wsc.mbarrier_alloc"() {arrival_count = 256 : i32, num_barriers = 3 : i32}
// G2: "wsc.role"() {max_registers = 232 : i32, num_threads = 128 : i32, role = "consumer", thread_begin = 0 : i32}
// G2: "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 64, 128>, f32>
// G2: "wsc.wgmma"({{.*}}) {a_row = 0 : i32, b_layout = "nk"}
// G2: "wsc.store"(%{{.*}}, %{{.*}}, %[[ROW0:.*]], %{{.*}})
// G2: "wsc.role"() {max_registers = 232 : i32, num_threads = 128 : i32, role = "consumer", thread_begin = 128 : i32}
// G2: "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 64, 128>, f32>
// G2: "wsc.wgmma"({{.*}}) {a_row = 64 : i32, b_layout = "nk"}
// G2: %[[ROW1:.*]] = arith.addi %[[ROW0]], %{{.*}}
// G2-NEXT: "wsc.store"(%{{.*}}, %{{.*}}, %[[ROW1]], %{{.*}})
// G2: "wsc.role"() {max_registers = 40 : i32, num_threads = 128 : i32, role = "producer", thread_begin = 256 : i32}
// G2: "wsc.ring_advance"({{.*}}) {num_stages = 3 : i32}
// G2: %[[THREE:.*]] = arith.constant 3 : index
// G2: arith.cmpi uge, %{{.*}}, %[[THREE]]

// Without rebalancing the roles carry no budget, so no setmaxnreg is emitted.
// KEEP-LABEL: func.func @matmul
// KEEP: "wsc.role"() {num_threads = 128 : i32, role = "consumer", thread_begin = 0 : i32}
// KEEP: "wsc.role"() {num_threads = 128 : i32, role = "consumer", thread_begin = 128 : i32}
// KEEP: "wsc.role"() {num_threads = 128 : i32, role = "producer", thread_begin = 256 : i32}

// One release per consumer warp: the empty barriers count the 8 warps.
// WARP-LABEL: func.func @matmul
// WARP: "wsc.mbarrier_alloc"() {arrival_count = 8 : i32, num_barriers = 4 : i32}
// WARP-COUNT-2: "wsc.mbarrier_arrive"(%{{.*}}, %{{.*}}) {per_warp}

// S2-LABEL: func.func @matmul
// S2: "wsc.alloc_shared"() : () -> memref<2x128x64xf16, 3>
// S2: "wsc.mbarrier_alloc"() {arrival_count = 128 : i32, num_barriers = 2 : i32}

// One WGMMA group left in flight: wait_group 1 retires the previous K tile's
// group, so the consumer releases the previous stage ((stage - 1) mod 3) from
// the second K tile on; after the loop it retires the last group and
// releases the last K tile's stage. The producer and its drain are unchanged.
// INFLIGHT-LABEL: func.func @matmul
// INFLIGHT: %[[EMPTY:.*]] = "wsc.mbarrier_alloc"() {arrival_count = 128 : i32, num_barriers = 3 : i32}
// INFLIGHT: "wsc.role"() {num_threads = 128 : i32, role = "consumer", thread_begin = 0 : i32}
// INFLIGHT: %[[CLOOP:.*]]:2 = scf.for %[[KT:.*]] = %{{.*}} to %[[KTILES:.*]] step %{{.*}} iter_args(%[[CS:.*]] = %{{.*}}, %[[CP:.*]] = %{{.*}})
// INFLIGHT: "wsc.wgmma_commit_group"
// INFLIGHT-NEXT: "wsc.wgmma_wait_group"() {pending = 1 : i32}
// INFLIGHT-NEXT: %[[ZERO:.*]] = arith.constant 0 : index
// INFLIGHT-NEXT: %[[NOT_FIRST:.*]] = arith.cmpi ugt, %[[KT]], %[[ZERO]]
// INFLIGHT-NEXT: scf.if %[[NOT_FIRST]] {
// INFLIGHT: %[[WRAPS:.*]] = arith.cmpi eq, %[[CS]], %{{.*}}
// INFLIGHT: %[[BEFORE:.*]] = arith.subi %[[CS]], %{{.*}}
// INFLIGHT: %[[LAST:.*]] = arith.constant 2 : index
// INFLIGHT-NEXT: %[[PREVIOUS:.*]] = arith.select %[[WRAPS]], %[[LAST]], %[[BEFORE]]
// INFLIGHT-NEXT: "wsc.mbarrier_arrive"(%[[EMPTY]], %[[PREVIOUS]])
// INFLIGHT: "wsc.ring_advance"(%[[CS]], %[[CP]]) {num_stages = 3 : i32}
// INFLIGHT: "wsc.wgmma_wait_group"() {pending = 0 : i32}
// INFLIGHT: %[[ANY:.*]] = arith.cmpi ugt, %[[KTILES]], %{{.*}}
// INFLIGHT-NEXT: scf.if %[[ANY]] {
// INFLIGHT: arith.cmpi eq, %[[CLOOP]]#0, %{{.*}}
// INFLIGHT: "wsc.mbarrier_arrive"(%[[EMPTY]],
// INFLIGHT: "wsc.store"
// INFLIGHT: "wsc.role"() {num_threads = 32 : i32, role = "producer", thread_begin = 128 : i32}
// INFLIGHT-NOT: pending = 1
// INFLIGHT: return

// Block indices read where they are used, inside the elected copy group and
// in the epilogue: each role computes its own (they are the same in every
// thread).
func.func @block_ids_where_used(%a: memref<?x?xf16>, %b: memref<?x?xf16>, %c: memref<?x?xf32>)
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
  %acc = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 128, 128>, f32>
  %false = arith.constant false
  %stage_n, %phase_n = scf.for %kt = %c0 to %k_tiles step %c1
      iter_args(%stage = %c0, %phase = %false) -> (index, i1) {
    %k0 = arith.muli %kt, %c64 : index
    %elected = "wsc.elect"() : () -> i1
    scf.if %elected {
      %bx = gpu.block_id x
      %by = gpu.block_id y
      %m0 = arith.muli %bx, %c128 : index
      %n0 = arith.muli %by, %c128 : index
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
  %gx = gpu.block_id x
  %gy = gpu.block_id y
  %m0 = arith.muli %gx, %c128 : index
  %n0 = arith.muli %gy, %c128 : index
  "wsc.store"(%acc, %c, %m0, %n0) : (!wsc.acc<array<i64: 128, 128>, f32>, memref<?x?xf32>, index, index) -> ()
  return
}
// CHECK-LABEL: func.func @block_ids_where_used
// CHECK: "wsc.role"() {num_threads = 128 : i32, role = "consumer", thread_begin = 0 : i32}
// CHECK: %[[CX:.*]] = gpu.block_id x
// CHECK: %[[CM:.*]] = arith.muli %[[CX]]
// CHECK: "wsc.store"(%{{.*}}, %{{.*}}, %[[CM]], %{{.*}})
// CHECK: "wsc.role"() {num_threads = 32 : i32, role = "producer", thread_begin = 128 : i32}
// CHECK: %[[PX:.*]] = gpu.block_id x
// CHECK: %[[PM:.*]] = arith.muli %[[PX]]
// CHECK: "wsc.mbarrier_arrive_expect_tx"
// CHECK: "wsc.tma_load"(%{{.*}}, %[[PM]],
