// --warp-specialize on a kernel whose WGMMA swaps the operands (C^T = B A^T:
// B's 128-row tile is the A operand) and stores its tile transposed: the
// second consumer group's 64 accumulator rows are C's columns 64..127, so
// its store moves along C's columns, not its rows.
// RUN: wsc-opt --warp-specialize='num-consumer-groups=2 producer=warpgroup' %s | FileCheck %s

func.func @swapped(%a: memref<?x?xf16>, %b: memref<?x?xf16>, %c: memref<?x?xf16>) attributes {wsc.num_threads = 128 : i32} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %false = arith.constant false
  %k = memref.dim %a, %c1 : memref<?x?xf16>
  %kt = arith.ceildivui %k, %c64 : index
  %sa = "wsc.alloc_shared"() : () -> memref<2x16x64xf16, 3>
  %sb = "wsc.alloc_shared"() : () -> memref<2x128x64xf16, 3>
  %full = "wsc.mbarrier_alloc"() {arrival_count = 1 : i32, num_barriers = 2 : i32} : () -> !wsc.mbarriers
  "wsc.sync"() : () -> ()
  %acc = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 128, 16>, f32>
  %r:2 = scf.for %i = %c0 to %kt step %c1 iter_args(%s = %c0, %p = %false) -> (index, i1) {
    %k0 = arith.muli %i, %c64 : index
    %e0 = "wsc.elect"() : () -> i1
    scf.if %e0 {
      "wsc.mbarrier_arrive_expect_tx"(%full, %s) {tx_bytes = 18432 : i32} : (!wsc.mbarriers, index) -> ()
      "wsc.tma_load"(%a, %c0, %k0, %sa, %s, %full) : (memref<?x?xf16>, index, index, memref<2x16x64xf16, 3>, index, !wsc.mbarriers) -> ()
      "wsc.tma_load"(%b, %c0, %k0, %sb, %s, %full) : (memref<?x?xf16>, index, index, memref<2x128x64xf16, 3>, index, !wsc.mbarriers) -> ()
    }
    "wsc.mbarrier_wait"(%full, %s, %p) : (!wsc.mbarriers, index, i1) -> ()
    "wsc.wgmma_fence"() : () -> ()
    "wsc.wgmma"(%sb, %sa, %s, %acc) {a_row = 0 : i32, b_layout = "nk"} : (memref<2x128x64xf16, 3>, memref<2x16x64xf16, 3>, index, !wsc.acc<array<i64: 128, 16>, f32>) -> ()
    "wsc.wgmma_commit_group"() : () -> ()
    "wsc.wgmma_wait_group"() {pending = 0 : i32} : () -> ()
    "wsc.sync"() : () -> ()
    %ns, %np = "wsc.ring_advance"(%s, %p) {num_stages = 2 : i32} : (index, i1) -> (index, i1)
    scf.yield %ns, %np : index, i1
  }
  %h = "wsc.cast"(%acc) : (!wsc.acc<array<i64: 128, 16>, f32>) -> !wsc.acc<array<i64: 128, 16>, f16>
  "wsc.store"(%h, %c, %c0, %c0) {transpose} : (!wsc.acc<array<i64: 128, 16>, f16>, memref<?x?xf16>, index, index) -> ()
  return
}

// CHECK-LABEL: func.func @swapped
// CHECK: "wsc.store"({{%.*}}, %arg2, %c0, %c0) {transpose} : (!wsc.acc<array<i64: 64, 16>, f16>, memref<?x?xf16>, index, index) -> ()
// CHECK: %[[ROWS:.*]] = arith.constant 64 : index
// CHECK: %[[COL:.*]] = arith.addi %c0, %[[ROWS]] : index
// CHECK: "wsc.store"({{%.*}}, %arg2, %c0, %[[COL]]) {transpose}

// B given as [K, N]: its [K, N] stage is the WGMMA's A operand, read M-major;
// the second consumer group reads its columns 64..127.
func.func @swapped_kn(%a: memref<?x?xf16>, %b: memref<?x?xf16>, %c: memref<?x?xf16>) attributes {wsc.num_threads = 128 : i32} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %false = arith.constant false
  %k = memref.dim %a, %c1 : memref<?x?xf16>
  %kt = arith.ceildivui %k, %c64 : index
  %sa = "wsc.alloc_shared"() : () -> memref<2x16x64xf16, 3>
  %sb = "wsc.alloc_shared"() : () -> memref<2x64x128xf16, 3>
  %full = "wsc.mbarrier_alloc"() {arrival_count = 1 : i32, num_barriers = 2 : i32} : () -> !wsc.mbarriers
  "wsc.sync"() : () -> ()
  %acc = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 128, 16>, f32>
  %r:2 = scf.for %i = %c0 to %kt step %c1 iter_args(%s = %c0, %p = %false) -> (index, i1) {
    %k0 = arith.muli %i, %c64 : index
    %e0 = "wsc.elect"() : () -> i1
    scf.if %e0 {
      "wsc.mbarrier_arrive_expect_tx"(%full, %s) {tx_bytes = 18432 : i32} : (!wsc.mbarriers, index) -> ()
      "wsc.tma_load"(%a, %c0, %k0, %sa, %s, %full) : (memref<?x?xf16>, index, index, memref<2x16x64xf16, 3>, index, !wsc.mbarriers) -> ()
      "wsc.tma_load"(%b, %k0, %c0, %sb, %s, %full) : (memref<?x?xf16>, index, index, memref<2x64x128xf16, 3>, index, !wsc.mbarriers) -> ()
    }
    "wsc.mbarrier_wait"(%full, %s, %p) : (!wsc.mbarriers, index, i1) -> ()
    "wsc.wgmma_fence"() : () -> ()
    "wsc.wgmma"(%sb, %sa, %s, %acc) {a_row = 0 : i32, a_transposed, b_layout = "nk"} : (memref<2x64x128xf16, 3>, memref<2x16x64xf16, 3>, index, !wsc.acc<array<i64: 128, 16>, f32>) -> ()
    "wsc.wgmma_commit_group"() : () -> ()
    "wsc.wgmma_wait_group"() {pending = 0 : i32} : () -> ()
    "wsc.sync"() : () -> ()
    %ns, %np = "wsc.ring_advance"(%s, %p) {num_stages = 2 : i32} : (index, i1) -> (index, i1)
    scf.yield %ns, %np : index, i1
  }
  %h = "wsc.cast"(%acc) : (!wsc.acc<array<i64: 128, 16>, f32>) -> !wsc.acc<array<i64: 128, 16>, f16>
  "wsc.store"(%h, %c, %c0, %c0) {transpose} : (!wsc.acc<array<i64: 128, 16>, f16>, memref<?x?xf16>, index, index) -> ()
  return
}

// CHECK-LABEL: func.func @swapped_kn
// CHECK: "wsc.wgmma"({{.*}}) {a_row = 0 : i32, a_transposed, b_layout = "nk"}
// CHECK: "wsc.wgmma"({{.*}}) {a_row = 64 : i32, a_transposed, b_layout = "nk"}
