// A WGMMA whose A operand is register math on the K tile's stage (relu of
// A, read with wsc.load_shared): specialized with each K tile's WGMMA group
// retired in its own K tile; wgmma-in-flight = 1, which would run the next K
// tile's math into the registers the group in flight still reads, is refused
// at the WGMMA.
// RUN: wsc-opt --warp-specialize='num-consumer-groups=2 producer=warpgroup' --verify-pipeline %s | FileCheck %s
// RUN: not wsc-opt --warp-specialize='num-consumer-groups=2 producer=warpgroup wgmma-in-flight=1' %s 2>&1 | FileCheck %s --check-prefix=IN-FLIGHT

// CHECK-LABEL: func.func @relu_a_times_b
// CHECK: role = "consumer"
// CHECK: "wsc.load_shared"
// CHECK: "wsc.wgmma_register_a"
// CHECK-NEXT: "wsc.wgmma_commit_group"
// CHECK-NEXT: "wsc.wgmma_wait_group"() {pending = 0 : i32}

// IN-FLIGHT: :[[# @LINE + 31]]:5: error: --warp-specialize: wgmma-in-flight = 1 leaves the K tile's WGMMA group in flight while the next K tile's ops run, and this WGMMA reads its A operand from a register tile made in the K loop, which those ops make again (ptxas would serialize every WGMMA): use wgmma-in-flight = 0
func.func @relu_a_times_b(%a: memref<?x?xf16>, %b: memref<?x?xf16>, %c: memref<?x?xf32>)
    attributes {wsc.num_threads = 128 : i32} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %c128 = arith.constant 128 : index
  %false = arith.constant false
  %m0 = arith.muli %c0, %c128 : index
  %n0 = arith.muli %c0, %c128 : index
  %k = memref.dim %a, %c1 : memref<?x?xf16>
  %k_tiles = arith.ceildivui %k, %c64 : index
  %sa = "wsc.alloc_shared"() : () -> memref<3x128x64xf16, 3>
  %sb = "wsc.alloc_shared"() : () -> memref<3x64x128xf16, 3>
  %full = "wsc.mbarrier_alloc"() {arrival_count = 1 : i32, num_barriers = 3 : i32} : () -> !wsc.mbarriers
  "wsc.sync"() : () -> ()
  %acc = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 128, 128>, f32>
  %stage_n, %phase_n = scf.for %kt = %c0 to %k_tiles step %c1
      iter_args(%stage = %c0, %phase = %false) -> (index, i1) {
    %k0 = arith.muli %kt, %c64 : index
    %elected = "wsc.elect"() : () -> i1
    scf.if %elected {
      "wsc.mbarrier_arrive_expect_tx"(%full, %stage) {tx_bytes = 32768 : i32} : (!wsc.mbarriers, index) -> ()
      "wsc.tma_load"(%a, %m0, %k0, %sa, %stage, %full) : (memref<?x?xf16>, index, index, memref<3x128x64xf16, 3>, index, !wsc.mbarriers) -> ()
      "wsc.tma_load"(%b, %k0, %n0, %sb, %stage, %full) : (memref<?x?xf16>, index, index, memref<3x64x128xf16, 3>, index, !wsc.mbarriers) -> ()
    }
    "wsc.mbarrier_wait"(%full, %stage, %phase) : (!wsc.mbarriers, index, i1) -> ()
    %a_tile = "wsc.load_shared"(%sa, %stage) : (memref<3x128x64xf16, 3>, index) -> !wsc.acc<array<i64: 128, 64>, f32>
    "wsc.wgmma_fence"() : () -> ()
    %relu = "wsc.tile_unary"(%a_tile) {kind = "relu"} : (!wsc.acc<array<i64: 128, 64>, f32>) -> !wsc.acc<array<i64: 128, 64>, f32>
    %a16 = "wsc.cast"(%relu) : (!wsc.acc<array<i64: 128, 64>, f32>) -> !wsc.acc<array<i64: 128, 64>, f16>
    "wsc.wgmma_register_a"(%a16, %sb, %stage, %acc) {b_layout = "kn"} : (!wsc.acc<array<i64: 128, 64>, f16>, memref<3x64x128xf16, 3>, index, !wsc.acc<array<i64: 128, 128>, f32>) -> ()
    "wsc.wgmma_commit_group"() : () -> ()
    "wsc.wgmma_wait_group"() {pending = 0 : i32} : () -> ()
    "wsc.sync"() : () -> ()
    %next_stage, %next_phase = "wsc.ring_advance"(%stage, %phase) {num_stages = 3 : i32} : (index, i1) -> (index, i1)
    scf.yield %next_stage, %next_phase : index, i1
  }
  "wsc.store"(%acc, %c, %m0, %n0) : (!wsc.acc<array<i64: 128, 128>, f32>, memref<?x?xf32>, index, index) -> ()
  return
}
