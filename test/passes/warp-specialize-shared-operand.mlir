// Two products that read one A stage in the same K tile (a gated MLP's
// A W1^T and A W3^T): both WGMMAs read the copy the one wait saw, and the
// stage is released once, after both. --verify-pipeline accepts the V2 form
// and its specialization.
// RUN: wsc-opt --verify-pipeline %s | FileCheck %s --check-prefix=V2
// RUN: wsc-opt --warp-specialize='num-consumer-groups=2 producer=warpgroup' --verify-pipeline %s | FileCheck %s

// V2-LABEL: func.func @gated_products
// V2: "wsc.mbarrier_wait"
// V2-NEXT: "wsc.wgmma_fence"
// V2-NEXT: "wsc.wgmma"(%[[A:.*]], %{{.*}}, %[[STAGE:.*]], %{{.*}})
// V2-NEXT: "wsc.wgmma"(%[[A]], %{{.*}}, %[[STAGE]], %{{.*}})

// CHECK-LABEL: func.func @gated_products
// CHECK: role = "consumer", thread_begin = 0
// CHECK: "wsc.mbarrier_wait"(%[[FULL:.*]], %[[STAGE:.*]], %{{.*}})
// CHECK: "wsc.wgmma"(%[[A:.*]], %[[W1:.*]], %[[STAGE]], %{{.*}}) {a_row = 0 : i32
// CHECK-NEXT: "wsc.wgmma"(%[[A]], %[[W3:.*]], %[[STAGE]], %{{.*}}) {a_row = 0 : i32
// CHECK: "wsc.wgmma_wait_group"() {pending = 0 : i32}
// CHECK-NEXT: "wsc.mbarrier_arrive"(%[[EMPTY:.*]], %[[STAGE]])
// CHECK-NOT: "wsc.mbarrier_arrive"(%[[EMPTY]]
// CHECK: role = "consumer", thread_begin = 128
// CHECK: role = "producer"
func.func @gated_products(%a: memref<?x?xf16>, %w1: memref<?x?xf16>, %w3: memref<?x?xf16>,
                          %h1: memref<?x?xf32>, %h3: memref<?x?xf32>)
    attributes {wsc.num_threads = 128 : i32} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %c128 = arith.constant 128 : index
  %false = arith.constant false
  %bx = gpu.block_id x
  %by = gpu.block_id y
  %m0 = arith.muli %bx, %c128 : index
  %n0 = arith.muli %by, %c128 : index
  %k = memref.dim %a, %c1 : memref<?x?xf16>
  %k_tiles = arith.ceildivui %k, %c64 : index
  %sa = "wsc.alloc_shared"() : () -> memref<3x128x64xf16, 3>
  %sw1 = "wsc.alloc_shared"() : () -> memref<3x128x64xf16, 3>
  %sw3 = "wsc.alloc_shared"() : () -> memref<3x128x64xf16, 3>
  %full = "wsc.mbarrier_alloc"() {arrival_count = 1 : i32, num_barriers = 3 : i32} : () -> !wsc.mbarriers
  "wsc.sync"() : () -> ()
  %gate = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 128, 128>, f32>
  %up = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 128, 128>, f32>
  %stage_n, %phase_n = scf.for %kt = %c0 to %k_tiles step %c1
      iter_args(%stage = %c0, %phase = %false) -> (index, i1) {
    %k0 = arith.muli %kt, %c64 : index
    %elected = "wsc.elect"() : () -> i1
    scf.if %elected {
      "wsc.mbarrier_arrive_expect_tx"(%full, %stage) {tx_bytes = 49152 : i32} : (!wsc.mbarriers, index) -> ()
      "wsc.tma_load"(%a, %m0, %k0, %sa, %stage, %full) : (memref<?x?xf16>, index, index, memref<3x128x64xf16, 3>, index, !wsc.mbarriers) -> ()
      "wsc.tma_load"(%w1, %n0, %k0, %sw1, %stage, %full) : (memref<?x?xf16>, index, index, memref<3x128x64xf16, 3>, index, !wsc.mbarriers) -> ()
      "wsc.tma_load"(%w3, %n0, %k0, %sw3, %stage, %full) : (memref<?x?xf16>, index, index, memref<3x128x64xf16, 3>, index, !wsc.mbarriers) -> ()
    }
    "wsc.mbarrier_wait"(%full, %stage, %phase) : (!wsc.mbarriers, index, i1) -> ()
    "wsc.wgmma_fence"() : () -> ()
    "wsc.wgmma"(%sa, %sw1, %stage, %gate) {a_row = 0 : i32, b_layout = "nk"} : (memref<3x128x64xf16, 3>, memref<3x128x64xf16, 3>, index, !wsc.acc<array<i64: 128, 128>, f32>) -> ()
    "wsc.wgmma"(%sa, %sw3, %stage, %up) {a_row = 0 : i32, b_layout = "nk"} : (memref<3x128x64xf16, 3>, memref<3x128x64xf16, 3>, index, !wsc.acc<array<i64: 128, 128>, f32>) -> ()
    "wsc.wgmma_commit_group"() : () -> ()
    "wsc.wgmma_wait_group"() {pending = 0 : i32} : () -> ()
    "wsc.sync"() : () -> ()
    %next_stage, %next_phase = "wsc.ring_advance"(%stage, %phase) {num_stages = 3 : i32} : (index, i1) -> (index, i1)
    scf.yield %next_stage, %next_phase : index, i1
  }
  "wsc.store"(%gate, %h1, %m0, %n0) : (!wsc.acc<array<i64: 128, 128>, f32>, memref<?x?xf32>, index, index) -> ()
  "wsc.store"(%up, %h3, %m0, %n0) : (!wsc.acc<array<i64: 128, 128>, f32>, memref<?x?xf32>, index, index) -> ()
  return
}
