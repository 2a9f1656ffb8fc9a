// --warp-specialize on a split-K kernel: block z sums its share of the K
// tiles and hands its partial sum over; the last split to arrive reduces and
// stores. Each consumer group stores, counts and reduces the partial sums of
// its own rows (their first row offset by the group's), so groups hand over
// independently; the protocol check runs as the last split and as an earlier one.
// RUN: wsc-opt --warp-specialize %s | FileCheck %s
// RUN: wsc-opt --warp-specialize='num-consumer-groups=2 producer=warpgroup' %s | FileCheck %s --check-prefix=G2

func.func @split_k_matmul(%a: memref<?x?xf16>, %b: memref<?x?xf16>, %c: memref<?x?xf16>, %d: memref<?xf32>, %e: memref<?xi32>) attributes {wsc.num_threads = 128 : i32} {
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
  scf.if %last {
    "wsc.partial_reduce"(%acc, %d, %e, %row) {splits = 4 : i32} : (!wsc.acc<array<i64: 128, 128>, f32>, memref<?xf32>, memref<?xi32>, index) -> ()
    %h = "wsc.cast"(%acc) : (!wsc.acc<array<i64: 128, 128>, f32>) -> !wsc.acc<array<i64: 128, 128>, f16>
    "wsc.store"(%h, %c, %row, %c0) : (!wsc.acc<array<i64: 128, 128>, f16>, memref<?x?xf16>, index, index) -> ()
  }
  return
}

// CHECK-LABEL: func.func @split_k_matmul
// CHECK: role = "consumer"
// CHECK: "wsc.partial_store"(%[[ACC:.*]], %arg3, %[[ROW:.*]], %block_id_z) {splits = 4 : i32} : (!wsc.acc<array<i64: 128, 128>, f32>
// CHECK-NEXT: %[[LAST:.*]] = "wsc.partial_arrive"(%arg4, %[[ROW]]) {splits = 4 : i32}
// CHECK-NEXT: scf.if %[[LAST]] {
// CHECK-NEXT: "wsc.partial_reduce"(%[[ACC]], %arg3, %arg4, %[[ROW]]) {splits = 4 : i32}
// CHECK-NEXT: %[[H:.*]] = "wsc.cast"(%[[ACC]])
// CHECK-NEXT: "wsc.store"(%[[H]], %arg2, %[[ROW]], %c0)
// CHECK: role = "producer"
// CHECK-NOT: wsc.partial

// G2-LABEL: func.func @split_k_matmul
// G2: thread_begin = 0 : i32
// G2: "wsc.partial_store"(%{{.*}}, %arg3, %[[ROW:.*]], %block_id_z) {splits = 4 : i32} : (!wsc.acc<array<i64: 64, 128>, f32>
// G2-NEXT: %[[LAST0:.*]] = "wsc.partial_arrive"(%arg4, %[[ROW]])
// G2-NEXT: scf.if %[[LAST0]] {
// G2-NEXT: "wsc.partial_reduce"(%{{.*}}, %arg3, %arg4, %[[ROW]])
// G2: thread_begin = 128 : i32
// G2: %[[HALF:.*]] = arith.constant 64 : index
// G2-NEXT: %[[ROW1:.*]] = arith.addi %[[ROW]], %[[HALF]] : index
// G2-NEXT: "wsc.partial_store"(%{{.*}}, %arg3, %[[ROW1]], %block_id_z)
// G2-NEXT: %[[ROW1A:.*]] = arith.addi %[[ROW]], %[[HALF]] : index
// G2-NEXT: %[[LAST1:.*]] = "wsc.partial_arrive"(%arg4, %[[ROW1A]])
// G2-NEXT: scf.if %[[LAST1]] {
// G2-NEXT: %[[ROW1B:.*]] = arith.addi %[[ROW]], %[[HALF]] : index
// G2-NEXT: "wsc.partial_reduce"(%{{.*}}, %arg3, %arg4, %[[ROW1B]])
// G2: role = "producer"
