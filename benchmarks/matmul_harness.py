"""The timing and checking harness of benchmarks/matmul.py: inputs on the
GPU, methods timed in turn launch by launch with CUDA events, correctness
against a float64 reference, and the environment a results file records.
Needs torch on the GPU machine; wsc.runtime for the wsc kernels."""

from __future__ import annotations

import math
import subprocess
import sys
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from matmul_candidates import REPO, SHAPES

TUNE = dict(warmup=3, iters=10, sets=2)
FINAL = dict(warmup=5, iters=30, sets=3)
SAMPLED = 64  # rows and columns compared with the float64 reference
SEED = 0
LAUNCH_TIMEOUT_S = 30


@dataclass
class Shape:
    name: str
    m: int
    n: int
    k: int
    dtype: str

    @property
    def flops(self) -> float:
        return 2.0 * self.m * self.n * self.k


def shapes() -> list[Shape]:
    return [Shape(*row) for row in SHAPES]


class Inputs:
    """`sets` random (A, B) pairs and one C per set, all on the GPU."""

    def __init__(self, torch, shape: Shape, sets: int, seed: int):
        self.torch = torch
        self.shape = shape
        dtype = {"f16": torch.float16, "bf16": torch.bfloat16}[shape.dtype]
        generator = torch.Generator(device="cuda").manual_seed(seed)
        scale = shape.k**-0.25  # keeps C's entries near unit variance
        self.sets = []
        for _ in range(sets):
            a = torch.randn(shape.m, shape.k, device="cuda", generator=generator) * scale
            b = torch.randn(shape.n, shape.k, device="cuda", generator=generator) * scale
            c = torch.empty(shape.m, shape.n, device="cuda", dtype=dtype)
            self.sets.append((a.to(dtype), b.to(dtype), c))
        rows = torch.randperm(shape.m, generator=torch.Generator().manual_seed(seed))[:SAMPLED]
        cols = torch.randperm(shape.n, generator=torch.Generator().manual_seed(seed + 1))[:SAMPLED]
        # The last rows and columns too: ragged edges are where tiles go wrong.
        self.rows = torch.unique(torch.cat([rows, torch.arange(max(0, shape.m - 8), shape.m)]))
        self.cols = torch.unique(torch.cat([cols, torch.arange(max(0, shape.n - 8), shape.n)]))
        a, b, _ = self.sets[0]
        a64, b64 = a.double(), b.double()
        self.ref_rows = a64[self.rows.cuda()] @ b64.T
        self.ref_cols = a64 @ b64[self.cols.cuda()].T

    def check(self, run_once) -> dict:
        """Poison C of set 0, run once, compare with the float64 reference."""
        torch = self.torch
        a, b, c = self.sets[0]
        c.fill_(float("nan"))
        run_once(a, b, c)
        torch.cuda.synchronize()
        nan_count = int(torch.isnan(c).sum())
        got_rows = c[self.rows.cuda()].double()
        got_cols = c[:, self.cols.cuda()].double()
        error = float(
            ((got_rows - self.ref_rows) ** 2).sum() + ((got_cols - self.ref_cols) ** 2).sum()
        )
        norm = float((self.ref_rows**2).sum() + (self.ref_cols**2).sum())
        rel_err = math.sqrt(error / norm) if norm else math.sqrt(error)
        tolerance = TOLERANCE[self.shape.dtype]
        ok = nan_count == 0 and math.isfinite(rel_err) and rel_err <= tolerance
        return {
            "ok": ok,
            "rel_err": rel_err if math.isfinite(rel_err) else None,
            "nan_count": nan_count,
            "tol": tolerance,
        }

    def time(self, methods: list, warmup: int, iters: int) -> list[float]:
        """Median ms of each method's `iters` launches; methods[j][i]()
        launches method j on input set i. The methods take turns launch by
        launch, so each sees the same clocks and temperature (timed one
        after another, the last one ran on a hotter GPU: see BENCHMARKS.md),
        and consecutive launches use different input sets."""
        torch = self.torch
        sets = len(methods[0])
        # Launch number `launch` uses set launch % sets, so no launch follows
        # one on its own inputs, which would find part of them in L2.
        for i in range(warmup):
            for j, launchers in enumerate(methods):
                launchers[(i * len(methods) + j) % sets]()
        torch.cuda.synchronize()
        events = [
            [
                (torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
                for _ in range(iters)
            ]
            for _ in methods
        ]
        for i in range(iters):
            for j, (launchers, pairs) in enumerate(zip(methods, events, strict=True)):
                start, end = pairs[i]
                start.record()
                launchers[(i * len(methods) + j) % sets]()
                end.record()
        torch.cuda.synchronize()
        return [median([start.elapsed_time(end) for start, end in pairs]) for pairs in events]


def median(values: list[float]) -> float:
    values = sorted(values)
    middle = len(values) // 2
    return values[middle] if len(values) % 2 else 0.5 * (values[middle - 1] + values[middle])


# The output dtype is the input dtype; its rounding alone is ~3e-4 (f16), ~3e-3 (bf16).
TOLERANCE = {"f16": 1e-3, "bf16": 1e-2}


def wsc_method(torch, artifact_dir: Path, inputs: Inputs):
    """(run_once(a, b, c), launchers per input set) of a wsc artifact."""
    from wsc.runtime import Kernel

    kernel = Kernel(artifact_dir)

    def run_once(a, b, c):
        kernel.launch(a=a, b=b, c=c)
        kernel.synchronize(timeout_s=LAUNCH_TIMEOUT_S)

    prepared = [kernel.prepare(a=a, b=b, c=c) for a, b, c in inputs.sets]
    return run_once, [p.launch for p in prepared], kernel


def checked(inputs: Inputs, label: str, method) -> dict:
    """The method's correctness record; its launchers ride along under
    "launchers" until `_time_together` times them."""
    run_once, launchers = method[0], method[1]
    return {"method": label, **inputs.check(run_once), "launchers": launchers}


def time_together(inputs: Inputs, records: list[dict]) -> None:
    """Time every correct method of one shape, interleaved (Inputs.time)."""
    timed = [r for r in records if r.get("ok")]
    for record, ms in zip(
        timed,
        inputs.time([r["launchers"] for r in timed], FINAL["warmup"], FINAL["iters"]),
        strict=True,
    ):
        record.update(ms=ms, tflops=inputs.shape.flops / ms / 1e9)
    for record in records:
        record.pop("launchers", None)


def environment(torch, triton) -> dict:
    """What a results file records of the run: date, GPU, driver, versions
    (`triton` None without it), commit and command."""
    env = {
        "date_utc": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "gpu": torch.cuda.get_device_name(0),
        "torch": torch.__version__,
        "cuda_torch": torch.version.cuda,
        "triton": getattr(triton, "__version__", None) if triton is not None else None,
        "sm_count": torch.cuda.get_device_properties(0).multi_processor_count,
        "fp16_reduced_precision_reduction": torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction,
        "python": sys.version.split()[0],
        # What produced a results file: it states its commit and command.
        "commit": commit(),
        "command": " ".join(sys.argv),
    }
    try:
        query = subprocess.run(
            [
                "nvidia-smi",
                "--query-gpu=driver_version,clocks.max.sm,power.limit",
                "--format=csv,noheader",
            ],
            capture_output=True,
            text=True,
            timeout=20,
        )
        env["nvidia_smi"] = query.stdout.strip()
    except (OSError, subprocess.TimeoutExpired) as error:
        env["nvidia_smi"] = f"unavailable: {error}"
    return env


def commit() -> str:
    """The checkout's commit (with "+changes" when the tree differs), or "not
    recorded" where there is no git (a copied tree)."""
    try:
        head = subprocess.run(
            ["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            timeout=20,
        )
        dirty = subprocess.run(
            ["git", "-C", str(REPO), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            timeout=20,
        )
    except (OSError, subprocess.TimeoutExpired):
        return "not recorded"
    if head.returncode != 0:
        return "not recorded"
    return head.stdout.strip() + ("+changes" if dirty.stdout.strip() else "")
