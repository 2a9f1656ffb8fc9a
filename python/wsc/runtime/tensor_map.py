"""Building TMA descriptors (CUtensorMap) for a kernel's tensor maps.

The kernels load tiles with the Hopper tensor memory accelerator, which reads
a 128-byte descriptor passed by value as a kernel parameter. The driver's
`cuTensorMapEncodeTiled` rejects bad descriptors with a bare
CUDA_ERROR_INVALID_VALUE, so `plan_tensor_map` checks the rules first, in
pure Python (CPU-testable), and says which tensor broke which rule.

Conventions: the artifact gives box dims in the tensor's own order
(outermost first); the driver wants every per-dimension array innermost
first, and strides in bytes for all dims but the innermost. Out-of-bounds
elements are zero-filled (OOB fill NONE), which the kernels rely on for
ragged shapes.
"""

from __future__ import annotations

import ctypes
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass

from cuda.bindings import driver as cu

from wsc.target.hopper import (
    E4M3,
    MAX_TMA_BOX,
    MAX_TMA_GLOBAL_DIM,
    MAX_TMA_GLOBAL_STRIDE,
    MAX_TMA_RANK,
    TENSOR_MAP_BYTES,
    TMA_ALIGN,
)

from .artifact import DTYPE_SIZES, TensorMapSpec
from .driver import HotCalls, call, check_result
from .tensors import ArgumentError, TensorInfo

SWIZZLE_SPAN_BYTES = {"none": None, "32B": 32, "64B": 64, "128B": 128}

_DATA_TYPES = {
    "f16": cu.CUtensorMapDataType.CU_TENSOR_MAP_DATA_TYPE_FLOAT16,
    "bf16": cu.CUtensorMapDataType.CU_TENSOR_MAP_DATA_TYPE_BFLOAT16,
    E4M3: cu.CUtensorMapDataType.CU_TENSOR_MAP_DATA_TYPE_UINT8,
    "f32": cu.CUtensorMapDataType.CU_TENSOR_MAP_DATA_TYPE_FLOAT32,
}
_SWIZZLES = {
    "none": cu.CUtensorMapSwizzle.CU_TENSOR_MAP_SWIZZLE_NONE,
    "32B": cu.CUtensorMapSwizzle.CU_TENSOR_MAP_SWIZZLE_32B,
    "64B": cu.CUtensorMapSwizzle.CU_TENSOR_MAP_SWIZZLE_64B,
    "128B": cu.CUtensorMapSwizzle.CU_TENSOR_MAP_SWIZZLE_128B,
}
_L2_PROMOTIONS = {
    "none": cu.CUtensorMapL2promotion.CU_TENSOR_MAP_L2_PROMOTION_NONE,
    "64B": cu.CUtensorMapL2promotion.CU_TENSOR_MAP_L2_PROMOTION_L2_64B,
    "128B": cu.CUtensorMapL2promotion.CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
    "256B": cu.CUtensorMapL2promotion.CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
}


class TensorMapError(ArgumentError):
    """A tensor cannot be described by the requested TMA descriptor."""


@dataclass(frozen=True)
class TensorMapPlan:
    """The validated arguments of cuTensorMapEncodeTiled; arrays innermost first."""

    name: str
    tensor: str
    dtype: str
    global_address: int
    global_dims: tuple[int, ...]
    global_strides: tuple[int, ...]  # bytes, dims 1..rank-1
    box_dims: tuple[int, ...]
    element_strides: tuple[int, ...]
    swizzle: str
    l2_promotion: str


@dataclass(frozen=True)
class TensorMap:
    """An encoded descriptor: `raw` is what the kernel parameter receives."""

    plan: TensorMapPlan
    raw: bytes


def plan_tensor_map(spec: TensorMapSpec, info: TensorInfo) -> TensorMapPlan:
    """Validate the TMA rules for `spec` over the tensor `info`."""

    def fail(message: str) -> TensorMapError:
        return TensorMapError(f"tensor map '{spec.name}' (tensor '{spec.tensor}'): {message}")

    rank = len(info.shape)
    element_size = DTYPE_SIZES.get(info.dtype)
    if element_size is None:
        raise fail(
            f"dtype {info.dtype} has no TMA data type; expected one of {', '.join(_DATA_TYPES)}"
        )
    if not 1 <= rank <= MAX_TMA_RANK:
        raise fail(f"rank {rank} is outside 1..{MAX_TMA_RANK}")
    if len(spec.box) != rank:
        raise fail(f"box {list(spec.box)} has {len(spec.box)} dims, the tensor has {rank}")
    if info.ptr % TMA_ALIGN:
        raise fail(f"base address {info.ptr:#x} is not {TMA_ALIGN}-byte aligned")
    if info.strides[-1] != 1:
        raise fail(f"innermost stride is {info.strides[-1]} elements; TMA needs it contiguous (1)")
    for dim, extent in enumerate(info.shape):
        if not 1 <= extent <= MAX_TMA_GLOBAL_DIM:
            raise fail(f"dim {dim} has extent {extent}, outside 1..2^32")
    for dim, stride in enumerate(info.strides[:-1]):
        stride_bytes = stride * element_size
        if stride_bytes % TMA_ALIGN or not 0 < stride_bytes < MAX_TMA_GLOBAL_STRIDE:
            raise fail(
                f"stride of dim {dim} is {stride_bytes} bytes; TMA needs a positive multiple of "
                f"{TMA_ALIGN} below 2^40 (pad the rows)"
            )
    for dim, extent in enumerate(spec.box):
        if not 1 <= extent <= MAX_TMA_BOX:
            raise fail(f"box dim {dim} is {extent}, outside 1..{MAX_TMA_BOX}")
    inner_bytes = spec.box[-1] * element_size
    if inner_bytes % TMA_ALIGN:
        raise fail(f"box inner extent is {inner_bytes} bytes; it must be a multiple of {TMA_ALIGN}")
    span = SWIZZLE_SPAN_BYTES[spec.swizzle]
    if span is not None and inner_bytes > span:
        raise fail(
            f"box inner extent is {inner_bytes} bytes, more than the {span}-byte span of {spec.swizzle} swizzle"
        )
    return TensorMapPlan(
        name=spec.name,
        tensor=spec.tensor,
        dtype=info.dtype,
        global_address=info.ptr,
        global_dims=tuple(reversed(info.shape)),
        global_strides=tuple(s * element_size for s in reversed(info.strides[:-1])),
        box_dims=tuple(reversed(spec.box)),
        element_strides=(1,) * rank,
        swizzle=spec.swizzle,
        l2_promotion=_l2_promotion(spec.l2_promotion, info.strides[:-1], element_size),
    )


#: Row strides that are a multiple of this many bytes get 256-byte L2
#: promotion from "auto"; others 128-byte. On the H200 (results/
#: h200-l2-promotion.txt) 256-byte promotion of rows 16400 bytes apart (K =
#: 8200) cost 17-20 % of a matmul's speed against 128-byte promotion, while
#: at 16384-byte rows the two were level.
AUTO_L2_256B_ALIGNMENT = 256


def _l2_promotion(requested: str, strides: Sequence[int], element_size: int) -> str:
    """The L2 promotion to encode: `requested`, with "auto" resolved."""
    if requested != "auto":
        return requested
    aligned = all(s * element_size % AUTO_L2_256B_ALIGNMENT == 0 for s in strides)
    return "256B" if aligned else "128B"


#: Descriptors a TensorMapEncoder keeps, by base address: a caller cycling
#: through buffers (a model's activations, double-buffered outputs) gets each
#: map by a 128-byte copy instead of the driver's encode, several
#: microseconds of host time per map. A cycle longer than this misses on
#: every call, so it is generous: 8 KB per map of a bound launch.
RECENT_TENSOR_MAPS = 64


class TensorMapEncoder:
    """Encodes one plan's descriptor again for another base address, straight
    into `destination` (a 64-byte aligned, 128-byte buffer, e.g. a kernel
    parameter slot): every other argument is converted once, here, and the
    descriptors of the last RECENT_TENSOR_MAPS addresses are kept."""

    def __init__(self, plan: TensorMapPlan, destination: int):
        self.plan = plan
        self.destination = destination
        self._recent: OrderedDict[int, bytes] = OrderedDict()
        rank = len(plan.global_dims)
        self._calls = HotCalls.get()
        self._arrays = (
            (ctypes.c_uint64 * rank)(*plan.global_dims),
            (ctypes.c_uint64 * max(rank - 1, 1))(*plan.global_strides),
            (ctypes.c_uint32 * rank)(*plan.box_dims),
            (ctypes.c_uint32 * rank)(*plan.element_strides),
        )
        self._head = (int(_DATA_TYPES[plan.dtype]), rank)
        self._tail = (
            int(cu.CUtensorMapInterleave.CU_TENSOR_MAP_INTERLEAVE_NONE),
            int(_SWIZZLES[plan.swizzle]),
            int(_L2_PROMOTIONS[plan.l2_promotion]),
            int(cu.CUtensorMapFloatOOBfill.CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE),
        )

    def encode(self, address: int) -> None:
        """The descriptor of the plan's tensor at `address` (16-byte aligned)."""
        recent = self._recent.get(address)
        if recent is not None:
            ctypes.memmove(self.destination, recent, TENSOR_MAP_BYTES)
            self._recent.move_to_end(address)
            return
        if address % TMA_ALIGN:
            raise TensorMapError(
                f"tensor map '{self.plan.name}' (tensor '{self.plan.tensor}'): "
                f"base address {address:#x} is not {TMA_ALIGN}-byte aligned"
            )
        dims, strides, box, element_strides = self._arrays
        check_result(
            "cuTensorMapEncodeTiled",
            self._calls.encode(
                self.destination,
                *self._head,
                address,
                dims,
                strides,
                box,
                element_strides,
                *self._tail,
            ),
        )
        self._recent[address] = ctypes.string_at(self.destination, TENSOR_MAP_BYTES)
        if len(self._recent) > RECENT_TENSOR_MAPS:
            self._recent.popitem(last=False)


def encode_tensor_map(plan: TensorMapPlan) -> TensorMap:
    """Encode `plan` with the driver (needs an initialised CUDA driver)."""
    descriptor = call(
        "cuTensorMapEncodeTiled",
        _DATA_TYPES[plan.dtype],
        len(plan.global_dims),
        plan.global_address,
        # The binding accepts only its own integer wrappers in these arrays.
        [cu.cuuint64_t(d) for d in plan.global_dims],
        [cu.cuuint64_t(s) for s in plan.global_strides],
        [cu.cuuint32_t(b) for b in plan.box_dims],
        [cu.cuuint32_t(e) for e in plan.element_strides],
        cu.CUtensorMapInterleave.CU_TENSOR_MAP_INTERLEAVE_NONE,
        _SWIZZLES[plan.swizzle],
        _L2_PROMOTIONS[plan.l2_promotion],
        cu.CUtensorMapFloatOOBfill.CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE,
    )
    return TensorMap(plan=plan, raw=ctypes.string_at(descriptor.getPtr(), TENSOR_MAP_BYTES))
