"""wsc.softmax: Y = softmax(X) along the last dim on a Hopper GPU, with a warp-specialized wsc kernel.

    import wsc
    y = wsc.softmax(x)                # x a contiguous CUDA tensor [..., C], bf16 or f16
    wsc.softmax(x, out=y)             # into an existing tensor of x's shape and dtype
    y = wsc.softmax(x, dim=-1)        # the last dim is the only one it reduces

C must be a multiple of 256 from 256 to 8192: the kernel
(wsc.kernels.softmax.build) sees each row as 16 rows of a [16 R, C/16] view,
one warp's share of a register tile, and keeps a whole row in a ring stage
while it reads it twice. Math is in fp32; the result is rounded once to x's
dtype. It is not differentiable: under autograd, a tensor that requires grad
is refused.

The kernel is built per (row length, dtype) with the schedule measured for
that length (`wsc.kernels.softmax.schedule`) and kept in the persistent cache
(`wsc.cache`); compiling needs the MLIR wheels, so a machine without them
runs what its cache holds. Each signature of call (shape, dtype, device) is
resolved once per process; later calls launch the bound kernel at once on
torch's current stream.
"""

from __future__ import annotations

import threading
from typing import Any

from wsc.device import hopper_name
from wsc.kernels.softmax.schedule import DTYPES, SOFTMAX, check_row_length, softmax_view
from wsc.target.hopper import TMA_ALIGN

_TORCH_NAMES = {"torch.bfloat16": "bf16", "torch.float16": "f16"}

_lock = threading.Lock()
#: Calls already resolved, by signature: their bound launch, or None for no rows.
_bound: dict = {}
#: Signatures kept per process; past it the oldest are forgotten (and resolved again).
_BOUND_SIGNATURES = 4096
#: What `_bound` gives for a signature not resolved yet (None means "no rows").
_UNBOUND = object()


def softmax(x, dim: int = -1, *, out=None):
    """softmax(x) along `dim`, the last dim of x (see the module docstring)."""
    torch = _torch()
    signature = _signature(x, dim, out, torch)
    launch = _bound.get(signature, _UNBOUND)
    if launch is _UNBOUND:
        launch = _bind(x, dim, out)
        with _lock:
            if len(_bound) >= _BOUND_SIGNATURES:
                _bound.pop(next(iter(_bound)), None)
            _bound[signature] = launch
    if out is None:
        out = torch.empty_like(x)
    if launch is not None:
        x_pointer, out_pointer = x.data_ptr(), out.data_ptr()
        if (x_pointer | out_pointer) % TMA_ALIGN:
            _check_alignment(x, out)
        stream = torch._C._cuda_getCurrentRawStream(x.device.index)
        launch(stream, x_pointer, out_pointer)
    return out


def _signature(x, dim: int, out, torch) -> tuple:
    try:
        tensor = (x.shape, x.stride(), x.dtype, x.device)
        grad = x.requires_grad and torch.is_grad_enabled()
    except AttributeError:
        raise TypeError(f"wsc.softmax: x must be a torch tensor, got {type(x).__name__}") from None
    result = None if out is None else (out.shape, out.stride(), out.dtype, out.device)
    return (*tensor, dim, result, grad)


def _bind(x, dim: int, out):
    """Check a call of a new signature and bind its kernel: a launch taking
    (stream, x's pointer, out's pointer), or None when x has no rows."""
    from wsc.runtime import BoundLaunch

    torch = _torch()
    dtype = _TORCH_NAMES.get(str(x.dtype))
    if dtype not in DTYPES:
        raise ValueError(f"wsc.softmax: x is {x.dtype}; the kernel takes bfloat16 and float16")
    if x.dim() == 0 or dim not in (-1, x.dim() - 1):
        raise ValueError(
            f"wsc.softmax: reduces the last dim of x (dim=-1), got dim={dim} for x of "
            f"shape {list(x.shape)}; move the dim last first (x.movedim(dim, -1).contiguous())"
        )
    if x.requires_grad and torch.is_grad_enabled():
        raise ValueError(
            "wsc.softmax has no backward: x requires grad; call it under torch.no_grad() "
            "or on x.detach(), or use torch.softmax"
        )
    if not x.is_contiguous():
        raise ValueError(
            f"wsc.softmax: x of strides {list(x.stride())} is not contiguous; the kernel "
            f"reads whole rows with TMA (x.contiguous())"
        )
    if out is not None and (
        out.shape != x.shape
        or out.dtype != x.dtype
        or out.device != x.device
        or not out.is_contiguous()
    ):
        raise ValueError(
            f"wsc.softmax: out must be a contiguous {x.dtype} tensor of x's shape "
            f"{list(x.shape)} on {x.device}, got {out.dtype} {list(out.shape)} on {out.device}"
            f"{'' if out.is_contiguous() else ', not contiguous'}"
        )
    row_length = x.shape[-1]
    check_row_length(row_length, "wsc.softmax")
    if x.device.type != "cuda":
        raise ValueError(f"wsc.softmax: x is on {x.device}; the kernel runs on CUDA tensors")
    rows = x.numel() // row_length
    if rows == 0:
        return None
    ordinal = x.device.index if x.device.index is not None else 0
    sizes = softmax_view(rows, row_length)
    kernel = _kernel(row_length, dtype, ordinal).resized(**sizes)
    # Bound to the view's shape and strides; calls pass the pointers of theirs.
    view = x.view(sizes["a_dim0"], sizes["a_dim1"])
    launch = BoundLaunch(kernel.prepare(a=view, b=view))
    if launch.names != ("a", "b"):
        raise RuntimeError(f"wsc.softmax: the kernel takes tensors {launch.names}, not a, b")
    return launch


def _kernel(row_length: int, dtype: str, ordinal: int):
    """The loaded kernel for rows of `row_length` `dtype` on cuda:`ordinal`,
    compiled now if the cache does not hold it."""
    from wsc.runtime import loaded_kernel

    hopper_name(ordinal, "wsc.softmax")
    directory = SOFTMAX.artifact(
        {}, softmax_view(1, row_length), {"row_length": row_length, "dtype": dtype}
    )
    return loaded_kernel(directory, ordinal)


def _check_alignment(x, out) -> None:
    for name, tensor in (("x", x), ("out", out)):
        if tensor.data_ptr() % TMA_ALIGN:
            raise ValueError(
                f"wsc.softmax: {name}'s data starts at {tensor.data_ptr():#x}, which is not "
                f"{TMA_ALIGN}-byte aligned"
            )


def _torch() -> Any:
    import torch

    return torch
