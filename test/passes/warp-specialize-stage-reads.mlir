// --warp-specialize on a K loop that reads a stage into registers: block-scaled
// fp8 as wsc.kernels.matmul.build makes it, where TMA copies the K tile's row
// of scale_a's transpose [K blocks, M] beside A's and B's tiles, and the
// consumers read it after the full wait as a row vector (wsc.load_shared
// {transpose}). Each consumer group reads the columns of its own rows; with
// wgmma-in-flight = 1 the read is issued with the K tile's WGMMAs, a K tile
// before its math, and the stage is released only after it.
// RUN: wsc-opt --warp-specialize='num-consumer-groups=2 producer=warpgroup' --verify-pipeline %s | FileCheck %s
// RUN: wsc-opt --warp-specialize='num-consumer-groups=2 producer=warpgroup wgmma-in-flight=1' --verify-pipeline %s | FileCheck %s --check-prefix=IN-FLIGHT
// Refused: the read before the full wait (the stage may not have landed), and
// a read of the stage after the K loop (the consumers have handed it back).
// RUN: sed -e '/^      %%sa_row = /d' -e 's/^      "wsc.mbarrier_wait"(%%3, %%arg6, %%arg7).*$/      %%sa_row = "wsc.load_shared"(%%4, %%arg6) {transpose} : (memref<2x1x128xf32, 3>, index) -> !wsc.acc<array<i64: 128, 1>, f32>\n&/' %s | not wsc-opt --warp-specialize='num-consumer-groups=2 producer=warpgroup' - 2>&1 | FileCheck %s --check-prefix=BEFORE-WAIT
// RUN: sed 's/^    "wsc.store"(%%12, .*$/    %%late = "wsc.load_shared"(%%4, %%c0) {transpose} : (memref<2x1x128xf32, 3>, index) -> !wsc.acc<array<i64: 128, 1>, f32>\n&/' %s | not wsc-opt --warp-specialize='num-consumer-groups=2 producer=warpgroup' - 2>&1 | FileCheck %s --check-prefix=AFTER-LOOP

// Group 0 reads columns [0, 64) of the stage's row, group 1 [64, 128).
// CHECK: "wsc.role"() {{.*}}role = "consumer", thread_begin = 0
// CHECK: "wsc.mbarrier_wait"
// CHECK-NEXT: "wsc.load_shared"({{.*}}) {col = 0 : i32, row = 0 : i32, transpose} : (memref<2x1x128xf32, 3>, index) -> !wsc.acc<array<i64: 64, 1>, f32>
// CHECK: "wsc.mbarrier_arrive"
// CHECK: "wsc.role"() {{.*}}role = "consumer", thread_begin = 128
// CHECK: "wsc.mbarrier_wait"
// CHECK-NEXT: "wsc.load_shared"({{.*}}) {col = 64 : i32, row = 0 : i32, transpose} : (memref<2x1x128xf32, 3>, index) -> !wsc.acc<array<i64: 64, 1>, f32>
// CHECK: "wsc.mbarrier_arrive"
// The producer copies A's, B's and the scales' tiles on one full barrier.
// CHECK: "wsc.role"() {{.*}}role = "producer"
// CHECK: "wsc.mbarrier_arrive_expect_tx"({{.*}}) {tx_bytes = 25088 : i32}
// CHECK: "wsc.tma_load"(%arg3, %arg5, %{{.*}}) : (memref<?x?xf32>, index, index, memref<2x1x128xf32, 3>

// K tile j + 1's scales are read right after its WGMMAs are issued, into the
// other slot, before wait_group 1 retires K tile j and its stage is released.
// IN-FLIGHT: "wsc.role"() {{.*}}role = "consumer", thread_begin = 128
// IN-FLIGHT: scf.for
// IN-FLIGHT: %[[NEXT:.*]]:2 = "wsc.ring_advance"
// IN-FLIGHT: "wsc.mbarrier_wait"(%{{.*}}, %[[NEXT]]#0, %[[NEXT]]#1)
// IN-FLIGHT: "wsc.wgmma_commit_group"
// IN-FLIGHT-NEXT: "wsc.load_shared"(%{{.*}}, %[[NEXT]]#0) {col = 64 : i32, row = 0 : i32, transpose}
// IN-FLIGHT: "wsc.tile_assign"
// IN-FLIGHT-NEXT: "wsc.wgmma_wait_group"() {pending = 1 : i32}
// IN-FLIGHT-NEXT: "wsc.mbarrier_arrive"

// BEFORE-WAIT: error: --warp-specialize: wsc.load_shared is split over the consumer groups only where it reads the K tile's stage of a ring the K loop's copies fill, in the loop's body after its wait on the full barriers
// AFTER-LOOP: error: --warp-specialize: wsc.load_shared is split over the consumer groups only where it reads the K tile's stage of a ring the K loop's copies fill, in the loop's body after its wait on the full barriers

module {
  func.func @matmul(%arg0: memref<?x?xf8E4M3FN>, %arg1: memref<?x?xf8E4M3FN>, %arg2: memref<?x?xf32>, %arg3: memref<?x?xf32>, %arg4: memref<?xf32>) attributes {wsc.num_threads = 128 : i32} {
    %c1 = arith.constant 1 : index
    %dim = memref.dim %arg0, %c1 : memref<?x?xf8E4M3FN>
    %c128 = arith.constant 128 : index
    %0 = arith.ceildivui %dim, %c128 : index
    %1 = "wsc.alloc_shared"() : () -> memref<2x128x128xf8E4M3FN, 3>
    %2 = "wsc.alloc_shared"() : () -> memref<2x64x128xf8E4M3FN, 3>
    %4 = "wsc.alloc_shared"() : () -> memref<2x1x128xf32, 3>
    %3 = "wsc.mbarrier_alloc"() {arrival_count = 1 : i32, num_barriers = 2 : i32} : () -> !wsc.mbarriers
    "wsc.sync"() : () -> ()
    %c0 = arith.constant 0 : index
    %dim_0 = memref.dim %arg0, %c0 : memref<?x?xf8E4M3FN>
    %5 = arith.ceildivui %dim_0, %c128 : index
    %dim_1 = memref.dim %arg2, %c1 : memref<?x?xf32>
    %c64 = arith.constant 64 : index
    %6 = arith.ceildivui %dim_1, %c64 : index
    %block_id_x = gpu.block_id  x
    %block_id_y = gpu.block_id  y
    %7 = arith.muli %block_id_y, %5 : index
    %8 = arith.addi %block_id_x, %7 : index
    %9 = arith.remui %8, %5 : index
    %13 = arith.divui %8, %5 : index
    %10 = arith.muli %9, %c128 : index
    %11 = arith.muli %13, %c64 : index
    %12 = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 128, 64>, f32>
    %false = arith.constant false
    %14:2 = scf.for %arg5 = %c0 to %0 step %c1 iter_args(%arg6 = %c0, %arg7 = %false) -> (index, i1) {
      %15 = arith.muli %arg5, %c128 : index
      %21 = "wsc.elect"() : () -> i1
      scf.if %21 {
        "wsc.mbarrier_arrive_expect_tx"(%3, %arg6) {tx_bytes = 25088 : i32} : (!wsc.mbarriers, index) -> ()
        "wsc.tma_load"(%arg0, %10, %15, %1, %arg6, %3) : (memref<?x?xf8E4M3FN>, index, index, memref<2x128x128xf8E4M3FN, 3>, index, !wsc.mbarriers) -> ()
        "wsc.tma_load"(%arg1, %11, %15, %2, %arg6, %3) : (memref<?x?xf8E4M3FN>, index, index, memref<2x64x128xf8E4M3FN, 3>, index, !wsc.mbarriers) -> ()
        "wsc.tma_load"(%arg3, %arg5, %10, %4, %arg6, %3) : (memref<?x?xf32>, index, index, memref<2x1x128xf32, 3>, index, !wsc.mbarriers) -> ()
      }
      "wsc.mbarrier_wait"(%3, %arg6, %arg7) : (!wsc.mbarriers, index, i1) -> ()
      %sa_row = "wsc.load_shared"(%4, %arg6) {transpose} : (memref<2x1x128xf32, 3>, index) -> !wsc.acc<array<i64: 128, 1>, f32>
      %16 = arith.divui %11, %c128 : index
      %17 = arith.muli %16, %0 : index
      %18 = arith.addi %17, %arg5 : index
      %19 = "wsc.tile_broadcast"(%arg4, %18) {along = "cols"} : (memref<?xf32>, index) -> !wsc.acc<array<i64: 128, 1>, f32>
      %20 = "wsc.tile_binary"(%sa_row, %19) {kind = "mul"} : (!wsc.acc<array<i64: 128, 1>, f32>, !wsc.acc<array<i64: 128, 1>, f32>) -> !wsc.acc<array<i64: 128, 1>, f32>
      "wsc.wgmma_fence"() : () -> ()
      %22 = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 128, 64>, f32>
      "wsc.wgmma"(%1, %2, %arg6, %22) {a_row = 0 : i32, b_layout = "nk"} : (memref<2x128x128xf8E4M3FN, 3>, memref<2x64x128xf8E4M3FN, 3>, index, !wsc.acc<array<i64: 128, 64>, f32>) -> ()
      "wsc.wgmma_commit_group"() : () -> ()
      "wsc.wgmma_wait_group"() {pending = 0 : i32} : () -> ()
      %23 = "wsc.tile_binary"(%22, %20) {kind = "mul"} : (!wsc.acc<array<i64: 128, 64>, f32>, !wsc.acc<array<i64: 128, 1>, f32>) -> !wsc.acc<array<i64: 128, 64>, f32>
      %24 = "wsc.tile_binary"(%12, %23) {kind = "add"} : (!wsc.acc<array<i64: 128, 64>, f32>, !wsc.acc<array<i64: 128, 64>, f32>) -> !wsc.acc<array<i64: 128, 64>, f32>
      "wsc.tile_assign"(%12, %24) : (!wsc.acc<array<i64: 128, 64>, f32>, !wsc.acc<array<i64: 128, 64>, f32>) -> ()
      "wsc.sync"() : () -> ()
      %25:2 = "wsc.ring_advance"(%arg6, %arg7) {num_stages = 2 : i32} : (index, i1) -> (index, i1)
      scf.yield %25#0, %25#1 : index, i1
    }
    "wsc.store"(%12, %arg2, %10, %11) : (!wsc.acc<array<i64: 128, 64>, f32>, memref<?x?xf32>, index, index) -> ()
    return
  }
}
