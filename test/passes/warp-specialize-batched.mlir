// --warp-specialize on a persistent kernel over batches of matrices: the tile
// loop walks every matrix's tiles, and the matrix a tile reads and writes
// (wsc.batch_matrix, a value like arith's) is made again by each role, per tile:
// the producer's copies read the tile's matrices of A and B, the consumer's
// TMA store writes its matrix of C.
// RUN: wsc-opt --warp-specialize --verify-pipeline %s | FileCheck %s

func.func @batched(%a: memref<?x?x?xf16>, %b: memref<?x?x?xf16>, %c: memref<?x?x?xf16>)
    attributes {wsc.num_threads = 128 : i32} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c64 = arith.constant 64 : index
  %c128 = arith.constant 128 : index
  %false = arith.constant false
  %batch = memref.dim %a, %c0 : memref<?x?x?xf16>
  %m = memref.dim %a, %c1 : memref<?x?x?xf16>
  %k = memref.dim %a, %c2 : memref<?x?x?xf16>
  %n = memref.dim %c, %c2 : memref<?x?x?xf16>
  %k_tiles = arith.ceildivui %k, %c64 : index
  %tiles_m = arith.ceildivui %m, %c128 : index
  %tiles_n = arith.ceildivui %n, %c128 : index
  %per_matrix = arith.muli %tiles_m, %tiles_n : index
  %units = arith.muli %per_matrix, %batch : index
  %sa = "wsc.alloc_shared"() : () -> memref<4x128x64xf16, 3>
  %sb = "wsc.alloc_shared"() : () -> memref<4x128x64xf16, 3>
  %sc = "wsc.alloc_shared"() : () -> memref<1x128x128xf16, 3>
  %full = "wsc.mbarrier_alloc"() {arrival_count = 1 : i32, num_barriers = 4 : i32} : () -> !wsc.mbarriers
  "wsc.sync"() : () -> ()
  %bx = gpu.block_id x
  %grid = gpu.grid_dim x
  %last_stage, %last_phase = scf.for %unit = %bx to %units step %grid
      iter_args(%tile_stage = %c0, %tile_phase = %false) -> (index, i1) {
    %matrix = arith.divui %unit, %per_matrix : index
    %tile = arith.remui %unit, %per_matrix : index
    %am = "wsc.batch_matrix"(%a, %matrix) : (memref<?x?x?xf16>, index) -> memref<?x?xf16>
    %bm = "wsc.batch_matrix"(%b, %matrix) : (memref<?x?x?xf16>, index) -> memref<?x?xf16>
    %cm = "wsc.batch_matrix"(%c, %matrix) : (memref<?x?x?xf16>, index) -> memref<?x?xf16>
    %row = arith.remui %tile, %tiles_m : index
    %col = arith.divui %tile, %tiles_m : index
    %m0 = arith.muli %row, %c128 : index
    %n0 = arith.muli %col, %c128 : index
    %acc = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 128, 128>, f32>
    %stage_n, %phase_n = scf.for %kt = %c0 to %k_tiles step %c1
        iter_args(%stage = %tile_stage, %phase = %tile_phase) -> (index, i1) {
      %k0 = arith.muli %kt, %c64 : index
      %elected = "wsc.elect"() : () -> i1
      scf.if %elected {
        "wsc.mbarrier_arrive_expect_tx"(%full, %stage) {tx_bytes = 32768 : i32} : (!wsc.mbarriers, index) -> ()
        "wsc.tma_load"(%am, %m0, %k0, %sa, %stage, %full) : (memref<?x?xf16>, index, index, memref<4x128x64xf16, 3>, index, !wsc.mbarriers) -> ()
        "wsc.tma_load"(%bm, %n0, %k0, %sb, %stage, %full) : (memref<?x?xf16>, index, index, memref<4x128x64xf16, 3>, index, !wsc.mbarriers) -> ()
      }
      "wsc.mbarrier_wait"(%full, %stage, %phase) : (!wsc.mbarriers, index, i1) -> ()
      "wsc.wgmma_fence"() : () -> ()
      "wsc.wgmma"(%sa, %sb, %stage, %acc) {a_row = 0 : i32, b_layout = "nk"} : (memref<4x128x64xf16, 3>, memref<4x128x64xf16, 3>, index, !wsc.acc<array<i64: 128, 128>, f32>) -> ()
      "wsc.wgmma_commit_group"() : () -> ()
      "wsc.wgmma_wait_group"() {pending = 0 : i32} : () -> ()
      "wsc.sync"() : () -> ()
      %next_stage, %next_phase = "wsc.ring_advance"(%stage, %phase) {num_stages = 4 : i32} : (index, i1) -> (index, i1)
      scf.yield %next_stage, %next_phase : index, i1
    }
    // The previous tile's copy must have read the staging buffer.
    %waiter = "wsc.elect"() : () -> i1
    scf.if %waiter {
      "wsc.tma_store_wait"() {pending = 0 : i32} : () -> ()
    }
    "wsc.sync"() : () -> ()
    %h = "wsc.cast"(%acc) : (!wsc.acc<array<i64: 128, 128>, f32>) -> !wsc.acc<array<i64: 128, 128>, f16>
    "wsc.store_shared"(%h, %sc, %c0) : (!wsc.acc<array<i64: 128, 128>, f16>, memref<1x128x128xf16, 3>, index) -> ()
    "wsc.fence_proxy_async"() : () -> ()
    "wsc.sync"() : () -> ()
    %storer = "wsc.elect"() : () -> i1
    scf.if %storer {
      "wsc.tma_store"(%sc, %c0, %cm, %m0, %n0) : (memref<1x128x128xf16, 3>, index, memref<?x?xf16>, index, index) -> ()
    }
    scf.yield %stage_n, %phase_n : index, i1
  }
  return
}

// CHECK-LABEL: func.func @batched
// The consumer's tile loop makes its tile's matrix of C and stores into it.
// CHECK:       "wsc.role"() {{.*}}role = "consumer"
// CHECK:       scf.for [[UNIT:%.*]] = {{.*}} iter_args(
// CHECK:         [[MATRIX:%.*]] = arith.divui [[UNIT]]
// CHECK:         [[CM:%.*]] = "wsc.batch_matrix"(%arg2, [[MATRIX]])
// CHECK:         "wsc.tma_store"({{.*}}, [[CM]],
// The producer's makes its matrices of A and B and copies from them.
// CHECK:       "wsc.role"() {{.*}}role = "producer"
// CHECK:       scf.for [[PUNIT:%.*]] = {{.*}} iter_args(
// CHECK:         [[PMATRIX:%.*]] = arith.divui [[PUNIT]]
// CHECK:         [[AM:%.*]] = "wsc.batch_matrix"(%arg0, [[PMATRIX]])
// CHECK:         [[BM:%.*]] = "wsc.batch_matrix"(%arg1, [[PMATRIX]])
// CHECK:           "wsc.tma_load"([[AM]],
// CHECK:           "wsc.tma_load"([[BM]],
// CHECK-NOT:   "wsc.tma_store"
