// Planted bugs in stream-K hand-overs (the kernel of
// warp-specialize-stream-k.mlir, one mistake each): --verify-pipeline
// simulates a persistent block also as block 1 of a grid of 3 over 4 tiles,
// whose share of the K tiles starts and ends mid-tile, so a hand-over bug
// shows up even where block 0 of a grid of 1 sums every tile whole.
// RUN: wsc-opt --split-input-file --verify-diagnostics --verify-pipeline %s

// The reduction outside the arrival's guard: the block adds the other
// block's partial sum of a shared tile before that block has stored it.
func.func @reduce_before_the_other_share(%a: memref<?x?xf16>, %b: memref<?x?xf16>, %c: memref<?x?xf32>, %partials: memref<?xf32>, %counters: memref<?xi32>) attributes {wsc.num_threads = 128 : i32} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c128 = arith.constant 128 : index
  %c64 = arith.constant 64 : index
  %k = memref.dim %a, %c1 : memref<?x?xf16>
  %k_tiles = arith.ceildivui %k, %c64 : index
  %sa = "wsc.alloc_shared"() : () -> memref<2x128x64xf16, 3>
  %sb = "wsc.alloc_shared"() : () -> memref<2x64x64xf16, 3>
  %full = "wsc.mbarrier_alloc"() {arrival_count = 1 : i32, num_barriers = 2 : i32} : () -> !wsc.mbarriers
  "wsc.sync"() : () -> ()
  %m = memref.dim %a, %c0 : memref<?x?xf16>
  %tiles_m = arith.ceildivui %m, %c128 : index
  %n = memref.dim %c, %c1 : memref<?x?xf32>
  %tiles_n = arith.ceildivui %n, %c64 : index
  %block = gpu.block_id x
  %blocks = gpu.grid_dim x
  %tiles = arith.muli %tiles_m, %tiles_n : index
  %total = arith.muli %tiles, %k_tiles : index
  %begin_num = arith.muli %block, %total : index
  %begin = arith.divui %begin_num, %blocks : index
  %next = arith.addi %block, %c1 : index
  %end_num = arith.muli %next, %total : index
  %end = arith.divui %end_num, %blocks : index
  %first_tile = arith.divui %begin, %k_tiles : index
  %last_k = arith.subi %end, %c1 : index
  %last_tile = arith.divui %last_k, %k_tiles : index
  %tile_stop = arith.addi %last_tile, %c1 : index
  %false = arith.constant false
  %ring:2 = scf.for %tile = %first_tile to %tile_stop step %c1 iter_args(%stage0 = %c0, %phase0 = %false) -> (index, i1) {
    %tile_row = arith.remui %tile, %tiles_m : index
    %tile_col = arith.divui %tile, %tiles_m : index
    %row = arith.muli %tile_row, %c128 : index
    %col = arith.muli %tile_col, %c64 : index
    %acc = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 128, 64>, f32>
    %tile_start = arith.muli %tile, %k_tiles : index
    %before = arith.minui %begin, %tile_start : index
    %first_k = arith.subi %begin, %before : index
    %left = arith.subi %end, %tile_start : index
    %stop_k = arith.minui %left, %k_tiles : index
    %my_k_tiles = arith.subi %stop_k, %first_k : index
    %after:2 = scf.for %i = %c0 to %my_k_tiles step %c1 iter_args(%stage = %stage0, %phase = %phase0) -> (index, i1) {
      %kt = arith.addi %first_k, %i : index
      %k0 = arith.muli %kt, %c64 : index
      %leader = "wsc.elect"() : () -> i1
      scf.if %leader {
        "wsc.mbarrier_arrive_expect_tx"(%full, %stage) {tx_bytes = 24576 : i32} : (!wsc.mbarriers, index) -> ()
        "wsc.tma_load"(%a, %row, %k0, %sa, %stage, %full) : (memref<?x?xf16>, index, index, memref<2x128x64xf16, 3>, index, !wsc.mbarriers) -> ()
        "wsc.tma_load"(%b, %col, %k0, %sb, %stage, %full) : (memref<?x?xf16>, index, index, memref<2x64x64xf16, 3>, index, !wsc.mbarriers) -> ()
      }
      "wsc.mbarrier_wait"(%full, %stage, %phase) : (!wsc.mbarriers, index, i1) -> ()
      "wsc.wgmma_fence"() : () -> ()
      "wsc.wgmma"(%sa, %sb, %stage, %acc) {a_row = 0 : i32, b_layout = "nk"} : (memref<2x128x64xf16, 3>, memref<2x64x64xf16, 3>, index, !wsc.acc<array<i64: 128, 64>, f32>) -> ()
      "wsc.wgmma_commit_group"() : () -> ()
      "wsc.wgmma_wait_group"() {pending = 0 : i32} : () -> ()
      "wsc.sync"() : () -> ()
      %advanced:2 = "wsc.ring_advance"(%stage, %phase) {num_stages = 2 : i32} : (index, i1) -> (index, i1)
      scf.yield %advanced#0, %advanced#1 : index, i1
    }
    %from_start = arith.cmpi eq, %first_k, %c0 : index
    %to_end = arith.cmpi eq, %my_k_tiles, %k_tiles : index
    %whole = arith.andi %from_start, %to_end : i1
    scf.if %whole {
      "wsc.store"(%acc, %c, %row, %col) : (!wsc.acc<array<i64: 128, 64>, f32>, memref<?x?xf32>, index, index) -> ()
    }
    %true = arith.constant true
    %shared = arith.xori %whole, %true : i1
    scf.if %shared {
      %later = arith.minui %first_k, %c1 : index
      %slot = arith.subi %next, %later : index
      %slot_row = arith.muli %slot, %c128 : index
      "wsc.partial_store"(%acc, %partials, %slot_row, %later) {splits = 2 : i32} : (!wsc.acc<array<i64: 128, 64>, f32>, memref<?xf32>, index, index) -> ()
      %last = "wsc.partial_arrive"(%counters, %slot_row) {splits = 2 : i32} : (memref<?xi32>, index) -> i1
      // expected-error @+1 {{early-reduce: the 128 threads outside every role reduces the partial sums of rows from 256 though its arrival was not the last: other splits may not have stored theirs (k_tiles = 2, num_stages = 2, 4 output tiles over 3 blocks, as block 1)}}
      "wsc.partial_reduce"(%acc, %partials, %counters, %slot_row) {splits = 2 : i32} : (!wsc.acc<array<i64: 128, 64>, f32>, memref<?xf32>, memref<?xi32>, index) -> ()
      "wsc.store"(%acc, %c, %row, %col) : (!wsc.acc<array<i64: 128, 64>, f32>, memref<?x?xf32>, index, index) -> ()
    }
    scf.yield %after#0, %after#1 : index, i1
  }
  return
}

// -----

// The arrival outside the hand-over's guard: a tile the block sums whole
// arrives on a counter with no partial sum stored for it.
func.func @arrival_for_a_whole_tile(%a: memref<?x?xf16>, %b: memref<?x?xf16>, %c: memref<?x?xf32>, %partials: memref<?xf32>, %counters: memref<?xi32>) attributes {wsc.num_threads = 128 : i32} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c128 = arith.constant 128 : index
  %c64 = arith.constant 64 : index
  %k = memref.dim %a, %c1 : memref<?x?xf16>
  %k_tiles = arith.ceildivui %k, %c64 : index
  %sa = "wsc.alloc_shared"() : () -> memref<2x128x64xf16, 3>
  %sb = "wsc.alloc_shared"() : () -> memref<2x64x64xf16, 3>
  %full = "wsc.mbarrier_alloc"() {arrival_count = 1 : i32, num_barriers = 2 : i32} : () -> !wsc.mbarriers
  "wsc.sync"() : () -> ()
  %m = memref.dim %a, %c0 : memref<?x?xf16>
  %tiles_m = arith.ceildivui %m, %c128 : index
  %n = memref.dim %c, %c1 : memref<?x?xf32>
  %tiles_n = arith.ceildivui %n, %c64 : index
  %block = gpu.block_id x
  %blocks = gpu.grid_dim x
  %tiles = arith.muli %tiles_m, %tiles_n : index
  %total = arith.muli %tiles, %k_tiles : index
  %begin_num = arith.muli %block, %total : index
  %begin = arith.divui %begin_num, %blocks : index
  %next = arith.addi %block, %c1 : index
  %end_num = arith.muli %next, %total : index
  %end = arith.divui %end_num, %blocks : index
  %first_tile = arith.divui %begin, %k_tiles : index
  %last_k = arith.subi %end, %c1 : index
  %last_tile = arith.divui %last_k, %k_tiles : index
  %tile_stop = arith.addi %last_tile, %c1 : index
  %false = arith.constant false
  %ring:2 = scf.for %tile = %first_tile to %tile_stop step %c1 iter_args(%stage0 = %c0, %phase0 = %false) -> (index, i1) {
    %tile_row = arith.remui %tile, %tiles_m : index
    %tile_col = arith.divui %tile, %tiles_m : index
    %row = arith.muli %tile_row, %c128 : index
    %col = arith.muli %tile_col, %c64 : index
    %acc = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 128, 64>, f32>
    %tile_start = arith.muli %tile, %k_tiles : index
    %before = arith.minui %begin, %tile_start : index
    %first_k = arith.subi %begin, %before : index
    %left = arith.subi %end, %tile_start : index
    %stop_k = arith.minui %left, %k_tiles : index
    %my_k_tiles = arith.subi %stop_k, %first_k : index
    %after:2 = scf.for %i = %c0 to %my_k_tiles step %c1 iter_args(%stage = %stage0, %phase = %phase0) -> (index, i1) {
      %kt = arith.addi %first_k, %i : index
      %k0 = arith.muli %kt, %c64 : index
      %leader = "wsc.elect"() : () -> i1
      scf.if %leader {
        "wsc.mbarrier_arrive_expect_tx"(%full, %stage) {tx_bytes = 24576 : i32} : (!wsc.mbarriers, index) -> ()
        "wsc.tma_load"(%a, %row, %k0, %sa, %stage, %full) : (memref<?x?xf16>, index, index, memref<2x128x64xf16, 3>, index, !wsc.mbarriers) -> ()
        "wsc.tma_load"(%b, %col, %k0, %sb, %stage, %full) : (memref<?x?xf16>, index, index, memref<2x64x64xf16, 3>, index, !wsc.mbarriers) -> ()
      }
      "wsc.mbarrier_wait"(%full, %stage, %phase) : (!wsc.mbarriers, index, i1) -> ()
      "wsc.wgmma_fence"() : () -> ()
      "wsc.wgmma"(%sa, %sb, %stage, %acc) {a_row = 0 : i32, b_layout = "nk"} : (memref<2x128x64xf16, 3>, memref<2x64x64xf16, 3>, index, !wsc.acc<array<i64: 128, 64>, f32>) -> ()
      "wsc.wgmma_commit_group"() : () -> ()
      "wsc.wgmma_wait_group"() {pending = 0 : i32} : () -> ()
      "wsc.sync"() : () -> ()
      %advanced:2 = "wsc.ring_advance"(%stage, %phase) {num_stages = 2 : i32} : (index, i1) -> (index, i1)
      scf.yield %advanced#0, %advanced#1 : index, i1
    }
    %from_start = arith.cmpi eq, %first_k, %c0 : index
    %to_end = arith.cmpi eq, %my_k_tiles, %k_tiles : index
    %whole = arith.andi %from_start, %to_end : i1
    scf.if %whole {
      "wsc.store"(%acc, %c, %row, %col) : (!wsc.acc<array<i64: 128, 64>, f32>, memref<?x?xf32>, index, index) -> ()
    }
    %true = arith.constant true
    %shared = arith.xori %whole, %true : i1
    %later = arith.minui %first_k, %c1 : index
    %slot = arith.subi %next, %later : index
    %slot_row = arith.muli %slot, %c128 : index
    scf.if %shared {
      "wsc.partial_store"(%acc, %partials, %slot_row, %later) {splits = 2 : i32} : (!wsc.acc<array<i64: 128, 64>, f32>, memref<?xf32>, index, index) -> ()
    }
    // expected-error @+1 {{arrival-without-partial: the 128 threads outside every role arrives on the counter of rows from 128 without a partial sum of them stored since its last arrival: the last split would reduce what the workspace holds (k_tiles = 1, num_stages = 2)}}
    %last = "wsc.partial_arrive"(%counters, %slot_row) {splits = 2 : i32} : (memref<?xi32>, index) -> i1
    scf.if %last {
      "wsc.partial_reduce"(%acc, %partials, %counters, %slot_row) {splits = 2 : i32} : (!wsc.acc<array<i64: 128, 64>, f32>, memref<?xf32>, memref<?xi32>, index) -> ()
      "wsc.store"(%acc, %c, %row, %col) : (!wsc.acc<array<i64: 128, 64>, f32>, memref<?x?xf32>, index, index) -> ()
    }
    scf.yield %after#0, %after#1 : index, i1
  }
  return
}
