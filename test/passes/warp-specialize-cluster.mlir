// --warp-specialize on a kernel in clusters of two blocks that share B's
// tile: each block's producer multicasts its half of B into both blocks'
// stages, so every stage is released to the empty barriers of both blocks
// (twice the arrivals), and the cluster-wide sync of the K loop goes away
// like a block-wide one. The cluster sync after barrier init stays, before
// the roles split.
// RUN: wsc-opt --warp-specialize %s | FileCheck %s
// RUN: wsc-opt --warp-specialize='num-consumer-groups=2 producer=warpgroup' %s | FileCheck %s --check-prefix=G2
// RUN: wsc-opt --warp-specialize='num-consumer-groups=2 producer=warpgroup release=warp' --verify-pipeline %s | FileCheck %s --check-prefix=WARP
// RUN: not wsc-opt --warp-specialize='num-consumer-groups=2 producer=warpgroup ping-pong=true' %s 2>&1 | FileCheck %s --check-prefix=PINGPONG

func.func @matmul(%a: memref<?x?xf16>, %b: memref<?x?xf16>, %c: memref<?x?xf32>) attributes {wsc.cluster_size = 2 : i32, wsc.num_threads = 128 : i32} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %c128 = arith.constant 128 : index
  %false = arith.constant false
  %k = memref.dim %a, %c1 : memref<?x?xf16>
  %k_tiles = arith.ceildivui %k, %c64 : index
  %sa = "wsc.alloc_shared"() : () -> memref<2x128x64xf16, 3>
  %sb = "wsc.alloc_shared"() : () -> memref<2x128x64xf16, 3>
  %full = "wsc.mbarrier_alloc"() {arrival_count = 1 : i32, num_barriers = 2 : i32} : () -> !wsc.mbarriers
  "wsc.cluster_sync"() : () -> ()
  %rank = "wsc.cluster_rank"() : () -> index
  %row = arith.muli %rank, %c128 : index
  %acc = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 128, 128>, f32>
  %ring:2 = scf.for %kt = %c0 to %k_tiles step %c1 iter_args(%stage = %c0, %phase = %false) -> (index, i1) {
    %k0 = arith.muli %kt, %c64 : index
    %elected = "wsc.elect"() : () -> i1
    scf.if %elected {
      "wsc.mbarrier_arrive_expect_tx"(%full, %stage) {tx_bytes = 32768 : i32} : (!wsc.mbarriers, index) -> ()
      "wsc.tma_load"(%a, %row, %k0, %sa, %stage, %full) : (memref<?x?xf16>, index, index, memref<2x128x64xf16, 3>, index, !wsc.mbarriers) -> ()
      "wsc.tma_load"(%b, %c0, %k0, %sb, %stage, %full) {multicast} : (memref<?x?xf16>, index, index, memref<2x128x64xf16, 3>, index, !wsc.mbarriers) -> ()
    }
    "wsc.mbarrier_wait"(%full, %stage, %phase) : (!wsc.mbarriers, index, i1) -> ()
    "wsc.wgmma_fence"() : () -> ()
    "wsc.wgmma"(%sa, %sb, %stage, %acc) {a_row = 0 : i32, b_layout = "nk"} : (memref<2x128x64xf16, 3>, memref<2x128x64xf16, 3>, index, !wsc.acc<array<i64: 128, 128>, f32>) -> ()
    "wsc.wgmma_commit_group"() : () -> ()
    "wsc.wgmma_wait_group"() {pending = 0 : i32} : () -> ()
    "wsc.cluster_sync"() : () -> ()
    %next:2 = "wsc.ring_advance"(%stage, %phase) {num_stages = 2 : i32} : (index, i1) -> (index, i1)
    scf.yield %next#0, %next#1 : index, i1
  }
  "wsc.store"(%acc, %c, %row, %c0) : (!wsc.acc<array<i64: 128, 128>, f32>, memref<?x?xf32>, index, index) -> ()
  return
}

// CHECK-LABEL: func.func @matmul
// CHECK-SAME: wsc.cluster_size = 2 : i32
// CHECK: [[FULL:%.*]] = "wsc.mbarrier_alloc"() {arrival_count = 1 : i32, num_barriers = 2 : i32}
// CHECK-NEXT: [[EMPTY:%.*]] = "wsc.mbarrier_alloc"() {arrival_count = 256 : i32, num_barriers = 2 : i32}
// CHECK-NEXT: "wsc.cluster_sync"()
// CHECK: "wsc.role"() {num_threads = 128 : i32, role = "consumer", thread_begin = 0 : i32}
// CHECK: "wsc.wgmma_wait_group"() {pending = 0 : i32}
// CHECK-NEXT: "wsc.mbarrier_arrive"([[EMPTY]], {{%.*}}) {every_cta}
// CHECK: "wsc.role"() {num_threads = 32 : i32, role = "producer"
// CHECK: "wsc.mbarrier_wait"([[EMPTY]],
// CHECK: "wsc.tma_load"(%arg0,
// CHECK-NEXT: "wsc.tma_load"(%arg1, {{.*}}) {multicast}
// CHECK-NOT: "wsc.cluster_sync"
// CHECK: return

// Two consumer groups: 2 x 256 releases per stage and phase.
// G2: "wsc.mbarrier_alloc"() {arrival_count = 512 : i32, num_barriers = 2 : i32}
// G2-COUNT-2: "wsc.mbarrier_arrive"({{.*}}) {every_cta}
// G2-NOT: "wsc.mbarrier_arrive"(

// One release per consumer warp: 2 x 8 per stage and phase.
// WARP: "wsc.mbarrier_alloc"() {arrival_count = 16 : i32, num_barriers = 2 : i32}
// WARP-COUNT-2: "wsc.mbarrier_arrive"(%{{.*}}, %{{.*}}) {every_cta, per_warp}

// Ping-pong groups take whole tiles in turn; pairs of blocks in lockstep are
// not built for that.
// PINGPONG: error: --warp-specialize: ping-pong in a cluster is not supported
