// Kernels --convert-wsc-to-nvvm rejects, each with a located error.
// RUN: wsc-opt --convert-wsc-to-nvvm --split-input-file --verify-diagnostics %s

// expected-error @below {{'func.func' op argument #0 is written both by TMA and by wsc.store or wsc.coalesced_store, which is not supported (one tensor map or pointer per tensor)}}
func.func @written_twice(%c: memref<?x?xf16>) attributes {wsc.num_threads = 128 : i32} {
  %c0 = arith.constant 0 : index
  %acc = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 64, 64>, f16>
  "wsc.store"(%acc, %c, %c0, %c0) : (!wsc.acc<array<i64: 64, 64>, f16>, memref<?x?xf16>, index, index) -> ()
  %s = "wsc.alloc_shared"() : () -> memref<1x64x64xf16, 3>
  %e = "wsc.elect"() : () -> i1
  scf.if %e {
    "wsc.tma_store"(%s, %c0, %c, %c0, %c0) : (memref<1x64x64xf16, 3>, index, memref<?x?xf16>, index, index) -> ()
  }
  return
}

// -----

// expected-error @below {{'func.func' op argument #0 is read both by TMA and by wsc.tile_load or wsc.tile_broadcast, which is not supported (one tensor map or pointer per tensor)}}
func.func @read_twice(%a: memref<?x?xf16>, %c: memref<?x?xf32>) attributes {wsc.num_threads = 128 : i32} {
  %c0 = arith.constant 0 : index
  %sa = "wsc.alloc_shared"() : () -> memref<1x64x64xf16, 3>
  %full = "wsc.mbarrier_alloc"() {arrival_count = 1 : i32, num_barriers = 1 : i32} : () -> !wsc.mbarriers
  "wsc.sync"() : () -> ()
  %e = "wsc.elect"() : () -> i1
  scf.if %e {
    "wsc.mbarrier_arrive_expect_tx"(%full, %c0) {tx_bytes = 8192 : i32} : (!wsc.mbarriers, index) -> ()
    "wsc.tma_load"(%a, %c0, %c0, %sa, %c0, %full) : (memref<?x?xf16>, index, index, memref<1x64x64xf16, 3>, index, !wsc.mbarriers) -> ()
  }
  %r = "wsc.tile_load"(%a, %c0, %c0) : (memref<?x?xf16>, index, index) -> !wsc.acc<array<i64: 64, 64>, f32>
  "wsc.store"(%r, %c, %c0, %c0) : (!wsc.acc<array<i64: 64, 64>, f32>, memref<?x?xf32>, index, index) -> ()
  return
}

// -----

// expected-error @below {{'func.func' op needs 263296 bytes of shared memory (262272 for buffers and barriers + 1024 alignment padding), more than the 232448 bytes (227 KB) a block may use on sm_90}}
func.func @too_much_shared_memory(%a: memref<?x?xf16>) attributes {wsc.num_threads = 128 : i32} {
  // expected-note @below {{this ring buffer takes 131072 bytes}}
  %sa = "wsc.alloc_shared"() : () -> memref<8x128x64xf16, 3>
  // expected-note @below {{this ring buffer takes 131072 bytes}}
  %sb = "wsc.alloc_shared"() : () -> memref<8x128x64xf16, 3>
  %full = "wsc.mbarrier_alloc"() {arrival_count = 1 : i32, num_barriers = 8 : i32} : () -> !wsc.mbarriers
  %empty = "wsc.mbarrier_alloc"() {arrival_count = 128 : i32, num_barriers = 8 : i32} : () -> !wsc.mbarriers
  "wsc.sync"() : () -> ()
  return
}

// -----

// Two consumer warpgroups raise their budget to 232, but the only role that
// gives registers back is a lone warp (threads 256..287): its warpgroup is not
// all in the block, so setmaxnreg.inc would wait forever.
func.func @register_budget(%a: memref<?x?xf16>) attributes {wsc.num_threads = 288 : i32} {
  // expected-error @below {{'wsc.role' op max_registers = 232 cannot be met: a block of 288 threads starts with 168 registers per thread, the roles' setmaxnreg.inc need 16384 more and setmaxnreg.dec in complete warpgroups gives back 0, so the inc would wait forever (lower the budgets, or make the decreasing role a whole warpgroup)}}
  %c0 = "wsc.role"() {role = "consumer0", thread_begin = 0 : i32, num_threads = 128 : i32, max_registers = 232 : i32} : () -> i1
  scf.if %c0 {
  }
  %c1 = "wsc.role"() {role = "consumer1", thread_begin = 128 : i32, num_threads = 128 : i32, max_registers = 232 : i32} : () -> i1
  scf.if %c1 {
  }
  %p = "wsc.role"() {role = "producer", thread_begin = 256 : i32, num_threads = 32 : i32, max_registers = 40 : i32} : () -> i1
  scf.if %p {
  }
  return
}

// -----

func.func @partial_warpgroup_budget() attributes {wsc.num_threads = 128 : i32} {
  // expected-error @below {{'wsc.role' op has max_registers but setmaxnreg is warpgroup-wide: the role covers threads [0, 64) and warpgroup 0 has threads [0, 128) in the block}}
  %r = "wsc.role"() {role = "half", thread_begin = 0 : i32, num_threads = 64 : i32, max_registers = 40 : i32} : () -> i1
  scf.if %r {
  }
  return
}

// -----

func.func @unsupported_op(%a: memref<?x?xf16>) attributes {wsc.num_threads = 128 : i32} {
  %c0 = arith.constant 0 : index
  // expected-error @below {{'memref.load' op cannot be lowered by --convert-wsc-to-nvvm (supported: wsc, arith, scf, index, memref.dim of kernel arguments, gpu block/thread ids)}}
  %x = memref.load %a[%c0, %c0] : memref<?x?xf16>
  return
}

// -----

func.func @barriers_never_published() attributes {wsc.num_threads = 128 : i32} {
  // expected-error @below {{'wsc.mbarrier_alloc' op must be followed by a block-wide wsc.sync at the kernel's top level (other threads may not use the barriers before they are initialised)}}
  %full = "wsc.mbarrier_alloc"() {arrival_count = 1 : i32, num_barriers = 2 : i32} : () -> !wsc.mbarriers
  return
}

// -----

func.func @barriers_in_a_branch(%p: memref<?x?xf16>) attributes {wsc.num_threads = 128 : i32} {
  %r = "wsc.role"() {role = "all", thread_begin = 0 : i32, num_threads = 128 : i32} : () -> i1
  scf.if %r {
    // expected-error @below {{'wsc.mbarrier_alloc' op must be at the top level of the kernel, where every thread runs it}}
    %full = "wsc.mbarrier_alloc"() {arrival_count = 1 : i32, num_barriers = 2 : i32} : () -> !wsc.mbarriers
  }
  return
}

// -----

func.func @two_boxes_one_tensor(%a: memref<?x?xf16>) attributes {wsc.num_threads = 128 : i32} {
  %c0 = arith.constant 0 : index
  %s1 = "wsc.alloc_shared"() : () -> memref<1x64x64xf16, 3>
  %s2 = "wsc.alloc_shared"() : () -> memref<1x128x64xf16, 3>
  %bars = "wsc.mbarrier_alloc"() {arrival_count = 1 : i32, num_barriers = 1 : i32} : () -> !wsc.mbarriers
  "wsc.sync"() : () -> ()
  %e = "wsc.elect"() : () -> i1
  scf.if %e {
    // expected-note @below {{earlier copy here}}
    "wsc.tma_load"(%a, %c0, %c0, %s1, %c0, %bars) : (memref<?x?xf16>, index, index, memref<1x64x64xf16, 3>, index, !wsc.mbarriers) -> ()
    // expected-error @below {{'wsc.tma_load' op copies tensor 'a' with box [128, 64] and 128B swizzle, but an earlier TMA copy uses [64, 64] and 128B; one tensor map per tensor is supported}}
    "wsc.tma_load"(%a, %c0, %c0, %s2, %c0, %bars) : (memref<?x?xf16>, index, index, memref<1x128x64xf16, 3>, index, !wsc.mbarriers) -> ()
  }
  return
}

// -----

// expected-error @below {{'func.func' op argument #0 is both read and written, which is not supported}}
func.func @read_and_written(%a: memref<?x?xf16>) attributes {wsc.num_threads = 128 : i32} {
  %c0 = arith.constant 0 : index
  %acc = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 64, 64>, f32>
  %h = "wsc.cast"(%acc) : (!wsc.acc<array<i64: 64, 64>, f32>) -> !wsc.acc<array<i64: 64, 64>, f16>
  "wsc.store"(%h, %a, %c0, %c0) : (!wsc.acc<array<i64: 64, 64>, f16>, memref<?x?xf16>, index, index) -> ()
  %s = "wsc.alloc_shared"() : () -> memref<1x64x64xf16, 3>
  %bars = "wsc.mbarrier_alloc"() {arrival_count = 1 : i32, num_barriers = 1 : i32} : () -> !wsc.mbarriers
  "wsc.sync"() : () -> ()
  %e = "wsc.elect"() : () -> i1
  scf.if %e {
    "wsc.tma_load"(%a, %c0, %c0, %s, %c0, %bars) : (memref<?x?xf16>, index, index, memref<1x64x64xf16, 3>, index, !wsc.mbarriers) -> ()
  }
  return
}

// -----

func.func @else_branch_of_a_role() attributes {wsc.num_threads = 256 : i32} {
  // expected-note @below {{role defined here}}
  %r = "wsc.role"() {role = "consumer", thread_begin = 0 : i32, num_threads = 128 : i32} : () -> i1
  scf.if %r {
  } else {
    // expected-error @below {{'wsc.elect' op is in the else branch of a role's scf.if; a role's code goes in the then branch}}
    %e = "wsc.elect"() : () -> i1
  }
  return
}


// -----

// 12 warps cannot share 64 rows in whole 8-row groups (one swizzle key each).
func.func @coalesced_store_warps(%c: memref<?x?xf16>) attributes {wsc.num_threads = 384 : i32} {
  %c0 = arith.constant 0 : index
  %sc = "wsc.alloc_shared"() : () -> memref<1x64x64xf16, 3>
  // expected-error @below {{'wsc.coalesced_store' op a 64-row stage tile cannot be stored by 12 warps in groups of 8 rows each}}
  "wsc.coalesced_store"(%sc, %c0, %c, %c0, %c0) : (memref<1x64x64xf16, 3>, index, memref<?x?xf16>, index, index) -> ()
  return
}

// -----

// Rows of 16 halves get the 32-byte swizzle: a warp's 32 elements would
// span two atoms.
func.func @coalesced_store_narrow(%c: memref<?x?xf16>) attributes {wsc.num_threads = 128 : i32} {
  %c0 = arith.constant 0 : index
  %sc = "wsc.alloc_shared"() : () -> memref<1x64x16xf16, 3>
  // expected-error @below {{'wsc.coalesced_store' op the stage tile's 32-byte swizzle atoms are 16 elements wide; coalesced stores need rows of 32-element multiples per atom}}
  "wsc.coalesced_store"(%sc, %c0, %c, %c0, %c0) : (memref<1x64x16xf16, 3>, index, memref<?x?xf16>, index, index) -> ()
  return
}

// -----

// A split-K arrival counts the register tile's warpgroup as one split.
func.func @partial_arrive_in_a_warp(%counters: memref<?xi32>) attributes {wsc.num_threads = 160 : i32} {
  %c0 = arith.constant 0 : index
  %is_producer = "wsc.role"() {role = "producer", thread_begin = 128 : i32, num_threads = 32 : i32} : () -> i1
  scf.if %is_producer {
    // expected-error @below {{'wsc.partial_arrive' op must run in one warpgroup (128 threads), not in 32 threads}}
    %last = "wsc.partial_arrive"(%counters, %c0) {splits = 2 : i32} : (memref<?xi32>, index) -> i1
  }
  return
}

// -----

// 256 x 256 f32 in one warpgroup is 512 registers per thread: it would
// compile into tens of KB of spills.
func.func @register_tile_too_big() attributes {wsc.num_threads = 128 : i32} {
  // expected-error @below {{'wsc.acc_alloc' op a 256x256 f32 register tile takes 512 registers in each thread of its warpgroup, more than the 255 a thread has}}
  %acc = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 256, 256>, f32>
  return
}

// -----

// A matrix of a batch is read and written by TMA copies only: a store from
// registers has no batch stride to address it with.
func.func @store_into_a_batch_matrix(%c: memref<?x?x?xf32>) attributes {wsc.num_threads = 128 : i32} {
  %c0 = arith.constant 0 : index
  // expected-note @below {{the matrix of a batch}}
  %c1 = "wsc.batch_matrix"(%c, %c0) : (memref<?x?x?xf32>, index) -> memref<?x?xf32>
  %acc = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 64, 64>, f32>
  // expected-error @below {{'wsc.store' op takes a matrix of a batch (wsc.batch_matrix), which only TMA copies (wsc.tma_load, wsc.tma_store) and memref.dim take}}
  "wsc.store"(%acc, %c1, %c0, %c0) : (!wsc.acc<array<i64: 64, 64>, f32>, memref<?x?xf32>, index, index) -> ()
  return
}

// -----

// A splat takes a scalar argument of the kernel, whose value each launch sets.
func.func @splat_of_a_constant(%c: memref<?x?xf32>) attributes {wsc.num_threads = 128 : i32} {
  %c0 = arith.constant 0 : index
  %half = arith.constant 0.5 : f32
  // expected-error @below {{'wsc.tile_splat' op its value must be a scalar argument of the kernel}}
  %t = "wsc.tile_splat"(%half) : (f32) -> !wsc.acc<array<i64: 64, 64>, f32>
  "wsc.store"(%t, %c, %c0, %c0) : (!wsc.acc<array<i64: 64, 64>, f32>, memref<?x?xf32>, index, index) -> ()
  return
}

// -----

// A register tile in a role of two warps: its other two warps' rows would
// never be computed (the fragment layout spans a warpgroup's four warps).
func.func @register_tile_in_a_role_of_two_warps(%c: memref<?x?xf32>, %src: memref<?x?xf32>) attributes {wsc.num_threads = 96 : i32} {
  %c0 = arith.constant 0 : index
  // expected-note @below {{role defined here}}
  %is = "wsc.role"() {role = "small", thread_begin = 32 : i32, num_threads = 64 : i32} : () -> i1
  scf.if %is {
    // expected-error @below {{'wsc.tile_load' op makes a register tile, which whole warpgroups hold; its role covers threads [32, 96), not a multiple of 128 threads starting at one}}
    %x = "wsc.tile_load"(%src, %c0, %c0) : (memref<?x?xf32>, index, index) -> !wsc.acc<array<i64: 64, 8>, f32>
    "wsc.store"(%x, %c, %c0, %c0) : (!wsc.acc<array<i64: 64, 8>, f32>, memref<?x?xf32>, index, index) -> ()
  }
  return
}

// -----

// A module with no kernel: the error points at its function, which lacks
// the attribute.
// expected-error @below {{found no kernel to lower (a func.func with the 'wsc.num_threads' attribute)}}
func.func @not_a_kernel() {
  return
}
