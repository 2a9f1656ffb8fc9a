// --verify-pipeline on the consumers' reads of a stage into registers in a
// specialized K loop: block-scaled fp8 as --warp-specialize makes it from
// warp-specialize-stage-reads.mlir (one consumer group), where TMA copies the
// K tile's scales into the stage beside A's and B's tiles and the consumers
// read them after the full wait. The kernel as made is clean; a read after
// the stage's release, and one before its wait, are each reported at the
// read, in the protocol's terms.
// RUN: wsc-opt --verify-pipeline %s > /dev/null
// RUN: sed 's/^        "wsc.mbarrier_arrive"(%%5, %%arg6).*$/&\n        %%late = "wsc.load_shared"(%%3, %%arg6) {transpose} : (memref<2x1x128xf32, 3>, index) -> !wsc.acc<array<i64: 128, 1>, f32>/' %s | not wsc-opt --verify-pipeline - 2>&1 | FileCheck %s --check-prefix=AFTER-RELEASE
// RUN: sed -e '/^        %%18 = "wsc.load_shared"/d' -e 's/^        "wsc.mbarrier_wait"(%%4, %%arg6, %%arg7).*$/        %%18 = "wsc.load_shared"(%%3, %%arg6) {transpose} : (memref<2x1x128xf32, 3>, index) -> !wsc.acc<array<i64: 128, 1>, f32>\n&/' %s | not wsc-opt --verify-pipeline - 2>&1 | FileCheck %s --check-prefix=BEFORE-WAIT

// AFTER-RELEASE: <stdin>:[[@LINE+51]]:17: error: wsc.load_shared reads ring of 'd' stage 0 after it was refilled: it sees copy #2 where it expects copy #1
// BEFORE-WAIT: <stdin>:[[@LINE+34]]:15: error: wsc.load_shared reads ring of 'd' stage 0 before its data landed (copy #1 of the stage was never issued)
module {
  func.func @matmul(%arg0: memref<?x?xf8E4M3FN>, %arg1: memref<?x?xf8E4M3FN>, %arg2: memref<?x?xf32>, %arg3: memref<?x?xf32>, %arg4: memref<?xf32>) attributes {wsc.num_threads = 160 : i32} {
    %c1 = arith.constant 1 : index
    %dim = memref.dim %arg0, %c1 : memref<?x?xf8E4M3FN>
    %c128 = arith.constant 128 : index
    %0 = arith.ceildivui %dim, %c128 : index
    %1 = "wsc.alloc_shared"() : () -> memref<2x128x128xf8E4M3FN, 3>
    %2 = "wsc.alloc_shared"() : () -> memref<2x64x128xf8E4M3FN, 3>
    %3 = "wsc.alloc_shared"() : () -> memref<2x1x128xf32, 3>
    %4 = "wsc.mbarrier_alloc"() {arrival_count = 1 : i32, num_barriers = 2 : i32} : () -> !wsc.mbarriers
    %5 = "wsc.mbarrier_alloc"() {arrival_count = 128 : i32, num_barriers = 2 : i32} : () -> !wsc.mbarriers
    "wsc.sync"() : () -> ()
    %c0 = arith.constant 0 : index
    %dim_0 = memref.dim %arg0, %c0 : memref<?x?xf8E4M3FN>
    %6 = arith.ceildivui %dim_0, %c128 : index
    %dim_1 = memref.dim %arg2, %c1 : memref<?x?xf32>
    %c64 = arith.constant 64 : index
    %7 = arith.ceildivui %dim_1, %c64 : index
    %block_id_x = gpu.block_id  x
    %block_id_y = gpu.block_id  y
    %8 = arith.muli %block_id_y, %6 : index
    %9 = arith.addi %block_id_x, %8 : index
    %10 = arith.remui %9, %6 : index
    %11 = arith.divui %9, %6 : index
    %12 = arith.muli %10, %c128 : index
    %13 = arith.muli %11, %c64 : index
    %false = arith.constant false
    %c0_2 = arith.constant 0 : index
    %14 = "wsc.role"() {num_threads = 128 : i32, role = "consumer", thread_begin = 0 : i32} : () -> i1
    scf.if %14 {
      %16 = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 128, 64>, f32>
      %false_3 = arith.constant false
      %17:2 = scf.for %arg5 = %c0 to %0 step %c1 iter_args(%arg6 = %c0_2, %arg7 = %false_3) -> (index, i1) {
        "wsc.mbarrier_wait"(%4, %arg6, %arg7) : (!wsc.mbarriers, index, i1) -> ()
        %18 = "wsc.load_shared"(%3, %arg6) {transpose} : (memref<2x1x128xf32, 3>, index) -> !wsc.acc<array<i64: 128, 1>, f32>
        %19 = arith.divui %13, %c128 : index
        %20 = arith.muli %19, %0 : index
        %21 = arith.addi %20, %arg5 : index
        %22 = "wsc.tile_broadcast"(%arg4, %21) {along = "cols"} : (memref<?xf32>, index) -> !wsc.acc<array<i64: 128, 1>, f32>
        %23 = "wsc.tile_binary"(%18, %22) {kind = "mul"} : (!wsc.acc<array<i64: 128, 1>, f32>, !wsc.acc<array<i64: 128, 1>, f32>) -> !wsc.acc<array<i64: 128, 1>, f32>
        "wsc.wgmma_fence"() : () -> ()
        %24 = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 128, 64>, f32>
        "wsc.wgmma"(%1, %2, %arg6, %24) {a_row = 0 : i32, b_layout = "nk"} : (memref<2x128x128xf8E4M3FN, 3>, memref<2x64x128xf8E4M3FN, 3>, index, !wsc.acc<array<i64: 128, 64>, f32>) -> ()
        "wsc.wgmma_commit_group"() : () -> ()
        "wsc.wgmma_wait_group"() {pending = 0 : i32} : () -> ()
        %25 = "wsc.tile_binary"(%24, %23) {kind = "mul"} : (!wsc.acc<array<i64: 128, 64>, f32>, !wsc.acc<array<i64: 128, 1>, f32>) -> !wsc.acc<array<i64: 128, 64>, f32>
        %26 = "wsc.tile_binary"(%16, %25) {kind = "add"} : (!wsc.acc<array<i64: 128, 64>, f32>, !wsc.acc<array<i64: 128, 64>, f32>) -> !wsc.acc<array<i64: 128, 64>, f32>
        "wsc.tile_assign"(%16, %26) : (!wsc.acc<array<i64: 128, 64>, f32>, !wsc.acc<array<i64: 128, 64>, f32>) -> ()
        "wsc.mbarrier_arrive"(%5, %arg6) : (!wsc.mbarriers, index) -> ()
        %27:2 = "wsc.ring_advance"(%arg6, %arg7) {num_stages = 2 : i32} : (index, i1) -> (index, i1)
        scf.yield %27#0, %27#1 : index, i1
      }
      "wsc.store"(%16, %arg2, %12, %13) : (!wsc.acc<array<i64: 128, 64>, f32>, memref<?x?xf32>, index, index) -> ()
    }
    %15 = "wsc.role"() {num_threads = 32 : i32, role = "producer", thread_begin = 128 : i32} : () -> i1
    scf.if %15 {
      %true = arith.constant true
      %16:2 = scf.for %arg5 = %c0 to %0 step %c1 iter_args(%arg6 = %c0_2, %arg7 = %true) -> (index, i1) {
        "wsc.mbarrier_wait"(%5, %arg6, %arg7) : (!wsc.mbarriers, index, i1) -> ()
        %18 = arith.muli %arg5, %c128 : index
        %19 = "wsc.elect"() : () -> i1
        scf.if %19 {
          "wsc.mbarrier_arrive_expect_tx"(%4, %arg6) {tx_bytes = 25088 : i32} : (!wsc.mbarriers, index) -> ()
          "wsc.tma_load"(%arg0, %12, %18, %1, %arg6, %4) : (memref<?x?xf8E4M3FN>, index, index, memref<2x128x128xf8E4M3FN, 3>, index, !wsc.mbarriers) -> ()
          "wsc.tma_load"(%arg1, %13, %18, %2, %arg6, %4) : (memref<?x?xf8E4M3FN>, index, index, memref<2x64x128xf8E4M3FN, 3>, index, !wsc.mbarriers) -> ()
          "wsc.tma_load"(%arg3, %arg5, %12, %3, %arg6, %4) : (memref<?x?xf32>, index, index, memref<2x1x128xf32, 3>, index, !wsc.mbarriers) -> ()
        }
        %20:2 = "wsc.ring_advance"(%arg6, %arg7) {num_stages = 2 : i32} : (index, i1) -> (index, i1)
        scf.yield %20#0, %20#1 : index, i1
      }
      %c2 = arith.constant 2 : index
      %c0_3 = arith.constant 0 : index
      %c1_4 = arith.constant 1 : index
      %17:2 = scf.for %arg5 = %c0_3 to %c2 step %c1_4 iter_args(%arg6 = %16#0, %arg7 = %16#1) -> (index, i1) {
        %18 = arith.addi %arg5, %0 : index
        %19 = arith.cmpi uge, %18, %c2 : index
        scf.if %19 {
          "wsc.mbarrier_wait"(%5, %arg6, %arg7) : (!wsc.mbarriers, index, i1) -> ()
        }
        %20:2 = "wsc.ring_advance"(%arg6, %arg7) {num_stages = 2 : i32} : (index, i1) -> (index, i1)
        scf.yield %20#0, %20#1 : index, i1
      }
    }
    return
  }
}
