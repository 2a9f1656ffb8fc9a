// Planted register races in block-scaled fp8 K loops (the kernel of
// wsc.kernels.matmul.build in its V2 form, changed by hand): --verify-pipeline
// reports each at the op that touches a register tile a WGMMA group still in
// flight writes.
// RUN: wsc-opt --split-input-file --verify-diagnostics --verify-pipeline %s

// The K tile's product read after a wait that leaves its group in flight
// (what --warp-specialize='wgmma-in-flight=1' made of this loop before it took
// two product tiles).
module {
  func.func @product_read_in_flight(%arg0: memref<?x?xf8E4M3FN>, %arg1: memref<?x?xf8E4M3FN>, %arg2: memref<?x?xf32>, %arg3: memref<?x?xf32>, %arg4: memref<?xf32>) attributes {wsc.num_threads = 128 : i32} {
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
      // expected-note @+1 {{the register tile is made here}}
      %22 = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 128, 64>, f32>
      "wsc.wgmma"(%1, %2, %arg6, %22) {a_row = 0 : i32, b_layout = "nk"} : (memref<2x128x128xf8E4M3FN, 3>, memref<2x64x128xf8E4M3FN, 3>, index, !wsc.acc<array<i64: 128, 64>, f32>) -> ()
      "wsc.wgmma_commit_group"() : () -> ()
      "wsc.wgmma_wait_group"() {pending = 1 : i32} : () -> ()
      // expected-error @+1 {{wsc.tile_binary reads the 128x64 f32 register tile while a WGMMA group that writes it is in flight}}
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


// -----

// The sum written while the WGMMA group accumulating into it is in flight (no
// wait before the math).
module {
  func.func @sum_written_in_flight(%arg0: memref<?x?xf8E4M3FN>, %arg1: memref<?x?xf8E4M3FN>, %arg2: memref<?x?xf32>, %arg3: memref<?x?xf32>, %arg4: memref<?xf32>) attributes {wsc.num_threads = 128 : i32} {
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
    // expected-note @+1 {{the register tile is made here}}
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
      "wsc.wgmma"(%1, %2, %arg6, %12) {a_row = 0 : i32, b_layout = "nk"} : (memref<2x128x128xf8E4M3FN, 3>, memref<2x64x128xf8E4M3FN, 3>, index, !wsc.acc<array<i64: 128, 64>, f32>) -> ()
      "wsc.wgmma_commit_group"() : () -> ()
      %23 = "wsc.tile_binary"(%22, %20) {kind = "mul"} : (!wsc.acc<array<i64: 128, 64>, f32>, !wsc.acc<array<i64: 128, 1>, f32>) -> !wsc.acc<array<i64: 128, 64>, f32>
      // expected-error @+1 {{wsc.tile_assign writes the 128x64 f32 register tile while a WGMMA group that writes it is in flight}}
      "wsc.tile_assign"(%12, %23) : (!wsc.acc<array<i64: 128, 64>, f32>, !wsc.acc<array<i64: 128, 64>, f32>) -> ()
      "wsc.sync"() : () -> ()
      %25:2 = "wsc.ring_advance"(%arg6, %arg7) {num_stages = 2 : i32} : (index, i1) -> (index, i1)
      scf.yield %25#0, %25#1 : index, i1
    }
    "wsc.store"(%12, %arg2, %10, %11) : (!wsc.acc<array<i64: 128, 64>, f32>, memref<?x?xf32>, index, index) -> ()
    return
  }
}

