"""The correctness sweep of the matmul kernels on a Hopper GPU, in two halves
because the GPU machine has no MLIR:

    python test/gpu/sweep.py compile DIR     # here: one artifact directory per case
    python test/gpu/sweep.py run DIR         # there: each case in its own process

`run` launches `python -m wsc.runtime.run_cli CASE --check` per case (a failed
launch poisons a CUDA context, so cases never share a process), with fresh
random inputs and a NaN-poisoned output, and prints a Markdown table of every
case's relative Frobenius error against a float64 reference. The cases cover
the dtypes, both B layouts, ragged M/N/K, K = block_k, K < stages * block_k,
k_tiles % stages != 0, 1 to 7 stages and 1, 2 and 4 consumer warpgroups.
Ragged K and N stay multiples of 8 elements where TMA reads them: TMA needs row
strides that are multiples of 16 bytes (compile_matmul rejects the others).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

# (name, m, n, k, dtype, out_dtype, b_layout, config)
SEED = dict(block_m=128, block_n=128, block_k=64, num_stages=4)
CASES = [
    ("seed-8192", 8192, 8192, 8192, "f16", "f32", "nk", SEED),
    ("seed-ragged", 1000, 1333, 520, "f16", "f32", "nk", SEED),
    ("out-f16", 1024, 1024, 1024, "f16", "f16", "nk", SEED),
    ("out-bf16", 1024, 1024, 1024, "f16", "bf16", "nk", SEED),
    ("bf16-in-f32-out", 1024, 1024, 1024, "bf16", "f32", "nk", SEED),
    ("bf16-in-bf16-out", 777, 1029, 904, "bf16", "bf16", "nk", SEED),
    ("kn-f16", 1024, 1024, 1024, "f16", "f32", "kn", dict(SEED, block_n=64)),
    ("kn-ragged-bf16", 999, 712, 336, "bf16", "f16", "kn", dict(SEED, block_n=64)),
    ("k-eq-block-k", 512, 512, 64, "f16", "f32", "nk", SEED),
    ("k-lt-stages", 512, 640, 136, "f16", "f32", "nk", SEED),
    ("k-tiles-mod-stages", 640, 512, 5 * 64, "f16", "f32", "nk", dict(SEED, num_stages=3)),
    ("k-one-element", 256, 256, 8, "f16", "f32", "nk", SEED),
    *[
        (f"stages-{s}", 1111, 987, 1000, "f16", "f32", "nk", dict(SEED, num_stages=s))
        for s in range(1, 8)
    ],
    (
        "groups-2-warpgroup",
        2048,
        2048,
        2048,
        "f16",
        "f32",
        "nk",
        dict(SEED, num_consumer_groups=2, producer="warpgroup"),
    ),
    (
        "groups-2-warp",
        1000,
        1000,
        1000,
        "f16",
        "bf16",
        "nk",
        dict(SEED, num_consumer_groups=2, producer="warp"),
    ),
    (
        "groups-2-n256",
        2048,
        2048,
        1024,
        "f16",
        "f32",
        "nk",
        dict(SEED, block_n=256, num_stages=3, num_consumer_groups=2, producer="warpgroup"),
    ),
    (
        "groups-4",
        2048,
        2048,
        2048,
        "f16",
        "f32",
        "nk",
        dict(SEED, block_m=256, num_consumer_groups=4, producer="warpgroup"),
    ),
    (
        "groups-4-ragged",
        1500,
        700,
        712,
        "bf16",
        "f16",
        "nk",
        dict(SEED, block_m=256, num_stages=3, num_consumer_groups=4, producer="warpgroup"),
    ),
    ("block-k-32", 1000, 1000, 1000, "f16", "f32", "nk", dict(SEED, block_k=32, num_stages=6)),
]


def compile_cases(out: Path) -> int:
    from wsc.kernels.matmul.build import compile_matmul
    from wsc.kernels.matmul.config import MatmulConfig, MatmulProblem

    out.mkdir(parents=True, exist_ok=True)
    index = []
    for name, m, n, k, dtype, out_dtype, b_layout, config in CASES:
        start = time.perf_counter()
        result = compile_matmul(
            m, n, k, MatmulProblem(dtype, out_dtype, b_layout), MatmulConfig(**config), out / name
        )
        report = result.ptxas
        print(
            f"{name:<22} {time.perf_counter() - start:5.2f} s  "
            f"{report.registers if report else '?'} regs  "
            f"{(report.spill_stores + report.spill_loads) if report else '?'} spill B"
        )
        index.append(name)
    (out / "cases.json").write_text(json.dumps(index))
    return 0


def run_cases(out: Path, timeout: float) -> int:
    results, failed = [], 0
    for name in json.loads((out / "cases.json").read_text()):
        command = [
            sys.executable,
            "-m",
            "wsc.runtime.run_cli",
            str(out / name),
            "--check",
            "--timeout",
            str(timeout),
        ]
        if name == "seed-8192":
            command.append("--bench")
        proc = subprocess.run(command, capture_output=True, text=True, timeout=timeout + 120)
        line = proc.stdout.strip().splitlines()[-1] if proc.stdout.strip() else "{}"
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            record = {"ok": False, "error": (proc.stderr or line)[-300:]}
        record["case"] = name
        record["returncode"] = proc.returncode
        failed += not (record.get("ok") and proc.returncode == 0)
        results.append(record)
        print(json.dumps(record), flush=True)
    print()
    print(
        "| case | M x N x K | in -> out | B | stages | groups | producer | rel. error | NaN | ok |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in results:
        config = r.get("config", {})
        shape = "x".join(map(str, r.get("shape", [])))
        error = r.get("rel_err")
        print(
            f"| {r['case']} | {shape} | {r.get('dtype')} -> {r.get('out_dtype')} | "
            f"{r.get('b_layout')} | {config.get('num_stages')} | "
            f"{config.get('num_consumer_groups')} | {config.get('producer')} | "
            f"{error:.2e} | {r.get('nan_count')} | {'yes' if r.get('ok') else 'NO'} |"
            if error is not None
            else f"| {r['case']} | failed: {r.get('error')} |"
        )
    print(f"\n{len(results) - failed} passed, {failed} failed")
    return 1 if failed else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("mode", choices=("compile", "run"))
    parser.add_argument("dir", type=Path)
    parser.add_argument("--timeout", type=float, default=60.0)
    args = parser.parse_args()
    return compile_cases(args.dir) if args.mode == "compile" else run_cases(args.dir, args.timeout)


if __name__ == "__main__":
    sys.exit(main())
