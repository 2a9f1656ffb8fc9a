"""wsc.matmul: C = A @ B on a Hopper GPU, with a warp-specialized wsc kernel.

    import wsc
    c = wsc.matmul(a, b)              # a [M, K], b [K, N]: CUDA torch tensors
    c = wsc.matmul(x, w.T)            # w a contiguous [N, K] (a weight): the "nk" kernel
    wsc.matmul(a, b, out=c)           # into an existing [M, N] tensor
    c = wsc.matmul(a_np, b_np)        # numpy in (copied to the GPU), numpy out
    torch.ops.wsc.matmul(a, b, None)  # the custom op behind it (torch.compile traces it)
    c = wsc.bmm(a, b)                 # batches: a [B, M, K], b [B, K, N] -> c [B, M, N]
    c = wsc.scaled_mm(a8, w8.T, sa, sb)   # fp8 e4m3, per-tensor or block scales

Inputs are fp16 or bf16 (both the same; fp8 through wsc.scaled_mm),
accumulation is fp32, and C has the inputs' dtype unless `out_dtype` (fp32,
fp16 or bf16) or `out` says otherwise.
B is read either as a row-major [K, N] ("kn") or, when it is the transpose
view of a row-major [N, K], as that [N, K] ("nk"): strides tell which. TMA
reads A and B, so their rows must start 16 bytes apart: K (and N for "kn")
must be a multiple of 8 elements, or the rows padded to one.

The kernel's config (tile, stages, consumer groups, ...) is chosen per
(shape class, dtype, out dtype, B layout, GPU), where a shape class rounds
each of M, N, K up to a power of two (finer at small M: `shape_class`). It
comes from the persistent cache
(`wsc.cache`); on a miss the problem's config space (SPACES, by B layout and
epilogue, and "<B layout>-small-m" for M <= 64: MatmulPlan.space) is
autotuned on the actual problem, with a progress bar, and the winner cached. WSC_AUTOTUNE=0
skips the search and uses the default config. Compiled kernels are cached
too, one per config, dtypes and layout: the kernel reads M, N and K at run
time, so one compile serves every shape. Compiling needs the MLIR wheels; a
machine without them runs what its cache already holds.

All of that happens once per signature of call (shapes, strides, dtypes and
devices of the arguments) and process: later calls of the signature launch
the resolved kernel at once, at about torch.mm's host cost
(results/h200-wsc-matmul-host-overhead.md).
"""

from __future__ import annotations

import dataclasses
import importlib.util
import math
import os
import sys
import threading
import types
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from wsc.device import define_cuda_op, hopper_name
from wsc.kernels.matmul.config import ACTIVATIONS, SCALE_BLOCK, SCALE_ROW_ALIGN
from wsc.kernels.matmul.space import DEFAULT_CONFIGS, SMALL_M, SPACES
from wsc.runtime.artifact import MAX_SIZE
from wsc.target.hopper import E4M3, ELEMENT_BYTES, TMA_ALIGN, round_up, tma_row_problem
from wsc.target.hopper import HALF_DTYPES as INPUT_DTYPES
from wsc.target.hopper import RESULT_DTYPES as OUTPUT_DTYPES

_TORCH_NAMES = {
    "torch.float16": "f16",
    "torch.bfloat16": "bf16",
    "torch.float8_e4m3fn": E4M3,
    "torch.float32": "f32",
}
_NUMPY_NAMES = {"float16": "f16", "bfloat16": "bf16", "float32": "f32"}


# Reading the operands ------------------------------------------------------------


@dataclass(frozen=True)
class _Operand:
    """What the checks need to know of an argument, framework-free."""

    kind: str  # "torch" or "numpy"
    dtype: str  # wsc name when supported, else the framework's name
    shape: tuple[int, ...]
    strides: tuple[int, ...]  # in elements
    device: str  # "cuda:0", "cuda:1", "cpu", "meta", ...
    given_dtype: str  # the framework's name, as errors say it: "torch.float32"


def _describe(value, name: str, api: str = "wsc.matmul") -> _Operand:
    if isinstance(value, _Operand):
        return value
    module = type(value).__module__ or ""
    if module.startswith("torch") and hasattr(value, "stride"):
        dtype = str(value.dtype)
        return _Operand(
            "torch",
            _TORCH_NAMES.get(dtype, dtype),
            tuple(value.shape),
            tuple(value.stride()),
            str(value.device),
            dtype,
        )
    if module == "numpy" and hasattr(value, "strides"):
        dtype = value.dtype.name
        itemsize = value.dtype.itemsize
        return _Operand(
            "numpy",
            _NUMPY_NAMES.get(dtype, dtype),
            tuple(value.shape),
            tuple(s // itemsize for s in value.strides),
            "cpu",
            dtype,
        )
    raise TypeError(
        f"{api}: {name} must be a torch tensor or a numpy array, got {type(value).__name__}"
    )


@dataclass(frozen=True)
class MatmulPlan:
    """A checked call: the problem and how the kernel reads B."""

    m: int
    n: int
    k: int
    dtype: str
    out_dtype: str
    #: "kn": B is read as given, [K, N]; "nk": B is the transpose view of a
    #: row-major [N, K], which is what the kernel reads.
    b_layout: str
    #: C may be stored with TMA: a 16-bit C whose rows start a multiple of 16
    #: bytes apart. Such problems are tuned over SPACES["<b_layout>-tma"].
    tma_store: bool = False
    #: A 16-bit C whose rows TMA cannot store: staged in shared memory and
    #: copied out with coalesced stores (SPACES["<b_layout>-coalesced"]).
    coalesced_store: bool = False
    #: The fused epilogue, C = act(A @ B + bias) + residual
    #: (wsc.kernels.matmul.epilogue): whether a bias [N] and a residual
    #: [M, N] are given, and the activation's name, if any.
    bias: bool = False
    activation: str | None = None
    residual: bool = False
    #: The epilogue scales the product by a scalar argument (alpha=).
    alpha: bool = False
    #: The number of matrices of a batched product (wsc.bmm), else None.
    batch: int | None = None
    #: fp8 with block scales (wsc.scaled_mm with scale_a [M, K / 128]).
    block_scales: bool = False

    @property
    def out_shape(self) -> tuple[int, ...]:
        return (self.m, self.n) if self.batch is None else (self.batch, self.m, self.n)

    @property
    def epilogue(self) -> dict:
        """The epilogue's parts that are present (none for a plain product)."""
        parts = {
            "alpha": self.alpha,
            "bias": self.bias,
            "activation": self.activation,
            "residual": self.residual,
            "block_scales": self.block_scales,
        }
        return {name: value for name, value in parts.items() if value}

    @property
    def space(self) -> str:
        """The name of the config space (SPACES) this problem is tuned over."""
        if self.batch is not None:
            return f"{self.b_layout}-batched"
        if self.block_scales:
            return "nk-block-scaled-tma" if self.tma_store else "nk-block-scaled"
        if self.m <= SMALL_M:
            return f"{self.b_layout}-small-m"
        if self.tma_store:
            return f"{self.b_layout}-tma"
        return f"{self.b_layout}-coalesced" if self.coalesced_store else self.b_layout


def _row_major_stride(op: _Operand) -> int | None:
    """The row stride of a rank-2 operand whose elements are contiguous along
    rows (unit inner stride), else None. A dim of extent 1 has any stride."""
    rows, cols = op.shape
    inner_ok = op.strides[1] == 1 or cols == 1
    row_stride = op.strides[0] if rows > 1 else cols
    return row_stride if inner_ok and row_stride >= cols else None


def _b_layout(a_op: _Operand, b_op: _Operand, n: int, k: int, api: str = "wsc.matmul") -> str:
    """How the kernel reads B, "kn" or "nk", once A and B are known to be
    readable by TMA (row-major, rows 16 bytes apart)."""
    size = ELEMENT_BYTES[a_op.dtype]
    lda = _row_major_stride(a_op)
    if lda is None:
        raise ValueError(
            f"{api}: a must be row-major [M, K] (unit stride along K), got "
            f"strides {list(a_op.strides)}; pass a.contiguous()"
        )
    transposed = dataclasses.replace(b_op, shape=(n, k), strides=b_op.strides[::-1])
    if (ldb := _row_major_stride(b_op)) is not None:
        b_layout, b_rows = "kn", "N"
    elif (ldb := _row_major_stride(transposed)) is not None:
        b_layout, b_rows = "nk", "K"
    else:
        raise ValueError(
            f"{api}: b must be a row-major [K, N] tensor or the transpose of "
            f"a row-major [N, K] one (as in x @ w.T), got strides "
            f"{list(b_op.strides)}; pass b.contiguous()"
        )
    for name, stride, dim, extent in (
        ("a", lda, "K", k),
        ("b", ldb, b_rows, n if b_layout == "kn" else k),
    ):
        # A padded row is its stride's length, not the dim's.
        problem = tma_row_problem(dim if stride == extent else "the row stride", stride, size)
        if problem is not None:
            raise ValueError(f"{api}: {name}: {problem}")
    return b_layout


def plan(
    a,
    b,
    out=None,
    out_dtype=None,
    bias=None,
    activation=None,
    residual=None,
    alpha=None,
    scales=None,
) -> MatmulPlan:
    """Check the arguments of wsc.matmul (or, with `scales`, of
    wsc.scaled_mm) from their metadata only (it works on fake and meta
    tensors) and work out B's layout. Raises TypeError for the wrong kind or
    dtype of argument, ValueError for the wrong rank, shape, layout, alignment
    or device."""
    api = "wsc.matmul" if scales is None else "wsc.scaled_mm"
    a_op, b_op = _describe(a, "a", api), _describe(b, "b", api)
    if a_op.kind != b_op.kind:
        raise TypeError(
            f"{api}: a and b must both be torch tensors or both numpy "
            f"arrays, got a {a_op.kind} and a {b_op.kind}"
        )
    for name, op in (("a", a_op), ("b", b_op)):
        if scales is not None and op.dtype != E4M3:
            raise TypeError(f"wsc.scaled_mm: {name} must be float8_e4m3fn, got {op.given_dtype}")
        if scales is None and op.dtype not in INPUT_DTYPES:
            hint = " (fp8 takes scales: wsc.scaled_mm)" if op.dtype == E4M3 else ""
            raise TypeError(
                f"{api}: {name} must be float16 or bfloat16, got {op.given_dtype}{hint}"
            )
        if len(op.shape) != 2:
            raise ValueError(
                f"{api}: {name} must be a 2-D matrix "
                f"({'[M, K]' if name == 'a' else '[K, N]'}), got shape "
                f"{list(op.shape)}"
            )
    if a_op.dtype != b_op.dtype:
        raise TypeError(
            f"{api}: a and b must have the same dtype, got {a_op.given_dtype} and {b_op.given_dtype}"
        )
    if a_op.kind == "torch" and a_op.device != b_op.device:
        raise ValueError(
            f"{api}: a and b must be on the same device, got {a_op.device} and {b_op.device}"
        )
    (m, k), (k_b, n) = a_op.shape, b_op.shape
    if k_b != k:
        raise ValueError(
            f"{api}: b must be [K, N] with K = {k} (a is [{m}, {k}]), got b of shape [{k_b}, {n}]"
        )
    _check_sizes_fit(api, M=m, N=n, K=k)
    block_scales = scales is not None and _check_scales(a_op, b_op, m, n, k, scales)
    # An empty product launches nothing: no layout or TMA rule applies.
    b_layout = "kn" if 0 in (m, n, k) else _b_layout(a_op, b_op, n, k, api)
    if scales is not None:
        b_layout = "nk"

    if out is not None:
        out_op = _describe(out, "out", api)
        if out_op.kind != a_op.kind:
            raise TypeError(f"{api}: out must be a {a_op.kind} like a and b, got a {out_op.kind}")
        if out_op.dtype not in OUTPUT_DTYPES:
            raise TypeError(
                f"{api}: out must be float32, float16 or bfloat16, got {out_op.given_dtype}"
            )
        if out_dtype is not None and _dtype_name(out_dtype) != out_op.dtype:
            raise TypeError(f"{api}: out is {out_op.given_dtype} but out_dtype says {out_dtype}")
        if out_op.shape != (m, n):
            raise ValueError(f"{api}: out must be [M, N] = [{m}, {n}], got {list(out_op.shape)}")
        if out_op.kind == "torch" and out_op.device != a_op.device:
            raise ValueError(
                f"{api}: out must be on {a_op.device} like a and b, got {out_op.device}"
            )
        ldc = _row_major_stride(out_op)
        if ldc is None:
            raise ValueError(
                f"{api}: out must be row-major [M, N] (unit stride along N), "
                f"got strides {list(out_op.strides)}"
            )
        result_dtype = out_op.dtype
    else:
        default = "bf16" if scales is not None else a_op.dtype
        result_dtype = default if out_dtype is None else _dtype_name(out_dtype)
        if result_dtype not in OUTPUT_DTYPES:
            raise TypeError(
                f"{api}: out_dtype must be float32, float16 or bfloat16, got {result_dtype}"
            )
        ldc = n
    # A staging tile is 16-bit (an f32 one would not fit next to the operand
    # stages); TMA stores it where C's rows allow, coalesced stores elsewhere.
    staged = result_dtype in INPUT_DTYPES
    tma_store = staged and tma_row_problem("N", ldc, ELEMENT_BYTES[result_dtype]) is None
    if scales is not None and (bias is not None or residual is not None):
        raise TypeError("wsc.scaled_mm: takes no bias or residual")
    _check_epilogue(a_op, m, n, bias, activation, residual, alpha)
    return MatmulPlan(
        m,
        n,
        k,
        a_op.dtype,
        result_dtype,
        b_layout,
        tma_store,
        # Block-scaled kernels store with TMA or from registers.
        coalesced_store=staged and not tma_store and not block_scales,
        bias=bias is not None,
        activation=activation,
        residual=residual is not None,
        alpha=alpha is not None,
        block_scales=block_scales,
    )


def _check_sizes_fit(api: str, **sizes: int) -> None:
    for name, size in sizes.items():
        if size > MAX_SIZE:
            raise ValueError(
                f"{api}: {name} = {size} does not fit in the kernels' i32 sizes "
                f"(at most {MAX_SIZE})"
            )


def plan_bmm(a, b, out=None) -> MatmulPlan:
    """Check the arguments of wsc.bmm from their metadata only, as `plan`
    does those of wsc.matmul: a [B, M, K], b [B, K, N] (or the transpose view
    of a [B, N, K]), out [B, M, N], each a row-major batch of matrices (rows
    16-byte aligned, matrices one after another), 16-bit C with N a multiple of
    8 (the kernels store C with TMA)."""
    a_op, b_op = _describe(a, "a", "wsc.bmm"), _describe(b, "b", "wsc.bmm")
    out_op = None if out is None else _describe(out, "out", "wsc.bmm")
    if a_op.kind != "torch" or b_op.kind != "torch":
        raise TypeError("wsc.bmm: a and b must be torch tensors")
    for name, op in (("a", a_op), ("b", b_op)):
        if len(op.shape) != 3:
            raise ValueError(
                f"wsc.bmm: {name} must be a batch of matrices "
                f"({'[B, M, K]' if name == 'a' else '[B, K, N]'}), got shape {list(op.shape)}"
            )
    if a_op.shape[0] != b_op.shape[0]:
        raise ValueError(
            f"wsc.bmm: a and b must hold as many matrices, got {a_op.shape[0]} and "
            f"{b_op.shape[0]} (one weight for every matrix of a is a matrix: b [K, N])"
        )
    _check_sizes_fit("wsc.bmm", B=a_op.shape[0])

    def matrix(op: _Operand) -> _Operand:
        return dataclasses.replace(op, shape=op.shape[1:], strides=op.strides[1:])

    try:
        p = plan(matrix(a_op), matrix(b_op), None if out_op is None else matrix(out_op))
    except (TypeError, ValueError) as error:
        raise type(error)(str(error).replace("wsc.matmul:", "wsc.bmm: per matrix,", 1)) from None
    if out_op is not None and out_op.shape[0] != a_op.shape[0]:
        raise ValueError(
            f"wsc.bmm: out must be [B, M, N] = {[a_op.shape[0], p.m, p.n]}, got "
            f"{list(out_op.shape)}"
        )
    if p.out_dtype not in INPUT_DTYPES:
        raise TypeError(
            f"wsc.bmm: out must be float16 or bfloat16 (C is stored with TMA from a 16-bit "
            f"tile), got {p.out_dtype}"
        )
    if not p.tma_store:
        problem = tma_row_problem("N", p.n, ELEMENT_BYTES[p.out_dtype])
        raise ValueError(f"wsc.bmm: C is stored with TMA, and {problem}; use torch.bmm for it")
    operands = [("a", a_op), ("b", b_op)]
    if out_op is not None:
        operands.append(("out", out_op))
    for name, op in operands:
        (rows, cols), (row_stride, col_stride) = op.shape[1:], op.strides[1:]
        # A transposed view ("nk" B) stores its columns as rows.
        stored_rows, stored_stride = (rows, row_stride) if col_stride == 1 else (cols, col_stride)
        if op.shape[0] > 1 and op.strides[0] != stored_rows * stored_stride:
            raise ValueError(
                f"wsc.bmm: {name}'s matrices must follow one another (batch stride "
                f"{stored_rows * stored_stride}), got strides {list(op.strides)}; pass "
                f"{name}.contiguous()"
            )
    return dataclasses.replace(p, batch=a_op.shape[0])


def _check_scales(a_op: _Operand, b_op: _Operand, m: int, n: int, k: int, scales) -> bool:
    """wsc.scaled_mm's operands: B the transpose view of a row-major [N, K]
    (WGMMA reads fp8 K-major only; torch._scaled_mm takes it so too), and
    two float32 tensors on a's device: of one element each (per-tensor
    scales), or block scales, scale_a [M, cdiv(K, 128)] column-major (as
    torch._scaled_mm takes it) or row-major, and scale_b [cdiv(N, 128),
    cdiv(K, 128)] contiguous. Whether they are block scales."""
    if a_op.kind != "torch":
        raise TypeError("wsc.scaled_mm: a and b must be torch tensors")
    if 0 not in (n, k) and not (b_op.strides[0] == 1 or k == 1):
        raise ValueError(
            f"wsc.scaled_mm: b must be column-major [K, N], the transpose view of a "
            f"row-major [N, K] (b = w.T), got strides {list(b_op.strides)}"
        )
    blocks = -(-k // SCALE_BLOCK)
    block_shapes = [[m, blocks], [-(-n // SCALE_BLOCK), blocks]]
    names = ("scale_a", "scale_b")
    described = [
        _describe(scale, name, "wsc.scaled_mm") for name, scale in zip(names, scales, strict=True)
    ]
    for name, op in zip(names, described, strict=True):
        if op.kind != "torch" or op.dtype != "f32":
            raise TypeError(f"wsc.scaled_mm: {name} must be a float32 tensor, got {op.given_dtype}")
        if op.device != a_op.device:
            raise ValueError(
                f"wsc.scaled_mm: {name} must be on {a_op.device} like a and b, got {op.device}"
            )
    shapes = [list(op.shape) for op in described]
    block = shapes == block_shapes
    if not block and any(math.prod(shape) != 1 for shape in shapes):
        raise ValueError(
            f"wsc.scaled_mm: scale_a and scale_b must be per-tensor scales (one element each) "
            f"or block scales of shapes {block_shapes[0]} and {block_shapes[1]}, got "
            f"{shapes[0]} and {shapes[1]}"
        )
    if block and 1 not in block_shapes[0] and described[0].strides not in ((1, m), (blocks, 1)):
        raise ValueError(
            f"wsc.scaled_mm: block scales' scale_a must be column-major (strides [1, {m}]) "
            f"or row-major (strides [{blocks}, 1]), got strides {list(described[0].strides)}"
        )
    if block and block_shapes[1][0] > 1 and described[1].strides != (blocks, 1):
        raise ValueError(
            f"wsc.scaled_mm: block scales' scale_b must be contiguous, got strides "
            f"{list(described[1].strides)}"
        )
    return block


def _check_epilogue(a_op: _Operand, m: int, n: int, bias, activation, residual, alpha=None) -> None:
    """The fused epilogue's arguments: a bias [N] and a residual [M, N] of A's
    kind, dtype and device (the residual's rows may be padded, each row's
    elements contiguous), an activation of ACTIVATIONS, and a finite real
    alpha."""
    if alpha is not None and (isinstance(alpha, bool) or not isinstance(alpha, (int, float))):
        raise TypeError(f"wsc.matmul: alpha must be a finite real number, got {alpha!r}")
    if alpha is not None and not math.isfinite(alpha):
        raise ValueError(f"wsc.matmul: alpha must be a finite real number, got {alpha!r}")
    if alpha is not None and a_op.kind != "torch":
        raise TypeError("wsc.matmul: alpha is supported for torch tensors only")
    if activation is not None and activation not in ACTIVATIONS:
        raise ValueError(
            f"wsc.matmul: activation must be one of {', '.join(map(repr, ACTIVATIONS))} or "
            f"None, got {activation!r}"
        )
    for name, value, shape in (("bias", bias, (n,)), ("residual", residual, (m, n))):
        if value is None:
            continue
        op = _describe(value, name)
        if a_op.kind != "torch" or op.kind != "torch":
            raise TypeError(f"wsc.matmul: {name} is supported for torch tensors only")
        if op.dtype != a_op.dtype:
            raise TypeError(
                f"wsc.matmul: {name} must be {a_op.given_dtype} like a, got {op.given_dtype}"
            )
        if op.shape != shape:
            expected = "[N]" if name == "bias" else "[M, N]"
            raise ValueError(
                f"wsc.matmul: {name} must be {expected} = {list(shape)}, got {list(op.shape)}"
            )
        if op.device != a_op.device:
            raise ValueError(
                f"wsc.matmul: {name} must be on {a_op.device} like a and b, got {op.device}"
            )
        contiguous = op.strides[-1] == 1 or shape[-1] == 1
        if not contiguous or (name == "residual" and _row_major_stride(op) is None):
            raise ValueError(
                f"wsc.matmul: {name} must have unit stride along N, got strides {list(op.strides)}"
            )


def _dtype_name(dtype) -> str:
    """The wsc name of a torch or numpy dtype, or of a name like "f16"."""
    text = str(dtype)
    if text in _TORCH_NAMES:
        return _TORCH_NAMES[text]
    name = getattr(dtype, "name", None) or getattr(dtype, "__name__", None) or text
    return _NUMPY_NAMES.get(name, name)


# Choosing and compiling the kernel -----------------------------------------------------


#: M of a small-M class is rounded up to a multiple of this.
SMALL_M_CLASS_STEP = 16


def shape_class(m: int, n: int, k: int) -> list[int]:
    """M, N and K each rounded up to a power of two: problems of one class share
    a tuned config. For M <= SMALL_M, where the kernel streams B and its best
    tile and split depend on how N and K fill the SMs, the classes are finer:
    M rounded up to a multiple of 16, N and K to a quarter octave (4, 5, 6 or 7
    times a power of two)."""
    if m > SMALL_M:
        return [1 << max(0, (size - 1).bit_length()) for size in (m, n, k)]
    return [round_up(m, SMALL_M_CLASS_STEP)] + [
        round_up(size, 1 << max(0, (size - 1).bit_length() - 3)) for size in (n, k)
    ]


def problem_class(p: MatmulPlan) -> list[int]:
    """`p`'s shape class: shape_class of M, N, K, and for a batched product
    its number of matrices rounded up to a power of two."""
    sizes = shape_class(p.m, p.n, p.k)
    if p.batch is not None:
        sizes.append(1 << max(0, (p.batch - 1).bit_length()))
    return sizes


def _autotune_enabled() -> bool:
    return os.environ.get("WSC_AUTOTUNE", "1") != "0"


def config_key(p: MatmulPlan, device: str) -> dict:
    """The cache key of the config chosen for `p`'s class on `device`; the
    space and the kernels' identity (their source and the compiler's) are
    part of it, so changing either tunes again."""
    return {
        "kind": "wsc.matmul-config",
        "class": problem_class(p),
        "dtype": p.dtype,
        "out_dtype": p.out_dtype,
        "b_layout": p.b_layout,
        **({"epilogue": p.epilogue} if p.epilogue else {}),
        "device": device,
        "space": SPACES[p.space].configs(),
        "kernels": SPACES[p.space].identity(),
    }


class NoCorrectKernel(RuntimeError):
    """No config of the space computes a problem correctly on this GPU."""


def choose_config(p: MatmulPlan, device: str, cache, tune=None) -> dict:
    """The config for `p` on `device`: the cached choice for its class, else
    the result of `tune(p)`, a (config, failure, final) triple, which is then
    cached. A search that found no correct config raises NoCorrectKernel, now
    and (cached) on every later call: the default config is a candidate too,
    so it failed with the rest. A search that could not run (no GPU for the
    tuner, a worker that died) falls back to the default config, with a
    warning, until the next process searches again.

    Processes and threads sharing the cache search a class one at a time:
    the first searches, the others wait and take its choice."""
    key = config_key(p, device)
    chosen = _cached_choice(p, key, cache)
    if chosen is not None:
        return chosen
    if tune is None or not _autotune_enabled() or (_class(p), device) in _untuned:
        return dict(DEFAULT_CONFIGS[p.space])
    with cache.exclusive(key):
        chosen = _cached_choice(p, key, cache)  # searched by another while this one waited
        if chosen is not None:
            return chosen
        config, failure, final = tune(p)
        if config is not None:
            cache.put(key, {"config": config})
            return config
        if final:
            cache.put(key, {"config": None, "failure": failure})
            raise _no_correct_kernel(p, failure, cache)
    _untuned.add((_class(p), device))
    warnings.warn(
        f"wsc.matmul: autotuning {_describe_plan(p)} could not run "
        f"({failure or 'the tuner found no Hopper GPU to time candidates on'}), so "
        f"the default config runs; the next process will search again",
        RuntimeWarning,
        stacklevel=_caller_stacklevel(),
    )
    return dict(DEFAULT_CONFIGS[p.space])


def _cached_choice(p: MatmulPlan, key: dict, cache) -> dict | None:
    """The config cached under `key` if it is one of the space's; raises
    NoCorrectKernel if the cache says no config is correct."""
    entry = cache.get(key)
    if entry is not None and entry.get("config") in SPACES[p.space].configs():
        return entry["config"]
    if entry is not None and entry.get("config") is None and entry.get("failure"):
        raise _no_correct_kernel(p, entry["failure"], cache)
    return None


#: (shape class, GPU) pairs whose search could not run in this process: not
#: searched again.
_untuned: set = set()


def _class(p: MatmulPlan) -> tuple:
    return (
        p.space,
        tuple(problem_class(p)),
        p.dtype,
        p.out_dtype,
        tuple(p.epilogue.items()),
    )


def _describe_plan(p: MatmulPlan) -> str:
    batch = "" if p.batch is None else f"{p.batch} x "
    return f"{batch}{p.m}x{p.n}x{p.k} ({p.dtype} -> {p.out_dtype}, B {p.b_layout})"


def _no_correct_kernel(p: MatmulPlan, failure: str, cache) -> NoCorrectKernel:
    return NoCorrectKernel(
        f"wsc.matmul: no config computes {_describe_plan(p)} correctly on this GPU: every "
        f"candidate failed to compile, computed a wrong result, faulted or hung. Use "
        f"torch.matmul for it. This is cached: clear {cache.root} to search again (after a "
        f"fix of wsc). Why: {failure[:2000]}"
    )


def _caller_stacklevel() -> int:
    """The stacklevel of warnings.warn that names the first frame outside wsc
    and torch (the user's call), from the function that calls warn."""
    package = os.path.dirname(__file__)
    frame: types.FrameType | None = sys._getframe(2)
    level = 2
    while frame is not None and (
        frame.f_code.co_filename.startswith(package)
        or f"{os.sep}torch{os.sep}" in frame.f_code.co_filename
    ):
        frame, level = frame.f_back, level + 1
    return level


def search(
    p: MatmulPlan,
    ordinal: int = 0,
    retune: bool = False,
    progress: bool = True,
    extra: Sequence[dict] = (),
):
    """Autotune `p`'s problem on cuda:`ordinal` (a progress bar on stderr), or
    with `retune` search again past a cached choice: the tuner's result, with
    every candidate's time (TuneResult.table()). `extra` configs are timed
    beside the space's (Autotuned.tune)."""
    return SPACES[p.space].tune(
        tuning_sizes(p),
        fixed=_fixed(p),
        problem_class={"class": problem_class(p)},
        cache=_cache(),
        device=ordinal,
        retune=retune,
        progress=progress,
        extra=extra,
    )


def _tune(p: MatmulPlan, ordinal: int) -> tuple[dict | None, str | None, bool]:
    """Autotune `p`'s problem on cuda:`ordinal`, the GPU of the call: (the best
    config, or None and why, and whether that failure is the kernels')."""
    result = search(p, ordinal)
    return result.best, result.failure, result.failure_is_final


def tuning_sizes(p: MatmulPlan) -> dict[str, int]:
    """The sizes `p`'s class is tuned at: the call's, with every dim that is
    the row of a tensor TMA reads (K, and N of a "kn" B) rounded up to whole
    16-byte rows. The tuner's operands are contiguous, where the caller's rows
    may be padded to that length (a "kn" B with N = 4097); the kernels' speed is
    that of the same tiles."""
    align = TMA_ALIGN // ELEMENT_BYTES[p.dtype]
    n = round_up(p.n, align) if p.b_layout == "kn" else p.n
    return {"m": p.m, "n": n, "k": round_up(p.k, align), **_extra_sizes(p)}


def _extra_sizes(p: MatmulPlan) -> dict[str, int]:
    """The sizes the kernel reads beside M, N and K: a batched product's
    number of matrices, a scaled one's scale lengths."""
    from wsc.kernels.matmul.config import MatmulProblem

    problem = MatmulProblem(p.dtype, b_layout=p.b_layout, block_scales=p.block_scales)
    scales = problem.scale_sizes(p.m, p.n, p.k)
    return scales if p.batch is None else {"batch": p.batch, **scales}


def _fixed(p: MatmulPlan) -> dict:
    """The kernel arguments a problem fixes (those of matmul_kernel but the
    config); a plain product's are the dtypes and B's layout alone, as before
    kernels took an epilogue, so their cached kernels and choices still serve."""
    batched = {} if p.batch is None else {"batched": True}
    return {
        "dtype": p.dtype,
        "out_dtype": p.out_dtype,
        "b_layout": p.b_layout,
        **p.epilogue,
        **batched,
    }


_state_lock = threading.Lock()
_cache_instance = None


def _cache():
    global _cache_instance
    with _state_lock:
        if _cache_instance is None:
            from wsc.cache import Cache

            _cache_instance = Cache()
        return _cache_instance


def compiled_kernel_dir(p: MatmulPlan, config: dict, cache) -> Path:
    """The artifact directory of the kernel for `config` and `p`'s dtypes and B
    layout, compiled now if the cache does not hold it: the autotuner's own
    entry, so a tuned candidate is never compiled twice. It was written for
    some problem; Artifact.resized adapts it to any other."""
    sizes = {"m": p.m, "n": p.n, "k": p.k, **_extra_sizes(p)}
    return SPACES[p.space].artifact(config, sizes, _fixed(p), cache)


def _kernel_for(p: MatmulPlan, ordinal: int):
    """A loaded wsc.runtime.Kernel for `p` on cuda:`ordinal`, described for
    `p`'s sizes, compiling and tuning as needed."""
    from wsc.runtime import loaded_kernel

    cache = _cache()
    config = choose_config(
        p, hopper_name(ordinal, "wsc.matmul"), cache, lambda p: _tune(p, ordinal)
    )
    kernel = loaded_kernel(compiled_kernel_dir(p, config, cache), ordinal)
    return kernel.resized(m=p.m, n=p.n, k=p.k, **_extra_sizes(p))


# Running -------------------------------------------------------------------------------

#: Calls already resolved, by signature (see `_signature`): how to launch them.
_bound: dict = {}
#: Signatures kept per process; past it the oldest are forgotten (and resolved again).
_BOUND_SIGNATURES = 4096


class _BoundMatmul:
    """One signature of call, resolved: the kernel bound to its tensors' shapes,
    strides and dtypes; a call passes only data pointers and the stream."""

    __slots__ = ("launch", "out_shape", "out_dtype", "ordinal", "block_scales")

    def __init__(
        self,
        launch,
        out_shape: tuple[int, ...],
        out_dtype,
        ordinal: int,
        block_scales: bool = False,
    ):
        self.launch, self.out_shape = launch, out_shape
        self.out_dtype, self.ordinal = out_dtype, ordinal
        #: The kernel takes block scales (scale_a in its own form: _kernel_scale_a).
        self.block_scales = block_scales

    def __call__(self, a, b, out, *epilogue):
        """The launch on a, b, out and the epilogue's tensors (bias, residual:
        those the call passed, in that order)."""
        if out is None:
            out = _torch.empty(self.out_shape, dtype=self.out_dtype, device=a.device)
        pointers = (a.data_ptr(), b.data_ptr(), out.data_ptr())
        if (pointers[0] | pointers[1] | pointers[2]) % TMA_ALIGN:
            _check_alignment(a, b, out)
        if epilogue:
            pointers += tuple(tensor.data_ptr() for tensor in epilogue)
        self._launch_on(_current_stream(self.ordinal), pointers)
        return out

    def _launch_on(self, stream: int, pointers: tuple[int, ...]) -> None:
        self.launch(stream, *pointers)


class _BoundSplitMatmul(_BoundMatmul):
    """A bound kernel that also takes workspaces (a split-K kernel's partial
    sums and counters), allocated on the call's GPU when a stream first
    launches it. Launches on one stream run one after another and share a
    set; launches on different streams may run at once, so each stream has
    its own. A graph captured on a stream where the signature had not run
    gets a set of its own, allocated in its memory pool (and zeroed by it
    where the kernel needs zeros); a graph captured where it had shares that
    stream's set, so it must not replay while that stream runs the kernel."""

    __slots__ = ("workspaces", "_specs", "_held", "_lock")

    def __init__(
        self,
        launch,
        out_shape,
        out_dtype,
        ordinal: int,
        specs: list[tuple],
        block_scales: bool = False,
    ):
        super().__init__(launch, out_shape, out_dtype, ordinal, block_scales)
        #: The workspaces' data pointers, in launch order, by raw stream handle.
        self.workspaces: dict[int, tuple[int, ...]] = {}
        #: (name, shape, torch dtype, zeroed) of each workspace, in launch order.
        self._specs = specs
        #: The workspace tensors by stream handle, or (stream, capture id)
        #: for a graph's.
        self._held: dict[Any, dict] = {}
        self._lock = threading.Lock()

    def _launch_on(self, stream: int, pointers: tuple[int, ...]) -> None:
        workspace = self.workspaces.get(stream)
        if workspace is None:
            workspace = self.workspace(stream)
        self.launch(stream, *pointers, *workspace)

    def workspace(self, stream: int, tensors: dict | None = None) -> tuple[int, ...]:
        """The data pointers of the workspaces of launches on `stream`, or of
        the graph it is capturing; on first use `tensors` (a set of
        `_allocate_workspaces`) or a new set."""
        from wsc.runtime import driver

        capture = driver.capture_id(stream)
        key = stream if capture is None else (stream, capture)
        with self._lock:
            held = self._held.get(key)
            if held is None:
                # A stream captures one graph at a time, so the sets of its
                # earlier captures are their graphs' now: their pools keep them.
                for ended in [k for k in self._held if isinstance(k, tuple) and k[0] == stream]:
                    del self._held[ended]
                if tensors is None:
                    tensors = _allocate_workspaces(self._specs, self.ordinal)
                held = self._held[key] = tensors
            pointers = tuple(tensor.data_ptr() for tensor in held.values())
            if capture is None:
                self.workspaces[stream] = pointers
            return pointers


def _allocate_workspaces(specs: list[tuple], ordinal: int) -> dict:
    """A set of workspaces of `specs` (_BoundSplitMatmul's) on cuda:`ordinal`,
    allocated and zeroed on torch's current stream there."""
    device = _torch.device("cuda", ordinal)
    return {
        name: (_torch.zeros if zeroed else _torch.empty)(shape, dtype=dtype, device=device)
        for name, shape, dtype, zeroed in specs
    }


def _signature(
    a, b, out, out_dtype, bias=None, activation=None, residual=None, alpha=None, scales=None
) -> tuple:
    """What decides how a call runs, but the data pointers: a call of a known
    signature launches at once."""
    result = (out.shape, out.stride(), out.dtype, out.device) if out is not None else None
    signature: tuple = (
        a.shape,
        a.stride(),
        a.dtype,
        a.device,
        b.shape,
        b.stride(),
        b.dtype,
        b.device,
        result,
        out_dtype,
    )
    if scales is not None:
        signature += tuple((s.shape, s.stride(), s.dtype, s.device) for s in scales)
    if bias is None and activation is None and residual is None and alpha is None:
        return signature
    # alpha's value is bound into the launch: a call with another one binds again.
    return (
        *signature,
        None if bias is None else (bias.shape, bias.stride(), bias.dtype, bias.device),
        activation,
        None if residual is None else (residual.shape, residual.stride(), residual.dtype),
        alpha,
    )


def _epilogue_tensors(bias, residual, scales=None, block_scales: bool = False) -> tuple:
    """The epilogue tensors a call passes, in the kernel's order, block
    scales' scale_a as the kernel reads it (_kernel_scale_a)."""
    if scales is not None and block_scales:
        scales = (_kernel_scale_a(scales[0]), scales[1])
    return tuple(tensor for tensor in (bias, residual, *(scales or ())) if tensor is not None)


def _kernel_scale_a(scale_a):
    """Block scales' scale_a [M, K blocks] as the kernel reads it: its
    transpose [K blocks, M], M padded to whole 16 bytes (TMA copies a K
    tile's row of it; the padding scales rows past M, which are never
    stored). A column-major scale_a (torch._scaled_mm's layout) is read in
    place, through its transpose view, where its rows are so aligned; any
    other (row-major, or M not a multiple of 4) is copied each call."""
    m, blocks = scale_a.shape
    rows = scale_a.t()
    # A launch passes the pointer alone: the strides must be the copy's.
    if m % SCALE_ROW_ALIGN == 0 and rows.stride() == (m, 1) and rows.data_ptr() % TMA_ALIGN == 0:
        return rows
    padded = _torch.empty(
        (blocks, round_up(m, SCALE_ROW_ALIGN)), dtype=scale_a.dtype, device=scale_a.device
    )
    padded[:, :m].copy_(rows)
    return padded


def _check_alignment(a, b, out) -> None:
    for name, tensor in (("a", a), ("b", b), ("out", out)):
        if tensor.data_ptr() % TMA_ALIGN:
            raise ValueError(
                f"wsc.matmul: {name}'s data starts at {tensor.data_ptr():#x}, "
                f"which is not {TMA_ALIGN}-byte aligned"
            )


def _bind(
    a, b, out, bias=None, activation=None, residual=None, alpha=None, scales=None
) -> _BoundMatmul | None:
    """Resolve a call of a new signature (checks, config, kernel) and remember
    it; None for an empty product, which launches nothing."""
    from wsc.kernels.matmul.config import MatmulProblem
    from wsc.runtime import BoundLaunch

    if a.dim() == 3:
        p = plan_bmm(a, b, out)
    else:
        p = plan(a, b, out, None, bias, activation, residual, alpha, scales)
    _check_alignment(a, b, out)
    if 0 in (p.m, p.n, p.k, p.batch):
        return None
    ordinal = a.device.index if a.device.index is not None else 0
    kernel = _kernel_for(p, ordinal)
    kernel_b = b if p.b_layout == "kn" else b.transpose(-1, -2)
    names = MatmulProblem(
        p.dtype, bias=p.bias, residual=p.residual, alpha=p.alpha
    ).epilogue_tensors()
    # A scale of shape [] is the kernel's [1], block scales of B are read flat
    # (launches pass their pointers alone).
    scale_a, scale_b = None, None
    if scales is not None:
        scale_a = _kernel_scale_a(scales[0]) if p.block_scales else scales[0].reshape(1)
        scale_b = scales[1].reshape(-1)
    epilogue = {
        names[part]: tensor
        for part, tensor in (
            ("bias", bias),
            ("residual", residual),
            ("scale_a", scale_a),
            ("scale_b", scale_b),
        )
        if tensor is not None
    }
    scalars = {names["alpha"]: float(alpha)} if alpha is not None else {}
    specs = [
        (spec.name, spec.shape, _torch_dtype(spec.dtype), spec.zeroed)
        for spec in kernel.artifact.tensors.values()
        if spec.role == "workspace"
    ]
    if not specs:
        launch = BoundLaunch(kernel.prepare(a=a, b=kernel_b, c=out, **epilogue, **scalars))
        if launch.names != ("a", "b", "c", *epilogue):
            raise RuntimeError(
                f"wsc.matmul: the kernel takes tensors {launch.names}, not "
                f"{', '.join(('a', 'b', 'c', *epilogue))}"
            )
        return _BoundMatmul(launch, p.out_shape, out.dtype, ordinal, p.block_scales)
    workspaces = _allocate_workspaces(specs, ordinal)
    launch = BoundLaunch(
        kernel.prepare(a=a, b=kernel_b, c=out, **epilogue, **workspaces, **scalars)
    )
    if launch.names != ("a", "b", "c", *epilogue, *workspaces):
        raise RuntimeError(
            f"wsc.matmul: the kernel takes tensors {launch.names}, not "
            f"{', '.join(('a', 'b', 'c', *epilogue))} and its workspaces {', '.join(workspaces)}"
        )
    bound = _BoundSplitMatmul(launch, p.out_shape, out.dtype, ordinal, specs, p.block_scales)
    bound.workspace(_current_stream(ordinal), workspaces)
    return bound


def _remember(signature: tuple, bound: _BoundMatmul) -> None:
    with _state_lock:
        if len(_bound) >= _BOUND_SIGNATURES:
            _bound.pop(next(iter(_bound)), None)
        _bound[signature] = bound


def _run_torch(
    a, b, out, bias=None, activation=None, residual=None, alpha=None, scales=None
) -> None:
    """out = a @ b, or act(a @ b + bias) + residual, or (fp8) scale_a scale_b
    a @ b, for CUDA tensors (checked here too: the custom ops can be called
    directly, without wsc.matmul's checks)."""
    signature = _signature(a, b, out, None, bias, activation, residual, alpha, scales)
    bound = _bound.get(signature)
    if bound is None:
        bound = _bind(a, b, out, bias, activation, residual, alpha, scales)
        if bound is None:
            if out.numel():
                # K = 0: a sum of nothing, then the epilogue of zeros.
                out.copy_(_epilogue_of_zeros(out, bias, activation, residual))
            return
        _remember(signature, bound)
    bound(a, b, out, *_epilogue_tensors(bias, residual, scales, bound.block_scales))


def _epilogue_of_zeros(out, bias, activation, residual):
    """C for K = 0: act(0 + bias) + residual, by torch (zeros without an epilogue)."""
    # The matmul check's activations (it imports numpy: not at wsc.matmul's import).
    from wsc.kernels.matmul.check import activate

    torch = _torch
    value = torch.zeros(out.shape, dtype=torch.float32, device=out.device)
    if bias is not None:
        value = value + bias.float()
    value = activate(activation, value, torch.special.erf, torch.tanh, torch.exp)
    if residual is not None:
        value = value + residual.float()
    return value


def _matmul_numpy(a, b, out, out_dtype):
    import numpy as np

    from wsc.runtime import DeviceArray
    from wsc.runtime.driver import HOST_DTYPES

    p = plan(a, b, out, out_dtype)
    if out is not None:
        result = out
    elif p.out_dtype == "bf16":
        # numpy has no bfloat16; the inputs' dtype (ml_dtypes' bfloat16) is one.
        if a.dtype.name != "bfloat16":
            raise TypeError(
                "wsc.matmul: numpy has no bfloat16 for the result: pass out= a "
                "bfloat16 array (ml_dtypes) or choose out_dtype float16 or float32"
            )
        result = np.empty((p.m, p.n), dtype=a.dtype)
    else:
        result = np.empty((p.m, p.n), dtype=HOST_DTYPES[p.out_dtype])
    if p.m == 0 or p.n == 0:
        return result
    if p.k == 0:
        result[...] = 0
        return result

    def upload(array, dtype):
        host = np.ascontiguousarray(array).view(HOST_DTYPES[dtype])
        return DeviceArray.from_host(host, dtype)

    kernel = _kernel_for(p, 0)
    # Held in locals until the kernel has finished: freeing them earlier
    # could release memory it still reads.
    device_a = upload(a, p.dtype)
    device_b = upload(b if p.b_layout == "kn" else b.T, p.dtype)
    device_c = DeviceArray((p.m, p.n), p.out_dtype)
    workspaces = {}
    for spec in kernel.artifact.tensors.values():
        if spec.role == "workspace":
            workspaces[spec.name] = DeviceArray(spec.shape, spec.dtype)
            if spec.zeroed:
                workspaces[spec.name].fill_bits(0)  # on the launch's (legacy) stream
    kernel.launch(a=device_a, b=device_b, c=device_c, **workspaces)
    kernel.synchronize()
    result[...] = device_c.to_host().view(result.dtype)
    return result


def matmul(
    a, b, *, out=None, out_dtype=None, bias=None, activation=None, residual=None, alpha=None
):
    """a @ b with fp32 accumulation (see the module docstring). Returns `out`
    when given, else a new tensor (or numpy array, for numpy inputs).

    With `alpha` (a number), `bias` ([N]), `activation` ("relu", "gelu",
    "gelu_tanh" or "silu", as torch.nn.functional computes them) or `residual`
    ([M, N]), the kernel computes act(alpha a @ b + bias) + residual in
    registers before it stores C (torch tensors of a's dtype; not under
    autograd)."""
    torch = _torch
    # A plain call builds nothing for the epilogue: this is the hot path.
    epilogue = () if bias is None and residual is None else _epilogue_tensors(bias, residual)
    if (
        torch is not None
        and type(a) in _PLAIN_TENSORS
        and type(b) in _PLAIN_TENSORS
        and (out is None or type(out) in _PLAIN_TENSORS)
        and (not epilogue or all(type(tensor) in _PLAIN_TENSORS for tensor in epilogue))
        and not torch.compiler.is_compiling()
        and not (
            torch.is_grad_enabled()
            and (
                a.requires_grad
                or b.requires_grad
                or (out is not None and out.requires_grad)
                or (epilogue and any(tensor.requires_grad for tensor in epilogue))
            )
        )
        and _dispatch_mode() is None
        and torch._C._get_tracing_state() is None
        and not (a.is_neg() or b.is_neg())
    ):
        # A call of a signature seen before launches at once. The first one of
        # a signature, and any call torch must see (tracing, a dispatch mode,
        # fake tensors, autograd, a lazily negated view), takes the custom op
        # below, which resolves it.
        bound = _bound.get(_signature(a, b, out, out_dtype, bias, activation, residual, alpha))
        if bound is not None:
            if out is not None:
                torch.autograd.graph.increment_version(out)  # as any in-place write does
            return bound(a, b, out, *epilogue)
    try:
        return _matmul(a, b, out, out_dtype, bias, activation, residual, alpha)
    except Exception as error:
        from wsc.runtime.driver import CudaUnavailableError

        if not isinstance(error, CudaUnavailableError):
            raise
        raise CudaUnavailableError(
            f"wsc.matmul needs an NVIDIA Hopper GPU and its CUDA driver, and this machine has "
            f"none usable ({error}). Kernels can still be compiled here, without a GPU, with "
            f"`wsc compile-matmul`."
        ) from None


def bmm(a, b, *, out=None):
    """The product of each matrix of a [B, M, K] with the one of b [B, K, N] at
    its index (torch.bmm), by a wsc kernel that runs a block per output tile
    and matrix: a [B, M, N] tensor of a's dtype, or `out`. b may be the
    transpose view of a [B, N, K] (b = w.transpose(1, 2)), which the kernel
    reads as it is (the "nk" layout). Each operand's matrices follow one
    another in memory; N must be a multiple of 8 (C is stored with TMA). A b
    of one matrix ([K, N], or w.T) is every matrix's weight: the product is
    wsc.matmul of all of a's rows at once, into a contiguous out. Torch CUDA
    tensors, float16 or bfloat16, without autograd."""
    torch = _torch
    if torch is None:
        raise TypeError("wsc.bmm needs torch")
    if getattr(b, "ndim", None) == 2 and getattr(a, "ndim", None) == 3:
        batch, m, k = a.shape
        if out is not None:
            expected = [batch, m, b.shape[-1]]
            if list(out.shape) != expected:
                raise ValueError(f"wsc.bmm: out must be {expected}, got {list(out.shape)}")
            if not out.is_contiguous():
                raise ValueError(
                    "wsc.bmm: with one weight for every matrix, out must be contiguous: the "
                    "product is one matmul of all of a's rows"
                )
        flat = None if out is None else out.view(batch * m, out.shape[-1])
        result = matmul(a.reshape(batch * m, k), b, out=flat)
        return out if out is not None else result.view(batch, m, result.shape[-1])
    if torch.is_grad_enabled() and any(
        getattr(tensor, "requires_grad", False) for tensor in (a, b, out)
    ):
        raise NotImplementedError(
            "wsc.bmm does not support automatic differentiation yet, but an argument "
            "requires grad; use torch.bmm, or call wsc.bmm under torch.no_grad()"
        )
    if (
        type(a) in _PLAIN_TENSORS
        and type(b) in _PLAIN_TENSORS
        and (out is None or type(out) in _PLAIN_TENSORS)
        and not torch.compiler.is_compiling()
        and _dispatch_mode() is None
    ):
        bound = _bound.get(_signature(a, b, out, None))
        if bound is not None:
            return bound(a, b, out)
    p = plan_bmm(a, b, out)
    if a.device.type not in ("cuda", "meta"):
        raise ValueError(f"wsc.bmm: a and b must be CUDA tensors, got tensors on {a.device}")
    if out is not None:
        torch.ops.wsc.bmm_out(a, b, out)
        return out
    result = torch.ops.wsc.bmm(a, b)
    if not torch.compiler.is_compiling() and a.device.type == "cuda" and 0 not in p.out_shape:
        # The functional call of this signature: allocate and launch from now on.
        bound = _bound.get(_signature(a, b, result, None))
        if bound is not None:
            _remember(_signature(a, b, None, None), bound)
    return result


def scaled_mm(a, b, scale_a, scale_b, *, out_dtype=None, out=None):
    """scale_a scale_b (a @ b) for fp8 (float8_e4m3fn) a [M, K], row-major,
    and b [K, N] given as the transpose view of a row-major [N, K] (b = w.T),
    as torch._scaled_mm takes them. The scales are float32 CUDA tensors,
    which the kernel reads (no host sync): per tensor, one element each, or
    block scales as DeepSeek-V3's, scale_a [M, cdiv(K, 128)] (a scale per row
    of A and 128 of K) and scale_b [cdiv(N, 128), cdiv(K, 128)] (per 128 x 128
    block of w, contiguous), applied to each K tile's product in registers.
    scale_a may be column-major, as torch._scaled_mm takes it, which the
    kernel reads in place where M is a multiple of 4 (TMA copies a K tile's
    scales of the tile's rows beside A's tile), or row-major, at the cost of
    a transposed copy per call. The product accumulates in fp32 (per-tensor scales: in the
    WGMMA's accumulator over all of K, as torch._scaled_mm's
    use_fast_accum=True does) and is returned as `out_dtype` (bfloat16 unless
    float16 or float32 is asked) or into `out`.
    K must be a multiple of 16 (TMA's 16-byte rows). Torch tensors, without
    autograd."""
    torch = _torch
    if torch is None:
        raise TypeError("wsc.scaled_mm needs torch")
    scales = (scale_a, scale_b)
    if torch.is_grad_enabled() and any(
        getattr(tensor, "requires_grad", False) for tensor in (a, b, out, *scales)
    ):
        raise NotImplementedError(
            "wsc.scaled_mm does not support automatic differentiation, but an argument "
            "requires grad; call it under torch.no_grad()"
        )
    if (
        all(type(tensor) in _PLAIN_TENSORS for tensor in (a, b, *scales))
        and (out is None or type(out) in _PLAIN_TENSORS)
        and not torch.compiler.is_compiling()
        and _dispatch_mode() is None
    ):
        bound = _bound.get(_signature(a, b, out, out_dtype, scales=scales))
        if bound is not None:
            if out is not None:
                torch.autograd.graph.increment_version(out)
            return bound(a, b, out, *_epilogue_tensors(None, None, scales, bound.block_scales))
    p = plan(a, b, out, out_dtype, scales=scales)
    if a.device.type not in ("cuda", "meta"):
        raise ValueError(f"wsc.scaled_mm: a and b must be CUDA tensors, got tensors on {a.device}")
    if out is not None:
        torch.ops.wsc.scaled_mm_out(a, b, scale_a, scale_b, out)
        return out
    result = torch.ops.wsc.scaled_mm(a, b, scale_a, scale_b, _torch_dtype(p.out_dtype))
    if not torch.compiler.is_compiling() and a.device.type == "cuda":
        # The functional call of this signature: allocate and launch from now on.
        bound = _bound.get(_signature(a, b, result, None, scales=scales))
        if bound is not None:
            _remember(_signature(a, b, None, out_dtype, scales=scales), bound)
    return result


def _matmul(a, b, out, out_dtype, bias=None, activation=None, residual=None, alpha=None):
    fused = bias is not None or activation is not None or residual is not None or alpha is not None
    if _describe(a, "a").kind == "numpy":
        if fused:
            raise TypeError(
                "wsc.matmul: alpha, bias, activation and residual are supported for torch "
                "tensors only"
            )
        return _matmul_numpy(a, b, out, out_dtype)
    p = plan(a, b, out, out_dtype, bias, activation, residual, alpha)
    # Meta tensors run the fake implementation: the result's metadata only.
    if a.device.type not in ("cuda", "meta"):
        raise ValueError(
            f"wsc.matmul: a and b must be CUDA tensors, got tensors on "
            f"{a.device}; move them with .cuda() (numpy arrays are copied to "
            f"the GPU for you)"
        )
    torch = _torch
    needs_grad = torch.is_grad_enabled() and any(
        tensor.requires_grad for tensor in (a, b, *_epilogue_tensors(bias, residual))
    )
    if fused and needs_grad:
        raise NotImplementedError(
            "wsc.matmul: a call with alpha, bias, activation or residual does not support "
            "automatic differentiation yet, but one of the arguments requires grad; "
            "compute the epilogue with torch around wsc.matmul(a, b) instead"
        )
    if out is not None:
        if needs_grad:
            raise RuntimeError(
                "wsc.matmul(): a call with out=... does not support automatic "
                "differentiation, but one of the arguments requires grad"
            )
        if fused:
            torch.ops.wsc.matmul_epilogue_out(a, b, bias, activation, residual, out, alpha)
        else:
            torch.ops.wsc.matmul_out(a, b, out)
        return out
    if needs_grad:
        return _MatmulWithGrad.apply(a, b, _torch_dtype(p.out_dtype))
    if fused:
        result = torch.ops.wsc.matmul_epilogue(
            a, b, bias, activation, residual, _torch_dtype(p.out_dtype), alpha
        )
    else:
        result = torch.ops.wsc.matmul(a, b, _torch_dtype(p.out_dtype))
    if not torch.compiler.is_compiling() and a.device.type == "cuda":
        # The functional call of this signature: allocate and launch from now on.
        bound = _bound.get(_signature(a, b, result, None, bias, activation, residual, alpha))
        if bound is not None:
            _remember(_signature(a, b, None, out_dtype, bias, activation, residual, alpha), bound)
    return result


def _torch_dtype(name: str):
    import torch

    return {
        "f32": torch.float32,
        "f16": torch.float16,
        "bf16": torch.bfloat16,
        "i32": torch.int32,
    }[name]


def _current_stream(ordinal: int) -> int:
    """The raw handle of torch's current stream on cuda:`ordinal`."""
    return _torch._C._cuda_getCurrentRawStream(ordinal)


# torch custom ops -----------------------------------------------------------------------


def _register_torch_ops() -> None:
    """torch.ops.wsc.matmul (functional) and torch.ops.wsc.matmul_out (writes
    `out`), and their fused-epilogue forms matmul_epilogue and
    matmul_epilogue_out (alpha the last, optional argument), each with a fake implementation: the result's
    metadata from the same checks, for meta tensors and torch.compile's
    tracing."""
    import torch
    from torch.utils._python_dispatch import _get_current_dispatch_mode

    global _torch, _library, _PLAIN_TENSORS, _MatmulWithGrad, _dispatch_mode
    _torch = torch
    _PLAIN_TENSORS = (torch.Tensor, torch.nn.Parameter)
    # A Library with a CUDA kernel, not torch.library.custom_op: the latter's
    # Python wrappers cost tens of microseconds per call. Exact strides: B's
    # layout is read from its strides, and TMA wants A's and B's rows where
    # they are; a compiler must not restride them.
    _library = torch.library.Library("wsc", "DEF")
    strides = (torch.Tag.needs_exact_strides,)
    define_cuda_op(
        _library, "matmul(Tensor a, Tensor b, ScalarType? out_dtype=None) -> Tensor", tags=strides
    )
    define_cuda_op(_library, "matmul_out(Tensor a, Tensor b, Tensor(a!) out) -> ()", tags=strides)
    # With the fused epilogue: C = act(a @ b + bias) + residual.
    define_cuda_op(
        _library,
        "matmul_epilogue(Tensor a, Tensor b, Tensor? bias, str? activation, Tensor? residual, "
        "ScalarType? out_dtype=None, float? alpha=None) -> Tensor",
        tags=strides,
    )
    define_cuda_op(
        _library,
        "matmul_epilogue_out(Tensor a, Tensor b, Tensor? bias, str? activation, "
        "Tensor? residual, Tensor(a!) out, float? alpha=None) -> ()",
        tags=strides,
    )

    def matmul_op(a, b, out_dtype=None):
        p = plan(a, b, out_dtype=out_dtype)
        out = torch.empty((p.m, p.n), dtype=_torch_dtype(p.out_dtype), device=a.device)
        _run_torch(a, b, out)
        return out

    def matmul_fake(a, b, out_dtype=None):
        p = plan(a, b, out_dtype=out_dtype)
        return a.new_empty((p.m, p.n), dtype=_torch_dtype(p.out_dtype))

    def matmul_out_fake(a, b, out):
        plan(a, b, out)

    def matmul_epilogue_op(a, b, bias, activation, residual, out_dtype=None, alpha=None):
        p = plan(a, b, None, out_dtype, bias, activation, residual, alpha)
        out = torch.empty((p.m, p.n), dtype=_torch_dtype(p.out_dtype), device=a.device)
        _run_torch(a, b, out, bias, activation, residual, alpha)
        return out

    def matmul_epilogue_fake(a, b, bias, activation, residual, out_dtype=None, alpha=None):
        p = plan(a, b, None, out_dtype, bias, activation, residual, alpha)
        return a.new_empty((p.m, p.n), dtype=_torch_dtype(p.out_dtype))

    def matmul_epilogue_out(a, b, bias, activation, residual, out, alpha=None):
        _run_torch(a, b, out, bias, activation, residual, alpha)

    def matmul_epilogue_out_fake(a, b, bias, activation, residual, out, alpha=None):
        plan(a, b, out, None, bias, activation, residual, alpha)

    class MatmulWithGrad(torch.autograd.Function):
        """wsc.matmul where autograd records it: the product by the wsc kernel,
        the gradients by torch.matmul (wsc has no kernel for A^T, which the
        gradient of B reads). The ops themselves carry no autograd formula:
        torch's Python autograd wrapper would cost every call about 16 us."""

        @staticmethod
        def forward(ctx, a, b, out_dtype):
            ctx.save_for_backward(a, b)
            return torch.ops.wsc.matmul(a, b, out_dtype)

        @staticmethod
        def backward(ctx, grad):
            a, b = ctx.saved_tensors
            grad = grad.to(a.dtype)
            return (
                grad @ b.mT if ctx.needs_input_grad[0] else None,
                a.mT @ grad if ctx.needs_input_grad[1] else None,
                None,
            )

    _MatmulWithGrad = MatmulWithGrad
    _dispatch_mode = _get_current_dispatch_mode

    _library.impl("matmul", matmul_op, "CUDA")
    _library.impl("matmul_out", _run_torch, "CUDA")
    _library.impl("matmul_epilogue", matmul_epilogue_op, "CUDA")
    _library.impl("matmul_epilogue_out", matmul_epilogue_out, "CUDA")
    torch.library.register_fake("wsc::matmul", matmul_fake, lib=_library)
    torch.library.register_fake("wsc::matmul_out", matmul_out_fake, lib=_library)
    torch.library.register_fake("wsc::matmul_epilogue", matmul_epilogue_fake, lib=_library)
    torch.library.register_fake("wsc::matmul_epilogue_out", matmul_epilogue_out_fake, lib=_library)

    # Batched: c[i] = a[i] @ b[i].
    define_cuda_op(_library, "bmm(Tensor a, Tensor b) -> Tensor", tags=strides)
    define_cuda_op(_library, "bmm_out(Tensor a, Tensor b, Tensor(a!) out) -> ()", tags=strides)

    def bmm_op(a, b):
        p = plan_bmm(a, b)
        out = torch.empty(p.out_shape, dtype=_torch_dtype(p.out_dtype), device=a.device)
        _run_torch(a, b, out)
        return out

    def bmm_fake(a, b):
        p = plan_bmm(a, b)
        return a.new_empty(p.out_shape, dtype=_torch_dtype(p.out_dtype))

    def bmm_out_fake(a, b, out):
        plan_bmm(a, b, out)

    # fp8 with per-tensor scales: c = scale_a scale_b (a @ b).
    define_cuda_op(
        _library,
        "scaled_mm(Tensor a, Tensor b, Tensor scale_a, Tensor scale_b, "
        "ScalarType? out_dtype=None) -> Tensor",
        tags=strides,
    )
    define_cuda_op(
        _library,
        "scaled_mm_out(Tensor a, Tensor b, Tensor scale_a, Tensor scale_b, Tensor(a!) out) -> ()",
        tags=strides,
    )

    def scaled_mm_op(a, b, scale_a, scale_b, out_dtype=None):
        p = plan(a, b, None, out_dtype, scales=(scale_a, scale_b))
        out = torch.empty((p.m, p.n), dtype=_torch_dtype(p.out_dtype), device=a.device)
        _run_torch(a, b, out, scales=(scale_a, scale_b))
        return out

    def scaled_mm_fake(a, b, scale_a, scale_b, out_dtype=None):
        p = plan(a, b, None, out_dtype, scales=(scale_a, scale_b))
        return a.new_empty((p.m, p.n), dtype=_torch_dtype(p.out_dtype))

    def scaled_mm_out(a, b, scale_a, scale_b, out):
        _run_torch(a, b, out, scales=(scale_a, scale_b))

    def scaled_mm_out_fake(a, b, scale_a, scale_b, out):
        plan(a, b, out, scales=(scale_a, scale_b))

    _library.impl("scaled_mm", scaled_mm_op, "CUDA")
    _library.impl("scaled_mm_out", scaled_mm_out, "CUDA")
    torch.library.register_fake("wsc::scaled_mm", scaled_mm_fake, lib=_library)
    torch.library.register_fake("wsc::scaled_mm_out", scaled_mm_out_fake, lib=_library)

    _library.impl("bmm", bmm_op, "CUDA")
    _library.impl("bmm_out", _run_torch, "CUDA")
    torch.library.register_fake("wsc::bmm", bmm_fake, lib=_library)
    torch.library.register_fake("wsc::bmm_out", bmm_out_fake, lib=_library)


#: torch, once the ops are registered (None without torch), and their Library.
_torch: Any = None
_library: Any = None
#: Tensor types a call may launch with directly; subclasses (fake, functional,
#: distributed tensors) take the custom op, as their dispatch requires.
_PLAIN_TENSORS: tuple = ()
#: The autograd.Function of a call that records gradients, and torch's
#: getter of the active dispatch mode (both set with the ops).
_MatmulWithGrad: Any = None
_dispatch_mode: Any = None

if importlib.util.find_spec("torch") is not None:
    # Registered on import, before any call: torch.compile traces calls, and
    # registering ops while it traces would break the graph.
    _register_torch_ops()
