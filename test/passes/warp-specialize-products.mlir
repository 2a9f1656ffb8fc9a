// --warp-specialize='wgmma-in-flight=1' on a K loop whose WGMMA group writes a
// product of one K tile that register math then reads (block-scaled fp8, as
// wsc.kernels.matmul.build makes it: acc += product * scale per K tile). Each
// group gets two slots, used by the K tiles in turn, of an uninitialized
// product tile and a tile for the K tile's scales; the loop takes two K tiles
// per trip and issues K tile j + 1's WGMMAs (scale-d = 0: `overwrite`) and
// scale loads before K tile j's math, after which wait_group 1 retires K tile
// j's group and its stage is released. The first K tile is issued before the
// loop, the last one or two after it, every path under the k_tiles > 0 guard.
// RUN: wsc-opt --warp-specialize='num-consumer-groups=2 producer=warpgroup wgmma-in-flight=1' --verify-pipeline %s | FileCheck %s
// Its stages stay run-time: --unroll-ring-buffer where-possible leaves it as it is.
// RUN: wsc-opt --warp-specialize='num-consumer-groups=2 producer=warpgroup wgmma-in-flight=1' --unroll-ring-buffer='where-possible=true' %s | FileCheck %s
// Refused: math reading the accumulator the in-flight group writes (not a
// product of one K tile), wgmma-turns beside it, and --unroll-ring-buffer on
// the loop of two K tiles per trip.
// RUN: sed 's/%arg6, %22) {a_row/%arg6, %12) {a_row/' %s | not wsc-opt --warp-specialize='num-consumer-groups=2 producer=warpgroup wgmma-in-flight=1' - 2>&1 | FileCheck %s --check-prefix=ACCUMULATOR
// RUN: not wsc-opt --warp-specialize='num-consumer-groups=2 producer=warpgroup wgmma-in-flight=1 wgmma-turns=1' %s 2>&1 | FileCheck %s --check-prefix=TURNS
// The same loop in f16 with the product made by a wsc.wgmma_register_a (A from
// registers), which cannot overwrite it: refused too.
// RUN: sed -e 's/f8E4M3FN/f16/g' -e 's/"wsc.wgmma"(%%1, %%2, %%arg6, %%22) {a_row = 0 : i32, b_layout = "nk"} : (memref<2x128x128xf16, 3>,/"wsc.wgmma_register_a"(%%a_regs, %%2, %%arg6, %%22) {b_layout = "nk"} : (!wsc.acc<array<i64: 128, 128>, f16>,/' -e 's/^    %%false = arith.constant false/    %%a_regs = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 128, 128>, f16>\n&/' %s | not wsc-opt --warp-specialize='num-consumer-groups=2 producer=warpgroup wgmma-in-flight=1' - 2>&1 | FileCheck %s --check-prefix=REGISTER-A
// RUN: not wsc-opt --warp-specialize='num-consumer-groups=2 producer=warpgroup wgmma-in-flight=1' --unroll-ring-buffer %s 2>&1 | FileCheck %s --check-prefix=UNROLL

// The group's sum, then its two slots: a product tile and the scales' tile.
// CHECK: "wsc.role"() {{.*}}role = "consumer", thread_begin = 0
// CHECK-NEXT: scf.if
// CHECK-NEXT: %[[SUM:.*]] = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 64, 64>, f32>
// CHECK: %[[P0:.*]] = "wsc.acc_alloc"() {uninitialized} : () -> !wsc.acc<array<i64: 64, 64>, f32>
// CHECK-NEXT: %[[S0:.*]] = "wsc.acc_alloc"() {uninitialized} : () -> !wsc.acc<array<i64: 64, 1>, f32>
// CHECK-NEXT: %[[P1:.*]] = "wsc.acc_alloc"() {uninitialized} : () -> !wsc.acc<array<i64: 64, 64>, f32>
// CHECK-NEXT: %[[S1:.*]] = "wsc.acc_alloc"() {uninitialized} : () -> !wsc.acc<array<i64: 64, 1>, f32>
// K tile 0's WGMMAs and scales, before the loop.
// CHECK: scf.if %{{.*}} -> (index, i1)
// CHECK-NEXT: "wsc.mbarrier_wait"
// CHECK-NEXT: "wsc.wgmma_fence"
// CHECK-NEXT: "wsc.wgmma"({{.*}}, %[[P0]]) {a_row = 0 : i32, b_layout = "nk", overwrite}
// CHECK-NEXT: "wsc.wgmma_commit_group"
// CHECK: "wsc.tile_load"
// CHECK: "wsc.tile_assign"(%[[S0]],
// The loop: K tile j + 1's WGMMAs into P1 and its scales into S1, the wait
// that retires K tile j, its stage's release and its math on P0 and S0; then
// the same with the slots swapped.
// CHECK: scf.for %{{.*}} iter_args(%[[STAGE:.*]] = %{{.*}}, %{{.*}} = %{{.*}})
// CHECK: %[[NEXT:.*]]:2 = "wsc.ring_advance"(%[[STAGE]]
// CHECK: "wsc.mbarrier_wait"(%{{.*}}, %[[NEXT]]#0, %[[NEXT]]#1)
// CHECK-NEXT: "wsc.wgmma_fence"
// CHECK-NEXT: "wsc.wgmma"({{.*}}, %[[NEXT]]#0, %[[P1]]) {{{.*}}overwrite}
// CHECK-NEXT: "wsc.wgmma_commit_group"
// CHECK: "wsc.tile_load"
// CHECK: "wsc.tile_assign"(%[[S1]],
// CHECK-NEXT: "wsc.wgmma_wait_group"() {pending = 1 : i32}
// CHECK-NEXT: "wsc.mbarrier_arrive"(%{{.*}}, %[[STAGE]])
// CHECK-NEXT: "wsc.tile_binary"(%[[P0]], %[[S0]])
// CHECK: "wsc.tile_assign"(%[[SUM]],
// CHECK: "wsc.wgmma"({{.*}}, %[[P0]]) {{{.*}}overwrite}
// CHECK: "wsc.tile_assign"(%[[S0]],
// CHECK-NEXT: "wsc.wgmma_wait_group"() {pending = 1 : i32}
// CHECK-NEXT: "wsc.mbarrier_arrive"(%{{.*}}, %[[NEXT]]#0)
// CHECK-NEXT: "wsc.tile_binary"(%[[P1]], %[[S1]])
// CHECK: scf.yield
// The last two K tiles, or the last one: wait_group 0 before the last math.
// CHECK: scf.if %{{.*}} -> (index, i1)
// CHECK: "wsc.wgmma_wait_group"() {pending = 1 : i32}
// CHECK: "wsc.wgmma_wait_group"() {pending = 0 : i32}
// CHECK-NEXT: "wsc.mbarrier_arrive"
// CHECK-NEXT: "wsc.tile_binary"(%[[P1]], %[[S1]])
// CHECK: } else {
// CHECK-NEXT: "wsc.wgmma_wait_group"() {pending = 0 : i32}
// CHECK-NEXT: "wsc.mbarrier_arrive"
// CHECK-NEXT: "wsc.tile_binary"(%[[P0]], %[[S0]])
// The epilogue stores the sum.
// CHECK: "wsc.store"(%[[SUM]],

// ACCUMULATOR: error: --warp-specialize: wgmma-in-flight = 1 leaves the K tile's WGMMA group in flight past its wait, but 'wsc.tile_binary' reads a tile the group writes
// REGISTER-A: error: --warp-specialize: wgmma-in-flight = 1 with a product of one K tile needs wsc.wgmma into it
// TURNS: error: --warp-specialize: wgmma-turns = 1 with wgmma-in-flight = 1 and a product of one K tile is not supported
// UNROLL: error: --unroll-ring-buffer: a ring loop must carry exactly (stage, phase)

module {
  func.func @matmul(%arg0: memref<?x?xf8E4M3FN>, %arg1: memref<?x?xf8E4M3FN>, %arg2: memref<?x?xf32>, %arg3: memref<?x?xf32>, %arg4: memref<?xf32>) attributes {wsc.num_threads = 128 : i32} {
    %c1 = arith.constant 1 : index
    %dim = memref.dim %arg0, %c1 : memref<?x?xf8E4M3FN>
    %c128 = arith.constant 128 : index
    %0 = arith.ceildivui %dim, %c128 : index
    %1 = "wsc.alloc_shared"() : () -> memref<2x128x128xf8E4M3FN, 3>
    %2 = "wsc.alloc_shared"() : () -> memref<2x64x128xf8E4M3FN, 3>
    %3 = "wsc.mbarrier_alloc"() {arrival_count = 1 : i32, num_barriers = 2 : i32} : () -> !wsc.mbarriers
    "wsc.sync"() : () -> ()
    %c0 = arith.constant 0 : index
    %dim_0 = memref.dim %arg0, %c0 : memref<?x?xf8E4M3FN>
    %4 = arith.ceildivui %dim_0, %c128 : index
    %dim_1 = memref.dim %arg2, %c1 : memref<?x?xf32>
    %c64 = arith.constant 64 : index
    %5 = arith.ceildivui %dim_1, %c64 : index
    %block_id_x = gpu.block_id  x
    %block_id_y = gpu.block_id  y
    %6 = arith.muli %block_id_y, %4 : index
    %7 = arith.addi %block_id_x, %6 : index
    %8 = arith.remui %7, %4 : index
    %9 = arith.divui %7, %4 : index
    %10 = arith.muli %8, %c128 : index
    %11 = arith.muli %9, %c64 : index
    %12 = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 128, 64>, f32>
    %false = arith.constant false
    %13:2 = scf.for %arg5 = %c0 to %0 step %c1 iter_args(%arg6 = %c0, %arg7 = %false) -> (index, i1) {
      %14 = arith.muli %arg5, %c128 : index
      %15 = "wsc.tile_load"(%arg3, %10, %arg5) : (memref<?x?xf32>, index, index) -> !wsc.acc<array<i64: 128, 1>, f32>
      %16 = arith.divui %11, %c128 : index
      %17 = arith.muli %16, %0 : index
      %18 = arith.addi %17, %arg5 : index
      %19 = "wsc.tile_broadcast"(%arg4, %18) {along = "cols"} : (memref<?xf32>, index) -> !wsc.acc<array<i64: 128, 1>, f32>
      %20 = "wsc.tile_binary"(%15, %19) {kind = "mul"} : (!wsc.acc<array<i64: 128, 1>, f32>, !wsc.acc<array<i64: 128, 1>, f32>) -> !wsc.acc<array<i64: 128, 1>, f32>
      %21 = "wsc.elect"() : () -> i1
      scf.if %21 {
        "wsc.mbarrier_arrive_expect_tx"(%3, %arg6) {tx_bytes = 24576 : i32} : (!wsc.mbarriers, index) -> ()
        "wsc.tma_load"(%arg0, %10, %14, %1, %arg6, %3) : (memref<?x?xf8E4M3FN>, index, index, memref<2x128x128xf8E4M3FN, 3>, index, !wsc.mbarriers) -> ()
        "wsc.tma_load"(%arg1, %11, %14, %2, %arg6, %3) : (memref<?x?xf8E4M3FN>, index, index, memref<2x64x128xf8E4M3FN, 3>, index, !wsc.mbarriers) -> ()
      }
      "wsc.mbarrier_wait"(%3, %arg6, %arg7) : (!wsc.mbarriers, index, i1) -> ()
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

