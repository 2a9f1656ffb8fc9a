// --verify-diagnostics reads directives as mlir-opt does: expected-*-re is
// literal text with {{regex}} blocks, @below applies to the next line that
// holds no directive and @above to the last such line.
// RUN: wsc-opt --split-input-file --verify-diagnostics %s

// A directive it cannot read fails the run, as does a regex expectation that
// no diagnostic matches: neither passes unnoticed.
// RUN: not wsc-opt --verify-diagnostics %S/Inputs/unreadable-directive.mlir 2>&1 | FileCheck %s --check-prefix=UNREADABLE
// UNREADABLE: unreadable-directive.mlir:3:1: error: cannot read this expected-* directive: it must read expected-<severity>[-re] [@below|@above|@unknown|@+N|@-N] {{[{][{]}}text{{[}][}]}}
// RUN: not wsc-opt --verify-diagnostics %S/Inputs/unmatched-regex.mlir 2>&1 | FileCheck %s --check-prefix=REGEX
// REGEX: unmatched-regex.mlir:1:1: error: expected error "no such {{[{][{]}}.*{{[}][}]}} message" was not produced at line 2

func.func @stacked_below() attributes {wsc.num_threads = 256 : i32} {
  %r = "wsc.role"() {role = "consumer", thread_begin = 32 : i32, num_threads = 128 : i32} : () -> i1
  scf.if %r {
    // expected-error-re @below {{'wsc.acc_alloc' op makes a register tile, {{.*}} covers threads [32, 160), not}}
    // expected-note @-3 {{role defined here}}
    %acc = "wsc.acc_alloc"() : () -> !wsc.acc<array<i64: 64, 64>, f32>
  }
  return
}

// -----

func.func @above() attributes {wsc.num_threads = 64 : i32} {
  %t = "wsc.tile_fill"() {value = 1.0 : f32} : () -> !wsc.acc<array<i64: 64, 64>, f32>
  // expected-error @above {{outside a role it needs a block of a multiple of 128 threads}}
  return
}
