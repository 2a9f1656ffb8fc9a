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
import csv
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "python"))

from wsc.kernels.matmul.config import MatmulConfig  # noqa: E402 (after the path)
from wsc.kernels.matmul.space import SPACES  # noqa: E402

# (name, M, N, K, dtype): the issue's benchmark set.
SHAPES = [
    ("4096x4096x4096", 4096, 4096, 4096, "f16"),
    ("8192x8192x8192", 8192, 8192, 8192, "f16"),
    ("16384x16384x8192", 16384, 16384, 8192, "f16"),
    ("8192x8192x1024", 8192, 8192, 1024, "f16"),
    ("llm-8192x4096x4096", 8192, 4096, 4096, "f16"),
    ("llm-8192x14336x4096", 8192, 14336, 4096, "f16"),
    ("llm-8192x4096x14336", 8192, 4096, 14336, "f16"),
    ("llm-8192x28672x8192", 8192, 28672, 8192, "f16"),
    ("ragged-8191x8193x8200", 8191, 8193, 8200, "f16"),
    ("8192x8192x8192-bf16", 8192, 8192, 8192, "bf16"),
]

#: The spaces wsc.matmul tunes this benchmark's problems over (B as [N, K], C
#: in the input dtype): "nk-tma" where C's rows allow a TMA store,
#: "nk-coalesced" elsewhere (the ragged shape; its candidates are timed on
#: every shape). Their configs are the candidates `run` tunes over, so the
#: benchmark's best is one wsc.matmul's tuner can pick.
BENCHMARK_SPACES = ("nk-tma", "nk-coalesced")


def candidate_name(config: dict) -> str:
    """A space config's name, e.g. 128x256_2g_s3_inflight_group8_persistent_tma."""
    c = MatmulConfig(**config)
    parts = [f"{c.block_m}x{c.block_n}_{c.num_consumer_groups}g_s{c.num_stages}"]
    parts += ["inflight"] if c.wgmma_in_flight else []
    parts += [f"group{c.group_m}"] if c.group_m else []
    parts += ["persistent"] if c.persistent else []
    parts += ["tma"] if c.tma_store else ["coalesced"] if c.coalesced_store else []
    parts += [f"cluster{c.cluster_m}"] if c.cluster_m > 1 else []
    return "_".join(parts)


SPACE_CANDIDATES = {
    candidate_name(config): config
    for space in BENCHMARK_SPACES
    for config in SPACES[space].configs()
}

_SEED = dict(block_m=128, block_n=128, block_k=64, num_stages=4)
_TWO_GROUPS = dict(num_consumer_groups=2, producer="warpgroup")
_BEST_TMA = SPACE_CANDIDATES["128x256_2g_s3_inflight_group16_persistent_tma"]
_TMA_CLUSTER = SPACE_CANDIDATES["128x256_2g_s3_inflight_group8_persistent_tma_cluster2"]
_COALESCED_CLUSTER = SPACE_CANDIDATES["128x256_2g_s3_group8_persistent_coalesced_cluster2"]
#: The technique log's variants (BENCHMARKS.md compares neighbours with
#: `compare`): the seed, one technique added or taken away at a time, and
#: schedules that lost on every shape. Compiled with the candidates, never
#: tuned over.
VARIANTS = {
    "seed": dict(_SEED),
    "seed_inflight_group8": dict(_SEED, wgmma_in_flight=1, group_m=8),
    "128x256_2g_s3_inflight_group8": dict(
        _SEED, block_n=256, num_stages=3, **_TWO_GROUPS, wgmma_in_flight=1, group_m=8
    ),
    "256x128_2g_inflight_group8": dict(
        _SEED, block_m=256, **_TWO_GROUPS, wgmma_in_flight=1, group_m=8
    ),
    "128x256_2g_group8": dict(_SEED, block_n=256, **_TWO_GROUPS, group_m=8),
    # Persistent kernels with register stores, without a WGMMA group in
    # flight (MatmulConfig: ptxas would serialize them).
    **{
        f"128x256_2g_s3_group{group}_persistent": dict(
            _SEED, block_n=256, num_stages=3, **_TWO_GROUPS, group_m=group, persistent=True
        )
        for group in (4, 8, 16)
    },
    # Ping-pong: the two consumer groups take whole 128x128 tiles in turn, so
    # one's epilogue overlaps the other's WGMMAs.
    "128x128_pingpong_group8": dict(
        _SEED, **_TWO_GROUPS, group_m=8, persistent=True, ping_pong=True
    ),
    "128x128_pingpong_group8_tma": dict(
        _SEED, **_TWO_GROUPS, group_m=8, persistent=True, ping_pong=True, tma_store=True
    ),
    # setmaxnreg's share: every warpgroup keeps the 168 registers a
    # 384-thread block starts with: the persistent winner fits them, the
    # unrolled kernel spills.
    "128x256_2g_s3_inflight_group16_persistent_tma_keep_registers": dict(
        _BEST_TMA, rebalance_registers=False
    ),
    "128x256_2g_s3_inflight_group8_tma_keep_registers": dict(
        SPACE_CANDIDATES["128x256_2g_s3_inflight_group8_tma"], rebalance_registers=False
    ),
    # Clusters without a WGMMA group in flight (TMA store), and with one
    # (coalesced store).
    "128x256_2g_s3_group8_persistent_tma_cluster2": dict(_TMA_CLUSTER, wgmma_in_flight=0),
    "128x256_2g_s3_inflight_group8_persistent_coalesced_cluster2": dict(
        _COALESCED_CLUSTER, wgmma_in_flight=1
    ),
    # One release per consumer warp instead of per thread (8 arrivals a stage
    # instead of 256, 16 instead of 512 in a cluster), on the winners.
    "128x256_2g_s3_inflight_group16_persistent_tma_warp_release": dict(_BEST_TMA, release="warp"),
    "128x256_2g_s3_group8_persistent_tma_cluster2_warp_release": dict(
        _TMA_CLUSTER, wgmma_in_flight=0, release="warp"
    ),
    "128x256_2g_s3_group8_persistent_coalesced_cluster2_warp_release": dict(
        _COALESCED_CLUSTER, release="warp"
    ),
}
#: Every kernel `compile` builds; shape and candidate names are also directory
#: names, so they keep to letters, digits, "x_-".
CANDIDATES = {**SPACE_CANDIDATES, **VARIANTS}

# (BLOCK_M, BLOCK_N, BLOCK_K, stages, warps, warp-specialized loop, how C is
# stored): "masked" (pointer stores) or "tma" (a TMA descriptor), with the
# descriptors of A and B made on the host and the tile order in a helper;
# "device-tma" and "device-masked" are a flat kernel that makes its
# descriptors itself (tl.make_tensor_descriptor). Triton 3.6's Hopper
# warp-specialization pass fails on the notes' best config, (128, 256, 64, 3,
# 4, warp-specialized), in the host-descriptor kernel (UNREACHABLE in
# WSDataPartition with a TMA store; no answer within 90 s with masked stores:
# results/h200-triton-ws-probe.txt) and compiles it in the flat one. A TMA store
# needs C's rows 16-byte aligned, so those configs skip the ragged shape.
TRITON_CONFIGS = [
    (128, 256, 64, 3, 8, True, "masked"),
    (128, 256, 64, 3, 8, False, "masked"),
    (128, 256, 64, 3, 8, True, "tma"),
    (128, 128, 64, 4, 4, False, "tma"),
    (128, 128, 64, 4, 4, False, "masked"),
    (128, 256, 64, 3, 4, True, "device-tma"),
    (128, 256, 64, 3, 4, True, "device-masked"),
]
TRITON_GROUP_M = 8

TUNE = dict(warmup=3, iters=10, sets=2)
FINAL = dict(warmup=5, iters=30, sets=3)
SAMPLED = 64  # rows and columns compared with the float64 reference
SEED = 0
TUNE_TIMEOUT_S = 150  # one candidate over every shape
TRITON_PROBE_TIMEOUT_S = 60  # one Triton config: compile and check, both dtypes (~5 s)
LAUNCH_TIMEOUT_S = 30


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


def _shapes() -> list[Shape]:
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
        return [_median([start.elapsed_time(end) for start, end in pairs]) for pairs in events]


def _median(values: list[float]) -> float:
    values = sorted(values)
    middle = len(values) // 2
    return values[middle] if len(values) % 2 else 0.5 * (values[middle - 1] + values[middle])


# The output dtype is the input dtype; its rounding alone is ~3e-4 (f16), ~3e-3 (bf16).
TOLERANCE = {"f16": 1e-3, "bf16": 1e-2}


def _wsc_method(torch, artifact_dir: Path, inputs: Inputs):
    """(run_once(a, b, c), launchers per input set) of a wsc artifact."""
    from wsc.runtime import Kernel

    kernel = Kernel(artifact_dir)

    def run_once(a, b, c):
        kernel.launch(a=a, b=b, c=c)
        kernel.synchronize(timeout_s=LAUNCH_TIMEOUT_S)

    prepared = [kernel.prepare(a=a, b=b, c=c) for a, b, c in inputs.sets]
    return run_once, [p.launch for p in prepared], kernel


def _cublas_method(torch, inputs: Inputs):
    def run_once(a, b, c):
        torch.mm(a, b.T, out=c)

    return run_once, [lambda a=a, b=b, c=c: torch.mm(a, b.T, out=c) for a, b, c in inputs.sets]


def tune_one(artifacts: Path, candidate: str, out_json: Path) -> int:
    """One candidate over every shape: check once, time, and time cuBLAS on
    the same inputs (a same-process reference); one JSON line per shape."""
    import torch

    from wsc.runtime import LaunchTimeout

    out_json.parent.mkdir(parents=True, exist_ok=True)
    with out_json.open("w") as sink:
        for shape in _shapes():
            directory = artifacts / candidate / shape.name
            if not (directory / "kernel.json").exists():
                continue
            record = {"candidate": candidate, "shape": shape.name}
            try:
                inputs = Inputs(torch, shape, TUNE["sets"], SEED)
                run_once, launchers, _ = _wsc_method(torch, directory, inputs)
                record.update(inputs.check(run_once))
                if record["ok"]:
                    ms, cublas_ms = inputs.time(
                        [launchers, _cublas_method(torch, inputs)[1]], TUNE["warmup"], TUNE["iters"]
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


try:  # Triton is optional: without it the Triton column reads n/a.
    import triton
    import triton.language as tl
except ImportError:
    triton = None

if triton is not None:

    @triton.jit
    def _triton_tile(
        a_desc,
        b_desc,
        M,
        N,
        K,
        BLOCK_M: tl.constexpr,
        BLOCK_N: tl.constexpr,
        BLOCK_K: tl.constexpr,
        GROUP_M: tl.constexpr,
        STAGES: tl.constexpr,
        SPECIALIZE: tl.constexpr,
    ):
        """(row0, col0, acc) of this program's tile: grouped tile order, the K
        loop over TMA-descriptor loads."""
        block = tl.program_id(0)
        tiles_m = tl.cdiv(M, BLOCK_M)
        tiles_n = tl.cdiv(N, BLOCK_N)
        group_size = GROUP_M * tiles_n
        first_row = block // group_size * GROUP_M
        rows_in_group = tl.minimum(tiles_m - first_row, GROUP_M)
        in_group = block % group_size
        row0 = (first_row + in_group % rows_in_group) * BLOCK_M
        col0 = (in_group // rows_in_group) * BLOCK_N
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for kt in tl.range(0, tl.cdiv(K, BLOCK_K), num_stages=STAGES, warp_specialize=SPECIALIZE):
            a = a_desc.load([row0, kt * BLOCK_K])
            b = b_desc.load([col0, kt * BLOCK_K])
            acc = tl.dot(a, b.T, acc)
        return row0, col0, acc

    @triton.jit
    def bench_triton_matmul(
        a_desc,
        b_desc,
        c_ptr,
        M,
        N,
        K,
        ldc,
        BLOCK_M: tl.constexpr,
        BLOCK_N: tl.constexpr,
        BLOCK_K: tl.constexpr,
        GROUP_M: tl.constexpr,
        STAGES: tl.constexpr,
        SPECIALIZE: tl.constexpr,
    ):
        """C = A B^T, TMA-descriptor loads, masked stores of C."""
        row0, col0, acc = _triton_tile(
            a_desc, b_desc, M, N, K, BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, STAGES, SPECIALIZE
        )
        rows = (row0 + tl.arange(0, BLOCK_M)).to(tl.int64)
        cols = col0 + tl.arange(0, BLOCK_N)
        inside = (rows[:, None] < M) & (cols[None, :] < N)
        tl.store(
            c_ptr + rows[:, None] * ldc + cols[None, :], acc.to(c_ptr.dtype.element_ty), mask=inside
        )

    @triton.jit
    def bench_triton_matmul_tma_store(
        a_desc,
        b_desc,
        c_desc,
        M,
        N,
        K,
        BLOCK_M: tl.constexpr,
        BLOCK_N: tl.constexpr,
        BLOCK_K: tl.constexpr,
        GROUP_M: tl.constexpr,
        STAGES: tl.constexpr,
        SPECIALIZE: tl.constexpr,
        OUT_BF16: tl.constexpr,
    ):
        """C = A B^T, TMA-descriptor loads and store of C."""
        row0, col0, acc = _triton_tile(
            a_desc, b_desc, M, N, K, BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, STAGES, SPECIALIZE
        )
        if OUT_BF16:
            c_desc.store([row0, col0], acc.to(tl.bfloat16))
        else:
            c_desc.store([row0, col0], acc.to(tl.float16))

    @triton.jit
    def bench_triton_matmul_device(
        a_ptr,
        b_ptr,
        c_ptr,
        M,
        N,
        K,
        ldc,
        BLOCK_M: tl.constexpr,
        BLOCK_N: tl.constexpr,
        BLOCK_K: tl.constexpr,
        GROUP_M: tl.constexpr,
        STAGES: tl.constexpr,
        SPECIALIZE: tl.constexpr,
        TMA_STORE: tl.constexpr,
        B_KN: tl.constexpr = False,
    ):
        """C = A B^T in one function, the tile order of _triton_tile, with the
        TMA descriptors made in the kernel: the form Triton 3.6's Hopper
        warp specialization compiles with 4 warps and 128x256 tiles. The
        tile loop is written out rather than taken from _triton_tile because
        this is the form that compiles (results/h200-triton-ws-probe.txt);
        whether the helper or the host-made descriptors break the pass was
        not isolated. With B_KN,
        B is a row-major [K, N] (C = A B)."""
        a_desc = tl.make_tensor_descriptor(
            a_ptr, shape=[M, K], strides=[K, 1], block_shape=[BLOCK_M, BLOCK_K]
        )
        if B_KN:
            b_desc = tl.make_tensor_descriptor(
                b_ptr, shape=[K, N], strides=[N, 1], block_shape=[BLOCK_K, BLOCK_N]
            )
        else:
            b_desc = tl.make_tensor_descriptor(
                b_ptr, shape=[N, K], strides=[K, 1], block_shape=[BLOCK_N, BLOCK_K]
            )
        block = tl.program_id(0)
        tiles_m = tl.cdiv(M, BLOCK_M)
        tiles_n = tl.cdiv(N, BLOCK_N)
        group_size = GROUP_M * tiles_n
        first_row = block // group_size * GROUP_M
        rows_in_group = tl.minimum(tiles_m - first_row, GROUP_M)
        in_group = block % group_size
        row0 = (first_row + in_group % rows_in_group) * BLOCK_M
        col0 = (in_group // rows_in_group) * BLOCK_N
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for kt in tl.range(0, tl.cdiv(K, BLOCK_K), num_stages=STAGES, warp_specialize=SPECIALIZE):
            a = a_desc.load([row0, kt * BLOCK_K])
            if B_KN:
                acc = tl.dot(a, b_desc.load([kt * BLOCK_K, col0]), acc)
            else:
                acc = tl.dot(a, b_desc.load([col0, kt * BLOCK_K]).T, acc)
        if TMA_STORE:
            c_desc = tl.make_tensor_descriptor(
                c_ptr, shape=[M, N], strides=[ldc, 1], block_shape=[BLOCK_M, BLOCK_N]
            )
            c_desc.store([row0, col0], acc.to(c_ptr.dtype.element_ty))
        else:
            rows = (row0 + tl.arange(0, BLOCK_M)).to(tl.int64)
            cols = col0 + tl.arange(0, BLOCK_N)
            inside = (rows[:, None] < M) & (cols[None, :] < N)
            tl.store(
                c_ptr + rows[:, None] * ldc + cols[None, :],
                acc.to(c_ptr.dtype.element_ty),
                mask=inside,
            )


def use_scratch_once_per_size(torch) -> None:
    """Triton's allocator for descriptors made in the kernel: a global scratch
    buffer per size, allocated once, so no launch pays for an allocation (the
    launches of one stream run in order, so they can share it)."""
    scratch = {}

    def allocate(size, alignment, stream):
        if size not in scratch:
            scratch[size] = torch.empty(size, device="cuda", dtype=torch.int8)
        return scratch[size]

    triton.set_allocator(allocate)


def _triton_method(torch, inputs: Inputs, config):
    from triton.tools.tensor_descriptor import TensorDescriptor

    block_m, block_n, block_k, stages, warps, specialize, c_store = config
    shape = inputs.shape
    grid = (math.ceil(shape.m / block_m) * math.ceil(shape.n / block_n),)
    tma_store = c_store in ("tma", "device-tma")
    if tma_store and shape.n * 2 % 16:
        raise ValueError(f"a TMA store needs C's rows 16-byte aligned; N = {shape.n}")
    tiles = dict(
        BLOCK_M=block_m,
        BLOCK_N=block_n,
        BLOCK_K=block_k,
        GROUP_M=TRITON_GROUP_M,
        STAGES=stages,
        SPECIALIZE=specialize,
        num_warps=warps,
    )

    def device_launcher(a, b, c):
        return lambda: bench_triton_matmul_device[grid](
            a, b, c, shape.m, shape.n, shape.k, c.stride(0), TMA_STORE=tma_store, **tiles
        )

    def launcher(a, b, c):
        if c_store.startswith("device"):
            return device_launcher(a, b, c)
        a_desc = TensorDescriptor.from_tensor(a, [block_m, block_k])
        b_desc = TensorDescriptor.from_tensor(b, [block_n, block_k])
        if tma_store:
            c_desc = TensorDescriptor.from_tensor(c, [block_m, block_n])
            out_bf16 = c.dtype == torch.bfloat16

            def launch():
                bench_triton_matmul_tma_store[grid](
                    a_desc, b_desc, c_desc, shape.m, shape.n, shape.k, OUT_BF16=out_bf16, **tiles
                )

            return launch

        def launch():
            bench_triton_matmul[grid](
                a_desc, b_desc, c, shape.m, shape.n, shape.k, c.stride(0), **tiles
            )

        return launch

    if c_store.startswith("device"):
        use_scratch_once_per_size(torch)

    def run_once(a, b, c):
        launcher(a, b, c)()

    return run_once, [launcher(a, b, c) for a, b, c in inputs.sets]


def triton_probe(config_index: int) -> int:
    """One Triton config in a process of its own: compile and check it on a
    2048^3 problem in each input dtype; prints one JSON line."""
    import torch

    records = {}
    for dtype in sorted({dtype for *_, dtype in SHAPES}):
        inputs = Inputs(torch, Shape("probe", 2048, 2048, 2048, dtype), 1, SEED)
        records[dtype] = inputs.check(
            _triton_method(torch, inputs, TRITON_CONFIGS[config_index])[0]
        )
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


def _environment(torch) -> dict:
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
        "commit": _commit(),
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


def _commit() -> str:
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


def _best_candidates(records: list[dict]) -> dict[str, dict]:
    best: dict[str, dict] = {}
    for record in records:
        if record.get("ok") and record.get("ms"):
            current = best.get(record["shape"])
            if current is None or record["ms"] < current["ms"]:
                best[record["shape"]] = record
    return best


def _checked(inputs: Inputs, label: str, method) -> dict:
    """The method's correctness record; its launchers ride along under
    "launchers" until `_time_together` times them."""
    run_once, launchers = method[0], method[1]
    return {"method": label, **inputs.check(run_once), "launchers": launchers}


def _time_together(inputs: Inputs, records: list[dict]) -> None:
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

    env = _environment(torch)
    print(json.dumps(env), flush=True)
    triton_configs, triton_probes = _probe_triton() if triton is not None else ([], [])
    rows = []
    for shape in _shapes():
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
        measured = [_checked(inputs, "cublas", _cublas_method(torch, inputs))]
        options = []
        for config in triton_configs:
            try:
                record = _checked(inputs, "triton", _triton_method(torch, inputs, config))
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
                method = _wsc_method(torch, artifacts / chosen["candidate"] / shape.name, inputs)
                wsc_record = _checked(inputs, "wsc", method)
            except Exception as error:  # it passed tuning; record what went wrong
                wsc_record = {
                    "method": "wsc",
                    "ok": False,
                    "error": f"{type(error).__name__}: {error}",
                }
            wsc_record["candidate"] = chosen["candidate"]
            wsc_record["config"] = candidates[chosen["candidate"]]
        _time_together(inputs, measured + options + ([wsc_record] if wsc_record else []))
        if options:
            timed = [r for r in options if r.get("ms")]
            row["triton_configs"] = options
            measured.append(min(timed, key=lambda r: r["ms"]) if timed else options[0])
        if wsc_record is not None:
            measured.append(wsc_record)
        row["results"] = measured
        rows.append(row)
        print(_row_line(row), flush=True)
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
    _write_csv(out / "results.csv", rows)
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
    for shape in _shapes():
        if not all((artifacts / name / shape.name).is_dir() for name in names):
            continue
        inputs = Inputs(torch, shape, FINAL["sets"], SEED + 2)
        records = [_checked(inputs, "cublas", _cublas_method(torch, inputs))]
        for name in names:
            method = _wsc_method(torch, artifacts / name / shape.name, inputs)
            records.append({**_checked(inputs, "wsc", method), "candidate": name})
        _time_together(inputs, records)
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
                "environment": _environment(torch),
                "method": FINAL,
                "candidates": names,
                "rows": rows,
            },
            indent=1,
        )
    )
    return 0 if rows and all(r["ok"] for row in rows for r in row["results"]) else 1


def _result(row: dict, method: str) -> dict | None:
    return next((r for r in row["results"] if r["method"] == method), None)


def _row_line(row: dict) -> str:
    parts = [row["shape"]]
    for r in row["results"]:
        parts.append(
            f"{r['method']} {r.get('ms') or float('nan'):.3f} ms "
            f"{r.get('tflops') or float('nan'):.0f} TF ok={r['ok']} "
            f"err={r.get('rel_err') or float('nan'):.1e}"
        )
    return " | ".join(parts)


def _ratios(row: dict) -> tuple[float | None, float | None]:
    wsc, cublas, tri = (_result(row, m) for m in ("wsc", "cublas", "triton"))

    def ratio(base):
        if wsc and wsc.get("ms") and base and base.get("ms"):
            return base["ms"] / wsc["ms"]
        return None

    return ratio(cublas), ratio(tri)


def format_table(rows: list[dict]) -> str:
    """Markdown: ms and TFLOPS of each method, wsc's ratio to cuBLAS and to Triton."""

    def cell(r, key, fmt):
        return format(r[key], fmt) if r and r.get(key) is not None else "n/a"

    lines = [
        "| shape | dtype | cuBLAS ms | TFLOPS | Triton ms | TFLOPS | wsc ms | TFLOPS "
        "| wsc/cuBLAS | wsc/Triton | wsc config |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    cublas_ratios = []
    for row in rows:
        cub, tri, wsc = (_result(row, m) for m in ("cublas", "triton", "wsc"))
        vs_cublas, vs_triton = _ratios(row)
        if vs_cublas:
            cublas_ratios.append(vs_cublas)
        lines.append(
            f"| {row['shape']} | {row['dtype']} | {cell(cub, 'ms', '.3f')} | {cell(cub, 'tflops', '.0f')} "
            f"| {cell(tri, 'ms', '.3f')} | {cell(tri, 'tflops', '.0f')} | {cell(wsc, 'ms', '.3f')} "
            f"| {cell(wsc, 'tflops', '.0f')} | {f'{vs_cublas:.2f}' if vs_cublas else 'n/a'} "
            f"| {f'{vs_triton:.2f}' if vs_triton else 'n/a'} "
            f"| {wsc.get('candidate', 'n/a') if wsc else 'n/a'} |"
        )
    if cublas_ratios:
        geomean = math.exp(sum(map(math.log, cublas_ratios)) / len(cublas_ratios))
        lines.append(f"\nwsc/cuBLAS geometric mean over {len(cublas_ratios)} shapes: {geomean:.3f}")
    return "\n".join(lines)


def _write_csv(path: Path, rows: list[dict]) -> None:
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(
            [
                "shape",
                "m",
                "n",
                "k",
                "dtype",
                "method",
                "config",
                "ms",
                "tflops",
                "rel_err",
                "ok",
                "wsc_over_cublas",
                "wsc_over_triton",
            ]
        )
        for row in rows:
            vs_cublas, vs_triton = _ratios(row)
            for r in row["results"]:
                writer.writerow(
                    [
                        row["shape"],
                        row["m"],
                        row["n"],
                        row["k"],
                        row["dtype"],
                        r["method"],
                        r.get("candidate") or r.get("config") or "",
                        r.get("ms"),
                        r.get("tflops"),
                        r.get("rel_err"),
                        r["ok"],
                        vs_cublas if r["method"] == "wsc" else "",
                        vs_triton if r["method"] == "wsc" else "",
                    ]
                )


def plot(rows: list[dict], path: Path, env: dict) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = {"cublas": "cuBLAS (torch.matmul)", "triton": "Triton", "wsc": "wsc (autotuned)"}
    # Only methods with a timing on some shape get bars (Triton may be absent).
    methods = [m for m in labels if any((_result(row, m) or {}).get("tflops") for row in rows)]
    width = 0.8 / len(methods)
    figure, axes = plt.subplots(figsize=(14, 5.5))
    for i, method in enumerate(methods):
        values = [(_result(row, method) or {}).get("tflops") or 0.0 for row in rows]
        positions = [x + (i - (len(methods) - 1) / 2) * width for x in range(len(rows))]
        axes.bar(positions, values, width, label=labels[method])
    axes.set_xticks(range(len(rows)))
    axes.set_xticklabels([row["shape"] for row in rows], rotation=30, ha="right", fontsize=8)
    axes.set_ylabel("TFLOP/s (median of CUDA events)")
    axes.set_ylim(0, axes.get_ylim()[1] * 1.15)  # room for the legend
    missing = [labels[m] for m in labels if m not in methods]
    axes.set_title(
        f"C = A B^T, fp32 accumulation, {env['gpu']}, {env['date_utc']}"
        + (f" ({', '.join(missing)}: not measured)" if missing else "")
    )
    axes.legend(loc="upper left", ncol=len(methods))
    axes.grid(axis="y", alpha=0.3)
    figure.tight_layout()
    figure.savefig(path, dpi=120)


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
