"""Describing the tensors a caller passes to a kernel, and checking them.

A kernel reads raw device addresses, so a tensor of the wrong dtype, shape,
layout or device does not fail: it silently computes garbage or faults. This
module turns each accepted tensor kind into one plain `TensorInfo` (device
pointer, shape, strides in elements, dtype name, device) and checks it
against the artifact's `TensorSpec`, raising errors that name the argument.

Accepted kinds, tried in this order:
  * torch tensors (recognised by duck typing; torch is never imported here),
  * this runtime's own `DeviceArray`,
  * objects with `__cuda_array_interface__` (CuPy, Numba, ...),
  * DLPack producers (`__dlpack__` / `__dlpack_device__`).
Describing needs no GPU, so every check is testable on a CPU-only machine.
"""

from __future__ import annotations

import ctypes
import math
from dataclasses import dataclass

from wsc.target.hopper import E4M3

from .artifact import TensorSpec, WscRuntimeError
from .driver import DeviceArray

# Base addresses must allow 16-byte vector and TMA accesses.
BASE_ALIGNMENT = 16


class ArgumentError(WscRuntimeError, ValueError):
    """A kernel argument has the wrong shape, layout, device or alignment."""


class ArgumentTypeError(WscRuntimeError, TypeError):
    """A kernel argument is of an unsupported kind or has the wrong dtype."""


@dataclass(frozen=True)
class TensorInfo:
    """What a launch needs to know about one tensor argument."""

    ptr: int
    shape: tuple[int, ...]
    strides: tuple[int, ...]  # in elements, outermost first
    # One of DTYPE_SIZES' names when supported, otherwise a descriptive name
    # (e.g. "f64", "torch.int32") used only in error messages.
    dtype: str
    # "cuda", "cuda_managed", "cpu", "cuda_host", ...; "cuda" when the
    # interface implies device memory without naming it.
    device_type: str
    device: int | None  # ordinal; None when the interface does not say
    readonly: bool = False

    @property
    def numel(self) -> int:
        return math.prod(self.shape)


_TORCH_DTYPES = {
    "torch.float16": "f16",
    "torch.bfloat16": "bf16",
    "torch.float8_e4m3fn": E4M3,
    "torch.float32": "f32",
    "torch.int32": "i32",
}
_CUDA_DEVICE_TYPES = ("cuda", "cuda_managed")


def describe(obj, name: str, stream: int | None = None) -> TensorInfo:
    """Describe a tensor argument; `name` is used in errors.

    `stream` is the raw CUstream handle the kernel will run on (0 for the
    legacy default stream); DLPack producers use it to order their pending
    work before ours.
    """
    if _is_torch_tensor(obj):
        return _describe_torch(obj)
    if isinstance(obj, DeviceArray):
        return TensorInfo(
            ptr=obj.ptr,
            shape=obj.shape,
            strides=_contiguous_strides(obj.shape),
            dtype=obj.dtype,
            device_type="cuda",
            device=obj.device,
        )
    if hasattr(obj, "__cuda_array_interface__"):
        return _describe_cuda_array_interface(obj.__cuda_array_interface__, name)
    if hasattr(obj, "__dlpack__") and hasattr(obj, "__dlpack_device__"):
        return _describe_dlpack(obj, name, stream)
    raise ArgumentTypeError(
        f"argument '{name}': expected a CUDA tensor (torch tensor, DeviceArray, "
        f"__cuda_array_interface__ or DLPack object), got {type(obj).__name__}"
    )


def check(
    info: TensorInfo,
    spec: TensorSpec,
    name: str,
    *,
    device: int | None = None,
    strided_rows: bool = False,
) -> None:
    """Raise unless `info` satisfies `spec`.

    `device` is the ordinal the kernel runs on, when known. `strided_rows`
    permits a padded row stride (rank >= 2, stride of dim -2 >= shape[-1]);
    the caller allows it only when every way the kernel reaches the tensor
    understands strides (tensor maps, or a pointer with an "ld" parameter).
    """
    if info.device_type not in _CUDA_DEVICE_TYPES:
        raise ArgumentError(
            f"argument '{name}': expected a CUDA device tensor, got one on {info.device_type}"
        )
    if device is not None and info.device is not None and info.device != device:
        raise ArgumentError(
            f"argument '{name}': expected a tensor on cuda:{device}, got one on cuda:{info.device}"
        )
    if info.dtype != spec.dtype:
        raise ArgumentTypeError(f"argument '{name}': expected dtype {spec.dtype}, got {info.dtype}")
    if info.shape != spec.shape:
        raise ArgumentError(
            f"argument '{name}': expected shape {list(spec.shape)}, got {list(info.shape)}"
        )
    _check_strides(info, name, strided_rows)
    if info.numel and info.ptr == 0:
        raise ArgumentError(f"argument '{name}': null data pointer")
    if info.ptr % BASE_ALIGNMENT:
        raise ArgumentError(
            f"argument '{name}': base address {info.ptr:#x} is not {BASE_ALIGNMENT}-byte aligned"
        )
    if info.readonly and spec.role != "input":
        raise ArgumentError(
            f"argument '{name}': is {'a' if spec.role == 'workspace' else 'an'} {spec.role} "
            f"of the kernel but its memory is read-only"
        )


def _check_strides(info: TensorInfo, name: str, strided_rows: bool) -> None:
    shape, strides = info.shape, info.strides
    expected = list(_contiguous_strides(shape))
    padded = strided_rows and len(shape) >= 2 and strides[-2] >= shape[-1]
    if padded:
        # Dims outside the last two stay dense relative to the padded rows.
        expected[-2] = strides[-2]
        for dim in range(len(shape) - 3, -1, -1):
            expected[dim] = expected[dim + 1] * shape[dim + 1]
    # A dimension of extent 1 is never stepped over, so its stride is free.
    if all(s == e or n == 1 for s, e, n in zip(strides, expected, shape, strict=True)):
        return
    wanted = (
        "row-major strides (padded rows allowed)"
        if strided_rows
        else "row-major contiguous strides"
    )
    raise ArgumentError(
        f"argument '{name}': expected {wanted} {list(_contiguous_strides(shape))} (in elements), got {list(strides)}"
    )


def _contiguous_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    strides = [1] * len(shape)
    for dim in range(len(shape) - 2, -1, -1):
        strides[dim] = strides[dim + 1] * shape[dim + 1]
    return tuple(strides)


def _is_torch_tensor(obj) -> bool:
    module = type(obj).__module__ or ""
    return (module == "torch" or module.startswith("torch.")) and hasattr(obj, "data_ptr")


def _describe_torch(tensor) -> TensorInfo:
    dtype_name = str(tensor.dtype)
    device = tensor.device
    return TensorInfo(
        ptr=tensor.data_ptr(),
        shape=tuple(tensor.shape),
        strides=tuple(tensor.stride()),
        dtype=_TORCH_DTYPES.get(dtype_name, dtype_name),
        device_type=device.type,
        device=device.index,
    )


def _typestr_dtype(typestr: str) -> str:
    """Map an array-interface typestr like '<f2' to a dtype name."""
    order, kind, size = typestr[0], typestr[1], typestr[2:]
    names = {"f": "f", "i": "i", "u": "u", "b": "bool", "c": "c"}
    if kind not in names or not size.isdigit():
        return f"typestr {typestr!r}"
    name = "bool" if kind == "b" else f"{names[kind]}{int(size) * 8}"
    # '|' means byte order does not apply (1-byte types).
    return f"big-endian {name}" if order == ">" else name


def _describe_cuda_array_interface(cai: dict, name: str) -> TensorInfo:
    try:
        shape = tuple(int(d) for d in cai["shape"])
        typestr = cai["typestr"]
        ptr, readonly = cai["data"]
    except (KeyError, TypeError, ValueError) as exc:
        raise ArgumentTypeError(
            f"argument '{name}': malformed __cuda_array_interface__: {exc!r}"
        ) from exc
    if cai.get("mask") is not None:
        raise ArgumentTypeError(f"argument '{name}': masked arrays are not supported")
    itemsize = int(typestr[2:]) if typestr[2:].isdigit() else 1
    byte_strides = cai.get("strides")
    if byte_strides is None:
        strides = _contiguous_strides(shape)
    else:
        if any(s % itemsize for s in byte_strides):
            raise ArgumentError(
                f"argument '{name}': byte strides {list(byte_strides)} are not multiples of the {itemsize}-byte element"
            )
        strides = tuple(s // itemsize for s in byte_strides)
    return TensorInfo(
        ptr=int(ptr or 0),
        shape=shape,
        strides=strides,
        dtype=_typestr_dtype(typestr),
        device_type="cuda",
        device=None,
        readonly=bool(readonly),
    )


# DLPack ABI (dlpack.h): enough of it to read a tensor's description.
class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("device", _DLDevice),
        ("ndim", ctypes.c_int32),
        ("dtype", _DLDataType),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("byte_offset", ctypes.c_uint64),
    ]


_DL_DEVICE_TYPES = {1: "cpu", 2: "cuda", 3: "cuda_host", 13: "cuda_managed"}
_DL_CODES = {0: "i", 1: "u", 2: "f", 4: "bf", 6: "bool"}
_DL_CUDA_LEGACY_DEFAULT_STREAM = 1
# In a "dltensor_versioned" capsule the DLTensor follows the version (8 B),
# manager_ctx, deleter and flags (8 B each); in a legacy one it comes first.
_DL_VERSIONED_TENSOR_OFFSET = 32
_DL_FLAG_READ_ONLY = 1

_capsule_get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_capsule_get_pointer.restype = ctypes.c_void_p
_capsule_get_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
_capsule_get_name = ctypes.pythonapi.PyCapsule_GetName
_capsule_get_name.restype = ctypes.c_char_p
_capsule_get_name.argtypes = [ctypes.py_object]


def _describe_dlpack(obj, name: str, stream: int | None) -> TensorInfo:
    device_type, _ = obj.__dlpack_device__()
    device_type = int(device_type)
    if _DL_DEVICE_TYPES.get(device_type) in _CUDA_DEVICE_TYPES:
        # The DLPack protocol reserves 0; 1 means the legacy default stream.
        dl_stream = _DL_CUDA_LEGACY_DEFAULT_STREAM if not stream else stream
        capsule = obj.__dlpack__(stream=dl_stream)
    else:
        capsule = obj.__dlpack__()
    # The capsule is read, never consumed: when it is collected its
    # destructor releases the producer's reference, as the protocol intends.
    capsule_name = _capsule_get_name(capsule)
    if capsule_name == b"dltensor":
        managed = _capsule_get_pointer(capsule, capsule_name)
        tensor = _DLTensor.from_address(managed)
        readonly = False
    elif capsule_name == b"dltensor_versioned":
        managed = _capsule_get_pointer(capsule, capsule_name)
        tensor = _DLTensor.from_address(managed + _DL_VERSIONED_TENSOR_OFFSET)
        flags = ctypes.c_uint64.from_address(managed + _DL_VERSIONED_TENSOR_OFFSET - 8).value
        readonly = bool(flags & _DL_FLAG_READ_ONLY)
    else:
        raise ArgumentTypeError(
            f"argument '{name}': __dlpack__ returned a capsule named {capsule_name!r}"
        )
    ndim = tensor.ndim
    shape = tuple(tensor.shape[i] for i in range(ndim))
    strides = (
        tuple(tensor.strides[i] for i in range(ndim))
        if tensor.strides
        else _contiguous_strides(shape)
    )
    dl_dtype = tensor.dtype
    code = _DL_CODES.get(dl_dtype.code, f"code{dl_dtype.code}_")
    dtype = code if code == "bool" else f"{code}{dl_dtype.bits}"
    if dl_dtype.lanes != 1:
        dtype += f"x{dl_dtype.lanes}"
    return TensorInfo(
        ptr=(tensor.data or 0) + tensor.byte_offset,
        shape=shape,
        strides=strides,
        dtype=dtype,
        device_type=_DL_DEVICE_TYPES.get(
            tensor.device.device_type, f"dlpack device type {tensor.device.device_type}"
        ),
        device=tensor.device.device_id,
        readonly=readonly,
    )
