// Every wsc op and type printed and parsed back: the generic form wsc-opt
// prints must parse to the same IR.
// RUN: wsc-opt %s | wsc-opt | FileCheck %s
// RUN: wsc-opt --mlir-print-op-generic %s | wsc-opt | FileCheck %s

// CHECK-LABEL: func.func @every_op
func.func @every_op(%a: memref<?x?xf16>, %b: memref<?x?xf16>, %c: memref<?x?xf16>)
    attributes {wsc.num_threads = 160 : i32} {
  %c0 = arith.constant 0 : index
  %true = arith.constant true
  // CHECK: %[[SA:.*]] = "wsc.alloc_shared"() : () -> memref<2x128x64xf16, 3>
  %sa = "wsc.alloc_shared"() : () -> memref<2x128x64xf16, 3>
  %sb = "wsc.alloc_shared"() : () -> memref<2x128x64xf16, 3>
  %sc = "wsc.alloc_shared"() : () -> memref<1x128x128xf16, 3>
  %st = "wsc.alloc_shared"() : () -> memref<2x64x128xf16, 3>
  // CHECK: %[[FULL:.*]] = "wsc.mbarrier_alloc"() {arrival_count = 1 : i32, num_barriers = 2 : i32} : () -> !wsc.mbarriers
  %full = "wsc.mbarrier_alloc"() {arrival_count = 1 : i32, num_barriers = 2 : i32} : () -> !wsc.mbarriers
  %empty = "wsc.mbarrier_alloc"() {arrival_count = 128 : i32, num_barriers = 2 : i32} : () -> !wsc.mbarriers
  // CHECK: "wsc.sync"() : () -> ()
  "wsc.sync"() : () -> ()
  // CHECK: "wsc.role"() {max_registers = 232 : i32, num_threads = 128 : i32, role = "consumer", thread_begin = 0 : i32} : () -> i1
  %is_consumer = "wsc.role"() {role = "consumer", thread_begin = 0 : i32, num_threads = 128 : i32, max_registers = 232 : i32} : () -> i1
  scf.if %is_consumer {
    // CHECK: "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 128, 128>, f32>
    %acc = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 128, 128>, f32>
    %acc64 = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 64, 128>, f32>
    // CHECK: %[[PRODUCT:.*]] = "wsc.acc_alloc"() {uninitialized} : () -> !wsc.acc<array<i64: 128, 128>, f32>
    %product = "wsc.acc_alloc"() {uninitialized} : () -> !wsc.acc<array<i64: 128, 128>, f32>
    // CHECK: "wsc.mbarrier_wait"(%[[FULL]], %{{.*}}, %{{.*}}) : (!wsc.mbarriers, index, i1) -> ()
    "wsc.mbarrier_wait"(%full, %c0, %true) : (!wsc.mbarriers, index, i1) -> ()
    // CHECK: "wsc.wgmma_fence"() : () -> ()
    "wsc.wgmma_fence"() : () -> ()
    // CHECK: "wsc.wgmma"(%[[SA]], %{{.*}}, %{{.*}}, %{{.*}}) {a_row = 0 : i32, b_layout = "nk"}
    "wsc.wgmma"(%sa, %sb, %c0, %acc) {a_row = 0 : i32, b_layout = "nk"} : (memref<2x128x64xf16, 3>, memref<2x128x64xf16, 3>, index, !wsc.acc<array<i64: 128, 128>, f32>) -> ()
    // CHECK: "wsc.wgmma"(%[[SA]], %{{.*}}, %{{.*}}, %[[PRODUCT]]) {a_row = 0 : i32, b_layout = "nk", overwrite}
    "wsc.wgmma"(%sa, %sb, %c0, %product) {a_row = 0 : i32, b_layout = "nk", overwrite} : (memref<2x128x64xf16, 3>, memref<2x128x64xf16, 3>, index, !wsc.acc<array<i64: 128, 128>, f32>) -> ()
    // CHECK: "wsc.wgmma"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) {a_row = 64 : i32, a_transposed, b_layout = "nk"}
    "wsc.wgmma"(%st, %sb, %c0, %acc64) {a_row = 64 : i32, a_transposed, b_layout = "nk"} : (memref<2x64x128xf16, 3>, memref<2x128x64xf16, 3>, index, !wsc.acc<array<i64: 64, 128>, f32>) -> ()
    // CHECK: "wsc.wgmma"(%[[SA]], %{{.*}}, %{{.*}}, %{{.*}}) {a_row = 0 : i32, a_stage = 1 : i32, b_layout = "nk"}
    "wsc.wgmma"(%sa, %sb, %c0, %acc) {a_row = 0 : i32, a_stage = 1 : i32, b_layout = "nk"} : (memref<2x128x64xf16, 3>, memref<2x128x64xf16, 3>, index, !wsc.acc<array<i64: 128, 128>, f32>) -> ()
    // CHECK: "wsc.tile_assign"(%{{.*}}, %{{.*}}) : (!wsc.acc<array<i64: 64, 128>, f32>, !wsc.acc<array<i64: 64, 128>, f32>) -> ()
    "wsc.tile_assign"(%acc64, %acc64) : (!wsc.acc<array<i64: 64, 128>, f32>, !wsc.acc<array<i64: 64, 128>, f32>) -> ()
    // CHECK: %[[P:.*]] = "wsc.cast"
    %p = "wsc.cast"(%acc64) : (!wsc.acc<array<i64: 64, 128>, f32>) -> !wsc.acc<array<i64: 64, 128>, f16>
    %out = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 64, 64>, f32>
    // CHECK: "wsc.wgmma_register_a"(%[[P]], %{{.*}}, %{{.*}}, %{{.*}}) {b_layout = "kn"} : (!wsc.acc<array<i64: 64, 128>, f16>, memref<2x128x64xf16, 3>, index, !wsc.acc<array<i64: 64, 64>, f32>) -> ()
    "wsc.wgmma_register_a"(%p, %sb, %c0, %out) {b_layout = "kn"} : (!wsc.acc<array<i64: 64, 128>, f16>, memref<2x128x64xf16, 3>, index, !wsc.acc<array<i64: 64, 64>, f32>) -> ()
    // CHECK: "wsc.wgmma_commit_group"() : () -> ()
    "wsc.wgmma_commit_group"() : () -> ()
    // CHECK: "wsc.wgmma_wait_group"() {pending = 0 : i32} : () -> ()
    "wsc.wgmma_wait_group"() {pending = 0 : i32} : () -> ()
    // CHECK: "wsc.mbarrier_arrive"(%{{.*}}, %{{.*}}) : (!wsc.mbarriers, index) -> ()
    "wsc.mbarrier_arrive"(%empty, %c0) : (!wsc.mbarriers, index) -> ()
    // CHECK: "wsc.mbarrier_arrive"(%{{.*}}, %{{.*}}) {per_warp} : (!wsc.mbarriers, index) -> ()
    "wsc.mbarrier_arrive"(%empty, %c0) {per_warp} : (!wsc.mbarriers, index) -> ()
    // CHECK: "wsc.cast"(%{{.*}}) : (!wsc.acc<array<i64: 128, 128>, f32>) -> !wsc.acc<array<i64: 128, 128>, f16>
    %h = "wsc.cast"(%acc) : (!wsc.acc<array<i64: 128, 128>, f32>) -> !wsc.acc<array<i64: 128, 128>, f16>
    // CHECK: "wsc.store"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) : (!wsc.acc<array<i64: 128, 128>, f16>, memref<?x?xf16>, index, index) -> ()
    "wsc.store"(%h, %c, %c0, %c0) : (!wsc.acc<array<i64: 128, 128>, f16>, memref<?x?xf16>, index, index) -> ()
    // CHECK: "wsc.store"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) {transpose} : (!wsc.acc<array<i64: 128, 128>, f16>, memref<?x?xf16>, index, index) -> ()
    "wsc.store"(%h, %c, %c0, %c0) {transpose} : (!wsc.acc<array<i64: 128, 128>, f16>, memref<?x?xf16>, index, index) -> ()
    // CHECK: "wsc.store_shared"(%{{.*}}, %{{.*}}, %{{.*}}) : (!wsc.acc<array<i64: 128, 128>, f16>, memref<1x128x128xf16, 3>, index) -> ()
    "wsc.store_shared"(%h, %sc, %c0) : (!wsc.acc<array<i64: 128, 128>, f16>, memref<1x128x128xf16, 3>, index) -> ()
    // CHECK: "wsc.fence_proxy_async"() : () -> ()
    "wsc.fence_proxy_async"() : () -> ()
    %storer = "wsc.elect"() : () -> i1
    scf.if %storer {
      // CHECK: "wsc.tma_store"(%[[SA]], %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) : (memref<2x128x64xf16, 3>, index, memref<?x?xf16>, index, index) -> ()
      "wsc.tma_store"(%sa, %c0, %c, %c0, %c0) : (memref<2x128x64xf16, 3>, index, memref<?x?xf16>, index, index) -> ()
      // CHECK: "wsc.tma_store_wait"() {pending = 0 : i32} : () -> ()
      "wsc.tma_store_wait"() {pending = 0 : i32} : () -> ()
    }
    // CHECK: "wsc.coalesced_store"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) : (memref<1x128x128xf16, 3>, index, memref<?x?xf16>, index, index) -> ()
    "wsc.coalesced_store"(%sc, %c0, %c, %c0, %c0) : (memref<1x128x128xf16, 3>, index, memref<?x?xf16>, index, index) -> ()
    // CHECK: "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 64, 64>, f16>
    %acc16 = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 64, 64>, f16>
  }
  // CHECK: "wsc.role"() {num_threads = 32 : i32, role = "producer", thread_begin = 128 : i32} : () -> i1
  %is_producer = "wsc.role"() {role = "producer", thread_begin = 128 : i32, num_threads = 32 : i32} : () -> i1
  scf.if %is_producer {
    // CHECK: %[[NEXT:.*]]:2 = "wsc.ring_advance"(%{{.*}}, %{{.*}}) {num_stages = 2 : i32} : (index, i1) -> (index, i1)
    %next_stage, %next_phase = "wsc.ring_advance"(%c0, %true) {num_stages = 2 : i32} : (index, i1) -> (index, i1)
    // CHECK: "wsc.mbarrier_wait"(%{{.*}}, %[[NEXT]]#0, %[[NEXT]]#1)
    "wsc.mbarrier_wait"(%empty, %next_stage, %next_phase) : (!wsc.mbarriers, index, i1) -> ()
    // CHECK: %[[ELECTED:.*]] = "wsc.elect"() : () -> i1
    %elected = "wsc.elect"() : () -> i1
    // CHECK: scf.if %[[ELECTED]]
    scf.if %elected {
      // CHECK: "wsc.mbarrier_arrive_expect_tx"(%[[FULL]], %{{.*}}) {tx_bytes = 32768 : i32} : (!wsc.mbarriers, index) -> ()
      "wsc.mbarrier_arrive_expect_tx"(%full, %c0) {tx_bytes = 32768 : i32} : (!wsc.mbarriers, index) -> ()
      // CHECK: "wsc.tma_load"(%{{.*}}, %{{.*}}, %{{.*}}, %[[SA]], %{{.*}}, %[[FULL]]) : (memref<?x?xf16>, index, index, memref<2x128x64xf16, 3>, index, !wsc.mbarriers) -> ()
      "wsc.tma_load"(%a, %c0, %c0, %sa, %c0, %full) : (memref<?x?xf16>, index, index, memref<2x128x64xf16, 3>, index, !wsc.mbarriers) -> ()
    }
  }
  return
}

// The cluster ops, in a kernel launched in clusters of two.
// CHECK-LABEL: func.func @cluster_ops
// CHECK-SAME: wsc.cluster_size = 2 : i32
func.func @cluster_ops(%b: memref<?x?xf16>)
    attributes {wsc.cluster_size = 2 : i32, wsc.num_threads = 128 : i32} {
  %c0 = arith.constant 0 : index
  %sb = "wsc.alloc_shared"() : () -> memref<2x128x64xf16, 3>
  %full = "wsc.mbarrier_alloc"() {arrival_count = 1 : i32, num_barriers = 2 : i32} : () -> !wsc.mbarriers
  // CHECK: "wsc.cluster_sync"() : () -> ()
  "wsc.cluster_sync"() : () -> ()
  // CHECK: "wsc.cluster_rank"() : () -> index
  %rank = "wsc.cluster_rank"() : () -> index
  %elected = "wsc.elect"() : () -> i1
  scf.if %elected {
    // CHECK: "wsc.tma_load"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) {multicast} : (memref<?x?xf16>, index, index, memref<2x128x64xf16, 3>, index, !wsc.mbarriers) -> ()
    "wsc.tma_load"(%b, %rank, %c0, %sb, %c0, %full) {multicast} : (memref<?x?xf16>, index, index, memref<2x128x64xf16, 3>, index, !wsc.mbarriers) -> ()
  }
  // CHECK: "wsc.mbarrier_arrive"(%{{.*}}, %{{.*}}) {every_cta} : (!wsc.mbarriers, index) -> ()
  "wsc.mbarrier_arrive"(%full, %c0) {every_cta} : (!wsc.mbarriers, index) -> ()
  return
}

// The split-K hand-off ops, on rank-1 workspace memrefs.
// CHECK-LABEL: func.func @split_k_ops
func.func @split_k_ops(%partials: memref<?xf32>, %counters: memref<?xi32>)
    attributes {wsc.num_threads = 128 : i32} {
  %c0 = arith.constant 0 : index
  %acc = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 64, 128>, f32>
  // CHECK: "wsc.partial_store"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) {splits = 4 : i32} : (!wsc.acc<array<i64: 64, 128>, f32>, memref<?xf32>, index, index) -> ()
  "wsc.partial_store"(%acc, %partials, %c0, %c0) {splits = 4 : i32} : (!wsc.acc<array<i64: 64, 128>, f32>, memref<?xf32>, index, index) -> ()
  // CHECK: "wsc.partial_arrive"(%{{.*}}, %{{.*}}) {splits = 4 : i32} : (memref<?xi32>, index) -> i1
  %last = "wsc.partial_arrive"(%counters, %c0) {splits = 4 : i32} : (memref<?xi32>, index) -> i1
  scf.if %last {
    // CHECK: "wsc.partial_reduce"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) {splits = 4 : i32} : (!wsc.acc<array<i64: 64, 128>, f32>, memref<?xf32>, memref<?xi32>, index) -> ()
    "wsc.partial_reduce"(%acc, %partials, %counters, %c0) {splits = 4 : i32} : (!wsc.acc<array<i64: 64, 128>, f32>, memref<?xf32>, memref<?xi32>, index) -> ()
  }
  return
}

// Element-wise register-tile math.
// CHECK-LABEL: func.func @tile_math
func.func @tile_math() attributes {wsc.num_threads = 128 : i32} {
  %acc = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 64, 64>, f32>
  // CHECK: "wsc.tile_fill"() {value = 2.500000e-01 : f32} : () -> !wsc.acc<array<i64: 64, 64>, f32>
  %quarter = "wsc.tile_fill"() {value = 0.25 : f32} : () -> !wsc.acc<array<i64: 64, 64>, f32>
  // CHECK: "wsc.tile_binary"(%{{.*}}, %{{.*}}) {kind = "max"}
  %m = "wsc.tile_binary"(%acc, %quarter) {kind = "max"} : (!wsc.acc<array<i64: 64, 64>, f32>, !wsc.acc<array<i64: 64, 64>, f32>) -> !wsc.acc<array<i64: 64, 64>, f32>
  // CHECK: "wsc.tile_unary"(%{{.*}}) {kind = "exp2"}
  %e = "wsc.tile_unary"(%m) {kind = "exp2"} : (!wsc.acc<array<i64: 64, 64>, f32>) -> !wsc.acc<array<i64: 64, 64>, f32>
  // CHECK: "wsc.tile_unary"(%{{.*}}) {kind = "erf"}
  %r = "wsc.tile_unary"(%e) {kind = "erf"} : (!wsc.acc<array<i64: 64, 64>, f32>) -> !wsc.acc<array<i64: 64, 64>, f32>
  // The row max is a row vector [64, 1], read broadcast along the rows by
  // the math that combines it with a tile.
  // CHECK: "wsc.tile_row_reduce"(%{{.*}}) {kind = "max"} : (!wsc.acc<array<i64: 64, 64>, f32>) -> !wsc.acc<array<i64: 64, 1>, f32>
  %rm = "wsc.tile_row_reduce"(%r) {kind = "max"} : (!wsc.acc<array<i64: 64, 64>, f32>) -> !wsc.acc<array<i64: 64, 1>, f32>
  // CHECK: "wsc.tile_binary"(%{{.*}}, %{{.*}}) {kind = "sub"} : (!wsc.acc<array<i64: 64, 64>, f32>, !wsc.acc<array<i64: 64, 1>, f32>) -> !wsc.acc<array<i64: 64, 64>, f32>
  %centered = "wsc.tile_binary"(%r, %rm) {kind = "sub"} : (!wsc.acc<array<i64: 64, 64>, f32>, !wsc.acc<array<i64: 64, 1>, f32>) -> !wsc.acc<array<i64: 64, 64>, f32>
  // CHECK: "wsc.tile_binary"(%{{.*}}, %{{.*}}) {kind = "div"} : (!wsc.acc<array<i64: 64, 64>, f32>, !wsc.acc<array<i64: 64, 1>, f32>) -> !wsc.acc<array<i64: 64, 64>, f32>
  %normalized = "wsc.tile_binary"(%r, %rm) {kind = "div"} : (!wsc.acc<array<i64: 64, 64>, f32>, !wsc.acc<array<i64: 64, 1>, f32>) -> !wsc.acc<array<i64: 64, 64>, f32>
  // CHECK: "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 64, 1>, f32>
  %running = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 64, 1>, f32>
  // CHECK: "wsc.tile_assign"(%{{.*}}, %{{.*}}) : (!wsc.acc<array<i64: 64, 1>, f32>, !wsc.acc<array<i64: 64, 1>, f32>)
  "wsc.tile_assign"(%running, %rm) : (!wsc.acc<array<i64: 64, 1>, f32>, !wsc.acc<array<i64: 64, 1>, f32>) -> ()
  %c0 = arith.constant 0 : index
  // CHECK: "wsc.tile_iota"(%{{.*}}) {along = "rows"} : (index) -> !wsc.acc<array<i64: 64, 64>, f32>
  %rows = "wsc.tile_iota"(%c0) {along = "rows"} : (index) -> !wsc.acc<array<i64: 64, 64>, f32>
  // CHECK: "wsc.tile_iota"(%{{.*}}) {along = "cols"} : (index) -> !wsc.acc<array<i64: 64, 64>, f32>
  %cols = "wsc.tile_iota"(%c0) {along = "cols"} : (index) -> !wsc.acc<array<i64: 64, 64>, f32>
  // CHECK: "wsc.tile_select"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) {predicate = "gt"}
  %masked = "wsc.tile_select"(%cols, %rows, %quarter, %rm) {predicate = "gt"} : (!wsc.acc<array<i64: 64, 64>, f32>, !wsc.acc<array<i64: 64, 64>, f32>, !wsc.acc<array<i64: 64, 64>, f32>, !wsc.acc<array<i64: 64, 1>, f32>) -> !wsc.acc<array<i64: 64, 64>, f32>
  return
}

// Register tiles and shared memory: a stage read into registers whole or
// by blocks, a block written back in place, and a reduction down columns
// over groups of rows.
// CHECK-LABEL: func.func @shared_tiles
func.func @shared_tiles() attributes {wsc.num_threads = 128 : i32} {
  %c0 = arith.constant 0 : index
  %sx = "wsc.alloc_shared"() : () -> memref<2x64x256xbf16, 3>
  // CHECK: "wsc.load_shared"(%{{.*}}, %{{.*}}) : (memref<2x64x256xbf16, 3>, index) -> !wsc.acc<array<i64: 64, 256>, f32>
  %whole = "wsc.load_shared"(%sx, %c0) : (memref<2x64x256xbf16, 3>, index) -> !wsc.acc<array<i64: 64, 256>, f32>
  // CHECK: "wsc.load_shared"(%{{.*}}, %{{.*}}) {col = 128 : i32, row = 0 : i32} : (memref<2x64x256xbf16, 3>, index) -> !wsc.acc<array<i64: 64, 128>, f32>
  %block = "wsc.load_shared"(%sx, %c0) {row = 0 : i32, col = 128 : i32} : (memref<2x64x256xbf16, 3>, index) -> !wsc.acc<array<i64: 64, 128>, f32>
  %rm = "wsc.tile_row_reduce"(%block) {kind = "max"} : (!wsc.acc<array<i64: 64, 128>, f32>) -> !wsc.acc<array<i64: 64, 1>, f32>
  // CHECK: "wsc.tile_col_reduce"(%{{.*}}) {kind = "max", rows = 16 : i32} : (!wsc.acc<array<i64: 64, 1>, f32>) -> !wsc.acc<array<i64: 64, 1>, f32>
  %gm = "wsc.tile_col_reduce"(%rm) {kind = "max", rows = 16 : i32} : (!wsc.acc<array<i64: 64, 1>, f32>) -> !wsc.acc<array<i64: 64, 1>, f32>
  // CHECK: "wsc.tile_col_reduce"(%{{.*}}) {kind = "max", rows = 64 : i32} : (!wsc.acc<array<i64: 64, 1>, f32>) -> !wsc.acc<array<i64: 64, 1>, f32>
  %wm = "wsc.tile_col_reduce"(%rm) {kind = "max", rows = 64 : i32} : (!wsc.acc<array<i64: 64, 1>, f32>) -> !wsc.acc<array<i64: 64, 1>, f32>
  // CHECK: "wsc.tile_col_reduce"(%{{.*}}) {kind = "sum", rows = 4 : i32} : (!wsc.acc<array<i64: 64, 128>, f32>) -> !wsc.acc<array<i64: 64, 128>, f32>
  %cs = "wsc.tile_col_reduce"(%block) {kind = "sum", rows = 4 : i32} : (!wsc.acc<array<i64: 64, 128>, f32>) -> !wsc.acc<array<i64: 64, 128>, f32>
  %y = "wsc.cast"(%cs) : (!wsc.acc<array<i64: 64, 128>, f32>) -> !wsc.acc<array<i64: 64, 128>, bf16>
  // CHECK: "wsc.store_shared"(%{{.*}}, %{{.*}}, %{{.*}}) {col = 128 : i32, row = 0 : i32}
  "wsc.store_shared"(%y, %sx, %c0) {row = 0 : i32, col = 128 : i32} : (!wsc.acc<array<i64: 64, 128>, bf16>, memref<2x64x256xbf16, 3>, index) -> ()
  // A stage row read down the tile's rows, whole or the block of 64 rows at column 64.
  %ss = "wsc.alloc_shared"() : () -> memref<2x1x128xf32, 3>
  // CHECK: "wsc.load_shared"(%{{.*}}, %{{.*}}) {transpose} : (memref<2x1x128xf32, 3>, index) -> !wsc.acc<array<i64: 128, 1>, f32>
  %scales = "wsc.load_shared"(%ss, %c0) {transpose} : (memref<2x1x128xf32, 3>, index) -> !wsc.acc<array<i64: 128, 1>, f32>
  // CHECK: "wsc.load_shared"(%{{.*}}, %{{.*}}) {col = 64 : i32, row = 0 : i32, transpose} : (memref<2x1x128xf32, 3>, index) -> !wsc.acc<array<i64: 64, 1>, f32>
  %half = "wsc.load_shared"(%ss, %c0) {row = 0 : i32, col = 64 : i32, transpose} : (memref<2x1x128xf32, 3>, index) -> !wsc.acc<array<i64: 64, 1>, f32>
  return
}

// Register tiles read from global memory: a block of a matrix (also
// transposed) and a vector laid along a tile's rows or columns.
// CHECK-LABEL: func.func @tile_loads
func.func @tile_loads(%r: memref<?x?xf16>, %bias: memref<?xbf16>) attributes {wsc.num_threads = 128 : i32} {
  %c0 = arith.constant 0 : index
  // CHECK: "wsc.tile_load"(%{{.*}}, %{{.*}}, %{{.*}}) : (memref<?x?xf16>, index, index) -> !wsc.acc<array<i64: 64, 128>, f32>
  %t = "wsc.tile_load"(%r, %c0, %c0) : (memref<?x?xf16>, index, index) -> !wsc.acc<array<i64: 64, 128>, f32>
  // CHECK: "wsc.tile_load"(%{{.*}}, %{{.*}}, %{{.*}}) {transpose}
  %tt = "wsc.tile_load"(%r, %c0, %c0) {transpose} : (memref<?x?xf16>, index, index) -> !wsc.acc<array<i64: 64, 16>, f32>
  // CHECK: "wsc.tile_load"(%{{.*}}, %{{.*}}, %{{.*}}) {fill = 0xFF800000 : f32}
  %tf = "wsc.tile_load"(%r, %c0, %c0) {fill = 0xFF800000 : f32} : (memref<?x?xf16>, index, index) -> !wsc.acc<array<i64: 64, 128>, f32>
  // CHECK: "wsc.tile_broadcast"(%{{.*}}, %{{.*}}) {along = "cols"} : (memref<?xbf16>, index) -> !wsc.acc<array<i64: 64, 128>, f32>
  %b = "wsc.tile_broadcast"(%bias, %c0) {along = "cols"} : (memref<?xbf16>, index) -> !wsc.acc<array<i64: 64, 128>, f32>
  // CHECK: "wsc.tile_broadcast"(%{{.*}}, %{{.*}}) {along = "rows"}
  %s = "wsc.tile_broadcast"(%bias, %c0) {along = "rows"} : (memref<?xbf16>, index) -> !wsc.acc<array<i64: 64, 128>, f32>
  return
}

// A batch of matrices and its matrix at a run-time index.
// CHECK-LABEL: func.func @batch_matrix
func.func @batch_matrix(%a: memref<?x?x?xf16>) attributes {wsc.num_threads = 128 : i32} {
  %c1 = arith.constant 1 : index
  // CHECK: "wsc.batch_matrix"(%{{.*}}, %{{.*}}) : (memref<?x?x?xf16>, index) -> memref<?x?xf16>
  %a1 = "wsc.batch_matrix"(%a, %c1) : (memref<?x?x?xf16>, index) -> memref<?x?xf16>
  return
}

// A scalar kernel argument splat into a register tile.
// CHECK-LABEL: func.func @tile_splat
func.func @tile_splat(%alpha: f32) attributes {wsc.num_threads = 128 : i32} {
  // CHECK: "wsc.tile_splat"(%{{.*}}) : (f32) -> !wsc.acc<array<i64: 64, 128>, f32>
  %t = "wsc.tile_splat"(%alpha) : (f32) -> !wsc.acc<array<i64: 64, 128>, f32>
  return
}
