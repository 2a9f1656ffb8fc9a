// --warp-specialize on a kernel whose epilogue stages C in shared memory and
// copies it out with coalesced stores by all threads: as with TMA, the
// staging buffer gets one stage per consumer group, of the group's rows, and
// each group stages, syncs its own warps and copies from its stage (no proxy
// fence: the copy reads shared memory through ordinary loads).
// RUN: wsc-opt --warp-specialize %s | FileCheck %s
// RUN: wsc-opt --warp-specialize='num-consumer-groups=2 producer=warpgroup' %s | FileCheck %s --check-prefix=G2

func.func @matmul(%a: memref<?x?xf16>, %b: memref<?x?xf16>, %c: memref<?x?xf16>) attributes {wsc.num_threads = 128 : i32} {
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
  "wsc.sync"() : () -> ()
  "wsc.coalesced_store"(%sc, %c0, %c, %c0, %c0) : (memref<1x128x128xf16, 3>, index, memref<?x?xf16>, index, index) -> ()
  return
}

// CHECK-LABEL: func.func @matmul
// CHECK: [[SC:%.*]] = "wsc.alloc_shared"() : () -> memref<1x128x128xf16, 3>
// CHECK-NOT: memref<1x128x128xf16, 3>
// CHECK: "wsc.role"() {num_threads = 128 : i32, role = "consumer", thread_begin = 0 : i32}
// CHECK: [[H:%.*]] = "wsc.cast"
// CHECK-NEXT: "wsc.store_shared"([[H]], [[SC]], [[STAGE0:%[a-z0-9_]*]])
// CHECK-NEXT: "wsc.sync"()
// CHECK-NEXT: "wsc.coalesced_store"([[SC]], [[STAGE0]], %arg2, %c0, %c0)
// CHECK: "wsc.role"() {num_threads = 32 : i32, role = "producer"
// CHECK-NOT: wsc.coalesced_store

// G2-LABEL: func.func @matmul
// G2: [[SC:%.*]] = "wsc.alloc_shared"() : () -> memref<2x64x128xf16, 3>
// G2: "wsc.role"() {{.*}}role = "consumer", thread_begin = 0 : i32}
// G2: [[G0:%.*]] = arith.constant 0 : index
// G2: "wsc.store_shared"({{%.*}}, [[SC]], [[G0]])
// G2-NEXT: "wsc.sync"()
// G2-NEXT: "wsc.coalesced_store"([[SC]], [[G0]], %arg2, %c0, %c0)
// G2: "wsc.role"() {{.*}}role = "consumer", thread_begin = 128 : i32}
// G2: [[G1:%.*]] = arith.constant 1 : index
// The second group copies rows 64.. of the tile from its own stage.
// G2: "wsc.store_shared"({{%.*}}, [[SC]], [[G1]])
// G2-NEXT: "wsc.sync"()
// G2-NEXT: [[ROW:%.*]] = arith.addi %c0, %c64
// G2-NEXT: "wsc.coalesced_store"([[SC]], [[G1]], %arg2, [[ROW]], %c0)
