// --warp-specialize on a kernel whose epilogue does register-tile math
// (scale, relu) before its store: each consumer group rebuilds the tiles the
// epilogue makes for its own rows.
// RUN: wsc-opt --warp-specialize='num-consumer-groups=2 producer=warpgroup' %s | FileCheck %s

func.func @epilogue_math(%a: memref<?x?xf16>, %b: memref<?x?xf16>, %c: memref<?x?xf32>) attributes {wsc.num_threads = 128 : i32} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %false = arith.constant false
  %k = memref.dim %a, %c1 : memref<?x?xf16>
  %kt = arith.ceildivui %k, %c64 : index
  %sa = "wsc.alloc_shared"() : () -> memref<2x128x64xf16, 3>
  %sb = "wsc.alloc_shared"() : () -> memref<2x128x64xf16, 3>
  %full = "wsc.mbarrier_alloc"() {arrival_count = 1 : i32, num_barriers = 2 : i32} : () -> !wsc.mbarriers
  "wsc.sync"() : () -> ()
  %acc = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 128, 128>, f32>
  %r:2 = scf.for %i = %c0 to %kt step %c1 iter_args(%s = %c0, %p = %false) -> (index, i1) {
    %k0 = arith.muli %i, %c64 : index
    %e0 = "wsc.elect"() : () -> i1
    scf.if %e0 {
      "wsc.mbarrier_arrive_expect_tx"(%full, %s) {tx_bytes = 32768 : i32} : (!wsc.mbarriers, index) -> ()
      "wsc.tma_load"(%a, %c0, %k0, %sa, %s, %full) : (memref<?x?xf16>, index, index, memref<2x128x64xf16, 3>, index, !wsc.mbarriers) -> ()
      "wsc.tma_load"(%b, %c0, %k0, %sb, %s, %full) : (memref<?x?xf16>, index, index, memref<2x128x64xf16, 3>, index, !wsc.mbarriers) -> ()
    }
    "wsc.mbarrier_wait"(%full, %s, %p) : (!wsc.mbarriers, index, i1) -> ()
    "wsc.wgmma_fence"() : () -> ()
    "wsc.wgmma"(%sa, %sb, %s, %acc) {a_row = 0 : i32, b_layout = "nk"} : (memref<2x128x64xf16, 3>, memref<2x128x64xf16, 3>, index, !wsc.acc<array<i64: 128, 128>, f32>) -> ()
    "wsc.wgmma_commit_group"() : () -> ()
    "wsc.wgmma_wait_group"() {pending = 0 : i32} : () -> ()
    "wsc.sync"() : () -> ()
    %ns, %np = "wsc.ring_advance"(%s, %p) {num_stages = 2 : i32} : (index, i1) -> (index, i1)
    scf.yield %ns, %np : index, i1
  }
  %half = "wsc.tile_fill"() {value = 0.5 : f32} : () -> !wsc.acc<array<i64: 128, 128>, f32>
  %scaled = "wsc.tile_binary"(%acc, %half) {kind = "mul"} : (!wsc.acc<array<i64: 128, 128>, f32>, !wsc.acc<array<i64: 128, 128>, f32>) -> !wsc.acc<array<i64: 128, 128>, f32>
  %relu = "wsc.tile_unary"(%scaled) {kind = "relu"} : (!wsc.acc<array<i64: 128, 128>, f32>) -> !wsc.acc<array<i64: 128, 128>, f32>
  "wsc.store"(%relu, %c, %c0, %c0) : (!wsc.acc<array<i64: 128, 128>, f32>, memref<?x?xf32>, index, index) -> ()
  return
}

// CHECK-LABEL: func.func @epilogue_math
// CHECK-COUNT-2: "wsc.tile_fill"() {value = 5.000000e-01 : f32} : () -> !wsc.acc<array<i64: 64, 128>, f32>
// CHECK: "wsc.tile_unary"({{%.*}}) {kind = "relu"} : (!wsc.acc<array<i64: 64, 128>, f32>) -> !wsc.acc<array<i64: 64, 128>, f32>
// CHECK: role = "producer"

// A residual tile and a vector along rows (a per-row scale) are read at the
// group's rows, the tile with its fill; a vector along columns (a bias) is
// read as written.
func.func @epilogue_loads(%a: memref<?x?xf16>, %b: memref<?x?xf16>, %c: memref<?x?xf32>, %res_in: memref<?x?xf16>, %v: memref<?xf32>) attributes {wsc.num_threads = 128 : i32} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %false = arith.constant false
  %k = memref.dim %a, %c1 : memref<?x?xf16>
  %kt = arith.ceildivui %k, %c64 : index
  %sa = "wsc.alloc_shared"() : () -> memref<2x128x64xf16, 3>
  %sb = "wsc.alloc_shared"() : () -> memref<2x128x64xf16, 3>
  %full = "wsc.mbarrier_alloc"() {arrival_count = 1 : i32, num_barriers = 2 : i32} : () -> !wsc.mbarriers
  "wsc.sync"() : () -> ()
  %acc = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 128, 128>, f32>
  %r:2 = scf.for %i = %c0 to %kt step %c1 iter_args(%s = %c0, %p = %false) -> (index, i1) {
    %k0 = arith.muli %i, %c64 : index
    %e0 = "wsc.elect"() : () -> i1
    scf.if %e0 {
      "wsc.mbarrier_arrive_expect_tx"(%full, %s) {tx_bytes = 32768 : i32} : (!wsc.mbarriers, index) -> ()
      "wsc.tma_load"(%a, %c0, %k0, %sa, %s, %full) : (memref<?x?xf16>, index, index, memref<2x128x64xf16, 3>, index, !wsc.mbarriers) -> ()
      "wsc.tma_load"(%b, %c0, %k0, %sb, %s, %full) : (memref<?x?xf16>, index, index, memref<2x128x64xf16, 3>, index, !wsc.mbarriers) -> ()
    }
    "wsc.mbarrier_wait"(%full, %s, %p) : (!wsc.mbarriers, index, i1) -> ()
    "wsc.wgmma_fence"() : () -> ()
    "wsc.wgmma"(%sa, %sb, %s, %acc) {a_row = 0 : i32, b_layout = "nk"} : (memref<2x128x64xf16, 3>, memref<2x128x64xf16, 3>, index, !wsc.acc<array<i64: 128, 128>, f32>) -> ()
    "wsc.wgmma_commit_group"() : () -> ()
    "wsc.wgmma_wait_group"() {pending = 0 : i32} : () -> ()
    "wsc.sync"() : () -> ()
    %ns, %np = "wsc.ring_advance"(%s, %p) {num_stages = 2 : i32} : (index, i1) -> (index, i1)
    scf.yield %ns, %np : index, i1
  }
  %res = "wsc.tile_load"(%res_in, %c0, %c0) {fill = 1.000000e+00 : f32} : (memref<?x?xf16>, index, index) -> !wsc.acc<array<i64: 128, 128>, f32>
  %scale = "wsc.tile_broadcast"(%v, %c0) {along = "rows"} : (memref<?xf32>, index) -> !wsc.acc<array<i64: 128, 128>, f32>
  %bias = "wsc.tile_broadcast"(%v, %c0) {along = "cols"} : (memref<?xf32>, index) -> !wsc.acc<array<i64: 128, 128>, f32>
  %scaled = "wsc.tile_binary"(%acc, %scale) {kind = "mul"} : (!wsc.acc<array<i64: 128, 128>, f32>, !wsc.acc<array<i64: 128, 128>, f32>) -> !wsc.acc<array<i64: 128, 128>, f32>
  %biased = "wsc.tile_binary"(%scaled, %bias) {kind = "add"} : (!wsc.acc<array<i64: 128, 128>, f32>, !wsc.acc<array<i64: 128, 128>, f32>) -> !wsc.acc<array<i64: 128, 128>, f32>
  %sum = "wsc.tile_binary"(%biased, %res) {kind = "add"} : (!wsc.acc<array<i64: 128, 128>, f32>, !wsc.acc<array<i64: 128, 128>, f32>) -> !wsc.acc<array<i64: 128, 128>, f32>
  "wsc.store"(%sum, %c, %c0, %c0) : (!wsc.acc<array<i64: 128, 128>, f32>, memref<?x?xf32>, index, index) -> ()
  return
}

// CHECK-LABEL: func.func @epilogue_loads
// CHECK: "wsc.tile_load"(%arg3, %c0, %c0) {fill = 1.000000e+00 : f32} : (memref<?x?xf16>, index, index) -> !wsc.acc<array<i64: 64, 128>, f32>
// CHECK: "wsc.tile_broadcast"(%arg4, %c0) {along = "rows"}
// CHECK: "wsc.tile_broadcast"(%arg4, %c0) {along = "cols"}
// CHECK: %[[ROWS:.*]] = arith.constant 64 : index
// CHECK: %[[ROW:.*]] = arith.addi %c0, %[[ROWS]] : index
// CHECK: "wsc.tile_load"(%arg3, %[[ROW]], %c0) {fill = 1.000000e+00 : f32}
// CHECK: %[[FIRST:.*]] = arith.addi %c0, %[[ROWS]] : index
// CHECK: "wsc.tile_broadcast"(%arg4, %[[FIRST]]) {along = "rows"}
// CHECK: "wsc.tile_broadcast"(%arg4, %c0) {along = "cols"}

// A causal mask: row indices count from the group's first row, column
// indices as written.
func.func @causal_mask(%a: memref<?x?xf16>, %b: memref<?x?xf16>, %c: memref<?x?xf32>) attributes {wsc.num_threads = 128 : i32} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %false = arith.constant false
  %k = memref.dim %a, %c1 : memref<?x?xf16>
  %kt = arith.ceildivui %k, %c64 : index
  %sa = "wsc.alloc_shared"() : () -> memref<2x128x64xf16, 3>
  %sb = "wsc.alloc_shared"() : () -> memref<2x128x64xf16, 3>
  %full = "wsc.mbarrier_alloc"() {arrival_count = 1 : i32, num_barriers = 2 : i32} : () -> !wsc.mbarriers
  "wsc.sync"() : () -> ()
  %acc = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 128, 128>, f32>
  %r:2 = scf.for %i = %c0 to %kt step %c1 iter_args(%s = %c0, %p = %false) -> (index, i1) {
    %k0 = arith.muli %i, %c64 : index
    %e0 = "wsc.elect"() : () -> i1
    scf.if %e0 {
      "wsc.mbarrier_arrive_expect_tx"(%full, %s) {tx_bytes = 32768 : i32} : (!wsc.mbarriers, index) -> ()
      "wsc.tma_load"(%a, %c0, %k0, %sa, %s, %full) : (memref<?x?xf16>, index, index, memref<2x128x64xf16, 3>, index, !wsc.mbarriers) -> ()
      "wsc.tma_load"(%b, %c0, %k0, %sb, %s, %full) : (memref<?x?xf16>, index, index, memref<2x128x64xf16, 3>, index, !wsc.mbarriers) -> ()
    }
    "wsc.mbarrier_wait"(%full, %s, %p) : (!wsc.mbarriers, index, i1) -> ()
    "wsc.wgmma_fence"() : () -> ()
    "wsc.wgmma"(%sa, %sb, %s, %acc) {a_row = 0 : i32, b_layout = "nk"} : (memref<2x128x64xf16, 3>, memref<2x128x64xf16, 3>, index, !wsc.acc<array<i64: 128, 128>, f32>) -> ()
    "wsc.wgmma_commit_group"() : () -> ()
    "wsc.wgmma_wait_group"() {pending = 0 : i32} : () -> ()
    "wsc.sync"() : () -> ()
    %ns, %np = "wsc.ring_advance"(%s, %p) {num_stages = 2 : i32} : (index, i1) -> (index, i1)
    scf.yield %ns, %np : index, i1
  }
  %rows = "wsc.tile_iota"(%c0) {along = "rows"} : (index) -> !wsc.acc<array<i64: 128, 128>, f32>
  %cols = "wsc.tile_iota"(%c0) {along = "cols"} : (index) -> !wsc.acc<array<i64: 128, 128>, f32>
  %low = "wsc.tile_fill"() {value = -1.0e+30 : f32} : () -> !wsc.acc<array<i64: 128, 128>, f32>
  %masked = "wsc.tile_select"(%cols, %rows, %low, %acc) {predicate = "gt"} : (!wsc.acc<array<i64: 128, 128>, f32>, !wsc.acc<array<i64: 128, 128>, f32>, !wsc.acc<array<i64: 128, 128>, f32>, !wsc.acc<array<i64: 128, 128>, f32>) -> !wsc.acc<array<i64: 128, 128>, f32>
  "wsc.store"(%masked, %c, %c0, %c0) : (!wsc.acc<array<i64: 128, 128>, f32>, memref<?x?xf32>, index, index) -> ()
  return
}

// CHECK-LABEL: func.func @causal_mask
// CHECK: "wsc.tile_iota"(%c0) {along = "rows"}
// CHECK: "wsc.tile_iota"(%c0) {along = "cols"}
// CHECK: "wsc.tile_select"({{.*}}) {predicate = "gt"} : (!wsc.acc<array<i64: 64, 128>, f32>
// CHECK: %[[ROWS:.*]] = arith.constant 64 : index
// CHECK: %[[FIRST:.*]] = arith.addi %c0, %[[ROWS]] : index
// CHECK: "wsc.tile_iota"(%[[FIRST]]) {along = "rows"}
// CHECK: "wsc.tile_iota"(%c0) {along = "cols"}
