"""The product benchmark: `wsc.matmul` as users call it, against torch.mm (cuBLAS)
and the best Triton config of benchmarks/matmul.py, in one process on the same inputs.

    python benchmarks/wsc_matmul.py prepare             # CPU machine: fill $WSC_CACHE_DIR
    python benchmarks/wsc_matmul.py run --out DIR       # GPU machine (no MLIR needed)
    python benchmarks/wsc_matmul.py report DIR/results.jsonl   # the tables of BENCHMARKS.md
    python benchmarks/wsc_matmul.py tune --shapes ...         # GPU: the tuner's tables
    python benchmarks/wsc_matmul.py prepare|tune --shapes ... --extra FILE  # more candidates

Both `prepare` and `run` take the shapes from `--set` (`llm`, the default,
`odd` or `bmm`), `--layouts`, `--quick` and `--shapes`, so that a `prepare` with a
run's flags compiles what that run needs. `prepare` compiles every kernel of
the config spaces those calls are tuned over (the spaces wsc.matmul plans for
them from torch meta tensors: by dtype, B layout and C's epilogue; one compile
per config serves every size), as a user's CPU machine would fill the cache
before the GPU machine runs.

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

The sets, each with B as the transpose of a row-major weight ("nk",
`x @ w.T`) and as a row-major [K, N] ("kn", `a @ b`):
  * llm: shapes as LLMs use them: M in {16, 128, 512, 2048, 8192} times
    weights (N, K) in {(4096, 4096), (14336, 4096), (4096, 14336),
    (8192, 8192), (28672, 8192)}, f16, and bf16 at 8192^3;
  * odd: sizes that are multiples of no tile (64, 128 or 256) in any of M,
    N, K (ODD: M from 33 to 8191), f16, and bf16 at 3000 x 5000 x 7000.
    Where N is not a multiple of 8, C's rows are not 16-byte multiples: TMA
    cannot store them and wsc.matmul's coalesced-store epilogue does; a "kn"
    B's rows are then padded, as wsc.matmul asks of callers (`padded`), and
    the Triton kernel cannot run (`triton_runs`);
  * bmm: batched products (BMM), `wsc.bmm(a, b, out=c)` against
    `torch.bmm(a, b, out=c)`, f16: attention's two products per head and a
    mixture of experts' per-expert products ("cublas" in the records is
    torch.bmm there);
  * fp8: the LLM set's shapes with M >= 2048 in fp8 e4m3 with per-tensor
    scales, C in bf16, B as w.T ("nk" only: WGMMA reads fp8 K-major):
    `wsc.scaled_mm(a, b, sa, sb, out=c)` against `torch._scaled_mm` (cuBLAS;
    "cublas" in the records, and "cublas_fast" with use_fast_accum=True,
    which accumulates as wsc does, in the WGMMA's fp32 accumulator);
  * fp8-block: the same shapes with DeepSeek-V3's block scales (scale_a
    [M, K/128], scale_b [N/128, K/128]): `wsc.scaled_mm` with them ("wsc",
    scale_a column-major as torch._scaled_mm takes it, which the kernel
    reads in place; "wsc_row_major" with a row-major one, which costs a copy
    per call) against itself with per-tensor scales ("wsc_tensor") and
    torch._scaled_mm
    with per-tensor scales ("cublas", "cublas_fast"; their scales are 1).
First, a host-overhead probe: a 256^3 problem, where the GPU waits for the
host, wall time per call of wsc.matmul against torch.mm.

With `--epilogue bias,gelu,residual` (any of bias, residual and one of
ACTIVATIONS) every call computes act(A @ B + bias) + residual: wsc.matmul with
its fused epilogue against the same written for torch, `act(F.linear(a, w,
bias)) + residual`, compiled by torch.compile ("compiled") and eager
("eager": cuBLAS with the bias, then the activation and the sum as kernels
of their own), beside the bare torch.mm ("cublas"), which is what the fused
epilogue should cost almost nothing over. `--min-m` keeps the shapes with at
least that M.

`report` prints a table per set with its geometric mean and lowest ratio,
then, for M <= 64, where the kernel is bound by reading B, the HBM bandwidth
of wsc and cuBLAS: bytes moved (A and B read once, C written once) over the
kernel-alone time, and as a fraction of the measured GPU's peak.
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from wsc.kernels.matmul.check import activate, block_dequantized
from wsc.kernels.matmul.config import SCALE_BLOCK
from wsc.target.hopper import TMA_ALIGN

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

WEIGHTS = [(4096, 4096), (14336, 4096), (4096, 14336), (8192, 8192), (28672, 8192)]
ROWS = [16, 128, 512, 2048, 8192]
#: Sizes that are multiples of no tile (64, 128 or 256) in any of M, N, K, in
#: f16. K is a multiple of 8, as TMA needs of A's rows; N = 4097, 1333 and 8193
#: leave C's rows off TMA's 16 bytes (stored by coalesced stores; "kn" B padded).
ODD = [
    (33, 5000, 7000),  # M <= 64: bound by reading B
    (27, 4097, 4104),  # M <= 32, C's rows off 16 bytes (33 would share 33 x 5000's class)
    (200, 5000, 7000),  # a class of its own (M = 65..128 would share 128x8192x8192's)
    (1000, 1333, 520),  # 8 K tiles of 64 and a tail of 8
    (3000, 5000, 7000),  # issue 16's example: the last wave of tiles partly empty
    (4999, 4097, 4104),
    (8191, 8193, 8200),  # benchmarks/matmul.py's ragged shape
]
ODD_BF16 = [(3000, 5000, 7000)]
#: Batched products (wsc.bmm against torch.bmm), (batch, M, N, K): attention's
#: two products per head (Q K^T with B given as K [S, D] ("nk"), P V with V
#: [S, D] as B ("kn")) at 32 heads x 2048 and 64 x 1024 tokens, head dim 128,
#: and a mixture of experts' per-expert products (8 experts, 512 and 2048
#: tokens each, 4096 -> 14336), and square ones.
BMM = [
    (32, 2048, 2048, 128),
    (32, 2048, 128, 2048),
    (64, 1024, 1024, 128),
    (64, 1024, 128, 1024),
    (8, 512, 14336, 4096),
    (8, 2048, 14336, 4096),
    (16, 1024, 1024, 1024),
    (4, 4096, 4096, 4096),
]
#: fp8: (M, N, K) of the LLM set with M >= 2048.
FP8 = [(m, n, k) for m in (2048, 8192) for n, k in WEIGHTS]
SETS = ("llm", "odd", "bmm", "fp8", "fp8-block")
#: What `--quick` keeps of each set.
QUICK = {
    "llm": {(8192, 8192, 8192), (2048, 8192, 8192), (8192, 8192, 512), (16, 4096, 4096)},
    "odd": {(27, 4097, 4104), (1000, 1333, 520), (3000, 5000, 7000)},
    "bmm": {(32, 2048, 2048, 128), (8, 2048, 14336, 4096)},
    "fp8": {(8192, 8192, 8192), (2048, 14336, 4096)},
    "fp8-block": {(8192, 8192, 8192), (2048, 14336, 4096)},
}
LAYOUTS = ("nk", "kn")
#: Bytes per element, by the dtype names the records hold (C has A's dtype).
ELEMENT_BYTES = {"float16": 2, "bfloat16": 2, "float8_e4m3fn": 1}
#: fp8 products return bf16 (every other C has A's dtype).
FP8_DTYPE, FP8_OUT_DTYPE = "float8_e4m3fn", "bfloat16"
#: The per-tensor scales of the fp8 set's calls: not 1, so that a kernel that
#: ignored one would fail its check.
FP8_SCALES = (0.75, 1.25)
#: Peak HBM bandwidth, bytes/s, by the GPU a record was measured on (its
#: "gpu", the CUDA device name): NVIDIA's datasheets, 4.8 TB/s of HBM3e for the
#: H200 (SXM; the lab's device notes, H200.md, give the same) and 3.35 TB/s of
#: HBM3 for the H100 SXM. Records without a "gpu" are from the H200.
HBM_BYTES_PER_S = {"H200": 4.8e12, "H100 80GB HBM3": 3.35e12}


def hbm_peak(record) -> tuple[str, float]:
    """The GPU of `record` and its peak HBM bandwidth, bytes/s."""
    name = record.get("gpu", "H200")
    for gpu, peak in HBM_BYTES_PER_S.items():
        if gpu in name:
            return gpu, peak
    raise ValueError(f"no HBM peak known for the GPU of the record, {name!r}")


#: Up to this M the kernel is bound by reading B (issue 16): `report` gives
#: its HBM bandwidth.
HBM_BOUND_M = 64
#: The Triton config of benchmarks/matmul.py closest to wsc's schedule and the
#: best of its column at 8192^3 (BENCHMARKS.md): warp-specialized 128x256x64,
#: 3 stages, 4 warps, TMA descriptors made in the kernel, TMA store of C.
TRITON_CONFIG = dict(BLOCK_M=128, BLOCK_N=256, BLOCK_K=64, STAGES=3, SPECIALIZE=True, num_warps=4)
ROUNDS = 7
BLOCK_MS = 20.0  # aim of one timed block
PROBE = dict(m=256, n=256, k=256, calls=200, rounds=15)
L2_BYTES = 60 * 2**20
TOLERANCE = {"float16": 1e-3, "bfloat16": 2.0**-8, FP8_DTYPE: 2.0**-8}


def parse_epilogue(spec: str) -> dict:
    """--epilogue's "bias,gelu,residual" as wsc.matmul's keyword arguments'
    description: {"bias": True, "activation": "gelu", "residual": True}."""
    from wsc.kernels.matmul.config import ACTIVATIONS

    epilogue: dict = {}
    for part in filter(None, spec.split(",")):
        if part in ("bias", "residual"):
            epilogue[part] = True
        elif part in ACTIVATIONS and "activation" not in epilogue:
            epilogue["activation"] = part
        else:
            raise ValueError(
                f"--epilogue takes bias, residual and one of {', '.join(ACTIVATIONS)}, "
                f"separated by commas; got {part!r} in {spec!r}"
            )
    return epilogue


def shapes(
    layouts,
    quick: bool = False,
    only: str = "",
    shape_set: str = "llm",
    epilogue: dict | None = None,
    min_m: int = 0,
    dtypes: list[str] | None = None,
) -> list[dict]:
    """The set `shape_set` ("llm" or "odd") in `layouts` (a few of its shapes
    if `quick`), or the f16 problems `only` names ("MxNxK,MxNxK...", set
    "named"), those with M >= `min_m`; with `dtypes`, each of its sizes in
    each of those instead of the set's own dtypes. Each shape names its set,
    which its record keeps, and the fused epilogue its calls compute, if any."""
    rows = [row for row in _set_shapes(layouts, quick, only, shape_set) if row["m"] >= min_m]
    if dtypes:
        sizes = dict.fromkeys(
            tuple((key, value) for key, value in row.items() if key != "dtype") for row in rows
        )
        rows = [{**dict(size), "dtype": dtype} for size in sizes for dtype in dtypes]
    return [{**row, "epilogue": epilogue} if epilogue else row for row in rows]


def problems(text: str) -> str:
    """--shapes: M x N x K problems of positive ints, comma separated."""
    for item in text.split(",") if text else []:
        fields = item.split("x")
        if len(fields) != 3 or not all(field.isdecimal() and int(field) > 0 for field in fields):
            raise argparse.ArgumentTypeError(f"{item!r} is not MxNxK (three positive ints)")
    return text


def _set_shapes(layouts, quick: bool, only: str, shape_set: str) -> list[dict]:
    if only:
        named = [tuple(map(int, item.split("x"))) for item in only.split(",")]
        return [
            dict(m=m, n=n, k=k, layout=layout, dtype="float16", set="named")
            for layout in layouts
            for m, n, k in named
        ]
    if shape_set == "bmm":
        rows = [
            dict(batch=batch, m=m, n=n, k=k, layout=layout, dtype="float16", set=shape_set)
            for layout in layouts
            for batch, m, n, k in BMM
            if not quick or (batch, m, n, k) in QUICK[shape_set]
        ]
        return rows
    if shape_set in ("fp8", "fp8-block"):
        block = {"block_scales": True} if shape_set == "fp8-block" else {}
        return [
            dict(m=m, n=n, k=k, layout="nk", dtype=FP8_DTYPE, set=shape_set, **block)
            for m, n, k in FP8
            if not quick or (m, n, k) in QUICK[shape_set]
        ]
    if shape_set == "llm":
        sizes = [(m, n, k) for m in ROWS for n, k in WEIGHTS]
        sizes_bf16 = [(8192, 8192, 8192)]
    else:
        sizes, sizes_bf16 = ODD, ODD_BF16
    rows = [
        dict(m=m, n=n, k=k, layout=layout, dtype=dtype, set=shape_set)
        for layout in layouts
        for dtype, of_dtype in (("float16", sizes), ("bfloat16", sizes_bf16))
        for m, n, k in of_dtype
    ]
    if quick:
        rows = [r for r in rows if (r["m"], r["n"], r["k"]) in QUICK[shape_set]]
        if shape_set == "llm":
            rows.append(dict(m=8192, n=8192, k=512, layout="nk", dtype="float16", set="llm"))
    return rows


def padded(elements: int) -> int:
    """The row stride, in 16-bit elements, of a row of `elements`: the next
    multiple of TMA's 16 bytes. wsc.matmul reads A and B with TMA and asks a
    caller whose rows do not start 16 bytes apart to pad them; the benchmark
    does so (a "kn" B with N odd), and every method gets the same operands."""
    step = TMA_ALIGN // 2
    return -(-elements // step) * step


def operands(shape: dict, storage) -> tuple:
    """(a, b, c, bias, residual) of `shape` as the benchmark passes them:
    a [M, K]; b [K, N], for "nk" the transpose view of a row-major [N, K];
    A's and B's rows `padded`; c a contiguous [M, N]; the epilogue's bias
    [N] and residual [M, N] where it has them, else None; for an fp8 shape
    those two are its scales instead (float32 [1], FP8_SCALES; with
    block_scales scale_a [M, K/128] and scale_b [N/128, K/128], values in
    [0.5, 1.5]) and c is bf16.
    `storage(rows, cols)` makes each of A and B (in that order), then the
    residual, as a row-major tensor on the device and in the operands' dtype.
    A batched shape's a, b and c are batches of those matrices, one after
    another in memory (the epilogue has none)."""
    m, n, k = shape["m"], shape["n"], shape["k"]
    if "batch" in shape:
        batch = shape["batch"]

        def matrices(rows, cols, width):
            return storage(batch * rows, padded(width)).view(batch, rows, -1)[:, :, :cols]

        a = matrices(m, k, k)
        b = matrices(n, k, k).transpose(1, 2) if shape["layout"] == "nk" else matrices(k, n, n)
        return a, b, a.new_empty(batch, m, n), None, None
    epilogue = shape.get("epilogue") or {}
    a = storage(m, padded(k))[:, :k]
    if shape["layout"] == "nk":
        b = storage(n, padded(k))[:, :k].T
    else:
        b = storage(k, padded(n))[:, :n]
    if shape["dtype"] == FP8_DTYPE:
        import torch

        c = a.new_empty(m, n, dtype=getattr(torch, FP8_OUT_DTYPE))
        if shape.get("block_scales"):
            k_blocks = -(-k // SCALE_BLOCK)
            shapes = ((m, k_blocks), (-(-n // SCALE_BLOCK), k_blocks))
            scale_a, scale_b = (
                torch.linspace(0.5, 1.5, rows * cols, device=a.device).reshape(rows, cols)
                for rows, cols in shapes
            )
            return a, b, c, scale_a, scale_b.flip(0)
        scale_a, scale_b = (a.new_full((1,), value, dtype=torch.float32) for value in FP8_SCALES)
        return a, b, c, scale_a, scale_b
    bias = storage(1, n)[0] if epilogue.get("bias") else None
    residual = storage(m, n) if epilogue.get("residual") else None
    return a, b, a.new_empty(m, n), bias, residual


def epilogue_kwargs(shape: dict, bias, residual) -> dict:
    """wsc.matmul's keyword arguments of `shape`'s fused epilogue."""
    activation = (shape.get("epilogue") or {}).get("activation")
    return {"bias": bias, "activation": activation, "residual": residual}


def bytes_moved(shape: dict) -> int:
    """The least the product moves through HBM: A and B read once, C (of A's
    dtype) written once, and the epilogue's bias and residual read once."""
    m, n, k = shape["m"], shape["n"], shape["k"]
    epilogue = shape.get("epilogue") or {}
    extra = n * bool(epilogue.get("bias")) + m * n * bool(epilogue.get("residual"))
    size = ELEMENT_BYTES[shape["dtype"]]
    out_size = ELEMENT_BYTES[FP8_OUT_DTYPE] if shape["dtype"] == FP8_DTYPE else size
    matrix = (m * k + k * n + extra) * size + m * n * out_size
    return matrix * shape.get("batch", 1)


def flops(shape: dict) -> float:
    return 2.0 * shape["m"] * shape["n"] * shape["k"] * shape.get("batch", 1)


def plan_of(shape: dict, a, b, c, bias, residual):
    """wsc's plan of the call the benchmark makes for `shape`."""
    from wsc.matmul import plan, plan_bmm

    if "batch" in shape:
        return plan_bmm(a, b, c)
    if shape["dtype"] == FP8_DTYPE:
        return plan(a, b, c, scales=(bias, residual))
    return plan(a, b, c, **epilogue_kwargs(shape, bias, residual))


def triton_runs(shape: dict) -> bool:
    """Whether the Triton kernel can take `shape`: its descriptors read A and B
    unpadded and store C by TMA, so every row must be a 16-byte multiple. (Its
    masked-store variant writes NaN over half of C in Triton 3.6:
    benchmarks/results/comparison-log.txt, "device-masked".) It is not batched."""
    return "batch" not in shape and all(padded(size) == size for size in (shape["n"], shape["k"]))


# prepare (CPU machine) ------------------------------------------------------------------


def planned_spaces(selected: list[dict]) -> dict:
    """{(space, dtype): a plan of it}: the config spaces wsc.matmul will tune
    the calls of `selected` over, planned from the operands' metadata as the
    run passes them (meta tensors: nothing allocated)."""
    import torch

    plans = {}
    for shape in selected:
        meta = functools.partial(torch.empty, dtype=getattr(torch, shape["dtype"]), device="meta")
        p = plan_of(shape, *operands(shape, meta))
        plans.setdefault((p.space, p.dtype), p)
    return plans


def prepare(selected: list[dict], extra: list[dict]) -> int:
    from wsc.cache import Cache
    from wsc.matmul import SPACES, _extra_sizes, _fixed

    plans = planned_spaces(selected)
    cache = Cache()
    start = time.perf_counter()
    failed = 0
    for (space, dtype), p in sorted(plans.items()):
        sizes = {"m": 256, "n": 256, "k": 256, **_extra_sizes(p)}
        result = SPACES[space].tune(sizes, fixed=_fixed(p), cache=cache, extra=extra)
        for candidate in result.candidates:
            if candidate.error:
                failed += 1
                print(f"{space} {dtype} {candidate.config}: {candidate.error}", file=sys.stderr)
    print(
        f"compiled the spaces {', '.join(f'{s} {d}' for s, d in sorted(plans))} into "
        f"{cache.root} in {time.perf_counter() - start:.0f} s; {failed} candidates failed"
    )
    return 1 if failed else 0


def tune_tables(selected: list[dict], extra: list[dict]) -> int:
    """Search each shape's class again on the GPU (ignoring a cached choice) and
    print the tuner's table: every candidate config's time, the `extra`
    configs' among them, the winner marked."""
    import torch

    from wsc.matmul import search

    for shape in selected:
        meta = functools.partial(torch.empty, dtype=getattr(torch, shape["dtype"]), device="meta")
        a, b, c, bias, residual = operands(shape, meta)
        p = plan_of(shape, a, b, c, bias, residual)
        result = search(p, retune=True, progress=False, extra=extra)
        print(f"== {_name(shape)}: space {p.space}", flush=True)
        print(result.table(), flush=True)
    return 0


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
    """Input sets of one shape (`operands`), with its float64 reference on the first."""

    def __init__(self, torch, shape: dict):
        self.torch = torch
        m, n, k = shape["m"], shape["n"], shape["k"]
        self.dtype = getattr(torch, shape["dtype"])
        self.count = max(1, min(4, math.ceil(3 * L2_BYTES / bytes_moved(shape))))
        generator = torch.Generator(device="cuda").manual_seed(m * 7 + n * 3 + k)
        scale = k**-0.25

        def storage(rows, cols):
            return (torch.randn(rows, cols, device="cuda", generator=generator) * scale).to(
                self.dtype
            )

        self.sets = [operands(shape, storage) for _ in range(self.count)]
        self.block_scales = bool(shape.get("block_scales"))
        self.activation = epilogue_kwargs(shape, None, None)["activation"]

    def check(self, call, epilogue: bool = True) -> dict:
        """Relative error of `call`'s result on the first set against
        float64, every element, the output NaN-poisoned first; against the
        bare product where `epilogue` is False (cuBLAS's time reference)."""
        torch = self.torch
        a, b, c, bias, residual = self.sets[0]
        c.fill_(float("nan"))
        c = call(*self.sets[0])
        torch.cuda.synchronize()
        reference = a.double() @ b.double()
        if self.block_scales:
            # Block-scaled calls' operands are dequantized; the others' scales are 1.
            if epilogue:
                # b is w.T: the weight [N, K] is its transpose.
                a, w = block_dequantized(
                    a.double(), b.double().T, bias.double(), residual.double(), SCALE_BLOCK
                )
                reference = a @ w.T
            bias = residual = None
        elif self.dtype == getattr(torch, FP8_DTYPE):
            # Every method scales the product: bias and residual are the scales.
            reference *= float(bias) * float(residual)
            bias = residual = None
        if not epilogue:
            bias = residual = None
        if bias is not None:
            reference += bias.double()
        reference = activate(
            self.activation if epilogue else None,
            reference,
            erf=torch.erf,
            tanh=torch.tanh,
            exp=torch.exp,
        )
        if residual is not None:
            reference += residual.double()
        nan_count = int(torch.isnan(c).sum())
        error = float(torch.linalg.norm(c.double() - reference) / torch.linalg.norm(reference))
        return {
            "rel_err": error if math.isfinite(error) else None,
            "nan_count": nan_count,
            "ok": nan_count == 0
            and math.isfinite(error)
            and error < TOLERANCE[str(self.dtype).split(".")[1]],
        }


def _calls_per_block(shape: dict) -> int:
    estimate_ms = flops(shape) / 600e12 * 1e3 + 0.005
    return max(10, min(200, int(BLOCK_MS / estimate_ms)))


def timed_block(torch, call, sets, calls) -> tuple[float, float]:
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


def in_turn(names: list[str], rounds: int) -> Iterator[str]:
    """`names`, `rounds` times over, in the orders of a Williams design: over
    len(names) rounds (twice that for an odd count) each method runs at each
    position, and right after each other method, equally often, so that
    neither a place in the round nor the method run before favours one."""
    count = len(names)
    first = [0] + [(j + 1) // 2 if j % 2 else count - j // 2 for j in range(1, count)]
    orders = [[(index + shift) % count for index in first] for shift in range(count)]
    if count % 2:
        orders += [order[::-1] for order in orders]
    for round_index in range(rounds):
        yield from (names[index] for index in orders[round_index % len(orders)])


def graph_timer(torch, call, sets, calls: int):
    """`calls` calls of `call(*sets[i])`, the sets in turn, captured in a CUDA
    graph, and a timer of its replays: device us per call."""
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

    problem = Problem(torch, dict(m=512, n=512, k=512, layout=layout, dtype=dtype))
    triton = _triton_call(torch, layout)
    print(json.dumps(problem.check(lambda a, b, c, *_: triton(a, b, c))))
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
    problem = Problem(
        torch, dict(m=PROBE["m"], n=PROBE["n"], k=PROBE["k"], layout="nk", dtype="float16")
    )
    a, b, c, *_ = problem.sets[0]
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


def torch_epilogue(torch, activation: str | None):
    """act(F.linear(a, b^T, bias)) + residual, as a torch user writes the
    fused epilogue (b is [K, N]: its transpose is the linear's weight)."""
    functional = torch.nn.functional
    act = {
        None: None,
        "relu": functional.relu,
        "gelu": functional.gelu,
        "gelu_tanh": functools.partial(functional.gelu, approximate="tanh"),
        "silu": functional.silu,
    }[activation]

    def linear(a, b, bias, residual):
        y = functional.linear(a, b.T, bias)
        if act is not None:
            y = act(y)
        return y if residual is None else y + residual

    return linear


def _methods(torch, wsc, shape: dict, triton_ok: bool, sets: list) -> dict:
    """{name: call(a, b, c, bias, residual) -> the result}, for the input `sets`."""
    if "batch" in shape:
        return {
            "cublas": lambda a, b, c, *_: torch.bmm(a, b, out=c),
            "wsc": lambda a, b, c, *_: wsc.bmm(a, b, out=c),
        }
    if shape.get("block_scales"):
        out_dtype = getattr(torch, FP8_OUT_DTYPE)
        one = torch.ones(1, device="cuda")
        # scale_a column-major, as torch._scaled_mm takes it (one per set).
        column_major = {sa.data_ptr(): sa.t().contiguous().t() for *_, sa, _ in sets}
        return {
            "cublas": lambda a, b, *_: torch._scaled_mm(a, b, one, one, out_dtype=out_dtype),
            "cublas_fast": lambda a, b, *_: torch._scaled_mm(
                a, b, one, one, out_dtype=out_dtype, use_fast_accum=True
            ),
            "wsc_tensor": lambda a, b, c, *_: wsc.scaled_mm(a, b, one, one, out=c),
            "wsc": lambda a, b, c, sa, sb: wsc.scaled_mm(
                a, b, column_major[sa.data_ptr()], sb, out=c
            ),
            "wsc_row_major": lambda a, b, c, sa, sb: wsc.scaled_mm(a, b, sa, sb, out=c),
        }
    if shape["dtype"] == FP8_DTYPE:
        out_dtype = getattr(torch, FP8_OUT_DTYPE)
        return {
            "cublas": lambda a, b, c, sa, sb: torch._scaled_mm(a, b, sa, sb, out_dtype=out_dtype),
            "cublas_fast": lambda a, b, c, sa, sb: torch._scaled_mm(
                a, b, sa, sb, out_dtype=out_dtype, use_fast_accum=True
            ),
            "wsc": lambda a, b, c, sa, sb: wsc.scaled_mm(a, b, sa, sb, out=c),
        }
    methods = {"cublas": lambda a, b, c, *_: torch.mm(a, b, out=c)}
    if not shape.get("epilogue"):
        methods["wsc"] = lambda a, b, c, *_: wsc.matmul(a, b, out=c)
        if triton_ok:
            triton = _triton_call(torch, shape["layout"])
            methods["triton"] = lambda a, b, c, *_: triton(a, b, c)
        return methods
    eager = torch_epilogue(torch, epilogue_kwargs(shape, None, None)["activation"])
    # A fresh compile per shape: its sizes are static, as in a served model.
    compiled = torch.compile(eager, dynamic=False)
    methods["eager"] = lambda a, b, c, bias, residual: eager(a, b, bias, residual)
    methods["compiled"] = lambda a, b, c, bias, residual: compiled(a, b, bias, residual)
    methods["wsc"] = lambda a, b, c, bias, residual: wsc.matmul(
        a, b, out=c, **epilogue_kwargs(shape, bias, residual)
    )
    return methods


def _checks_epilogue(shape: dict, name: str) -> bool:
    """Whether `name`'s result is checked against the product with its
    epilogue: every method's but cuBLAS's bare product, and with block scales
    wsc's alone, with either layout of scale_a (the other methods' scales are 1)."""
    if shape.get("block_scales"):
        return name in ("wsc", "wsc_row_major")
    return name != "cublas"


def bench_shape(torch, wsc, shape: dict, triton_ok: bool) -> dict:
    problem = Problem(torch, shape)
    methods = _methods(torch, wsc, shape, triton_ok, problem.sets)
    torch.cuda.synchronize()
    began = time.perf_counter()
    methods["wsc"](*problem.sets[0])
    torch.cuda.synchronize()
    first_call_s = time.perf_counter() - began
    # With an epilogue, cuBLAS's bare product is the time it should cost.
    record = {
        **shape,
        "gpu": torch.cuda.get_device_name(),
        "first_call_s": first_call_s,
        "input_sets": problem.count,
        "check": {
            name: problem.check(call, epilogue=_checks_epilogue(shape, name))
            for name, call in methods.items()
        },
    }
    calls = _calls_per_block(shape)
    replays = {
        name: graph_timer(torch, call, problem.sets, calls) for name, call in methods.items()
    }
    device = {name: [] for name in methods}
    wall = {name: [] for name in methods}
    kernel = {name: [] for name in methods}
    for name in in_turn(list(methods), ROUNDS):
        device_us, wall_us = timed_block(torch, methods[name], problem.sets, calls)
        device[name].append(device_us)
        wall[name].append(wall_us)
        kernel[name].append(replays[name]())
    work = flops(shape)
    record.update(
        calls_per_block=calls,
        rounds=ROUNDS,
        results={
            name: {
                "device_us": _summary(device[name]),
                "wall_us": _summary(wall[name]),
                "kernel_us": _summary(kernel[name]),
                "kernel_tflops": work / statistics.median(kernel[name]) / 1e6,
            }
            for name in methods
        },
    )
    from wsc.device import hopper_name
    from wsc.matmul import _cache, choose_config

    a, b, c, bias, residual = problem.sets[0]
    p = plan_of(shape, a, b, c, bias, residual)
    record["space"] = p.space
    record["config"] = choose_config(p, hopper_name(0, "wsc.matmul"), _cache())
    return record


def run(out: Path, selected: list[dict]) -> int:
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
        for shape in selected:
            key = (shape["dtype"], shape["layout"])
            # The Triton GEMM has no epilogue: torch.compile stands in for it.
            if key not in triton_ok and not shape.get("epilogue") and key[0] != FP8_DTYPE:
                triton_ok[key] = _triton_works(*key)
            runs = triton_ok.get(key, False) and triton_runs(shape)
            record = bench_shape(torch, wsc, shape, runs)
            results.write(json.dumps(record) + "\n")
            results.flush()
            print(_line(record), flush=True)
    return 0


# report ---------------------------------------------------------------------------------

#: The sets' titles in the report, in its order; records without a set are
#: the LLM set's (they predate the others).
SET_TITLES = {
    "llm": "The LLM shape set",
    "odd": "Sizes that are not multiples of the tile (--set odd)",
    "named": "Named shapes (--shapes)",
    "bmm": "Batched products, wsc.bmm against torch.bmm (--set bmm): M, N, K per matrix",
    "fp8": "fp8 e4m3 with per-tensor scales, bf16 C: wsc.scaled_mm against torch._scaled_mm "
    "(--set fp8), and against it with use_fast_accum=True",
    "fp8-block": "fp8 e4m3 with block scales, bf16 C (--set fp8-block): wsc.scaled_mm with "
    "them against torch._scaled_mm with per-tensor scales, and against itself with per-tensor "
    "scales",
}


def _ratio(record, base: str, key: str) -> float | None:
    results = record["results"]
    if base not in results:
        return None
    return results[base][key]["median"] / results["wsc"][key]["median"]


def hbm_bandwidth(record, method: str) -> float:
    """Bytes per second of `method`'s kernel alone: `bytes_moved` over its
    median kernel-alone time."""
    return bytes_moved(record) / (record["results"][method]["kernel_us"]["median"] * 1e-6)


def _baseline(record) -> str:
    """What wsc is measured against: torch.compile with an epilogue, else cuBLAS."""
    return "compiled" if record.get("epilogue") else "cublas"


def _line(record) -> str:
    r = record["results"]
    base = _baseline(record)
    ratios = " ".join(
        f"{key.split('_')[0]}={_ratio(record, base, key):.3f}"
        for key in ("kernel_us", "device_us", "wall_us")
    )
    ok = all(check["ok"] for check in record["check"].values())
    hbm = ""
    if record["m"] <= HBM_BOUND_M:
        bandwidth = hbm_bandwidth(record, "wsc")
        gpu, peak = hbm_peak(record)
        hbm = f" ({bandwidth / 1e9:.0f} GB/s, {bandwidth / peak:.2f} of the {gpu}'s HBM peak)"
    return (
        f"{_name(record)}: wsc/{base} {ratios}; wsc {r['wsc']['kernel_tflops']:.0f} "
        f"TFLOP/s{hbm}; first call "
        f"{record['first_call_s']:.1f} s; checks {'ok' if ok else record['check']}"
    )


def _epilogue_name(record) -> str:
    """ "bias,gelu,residual": the record's fused epilogue as --epilogue spells it."""
    epilogue = record.get("epilogue") or {}
    parts = ["bias"] * bool(epilogue.get("bias")) + [epilogue.get("activation")]
    return ",".join(filter(None, parts + ["residual"] * bool(epilogue.get("residual"))))


def _batch_times(record) -> str:
    """ "B x " of a batched record's B matrices, else nothing."""
    return f"{record['batch']} x " if "batch" in record else ""


def _name(record) -> str:
    size = f"{_batch_times(record)}{record['m']}x{record['n']}x{record['k']}"
    name = f"{size} {record['layout']} {record['dtype']}"
    return f"{name} +{_epilogue_name(record)}" if record.get("epilogue") else name


def summary(records) -> str:
    """Geometric mean and lowest of the ratios of wsc to its baseline (cuBLAS,
    or torch.compile with an epilogue) over `records`, on the user path
    (wall) and for the kernel alone."""
    parts = []
    for key, label in (("wall_us", "user path (wall)"), ("kernel_us", "kernel alone")):
        ratios = [(_ratio(rec, _baseline(rec), key), rec) for rec in records]
        mean = math.exp(sum(math.log(ratio) for ratio, _ in ratios) / len(ratios))
        lowest, where = min(ratios, key=lambda pair: pair[0])
        parts.append(f"{label} {mean:.3f}, lowest {lowest:.3f} ({_name(where)})")
    return f"geometric mean over {len(records)} shapes: " + "; ".join(parts)


def _table(records) -> None:
    # A batched set's "cublas" method is torch.bmm; the fp8 set's torch._scaled_mm,
    # and its third one that with fast accumulation.
    fp8 = all(rec["dtype"] == FP8_DTYPE for rec in records)
    mm = "torch.bmm" if all("batch" in rec for rec in records) else "torch.mm"
    mm, third = ("torch._scaled_mm", "fast accum") if fp8 else (mm, "Triton")
    if all(rec.get("block_scales") for rec in records):
        third = "wsc per-tensor"
    print(
        f"| M | N | K | B | dtype | wall us/call: wsc / {mm} / {third} | user path wsc/cuBLAS "
        f"(wall) | kernel alone wsc/cuBLAS | wsc/{third} (kernel) | wsc TFLOP/s | first call s |"
    )
    print("|" + "---|" * 11)
    for rec in records:
        r = rec["results"]

        def cell(name, results=r):
            if name not in results:
                return "n/a"
            return f"{results[name]['wall_us']['median']:.1f}"

        # The third method: Triton, or for fp8 cuBLAS with fast accumulation,
        # or with block scales wsc with per-tensor ones.
        third = next((name for name in ("wsc_tensor", "cublas_fast") if name in r), "triton")
        triton_ratio = _ratio(rec, third, "kernel_us")
        row_major = (
            f" ({cell('wsc_row_major')} with scale_a row-major)" if "wsc_row_major" in r else ""
        )
        print(
            f"| {_batch_times(rec)}{rec['m']} | {rec['n']} | {rec['k']} | {rec['layout']} | "
            f"{rec['dtype']} | {cell('wsc')}{row_major} / {cell('cublas')} / {cell(third)} | "
            f"{_ratio(rec, 'cublas', 'wall_us'):.3f} | {_ratio(rec, 'cublas', 'kernel_us'):.3f} | "
            f"{'n/a' if triton_ratio is None else f'{triton_ratio:.3f}'} | "
            f"{r['wsc']['kernel_tflops']:.0f} | {rec['first_call_s']:.1f} |"
        )


def _hbm_table(records) -> None:
    peaks = sorted({hbm_peak(record) for record in records})
    print(
        f"HBM bandwidth at M <= {HBM_BOUND_M}, kernel alone: bytes moved (A and B read once, "
        f"C written once) over the median time, and that as a fraction of the peak of the "
        f"GPU measured ("
        + ", ".join(f"{gpu}: {peak / 1e12:.2f} TB/s" for gpu, peak in peaks)
        + ")\n"
    )
    print(
        "| M | N | K | B | dtype | MB moved | wsc us | wsc GB/s | wsc / peak "
        "| cuBLAS us | cuBLAS GB/s | cuBLAS / peak |"
    )
    print("|" + "---|" * 12)
    for rec in records:
        cells = []
        for method in ("wsc", "cublas"):
            bandwidth = hbm_bandwidth(rec, method)
            cells += [
                f"{rec['results'][method]['kernel_us']['median']:.1f}",
                f"{bandwidth / 1e9:.0f}",
                f"{bandwidth / hbm_peak(rec)[1]:.2f}",
            ]
        print(
            f"| {rec['m']} | {rec['n']} | {rec['k']} | {rec['layout']} | {rec['dtype']} | "
            f"{bytes_moved(rec) / 1e6:.1f} | " + " | ".join(cells) + " |"
        )


def _epilogue_table(records) -> None:
    print(
        "| M | N | K | B | dtype | epilogue | kernel us: wsc / compiled / eager / torch.mm "
        "| wsc/compiled (kernel) | wsc/compiled (wall) | wsc/eager (kernel) "
        "| TFLOP/s: wsc / compiled / torch.mm | first call s |"
    )
    print("|" + "---|" * 11)
    for rec in records:
        r = rec["results"]
        times = " / ".join(
            f"{r[name]['kernel_us']['median']:.1f}"
            for name in ("wsc", "compiled", "eager", "cublas")
        )
        tflops = " / ".join(
            f"{r[name]['kernel_tflops']:.0f}" for name in ("wsc", "compiled", "cublas")
        )
        print(
            f"| {rec['m']} | {rec['n']} | {rec['k']} | {rec['layout']} | {rec['dtype']} | "
            f"{_epilogue_name(rec)} | {times} | {_ratio(rec, 'compiled', 'kernel_us'):.3f} | "
            f"{_ratio(rec, 'compiled', 'wall_us'):.3f} | {_ratio(rec, 'eager', 'kernel_us'):.3f} | "
            f"{tflops} | {rec['first_call_s']:.1f} |"
        )


def report(path: Path) -> int:
    records = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    fused = [rec for rec in records if rec.get("epilogue")]
    if fused:
        print("### Fused epilogues (--epilogue): wsc against torch.compile\n")
        _epilogue_table(fused)
        print(f"\n{summary(fused)}\n")
    records = [rec for rec in records if not rec.get("epilogue")]
    for shape_set, title in SET_TITLES.items():
        of_set = [rec for rec in records if rec.get("set", "llm") == shape_set]
        if of_set:
            print(f"### {title}\n")
            _table(of_set)
            print(f"\n{summary(of_set)}")
            # cuBLAS is several times slower where C's rows are not 16-byte
            # multiples: apart, so that those shapes do not hide the others.
            aligned = [rec for rec in of_set if padded(rec["n"]) == rec["n"]]
            if 0 < len(aligned) < len(of_set):
                unaligned = [rec for rec in of_set if rec not in aligned]
                print(f"\nN a multiple of 8, {summary(aligned)}")
                print(f"\nN not a multiple of 8, {summary(unaligned)}")
            print()
    bound = [rec for rec in records if rec["m"] <= HBM_BOUND_M]
    if bound:
        _hbm_table(bound)
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    commands = parser.add_subparsers(dest="command", required=True)
    # The shapes, the same for prepare (what to compile) and run (what to time).
    select = argparse.ArgumentParser(add_help=False)
    select.add_argument("--set", choices=SETS, default="llm", dest="shape_set")
    select.add_argument("--layouts", default=",".join(LAYOUTS))
    select.add_argument("--quick", action="store_true", help="a few shapes of the set only")
    select.add_argument(
        "--shapes",
        type=problems,
        default="",
        help="these f16 problems instead, e.g. 4096x4096x4096,128x4096x4096",
    )
    select.add_argument(
        "--epilogue",
        default="",
        help="a fused epilogue for every call, against torch.compile: e.g. bias,gelu,residual",
    )
    select.add_argument("--min-m", type=int, default=0, help="only the shapes with M >= this")
    select.add_argument(
        "--dtypes",
        default="",
        help="every size in each of these input dtypes, e.g. float16,bfloat16 "
        "(default: the set's own, f16 everywhere and bf16 on some)",
    )
    # Configs to try beside the spaces' without editing them (which would
    # invalidate every cached kernel): compiled by prepare, timed by tune.
    extra = argparse.ArgumentParser(add_help=False)
    extra.add_argument(
        "--extra",
        type=Path,
        metavar="FILE",
        help="a file holding a JSON list of configs, e.g. "
        '[{"block_m": 72, "swap_ab": true, "cluster_n": 3}]',
    )
    commands.add_parser(
        "prepare",
        parents=[select, extra],
        help="compile the kernels into $WSC_CACHE_DIR (CPU machine)",
    )
    commands.add_parser(
        "tune",
        parents=[select, extra],
        help="search each shape's configs again and print the tuner's table (GPU machine)",
    )
    run_parser = commands.add_parser("run", parents=[select], help="benchmark on the GPU machine")
    run_parser.add_argument("--out", type=Path, required=True)
    report_parser = commands.add_parser("report", help="markdown tables of a results.jsonl")
    report_parser.add_argument("results", type=Path)
    probe = commands.add_parser("triton-probe")
    probe.add_argument("dtype")
    probe.add_argument("layout")
    args = parser.parse_args(argv)
    if args.command == "report":
        return report(args.results)
    if args.command == "triton-probe":
        return triton_probe(args.dtype, args.layout)
    try:
        epilogue = parse_epilogue(args.epilogue)
    except ValueError as error:
        parser.error(str(error))
    dtypes = [d for d in args.dtypes.split(",") if d]
    unknown = sorted(set(dtypes) - {"float16", "bfloat16"})
    if unknown:
        parser.error(f"--dtypes takes float16 and bfloat16, not {', '.join(unknown)}")
    selected = shapes(
        args.layouts.split(","),
        args.quick,
        args.shapes,
        args.shape_set,
        epilogue,
        args.min_m,
        dtypes,
    )
    if args.command in ("prepare", "tune"):
        try:
            configs = json.loads(args.extra.read_text()) if args.extra else []
        except (OSError, json.JSONDecodeError) as error:
            parser.error(f"--extra {args.extra}: {error}")
        if not (isinstance(configs, list) and all(isinstance(c, dict) for c in configs)):
            parser.error(f"--extra {args.extra}: expected a JSON list of config objects")
        if args.command == "prepare":
            return prepare(selected, configs)
        return tune_tables(selected, configs)
    return run(args.out, selected)


if __name__ == "__main__":
    sys.exit(main())
