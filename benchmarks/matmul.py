"""wsc matmul against cuBLAS (torch.matmul) and Triton, side by side in one process.

The GPU machine has no MLIR, so the benchmark runs in two halves:

    python benchmarks/matmul.py compile DIR          # CPU machine: wsc artifacts
    python benchmarks/matmul.py run DIR --out OUT    # GPU machine: wsc.runtime + torch

`compile` builds every candidate (the configs of wsc.matmul's spaces for
these problems, SPACE_CANDIDATES) and every variant of the technique log
(VARIANTS) once per input dtype, in parallel processes, and writes one
artifact directory per (kernel, shape): the kernel reads M, N, K at run time,
so one compiled kernel serves every shape. It records the compile time of
each pass.

`run` first tunes over the candidates: each runs in its own process (a
failed or hung launch poisons its CUDA context) over every shape, is checked
once per shape and timed; the fastest correct candidate of each shape is
wsc's autotuned best. Each Triton config is likewise first compiled and
checked on a small problem in a process of its own with a time limit (a
config can stall Triton's compiler: results/h200-triton-ws-probe.txt). Then one process
times, on the same inputs, cuBLAS (`a @ b.T` through torch.mm), Triton (the
configs that passed their probe, the best per shape, when triton imports)
and wsc's best, and writes results.json, results.csv, matmul.png and prints
the table.

`compare DIR A B ...` times candidates and variants against each other in
one process, interleaved with cuBLAS as in the final comparison, over every
shape each of them was compiled for: what one technique gains, e.g. a
candidate and its variant without it (the tuning times each candidate in a
process of its own, with fewer launches).

The benchmark's modules: matmul_candidates.py (shapes, candidates and
variants), matmul_harness.py (inputs, timing, checks, the environment a
results file records), matmul_baselines.py (cuBLAS and Triton) and
matmul_report.py (table, CSV, plot); this file is the command line.

Method: C = A B^T with A [M, K] and B [N, K] ("nk"), C in the input dtype
(fp32 accumulation everywhere); normal random inputs scaled by K^-1/4;
several input sets rotated between launches so no launch finds its operands
in L2; warm-up launches; the median of CUDA-event timings, one event pair per
launch, the methods of one shape taking turns launch by launch (so clocks and
temperature are the same for all); correctness checked once per shape and method on the first input set:
C poisoned with NaN, then every element checked for NaN and sampled rows and
columns compared with a float64 reference (relative Frobenius error).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

# The benchmark's modules sit beside this script.
sys.path.insert(0, str(Path(__file__).resolve().parent))

from matmul_baselines import (  # noqa: E402 (after the path)
    TRITON_CONFIGS,
    cublas_method,
    triton,
    triton_method,
)
from matmul_candidates import CANDIDATES, SHAPES, SPACE_CANDIDATES, VARIANTS  # noqa: E402
from matmul_harness import (  # noqa: E402
    FINAL,
    SAMPLED,
    SEED,
    TOLERANCE,
    TUNE,
    Inputs,
    Shape,
    checked,
    environment,
    shapes,
    time_together,
    wsc_method,
)
from matmul_report import format_table, plot, row_line, write_csv  # noqa: E402

TUNE_TIMEOUT_S = 150  # one candidate over every shape
TRITON_PROBE_TIMEOUT_S = 60  # one Triton config: compile and check, both dtypes (~5 s)


# ----------------------------------------------------------------------------
# compile (CPU machine; needs the MLIR bindings)


def _compile_candidate(job: tuple[str, dict, str, str]) -> dict:
    """Compile one candidate for one dtype; write its artifact for each shape."""
    name, config_values, dtype, out = job
    from mlir import ir

    from wsc.compiler import CompileError, compile_module
    from wsc.dialect import make_context
    from wsc.kernels.matmul.build import build_matmul, specialization_passes, write_matmul_artifact
    from wsc.kernels.matmul.config import MatmulConfig, MatmulProblem

    config = MatmulConfig(**config_values)
    problem = MatmulProblem(dtype=dtype, out_dtype=dtype, b_layout="nk")
    start = time.perf_counter()
    try:
        with make_context(), ir.Location.unknown():
            result = compile_module(build_matmul(problem, config), specialization_passes(config))
    except CompileError as error:
        return {"candidate": name, "dtype": dtype, "error": str(error)}
    seconds = time.perf_counter() - start
    shapes, skipped = [], {}
    for shape, m, n, k, shape_dtype in SHAPES:
        if shape_dtype == dtype:
            try:
                write_matmul_artifact(Path(out) / name / shape, result, m, n, k, problem, config)
            except ValueError as error:  # e.g. a TMA store into rows of 8193 elements
                skipped[shape] = str(error)
                continue
            shapes.append(shape)
    return {
        "candidate": name,
        "dtype": dtype,
        "seconds": round(seconds, 3),
        "stages": {s.name: round(s.seconds, 4) for s in result.stages},
        "ptxas": result.ptxas.as_dict() if result.ptxas else None,
        "shapes": shapes,
        "skipped": skipped,
    }


def compile_all(out: Path, jobs: int) -> int:
    out.mkdir(parents=True, exist_ok=True)
    dtypes = sorted({dtype for *_, dtype in SHAPES})
    work = [
        (name, values, dtype, str(out)) for name, values in CANDIDATES.items() for dtype in dtypes
    ]
    start = time.perf_counter()
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        reports = list(pool.map(_compile_candidate, work))
    wall = time.perf_counter() - start
    for report in reports:
        if "error" in report:
            print(f"{report['candidate']:<32} {report['dtype']:<5} FAILED\n{report['error']}")
            continue
        ptxas = report["ptxas"] or {}
        print(
            f"{report['candidate']:<32} {report['dtype']:<5} {report['seconds']:5.2f} s  "
            f"{ptxas.get('registers', '?')} regs  "
            f"{ptxas.get('spill_stores', 0) + ptxas.get('spill_loads', 0)} spill B  "
            f"warnings {len(ptxas.get('warnings', []))}"
        )
    print(f"{len(work)} kernels in {wall:.1f} s wall with {jobs} processes")
    index = {
        "candidates": SPACE_CANDIDATES,
        "variants": VARIANTS,
        "compile": reports,
        "compile_wall_s": round(wall, 2),
        "jobs": jobs,
    }
    (out / "index.json").write_text(json.dumps(index, indent=1))
    return 0 if all("error" not in r for r in reports) else 1


# ----------------------------------------------------------------------------
# run (GPU machine; needs torch and wsc.runtime only)


def tune_one(artifacts: Path, candidate: str, out_json: Path) -> int:
    """One candidate over every shape: check once, time, and time cuBLAS on
    the same inputs (a same-process reference); one JSON line per shape."""
    import torch

    from wsc.runtime import LaunchTimeout

    out_json.parent.mkdir(parents=True, exist_ok=True)
    with out_json.open("w") as sink:
        for shape in shapes():
            directory = artifacts / candidate / shape.name
            if not (directory / "kernel.json").exists():
                continue
            record = {"candidate": candidate, "shape": shape.name}
            try:
                inputs = Inputs(torch, shape, TUNE["sets"], SEED)
                run_once, launchers, _ = wsc_method(torch, directory, inputs)
                record.update(inputs.check(run_once))
                if record["ok"]:
                    ms, cublas_ms = inputs.time(
                        [launchers, cublas_method(torch, inputs)[1]], TUNE["warmup"], TUNE["iters"]
                    )
                    record.update(
                        ms=ms,
                        tflops=shape.flops / ms / 1e9,
                        cublas_ms=cublas_ms,
                        over_cublas=cublas_ms / ms,
                    )
            except LaunchTimeout as error:
                record.update(ok=False, error=f"LaunchTimeout: {error}")
                sink.write(json.dumps(record) + "\n")
                sink.flush()
                os._exit(1)  # the hung context cannot even be torn down
            except Exception as error:  # a failed launch poisons the context: stop here
                record.update(ok=False, error=f"{type(error).__name__}: {error}")
                sink.write(json.dumps(record) + "\n")
                return 1
            sink.write(json.dumps(record) + "\n")
            sink.flush()
            print(
                f"  {candidate:<32} {shape.name:<24} ok={record['ok']} "
                f"err={record.get('rel_err')} ms={record.get('ms')}",
                flush=True,
            )
            del inputs, launchers
            torch.cuda.empty_cache()
    return 0


def _tune_all(artifacts: Path, work: Path) -> list[dict]:
    index = json.loads((artifacts / "index.json").read_text())
    records = []
    for candidate in index["candidates"]:
        path = work / f"{candidate}.jsonl"
        command = [
            sys.executable,
            __file__,
            "tune-one",
            str(artifacts),
            candidate,
            "--json",
            str(path),
        ]
        start = time.perf_counter()
        try:
            subprocess.run(command, timeout=TUNE_TIMEOUT_S, check=False)
        except subprocess.TimeoutExpired:
            print(f"  {candidate}: timed out after {TUNE_TIMEOUT_S} s")
        print(f"tuned {candidate} in {time.perf_counter() - start:.1f} s", flush=True)
        if path.exists():
            records += [json.loads(line) for line in path.read_text().splitlines() if line]
    return records


def triton_probe(config_index: int) -> int:
    """One Triton config in a process of its own: compile and check it on a
    2048^3 problem in each input dtype; prints one JSON line."""
    import torch

    records = {}
    for dtype in sorted({dtype for *_, dtype in SHAPES}):
        inputs = Inputs(torch, Shape("probe", 2048, 2048, 2048, dtype), 1, SEED)
        records[dtype] = inputs.check(triton_method(torch, inputs, TRITON_CONFIGS[config_index])[0])
    ok = all(r["ok"] for r in records.values())
    print(json.dumps({"config": list(TRITON_CONFIGS[config_index]), "ok": ok, **records}))
    return 0 if ok else 1


def _probe_triton() -> tuple[list, list[dict]]:
    """(configs that compiled and computed correctly in time, probe records)."""
    passed, records = [], []
    for index, config in enumerate(TRITON_CONFIGS):
        command = [sys.executable, __file__, "triton-probe", str(index)]
        start = time.perf_counter()
        try:
            done = subprocess.run(
                command, timeout=TRITON_PROBE_TIMEOUT_S, capture_output=True, text=True, check=False
            )
            ok = done.returncode == 0
            detail = (
                (done.stdout.strip().splitlines() or [""])[-1]
                if ok
                else (done.stdout + done.stderr).strip()[-600:]
            )
        except subprocess.TimeoutExpired:
            ok, detail = False, f"no answer within {TRITON_PROBE_TIMEOUT_S} s"
        seconds = time.perf_counter() - start
        records.append(
            {"config": list(config), "ok": ok, "seconds": round(seconds, 1), "detail": detail}
        )
        print(
            f"triton probe {config}: ok={ok} in {seconds:.1f} s" + ("" if ok else f": {detail}"),
            flush=True,
        )
        if ok:
            passed.append(config)
    return passed, records


def _best_candidates(records: list[dict]) -> dict[str, dict]:
    best: dict[str, dict] = {}
    for record in records:
        if record.get("ok") and record.get("ms"):
            current = best.get(record["shape"])
            if current is None or record["ms"] < current["ms"]:
                best[record["shape"]] = record
    return best


def run_all(artifacts: Path, out: Path, skip_tune: bool) -> int:
    import torch

    out.mkdir(parents=True, exist_ok=True)
    tune_path = out / "tune.json"
    if skip_tune and tune_path.exists():
        tune = json.loads(tune_path.read_text())
    else:
        # The per-candidate logs stay out of OUT: few files come back from the GPU machine.
        with tempfile.TemporaryDirectory(prefix="wsc-tune-") as work:
            tune = _tune_all(artifacts, Path(work))
        tune_path.write_text(json.dumps(tune, indent=1))
    best = _best_candidates(tune)
    candidates = json.loads((artifacts / "index.json").read_text())["candidates"]

    env = environment(torch, triton)
    print(json.dumps(env), flush=True)
    triton_configs, triton_probes = _probe_triton() if triton is not None else ([], [])
    rows = []
    for shape in shapes():
        inputs = Inputs(torch, shape, FINAL["sets"], SEED + 1)
        row = {
            "shape": shape.name,
            "m": shape.m,
            "n": shape.n,
            "k": shape.k,
            "dtype": shape.dtype,
            "results": [],
        }
        print(f"{shape.name}: cuBLAS, Triton x{len(triton_configs)}, wsc", flush=True)
        measured = [checked(inputs, "cublas", cublas_method(torch, inputs))]
        options = []
        for config in triton_configs:
            try:
                record = checked(inputs, "triton", triton_method(torch, inputs, config))
            except Exception as error:  # a config Triton cannot compile here
                record = {
                    "method": "triton",
                    "ok": False,
                    "error": f"{type(error).__name__}: {str(error)[:300]}",
                }
            record["config"] = list(config)
            options.append(record)
        chosen = best.get(shape.name)
        wsc_record = None
        if chosen is not None:
            try:
                method = wsc_method(torch, artifacts / chosen["candidate"] / shape.name, inputs)
                wsc_record = checked(inputs, "wsc", method)
            except Exception as error:  # it passed tuning; record what went wrong
                wsc_record = {
                    "method": "wsc",
                    "ok": False,
                    "error": f"{type(error).__name__}: {error}",
                }
            wsc_record["candidate"] = chosen["candidate"]
            wsc_record["config"] = candidates[chosen["candidate"]]
        time_together(inputs, measured + options + ([wsc_record] if wsc_record else []))
        if options:
            timed = [r for r in options if r.get("ms")]
            row["triton_configs"] = options
            measured.append(min(timed, key=lambda r: r["ms"]) if timed else options[0])
        if wsc_record is not None:
            measured.append(wsc_record)
        row["results"] = measured
        rows.append(row)
        print(row_line(row), flush=True)
        del inputs
        torch.cuda.empty_cache()
        # Rewritten after every shape, so a run stopped early still reports.
        report = {
            "environment": env,
            "method": {
                "final": FINAL,
                "tune": TUNE,
                "sampled": SAMPLED,
                "seed": SEED,
                "tolerance": TOLERANCE,
            },
            "rows": rows,
            "tune": tune,
            "triton_probes": triton_probes,
        }
        (out / "results.json").write_text(json.dumps(report, indent=1))
    write_csv(out / "results.csv", rows)
    print()
    print(format_table(rows))
    try:
        plot(rows, out / "matmul.png", env)
    except ImportError as error:
        print(f"no chart: {error}")
    return 0


def compare(artifacts: Path, names: list[str], json_path: Path) -> int:
    """`names` (candidates of `artifacts`) timed together with cuBLAS, shape by
    shape; one line per shape: ms of each and its ratios to cuBLAS and to the
    first. Writes every record to `json_path`."""
    import torch

    index = json.loads((artifacts / "index.json").read_text())
    kernels = {**index["candidates"], **index.get("variants", {})}
    unknown = [name for name in names if name not in kernels]
    if unknown:
        raise SystemExit(f"not a candidate of {artifacts}: {', '.join(unknown)}")
    rows = []
    for shape in shapes():
        if not all((artifacts / name / shape.name).is_dir() for name in names):
            continue
        inputs = Inputs(torch, shape, FINAL["sets"], SEED + 2)
        records = [checked(inputs, "cublas", cublas_method(torch, inputs))]
        for name in names:
            method = wsc_method(torch, artifacts / name / shape.name, inputs)
            records.append({**checked(inputs, "wsc", method), "candidate": name})
        time_together(inputs, records)
        cublas, first = records[0].get("ms"), records[1].get("ms")
        parts = [f"{shape.name}: cuBLAS {cublas or float('nan'):.3f} ms"]
        for record in records[1:]:
            ms = record.get("ms")
            parts.append(
                f"{record['candidate']} {ms or float('nan'):.3f} ms ok={record['ok']}"
                + (
                    f" cuBLAS/it {cublas / ms:.3f} first/it {first / ms:.3f}"
                    if ms and cublas and first
                    else ""
                )
            )
        print(" | ".join(parts), flush=True)
        rows.append({"shape": shape.name, "results": records})
        del inputs
        torch.cuda.empty_cache()
    json_path.parent.mkdir(parents=True, exist_ok=True)
    json_path.write_text(
        json.dumps(
            {
                "environment": environment(torch, triton),
                "method": FINAL,
                "candidates": names,
                "rows": rows,
            },
            indent=1,
        )
    )
    return 0 if rows and all(r["ok"] for row in rows for r in row["results"]) else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    sub = parser.add_subparsers(dest="mode", required=True)
    compile_parser = sub.add_parser("compile", help="write the wsc artifacts (CPU machine)")
    compile_parser.add_argument("dir", type=Path)
    compile_parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    run_parser = sub.add_parser("run", help="tune and benchmark (GPU machine)")
    run_parser.add_argument("dir", type=Path)
    run_parser.add_argument("--out", type=Path, default=Path("benchmarks/results"))
    run_parser.add_argument(
        "--skip-tune", action="store_true", help="reuse OUT/tune.json from an earlier run"
    )
    pair = sub.add_parser("compare", help="candidates timed together with cuBLAS (GPU machine)")
    pair.add_argument("dir", type=Path)
    pair.add_argument("candidates", nargs="+")
    pair.add_argument("--json", type=Path, required=True)
    probe = sub.add_parser("triton-probe", help="(internal) compile and check one Triton config")
    probe.add_argument("config_index", type=int)
    one = sub.add_parser("tune-one", help="(internal) one candidate over every shape")
    one.add_argument("dir", type=Path)
    one.add_argument("candidate")
    one.add_argument("--json", type=Path, required=True)
    args = parser.parse_args(argv)
    if args.mode == "compile":
        return compile_all(args.dir, args.jobs)
    if args.mode == "tune-one":
        return tune_one(args.dir, args.candidate, args.json)
    if args.mode == "triton-probe":
        return triton_probe(args.config_index)
    if args.mode == "compare":
        return compare(args.dir, args.candidates, args.json)
    return run_all(args.dir, args.out, args.skip_tune)


if __name__ == "__main__":
    sys.exit(main())
