// Invalid uses of every wsc op and type: each case must give its located error.
// RUN: wsc-opt --split-input-file --verify-diagnostics %s

func.func @role_outside_block() attributes {wsc.num_threads = 160 : i32} {
  // expected-error @below {{'wsc.role' op thread range [128, 192) is outside the block of 160 threads}}
  %r = "wsc.role"() {role = "producer", thread_begin = 128 : i32, num_threads = 64 : i32} : () -> i1
  return
}
// -----
func.func @role_not_whole_warps() attributes {wsc.num_threads = 160 : i32} {
  // expected-error @below {{'wsc.role' op thread range [144, 160) must be whole warps (multiples of 32 threads)}}
  %r = "wsc.role"() {role = "producer", thread_begin = 144 : i32, num_threads = 16 : i32} : () -> i1
  return
}
// -----
func.func @roles_overlap() attributes {wsc.num_threads = 256 : i32} {
  // expected-note @below {{the other role is here}}
  %r0 = "wsc.role"() {role = "consumer", thread_begin = 0 : i32, num_threads = 128 : i32} : () -> i1
  // expected-error @below {{'wsc.role' op thread range [96, 128) overlaps another role's [0, 128)}}
  %r1 = "wsc.role"() {role = "producer", thread_begin = 96 : i32, num_threads = 32 : i32} : () -> i1
  return
}
// -----
func.func @register_budget() attributes {wsc.num_threads = 160 : i32} {
  // expected-error @below {{'wsc.role' op max_registers must be a multiple of 8 in [24, 256], got 300}}
  %r = "wsc.role"() {role = "consumer", thread_begin = 0 : i32, num_threads = 128 : i32, max_registers = 300 : i32} : () -> i1
  return
}
// -----
func.func @role_missing_attribute() attributes {wsc.num_threads = 160 : i32} {
  // expected-error @below {{'wsc.role' op attribute "thread_begin" is expected but not provided}}
  %r = "wsc.role"() {role = "consumer", num_threads = 128 : i32} : () -> i1
  return
}
// -----
func.func @role_result_type() attributes {wsc.num_threads = 160 : i32} {
  // expected-error @below {{'wsc.role' op expected 'i1' but got 'i32'}}
  %r = "wsc.role"() {role = "consumer", thread_begin = 0 : i32, num_threads = 128 : i32} : () -> i32
  return
}
// -----
func.func @role_used_as_value(%x: i1) attributes {wsc.num_threads = 160 : i32} {
  // expected-error @below {{'wsc.role' op result may only be used as the condition of an scf.if}}
  %r = "wsc.role"() {role = "consumer", thread_begin = 0 : i32, num_threads = 128 : i32} : () -> i1
  %y = arith.andi %r, %x : i1
  return
}
// -----
// expected-error @below {{'func.func' op attribute 'wsc.num_threads' must be a multiple of 32 in [32, 1024], got 100}}
func.func @kernel_threads() attributes {wsc.num_threads = 100 : i32} {
  return
}
// -----
// expected-error @below {{'wsc.elect' op expected 'i1' but got 'i32'}}
%e = "wsc.elect"() : () -> i32
// -----
// expected-error @below {{'wsc.alloc_shared' op result needs at least 1 stage, got 0}}
%s = "wsc.alloc_shared"() : () -> memref<0x128x64xf16, 3>
// -----
// expected-error @below {{'wsc.alloc_shared' op result must be in shared memory (address space 3), got memref<2x128x64xf16>}}
%s = "wsc.alloc_shared"() : () -> memref<2x128x64xf16>
// -----
// expected-error @below {{'wsc.alloc_shared' op expected base type 'builtin.memref' but got 'builtin.integer'}}
%s = "wsc.alloc_shared"() : () -> i32
// -----
// expected-error @below {{'wsc.mbarrier_alloc' op num_barriers must be in [1, 227] (one per stage; a ring has at most 227 1024-byte stages in 232448 bytes of shared memory), got 0}}
%b = "wsc.mbarrier_alloc"() {arrival_count = 1 : i32, num_barriers = 0 : i32} : () -> !wsc.mbarriers
// -----
// expected-error @below {{'wsc.mbarrier_alloc' op attribute "num_barriers" is expected but not provided}}
%b = "wsc.mbarrier_alloc"() {arrival_count = 1 : i32} : () -> !wsc.mbarriers
// -----
// expected-error @below {{'wsc.mbarrier_alloc' op expected base attribute 'builtin.integer' but got 'builtin.string'}}
%b = "wsc.mbarrier_alloc"() {arrival_count = 1 : i32, num_barriers = "four"} : () -> !wsc.mbarriers
// -----
// expected-error @below {{'wsc.mbarrier_alloc' op arrival_count must be in [1, 1048575] (the mbarrier arrival count limit), got 0}}
%b = "wsc.mbarrier_alloc"() {arrival_count = 0 : i32, num_barriers = 2 : i32} : () -> !wsc.mbarriers
// -----
%b = "wsc.mbarrier_alloc"() {arrival_count = 1 : i32, num_barriers = 2 : i32} : () -> !wsc.mbarriers
%c2 = arith.constant 2 : index
// expected-error @below {{'wsc.mbarrier_arrive' op stage 2 is outside the ring of 2 stages}}
"wsc.mbarrier_arrive"(%b, %c2) : (!wsc.mbarriers, index) -> ()
// -----
%b = "wsc.mbarrier_alloc"() {arrival_count = 1 : i32, num_barriers = 2 : i32} : () -> !wsc.mbarriers
%c0 = arith.constant 0 : i32
// expected-error @below {{'wsc.mbarrier_arrive' op expected 'index' but got 'i32'}}
"wsc.mbarrier_arrive"(%b, %c0) : (!wsc.mbarriers, i32) -> ()
// -----
%b = "wsc.mbarrier_alloc"() {arrival_count = 1 : i32, num_barriers = 2 : i32} : () -> !wsc.mbarriers
%c0 = arith.constant 0 : index
// expected-error @below {{'wsc.mbarrier_arrive_expect_tx' op tx_bytes must be in [1, 1048575] (the mbarrier transaction count limit), got 0}}
"wsc.mbarrier_arrive_expect_tx"(%b, %c0) {tx_bytes = 0 : i32} : (!wsc.mbarriers, index) -> ()
// -----
%b = "wsc.mbarrier_alloc"() {arrival_count = 1 : i32, num_barriers = 2 : i32} : () -> !wsc.mbarriers
%c0 = arith.constant 0 : index
// expected-error @below {{'wsc.mbarrier_arrive_expect_tx' op attribute "tx_bytes" is expected but not provided}}
"wsc.mbarrier_arrive_expect_tx"(%b, %c0) : (!wsc.mbarriers, index) -> ()
// -----
%b = "wsc.mbarrier_alloc"() {arrival_count = 1 : i32, num_barriers = 2 : i32} : () -> !wsc.mbarriers
%c0 = arith.constant 0 : index
%p = arith.constant 0 : i32
// expected-error @below {{'wsc.mbarrier_wait' op expected 'i1' but got 'i32'}}
"wsc.mbarrier_wait"(%b, %c0, %p) : (!wsc.mbarriers, index, i32) -> ()
// -----
%c0 = arith.constant 0 : index
%p = arith.constant 0 : i1
// expected-error @below {{'wsc.ring_advance' op num_stages must be in [1, 227] (a ring has at most 227 1024-byte stages in 232448 bytes of shared memory), got 0}}
%s:2 = "wsc.ring_advance"(%c0, %p) {num_stages = 0 : i32} : (index, i1) -> (index, i1)
// -----
%c0 = arith.constant 0 : index
%p = arith.constant 0 : i1
// expected-error @below {{'wsc.ring_advance' op expects exactly 2 results, but got 1}}
%s = "wsc.ring_advance"(%c0, %p) {num_stages = 2 : i32} : (index, i1) -> index
// -----
func.func @ring_loops_disagree(%n: index) attributes {wsc.num_threads = 160 : i32} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %false = arith.constant false
  %full = "wsc.mbarrier_alloc"() {arrival_count = 1 : i32, num_barriers = 4 : i32} : () -> !wsc.mbarriers
  %l0:2 = scf.for %i = %c0 to %n step %c1 iter_args(%stage = %c0, %phase = %false) -> (index, i1) {
    "wsc.mbarrier_wait"(%full, %stage, %phase) : (!wsc.mbarriers, index, i1) -> ()
    // expected-note @below {{the ring loop of 3 stages}}
    %next:2 = "wsc.ring_advance"(%stage, %phase) {num_stages = 3 : i32} : (index, i1) -> (index, i1)
    scf.yield %next#0, %next#1 : index, i1
  }
  %l1:2 = scf.for %i = %c0 to %n step %c1 iter_args(%stage = %c0, %phase = %false) -> (index, i1) {
    "wsc.mbarrier_arrive_expect_tx"(%full, %stage) {tx_bytes = 1024 : i32} : (!wsc.mbarriers, index) -> ()
    // expected-error @below {{'wsc.ring_advance' op this ring loop counts 4 stages, but a barrier array its stage indexes (in its 'wsc.mbarrier_arrive_expect_tx') is also indexed by a ring loop of 3 stages: both sides of a ring must wrap around at the same stage}}
    %next:2 = "wsc.ring_advance"(%stage, %phase) {num_stages = 4 : i32} : (index, i1) -> (index, i1)
    scf.yield %next#0, %next#1 : index, i1
  }
  return
}
// -----
func.func @tma_box_dim(%a: memref<?x?xf16>) {
  %c0 = arith.constant 0 : index
  %s = "wsc.alloc_shared"() : () -> memref<2x512x64xf16, 3>
  %b = "wsc.mbarrier_alloc"() {arrival_count = 1 : i32, num_barriers = 2 : i32} : () -> !wsc.mbarriers
  // expected-error @below {{'wsc.tma_load' op TMA box 512x64 exceeds 256 elements in a dimension}}
  "wsc.tma_load"(%a, %c0, %c0, %s, %c0, %b) : (memref<?x?xf16>, index, index, memref<2x512x64xf16, 3>, index, !wsc.mbarriers) -> ()
  return
}
// -----
// TMA copies and the expect_tx they complete on are issued by one thread.
func.func @expect_tx_by_every_thread() {
  %c0 = arith.constant 0 : index
  %b = "wsc.mbarrier_alloc"() {arrival_count = 1 : i32, num_barriers = 2 : i32} : () -> !wsc.mbarriers
  // expected-error @below {{'wsc.mbarrier_arrive_expect_tx' op must be issued by one thread (it arrives once): put it in the then region of an scf.if whose condition is a wsc.elect (other conditions may enclose that scf.if)}}
  "wsc.mbarrier_arrive_expect_tx"(%b, %c0) {tx_bytes = 16384 : i32} : (!wsc.mbarriers, index) -> ()
  return
}
// -----
func.func @tma_load_by_every_thread(%a: memref<?x?xf16>) {
  %c0 = arith.constant 0 : index
  %s = "wsc.alloc_shared"() : () -> memref<2x128x64xf16, 3>
  %b = "wsc.mbarrier_alloc"() {arrival_count = 1 : i32, num_barriers = 2 : i32} : () -> !wsc.mbarriers
  %t = arith.constant true
  scf.if %t {
    // expected-error @below {{'wsc.tma_load' op must be issued by one thread (it is one copy)}}
    "wsc.tma_load"(%a, %c0, %c0, %s, %c0, %b) : (memref<?x?xf16>, index, index, memref<2x128x64xf16, 3>, index, !wsc.mbarriers) -> ()
  }
  return
}
// -----
// An elect made outside the producer role picks a thread of the block outside
// it, which never reaches the copy: no thread would issue it.
func.func @elect_of_another_role(%a: memref<?x?xf16>) attributes {wsc.num_threads = 160 : i32} {
  %c0 = arith.constant 0 : index
  %s = "wsc.alloc_shared"() : () -> memref<2x128x64xf16, 3>
  %b = "wsc.mbarrier_alloc"() {arrival_count = 1 : i32, num_barriers = 2 : i32} : () -> !wsc.mbarriers
  %e = "wsc.elect"() : () -> i1
  %is_producer = "wsc.role"() {role = "producer", thread_begin = 128 : i32, num_threads = 32 : i32} : () -> i1
  scf.if %is_producer {
    scf.if %e {
      // expected-error @below {{'wsc.tma_load' op must be issued by one thread of its role (it is one copy), but the wsc.elect guarding it is made outside that role: the thread it elects never reaches it; make the elect inside the role}}
      "wsc.tma_load"(%a, %c0, %c0, %s, %c0, %b) : (memref<?x?xf16>, index, index, memref<2x128x64xf16, 3>, index, !wsc.mbarriers) -> ()
    }
  }
  return
}
// -----
// The else region of an elected scf.if runs in every other thread.
func.func @tma_store_in_else_of_elect(%c: memref<?x?xf16>) {
  %c0 = arith.constant 0 : index
  %s = "wsc.alloc_shared"() : () -> memref<1x64x64xf16, 3>
  %e = "wsc.elect"() : () -> i1
  scf.if %e {
  } else {
    // expected-error @below {{'wsc.tma_store' op must be issued by one thread (it is one copy)}}
    "wsc.tma_store"(%s, %c0, %c, %c0, %c0) : (memref<1x64x64xf16, 3>, index, memref<?x?xf16>, index, index) -> ()
  }
  return
}
// -----
func.func @tma_element(%a: memref<?x?xbf16>) {
  %c0 = arith.constant 0 : index
  %s = "wsc.alloc_shared"() : () -> memref<2x128x64xf16, 3>
  %b = "wsc.mbarrier_alloc"() {arrival_count = 1 : i32, num_barriers = 2 : i32} : () -> !wsc.mbarriers
  // expected-error @below {{'wsc.tma_load' op source element type bf16 differs from the destination's f16}}
  "wsc.tma_load"(%a, %c0, %c0, %s, %c0, %b) : (memref<?x?xbf16>, index, index, memref<2x128x64xf16, 3>, index, !wsc.mbarriers) -> ()
  return
}
// -----
func.func @tma_barrier_count(%a: memref<?x?xf16>) {
  %c0 = arith.constant 0 : index
  %s = "wsc.alloc_shared"() : () -> memref<2x128x64xf16, 3>
  %b = "wsc.mbarrier_alloc"() {arrival_count = 1 : i32, num_barriers = 3 : i32} : () -> !wsc.mbarriers
  // expected-error @below {{'wsc.tma_load' op the ring has 2 stages but its barrier array has 3}}
  "wsc.tma_load"(%a, %c0, %c0, %s, %c0, %b) : (memref<?x?xf16>, index, index, memref<2x128x64xf16, 3>, index, !wsc.mbarriers) -> ()
  return
}
// -----
func.func @tma_store_rank(%c: memref<?xf16>) {
  %c0 = arith.constant 0 : index
  %s = "wsc.alloc_shared"() : () -> memref<2x128x64xf16, 3>
  // expected-error @below {{'wsc.tma_store' op destination must be a rank-2 memref in global memory, got memref<?xf16>}}
  "wsc.tma_store"(%s, %c0, %c, %c0, %c0) : (memref<2x128x64xf16, 3>, index, memref<?xf16>, index, index) -> ()
  return
}
// -----
func.func @coalesced_store_element(%c: memref<?x?xbf16>) {
  %c0 = arith.constant 0 : index
  %s = "wsc.alloc_shared"() : () -> memref<1x64x64xf16, 3>
  // expected-error @below {{'wsc.coalesced_store' op source element type f16 differs from the destination's bf16}}
  "wsc.coalesced_store"(%s, %c0, %c, %c0, %c0) : (memref<1x64x64xf16, 3>, index, memref<?x?xbf16>, index, index) -> ()
  return
}
// -----
func.func @coalesced_store_source(%c: memref<?x?xf16>, %g: memref<?x?xf16>) {
  %c0 = arith.constant 0 : index
  // expected-error @below {{'wsc.coalesced_store' op source must be a static memref<stages x rows x cols> in shared memory, got memref<?x?xf16>}}
  "wsc.coalesced_store"(%g, %c0, %c, %c0, %c0) : (memref<?x?xf16>, index, memref<?x?xf16>, index, index) -> ()
  return
}
// -----
// expected-error @below {{'wsc.acc_alloc' op register tile rows must be a multiple of 64 (the WGMMA M), got 32}}
%acc = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 32, 128>, f32>
// -----
// expected-error @below {{'wsc.acc_alloc' op register tile columns must be a multiple of 8 in [8, 256] (the WGMMA N), got 300}}
%acc = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 64, 300>, f32>
// -----
// expected-error @below {{expected base attribute 'builtin.dense_array' but got 'builtin.integer'}}
%acc = "wsc.acc_alloc"() : () -> !wsc.acc<3, f32>
// -----
func.func @wgmma_role_of_two_warpgroups() attributes {wsc.num_threads = 256 : i32} {
  %c0 = arith.constant 0 : index
  %s = "wsc.alloc_shared"() : () -> memref<2x128x64xf16, 3>
  // expected-note @below {{role defined here}}
  %r = "wsc.role"() {role = "consumer", thread_begin = 0 : i32, num_threads = 256 : i32} : () -> i1
  scf.if %r {
    %acc = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 128, 128>, f32>
    // expected-error @below {{'wsc.wgmma' op must run in one warpgroup-aligned role (4 warps starting at a multiple of 128 threads); its role covers threads [0, 256)}}
    "wsc.wgmma"(%s, %s, %c0, %acc) {a_row = 0 : i32, b_layout = "nk"} : (memref<2x128x64xf16, 3>, memref<2x128x64xf16, 3>, index, !wsc.acc<array<i64: 128, 128>, f32>) -> ()
  }
  return
}
// -----
func.func @register_tile_in_a_misaligned_role() attributes {wsc.num_threads = 256 : i32} {
  // expected-note @below {{role defined here}}
  %r = "wsc.role"() {role = "consumer", thread_begin = 32 : i32, num_threads = 128 : i32} : () -> i1
  scf.if %r {
    // expected-error @below {{'wsc.acc_alloc' op makes a register tile, which whole warpgroups hold; its role covers threads [32, 160), not a multiple of 128 threads starting at one}}
    %acc = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 64, 64>, f32>
  }
  return
}
// -----
func.func @register_tile_in_a_block_of_two_warps() attributes {wsc.num_threads = 64 : i32} {
  // expected-error @below {{'wsc.tile_fill' op makes a register tile, which whole warpgroups hold; outside a role it needs a block of a multiple of 128 threads, this one has 64}}
  %t = "wsc.tile_fill"() {value = 1.0 : f32} : () -> !wsc.acc<array<i64: 64, 64>, f32>
  return
}
// -----
// One elected thread holds its own fragment of a tile alone.
func.func @register_tile_under_an_elect(%c: memref<?x?xf32>) attributes {wsc.num_threads = 128 : i32} {
  %c0 = arith.constant 0 : index
  %t = "wsc.tile_fill"() {value = 1.0 : f32} : () -> !wsc.acc<array<i64: 64, 64>, f32>
  %e = "wsc.elect"() : () -> i1
  scf.if %e {
    // expected-error @below {{'wsc.store' op reads a register tile under a wsc.elect: the one thread elected holds only its own fragment, and a register tile is held by whole warpgroups; move it out of the single-thread region}}
    "wsc.store"(%t, %c, %c0, %c0) : (!wsc.acc<array<i64: 64, 64>, f32>, memref<?x?xf32>, index, index) -> ()
  }
  return
}
// -----
func.func @wgmma_b_layout() attributes {wsc.num_threads = 128 : i32} {
  %c0 = arith.constant 0 : index
  %s = "wsc.alloc_shared"() : () -> memref<2x128x64xf16, 3>
  %acc = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 128, 128>, f32>
  // expected-error @below {{'wsc.wgmma' op attribute 'b_layout' must be one of "nk", "kn", got "mn"}}
  "wsc.wgmma"(%s, %s, %c0, %acc) {a_row = 0 : i32, b_layout = "mn"} : (memref<2x128x64xf16, 3>, memref<2x128x64xf16, 3>, index, !wsc.acc<array<i64: 128, 128>, f32>) -> ()
  return
}
// -----
func.func @wgmma_shape() attributes {wsc.num_threads = 128 : i32} {
  %c0 = arith.constant 0 : index
  %s = "wsc.alloc_shared"() : () -> memref<2x128x64xf16, 3>
  %acc = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 128, 64>, f32>
  // expected-error @below {{'wsc.wgmma' op B stage tile 128x64 (nk) does not match N=64, K=64}}
  "wsc.wgmma"(%s, %s, %c0, %acc) {a_row = 0 : i32, b_layout = "nk"} : (memref<2x128x64xf16, 3>, memref<2x128x64xf16, 3>, index, !wsc.acc<array<i64: 128, 64>, f32>) -> ()
  return
}
// -----
// A "kn" B stage may be wider than N (rows padded to whole swizzle atoms), not narrower.
func.func @wgmma_kn_b_narrower_than_n() attributes {wsc.num_threads = 128 : i32} {
  %c0 = arith.constant 0 : index
  %sa = "wsc.alloc_shared"() : () -> memref<2x128x64xf16, 3>
  %sb = "wsc.alloc_shared"() : () -> memref<2x64x64xf16, 3>
  %acc = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 128, 112>, f32>
  "wsc.wgmma_fence"() : () -> ()
  // expected-error @below {{'wsc.wgmma' op B stage tile 64x64 (kn) does not match N=112, K=64 (a kn tile may be wider than N, not narrower)}}
  "wsc.wgmma"(%sa, %sb, %c0, %acc) {a_row = 0 : i32, b_layout = "kn"} : (memref<2x128x64xf16, 3>, memref<2x64x64xf16, 3>, index, !wsc.acc<array<i64: 128, 112>, f32>) -> ()
  return
}
// -----
// expected-error @below {{'wsc.wgmma_fence' op expects exactly 0 results, but got 1}}
"wsc.wgmma_fence"() : () -> i32
// -----
%c0 = arith.constant 0 : index
// expected-error @below {{'wsc.wgmma_commit_group' op expects exactly 0 operands, but got 1}}
"wsc.wgmma_commit_group"(%c0) : (index) -> ()
// -----
// expected-error @below {{'wsc.wgmma_wait_group' op attribute "pending" is expected but not provided}}
"wsc.wgmma_wait_group"() : () -> ()
// -----
%c0 = arith.constant 0 : index
// expected-error @below {{'wsc.sync' op expects exactly 0 operands, but got 1}}
"wsc.sync"(%c0) : (index) -> ()
// -----
%c0 = arith.constant 0 : index
// expected-error @below {{'wsc.cast' op expected base type 'wsc.acc' but got 'index'}}
%h = "wsc.cast"(%c0) : (index) -> !wsc.acc<array<i64: 64, 64>, f16>
// -----
func.func @store_element(%c: memref<?x?xf16>) {
  %c0 = arith.constant 0 : index
  %acc = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 64, 64>, f32>
  // expected-error @below {{'wsc.store' op tile element type f32 differs from the destination's f16 (convert it with wsc.cast)}}
  "wsc.store"(%acc, %c, %c0, %c0) : (!wsc.acc<array<i64: 64, 64>, f32>, memref<?x?xf16>, index, index) -> ()
  return
}
// -----
// expected-error @below {{'func.func' op attribute 'wsc.num_threads' must be an integer (the block's threads), got "128"}}
func.func @kernel_threads_not_an_integer() attributes {wsc.num_threads = "128"} {
  return
}
// -----
// expected-error @below {{'func.func' op name 'gemm-bias' is not a PTX identifier, as a kernel's must be: a letter, then letters, digits, _ or $ (or _ or $ and at least one more of those)}}
func.func @"gemm-bias"() attributes {wsc.num_threads = 128 : i32} {
  return
}
// -----
// expected-error @below {{'func.func' op name '1k' is not a PTX identifier}}
func.func @"1k"() attributes {wsc.num_threads = 128 : i32} {
  return
}
// -----
// expected-error @below {{'func.func' op must have a body of one block: a kernel is a definition, not a declaration, and its control flow is structured}}
func.func private @kernel_declaration() attributes {wsc.num_threads = 128 : i32}
// -----
// expected-error @below {{'func.func' op must have a body of one block: a kernel is a definition, not a declaration, and its control flow is structured}}
func.func @kernel_with_branches() attributes {wsc.num_threads = 128 : i32} {
  cf.br ^next
^next:
  return
}
// -----
func.func @store_shared_shape() {
  %c0 = arith.constant 0 : index
  %s = "wsc.alloc_shared"() : () -> memref<1x128x64xf16, 3>
  %acc = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 64, 64>, f16>
  // expected-error @below {{'wsc.store_shared' op tile 64x64 differs from the 128x64 stage tile (give row and col to address a block of it)}}
  "wsc.store_shared"(%acc, %s, %c0) : (!wsc.acc<array<i64: 64, 64>, f16>, memref<1x128x64xf16, 3>, index) -> ()
  return
}
// -----
func.func @store_shared_element() {
  %c0 = arith.constant 0 : index
  %s = "wsc.alloc_shared"() : () -> memref<1x64x64xbf16, 3>
  %acc = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 64, 64>, f16>
  // expected-error @below {{'wsc.store_shared' op tile element type f16 differs from the destination's bf16 (convert it with wsc.cast)}}
  "wsc.store_shared"(%acc, %s, %c0) : (!wsc.acc<array<i64: 64, 64>, f16>, memref<1x64x64xbf16, 3>, index) -> ()
  return
}
// -----
func.func @store_shared_stage() {
  %c2 = arith.constant 2 : index
  %s = "wsc.alloc_shared"() : () -> memref<2x64x64xf16, 3>
  %acc = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 64, 64>, f16>
  // expected-error @below {{'wsc.store_shared' op stage 2 is outside the ring of 2 stages}}
  "wsc.store_shared"(%acc, %s, %c2) : (!wsc.acc<array<i64: 64, 64>, f16>, memref<2x64x64xf16, 3>, index) -> ()
  return
}
// -----
func.func @tma_store_element(%c: memref<?x?xf32>) {
  %c0 = arith.constant 0 : index
  %s = "wsc.alloc_shared"() : () -> memref<1x64x64xf16, 3>
  // expected-error @below {{'wsc.tma_store' op source element type f16 differs from the destination's f32}}
  "wsc.tma_store"(%s, %c0, %c, %c0, %c0) : (memref<1x64x64xf16, 3>, index, memref<?x?xf32>, index, index) -> ()
  return
}
// -----
func.func @tma_store_wait_pending() {
  // expected-error @below {{'wsc.tma_store_wait' op pending must be non-negative, got -1}}
  "wsc.tma_store_wait"() {pending = -1 : i32} : () -> ()
  return
}
// -----
func.func @wgmma_f16_accumulator_bf16_operands() attributes {wsc.num_threads = 128 : i32} {
  %c0 = arith.constant 0 : index
  %sa = "wsc.alloc_shared"() : () -> memref<1x64x64xbf16, 3>
  %sb = "wsc.alloc_shared"() : () -> memref<1x64x64xbf16, 3>
  %acc = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 64, 64>, f16>
  // expected-error @below {{'wsc.wgmma' op accumulator must be f32 (or f16 for f16 operands), got f16 for bf16 operands}}
  "wsc.wgmma"(%sa, %sb, %c0, %acc) {a_row = 0 : i32, b_layout = "nk"} : (memref<1x64x64xbf16, 3>, memref<1x64x64xbf16, 3>, index, !wsc.acc<array<i64: 64, 64>, f16>) -> ()
  return
}
// -----
func.func @wgmma_fp8_b_n_major() attributes {wsc.num_threads = 128 : i32} {
  %c0 = arith.constant 0 : index
  %sa = "wsc.alloc_shared"() : () -> memref<1x64x128xf8E4M3FN, 3>
  %sb = "wsc.alloc_shared"() : () -> memref<1x128x64xf8E4M3FN, 3>
  %acc = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 64, 64>, f32>
  // expected-error @below {{'wsc.wgmma' op WGMMA reads f8E4M3FN operands K-major only: A as [M, K] and B as [N, K] (b_layout = "nk"), not transposed}}
  "wsc.wgmma"(%sa, %sb, %c0, %acc) {a_row = 0 : i32, b_layout = "kn"} : (memref<1x64x128xf8E4M3FN, 3>, memref<1x128x64xf8E4M3FN, 3>, index, !wsc.acc<array<i64: 64, 64>, f32>) -> ()
  return
}
// -----
func.func @wgmma_fp8_k_tile() attributes {wsc.num_threads = 128 : i32} {
  %c0 = arith.constant 0 : index
  %sa = "wsc.alloc_shared"() : () -> memref<1x64x48xf8E4M3FN, 3>
  %sb = "wsc.alloc_shared"() : () -> memref<1x64x48xf8E4M3FN, 3>
  %acc = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 64, 64>, f32>
  // expected-error @below {{'wsc.wgmma' op K tile 48 is not a multiple of 32 (the WGMMA K of f8E4M3FN)}}
  "wsc.wgmma"(%sa, %sb, %c0, %acc) {a_row = 0 : i32, b_layout = "nk"} : (memref<1x64x48xf8E4M3FN, 3>, memref<1x64x48xf8E4M3FN, 3>, index, !wsc.acc<array<i64: 64, 64>, f32>) -> ()
  return
}
// -----
func.func @cluster_rank_without_clusters() attributes {wsc.num_threads = 128 : i32} {
  // expected-error @below {{'wsc.cluster_rank' op needs a kernel with 'wsc.cluster_size' of at least 2 (CTAs per cluster)}}
  %rank = "wsc.cluster_rank"() : () -> index
  return
}
// -----
func.func @multicast_slices(%b: memref<?x?xf16>) attributes {wsc.cluster_size = 4 : i32, wsc.num_threads = 128 : i32} {
  %c0 = arith.constant 0 : index
  %sb = "wsc.alloc_shared"() : () -> memref<2x48x64xf16, 3>
  %full = "wsc.mbarrier_alloc"() {arrival_count = 1 : i32, num_barriers = 2 : i32} : () -> !wsc.mbarriers
  // expected-error @below {{'wsc.tma_load' op a 48-row tile cannot be split over 4 CTAs in slices of whole 8-row swizzle periods}}
  "wsc.tma_load"(%b, %c0, %c0, %sb, %c0, %full) {multicast} : (memref<?x?xf16>, index, index, memref<2x48x64xf16, 3>, index, !wsc.mbarriers) -> ()
  return
}
// -----
// expected-error @below {{'func.func' op attribute 'wsc.cluster_size' must be an integer in [1, 8] (the portable cluster size), got 16 : i32}}
func.func @cluster_too_large() attributes {wsc.cluster_size = 16 : i32, wsc.num_threads = 128 : i32} {
  return
}
// -----
// expected-error @below {{'func.func' op attribute 'wsc.blocks_per_sm' must be an integer in [1, 32] (the blocks an SM runs at once), got 0 : i32}}
func.func @no_blocks_per_sm() attributes {wsc.blocks_per_sm = 0 : i32, wsc.num_threads = 128 : i32} {
  return
}
// -----
func.func @overwrite_not_a_unit(%sa: memref<1x64x64xf16, 3>) attributes {wsc.num_threads = 128 : i32} {
  %c0 = arith.constant 0 : index
  %acc = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 64, 64>, f32>
  // expected-error @below {{'wsc.wgmma' op 'overwrite' must be a unit attribute, got 1 : i32}}
  "wsc.wgmma"(%sa, %sa, %c0, %acc) {a_row = 0 : i32, b_layout = "nk", overwrite = 1 : i32} : (memref<1x64x64xf16, 3>, memref<1x64x64xf16, 3>, index, !wsc.acc<array<i64: 64, 64>, f32>) -> ()
  return
}
// -----
func.func @uninitialized_not_a_unit() attributes {wsc.num_threads = 128 : i32} {
  // expected-error @below {{'wsc.acc_alloc' op 'uninitialized' must be a unit attribute, got false}}
  %acc = "wsc.acc_alloc"() {uninitialized = false} : () -> !wsc.acc<array<i64: 64, 64>, f32>
  return
}
// -----
func.func @per_warp_not_a_unit() attributes {wsc.num_threads = 128 : i32} {
  %c0 = arith.constant 0 : index
  %empty = "wsc.mbarrier_alloc"() {arrival_count = 4 : i32, num_barriers = 1 : i32} : () -> !wsc.mbarriers
  // expected-error @below {{'wsc.mbarrier_arrive' op 'per_warp' must be a unit attribute, got true}}
  "wsc.mbarrier_arrive"(%empty, %c0) {per_warp = true} : (!wsc.mbarriers, index) -> ()
  return
}
// -----
func.func @per_warp_under_elect() attributes {wsc.num_threads = 128 : i32} {
  %c0 = arith.constant 0 : index
  %empty = "wsc.mbarrier_alloc"() {arrival_count = 4 : i32, num_barriers = 1 : i32} : () -> !wsc.mbarriers
  %elected = "wsc.elect"() : () -> i1
  scf.if %elected {
    // expected-error @below {{'wsc.mbarrier_arrive' op 'per_warp' under a condition computed from wsc.elect, which can split a warp: every thread of each warp must execute the arrive}}
    "wsc.mbarrier_arrive"(%empty, %c0) {per_warp} : (!wsc.mbarriers, index) -> ()
  }
  return
}
// -----
func.func @per_warp_under_a_thread_condition() attributes {wsc.cluster_size = 2 : i32, wsc.num_threads = 128 : i32} {
  %c0 = arith.constant 0 : index
  %c16 = arith.constant 16 : index
  %empty = "wsc.mbarrier_alloc"() {arrival_count = 4 : i32, num_barriers = 1 : i32} : () -> !wsc.mbarriers
  %tid = gpu.thread_id x
  %half = arith.cmpi ult, %tid, %c16 : index
  scf.if %half {
    // expected-error @below {{'wsc.mbarrier_arrive' op 'per_warp' under a condition computed from gpu.thread_id, which can split a warp: every thread of each warp must execute the arrive}}
    "wsc.mbarrier_arrive"(%empty, %c0) {every_cta, per_warp} : (!wsc.mbarriers, index) -> ()
  }
  return
}
// -----
func.func @per_warp_under_a_loop_carried_election(%n: index) attributes {wsc.num_threads = 128 : i32} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %false = arith.constant false
  %empty = "wsc.mbarrier_alloc"() {arrival_count = 4 : i32, num_barriers = 1 : i32} : () -> !wsc.mbarriers
  %elected = "wsc.elect"() : () -> i1
  %last = scf.for %i = %c0 to %n step %c1 iter_args(%carried = %false) -> (i1) {
    scf.if %carried {
      // expected-error @below {{'wsc.mbarrier_arrive' op 'per_warp' under a condition computed from wsc.elect, which can split a warp: every thread of each warp must execute the arrive}}
      "wsc.mbarrier_arrive"(%empty, %c0) {per_warp} : (!wsc.mbarriers, index) -> ()
    }
    scf.yield %elected : i1
  }
  return
}
// -----
func.func @per_warp_on_a_wait() attributes {wsc.num_threads = 128 : i32} {
  %c0 = arith.constant 0 : index
  %false = arith.constant false
  %full = "wsc.mbarrier_alloc"() {arrival_count = 1 : i32, num_barriers = 1 : i32} : () -> !wsc.mbarriers
  // expected-error @below {{'wsc.mbarrier_wait' op 'per_warp' applies to wsc.mbarrier_arrive only}}
  "wsc.mbarrier_wait"(%full, %c0, %false) {per_warp} : (!wsc.mbarriers, index, i1) -> ()
  return
}
// -----
func.func @multicast_on_a_store(%c: memref<?x?xf16>) attributes {wsc.cluster_size = 2 : i32, wsc.num_threads = 128 : i32} {
  %c0 = arith.constant 0 : index
  %sc = "wsc.alloc_shared"() : () -> memref<1x64x64xf16, 3>
  // expected-error @below {{'wsc.tma_store' op 'multicast' applies to wsc.tma_load only}}
  "wsc.tma_store"(%sc, %c0, %c, %c0, %c0) {multicast} : (memref<1x64x64xf16, 3>, index, memref<?x?xf16>, index, index) -> ()
  return
}
// -----
func.func @every_cta_not_a_unit() attributes {wsc.cluster_size = 2 : i32, wsc.num_threads = 128 : i32} {
  %c0 = arith.constant 0 : index
  %empty = "wsc.mbarrier_alloc"() {arrival_count = 256 : i32, num_barriers = 1 : i32} : () -> !wsc.mbarriers
  // expected-error @below {{'wsc.mbarrier_arrive' op 'every_cta' must be a unit attribute, got "yes"}}
  "wsc.mbarrier_arrive"(%empty, %c0) {every_cta = "yes"} : (!wsc.mbarriers, index) -> ()
  return
}
// -----
func.func @fill_not_an_f32(%x: memref<?x?xf16>) attributes {wsc.num_threads = 128 : i32} {
  %c0 = arith.constant 0 : index
  // expected-error @below {{'wsc.tile_load' op 'fill' must be an f32 attribute, got 0 : i32}}
  %t = "wsc.tile_load"(%x, %c0, %c0) {fill = 0 : i32} : (memref<?x?xf16>, index, index) -> !wsc.acc<array<i64: 64, 64>, f32>
  return
}
// -----
func.func @fill_not_typed_f32(%x: memref<?x?xf16>) attributes {wsc.num_threads = 128 : i32} {
  %c0 = arith.constant 0 : index
  // expected-error @below {{'wsc.tile_load' op 'fill' must be an f32 attribute, got 1.000000e+00 : f64}}
  %t = "wsc.tile_load"(%x, %c0, %c0) {fill = 1.0} : (memref<?x?xf16>, index, index) -> !wsc.acc<array<i64: 64, 64>, f32>
  return
}
// -----
func.func @fill_of_a_broadcast(%v: memref<?xf16>) attributes {wsc.num_threads = 128 : i32} {
  %c0 = arith.constant 0 : index
  // expected-error @below {{'wsc.tile_broadcast' op 'fill' applies to wsc.tile_load only}}
  %t = "wsc.tile_broadcast"(%v, %c0) {along = "cols", fill = 1.0 : f32} : (memref<?xf16>, index) -> !wsc.acc<array<i64: 64, 64>, f32>
  return
}
// -----
func.func @register_budget_not_an_integer() attributes {wsc.num_threads = 128 : i32} {
  // expected-error @below {{'wsc.role' op 'max_registers' must be an integer attribute, got "many"}}
  %r = "wsc.role"() {role = "consumer", thread_begin = 0 : i32, num_threads = 128 : i32, max_registers = "many"} : () -> i1
  return
}
// -----
func.func @one_split(%partials: memref<?xf32>) attributes {wsc.num_threads = 128 : i32} {
  %c0 = arith.constant 0 : index
  %acc = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 64, 128>, f32>
  // expected-error @below {{'wsc.partial_store' op splits must be 2 to 64, got 1}}
  "wsc.partial_store"(%acc, %partials, %c0, %c0) {splits = 1 : i32} : (!wsc.acc<array<i64: 64, 128>, f32>, memref<?xf32>, index, index) -> ()
  return
}
// -----
// Its reduction unrolls a read of every split's partial sums (a fuzzer's
// mutant with 1048576 hung the lowering).
func.func @too_many_splits(%partials: memref<?xf32>, %counters: memref<?xi32>) attributes {wsc.num_threads = 128 : i32} {
  %c0 = arith.constant 0 : index
  %acc = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 64, 128>, f32>
  // expected-error @below {{'wsc.partial_reduce' op splits must be 2 to 64, got 1048576}}
  "wsc.partial_reduce"(%acc, %partials, %counters, %c0) {splits = 1048576 : i32} : (!wsc.acc<array<i64: 64, 128>, f32>, memref<?xf32>, memref<?xi32>, index) -> ()
  return
}
// -----
func.func @split_out_of_range(%partials: memref<?xf32>) attributes {wsc.num_threads = 128 : i32} {
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  %acc = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 64, 128>, f32>
  // expected-error @below {{'wsc.partial_store' op split 4 is outside the 4 splits}}
  "wsc.partial_store"(%acc, %partials, %c0, %c4) {splits = 4 : i32} : (!wsc.acc<array<i64: 64, 128>, f32>, memref<?xf32>, index, index) -> ()
  return
}
// -----
func.func @half_precision_partials(%partials: memref<?xf32>) attributes {wsc.num_threads = 128 : i32} {
  %c0 = arith.constant 0 : index
  %acc = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 64, 128>, f16>
  // expected-error @below {{'wsc.partial_store' op partial sums are f32: the register tile is f16}}
  "wsc.partial_store"(%acc, %partials, %c0, %c0) {splits = 2 : i32} : (!wsc.acc<array<i64: 64, 128>, f16>, memref<?xf32>, index, index) -> ()
  return
}
// -----
func.func @rank_2_partials(%partials: memref<?x?xf32>) attributes {wsc.num_threads = 128 : i32} {
  %c0 = arith.constant 0 : index
  %acc = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 64, 128>, f32>
  // expected-error @below {{'wsc.partial_reduce' op partials must be a rank-1 memref of f32 in global memory, got memref<?x?xf32>}}
  "wsc.partial_reduce"(%acc, %partials, %partials, %c0) {splits = 2 : i32} : (!wsc.acc<array<i64: 64, 128>, f32>, memref<?x?xf32>, memref<?x?xf32>, index) -> ()
  return
}
// -----
func.func @f32_counters(%counters: memref<?xf32>) attributes {wsc.num_threads = 128 : i32} {
  %c0 = arith.constant 0 : index
  // expected-error @below {{'wsc.partial_arrive' op counters must be a rank-1 memref of i32 in global memory, got memref<?xf32>}}
  %last = "wsc.partial_arrive"(%counters, %c0) {splits = 2 : i32} : (memref<?xf32>, index) -> i1
  return
}
// -----
func.func @wgmma_without_fence() attributes {wsc.num_threads = 128 : i32} {
  %c0 = arith.constant 0 : index
  %sa = "wsc.alloc_shared"() : () -> memref<2x64x64xf16, 3>
  %sb = "wsc.alloc_shared"() : () -> memref<2x64x64xf16, 3>
  %acc = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 64, 64>, f32>
  "wsc.wgmma_fence"() : () -> ()
  "wsc.wgmma"(%sa, %sb, %c0, %acc) {a_row = 0 : i32, b_layout = "nk"} : (memref<2x64x64xf16, 3>, memref<2x64x64xf16, 3>, index, !wsc.acc<array<i64: 64, 64>, f32>) -> ()
  "wsc.wgmma_commit_group"() : () -> ()
  // The fence opened the previous group only.
  // expected-error @below {{'wsc.wgmma' op needs a wsc.wgmma_fence before it in its block (after the previous wsc.wgmma_commit_group)}}
  "wsc.wgmma"(%sa, %sb, %c0, %acc) {a_row = 0 : i32, b_layout = "nk"} : (memref<2x64x64xf16, 3>, memref<2x64x64xf16, 3>, index, !wsc.acc<array<i64: 64, 64>, f32>) -> ()
  "wsc.wgmma_commit_group"() : () -> ()
  return
}
// -----
func.func @tile_math_of_mismatched_shapes() attributes {wsc.num_threads = 128 : i32} {
  %x = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 64, 64>, f32>
  %y = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 64, 128>, f32>
  // expected-error @below {{'wsc.tile_binary' op operands have shapes x [64, 64], y [64, 128]: not one shape, or its rows with one column}}
  %s = "wsc.tile_binary"(%x, %y) {kind = "add"} : (!wsc.acc<array<i64: 64, 64>, f32>, !wsc.acc<array<i64: 64, 128>, f32>) -> !wsc.acc<array<i64: 64, 64>, f32>
  return
}
// -----
func.func @select_of_an_unknown_predicate() attributes {wsc.num_threads = 128 : i32} {
  %x = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 64, 64>, f32>
  // expected-error @below {{'wsc.tile_select' op predicate must be one of lt, le, gt, ge, eq, ne, got 'olt'}}
  %y = "wsc.tile_select"(%x, %x, %x, %x) {predicate = "olt"} : (!wsc.acc<array<i64: 64, 64>, f32>, !wsc.acc<array<i64: 64, 64>, f32>, !wsc.acc<array<i64: 64, 64>, f32>, !wsc.acc<array<i64: 64, 64>, f32>) -> !wsc.acc<array<i64: 64, 64>, f32>
  return
}
// -----
func.func @select_of_mismatched_shapes() attributes {wsc.num_threads = 128 : i32} {
  %x = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 64, 64>, f32>
  %w = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 64, 128>, f32>
  // expected-error @below {{'wsc.tile_select' op operands have shapes lhs [64, 64], rhs [64, 64], on_true [64, 128], on_false [64, 64]: not one shape, or its rows with one column}}
  %y = "wsc.tile_select"(%x, %x, %w, %x) {predicate = "lt"} : (!wsc.acc<array<i64: 64, 64>, f32>, !wsc.acc<array<i64: 64, 64>, f32>, !wsc.acc<array<i64: 64, 128>, f32>, !wsc.acc<array<i64: 64, 64>, f32>) -> !wsc.acc<array<i64: 64, 64>, f32>
  return
}
// -----
func.func @indices_along_no_axis() attributes {wsc.num_threads = 128 : i32} {
  %c0 = arith.constant 0 : index
  // expected-error @below {{'wsc.tile_iota' op along must be one of rows, cols, got 'depth'}}
  %i = "wsc.tile_iota"(%c0) {along = "depth"} : (index) -> !wsc.acc<array<i64: 64, 64>, f32>
  return
}
// -----
func.func @tile_math_in_f16() attributes {wsc.num_threads = 128 : i32} {
  %x = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 64, 64>, f16>
  // expected-error @below {{'wsc.tile_unary' op x must be an f32 register tile, got f16}}
  %y = "wsc.tile_unary"(%x) {kind = "relu"} : (!wsc.acc<array<i64: 64, 64>, f16>) -> !wsc.acc<array<i64: 64, 64>, f16>
  return
}
// -----
func.func @tile_math_of_an_unknown_kind() attributes {wsc.num_threads = 128 : i32} {
  %x = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 64, 64>, f32>
  // expected-error @below {{'wsc.tile_unary' op kind must be one of exp2, log2, rsqrt, tanh, erf, relu, neg, got 'gelu'}}
  %y = "wsc.tile_unary"(%x) {kind = "gelu"} : (!wsc.acc<array<i64: 64, 64>, f32>) -> !wsc.acc<array<i64: 64, 64>, f32>
  return
}
// -----
func.func @tile_binary_of_an_unknown_kind() attributes {wsc.num_threads = 128 : i32} {
  %x = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 64, 64>, f32>
  // expected-error @below {{'wsc.tile_binary' op kind must be one of add, sub, mul, div, max, min, got 'pow'}}
  %y = "wsc.tile_binary"(%x, %x) {kind = "pow"} : (!wsc.acc<array<i64: 64, 64>, f32>, !wsc.acc<array<i64: 64, 64>, f32>) -> !wsc.acc<array<i64: 64, 64>, f32>
  return
}
// -----
func.func @tile_load_of_a_vector(%v: memref<?xf16>) attributes {wsc.num_threads = 128 : i32} {
  %c0 = arith.constant 0 : index
  // expected-error @below {{'wsc.tile_load' op source must be a rank-2 memref in global memory, got memref<?xf16>}}
  %t = "wsc.tile_load"(%v, %c0, %c0) : (memref<?xf16>, index, index) -> !wsc.acc<array<i64: 64, 64>, f32>
  return
}
// -----
func.func @tile_load_into_f16(%r: memref<?x?xf16>) attributes {wsc.num_threads = 128 : i32} {
  %c0 = arith.constant 0 : index
  // expected-error @below {{'wsc.tile_load' op result must be an f32 register tile, got f16}}
  %t = "wsc.tile_load"(%r, %c0, %c0) : (memref<?x?xf16>, index, index) -> !wsc.acc<array<i64: 64, 64>, f16>
  return
}
// -----
func.func @tile_load_of_integers(%r: memref<?x?xi32>) attributes {wsc.num_threads = 128 : i32} {
  %c0 = arith.constant 0 : index
  // expected-error @below {{'wsc.tile_load' op source element type must be one of f16, bf16, f32; got i32}}
  %t = "wsc.tile_load"(%r, %c0, %c0) : (memref<?x?xi32>, index, index) -> !wsc.acc<array<i64: 64, 64>, f32>
  return
}
// -----
func.func @broadcast_of_a_matrix(%r: memref<?x?xf16>) attributes {wsc.num_threads = 128 : i32} {
  %c0 = arith.constant 0 : index
  // expected-error @below {{'wsc.tile_broadcast' op source must be a rank-1 memref in global memory, got memref<?x?xf16>}}
  %t = "wsc.tile_broadcast"(%r, %c0) {along = "cols"} : (memref<?x?xf16>, index) -> !wsc.acc<array<i64: 64, 64>, f32>
  return
}
// -----
func.func @broadcast_along_a_diagonal(%v: memref<?xf16>) attributes {wsc.num_threads = 128 : i32} {
  %c0 = arith.constant 0 : index
  // expected-error @below {{'wsc.tile_broadcast' op along must be one of rows, cols, got 'diagonal'}}
  %t = "wsc.tile_broadcast"(%v, %c0) {along = "diagonal"} : (memref<?xf16>, index) -> !wsc.acc<array<i64: 64, 64>, f32>
  return
}
// -----
func.func @row_reduce_of_an_unknown_kind() attributes {wsc.num_threads = 128 : i32} {
  %x = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 64, 64>, f32>
  // expected-error @below {{'wsc.tile_row_reduce' op kind must be one of max, sum, got 'min'}}
  %y = "wsc.tile_row_reduce"(%x) {kind = "min"} : (!wsc.acc<array<i64: 64, 64>, f32>) -> !wsc.acc<array<i64: 64, 1>, f32>
  return
}
// -----
func.func @row_reduce_to_another_shape() attributes {wsc.num_threads = 128 : i32} {
  %x = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 64, 64>, f32>
  // expected-error @below {{'wsc.tile_row_reduce' op result must be the row vector [64, 1] of x's rows, got [64, 64]}}
  %y = "wsc.tile_row_reduce"(%x) {kind = "sum"} : (!wsc.acc<array<i64: 64, 64>, f32>) -> !wsc.acc<array<i64: 64, 64>, f32>
  return
}
// -----
func.func @a_row_vector_of_other_rows() attributes {wsc.num_threads = 128 : i32} {
  %x = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 128, 64>, f32>
  %v = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 64, 1>, f32>
  // expected-error @below {{'wsc.tile_binary' op operands have shapes x [128, 64], y [64, 1]: not one shape, or its rows with one column}}
  %s = "wsc.tile_binary"(%x, %v) {kind = "mul"} : (!wsc.acc<array<i64: 128, 64>, f32>, !wsc.acc<array<i64: 64, 1>, f32>) -> !wsc.acc<array<i64: 128, 64>, f32>
  return
}
// -----
func.func @a_broadcast_of_the_vector_type() attributes {wsc.num_threads = 128 : i32} {
  %x = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 64, 64>, f32>
  %v = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 64, 1>, f32>
  // expected-error @below {{'wsc.tile_binary' op result type !wsc.acc<array<i64: 64, 1>, f32> differs from the widest operand's !wsc.acc<array<i64: 64, 64>, f32>}}
  %s = "wsc.tile_binary"(%x, %v) {kind = "mul"} : (!wsc.acc<array<i64: 64, 64>, f32>, !wsc.acc<array<i64: 64, 1>, f32>) -> !wsc.acc<array<i64: 64, 1>, f32>
  return
}
// -----
func.func @a_row_vector_as_a_wgmma_accumulator(%sa: memref<2x64x64xf16, 3>, %sb: memref<2x64x64xf16, 3>) attributes {wsc.num_threads = 128 : i32} {
  %c0 = arith.constant 0 : index
  %acc = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 64, 1>, f32>
  "wsc.wgmma_fence"() : () -> ()
  // expected-error @below {{'wsc.wgmma' op a row vector [64, 1] (f32) serves register math alone, in f32: 'wsc.wgmma' takes tiles of a multiple of 8 columns}}
  "wsc.wgmma"(%sa, %sb, %c0, %acc) {a_row = 0 : i32, b_layout = "nk"} : (memref<2x64x64xf16, 3>, memref<2x64x64xf16, 3>, index, !wsc.acc<array<i64: 64, 1>, f32>) -> ()
  return
}
// -----
func.func @an_f16_row_vector() attributes {wsc.num_threads = 128 : i32} {
  // expected-error @below {{'wsc.acc_alloc' op a row vector [64, 1] (f16) serves register math alone, in f32: 'wsc.acc_alloc' takes tiles of a multiple of 8 columns}}
  %v = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 64, 1>, f16>
  return
}
// -----
func.func @a_transposed_on_a_store(%c: memref<?x?xf16>) attributes {wsc.num_threads = 128 : i32} {
  %c0 = arith.constant 0 : index
  %acc = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 64, 64>, f32>
  // expected-error @below {{'wsc.store' op 'a_transposed' applies to wsc.wgmma only}}
  "wsc.store"(%acc, %c, %c0, %c0) {a_transposed} : (!wsc.acc<array<i64: 64, 64>, f32>, memref<?x?xf16>, index, index) -> ()
  return
}
// -----
func.func @register_a_of_f32() attributes {wsc.num_threads = 128 : i32} {
  %c0 = arith.constant 0 : index
  %sb = "wsc.alloc_shared"() : () -> memref<2x64x64xf16, 3>
  %a = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 64, 64>, f32>
  %acc = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 64, 64>, f32>
  "wsc.wgmma_fence"() : () -> ()
  // expected-error @below {{'wsc.wgmma_register_a' op A (registers) and B must be both f16 or both bf16, got f32 and f16}}
  "wsc.wgmma_register_a"(%a, %sb, %c0, %acc) {b_layout = "nk"} : (!wsc.acc<array<i64: 64, 64>, f32>, memref<2x64x64xf16, 3>, index, !wsc.acc<array<i64: 64, 64>, f32>) -> ()
  return
}
// -----
func.func @register_a_into_f16() attributes {wsc.num_threads = 128 : i32} {
  %c0 = arith.constant 0 : index
  %sb = "wsc.alloc_shared"() : () -> memref<2x64x64xf16, 3>
  %a = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 64, 64>, f16>
  %acc = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 64, 64>, f16>
  "wsc.wgmma_fence"() : () -> ()
  // expected-error @below {{'wsc.wgmma_register_a' op accumulator must be f32, got f16}}
  "wsc.wgmma_register_a"(%a, %sb, %c0, %acc) {b_layout = "nk"} : (!wsc.acc<array<i64: 64, 64>, f16>, memref<2x64x64xf16, 3>, index, !wsc.acc<array<i64: 64, 64>, f16>) -> ()
  return
}
// -----
func.func @register_a_rows() attributes {wsc.num_threads = 128 : i32} {
  %c0 = arith.constant 0 : index
  %sb = "wsc.alloc_shared"() : () -> memref<2x64x64xf16, 3>
  %a = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 128, 64>, f16>
  %acc = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 64, 64>, f32>
  "wsc.wgmma_fence"() : () -> ()
  // expected-error @below {{'wsc.wgmma_register_a' op A has 128 rows, the accumulator 64}}
  "wsc.wgmma_register_a"(%a, %sb, %c0, %acc) {b_layout = "nk"} : (!wsc.acc<array<i64: 128, 64>, f16>, memref<2x64x64xf16, 3>, index, !wsc.acc<array<i64: 64, 64>, f32>) -> ()
  return
}
// -----
func.func @register_a_k_against_b() attributes {wsc.num_threads = 128 : i32} {
  %c0 = arith.constant 0 : index
  %sb = "wsc.alloc_shared"() : () -> memref<2x64x64xf16, 3>
  %a = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 64, 128>, f16>
  %acc = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 64, 64>, f32>
  "wsc.wgmma_fence"() : () -> ()
  // expected-error @below {{'wsc.wgmma_register_a' op B stage tile 64x64 (kn) does not match N=64, K=128}}
  "wsc.wgmma_register_a"(%a, %sb, %c0, %acc) {b_layout = "kn"} : (!wsc.acc<array<i64: 64, 128>, f16>, memref<2x64x64xf16, 3>, index, !wsc.acc<array<i64: 64, 64>, f32>) -> ()
  return
}
// -----
func.func @register_a_without_fence() attributes {wsc.num_threads = 128 : i32} {
  %c0 = arith.constant 0 : index
  %sb = "wsc.alloc_shared"() : () -> memref<2x64x64xf16, 3>
  %a = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 64, 64>, f16>
  %acc = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 64, 64>, f32>
  // expected-error @below {{'wsc.wgmma_register_a' op needs a wsc.wgmma_fence before it in its block}}
  "wsc.wgmma_register_a"(%a, %sb, %c0, %acc) {b_layout = "nk"} : (!wsc.acc<array<i64: 64, 64>, f16>, memref<2x64x64xf16, 3>, index, !wsc.acc<array<i64: 64, 64>, f32>) -> ()
  return
}
// -----
func.func @a_stage_outside_a() attributes {wsc.num_threads = 128 : i32} {
  %c0 = arith.constant 0 : index
  %sa = "wsc.alloc_shared"() : () -> memref<1x64x64xf16, 3>
  %sb = "wsc.alloc_shared"() : () -> memref<2x64x64xf16, 3>
  %acc = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 64, 64>, f32>
  "wsc.wgmma_fence"() : () -> ()
  // expected-error @below {{'wsc.wgmma' op a_stage 1 is outside A's 1 stages}}
  "wsc.wgmma"(%sa, %sb, %c0, %acc) {a_row = 0 : i32, a_stage = 1 : i32, b_layout = "nk"} : (memref<1x64x64xf16, 3>, memref<2x64x64xf16, 3>, index, !wsc.acc<array<i64: 64, 64>, f32>) -> ()
  return
}
// -----
func.func @rings_of_other_depths_without_a_stage() attributes {wsc.num_threads = 128 : i32} {
  %c0 = arith.constant 0 : index
  %sa = "wsc.alloc_shared"() : () -> memref<1x64x64xf16, 3>
  %sb = "wsc.alloc_shared"() : () -> memref<2x64x64xf16, 3>
  %acc = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 64, 64>, f32>
  "wsc.wgmma_fence"() : () -> ()
  // expected-error @below {{'wsc.wgmma' op A and B rings have 1 and 2 stages}}
  "wsc.wgmma"(%sa, %sb, %c0, %acc) {a_row = 0 : i32, b_layout = "nk"} : (memref<1x64x64xf16, 3>, memref<2x64x64xf16, 3>, index, !wsc.acc<array<i64: 64, 64>, f32>) -> ()
  return
}
// -----
func.func @assign_of_another_type() attributes {wsc.num_threads = 128 : i32} {
  %dst = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 64, 64>, f32>
  %src = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 64, 128>, f32>
  // expected-error @below {{'wsc.tile_assign' op src's type !wsc.acc<array<i64: 64, 128>, f32> differs from dst's !wsc.acc<array<i64: 64, 64>, f32>}}
  "wsc.tile_assign"(%dst, %src) : (!wsc.acc<array<i64: 64, 64>, f32>, !wsc.acc<array<i64: 64, 128>, f32>) -> ()
  return
}
// -----
func.func @assign_to_a_computed_tile() attributes {wsc.num_threads = 128 : i32} {
  %x = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 64, 64>, f32>
  %y = "wsc.tile_unary"(%x) {kind = "relu"} : (!wsc.acc<array<i64: 64, 64>, f32>) -> !wsc.acc<array<i64: 64, 64>, f32>
  // expected-error @below {{'wsc.tile_assign' op dst must be a tile of wsc.acc_alloc (written in place), not of 'wsc.tile_unary'}}
  "wsc.tile_assign"(%y, %x) : (!wsc.acc<array<i64: 64, 64>, f32>, !wsc.acc<array<i64: 64, 64>, f32>) -> ()
  return
}
// -----
func.func @batch_matrix_of_a_matrix(%a: memref<?x?xf16>) attributes {wsc.num_threads = 128 : i32} {
  %c0 = arith.constant 0 : index
  // expected-error @below {{'wsc.batch_matrix' op batch must be a rank-3 memref in global memory, got memref<?x?xf16>}}
  %m = "wsc.batch_matrix"(%a, %c0) : (memref<?x?xf16>, index) -> memref<?x?xf16>
  return
}
// -----
func.func @batch_matrix_of_another_type(%a: memref<?x?x?xf16>) attributes {wsc.num_threads = 128 : i32} {
  %c0 = arith.constant 0 : index
  // expected-error @below {{'wsc.batch_matrix' op matrix memref<?x?xbf16> must have the element type of its batch memref<?x?x?xf16>}}
  %m = "wsc.batch_matrix"(%a, %c0) : (memref<?x?x?xf16>, index) -> memref<?x?xbf16>
  return
}
// -----
func.func @batch_matrix_of_another_shape(%a: memref<?x64x?xf16>) attributes {wsc.num_threads = 128 : i32} {
  %c0 = arith.constant 0 : index
  // expected-error @below {{'wsc.batch_matrix' op matrix memref<?x?xf16> must have the shape of one matrix of its batch memref<?x64x?xf16>}}
  %m = "wsc.batch_matrix"(%a, %c0) : (memref<?x64x?xf16>, index) -> memref<?x?xf16>
  return
}
// -----
func.func @splat_into_an_f16_tile(%alpha: f32) attributes {wsc.num_threads = 128 : i32} {
  // expected-error @below {{'wsc.tile_splat' op result must be an f32 register tile, got f16}}
  %t = "wsc.tile_splat"(%alpha) : (f32) -> !wsc.acc<array<i64: 64, 64>, f16>
  return
}

// -----

func.func @col_reduce_beyond_a_warpgroup() attributes {wsc.num_threads = 128 : i32} {
  %x = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 128, 1>, f32>
  // expected-error @below {{'wsc.tile_col_reduce' op rows must be one of 1, 2, 4, 8, 16, 32, 64 (rows of one, two or four warps of each 64-row sub-tile), got 128}}
  %y = "wsc.tile_col_reduce"(%x) {kind = "sum", rows = 128 : i32} : (!wsc.acc<array<i64: 128, 1>, f32>) -> !wsc.acc<array<i64: 128, 1>, f32>
  return
}

// -----

func.func @col_reduce_of_a_tile_across_warps() attributes {wsc.num_threads = 128 : i32} {
  %x = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 64, 8>, f32>
  // expected-error @below {{'wsc.tile_col_reduce' op rows = 32 spans several warps, which combine one value each: x must be a row vector [rows, 1] (e.g. a tile_row_reduce), got 8 columns}}
  %y = "wsc.tile_col_reduce"(%x) {kind = "max", rows = 32 : i32} : (!wsc.acc<array<i64: 64, 8>, f32>) -> !wsc.acc<array<i64: 64, 8>, f32>
  return
}

// -----

func.func @col_reduce_of_an_unknown_kind() attributes {wsc.num_threads = 128 : i32} {
  %x = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 64, 8>, f32>
  // expected-error @below {{'wsc.tile_col_reduce' op kind must be one of max, sum, got 'min'}}
  %y = "wsc.tile_col_reduce"(%x) {kind = "min", rows = 2 : i32} : (!wsc.acc<array<i64: 64, 8>, f32>) -> !wsc.acc<array<i64: 64, 8>, f32>
  return
}

// -----

func.func @load_shared_of_a_part_without_offsets() attributes {wsc.num_threads = 128 : i32} {
  %c0 = arith.constant 0 : index
  %sx = "wsc.alloc_shared"() : () -> memref<2x64x256xbf16, 3>
  // expected-error @below {{'wsc.load_shared' op tile 64x128 differs from the 64x256 stage tile (give row and col to address a block of it)}}
  %x = "wsc.load_shared"(%sx, %c0) : (memref<2x64x256xbf16, 3>, index) -> !wsc.acc<array<i64: 64, 128>, f32>
  return
}

// -----

func.func @load_shared_past_the_stage() attributes {wsc.num_threads = 128 : i32} {
  %c0 = arith.constant 0 : index
  %sx = "wsc.alloc_shared"() : () -> memref<2x64x256xbf16, 3>
  // expected-error @below {{'wsc.load_shared' op block [0:64, 192:320] is outside the 64x256 stage tile}}
  %x = "wsc.load_shared"(%sx, %c0) {row = 0 : i32, col = 192 : i32} : (memref<2x64x256xbf16, 3>, index) -> !wsc.acc<array<i64: 64, 128>, f32>
  return
}

// -----

func.func @load_shared_at_an_odd_column() attributes {wsc.num_threads = 128 : i32} {
  %c0 = arith.constant 0 : index
  %sx = "wsc.alloc_shared"() : () -> memref<2x64x256xbf16, 3>
  // expected-error @below {{'wsc.load_shared' op block offset (0, 4) must be a multiple of 64 rows and 8 columns (a fragment's rows and column pairs)}}
  %x = "wsc.load_shared"(%sx, %c0) {row = 0 : i32, col = 4 : i32} : (memref<2x64x256xbf16, 3>, index) -> !wsc.acc<array<i64: 64, 128>, f32>
  return
}

// -----

func.func @load_shared_transposed_past_the_row() attributes {wsc.num_threads = 128 : i32} {
  %c0 = arith.constant 0 : index
  %ss = "wsc.alloc_shared"() : () -> memref<2x1x128xf32, 3>
  // expected-error @below {{'wsc.load_shared' op transposed block 1x64 differs from the 1x128 stage tile (give row and col to address a block of it)}}
  %x = "wsc.load_shared"(%ss, %c0) {transpose} : (memref<2x1x128xf32, 3>, index) -> !wsc.acc<array<i64: 64, 1>, f32>
  return
}

// -----

func.func @load_shared_transposed_between_row_blocks() attributes {wsc.num_threads = 128 : i32} {
  %c0 = arith.constant 0 : index
  %ss = "wsc.alloc_shared"() : () -> memref<2x1x128xf32, 3>
  // expected-error @below {{'wsc.load_shared' op block offset (0, 32) must be a multiple of 8 rows and 64 columns (a fragment's column pairs and rows, transposed)}}
  %x = "wsc.load_shared"(%ss, %c0) {row = 0 : i32, col = 32 : i32, transpose} : (memref<2x1x128xf32, 3>, index) -> !wsc.acc<array<i64: 64, 1>, f32>
  return
}

// -----

func.func @load_shared_row_vector_untransposed() attributes {wsc.num_threads = 128 : i32} {
  %c0 = arith.constant 0 : index
  %sx = "wsc.alloc_shared"() : () -> memref<2x64x64xf16, 3>
  // expected-error @below {{'wsc.load_shared' op a row vector [64, 1] (f32) serves register math alone, in f32: 'wsc.load_shared' takes tiles of a multiple of 8 columns}}
  %x = "wsc.load_shared"(%sx, %c0) {row = 0 : i32, col = 0 : i32} : (memref<2x64x64xf16, 3>, index) -> !wsc.acc<array<i64: 64, 1>, f32>
  return
}

// -----

func.func @load_shared_into_bf16() attributes {wsc.num_threads = 128 : i32} {
  %c0 = arith.constant 0 : index
  %sx = "wsc.alloc_shared"() : () -> memref<2x64x128xbf16, 3>
  // expected-error @below {{'wsc.load_shared' op result must be an f32 register tile, got bf16}}
  %x = "wsc.load_shared"(%sx, %c0) : (memref<2x64x128xbf16, 3>, index) -> !wsc.acc<array<i64: 64, 128>, bf16>
  return
}

// -----

func.func @store_shared_past_the_stage() attributes {wsc.num_threads = 128 : i32} {
  %c0 = arith.constant 0 : index
  %sx = "wsc.alloc_shared"() : () -> memref<1x128x64xf16, 3>
  %t = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 128, 64>, f16>
  // expected-error @below {{'wsc.store_shared' op block [64:192, 0:64] is outside the 128x64 stage tile}}
  "wsc.store_shared"(%t, %sx, %c0) {row = 64 : i32, col = 0 : i32} : (!wsc.acc<array<i64: 128, 64>, f16>, memref<1x128x64xf16, 3>, index) -> ()
  return
}
