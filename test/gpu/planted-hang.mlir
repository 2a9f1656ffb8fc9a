// A planted hang: the V3 matmul of examples/matmul_v3.mlir with one bug, the
// producer's first wait on the empty barriers uses phase parity 0 instead of
// 1. A fresh barrier has not completed phase 0, so that wait blocks until the
// consumers release stage 0, and they wait for the producer to fill it: a
// deadlock. --verify-pipeline finds it statically; test/gpu/hang.py compiles
// the kernel without that check and with a wait spin limit, and checks on the
// GPU that the launch fails within its timeout, naming the barrier, stage and
// phase each role gave up on.
//
// RUN: not wsc-opt --verify-pipeline %s 2>&1 | FileCheck %s --check-prefix=VERIFY
// VERIFY: planted-hang.mlir:[[@LINE+56]]:7: error: deadlock: this wait for parity 0 on empty[0] never returns
//
// The spin limit bounds every wait: a failed probe counts, the limit reports and traps.
// RUN: wsc-opt --convert-wsc-to-nvvm=wait-spin-limit=1024 %s | FileCheck %s --check-prefix=SPIN
// SPIN-DAG: llvm.mlir.global internal constant @[[CONSUMER:wsc_debug_matmul_[0-9]+]]("wsc: wait-spin-limit: kernel matmul: thread %d of block (%d, %d, %d), role consumer gave up after 1024 tries waiting on barrier full, stage %d, phase parity %d (wait at line {{[0-9]+}}, column 7); trapping\0A\00")
// SPIN-DAG: llvm.mlir.global internal constant @{{wsc_debug_matmul_[0-9]+}}("wsc: wait-spin-limit: kernel matmul: thread %d of block (%d, %d, %d), role producer gave up after 1024 tries waiting on barrier empty, stage %d, phase parity %d (wait at line {{[0-9]+}}, column 7); trapping\0A\00")
// SPIN-DAG: llvm.func @vprintf(!llvm.ptr, !llvm.ptr) -> i32
// SPIN: llvm.func @matmul(
// SPIN: llvm.mlir.addressof @[[CONSUMER]]
// SPIN: llvm.inline_asm has_side_effects {{.*}}mbarrier.try_wait.parity
// SPIN: llvm.icmp "uge" {{.*}} : i32
// SPIN: llvm.call @vprintf
// SPIN-NEXT: llvm.intr.trap
//
// Without the option the waits are unbounded and nothing is printed.
// RUN: wsc-opt --convert-wsc-to-nvvm %s | FileCheck %s --check-prefix=PLAIN
// PLAIN-NOT: vprintf
// PLAIN-NOT: llvm.intr.trap

func.func @matmul(%a: memref<?x?xf16>, %b: memref<?x?xf16>, %c: memref<?x?xf32>)
    attributes {wsc.num_threads = 160 : i32} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c64 = arith.constant 64 : index
  %c128 = arith.constant 128 : index
  %false = arith.constant false
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
