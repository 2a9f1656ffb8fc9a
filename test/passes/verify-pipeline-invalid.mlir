// Planted bugs in the mbarrier protocol of the seed's kernels (V3 as in
// examples/matmul_v3.mlir): --verify-pipeline reports each at the offending
// op, with the smallest k_tiles that shows it.
// RUN: wsc-opt --split-input-file --verify-diagnostics --verify-pipeline %s

// The producer starts at phase 0 instead of 1: its first wait on a fresh empty
// barrier blocks, while the consumer waits for the copy it never issues.
func.func @producer_initial_phase(%a: memref<?x?xf16>, %b: memref<?x?xf16>, %c: memref<?x?xf32>)
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
  %empty = "wsc.mbarrier_alloc"() {arrival_count = 128 : i32, num_barriers = 4 : i32} : () -> !wsc.mbarriers
  "wsc.sync"() : () -> ()
  %is_consumer = "wsc.role"() {role = "consumer", thread_begin = 0 : i32, num_threads = 128 : i32, max_registers = 232 : i32} : () -> i1
  scf.if %is_consumer {
    %acc = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 128, 128>, f32>
    %cs:2 = scf.for %kt = %c0 to %k_tiles step %c1 iter_args(%stage = %c0, %phase = %false) -> (index, i1) {
      "wsc.mbarrier_wait"(%full, %stage, %phase) : (!wsc.mbarriers, index, i1) -> ()
      "wsc.wgmma_fence"() : () -> ()
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
    %ps:2 = scf.for %kt = %c0 to %k_tiles step %c1 iter_args(%stage = %c0, %phase = %false) -> (index, i1) {
      // expected-error @below {{deadlock: this wait for parity 0 on empty[0] never returns: every thread group is blocked and no copy is in flight (empty[0] is in phase 0 with 0 of 128 arrivals); a stage is free before its first release, so the first wait on empty is for parity 1, which returns at once on phase 0 (k_tiles = 1, num_stages = 4)}}
      "wsc.mbarrier_wait"(%empty, %stage, %phase) : (!wsc.mbarriers, index, i1) -> ()
      %k0 = arith.muli %kt, %c64 : index
      %elected = "wsc.elect"() : () -> i1
      scf.if %elected {
        "wsc.mbarrier_arrive_expect_tx"(%full, %stage) {tx_bytes = 32768 : i32} : (!wsc.mbarriers, index) -> ()
        "wsc.tma_load"(%a, %m0, %k0, %sa, %stage, %full) : (memref<?x?xf16>, index, index, memref<4x128x64xf16, 3>, index, !wsc.mbarriers) -> ()
        "wsc.tma_load"(%b, %n0, %k0, %sb, %stage, %full) : (memref<?x?xf16>, index, index, memref<4x128x64xf16, 3>, index, !wsc.mbarriers) -> ()
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

// The consumer waits on empty, the array it releases stages on, instead of
// full: the wait blames the consumer, not the producer's wait it blocks.
func.func @consumer_waits_on_empty(%a: memref<?x?xf16>, %b: memref<?x?xf16>, %c: memref<?x?xf32>)
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
  %empty = "wsc.mbarrier_alloc"() {arrival_count = 128 : i32, num_barriers = 4 : i32} : () -> !wsc.mbarriers
  "wsc.sync"() : () -> ()
  %is_consumer = "wsc.role"() {role = "consumer", thread_begin = 0 : i32, num_threads = 128 : i32, max_registers = 232 : i32} : () -> i1
  scf.if %is_consumer {
    %acc = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 128, 128>, f32>
    %cs:2 = scf.for %kt = %c0 to %k_tiles step %c1 iter_args(%stage = %c0, %phase = %false) -> (index, i1) {
      // expected-error @below {{deadlock: this wait for parity 0 on empty[0] never returns: the consumer role [0, 128) waits on empty, whose phases need its own wsc.mbarrier_arrive, and none has come in this phase; is this the wrong barrier array (the stages it reads are filled on full)? (empty[0] is in phase 0 with 0 of 128 arrivals) (k_tiles = 1, num_stages = 4)}}
      "wsc.mbarrier_wait"(%empty, %stage, %phase) : (!wsc.mbarriers, index, i1) -> ()
      "wsc.wgmma_fence"() : () -> ()
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
        "wsc.mbarrier_arrive_expect_tx"(%full, %stage) {tx_bytes = 32768 : i32} : (!wsc.mbarriers, index) -> ()
        "wsc.tma_load"(%a, %m0, %k0, %sa, %stage, %full) : (memref<?x?xf16>, index, index, memref<4x128x64xf16, 3>, index, !wsc.mbarriers) -> ()
        "wsc.tma_load"(%b, %n0, %k0, %sb, %stage, %full) : (memref<?x?xf16>, index, index, memref<4x128x64xf16, 3>, index, !wsc.mbarriers) -> ()
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

// The consumer starts at phase 1 instead of 0: its first wait on a fresh full
// barrier returns at once, and it multiplies a stage no copy has reached.
func.func @consumer_initial_phase(%a: memref<?x?xf16>, %b: memref<?x?xf16>, %c: memref<?x?xf32>)
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
  %empty = "wsc.mbarrier_alloc"() {arrival_count = 128 : i32, num_barriers = 4 : i32} : () -> !wsc.mbarriers
  "wsc.sync"() : () -> ()
  %is_consumer = "wsc.role"() {role = "consumer", thread_begin = 0 : i32, num_threads = 128 : i32, max_registers = 232 : i32} : () -> i1
  scf.if %is_consumer {
    %acc = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 128, 128>, f32>
    %cs:2 = scf.for %kt = %c0 to %k_tiles step %c1 iter_args(%stage = %c0, %phase = %true) -> (index, i1) {
      // expected-error @below {{this wait for parity 1 on full[0] returns before the copy it guards lands, so the wgmma after it reads A stage 0 too early: full[0] has completed no phase yet, and a wait returns at once while its parity differs from the barrier's current phase (0); the first wait on a barrier that copies complete is for parity 0 (k_tiles = 1, num_stages = 4)}}
      "wsc.mbarrier_wait"(%full, %stage, %phase) : (!wsc.mbarriers, index, i1) -> ()
      "wsc.wgmma_fence"() : () -> ()
      // expected-note @below {{the wgmma that reads A stage 0}}
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
        "wsc.mbarrier_arrive_expect_tx"(%full, %stage) {tx_bytes = 32768 : i32} : (!wsc.mbarriers, index) -> ()
        "wsc.tma_load"(%a, %m0, %k0, %sa, %stage, %full) : (memref<?x?xf16>, index, index, memref<4x128x64xf16, 3>, index, !wsc.mbarriers) -> ()
        "wsc.tma_load"(%b, %n0, %k0, %sb, %stage, %full) : (memref<?x?xf16>, index, index, memref<4x128x64xf16, 3>, index, !wsc.mbarriers) -> ()
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

// No drain: the producer leaves while the consumer still releases the stages it
// filled.
func.func @missing_drain(%a: memref<?x?xf16>, %b: memref<?x?xf16>, %c: memref<?x?xf32>)
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
  %empty = "wsc.mbarrier_alloc"() {arrival_count = 128 : i32, num_barriers = 4 : i32} : () -> !wsc.mbarriers
  "wsc.sync"() : () -> ()
  %is_consumer = "wsc.role"() {role = "consumer", thread_begin = 0 : i32, num_threads = 128 : i32, max_registers = 232 : i32} : () -> i1
  scf.if %is_consumer {
    %acc = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 128, 128>, f32>
    %cs:2 = scf.for %kt = %c0 to %k_tiles step %c1 iter_args(%stage = %c0, %phase = %false) -> (index, i1) {
      "wsc.mbarrier_wait"(%full, %stage, %phase) : (!wsc.mbarriers, index, i1) -> ()
      "wsc.wgmma_fence"() : () -> ()
      "wsc.wgmma"(%sa, %sb, %stage, %acc) {a_row = 0 : i32, b_layout = "nk"} : (memref<4x128x64xf16, 3>, memref<4x128x64xf16, 3>, index, !wsc.acc<array<i64: 128, 128>, f32>) -> ()
      "wsc.wgmma_commit_group"() : () -> ()
      "wsc.wgmma_wait_group"() {pending = 0 : i32} : () -> ()
      "wsc.mbarrier_arrive"(%empty, %stage) : (!wsc.mbarriers, index) -> ()
      %next_stage, %next_phase = "wsc.ring_advance"(%stage, %phase) {num_stages = 4 : i32} : (index, i1) -> (index, i1)
      scf.yield %next_stage, %next_phase : index, i1
    }
    "wsc.store"(%acc, %c, %m0, %n0) : (!wsc.acc<array<i64: 128, 128>, f32>, memref<?x?xf32>, index, index) -> ()
  }
  // expected-error @below {{producer exits with 1 release outstanding (missing drain): the producer role [128, 160) must wait on empty until every stage it filled has been released (k_tiles = 1, num_stages = 4)}}
  %is_producer = "wsc.role"() {role = "producer", thread_begin = 128 : i32, num_threads = 32 : i32, max_registers = 40 : i32} : () -> i1
  scf.if %is_producer {
    %ps:2 = scf.for %kt = %c0 to %k_tiles step %c1 iter_args(%stage = %c0, %phase = %true) -> (index, i1) {
      "wsc.mbarrier_wait"(%empty, %stage, %phase) : (!wsc.mbarriers, index, i1) -> ()
      %k0 = arith.muli %kt, %c64 : index
      %elected = "wsc.elect"() : () -> i1
      scf.if %elected {
        "wsc.mbarrier_arrive_expect_tx"(%full, %stage) {tx_bytes = 32768 : i32} : (!wsc.mbarriers, index) -> ()
        "wsc.tma_load"(%a, %m0, %k0, %sa, %stage, %full) : (memref<?x?xf16>, index, index, memref<4x128x64xf16, 3>, index, !wsc.mbarriers) -> ()
        "wsc.tma_load"(%b, %n0, %k0, %sb, %stage, %full) : (memref<?x?xf16>, index, index, memref<4x128x64xf16, 3>, index, !wsc.mbarriers) -> ()
      }
      %next_stage, %next_phase = "wsc.ring_advance"(%stage, %phase) {num_stages = 4 : i32} : (index, i1) -> (index, i1)
      scf.yield %next_stage, %next_phase : index, i1
    }
  }
  return
}

// -----

// The seed's drain, min(k_tiles, num_stages) unguarded waits from the stage
// after the last fill: with one K tile it waits once, on the fresh empty[1],
// which passes at once, and never for the release of stage 0.
func.func @seed_drain(%a: memref<?x?xf16>, %b: memref<?x?xf16>, %c: memref<?x?xf32>)
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
  %empty = "wsc.mbarrier_alloc"() {arrival_count = 128 : i32, num_barriers = 4 : i32} : () -> !wsc.mbarriers
  "wsc.sync"() : () -> ()
  %is_consumer = "wsc.role"() {role = "consumer", thread_begin = 0 : i32, num_threads = 128 : i32, max_registers = 232 : i32} : () -> i1
  scf.if %is_consumer {
    %acc = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 128, 128>, f32>
    %cs:2 = scf.for %kt = %c0 to %k_tiles step %c1 iter_args(%stage = %c0, %phase = %false) -> (index, i1) {
      "wsc.mbarrier_wait"(%full, %stage, %phase) : (!wsc.mbarriers, index, i1) -> ()
      "wsc.wgmma_fence"() : () -> ()
      "wsc.wgmma"(%sa, %sb, %stage, %acc) {a_row = 0 : i32, b_layout = "nk"} : (memref<4x128x64xf16, 3>, memref<4x128x64xf16, 3>, index, !wsc.acc<array<i64: 128, 128>, f32>) -> ()
      "wsc.wgmma_commit_group"() : () -> ()
      "wsc.wgmma_wait_group"() {pending = 0 : i32} : () -> ()
      "wsc.mbarrier_arrive"(%empty, %stage) : (!wsc.mbarriers, index) -> ()
      %next_stage, %next_phase = "wsc.ring_advance"(%stage, %phase) {num_stages = 4 : i32} : (index, i1) -> (index, i1)
      scf.yield %next_stage, %next_phase : index, i1
    }
    "wsc.store"(%acc, %c, %m0, %n0) : (!wsc.acc<array<i64: 128, 128>, f32>, memref<?x?xf32>, index, index) -> ()
  }
  // expected-error @below {{producer exits with 1 release outstanding (missing drain): the producer role [128, 160) must wait on empty until every stage it filled has been released (k_tiles = 1, num_stages = 4)}}
  %is_producer = "wsc.role"() {role = "producer", thread_begin = 128 : i32, num_threads = 32 : i32, max_registers = 40 : i32} : () -> i1
  scf.if %is_producer {
    %ps:2 = scf.for %kt = %c0 to %k_tiles step %c1 iter_args(%stage = %c0, %phase = %true) -> (index, i1) {
      "wsc.mbarrier_wait"(%empty, %stage, %phase) : (!wsc.mbarriers, index, i1) -> ()
      %k0 = arith.muli %kt, %c64 : index
      %elected = "wsc.elect"() : () -> i1
      scf.if %elected {
        "wsc.mbarrier_arrive_expect_tx"(%full, %stage) {tx_bytes = 32768 : i32} : (!wsc.mbarriers, index) -> ()
        "wsc.tma_load"(%a, %m0, %k0, %sa, %stage, %full) : (memref<?x?xf16>, index, index, memref<4x128x64xf16, 3>, index, !wsc.mbarriers) -> ()
        "wsc.tma_load"(%b, %n0, %k0, %sb, %stage, %full) : (memref<?x?xf16>, index, index, memref<4x128x64xf16, 3>, index, !wsc.mbarriers) -> ()
      }
      %next_stage, %next_phase = "wsc.ring_advance"(%stage, %phase) {num_stages = 4 : i32} : (index, i1) -> (index, i1)
      scf.yield %next_stage, %next_phase : index, i1
    }
    %drain = arith.minui %k_tiles, %c4 : index
    %ds:2 = scf.for %i = %c0 to %drain step %c1 iter_args(%stage = %ps#0, %phase = %ps#1) -> (index, i1) {
      "wsc.mbarrier_wait"(%empty, %stage, %phase) : (!wsc.mbarriers, index, i1) -> ()
      %next_stage, %next_phase = "wsc.ring_advance"(%stage, %phase) {num_stages = 4 : i32} : (index, i1) -> (index, i1)
      scf.yield %next_stage, %next_phase : index, i1
    }
  }
  return
}

// -----

// The empty barriers expect 64 arrivals, but the whole consumer warpgroup (128
// threads) releases each stage.
func.func @empty_arrival_count(%a: memref<?x?xf16>, %b: memref<?x?xf16>, %c: memref<?x?xf32>)
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
  %empty = "wsc.mbarrier_alloc"() {arrival_count = 64 : i32, num_barriers = 4 : i32} : () -> !wsc.mbarriers
  "wsc.sync"() : () -> ()
  %is_consumer = "wsc.role"() {role = "consumer", thread_begin = 0 : i32, num_threads = 128 : i32, max_registers = 232 : i32} : () -> i1
  scf.if %is_consumer {
    %acc = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 128, 128>, f32>
    %cs:2 = scf.for %kt = %c0 to %k_tiles step %c1 iter_args(%stage = %c0, %phase = %false) -> (index, i1) {
      "wsc.mbarrier_wait"(%full, %stage, %phase) : (!wsc.mbarriers, index, i1) -> ()
      "wsc.wgmma_fence"() : () -> ()
      "wsc.wgmma"(%sa, %sb, %stage, %acc) {a_row = 0 : i32, b_layout = "nk"} : (memref<4x128x64xf16, 3>, memref<4x128x64xf16, 3>, index, !wsc.acc<array<i64: 128, 128>, f32>) -> ()
      "wsc.wgmma_commit_group"() : () -> ()
      "wsc.wgmma_wait_group"() {pending = 0 : i32} : () -> ()
      // expected-error @below {{over-arrival on empty[0]: 128 arrivals exceed the 64 still pending in phase 0 (k_tiles = 1, num_stages = 4)}}
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
        "wsc.mbarrier_arrive_expect_tx"(%full, %stage) {tx_bytes = 32768 : i32} : (!wsc.mbarriers, index) -> ()
        "wsc.tma_load"(%a, %m0, %k0, %sa, %stage, %full) : (memref<?x?xf16>, index, index, memref<4x128x64xf16, 3>, index, !wsc.mbarriers) -> ()
        "wsc.tma_load"(%b, %n0, %k0, %sb, %stage, %full) : (memref<?x?xf16>, index, index, memref<4x128x64xf16, 3>, index, !wsc.mbarriers) -> ()
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

// The empty barriers expect 256 arrivals but only one warpgroup releases: the
// phase stays open with 128 of them, and the drain waits for it forever.
func.func @empty_under_arrival(%a: memref<?x?xf16>, %b: memref<?x?xf16>, %c: memref<?x?xf32>)
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
  %empty = "wsc.mbarrier_alloc"() {arrival_count = 256 : i32, num_barriers = 4 : i32} : () -> !wsc.mbarriers
  "wsc.sync"() : () -> ()
  %is_consumer = "wsc.role"() {role = "consumer", thread_begin = 0 : i32, num_threads = 128 : i32, max_registers = 232 : i32} : () -> i1
  scf.if %is_consumer {
    %acc = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 128, 128>, f32>
    %cs:2 = scf.for %kt = %c0 to %k_tiles step %c1 iter_args(%stage = %c0, %phase = %false) -> (index, i1) {
      "wsc.mbarrier_wait"(%full, %stage, %phase) : (!wsc.mbarriers, index, i1) -> ()
      "wsc.wgmma_fence"() : () -> ()
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
        "wsc.mbarrier_arrive_expect_tx"(%full, %stage) {tx_bytes = 32768 : i32} : (!wsc.mbarriers, index) -> ()
        "wsc.tma_load"(%a, %m0, %k0, %sa, %stage, %full) : (memref<?x?xf16>, index, index, memref<4x128x64xf16, 3>, index, !wsc.mbarriers) -> ()
        "wsc.tma_load"(%b, %n0, %k0, %sb, %stage, %full) : (memref<?x?xf16>, index, index, memref<4x128x64xf16, 3>, index, !wsc.mbarriers) -> ()
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
        // expected-error @below {{deadlock: this wait for parity 0 on empty[0] never returns: every thread group is blocked and no copy is in flight (empty[0] is in phase 0 with 128 of 256 arrivals) (k_tiles = 1, num_stages = 4)}}
        "wsc.mbarrier_wait"(%empty, %stage, %phase) : (!wsc.mbarriers, index, i1) -> ()
      }
      %next_stage, %next_phase = "wsc.ring_advance"(%stage, %phase) {num_stages = 4 : i32} : (index, i1) -> (index, i1)
      scf.yield %next_stage, %next_phase : index, i1
    }
  }
  return
}

// -----

// expect_tx declares one tile's bytes, but the A and B copies deliver two: the
// full barrier would complete when only one of them has landed.
func.func @tx_bytes_short(%a: memref<?x?xf16>, %b: memref<?x?xf16>, %c: memref<?x?xf32>)
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
  %empty = "wsc.mbarrier_alloc"() {arrival_count = 128 : i32, num_barriers = 4 : i32} : () -> !wsc.mbarriers
  "wsc.sync"() : () -> ()
  %is_consumer = "wsc.role"() {role = "consumer", thread_begin = 0 : i32, num_threads = 128 : i32, max_registers = 232 : i32} : () -> i1
  scf.if %is_consumer {
    %acc = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 128, 128>, f32>
    %cs:2 = scf.for %kt = %c0 to %k_tiles step %c1 iter_args(%stage = %c0, %phase = %false) -> (index, i1) {
      "wsc.mbarrier_wait"(%full, %stage, %phase) : (!wsc.mbarriers, index, i1) -> ()
      "wsc.wgmma_fence"() : () -> ()
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
        // expected-error @below {{expect_tx declares 16384 bytes on full[0] but the copies completing on it deliver 32768 (k_tiles = 1, num_stages = 4)}}
        "wsc.mbarrier_arrive_expect_tx"(%full, %stage) {tx_bytes = 16384 : i32} : (!wsc.mbarriers, index) -> ()
        "wsc.tma_load"(%a, %m0, %k0, %sa, %stage, %full) : (memref<?x?xf16>, index, index, memref<4x128x64xf16, 3>, index, !wsc.mbarriers) -> ()
        "wsc.tma_load"(%b, %n0, %k0, %sb, %stage, %full) : (memref<?x?xf16>, index, index, memref<4x128x64xf16, 3>, index, !wsc.mbarriers) -> ()
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

// expect_tx declares more bytes than the copies deliver: the full barrier never
// completes.
func.func @tx_bytes_long(%a: memref<?x?xf16>, %b: memref<?x?xf16>, %c: memref<?x?xf32>)
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
  %empty = "wsc.mbarrier_alloc"() {arrival_count = 128 : i32, num_barriers = 4 : i32} : () -> !wsc.mbarriers
  "wsc.sync"() : () -> ()
  %is_consumer = "wsc.role"() {role = "consumer", thread_begin = 0 : i32, num_threads = 128 : i32, max_registers = 232 : i32} : () -> i1
  scf.if %is_consumer {
    %acc = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 128, 128>, f32>
    %cs:2 = scf.for %kt = %c0 to %k_tiles step %c1 iter_args(%stage = %c0, %phase = %false) -> (index, i1) {
      "wsc.mbarrier_wait"(%full, %stage, %phase) : (!wsc.mbarriers, index, i1) -> ()
      "wsc.wgmma_fence"() : () -> ()
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
        // expected-error @below {{expect_tx declares 65536 bytes on full[0] but the copies completing on it deliver 32768 (k_tiles = 1, num_stages = 4)}}
        "wsc.mbarrier_arrive_expect_tx"(%full, %stage) {tx_bytes = 65536 : i32} : (!wsc.mbarriers, index) -> ()
        "wsc.tma_load"(%a, %m0, %k0, %sa, %stage, %full) : (memref<?x?xf16>, index, index, memref<4x128x64xf16, 3>, index, !wsc.mbarriers) -> ()
        "wsc.tma_load"(%b, %n0, %k0, %sb, %stage, %full) : (memref<?x?xf16>, index, index, memref<4x128x64xf16, 3>, index, !wsc.mbarriers) -> ()
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

// The consumer releases the stage before waiting for the WGMMA that reads it.
func.func @early_release(%a: memref<?x?xf16>, %b: memref<?x?xf16>, %c: memref<?x?xf32>)
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
  %empty = "wsc.mbarrier_alloc"() {arrival_count = 128 : i32, num_barriers = 4 : i32} : () -> !wsc.mbarriers
  "wsc.sync"() : () -> ()
  %is_consumer = "wsc.role"() {role = "consumer", thread_begin = 0 : i32, num_threads = 128 : i32, max_registers = 232 : i32} : () -> i1
  scf.if %is_consumer {
    %acc = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 128, 128>, f32>
    %cs:2 = scf.for %kt = %c0 to %k_tiles step %c1 iter_args(%stage = %c0, %phase = %false) -> (index, i1) {
      "wsc.mbarrier_wait"(%full, %stage, %phase) : (!wsc.mbarriers, index, i1) -> ()
      "wsc.wgmma_fence"() : () -> ()
      "wsc.wgmma"(%sa, %sb, %stage, %acc) {a_row = 0 : i32, b_layout = "nk"} : (memref<4x128x64xf16, 3>, memref<4x128x64xf16, 3>, index, !wsc.acc<array<i64: 128, 128>, f32>) -> ()
      // expected-note @above {{the WGMMA that reads A stage 0}}
      "wsc.wgmma_commit_group"() : () -> ()
      // expected-error @below {{stage 0 released before the WGMMA reading it has completed (its group, the last committed, is still in flight: a wsc.wgmma_wait_group {pending = 0} must retire it before this arrive on empty[0]) (k_tiles = 1, num_stages = 4)}}
      "wsc.mbarrier_arrive"(%empty, %stage) : (!wsc.mbarriers, index) -> ()
      "wsc.wgmma_wait_group"() {pending = 0 : i32} : () -> ()
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
        "wsc.mbarrier_arrive_expect_tx"(%full, %stage) {tx_bytes = 32768 : i32} : (!wsc.mbarriers, index) -> ()
        "wsc.tma_load"(%a, %m0, %k0, %sa, %stage, %full) : (memref<?x?xf16>, index, index, memref<4x128x64xf16, 3>, index, !wsc.mbarriers) -> ()
        "wsc.tma_load"(%b, %n0, %k0, %sb, %stage, %full) : (memref<?x?xf16>, index, index, memref<4x128x64xf16, 3>, index, !wsc.mbarriers) -> ()
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

// The consumer never commits its WGMMA group, so its wait retires nothing.
func.func @uncommitted_release(%a: memref<?x?xf16>, %b: memref<?x?xf16>, %c: memref<?x?xf32>)
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
  %empty = "wsc.mbarrier_alloc"() {arrival_count = 128 : i32, num_barriers = 4 : i32} : () -> !wsc.mbarriers
  "wsc.sync"() : () -> ()
  %is_consumer = "wsc.role"() {role = "consumer", thread_begin = 0 : i32, num_threads = 128 : i32, max_registers = 232 : i32} : () -> i1
  scf.if %is_consumer {
    %acc = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 128, 128>, f32>
    %cs:2 = scf.for %kt = %c0 to %k_tiles step %c1 iter_args(%stage = %c0, %phase = %false) -> (index, i1) {
      "wsc.mbarrier_wait"(%full, %stage, %phase) : (!wsc.mbarriers, index, i1) -> ()
      "wsc.wgmma_fence"() : () -> ()
      "wsc.wgmma"(%sa, %sb, %stage, %acc) {a_row = 0 : i32, b_layout = "nk"} : (memref<4x128x64xf16, 3>, memref<4x128x64xf16, 3>, index, !wsc.acc<array<i64: 128, 128>, f32>) -> ()
      "wsc.wgmma_wait_group"() {pending = 0 : i32} : () -> ()
      // expected-error @below {{stage 0 released before the WGMMA reading it has completed (its group is not committed: a wsc.wgmma_commit_group, then a wsc.wgmma_wait_group, must retire it before this arrive on empty[0]) (k_tiles = 1, num_stages = 4)}}
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
        "wsc.mbarrier_arrive_expect_tx"(%full, %stage) {tx_bytes = 32768 : i32} : (!wsc.mbarriers, index) -> ()
        "wsc.tma_load"(%a, %m0, %k0, %sa, %stage, %full) : (memref<?x?xf16>, index, index, memref<4x128x64xf16, 3>, index, !wsc.mbarriers) -> ()
        "wsc.tma_load"(%b, %n0, %k0, %sb, %stage, %full) : (memref<?x?xf16>, index, index, memref<4x128x64xf16, 3>, index, !wsc.mbarriers) -> ()
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

// wait_group leaves the newest WGMMA group in flight, and the consumer releases
// the stage that group reads (pending = 1 must release the previous stage).
func.func @wait_group_pending_one(%a: memref<?x?xf16>, %b: memref<?x?xf16>, %c: memref<?x?xf32>)
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
  %empty = "wsc.mbarrier_alloc"() {arrival_count = 128 : i32, num_barriers = 4 : i32} : () -> !wsc.mbarriers
  "wsc.sync"() : () -> ()
  %is_consumer = "wsc.role"() {role = "consumer", thread_begin = 0 : i32, num_threads = 128 : i32, max_registers = 232 : i32} : () -> i1
  scf.if %is_consumer {
    %acc = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 128, 128>, f32>
    %cs:2 = scf.for %kt = %c0 to %k_tiles step %c1 iter_args(%stage = %c0, %phase = %false) -> (index, i1) {
      "wsc.mbarrier_wait"(%full, %stage, %phase) : (!wsc.mbarriers, index, i1) -> ()
      "wsc.wgmma_fence"() : () -> ()
      "wsc.wgmma"(%sa, %sb, %stage, %acc) {a_row = 0 : i32, b_layout = "nk"} : (memref<4x128x64xf16, 3>, memref<4x128x64xf16, 3>, index, !wsc.acc<array<i64: 128, 128>, f32>) -> ()
      "wsc.wgmma_commit_group"() : () -> ()
      "wsc.wgmma_wait_group"() {pending = 1 : i32} : () -> ()
      // expected-error @below {{stage 0 released before the WGMMA reading it has completed (its group, the last committed, is still in flight: a wsc.wgmma_wait_group {pending = 0} must retire it before this arrive on empty[0]) (k_tiles = 1, num_stages = 4)}}
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
        "wsc.mbarrier_arrive_expect_tx"(%full, %stage) {tx_bytes = 32768 : i32} : (!wsc.mbarriers, index) -> ()
        "wsc.tma_load"(%a, %m0, %k0, %sa, %stage, %full) : (memref<?x?xf16>, index, index, memref<4x128x64xf16, 3>, index, !wsc.mbarriers) -> ()
        "wsc.tma_load"(%b, %n0, %k0, %sb, %stage, %full) : (memref<?x?xf16>, index, index, memref<4x128x64xf16, 3>, index, !wsc.mbarriers) -> ()
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

// No block-wide wsc.sync after the mbarrier allocations: the roles use barriers
// whose initialization other threads may not see yet.
func.func @barrier_before_sync(%a: memref<?x?xf16>, %b: memref<?x?xf16>, %c: memref<?x?xf32>)
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
  %empty = "wsc.mbarrier_alloc"() {arrival_count = 128 : i32, num_barriers = 4 : i32} : () -> !wsc.mbarriers
  %is_consumer = "wsc.role"() {role = "consumer", thread_begin = 0 : i32, num_threads = 128 : i32, max_registers = 232 : i32} : () -> i1
  scf.if %is_consumer {
    %acc = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 128, 128>, f32>
    %cs:2 = scf.for %kt = %c0 to %k_tiles step %c1 iter_args(%stage = %c0, %phase = %false) -> (index, i1) {
      // expected-error @below {{full is used before its initialization is visible: no block-wide wsc.sync between its wsc.mbarrier_alloc and this op (k_tiles = 1, num_stages = 4)}}
      "wsc.mbarrier_wait"(%full, %stage, %phase) : (!wsc.mbarriers, index, i1) -> ()
      "wsc.wgmma_fence"() : () -> ()
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
        "wsc.mbarrier_arrive_expect_tx"(%full, %stage) {tx_bytes = 32768 : i32} : (!wsc.mbarriers, index) -> ()
        "wsc.tma_load"(%a, %m0, %k0, %sa, %stage, %full) : (memref<?x?xf16>, index, index, memref<4x128x64xf16, 3>, index, !wsc.mbarriers) -> ()
        "wsc.tma_load"(%b, %n0, %k0, %sb, %stage, %full) : (memref<?x?xf16>, index, index, memref<4x128x64xf16, 3>, index, !wsc.mbarriers) -> ()
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

// The producer never waits on empty: with more K tiles than stages it refills
// stage 0 before the consumer has read the tile in it.
func.func @stage_overwritten(%a: memref<?x?xf16>, %b: memref<?x?xf16>, %c: memref<?x?xf32>)
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
  %empty = "wsc.mbarrier_alloc"() {arrival_count = 128 : i32, num_barriers = 4 : i32} : () -> !wsc.mbarriers
  "wsc.sync"() : () -> ()
  %is_consumer = "wsc.role"() {role = "consumer", thread_begin = 0 : i32, num_threads = 128 : i32, max_registers = 232 : i32} : () -> i1
  scf.if %is_consumer {
    %acc = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 128, 128>, f32>
    %cs:2 = scf.for %kt = %c0 to %k_tiles step %c1 iter_args(%stage = %c0, %phase = %false) -> (index, i1) {
      "wsc.mbarrier_wait"(%full, %stage, %phase) : (!wsc.mbarriers, index, i1) -> ()
      "wsc.wgmma_fence"() : () -> ()
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
      %k0 = arith.muli %kt, %c64 : index
      %elected = "wsc.elect"() : () -> i1
      scf.if %elected {
        "wsc.mbarrier_arrive_expect_tx"(%full, %stage) {tx_bytes = 32768 : i32} : (!wsc.mbarriers, index) -> ()
        // expected-error @below {{A stage 0 overwritten before the consumer role [0, 128) read its previous copy (lost tile) (k_tiles = 5, num_stages = 4)}}
        "wsc.tma_load"(%a, %m0, %k0, %sa, %stage, %full) : (memref<?x?xf16>, index, index, memref<4x128x64xf16, 3>, index, !wsc.mbarriers) -> ()
        "wsc.tma_load"(%b, %n0, %k0, %sb, %stage, %full) : (memref<?x?xf16>, index, index, memref<4x128x64xf16, 3>, index, !wsc.mbarriers) -> ()
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

// The consumer releases each stage as soon as its data lands, before the WGMMA
// that reads it is even issued: the producer may refill it first.
func.func @release_before_read(%a: memref<?x?xf16>, %b: memref<?x?xf16>, %c: memref<?x?xf32>)
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
  %empty = "wsc.mbarrier_alloc"() {arrival_count = 128 : i32, num_barriers = 4 : i32} : () -> !wsc.mbarriers
  "wsc.sync"() : () -> ()
  %is_consumer = "wsc.role"() {role = "consumer", thread_begin = 0 : i32, num_threads = 128 : i32, max_registers = 232 : i32} : () -> i1
  scf.if %is_consumer {
    %acc = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 128, 128>, f32>
    %cs:2 = scf.for %kt = %c0 to %k_tiles step %c1 iter_args(%stage = %c0, %phase = %false) -> (index, i1) {
      "wsc.mbarrier_wait"(%full, %stage, %phase) : (!wsc.mbarriers, index, i1) -> ()
      "wsc.mbarrier_arrive"(%empty, %stage) : (!wsc.mbarriers, index) -> ()
      "wsc.wgmma_fence"() : () -> ()
      "wsc.wgmma"(%sa, %sb, %stage, %acc) {a_row = 0 : i32, b_layout = "nk"} : (memref<4x128x64xf16, 3>, memref<4x128x64xf16, 3>, index, !wsc.acc<array<i64: 128, 128>, f32>) -> ()
      "wsc.wgmma_commit_group"() : () -> ()
      "wsc.wgmma_wait_group"() {pending = 0 : i32} : () -> ()
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
        "wsc.mbarrier_arrive_expect_tx"(%full, %stage) {tx_bytes = 32768 : i32} : (!wsc.mbarriers, index) -> ()
        // expected-error @below {{A stage 0 overwritten before the consumer role [0, 128) read its previous copy (lost tile) (k_tiles = 5, num_stages = 4)}}
        "wsc.tma_load"(%a, %m0, %k0, %sa, %stage, %full) : (memref<?x?xf16>, index, index, memref<4x128x64xf16, 3>, index, !wsc.mbarriers) -> ()
        "wsc.tma_load"(%b, %n0, %k0, %sb, %stage, %full) : (memref<?x?xf16>, index, index, memref<4x128x64xf16, 3>, index, !wsc.mbarriers) -> ()
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

// examples/matmul_v2.mlir with a one-stage ring and wait_group pending = 1: the
// next K tile is copied into the stage the previous WGMMA still reads.
func.func @overwrite_in_flight_wgmma(%a: memref<?x?xf16>, %b: memref<?x?xf16>, %c: memref<?x?xf32>)
    attributes {wsc.num_threads = 128 : i32} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c64 = arith.constant 64 : index
  %c128 = arith.constant 128 : index
  %bx = gpu.block_id x
  %by = gpu.block_id y
  %m0 = arith.muli %bx, %c128 : index
  %n0 = arith.muli %by, %c128 : index
  %k = memref.dim %a, %c1 : memref<?x?xf16>
  %k_tiles = arith.ceildivui %k, %c64 : index
  %sa = "wsc.alloc_shared"() : () -> memref<1x128x64xf16, 3>
  %sb = "wsc.alloc_shared"() : () -> memref<1x128x64xf16, 3>
  %full = "wsc.mbarrier_alloc"() {arrival_count = 1 : i32, num_barriers = 1 : i32} : () -> !wsc.mbarriers
  "wsc.sync"() : () -> ()
  %acc = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 128, 128>, f32>
  %false = arith.constant false
  %stage_n, %phase_n = scf.for %kt = %c0 to %k_tiles step %c1
      iter_args(%stage = %c0, %phase = %false) -> (index, i1) {
    %k0 = arith.muli %kt, %c64 : index
    %elected = "wsc.elect"() : () -> i1
    scf.if %elected {
      "wsc.mbarrier_arrive_expect_tx"(%full, %stage) {tx_bytes = 32768 : i32} : (!wsc.mbarriers, index) -> ()
      // expected-error @below {{A stage 0 overwritten while a WGMMA of the 128 threads outside every role still reads it (k_tiles = 2, num_stages = 1)}}
      "wsc.tma_load"(%a, %m0, %k0, %sa, %stage, %full) : (memref<?x?xf16>, index, index, memref<1x128x64xf16, 3>, index, !wsc.mbarriers) -> ()
      "wsc.tma_load"(%b, %n0, %k0, %sb, %stage, %full) : (memref<?x?xf16>, index, index, memref<1x128x64xf16, 3>, index, !wsc.mbarriers) -> ()
    }
    "wsc.mbarrier_wait"(%full, %stage, %phase) : (!wsc.mbarriers, index, i1) -> ()
    "wsc.wgmma_fence"() : () -> ()
    "wsc.wgmma"(%sa, %sb, %stage, %acc) {a_row = 0 : i32, b_layout = "nk"} : (memref<1x128x64xf16, 3>, memref<1x128x64xf16, 3>, index, !wsc.acc<array<i64: 128, 128>, f32>) -> ()
    "wsc.wgmma_commit_group"() : () -> ()
    "wsc.wgmma_wait_group"() {pending = 1 : i32} : () -> ()
    "wsc.sync"() : () -> ()
    %next_stage, %next_phase = "wsc.ring_advance"(%stage, %phase) {num_stages = 1 : i32} : (index, i1) -> (index, i1)
    scf.yield %next_stage, %next_phase : index, i1
  }
  "wsc.wgmma_wait_group"() {pending = 0 : i32} : () -> ()
  "wsc.store"(%acc, %c, %m0, %n0) : (!wsc.acc<array<i64: 128, 128>, f32>, memref<?x?xf32>, index, index) -> ()
  return
}

// -----

// Two consumer warpgroups release each stage, but the empty barriers expect one
// warpgroup's arrivals: each release completes two phases, and the producer's
// wait for the first one returns too late to see it.
func.func @two_consumers_one_group_count(%a: memref<?x?xf16>, %b: memref<?x?xf16>, %c: memref<?x?xf32>)
    attributes {wsc.num_threads = 288 : i32} {
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
  %m1 = arith.addi %m0, %c64 : index
  %n0 = arith.muli %by, %c128 : index
  %k = memref.dim %a, %c1 : memref<?x?xf16>
  %k_tiles = arith.ceildivui %k, %c64 : index
  %sa = "wsc.alloc_shared"() : () -> memref<4x128x64xf16, 3>
  %sb = "wsc.alloc_shared"() : () -> memref<4x128x64xf16, 3>
  %full = "wsc.mbarrier_alloc"() {arrival_count = 1 : i32, num_barriers = 4 : i32} : () -> !wsc.mbarriers
  %empty = "wsc.mbarrier_alloc"() {arrival_count = 128 : i32, num_barriers = 4 : i32} : () -> !wsc.mbarriers
  "wsc.sync"() : () -> ()
  %is_consumer0 = "wsc.role"() {role = "consumer0", thread_begin = 0 : i32, num_threads = 128 : i32} : () -> i1
  scf.if %is_consumer0 {
    %acc = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 64, 128>, f32>
    %cs:2 = scf.for %kt = %c0 to %k_tiles step %c1 iter_args(%stage = %c0, %phase = %false) -> (index, i1) {
      "wsc.mbarrier_wait"(%full, %stage, %phase) : (!wsc.mbarriers, index, i1) -> ()
      "wsc.wgmma_fence"() : () -> ()
      "wsc.wgmma"(%sa, %sb, %stage, %acc) {a_row = 0 : i32, b_layout = "nk"} : (memref<4x128x64xf16, 3>, memref<4x128x64xf16, 3>, index, !wsc.acc<array<i64: 64, 128>, f32>) -> ()
      "wsc.wgmma_commit_group"() : () -> ()
      "wsc.wgmma_wait_group"() {pending = 0 : i32} : () -> ()
      "wsc.mbarrier_arrive"(%empty, %stage) : (!wsc.mbarriers, index) -> ()
      %next_stage, %next_phase = "wsc.ring_advance"(%stage, %phase) {num_stages = 4 : i32} : (index, i1) -> (index, i1)
      scf.yield %next_stage, %next_phase : index, i1
    }
    "wsc.store"(%acc, %c, %m0, %n0) : (!wsc.acc<array<i64: 64, 128>, f32>, memref<?x?xf32>, index, index) -> ()
  }
  %is_consumer1 = "wsc.role"() {role = "consumer1", thread_begin = 128 : i32, num_threads = 128 : i32} : () -> i1
  scf.if %is_consumer1 {
    %acc = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 64, 128>, f32>
    %cs:2 = scf.for %kt = %c0 to %k_tiles step %c1 iter_args(%stage = %c0, %phase = %false) -> (index, i1) {
      "wsc.mbarrier_wait"(%full, %stage, %phase) : (!wsc.mbarriers, index, i1) -> ()
      "wsc.wgmma_fence"() : () -> ()
      "wsc.wgmma"(%sa, %sb, %stage, %acc) {a_row = 64 : i32, b_layout = "nk"} : (memref<4x128x64xf16, 3>, memref<4x128x64xf16, 3>, index, !wsc.acc<array<i64: 64, 128>, f32>) -> ()
      "wsc.wgmma_commit_group"() : () -> ()
      "wsc.wgmma_wait_group"() {pending = 0 : i32} : () -> ()
      // expected-error @below {{phase overrun on empty[0]: phase 1 completes while the wait of the producer role [256, 288) for parity 0, already satisfied by phase 0, has not returned: it then misses phase 1 (more phases complete than the waiter expects) (k_tiles = 1, num_stages = 4)}}
      "wsc.mbarrier_arrive"(%empty, %stage) : (!wsc.mbarriers, index) -> ()
      %next_stage, %next_phase = "wsc.ring_advance"(%stage, %phase) {num_stages = 4 : i32} : (index, i1) -> (index, i1)
      scf.yield %next_stage, %next_phase : index, i1
    }
    "wsc.store"(%acc, %c, %m1, %n0) : (!wsc.acc<array<i64: 64, 128>, f32>, memref<?x?xf32>, index, index) -> ()
  }
  %is_producer = "wsc.role"() {role = "producer", thread_begin = 256 : i32, num_threads = 32 : i32} : () -> i1
  scf.if %is_producer {
    %ps:2 = scf.for %kt = %c0 to %k_tiles step %c1 iter_args(%stage = %c0, %phase = %true) -> (index, i1) {
      "wsc.mbarrier_wait"(%empty, %stage, %phase) : (!wsc.mbarriers, index, i1) -> ()
      %k0 = arith.muli %kt, %c64 : index
      %elected = "wsc.elect"() : () -> i1
      scf.if %elected {
        "wsc.mbarrier_arrive_expect_tx"(%full, %stage) {tx_bytes = 32768 : i32} : (!wsc.mbarriers, index) -> ()
        "wsc.tma_load"(%a, %m0, %k0, %sa, %stage, %full) : (memref<?x?xf16>, index, index, memref<4x128x64xf16, 3>, index, !wsc.mbarriers) -> ()
        "wsc.tma_load"(%b, %n0, %k0, %sb, %stage, %full) : (memref<?x?xf16>, index, index, memref<4x128x64xf16, 3>, index, !wsc.mbarriers) -> ()
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

// One WGMMA group in flight (wait_group 1), as --warp-specialize's
// wgmma-in-flight=1 emits it, but the consumer releases the stage of the K
// tile it just issued instead of the previous one: that group still reads it.
func.func @inflight_releases_current_stage(%arg0: memref<?x?xf16>, %arg1: memref<?x?xf16>, %arg2: memref<?x?xf32>) attributes {wsc.num_threads = 160 : i32} {
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
  %3 = "wsc.alloc_shared"() : () -> memref<4x128x64xf16, 3>
  %4 = "wsc.alloc_shared"() : () -> memref<4x128x64xf16, 3>
  %5 = "wsc.mbarrier_alloc"() {arrival_count = 1 : i32, num_barriers = 4 : i32} : () -> !wsc.mbarriers
  %6 = "wsc.mbarrier_alloc"() {arrival_count = 128 : i32, num_barriers = 4 : i32} : () -> !wsc.mbarriers
  "wsc.sync"() : () -> ()
  %false = arith.constant false
  %c0_0 = arith.constant 0 : index
  %7 = "wsc.role"() {num_threads = 128 : i32, role = "consumer", thread_begin = 0 : i32} : () -> i1
  scf.if %7 {
    %9 = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 128, 128>, f32>
    %false_1 = arith.constant false
    %10:2 = scf.for %arg3 = %c0 to %2 step %c1 iter_args(%arg4 = %c0_0, %arg5 = %false_1) -> (index, i1) {
      "wsc.mbarrier_wait"(%5, %arg4, %arg5) : (!wsc.mbarriers, index, i1) -> ()
      "wsc.wgmma_fence"() : () -> ()
      "wsc.wgmma"(%3, %4, %arg4, %9) {a_row = 0 : i32, b_layout = "nk"} : (memref<4x128x64xf16, 3>, memref<4x128x64xf16, 3>, index, !wsc.acc<array<i64: 128, 128>, f32>) -> ()
      "wsc.wgmma_commit_group"() : () -> ()
      "wsc.wgmma_wait_group"() {pending = 1 : i32} : () -> ()
      %c0_3 = arith.constant 0 : index
      %12 = arith.cmpi ugt, %arg3, %c0_3 : index
      scf.if %12 {
        %c0_4 = arith.constant 0 : index
        %14 = arith.cmpi eq, %arg4, %c0_4 : index
        %c1_5 = arith.constant 1 : index
        %15 = arith.subi %arg4, %c1_5 : index
        %c3 = arith.constant 3 : index
        %16 = arith.select %14, %c3, %15 : index
        // expected-error @below {{stage 1 released before the WGMMA reading it has completed (its group, the last committed, is still in flight: a wsc.wgmma_wait_group {pending = 0} must retire it before this arrive on empty[1]) (k_tiles = 2, num_stages = 4)}}
        "wsc.mbarrier_arrive"(%6, %arg4) : (!wsc.mbarriers, index) -> ()
      }
      %13:2 = "wsc.ring_advance"(%arg4, %arg5) {num_stages = 4 : i32} : (index, i1) -> (index, i1)
      scf.yield %13#0, %13#1 : index, i1
    }
    "wsc.wgmma_wait_group"() {pending = 0 : i32} : () -> ()
    %c0_2 = arith.constant 0 : index
    %11 = arith.cmpi ugt, %2, %c0_2 : index
    scf.if %11 {
      %c0_3 = arith.constant 0 : index
      %12 = arith.cmpi eq, %10#0, %c0_3 : index
      %c1_4 = arith.constant 1 : index
      %13 = arith.subi %10#0, %c1_4 : index
      %c3 = arith.constant 3 : index
      %14 = arith.select %12, %c3, %13 : index
      "wsc.mbarrier_arrive"(%6, %14) : (!wsc.mbarriers, index) -> ()
    }
    "wsc.store"(%9, %arg2, %0, %1) : (!wsc.acc<array<i64: 128, 128>, f32>, memref<?x?xf32>, index, index) -> ()
  }
  %8 = "wsc.role"() {num_threads = 32 : i32, role = "producer", thread_begin = 128 : i32} : () -> i1
  scf.if %8 {
    %true = arith.constant true
    %9:2 = scf.for %arg3 = %c0 to %2 step %c1 iter_args(%arg4 = %c0_0, %arg5 = %true) -> (index, i1) {
      "wsc.mbarrier_wait"(%6, %arg4, %arg5) : (!wsc.mbarriers, index, i1) -> ()
      %11 = arith.muli %arg3, %c64 : index
      %12 = "wsc.elect"() : () -> i1
      scf.if %12 {
        "wsc.mbarrier_arrive_expect_tx"(%5, %arg4) {tx_bytes = 32768 : i32} : (!wsc.mbarriers, index) -> ()
        "wsc.tma_load"(%arg0, %0, %11, %3, %arg4, %5) : (memref<?x?xf16>, index, index, memref<4x128x64xf16, 3>, index, !wsc.mbarriers) -> ()
        "wsc.tma_load"(%arg1, %1, %11, %4, %arg4, %5) : (memref<?x?xf16>, index, index, memref<4x128x64xf16, 3>, index, !wsc.mbarriers) -> ()
      }
      %13:2 = "wsc.ring_advance"(%arg4, %arg5) {num_stages = 4 : i32} : (index, i1) -> (index, i1)
      scf.yield %13#0, %13#1 : index, i1
    }
    %c4_1 = arith.constant 4 : index
    %c0_2 = arith.constant 0 : index
    %c1_3 = arith.constant 1 : index
    %10:2 = scf.for %arg3 = %c0_2 to %c4_1 step %c1_3 iter_args(%arg4 = %9#0, %arg5 = %9#1) -> (index, i1) {
      %11 = arith.addi %arg3, %2 : index
      %12 = arith.cmpi uge, %11, %c4_1 : index
      scf.if %12 {
        "wsc.mbarrier_wait"(%6, %arg4, %arg5) : (!wsc.mbarriers, index, i1) -> ()
      }
      %13:2 = "wsc.ring_advance"(%arg4, %arg5) {num_stages = 4 : i32} : (index, i1) -> (index, i1)
      scf.yield %13#0, %13#1 : index, i1
    }
  }
  return
}

// -----

// The previous stage released, as with one WGMMA group in flight, but the
// wait leaves two groups in flight (pending = 2): the group reading the
// released stage has not completed.
func.func @inflight_pending_too_lax(%arg0: memref<?x?xf16>, %arg1: memref<?x?xf16>, %arg2: memref<?x?xf32>) attributes {wsc.num_threads = 160 : i32} {
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
  %3 = "wsc.alloc_shared"() : () -> memref<4x128x64xf16, 3>
  %4 = "wsc.alloc_shared"() : () -> memref<4x128x64xf16, 3>
  %5 = "wsc.mbarrier_alloc"() {arrival_count = 1 : i32, num_barriers = 4 : i32} : () -> !wsc.mbarriers
  %6 = "wsc.mbarrier_alloc"() {arrival_count = 128 : i32, num_barriers = 4 : i32} : () -> !wsc.mbarriers
  "wsc.sync"() : () -> ()
  %false = arith.constant false
  %c0_0 = arith.constant 0 : index
  %7 = "wsc.role"() {num_threads = 128 : i32, role = "consumer", thread_begin = 0 : i32} : () -> i1
  scf.if %7 {
    %9 = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 128, 128>, f32>
    %false_1 = arith.constant false
    %10:2 = scf.for %arg3 = %c0 to %2 step %c1 iter_args(%arg4 = %c0_0, %arg5 = %false_1) -> (index, i1) {
      "wsc.mbarrier_wait"(%5, %arg4, %arg5) : (!wsc.mbarriers, index, i1) -> ()
      "wsc.wgmma_fence"() : () -> ()
      "wsc.wgmma"(%3, %4, %arg4, %9) {a_row = 0 : i32, b_layout = "nk"} : (memref<4x128x64xf16, 3>, memref<4x128x64xf16, 3>, index, !wsc.acc<array<i64: 128, 128>, f32>) -> ()
      "wsc.wgmma_commit_group"() : () -> ()
      "wsc.wgmma_wait_group"() {pending = 2 : i32} : () -> ()
      %c0_3 = arith.constant 0 : index
      %12 = arith.cmpi ugt, %arg3, %c0_3 : index
      scf.if %12 {
        %c0_4 = arith.constant 0 : index
        %14 = arith.cmpi eq, %arg4, %c0_4 : index
        %c1_5 = arith.constant 1 : index
        %15 = arith.subi %arg4, %c1_5 : index
        %c3 = arith.constant 3 : index
        %16 = arith.select %14, %c3, %15 : index
        // expected-error @below {{stage 0 released before the WGMMA reading it has completed (its group is still in flight, 1 committed after it: a wsc.wgmma_wait_group {pending = 1} or fewer must retire it before this arrive on empty[0]) (k_tiles = 2, num_stages = 4)}}
        "wsc.mbarrier_arrive"(%6, %16) : (!wsc.mbarriers, index) -> ()
      }
      %13:2 = "wsc.ring_advance"(%arg4, %arg5) {num_stages = 4 : i32} : (index, i1) -> (index, i1)
      scf.yield %13#0, %13#1 : index, i1
    }
    "wsc.wgmma_wait_group"() {pending = 0 : i32} : () -> ()
    %c0_2 = arith.constant 0 : index
    %11 = arith.cmpi ugt, %2, %c0_2 : index
    scf.if %11 {
      %c0_3 = arith.constant 0 : index
      %12 = arith.cmpi eq, %10#0, %c0_3 : index
      %c1_4 = arith.constant 1 : index
      %13 = arith.subi %10#0, %c1_4 : index
      %c3 = arith.constant 3 : index
      %14 = arith.select %12, %c3, %13 : index
      "wsc.mbarrier_arrive"(%6, %14) : (!wsc.mbarriers, index) -> ()
    }
    "wsc.store"(%9, %arg2, %0, %1) : (!wsc.acc<array<i64: 128, 128>, f32>, memref<?x?xf32>, index, index) -> ()
  }
  %8 = "wsc.role"() {num_threads = 32 : i32, role = "producer", thread_begin = 128 : i32} : () -> i1
  scf.if %8 {
    %true = arith.constant true
    %9:2 = scf.for %arg3 = %c0 to %2 step %c1 iter_args(%arg4 = %c0_0, %arg5 = %true) -> (index, i1) {
      "wsc.mbarrier_wait"(%6, %arg4, %arg5) : (!wsc.mbarriers, index, i1) -> ()
      %11 = arith.muli %arg3, %c64 : index
      %12 = "wsc.elect"() : () -> i1
      scf.if %12 {
        "wsc.mbarrier_arrive_expect_tx"(%5, %arg4) {tx_bytes = 32768 : i32} : (!wsc.mbarriers, index) -> ()
        "wsc.tma_load"(%arg0, %0, %11, %3, %arg4, %5) : (memref<?x?xf16>, index, index, memref<4x128x64xf16, 3>, index, !wsc.mbarriers) -> ()
        "wsc.tma_load"(%arg1, %1, %11, %4, %arg4, %5) : (memref<?x?xf16>, index, index, memref<4x128x64xf16, 3>, index, !wsc.mbarriers) -> ()
      }
      %13:2 = "wsc.ring_advance"(%arg4, %arg5) {num_stages = 4 : i32} : (index, i1) -> (index, i1)
      scf.yield %13#0, %13#1 : index, i1
    }
    %c4_1 = arith.constant 4 : index
    %c0_2 = arith.constant 0 : index
    %c1_3 = arith.constant 1 : index
    %10:2 = scf.for %arg3 = %c0_2 to %c4_1 step %c1_3 iter_args(%arg4 = %9#0, %arg5 = %9#1) -> (index, i1) {
      %11 = arith.addi %arg3, %2 : index
      %12 = arith.cmpi uge, %11, %c4_1 : index
      scf.if %12 {
        "wsc.mbarrier_wait"(%6, %arg4, %arg5) : (!wsc.mbarriers, index, i1) -> ()
      }
      %13:2 = "wsc.ring_advance"(%arg4, %arg5) {num_stages = 4 : i32} : (index, i1) -> (index, i1)
      scf.yield %13#0, %13#1 : index, i1
    }
  }
  return
}

// -----

// One WGMMA group in flight, and the consumer never releases the last K
// tile's stage after the loop: the producer's drain waits for it forever.
func.func @inflight_never_releases_last_stage(%arg0: memref<?x?xf16>, %arg1: memref<?x?xf16>, %arg2: memref<?x?xf32>) attributes {wsc.num_threads = 160 : i32} {
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
  %3 = "wsc.alloc_shared"() : () -> memref<4x128x64xf16, 3>
  %4 = "wsc.alloc_shared"() : () -> memref<4x128x64xf16, 3>
  %5 = "wsc.mbarrier_alloc"() {arrival_count = 1 : i32, num_barriers = 4 : i32} : () -> !wsc.mbarriers
  %6 = "wsc.mbarrier_alloc"() {arrival_count = 128 : i32, num_barriers = 4 : i32} : () -> !wsc.mbarriers
  "wsc.sync"() : () -> ()
  %false = arith.constant false
  %c0_0 = arith.constant 0 : index
  %7 = "wsc.role"() {num_threads = 128 : i32, role = "consumer", thread_begin = 0 : i32} : () -> i1
  scf.if %7 {
    %9 = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 128, 128>, f32>
    %false_1 = arith.constant false
    %10:2 = scf.for %arg3 = %c0 to %2 step %c1 iter_args(%arg4 = %c0_0, %arg5 = %false_1) -> (index, i1) {
      "wsc.mbarrier_wait"(%5, %arg4, %arg5) : (!wsc.mbarriers, index, i1) -> ()
      "wsc.wgmma_fence"() : () -> ()
      "wsc.wgmma"(%3, %4, %arg4, %9) {a_row = 0 : i32, b_layout = "nk"} : (memref<4x128x64xf16, 3>, memref<4x128x64xf16, 3>, index, !wsc.acc<array<i64: 128, 128>, f32>) -> ()
      "wsc.wgmma_commit_group"() : () -> ()
      "wsc.wgmma_wait_group"() {pending = 1 : i32} : () -> ()
      %c0_3 = arith.constant 0 : index
      %12 = arith.cmpi ugt, %arg3, %c0_3 : index
      scf.if %12 {
        %c0_4 = arith.constant 0 : index
        %14 = arith.cmpi eq, %arg4, %c0_4 : index
        %c1_5 = arith.constant 1 : index
        %15 = arith.subi %arg4, %c1_5 : index
        %c3 = arith.constant 3 : index
        %16 = arith.select %14, %c3, %15 : index
        "wsc.mbarrier_arrive"(%6, %16) : (!wsc.mbarriers, index) -> ()
      }
      %13:2 = "wsc.ring_advance"(%arg4, %arg5) {num_stages = 4 : i32} : (index, i1) -> (index, i1)
      scf.yield %13#0, %13#1 : index, i1
    }
    "wsc.wgmma_wait_group"() {pending = 0 : i32} : () -> ()
    "wsc.store"(%9, %arg2, %0, %1) : (!wsc.acc<array<i64: 128, 128>, f32>, memref<?x?xf32>, index, index) -> ()
  }
  %8 = "wsc.role"() {num_threads = 32 : i32, role = "producer", thread_begin = 128 : i32} : () -> i1
  scf.if %8 {
    %true = arith.constant true
    %9:2 = scf.for %arg3 = %c0 to %2 step %c1 iter_args(%arg4 = %c0_0, %arg5 = %true) -> (index, i1) {
      "wsc.mbarrier_wait"(%6, %arg4, %arg5) : (!wsc.mbarriers, index, i1) -> ()
      %11 = arith.muli %arg3, %c64 : index
      %12 = "wsc.elect"() : () -> i1
      scf.if %12 {
        "wsc.mbarrier_arrive_expect_tx"(%5, %arg4) {tx_bytes = 32768 : i32} : (!wsc.mbarriers, index) -> ()
        "wsc.tma_load"(%arg0, %0, %11, %3, %arg4, %5) : (memref<?x?xf16>, index, index, memref<4x128x64xf16, 3>, index, !wsc.mbarriers) -> ()
        "wsc.tma_load"(%arg1, %1, %11, %4, %arg4, %5) : (memref<?x?xf16>, index, index, memref<4x128x64xf16, 3>, index, !wsc.mbarriers) -> ()
      }
      %13:2 = "wsc.ring_advance"(%arg4, %arg5) {num_stages = 4 : i32} : (index, i1) -> (index, i1)
      scf.yield %13#0, %13#1 : index, i1
    }
    %c4_1 = arith.constant 4 : index
    %c0_2 = arith.constant 0 : index
    %c1_3 = arith.constant 1 : index
    %10:2 = scf.for %arg3 = %c0_2 to %c4_1 step %c1_3 iter_args(%arg4 = %9#0, %arg5 = %9#1) -> (index, i1) {
      %11 = arith.addi %arg3, %2 : index
      %12 = arith.cmpi uge, %11, %c4_1 : index
      scf.if %12 {
        // expected-error @below {{deadlock: this wait for parity 0 on empty[0] never returns: every thread group is blocked and no copy is in flight (empty[0] is in phase 0 with 0 of 128 arrivals) (k_tiles = 1, num_stages = 4)}}
        "wsc.mbarrier_wait"(%6, %arg4, %arg5) : (!wsc.mbarriers, index, i1) -> ()
      }
      %13:2 = "wsc.ring_advance"(%arg4, %arg5) {num_stages = 4 : i32} : (index, i1) -> (index, i1)
      scf.yield %13#0, %13#1 : index, i1
    }
  }
  return
}

// -----

// A persistent kernel (--warp-specialize of test/passes/warp-specialize-persistent.mlir)
// whose consumer starts every tile's K loop at stage 0, while the producer
// goes on around the ring: it shows only once a block walks several tiles.
module {
  func.func @persistent_consumer_restarts_the_ring(%arg0: memref<?x?xf16>, %arg1: memref<?x?xf16>, %arg2: memref<?x?xf32>) attributes {wsc.num_threads = 160 : i32} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c64 = arith.constant 64 : index
    %c128 = arith.constant 128 : index
    %dim = memref.dim %arg0, %c1 : memref<?x?xf16>
    %0 = arith.ceildivui %dim, %c64 : index
    %1 = "wsc.alloc_shared"() : () -> memref<4x128x64xf16, 3>
    %2 = "wsc.alloc_shared"() : () -> memref<4x128x64xf16, 3>
    %3 = "wsc.mbarrier_alloc"() {arrival_count = 1 : i32, num_barriers = 4 : i32} : () -> !wsc.mbarriers
    %4 = "wsc.mbarrier_alloc"() {arrival_count = 128 : i32, num_barriers = 4 : i32} : () -> !wsc.mbarriers
    "wsc.sync"() : () -> ()
    %dim_0 = memref.dim %arg0, %c0 : memref<?x?xf16>
    %dim_1 = memref.dim %arg2, %c1 : memref<?x?xf32>
    %5 = arith.ceildivui %dim_0, %c128 : index
    %6 = arith.ceildivui %dim_1, %c128 : index
    %7 = arith.muli %5, %6 : index
    %block_id_x = gpu.block_id  x
    %grid_dim_x = gpu.grid_dim  x
    %false = arith.constant false
    %c0_2 = arith.constant 0 : index
    %8 = "wsc.role"() {num_threads = 128 : i32, role = "consumer", thread_begin = 0 : i32} : () -> i1
    scf.if %8 {
      %false_3 = arith.constant false
      %10:2 = scf.for %arg3 = %block_id_x to %7 step %grid_dim_x iter_args(%arg4 = %c0_2, %arg5 = %false_3) -> (index, i1) {
        %11 = arith.remui %arg3, %5 : index
        %12 = arith.divui %arg3, %5 : index
        %13 = arith.muli %11, %c128 : index
        %14 = arith.muli %12, %c128 : index
        %15 = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 128, 128>, f32>
        %16:2 = scf.for %arg6 = %c0 to %0 step %c1 iter_args(%arg7 = %c0_2, %arg8 = %arg5) -> (index, i1) {
          // expected-error @below {{this wait for parity 0 on full[0] returns before the copy it guards lands, so the wgmma after it reads A stage 0 too early: phase 0 of full[0] completed, which the consumer role [0, 128) had already waited for: its parity is one phase behind (k_tiles = 1, num_stages = 4, 4 output tiles per block)}}
          "wsc.mbarrier_wait"(%3, %arg7, %arg8) : (!wsc.mbarriers, index, i1) -> ()
          "wsc.wgmma_fence"() : () -> ()
          // expected-note @below {{the wgmma that reads A stage 0}}
          "wsc.wgmma"(%1, %2, %arg7, %15) {a_row = 0 : i32, b_layout = "nk"} : (memref<4x128x64xf16, 3>, memref<4x128x64xf16, 3>, index, !wsc.acc<array<i64: 128, 128>, f32>) -> ()
          "wsc.wgmma_commit_group"() : () -> ()
          "wsc.wgmma_wait_group"() {pending = 0 : i32} : () -> ()
          "wsc.mbarrier_arrive"(%4, %arg7) : (!wsc.mbarriers, index) -> ()
          %17:2 = "wsc.ring_advance"(%arg7, %arg8) {num_stages = 4 : i32} : (index, i1) -> (index, i1)
          scf.yield %17#0, %17#1 : index, i1
        }
        "wsc.store"(%15, %arg2, %13, %14) : (!wsc.acc<array<i64: 128, 128>, f32>, memref<?x?xf32>, index, index) -> ()
        scf.yield %16#0, %16#1 : index, i1
      }
    }
    %9 = "wsc.role"() {num_threads = 32 : i32, role = "producer", thread_begin = 128 : i32} : () -> i1
    scf.if %9 {
      %c0_3 = arith.constant 0 : index
      %true = arith.constant true
      %10:3 = scf.for %arg3 = %block_id_x to %7 step %grid_dim_x iter_args(%arg4 = %c0_2, %arg5 = %true, %arg6 = %c0_3) -> (index, i1, index) {
        %12 = arith.remui %arg3, %5 : index
        %13 = arith.divui %arg3, %5 : index
        %14 = arith.muli %12, %c128 : index
        %15 = arith.muli %13, %c128 : index
        %16:2 = scf.for %arg7 = %c0 to %0 step %c1 iter_args(%arg8 = %arg4, %arg9 = %arg5) -> (index, i1) {
          "wsc.mbarrier_wait"(%4, %arg8, %arg9) : (!wsc.mbarriers, index, i1) -> ()
          %18 = arith.muli %arg7, %c64 : index
          %19 = "wsc.elect"() : () -> i1
          scf.if %19 {
            "wsc.mbarrier_arrive_expect_tx"(%3, %arg8) {tx_bytes = 32768 : i32} : (!wsc.mbarriers, index) -> ()
            "wsc.tma_load"(%arg0, %14, %18, %1, %arg8, %3) : (memref<?x?xf16>, index, index, memref<4x128x64xf16, 3>, index, !wsc.mbarriers) -> ()
            "wsc.tma_load"(%arg1, %15, %18, %2, %arg8, %3) : (memref<?x?xf16>, index, index, memref<4x128x64xf16, 3>, index, !wsc.mbarriers) -> ()
          }
          %20:2 = "wsc.ring_advance"(%arg8, %arg9) {num_stages = 4 : i32} : (index, i1) -> (index, i1)
          scf.yield %20#0, %20#1 : index, i1
        }
        %17 = arith.addi %arg6, %0 : index
        scf.yield %16#0, %16#1, %17 : index, i1, index
      }
      %c4 = arith.constant 4 : index
      %c0_4 = arith.constant 0 : index
      %c1_5 = arith.constant 1 : index
      %11:2 = scf.for %arg3 = %c0_4 to %c4 step %c1_5 iter_args(%arg4 = %10#0, %arg5 = %10#1) -> (index, i1) {
        %12 = arith.addi %arg3, %10#2 : index
        %13 = arith.cmpi uge, %12, %c4 : index
        scf.if %13 {
          "wsc.mbarrier_wait"(%4, %arg4, %arg5) : (!wsc.mbarriers, index, i1) -> ()
        }
        %14:2 = "wsc.ring_advance"(%arg4, %arg5) {num_stages = 4 : i32} : (index, i1) -> (index, i1)
        scf.yield %14#0, %14#1 : index, i1
      }
    }
    return
  }
}

// -----

// Ping-pong (--warp-specialize='num-consumer-groups=2 producer=warpgroup
// ping-pong=1' of test/passes/warp-specialize-persistent.mlir) with group 1's
// turn wait removed: group 1 runs its tiles without waiting for its turn, and
// when it runs first it passes group 0 the turn twice before group 0 waits for
// it a second time: turns[0] is then a phase past the one that wait is for, and
// a parity wait never returns. (With group 0 first, group 1 reads full[0] a
// phase ahead of the barrier.)
module {
  func.func @ping_pong_without_turns(%arg0: memref<?x?xf16>, %arg1: memref<?x?xf16>, %arg2: memref<?x?xf32>) attributes {wsc.num_threads = 384 : i32} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c64 = arith.constant 64 : index
    %c128 = arith.constant 128 : index
    %dim = memref.dim %arg0, %c1 : memref<?x?xf16>
    %0 = arith.ceildivui %dim, %c64 : index
    %1 = "wsc.alloc_shared"() : () -> memref<4x128x64xf16, 3>
    %2 = "wsc.alloc_shared"() : () -> memref<4x128x64xf16, 3>
    %3 = "wsc.mbarrier_alloc"() {arrival_count = 1 : i32, num_barriers = 4 : i32} : () -> !wsc.mbarriers
    %4 = "wsc.mbarrier_alloc"() {arrival_count = 128 : i32, num_barriers = 4 : i32} : () -> !wsc.mbarriers
    %5 = "wsc.mbarrier_alloc"() {arrival_count = 128 : i32, num_barriers = 2 : i32} : () -> !wsc.mbarriers
    "wsc.sync"() : () -> ()
    %dim_0 = memref.dim %arg0, %c0 : memref<?x?xf16>
    %dim_1 = memref.dim %arg2, %c1 : memref<?x?xf32>
    %6 = arith.ceildivui %dim_0, %c128 : index
    %7 = arith.ceildivui %dim_1, %c128 : index
    %8 = arith.muli %6, %7 : index
    %block_id_x = gpu.block_id  x
    %grid_dim_x = gpu.grid_dim  x
    %false = arith.constant false
    %c0_2 = arith.constant 0 : index
    %9 = "wsc.role"() {max_registers = 232 : i32, num_threads = 128 : i32, role = "consumer", thread_begin = 0 : i32} : () -> i1
    scf.if %9 {
      %false_3 = arith.constant false
      %c2 = arith.constant 2 : index
      %12 = arith.muli %grid_dim_x, %c2 : index
      %true = arith.constant true
      %13:3 = scf.for %arg3 = %block_id_x to %8 step %12 iter_args(%arg4 = %c0_2, %arg5 = %false_3, %arg6 = %true) -> (index, i1, i1) {
        %14 = arith.remui %arg3, %6 : index
        %15 = arith.divui %arg3, %6 : index
        %16 = arith.muli %14, %c128 : index
        %17 = arith.muli %15, %c128 : index
        %18 = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 128, 128>, f32>
        %c0_4 = arith.constant 0 : index
        // expected-error @below {{deadlock: this wait for parity 0 on turns[0] never returns: every thread group is blocked and no copy is in flight (turns[0] is in phase 2 with 0 of 128 arrivals) (k_tiles = 1, num_stages = 4, 4 output tiles per block)}}
        "wsc.mbarrier_wait"(%5, %c0_4, %arg6) : (!wsc.mbarriers, index, i1) -> ()
        %19:2 = scf.for %arg7 = %c0 to %0 step %c1 iter_args(%arg8 = %arg4, %arg9 = %arg5) -> (index, i1) {
          "wsc.mbarrier_wait"(%3, %arg8, %arg9) : (!wsc.mbarriers, index, i1) -> ()
          "wsc.wgmma_fence"() : () -> ()
          "wsc.wgmma"(%1, %2, %arg8, %18) {a_row = 0 : i32, b_layout = "nk"} : (memref<4x128x64xf16, 3>, memref<4x128x64xf16, 3>, index, !wsc.acc<array<i64: 128, 128>, f32>) -> ()
          "wsc.wgmma_commit_group"() : () -> ()
          "wsc.wgmma_wait_group"() {pending = 0 : i32} : () -> ()
          "wsc.mbarrier_arrive"(%4, %arg8) : (!wsc.mbarriers, index) -> ()
          %26:2 = "wsc.ring_advance"(%arg8, %arg9) {num_stages = 4 : i32} : (index, i1) -> (index, i1)
          scf.yield %26#0, %26#1 : index, i1
        }
        %c1_5 = arith.constant 1 : index
        "wsc.mbarrier_arrive"(%5, %c1_5) : (!wsc.mbarriers, index) -> ()
        "wsc.store"(%18, %arg2, %16, %17) : (!wsc.acc<array<i64: 128, 128>, f32>, memref<?x?xf32>, index, index) -> ()
        %20 = arith.addi %19#0, %0 : index
        %c4 = arith.constant 4 : index
        %21 = arith.divui %20, %c4 : index
        %22 = arith.index_cast %21 : index to i1
        %23 = arith.remui %20, %c4 : index
        %24 = arith.xori %19#1, %22 : i1
        %true_6 = arith.constant true
        %25 = arith.xori %arg6, %true_6 : i1
        scf.yield %23, %24, %25 : index, i1, i1
      }
    }
    %10 = "wsc.role"() {max_registers = 232 : i32, num_threads = 128 : i32, role = "consumer", thread_begin = 128 : i32} : () -> i1
    scf.if %10 {
      %false_3 = arith.constant false
      %12 = arith.addi %block_id_x, %grid_dim_x : index
      %13 = arith.addi %c0_2, %0 : index
      %c4 = arith.constant 4 : index
      %14 = arith.divui %13, %c4 : index
      %15 = arith.index_cast %14 : index to i1
      %16 = arith.remui %13, %c4 : index
      %17 = arith.xori %false_3, %15 : i1
      %c2 = arith.constant 2 : index
      %18 = arith.muli %grid_dim_x, %c2 : index
      %false_4 = arith.constant false
      %19:3 = scf.for %arg3 = %12 to %8 step %18 iter_args(%arg4 = %16, %arg5 = %17, %arg6 = %false_4) -> (index, i1, i1) {
        %20 = arith.remui %arg3, %6 : index
        %21 = arith.divui %arg3, %6 : index
        %22 = arith.muli %20, %c128 : index
        %23 = arith.muli %21, %c128 : index
        %24 = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 128, 128>, f32>
        %c1_5 = arith.constant 1 : index
        %25:2 = scf.for %arg7 = %c0 to %0 step %c1 iter_args(%arg8 = %arg4, %arg9 = %arg5) -> (index, i1) {
          "wsc.mbarrier_wait"(%3, %arg8, %arg9) : (!wsc.mbarriers, index, i1) -> ()
          "wsc.wgmma_fence"() : () -> ()
          "wsc.wgmma"(%1, %2, %arg8, %24) {a_row = 0 : i32, b_layout = "nk"} : (memref<4x128x64xf16, 3>, memref<4x128x64xf16, 3>, index, !wsc.acc<array<i64: 128, 128>, f32>) -> ()
          "wsc.wgmma_commit_group"() : () -> ()
          "wsc.wgmma_wait_group"() {pending = 0 : i32} : () -> ()
          "wsc.mbarrier_arrive"(%4, %arg8) : (!wsc.mbarriers, index) -> ()
          %32:2 = "wsc.ring_advance"(%arg8, %arg9) {num_stages = 4 : i32} : (index, i1) -> (index, i1)
          scf.yield %32#0, %32#1 : index, i1
        }
        %c0_6 = arith.constant 0 : index
        "wsc.mbarrier_arrive"(%5, %c0_6) : (!wsc.mbarriers, index) -> ()
        "wsc.store"(%24, %arg2, %22, %23) : (!wsc.acc<array<i64: 128, 128>, f32>, memref<?x?xf32>, index, index) -> ()
        %26 = arith.addi %25#0, %0 : index
        %c4_7 = arith.constant 4 : index
        %27 = arith.divui %26, %c4_7 : index
        %28 = arith.index_cast %27 : index to i1
        %29 = arith.remui %26, %c4_7 : index
        %30 = arith.xori %25#1, %28 : i1
        %true = arith.constant true
        %31 = arith.xori %arg6, %true : i1
        scf.yield %29, %30, %31 : index, i1, i1
      }
    }
    %11 = "wsc.role"() {max_registers = 40 : i32, num_threads = 128 : i32, role = "producer", thread_begin = 256 : i32} : () -> i1
    scf.if %11 {
      %c0_3 = arith.constant 0 : index
      %true = arith.constant true
      %12:3 = scf.for %arg3 = %block_id_x to %8 step %grid_dim_x iter_args(%arg4 = %c0_2, %arg5 = %true, %arg6 = %c0_3) -> (index, i1, index) {
        %14 = arith.remui %arg3, %6 : index
        %15 = arith.divui %arg3, %6 : index
        %16 = arith.muli %14, %c128 : index
        %17 = arith.muli %15, %c128 : index
        %18:2 = scf.for %arg7 = %c0 to %0 step %c1 iter_args(%arg8 = %arg4, %arg9 = %arg5) -> (index, i1) {
          "wsc.mbarrier_wait"(%4, %arg8, %arg9) : (!wsc.mbarriers, index, i1) -> ()
          %20 = arith.muli %arg7, %c64 : index
          %21 = "wsc.elect"() : () -> i1
          scf.if %21 {
            "wsc.mbarrier_arrive_expect_tx"(%3, %arg8) {tx_bytes = 32768 : i32} : (!wsc.mbarriers, index) -> ()
            "wsc.tma_load"(%arg0, %16, %20, %1, %arg8, %3) : (memref<?x?xf16>, index, index, memref<4x128x64xf16, 3>, index, !wsc.mbarriers) -> ()
            "wsc.tma_load"(%arg1, %17, %20, %2, %arg8, %3) : (memref<?x?xf16>, index, index, memref<4x128x64xf16, 3>, index, !wsc.mbarriers) -> ()
          }
          %22:2 = "wsc.ring_advance"(%arg8, %arg9) {num_stages = 4 : i32} : (index, i1) -> (index, i1)
          scf.yield %22#0, %22#1 : index, i1
        }
        %19 = arith.addi %arg6, %0 : index
        scf.yield %18#0, %18#1, %19 : index, i1, index
      }
      %c4 = arith.constant 4 : index
      %c0_4 = arith.constant 0 : index
      %c1_5 = arith.constant 1 : index
      %13:2 = scf.for %arg3 = %c0_4 to %c4 step %c1_5 iter_args(%arg4 = %12#0, %arg5 = %12#1) -> (index, i1) {
        %14 = arith.addi %arg3, %12#2 : index
        %15 = arith.cmpi uge, %14, %c4 : index
        scf.if %15 {
          "wsc.mbarrier_wait"(%4, %arg4, %arg5) : (!wsc.mbarriers, index, i1) -> ()
        }
        %16:2 = "wsc.ring_advance"(%arg4, %arg5) {num_stages = 4 : i32} : (index, i1) -> (index, i1)
        scf.yield %16#0, %16#1 : index, i1
      }
    }
    return
  }
}

// -----

// The TMA-store epilogue: ordinary stores into the staging tile are not
// visible to the TMA copy without fence.proxy.async.
func.func @unfenced_staging(%a: memref<?x?xf16>, %b: memref<?x?xf16>, %c: memref<?x?xf16>) attributes {wsc.num_threads = 128 : i32} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %false = arith.constant false
  %k = memref.dim %a, %c1 : memref<?x?xf16>
  %k_tiles = arith.ceildivui %k, %c64 : index
  %sa = "wsc.alloc_shared"() : () -> memref<2x128x64xf16, 3>
  %sb = "wsc.alloc_shared"() : () -> memref<2x128x64xf16, 3>
  %sc = "wsc.alloc_shared"() : () -> memref<1x128x128xf16, 3>
  %full = "wsc.mbarrier_alloc"() {arrival_count = 1 : i32, num_barriers = 2 : i32} : () -> !wsc.mbarriers
  "wsc.sync"() : () -> ()
  %acc = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 128, 128>, f32>
  %ring:2 = scf.for %kt = %c0 to %k_tiles step %c1 iter_args(%stage = %c0, %phase = %false) -> (index, i1) {
    %k0 = arith.muli %kt, %c64 : index
    %elected = "wsc.elect"() : () -> i1
    scf.if %elected {
      "wsc.mbarrier_arrive_expect_tx"(%full, %stage) {tx_bytes = 32768 : i32} : (!wsc.mbarriers, index) -> ()
      "wsc.tma_load"(%a, %c0, %k0, %sa, %stage, %full) : (memref<?x?xf16>, index, index, memref<2x128x64xf16, 3>, index, !wsc.mbarriers) -> ()
      "wsc.tma_load"(%b, %c0, %k0, %sb, %stage, %full) : (memref<?x?xf16>, index, index, memref<2x128x64xf16, 3>, index, !wsc.mbarriers) -> ()
    }
    "wsc.mbarrier_wait"(%full, %stage, %phase) : (!wsc.mbarriers, index, i1) -> ()
    "wsc.wgmma_fence"() : () -> ()
    "wsc.wgmma"(%sa, %sb, %stage, %acc) {a_row = 0 : i32, b_layout = "nk"} : (memref<2x128x64xf16, 3>, memref<2x128x64xf16, 3>, index, !wsc.acc<array<i64: 128, 128>, f32>) -> ()
    "wsc.wgmma_commit_group"() : () -> ()
    "wsc.wgmma_wait_group"() {pending = 0 : i32} : () -> ()
    "wsc.sync"() : () -> ()
    %next:2 = "wsc.ring_advance"(%stage, %phase) {num_stages = 2 : i32} : (index, i1) -> (index, i1)
    scf.yield %next#0, %next#1 : index, i1
  }
  %h = "wsc.cast"(%acc) : (!wsc.acc<array<i64: 128, 128>, f32>) -> !wsc.acc<array<i64: 128, 128>, f16>
  "wsc.store_shared"(%h, %sc, %c0) : (!wsc.acc<array<i64: 128, 128>, f16>, memref<1x128x128xf16, 3>, index) -> ()
  "wsc.sync"() : () -> ()
  %storer = "wsc.elect"() : () -> i1
  scf.if %storer {
    // expected-error @below {{TMA store of C staging stage 0, which wsc.store_shared wrote, but no wsc.fence_proxy_async made them visible to TMA (k_tiles = 1, num_stages = 2)}}
    "wsc.tma_store"(%sc, %c0, %c, %c0, %c0) : (memref<1x128x128xf16, 3>, index, memref<?x?xf16>, index, index) -> ()
  }
  return
}

// -----

// Fenced, but the copy may start before the other threads have written.
func.func @unsynced_staging(%a: memref<?x?xf16>, %b: memref<?x?xf16>, %c: memref<?x?xf16>) attributes {wsc.num_threads = 128 : i32} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %false = arith.constant false
  %k = memref.dim %a, %c1 : memref<?x?xf16>
  %k_tiles = arith.ceildivui %k, %c64 : index
  %sa = "wsc.alloc_shared"() : () -> memref<2x128x64xf16, 3>
  %sb = "wsc.alloc_shared"() : () -> memref<2x128x64xf16, 3>
  %sc = "wsc.alloc_shared"() : () -> memref<1x128x128xf16, 3>
  %full = "wsc.mbarrier_alloc"() {arrival_count = 1 : i32, num_barriers = 2 : i32} : () -> !wsc.mbarriers
  "wsc.sync"() : () -> ()
  %acc = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 128, 128>, f32>
  %ring:2 = scf.for %kt = %c0 to %k_tiles step %c1 iter_args(%stage = %c0, %phase = %false) -> (index, i1) {
    %k0 = arith.muli %kt, %c64 : index
    %elected = "wsc.elect"() : () -> i1
    scf.if %elected {
      "wsc.mbarrier_arrive_expect_tx"(%full, %stage) {tx_bytes = 32768 : i32} : (!wsc.mbarriers, index) -> ()
      "wsc.tma_load"(%a, %c0, %k0, %sa, %stage, %full) : (memref<?x?xf16>, index, index, memref<2x128x64xf16, 3>, index, !wsc.mbarriers) -> ()
      "wsc.tma_load"(%b, %c0, %k0, %sb, %stage, %full) : (memref<?x?xf16>, index, index, memref<2x128x64xf16, 3>, index, !wsc.mbarriers) -> ()
    }
    "wsc.mbarrier_wait"(%full, %stage, %phase) : (!wsc.mbarriers, index, i1) -> ()
    "wsc.wgmma_fence"() : () -> ()
    "wsc.wgmma"(%sa, %sb, %stage, %acc) {a_row = 0 : i32, b_layout = "nk"} : (memref<2x128x64xf16, 3>, memref<2x128x64xf16, 3>, index, !wsc.acc<array<i64: 128, 128>, f32>) -> ()
    "wsc.wgmma_commit_group"() : () -> ()
    "wsc.wgmma_wait_group"() {pending = 0 : i32} : () -> ()
    "wsc.sync"() : () -> ()
    %next:2 = "wsc.ring_advance"(%stage, %phase) {num_stages = 2 : i32} : (index, i1) -> (index, i1)
    scf.yield %next#0, %next#1 : index, i1
  }
  %h = "wsc.cast"(%acc) : (!wsc.acc<array<i64: 128, 128>, f32>) -> !wsc.acc<array<i64: 128, 128>, f16>
  "wsc.store_shared"(%h, %sc, %c0) : (!wsc.acc<array<i64: 128, 128>, f16>, memref<1x128x128xf16, 3>, index) -> ()
  "wsc.fence_proxy_async"() : () -> ()
  %storer = "wsc.elect"() : () -> i1
  scf.if %storer {
    // expected-error @below {{TMA store of C staging stage 0, which wsc.store_shared wrote, but no wsc.sync after the writers' wsc.fence_proxy_async (k_tiles = 1, num_stages = 2)}}
    "wsc.tma_store"(%sc, %c0, %c, %c0, %c0) : (memref<1x128x128xf16, 3>, index, memref<?x?xf16>, index, index) -> ()
  }
  return
}

// -----

// The staging tile is rewritten while the first copy may still read it.
func.func @restaged_while_read(%a: memref<?x?xf16>, %b: memref<?x?xf16>, %c: memref<?x?xf16>) attributes {wsc.num_threads = 128 : i32} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %false = arith.constant false
  %k = memref.dim %a, %c1 : memref<?x?xf16>
  %k_tiles = arith.ceildivui %k, %c64 : index
  %sa = "wsc.alloc_shared"() : () -> memref<2x128x64xf16, 3>
  %sb = "wsc.alloc_shared"() : () -> memref<2x128x64xf16, 3>
  %sc = "wsc.alloc_shared"() : () -> memref<1x128x128xf16, 3>
  %full = "wsc.mbarrier_alloc"() {arrival_count = 1 : i32, num_barriers = 2 : i32} : () -> !wsc.mbarriers
  "wsc.sync"() : () -> ()
  %acc = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 128, 128>, f32>
  %ring:2 = scf.for %kt = %c0 to %k_tiles step %c1 iter_args(%stage = %c0, %phase = %false) -> (index, i1) {
    %k0 = arith.muli %kt, %c64 : index
    %elected = "wsc.elect"() : () -> i1
    scf.if %elected {
      "wsc.mbarrier_arrive_expect_tx"(%full, %stage) {tx_bytes = 32768 : i32} : (!wsc.mbarriers, index) -> ()
      "wsc.tma_load"(%a, %c0, %k0, %sa, %stage, %full) : (memref<?x?xf16>, index, index, memref<2x128x64xf16, 3>, index, !wsc.mbarriers) -> ()
      "wsc.tma_load"(%b, %c0, %k0, %sb, %stage, %full) : (memref<?x?xf16>, index, index, memref<2x128x64xf16, 3>, index, !wsc.mbarriers) -> ()
    }
    "wsc.mbarrier_wait"(%full, %stage, %phase) : (!wsc.mbarriers, index, i1) -> ()
    "wsc.wgmma_fence"() : () -> ()
    "wsc.wgmma"(%sa, %sb, %stage, %acc) {a_row = 0 : i32, b_layout = "nk"} : (memref<2x128x64xf16, 3>, memref<2x128x64xf16, 3>, index, !wsc.acc<array<i64: 128, 128>, f32>) -> ()
    "wsc.wgmma_commit_group"() : () -> ()
    "wsc.wgmma_wait_group"() {pending = 0 : i32} : () -> ()
    "wsc.sync"() : () -> ()
    %next:2 = "wsc.ring_advance"(%stage, %phase) {num_stages = 2 : i32} : (index, i1) -> (index, i1)
    scf.yield %next#0, %next#1 : index, i1
  }
  %h = "wsc.cast"(%acc) : (!wsc.acc<array<i64: 128, 128>, f32>) -> !wsc.acc<array<i64: 128, 128>, f16>
  "wsc.store_shared"(%h, %sc, %c0) : (!wsc.acc<array<i64: 128, 128>, f16>, memref<1x128x128xf16, 3>, index) -> ()
  "wsc.fence_proxy_async"() : () -> ()
  "wsc.sync"() : () -> ()
  %storer = "wsc.elect"() : () -> i1
  scf.if %storer {
    "wsc.tma_store"(%sc, %c0, %c, %c0, %c0) : (memref<1x128x128xf16, 3>, index, memref<?x?xf16>, index, index) -> ()
  }
  // expected-error @below {{C staging stage 0 is written while a TMA store may still read it (no wsc.tma_store_wait by the storing thread) (k_tiles = 1, num_stages = 2)}}
  "wsc.store_shared"(%h, %sc, %c0) : (!wsc.acc<array<i64: 128, 128>, f16>, memref<1x128x128xf16, 3>, index) -> ()
  return
}

// -----

// The coalesced-store epilogue: every thread copies rows that other threads
// wrote, so a wsc.sync must come between.
func.func @unsynced_coalesced_store(%a: memref<?x?xf16>, %b: memref<?x?xf16>, %c: memref<?x?xf16>) attributes {wsc.num_threads = 128 : i32} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %false = arith.constant false
  %k = memref.dim %a, %c1 : memref<?x?xf16>
  %k_tiles = arith.ceildivui %k, %c64 : index
  %sa = "wsc.alloc_shared"() : () -> memref<2x128x64xf16, 3>
  %sb = "wsc.alloc_shared"() : () -> memref<2x128x64xf16, 3>
  %sc = "wsc.alloc_shared"() : () -> memref<1x128x128xf16, 3>
  %full = "wsc.mbarrier_alloc"() {arrival_count = 1 : i32, num_barriers = 2 : i32} : () -> !wsc.mbarriers
  "wsc.sync"() : () -> ()
  %acc = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 128, 128>, f32>
  %ring:2 = scf.for %kt = %c0 to %k_tiles step %c1 iter_args(%stage = %c0, %phase = %false) -> (index, i1) {
    %k0 = arith.muli %kt, %c64 : index
    %elected = "wsc.elect"() : () -> i1
    scf.if %elected {
      "wsc.mbarrier_arrive_expect_tx"(%full, %stage) {tx_bytes = 32768 : i32} : (!wsc.mbarriers, index) -> ()
      "wsc.tma_load"(%a, %c0, %k0, %sa, %stage, %full) : (memref<?x?xf16>, index, index, memref<2x128x64xf16, 3>, index, !wsc.mbarriers) -> ()
      "wsc.tma_load"(%b, %c0, %k0, %sb, %stage, %full) : (memref<?x?xf16>, index, index, memref<2x128x64xf16, 3>, index, !wsc.mbarriers) -> ()
    }
    "wsc.mbarrier_wait"(%full, %stage, %phase) : (!wsc.mbarriers, index, i1) -> ()
    "wsc.wgmma_fence"() : () -> ()
    "wsc.wgmma"(%sa, %sb, %stage, %acc) {a_row = 0 : i32, b_layout = "nk"} : (memref<2x128x64xf16, 3>, memref<2x128x64xf16, 3>, index, !wsc.acc<array<i64: 128, 128>, f32>) -> ()
    "wsc.wgmma_commit_group"() : () -> ()
    "wsc.wgmma_wait_group"() {pending = 0 : i32} : () -> ()
    "wsc.sync"() : () -> ()
    %next:2 = "wsc.ring_advance"(%stage, %phase) {num_stages = 2 : i32} : (index, i1) -> (index, i1)
    scf.yield %next#0, %next#1 : index, i1
  }
  %h = "wsc.cast"(%acc) : (!wsc.acc<array<i64: 128, 128>, f32>) -> !wsc.acc<array<i64: 128, 128>, f16>
  "wsc.store_shared"(%h, %sc, %c0) : (!wsc.acc<array<i64: 128, 128>, f16>, memref<1x128x128xf16, 3>, index) -> ()
  // expected-error @below {{coalesced store of C staging stage 0, which wsc.store_shared wrote, but no wsc.sync after the writes made them visible to the other threads (k_tiles = 1, num_stages = 2)}}
  "wsc.coalesced_store"(%sc, %c0, %c, %c0, %c0) : (memref<1x128x128xf16, 3>, index, memref<?x?xf16>, index, index) -> ()
  return
}

// -----

// The staging tile is rewritten while other threads may still copy it out.
func.func @restaged_while_copied(%a: memref<?x?xf16>, %b: memref<?x?xf16>, %c: memref<?x?xf16>) attributes {wsc.num_threads = 128 : i32} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %false = arith.constant false
  %k = memref.dim %a, %c1 : memref<?x?xf16>
  %k_tiles = arith.ceildivui %k, %c64 : index
  %sa = "wsc.alloc_shared"() : () -> memref<2x128x64xf16, 3>
  %sb = "wsc.alloc_shared"() : () -> memref<2x128x64xf16, 3>
  %sc = "wsc.alloc_shared"() : () -> memref<1x128x128xf16, 3>
  %full = "wsc.mbarrier_alloc"() {arrival_count = 1 : i32, num_barriers = 2 : i32} : () -> !wsc.mbarriers
  "wsc.sync"() : () -> ()
  %acc = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 128, 128>, f32>
  %ring:2 = scf.for %kt = %c0 to %k_tiles step %c1 iter_args(%stage = %c0, %phase = %false) -> (index, i1) {
    %k0 = arith.muli %kt, %c64 : index
    %elected = "wsc.elect"() : () -> i1
    scf.if %elected {
      "wsc.mbarrier_arrive_expect_tx"(%full, %stage) {tx_bytes = 32768 : i32} : (!wsc.mbarriers, index) -> ()
      "wsc.tma_load"(%a, %c0, %k0, %sa, %stage, %full) : (memref<?x?xf16>, index, index, memref<2x128x64xf16, 3>, index, !wsc.mbarriers) -> ()
      "wsc.tma_load"(%b, %c0, %k0, %sb, %stage, %full) : (memref<?x?xf16>, index, index, memref<2x128x64xf16, 3>, index, !wsc.mbarriers) -> ()
    }
    "wsc.mbarrier_wait"(%full, %stage, %phase) : (!wsc.mbarriers, index, i1) -> ()
    "wsc.wgmma_fence"() : () -> ()
    "wsc.wgmma"(%sa, %sb, %stage, %acc) {a_row = 0 : i32, b_layout = "nk"} : (memref<2x128x64xf16, 3>, memref<2x128x64xf16, 3>, index, !wsc.acc<array<i64: 128, 128>, f32>) -> ()
    "wsc.wgmma_commit_group"() : () -> ()
    "wsc.wgmma_wait_group"() {pending = 0 : i32} : () -> ()
    "wsc.sync"() : () -> ()
    %next:2 = "wsc.ring_advance"(%stage, %phase) {num_stages = 2 : i32} : (index, i1) -> (index, i1)
    scf.yield %next#0, %next#1 : index, i1
  }
  %h = "wsc.cast"(%acc) : (!wsc.acc<array<i64: 128, 128>, f32>) -> !wsc.acc<array<i64: 128, 128>, f16>
  "wsc.store_shared"(%h, %sc, %c0) : (!wsc.acc<array<i64: 128, 128>, f16>, memref<1x128x128xf16, 3>, index) -> ()
  "wsc.sync"() : () -> ()
  "wsc.coalesced_store"(%sc, %c0, %c, %c0, %c0) : (memref<1x128x128xf16, 3>, index, memref<?x?xf16>, index, index) -> ()
  // expected-error @below {{C staging stage 0 is written while other threads may still copy it out (no wsc.sync after the wsc.coalesced_store) (k_tiles = 1, num_stages = 2)}}
  "wsc.store_shared"(%h, %sc, %c0) : (!wsc.acc<array<i64: 128, 128>, f16>, memref<1x128x128xf16, 3>, index) -> ()
  return
}

// -----

// In a cluster sharing B by multicast, each block releases its stages to its
// own empty barriers only (half the arrivals both producers wait for).
func.func @cluster_release_to_one_cta(%arg0: memref<?x?xf16>, %arg1: memref<?x?xf16>, %arg2: memref<?x?xf32>) attributes {wsc.cluster_size = 2 : i32, wsc.num_threads = 160 : i32} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %c128 = arith.constant 128 : index
  %false = arith.constant false
  %dim = memref.dim %arg0, %c1 : memref<?x?xf16>
  %0 = arith.ceildivui %dim, %c64 : index
  %1 = "wsc.alloc_shared"() : () -> memref<2x128x64xf16, 3>
  %2 = "wsc.alloc_shared"() : () -> memref<2x128x64xf16, 3>
  %3 = "wsc.mbarrier_alloc"() {arrival_count = 1 : i32, num_barriers = 2 : i32} : () -> !wsc.mbarriers
  %4 = "wsc.mbarrier_alloc"() {arrival_count = 256 : i32, num_barriers = 2 : i32} : () -> !wsc.mbarriers
  "wsc.cluster_sync"() : () -> ()
  %5 = "wsc.cluster_rank"() : () -> index
  %6 = arith.muli %5, %c128 : index
  %c0_0 = arith.constant 0 : index
  %7 = "wsc.role"() {num_threads = 128 : i32, role = "consumer", thread_begin = 0 : i32} : () -> i1
  scf.if %7 {
    %9 = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 128, 128>, f32>
    %false_1 = arith.constant false
    %10:2 = scf.for %arg3 = %c0 to %0 step %c1 iter_args(%arg4 = %c0_0, %arg5 = %false_1) -> (index, i1) {
      "wsc.mbarrier_wait"(%3, %arg4, %arg5) : (!wsc.mbarriers, index, i1) -> ()
      "wsc.wgmma_fence"() : () -> ()
      "wsc.wgmma"(%1, %2, %arg4, %9) {a_row = 0 : i32, b_layout = "nk"} : (memref<2x128x64xf16, 3>, memref<2x128x64xf16, 3>, index, !wsc.acc<array<i64: 128, 128>, f32>) -> ()
      "wsc.wgmma_commit_group"() : () -> ()
      "wsc.wgmma_wait_group"() {pending = 0 : i32} : () -> ()
      "wsc.mbarrier_arrive"(%4, %arg4) : (!wsc.mbarriers, index) -> ()
      %11:2 = "wsc.ring_advance"(%arg4, %arg5) {num_stages = 2 : i32} : (index, i1) -> (index, i1)
      scf.yield %11#0, %11#1 : index, i1
    }
    "wsc.store"(%9, %arg2, %6, %c0) : (!wsc.acc<array<i64: 128, 128>, f32>, memref<?x?xf32>, index, index) -> ()
  }
  %8 = "wsc.role"() {num_threads = 32 : i32, role = "producer", thread_begin = 128 : i32} : () -> i1
  scf.if %8 {
    %true = arith.constant true
    %9:2 = scf.for %arg3 = %c0 to %0 step %c1 iter_args(%arg4 = %c0_0, %arg5 = %true) -> (index, i1) {
      "wsc.mbarrier_wait"(%4, %arg4, %arg5) : (!wsc.mbarriers, index, i1) -> ()
      %11 = arith.muli %arg3, %c64 : index
      %12 = "wsc.elect"() : () -> i1
      scf.if %12 {
        "wsc.mbarrier_arrive_expect_tx"(%3, %arg4) {tx_bytes = 32768 : i32} : (!wsc.mbarriers, index) -> ()
        "wsc.tma_load"(%arg0, %6, %11, %1, %arg4, %3) : (memref<?x?xf16>, index, index, memref<2x128x64xf16, 3>, index, !wsc.mbarriers) -> ()
        "wsc.tma_load"(%arg1, %c0, %11, %2, %arg4, %3) {multicast} : (memref<?x?xf16>, index, index, memref<2x128x64xf16, 3>, index, !wsc.mbarriers) -> ()
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
        // expected-error @below {{deadlock: this wait for parity 0 on empty[0] of CTA 1 never returns: every thread group is blocked and no copy is in flight (empty[0] of CTA 1 is in phase 0 with 128 of 256 arrivals) (k_tiles = 1, num_stages = 2)}}
        "wsc.mbarrier_wait"(%4, %arg4, %arg5) : (!wsc.mbarriers, index, i1) -> ()
      }
      %13:2 = "wsc.ring_advance"(%arg4, %arg5) {num_stages = 2 : i32} : (index, i1) -> (index, i1)
      scf.yield %13#0, %13#1 : index, i1
    }
  }
  return
}

// -----

// The barriers are initialised and published by a block-wide sync only: the
// other block's multicast copies may reach them before their init.
func.func @cluster_barriers_published_to_one_cta(%arg0: memref<?x?xf16>, %arg1: memref<?x?xf16>, %arg2: memref<?x?xf32>) attributes {wsc.cluster_size = 2 : i32, wsc.num_threads = 160 : i32} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %c128 = arith.constant 128 : index
  %false = arith.constant false
  %dim = memref.dim %arg0, %c1 : memref<?x?xf16>
  %0 = arith.ceildivui %dim, %c64 : index
  %1 = "wsc.alloc_shared"() : () -> memref<2x128x64xf16, 3>
  %2 = "wsc.alloc_shared"() : () -> memref<2x128x64xf16, 3>
  %3 = "wsc.mbarrier_alloc"() {arrival_count = 1 : i32, num_barriers = 2 : i32} : () -> !wsc.mbarriers
  %4 = "wsc.mbarrier_alloc"() {arrival_count = 256 : i32, num_barriers = 2 : i32} : () -> !wsc.mbarriers
  "wsc.sync"() : () -> ()
  %5 = "wsc.cluster_rank"() : () -> index
  %6 = arith.muli %5, %c128 : index
  %c0_0 = arith.constant 0 : index
  %7 = "wsc.role"() {num_threads = 128 : i32, role = "consumer", thread_begin = 0 : i32} : () -> i1
  scf.if %7 {
    %9 = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 128, 128>, f32>
    %false_1 = arith.constant false
    %10:2 = scf.for %arg3 = %c0 to %0 step %c1 iter_args(%arg4 = %c0_0, %arg5 = %false_1) -> (index, i1) {
      "wsc.mbarrier_wait"(%3, %arg4, %arg5) : (!wsc.mbarriers, index, i1) -> ()
      "wsc.wgmma_fence"() : () -> ()
      "wsc.wgmma"(%1, %2, %arg4, %9) {a_row = 0 : i32, b_layout = "nk"} : (memref<2x128x64xf16, 3>, memref<2x128x64xf16, 3>, index, !wsc.acc<array<i64: 128, 128>, f32>) -> ()
      "wsc.wgmma_commit_group"() : () -> ()
      "wsc.wgmma_wait_group"() {pending = 0 : i32} : () -> ()
      "wsc.mbarrier_arrive"(%4, %arg4) {every_cta} : (!wsc.mbarriers, index) -> ()
      %11:2 = "wsc.ring_advance"(%arg4, %arg5) {num_stages = 2 : i32} : (index, i1) -> (index, i1)
      scf.yield %11#0, %11#1 : index, i1
    }
    "wsc.store"(%9, %arg2, %6, %c0) : (!wsc.acc<array<i64: 128, 128>, f32>, memref<?x?xf32>, index, index) -> ()
  }
  %8 = "wsc.role"() {num_threads = 32 : i32, role = "producer", thread_begin = 128 : i32} : () -> i1
  scf.if %8 {
    %true = arith.constant true
    %9:2 = scf.for %arg3 = %c0 to %0 step %c1 iter_args(%arg4 = %c0_0, %arg5 = %true) -> (index, i1) {
      "wsc.mbarrier_wait"(%4, %arg4, %arg5) : (!wsc.mbarriers, index, i1) -> ()
      %11 = arith.muli %arg3, %c64 : index
      %12 = "wsc.elect"() : () -> i1
      scf.if %12 {
        "wsc.mbarrier_arrive_expect_tx"(%3, %arg4) {tx_bytes = 32768 : i32} : (!wsc.mbarriers, index) -> ()
        "wsc.tma_load"(%arg0, %6, %11, %1, %arg4, %3) : (memref<?x?xf16>, index, index, memref<2x128x64xf16, 3>, index, !wsc.mbarriers) -> ()
        // expected-error @below {{full of another CTA is used before its initialization is visible to this one: no wsc.cluster_sync between its wsc.mbarrier_alloc and this op (k_tiles = 1, num_stages = 2)}}
        "wsc.tma_load"(%arg1, %c0, %11, %2, %arg4, %3) {multicast} : (memref<?x?xf16>, index, index, memref<2x128x64xf16, 3>, index, !wsc.mbarriers) -> ()
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
        "wsc.mbarrier_wait"(%4, %arg4, %arg5) : (!wsc.mbarriers, index, i1) -> ()
      }
      %13:2 = "wsc.ring_advance"(%arg4, %arg5) {num_stages = 2 : i32} : (index, i1) -> (index, i1)
      scf.yield %13#0, %13#1 : index, i1
    }
  }
  return
}

// -----

// The empty barriers count 128 threads, but the consumer releases each stage
// once per warp (4 arrivals): the producer waits for the rest forever.
func.func @per_warp_release_of_a_thread_count(%a: memref<?x?xf16>, %b: memref<?x?xf16>, %c: memref<?x?xf32>)
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
  %empty = "wsc.mbarrier_alloc"() {arrival_count = 128 : i32, num_barriers = 4 : i32} : () -> !wsc.mbarriers
  "wsc.sync"() : () -> ()
  %is_consumer = "wsc.role"() {role = "consumer", thread_begin = 0 : i32, num_threads = 128 : i32, max_registers = 232 : i32} : () -> i1
  scf.if %is_consumer {
    %acc = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 128, 128>, f32>
    %cs:2 = scf.for %kt = %c0 to %k_tiles step %c1 iter_args(%stage = %c0, %phase = %false) -> (index, i1) {
      "wsc.mbarrier_wait"(%full, %stage, %phase) : (!wsc.mbarriers, index, i1) -> ()
      "wsc.wgmma_fence"() : () -> ()
      "wsc.wgmma"(%sa, %sb, %stage, %acc) {a_row = 0 : i32, b_layout = "nk"} : (memref<4x128x64xf16, 3>, memref<4x128x64xf16, 3>, index, !wsc.acc<array<i64: 128, 128>, f32>) -> ()
      "wsc.wgmma_commit_group"() : () -> ()
      "wsc.wgmma_wait_group"() {pending = 0 : i32} : () -> ()
      "wsc.mbarrier_arrive"(%empty, %stage) {per_warp} : (!wsc.mbarriers, index) -> ()
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
        "wsc.mbarrier_arrive_expect_tx"(%full, %stage) {tx_bytes = 32768 : i32} : (!wsc.mbarriers, index) -> ()
        "wsc.tma_load"(%a, %m0, %k0, %sa, %stage, %full) : (memref<?x?xf16>, index, index, memref<4x128x64xf16, 3>, index, !wsc.mbarriers) -> ()
        "wsc.tma_load"(%b, %n0, %k0, %sb, %stage, %full) : (memref<?x?xf16>, index, index, memref<4x128x64xf16, 3>, index, !wsc.mbarriers) -> ()
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
        // expected-error @below {{deadlock: this wait for parity 0 on empty[0] never returns: every thread group is blocked and no copy is in flight (empty[0] is in phase 0 with 4 of 128 arrivals) (k_tiles = 1, num_stages = 4)}}
        "wsc.mbarrier_wait"(%empty, %stage, %phase) : (!wsc.mbarriers, index, i1) -> ()
      }
      %next_stage, %next_phase = "wsc.ring_advance"(%stage, %phase) {num_stages = 4 : i32} : (index, i1) -> (index, i1)
      scf.yield %next_stage, %next_phase : index, i1
    }
  }
  return
}

// -----

// The expect_tx left out: the copies land on full[0], but its phase also
// needs the producer's arrival, which never comes. Said at the copies.
func.func @copies_without_expect_tx(%a: memref<?x?xf16>, %b: memref<?x?xf16>, %c: memref<?x?xf32>)
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
  %empty = "wsc.mbarrier_alloc"() {arrival_count = 128 : i32, num_barriers = 4 : i32} : () -> !wsc.mbarriers
  "wsc.sync"() : () -> ()
  %is_consumer = "wsc.role"() {role = "consumer", thread_begin = 0 : i32, num_threads = 128 : i32, max_registers = 232 : i32} : () -> i1
  scf.if %is_consumer {
    %acc = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 128, 128>, f32>
    %cs:2 = scf.for %kt = %c0 to %k_tiles step %c1 iter_args(%stage = %c0, %phase = %false) -> (index, i1) {
      "wsc.mbarrier_wait"(%full, %stage, %phase) : (!wsc.mbarriers, index, i1) -> ()
      "wsc.wgmma_fence"() : () -> ()
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
        "wsc.tma_load"(%a, %m0, %k0, %sa, %stage, %full) : (memref<?x?xf16>, index, index, memref<4x128x64xf16, 3>, index, !wsc.mbarriers) -> ()
        // expected-error @below {{deadlock: these copies complete on full[0], but no wsc.mbarrier_arrive_expect_tx on full[0] comes before them: its phase waits for 1 arrival(s) that never come, so the consumer role [0, 128)'s wait on it never returns (k_tiles = 1, num_stages = 4)}}
        "wsc.tma_load"(%b, %n0, %k0, %sb, %stage, %full) : (memref<?x?xf16>, index, index, memref<4x128x64xf16, 3>, index, !wsc.mbarriers) -> ()
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

// The consumer never releases a stage: no op arrives on empty at all.
func.func @nothing_releases_the_stages(%a: memref<?x?xf16>, %b: memref<?x?xf16>, %c: memref<?x?xf32>)
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
  %empty = "wsc.mbarrier_alloc"() {arrival_count = 128 : i32, num_barriers = 4 : i32} : () -> !wsc.mbarriers
  "wsc.sync"() : () -> ()
  %is_consumer = "wsc.role"() {role = "consumer", thread_begin = 0 : i32, num_threads = 128 : i32, max_registers = 232 : i32} : () -> i1
  scf.if %is_consumer {
    %acc = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 128, 128>, f32>
    %cs:2 = scf.for %kt = %c0 to %k_tiles step %c1 iter_args(%stage = %c0, %phase = %false) -> (index, i1) {
      "wsc.mbarrier_wait"(%full, %stage, %phase) : (!wsc.mbarriers, index, i1) -> ()
      "wsc.wgmma_fence"() : () -> ()
      "wsc.wgmma"(%sa, %sb, %stage, %acc) {a_row = 0 : i32, b_layout = "nk"} : (memref<4x128x64xf16, 3>, memref<4x128x64xf16, 3>, index, !wsc.acc<array<i64: 128, 128>, f32>) -> ()
      "wsc.wgmma_commit_group"() : () -> ()
      "wsc.wgmma_wait_group"() {pending = 0 : i32} : () -> ()
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
        "wsc.mbarrier_arrive_expect_tx"(%full, %stage) {tx_bytes = 32768 : i32} : (!wsc.mbarriers, index) -> ()
        "wsc.tma_load"(%a, %m0, %k0, %sa, %stage, %full) : (memref<?x?xf16>, index, index, memref<4x128x64xf16, 3>, index, !wsc.mbarriers) -> ()
        "wsc.tma_load"(%b, %n0, %k0, %sb, %stage, %full) : (memref<?x?xf16>, index, index, memref<4x128x64xf16, 3>, index, !wsc.mbarriers) -> ()
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
        // expected-error @below {{deadlock: this wait on empty[0] never returns: nothing in the kernel arrives on empty (wsc.mbarrier_arrive), and its phases complete only after 128 arrivals (k_tiles = 1, num_stages = 4)}}
        "wsc.mbarrier_wait"(%empty, %stage, %phase) : (!wsc.mbarriers, index, i1) -> ()
      }
      %next_stage, %next_phase = "wsc.ring_advance"(%stage, %phase) {num_stages = 4 : i32} : (index, i1) -> (index, i1)
      scf.yield %next_stage, %next_phase : index, i1
    }
  }
  return
}

// -----

// Two rings, each with its own full and empty barriers: the consumer releases
// ring 1's stage while ring 1's WGMMA group, the last committed, still reads it.
func.func @two_rings_release_in_flight(%a: memref<?x?xf16>, %b: memref<?x?xf16>, %d: memref<?x?xf16>, %e: memref<?x?xf16>, %c: memref<?x?xf32>, %f: memref<?x?xf32>)
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
  %sd = "wsc.alloc_shared"() : () -> memref<4x64x64xf16, 3>
  %se = "wsc.alloc_shared"() : () -> memref<4x64x64xf16, 3>
  %full0 = "wsc.mbarrier_alloc"() {arrival_count = 1 : i32, num_barriers = 4 : i32} : () -> !wsc.mbarriers
  %empty0 = "wsc.mbarrier_alloc"() {arrival_count = 128 : i32, num_barriers = 4 : i32} : () -> !wsc.mbarriers
  %full1 = "wsc.mbarrier_alloc"() {arrival_count = 1 : i32, num_barriers = 4 : i32} : () -> !wsc.mbarriers
  %empty1 = "wsc.mbarrier_alloc"() {arrival_count = 128 : i32, num_barriers = 4 : i32} : () -> !wsc.mbarriers
  "wsc.sync"() : () -> ()
  %is_consumer = "wsc.role"() {role = "consumer", thread_begin = 0 : i32, num_threads = 128 : i32, max_registers = 232 : i32} : () -> i1
  scf.if %is_consumer {
    %acc0 = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 128, 128>, f32>
    %acc1 = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 64, 64>, f32>
    %cs:2 = scf.for %kt = %c0 to %k_tiles step %c1 iter_args(%stage = %c0, %phase = %false) -> (index, i1) {
      "wsc.mbarrier_wait"(%full0, %stage, %phase) : (!wsc.mbarriers, index, i1) -> ()
      "wsc.wgmma_fence"() : () -> ()
      "wsc.wgmma"(%sa, %sb, %stage, %acc0) {a_row = 0 : i32, b_layout = "nk"} : (memref<4x128x64xf16, 3>, memref<4x128x64xf16, 3>, index, !wsc.acc<array<i64: 128, 128>, f32>) -> ()
      "wsc.wgmma_commit_group"() : () -> ()
      "wsc.mbarrier_wait"(%full1, %stage, %phase) : (!wsc.mbarriers, index, i1) -> ()
      "wsc.wgmma_fence"() : () -> ()
      "wsc.wgmma"(%sd, %se, %stage, %acc1) {a_row = 0 : i32, b_layout = "nk"} : (memref<4x64x64xf16, 3>, memref<4x64x64xf16, 3>, index, !wsc.acc<array<i64: 64, 64>, f32>) -> ()
      "wsc.wgmma_commit_group"() : () -> ()
      "wsc.wgmma_wait_group"() {pending = 1 : i32} : () -> ()
      // expected-error @below {{stage 0 released before the WGMMA reading it has completed (its group, the last committed, is still in flight: a wsc.wgmma_wait_group {pending = 0} must retire it before this arrive on empty1[0]) (k_tiles = 1, num_stages = 4)}}
      "wsc.mbarrier_arrive"(%empty1, %stage) : (!wsc.mbarriers, index) -> ()
      "wsc.wgmma_wait_group"() {pending = 0 : i32} : () -> ()
      "wsc.mbarrier_arrive"(%empty0, %stage) : (!wsc.mbarriers, index) -> ()
      %next_stage, %next_phase = "wsc.ring_advance"(%stage, %phase) {num_stages = 4 : i32} : (index, i1) -> (index, i1)
      scf.yield %next_stage, %next_phase : index, i1
    }
    "wsc.store"(%acc0, %c, %m0, %n0) : (!wsc.acc<array<i64: 128, 128>, f32>, memref<?x?xf32>, index, index) -> ()
    "wsc.store"(%acc1, %f, %m0, %n0) : (!wsc.acc<array<i64: 64, 64>, f32>, memref<?x?xf32>, index, index) -> ()
  }
  %is_producer = "wsc.role"() {role = "producer", thread_begin = 128 : i32, num_threads = 32 : i32, max_registers = 40 : i32} : () -> i1
  scf.if %is_producer {
    %ps:2 = scf.for %kt = %c0 to %k_tiles step %c1 iter_args(%stage = %c0, %phase = %true) -> (index, i1) {
      %k0 = arith.muli %kt, %c64 : index
      "wsc.mbarrier_wait"(%empty0, %stage, %phase) : (!wsc.mbarriers, index, i1) -> ()
      %elected = "wsc.elect"() : () -> i1
      scf.if %elected {
        "wsc.mbarrier_arrive_expect_tx"(%full0, %stage) {tx_bytes = 32768 : i32} : (!wsc.mbarriers, index) -> ()
        "wsc.tma_load"(%a, %m0, %k0, %sa, %stage, %full0) : (memref<?x?xf16>, index, index, memref<4x128x64xf16, 3>, index, !wsc.mbarriers) -> ()
        "wsc.tma_load"(%b, %n0, %k0, %sb, %stage, %full0) : (memref<?x?xf16>, index, index, memref<4x128x64xf16, 3>, index, !wsc.mbarriers) -> ()
      }
      "wsc.mbarrier_wait"(%empty1, %stage, %phase) : (!wsc.mbarriers, index, i1) -> ()
      %elected1 = "wsc.elect"() : () -> i1
      scf.if %elected1 {
        "wsc.mbarrier_arrive_expect_tx"(%full1, %stage) {tx_bytes = 16384 : i32} : (!wsc.mbarriers, index) -> ()
        "wsc.tma_load"(%d, %m0, %k0, %sd, %stage, %full1) : (memref<?x?xf16>, index, index, memref<4x64x64xf16, 3>, index, !wsc.mbarriers) -> ()
        "wsc.tma_load"(%e, %n0, %k0, %se, %stage, %full1) : (memref<?x?xf16>, index, index, memref<4x64x64xf16, 3>, index, !wsc.mbarriers) -> ()
      }
      %next_stage, %next_phase = "wsc.ring_advance"(%stage, %phase) {num_stages = 4 : i32} : (index, i1) -> (index, i1)
      scf.yield %next_stage, %next_phase : index, i1
    }
    %ds:2 = scf.for %i = %c0 to %c4 step %c1 iter_args(%stage = %ps#0, %phase = %ps#1) -> (index, i1) {
      %position = arith.addi %i, %k_tiles : index
      %filled = arith.cmpi uge, %position, %c4 : index
      scf.if %filled {
        "wsc.mbarrier_wait"(%empty0, %stage, %phase) : (!wsc.mbarriers, index, i1) -> ()
        "wsc.mbarrier_wait"(%empty1, %stage, %phase) : (!wsc.mbarriers, index, i1) -> ()
      }
      %next_stage, %next_phase = "wsc.ring_advance"(%stage, %phase) {num_stages = 4 : i32} : (index, i1) -> (index, i1)
      scf.yield %next_stage, %next_phase : index, i1
    }
  }
  return
}

// -----

// Two consumer groups (--warp-specialize's, two groups and a producer
// warpgroup); the first releases each stage right after its full wait, before
// its WGMMA reads it. Caught only when the second group runs first and the
// producer refills the stage the moment both have arrived.
func.func @first_group_releases_before_it_reads(%arg0: memref<?x?xf16>, %arg1: memref<?x?xf16>, %arg2: memref<?x?xf32>) attributes {wsc.num_threads = 384 : i32} {
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
  %3 = "wsc.alloc_shared"() : () -> memref<4x128x64xf16, 3>
  %4 = "wsc.alloc_shared"() : () -> memref<4x128x64xf16, 3>
  %5 = "wsc.mbarrier_alloc"() {arrival_count = 1 : i32, num_barriers = 4 : i32} : () -> !wsc.mbarriers
  %6 = "wsc.mbarrier_alloc"() {arrival_count = 256 : i32, num_barriers = 4 : i32} : () -> !wsc.mbarriers
  "wsc.sync"() : () -> ()
  %false = arith.constant false
  %c0_0 = arith.constant 0 : index
  %7 = "wsc.role"() {max_registers = 232 : i32, num_threads = 128 : i32, role = "consumer", thread_begin = 0 : i32} : () -> i1
  scf.if %7 {
    %10 = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 64, 128>, f32>
    %false_1 = arith.constant false
    %11:2 = scf.for %arg3 = %c0 to %2 step %c1 iter_args(%arg4 = %c0_0, %arg5 = %false_1) -> (index, i1) {
      "wsc.mbarrier_wait"(%5, %arg4, %arg5) : (!wsc.mbarriers, index, i1) -> ()
      // Released before this group's WGMMA reads the stage.
      "wsc.mbarrier_arrive"(%6, %arg4) : (!wsc.mbarriers, index) -> ()
      "wsc.wgmma_fence"() : () -> ()
      "wsc.wgmma"(%3, %4, %arg4, %10) {a_row = 0 : i32, b_layout = "nk"} : (memref<4x128x64xf16, 3>, memref<4x128x64xf16, 3>, index, !wsc.acc<array<i64: 64, 128>, f32>) -> ()
      "wsc.wgmma_commit_group"() : () -> ()
      "wsc.wgmma_wait_group"() {pending = 0 : i32} : () -> ()
      %12:2 = "wsc.ring_advance"(%arg4, %arg5) {num_stages = 4 : i32} : (index, i1) -> (index, i1)
      scf.yield %12#0, %12#1 : index, i1
    }
    "wsc.store"(%10, %arg2, %0, %1) : (!wsc.acc<array<i64: 64, 128>, f32>, memref<?x?xf32>, index, index) -> ()
  }
  %8 = "wsc.role"() {max_registers = 232 : i32, num_threads = 128 : i32, role = "consumer", thread_begin = 128 : i32} : () -> i1
  scf.if %8 {
    %10 = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 64, 128>, f32>
    %false_1 = arith.constant false
    %11:2 = scf.for %arg3 = %c0 to %2 step %c1 iter_args(%arg4 = %c0_0, %arg5 = %false_1) -> (index, i1) {
      "wsc.mbarrier_wait"(%5, %arg4, %arg5) : (!wsc.mbarriers, index, i1) -> ()
      "wsc.wgmma_fence"() : () -> ()
      "wsc.wgmma"(%3, %4, %arg4, %10) {a_row = 64 : i32, b_layout = "nk"} : (memref<4x128x64xf16, 3>, memref<4x128x64xf16, 3>, index, !wsc.acc<array<i64: 64, 128>, f32>) -> ()
      "wsc.wgmma_commit_group"() : () -> ()
      "wsc.wgmma_wait_group"() {pending = 0 : i32} : () -> ()
      "wsc.mbarrier_arrive"(%6, %arg4) : (!wsc.mbarriers, index) -> ()
      %13:2 = "wsc.ring_advance"(%arg4, %arg5) {num_stages = 4 : i32} : (index, i1) -> (index, i1)
      scf.yield %13#0, %13#1 : index, i1
    }
    %c64_2 = arith.constant 64 : index
    %12 = arith.addi %0, %c64_2 : index
    "wsc.store"(%10, %arg2, %12, %1) : (!wsc.acc<array<i64: 64, 128>, f32>, memref<?x?xf32>, index, index) -> ()
  }
  %9 = "wsc.role"() {max_registers = 40 : i32, num_threads = 128 : i32, role = "producer", thread_begin = 256 : i32} : () -> i1
  scf.if %9 {
    %true = arith.constant true
    %10:2 = scf.for %arg3 = %c0 to %2 step %c1 iter_args(%arg4 = %c0_0, %arg5 = %true) -> (index, i1) {
      "wsc.mbarrier_wait"(%6, %arg4, %arg5) : (!wsc.mbarriers, index, i1) -> ()
      %12 = arith.muli %arg3, %c64 : index
      %13 = "wsc.elect"() : () -> i1
      scf.if %13 {
        "wsc.mbarrier_arrive_expect_tx"(%5, %arg4) {tx_bytes = 32768 : i32} : (!wsc.mbarriers, index) -> ()
        // expected-error @below {{A stage 0 overwritten before the consumer role [0, 128) read its previous copy (lost tile) (k_tiles = 5, num_stages = 4)}}
        "wsc.tma_load"(%arg0, %0, %12, %3, %arg4, %5) : (memref<?x?xf16>, index, index, memref<4x128x64xf16, 3>, index, !wsc.mbarriers) -> ()
        "wsc.tma_load"(%arg1, %1, %12, %4, %arg4, %5) : (memref<?x?xf16>, index, index, memref<4x128x64xf16, 3>, index, !wsc.mbarriers) -> ()
      }
      %14:2 = "wsc.ring_advance"(%arg4, %arg5) {num_stages = 4 : i32} : (index, i1) -> (index, i1)
      scf.yield %14#0, %14#1 : index, i1
    }
    %c4_1 = arith.constant 4 : index
    %c0_2 = arith.constant 0 : index
    %c1_3 = arith.constant 1 : index
    %11:2 = scf.for %arg3 = %c0_2 to %c4_1 step %c1_3 iter_args(%arg4 = %10#0, %arg5 = %10#1) -> (index, i1) {
      %12 = arith.addi %arg3, %2 : index
      %13 = arith.cmpi uge, %12, %c4_1 : index
      scf.if %13 {
        "wsc.mbarrier_wait"(%6, %arg4, %arg5) : (!wsc.mbarriers, index, i1) -> ()
      }
      %14:2 = "wsc.ring_advance"(%arg4, %arg5) {num_stages = 4 : i32} : (index, i1) -> (index, i1)
      scf.yield %14#0, %14#1 : index, i1
    }
  }
  return
}

// -----

// An elected thread's release behind arithmetic on the elect (the seed's V3
// kernel, examples/matmul_v3.mlir, with its release so guarded): one thread
// arrives on a barrier that counts 128, a deadlock the simulator, which
// follows an elected thread only into an scf.if on wsc.elect itself, would
// miss by running the branch with every thread.
func.func @elect_through_arithmetic(%a: memref<?x?xf16>, %b: memref<?x?xf16>, %c: memref<?x?xf32>)
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
  %empty = "wsc.mbarrier_alloc"() {arrival_count = 128 : i32, num_barriers = 4 : i32} : () -> !wsc.mbarriers
  "wsc.sync"() : () -> ()
  %is_consumer = "wsc.role"() {role = "consumer", thread_begin = 0 : i32, num_threads = 128 : i32, max_registers = 232 : i32} : () -> i1
  scf.if %is_consumer {
    %acc = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 128, 128>, f32>
    %cs:2 = scf.for %kt = %c0 to %k_tiles step %c1 iter_args(%stage = %c0, %phase = %false) -> (index, i1) {
      "wsc.mbarrier_wait"(%full, %stage, %phase) : (!wsc.mbarriers, index, i1) -> ()
      "wsc.wgmma_fence"() : () -> ()
      "wsc.wgmma"(%sa, %sb, %stage, %acc) {a_row = 0 : i32, b_layout = "nk"} : (memref<4x128x64xf16, 3>, memref<4x128x64xf16, 3>, index, !wsc.acc<array<i64: 128, 128>, f32>) -> ()
      "wsc.wgmma_commit_group"() : () -> ()
      "wsc.wgmma_wait_group"() {pending = 0 : i32} : () -> ()
      %e = "wsc.elect"() : () -> i1
      // expected-error @below {{verify-pipeline cannot interpret 'arith.andi' on the value of wsc.elect: branch on it directly (scf.if)}}
      %e2 = arith.andi %e, %true : i1
      scf.if %e2 {
        "wsc.mbarrier_arrive"(%empty, %stage) : (!wsc.mbarriers, index) -> ()
      }
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
        "wsc.mbarrier_arrive_expect_tx"(%full, %stage) {tx_bytes = 32768 : i32} : (!wsc.mbarriers, index) -> ()
        "wsc.tma_load"(%a, %m0, %k0, %sa, %stage, %full) : (memref<?x?xf16>, index, index, memref<4x128x64xf16, 3>, index, !wsc.mbarriers) -> ()
        "wsc.tma_load"(%b, %n0, %k0, %sb, %stage, %full) : (memref<?x?xf16>, index, index, memref<4x128x64xf16, 3>, index, !wsc.mbarriers) -> ()
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

// The consumer's full wait made by its elected thread only (the seed's V3
// kernel, examples/matmul_v3.mlir, so changed): the other threads' WGMMA
// reads the stage without waiting for its copies.
func.func @full_wait_by_the_elected_thread_only(%a: memref<?x?xf16>, %b: memref<?x?xf16>, %c: memref<?x?xf32>)
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
  %empty = "wsc.mbarrier_alloc"() {arrival_count = 128 : i32, num_barriers = 4 : i32} : () -> !wsc.mbarriers
  "wsc.sync"() : () -> ()
  %is_consumer = "wsc.role"() {role = "consumer", thread_begin = 0 : i32, num_threads = 128 : i32, max_registers = 232 : i32} : () -> i1
  scf.if %is_consumer {
    %acc = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 128, 128>, f32>
    %cs:2 = scf.for %kt = %c0 to %k_tiles step %c1 iter_args(%stage = %c0, %phase = %false) -> (index, i1) {
      %e = "wsc.elect"() : () -> i1
      scf.if %e {
        // expected-error @below {{only the elected thread waits here for the copies that fill a stage, but every thread of its role reads the stage (its WGMMA or wsc.load_shared): wait with every thread, outside the wsc.elect}}
        "wsc.mbarrier_wait"(%full, %stage, %phase) : (!wsc.mbarriers, index, i1) -> ()
      }
      "wsc.wgmma_fence"() : () -> ()
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
        "wsc.mbarrier_arrive_expect_tx"(%full, %stage) {tx_bytes = 32768 : i32} : (!wsc.mbarriers, index) -> ()
        "wsc.tma_load"(%a, %m0, %k0, %sa, %stage, %full) : (memref<?x?xf16>, index, index, memref<4x128x64xf16, 3>, index, !wsc.mbarriers) -> ()
        "wsc.tma_load"(%b, %n0, %k0, %sb, %stage, %full) : (memref<?x?xf16>, index, index, memref<4x128x64xf16, 3>, index, !wsc.mbarriers) -> ()
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

// The producer counts whole K tiles (divui) where the consumer counts
// them rounded up (ceildivui): they agree unless the last K tile is ragged,
// where the consumer waits for a tile the producer never loads.
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
  %empty = "wsc.mbarrier_alloc"() {arrival_count = 128 : i32, num_barriers = 4 : i32} : () -> !wsc.mbarriers
  "wsc.sync"() : () -> ()
  %is_consumer = "wsc.role"() {role = "consumer", thread_begin = 0 : i32, num_threads = 128 : i32, max_registers = 232 : i32} : () -> i1
  scf.if %is_consumer {
    %acc = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 128, 128>, f32>
    %cs:2 = scf.for %kt = %c0 to %k_tiles step %c1 iter_args(%stage = %c0, %phase = %false) -> (index, i1) {
      // expected-note @below {{the consumer role [0, 128) is blocked here, waiting for parity 0 on full[0] (full[0] is in phase 0 with 0 of 1 arrivals)}}
      "wsc.mbarrier_wait"(%full, %stage, %phase) : (!wsc.mbarriers, index, i1) -> ()
      "wsc.wgmma_fence"() : () -> ()
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
    %k_whole = arith.divui %k, %c64 : index
    %ps:2 = scf.for %kt = %c0 to %k_whole step %c1 iter_args(%stage = %c0, %phase = %true) -> (index, i1) {
      "wsc.mbarrier_wait"(%empty, %stage, %phase) : (!wsc.mbarriers, index, i1) -> ()
      %k0 = arith.muli %kt, %c64 : index
      %elected = "wsc.elect"() : () -> i1
      scf.if %elected {
        "wsc.mbarrier_arrive_expect_tx"(%full, %stage) {tx_bytes = 32768 : i32} : (!wsc.mbarriers, index) -> ()
        "wsc.tma_load"(%a, %m0, %k0, %sa, %stage, %full) : (memref<?x?xf16>, index, index, memref<4x128x64xf16, 3>, index, !wsc.mbarriers) -> ()
        "wsc.tma_load"(%b, %n0, %k0, %sb, %stage, %full) : (memref<?x?xf16>, index, index, memref<4x128x64xf16, 3>, index, !wsc.mbarriers) -> ()
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
        // expected-error @below {{deadlock: this wait for parity 1 on empty[3] never returns: every thread group is blocked and no copy is in flight (empty[3] is in phase 0 with 0 of 128 arrivals) (k_tiles = 1, every dim's last tile ragged, num_stages = 4)}}
        "wsc.mbarrier_wait"(%empty, %stage, %phase) : (!wsc.mbarriers, index, i1) -> ()
      }
      %next_stage, %next_phase = "wsc.ring_advance"(%stage, %phase) {num_stages = 4 : i32} : (index, i1) -> (index, i1)
      scf.yield %next_stage, %next_phase : index, i1
    }
  }
  return
}

// -----

// A persistent kernel whose consumer counts M tiles as floor where the
// producer counts them as ceiling: they agree unless the last M tile is
// ragged, where the producer fills stages of a tile no consumer reads.
module {
  func.func @matmul(%arg0: memref<?x?xf16>, %arg1: memref<?x?xf16>, %arg2: memref<?x?xf32>) attributes {wsc.num_threads = 160 : i32} {
    %c1 = arith.constant 1 : index
    %dim = memref.dim %arg0, %c1 : memref<?x?xf16>
    %c64 = arith.constant 64 : index
    %0 = arith.ceildivui %dim, %c64 : index
    %1 = "wsc.alloc_shared"() : () -> memref<2x128x64xf16, 3>
    %2 = "wsc.alloc_shared"() : () -> memref<2x64x64xf16, 3>
    %3 = "wsc.mbarrier_alloc"() {arrival_count = 1 : i32, num_barriers = 2 : i32} : () -> !wsc.mbarriers
    %4 = "wsc.mbarrier_alloc"() {arrival_count = 128 : i32, num_barriers = 2 : i32} : () -> !wsc.mbarriers
    "wsc.sync"() : () -> ()
    %c0 = arith.constant 0 : index
    %dim_0 = memref.dim %arg0, %c0 : memref<?x?xf16>
    %c128 = arith.constant 128 : index
    %5 = arith.ceildivui %dim_0, %c128 : index
    %dim_1 = memref.dim %arg2, %c1 : memref<?x?xf32>
    %6 = arith.ceildivui %dim_1, %c64 : index
    %block_id_x = gpu.block_id  x
    %7 = arith.muli %5, %6 : index
    %grid_dim_x = gpu.grid_dim  x
    %false = arith.constant false
    %c0_2 = arith.constant 0 : index
    %8 = "wsc.role"() {num_threads = 128 : i32, role = "consumer", thread_begin = 0 : i32} : () -> i1
    scf.if %8 {
      %false_3 = arith.constant false
      %fm = arith.divui %dim_0, %c128 : index
      %ft = arith.muli %fm, %6 : index
      %10:2 = scf.for %arg3 = %block_id_x to %ft step %grid_dim_x iter_args(%arg4 = %c0_2, %arg5 = %false_3) -> (index, i1) {
        %11 = arith.remui %arg3, %5 : index
        %12 = arith.divui %arg3, %5 : index
        %13 = arith.muli %11, %c128 : index
        %14 = arith.muli %12, %c64 : index
        %15 = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 128, 64>, f32>
        %16:2 = scf.for %arg6 = %c0 to %0 step %c1 iter_args(%arg7 = %arg4, %arg8 = %arg5) -> (index, i1) {
          "wsc.mbarrier_wait"(%3, %arg7, %arg8) : (!wsc.mbarriers, index, i1) -> ()
          "wsc.wgmma_fence"() : () -> ()
          "wsc.wgmma"(%1, %2, %arg7, %15) {a_row = 0 : i32, b_layout = "nk"} : (memref<2x128x64xf16, 3>, memref<2x64x64xf16, 3>, index, !wsc.acc<array<i64: 128, 64>, f32>) -> ()
          "wsc.wgmma_commit_group"() : () -> ()
          "wsc.wgmma_wait_group"() {pending = 0 : i32} : () -> ()
          "wsc.mbarrier_arrive"(%4, %arg7) : (!wsc.mbarriers, index) -> ()
          %17:2 = "wsc.ring_advance"(%arg7, %arg8) {num_stages = 2 : i32} : (index, i1) -> (index, i1)
          scf.yield %17#0, %17#1 : index, i1
        }
        "wsc.store"(%15, %arg2, %13, %14) : (!wsc.acc<array<i64: 128, 64>, f32>, memref<?x?xf32>, index, index) -> ()
        scf.yield %16#0, %16#1 : index, i1
      }
    }
    %9 = "wsc.role"() {num_threads = 32 : i32, role = "producer", thread_begin = 128 : i32} : () -> i1
    scf.if %9 {
      %c0_3 = arith.constant 0 : index
      %true = arith.constant true
      %10:3 = scf.for %arg3 = %block_id_x to %7 step %grid_dim_x iter_args(%arg4 = %c0_2, %arg5 = %true, %arg6 = %c0_3) -> (index, i1, index) {
        %12 = arith.remui %arg3, %5 : index
        %13 = arith.divui %arg3, %5 : index
        %14 = arith.muli %12, %c128 : index
        %15 = arith.muli %13, %c64 : index
        %16:2 = scf.for %arg7 = %c0 to %0 step %c1 iter_args(%arg8 = %arg4, %arg9 = %arg5) -> (index, i1) {
          "wsc.mbarrier_wait"(%4, %arg8, %arg9) : (!wsc.mbarriers, index, i1) -> ()
          %18 = arith.muli %arg7, %c64 : index
          %19 = "wsc.elect"() : () -> i1
          scf.if %19 {
            "wsc.mbarrier_arrive_expect_tx"(%3, %arg8) {tx_bytes = 24576 : i32} : (!wsc.mbarriers, index) -> ()
            "wsc.tma_load"(%arg0, %14, %18, %1, %arg8, %3) : (memref<?x?xf16>, index, index, memref<2x128x64xf16, 3>, index, !wsc.mbarriers) -> ()
            "wsc.tma_load"(%arg1, %15, %18, %2, %arg8, %3) : (memref<?x?xf16>, index, index, memref<2x64x64xf16, 3>, index, !wsc.mbarriers) -> ()
          }
          %20:2 = "wsc.ring_advance"(%arg8, %arg9) {num_stages = 2 : i32} : (index, i1) -> (index, i1)
          scf.yield %20#0, %20#1 : index, i1
        }
        %17 = arith.addi %arg6, %0 : index
        scf.yield %16#0, %16#1, %17 : index, i1, index
      }
      %c2 = arith.constant 2 : index
      %c0_4 = arith.constant 0 : index
      %c1_5 = arith.constant 1 : index
      %11:2 = scf.for %arg3 = %c0_4 to %c2 step %c1_5 iter_args(%arg4 = %10#0, %arg5 = %10#1) -> (index, i1) {
        %12 = arith.addi %arg3, %10#2 : index
        %13 = arith.cmpi uge, %12, %c2 : index
        scf.if %13 {
          // expected-error @below {{deadlock: this wait for parity 0 on empty[0] never returns: every thread group is blocked and no copy is in flight (empty[0] is in phase 0 with 0 of 128 arrivals) (k_tiles = 1, every dim's last tile ragged, num_stages = 2)}}
          "wsc.mbarrier_wait"(%4, %arg4, %arg5) : (!wsc.mbarriers, index, i1) -> ()
        }
        %14:2 = "wsc.ring_advance"(%arg4, %arg5) {num_stages = 2 : i32} : (index, i1) -> (index, i1)
        scf.yield %14#0, %14#1 : index, i1
      }
    }
    return
  }
}

// -----

// Two products read one A stage (warp-specialize-shared-operand.mlir) and
// the consumer releases the stage between them: the second WGMMA reads A and
// W3 after the producer may have refilled the stage.
module {
  func.func @gated_products(%arg0: memref<?x?xf16>, %arg1: memref<?x?xf16>, %arg2: memref<?x?xf16>, %arg3: memref<?x?xf32>, %arg4: memref<?x?xf32>) attributes {wsc.num_threads = 160 : i32} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c64 = arith.constant 64 : index
    %c128 = arith.constant 128 : index
    %false = arith.constant false
    %block_id_x = gpu.block_id  x
    %block_id_y = gpu.block_id  y
    %0 = arith.muli %block_id_x, %c128 : index
    %1 = arith.muli %block_id_y, %c128 : index
    %dim = memref.dim %arg0, %c1 : memref<?x?xf16>
    %2 = arith.ceildivui %dim, %c64 : index
    %3 = "wsc.alloc_shared"() : () -> memref<3x128x64xf16, 3>
    %4 = "wsc.alloc_shared"() : () -> memref<3x128x64xf16, 3>
    %5 = "wsc.alloc_shared"() : () -> memref<3x128x64xf16, 3>
    %6 = "wsc.mbarrier_alloc"() {arrival_count = 1 : i32, num_barriers = 3 : i32} : () -> !wsc.mbarriers
    %7 = "wsc.mbarrier_alloc"() {arrival_count = 128 : i32, num_barriers = 3 : i32} : () -> !wsc.mbarriers
    "wsc.sync"() : () -> ()
    %c0_0 = arith.constant 0 : index
    %8 = "wsc.role"() {num_threads = 128 : i32, role = "consumer", thread_begin = 0 : i32} : () -> i1
    scf.if %8 {
      %10 = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 128, 128>, f32>
      %11 = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 128, 128>, f32>
      %false_1 = arith.constant false
      %12:2 = scf.for %arg5 = %c0 to %2 step %c1 iter_args(%arg6 = %c0_0, %arg7 = %false_1) -> (index, i1) {
        "wsc.mbarrier_wait"(%6, %arg6, %arg7) : (!wsc.mbarriers, index, i1) -> ()
        "wsc.wgmma_fence"() : () -> ()
        "wsc.wgmma"(%3, %4, %arg6, %10) {a_row = 0 : i32, b_layout = "nk"} : (memref<3x128x64xf16, 3>, memref<3x128x64xf16, 3>, index, !wsc.acc<array<i64: 128, 128>, f32>) -> ()
        "wsc.wgmma_commit_group"() : () -> ()
        "wsc.wgmma_wait_group"() {pending = 0 : i32} : () -> ()
        "wsc.mbarrier_arrive"(%7, %arg6) : (!wsc.mbarriers, index) -> ()
        "wsc.wgmma_fence"() : () -> ()
        "wsc.wgmma"(%3, %5, %arg6, %11) {a_row = 0 : i32, b_layout = "nk"} : (memref<3x128x64xf16, 3>, memref<3x128x64xf16, 3>, index, !wsc.acc<array<i64: 128, 128>, f32>) -> ()
        "wsc.wgmma_commit_group"() : () -> ()
        "wsc.wgmma_wait_group"() {pending = 0 : i32} : () -> ()
        %13:2 = "wsc.ring_advance"(%arg6, %arg7) {num_stages = 3 : i32} : (index, i1) -> (index, i1)
        scf.yield %13#0, %13#1 : index, i1
      }
      "wsc.store"(%10, %arg3, %0, %1) : (!wsc.acc<array<i64: 128, 128>, f32>, memref<?x?xf32>, index, index) -> ()
      "wsc.store"(%11, %arg4, %0, %1) : (!wsc.acc<array<i64: 128, 128>, f32>, memref<?x?xf32>, index, index) -> ()
    }
    %9 = "wsc.role"() {num_threads = 32 : i32, role = "producer", thread_begin = 128 : i32} : () -> i1
    scf.if %9 {
      %true = arith.constant true
      %10:2 = scf.for %arg5 = %c0 to %2 step %c1 iter_args(%arg6 = %c0_0, %arg7 = %true) -> (index, i1) {
        "wsc.mbarrier_wait"(%7, %arg6, %arg7) : (!wsc.mbarriers, index, i1) -> ()
        %12 = arith.muli %arg5, %c64 : index
        %13 = "wsc.elect"() : () -> i1
        scf.if %13 {
          "wsc.mbarrier_arrive_expect_tx"(%6, %arg6) {tx_bytes = 49152 : i32} : (!wsc.mbarriers, index) -> ()
          "wsc.tma_load"(%arg0, %0, %12, %3, %arg6, %6) : (memref<?x?xf16>, index, index, memref<3x128x64xf16, 3>, index, !wsc.mbarriers) -> ()
          "wsc.tma_load"(%arg1, %1, %12, %4, %arg6, %6) : (memref<?x?xf16>, index, index, memref<3x128x64xf16, 3>, index, !wsc.mbarriers) -> ()
          // expected-error @below {{B stage 0 overwritten before the consumer role [0, 128) read its previous copy (lost tile) (k_tiles = 4, num_stages = 3)}}
          "wsc.tma_load"(%arg2, %1, %12, %5, %arg6, %6) : (memref<?x?xf16>, index, index, memref<3x128x64xf16, 3>, index, !wsc.mbarriers) -> ()
        }
        %14:2 = "wsc.ring_advance"(%arg6, %arg7) {num_stages = 3 : i32} : (index, i1) -> (index, i1)
        scf.yield %14#0, %14#1 : index, i1
      }
      %c3 = arith.constant 3 : index
      %c0_1 = arith.constant 0 : index
      %c1_2 = arith.constant 1 : index
      %11:2 = scf.for %arg5 = %c0_1 to %c3 step %c1_2 iter_args(%arg6 = %10#0, %arg7 = %10#1) -> (index, i1) {
        %12 = arith.addi %arg5, %2 : index
        %13 = arith.cmpi uge, %12, %c3 : index
        scf.if %13 {
          "wsc.mbarrier_wait"(%7, %arg6, %arg7) : (!wsc.mbarriers, index, i1) -> ()
        }
        %14:2 = "wsc.ring_advance"(%arg6, %arg7) {num_stages = 3 : i32} : (index, i1) -> (index, i1)
        scf.yield %14#0, %14#1 : index, i1
      }
    }
    return
  }
}

// -----

// Two products read one A stage (warp-specialize-shared-operand.mlir) from a
// one-stage ring whose wait runs in the first K tile only: the second K
// tile's products read the stage while its refill is in flight. Reads in one
// trip share a copy; a trip later they need a wait of their own.
func.func @gated_products_waiting_once(%a: memref<?x?xf16>, %w1: memref<?x?xf16>, %w3: memref<?x?xf16>,
                          %h1: memref<?x?xf32>, %h3: memref<?x?xf32>)
    attributes {wsc.num_threads = 128 : i32} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %c128 = arith.constant 128 : index
  %false = arith.constant false
  %bx = gpu.block_id x
  %by = gpu.block_id y
  %m0 = arith.muli %bx, %c128 : index
  %n0 = arith.muli %by, %c128 : index
  %k = memref.dim %a, %c1 : memref<?x?xf16>
  %k_tiles = arith.ceildivui %k, %c64 : index
  %sa = "wsc.alloc_shared"() : () -> memref<1x128x64xf16, 3>
  %sw1 = "wsc.alloc_shared"() : () -> memref<1x128x64xf16, 3>
  %sw3 = "wsc.alloc_shared"() : () -> memref<1x128x64xf16, 3>
  %full = "wsc.mbarrier_alloc"() {arrival_count = 1 : i32, num_barriers = 1 : i32} : () -> !wsc.mbarriers
  "wsc.sync"() : () -> ()
  %gate = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 128, 128>, f32>
  %up = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 128, 128>, f32>
  %stage_n, %phase_n = scf.for %kt = %c0 to %k_tiles step %c1
      iter_args(%stage = %c0, %phase = %false) -> (index, i1) {
    %k0 = arith.muli %kt, %c64 : index
    %elected = "wsc.elect"() : () -> i1
    scf.if %elected {
      "wsc.mbarrier_arrive_expect_tx"(%full, %stage) {tx_bytes = 49152 : i32} : (!wsc.mbarriers, index) -> ()
      "wsc.tma_load"(%a, %m0, %k0, %sa, %stage, %full) : (memref<?x?xf16>, index, index, memref<1x128x64xf16, 3>, index, !wsc.mbarriers) -> ()
      "wsc.tma_load"(%w1, %n0, %k0, %sw1, %stage, %full) : (memref<?x?xf16>, index, index, memref<1x128x64xf16, 3>, index, !wsc.mbarriers) -> ()
      "wsc.tma_load"(%w3, %n0, %k0, %sw3, %stage, %full) : (memref<?x?xf16>, index, index, memref<1x128x64xf16, 3>, index, !wsc.mbarriers) -> ()
    }
    %first = arith.cmpi eq, %kt, %c0 : index
    scf.if %first {
      "wsc.mbarrier_wait"(%full, %stage, %phase) : (!wsc.mbarriers, index, i1) -> ()
    }
    "wsc.wgmma_fence"() : () -> ()
    // expected-error @below {{wgmma reads A stage 0 before its data landed (copy #2 of the stage is still in flight) (k_tiles = 2, num_stages = 1)}}
    "wsc.wgmma"(%sa, %sw1, %stage, %gate) {a_row = 0 : i32, b_layout = "nk"} : (memref<1x128x64xf16, 3>, memref<1x128x64xf16, 3>, index, !wsc.acc<array<i64: 128, 128>, f32>) -> ()
    "wsc.wgmma"(%sa, %sw3, %stage, %up) {a_row = 0 : i32, b_layout = "nk"} : (memref<1x128x64xf16, 3>, memref<1x128x64xf16, 3>, index, !wsc.acc<array<i64: 128, 128>, f32>) -> ()
    "wsc.wgmma_commit_group"() : () -> ()
    "wsc.wgmma_wait_group"() {pending = 0 : i32} : () -> ()
    "wsc.sync"() : () -> ()
    %next_stage, %next_phase = "wsc.ring_advance"(%stage, %phase) {num_stages = 1 : i32} : (index, i1) -> (index, i1)
    scf.yield %next_stage, %next_phase : index, i1
  }
  "wsc.store"(%gate, %h1, %m0, %n0) : (!wsc.acc<array<i64: 128, 128>, f32>, memref<?x?xf32>, index, index) -> ()
  "wsc.store"(%up, %h3, %m0, %n0) : (!wsc.acc<array<i64: 128, 128>, f32>, memref<?x?xf32>, index, index) -> ()
  return
}
