"""A thin, checked wrapper over the CUDA driver API (cuda-bindings).

cuda-bindings returns every result as a tuple headed by a CUresult that is
easy to ignore; here every call goes through `call()`, which turns a failure
into a `CudaError` naming the call and the driver's error. On top of that sit
the few things the runtime needs: one primary context per device, module
loading (cubin, or PTX through the driver's JIT with its error log),
device memory for callers without torch, events, kernel-parameter packing,
the launch itself, and a synchronize that gives up after a timeout, so that
a hung kernel becomes a Python exception instead of a hung process.

Importing this module does not touch the GPU; the driver is initialised on
first use.
"""

from __future__ import annotations

import contextlib
import ctypes
import math
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from cuda.bindings import driver as cu

from wsc.target.hopper import E4M3, TENSOR_MAP_ALIGN, TENSOR_MAP_BYTES

from .artifact import DTYPE_SIZES, WscRuntimeError

# Kernel parameters of kind "tensor_map": a CUtensorMap passed by value,
# declared in PTX as `.param .align 64 .b8 name[128]`.
PARAM_SIZES = {"tensor_map": TENSOR_MAP_BYTES, "pointer": 8, "i32": 4, "f32": 4}

# numpy dtypes holding each dtype's host copy; bf16 and fp8 have none in
# numpy, so their host copies are the raw bit patterns.
HOST_DTYPES = {
    "f16": np.float16,
    "bf16": np.uint16,
    E4M3: np.uint8,
    "f32": np.float32,
    "i32": np.int32,
}
_MEMSETS = {1: "cuMemsetD8Async", 2: "cuMemsetD16Async", 4: "cuMemsetD32Async"}

_JIT_LOG_BYTES = 16 * 1024


class CudaError(WscRuntimeError, RuntimeError):
    """A CUDA driver call failed."""

    def __init__(self, call: str, result, detail: str = ""):
        self.call = call
        self.result = result
        super().__init__(f"{call} failed: {error_text(result)}{detail}")


class CudaUnavailableError(WscRuntimeError, RuntimeError):
    """No usable CUDA driver or device on this machine."""


class LaunchTimeout(WscRuntimeError, RuntimeError):
    """A launched kernel did not finish in time.

    The kernel is presumably hung and still occupies the GPU: the CUDA
    context cannot be used any more and the process should exit.
    """


class KernelFault(CudaError):
    """A launched kernel ended with an error: it executed `trap` (as a kernel
    compiled with a wait spin limit does when a wait gives up, after printing
    which wait it was), or faulted (illegal address or instruction, ...).

    The error is sticky: the CUDA context cannot be used any more and the
    process should exit.
    """


def error_text(result) -> str:
    """'CUDA_ERROR_X: description' for a CUresult."""
    name_err, name = cu.cuGetErrorName(result)
    text_err, text = cu.cuGetErrorString(result)
    if name_err != cu.CUresult.CUDA_SUCCESS or text_err != cu.CUresult.CUDA_SUCCESS:
        return repr(result)
    return f"{name.decode()}: {text.decode()}"


def call(name: str, *args):
    """Call `cuda.bindings.driver.<name>(*args)`, raising CudaError on failure.

    Returns the call's outputs after the CUresult: None, a single value,
    or a tuple.
    """
    result = getattr(cu, name)(*args)
    err, outputs = result[0], result[1:]
    if err != cu.CUresult.CUDA_SUCCESS:
        raise CudaError(name, err)
    if not outputs:
        return None
    return outputs[0] if len(outputs) == 1 else outputs


_init_lock = threading.Lock()
_initialized = False
_devices: dict[int, Device] = {}


def init() -> None:
    """Initialise the driver once per process."""
    global _initialized
    with _init_lock:
        if _initialized:
            return
        try:
            result = cu.cuInit(0)
        except Exception as exc:  # cuda-bindings raises its own types when libcuda is absent
            raise CudaUnavailableError(f"CUDA driver library not available: {exc}") from exc
        if result[0] != cu.CUresult.CUDA_SUCCESS:
            raise CudaUnavailableError(f"cuInit failed: {error_text(result[0])}")
        _initialized = True


def get_device(ordinal: int = 0) -> Device:
    """The `Device` for `ordinal`, created (and its context retained) once."""
    init()
    with _init_lock:
        if ordinal not in _devices:
            count = call("cuDeviceGetCount")
            if not 0 <= ordinal < count:
                raise CudaUnavailableError(
                    f"device ordinal {ordinal} out of range: {count} CUDA device(s) present"
                )
            _devices[ordinal] = Device(ordinal)
        return _devices[ordinal]


class Device:
    """One GPU and its primary context (shared with the CUDA runtime, torch).

    The primary context is retained for the life of the process: releasing
    it could destroy memory and modules another library still uses.
    """

    def __init__(self, ordinal: int):
        self.ordinal = ordinal
        self.handle = call("cuDeviceGet", ordinal)
        self.context = call("cuDevicePrimaryCtxRetain", self.handle)
        self.name = call("cuDeviceGetName", 256, self.handle).split(b"\0")[0].decode()
        self.compute_capability = (
            self.attribute(cu.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR),
            self.attribute(cu.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR),
        )

    @contextlib.contextmanager
    def current(self) -> Iterator[None]:
        """This device's context current on the calling thread for the block,
        then the thread's previous one again: the CUDA runtime (torch) takes
        its current device from the current context, which a call on another
        GPU must not move."""
        call("cuCtxPushCurrent", self.context)
        try:
            yield
        finally:
            call("cuCtxPopCurrent")

    def attribute(self, attribute) -> int:
        return call("cuDeviceGetAttribute", attribute, self.handle)

    @property
    def max_dynamic_smem_bytes(self) -> int:
        """Largest dynamic shared memory a block may opt in to."""
        return self.attribute(
            cu.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN
        )

    @property
    def sm_count(self) -> int:
        """Streaming multiprocessors: how many blocks of one per SM run at once."""
        return self.attribute(cu.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)

    def pointer_device(self, ptr: int) -> int | None:
        """Ordinal of the device owning `ptr`, or None if the driver does not know it."""
        with self.current():
            result = cu.cuPointerGetAttribute(
                cu.CUpointer_attribute.CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, ptr
            )
        return int(result[1]) if result[0] == cu.CUresult.CUDA_SUCCESS else None


class Function:
    """A kernel entry point inside a loaded module."""

    def __init__(self, module: Module, name: str):
        self.module = module
        self.name = name
        self.handle = call("cuModuleGetFunction", module.handle, name.encode())

    def set_max_dynamic_smem(self, nbytes: int) -> None:
        call(
            "cuFuncSetAttribute",
            self.handle,
            cu.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
            nbytes,
        )

    def param_sizes(self) -> list[int]:
        """Byte size of each kernel parameter, from the image's metadata."""
        sizes: list[int] = []
        while True:
            result = cu.cuFuncGetParamInfo(self.handle, len(sizes))
            # The driver reports an index past the last parameter as invalid.
            if result[0] == cu.CUresult.CUDA_ERROR_INVALID_VALUE:
                return sizes
            if result[0] != cu.CUresult.CUDA_SUCCESS:
                raise CudaError("cuFuncGetParamInfo", result[0])
            sizes.append(int(result[2]))


class Module:
    """A loaded cubin or PTX image."""

    def __init__(self, device: Device, image: bytes, kind: str):
        self.device = device
        self.kind = kind
        with device.current():
            self.handle = self._load(image, kind)

    @staticmethod
    def _load(image: bytes, kind: str):
        if kind == "cubin":
            return call("cuModuleLoadData", image)
        # The JIT explains a rejected PTX only through its log buffer. The
        # binding hands the driver the bytes object's own storage, so the
        # buffer must be a fresh object the driver can write into.
        log = bytes(_JIT_LOG_BYTES)
        options = [
            cu.CUjit_option.CU_JIT_ERROR_LOG_BUFFER,
            cu.CUjit_option.CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
        ]
        result = cu.cuModuleLoadDataEx(image, len(options), options, [log, _JIT_LOG_BYTES])
        if result[0] != cu.CUresult.CUDA_SUCCESS:
            detail = log.split(b"\0")[0].decode(errors="replace").strip()
            raise CudaError(
                "cuModuleLoadDataEx (PTX JIT)", result[0], f"\n{detail}" if detail else ""
            )
        return result[1]

    def function(self, name: str) -> Function:
        return Function(self, name)


class DeviceArray:
    """An owning, C-contiguous device allocation with a shape and a dtype.

    It lets callers without torch pass tensors to kernels. The memory is
    freed by `free()` or when the object is collected.
    """

    def __init__(self, shape: Sequence[int], dtype: str, device: int = 0):
        if dtype not in DTYPE_SIZES:
            raise ValueError(
                f"DeviceArray: dtype must be one of {', '.join(DTYPE_SIZES)}, got {dtype!r}"
            )
        self.shape = tuple(int(d) for d in shape)
        self.dtype = dtype
        self.device = device
        self.nbytes = math.prod(self.shape) * DTYPE_SIZES[dtype]
        self._device = get_device(device)
        # cuMemAlloc rejects 0 bytes; a 1-byte block keeps the pointer valid.
        with self._device.current():
            self._ptr = call("cuMemAlloc", max(self.nbytes, 1))

    @classmethod
    def from_host(cls, array: np.ndarray, dtype: str, device: int = 0) -> DeviceArray:
        out = cls(array.shape, dtype, device)
        out.copy_from_host(array)
        return out

    @property
    def ptr(self) -> int:
        if self._ptr is None:
            raise ValueError("DeviceArray: used after free()")
        return int(self._ptr)

    def _check_host(self, array: np.ndarray, what: str) -> None:
        host_dtype = HOST_DTYPES[self.dtype]
        if array.dtype != host_dtype or array.shape != self.shape or not array.flags.c_contiguous:
            raise ValueError(
                f"DeviceArray.{what}: expected a C-contiguous {np.dtype(host_dtype).name} array of shape "
                f"{list(self.shape)}, got {array.dtype.name} {list(array.shape)}"
            )

    def copy_from_host(self, array: np.ndarray) -> None:
        self._check_host(array, "copy_from_host")
        with self._device.current():
            call("cuMemcpyHtoD", self.ptr, array, self.nbytes)

    def to_host(self) -> np.ndarray:
        """A host copy; bf16 arrives as its uint16 bit patterns."""
        out = np.empty(self.shape, dtype=HOST_DTYPES[self.dtype])
        with self._device.current():
            call("cuMemcpyDtoH", out, self.ptr, self.nbytes)
        return out

    def fill_bits(self, pattern: int, stream=None) -> None:
        """Set every element to the raw bit `pattern` (e.g. a NaN), asynchronously."""
        count = math.prod(self.shape)
        handle = cu.CUstream(stream_handle(stream))
        with self._device.current():
            call(_MEMSETS[DTYPE_SIZES[self.dtype]], self.ptr, pattern, count, handle)

    def free(self) -> None:
        if self._ptr is not None:
            ptr, self._ptr = self._ptr, None
            with self._device.current():
                call("cuMemFree", ptr)

    def __del__(self):
        # Errors cannot propagate from a finaliser; a dead context frees all.
        try:
            self.free()
        except Exception:
            pass


def capture_id(stream) -> int | None:
    """The id of the CUDA graph capture under way on `stream` (unique in the
    process), or None when the stream is not capturing."""
    status, capture, *_ = call("cuStreamGetCaptureInfo", cu.CUstream(stream_handle(stream)))
    if status == cu.CUstreamCaptureStatus.CU_STREAM_CAPTURE_STATUS_NONE:
        return None
    return int(capture)


def stream_handle(stream) -> int:
    """Raw CUstream handle of `stream` (0 = legacy default stream).

    Accepts None, an int handle, a `cuda.bindings` CUstream, an object with
    the `__cuda_stream__` protocol, or a torch.cuda.Stream.
    """
    if stream is None:
        return 0
    if isinstance(stream, bool):
        raise TypeError(f"stream: expected a CUDA stream or handle, got {stream!r}")
    if isinstance(stream, int):
        return stream
    if isinstance(stream, cu.CUstream):
        return int(stream)
    if hasattr(stream, "__cuda_stream__"):
        return int(stream.__cuda_stream__()[1])
    if hasattr(stream, "cuda_stream"):
        return int(stream.cuda_stream)
    raise TypeError(f"stream: expected a CUDA stream or handle, got {type(stream).__name__}")


class Stream:
    """A CUDA stream of its own in the calling thread's current context; it
    does not wait for the legacy default stream (a graph cannot be captured
    from that one)."""

    def __init__(self):
        self.handle = call("cuStreamCreate", cu.CUstream_flags.CU_STREAM_NON_BLOCKING)

    def __cuda_stream__(self) -> tuple[int, int]:
        return (0, int(self.handle))

    def __del__(self):
        try:
            cu.cuStreamDestroy(self.handle)
        except Exception:
            pass


class Graph:
    """The work `enqueue()` puts on `stream`, captured once as a CUDA graph and
    replayed as one launch: back-to-back kernels without the host between them."""

    def __init__(self, stream, enqueue: Callable[[], None]):
        handle = cu.CUstream(stream_handle(stream))
        mode = cu.CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_THREAD_LOCAL
        call("cuStreamBeginCapture", handle, mode)
        try:
            enqueue()
        finally:
            self.graph = call("cuStreamEndCapture", handle)
        self.executable = call("cuGraphInstantiate", self.graph, 0)

    def launch(self, stream) -> None:
        call("cuGraphLaunch", self.executable, cu.CUstream(stream_handle(stream)))

    def __del__(self):
        try:
            cu.cuGraphExecDestroy(self.executable)
            cu.cuGraphDestroy(self.graph)
        except Exception:
            pass


class Event:
    """A CUDA event with timing enabled, in the calling thread's current
    context (`Device.current()`)."""

    def __init__(self):
        self.handle = call("cuEventCreate", cu.CUevent_flags.CU_EVENT_DEFAULT)

    def record(self, stream=None) -> None:
        call("cuEventRecord", self.handle, cu.CUstream(stream_handle(stream)))

    def elapsed_ms(self, end: Event) -> float:
        """Milliseconds from this event to `end`; both must have completed."""
        return float(call("cuEventElapsedTime", self.handle, end.handle))

    def __del__(self):
        try:
            cu.cuEventDestroy(self.handle)
        except Exception:
            pass


def synchronize(stream=None, timeout_s: float = 60.0) -> None:
    """Wait until `stream` (None: the current context's default stream) is
    idle; raise LaunchTimeout after `timeout_s`.

    Polling instead of cuStreamSynchronize is what makes a hung kernel
    observable: the blocking call would never return.
    """
    if not timeout_s > 0:
        raise ValueError(f"timeout_s: expected a positive number of seconds, got {timeout_s!r}")
    handle = cu.CUstream(stream_handle(stream))
    deadline = time.monotonic() + timeout_s
    delay = 1e-5
    while True:
        (result,) = cu.cuStreamQuery(handle)
        if result == cu.CUresult.CUDA_SUCCESS:
            return
        if result != cu.CUresult.CUDA_ERROR_NOT_READY:
            raise KernelFault(
                "cuStreamQuery",
                result,
                " (an asynchronous error, usually from the kernel: a trap, e.g. a wait that gave up "
                "in a wait-spin-limit build after printing which one, or a fault; the context is "
                "unusable)",
            )
        if time.monotonic() >= deadline:
            raise LaunchTimeout(
                f"kernel did not finish within {timeout_s:g} s; it is presumably hung. The CUDA context "
                "cannot be used any more: exit the process (os._exit skips cleanup that would block)."
            )
        time.sleep(delay)
        delay = min(delay * 2, 5e-3)


@dataclass(frozen=True)
class ParamSlot:
    kind: str
    address: int
    size: int


class PackedParams:
    """Storage for each kernel parameter plus the `void**` array pointing at it.

    `cuLaunchKernel` copies each parameter from the address in the array,
    taking sizes from the kernel image, so each slot holds exactly the
    parameter's bytes: a tensor map's 128 bytes (64-byte aligned, as the
    descriptor requires), a pointer as u64, an i32 as i32, an f32 as f32. The ctypes
    buffers live as long as this object.
    """

    def __init__(self, params: Sequence[tuple[str, str, Any]]):
        """`params`: (kind, name, value) in kernel order; a tensor map's value is its 128 raw bytes."""
        self._buffers: list[object] = []
        slots = []
        for kind, name, value in params:
            if kind == "tensor_map":
                raw = bytes(value)
                if len(raw) != TENSOR_MAP_BYTES:
                    raise ValueError(
                        f"param '{name}': tensor map must be {TENSOR_MAP_BYTES} bytes, got {len(raw)}"
                    )
                # ctypes guarantees no 64-byte alignment, so over-allocate and align.
                bytes_buffer = (ctypes.c_ubyte * (TENSOR_MAP_BYTES + TENSOR_MAP_ALIGN))()
                base = ctypes.addressof(bytes_buffer)
                address = base + (-base) % TENSOR_MAP_ALIGN
                ctypes.memmove(address, raw, TENSOR_MAP_BYTES)
                self._buffers.append(bytes_buffer)
            elif kind == "pointer":
                _check_int_range(name, value, 0, 2**64 - 1, "u64 pointer")
                pointer_buffer = ctypes.c_uint64(value)
                address = ctypes.addressof(pointer_buffer)
                self._buffers.append(pointer_buffer)
            elif kind == "i32":
                _check_int_range(name, value, -(2**31), 2**31 - 1, "i32")
                i32_buffer = ctypes.c_int32(value)
                address = ctypes.addressof(i32_buffer)
                self._buffers.append(i32_buffer)
            elif kind == "f32":
                if isinstance(value, bool) or not isinstance(value, (int, float)):
                    raise TypeError(f"param '{name}': an f32 is a number, got {value!r}")
                f32_buffer = ctypes.c_float(value)
                address = ctypes.addressof(f32_buffer)
                self._buffers.append(f32_buffer)
            else:
                raise ValueError(
                    f"param '{name}': unknown kind {kind!r}; expected one of {', '.join(PARAM_SIZES)}"
                )
            slots.append(ParamSlot(kind, address, PARAM_SIZES[kind]))
        self.slots = tuple(slots)
        self._pointers = (ctypes.c_void_p * max(len(slots), 1))(*(slot.address for slot in slots))

    @property
    def address(self) -> int:
        """The `void**` to pass as kernelParams (0, i.e. NULL, for no parameters)."""
        return ctypes.addressof(self._pointers) if self.slots else 0


def _check_int_range(name: str, value, low: int, high: int, what: str) -> None:
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, np.integer))
        or not low <= value <= high
    ):
        raise ValueError(f"param '{name}': expected an integer in the {what} range, got {value!r}")


def launch(
    function: Function,
    grid: Sequence[int],
    block: Sequence[int],
    smem_bytes: int,
    params: PackedParams,
    stream=None,
) -> None:
    """Enqueue `function` on `stream`; returns before the kernel finishes."""
    with function.module.device.current():
        call(
            "cuLaunchKernel",
            function.handle,
            *grid,
            *block,
            smem_bytes,
            cu.CUstream(stream_handle(stream)),
            params.address,
            0,
        )


class HotCalls:
    """The driver calls of a launch on the hot path, cuTensorMapEncodeTiled,
    cuCtxGetCurrent, cuCtxSetCurrent and cuLaunchKernel, called through ctypes with their
    argument arrays built once, where cuda-bindings' wrappers convert every
    array element on every call."""

    _instance: HotCalls | None = None

    def __init__(self):
        init()
        library = ctypes.CDLL("libcuda.so.1")
        p, u32, i = ctypes.c_void_p, ctypes.c_uint32, ctypes.c_int
        self.encode = library.cuTensorMapEncodeTiled
        self.encode.restype = i
        self.encode.argtypes = [p, i, u32, p, p, p, p, p, i, i, i, i]
        self.launch = library.cuLaunchKernel
        self.launch.restype = i
        self.launch.argtypes = [p, u32, u32, u32, u32, u32, u32, u32, p, p, p]
        self.set_context = library.cuCtxSetCurrent
        self.set_context.restype = i
        self.set_context.argtypes = [p]
        self.get_context = library.cuCtxGetCurrent
        self.get_context.restype = i
        self.get_context.argtypes = [ctypes.POINTER(p)]

    @classmethod
    def get(cls) -> HotCalls:
        if cls._instance is None:
            cls._instance = HotCalls()
        return cls._instance


def check_result(name: str, code: int) -> None:
    """Raise CudaError for a non-zero CUresult returned through ctypes."""
    if code:
        raise CudaError(name, cu.CUresult(code))
