// --warp-specialize on a back-to-back product O = f16(Q K^T) V (the kernel
// of examples/back_to_back.py as built): two accumulators (O before the K
// loop, S made in it), a cast and a WGMMA reading A from registers between
// the two WGMMA groups of a K tile. Each consumer group makes every register
// tile in its 64 rows and releases the stage after the second group; the
// producer loads Q, K and V into one stage.
// RUN: wsc-opt --warp-specialize='num-consumer-groups=2 producer=warpgroup' %s | FileCheck %s
// With one WGMMA group left in flight a K tile's stage would be released
// while its second group still reads it: refused.
// RUN: not wsc-opt --warp-specialize='wgmma-in-flight=1' %s 2>&1 | FileCheck %s --check-prefix=IN-FLIGHT

func.func @back_to_back(%arg0: memref<?x?xf16>, %arg1: memref<?x?xf16>, %arg2: memref<?x?xf16>, %arg3: memref<?x?xf32>) attributes {wsc.num_threads = 128 : i32} {
  %0 = "wsc.alloc_shared"() : () -> memref<2x128x64xf16, 3>
  %1 = "wsc.alloc_shared"() : () -> memref<2x64x64xf16, 3>
  %2 = "wsc.alloc_shared"() : () -> memref<2x64x64xf16, 3>
  %3 = "wsc.mbarrier_alloc"() {arrival_count = 1 : i32, num_barriers = 2 : i32} : () -> !wsc.mbarriers
  "wsc.sync"() : () -> ()
  %block_id_x = gpu.block_id  x
  %c128 = arith.constant 128 : index
  %4 = arith.muli %block_id_x, %c128 : index
  %5 = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 128, 64>, f32>
  %c0 = arith.constant 0 : index
  %dim = memref.dim %arg1, %c0 : memref<?x?xf16>
  %c64 = arith.constant 64 : index
  %6 = arith.ceildivui %dim, %c64 : index
  %false = arith.constant false
  %c1 = arith.constant 1 : index
  %7:2 = scf.for %arg4 = %c0 to %6 step %c1 iter_args(%arg5 = %c0, %arg6 = %false) -> (index, i1) {
    %c64_0 = arith.constant 64 : index
    %8 = arith.muli %arg4, %c64_0 : index
    %9 = "wsc.elect"() : () -> i1
    scf.if %9 {
      "wsc.mbarrier_arrive_expect_tx"(%3, %arg5) {tx_bytes = 32768 : i32} : (!wsc.mbarriers, index) -> ()
      "wsc.tma_load"(%arg0, %4, %c0, %0, %arg5, %3) : (memref<?x?xf16>, index, index, memref<2x128x64xf16, 3>, index, !wsc.mbarriers) -> ()
      "wsc.tma_load"(%arg1, %8, %c0, %1, %arg5, %3) : (memref<?x?xf16>, index, index, memref<2x64x64xf16, 3>, index, !wsc.mbarriers) -> ()
      "wsc.tma_load"(%arg2, %8, %c0, %2, %arg5, %3) : (memref<?x?xf16>, index, index, memref<2x64x64xf16, 3>, index, !wsc.mbarriers) -> ()
    }
    "wsc.mbarrier_wait"(%3, %arg5, %arg6) : (!wsc.mbarriers, index, i1) -> ()
    %10 = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 128, 64>, f32>
    "wsc.wgmma_fence"() : () -> ()
    "wsc.wgmma"(%0, %1, %arg5, %10) {a_row = 0 : i32, b_layout = "nk"} : (memref<2x128x64xf16, 3>, memref<2x64x64xf16, 3>, index, !wsc.acc<array<i64: 128, 64>, f32>) -> ()
    "wsc.wgmma_commit_group"() : () -> ()
    "wsc.wgmma_wait_group"() {pending = 0 : i32} : () -> ()
    "wsc.wgmma_fence"() : () -> ()
    %11 = "wsc.cast"(%10) : (!wsc.acc<array<i64: 128, 64>, f32>) -> !wsc.acc<array<i64: 128, 64>, f16>
    "wsc.wgmma_register_a"(%11, %2, %arg5, %5) {b_layout = "kn"} : (!wsc.acc<array<i64: 128, 64>, f16>, memref<2x64x64xf16, 3>, index, !wsc.acc<array<i64: 128, 64>, f32>) -> ()
    "wsc.wgmma_commit_group"() : () -> ()
    "wsc.wgmma_wait_group"() {pending = 0 : i32} : () -> ()
    "wsc.sync"() : () -> ()
    %12:2 = "wsc.ring_advance"(%arg5, %arg6) {num_stages = 2 : i32} : (index, i1) -> (index, i1)
    scf.yield %12#0, %12#1 : index, i1
  }
  "wsc.store"(%5, %arg3, %4, %c0) : (!wsc.acc<array<i64: 128, 64>, f32>, memref<?x?xf32>, index, index) -> ()
  return
}

// CHECK-LABEL: func.func @back_to_back
// CHECK: thread_begin = 0
// CHECK: %[[O:.*]] = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 64, 64>, f32>
// CHECK: scf.for
// CHECK: "wsc.mbarrier_wait"
// CHECK-NEXT: %[[S:.*]] = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 64, 64>, f32>
// CHECK-NEXT: "wsc.wgmma_fence"
// CHECK-NEXT: "wsc.wgmma"(%{{.*}}, %{{.*}}, %{{.*}}, %[[S]]) {a_row = 0 : i32, b_layout = "nk"}
// CHECK: %[[P:.*]] = "wsc.cast"(%[[S]]) : (!wsc.acc<array<i64: 64, 64>, f32>) -> !wsc.acc<array<i64: 64, 64>, f16>
// CHECK-NEXT: "wsc.wgmma_register_a"(%[[P]], %{{.*}}, %{{.*}}, %[[O]]) {b_layout = "kn"}
// CHECK-NEXT: "wsc.wgmma_commit_group"
// CHECK-NEXT: "wsc.wgmma_wait_group"() {pending = 0 : i32}
// CHECK-NEXT: "wsc.mbarrier_arrive"
// CHECK: "wsc.store"(%[[O]]
// CHECK: thread_begin = 128
// CHECK: {a_row = 64 : i32, b_layout = "nk"}
// CHECK: role = "producer"
// CHECK-NOT: wsc.wgmma
// CHECK-COUNT-3: "wsc.tma_load"

// IN-FLIGHT: error: --warp-specialize: wgmma-in-flight = 1 leaves a K tile's one WGMMA group in flight; this K loop commits 2
