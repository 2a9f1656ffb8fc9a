// RUN: wsc-opt --unroll-ring-buffer %s | FileCheck %s
// RUN: wsc-opt --warp-specialize=num-stages=3 --unroll-ring-buffer %S/../../examples/matmul_v2.mlir | FileCheck %s --check-prefix=THREE
// where-possible unrolls a kernel whose rings all start at stage 0 (its drain continues the ring it drains) as plainly.
// RUN: wsc-opt --warp-specialize=num-stages=3 --unroll-ring-buffer='where-possible=true' %S/../../examples/matmul_v2.mlir | FileCheck %s --check-prefix=THREE
// RUN: wsc-opt --warp-specialize='num-stages=3 wgmma-in-flight=1' --unroll-ring-buffer %S/../../examples/matmul_v2.mlir | FileCheck %s --check-prefix=INFLIGHT

// The seed's V3 with a ring of 2 stages (examples/matmul_v3.mlir, resized).
func.func @matmul(%a: memref<?x?xf16>, %b: memref<?x?xf16>, %c: memref<?x?xf32>)
    attributes {wsc.num_threads = 160 : i32} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
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
  %sa = "wsc.alloc_shared"() : () -> memref<2x128x64xf16, 3>
  %sb = "wsc.alloc_shared"() : () -> memref<2x128x64xf16, 3>
  %full = "wsc.mbarrier_alloc"() {arrival_count = 1 : i32, num_barriers = 2 : i32} : () -> !wsc.mbarriers
  %empty = "wsc.mbarrier_alloc"() {arrival_count = 128 : i32, num_barriers = 2 : i32} : () -> !wsc.mbarriers
  "wsc.sync"() : () -> ()
  %is_consumer = "wsc.role"() {role = "consumer", thread_begin = 0 : i32, num_threads = 128 : i32, max_registers = 232 : i32} : () -> i1
  scf.if %is_consumer {
    %acc = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 128, 128>, f32>
    %cs:2 = scf.for %kt = %c0 to %k_tiles step %c1 iter_args(%stage = %c0, %phase = %false) -> (index, i1) {
      "wsc.mbarrier_wait"(%full, %stage, %phase) : (!wsc.mbarriers, index, i1) -> ()
      "wsc.wgmma_fence"() : () -> ()
      "wsc.wgmma"(%sa, %sb, %stage, %acc) {a_row = 0 : i32, b_layout = "nk"} : (memref<2x128x64xf16, 3>, memref<2x128x64xf16, 3>, index, !wsc.acc<array<i64: 128, 128>, f32>) -> ()
      "wsc.wgmma_commit_group"() : () -> ()
      "wsc.wgmma_wait_group"() {pending = 0 : i32} : () -> ()
      "wsc.mbarrier_arrive"(%empty, %stage) : (!wsc.mbarriers, index) -> ()
      %next_stage, %next_phase = "wsc.ring_advance"(%stage, %phase) {num_stages = 2 : i32} : (index, i1) -> (index, i1)
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
        "wsc.tma_load"(%a, %m0, %k0, %sa, %stage, %full) : (memref<?x?xf16>, index, index, memref<2x128x64xf16, 3>, index, !wsc.mbarriers) -> ()
        "wsc.tma_load"(%b, %n0, %k0, %sb, %stage, %full) : (memref<?x?xf16>, index, index, memref<2x128x64xf16, 3>, index, !wsc.mbarriers) -> ()
      }
      %next_stage, %next_phase = "wsc.ring_advance"(%stage, %phase) {num_stages = 2 : i32} : (index, i1) -> (index, i1)
      scf.yield %next_stage, %next_phase : index, i1
    }
    // Drain: of the 4 positions after the loop, those with a fill 4 positions
    // earlier (k_tiles + i >= 4) wait for that fill's release.
    %ds:2 = scf.for %i = %c0 to %c2 step %c1 iter_args(%stage = %ps#0, %phase = %ps#1) -> (index, i1) {
      %position = arith.addi %i, %k_tiles : index
      %filled = arith.cmpi uge, %position, %c2 : index
      scf.if %filled {
        "wsc.mbarrier_wait"(%empty, %stage, %phase) : (!wsc.mbarriers, index, i1) -> ()
      }
      %next_stage, %next_phase = "wsc.ring_advance"(%stage, %phase) {num_stages = 2 : i32} : (index, i1) -> (index, i1)
      scf.yield %next_stage, %next_phase : index, i1
    }
  }
  return
}

// Consumer: one trip per ring revolution, copies at constant stages 0 and 1,
// copy 1 guarded for an odd number of K tiles, and one phase flip per trip.
// CHECK-LABEL: func.func @matmul
// CHECK: %[[KTILES:.*]] = arith.ceildivui
// CHECK: %[[FULL:.*]] = "wsc.mbarrier_alloc"() {arrival_count = 1 : i32, num_barriers = 2 : i32}
// CHECK: %[[EMPTY:.*]] = "wsc.mbarrier_alloc"() {arrival_count = 128 : i32, num_barriers = 2 : i32}
// CHECK: "wsc.role"() {{.*}}role = "consumer"
// CHECK-NOT: scf.for
// CHECK: %[[ROUNDS:.*]] = arith.ceildivui %[[KTILES]], %[[C2:.*]] : index
// CHECK: scf.for %[[T:.*]] = %{{.*}} to %[[ROUNDS]] step %{{.*}} iter_args(%[[PHASE:.*]] = %{{.*}}) -> (i1)
// CHECK-NEXT: %[[FIRST:.*]] = arith.muli %[[T]], %[[C2]]
// CHECK-NEXT: %[[S0:.*]] = arith.constant 0 : index
// CHECK-NEXT: "wsc.mbarrier_wait"(%[[FULL]], %[[S0]], %[[PHASE]])
// CHECK: "wsc.wgmma"(%{{.*}}, %{{.*}}, %[[S0]], %{{.*}})
// CHECK: "wsc.mbarrier_arrive"(%[[EMPTY]], %[[S0]])
// CHECK-NEXT: %[[ONE:.*]] = arith.constant 1 : index
// CHECK-NEXT: %[[KT1:.*]] = arith.addi %[[FIRST]], %[[ONE]]
// CHECK-NEXT: %[[IN1:.*]] = arith.cmpi ult, %[[KT1]], %[[KTILES]]
// CHECK-NEXT: scf.if %[[IN1]] {
// CHECK-NEXT: %[[S1:.*]] = arith.constant 1 : index
// CHECK-NEXT: "wsc.mbarrier_wait"(%[[FULL]], %[[S1]], %[[PHASE]])
// CHECK: "wsc.wgmma"(%{{.*}}, %{{.*}}, %[[S1]], %{{.*}})
// CHECK: "wsc.mbarrier_arrive"(%[[EMPTY]], %[[S1]])
// CHECK: %[[FLIP:.*]] = arith.xori %[[PHASE]], %{{.*}} : i1
// CHECK-NEXT: scf.yield %[[FLIP]] : i1
// No ring_advance and no run-time stage are left.
// CHECK-NOT: wsc.ring_advance
// CHECK: "wsc.store"

// Producer: the same shape; its copies are issued at constant stages too.
// CHECK: "wsc.role"() {{.*}}role = "producer"
// CHECK: scf.for %{{.*}} iter_args(%[[PPHASE:.*]] = %{{.*}}) -> (i1)
// CHECK: %[[P0:.*]] = arith.constant 0 : index
// CHECK-NEXT: "wsc.mbarrier_wait"(%[[EMPTY]], %[[P0]], %[[PPHASE]])
// CHECK: "wsc.mbarrier_arrive_expect_tx"(%[[FULL]], %[[P0]]) {tx_bytes = 32768 : i32}
// CHECK: "wsc.tma_load"({{.*}}, %[[P0]], %[[FULL]])
// CHECK: scf.if
// CHECK: %[[P1:.*]] = arith.constant 1 : index
// CHECK-NEXT: "wsc.mbarrier_wait"(%[[EMPTY]], %[[P1]], %[[PPHASE]])
// CHECK: "wsc.tma_load"({{.*}}, %[[P1]], %[[FULL]])
// CHECK: arith.xori %[[PPHASE]]

// Drain: each constant stage that was ever filled (s < k_tiles) is waited once,
// with its own phase: stages before the final stage (k_tiles mod 2) wrapped once
// more than the others.
// CHECK: %[[FINAL_STAGE:.*]] = arith.remui %[[KTILES]], %[[TWO:.*]] : index
// CHECK-NEXT: %[[WRAPS:.*]] = arith.divui %[[KTILES]], %[[TWO]]
// CHECK-NEXT: %[[ODD:.*]] = arith.index_cast %[[WRAPS]] : index to i1
// CHECK-NEXT: %[[FINAL_PHASE:.*]] = arith.xori %{{.*}}, %[[ODD]]
// CHECK-NEXT: %[[D0:.*]] = arith.constant 0 : index
// CHECK-NEXT: %[[FILLED0:.*]] = arith.cmpi ult, %[[D0]], %[[KTILES]]
// CHECK-NEXT: %[[WRAPPED0:.*]] = arith.cmpi ult, %[[D0]], %[[FINAL_STAGE]]
// CHECK: %[[PH0:.*]] = arith.select %[[WRAPPED0]], %{{.*}}, %[[FINAL_PHASE]]
// CHECK-NEXT: scf.if %[[FILLED0]] {
// CHECK-NEXT: "wsc.mbarrier_wait"(%[[EMPTY]], %[[D0]], %[[PH0]])
// CHECK: %[[D1:.*]] = arith.constant 1 : index
// CHECK: scf.if
// CHECK-NEXT: "wsc.mbarrier_wait"(%[[EMPTY]], %[[D1]], %{{.*}})
// CHECK-NOT: wsc.ring_advance
// CHECK: return

// Three stages, after --warp-specialize: copies at stages 0, 1, 2, two of them guarded.
// THREE-LABEL: func.func @matmul
// THREE: "wsc.role"() {{.*}}role = "consumer"
// THREE: "wsc.mbarrier_wait"(%{{.*}}, %[[A:c0.*]], %{{.*}})
// THREE: scf.if
// THREE-NEXT: %[[B:.*]] = arith.constant 1 : index
// THREE-NEXT: "wsc.mbarrier_wait"(%{{.*}}, %[[B]], %{{.*}})
// THREE: scf.if
// THREE-NEXT: %[[C:.*]] = arith.constant 2 : index
// THREE-NEXT: "wsc.mbarrier_wait"(%{{.*}}, %[[C]], %{{.*}})
// THREE-NOT: "wsc.ring_advance"

// One WGMMA group in flight: every copy keeps wait_group 1 and releases the
// stage before its own, computed from its constant stage (folded to a
// constant during lowering); the release of the last K tile's stage reads the
// rebuilt final stage, k_tiles mod 3.
// INFLIGHT: "wsc.role"() {num_threads = 128 : i32, role = "consumer", thread_begin = 0 : i32}
// INFLIGHT: %[[ROUNDS:.*]] = arith.ceildivui %[[KTILES:.*]], %{{.*}}
// INFLIGHT: scf.for %{{.*}} = %{{.*}} to %[[ROUNDS]]
// INFLIGHT: %[[S0:.*]] = arith.constant 0 : index
// INFLIGHT-NEXT: "wsc.mbarrier_wait"(%{{.*}}, %[[S0]], %{{.*}})
// INFLIGHT: "wsc.wgmma_wait_group"() {pending = 1 : i32}
// INFLIGHT: arith.cmpi eq, %[[S0]], %{{.*}}
// INFLIGHT: "wsc.mbarrier_arrive"
// INFLIGHT: scf.if
// INFLIGHT-NEXT: %[[S1:.*]] = arith.constant 1 : index
// INFLIGHT-NEXT: "wsc.mbarrier_wait"(%{{.*}}, %[[S1]], %{{.*}})
// INFLIGHT: "wsc.wgmma_wait_group"() {pending = 1 : i32}
// INFLIGHT: arith.cmpi eq, %[[S1]], %{{.*}}
// INFLIGHT: scf.if
// INFLIGHT-NEXT: %[[S2:.*]] = arith.constant 2 : index
// INFLIGHT-NEXT: "wsc.mbarrier_wait"(%{{.*}}, %[[S2]], %{{.*}})
// INFLIGHT: "wsc.wgmma_wait_group"() {pending = 1 : i32}
// INFLIGHT: arith.cmpi eq, %[[S2]], %{{.*}}
// INFLIGHT: %[[FINAL:.*]] = arith.remui %[[KTILES]], %{{.*}}
// INFLIGHT: "wsc.wgmma_wait_group"() {pending = 0 : i32}
// INFLIGHT: arith.cmpi eq, %[[FINAL]], %{{.*}}
// INFLIGHT: "wsc.mbarrier_arrive"
// INFLIGHT: "wsc.store"
