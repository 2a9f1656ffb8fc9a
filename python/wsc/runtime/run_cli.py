"""`wsc run DIR`: run a compiled matmul artifact on random data, check it, time it.

The command allocates fresh random inputs of the artifact's shapes and dtype,
poisons the output with NaN (so an element the kernel never writes cannot
pass for a correct one), launches, and then
  * with --check compares against a float64 reference computed on the CPU:
    the full product for small problems, otherwise a random sample of whole
    rows and columns plus the last row/column tile (where ragged edges and
    TMA zero-fill matter), and counts NaNs over the whole output;
  * with --bench reports the median time of --iters launches measured with
    CUDA events after warm-up launches, and the resulting TFLOP/s.
It prints exactly one JSON line and exits 0 when the run is ok, 1 otherwise.
A kernel that hangs past --timeout is reported and the process exits at once,
since its CUDA context can no longer be used or even torn down.

Device memory comes from torch when it is importable and sees a GPU, else
from this runtime's own `DeviceArray`; the inputs are generated with numpy
either way, so a seed gives the same data on both paths.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys

import numpy as np

from . import Kernel
from .artifact import Artifact, ArtifactError, WscRuntimeError, load_artifact
from .driver import HOST_DTYPES, CudaUnavailableError, DeviceArray, Event, LaunchTimeout

# Problems up to this many multiply-adds get a full reference; beyond it
# the float64 product would take too long on a CPU, so rows/cols are sampled.
FULL_REFERENCE_MAX_WORK = 2048**3
SAMPLED_ROWS = 64
SAMPLED_COLS = 64
DEFAULT_TILE = 128
WARMUP_LAUNCHES = 5
# Relative Frobenius error allowed. A bf16 output alone rounds with a relative
# error near 3e-3, so it gets a looser bound than f16/f32 outputs.
TOLERANCE = {"f32": 1e-3, "f16": 1e-3, "bf16": 1e-2}


def tolerance(problem: MatmulProblem) -> float:
    """The relative error allowed for `problem`'s result."""
    return tolerance_for(problem.out_dtype, problem.accumulator, problem.k)


def tolerance_for(out_dtype: str, accumulator: str, k: int) -> float:
    """The relative error allowed for a K-deep product. With f16 accumulators
    (problem key "accumulator") the running sum rounds to f16 once per k16
    WGMMA step: relative error about 2^-10/sqrt(12) * sqrt(K/32), allowed
    with a margin of about 2.5 as 2^-11 * sqrt(K/16)."""
    bound = TOLERANCE[out_dtype]
    if accumulator == "f16":
        bound = max(bound, 2.0 ** -11 * math.sqrt(k / 16))
    return bound
NAN_BITS = {"f32": 0x7FC00000, "f16": 0x7E00, "bf16": 0x7FC0}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="wsc run", description=__doc__.split("\n", 1)[0])
    parser.add_argument("dir", help="artifact directory holding kernel.json")
    parser.add_argument("--check", action="store_true", help="compare with a float64 reference")
    parser.add_argument("--bench", action="store_true", help="time the kernel with CUDA events")
    parser.add_argument("--seed", type=int, default=0, help="random seed for the inputs (default 0)")
    parser.add_argument("--iters", type=_positive_int, default=20, help="timed launches for --bench (default 20)")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds before a launch counts as hung (default 60)")
    parser.add_argument("--device", type=int, default=0, help="CUDA device ordinal (default 0)")
    parser.add_argument(
        "--backend", choices=("auto", "torch", "driver"), default="auto",
        help="device memory from torch or from the CUDA driver directly (default: torch if usable)",
    )
    args = parser.parse_args(argv)

    report: dict = {}
    try:
        artifact = load_artifact(args.dir)
        report = _base_report(artifact)
        kernel = Kernel(artifact, device=args.device)
        report = evaluate(kernel, seed=args.seed, timeout_s=args.timeout, check=args.check,
                          bench=args.bench, iters=args.iters, backend=args.backend)
    except LaunchTimeout as exc:
        _emit({**report, "ok": False, "error": f"LaunchTimeout: {exc}"})
        # Interpreter shutdown would free device memory through the hung
        # context and block; leave without running any cleanup.
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(1)
    except WscRuntimeError as exc:
        _emit({**report, "ok": False, "error": f"{type(exc).__name__}: {exc}"})
        return 1
    _emit(report)
    return 0 if report["ok"] else 1


def evaluate(kernel: Kernel, *, seed: int = 0, timeout_s: float = 60.0, check: bool = True,
             bench: bool = False, iters: int = 20, backend: str = "auto") -> dict:
    """Run `kernel` once on poisoned output (and time it if `bench`); return the report."""
    problem = MatmulProblem.from_artifact(kernel.artifact)
    memory = _make_backend(backend, kernel.device.ordinal)
    rng = np.random.default_rng(seed)
    # Scaling each operand by K^-1/4 keeps the products' entries near unit variance.
    scale = problem.k ** -0.25
    a_host = random_operand(rng, problem.a_shape, problem.dtype, scale)
    b_host = random_operand(rng, problem.b_shape, problem.dtype, scale)
    a = memory.upload(a_host, problem.dtype)
    b = memory.upload(b_host, problem.dtype)
    c = memory.empty(problem.c_shape, problem.out_dtype)
    launch = kernel.prepare(a=a, b=b, c=c)

    memory.poison(c, problem.out_dtype)
    launch.launch()
    kernel.synchronize(timeout_s=timeout_s)
    c_values = to_float64(memory.download(c, problem.out_dtype), problem.out_dtype)
    nan_count = int(np.isnan(c_values).sum())

    rel_err = None
    if check:
        rel_err = sampled_relative_error(problem, a_host, b_host, c_values, rng)
    ms = tflops = None
    if bench:
        ms = _bench(launch, kernel, iters, timeout_s)
        tflops = 2.0 * problem.m * problem.n * problem.k / (ms * 1e-3) / 1e12
    tol = tolerance(problem)
    accurate = not check or (rel_err is not None and math.isfinite(rel_err) and rel_err <= tol)
    return {
        **_base_report(kernel.artifact),
        "rel_err": _finite_or_none(rel_err),
        "tol": tol,
        "nan_count": nan_count,
        "ms": ms,
        "tflops": tflops,
        "ok": nan_count == 0 and accurate,
    }


class MatmulProblem:
    """The matmul an artifact computes: C[m,n] = A[m,k] @ B (B is [n,k] for "nk", [k,n] for "kn")."""

    def __init__(self, m: int, n: int, k: int, dtype: str, out_dtype: str, b_layout: str, tile_m: int, tile_n: int,
                 accumulator: str = "f32"):
        self.m, self.n, self.k = m, n, k
        self.dtype, self.out_dtype, self.b_layout = dtype, out_dtype, b_layout
        self.accumulator = accumulator
        self.tile_m, self.tile_n = tile_m, tile_n

    @property
    def a_shape(self) -> tuple[int, int]:
        return (self.m, self.k)

    @property
    def b_shape(self) -> tuple[int, int]:
        return (self.n, self.k) if self.b_layout == "nk" else (self.k, self.n)

    @property
    def c_shape(self) -> tuple[int, int]:
        return (self.m, self.n)

    @classmethod
    def from_artifact(cls, artifact: Artifact) -> MatmulProblem:
        def fail(message: str) -> ArtifactError:
            return ArtifactError(f"{artifact.json_path}: wsc run: {message}")

        problem = artifact.problem
        values = {}
        for key in ("m", "n", "k"):
            value = problem.get(key)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise fail(f"key 'problem.{key}': expected a positive integer, got {value!r}")
            values[key] = value
        for key, choices in (("dtype", HOST_DTYPES), ("out_dtype", HOST_DTYPES), ("b_layout", ("nk", "kn"))):
            if problem.get(key) not in choices:
                raise fail(f"key 'problem.{key}': expected one of {', '.join(choices)}, got {problem.get(key)!r}")
            values[key] = problem[key]
        accumulator = problem.get("accumulator", "f32")
        if accumulator not in ("f32", "f16"):
            raise fail(f"key 'problem.accumulator': expected f32 or f16, got {accumulator!r}")
        config = artifact.config
        result = cls(
            tile_m=_config_int(config, "block_m"),
            tile_n=_config_int(config, "block_n"),
            accumulator=accumulator,
            **values,
        )
        expected = {
            "a": (result.a_shape, result.dtype),
            "b": (result.b_shape, result.dtype),
            "c": (result.c_shape, result.out_dtype),
        }
        for name, (shape, dtype) in expected.items():
            spec = artifact.tensors.get(name)
            if spec is None:
                raise fail(f"expected a matmul artifact with tensors a, b, c; 'tensors' has no '{name}'")
            if spec.shape != shape or spec.dtype != dtype:
                raise fail(
                    f"tensor '{name}' is {spec.dtype} {list(spec.shape)}, but problem "
                    f"(b_layout {result.b_layout}) implies {dtype} {list(shape)}"
                )
        return result


def random_operand(rng: np.random.Generator, shape: tuple[int, ...], dtype: str, scale: float) -> np.ndarray:
    """Normal random values rounded to `dtype`, as the host array of HOST_DTYPES[dtype]."""
    values = rng.standard_normal(shape, dtype=np.float32)
    values *= np.float32(scale)
    if dtype == "bf16":
        return float32_to_bf16_bits(values)
    return values.astype(HOST_DTYPES[dtype], copy=False)


def float32_to_bf16_bits(values: np.ndarray) -> np.ndarray:
    """Round float32 to bf16 (nearest, ties to even); returns the uint16 bit patterns."""
    bits = values.astype(np.float32, copy=False).view(np.uint32)
    rounding = np.uint32(0x7FFF) + ((bits >> np.uint32(16)) & np.uint32(1))
    return ((bits + rounding) >> np.uint32(16)).astype(np.uint16)


def to_float64(host: np.ndarray, dtype: str) -> np.ndarray:
    """Exact float64 values of a host array holding `dtype` data."""
    if dtype == "bf16":
        return (host.astype(np.uint32) << np.uint32(16)).view(np.float32).astype(np.float64)
    return host.astype(np.float64)


def sample_indices(rng: np.random.Generator, extent: int, count: int, tile: int) -> np.ndarray:
    """`count` random indices below `extent` plus all of the last `tile`-sized tile, sorted."""
    last_tile = np.arange((extent - 1) // tile * tile, extent)
    return np.union1d(rng.choice(extent, size=min(count, extent), replace=False), last_tile)


def sampled_relative_error(problem: MatmulProblem, a_host: np.ndarray, b_host: np.ndarray,
                           c_values: np.ndarray, rng: np.random.Generator) -> float:
    """Relative Frobenius error of C against a float64 reference (full or sampled)."""
    a = to_float64(a_host, problem.dtype)
    b = to_float64(b_host, problem.dtype)
    b_kn = b.T if problem.b_layout == "nk" else b
    if problem.m * problem.n * problem.k <= FULL_REFERENCE_MAX_WORK:
        pairs = [(c_values, a @ b_kn)]
    else:
        rows = sample_indices(rng, problem.m, SAMPLED_ROWS, problem.tile_m)
        cols = sample_indices(rng, problem.n, SAMPLED_COLS, problem.tile_n)
        pairs = [(c_values[rows, :], a[rows, :] @ b_kn), (c_values[:, cols], a @ b_kn[:, cols])]
    error = sum(float(np.sum((got - want) ** 2)) for got, want in pairs)
    norm = sum(float(np.sum(want**2)) for _, want in pairs)
    return math.sqrt(error / norm) if norm else math.sqrt(error)


def _bench(launch, kernel: Kernel, iters: int, timeout_s: float) -> float:
    """Median milliseconds of `iters` launches, each between its own pair of events."""
    for _ in range(WARMUP_LAUNCHES):
        launch.launch()
    kernel.synchronize(launch.stream, timeout_s)
    events = [(Event(), Event()) for _ in range(iters)]
    for start, end in events:
        start.record(launch.stream)
        launch.launch()
        end.record(launch.stream)
    kernel.synchronize(launch.stream, timeout_s)
    return float(np.median([start.elapsed_ms(end) for start, end in events]))


class _DriverMemory:
    """Device memory through `DeviceArray` (no torch needed)."""

    def __init__(self, device: int):
        self.device = device

    def upload(self, host: np.ndarray, dtype: str):
        return DeviceArray.from_host(host, dtype, self.device)

    def empty(self, shape, dtype: str):
        return DeviceArray(shape, dtype, self.device)

    def poison(self, array, dtype: str) -> None:
        array.fill_bits(NAN_BITS[dtype])

    def download(self, array, dtype: str) -> np.ndarray:
        return array.to_host()


class _TorchMemory:
    """Device memory through torch, on its default (legacy) stream, as the launches."""

    def __init__(self, torch, device: int):
        self.torch = torch
        self.device = torch.device("cuda", device)
        self.dtypes = {"f16": torch.float16, "bf16": torch.bfloat16, "f32": torch.float32}

    def upload(self, host: np.ndarray, dtype: str):
        if dtype == "bf16":
            # torch reads no uint16 from numpy everywhere; int16 carries the same bits.
            return self.torch.from_numpy(host.view(np.int16)).to(self.device).view(self.torch.bfloat16)
        return self.torch.from_numpy(host).to(self.device)

    def empty(self, shape, dtype: str):
        return self.torch.empty(shape, dtype=self.dtypes[dtype], device=self.device)

    def poison(self, tensor, dtype: str) -> None:
        tensor.fill_(float("nan"))

    def download(self, tensor, dtype: str) -> np.ndarray:
        if dtype == "bf16":
            return tensor.view(self.torch.int16).cpu().numpy().view(np.uint16)
        return tensor.cpu().numpy()


def _make_backend(name: str, device: int):
    if name in ("auto", "torch"):
        try:
            import torch
        except ImportError:
            torch = None
        if torch is not None and torch.cuda.is_available():
            return _TorchMemory(torch, device)
        if name == "torch":
            raise CudaUnavailableError("--backend torch: torch is not installed or sees no CUDA device")
    return _DriverMemory(device)


def _base_report(artifact: Artifact) -> dict:
    problem = artifact.problem
    return {
        "shape": [problem.get("m"), problem.get("n"), problem.get("k")],
        "dtype": problem.get("dtype"),
        "out_dtype": problem.get("out_dtype"),
        "b_layout": problem.get("b_layout"),
        "config": dict(artifact.config),
        "rel_err": None,
        "nan_count": None,
        "ms": None,
        "tflops": None,
        "ok": False,
    }


def _config_int(config, key: str) -> int:
    value = config.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else DEFAULT_TILE


def _finite_or_none(value):
    # JSON has no NaN/Infinity; a non-finite error is reported as null.
    return value if value is not None and math.isfinite(value) else None


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text}")
    return value


def _emit(report: dict) -> None:
    print(json.dumps(report), flush=True)


if __name__ == "__main__":
    sys.exit(main())
