"""wsc.softmax: Y = softmax(X) along the last dim on a Hopper GPU, with a warp-specialized wsc kernel.

    import wsc
    y = wsc.softmax(x)                # x a contiguous CUDA tensor [..., C], bf16 or f16
    wsc.softmax(x, out=y)             # into an existing tensor of x's shape and dtype
    y = wsc.softmax(x, dim=-1)        # the last dim is the only one it reduces

C must be a multiple of 256 from 256 to 8192: the kernel
(wsc.kernels.softmax.build) sees each row as 16 rows of a [16 R, C/16] view,
one warp's share of a register tile, and keeps a whole row in a ring stage
(and, for rows of 1024 to 4096, in registers) until it is written. Math is
in fp32; the result is rounded once to x's dtype. It is not differentiable:
under autograd, a tensor that requires grad is refused.

The kernel is built per (row length, dtype) with the schedule measured for
that length (`wsc.kernels.softmax.schedule`) and kept in the persistent cache
(`wsc.cache`); compiling needs the MLIR wheels, so a machine without them
runs what its cache holds. Each signature of call (shape, dtype, device) is
resolved once per process; later calls launch the bound kernel at once on
torch's current stream. The first call of a signature, and every call torch
must see (torch.compile, fake or meta tensors, a dispatch mode), go through
the custom ops torch.ops.wsc.softmax(x, dim) and
torch.ops.wsc.softmax_out(x, dim, out), whose fake implementations make the
same checks, so torch.compile traces a call as one op.
"""

from __future__ import annotations

import importlib.util
import threading
from typing import Any

from wsc.device import define_cuda_op, hopper_name
from wsc.kernels.softmax.schedule import DTYPES, SOFTMAX, check_row_length, softmax_view
from wsc.runtime.artifact import MAX_SIZE
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
    if (
        not torch.compiler.is_compiling()
        and type(x) is torch.Tensor
        and (out is None or type(out) is torch.Tensor)
        and _dispatch_mode() is None
        and torch._C._get_tracing_state() is None
    ):
        # A call of a signature seen before launches at once. The first one of
        # a signature, and any call torch must see (tracing, a dispatch mode,
        # fake tensors), takes the custom op, which resolves it.
        launch = _bound.get(_signature(x, dim, out, torch), _UNBOUND)
        if launch is not _UNBOUND:
            if out is None:
                out = torch.empty_like(x)
            else:
                torch.autograd.graph.increment_version(out)  # as any in-place write does
            _run(launch, x, out, torch)
            return out
    check(x, dim, out)
    if out is None:
        return torch.ops.wsc.softmax(x, dim)
    torch.ops.wsc.softmax_out(x, dim, out)
    return out


def _signature(x, dim: int, out, torch) -> tuple:
    grad = x.requires_grad and torch.is_grad_enabled()
    result = None if out is None else (out.shape, out.stride(), out.dtype, out.device)
    return (x.shape, x.stride(), x.dtype, x.device, dim, result, grad)


def check(x, dim: int, out) -> None:
    """Refuse, with the reason, a call the kernel cannot take; CUDA and meta
    tensors (torch.compile's fake ones among them) pass."""
    torch = _torch()
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"wsc.softmax: x must be a torch tensor, got {type(x).__name__}")
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
        not isinstance(out, torch.Tensor)
        or out.shape != x.shape
        or out.dtype != x.dtype
        or out.device != x.device
        or not out.is_contiguous()
    ):
        got = (
            f"{out.dtype} {list(out.shape)} on {out.device}"
            f"{'' if out.is_contiguous() else ', not contiguous'}"
            if isinstance(out, torch.Tensor)
            else type(out).__name__
        )
        raise ValueError(
            f"wsc.softmax: out must be a contiguous {x.dtype} tensor of x's shape "
            f"{list(x.shape)} on {x.device}, got {got}"
        )
    check_row_length(x.shape[-1], "wsc.softmax")
    rows = x.numel() // x.shape[-1]
    # The kernel's view splits each row over several rows of its own; sizes
    # torch.compile keeps symbolic are checked when a call launches.
    symbolic = not isinstance(rows, int) or not isinstance(x.shape[-1], int)
    view_rows = 0 if symbolic else softmax_view(rows, x.shape[-1])["a_dim0"]
    if view_rows > MAX_SIZE:
        raise ValueError(
            f"wsc.softmax: x has {rows} rows, which the kernel views as {view_rows}, more "
            f"than its i32 sizes hold ({MAX_SIZE}); split x along its rows"
        )
    if x.device.type not in ("cuda", "meta"):
        raise ValueError(f"wsc.softmax: x is on {x.device}; the kernel runs on CUDA tensors")


def _launch(x, dim: int, out, functional: bool) -> None:
    """The custom op's CUDA implementation: check and resolve the call's
    signature once (also under the signature without `out` for a functional
    call, whose `out` the op allocated), then launch."""
    torch = _torch()
    signature = _signature(x, dim, out, torch)
    launch = _bound.get(signature, _UNBOUND)
    if launch is _UNBOUND:
        check(x, dim, out)  # the op may be called directly, not through softmax()
        launch = _bind(x)
        with _lock:
            while len(_bound) >= _BOUND_SIGNATURES - 1:
                _bound.pop(next(iter(_bound)), None)
            _bound[signature] = launch
            if functional:
                _bound[_signature(x, dim, None, torch)] = launch
    _run(launch, x, out, torch)


def _run(launch, x, out, torch) -> None:
    if launch is None:
        return
    x_pointer, out_pointer = x.data_ptr(), out.data_ptr()
    if (x_pointer | out_pointer) % TMA_ALIGN:
        _check_alignment(x, out)
    launch(torch._C._cuda_getCurrentRawStream(x.device.index), x_pointer, out_pointer)


def _bind(x):
    """Bind the kernel of a checked call's x: a launch taking (stream, x's
    pointer, out's pointer), or None when x has no rows."""
    from wsc.runtime import BoundLaunch

    row_length = x.shape[-1]
    rows = x.numel() // row_length
    if rows == 0:
        return None
    ordinal = x.device.index if x.device.index is not None else 0
    sizes = softmax_view(rows, row_length)
    kernel = _kernel(row_length, _TORCH_NAMES[str(x.dtype)], ordinal).resized(**sizes)
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


def _register_torch_ops() -> None:
    """torch.ops.wsc.softmax (functional) and torch.ops.wsc.softmax_out
    (writes `out`), each with a fake implementation (the same checks, and the
    result's metadata) for meta tensors and torch.compile's tracing."""
    import torch
    from torch.utils._python_dispatch import _get_current_dispatch_mode

    global _library, _dispatch_mode
    _dispatch_mode = _get_current_dispatch_mode
    # A fragment: wsc.matmul defines the namespace's other ops. Exact strides:
    # the kernel reads contiguous rows, which a compiler must not restride.
    _library = torch.library.Library("wsc", "FRAGMENT")
    strides = (torch.Tag.needs_exact_strides,)
    define_cuda_op(_library, "softmax(Tensor x, int dim=-1) -> Tensor", tags=strides)
    define_cuda_op(_library, "softmax_out(Tensor x, int dim, Tensor(a!) out) -> ()", tags=strides)

    def softmax_op(x, dim=-1):
        out = torch.empty_like(x)
        _launch(x, dim, out, functional=True)
        return out

    def softmax_out_op(x, dim, out):
        _launch(x, dim, out, functional=False)

    def softmax_fake(x, dim=-1):
        check(x, dim, None)
        return torch.empty_like(x)

    def softmax_out_fake(x, dim, out):
        check(x, dim, out)

    _library.impl("softmax", softmax_op, "CUDA")
    _library.impl("softmax_out", softmax_out_op, "CUDA")
    torch.library.register_fake("wsc::softmax", softmax_fake, lib=_library)
    torch.library.register_fake("wsc::softmax_out", softmax_out_fake, lib=_library)


#: The ops' Library, and torch's getter of the active dispatch mode (set with the ops).
_library: Any = None
_dispatch_mode: Any = None

if importlib.util.find_spec("torch") is not None:
    # Registered on import, before any call: torch.compile traces calls, and
    # registering ops while it traces would break the graph.
    _register_torch_ops()
