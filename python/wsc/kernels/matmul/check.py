"""The check of matmul artifacts ("check": "matmul"): the problem an artifact
computes, read from its tensors, and the float64 reference `wsc run --check`
compares it with. No MLIR: GPU machines run it without the bindings.

    C[M, N] = A[M, K] @ op(B),  B as [N, K] ("nk") or [K, N] ("kn")

or the same for each matrix of batches A [batch, M, K], B and C, or,
where the artifact's config has an "epilogue" (`Epilogue`),

    C = act(alpha A @ op(B) + bias) + residual,  alpha (a scalar argument),
                                                 bias[N], residual[M, N] optional

and fp8 (e4m3) products scaled by per-tensor scales, C = act(alpha sa sb A
@ B^T), sa and sb the one element of the f32 tensors "scale_a" and "scale_b"
name; or, with "scale_block" (block scales), the product of A and B
dequantized block by block: A[m, k] sa[m, k / 128], B[n, k] sb[n / 128, k / 128]
(the kernel's "scale_a" is sa's transpose [cdiv(K, 128), M], M padded; sb
flat, its rows cdiv(K, 128) long).

The layout is read from B's dims (which size each one is), never from their
extents, which cannot tell the layouts apart where N = K. With torch the
reference is the full product computed on the GPU; without it, it is
computed on the CPU, in full for small problems, otherwise for a random
sample of whole rows and columns plus the last row/column tile (where ragged
edges and TMA zero-fill matter).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from wsc.kernels.matmul.config import ACTIVATIONS
from wsc.runtime.artifact import Artifact, ArtifactError
from wsc.runtime.memory import Inputs, Memory, TorchMemory, to_float64
from wsc.target.hopper import OPERAND_DTYPES, RESULT_DTYPES

# Problems up to this many multiply-adds get a full reference; beyond it
# the float64 product would take too long on a CPU, so rows/cols are sampled.
FULL_REFERENCE_MAX_WORK = 2048**3
SAMPLED_ROWS = 64
SAMPLED_COLS = 64
#: The tile whose last rows/columns are always sampled, where the grid does
#: not say (an axis of the grid counting M's or N's tiles).
DEFAULT_TILE = 128
# Relative Frobenius error allowed. A bf16 output alone rounds with a relative
# error near 3e-3, so it gets a looser bound than f16/f32 outputs.
TOLERANCE = {"f32": 1e-3, "f16": 1e-3, "bf16": 1e-2}


def tolerance_for(out_dtype: str, accumulator: str, k: int) -> float:
    """The relative error allowed for a K-deep product. With f16 accumulators
    the running sum rounds to f16 once per k16 WGMMA step: relative error
    about 2^-10/sqrt(12) * sqrt(K/32), allowed with a margin of about 2.5 as
    2^-11 * sqrt(K/16)."""
    bound = TOLERANCE[out_dtype]
    if accumulator == "f16":
        bound = max(bound, 2.0**-11 * math.sqrt(k / 16))
    return bound


def activate(name: str | None, x, erf, tanh, exp):
    """`name`'s activation (ACTIVATIONS) of the float array x of numpy or
    torch, whose erf, tanh and exp are given (None: x itself)."""
    if name is None:
        return x
    if name == "relu":
        return x * (x > 0)
    if name == "gelu":
        return 0.5 * x * (1.0 + erf(x / math.sqrt(2.0)))
    if name == "gelu_tanh":
        return 0.5 * x * (1.0 + tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x**3)))
    return x / (1.0 + exp(-x))  # silu


#: The keys of a matmul artifact's "epilogue" config, and those that name a
#: tensor or scalar argument of the kernel.
EPILOGUE_KEYS = ("alpha", "bias", "activation", "residual", "scale_a", "scale_b", "scale_block")
_NAMING_KEYS = ("alpha", "bias", "residual", "scale_a", "scale_b")


def epilogue_problems(spec) -> list[str]:
    """What is wrong with an "epilogue" config before any artifact holds it:
    unknown keys, an unknown activation, names that are not strings."""
    if not isinstance(spec, dict):
        return [f"epilogue must be a dict of {', '.join(EPILOGUE_KEYS)}, got {spec!r}"]
    problems = []
    unknown = set(spec) - set(EPILOGUE_KEYS)
    if unknown:
        problems.append(f"epilogue: unknown keys {', '.join(sorted(map(str, unknown)))}")
    activation = spec.get("activation")
    if activation is not None and activation not in ACTIVATIONS:
        problems.append(
            f"epilogue: activation must be one of {', '.join(ACTIVATIONS)}, got {activation!r}"
        )
    problems += [
        f"epilogue: {key} must name an argument of the kernel, got {spec[key]!r}"
        for key in _NAMING_KEYS
        if key in spec and not isinstance(spec[key], str)
    ]
    return problems


class Epilogue:
    """What a matmul artifact does to the product before storing C, from its
    config's "epilogue": {"alpha": scalar argument, "bias": tensor,
    "activation": name, "residual": tensor}, each optional: C = act(alpha A @
    op(B) + bias) + residual, alpha the value the artifact's f32 parameter of
    that name holds."""

    def __init__(self, artifact: Artifact, m: str, n: str):
        def fail(message: str) -> ArtifactError:
            return ArtifactError(f"{artifact.json_path}: check 'matmul': epilogue: {message}")

        spec = dict((artifact.config or {}).get("epilogue") or {})
        for problem in epilogue_problems(spec):
            raise ArtifactError(f"{artifact.json_path}: check 'matmul': {problem}")
        self.bias, self.activation, self.residual = (
            spec.get("bias"),
            spec.get("activation"),
            spec.get("residual"),
        )
        #: The tensors of the scales, or None without them.
        self.scales: tuple[str, str] | None = None
        #: The block size of block scales, or None for per-tensor ones.
        self.scale_block: int | None = spec.get("scale_block")
        if "scale_a" in spec or "scale_b" in spec:
            names = (spec.get("scale_a"), spec.get("scale_b"))
            ranks = (2 if self.scale_block else 1, 1)
            for name, rank in zip(names, ranks, strict=True):
                tensor = artifact.tensors.get(name) if isinstance(name, str) else None
                if tensor is None or tensor.dtype != "f32" or len(tensor.dims) != rank:
                    raise fail(
                        f"scale_a and scale_b must name f32 tensors of ranks {ranks}, got {name!r}"
                    )
            self.scales = (str(names[0]), str(names[1]))
        #: alpha's value, or None without one.
        self.alpha: float | None = None
        if "alpha" in spec:
            values = artifact.scalars()
            if spec["alpha"] not in values:
                raise fail(f"alpha {spec['alpha']!r} names no scalar argument of the kernel")
            self.alpha = values[spec["alpha"]]
        for name, dims in ((self.bias, (n,)), (self.residual, (m, n))):
            if name is None:
                continue
            tensor = artifact.tensors.get(name)
            if tensor is None or tuple(tensor.dims) != dims:
                raise fail(f"tensor {name!r} must have dims {list(dims)}")

    def __bool__(self) -> bool:
        parts = (self.alpha, self.bias, self.activation, self.residual, self.scales)
        return parts != (None,) * 5

    def apply(self, product, bias, residual, erf, tanh, exp, scales=None):
        """C's reference from the float64 product (rows x cols of C), the
        matching parts of the bias (cols) and the residual (rows x cols), and
        the two per-tensor scales' values."""
        if scales is not None:
            product = product * (scales[0] * scales[1])
        if self.alpha is not None:
            product = product * self.alpha
        if bias is not None:
            product = product + bias
        product = activate(self.activation, product, erf, tanh, exp)
        return product if residual is None else product + residual


class MatmulCheck:
    """The matmul a matmul artifact computes, and its reference."""

    #: The keys of a kernel's check_config this check reads.
    CONFIG_KEYS = frozenset({"epilogue"})

    @staticmethod
    def config_problems(config: dict) -> list[str]:
        """What the check would refuse in a kernel's check_config whatever the
        kernel, told when the kernel is built (the tensors and scalars it
        names are checked against an artifact's)."""
        return epilogue_problems(config["epilogue"]) if "epilogue" in config else []

    def __init__(self, artifact: Artifact):
        def fail(message: str) -> ArtifactError:
            return ArtifactError(f"{artifact.json_path}: check 'matmul': {message}")

        tensors = artifact.tensors
        for name in ("a", "b", "c"):
            if name not in tensors:
                raise fail(f"expected tensors a, b, c; 'tensors' has no '{name}'")
        a, b, c = tensors["a"], tensors["b"], tensors["c"]
        ranks = {len(tensor.dims) for tensor in (a, b, c)}
        if ranks not in ({2}, {3}):
            raise fail(
                f"tensors a, b, c have ranks {len(a.dims)}, {len(b.dims)}, {len(c.dims)}; "
                f"expected matrices (2) or batches of them (3)"
            )
        #: The batch's size name (batches of matrices), or None.
        self.batch_size = a.dims[0] if ranks == {3} else None
        if self.batch_size is not None and {b.dims[0], c.dims[0]} != {self.batch_size}:
            raise fail(
                f"the batches of a, b and c are sizes {a.dims[0]!r}, {b.dims[0]!r} and "
                f"{c.dims[0]!r}: expected one batch"
            )
        m, k = a.dims[-2:]
        if c.dims[-2] != m:
            raise fail(f"c's rows are size {c.dims[-2]!r}, a's are {m!r}: expected C = A @ op(B)")
        n = c.dims[-1]
        if b.dims[-2:] == (n, k):
            self.b_layout = "nk"
        elif b.dims[-2:] == (k, n):
            self.b_layout = "kn"
        else:
            raise fail(
                f"b's dims are {list(b.dims)}; expected [{n}, {k}] or [{k}, {n}] for "
                f"a [{m}, {k}] and c [{m}, {n}]"
            )
        if a.dtype != b.dtype or a.dtype not in OPERAND_DTYPES:
            raise fail(
                f"a and b must share a dtype of {', '.join(OPERAND_DTYPES)}, got "
                f"{a.dtype} and {b.dtype}"
            )
        if c.dtype not in RESULT_DTYPES:
            raise fail(f"c's dtype must be one of {', '.join(RESULT_DTYPES)}, got {c.dtype}")
        self.m, self.n, self.k = (artifact.sizes[size] for size in (m, n, k))
        self.batch = artifact.sizes[self.batch_size] if self.batch_size is not None else 1
        self.dtype, self.out_dtype = a.dtype, c.dtype
        self.accumulator = artifact.accumulator or "f32"
        tiles = dict(axis for axis in artifact.grid_tiles if not isinstance(axis, int))
        self.tile_m, self.tile_n = tiles.get(m, DEFAULT_TILE), tiles.get(n, DEFAULT_TILE)
        self.epilogue = Epilogue(artifact, m, n)

    @property
    def input_scale(self) -> float:
        # Scaling each operand by K^-1/4 keeps the products' entries near unit variance.
        return float(self.k**-0.25)

    @property
    def tolerance(self) -> float:
        return tolerance_for(self.out_dtype, self.accumulator, self.k)

    @property
    def flops(self) -> float:
        return 2.0 * self.batch * self.m * self.n * self.k

    def describe(self) -> dict[str, Any]:
        return {
            "shape": [self.m, self.n, self.k],
            **({"batch": self.batch} if self.batch_size is not None else {}),
            "dtype": self.dtype,
            "out_dtype": self.out_dtype,
            "b_layout": self.b_layout,
        }

    def relative_error(
        self, memory: Memory, inputs: Inputs, outputs: dict[str, Any], seed: int
    ) -> float:
        if isinstance(memory, TorchMemory):
            torch = memory.torch
            if "reference" not in inputs.cache:
                a, b = inputs.arrays["a"].double(), inputs.arrays["b"].double()
                scale_values = [inputs.arrays[name].double() for name in self.epilogue.scales or ()]
                if self.epilogue.scale_block:
                    scale_a_t, scale_b = scale_values
                    scale_a = scale_a_t[:, : a.shape[0]].T
                    a, b = block_dequantized(a, b, scale_a, scale_b, self.epilogue.scale_block)
                product = a @ (b.transpose(-1, -2) if self.b_layout == "nk" else b)
                if self.epilogue:
                    bias, residual = (
                        None if name is None else inputs.arrays[name].double()
                        for name in (self.epilogue.bias, self.epilogue.residual)
                    )
                    scales = None
                    if scale_values and not self.epilogue.scale_block:
                        scales = [float(value[0]) for value in scale_values]
                    product = self.epilogue.apply(
                        product, bias, residual, torch.special.erf, torch.tanh, torch.exp, scales
                    )
                inputs.cache["reference"] = product
            return relative_frobenius(
                outputs["c"].double(), inputs.cache["reference"], torch.linalg.norm
            )
        c_values = memory.float64(outputs["c"], self.out_dtype)
        rng = np.random.default_rng(seed + 1)
        if self.batch_size is None:
            return sampled_relative_error(self, inputs.hosts, c_values, rng)
        # Matrix by matrix, the squared errors and norms summed over the batch.
        error = norm = 0.0
        for index in range(self.batch):
            hosts = {name: inputs.hosts[name][index] for name in ("a", "b")}
            relative, size = sampled_error_terms(self, hosts, c_values[index], rng)
            error, norm = error + relative, norm + size
        return math.sqrt(error / norm) if norm else math.sqrt(error)


#: The factory wsc.runtime.checks finds for "check": "matmul".
CHECK = MatmulCheck


def block_dequantized(a, b_nk, scale_a, scale_b, block: int):
    """float64 A [M, K] and B [N, K] (numpy or torch) times their block
    scales: scale_a [M, cdiv(K, block)], one per row and block of K, and
    scale_b, cdiv(N, block) x cdiv(K, block) (flat or not), one per block of B."""
    k, n = a.shape[1], b_nk.shape[0]

    def repeat(x, axis):
        """Each element of `axis` `block` times."""
        if isinstance(x, np.ndarray):
            return np.repeat(x, block, axis)
        return x.repeat_interleave(block, dim=axis)

    scale_b = scale_b.reshape(-(-n // block), -(-k // block))
    return a * repeat(scale_a, 1)[:, :k], b_nk * repeat(repeat(scale_b, 0), 1)[:n, :k]


def relative_frobenius(got, reference, norm) -> float:
    """||got - reference|| / ||reference|| (the error itself for a zero
    reference), with `norm` torch's or numpy's Frobenius norm."""
    size = float(norm(reference))
    error = float(norm(got - reference))
    return error / size if size else error


def sample_indices(rng: np.random.Generator, extent: int, count: int, tile: int) -> np.ndarray:
    """`count` random indices below `extent` plus all of the last `tile`-sized tile, sorted."""
    last_tile = np.arange((extent - 1) // tile * tile, extent)
    return np.union1d(rng.choice(extent, size=min(count, extent), replace=False), last_tile)


def sampled_relative_error(
    problem: MatmulCheck,
    hosts: dict[str, np.ndarray],
    c_values: np.ndarray,
    rng: np.random.Generator,
) -> float:
    """Relative Frobenius error of C against a float64 reference (full or
    sampled); `hosts` are the input tensors' host copies by name."""
    error, norm = sampled_error_terms(problem, hosts, c_values, rng)
    return math.sqrt(error / norm) if norm else math.sqrt(error)


def sampled_error_terms(
    problem: MatmulCheck,
    hosts: dict[str, np.ndarray],
    c_values: np.ndarray,
    rng: np.random.Generator,
) -> tuple[float, float]:
    """(squared error, squared norm of the reference) of one matrix C against
    its float64 reference, full or sampled (sampled_relative_error)."""
    a = to_float64(hosts["a"], problem.dtype)
    b = to_float64(hosts["b"], problem.dtype)
    epilogue = problem.epilogue
    scale_values = [hosts[name].astype(np.float64) for name in epilogue.scales or ()]
    if epilogue.scale_block:
        scale_a_t, scale_b = scale_values
        scale_a = scale_a_t[:, : a.shape[0]].T
        a, b = block_dequantized(a, b, scale_a, scale_b, epilogue.scale_block)
    b_kn = b.T if problem.b_layout == "nk" else b
    bias, residual = (
        None if name is None else to_float64(hosts[name], problem.dtype)
        for name in (epilogue.bias, epilogue.residual)
    )
    scales = None
    if scale_values and not epilogue.scale_block:
        scales = [float(value.reshape(-1)[0]) for value in scale_values]
    erf = np.vectorize(math.erf)

    def reference(rows: slice | np.ndarray, cols: slice | np.ndarray) -> np.ndarray:
        product = a[rows, :] @ b_kn[:, cols]
        if not epilogue:
            return product
        return epilogue.apply(
            product,
            None if bias is None else bias[cols],
            None if residual is None else residual[rows, :][:, cols],
            erf,
            np.tanh,
            np.exp,
            scales,
        )

    whole = slice(None)
    if problem.m * problem.n * problem.k <= FULL_REFERENCE_MAX_WORK:
        pairs = [(c_values, reference(whole, whole))]
    else:
        rows = sample_indices(rng, problem.m, SAMPLED_ROWS, problem.tile_m)
        cols = sample_indices(rng, problem.n, SAMPLED_COLS, problem.tile_n)
        pairs = [
            (c_values[rows, :], reference(rows, whole)),
            (c_values[:, cols], reference(whole, cols)),
        ]
    error = sum(float(np.sum((got - want) ** 2)) for got, want in pairs)
    norm = sum(float(np.sum(want**2)) for _, want in pairs)
    return error, norm
