"""The product benchmark: `wsc.matmul` as users call it, against torch.mm (cuBLAS)
and the best Triton config of benchmarks/matmul.py, in one process on the same inputs.

    python benchmarks/wsc_matmul.py prepare             # CPU machine: fill $WSC_CACHE_DIR
    python benchmarks/wsc_matmul.py run --out DIR       # GPU machine (no MLIR needed)
    python benchmarks/wsc_matmul.py report DIR/results.jsonl   # the tables of BENCHMARKS.md

`prepare` compiles every kernel of the config spaces the benchmark's calls are
tuned over (one compile per config, dtype and B layout serves every size), as
a user's CPU machine would fill the cache before the GPU machine runs.

`run` calls the public API and nothing else for wsc: the first call of each
shape resolves it (autotuning a new shape class over the compiled kernels;
its wall time is recorded), then the product is checked against a float64
reference on every element, with the output NaN-poisoned first, for each
method. Then, methods in turn, round after round:
  * user path: a block of back-to-back calls (`wsc.matmul(a, b, out=c)`,
    `torch.mm(a, b, out=c)`, the Triton kernel's launch), timed by CUDA
    events around the block (device time per call, host gaps included) and
    by the host clock until the block has finished (wall time per call);
  * kernel alone: the same block of calls captured once in a CUDA graph and
    replayed, timed by CUDA events: the kernels without host overhead.
Input sets rotate from call to call where several fit, so that no call finds
its operands in L2 from the one before. Each figure is the median over the
rounds, with the lowest and highest round beside it.

Shapes as LLMs use them: M in {16, 128, 512, 2048, 8192} times weights (N, K)
in {(4096, 4096), (14336, 4096), (4096, 14336), (8192, 8192), (28672, 8192)},
B as the transpose of a row-major weight ("nk", `x @ w.T`) and as a row-major
[K, N] ("kn", `a @ b`), f16, and bf16 at 8192^3. First, a host-overhead
probe: a 256^3 problem, where the GPU waits for the host, wall time per call
of wsc.matmul against torch.mm.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

WEIGHTS = [(4096, 4096), (14336, 4096), (4096, 14336), (8192, 8192), (28672, 8192)]
ROWS = [16, 128, 512, 2048, 8192]
LAYOUTS = ("nk", "kn")
#: The Triton config of benchmarks/matmul.py closest to wsc's schedule and the
#: best of its column at 8192^3 (BENCHMARKS.md): warp-specialized 128x256x64,
#: 3 stages, 4 warps, TMA descriptors made in the kernel, TMA store of C.
TRITON_CONFIG = dict(BLOCK_M=128, BLOCK_N=256, BLOCK_K=64, STAGES=3, SPECIALIZE=True, num_warps=4)
ROUNDS = 7
BLOCK_MS = 20.0  # aim of one timed block
PROBE = dict(m=256, n=256, k=256, calls=200, rounds=15)
L2_BYTES = 60 * 2**20
TOLERANCE = {"float16": 1e-3, "bfloat16": 2.0**-8}


def shapes(layouts, quick: bool, only: str = "") -> list[dict]:
    """The LLM set in `layouts` (a few of its shapes if `quick`), or the f16
    problems `only` names ("MxNxK,MxNxK...")."""
    if only:
        return [
            dict(m=m, n=n, k=k, layout=layout, dtype="float16")
            for layout in layouts
            for m, n, k in (map(int, item.split("x")) for item in only.split(","))
        ]
    rows = [
        dict(m=m, n=n, k=k, layout=layout, dtype="float16")
        for layout in layouts
        for m in ROWS
        for n, k in WEIGHTS
    ]
    rows += [dict(m=8192, n=8192, k=8192, layout=layout, dtype="bfloat16") for layout in layouts]
    if quick:
        keep = {(8192, 8192, 8192), (2048, 8192, 8192), (8192, 8192, 512), (16, 4096, 4096)}
        rows = [r for r in rows if (r["m"], r["n"], r["k"]) in keep]
        rows.append(dict(m=8192, n=8192, k=512, layout="nk", dtype="float16"))
    return rows


# prepare (CPU machine) ------------------------------------------------------------------


def prepare() -> int:
    from wsc.cache import Cache
    from wsc.matmul import SPACES

    cache = Cache()
    start = time.perf_counter()
    failed = 0
    for dtype in ("f16", "bf16"):
        for space, b_layout in (("nk-tma", "nk"), ("kn-tma", "kn")):
            result = SPACES[space].tune(
                {"m": 256, "n": 256, "k": 256},
                fixed={"dtype": dtype, "out_dtype": dtype, "b_layout": b_layout},
                cache=cache,
            )
            for candidate in result.candidates:
                if candidate.error:
                    failed += 1
                    print(f"{space} {dtype} {candidate.config}: {candidate.error}", file=sys.stderr)
    print(
        f"compiled into {cache.root} in {time.perf_counter() - start:.0f} s; "
        f"{failed} candidates failed"
    )
    return 1 if failed else 0


# run (GPU machine) ----------------------------------------------------------------------


def _environment(torch) -> dict:
    import triton
    from matmul_harness import commit

    props = torch.cuda.get_device_properties(0)
    smi = subprocess.run(
        ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
        capture_output=True,
        text=True,
    )
    return {
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "gpu": props.name,
        "sms": props.multi_processor_count,
        "driver": smi.stdout.strip(),
        "torch": torch.__version__,
        "triton": triton.__version__,
        "python": sys.version.split()[0],
        "commit": commit(),
        "command": " ".join(sys.argv),
    }


class Problem:
    """Input sets of one shape, with its float64 reference on the first."""

    def __init__(self, torch, m, n, k, layout, dtype):
        self.torch = torch
        self.m, self.n, self.k, self.layout = m, n, k, layout
        self.dtype = getattr(torch, dtype)
        per_set = 2 * (m * k + n * k + m * n)
        self.count = max(1, min(4, math.ceil(3 * L2_BYTES / per_set)))
        generator = torch.Generator(device="cuda").manual_seed(m * 7 + n * 3 + k)
        scale = k**-0.25
        self.sets = []
        for _ in range(self.count):
            a = (torch.randn(m, k, device="cuda", generator=generator) * scale).to(self.dtype)
            if layout == "nk":
                b = (torch.randn(n, k, device="cuda", generator=generator) * scale).to(self.dtype).T
            else:
                b = (torch.randn(k, n, device="cuda", generator=generator) * scale).to(self.dtype)
            self.sets.append((a, b, torch.empty(m, n, device="cuda", dtype=self.dtype)))

    def check(self, call) -> dict:
        """Relative error of `call` on the first set against float64, every
        element, the output NaN-poisoned first."""
        torch = self.torch
        a, b, c = self.sets[0]
        c.fill_(float("nan"))
        call(a, b, c)
        torch.cuda.synchronize()
        reference = a.double() @ b.double()
        nan_count = int(torch.isnan(c).sum())
        error = float(torch.linalg.norm(c.double() - reference) / torch.linalg.norm(reference))
        return {
            "rel_err": error if math.isfinite(error) else None,
            "nan_count": nan_count,
            "ok": nan_count == 0
            and math.isfinite(error)
            and error < TOLERANCE[str(self.dtype).split(".")[1]],
        }


def _calls_per_block(m, n, k) -> int:
    estimate_ms = 2.0 * m * n * k / 600e12 * 1e3 + 0.005
    return max(10, min(200, int(BLOCK_MS / estimate_ms)))


def _eager(torch, call, sets, calls) -> tuple[float, float]:
    """(device us, wall us) per call of a block of back-to-back calls."""
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda.synchronize()
    began = time.perf_counter()
    start.record()
    for i in range(calls):
        call(*sets[i % len(sets)])
    end.record()
    end.synchronize()
    wall = time.perf_counter() - began
    return start.elapsed_time(end) * 1e3 / calls, wall * 1e6 / calls


def _graph(torch, call, sets, calls):
    """The block of calls captured in a CUDA graph, and a timer of its replays."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for i in range(len(sets)):
            call(*sets[i])
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for i in range(calls):
            call(*sets[i % len(sets)])
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)

    def replay() -> float:
        start.record()
        graph.replay()
        end.record()
        end.synchronize()
        return start.elapsed_time(end) * 1e3 / calls

    return replay


def _triton_call(torch, layout):
    from matmul_baselines import (
        TRITON_GROUP_M,
        bench_triton_matmul_device,
        use_scratch_once_per_size,
    )

    use_scratch_once_per_size(torch)

    def call(a, b, c):
        m, k = a.shape
        n = c.shape[1]
        grid = (math.ceil(m / TRITON_CONFIG["BLOCK_M"]) * math.ceil(n / TRITON_CONFIG["BLOCK_N"]),)
        # "nk": b is the transpose view of a row-major [N, K]: pass that.
        b_data = b.T if layout == "nk" else b
        bench_triton_matmul_device[grid](
            a,
            b_data,
            c,
            m,
            n,
            k,
            c.stride(0),
            GROUP_M=TRITON_GROUP_M,
            TMA_STORE=True,
            B_KN=layout == "kn",
            **TRITON_CONFIG,
        )
        return c

    return call


def triton_probe(dtype: str, layout: str) -> int:
    """The Triton config on a 512^3 problem in a process of its own (Triton's
    warp specialization has aborted the process on some kernels); one JSON line."""
    import torch

    problem = Problem(torch, 512, 512, 512, layout, dtype)
    print(json.dumps(problem.check(_triton_call(torch, layout))))
    return 0


def _triton_works(dtype: str, layout: str) -> bool:
    proc = subprocess.run(
        [sys.executable, __file__, "triton-probe", dtype, layout],
        capture_output=True,
        text=True,
        timeout=180,
    )
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    return bool(lines) and json.loads(lines[-1])["ok"]


def _summary(values: list[float]) -> dict:
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


def host_probe(torch, wsc) -> dict:
    """Wall and host time per call on a problem too small to keep the GPU busy."""
    problem = Problem(torch, PROBE["m"], PROBE["n"], PROBE["k"], "nk", "float16")
    a, b, c = problem.sets[0]
    methods = {
        "torch.mm(a, b, out=c)": lambda: torch.mm(a, b, out=c),
        "wsc.matmul(a, b, out=c)": lambda: wsc.matmul(a, b, out=c),
        "torch.mm(a, b)": lambda: torch.mm(a, b),
        "wsc.matmul(a, b)": lambda: wsc.matmul(a, b),
        "torch.ops.wsc.matmul_out(a, b, c)": lambda: torch.ops.wsc.matmul_out(a, b, c),
    }
    for call in methods.values():
        call()
    torch.cuda.synchronize()
    wall = {name: [] for name in methods}
    host = {name: [] for name in methods}
    for _ in range(PROBE["rounds"]):
        for name, call in methods.items():
            torch.cuda.synchronize()
            began = time.perf_counter()
            for _ in range(PROBE["calls"]):
                call()
            issued = time.perf_counter()
            torch.cuda.synchronize()
            done = time.perf_counter()
            host[name].append((issued - began) * 1e6 / PROBE["calls"])
            wall[name].append((done - began) * 1e6 / PROBE["calls"])
    return {
        "shape": [PROBE["m"], PROBE["n"], PROBE["k"]],
        "calls": PROBE["calls"],
        "rounds": PROBE["rounds"],
        "wall_us": {name: _summary(values) for name, values in wall.items()},
        "host_us": {name: _summary(values) for name, values in host.items()},
    }


def bench_shape(torch, wsc, shape: dict, triton_ok: bool) -> dict:
    problem = Problem(torch, shape["m"], shape["n"], shape["k"], shape["layout"], shape["dtype"])
    a, b, c = problem.sets[0]
    torch.cuda.synchronize()
    began = time.perf_counter()
    wsc.matmul(a, b, out=c)
    torch.cuda.synchronize()
    first_call_s = time.perf_counter() - began
    methods = {
        "cublas": lambda a, b, c: torch.mm(a, b, out=c),
        "wsc": lambda a, b, c: wsc.matmul(a, b, out=c),
    }
    if triton_ok:
        methods["triton"] = _triton_call(torch, shape["layout"])
    record = {
        **shape,
        "first_call_s": first_call_s,
        "input_sets": problem.count,
        "check": {name: problem.check(call) for name, call in methods.items()},
    }
    calls = _calls_per_block(shape["m"], shape["n"], shape["k"])
    replays = {name: _graph(torch, call, problem.sets, calls) for name, call in methods.items()}
    device = {name: [] for name in methods}
    wall = {name: [] for name in methods}
    kernel = {name: [] for name in methods}
    order = list(methods)
    for round_index in range(ROUNDS):
        for name in order[round_index % len(order) :] + order[: round_index % len(order)]:
            device_us, wall_us = _eager(torch, methods[name], problem.sets, calls)
            device[name].append(device_us)
            wall[name].append(wall_us)
            kernel[name].append(replays[name]())
    flops = 2.0 * shape["m"] * shape["n"] * shape["k"]
    record.update(
        calls_per_block=calls,
        rounds=ROUNDS,
        results={
            name: {
                "device_us": _summary(device[name]),
                "wall_us": _summary(wall[name]),
                "kernel_us": _summary(kernel[name]),
                "kernel_tflops": flops / statistics.median(kernel[name]) / 1e6,
            }
            for name in methods
        },
    )
    from wsc.matmul import _cache, _device_name, choose_config, plan

    record["space"] = plan(a, b, c).space
    record["config"] = choose_config(plan(a, b, c), _device_name(0), _cache())
    return record


def run(out: Path, layouts, quick: bool, only: str = "") -> int:
    import torch

    import wsc

    out.mkdir(parents=True, exist_ok=True)
    env = _environment(torch)
    (out / "environment.json").write_text(json.dumps(env, indent=2) + "\n")
    print(json.dumps(env), flush=True)
    probe = host_probe(torch, wsc)
    (out / "host-probe.json").write_text(json.dumps(probe, indent=2) + "\n")
    print(json.dumps(probe), flush=True)
    triton_ok = {}
    with (out / "results.jsonl").open("a") as results:
        for shape in shapes(layouts, quick, only):
            key = (shape["dtype"], shape["layout"])
            if key not in triton_ok:
                triton_ok[key] = _triton_works(*key)
            record = bench_shape(torch, wsc, shape, triton_ok[key])
            results.write(json.dumps(record) + "\n")
            results.flush()
            print(_line(record), flush=True)
    return 0


# report ---------------------------------------------------------------------------------


def _ratio(record, base: str, key: str) -> float | None:
    results = record["results"]
    if base not in results:
        return None
    return results[base][key]["median"] / results["wsc"][key]["median"]


def _line(record) -> str:
    r = record["results"]
    ratios = " ".join(
        f"{key.split('_')[0]}={_ratio(record, 'cublas', key):.3f}"
        for key in ("kernel_us", "device_us", "wall_us")
    )
    ok = all(check["ok"] for check in record["check"].values())
    return (
        f"{record['m']}x{record['n']}x{record['k']} {record['layout']} {record['dtype']}: "
        f"wsc/cublas {ratios}; wsc {r['wsc']['kernel_tflops']:.0f} TFLOP/s; first call "
        f"{record['first_call_s']:.1f} s; checks {'ok' if ok else record['check']}"
    )


def report(path: Path) -> int:
    records = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    print(
        "| M | N | K | B | dtype | wall us/call: wsc / torch.mm / Triton | user path wsc/cuBLAS "
        "(wall) | kernel alone wsc/cuBLAS | wsc/Triton (kernel) | wsc TFLOP/s | first call s |"
    )
    print("|" + "---|" * 11)
    user, alone = [], []
    for rec in records:
        r = rec["results"]

        def cell(name, results=r):
            if name not in results:
                return "n/a"
            return f"{results[name]['wall_us']['median']:.1f}"

        wall_ratio, kernel_ratio = (
            _ratio(rec, "cublas", "wall_us"),
            _ratio(rec, "cublas", "kernel_us"),
        )
        triton_ratio = _ratio(rec, "triton", "kernel_us")
        user.append(wall_ratio)
        alone.append(kernel_ratio)
        print(
            f"| {rec['m']} | {rec['n']} | {rec['k']} | {rec['layout']} | {rec['dtype']} | "
            f"{cell('wsc')} / {cell('cublas')} / {cell('triton')} | {wall_ratio:.3f} | "
            f"{kernel_ratio:.3f} | {'n/a' if triton_ratio is None else f'{triton_ratio:.3f}'} | "
            f"{r['wsc']['kernel_tflops']:.0f} | {rec['first_call_s']:.1f} |"
        )
    geo = lambda values: math.exp(sum(math.log(v) for v in values) / len(values))
    print(
        f"\ngeometric mean over {len(records)} shapes: user path (wall) {geo(user):.3f}, "
        f"kernel alone {geo(alone):.3f}"
    )
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("prepare", help="compile the kernels into $WSC_CACHE_DIR (CPU machine)")
    run_parser = commands.add_parser("run", help="benchmark on the GPU machine")
    run_parser.add_argument("--out", type=Path, required=True)
    run_parser.add_argument("--layouts", default=",".join(LAYOUTS))
    run_parser.add_argument("--quick", action="store_true", help="a few shapes only")
    run_parser.add_argument(
        "--shapes", default="", help="these f16 problems instead, e.g. 4096x4096x4096,128x4096x4096"
    )
    report_parser = commands.add_parser("report", help="markdown table of a results.jsonl")
    report_parser.add_argument("results", type=Path)
    probe = commands.add_parser("triton-probe")
    probe.add_argument("dtype")
    probe.add_argument("layout")
    args = parser.parse_args(argv)
    if args.command == "prepare":
        return prepare()
    if args.command == "run":
        return run(args.out, args.layouts.split(","), args.quick, args.shapes)
    if args.command == "report":
        return report(args.results)
    return triton_probe(args.dtype, args.layout)


if __name__ == "__main__":
    sys.exit(main())
