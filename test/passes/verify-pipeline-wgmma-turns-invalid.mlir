// Planted bugs in the turns consumer groups pass each other with
// --warp-specialize='wgmma-turns=1' (examples/matmul_v2.mlir specialized with
// num-stages=3 num-consumer-groups=2 producer=warpgroup wgmma-turns=1, then
// changed by hand): --verify-pipeline reports each.
// RUN: wsc-opt --split-input-file --verify-diagnostics --verify-pipeline %s

// Group 0 waits on turns[0] with the parity of its ring position, not its
// flip: its first wait blocks on the fresh barrier, and group 1 waits for the
// turn group 0 never passes.
module {
  func.func @first_turn_not_given(%arg0: memref<?x?xf16>, %arg1: memref<?x?xf16>, %arg2: memref<?x?xf32>) attributes {wsc.num_threads = 384 : i32} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %c64 = arith.constant 64 : index
    %c128 = arith.constant 128 : index
    %block_id_x = gpu.block_id  x
    %block_id_y = gpu.block_id  y
    %0 = arith.muli %block_id_x, %c128 : index
    %1 = arith.muli %block_id_y, %c128 : index
    %dim = memref.dim %arg0, %c1 : memref<?x?xf16>
    %2 = arith.ceildivui %dim, %c64 : index
    %3 = "wsc.alloc_shared"() : () -> memref<3x128x64xf16, 3>
    %4 = "wsc.alloc_shared"() : () -> memref<3x128x64xf16, 3>
    %5 = "wsc.mbarrier_alloc"() {arrival_count = 1 : i32, num_barriers = 3 : i32} : () -> !wsc.mbarriers
    %6 = "wsc.mbarrier_alloc"() {arrival_count = 256 : i32, num_barriers = 3 : i32} : () -> !wsc.mbarriers
    %7 = "wsc.mbarrier_alloc"() {arrival_count = 4 : i32, num_barriers = 2 : i32} : () -> !wsc.mbarriers
    "wsc.sync"() : () -> ()
    %false = arith.constant false
    %c0_0 = arith.constant 0 : index
    %8 = "wsc.role"() {max_registers = 232 : i32, num_threads = 128 : i32, role = "consumer", thread_begin = 0 : i32} : () -> i1
    scf.if %8 {
      %11 = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 64, 128>, f32>
      %false_1 = arith.constant false
      %12:2 = scf.for %arg3 = %c0 to %2 step %c1 iter_args(%arg4 = %c0_0, %arg5 = %false_1) -> (index, i1) {
        "wsc.mbarrier_wait"(%5, %arg4, %arg5) : (!wsc.mbarriers, index, i1) -> ()
        %c1_2 = arith.constant 1 : index
        %13 = arith.andi %arg4, %c1_2 : index
        %c0_3 = arith.constant 0 : index
        %14 = arith.cmpi ne, %13, %c0_3 : index
        %15 = arith.xori %14, %arg5 : i1
        %true = arith.constant true
        %16 = arith.xori %15, %true : i1
        %c0_4 = arith.constant 0 : index
        "wsc.mbarrier_wait"(%7, %c0_4, %15) : (!wsc.mbarriers, index, i1) -> ()
        "wsc.wgmma_fence"() : () -> ()
        "wsc.wgmma"(%3, %4, %arg4, %11) {a_row = 0 : i32, b_layout = "nk"} : (memref<3x128x64xf16, 3>, memref<3x128x64xf16, 3>, index, !wsc.acc<array<i64: 64, 128>, f32>) -> ()
        "wsc.wgmma_commit_group"() : () -> ()
        %c1_5 = arith.constant 1 : index
        "wsc.mbarrier_arrive"(%7, %c1_5) {per_warp} : (!wsc.mbarriers, index) -> ()
        "wsc.wgmma_wait_group"() {pending = 0 : i32} : () -> ()
        "wsc.mbarrier_arrive"(%6, %arg4) : (!wsc.mbarriers, index) -> ()
        %17:2 = "wsc.ring_advance"(%arg4, %arg5) {num_stages = 3 : i32} : (index, i1) -> (index, i1)
        scf.yield %17#0, %17#1 : index, i1
      }
      "wsc.store"(%11, %arg2, %0, %1) : (!wsc.acc<array<i64: 64, 128>, f32>, memref<?x?xf32>, index, index) -> ()
    }
    %9 = "wsc.role"() {max_registers = 232 : i32, num_threads = 128 : i32, role = "consumer", thread_begin = 128 : i32} : () -> i1
    scf.if %9 {
      %11 = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 64, 128>, f32>
      %false_1 = arith.constant false
      %12:2 = scf.for %arg3 = %c0 to %2 step %c1 iter_args(%arg4 = %c0_0, %arg5 = %false_1) -> (index, i1) {
        "wsc.mbarrier_wait"(%5, %arg4, %arg5) : (!wsc.mbarriers, index, i1) -> ()
        %c1_3 = arith.constant 1 : index
        %14 = arith.andi %arg4, %c1_3 : index
        %c0_4 = arith.constant 0 : index
        %15 = arith.cmpi ne, %14, %c0_4 : index
        %16 = arith.xori %15, %arg5 : i1
        %c1_5 = arith.constant 1 : index
        // expected-error @below {{deadlock: this wait for parity 0 on turns[1] never returns: every thread group is blocked and no copy is in flight (turns[1] is in phase 0 with 0 of 4 arrivals) (k_tiles = 1, num_stages = 3)}}
        "wsc.mbarrier_wait"(%7, %c1_5, %16) : (!wsc.mbarriers, index, i1) -> ()
        "wsc.wgmma_fence"() : () -> ()
        "wsc.wgmma"(%3, %4, %arg4, %11) {a_row = 64 : i32, b_layout = "nk"} : (memref<3x128x64xf16, 3>, memref<3x128x64xf16, 3>, index, !wsc.acc<array<i64: 64, 128>, f32>) -> ()
        "wsc.wgmma_commit_group"() : () -> ()
        %c0_6 = arith.constant 0 : index
        "wsc.mbarrier_arrive"(%7, %c0_6) {per_warp} : (!wsc.mbarriers, index) -> ()
        "wsc.wgmma_wait_group"() {pending = 0 : i32} : () -> ()
        "wsc.mbarrier_arrive"(%6, %arg4) : (!wsc.mbarriers, index) -> ()
        %17:2 = "wsc.ring_advance"(%arg4, %arg5) {num_stages = 3 : i32} : (index, i1) -> (index, i1)
        scf.yield %17#0, %17#1 : index, i1
      }
      %c64_2 = arith.constant 64 : index
      %13 = arith.addi %0, %c64_2 : index
      "wsc.store"(%11, %arg2, %13, %1) : (!wsc.acc<array<i64: 64, 128>, f32>, memref<?x?xf32>, index, index) -> ()
    }
    %10 = "wsc.role"() {max_registers = 40 : i32, num_threads = 128 : i32, role = "producer", thread_begin = 256 : i32} : () -> i1
    scf.if %10 {
      %true = arith.constant true
      %11:2 = scf.for %arg3 = %c0 to %2 step %c1 iter_args(%arg4 = %c0_0, %arg5 = %true) -> (index, i1) {
        "wsc.mbarrier_wait"(%6, %arg4, %arg5) : (!wsc.mbarriers, index, i1) -> ()
        %13 = arith.muli %arg3, %c64 : index
        %14 = "wsc.elect"() : () -> i1
        scf.if %14 {
          "wsc.mbarrier_arrive_expect_tx"(%5, %arg4) {tx_bytes = 32768 : i32} : (!wsc.mbarriers, index) -> ()
          "wsc.tma_load"(%arg0, %0, %13, %3, %arg4, %5) : (memref<?x?xf16>, index, index, memref<3x128x64xf16, 3>, index, !wsc.mbarriers) -> ()
          "wsc.tma_load"(%arg1, %1, %13, %4, %arg4, %5) : (memref<?x?xf16>, index, index, memref<3x128x64xf16, 3>, index, !wsc.mbarriers) -> ()
        }
        %15:2 = "wsc.ring_advance"(%arg4, %arg5) {num_stages = 3 : i32} : (index, i1) -> (index, i1)
        scf.yield %15#0, %15#1 : index, i1
      }
      %c3 = arith.constant 3 : index
      %c0_1 = arith.constant 0 : index
      %c1_2 = arith.constant 1 : index
      %12:2 = scf.for %arg3 = %c0_1 to %c3 step %c1_2 iter_args(%arg4 = %11#0, %arg5 = %11#1) -> (index, i1) {
        %13 = arith.addi %arg3, %2 : index
        %14 = arith.cmpi uge, %13, %c3 : index
        scf.if %14 {
          "wsc.mbarrier_wait"(%6, %arg4, %arg5) : (!wsc.mbarriers, index, i1) -> ()
        }
        %15:2 = "wsc.ring_advance"(%arg4, %arg5) {num_stages = 3 : i32} : (index, i1) -> (index, i1)
        scf.yield %15#0, %15#1 : index, i1
      }
    }
    return
  }
}

// -----

// Group 0 never passes the turn: group 1 never issues its WGMMAs, so it never
// releases a stage and the producer waits for the release forever.
module {
  func.func @turn_never_passed(%arg0: memref<?x?xf16>, %arg1: memref<?x?xf16>, %arg2: memref<?x?xf32>) attributes {wsc.num_threads = 384 : i32} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %c64 = arith.constant 64 : index
    %c128 = arith.constant 128 : index
    %block_id_x = gpu.block_id  x
    %block_id_y = gpu.block_id  y
    %0 = arith.muli %block_id_x, %c128 : index
    %1 = arith.muli %block_id_y, %c128 : index
    %dim = memref.dim %arg0, %c1 : memref<?x?xf16>
    %2 = arith.ceildivui %dim, %c64 : index
    %3 = "wsc.alloc_shared"() : () -> memref<3x128x64xf16, 3>
    %4 = "wsc.alloc_shared"() : () -> memref<3x128x64xf16, 3>
    %5 = "wsc.mbarrier_alloc"() {arrival_count = 1 : i32, num_barriers = 3 : i32} : () -> !wsc.mbarriers
    %6 = "wsc.mbarrier_alloc"() {arrival_count = 256 : i32, num_barriers = 3 : i32} : () -> !wsc.mbarriers
    %7 = "wsc.mbarrier_alloc"() {arrival_count = 4 : i32, num_barriers = 2 : i32} : () -> !wsc.mbarriers
    "wsc.sync"() : () -> ()
    %false = arith.constant false
    %c0_0 = arith.constant 0 : index
    %8 = "wsc.role"() {max_registers = 232 : i32, num_threads = 128 : i32, role = "consumer", thread_begin = 0 : i32} : () -> i1
    scf.if %8 {
      %11 = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 64, 128>, f32>
      %false_1 = arith.constant false
      %12:2 = scf.for %arg3 = %c0 to %2 step %c1 iter_args(%arg4 = %c0_0, %arg5 = %false_1) -> (index, i1) {
        "wsc.mbarrier_wait"(%5, %arg4, %arg5) : (!wsc.mbarriers, index, i1) -> ()
        %c1_2 = arith.constant 1 : index
        %13 = arith.andi %arg4, %c1_2 : index
        %c0_3 = arith.constant 0 : index
        %14 = arith.cmpi ne, %13, %c0_3 : index
        %15 = arith.xori %14, %arg5 : i1
        %true = arith.constant true
        %16 = arith.xori %15, %true : i1
        %c0_4 = arith.constant 0 : index
        "wsc.mbarrier_wait"(%7, %c0_4, %16) : (!wsc.mbarriers, index, i1) -> ()
        "wsc.wgmma_fence"() : () -> ()
        "wsc.wgmma"(%3, %4, %arg4, %11) {a_row = 0 : i32, b_layout = "nk"} : (memref<3x128x64xf16, 3>, memref<3x128x64xf16, 3>, index, !wsc.acc<array<i64: 64, 128>, f32>) -> ()
        "wsc.wgmma_commit_group"() : () -> ()
        %c1_5 = arith.constant 1 : index
        "wsc.wgmma_wait_group"() {pending = 0 : i32} : () -> ()
        "wsc.mbarrier_arrive"(%6, %arg4) : (!wsc.mbarriers, index) -> ()
        %17:2 = "wsc.ring_advance"(%arg4, %arg5) {num_stages = 3 : i32} : (index, i1) -> (index, i1)
        scf.yield %17#0, %17#1 : index, i1
      }
      "wsc.store"(%11, %arg2, %0, %1) : (!wsc.acc<array<i64: 64, 128>, f32>, memref<?x?xf32>, index, index) -> ()
    }
    %9 = "wsc.role"() {max_registers = 232 : i32, num_threads = 128 : i32, role = "consumer", thread_begin = 128 : i32} : () -> i1
    scf.if %9 {
      %11 = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 64, 128>, f32>
      %false_1 = arith.constant false
      %12:2 = scf.for %arg3 = %c0 to %2 step %c1 iter_args(%arg4 = %c0_0, %arg5 = %false_1) -> (index, i1) {
        "wsc.mbarrier_wait"(%5, %arg4, %arg5) : (!wsc.mbarriers, index, i1) -> ()
        %c1_3 = arith.constant 1 : index
        %14 = arith.andi %arg4, %c1_3 : index
        %c0_4 = arith.constant 0 : index
        %15 = arith.cmpi ne, %14, %c0_4 : index
        %16 = arith.xori %15, %arg5 : i1
        %c1_5 = arith.constant 1 : index
        "wsc.mbarrier_wait"(%7, %c1_5, %16) : (!wsc.mbarriers, index, i1) -> ()
        "wsc.wgmma_fence"() : () -> ()
        "wsc.wgmma"(%3, %4, %arg4, %11) {a_row = 64 : i32, b_layout = "nk"} : (memref<3x128x64xf16, 3>, memref<3x128x64xf16, 3>, index, !wsc.acc<array<i64: 64, 128>, f32>) -> ()
        "wsc.wgmma_commit_group"() : () -> ()
        %c0_6 = arith.constant 0 : index
        "wsc.mbarrier_arrive"(%7, %c0_6) {per_warp} : (!wsc.mbarriers, index) -> ()
        "wsc.wgmma_wait_group"() {pending = 0 : i32} : () -> ()
        "wsc.mbarrier_arrive"(%6, %arg4) : (!wsc.mbarriers, index) -> ()
        %17:2 = "wsc.ring_advance"(%arg4, %arg5) {num_stages = 3 : i32} : (index, i1) -> (index, i1)
        scf.yield %17#0, %17#1 : index, i1
      }
      %c64_2 = arith.constant 64 : index
      %13 = arith.addi %0, %c64_2 : index
      "wsc.store"(%11, %arg2, %13, %1) : (!wsc.acc<array<i64: 64, 128>, f32>, memref<?x?xf32>, index, index) -> ()
    }
    %10 = "wsc.role"() {max_registers = 40 : i32, num_threads = 128 : i32, role = "producer", thread_begin = 256 : i32} : () -> i1
    scf.if %10 {
      %true = arith.constant true
      %11:2 = scf.for %arg3 = %c0 to %2 step %c1 iter_args(%arg4 = %c0_0, %arg5 = %true) -> (index, i1) {
        "wsc.mbarrier_wait"(%6, %arg4, %arg5) : (!wsc.mbarriers, index, i1) -> ()
        %13 = arith.muli %arg3, %c64 : index
        %14 = "wsc.elect"() : () -> i1
        scf.if %14 {
          "wsc.mbarrier_arrive_expect_tx"(%5, %arg4) {tx_bytes = 32768 : i32} : (!wsc.mbarriers, index) -> ()
          "wsc.tma_load"(%arg0, %0, %13, %3, %arg4, %5) : (memref<?x?xf16>, index, index, memref<3x128x64xf16, 3>, index, !wsc.mbarriers) -> ()
          "wsc.tma_load"(%arg1, %1, %13, %4, %arg4, %5) : (memref<?x?xf16>, index, index, memref<3x128x64xf16, 3>, index, !wsc.mbarriers) -> ()
        }
        %15:2 = "wsc.ring_advance"(%arg4, %arg5) {num_stages = 3 : i32} : (index, i1) -> (index, i1)
        scf.yield %15#0, %15#1 : index, i1
      }
      %c3 = arith.constant 3 : index
      %c0_1 = arith.constant 0 : index
      %c1_2 = arith.constant 1 : index
      %12:2 = scf.for %arg3 = %c0_1 to %c3 step %c1_2 iter_args(%arg4 = %11#0, %arg5 = %11#1) -> (index, i1) {
        %13 = arith.addi %arg3, %2 : index
        %14 = arith.cmpi uge, %13, %c3 : index
        scf.if %14 {
          // expected-error @below {{deadlock: this wait for parity 0 on empty[0] never returns: every thread group is blocked and no copy is in flight (empty[0] is in phase 0 with 128 of 256 arrivals) (k_tiles = 1, num_stages = 3)}}
          "wsc.mbarrier_wait"(%6, %arg4, %arg5) : (!wsc.mbarriers, index, i1) -> ()
        }
        %15:2 = "wsc.ring_advance"(%arg4, %arg5) {num_stages = 3 : i32} : (index, i1) -> (index, i1)
        scf.yield %15#0, %15#1 : index, i1
      }
    }
    return
  }
}

// -----

// Group 1 passes the turn to itself (turns[1]) instead of to group 0: its
// arrival completes a phase of turns[1] its own next wait has not reached.
module {
  func.func @turn_passed_to_itself(%arg0: memref<?x?xf16>, %arg1: memref<?x?xf16>, %arg2: memref<?x?xf32>) attributes {wsc.num_threads = 384 : i32} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %c64 = arith.constant 64 : index
    %c128 = arith.constant 128 : index
    %block_id_x = gpu.block_id  x
    %block_id_y = gpu.block_id  y
    %0 = arith.muli %block_id_x, %c128 : index
    %1 = arith.muli %block_id_y, %c128 : index
    %dim = memref.dim %arg0, %c1 : memref<?x?xf16>
    %2 = arith.ceildivui %dim, %c64 : index
    %3 = "wsc.alloc_shared"() : () -> memref<3x128x64xf16, 3>
    %4 = "wsc.alloc_shared"() : () -> memref<3x128x64xf16, 3>
    %5 = "wsc.mbarrier_alloc"() {arrival_count = 1 : i32, num_barriers = 3 : i32} : () -> !wsc.mbarriers
    %6 = "wsc.mbarrier_alloc"() {arrival_count = 256 : i32, num_barriers = 3 : i32} : () -> !wsc.mbarriers
    %7 = "wsc.mbarrier_alloc"() {arrival_count = 4 : i32, num_barriers = 2 : i32} : () -> !wsc.mbarriers
    "wsc.sync"() : () -> ()
    %false = arith.constant false
    %c0_0 = arith.constant 0 : index
    %8 = "wsc.role"() {max_registers = 232 : i32, num_threads = 128 : i32, role = "consumer", thread_begin = 0 : i32} : () -> i1
    scf.if %8 {
      %11 = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 64, 128>, f32>
      %false_1 = arith.constant false
      %12:2 = scf.for %arg3 = %c0 to %2 step %c1 iter_args(%arg4 = %c0_0, %arg5 = %false_1) -> (index, i1) {
        "wsc.mbarrier_wait"(%5, %arg4, %arg5) : (!wsc.mbarriers, index, i1) -> ()
        %c1_2 = arith.constant 1 : index
        %13 = arith.andi %arg4, %c1_2 : index
        %c0_3 = arith.constant 0 : index
        %14 = arith.cmpi ne, %13, %c0_3 : index
        %15 = arith.xori %14, %arg5 : i1
        %true = arith.constant true
        %16 = arith.xori %15, %true : i1
        %c0_4 = arith.constant 0 : index
        "wsc.mbarrier_wait"(%7, %c0_4, %16) : (!wsc.mbarriers, index, i1) -> ()
        "wsc.wgmma_fence"() : () -> ()
        "wsc.wgmma"(%3, %4, %arg4, %11) {a_row = 0 : i32, b_layout = "nk"} : (memref<3x128x64xf16, 3>, memref<3x128x64xf16, 3>, index, !wsc.acc<array<i64: 64, 128>, f32>) -> ()
        "wsc.wgmma_commit_group"() : () -> ()
        %c1_5 = arith.constant 1 : index
        "wsc.mbarrier_arrive"(%7, %c1_5) {per_warp} : (!wsc.mbarriers, index) -> ()
        "wsc.wgmma_wait_group"() {pending = 0 : i32} : () -> ()
        "wsc.mbarrier_arrive"(%6, %arg4) : (!wsc.mbarriers, index) -> ()
        %17:2 = "wsc.ring_advance"(%arg4, %arg5) {num_stages = 3 : i32} : (index, i1) -> (index, i1)
        scf.yield %17#0, %17#1 : index, i1
      }
      "wsc.store"(%11, %arg2, %0, %1) : (!wsc.acc<array<i64: 64, 128>, f32>, memref<?x?xf32>, index, index) -> ()
    }
    %9 = "wsc.role"() {max_registers = 232 : i32, num_threads = 128 : i32, role = "consumer", thread_begin = 128 : i32} : () -> i1
    scf.if %9 {
      %11 = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 64, 128>, f32>
      %false_1 = arith.constant false
      %12:2 = scf.for %arg3 = %c0 to %2 step %c1 iter_args(%arg4 = %c0_0, %arg5 = %false_1) -> (index, i1) {
        "wsc.mbarrier_wait"(%5, %arg4, %arg5) : (!wsc.mbarriers, index, i1) -> ()
        %c1_3 = arith.constant 1 : index
        %14 = arith.andi %arg4, %c1_3 : index
        %c0_4 = arith.constant 0 : index
        %15 = arith.cmpi ne, %14, %c0_4 : index
        %16 = arith.xori %15, %arg5 : i1
        %c1_5 = arith.constant 1 : index
        "wsc.mbarrier_wait"(%7, %c1_5, %16) : (!wsc.mbarriers, index, i1) -> ()
        "wsc.wgmma_fence"() : () -> ()
        "wsc.wgmma"(%3, %4, %arg4, %11) {a_row = 64 : i32, b_layout = "nk"} : (memref<3x128x64xf16, 3>, memref<3x128x64xf16, 3>, index, !wsc.acc<array<i64: 64, 128>, f32>) -> ()
        "wsc.wgmma_commit_group"() : () -> ()
        %c0_6 = arith.constant 0 : index
        // expected-error @below {{phase overrun on turns[1]: phase 1 completes while the wait of the consumer role [128, 256) for parity 0, already satisfied by phase 0, has not returned: it then misses phase 1 (more phases complete than the waiter expects) (k_tiles = 1, num_stages = 3)}}
        "wsc.mbarrier_arrive"(%7, %c1_5) {per_warp} : (!wsc.mbarriers, index) -> ()
        "wsc.wgmma_wait_group"() {pending = 0 : i32} : () -> ()
        "wsc.mbarrier_arrive"(%6, %arg4) : (!wsc.mbarriers, index) -> ()
        %17:2 = "wsc.ring_advance"(%arg4, %arg5) {num_stages = 3 : i32} : (index, i1) -> (index, i1)
        scf.yield %17#0, %17#1 : index, i1
      }
      %c64_2 = arith.constant 64 : index
      %13 = arith.addi %0, %c64_2 : index
      "wsc.store"(%11, %arg2, %13, %1) : (!wsc.acc<array<i64: 64, 128>, f32>, memref<?x?xf32>, index, index) -> ()
    }
    %10 = "wsc.role"() {max_registers = 40 : i32, num_threads = 128 : i32, role = "producer", thread_begin = 256 : i32} : () -> i1
    scf.if %10 {
      %true = arith.constant true
      %11:2 = scf.for %arg3 = %c0 to %2 step %c1 iter_args(%arg4 = %c0_0, %arg5 = %true) -> (index, i1) {
        "wsc.mbarrier_wait"(%6, %arg4, %arg5) : (!wsc.mbarriers, index, i1) -> ()
        %13 = arith.muli %arg3, %c64 : index
        %14 = "wsc.elect"() : () -> i1
        scf.if %14 {
          "wsc.mbarrier_arrive_expect_tx"(%5, %arg4) {tx_bytes = 32768 : i32} : (!wsc.mbarriers, index) -> ()
          "wsc.tma_load"(%arg0, %0, %13, %3, %arg4, %5) : (memref<?x?xf16>, index, index, memref<3x128x64xf16, 3>, index, !wsc.mbarriers) -> ()
          "wsc.tma_load"(%arg1, %1, %13, %4, %arg4, %5) : (memref<?x?xf16>, index, index, memref<3x128x64xf16, 3>, index, !wsc.mbarriers) -> ()
        }
        %15:2 = "wsc.ring_advance"(%arg4, %arg5) {num_stages = 3 : i32} : (index, i1) -> (index, i1)
        scf.yield %15#0, %15#1 : index, i1
      }
      %c3 = arith.constant 3 : index
      %c0_1 = arith.constant 0 : index
      %c1_2 = arith.constant 1 : index
      %12:2 = scf.for %arg3 = %c0_1 to %c3 step %c1_2 iter_args(%arg4 = %11#0, %arg5 = %11#1) -> (index, i1) {
        %13 = arith.addi %arg3, %2 : index
        %14 = arith.cmpi uge, %13, %c3 : index
        scf.if %14 {
          "wsc.mbarrier_wait"(%6, %arg4, %arg5) : (!wsc.mbarriers, index, i1) -> ()
        }
        %15:2 = "wsc.ring_advance"(%arg4, %arg5) {num_stages = 3 : i32} : (index, i1) -> (index, i1)
        scf.yield %15#0, %15#1 : index, i1
      }
    }
    return
  }
}

// -----

// Group 0 releases its stage on empty before its wait_group retires the
// WGMMA reading it: an arrive on empty still releases a stage when the
// turns barriers sit beside it.
module {
  func.func @released_before_its_wgmma_retires(%arg0: memref<?x?xf16>, %arg1: memref<?x?xf16>, %arg2: memref<?x?xf32>) attributes {wsc.num_threads = 384 : i32} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %c64 = arith.constant 64 : index
    %c128 = arith.constant 128 : index
    %block_id_x = gpu.block_id  x
    %block_id_y = gpu.block_id  y
    %0 = arith.muli %block_id_x, %c128 : index
    %1 = arith.muli %block_id_y, %c128 : index
    %dim = memref.dim %arg0, %c1 : memref<?x?xf16>
    %2 = arith.ceildivui %dim, %c64 : index
    %3 = "wsc.alloc_shared"() : () -> memref<3x128x64xf16, 3>
    %4 = "wsc.alloc_shared"() : () -> memref<3x128x64xf16, 3>
    %5 = "wsc.mbarrier_alloc"() {arrival_count = 1 : i32, num_barriers = 3 : i32} : () -> !wsc.mbarriers
    %6 = "wsc.mbarrier_alloc"() {arrival_count = 256 : i32, num_barriers = 3 : i32} : () -> !wsc.mbarriers
    %7 = "wsc.mbarrier_alloc"() {arrival_count = 4 : i32, num_barriers = 2 : i32} : () -> !wsc.mbarriers
    "wsc.sync"() : () -> ()
    %false = arith.constant false
    %c0_0 = arith.constant 0 : index
    %8 = "wsc.role"() {max_registers = 232 : i32, num_threads = 128 : i32, role = "consumer", thread_begin = 0 : i32} : () -> i1
    scf.if %8 {
      %11 = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 64, 128>, f32>
      %false_1 = arith.constant false
      %12:2 = scf.for %arg3 = %c0 to %2 step %c1 iter_args(%arg4 = %c0_0, %arg5 = %false_1) -> (index, i1) {
        "wsc.mbarrier_wait"(%5, %arg4, %arg5) : (!wsc.mbarriers, index, i1) -> ()
        %c1_2 = arith.constant 1 : index
        %13 = arith.andi %arg4, %c1_2 : index
        %c0_3 = arith.constant 0 : index
        %14 = arith.cmpi ne, %13, %c0_3 : index
        %15 = arith.xori %14, %arg5 : i1
        %true = arith.constant true
        %16 = arith.xori %15, %true : i1
        %c0_4 = arith.constant 0 : index
        "wsc.mbarrier_wait"(%7, %c0_4, %16) : (!wsc.mbarriers, index, i1) -> ()
        "wsc.wgmma_fence"() : () -> ()
        "wsc.wgmma"(%3, %4, %arg4, %11) {a_row = 0 : i32, b_layout = "nk"} : (memref<3x128x64xf16, 3>, memref<3x128x64xf16, 3>, index, !wsc.acc<array<i64: 64, 128>, f32>) -> ()
        "wsc.wgmma_commit_group"() : () -> ()
        %c1_5 = arith.constant 1 : index
        "wsc.mbarrier_arrive"(%7, %c1_5) {per_warp} : (!wsc.mbarriers, index) -> ()
        // expected-error @below {{stage 0 released before the WGMMA reading it has completed (its group, the last committed, is still in flight: a wsc.wgmma_wait_group {pending = 0} must retire it before this arrive on empty[0]) (k_tiles = 1, num_stages = 3)}}
        "wsc.mbarrier_arrive"(%6, %arg4) : (!wsc.mbarriers, index) -> ()
        "wsc.wgmma_wait_group"() {pending = 0 : i32} : () -> ()
        %17:2 = "wsc.ring_advance"(%arg4, %arg5) {num_stages = 3 : i32} : (index, i1) -> (index, i1)
        scf.yield %17#0, %17#1 : index, i1
      }
      "wsc.store"(%11, %arg2, %0, %1) : (!wsc.acc<array<i64: 64, 128>, f32>, memref<?x?xf32>, index, index) -> ()
    }
    %9 = "wsc.role"() {max_registers = 232 : i32, num_threads = 128 : i32, role = "consumer", thread_begin = 128 : i32} : () -> i1
    scf.if %9 {
      %11 = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 64, 128>, f32>
      %false_1 = arith.constant false
      %12:2 = scf.for %arg3 = %c0 to %2 step %c1 iter_args(%arg4 = %c0_0, %arg5 = %false_1) -> (index, i1) {
        "wsc.mbarrier_wait"(%5, %arg4, %arg5) : (!wsc.mbarriers, index, i1) -> ()
        %c1_3 = arith.constant 1 : index
        %14 = arith.andi %arg4, %c1_3 : index
        %c0_4 = arith.constant 0 : index
        %15 = arith.cmpi ne, %14, %c0_4 : index
        %16 = arith.xori %15, %arg5 : i1
        %c1_5 = arith.constant 1 : index
        "wsc.mbarrier_wait"(%7, %c1_5, %16) : (!wsc.mbarriers, index, i1) -> ()
        "wsc.wgmma_fence"() : () -> ()
        "wsc.wgmma"(%3, %4, %arg4, %11) {a_row = 64 : i32, b_layout = "nk"} : (memref<3x128x64xf16, 3>, memref<3x128x64xf16, 3>, index, !wsc.acc<array<i64: 64, 128>, f32>) -> ()
        "wsc.wgmma_commit_group"() : () -> ()
        %c0_6 = arith.constant 0 : index
        "wsc.mbarrier_arrive"(%7, %c0_6) {per_warp} : (!wsc.mbarriers, index) -> ()
        "wsc.wgmma_wait_group"() {pending = 0 : i32} : () -> ()
        "wsc.mbarrier_arrive"(%6, %arg4) : (!wsc.mbarriers, index) -> ()
        %17:2 = "wsc.ring_advance"(%arg4, %arg5) {num_stages = 3 : i32} : (index, i1) -> (index, i1)
        scf.yield %17#0, %17#1 : index, i1
      }
      %c64_2 = arith.constant 64 : index
      %13 = arith.addi %0, %c64_2 : index
      "wsc.store"(%11, %arg2, %13, %1) : (!wsc.acc<array<i64: 64, 128>, f32>, memref<?x?xf32>, index, index) -> ()
    }
    %10 = "wsc.role"() {max_registers = 40 : i32, num_threads = 128 : i32, role = "producer", thread_begin = 256 : i32} : () -> i1
    scf.if %10 {
      %true = arith.constant true
      %11:2 = scf.for %arg3 = %c0 to %2 step %c1 iter_args(%arg4 = %c0_0, %arg5 = %true) -> (index, i1) {
        "wsc.mbarrier_wait"(%6, %arg4, %arg5) : (!wsc.mbarriers, index, i1) -> ()
        %13 = arith.muli %arg3, %c64 : index
        %14 = "wsc.elect"() : () -> i1
        scf.if %14 {
          "wsc.mbarrier_arrive_expect_tx"(%5, %arg4) {tx_bytes = 32768 : i32} : (!wsc.mbarriers, index) -> ()
          "wsc.tma_load"(%arg0, %0, %13, %3, %arg4, %5) : (memref<?x?xf16>, index, index, memref<3x128x64xf16, 3>, index, !wsc.mbarriers) -> ()
          "wsc.tma_load"(%arg1, %1, %13, %4, %arg4, %5) : (memref<?x?xf16>, index, index, memref<3x128x64xf16, 3>, index, !wsc.mbarriers) -> ()
        }
        %15:2 = "wsc.ring_advance"(%arg4, %arg5) {num_stages = 3 : i32} : (index, i1) -> (index, i1)
        scf.yield %15#0, %15#1 : index, i1
      }
      %c3 = arith.constant 3 : index
      %c0_1 = arith.constant 0 : index
      %c1_2 = arith.constant 1 : index
      %12:2 = scf.for %arg3 = %c0_1 to %c3 step %c1_2 iter_args(%arg4 = %11#0, %arg5 = %11#1) -> (index, i1) {
        %13 = arith.addi %arg3, %2 : index
        %14 = arith.cmpi uge, %13, %c3 : index
        scf.if %14 {
          "wsc.mbarrier_wait"(%6, %arg4, %arg5) : (!wsc.mbarriers, index, i1) -> ()
        }
        %15:2 = "wsc.ring_advance"(%arg4, %arg5) {num_stages = 3 : i32} : (index, i1) -> (index, i1)
        scf.yield %15#0, %15#1 : index, i1
      }
    }
    return
  }
}
