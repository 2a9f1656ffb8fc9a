// Inputs on which wsc-opt once crashed or failed without a located error,
// found by the fuzzer (test/fuzz/RESULTS.md): each must now give one located
// error and exit status 1.
// RUN: wsc-opt --split-input-file --verify-diagnostics --verify-pipeline %s
// RUN: not wsc-opt --split-input-file --convert-wsc-to-nvvm %s 2>&1 | FileCheck %s
// RUN: not wsc-opt %S/Inputs/nameless-op.mlir 2>&1 | FileCheck %s --check-prefix=NAMELESS
// NAMELESS: nameless-op.mlir:2:8: error: op name 'wsc.' has nothing after the dialect prefix
// CHECK-NOT: Traceback
// CHECK-NOT: internal error
// CHECK-NOT: Assertion

// After a wsc type, a token the lexer rejects made MLIR's parser report an
// error yet return a module, and the Python bindings then aborted.
%b = "wsc.mbarrier_alloc"() {arrival_count = 1 : i32, num_barriers = 2 : i32} : () -> !wsc.mbarriers
// expected-error @below {{expected '"' in string literal}}
"wsc.sync
// -----
%acc = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 64, 64>, f32>
// expected-error @below {{@ identifier expected to start with letter or '_'}}
@
// -----
func.func @k(%c: memref<?x?xf16>) {
  %acc = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 64, 64>, f32>
  // expected-error @below {{expected '"' in string literal}}
  "wsc.store*(%acc, %c) : (!wsc.acc<array<i64: 64, 64>, f32>, memref<?x?xf16>) -> ()
  return
}
// -----
// A wsc op in custom form fails to parse without any diagnostic from MLIR.
func.func @k() {
  // expected-error @below {{custom op 'wsc.sync' has no custom assembly format; write it in generic form: "wsc.sync"(operands) {attributes} : (operand types) -> (result types)}}
  wsc.sync
  return
}
// -----
// A negative tile dimension made the verifier fail with a Python TypeError.
// expected-error @below {{'wsc.acc_alloc' op register tile columns must be a multiple of 8 in [8, 256] (the WGMMA N), got -2147483648}}
%acc = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 64, -2147483648>, f32>
// -----
// A tile shape array of another element type than i64 (IRDL checks only that
// it is a dense array) failed the same way.
// expected-error @below {{'wsc.acc_alloc' op register tile type must be !wsc.acc<array<i64: rows, cols>, element>, got !wsc.acc<array<i24: 64, 300>, f32>}}
%acc = "wsc.acc_alloc"() : () -> !wsc.acc<array<i24: 64, 300>, f32>
// -----
func.func @k(%a: !wsc.acc<array<i8: 64, 64>, f32>) attributes {wsc.num_threads = 128 : i32} {
  // expected-error @below {{'wsc.cast' op register tile type must be !wsc.acc<array<i64: rows, cols>, element>, got !wsc.acc<array<i8: 64, 64>, f32>}}
  %h = "wsc.cast"(%a) : (!wsc.acc<array<i8: 64, 64>, f32>) -> !wsc.acc<array<i64: 64, 64>, f16>
  return
}
// -----
// memref.dim with a constant index past the rank passes MLIR's verifier (it is
// undefined behaviour, not invalid IR); the protocol simulator then failed
// with a Python IndexError. (The V3 example with that one change.)
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
  // expected-error @below {{'memref.dim' op dimension 128 is out of range for a rank-2 memref}}
  %k = memref.dim %a, %c128 : memref<?x?xf16>
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
// An op named by the dialect prefix alone: MLIR aborted the process (LLVM
// ERROR "wsc. created with unregistered dialect", exit 134) even without a pass.
func.func @nameless() {
  // expected-error @below {{op name 'wsc.' has nothing after the dialect prefix}}
  %e = "wsc."() : () -> i1
  return
}
