// wsc-opt behaves like mlir-opt on the command line: bad input gives a located
// error and exit status 1, never a Python traceback.

// An empty file is an empty module.
// RUN: echo "" | wsc-opt - | FileCheck %s --check-prefix=EMPTY
// EMPTY: module {
// EMPTY-NEXT: }

// RUN: not wsc-opt %S/does-not-exist.mlir 2>&1 | FileCheck %s --check-prefix=MISSING
// MISSING: wsc-opt: error: could not open input file '{{.*}}does-not-exist.mlir': No such file or directory
// MISSING-NOT: Traceback

// RUN: printf 'garbage\xff\xfe' | not wsc-opt - 2>&1 | FileCheck %s --check-prefix=BYTES
// BYTES: <stdin>:1:8: error: input is not valid UTF-8 text

// RUN: printf '"wsc.bogus"() : () -> ()' | not wsc-opt - 2>&1 | FileCheck %s --check-prefix=UNKNOWN
// UNKNOWN: <stdin>:1:1: error: unregistered operation 'wsc.bogus' found in dialect ('wsc')

// An op of a dialect no one registered: MLIR's advice names a flag wsc-opt does not take.
// RUN: printf '"foo.bar"() : () -> ()' | not wsc-opt - 2>&1 | FileCheck %s --check-prefix=FOREIGN
// FOREIGN: <stdin>:1:10: error: operation being parsed with an unregistered dialect. wsc's tools parse only registered dialects (MLIR's upstream ones and wsc): check the op's dialect prefix
// FOREIGN-NOT: allow-unregistered-dialect

// RUN: not wsc-opt --no-such-pass %s 2>&1 | FileCheck %s --check-prefix=FLAG
// FLAG: wsc-opt: error: unknown command line argument '--no-such-pass'

// MLIR's own passes are flags too, as in mlir-opt, with their options checked.
// RUN: wsc-opt --warp-specialize --canonicalize='max-iterations=3' --cse --dump-pass-pipeline %S/../../examples/matmul_v2.mlir 2>&1 >/dev/null | FileCheck %s --check-prefix=UPSTREAM
// UPSTREAM: builtin.module(warp-specialize{{.*}},canonicalize{{.*}} max-iterations=3 {{.*}},cse)
// A pass restricted to an op is nested in it, as mlir-opt nests it.
// RUN: wsc-opt --buffer-hoisting --dump-pass-pipeline %S/../../examples/matmul_v2.mlir 2>&1 >/dev/null | FileCheck %s --check-prefix=NESTED-FLAG
// NESTED-FLAG: builtin.module(func.func(buffer-hoisting))
// RUN: not wsc-opt --canonicalize=bogus=1 %s 2>&1 | FileCheck %s --check-prefix=UPSTREAM-OPTION
// UPSTREAM-OPTION: wsc-opt: error: --canonicalize=bogus=1: <Pass-Options-Parser>: no such option bogus

// RUN: not wsc-opt --pass-pipeline='builtin.module(warp-specialize{num-stages=4}' %s 2>&1 | FileCheck %s --check-prefix=PARENS
// PARENS: wsc-opt: error: pass pipeline has unbalanced parentheses: 'builtin.module(warp-specialize{num-stages=4}'

// An upstream pipeline element MLIR does not know is a command-line error too,
// reported before the input is read.
// RUN: not wsc-opt --pass-pipeline='builtin.module(cse,nope)' %S/does-not-exist.mlir 2>&1 | FileCheck %s --check-prefix=NOPE
// NOPE: wsc-opt: error: invalid pass pipeline element 'nope': 'nope' does not refer to a registered pass or pass pipeline; see 'wsc-opt --help' for the passes

// wsc's passes are module passes; an empty element is a typo, not a no-op.
// RUN: not wsc-opt --pass-pipeline='builtin.module(func.func(warp-specialize))' %s 2>&1 | FileCheck %s --check-prefix=NESTED
// NESTED: wsc-opt: error: 'func.func(warp-specialize)': wsc's passes run on the module (each transforms its kernels): list them directly in builtin.module(...)
// RUN: not wsc-opt --pass-pipeline='builtin.module(cse,,canonicalize)' %s 2>&1 | FileCheck %s --check-prefix=EMPTY-ELEMENT
// EMPTY-ELEMENT: wsc-opt: error: empty element in pass pipeline 'cse,,canonicalize'

// RUN: not wsc-opt %s %s 2>&1 | FileCheck %s --check-prefix=TWO
// TWO: wsc-opt: error: expected one input file, got 2

// mlir-opt's IR printing before every pass and its pass timing.
// RUN: wsc-opt --mlir-print-ir-before-all --mlir-timing --warp-specialize %S/../../examples/matmul_v2.mlir 2>&1 >/dev/null | FileCheck %s --check-prefix=BEFORE
// BEFORE: IR Dump Before WarpSpecialize (warp-specialize)
// BEFORE: Execution time report

// After a change only, after a failure only, and the pipeline spelled out
// (every option with its value), which runs as given.
// RUN: wsc-opt --mlir-print-ir-after-all --mlir-print-ir-after-change --pass-pipeline='builtin.module(cse,cse,warp-specialize)' %S/../../examples/matmul_v2.mlir 2>&1 >/dev/null | FileCheck %s --check-prefix=CHANGE
// CHANGE: IR Dump After CSE (cse)
// CHANGE-NOT: IR Dump
// CHANGE: IR Dump After WarpSpecialize (warp-specialize)
// CHANGE-NOT: IR Dump
// RUN: not wsc-opt --mlir-print-ir-after-failure --pass-pipeline='builtin.module(cse,warp-specialize{num-stages=20})' %S/../../examples/matmul_v2.mlir 2>&1 >/dev/null | FileCheck %s --check-prefix=FAILURE
// FAILURE-NOT: IR Dump After CSE
// FAILURE: IR Dump After WarpSpecialize Failed (warp-specialize)
// FAILURE: error: 'wsc.alloc_shared' op result needs 20 x 16384
// After or before the passes named only (MLIR's own printing, around them alone);
// the output is the same IR as the whole pipeline run at once.
// RUN: wsc-opt --mlir-print-ir-after=warp-specialize --mlir-print-ir-before=canonicalize,cse --pass-pipeline='builtin.module(canonicalize,warp-specialize,cse,canonicalize)' %S/../../examples/matmul_v2.mlir 2>&1 >/dev/null | FileCheck %s --check-prefix=NAMED
// NAMED: IR Dump Before Canonicalizer (canonicalize)
// NAMED-NOT: IR Dump
// NAMED: IR Dump After WarpSpecialize (warp-specialize)
// NAMED-NOT: IR Dump
// NAMED: IR Dump Before CSE (cse)
// NAMED-NOT: IR Dump
// NAMED: IR Dump Before Canonicalizer (canonicalize)
// NAMED-NOT: IR Dump
// RUN: wsc-opt --pass-pipeline='builtin.module(canonicalize,warp-specialize,cse,canonicalize)' %S/../../examples/matmul_v2.mlir > %t.whole
// RUN: wsc-opt --mlir-print-ir-after=warp-specialize --pass-pipeline='builtin.module(canonicalize,warp-specialize,cse,canonicalize)' %S/../../examples/matmul_v2.mlir 2>/dev/null > %t.named
// RUN: diff %t.whole %t.named
// RUN: not wsc-opt --mlir-print-ir-after=warp-specialise --warp-specialize %S/../../examples/matmul_v2.mlir 2>&1 | FileCheck %s --check-prefix=NAMED-UNKNOWN
// NAMED-UNKNOWN: wsc-opt: error: --mlir-print-ir-after: 'warp-specialise' names no pass; see 'wsc-opt --help' for the passes
// RUN: wsc-opt --dump-pass-pipeline --pass-pipeline='builtin.module(warp-specialize{num-stages=3},cse)' %S/../../examples/matmul_v2.mlir 2>&1 >/dev/null | FileCheck %s --check-prefix=DUMP
// DUMP: Pass Manager with 2 passes:
// DUMP-NEXT: builtin.module(warp-specialize{num-stages=3 num-consumer-groups=1 producer=warp {{.*}} verify=true},cse)
// DUMP-EMPTY:
// The dumped line, run again, gives what the line it came from gives.
// RUN: wsc-opt --pass-pipeline='builtin.module(warp-specialize{num-stages=3},cse)' %S/../../examples/matmul_v2.mlir > %t.given
// RUN: wsc-opt --dump-pass-pipeline --pass-pipeline='builtin.module(warp-specialize{num-stages=3},cse)' %S/../../examples/matmul_v2.mlir 2>&1 >/dev/null | sed -n 2p > %t.pipeline
// RUN: xargs -d '\n' -I PIPELINE wsc-opt --pass-pipeline=PIPELINE %S/../../examples/matmul_v2.mlir < %t.pipeline > %t.dumped
// RUN: diff %t.given %t.dumped

// RUN: wsc-opt --help | FileCheck %s --check-prefix=HELP
// HELP: USAGE: wsc-opt [options]
// HELP: PASSES

// Option values outside what a pass takes are errors before anything runs.
// RUN: not wsc-opt --warp-specialize=num-stages=-1 %s 2>&1 | FileCheck %s --check-prefix=STAGES
// STAGES: wsc-opt: error: pass 'warp-specialize': option 'num-stages' must be 0 (as written) to
// RUN: not wsc-opt --convert-wsc-to-nvvm=chip=sm_80 %s 2>&1 | FileCheck %s --check-prefix=CHIP
// CHIP: wsc-opt: error: option 'chip' must be one of sm_90a, got 'sm_80'
// RUN: not wsc-opt --convert-wsc-to-nvvm=ptx-version=1 %s 2>&1 | FileCheck %s --check-prefix=PTX
// PTX: wsc-opt: error: option 'ptx-version' must be one of 80, 81, 82, 83, 84, 85, 86, 87, 88, 90, got '1'
// RUN: not wsc-opt --verify-pipeline=max-k-tiles=100000 %s 2>&1 | FileCheck %s --check-prefix=SWEEP
// SWEEP: wsc-opt: error: pass 'verify-pipeline': option 'max-k-tiles' must be 0 to 256, got 100000

// -o writes the output file; a failed run leaves none (not an empty or stale one).
// RUN: wsc-opt %s -o %t && FileCheck %s --check-prefix=OUT < %t
// OUT: func.func @k
// RUN: echo stale > %t && not wsc-opt --warp-specialize %s -o %t 2>/dev/null && not test -e %t

func.func @k() attributes {wsc.num_threads = 128 : i32} {
  return
}
