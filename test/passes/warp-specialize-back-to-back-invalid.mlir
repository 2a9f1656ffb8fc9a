// --warp-specialize refuses K loops of several products it cannot split
// over consumer groups, each at the author's op.
// RUN: wsc-opt --split-input-file --verify-diagnostics --warp-specialize %s

// Accumulators of different rows: the groups split every one by rows.
func.func @accumulators_of_other_rows(%arg0: memref<?x?xf16>, %arg1: memref<?x?xf16>, %arg2: memref<?x?xf16>, %arg3: memref<?x?xf32>) attributes {wsc.num_threads = 128 : i32} {
  %0 = "wsc.alloc_shared"() : () -> memref<2x128x64xf16, 3>
  %1 = "wsc.alloc_shared"() : () -> memref<2x64x64xf16, 3>
  %2 = "wsc.alloc_shared"() : () -> memref<2x64x64xf16, 3>
  %3 = "wsc.mbarrier_alloc"() {arrival_count = 1 : i32, num_barriers = 2 : i32} : () -> !wsc.mbarriers
  "wsc.sync"() : () -> ()
  %block_id_x = gpu.block_id  x
  %c128 = arith.constant 128 : index
  %4 = arith.muli %block_id_x, %c128 : index
  %5 = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 128, 64>, f32>
  // expected-error @below {{--warp-specialize: every accumulator before the K loop must have the same rows (the consumer groups split them)}}
  %extra = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 64, 64>, f32>
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

// -----

// A product accumulating into a register tile no wsc.acc_alloc made.
func.func @accumulating_into_a_cast(%arg0: memref<?x?xf16>, %arg1: memref<?x?xf16>, %arg2: memref<?x?xf16>, %arg3: memref<?x?xf32>) attributes {wsc.num_threads = 128 : i32} {
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
    %h = "wsc.cast"(%5) : (!wsc.acc<array<i64: 128, 64>, f32>) -> !wsc.acc<array<i64: 128, 64>, f32>
    // expected-error @below {{--warp-specialize: every wsc.wgmma_register_a must accumulate into a wsc.acc_alloc of the kernel (before the K loop, or in it for a product of one K tile)}}
    "wsc.wgmma_register_a"(%11, %2, %arg5, %h) {b_layout = "kn"} : (!wsc.acc<array<i64: 128, 64>, f16>, memref<2x64x64xf16, 3>, index, !wsc.acc<array<i64: 128, 64>, f32>) -> ()
    "wsc.wgmma_commit_group"() : () -> ()
    "wsc.wgmma_wait_group"() {pending = 0 : i32} : () -> ()
    "wsc.sync"() : () -> ()
    %12:2 = "wsc.ring_advance"(%arg5, %arg6) {num_stages = 2 : i32} : (index, i1) -> (index, i1)
    scf.yield %12#0, %12#1 : index, i1
  }
  "wsc.store"(%5, %arg3, %4, %c0) : (!wsc.acc<array<i64: 128, 64>, f32>, memref<?x?xf32>, index, index) -> ()
  return
}

// -----

// Q's copy, loaded once before the K loop, elected inside another
// condition: the producer issues it from one elected thread, unconditionally.
func.func @copy_before_the_loop_not_elected(%arg0: memref<?x?xf16>, %arg1: memref<?x?xf16>, %arg2: memref<?x?xf16>, %arg3: memref<?x?xf32>) attributes {wsc.num_threads = 128 : i32} {
  %0 = "wsc.alloc_shared"() : () -> memref<1x128x64xf16, 3>
  %1 = "wsc.alloc_shared"() : () -> memref<2x64x64xf16, 3>
  %2 = "wsc.alloc_shared"() : () -> memref<2x64x64xf16, 3>
  %3 = "wsc.mbarrier_alloc"() {arrival_count = 1 : i32, num_barriers = 1 : i32} : () -> !wsc.mbarriers
  %4 = "wsc.mbarrier_alloc"() {arrival_count = 1 : i32, num_barriers = 2 : i32} : () -> !wsc.mbarriers
  "wsc.sync"() : () -> ()
  %block_id_x = gpu.block_id  x
  %c128 = arith.constant 128 : index
  %5 = arith.muli %block_id_x, %c128 : index
  %6 = arith.cmpi ult, %block_id_x, %c128 : index
  // expected-error @below {{--warp-specialize: copies before the K loop must be issued under a wsc.elect alone; these are elected inside another condition}}
  scf.if %6 {
    %c0_1 = arith.constant 0 : index
    %e = "wsc.elect"() : () -> i1
    scf.if %e {
      "wsc.mbarrier_arrive_expect_tx"(%3, %c0_1) {tx_bytes = 16384 : i32} : (!wsc.mbarriers, index) -> ()
      "wsc.tma_load"(%arg0, %5, %c0_1, %0, %c0_1, %3) : (memref<?x?xf16>, index, index, memref<1x128x64xf16, 3>, index, !wsc.mbarriers) -> ()
    }
  }
  %c0 = arith.constant 0 : index
  %false = arith.constant false
  "wsc.mbarrier_wait"(%3, %c0, %false) : (!wsc.mbarriers, index, i1) -> ()
  %7 = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 128, 64>, f32>
  %dim = memref.dim %arg1, %c0 : memref<?x?xf16>
  %c64 = arith.constant 64 : index
  %8 = arith.ceildivui %dim, %c64 : index
  %false_0 = arith.constant false
  %c1 = arith.constant 1 : index
  %9:2 = scf.for %arg4 = %c0 to %8 step %c1 iter_args(%arg5 = %c0, %arg6 = %false_0) -> (index, i1) {
    %c64_1 = arith.constant 64 : index
    %10 = arith.muli %arg4, %c64_1 : index
    %11 = "wsc.elect"() : () -> i1
    scf.if %11 {
      "wsc.mbarrier_arrive_expect_tx"(%4, %arg5) {tx_bytes = 16384 : i32} : (!wsc.mbarriers, index) -> ()
      "wsc.tma_load"(%arg1, %10, %c0, %1, %arg5, %4) : (memref<?x?xf16>, index, index, memref<2x64x64xf16, 3>, index, !wsc.mbarriers) -> ()
      "wsc.tma_load"(%arg2, %10, %c0, %2, %arg5, %4) : (memref<?x?xf16>, index, index, memref<2x64x64xf16, 3>, index, !wsc.mbarriers) -> ()
    }
    "wsc.mbarrier_wait"(%4, %arg5, %arg6) : (!wsc.mbarriers, index, i1) -> ()
    %12 = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 128, 64>, f32>
    "wsc.wgmma_fence"() : () -> ()
    "wsc.wgmma"(%0, %1, %arg5, %12) {a_row = 0 : i32, a_stage = 0 : i32, b_layout = "nk"} : (memref<1x128x64xf16, 3>, memref<2x64x64xf16, 3>, index, !wsc.acc<array<i64: 128, 64>, f32>) -> ()
    "wsc.wgmma_commit_group"() : () -> ()
    "wsc.wgmma_wait_group"() {pending = 0 : i32} : () -> ()
    %13 = "wsc.cast"(%12) : (!wsc.acc<array<i64: 128, 64>, f32>) -> !wsc.acc<array<i64: 128, 64>, f16>
    "wsc.wgmma_fence"() : () -> ()
    "wsc.wgmma_register_a"(%13, %2, %arg5, %7) {b_layout = "kn"} : (!wsc.acc<array<i64: 128, 64>, f16>, memref<2x64x64xf16, 3>, index, !wsc.acc<array<i64: 128, 64>, f32>) -> ()
    "wsc.wgmma_commit_group"() : () -> ()
    "wsc.wgmma_wait_group"() {pending = 0 : i32} : () -> ()
    "wsc.sync"() : () -> ()
    %14:2 = "wsc.ring_advance"(%arg5, %arg6) {num_stages = 2 : i32} : (index, i1) -> (index, i1)
    scf.yield %14#0, %14#1 : index, i1
  }
  "wsc.store"(%7, %arg3, %5, %c0) : (!wsc.acc<array<i64: 128, 64>, f32>, memref<?x?xf32>, index, index) -> ()
  return
}

// -----

// A wait on the ring's own barriers before the K loop: only the copies
// loaded once have barriers of their own to wait on there.
func.func @waiting_on_the_ring_before_the_loop(%arg0: memref<?x?xf16>, %arg1: memref<?x?xf16>, %arg2: memref<?x?xf16>, %arg3: memref<?x?xf32>) attributes {wsc.num_threads = 128 : i32} {
  %0 = "wsc.alloc_shared"() : () -> memref<1x128x64xf16, 3>
  %1 = "wsc.alloc_shared"() : () -> memref<2x64x64xf16, 3>
  %2 = "wsc.alloc_shared"() : () -> memref<2x64x64xf16, 3>
  %3 = "wsc.mbarrier_alloc"() {arrival_count = 1 : i32, num_barriers = 1 : i32} : () -> !wsc.mbarriers
  %4 = "wsc.mbarrier_alloc"() {arrival_count = 1 : i32, num_barriers = 2 : i32} : () -> !wsc.mbarriers
  "wsc.sync"() : () -> ()
  %block_id_x = gpu.block_id  x
  %c128 = arith.constant 128 : index
  %5 = arith.muli %block_id_x, %c128 : index
  %6 = "wsc.elect"() : () -> i1
  scf.if %6 {
    %c0_1 = arith.constant 0 : index
    "wsc.mbarrier_arrive_expect_tx"(%3, %c0_1) {tx_bytes = 16384 : i32} : (!wsc.mbarriers, index) -> ()
    "wsc.tma_load"(%arg0, %5, %c0_1, %0, %c0_1, %3) : (memref<?x?xf16>, index, index, memref<1x128x64xf16, 3>, index, !wsc.mbarriers) -> ()
  }
  %c0 = arith.constant 0 : index
  %false = arith.constant false
  "wsc.mbarrier_wait"(%3, %c0, %false) : (!wsc.mbarriers, index, i1) -> ()
  // expected-error @below {{--warp-specialize: a wait on the full barriers before the K loop}}
  "wsc.mbarrier_wait"(%4, %c0, %false) : (!wsc.mbarriers, index, i1) -> ()
  %7 = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 128, 64>, f32>
  %dim = memref.dim %arg1, %c0 : memref<?x?xf16>
  %c64 = arith.constant 64 : index
  %8 = arith.ceildivui %dim, %c64 : index
  %false_0 = arith.constant false
  %c1 = arith.constant 1 : index
  %9:2 = scf.for %arg4 = %c0 to %8 step %c1 iter_args(%arg5 = %c0, %arg6 = %false_0) -> (index, i1) {
    %c64_1 = arith.constant 64 : index
    %10 = arith.muli %arg4, %c64_1 : index
    %11 = "wsc.elect"() : () -> i1
    scf.if %11 {
      "wsc.mbarrier_arrive_expect_tx"(%4, %arg5) {tx_bytes = 16384 : i32} : (!wsc.mbarriers, index) -> ()
      "wsc.tma_load"(%arg1, %10, %c0, %1, %arg5, %4) : (memref<?x?xf16>, index, index, memref<2x64x64xf16, 3>, index, !wsc.mbarriers) -> ()
      "wsc.tma_load"(%arg2, %10, %c0, %2, %arg5, %4) : (memref<?x?xf16>, index, index, memref<2x64x64xf16, 3>, index, !wsc.mbarriers) -> ()
    }
    "wsc.mbarrier_wait"(%4, %arg5, %arg6) : (!wsc.mbarriers, index, i1) -> ()
    %12 = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 128, 64>, f32>
    "wsc.wgmma_fence"() : () -> ()
    "wsc.wgmma"(%0, %1, %arg5, %12) {a_row = 0 : i32, a_stage = 0 : i32, b_layout = "nk"} : (memref<1x128x64xf16, 3>, memref<2x64x64xf16, 3>, index, !wsc.acc<array<i64: 128, 64>, f32>) -> ()
    "wsc.wgmma_commit_group"() : () -> ()
    "wsc.wgmma_wait_group"() {pending = 0 : i32} : () -> ()
    %13 = "wsc.cast"(%12) : (!wsc.acc<array<i64: 128, 64>, f32>) -> !wsc.acc<array<i64: 128, 64>, f16>
    "wsc.wgmma_fence"() : () -> ()
    "wsc.wgmma_register_a"(%13, %2, %arg5, %7) {b_layout = "kn"} : (!wsc.acc<array<i64: 128, 64>, f16>, memref<2x64x64xf16, 3>, index, !wsc.acc<array<i64: 128, 64>, f32>) -> ()
    "wsc.wgmma_commit_group"() : () -> ()
    "wsc.wgmma_wait_group"() {pending = 0 : i32} : () -> ()
    "wsc.sync"() : () -> ()
    %14:2 = "wsc.ring_advance"(%arg5, %arg6) {num_stages = 2 : i32} : (index, i1) -> (index, i1)
    scf.yield %14#0, %14#1 : index, i1
  }
  "wsc.store"(%7, %arg3, %5, %c0) : (!wsc.acc<array<i64: 128, 64>, f32>, memref<?x?xf32>, index, index) -> ()
  return
}

// -----

// A store of an accumulator before the K loop: before the loop the groups
// only set up their register tiles (register-tile math, wsc.tile_assign).
func.func @store_before_the_loop(%arg0: memref<?x?xf16>, %arg1: memref<?x?xf16>, %arg2: memref<?x?xf16>, %arg3: memref<?x?xf32>) attributes {wsc.num_threads = 128 : i32} {
  %0 = "wsc.alloc_shared"() : () -> memref<1x128x64xf16, 3>
  %1 = "wsc.alloc_shared"() : () -> memref<2x64x64xf16, 3>
  %2 = "wsc.alloc_shared"() : () -> memref<2x64x64xf16, 3>
  %3 = "wsc.mbarrier_alloc"() {arrival_count = 1 : i32, num_barriers = 1 : i32} : () -> !wsc.mbarriers
  %4 = "wsc.mbarrier_alloc"() {arrival_count = 1 : i32, num_barriers = 2 : i32} : () -> !wsc.mbarriers
  "wsc.sync"() : () -> ()
  %block_id_x = gpu.block_id  x
  %c128 = arith.constant 128 : index
  %5 = arith.muli %block_id_x, %c128 : index
  %6 = "wsc.elect"() : () -> i1
  scf.if %6 {
    %c0_1 = arith.constant 0 : index
    "wsc.mbarrier_arrive_expect_tx"(%3, %c0_1) {tx_bytes = 16384 : i32} : (!wsc.mbarriers, index) -> ()
    "wsc.tma_load"(%arg0, %5, %c0_1, %0, %c0_1, %3) : (memref<?x?xf16>, index, index, memref<1x128x64xf16, 3>, index, !wsc.mbarriers) -> ()
  }
  %c0 = arith.constant 0 : index
  %false = arith.constant false
  "wsc.mbarrier_wait"(%3, %c0, %false) : (!wsc.mbarriers, index, i1) -> ()
  %7 = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 128, 64>, f32>
  // expected-error @below {{--warp-specialize: before the K loop a register tile may only be used by register-tile math, not by 'wsc.store'}}
  "wsc.store"(%7, %arg3, %5, %c0) : (!wsc.acc<array<i64: 128, 64>, f32>, memref<?x?xf32>, index, index) -> ()
  %dim = memref.dim %arg1, %c0 : memref<?x?xf16>
  %c64 = arith.constant 64 : index
  %8 = arith.ceildivui %dim, %c64 : index
  %false_0 = arith.constant false
  %c1 = arith.constant 1 : index
  %9:2 = scf.for %arg4 = %c0 to %8 step %c1 iter_args(%arg5 = %c0, %arg6 = %false_0) -> (index, i1) {
    %c64_1 = arith.constant 64 : index
    %10 = arith.muli %arg4, %c64_1 : index
    %11 = "wsc.elect"() : () -> i1
    scf.if %11 {
      "wsc.mbarrier_arrive_expect_tx"(%4, %arg5) {tx_bytes = 16384 : i32} : (!wsc.mbarriers, index) -> ()
      "wsc.tma_load"(%arg1, %10, %c0, %1, %arg5, %4) : (memref<?x?xf16>, index, index, memref<2x64x64xf16, 3>, index, !wsc.mbarriers) -> ()
      "wsc.tma_load"(%arg2, %10, %c0, %2, %arg5, %4) : (memref<?x?xf16>, index, index, memref<2x64x64xf16, 3>, index, !wsc.mbarriers) -> ()
    }
    "wsc.mbarrier_wait"(%4, %arg5, %arg6) : (!wsc.mbarriers, index, i1) -> ()
    %12 = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 128, 64>, f32>
    "wsc.wgmma_fence"() : () -> ()
    "wsc.wgmma"(%0, %1, %arg5, %12) {a_row = 0 : i32, a_stage = 0 : i32, b_layout = "nk"} : (memref<1x128x64xf16, 3>, memref<2x64x64xf16, 3>, index, !wsc.acc<array<i64: 128, 64>, f32>) -> ()
    "wsc.wgmma_commit_group"() : () -> ()
    "wsc.wgmma_wait_group"() {pending = 0 : i32} : () -> ()
    %13 = "wsc.cast"(%12) : (!wsc.acc<array<i64: 128, 64>, f32>) -> !wsc.acc<array<i64: 128, 64>, f16>
    "wsc.wgmma_fence"() : () -> ()
    "wsc.wgmma_register_a"(%13, %2, %arg5, %7) {b_layout = "kn"} : (!wsc.acc<array<i64: 128, 64>, f16>, memref<2x64x64xf16, 3>, index, !wsc.acc<array<i64: 128, 64>, f32>) -> ()
    "wsc.wgmma_commit_group"() : () -> ()
    "wsc.wgmma_wait_group"() {pending = 0 : i32} : () -> ()
    "wsc.sync"() : () -> ()
    %14:2 = "wsc.ring_advance"(%arg5, %arg6) {num_stages = 2 : i32} : (index, i1) -> (index, i1)
    scf.yield %14#0, %14#1 : index, i1
  }
  "wsc.store"(%7, %arg3, %5, %c0) : (!wsc.acc<array<i64: 128, 64>, f32>, memref<?x?xf32>, index, index) -> ()
  return
}
