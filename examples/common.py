"""What every example does with the kernel it builds: compile it, print a
summary and, on a Hopper GPU, run it, check it and time it.

    python examples/<example>.py [--print-ir] [--compile-only] [--size N] [--out DIR] [--tune]

It writes two artifact directories, DIR/check for a problem that is no
multiple of any tile (1000 x 1333 x 520, where ragged edges and TMA zero-fill
matter) and DIR/bench for --size^3. On a Hopper GPU each runs in a process of
its own, with random inputs and an output poisoned with NaN, against a
float64 reference, and the second is also timed (median of CUDA-event
timings); the exit status is 1 when a check fails. The artifacts need no
MLIR: on a GPU machine without it, `wsc run DIR/check --check` and
`wsc run DIR/bench --check --bench` do the same.

--print-ir prints the kernel as built and after each wsc pass that changes it
(not the NVVM that follows); the lit tests in test/examples FileCheck it.
--tune searches the kernel's @autotune space first (compiling in parallel,
timing on a GPU) and uses the winner.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from wsc.autotune import Autotuned
from wsc.builder import BuildError, Kernel
from wsc.compiler import CompileError
from wsc.device import hopper_gpu_visible, run_artifact

#: No multiple of a tile in any dimension; K stays a multiple of 8 elements
#: because TMA needs 16-byte row strides.
RAGGED = {"m": 1000, "n": 1333, "k": 520}
#: The IR dumps that are not wsc IR any more.
_LOWERED = ("convert-wsc-to-nvvm",)


def _print_ir(kernel: Kernel, dump_dir: Path) -> None:
    for stage in kernel.lineage():
        title = "as built" if stage.made_by == "builder" else f"after --{stage.made_by}"
        print(f"// ===== IR {title} =====")
        print(stage)
    for path in sorted(dump_dir.glob("[0-9][0-9]-*.mlir")):
        flag = path.stem.split("-", 1)[1]
        # 00-input is the kernel printed last above; --verify-pipeline leaves IR unchanged.
        if flag in ("input", "verify-pipeline", *_LOWERED):
            continue
        print(f"// ===== IR after --{flag} =====")
        print(path.read_text())


def _report_line(label: str, sizes: dict, report: dict) -> str:
    shape = "x".join(str(value) for value in sizes.values())
    if "error" in report and report.get("rel_err") is None:
        return f"{label} {shape}: FAILED: {report['error']}"
    status = "ok" if report.get("ok") else "FAILED"
    text = (
        f"{label} {shape}: {status}, rel_err {report.get('rel_err')}, "
        f"NaNs {report.get('nan_count')}"
    )
    if report.get("ms") is not None:
        text += f", {report['ms']:.3f} ms"
    if report.get("tflops") is not None:  # a reference function counts no flops
        text += f", {report['tflops']:.0f} TFLOPS"
    return text


def _timed_size(text: str) -> int:
    """--size: a positive multiple of 16, as TMA copies rows of 16-byte multiples
    (16 fp8 elements, 8 of 16 bits)."""
    try:
        size = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expects an int, got '{text}'") from None
    if size <= 0 or size % 16:
        raise argparse.ArgumentTypeError(
            f"must be a positive multiple of 16 (TMA copies rows of 16-byte multiples), got {size}"
        )
    return size


def run_example(
    doc: str,
    build: Callable[..., Kernel],
    argv: list[str] | None = None,
    ragged: dict | None = None,
    bench_sizes: Callable[[int], dict] | None = None,
) -> int:
    """Parse the example's command line, build with `build` (an @autotune'd
    function or a plain one) and do what the module docstring says; `ragged`
    replaces RAGGED as the checked problem, and `bench_sizes(--size)` the
    timed one (M = N = K = --size) for a kernel of other sizes."""
    parser = argparse.ArgumentParser(description=doc.strip().splitlines()[0])
    parser.add_argument(
        "--print-ir", action="store_true", help="print the IR as built and after each wsc pass"
    )
    parser.add_argument("--compile-only", action="store_true", help="do not run, even on a GPU")
    parser.add_argument(
        "--size",
        type=_timed_size,
        default=8192,
        help="M = N = K of the timed run (a multiple of 16)",
    )
    parser.add_argument("--out", help="directory for the artifacts (default: a temporary one)")
    parser.add_argument(
        "--tune", action="store_true", help="autotune over the kernel's @autotune space first"
    )
    args = parser.parse_args(argv)
    if args.out is not None:
        try:
            Path(args.out).mkdir(parents=True, exist_ok=True)
        except OSError as error:
            parser.error(f"--out: cannot write '{args.out}': {error.strerror}")

    print(doc.strip().splitlines()[0], flush=True)
    out = Path(args.out or tempfile.mkdtemp(prefix="wsc-example-"))
    bench = (
        bench_sizes(args.size) if bench_sizes else {"m": args.size, "n": args.size, "k": args.size}
    )
    gpu = not args.compile_only and hopper_gpu_visible()
    config = {}
    try:
        if args.tune and isinstance(build, Autotuned):
            result = build.tune(bench)
            print(f"autotune over {len(result.candidates)} configs:\n{result.table()}")
            config = result.best or {}
        kernel = build(**config)
        compiled = kernel.compile(dump_dir=out / "ir")
    except (BuildError, CompileError) as error:  # located `file:line:col: error: ...` lines
        print(error, file=sys.stderr)
        return 1
    if args.print_ir:
        _print_ir(kernel, out / "ir")
    print(f"compiled ({', '.join(f'{k}={v}' for k, v in config.items()) or 'defaults'}):")
    print(compiled.summary())
    runs = [("check", ragged or RAGGED, False), ("bench", bench, True)]
    directories = {label: compiled.write_artifact(out / label, **sizes) for label, sizes, _ in runs}
    print(f"artifacts: {directories['check']} (ragged), {directories['bench']} (timed)")
    if not gpu:
        # The artifacts need no MLIR: a GPU machine without it runs them as they are.
        print(
            "no Hopper GPU used: compiled only. On one, `wsc run DIR --check [--bench]` "
            "runs an artifact directory"
        )
        return 0
    ok = True
    for label, sizes, timed in runs:
        report = run_artifact(directories[label], bench=timed)
        print(_report_line(label, sizes, report))
        ok = ok and bool(report.get("ok"))
    return 0 if ok else 1
