// Inputs on which wsc-opt once crashed or failed without a located error,
// found by the fuzzer (test/fuzz/RESULTS.md): each must now give one located
// error and exit status 1.
// RUN: wsc-opt --split-input-file --verify-diagnostics %s
// RUN: not wsc-opt --split-input-file --convert-wsc-to-nvvm %s 2>&1 | FileCheck %s
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
