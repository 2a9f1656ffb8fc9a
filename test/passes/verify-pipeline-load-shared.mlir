// --verify-pipeline on kernels whose consumers read stages into registers
// (wsc.load_shared): a row kernel that streams a [64, 128] tile of x per
// stage, reads it twice in 64-column blocks, writes the second block back
// in place and copies the stage out with TMA before releasing it. The first
// kernel is clean; in each of the others one step of that protocol is
// planted wrong, reported at the op that shows it.
// RUN: wsc-opt --split-input-file --verify-diagnostics --verify-pipeline %s

// The protocol as it should be: no diagnostic.
func.func @rows_in_place(%x: memref<?x?xbf16>, %y: memref<?x?xbf16>) attributes {wsc.num_threads = 160 : i32} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %false = arith.constant false
  %true = arith.constant true
  %sx = "wsc.alloc_shared"() : () -> memref<2x64x128xbf16, 3>
  %full = "wsc.mbarrier_alloc"() {arrival_count = 1 : i32, num_barriers = 2 : i32} : () -> !wsc.mbarriers
  %empty = "wsc.mbarrier_alloc"() {arrival_count = 128 : i32, num_barriers = 2 : i32} : () -> !wsc.mbarriers
  "wsc.sync"() : () -> ()
  %rows = memref.dim %x, %c0 : memref<?x?xbf16>
  %tiles = arith.ceildivui %rows, %c64 : index
  %consumer = "wsc.role"() {num_threads = 128 : i32, role = "consumer", thread_begin = 0 : i32} : () -> i1
  scf.if %consumer {
    %s_n, %p_n = scf.for %t = %c0 to %tiles step %c1 iter_args(%stage = %c0, %phase = %false) -> (index, i1) {
      "wsc.mbarrier_wait"(%full, %stage, %phase) : (!wsc.mbarriers, index, i1) -> ()
      %first = "wsc.load_shared"(%sx, %stage) {row = 0 : i32, col = 0 : i32} : (memref<2x64x128xbf16, 3>, index) -> !wsc.acc<array<i64: 64, 64>, f32>
      %max = "wsc.tile_row_reduce"(%first) {kind = "max"} : (!wsc.acc<array<i64: 64, 64>, f32>) -> !wsc.acc<array<i64: 64, 1>, f32>
      %row_max = "wsc.tile_col_reduce"(%max) {kind = "max", rows = 16 : i32} : (!wsc.acc<array<i64: 64, 1>, f32>) -> !wsc.acc<array<i64: 64, 1>, f32>
      %second = "wsc.load_shared"(%sx, %stage) {row = 0 : i32, col = 64 : i32} : (memref<2x64x128xbf16, 3>, index) -> !wsc.acc<array<i64: 64, 64>, f32>
      %shifted = "wsc.tile_binary"(%second, %row_max) {kind = "sub"} : (!wsc.acc<array<i64: 64, 64>, f32>, !wsc.acc<array<i64: 64, 1>, f32>) -> !wsc.acc<array<i64: 64, 64>, f32>
      %out = "wsc.cast"(%shifted) : (!wsc.acc<array<i64: 64, 64>, f32>) -> !wsc.acc<array<i64: 64, 64>, bf16>
      "wsc.store_shared"(%out, %sx, %stage) {row = 0 : i32, col = 64 : i32} : (!wsc.acc<array<i64: 64, 64>, bf16>, memref<2x64x128xbf16, 3>, index) -> ()
      "wsc.fence_proxy_async"() : () -> ()
      "wsc.sync"() : () -> ()
      %elected = "wsc.elect"() : () -> i1
      scf.if %elected {
        %row = arith.muli %t, %c64 : index
        "wsc.tma_store"(%sx, %stage, %y, %row, %c0) : (memref<2x64x128xbf16, 3>, index, memref<?x?xbf16>, index, index) -> ()
        "wsc.tma_store_wait"() {pending = 0 : i32} : () -> ()
      }
      "wsc.mbarrier_arrive"(%empty, %stage) : (!wsc.mbarriers, index) -> ()
      %next:2 = "wsc.ring_advance"(%stage, %phase) {num_stages = 2 : i32} : (index, i1) -> (index, i1)
      scf.yield %next#0, %next#1 : index, i1
    }
  }
  %producer = "wsc.role"() {num_threads = 32 : i32, role = "producer", thread_begin = 128 : i32} : () -> i1
  scf.if %producer {
    %s_n, %p_n = scf.for %t = %c0 to %tiles step %c1 iter_args(%stage = %c0, %phase = %true) -> (index, i1) {
      "wsc.mbarrier_wait"(%empty, %stage, %phase) : (!wsc.mbarriers, index, i1) -> ()
      %elected = "wsc.elect"() : () -> i1
      scf.if %elected {
        "wsc.mbarrier_arrive_expect_tx"(%full, %stage) {tx_bytes = 16384 : i32} : (!wsc.mbarriers, index) -> ()
        %row = arith.muli %t, %c64 : index
        "wsc.tma_load"(%x, %row, %c0, %sx, %stage, %full) : (memref<?x?xbf16>, index, index, memref<2x64x128xbf16, 3>, index, !wsc.mbarriers) -> ()
      }
      %next:2 = "wsc.ring_advance"(%stage, %phase) {num_stages = 2 : i32} : (index, i1) -> (index, i1)
      scf.yield %next#0, %next#1 : index, i1
    }
    %c2 = arith.constant 2 : index
    %d_s, %d_p = scf.for %j = %c0 to %c2 step %c1 iter_args(%stage = %s_n, %phase = %p_n) -> (index, i1) {
      %position = arith.addi %j, %tiles : index
      %filled = arith.cmpi uge, %position, %c2 : index
      scf.if %filled {
        "wsc.mbarrier_wait"(%empty, %stage, %phase) : (!wsc.mbarriers, index, i1) -> ()
      }
      %next:2 = "wsc.ring_advance"(%stage, %phase) {num_stages = 2 : i32} : (index, i1) -> (index, i1)
      scf.yield %next#0, %next#1 : index, i1
    }
  }
  return
}

// -----

// The first read comes before the wait on the stage's full barrier.
func.func @read_before_wait(%x: memref<?x?xbf16>, %y: memref<?x?xbf16>) attributes {wsc.num_threads = 160 : i32} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %false = arith.constant false
  %true = arith.constant true
  %sx = "wsc.alloc_shared"() : () -> memref<2x64x128xbf16, 3>
  %full = "wsc.mbarrier_alloc"() {arrival_count = 1 : i32, num_barriers = 2 : i32} : () -> !wsc.mbarriers
  %empty = "wsc.mbarrier_alloc"() {arrival_count = 128 : i32, num_barriers = 2 : i32} : () -> !wsc.mbarriers
  "wsc.sync"() : () -> ()
  %rows = memref.dim %x, %c0 : memref<?x?xbf16>
  %tiles = arith.ceildivui %rows, %c64 : index
  %consumer = "wsc.role"() {num_threads = 128 : i32, role = "consumer", thread_begin = 0 : i32} : () -> i1
  scf.if %consumer {
    %s_n, %p_n = scf.for %t = %c0 to %tiles step %c1 iter_args(%stage = %c0, %phase = %false) -> (index, i1) {
      // expected-error @below {{wsc.load_shared reads ring of 'a' stage 0 before its data landed (copy #1 of the stage was never issued) (k_tiles = 1, num_stages = 2)}}
      %first = "wsc.load_shared"(%sx, %stage) {row = 0 : i32, col = 0 : i32} : (memref<2x64x128xbf16, 3>, index) -> !wsc.acc<array<i64: 64, 64>, f32>
      "wsc.mbarrier_wait"(%full, %stage, %phase) : (!wsc.mbarriers, index, i1) -> ()
      %max = "wsc.tile_row_reduce"(%first) {kind = "max"} : (!wsc.acc<array<i64: 64, 64>, f32>) -> !wsc.acc<array<i64: 64, 1>, f32>
      %row_max = "wsc.tile_col_reduce"(%max) {kind = "max", rows = 16 : i32} : (!wsc.acc<array<i64: 64, 1>, f32>) -> !wsc.acc<array<i64: 64, 1>, f32>
      %second = "wsc.load_shared"(%sx, %stage) {row = 0 : i32, col = 64 : i32} : (memref<2x64x128xbf16, 3>, index) -> !wsc.acc<array<i64: 64, 64>, f32>
      %shifted = "wsc.tile_binary"(%second, %row_max) {kind = "sub"} : (!wsc.acc<array<i64: 64, 64>, f32>, !wsc.acc<array<i64: 64, 1>, f32>) -> !wsc.acc<array<i64: 64, 64>, f32>
      %out = "wsc.cast"(%shifted) : (!wsc.acc<array<i64: 64, 64>, f32>) -> !wsc.acc<array<i64: 64, 64>, bf16>
      "wsc.store_shared"(%out, %sx, %stage) {row = 0 : i32, col = 64 : i32} : (!wsc.acc<array<i64: 64, 64>, bf16>, memref<2x64x128xbf16, 3>, index) -> ()
      "wsc.fence_proxy_async"() : () -> ()
      "wsc.sync"() : () -> ()
      %elected = "wsc.elect"() : () -> i1
      scf.if %elected {
        %row = arith.muli %t, %c64 : index
        "wsc.tma_store"(%sx, %stage, %y, %row, %c0) : (memref<2x64x128xbf16, 3>, index, memref<?x?xbf16>, index, index) -> ()
        "wsc.tma_store_wait"() {pending = 0 : i32} : () -> ()
      }
      "wsc.mbarrier_arrive"(%empty, %stage) : (!wsc.mbarriers, index) -> ()
      %next:2 = "wsc.ring_advance"(%stage, %phase) {num_stages = 2 : i32} : (index, i1) -> (index, i1)
      scf.yield %next#0, %next#1 : index, i1
    }
  }
  %producer = "wsc.role"() {num_threads = 32 : i32, role = "producer", thread_begin = 128 : i32} : () -> i1
  scf.if %producer {
    %s_n, %p_n = scf.for %t = %c0 to %tiles step %c1 iter_args(%stage = %c0, %phase = %true) -> (index, i1) {
      "wsc.mbarrier_wait"(%empty, %stage, %phase) : (!wsc.mbarriers, index, i1) -> ()
      %elected = "wsc.elect"() : () -> i1
      scf.if %elected {
        "wsc.mbarrier_arrive_expect_tx"(%full, %stage) {tx_bytes = 16384 : i32} : (!wsc.mbarriers, index) -> ()
        %row = arith.muli %t, %c64 : index
        "wsc.tma_load"(%x, %row, %c0, %sx, %stage, %full) : (memref<?x?xbf16>, index, index, memref<2x64x128xbf16, 3>, index, !wsc.mbarriers) -> ()
      }
      %next:2 = "wsc.ring_advance"(%stage, %phase) {num_stages = 2 : i32} : (index, i1) -> (index, i1)
      scf.yield %next#0, %next#1 : index, i1
    }
    %c2 = arith.constant 2 : index
    %d_s, %d_p = scf.for %j = %c0 to %c2 step %c1 iter_args(%stage = %s_n, %phase = %p_n) -> (index, i1) {
      %position = arith.addi %j, %tiles : index
      %filled = arith.cmpi uge, %position, %c2 : index
      scf.if %filled {
        "wsc.mbarrier_wait"(%empty, %stage, %phase) : (!wsc.mbarriers, index, i1) -> ()
      }
      %next:2 = "wsc.ring_advance"(%stage, %phase) {num_stages = 2 : i32} : (index, i1) -> (index, i1)
      scf.yield %next#0, %next#1 : index, i1
    }
  }
  return
}

// -----

// The stage is released while the TMA store still reads it (no
// wsc.tma_store_wait): the refill of stage 0 races the store.
func.func @release_while_stored(%x: memref<?x?xbf16>, %y: memref<?x?xbf16>) attributes {wsc.num_threads = 160 : i32} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %false = arith.constant false
  %true = arith.constant true
  %sx = "wsc.alloc_shared"() : () -> memref<2x64x128xbf16, 3>
  %full = "wsc.mbarrier_alloc"() {arrival_count = 1 : i32, num_barriers = 2 : i32} : () -> !wsc.mbarriers
  %empty = "wsc.mbarrier_alloc"() {arrival_count = 128 : i32, num_barriers = 2 : i32} : () -> !wsc.mbarriers
  "wsc.sync"() : () -> ()
  %rows = memref.dim %x, %c0 : memref<?x?xbf16>
  %tiles = arith.ceildivui %rows, %c64 : index
  %consumer = "wsc.role"() {num_threads = 128 : i32, role = "consumer", thread_begin = 0 : i32} : () -> i1
  scf.if %consumer {
    %s_n, %p_n = scf.for %t = %c0 to %tiles step %c1 iter_args(%stage = %c0, %phase = %false) -> (index, i1) {
      "wsc.mbarrier_wait"(%full, %stage, %phase) : (!wsc.mbarriers, index, i1) -> ()
      %first = "wsc.load_shared"(%sx, %stage) {row = 0 : i32, col = 0 : i32} : (memref<2x64x128xbf16, 3>, index) -> !wsc.acc<array<i64: 64, 64>, f32>
      %max = "wsc.tile_row_reduce"(%first) {kind = "max"} : (!wsc.acc<array<i64: 64, 64>, f32>) -> !wsc.acc<array<i64: 64, 1>, f32>
      %row_max = "wsc.tile_col_reduce"(%max) {kind = "max", rows = 16 : i32} : (!wsc.acc<array<i64: 64, 1>, f32>) -> !wsc.acc<array<i64: 64, 1>, f32>
      %second = "wsc.load_shared"(%sx, %stage) {row = 0 : i32, col = 64 : i32} : (memref<2x64x128xbf16, 3>, index) -> !wsc.acc<array<i64: 64, 64>, f32>
      %shifted = "wsc.tile_binary"(%second, %row_max) {kind = "sub"} : (!wsc.acc<array<i64: 64, 64>, f32>, !wsc.acc<array<i64: 64, 1>, f32>) -> !wsc.acc<array<i64: 64, 64>, f32>
      %out = "wsc.cast"(%shifted) : (!wsc.acc<array<i64: 64, 64>, f32>) -> !wsc.acc<array<i64: 64, 64>, bf16>
      "wsc.store_shared"(%out, %sx, %stage) {row = 0 : i32, col = 64 : i32} : (!wsc.acc<array<i64: 64, 64>, bf16>, memref<2x64x128xbf16, 3>, index) -> ()
      "wsc.fence_proxy_async"() : () -> ()
      "wsc.sync"() : () -> ()
      %elected = "wsc.elect"() : () -> i1
      scf.if %elected {
        %row = arith.muli %t, %c64 : index
        "wsc.tma_store"(%sx, %stage, %y, %row, %c0) : (memref<2x64x128xbf16, 3>, index, memref<?x?xbf16>, index, index) -> ()
      }
      "wsc.mbarrier_arrive"(%empty, %stage) : (!wsc.mbarriers, index) -> ()
      %next:2 = "wsc.ring_advance"(%stage, %phase) {num_stages = 2 : i32} : (index, i1) -> (index, i1)
      scf.yield %next#0, %next#1 : index, i1
    }
  }
  %producer = "wsc.role"() {num_threads = 32 : i32, role = "producer", thread_begin = 128 : i32} : () -> i1
  scf.if %producer {
    %s_n, %p_n = scf.for %t = %c0 to %tiles step %c1 iter_args(%stage = %c0, %phase = %true) -> (index, i1) {
      "wsc.mbarrier_wait"(%empty, %stage, %phase) : (!wsc.mbarriers, index, i1) -> ()
      %elected = "wsc.elect"() : () -> i1
      scf.if %elected {
        "wsc.mbarrier_arrive_expect_tx"(%full, %stage) {tx_bytes = 16384 : i32} : (!wsc.mbarriers, index) -> ()
        %row = arith.muli %t, %c64 : index
        // expected-error @below {{ring of 'a' stage 0 overwritten while a TMA store may still read it (no wsc.tma_store_wait before the stage's release) (k_tiles = 3, num_stages = 2)}}
        "wsc.tma_load"(%x, %row, %c0, %sx, %stage, %full) : (memref<?x?xbf16>, index, index, memref<2x64x128xbf16, 3>, index, !wsc.mbarriers) -> ()
      }
      %next:2 = "wsc.ring_advance"(%stage, %phase) {num_stages = 2 : i32} : (index, i1) -> (index, i1)
      scf.yield %next#0, %next#1 : index, i1
    }
    %c2 = arith.constant 2 : index
    %d_s, %d_p = scf.for %j = %c0 to %c2 step %c1 iter_args(%stage = %s_n, %phase = %p_n) -> (index, i1) {
      %position = arith.addi %j, %tiles : index
      %filled = arith.cmpi uge, %position, %c2 : index
      scf.if %filled {
        "wsc.mbarrier_wait"(%empty, %stage, %phase) : (!wsc.mbarriers, index, i1) -> ()
      }
      %next:2 = "wsc.ring_advance"(%stage, %phase) {num_stages = 2 : i32} : (index, i1) -> (index, i1)
      scf.yield %next#0, %next#1 : index, i1
    }
  }
  return
}

// -----

// The stage is released between its two reads: the second read sees the
// refill.
func.func @release_before_second_read(%x: memref<?x?xbf16>, %y: memref<?x?xbf16>) attributes {wsc.num_threads = 160 : i32} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %false = arith.constant false
  %true = arith.constant true
  %sx = "wsc.alloc_shared"() : () -> memref<2x64x128xbf16, 3>
  %full = "wsc.mbarrier_alloc"() {arrival_count = 1 : i32, num_barriers = 2 : i32} : () -> !wsc.mbarriers
  %empty = "wsc.mbarrier_alloc"() {arrival_count = 128 : i32, num_barriers = 2 : i32} : () -> !wsc.mbarriers
  "wsc.sync"() : () -> ()
  %rows = memref.dim %x, %c0 : memref<?x?xbf16>
  %tiles = arith.ceildivui %rows, %c64 : index
  %consumer = "wsc.role"() {num_threads = 128 : i32, role = "consumer", thread_begin = 0 : i32} : () -> i1
  scf.if %consumer {
    %s_n, %p_n = scf.for %t = %c0 to %tiles step %c1 iter_args(%stage = %c0, %phase = %false) -> (index, i1) {
      "wsc.mbarrier_wait"(%full, %stage, %phase) : (!wsc.mbarriers, index, i1) -> ()
      %first = "wsc.load_shared"(%sx, %stage) {row = 0 : i32, col = 0 : i32} : (memref<2x64x128xbf16, 3>, index) -> !wsc.acc<array<i64: 64, 64>, f32>
      %max = "wsc.tile_row_reduce"(%first) {kind = "max"} : (!wsc.acc<array<i64: 64, 64>, f32>) -> !wsc.acc<array<i64: 64, 1>, f32>
      %row_max = "wsc.tile_col_reduce"(%max) {kind = "max", rows = 16 : i32} : (!wsc.acc<array<i64: 64, 1>, f32>) -> !wsc.acc<array<i64: 64, 1>, f32>
      "wsc.mbarrier_arrive"(%empty, %stage) : (!wsc.mbarriers, index) -> ()
      // expected-error @below {{wsc.load_shared reads ring of 'a' stage 0 after it was refilled: it sees copy #2 where it expects copy #1 (k_tiles = 3, num_stages = 2)}}
      %second = "wsc.load_shared"(%sx, %stage) {row = 0 : i32, col = 64 : i32} : (memref<2x64x128xbf16, 3>, index) -> !wsc.acc<array<i64: 64, 64>, f32>
      %shifted = "wsc.tile_binary"(%second, %row_max) {kind = "sub"} : (!wsc.acc<array<i64: 64, 64>, f32>, !wsc.acc<array<i64: 64, 1>, f32>) -> !wsc.acc<array<i64: 64, 64>, f32>
      %out = "wsc.cast"(%shifted) : (!wsc.acc<array<i64: 64, 64>, f32>) -> !wsc.acc<array<i64: 64, 64>, bf16>
      "wsc.store_shared"(%out, %sx, %stage) {row = 0 : i32, col = 64 : i32} : (!wsc.acc<array<i64: 64, 64>, bf16>, memref<2x64x128xbf16, 3>, index) -> ()
      "wsc.fence_proxy_async"() : () -> ()
      "wsc.sync"() : () -> ()
      %elected = "wsc.elect"() : () -> i1
      scf.if %elected {
        %row = arith.muli %t, %c64 : index
        "wsc.tma_store"(%sx, %stage, %y, %row, %c0) : (memref<2x64x128xbf16, 3>, index, memref<?x?xbf16>, index, index) -> ()
        "wsc.tma_store_wait"() {pending = 0 : i32} : () -> ()
      }
      %next:2 = "wsc.ring_advance"(%stage, %phase) {num_stages = 2 : i32} : (index, i1) -> (index, i1)
      scf.yield %next#0, %next#1 : index, i1
    }
  }
  %producer = "wsc.role"() {num_threads = 32 : i32, role = "producer", thread_begin = 128 : i32} : () -> i1
  scf.if %producer {
    %s_n, %p_n = scf.for %t = %c0 to %tiles step %c1 iter_args(%stage = %c0, %phase = %true) -> (index, i1) {
      "wsc.mbarrier_wait"(%empty, %stage, %phase) : (!wsc.mbarriers, index, i1) -> ()
      %elected = "wsc.elect"() : () -> i1
      scf.if %elected {
        "wsc.mbarrier_arrive_expect_tx"(%full, %stage) {tx_bytes = 16384 : i32} : (!wsc.mbarriers, index) -> ()
        %row = arith.muli %t, %c64 : index
        "wsc.tma_load"(%x, %row, %c0, %sx, %stage, %full) : (memref<?x?xbf16>, index, index, memref<2x64x128xbf16, 3>, index, !wsc.mbarriers) -> ()
      }
      %next:2 = "wsc.ring_advance"(%stage, %phase) {num_stages = 2 : i32} : (index, i1) -> (index, i1)
      scf.yield %next#0, %next#1 : index, i1
    }
    %c2 = arith.constant 2 : index
    %d_s, %d_p = scf.for %j = %c0 to %c2 step %c1 iter_args(%stage = %s_n, %phase = %p_n) -> (index, i1) {
      %position = arith.addi %j, %tiles : index
      %filled = arith.cmpi uge, %position, %c2 : index
      scf.if %filled {
        "wsc.mbarrier_wait"(%empty, %stage, %phase) : (!wsc.mbarriers, index, i1) -> ()
      }
      %next:2 = "wsc.ring_advance"(%stage, %phase) {num_stages = 2 : i32} : (index, i1) -> (index, i1)
      scf.yield %next#0, %next#1 : index, i1
    }
  }
  return
}

// -----

// One thread releases the stage after a wait that leaves one TMA store
// pending: this tile's, which still reads the stage it releases.
func.func @release_of_the_stage_still_stored(%x: memref<?x?xbf16>, %y: memref<?x?xbf16>) attributes {wsc.num_threads = 160 : i32} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %false = arith.constant false
  %true = arith.constant true
  %sx = "wsc.alloc_shared"() : () -> memref<2x64x128xbf16, 3>
  %full = "wsc.mbarrier_alloc"() {arrival_count = 1 : i32, num_barriers = 2 : i32} : () -> !wsc.mbarriers
  %empty = "wsc.mbarrier_alloc"() {arrival_count = 1 : i32, num_barriers = 2 : i32} : () -> !wsc.mbarriers
  "wsc.sync"() : () -> ()
  %rows = memref.dim %x, %c0 : memref<?x?xbf16>
  %tiles = arith.ceildivui %rows, %c64 : index
  %consumer = "wsc.role"() {num_threads = 128 : i32, role = "consumer", thread_begin = 0 : i32} : () -> i1
  scf.if %consumer {
    %s_n, %p_n = scf.for %t = %c0 to %tiles step %c1 iter_args(%stage = %c0, %phase = %false) -> (index, i1) {
      "wsc.mbarrier_wait"(%full, %stage, %phase) : (!wsc.mbarriers, index, i1) -> ()
      %first = "wsc.load_shared"(%sx, %stage) {row = 0 : i32, col = 0 : i32} : (memref<2x64x128xbf16, 3>, index) -> !wsc.acc<array<i64: 64, 64>, f32>
      %max = "wsc.tile_row_reduce"(%first) {kind = "max"} : (!wsc.acc<array<i64: 64, 64>, f32>) -> !wsc.acc<array<i64: 64, 1>, f32>
      %row_max = "wsc.tile_col_reduce"(%max) {kind = "max", rows = 16 : i32} : (!wsc.acc<array<i64: 64, 1>, f32>) -> !wsc.acc<array<i64: 64, 1>, f32>
      %second = "wsc.load_shared"(%sx, %stage) {row = 0 : i32, col = 64 : i32} : (memref<2x64x128xbf16, 3>, index) -> !wsc.acc<array<i64: 64, 64>, f32>
      %shifted = "wsc.tile_binary"(%second, %row_max) {kind = "sub"} : (!wsc.acc<array<i64: 64, 64>, f32>, !wsc.acc<array<i64: 64, 1>, f32>) -> !wsc.acc<array<i64: 64, 64>, f32>
      %out = "wsc.cast"(%shifted) : (!wsc.acc<array<i64: 64, 64>, f32>) -> !wsc.acc<array<i64: 64, 64>, bf16>
      "wsc.store_shared"(%out, %sx, %stage) {row = 0 : i32, col = 64 : i32} : (!wsc.acc<array<i64: 64, 64>, bf16>, memref<2x64x128xbf16, 3>, index) -> ()
      "wsc.fence_proxy_async"() : () -> ()
      "wsc.sync"() : () -> ()
      %elected = "wsc.elect"() : () -> i1
      scf.if %elected {
        %row = arith.muli %t, %c64 : index
        "wsc.tma_store"(%sx, %stage, %y, %row, %c0) : (memref<2x64x128xbf16, 3>, index, memref<?x?xbf16>, index, index) -> ()
        "wsc.tma_store_wait"() {pending = 1 : i32} : () -> ()
        "wsc.mbarrier_arrive"(%empty, %stage) : (!wsc.mbarriers, index) -> ()
      }
      %next:2 = "wsc.ring_advance"(%stage, %phase) {num_stages = 2 : i32} : (index, i1) -> (index, i1)
      scf.yield %next#0, %next#1 : index, i1
    }
  }
  %producer = "wsc.role"() {num_threads = 32 : i32, role = "producer", thread_begin = 128 : i32} : () -> i1
  scf.if %producer {
    %s_n, %p_n = scf.for %t = %c0 to %tiles step %c1 iter_args(%stage = %c0, %phase = %true) -> (index, i1) {
      "wsc.mbarrier_wait"(%empty, %stage, %phase) : (!wsc.mbarriers, index, i1) -> ()
      %elected = "wsc.elect"() : () -> i1
      scf.if %elected {
        "wsc.mbarrier_arrive_expect_tx"(%full, %stage) {tx_bytes = 16384 : i32} : (!wsc.mbarriers, index) -> ()
        %row = arith.muli %t, %c64 : index
        // expected-error @below {{ring of 'a' stage 0 overwritten while a TMA store may still read it (no wsc.tma_store_wait before the stage's release) (k_tiles = 3, num_stages = 2)}}
        "wsc.tma_load"(%x, %row, %c0, %sx, %stage, %full) : (memref<?x?xbf16>, index, index, memref<2x64x128xbf16, 3>, index, !wsc.mbarriers) -> ()
      }
      %next:2 = "wsc.ring_advance"(%stage, %phase) {num_stages = 2 : i32} : (index, i1) -> (index, i1)
      scf.yield %next#0, %next#1 : index, i1
    }
    %c2 = arith.constant 2 : index
    %d_s, %d_p = scf.for %j = %c0 to %c2 step %c1 iter_args(%stage = %s_n, %phase = %p_n) -> (index, i1) {
      %position = arith.addi %j, %tiles : index
      %filled = arith.cmpi uge, %position, %c2 : index
      scf.if %filled {
        "wsc.mbarrier_wait"(%empty, %stage, %phase) : (!wsc.mbarriers, index, i1) -> ()
      }
      %next:2 = "wsc.ring_advance"(%stage, %phase) {num_stages = 2 : i32} : (index, i1) -> (index, i1)
      scf.yield %next#0, %next#1 : index, i1
    }
  }
  return
}

// -----

// One elected thread releases the stage for its group (arrival count 1)
// after a wsc.sync: every thread has finished reading it. No diagnostic.
func.func @elected_release_after_sync(%x: memref<?x?xbf16>, %y: memref<?x?xbf16>) attributes {wsc.num_threads = 160 : i32} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %false = arith.constant false
  %true = arith.constant true
  %sx = "wsc.alloc_shared"() : () -> memref<2x64x128xbf16, 3>
  %sy = "wsc.alloc_shared"() : () -> memref<1x64x64xbf16, 3>
  %full = "wsc.mbarrier_alloc"() {arrival_count = 1 : i32, num_barriers = 2 : i32} : () -> !wsc.mbarriers
  %empty = "wsc.mbarrier_alloc"() {arrival_count = 1 : i32, num_barriers = 2 : i32} : () -> !wsc.mbarriers
  "wsc.sync"() : () -> ()
  %rows = memref.dim %x, %c0 : memref<?x?xbf16>
  %tiles = arith.ceildivui %rows, %c64 : index
  %consumer = "wsc.role"() {num_threads = 128 : i32, role = "consumer", thread_begin = 0 : i32} : () -> i1
  scf.if %consumer {
    %s_n, %p_n = scf.for %t = %c0 to %tiles step %c1 iter_args(%stage = %c0, %phase = %false) -> (index, i1) {
      "wsc.mbarrier_wait"(%full, %stage, %phase) : (!wsc.mbarriers, index, i1) -> ()
      %first = "wsc.load_shared"(%sx, %stage) {row = 0 : i32, col = 0 : i32} : (memref<2x64x128xbf16, 3>, index) -> !wsc.acc<array<i64: 64, 64>, f32>
      %second = "wsc.load_shared"(%sx, %stage) {row = 0 : i32, col = 64 : i32} : (memref<2x64x128xbf16, 3>, index) -> !wsc.acc<array<i64: 64, 64>, f32>
      %sum = "wsc.tile_binary"(%first, %second) {kind = "add"} : (!wsc.acc<array<i64: 64, 64>, f32>, !wsc.acc<array<i64: 64, 64>, f32>) -> !wsc.acc<array<i64: 64, 64>, f32>
      %out = "wsc.cast"(%sum) : (!wsc.acc<array<i64: 64, 64>, f32>) -> !wsc.acc<array<i64: 64, 64>, bf16>
      "wsc.sync"() : () -> ()
      %elected = "wsc.elect"() : () -> i1
      scf.if %elected {
        "wsc.mbarrier_arrive"(%empty, %stage) : (!wsc.mbarriers, index) -> ()
      }
      "wsc.store_shared"(%out, %sy, %c0) {row = 0 : i32, col = 0 : i32} : (!wsc.acc<array<i64: 64, 64>, bf16>, memref<1x64x64xbf16, 3>, index) -> ()
      "wsc.fence_proxy_async"() : () -> ()
      "wsc.sync"() : () -> ()
      scf.if %elected {
        %row = arith.muli %t, %c64 : index
        "wsc.tma_store"(%sy, %c0, %y, %row, %c0) : (memref<1x64x64xbf16, 3>, index, memref<?x?xbf16>, index, index) -> ()
        "wsc.tma_store_wait"() {pending = 0 : i32} : () -> ()
      }
      "wsc.sync"() : () -> ()
      %next:2 = "wsc.ring_advance"(%stage, %phase) {num_stages = 2 : i32} : (index, i1) -> (index, i1)
      scf.yield %next#0, %next#1 : index, i1
    }
  }
  %producer = "wsc.role"() {num_threads = 32 : i32, role = "producer", thread_begin = 128 : i32} : () -> i1
  scf.if %producer {
    %s_n, %p_n = scf.for %t = %c0 to %tiles step %c1 iter_args(%stage = %c0, %phase = %true) -> (index, i1) {
      "wsc.mbarrier_wait"(%empty, %stage, %phase) : (!wsc.mbarriers, index, i1) -> ()
      %elected = "wsc.elect"() : () -> i1
      scf.if %elected {
        "wsc.mbarrier_arrive_expect_tx"(%full, %stage) {tx_bytes = 16384 : i32} : (!wsc.mbarriers, index) -> ()
        %row = arith.muli %t, %c64 : index
        "wsc.tma_load"(%x, %row, %c0, %sx, %stage, %full) : (memref<?x?xbf16>, index, index, memref<2x64x128xbf16, 3>, index, !wsc.mbarriers) -> ()
      }
      %next:2 = "wsc.ring_advance"(%stage, %phase) {num_stages = 2 : i32} : (index, i1) -> (index, i1)
      scf.yield %next#0, %next#1 : index, i1
    }
    %c2 = arith.constant 2 : index
    %d_s, %d_p = scf.for %j = %c0 to %c2 step %c1 iter_args(%stage = %s_n, %phase = %p_n) -> (index, i1) {
      %position = arith.addi %j, %tiles : index
      %filled = arith.cmpi uge, %position, %c2 : index
      scf.if %filled {
        "wsc.mbarrier_wait"(%empty, %stage, %phase) : (!wsc.mbarriers, index, i1) -> ()
      }
      %next:2 = "wsc.ring_advance"(%stage, %phase) {num_stages = 2 : i32} : (index, i1) -> (index, i1)
      scf.yield %next#0, %next#1 : index, i1
    }
  }
  return
}

// -----

// The same release with no wsc.sync before it: the elected thread's
// arrive says nothing of the other threads' reads, which the refill races.
func.func @elected_release_without_sync(%x: memref<?x?xbf16>, %y: memref<?x?xbf16>) attributes {wsc.num_threads = 160 : i32} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %false = arith.constant false
  %true = arith.constant true
  %sx = "wsc.alloc_shared"() : () -> memref<2x64x128xbf16, 3>
  %sy = "wsc.alloc_shared"() : () -> memref<1x64x64xbf16, 3>
  %full = "wsc.mbarrier_alloc"() {arrival_count = 1 : i32, num_barriers = 2 : i32} : () -> !wsc.mbarriers
  %empty = "wsc.mbarrier_alloc"() {arrival_count = 1 : i32, num_barriers = 2 : i32} : () -> !wsc.mbarriers
  "wsc.sync"() : () -> ()
  %rows = memref.dim %x, %c0 : memref<?x?xbf16>
  %tiles = arith.ceildivui %rows, %c64 : index
  %consumer = "wsc.role"() {num_threads = 128 : i32, role = "consumer", thread_begin = 0 : i32} : () -> i1
  scf.if %consumer {
    %s_n, %p_n = scf.for %t = %c0 to %tiles step %c1 iter_args(%stage = %c0, %phase = %false) -> (index, i1) {
      "wsc.mbarrier_wait"(%full, %stage, %phase) : (!wsc.mbarriers, index, i1) -> ()
      %first = "wsc.load_shared"(%sx, %stage) {row = 0 : i32, col = 0 : i32} : (memref<2x64x128xbf16, 3>, index) -> !wsc.acc<array<i64: 64, 64>, f32>
      // expected-note @below {{the wsc.load_shared that reads ring of 'a' stage 0}}
      %second = "wsc.load_shared"(%sx, %stage) {row = 0 : i32, col = 64 : i32} : (memref<2x64x128xbf16, 3>, index) -> !wsc.acc<array<i64: 64, 64>, f32>
      %sum = "wsc.tile_binary"(%first, %second) {kind = "add"} : (!wsc.acc<array<i64: 64, 64>, f32>, !wsc.acc<array<i64: 64, 64>, f32>) -> !wsc.acc<array<i64: 64, 64>, f32>
      %out = "wsc.cast"(%sum) : (!wsc.acc<array<i64: 64, 64>, f32>) -> !wsc.acc<array<i64: 64, 64>, bf16>
      %elected = "wsc.elect"() : () -> i1
      scf.if %elected {
        // expected-error @below {{stage 0 released by the elected thread alone while the other threads of consumer role [0, 128) may still be reading it: no wsc.sync between their wsc.load_shared and this arrive on empty (sync first, or arrive with every thread outside the wsc.elect) (k_tiles = 1, num_stages = 2)}}
        "wsc.mbarrier_arrive"(%empty, %stage) : (!wsc.mbarriers, index) -> ()
      }
      "wsc.store_shared"(%out, %sy, %c0) {row = 0 : i32, col = 0 : i32} : (!wsc.acc<array<i64: 64, 64>, bf16>, memref<1x64x64xbf16, 3>, index) -> ()
      "wsc.fence_proxy_async"() : () -> ()
      "wsc.sync"() : () -> ()
      scf.if %elected {
        %row = arith.muli %t, %c64 : index
        "wsc.tma_store"(%sy, %c0, %y, %row, %c0) : (memref<1x64x64xbf16, 3>, index, memref<?x?xbf16>, index, index) -> ()
        "wsc.tma_store_wait"() {pending = 0 : i32} : () -> ()
      }
      "wsc.sync"() : () -> ()
      %next:2 = "wsc.ring_advance"(%stage, %phase) {num_stages = 2 : i32} : (index, i1) -> (index, i1)
      scf.yield %next#0, %next#1 : index, i1
    }
  }
  %producer = "wsc.role"() {num_threads = 32 : i32, role = "producer", thread_begin = 128 : i32} : () -> i1
  scf.if %producer {
    %s_n, %p_n = scf.for %t = %c0 to %tiles step %c1 iter_args(%stage = %c0, %phase = %true) -> (index, i1) {
      "wsc.mbarrier_wait"(%empty, %stage, %phase) : (!wsc.mbarriers, index, i1) -> ()
      %elected = "wsc.elect"() : () -> i1
      scf.if %elected {
        "wsc.mbarrier_arrive_expect_tx"(%full, %stage) {tx_bytes = 16384 : i32} : (!wsc.mbarriers, index) -> ()
        %row = arith.muli %t, %c64 : index
        "wsc.tma_load"(%x, %row, %c0, %sx, %stage, %full) : (memref<?x?xbf16>, index, index, memref<2x64x128xbf16, 3>, index, !wsc.mbarriers) -> ()
      }
      %next:2 = "wsc.ring_advance"(%stage, %phase) {num_stages = 2 : i32} : (index, i1) -> (index, i1)
      scf.yield %next#0, %next#1 : index, i1
    }
    %c2 = arith.constant 2 : index
    %d_s, %d_p = scf.for %j = %c0 to %c2 step %c1 iter_args(%stage = %s_n, %phase = %p_n) -> (index, i1) {
      %position = arith.addi %j, %tiles : index
      %filled = arith.cmpi uge, %position, %c2 : index
      scf.if %filled {
        "wsc.mbarrier_wait"(%empty, %stage, %phase) : (!wsc.mbarriers, index, i1) -> ()
      }
      %next:2 = "wsc.ring_advance"(%stage, %phase) {num_stages = 2 : i32} : (index, i1) -> (index, i1)
      scf.yield %next#0, %next#1 : index, i1
    }
  }
  return
}
