// Planted bugs in the split-K hand-off (wsc.partial_store, wsc.partial_arrive,
// wsc.partial_reduce): --verify-pipeline runs each kernel as the last split to
// arrive and as an earlier one, and reports each bug at the offending op.
// RUN: wsc-opt --split-input-file --verify-diagnostics --verify-pipeline %s

// The last split's reduction, outside the guard: a split that is not the
// last adds partial sums other splits may not have stored yet.
func.func @reduce_outside_guard(%c: memref<?x?xf32>, %partials: memref<?xf32>, %counters: memref<?xi32>) attributes {wsc.num_threads = 128 : i32} {
  %c0 = arith.constant 0 : index
  %split = gpu.block_id z
  %acc = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 64, 64>, f32>
  "wsc.partial_store"(%acc, %partials, %c0, %split) {splits = 2 : i32} : (!wsc.acc<array<i64: 64, 64>, f32>, memref<?xf32>, index, index) -> ()
  %last = "wsc.partial_arrive"(%counters, %c0) {splits = 2 : i32} : (memref<?xi32>, index) -> i1
  // expected-error @+1 {{early-reduce: the 128 threads outside every role reduces the partial sums of rows from 0 though its arrival was not the last}}
  "wsc.partial_reduce"(%acc, %partials, %counters, %c0) {splits = 2 : i32} : (!wsc.acc<array<i64: 64, 64>, f32>, memref<?xf32>, memref<?xi32>, index) -> ()
  scf.if %last {
    "wsc.store"(%acc, %c, %c0, %c0) : (!wsc.acc<array<i64: 64, 64>, f32>, memref<?x?xf32>, index, index) -> ()
  }
  return
}

// -----

// The arrival before the store: the last split may reduce before this
// split's partial sum has landed.
func.func @arrival_before_store(%c: memref<?x?xf32>, %partials: memref<?xf32>, %counters: memref<?xi32>) attributes {wsc.num_threads = 128 : i32} {
  %c0 = arith.constant 0 : index
  %split = gpu.block_id z
  %acc = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 64, 64>, f32>
  // expected-error @+1 {{arrival-without-partial: the 128 threads outside every role arrives on the counter of rows from 0 without a partial sum of them stored}}
  %last = "wsc.partial_arrive"(%counters, %c0) {splits = 2 : i32} : (memref<?xi32>, index) -> i1
  "wsc.partial_store"(%acc, %partials, %c0, %split) {splits = 2 : i32} : (!wsc.acc<array<i64: 64, 64>, f32>, memref<?xf32>, index, index) -> ()
  scf.if %last {
    "wsc.partial_reduce"(%acc, %partials, %counters, %c0) {splits = 2 : i32} : (!wsc.acc<array<i64: 64, 64>, f32>, memref<?xf32>, memref<?xi32>, index) -> ()
    "wsc.store"(%acc, %c, %c0, %c0) : (!wsc.acc<array<i64: 64, 64>, f32>, memref<?x?xf32>, index, index) -> ()
  }
  return
}

// -----

// A second partial sum stored after the arrival that published the first.
func.func @store_after_arrival(%c: memref<?x?xf32>, %partials: memref<?xf32>, %counters: memref<?xi32>) attributes {wsc.num_threads = 128 : i32} {
  %c0 = arith.constant 0 : index
  %split = gpu.block_id z
  %acc = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 64, 64>, f32>
  "wsc.partial_store"(%acc, %partials, %c0, %split) {splits = 2 : i32} : (!wsc.acc<array<i64: 64, 64>, f32>, memref<?xf32>, index, index) -> ()
  %last = "wsc.partial_arrive"(%counters, %c0) {splits = 2 : i32} : (memref<?xi32>, index) -> i1
  // expected-error @+1 {{partial-after-arrival: the 128 threads outside every role stores a partial sum of rows from 0 after its split arrived on their counter}}
  "wsc.partial_store"(%acc, %partials, %c0, %split) {splits = 2 : i32} : (!wsc.acc<array<i64: 64, 64>, f32>, memref<?xf32>, index, index) -> ()
  scf.if %last {
    "wsc.partial_reduce"(%acc, %partials, %counters, %c0) {splits = 2 : i32} : (!wsc.acc<array<i64: 64, 64>, f32>, memref<?xf32>, memref<?xi32>, index) -> ()
    "wsc.store"(%acc, %c, %c0, %c0) : (!wsc.acc<array<i64: 64, 64>, f32>, memref<?x?xf32>, index, index) -> ()
  }
  return
}

// -----

// The last split exits without reducing: its counter stays at `splits` and
// the next launch miscounts.
func.func @counter_never_reset(%c: memref<?x?xf32>, %partials: memref<?xf32>, %counters: memref<?xi32>) attributes {wsc.num_threads = 128 : i32} {
  %c0 = arith.constant 0 : index
  %split = gpu.block_id z
  %acc = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 64, 64>, f32>
  "wsc.partial_store"(%acc, %partials, %c0, %split) {splits = 2 : i32} : (!wsc.acc<array<i64: 64, 64>, f32>, memref<?xf32>, index, index) -> ()
  // expected-error @+1 {{counter-left-set: the 128 threads outside every role's arrival on the counter of rows from 0 was the last, and it exits without wsc.partial_reduce}}
  %last = "wsc.partial_arrive"(%counters, %c0) {splits = 2 : i32} : (memref<?xi32>, index) -> i1
  return
}

// -----

// The last split stores the tile without reducing it: the other splits'
// partial sums are left out.
func.func @store_without_reduce(%c: memref<?x?xf32>, %partials: memref<?xf32>, %counters: memref<?xi32>) attributes {wsc.num_threads = 128 : i32} {
  %c0 = arith.constant 0 : index
  %split = gpu.block_id z
  %acc = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 64, 64>, f32>
  "wsc.partial_store"(%acc, %partials, %c0, %split) {splits = 2 : i32} : (!wsc.acc<array<i64: 64, 64>, f32>, memref<?xf32>, index, index) -> ()
  %last = "wsc.partial_arrive"(%counters, %c0) {splits = 2 : i32} : (memref<?xi32>, index) -> i1
  scf.if %last {
    // expected-error @+1 {{store-before-reduce: the 128 threads outside every role stores the tile whose partial sums of rows from 0 it handed over, before wsc.partial_reduce added the other splits' sums (k_tiles = 1, num_stages = 1)}}
    "wsc.store"(%acc, %c, %c0, %c0) : (!wsc.acc<array<i64: 64, 64>, f32>, memref<?x?xf32>, index, index) -> ()
  }
  return
}

// -----

// The store is outside the scf.if on the arrival: a split whose arrival is
// not the last writes its partial sums to C, racing the last split's tile.
func.func @store_by_every_split(%c: memref<?x?xf32>, %partials: memref<?xf32>, %counters: memref<?xi32>) attributes {wsc.num_threads = 128 : i32} {
  %c0 = arith.constant 0 : index
  %split = gpu.block_id z
  %acc = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 64, 64>, f32>
  "wsc.partial_store"(%acc, %partials, %c0, %split) {splits = 2 : i32} : (!wsc.acc<array<i64: 64, 64>, f32>, memref<?xf32>, index, index) -> ()
  %last = "wsc.partial_arrive"(%counters, %c0) {splits = 2 : i32} : (memref<?xi32>, index) -> i1
  scf.if %last {
    "wsc.partial_reduce"(%acc, %partials, %counters, %c0) {splits = 2 : i32} : (!wsc.acc<array<i64: 64, 64>, f32>, memref<?xf32>, memref<?xi32>, index) -> ()
  }
  // expected-error @+1 {{store-before-reduce: the 128 threads outside every role stores the tile whose partial sums of rows from 0 it handed over, though its split's arrival was not the last: a later split reduces and stores the tile (k_tiles = 1, num_stages = 1)}}
  "wsc.store"(%acc, %c, %c0, %c0) : (!wsc.acc<array<i64: 64, 64>, f32>, memref<?x?xf32>, index, index) -> ()
  return
}

// -----

// The arrival counts 4 splits of partial sums stored as one of 2.
func.func @splits_mismatch(%c: memref<?x?xf32>, %partials: memref<?xf32>, %counters: memref<?xi32>) attributes {wsc.num_threads = 128 : i32} {
  %c0 = arith.constant 0 : index
  %split = gpu.block_id z
  %acc = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 64, 64>, f32>
  "wsc.partial_store"(%acc, %partials, %c0, %split) {splits = 2 : i32} : (!wsc.acc<array<i64: 64, 64>, f32>, memref<?xf32>, index, index) -> ()
  // expected-error @+1 {{splits-mismatch: wsc.partial_arrive counts 4 splits of the partial sums of rows from 0, stored as one of 2}}
  %last = "wsc.partial_arrive"(%counters, %c0) {splits = 4 : i32} : (memref<?xi32>, index) -> i1
  scf.if %last {
    "wsc.partial_reduce"(%acc, %partials, %counters, %c0) {splits = 2 : i32} : (!wsc.acc<array<i64: 64, 64>, f32>, memref<?xf32>, memref<?xi32>, index) -> ()
    "wsc.store"(%acc, %c, %c0, %c0) : (!wsc.acc<array<i64: 64, 64>, f32>, memref<?x?xf32>, index, index) -> ()
  }
  return
}

// -----

// A partial sum stored and never published: the other splits never see it.
func.func @never_arrives(%c: memref<?x?xf32>, %partials: memref<?xf32>, %counters: memref<?xi32>) attributes {wsc.num_threads = 128 : i32} {
  %c0 = arith.constant 0 : index
  %split = gpu.block_id z
  %acc = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 64, 64>, f32>
  // expected-error @+1 {{arrival-without-partial: the 128 threads outside every role stores a partial sum of rows from 0 and exits without arriving on their counter}}
  "wsc.partial_store"(%acc, %partials, %c0, %split) {splits = 2 : i32} : (!wsc.acc<array<i64: 64, 64>, f32>, memref<?xf32>, index, index) -> ()
  "wsc.store"(%acc, %c, %c0, %c0) : (!wsc.acc<array<i64: 64, 64>, f32>, memref<?x?xf32>, index, index) -> ()
  return
}

// -----

// Two consumer groups store their partial sums at the same rows: one
// workspace slot and one counter, which each split then counts twice.
func.func @split_k_two_groups(%c: memref<?x?xf32>, %partials: memref<?xf32>, %counters: memref<?xi32>) attributes {wsc.num_threads = 256 : i32} {
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %split = gpu.block_id z
  %g0 = "wsc.role"() {num_threads = 128 : i32, role = "consumer", thread_begin = 0 : i32} : () -> i1
  scf.if %g0 {
    %acc = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 64, 64>, f32>
    "wsc.partial_store"(%acc, %partials, %c0, %split) {splits = 2 : i32} : (!wsc.acc<array<i64: 64, 64>, f32>, memref<?xf32>, index, index) -> ()
    %last = "wsc.partial_arrive"(%counters, %c0) {splits = 2 : i32} : (memref<?xi32>, index) -> i1
    scf.if %last {
      "wsc.partial_reduce"(%acc, %partials, %counters, %c0) {splits = 2 : i32} : (!wsc.acc<array<i64: 64, 64>, f32>, memref<?xf32>, memref<?xi32>, index) -> ()
      "wsc.store"(%acc, %c, %c0, %c0) : (!wsc.acc<array<i64: 64, 64>, f32>, memref<?x?xf32>, index, index) -> ()
    }
  }
  %g1 = "wsc.role"() {num_threads = 128 : i32, role = "consumer", thread_begin = 128 : i32} : () -> i1
  scf.if %g1 {
    %acc = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 64, 64>, f32>
    // expected-error @below {{partial-shared: the consumer role [128, 256) stores a partial sum of rows [0, 64), and the consumer role [0, 128) one of rows [0, 64): their workspace rows (and counters) overlap, so the sums overwrite each other and a split's arrivals are miscounted (k_tiles = 1, num_stages = 1)}}
    "wsc.partial_store"(%acc, %partials, %c0, %split) {splits = 2 : i32} : (!wsc.acc<array<i64: 64, 64>, f32>, memref<?xf32>, index, index) -> ()
    %last = "wsc.partial_arrive"(%counters, %c0) {splits = 2 : i32} : (memref<?xi32>, index) -> i1
    scf.if %last {
      "wsc.partial_reduce"(%acc, %partials, %counters, %c0) {splits = 2 : i32} : (!wsc.acc<array<i64: 64, 64>, f32>, memref<?xf32>, memref<?xi32>, index) -> ()
      "wsc.store"(%acc, %c, %c64, %c0) : (!wsc.acc<array<i64: 64, 64>, f32>, memref<?x?xf32>, index, index) -> ()
    }
  }
  return
}

// -----

// Group 1's partial sums start at row 32, inside group 0's 64 rows: the
// workspace rows overlap.
func.func @split_k_two_groups(%c: memref<?x?xf32>, %partials: memref<?xf32>, %counters: memref<?xi32>) attributes {wsc.num_threads = 256 : i32} {
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %split = gpu.block_id z
  %g0 = "wsc.role"() {num_threads = 128 : i32, role = "consumer", thread_begin = 0 : i32} : () -> i1
  scf.if %g0 {
    %acc = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 64, 64>, f32>
    "wsc.partial_store"(%acc, %partials, %c0, %split) {splits = 2 : i32} : (!wsc.acc<array<i64: 64, 64>, f32>, memref<?xf32>, index, index) -> ()
    %last = "wsc.partial_arrive"(%counters, %c0) {splits = 2 : i32} : (memref<?xi32>, index) -> i1
    scf.if %last {
      "wsc.partial_reduce"(%acc, %partials, %counters, %c0) {splits = 2 : i32} : (!wsc.acc<array<i64: 64, 64>, f32>, memref<?xf32>, memref<?xi32>, index) -> ()
      "wsc.store"(%acc, %c, %c0, %c0) : (!wsc.acc<array<i64: 64, 64>, f32>, memref<?x?xf32>, index, index) -> ()
    }
  }
  %g1 = "wsc.role"() {num_threads = 128 : i32, role = "consumer", thread_begin = 128 : i32} : () -> i1
  scf.if %g1 {
    %acc = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 64, 64>, f32>
    %c32 = arith.constant 32 : index
    // expected-error @below {{partial-shared: the consumer role [128, 256) stores a partial sum of rows [32, 96), and the consumer role [0, 128) one of rows [0, 64): their workspace rows (and counters) overlap, so the sums overwrite each other and a split's arrivals are miscounted (k_tiles = 1, num_stages = 1)}}
    "wsc.partial_store"(%acc, %partials, %c32, %split) {splits = 2 : i32} : (!wsc.acc<array<i64: 64, 64>, f32>, memref<?xf32>, index, index) -> ()
    %last = "wsc.partial_arrive"(%counters, %c32) {splits = 2 : i32} : (memref<?xi32>, index) -> i1
    scf.if %last {
      "wsc.partial_reduce"(%acc, %partials, %counters, %c32) {splits = 2 : i32} : (!wsc.acc<array<i64: 64, 64>, f32>, memref<?xf32>, memref<?xi32>, index) -> ()
      "wsc.store"(%acc, %c, %c64, %c0) : (!wsc.acc<array<i64: 64, 64>, f32>, memref<?x?xf32>, index, index) -> ()
    }
  }
  return
}
