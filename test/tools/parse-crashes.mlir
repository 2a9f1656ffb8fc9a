// Inputs that once crashed wsc-opt, found by the fuzzer (test/fuzz): each must
// give one located error and exit status 1.
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
