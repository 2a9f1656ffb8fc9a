// Planted bugs that depend on which copies land first, on the dim a loop
// streams, and on what a staged epilogue stores: --verify-pipeline reports
// each at the op that shows it.
// RUN: wsc-opt --split-input-file --verify-diagnostics --verify-pipeline %s

// The back-to-back kernel's loop streams the rows of K and V (dim 0 of
// each), not the WGMMA's K: the producer here refills their stages with no
// wait on the empty barriers, a lost tile once the ring wraps.
module {
  func.func @back_to_back(%arg0: memref<?x?xf16>, %arg1: memref<?x?xf16>, %arg2: memref<?x?xf16>, %arg3: memref<?x?xf32>) attributes {wsc.num_threads = 384 : i32} {
    %0 = "wsc.alloc_shared"() : () -> memref<1x128x64xf16, 3>
    %1 = "wsc.alloc_shared"() : () -> memref<4x128x64xf16, 3>
    %2 = "wsc.alloc_shared"() : () -> memref<4x128x64xf16, 3>
    %3 = "wsc.mbarrier_alloc"() {arrival_count = 1 : i32, num_barriers = 1 : i32} : () -> !wsc.mbarriers
    %4 = "wsc.mbarrier_alloc"() {arrival_count = 1 : i32, num_barriers = 4 : i32} : () -> !wsc.mbarriers
    %5 = "wsc.mbarrier_alloc"() {arrival_count = 256 : i32, num_barriers = 4 : i32} : () -> !wsc.mbarriers
    "wsc.sync"() : () -> ()
    %block_id_x = gpu.block_id  x
    %c128 = arith.constant 128 : index
    %6 = arith.muli %block_id_x, %c128 : index
    %c0 = arith.constant 0 : index
    %dim = memref.dim %arg1, %c0 : memref<?x?xf16>
    %7 = arith.ceildivui %dim, %c128 : index
    %8 = arith.muli %7, %c0 : index
    %false = arith.constant false
    %9 = arith.subi %7, %8 : index
    %false_0 = arith.constant false
    %c1 = arith.constant 1 : index
    %c0_1 = arith.constant 0 : index
    %10 = "wsc.role"() {max_registers = 232 : i32, num_threads = 128 : i32, role = "consumer", thread_begin = 0 : i32} : () -> i1
    scf.if %10 {
      "wsc.mbarrier_wait"(%3, %c0, %false) : (!wsc.mbarriers, index, i1) -> ()
      %13 = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 64, 64>, f32>
      %false_2 = arith.constant false
      %14:2 = scf.for %arg4 = %c0 to %9 step %c1 iter_args(%arg5 = %c0_1, %arg6 = %false_2) -> (index, i1) {
        "wsc.mbarrier_wait"(%4, %arg5, %arg6) : (!wsc.mbarriers, index, i1) -> ()
        %15 = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 64, 128>, f32>
        "wsc.wgmma_fence"() : () -> ()
        "wsc.wgmma"(%0, %1, %arg5, %15) {a_row = 0 : i32, a_stage = 0 : i32, b_layout = "nk"} : (memref<1x128x64xf16, 3>, memref<4x128x64xf16, 3>, index, !wsc.acc<array<i64: 64, 128>, f32>) -> ()
        "wsc.wgmma_commit_group"() : () -> ()
        "wsc.wgmma_wait_group"() {pending = 0 : i32} : () -> ()
        %16 = "wsc.cast"(%15) : (!wsc.acc<array<i64: 64, 128>, f32>) -> !wsc.acc<array<i64: 64, 128>, f16>
        "wsc.wgmma_fence"() : () -> ()
        "wsc.wgmma_register_a"(%16, %2, %arg5, %13) {b_layout = "kn"} : (!wsc.acc<array<i64: 64, 128>, f16>, memref<4x128x64xf16, 3>, index, !wsc.acc<array<i64: 64, 64>, f32>) -> ()
        "wsc.wgmma_commit_group"() : () -> ()
        "wsc.wgmma_wait_group"() {pending = 0 : i32} : () -> ()
        "wsc.mbarrier_arrive"(%5, %arg5) : (!wsc.mbarriers, index) -> ()
        %17:2 = "wsc.ring_advance"(%arg5, %arg6) {num_stages = 4 : i32} : (index, i1) -> (index, i1)
        scf.yield %17#0, %17#1 : index, i1
      }
      "wsc.store"(%13, %arg3, %6, %c0) : (!wsc.acc<array<i64: 64, 64>, f32>, memref<?x?xf32>, index, index) -> ()
    }
    %11 = "wsc.role"() {max_registers = 232 : i32, num_threads = 128 : i32, role = "consumer", thread_begin = 128 : i32} : () -> i1
    scf.if %11 {
      "wsc.mbarrier_wait"(%3, %c0, %false) : (!wsc.mbarriers, index, i1) -> ()
      %13 = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 64, 64>, f32>
      %false_2 = arith.constant false
      %14:2 = scf.for %arg4 = %c0 to %9 step %c1 iter_args(%arg5 = %c0_1, %arg6 = %false_2) -> (index, i1) {
        "wsc.mbarrier_wait"(%4, %arg5, %arg6) : (!wsc.mbarriers, index, i1) -> ()
        %16 = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 64, 128>, f32>
        "wsc.wgmma_fence"() : () -> ()
        "wsc.wgmma"(%0, %1, %arg5, %16) {a_row = 64 : i32, a_stage = 0 : i32, b_layout = "nk"} : (memref<1x128x64xf16, 3>, memref<4x128x64xf16, 3>, index, !wsc.acc<array<i64: 64, 128>, f32>) -> ()
        "wsc.wgmma_commit_group"() : () -> ()
        "wsc.wgmma_wait_group"() {pending = 0 : i32} : () -> ()
        %17 = "wsc.cast"(%16) : (!wsc.acc<array<i64: 64, 128>, f32>) -> !wsc.acc<array<i64: 64, 128>, f16>
        "wsc.wgmma_fence"() : () -> ()
        "wsc.wgmma_register_a"(%17, %2, %arg5, %13) {b_layout = "kn"} : (!wsc.acc<array<i64: 64, 128>, f16>, memref<4x128x64xf16, 3>, index, !wsc.acc<array<i64: 64, 64>, f32>) -> ()
        "wsc.wgmma_commit_group"() : () -> ()
        "wsc.wgmma_wait_group"() {pending = 0 : i32} : () -> ()
        "wsc.mbarrier_arrive"(%5, %arg5) : (!wsc.mbarriers, index) -> ()
        %18:2 = "wsc.ring_advance"(%arg5, %arg6) {num_stages = 4 : i32} : (index, i1) -> (index, i1)
        scf.yield %18#0, %18#1 : index, i1
      }
      %c64 = arith.constant 64 : index
      %15 = arith.addi %6, %c64 : index
      "wsc.store"(%13, %arg3, %15, %c0) : (!wsc.acc<array<i64: 64, 64>, f32>, memref<?x?xf32>, index, index) -> ()
    }
    %12 = "wsc.role"() {max_registers = 40 : i32, num_threads = 128 : i32, role = "producer", thread_begin = 256 : i32} : () -> i1
    scf.if %12 {
      %13 = "wsc.elect"() : () -> i1
      scf.if %13 {
        "wsc.mbarrier_arrive_expect_tx"(%3, %c0) {tx_bytes = 16384 : i32} : (!wsc.mbarriers, index) -> ()
        "wsc.tma_load"(%arg0, %6, %c0, %0, %c0, %3) : (memref<?x?xf16>, index, index, memref<1x128x64xf16, 3>, index, !wsc.mbarriers) -> ()
      }
      %true = arith.constant true
      %14:2 = scf.for %arg4 = %c0 to %9 step %c1 iter_args(%arg5 = %c0_1, %arg6 = %true) -> (index, i1) {
        %16 = arith.addi %8, %arg4 : index
        %17 = arith.muli %16, %c128 : index
        %18 = "wsc.elect"() : () -> i1
        scf.if %18 {
          "wsc.mbarrier_arrive_expect_tx"(%4, %arg5) {tx_bytes = 32768 : i32} : (!wsc.mbarriers, index) -> ()
          // expected-error @below {{B stage 0 overwritten before the consumer role [0, 128) read its previous copy (lost tile) (k_tiles = 5, num_stages = 4)}}
          "wsc.tma_load"(%arg1, %17, %c0, %1, %arg5, %4) : (memref<?x?xf16>, index, index, memref<4x128x64xf16, 3>, index, !wsc.mbarriers) -> ()
          "wsc.tma_load"(%arg2, %17, %c0, %2, %arg5, %4) : (memref<?x?xf16>, index, index, memref<4x128x64xf16, 3>, index, !wsc.mbarriers) -> ()
        }
        %19:2 = "wsc.ring_advance"(%arg5, %arg6) {num_stages = 4 : i32} : (index, i1) -> (index, i1)
        scf.yield %19#0, %19#1 : index, i1
      }
      %c4 = arith.constant 4 : index
      %c0_2 = arith.constant 0 : index
      %c1_3 = arith.constant 1 : index
      %15:2 = scf.for %arg4 = %c0_2 to %c4 step %c1_3 iter_args(%arg5 = %14#0, %arg6 = %14#1) -> (index, i1) {
        %16 = arith.addi %arg4, %9 : index
        %17 = arith.cmpi uge, %16, %c4 : index
        scf.if %17 {
          "wsc.mbarrier_wait"(%5, %arg5, %arg6) : (!wsc.mbarriers, index, i1) -> ()
        }
        %18:2 = "wsc.ring_advance"(%arg5, %arg6) {num_stages = 4 : i32} : (index, i1) -> (index, i1)
        scf.yield %18#0, %18#1 : index, i1
      }
    }
    return
  }
}

// -----

// Attention: consumer group 1 reads Q with its WGMMA without waiting on
// Q's full barrier; only group 0's wait covers the copy.
module {
  func.func @attention(%arg0: memref<?x?xf16>, %arg1: memref<?x?xf16>, %arg2: memref<?x?xf16>, %arg3: memref<?x?xf16>) attributes {wsc.num_threads = 384 : i32} {
    %0 = "wsc.alloc_shared"() : () -> memref<1x128x64xf16, 3>
    %1 = "wsc.alloc_shared"() : () -> memref<2x128x64xf16, 3>
    %2 = "wsc.alloc_shared"() : () -> memref<2x128x64xf16, 3>
    %3 = "wsc.mbarrier_alloc"() {arrival_count = 1 : i32, num_barriers = 1 : i32} : () -> !wsc.mbarriers
    %4 = "wsc.mbarrier_alloc"() {arrival_count = 1 : i32, num_barriers = 2 : i32} : () -> !wsc.mbarriers
    %5 = "wsc.mbarrier_alloc"() {arrival_count = 256 : i32, num_barriers = 2 : i32} : () -> !wsc.mbarriers
    "wsc.sync"() : () -> ()
    %block_id_x = gpu.block_id  x
    %c128 = arith.constant 128 : index
    %6 = arith.muli %block_id_x, %c128 : index
    %c0 = arith.constant 0 : index
    %dim = memref.dim %arg1, %c0 : memref<?x?xf16>
    %false = arith.constant false
    %7 = arith.ceildivui %dim, %c128 : index
    %false_0 = arith.constant false
    %c1 = arith.constant 1 : index
    %c0_1 = arith.constant 0 : index
    %8 = "wsc.role"() {max_registers = 232 : i32, num_threads = 128 : i32, role = "consumer", thread_begin = 0 : i32} : () -> i1
    scf.if %8 {
      "wsc.mbarrier_wait"(%3, %c0, %false) : (!wsc.mbarriers, index, i1) -> ()
      %11 = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 64, 64>, f32>
      %12 = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 64, 1>, f32>
      %13 = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 64, 1>, f32>
      %14 = "wsc.tile_fill"() {value = 1.000000e+30 : f32} : () -> !wsc.acc<array<i64: 64, 1>, f32>
      %15 = "wsc.tile_binary"(%12, %14) {kind = "sub"} : (!wsc.acc<array<i64: 64, 1>, f32>, !wsc.acc<array<i64: 64, 1>, f32>) -> !wsc.acc<array<i64: 64, 1>, f32>
      "wsc.tile_assign"(%12, %15) : (!wsc.acc<array<i64: 64, 1>, f32>, !wsc.acc<array<i64: 64, 1>, f32>) -> ()
      %16 = "wsc.tile_iota"(%dim) {along = "cols"} : (index) -> !wsc.acc<array<i64: 64, 1>, f32>
      %false_2 = arith.constant false
      %17:2 = scf.for %arg4 = %c0 to %7 step %c1 iter_args(%arg5 = %c0_1, %arg6 = %false_2) -> (index, i1) {
        %c128_3 = arith.constant 128 : index
        %23 = arith.muli %arg4, %c128_3 : index
        "wsc.mbarrier_wait"(%4, %arg5, %arg6) : (!wsc.mbarriers, index, i1) -> ()
        %24 = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 64, 128>, f32>
        "wsc.wgmma_fence"() : () -> ()
        "wsc.wgmma"(%0, %1, %arg5, %24) {a_row = 0 : i32, a_stage = 0 : i32, b_layout = "nk"} : (memref<1x128x64xf16, 3>, memref<2x128x64xf16, 3>, index, !wsc.acc<array<i64: 64, 128>, f32>) -> ()
        "wsc.wgmma_commit_group"() : () -> ()
        "wsc.wgmma_wait_group"() {pending = 0 : i32} : () -> ()
        %25 = "wsc.tile_iota"(%23) {along = "cols"} : (index) -> !wsc.acc<array<i64: 64, 128>, f32>
        %26 = "wsc.tile_fill"() {value = 0.180336878 : f32} : () -> !wsc.acc<array<i64: 64, 128>, f32>
        %27 = "wsc.tile_binary"(%24, %26) {kind = "mul"} : (!wsc.acc<array<i64: 64, 128>, f32>, !wsc.acc<array<i64: 64, 128>, f32>) -> !wsc.acc<array<i64: 64, 128>, f32>
        %28 = "wsc.tile_fill"() {value = -1.000000e+30 : f32} : () -> !wsc.acc<array<i64: 64, 128>, f32>
        %29 = "wsc.tile_select"(%25, %16, %27, %28) {predicate = "lt"} : (!wsc.acc<array<i64: 64, 128>, f32>, !wsc.acc<array<i64: 64, 1>, f32>, !wsc.acc<array<i64: 64, 128>, f32>, !wsc.acc<array<i64: 64, 128>, f32>) -> !wsc.acc<array<i64: 64, 128>, f32>
        %30 = "wsc.tile_row_reduce"(%29) {kind = "max"} : (!wsc.acc<array<i64: 64, 128>, f32>) -> !wsc.acc<array<i64: 64, 1>, f32>
        %31 = "wsc.tile_binary"(%12, %30) {kind = "max"} : (!wsc.acc<array<i64: 64, 1>, f32>, !wsc.acc<array<i64: 64, 1>, f32>) -> !wsc.acc<array<i64: 64, 1>, f32>
        %32 = "wsc.tile_binary"(%29, %31) {kind = "sub"} : (!wsc.acc<array<i64: 64, 128>, f32>, !wsc.acc<array<i64: 64, 1>, f32>) -> !wsc.acc<array<i64: 64, 128>, f32>
        %33 = "wsc.tile_unary"(%32) {kind = "exp2"} : (!wsc.acc<array<i64: 64, 128>, f32>) -> !wsc.acc<array<i64: 64, 128>, f32>
        %34 = "wsc.tile_binary"(%12, %31) {kind = "sub"} : (!wsc.acc<array<i64: 64, 1>, f32>, !wsc.acc<array<i64: 64, 1>, f32>) -> !wsc.acc<array<i64: 64, 1>, f32>
        %35 = "wsc.tile_unary"(%34) {kind = "exp2"} : (!wsc.acc<array<i64: 64, 1>, f32>) -> !wsc.acc<array<i64: 64, 1>, f32>
        %36 = "wsc.tile_binary"(%13, %35) {kind = "mul"} : (!wsc.acc<array<i64: 64, 1>, f32>, !wsc.acc<array<i64: 64, 1>, f32>) -> !wsc.acc<array<i64: 64, 1>, f32>
        %37 = "wsc.tile_row_reduce"(%33) {kind = "sum"} : (!wsc.acc<array<i64: 64, 128>, f32>) -> !wsc.acc<array<i64: 64, 1>, f32>
        %38 = "wsc.tile_binary"(%36, %37) {kind = "add"} : (!wsc.acc<array<i64: 64, 1>, f32>, !wsc.acc<array<i64: 64, 1>, f32>) -> !wsc.acc<array<i64: 64, 1>, f32>
        "wsc.tile_assign"(%13, %38) : (!wsc.acc<array<i64: 64, 1>, f32>, !wsc.acc<array<i64: 64, 1>, f32>) -> ()
        "wsc.tile_assign"(%12, %31) : (!wsc.acc<array<i64: 64, 1>, f32>, !wsc.acc<array<i64: 64, 1>, f32>) -> ()
        %39 = "wsc.tile_binary"(%11, %35) {kind = "mul"} : (!wsc.acc<array<i64: 64, 64>, f32>, !wsc.acc<array<i64: 64, 1>, f32>) -> !wsc.acc<array<i64: 64, 64>, f32>
        "wsc.tile_assign"(%11, %39) : (!wsc.acc<array<i64: 64, 64>, f32>, !wsc.acc<array<i64: 64, 64>, f32>) -> ()
        %40 = "wsc.cast"(%33) : (!wsc.acc<array<i64: 64, 128>, f32>) -> !wsc.acc<array<i64: 64, 128>, f16>
        "wsc.wgmma_fence"() : () -> ()
        "wsc.wgmma_register_a"(%40, %2, %arg5, %11) {b_layout = "kn"} : (!wsc.acc<array<i64: 64, 128>, f16>, memref<2x128x64xf16, 3>, index, !wsc.acc<array<i64: 64, 64>, f32>) -> ()
        "wsc.wgmma_commit_group"() : () -> ()
        "wsc.wgmma_wait_group"() {pending = 0 : i32} : () -> ()
        "wsc.mbarrier_arrive"(%5, %arg5) : (!wsc.mbarriers, index) -> ()
        %41:2 = "wsc.ring_advance"(%arg5, %arg6) {num_stages = 2 : i32} : (index, i1) -> (index, i1)
        scf.yield %41#0, %41#1 : index, i1
      }
      %18 = "wsc.tile_unary"(%13) {kind = "log2"} : (!wsc.acc<array<i64: 64, 1>, f32>) -> !wsc.acc<array<i64: 64, 1>, f32>
      %19 = "wsc.tile_unary"(%18) {kind = "neg"} : (!wsc.acc<array<i64: 64, 1>, f32>) -> !wsc.acc<array<i64: 64, 1>, f32>
      %20 = "wsc.tile_unary"(%19) {kind = "exp2"} : (!wsc.acc<array<i64: 64, 1>, f32>) -> !wsc.acc<array<i64: 64, 1>, f32>
      %21 = "wsc.tile_binary"(%11, %20) {kind = "mul"} : (!wsc.acc<array<i64: 64, 64>, f32>, !wsc.acc<array<i64: 64, 1>, f32>) -> !wsc.acc<array<i64: 64, 64>, f32>
      %22 = "wsc.cast"(%21) : (!wsc.acc<array<i64: 64, 64>, f32>) -> !wsc.acc<array<i64: 64, 64>, f16>
      "wsc.store"(%22, %arg3, %6, %c0) : (!wsc.acc<array<i64: 64, 64>, f16>, memref<?x?xf16>, index, index) -> ()
    }
    %9 = "wsc.role"() {max_registers = 232 : i32, num_threads = 128 : i32, role = "consumer", thread_begin = 128 : i32} : () -> i1
    scf.if %9 {
      
      %11 = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 64, 64>, f32>
      %12 = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 64, 1>, f32>
      %13 = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 64, 1>, f32>
      %14 = "wsc.tile_fill"() {value = 1.000000e+30 : f32} : () -> !wsc.acc<array<i64: 64, 1>, f32>
      %15 = "wsc.tile_binary"(%12, %14) {kind = "sub"} : (!wsc.acc<array<i64: 64, 1>, f32>, !wsc.acc<array<i64: 64, 1>, f32>) -> !wsc.acc<array<i64: 64, 1>, f32>
      "wsc.tile_assign"(%12, %15) : (!wsc.acc<array<i64: 64, 1>, f32>, !wsc.acc<array<i64: 64, 1>, f32>) -> ()
      %16 = "wsc.tile_iota"(%dim) {along = "cols"} : (index) -> !wsc.acc<array<i64: 64, 1>, f32>
      %false_2 = arith.constant false
      %17:2 = scf.for %arg4 = %c0 to %7 step %c1 iter_args(%arg5 = %c0_1, %arg6 = %false_2) -> (index, i1) {
        %c128_3 = arith.constant 128 : index
        %24 = arith.muli %arg4, %c128_3 : index
        "wsc.mbarrier_wait"(%4, %arg5, %arg6) : (!wsc.mbarriers, index, i1) -> ()
        %25 = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 64, 128>, f32>
        "wsc.wgmma_fence"() : () -> ()
        // expected-error @below {{wgmma reads A stage 0 before its data landed (copy #1 of the stage is still in flight) (k_tiles = 1, num_stages = 2)}}
        "wsc.wgmma"(%0, %1, %arg5, %25) {a_row = 64 : i32, a_stage = 0 : i32, b_layout = "nk"} : (memref<1x128x64xf16, 3>, memref<2x128x64xf16, 3>, index, !wsc.acc<array<i64: 64, 128>, f32>) -> ()
        "wsc.wgmma_commit_group"() : () -> ()
        "wsc.wgmma_wait_group"() {pending = 0 : i32} : () -> ()
        %26 = "wsc.tile_iota"(%24) {along = "cols"} : (index) -> !wsc.acc<array<i64: 64, 128>, f32>
        %27 = "wsc.tile_fill"() {value = 0.180336878 : f32} : () -> !wsc.acc<array<i64: 64, 128>, f32>
        %28 = "wsc.tile_binary"(%25, %27) {kind = "mul"} : (!wsc.acc<array<i64: 64, 128>, f32>, !wsc.acc<array<i64: 64, 128>, f32>) -> !wsc.acc<array<i64: 64, 128>, f32>
        %29 = "wsc.tile_fill"() {value = -1.000000e+30 : f32} : () -> !wsc.acc<array<i64: 64, 128>, f32>
        %30 = "wsc.tile_select"(%26, %16, %28, %29) {predicate = "lt"} : (!wsc.acc<array<i64: 64, 128>, f32>, !wsc.acc<array<i64: 64, 1>, f32>, !wsc.acc<array<i64: 64, 128>, f32>, !wsc.acc<array<i64: 64, 128>, f32>) -> !wsc.acc<array<i64: 64, 128>, f32>
        %31 = "wsc.tile_row_reduce"(%30) {kind = "max"} : (!wsc.acc<array<i64: 64, 128>, f32>) -> !wsc.acc<array<i64: 64, 1>, f32>
        %32 = "wsc.tile_binary"(%12, %31) {kind = "max"} : (!wsc.acc<array<i64: 64, 1>, f32>, !wsc.acc<array<i64: 64, 1>, f32>) -> !wsc.acc<array<i64: 64, 1>, f32>
        %33 = "wsc.tile_binary"(%30, %32) {kind = "sub"} : (!wsc.acc<array<i64: 64, 128>, f32>, !wsc.acc<array<i64: 64, 1>, f32>) -> !wsc.acc<array<i64: 64, 128>, f32>
        %34 = "wsc.tile_unary"(%33) {kind = "exp2"} : (!wsc.acc<array<i64: 64, 128>, f32>) -> !wsc.acc<array<i64: 64, 128>, f32>
        %35 = "wsc.tile_binary"(%12, %32) {kind = "sub"} : (!wsc.acc<array<i64: 64, 1>, f32>, !wsc.acc<array<i64: 64, 1>, f32>) -> !wsc.acc<array<i64: 64, 1>, f32>
        %36 = "wsc.tile_unary"(%35) {kind = "exp2"} : (!wsc.acc<array<i64: 64, 1>, f32>) -> !wsc.acc<array<i64: 64, 1>, f32>
        %37 = "wsc.tile_binary"(%13, %36) {kind = "mul"} : (!wsc.acc<array<i64: 64, 1>, f32>, !wsc.acc<array<i64: 64, 1>, f32>) -> !wsc.acc<array<i64: 64, 1>, f32>
        %38 = "wsc.tile_row_reduce"(%34) {kind = "sum"} : (!wsc.acc<array<i64: 64, 128>, f32>) -> !wsc.acc<array<i64: 64, 1>, f32>
        %39 = "wsc.tile_binary"(%37, %38) {kind = "add"} : (!wsc.acc<array<i64: 64, 1>, f32>, !wsc.acc<array<i64: 64, 1>, f32>) -> !wsc.acc<array<i64: 64, 1>, f32>
        "wsc.tile_assign"(%13, %39) : (!wsc.acc<array<i64: 64, 1>, f32>, !wsc.acc<array<i64: 64, 1>, f32>) -> ()
        "wsc.tile_assign"(%12, %32) : (!wsc.acc<array<i64: 64, 1>, f32>, !wsc.acc<array<i64: 64, 1>, f32>) -> ()
        %40 = "wsc.tile_binary"(%11, %36) {kind = "mul"} : (!wsc.acc<array<i64: 64, 64>, f32>, !wsc.acc<array<i64: 64, 1>, f32>) -> !wsc.acc<array<i64: 64, 64>, f32>
        "wsc.tile_assign"(%11, %40) : (!wsc.acc<array<i64: 64, 64>, f32>, !wsc.acc<array<i64: 64, 64>, f32>) -> ()
        %41 = "wsc.cast"(%34) : (!wsc.acc<array<i64: 64, 128>, f32>) -> !wsc.acc<array<i64: 64, 128>, f16>
        "wsc.wgmma_fence"() : () -> ()
        "wsc.wgmma_register_a"(%41, %2, %arg5, %11) {b_layout = "kn"} : (!wsc.acc<array<i64: 64, 128>, f16>, memref<2x128x64xf16, 3>, index, !wsc.acc<array<i64: 64, 64>, f32>) -> ()
        "wsc.wgmma_commit_group"() : () -> ()
        "wsc.wgmma_wait_group"() {pending = 0 : i32} : () -> ()
        "wsc.mbarrier_arrive"(%5, %arg5) : (!wsc.mbarriers, index) -> ()
        %42:2 = "wsc.ring_advance"(%arg5, %arg6) {num_stages = 2 : i32} : (index, i1) -> (index, i1)
        scf.yield %42#0, %42#1 : index, i1
      }
      %c64 = arith.constant 64 : index
      %18 = "wsc.tile_unary"(%13) {kind = "log2"} : (!wsc.acc<array<i64: 64, 1>, f32>) -> !wsc.acc<array<i64: 64, 1>, f32>
      %19 = "wsc.tile_unary"(%18) {kind = "neg"} : (!wsc.acc<array<i64: 64, 1>, f32>) -> !wsc.acc<array<i64: 64, 1>, f32>
      %20 = "wsc.tile_unary"(%19) {kind = "exp2"} : (!wsc.acc<array<i64: 64, 1>, f32>) -> !wsc.acc<array<i64: 64, 1>, f32>
      %21 = "wsc.tile_binary"(%11, %20) {kind = "mul"} : (!wsc.acc<array<i64: 64, 64>, f32>, !wsc.acc<array<i64: 64, 1>, f32>) -> !wsc.acc<array<i64: 64, 64>, f32>
      %22 = "wsc.cast"(%21) : (!wsc.acc<array<i64: 64, 64>, f32>) -> !wsc.acc<array<i64: 64, 64>, f16>
      %23 = arith.addi %6, %c64 : index
      "wsc.store"(%22, %arg3, %23, %c0) : (!wsc.acc<array<i64: 64, 64>, f16>, memref<?x?xf16>, index, index) -> ()
    }
    %10 = "wsc.role"() {max_registers = 40 : i32, num_threads = 128 : i32, role = "producer", thread_begin = 256 : i32} : () -> i1
    scf.if %10 {
      %11 = "wsc.elect"() : () -> i1
      scf.if %11 {
        "wsc.mbarrier_arrive_expect_tx"(%3, %c0) {tx_bytes = 16384 : i32} : (!wsc.mbarriers, index) -> ()
        "wsc.tma_load"(%arg0, %6, %c0, %0, %c0, %3) : (memref<?x?xf16>, index, index, memref<1x128x64xf16, 3>, index, !wsc.mbarriers) -> ()
      }
      %true = arith.constant true
      %12:2 = scf.for %arg4 = %c0 to %7 step %c1 iter_args(%arg5 = %c0_1, %arg6 = %true) -> (index, i1) {
        "wsc.mbarrier_wait"(%5, %arg5, %arg6) : (!wsc.mbarriers, index, i1) -> ()
        %c128_4 = arith.constant 128 : index
        %14 = arith.muli %arg4, %c128_4 : index
        %15 = "wsc.elect"() : () -> i1
        scf.if %15 {
          "wsc.mbarrier_arrive_expect_tx"(%4, %arg5) {tx_bytes = 32768 : i32} : (!wsc.mbarriers, index) -> ()
          "wsc.tma_load"(%arg1, %14, %c0, %1, %arg5, %4) : (memref<?x?xf16>, index, index, memref<2x128x64xf16, 3>, index, !wsc.mbarriers) -> ()
          "wsc.tma_load"(%arg2, %14, %c0, %2, %arg5, %4) : (memref<?x?xf16>, index, index, memref<2x128x64xf16, 3>, index, !wsc.mbarriers) -> ()
        }
        %16:2 = "wsc.ring_advance"(%arg5, %arg6) {num_stages = 2 : i32} : (index, i1) -> (index, i1)
        scf.yield %16#0, %16#1 : index, i1
      }
      %c2 = arith.constant 2 : index
      %c0_2 = arith.constant 0 : index
      %c1_3 = arith.constant 1 : index
      %13:2 = scf.for %arg4 = %c0_2 to %c2 step %c1_3 iter_args(%arg5 = %12#0, %arg6 = %12#1) -> (index, i1) {
        %14 = arith.addi %arg4, %7 : index
        %15 = arith.cmpi uge, %14, %c2 : index
        scf.if %15 {
          "wsc.mbarrier_wait"(%5, %arg5, %arg6) : (!wsc.mbarriers, index, i1) -> ()
        }
        %16:2 = "wsc.ring_advance"(%arg5, %arg6) {num_stages = 2 : i32} : (index, i1) -> (index, i1)
        scf.yield %16#0, %16#1 : index, i1
      }
    }
    return
  }
}

// -----

// A and B complete on barriers of their own; the consumer waits for B's
// alone and reads A, whose copy may land after B's.
func.func @matmul(%a: memref<?x?xf16>, %b: memref<?x?xf16>, %c: memref<?x?xf32>)
    attributes {wsc.num_threads = 160 : i32} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
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
  %sa = "wsc.alloc_shared"() : () -> memref<4x128x64xf16, 3>
  %sb = "wsc.alloc_shared"() : () -> memref<4x128x64xf16, 3>
  %full = "wsc.mbarrier_alloc"() {arrival_count = 1 : i32, num_barriers = 4 : i32} : () -> !wsc.mbarriers
  %full_b = "wsc.mbarrier_alloc"() {arrival_count = 1 : i32, num_barriers = 4 : i32} : () -> !wsc.mbarriers
  %empty = "wsc.mbarrier_alloc"() {arrival_count = 128 : i32, num_barriers = 4 : i32} : () -> !wsc.mbarriers
  "wsc.sync"() : () -> ()
  %is_consumer = "wsc.role"() {role = "consumer", thread_begin = 0 : i32, num_threads = 128 : i32, max_registers = 232 : i32} : () -> i1
  scf.if %is_consumer {
    %acc = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 128, 128>, f32>
    %cs:2 = scf.for %kt = %c0 to %k_tiles step %c1 iter_args(%stage = %c0, %phase = %false) -> (index, i1) {
      "wsc.mbarrier_wait"(%full_b, %stage, %phase) : (!wsc.mbarriers, index, i1) -> ()
      "wsc.wgmma_fence"() : () -> ()
      // expected-error @below {{wgmma reads A stage 0 before its data landed (copy #1 of the stage is still in flight) (k_tiles = 1, num_stages = 4)}}
      "wsc.wgmma"(%sa, %sb, %stage, %acc) {a_row = 0 : i32, b_layout = "nk"} : (memref<4x128x64xf16, 3>, memref<4x128x64xf16, 3>, index, !wsc.acc<array<i64: 128, 128>, f32>) -> ()
      "wsc.wgmma_commit_group"() : () -> ()
      "wsc.wgmma_wait_group"() {pending = 0 : i32} : () -> ()
      "wsc.mbarrier_arrive"(%empty, %stage) : (!wsc.mbarriers, index) -> ()
      %next_stage, %next_phase = "wsc.ring_advance"(%stage, %phase) {num_stages = 4 : i32} : (index, i1) -> (index, i1)
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
        "wsc.mbarrier_arrive_expect_tx"(%full, %stage) {tx_bytes = 16384 : i32} : (!wsc.mbarriers, index) -> ()
        "wsc.tma_load"(%a, %m0, %k0, %sa, %stage, %full) : (memref<?x?xf16>, index, index, memref<4x128x64xf16, 3>, index, !wsc.mbarriers) -> ()
        "wsc.mbarrier_arrive_expect_tx"(%full_b, %stage) {tx_bytes = 16384 : i32} : (!wsc.mbarriers, index) -> ()
        "wsc.tma_load"(%b, %n0, %k0, %sb, %stage, %full_b) : (memref<?x?xf16>, index, index, memref<4x128x64xf16, 3>, index, !wsc.mbarriers) -> ()
      }
      %next_stage, %next_phase = "wsc.ring_advance"(%stage, %phase) {num_stages = 4 : i32} : (index, i1) -> (index, i1)
      scf.yield %next_stage, %next_phase : index, i1
    }
    // Drain: of the 4 positions after the loop, those with a fill 4 positions
    // earlier (k_tiles + i >= 4) wait for that fill's release.
    %ds:2 = scf.for %i = %c0 to %c4 step %c1 iter_args(%stage = %ps#0, %phase = %ps#1) -> (index, i1) {
      %position = arith.addi %i, %k_tiles : index
      %filled = arith.cmpi uge, %position, %c4 : index
      scf.if %filled {
        "wsc.mbarrier_wait"(%empty, %stage, %phase) : (!wsc.mbarriers, index, i1) -> ()
      }
      %next_stage, %next_phase = "wsc.ring_advance"(%stage, %phase) {num_stages = 4 : i32} : (index, i1) -> (index, i1)
      scf.yield %next_stage, %next_phase : index, i1
    }
  }
  return
}

// -----

// K and V on barriers of their own: group 1 waits for V where its first
// WGMMA reads K.
module {
  func.func @back_to_back(%arg0: memref<?x?xf16>, %arg1: memref<?x?xf16>, %arg2: memref<?x?xf16>, %arg3: memref<?x?xf32>) attributes {wsc.num_threads = 384 : i32} {
    %0 = "wsc.alloc_shared"() : () -> memref<1x128x64xf16, 3>
    %1 = "wsc.alloc_shared"() : () -> memref<4x128x64xf16, 3>
    %2 = "wsc.alloc_shared"() : () -> memref<4x128x64xf16, 3>
    %3 = "wsc.mbarrier_alloc"() {arrival_count = 1 : i32, num_barriers = 1 : i32} : () -> !wsc.mbarriers
    %4 = "wsc.mbarrier_alloc"() {arrival_count = 1 : i32, num_barriers = 4 : i32} : () -> !wsc.mbarriers
    %5 = "wsc.mbarrier_alloc"() {arrival_count = 256 : i32, num_barriers = 4 : i32} : () -> !wsc.mbarriers
    %fv = "wsc.mbarrier_alloc"() {arrival_count = 1 : i32, num_barriers = 4 : i32} : () -> !wsc.mbarriers
    %ev = "wsc.mbarrier_alloc"() {arrival_count = 256 : i32, num_barriers = 4 : i32} : () -> !wsc.mbarriers
    "wsc.sync"() : () -> ()
    %block_id_x = gpu.block_id  x
    %c128 = arith.constant 128 : index
    %6 = arith.muli %block_id_x, %c128 : index
    %c0 = arith.constant 0 : index
    %c1x = arith.constant 1 : index
    %c64x = arith.constant 64 : index
    %dim = memref.dim %arg1, %c1x : memref<?x?xf16>
    %7 = arith.ceildivui %dim, %c64x : index
    %8 = arith.muli %7, %c0 : index
    %false = arith.constant false
    %9 = arith.subi %7, %8 : index
    %false_0 = arith.constant false
    %c1 = arith.constant 1 : index
    %c0_1 = arith.constant 0 : index
    %10 = "wsc.role"() {max_registers = 232 : i32, num_threads = 128 : i32, role = "consumer", thread_begin = 0 : i32} : () -> i1
    scf.if %10 {
      "wsc.mbarrier_wait"(%3, %c0, %false) : (!wsc.mbarriers, index, i1) -> ()
      %13 = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 64, 64>, f32>
      %false_2 = arith.constant false
      %14:2 = scf.for %arg4 = %c0 to %9 step %c1 iter_args(%arg5 = %c0_1, %arg6 = %false_2) -> (index, i1) {
        "wsc.mbarrier_wait"(%4, %arg5, %arg6) : (!wsc.mbarriers, index, i1) -> ()
        %15 = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 64, 128>, f32>
        "wsc.wgmma_fence"() : () -> ()
        "wsc.wgmma"(%0, %1, %arg5, %15) {a_row = 0 : i32, a_stage = 0 : i32, b_layout = "nk"} : (memref<1x128x64xf16, 3>, memref<4x128x64xf16, 3>, index, !wsc.acc<array<i64: 64, 128>, f32>) -> ()
        "wsc.wgmma_commit_group"() : () -> ()
        "wsc.wgmma_wait_group"() {pending = 0 : i32} : () -> ()
        "wsc.mbarrier_arrive"(%5, %arg5) : (!wsc.mbarriers, index) -> ()
        %16 = "wsc.cast"(%15) : (!wsc.acc<array<i64: 64, 128>, f32>) -> !wsc.acc<array<i64: 64, 128>, f16>
        "wsc.mbarrier_wait"(%fv, %arg5, %arg6) : (!wsc.mbarriers, index, i1) -> ()
        "wsc.wgmma_fence"() : () -> ()
        "wsc.wgmma_register_a"(%16, %2, %arg5, %13) {b_layout = "kn"} : (!wsc.acc<array<i64: 64, 128>, f16>, memref<4x128x64xf16, 3>, index, !wsc.acc<array<i64: 64, 64>, f32>) -> ()
        "wsc.wgmma_commit_group"() : () -> ()
        "wsc.wgmma_wait_group"() {pending = 0 : i32} : () -> ()
        "wsc.mbarrier_arrive"(%ev, %arg5) : (!wsc.mbarriers, index) -> ()
        %17:2 = "wsc.ring_advance"(%arg5, %arg6) {num_stages = 4 : i32} : (index, i1) -> (index, i1)
        scf.yield %17#0, %17#1 : index, i1
      }
      "wsc.store"(%13, %arg3, %6, %c0) : (!wsc.acc<array<i64: 64, 64>, f32>, memref<?x?xf32>, index, index) -> ()
    }
    %11 = "wsc.role"() {max_registers = 232 : i32, num_threads = 128 : i32, role = "consumer", thread_begin = 128 : i32} : () -> i1
    scf.if %11 {
      "wsc.mbarrier_wait"(%3, %c0, %false) : (!wsc.mbarriers, index, i1) -> ()
      %13 = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 64, 64>, f32>
      %false_2 = arith.constant false
      %14:2 = scf.for %arg4 = %c0 to %9 step %c1 iter_args(%arg5 = %c0_1, %arg6 = %false_2) -> (index, i1) {
        "wsc.mbarrier_wait"(%fv, %arg5, %arg6) : (!wsc.mbarriers, index, i1) -> ()
        %16 = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 64, 128>, f32>
        "wsc.wgmma_fence"() : () -> ()
        // expected-error @below {{wgmma reads B stage 0 before its data landed (copy #1 of the stage is still in flight) (k_tiles = 1, num_stages = 4)}}
        "wsc.wgmma"(%0, %1, %arg5, %16) {a_row = 64 : i32, a_stage = 0 : i32, b_layout = "nk"} : (memref<1x128x64xf16, 3>, memref<4x128x64xf16, 3>, index, !wsc.acc<array<i64: 64, 128>, f32>) -> ()
        "wsc.wgmma_commit_group"() : () -> ()
        "wsc.wgmma_wait_group"() {pending = 0 : i32} : () -> ()
        "wsc.mbarrier_arrive"(%5, %arg5) : (!wsc.mbarriers, index) -> ()
        %17 = "wsc.cast"(%16) : (!wsc.acc<array<i64: 64, 128>, f32>) -> !wsc.acc<array<i64: 64, 128>, f16>
        "wsc.wgmma_fence"() : () -> ()
        "wsc.wgmma_register_a"(%17, %2, %arg5, %13) {b_layout = "kn"} : (!wsc.acc<array<i64: 64, 128>, f16>, memref<4x128x64xf16, 3>, index, !wsc.acc<array<i64: 64, 64>, f32>) -> ()
        "wsc.wgmma_commit_group"() : () -> ()
        "wsc.wgmma_wait_group"() {pending = 0 : i32} : () -> ()
        "wsc.mbarrier_arrive"(%ev, %arg5) : (!wsc.mbarriers, index) -> ()
        %18:2 = "wsc.ring_advance"(%arg5, %arg6) {num_stages = 4 : i32} : (index, i1) -> (index, i1)
        scf.yield %18#0, %18#1 : index, i1
      }
      %c64 = arith.constant 64 : index
      %15 = arith.addi %6, %c64 : index
      "wsc.store"(%13, %arg3, %15, %c0) : (!wsc.acc<array<i64: 64, 64>, f32>, memref<?x?xf32>, index, index) -> ()
    }
    %12 = "wsc.role"() {max_registers = 40 : i32, num_threads = 128 : i32, role = "producer", thread_begin = 256 : i32} : () -> i1
    scf.if %12 {
      %13 = "wsc.elect"() : () -> i1
      scf.if %13 {
        "wsc.mbarrier_arrive_expect_tx"(%3, %c0) {tx_bytes = 16384 : i32} : (!wsc.mbarriers, index) -> ()
        "wsc.tma_load"(%arg0, %6, %c0, %0, %c0, %3) : (memref<?x?xf16>, index, index, memref<1x128x64xf16, 3>, index, !wsc.mbarriers) -> ()
      }
      %true = arith.constant true
      %14:2 = scf.for %arg4 = %c0 to %9 step %c1 iter_args(%arg5 = %c0_1, %arg6 = %true) -> (index, i1) {
        "wsc.mbarrier_wait"(%5, %arg5, %arg6) : (!wsc.mbarriers, index, i1) -> ()
        %16 = arith.addi %8, %arg4 : index
        %17 = arith.muli %16, %c128 : index
        %18 = "wsc.elect"() : () -> i1
        scf.if %18 {
          "wsc.mbarrier_arrive_expect_tx"(%4, %arg5) {tx_bytes = 16384 : i32} : (!wsc.mbarriers, index) -> ()
          "wsc.tma_load"(%arg1, %17, %c0, %1, %arg5, %4) : (memref<?x?xf16>, index, index, memref<4x128x64xf16, 3>, index, !wsc.mbarriers) -> ()
        }
        "wsc.mbarrier_wait"(%ev, %arg5, %arg6) : (!wsc.mbarriers, index, i1) -> ()
        %e2 = "wsc.elect"() : () -> i1
        scf.if %e2 {
          "wsc.mbarrier_arrive_expect_tx"(%fv, %arg5) {tx_bytes = 16384 : i32} : (!wsc.mbarriers, index) -> ()
          "wsc.tma_load"(%arg2, %17, %c0, %2, %arg5, %fv) : (memref<?x?xf16>, index, index, memref<4x128x64xf16, 3>, index, !wsc.mbarriers) -> ()
        }
        %19:2 = "wsc.ring_advance"(%arg5, %arg6) {num_stages = 4 : i32} : (index, i1) -> (index, i1)
        scf.yield %19#0, %19#1 : index, i1
      }
      %c4 = arith.constant 4 : index
      %c0_2 = arith.constant 0 : index
      %c1_3 = arith.constant 1 : index
      %15:2 = scf.for %arg4 = %c0_2 to %c4 step %c1_3 iter_args(%arg5 = %14#0, %arg6 = %14#1) -> (index, i1) {
        %16 = arith.addi %arg4, %9 : index
        %17 = arith.cmpi uge, %16, %c4 : index
        scf.if %17 {
          "wsc.mbarrier_wait"(%5, %arg5, %arg6) : (!wsc.mbarriers, index, i1) -> ()
          "wsc.mbarrier_wait"(%ev, %arg5, %arg6) : (!wsc.mbarriers, index, i1) -> ()
        }
        %18:2 = "wsc.ring_advance"(%arg5, %arg6) {num_stages = 4 : i32} : (index, i1) -> (index, i1)
        scf.yield %18#0, %18#1 : index, i1
      }
    }
    return
  }
}

// -----

// The TMA-store epilogue writes staging stage 0 and stores stage 2, which
// nothing wrote.
module {
  func.func @matmul(%arg0: memref<?x?xf16>, %arg1: memref<?x?xf16>, %arg2: memref<?x?xf16>) attributes {wsc.num_threads = 384 : i32} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c64 = arith.constant 64 : index
    %false = arith.constant false
    %c2s = arith.constant 2 : index
    %dim = memref.dim %arg0, %c1 : memref<?x?xf16>
    %0 = arith.ceildivui %dim, %c64 : index
    %1 = "wsc.alloc_shared"() : () -> memref<2x128x64xf16, 3>
    %2 = "wsc.alloc_shared"() : () -> memref<2x128x64xf16, 3>
    %3 = "wsc.alloc_shared"() : () -> memref<3x64x128xf16, 3>
    %4 = "wsc.mbarrier_alloc"() {arrival_count = 1 : i32, num_barriers = 2 : i32} : () -> !wsc.mbarriers
    %5 = "wsc.mbarrier_alloc"() {arrival_count = 256 : i32, num_barriers = 2 : i32} : () -> !wsc.mbarriers
    "wsc.sync"() : () -> ()
    %c0_0 = arith.constant 0 : index
    %6 = "wsc.role"() {max_registers = 232 : i32, num_threads = 128 : i32, role = "consumer", thread_begin = 0 : i32} : () -> i1
    scf.if %6 {
      %9 = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 64, 128>, f32>
      %false_1 = arith.constant false
      %10:2 = scf.for %arg3 = %c0 to %0 step %c1 iter_args(%arg4 = %c0_0, %arg5 = %false_1) -> (index, i1) {
        "wsc.mbarrier_wait"(%4, %arg4, %arg5) : (!wsc.mbarriers, index, i1) -> ()
        "wsc.wgmma_fence"() : () -> ()
        "wsc.wgmma"(%1, %2, %arg4, %9) {a_row = 0 : i32, b_layout = "nk"} : (memref<2x128x64xf16, 3>, memref<2x128x64xf16, 3>, index, !wsc.acc<array<i64: 64, 128>, f32>) -> ()
        "wsc.wgmma_commit_group"() : () -> ()
        "wsc.wgmma_wait_group"() {pending = 0 : i32} : () -> ()
        "wsc.mbarrier_arrive"(%5, %arg4) : (!wsc.mbarriers, index) -> ()
        %13:2 = "wsc.ring_advance"(%arg4, %arg5) {num_stages = 2 : i32} : (index, i1) -> (index, i1)
        scf.yield %13#0, %13#1 : index, i1
      }
      %c0_2 = arith.constant 0 : index
      %11 = "wsc.cast"(%9) : (!wsc.acc<array<i64: 64, 128>, f32>) -> !wsc.acc<array<i64: 64, 128>, f16>
      "wsc.store_shared"(%11, %3, %c0_2) : (!wsc.acc<array<i64: 64, 128>, f16>, memref<3x64x128xf16, 3>, index) -> ()
      "wsc.fence_proxy_async"() : () -> ()
      "wsc.sync"() : () -> ()
      %12 = "wsc.elect"() : () -> i1
      scf.if %12 {
        // expected-error @below {{TMA store of C staging stage 2, which nothing wrote: no wsc.store_shared or TMA copy filled it (k_tiles = 1, num_stages = 3)}}
        "wsc.tma_store"(%3, %c2s, %arg2, %c0, %c0) : (memref<3x64x128xf16, 3>, index, memref<?x?xf16>, index, index) -> ()
      }
    }
    %7 = "wsc.role"() {max_registers = 232 : i32, num_threads = 128 : i32, role = "consumer", thread_begin = 128 : i32} : () -> i1
    scf.if %7 {
      %9 = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 64, 128>, f32>
      %false_1 = arith.constant false
      %10:2 = scf.for %arg3 = %c0 to %0 step %c1 iter_args(%arg4 = %c0_0, %arg5 = %false_1) -> (index, i1) {
        "wsc.mbarrier_wait"(%4, %arg4, %arg5) : (!wsc.mbarriers, index, i1) -> ()
        "wsc.wgmma_fence"() : () -> ()
        "wsc.wgmma"(%1, %2, %arg4, %9) {a_row = 64 : i32, b_layout = "nk"} : (memref<2x128x64xf16, 3>, memref<2x128x64xf16, 3>, index, !wsc.acc<array<i64: 64, 128>, f32>) -> ()
        "wsc.wgmma_commit_group"() : () -> ()
        "wsc.wgmma_wait_group"() {pending = 0 : i32} : () -> ()
        "wsc.mbarrier_arrive"(%5, %arg4) : (!wsc.mbarriers, index) -> ()
        %13:2 = "wsc.ring_advance"(%arg4, %arg5) {num_stages = 2 : i32} : (index, i1) -> (index, i1)
        scf.yield %13#0, %13#1 : index, i1
      }
      %c64_2 = arith.constant 64 : index
      %c1_3 = arith.constant 1 : index
      %11 = "wsc.cast"(%9) : (!wsc.acc<array<i64: 64, 128>, f32>) -> !wsc.acc<array<i64: 64, 128>, f16>
      "wsc.store_shared"(%11, %3, %c1_3) : (!wsc.acc<array<i64: 64, 128>, f16>, memref<3x64x128xf16, 3>, index) -> ()
      "wsc.fence_proxy_async"() : () -> ()
      "wsc.sync"() : () -> ()
      %12 = "wsc.elect"() : () -> i1
      scf.if %12 {
        %13 = arith.addi %c0, %c64_2 : index
        "wsc.tma_store"(%3, %c1_3, %arg2, %13, %c0) : (memref<3x64x128xf16, 3>, index, memref<?x?xf16>, index, index) -> ()
      }
    }
    %8 = "wsc.role"() {max_registers = 40 : i32, num_threads = 128 : i32, role = "producer", thread_begin = 256 : i32} : () -> i1
    scf.if %8 {
      %true = arith.constant true
      %9:2 = scf.for %arg3 = %c0 to %0 step %c1 iter_args(%arg4 = %c0_0, %arg5 = %true) -> (index, i1) {
        "wsc.mbarrier_wait"(%5, %arg4, %arg5) : (!wsc.mbarriers, index, i1) -> ()
        %11 = arith.muli %arg3, %c64 : index
        %12 = "wsc.elect"() : () -> i1
        scf.if %12 {
          "wsc.mbarrier_arrive_expect_tx"(%4, %arg4) {tx_bytes = 32768 : i32} : (!wsc.mbarriers, index) -> ()
          "wsc.tma_load"(%arg0, %c0, %11, %1, %arg4, %4) : (memref<?x?xf16>, index, index, memref<2x128x64xf16, 3>, index, !wsc.mbarriers) -> ()
          "wsc.tma_load"(%arg1, %c0, %11, %2, %arg4, %4) : (memref<?x?xf16>, index, index, memref<2x128x64xf16, 3>, index, !wsc.mbarriers) -> ()
        }
        %13:2 = "wsc.ring_advance"(%arg4, %arg5) {num_stages = 2 : i32} : (index, i1) -> (index, i1)
        scf.yield %13#0, %13#1 : index, i1
      }
      %c2 = arith.constant 2 : index
      %c0_1 = arith.constant 0 : index
      %c1_2 = arith.constant 1 : index
      %10:2 = scf.for %arg3 = %c0_1 to %c2 step %c1_2 iter_args(%arg4 = %9#0, %arg5 = %9#1) -> (index, i1) {
        %11 = arith.addi %arg3, %0 : index
        %12 = arith.cmpi uge, %11, %c2 : index
        scf.if %12 {
          "wsc.mbarrier_wait"(%5, %arg4, %arg5) : (!wsc.mbarriers, index, i1) -> ()
        }
        %13:2 = "wsc.ring_advance"(%arg4, %arg5) {num_stages = 2 : i32} : (index, i1) -> (index, i1)
        scf.yield %13#0, %13#1 : index, i1
      }
    }
    return
  }
}

// -----

// Attention: consumer group 0 yields its old phase, so its waits on K's
// full barriers never flip when the ring wraps (the loop streams K's rows).
module {
  func.func @attention(%arg0: memref<?x?xf16>, %arg1: memref<?x?xf16>, %arg2: memref<?x?xf16>, %arg3: memref<?x?xf16>) attributes {wsc.num_threads = 384 : i32} {
    %0 = "wsc.alloc_shared"() : () -> memref<1x128x64xf16, 3>
    %1 = "wsc.alloc_shared"() : () -> memref<2x128x64xf16, 3>
    %2 = "wsc.alloc_shared"() : () -> memref<2x128x64xf16, 3>
    %3 = "wsc.mbarrier_alloc"() {arrival_count = 1 : i32, num_barriers = 1 : i32} : () -> !wsc.mbarriers
    %4 = "wsc.mbarrier_alloc"() {arrival_count = 1 : i32, num_barriers = 2 : i32} : () -> !wsc.mbarriers
    %5 = "wsc.mbarrier_alloc"() {arrival_count = 256 : i32, num_barriers = 2 : i32} : () -> !wsc.mbarriers
    "wsc.sync"() : () -> ()
    %block_id_x = gpu.block_id  x
    %c128 = arith.constant 128 : index
    %6 = arith.muli %block_id_x, %c128 : index
    %c0 = arith.constant 0 : index
    %dim = memref.dim %arg1, %c0 : memref<?x?xf16>
    %false = arith.constant false
    %7 = arith.ceildivui %dim, %c128 : index
    %false_0 = arith.constant false
    %c1 = arith.constant 1 : index
    %c0_1 = arith.constant 0 : index
    %8 = "wsc.role"() {max_registers = 232 : i32, num_threads = 128 : i32, role = "consumer", thread_begin = 0 : i32} : () -> i1
    scf.if %8 {
      "wsc.mbarrier_wait"(%3, %c0, %false) : (!wsc.mbarriers, index, i1) -> ()
      %11 = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 64, 64>, f32>
      %12 = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 64, 1>, f32>
      %13 = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 64, 1>, f32>
      %14 = "wsc.tile_fill"() {value = 1.000000e+30 : f32} : () -> !wsc.acc<array<i64: 64, 1>, f32>
      %15 = "wsc.tile_binary"(%12, %14) {kind = "sub"} : (!wsc.acc<array<i64: 64, 1>, f32>, !wsc.acc<array<i64: 64, 1>, f32>) -> !wsc.acc<array<i64: 64, 1>, f32>
      "wsc.tile_assign"(%12, %15) : (!wsc.acc<array<i64: 64, 1>, f32>, !wsc.acc<array<i64: 64, 1>, f32>) -> ()
      %16 = "wsc.tile_iota"(%dim) {along = "cols"} : (index) -> !wsc.acc<array<i64: 64, 1>, f32>
      %false_2 = arith.constant false
      %17:2 = scf.for %arg4 = %c0 to %7 step %c1 iter_args(%arg5 = %c0_1, %arg6 = %false_2) -> (index, i1) {
        %c128_3 = arith.constant 128 : index
        %23 = arith.muli %arg4, %c128_3 : index
        // expected-error @below {{this wait for parity 0 on full1[0] returns before the copy it guards lands, so the wgmma after it reads B stage 0 too early: phase 0 of full1[0] completed, which the consumer role [0, 128) had already waited for: its parity is one phase behind (k_tiles = 3, num_stages = 2)}}
        "wsc.mbarrier_wait"(%4, %arg5, %arg6) : (!wsc.mbarriers, index, i1) -> ()
        %24 = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 64, 128>, f32>
        "wsc.wgmma_fence"() : () -> ()
        // expected-note @below {{the wgmma that reads B stage 0}}
        "wsc.wgmma"(%0, %1, %arg5, %24) {a_row = 0 : i32, a_stage = 0 : i32, b_layout = "nk"} : (memref<1x128x64xf16, 3>, memref<2x128x64xf16, 3>, index, !wsc.acc<array<i64: 64, 128>, f32>) -> ()
        "wsc.wgmma_commit_group"() : () -> ()
        "wsc.wgmma_wait_group"() {pending = 0 : i32} : () -> ()
        %25 = "wsc.tile_iota"(%23) {along = "cols"} : (index) -> !wsc.acc<array<i64: 64, 128>, f32>
        %26 = "wsc.tile_fill"() {value = 0.180336878 : f32} : () -> !wsc.acc<array<i64: 64, 128>, f32>
        %27 = "wsc.tile_binary"(%24, %26) {kind = "mul"} : (!wsc.acc<array<i64: 64, 128>, f32>, !wsc.acc<array<i64: 64, 128>, f32>) -> !wsc.acc<array<i64: 64, 128>, f32>
        %28 = "wsc.tile_fill"() {value = -1.000000e+30 : f32} : () -> !wsc.acc<array<i64: 64, 128>, f32>
        %29 = "wsc.tile_select"(%25, %16, %27, %28) {predicate = "lt"} : (!wsc.acc<array<i64: 64, 128>, f32>, !wsc.acc<array<i64: 64, 1>, f32>, !wsc.acc<array<i64: 64, 128>, f32>, !wsc.acc<array<i64: 64, 128>, f32>) -> !wsc.acc<array<i64: 64, 128>, f32>
        %30 = "wsc.tile_row_reduce"(%29) {kind = "max"} : (!wsc.acc<array<i64: 64, 128>, f32>) -> !wsc.acc<array<i64: 64, 1>, f32>
        %31 = "wsc.tile_binary"(%12, %30) {kind = "max"} : (!wsc.acc<array<i64: 64, 1>, f32>, !wsc.acc<array<i64: 64, 1>, f32>) -> !wsc.acc<array<i64: 64, 1>, f32>
        %32 = "wsc.tile_binary"(%29, %31) {kind = "sub"} : (!wsc.acc<array<i64: 64, 128>, f32>, !wsc.acc<array<i64: 64, 1>, f32>) -> !wsc.acc<array<i64: 64, 128>, f32>
        %33 = "wsc.tile_unary"(%32) {kind = "exp2"} : (!wsc.acc<array<i64: 64, 128>, f32>) -> !wsc.acc<array<i64: 64, 128>, f32>
        %34 = "wsc.tile_binary"(%12, %31) {kind = "sub"} : (!wsc.acc<array<i64: 64, 1>, f32>, !wsc.acc<array<i64: 64, 1>, f32>) -> !wsc.acc<array<i64: 64, 1>, f32>
        %35 = "wsc.tile_unary"(%34) {kind = "exp2"} : (!wsc.acc<array<i64: 64, 1>, f32>) -> !wsc.acc<array<i64: 64, 1>, f32>
        %36 = "wsc.tile_binary"(%13, %35) {kind = "mul"} : (!wsc.acc<array<i64: 64, 1>, f32>, !wsc.acc<array<i64: 64, 1>, f32>) -> !wsc.acc<array<i64: 64, 1>, f32>
        %37 = "wsc.tile_row_reduce"(%33) {kind = "sum"} : (!wsc.acc<array<i64: 64, 128>, f32>) -> !wsc.acc<array<i64: 64, 1>, f32>
        %38 = "wsc.tile_binary"(%36, %37) {kind = "add"} : (!wsc.acc<array<i64: 64, 1>, f32>, !wsc.acc<array<i64: 64, 1>, f32>) -> !wsc.acc<array<i64: 64, 1>, f32>
        "wsc.tile_assign"(%13, %38) : (!wsc.acc<array<i64: 64, 1>, f32>, !wsc.acc<array<i64: 64, 1>, f32>) -> ()
        "wsc.tile_assign"(%12, %31) : (!wsc.acc<array<i64: 64, 1>, f32>, !wsc.acc<array<i64: 64, 1>, f32>) -> ()
        %39 = "wsc.tile_binary"(%11, %35) {kind = "mul"} : (!wsc.acc<array<i64: 64, 64>, f32>, !wsc.acc<array<i64: 64, 1>, f32>) -> !wsc.acc<array<i64: 64, 64>, f32>
        "wsc.tile_assign"(%11, %39) : (!wsc.acc<array<i64: 64, 64>, f32>, !wsc.acc<array<i64: 64, 64>, f32>) -> ()
        %40 = "wsc.cast"(%33) : (!wsc.acc<array<i64: 64, 128>, f32>) -> !wsc.acc<array<i64: 64, 128>, f16>
        "wsc.wgmma_fence"() : () -> ()
        "wsc.wgmma_register_a"(%40, %2, %arg5, %11) {b_layout = "kn"} : (!wsc.acc<array<i64: 64, 128>, f16>, memref<2x128x64xf16, 3>, index, !wsc.acc<array<i64: 64, 64>, f32>) -> ()
        "wsc.wgmma_commit_group"() : () -> ()
        "wsc.wgmma_wait_group"() {pending = 0 : i32} : () -> ()
        "wsc.mbarrier_arrive"(%5, %arg5) : (!wsc.mbarriers, index) -> ()
        %41:2 = "wsc.ring_advance"(%arg5, %arg6) {num_stages = 2 : i32} : (index, i1) -> (index, i1)
        scf.yield %41#0, %arg6 : index, i1
      }
      %18 = "wsc.tile_unary"(%13) {kind = "log2"} : (!wsc.acc<array<i64: 64, 1>, f32>) -> !wsc.acc<array<i64: 64, 1>, f32>
      %19 = "wsc.tile_unary"(%18) {kind = "neg"} : (!wsc.acc<array<i64: 64, 1>, f32>) -> !wsc.acc<array<i64: 64, 1>, f32>
      %20 = "wsc.tile_unary"(%19) {kind = "exp2"} : (!wsc.acc<array<i64: 64, 1>, f32>) -> !wsc.acc<array<i64: 64, 1>, f32>
      %21 = "wsc.tile_binary"(%11, %20) {kind = "mul"} : (!wsc.acc<array<i64: 64, 64>, f32>, !wsc.acc<array<i64: 64, 1>, f32>) -> !wsc.acc<array<i64: 64, 64>, f32>
      %22 = "wsc.cast"(%21) : (!wsc.acc<array<i64: 64, 64>, f32>) -> !wsc.acc<array<i64: 64, 64>, f16>
      "wsc.store"(%22, %arg3, %6, %c0) : (!wsc.acc<array<i64: 64, 64>, f16>, memref<?x?xf16>, index, index) -> ()
    }
    %9 = "wsc.role"() {max_registers = 232 : i32, num_threads = 128 : i32, role = "consumer", thread_begin = 128 : i32} : () -> i1
    scf.if %9 {
      "wsc.mbarrier_wait"(%3, %c0, %false) : (!wsc.mbarriers, index, i1) -> ()
      %11 = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 64, 64>, f32>
      %12 = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 64, 1>, f32>
      %13 = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 64, 1>, f32>
      %14 = "wsc.tile_fill"() {value = 1.000000e+30 : f32} : () -> !wsc.acc<array<i64: 64, 1>, f32>
      %15 = "wsc.tile_binary"(%12, %14) {kind = "sub"} : (!wsc.acc<array<i64: 64, 1>, f32>, !wsc.acc<array<i64: 64, 1>, f32>) -> !wsc.acc<array<i64: 64, 1>, f32>
      "wsc.tile_assign"(%12, %15) : (!wsc.acc<array<i64: 64, 1>, f32>, !wsc.acc<array<i64: 64, 1>, f32>) -> ()
      %16 = "wsc.tile_iota"(%dim) {along = "cols"} : (index) -> !wsc.acc<array<i64: 64, 1>, f32>
      %false_2 = arith.constant false
      %17:2 = scf.for %arg4 = %c0 to %7 step %c1 iter_args(%arg5 = %c0_1, %arg6 = %false_2) -> (index, i1) {
        %c128_3 = arith.constant 128 : index
        %24 = arith.muli %arg4, %c128_3 : index
        "wsc.mbarrier_wait"(%4, %arg5, %arg6) : (!wsc.mbarriers, index, i1) -> ()
        %25 = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 64, 128>, f32>
        "wsc.wgmma_fence"() : () -> ()
        "wsc.wgmma"(%0, %1, %arg5, %25) {a_row = 64 : i32, a_stage = 0 : i32, b_layout = "nk"} : (memref<1x128x64xf16, 3>, memref<2x128x64xf16, 3>, index, !wsc.acc<array<i64: 64, 128>, f32>) -> ()
        "wsc.wgmma_commit_group"() : () -> ()
        "wsc.wgmma_wait_group"() {pending = 0 : i32} : () -> ()
        %26 = "wsc.tile_iota"(%24) {along = "cols"} : (index) -> !wsc.acc<array<i64: 64, 128>, f32>
        %27 = "wsc.tile_fill"() {value = 0.180336878 : f32} : () -> !wsc.acc<array<i64: 64, 128>, f32>
        %28 = "wsc.tile_binary"(%25, %27) {kind = "mul"} : (!wsc.acc<array<i64: 64, 128>, f32>, !wsc.acc<array<i64: 64, 128>, f32>) -> !wsc.acc<array<i64: 64, 128>, f32>
        %29 = "wsc.tile_fill"() {value = -1.000000e+30 : f32} : () -> !wsc.acc<array<i64: 64, 128>, f32>
        %30 = "wsc.tile_select"(%26, %16, %28, %29) {predicate = "lt"} : (!wsc.acc<array<i64: 64, 128>, f32>, !wsc.acc<array<i64: 64, 1>, f32>, !wsc.acc<array<i64: 64, 128>, f32>, !wsc.acc<array<i64: 64, 128>, f32>) -> !wsc.acc<array<i64: 64, 128>, f32>
        %31 = "wsc.tile_row_reduce"(%30) {kind = "max"} : (!wsc.acc<array<i64: 64, 128>, f32>) -> !wsc.acc<array<i64: 64, 1>, f32>
        %32 = "wsc.tile_binary"(%12, %31) {kind = "max"} : (!wsc.acc<array<i64: 64, 1>, f32>, !wsc.acc<array<i64: 64, 1>, f32>) -> !wsc.acc<array<i64: 64, 1>, f32>
        %33 = "wsc.tile_binary"(%30, %32) {kind = "sub"} : (!wsc.acc<array<i64: 64, 128>, f32>, !wsc.acc<array<i64: 64, 1>, f32>) -> !wsc.acc<array<i64: 64, 128>, f32>
        %34 = "wsc.tile_unary"(%33) {kind = "exp2"} : (!wsc.acc<array<i64: 64, 128>, f32>) -> !wsc.acc<array<i64: 64, 128>, f32>
        %35 = "wsc.tile_binary"(%12, %32) {kind = "sub"} : (!wsc.acc<array<i64: 64, 1>, f32>, !wsc.acc<array<i64: 64, 1>, f32>) -> !wsc.acc<array<i64: 64, 1>, f32>
        %36 = "wsc.tile_unary"(%35) {kind = "exp2"} : (!wsc.acc<array<i64: 64, 1>, f32>) -> !wsc.acc<array<i64: 64, 1>, f32>
        %37 = "wsc.tile_binary"(%13, %36) {kind = "mul"} : (!wsc.acc<array<i64: 64, 1>, f32>, !wsc.acc<array<i64: 64, 1>, f32>) -> !wsc.acc<array<i64: 64, 1>, f32>
        %38 = "wsc.tile_row_reduce"(%34) {kind = "sum"} : (!wsc.acc<array<i64: 64, 128>, f32>) -> !wsc.acc<array<i64: 64, 1>, f32>
        %39 = "wsc.tile_binary"(%37, %38) {kind = "add"} : (!wsc.acc<array<i64: 64, 1>, f32>, !wsc.acc<array<i64: 64, 1>, f32>) -> !wsc.acc<array<i64: 64, 1>, f32>
        "wsc.tile_assign"(%13, %39) : (!wsc.acc<array<i64: 64, 1>, f32>, !wsc.acc<array<i64: 64, 1>, f32>) -> ()
        "wsc.tile_assign"(%12, %32) : (!wsc.acc<array<i64: 64, 1>, f32>, !wsc.acc<array<i64: 64, 1>, f32>) -> ()
        %40 = "wsc.tile_binary"(%11, %36) {kind = "mul"} : (!wsc.acc<array<i64: 64, 64>, f32>, !wsc.acc<array<i64: 64, 1>, f32>) -> !wsc.acc<array<i64: 64, 64>, f32>
        "wsc.tile_assign"(%11, %40) : (!wsc.acc<array<i64: 64, 64>, f32>, !wsc.acc<array<i64: 64, 64>, f32>) -> ()
        %41 = "wsc.cast"(%34) : (!wsc.acc<array<i64: 64, 128>, f32>) -> !wsc.acc<array<i64: 64, 128>, f16>
        "wsc.wgmma_fence"() : () -> ()
        "wsc.wgmma_register_a"(%41, %2, %arg5, %11) {b_layout = "kn"} : (!wsc.acc<array<i64: 64, 128>, f16>, memref<2x128x64xf16, 3>, index, !wsc.acc<array<i64: 64, 64>, f32>) -> ()
        "wsc.wgmma_commit_group"() : () -> ()
        "wsc.wgmma_wait_group"() {pending = 0 : i32} : () -> ()
        "wsc.mbarrier_arrive"(%5, %arg5) : (!wsc.mbarriers, index) -> ()
        %42:2 = "wsc.ring_advance"(%arg5, %arg6) {num_stages = 2 : i32} : (index, i1) -> (index, i1)
        scf.yield %42#0, %42#1 : index, i1
      }
      %c64 = arith.constant 64 : index
      %18 = "wsc.tile_unary"(%13) {kind = "log2"} : (!wsc.acc<array<i64: 64, 1>, f32>) -> !wsc.acc<array<i64: 64, 1>, f32>
      %19 = "wsc.tile_unary"(%18) {kind = "neg"} : (!wsc.acc<array<i64: 64, 1>, f32>) -> !wsc.acc<array<i64: 64, 1>, f32>
      %20 = "wsc.tile_unary"(%19) {kind = "exp2"} : (!wsc.acc<array<i64: 64, 1>, f32>) -> !wsc.acc<array<i64: 64, 1>, f32>
      %21 = "wsc.tile_binary"(%11, %20) {kind = "mul"} : (!wsc.acc<array<i64: 64, 64>, f32>, !wsc.acc<array<i64: 64, 1>, f32>) -> !wsc.acc<array<i64: 64, 64>, f32>
      %22 = "wsc.cast"(%21) : (!wsc.acc<array<i64: 64, 64>, f32>) -> !wsc.acc<array<i64: 64, 64>, f16>
      %23 = arith.addi %6, %c64 : index
      "wsc.store"(%22, %arg3, %23, %c0) : (!wsc.acc<array<i64: 64, 64>, f16>, memref<?x?xf16>, index, index) -> ()
    }
    %10 = "wsc.role"() {max_registers = 40 : i32, num_threads = 128 : i32, role = "producer", thread_begin = 256 : i32} : () -> i1
    scf.if %10 {
      %11 = "wsc.elect"() : () -> i1
      scf.if %11 {
        "wsc.mbarrier_arrive_expect_tx"(%3, %c0) {tx_bytes = 16384 : i32} : (!wsc.mbarriers, index) -> ()
        "wsc.tma_load"(%arg0, %6, %c0, %0, %c0, %3) : (memref<?x?xf16>, index, index, memref<1x128x64xf16, 3>, index, !wsc.mbarriers) -> ()
      }
      %true = arith.constant true
      %12:2 = scf.for %arg4 = %c0 to %7 step %c1 iter_args(%arg5 = %c0_1, %arg6 = %true) -> (index, i1) {
        "wsc.mbarrier_wait"(%5, %arg5, %arg6) : (!wsc.mbarriers, index, i1) -> ()
        %c128_4 = arith.constant 128 : index
        %14 = arith.muli %arg4, %c128_4 : index
        %15 = "wsc.elect"() : () -> i1
        scf.if %15 {
          "wsc.mbarrier_arrive_expect_tx"(%4, %arg5) {tx_bytes = 32768 : i32} : (!wsc.mbarriers, index) -> ()
          "wsc.tma_load"(%arg1, %14, %c0, %1, %arg5, %4) : (memref<?x?xf16>, index, index, memref<2x128x64xf16, 3>, index, !wsc.mbarriers) -> ()
          "wsc.tma_load"(%arg2, %14, %c0, %2, %arg5, %4) : (memref<?x?xf16>, index, index, memref<2x128x64xf16, 3>, index, !wsc.mbarriers) -> ()
        }
        %16:2 = "wsc.ring_advance"(%arg5, %arg6) {num_stages = 2 : i32} : (index, i1) -> (index, i1)
        scf.yield %16#0, %16#1 : index, i1
      }
      %c2 = arith.constant 2 : index
      %c0_2 = arith.constant 0 : index
      %c1_3 = arith.constant 1 : index
      %13:2 = scf.for %arg4 = %c0_2 to %c2 step %c1_3 iter_args(%arg5 = %12#0, %arg6 = %12#1) -> (index, i1) {
        %14 = arith.addi %arg4, %7 : index
        %15 = arith.cmpi uge, %14, %c2 : index
        scf.if %15 {
          "wsc.mbarrier_wait"(%5, %arg5, %arg6) : (!wsc.mbarriers, index, i1) -> ()
        }
        %16:2 = "wsc.ring_advance"(%arg5, %arg6) {num_stages = 2 : i32} : (index, i1) -> (index, i1)
        scf.yield %16#0, %16#1 : index, i1
      }
    }
    return
  }
}
