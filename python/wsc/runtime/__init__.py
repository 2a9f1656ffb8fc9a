"""wsc.runtime: load compiled wsc kernel artifacts and launch them.

This package runs where the kernels run, on GPU machines without the MLIR
Python bindings, so it imports only numpy and cuda-bindings (torch is used
by the `wsc run` CLI when it happens to be installed, never required).

    kernel = Kernel("build/matmul")                # load + bind to cuda:0
    kernel.launch(a=a, b=b, c=c)                   # check arguments, enqueue
    kernel.synchronize(timeout_s=30)               # LaunchTimeout if hung
    report = kernel.run_check(seed=0)              # self-test against its check
"""

from __future__ import annotations

import copy
import ctypes
import threading
from pathlib import Path
from typing import Any

from . import driver
from .artifact import (
    Artifact,
    ArtifactError,
    ParamSpec,
    TensorMapSpec,
    WscRuntimeError,
    load_artifact,
)
from .driver import (
    PARAM_SIZES,
    CudaError,
    CudaUnavailableError,
    DeviceArray,
    Event,
    KernelFault,
    LaunchTimeout,
    Module,
    PackedParams,
    synchronize,
)
from .tensor_map import (
    TensorMap,
    TensorMapEncoder,
    TensorMapError,
    TensorMapPlan,
    encode_tensor_map,
    plan_tensor_map,
)
from .tensors import (
    ArgumentError,
    ArgumentTypeError,
    TensorInfo,
    check,
    describe,
)

__all__ = [
    "Artifact",
    "ArtifactError",
    "BoundLaunch",
    "ArgumentError",
    "ArgumentTypeError",
    "CudaError",
    "CudaUnavailableError",
    "DeviceArray",
    "Event",
    "Kernel",
    "KernelFault",
    "KernelLoadError",
    "LaunchTimeout",
    "PreparedLaunch",
    "TensorMapError",
    "WscRuntimeError",
    "load_artifact",
    "loaded_kernel",
    "synchronize",
]


class KernelLoadError(WscRuntimeError, RuntimeError):
    """The artifact's kernel could not be loaded or does not match its artifact."""


class Kernel:
    """A loaded artifact bound to one GPU, ready to launch."""

    def __init__(self, artifact: Artifact | str | Path, device: int = 0):
        self.artifact = artifact if isinstance(artifact, Artifact) else load_artifact(artifact)
        self.device = driver.get_device(device)
        with self.device.current():
            self.function = self._load_function()
            self._check_param_sizes()
            smem = self.artifact.dynamic_smem_bytes
            if smem > self.device.max_dynamic_smem_bytes:
                raise KernelLoadError(
                    f"kernel '{self.artifact.kernel_name}' needs {smem} bytes of dynamic shared "
                    f"memory; {self.device.name} allows at most "
                    f"{self.device.max_dynamic_smem_bytes}"
                )
            if smem:
                self.function.set_max_dynamic_smem(smem)
        self.sm_count = self.device.sm_count
        # Last descriptor per map: repeated launches on the same tensors
        # (benchmarks) skip re-encoding.
        self._tensor_maps: dict[str, TensorMap] = {}

    def _load_function(self):
        failures = []
        for kind, image in self.artifact.images():
            try:
                return Module(self.device, image, kind).function(self.artifact.kernel_name)
            except CudaError as exc:
                failures.append(f"{kind}: {exc}")
        raise KernelLoadError(
            f"cannot load kernel '{self.artifact.kernel_name}' from {self.artifact.directory}:\n"
            + "\n".join(failures)
        )

    def _check_param_sizes(self) -> None:
        declared = [PARAM_SIZES[p.kind] for p in self.artifact.params]
        actual = self.function.param_sizes()
        if declared != actual:
            listing = ", ".join(f"{p.kind} {p.name}" for p in self.artifact.params)
            raise KernelLoadError(
                f"{self.artifact.json_path}: 'params' ({listing}) has byte sizes {declared}, but kernel "
                f"'{self.artifact.kernel_name}' takes parameters of sizes {actual}"
            )

    def resized(self, **sizes: int) -> Kernel:
        """This loaded kernel described for other sizes (Artifact.resized); it
        shares the loaded module."""
        clone = copy.copy(self)
        clone.artifact = self.artifact.resized(**sizes)
        clone._tensor_maps = {}
        return clone

    def prepare(self, stream=None, **tensors) -> PreparedLaunch:
        """Check the tensor arguments and pack the kernel parameters. A scalar
        argument (an f32 parameter) is given by name like a tensor, or takes
        the artifact's value."""
        artifact = self.artifact
        scalars = artifact.scalars()
        scalars.update({name: tensors.pop(name) for name in list(tensors) if name in scalars})
        expected = list(artifact.tensors)
        missing = [n for n in expected if n not in tensors]
        unexpected = [n for n in tensors if n not in artifact.tensors]
        if missing or unexpected:
            problems = []
            if missing:
                problems.append(f"missing {', '.join(missing)}")
            if unexpected:
                problems.append(f"unexpected {', '.join(unexpected)}")
            raise ArgumentTypeError(
                f"kernel '{artifact.kernel_name}' takes tensors {', '.join(expected)}: {'; '.join(problems)}"
            )
        stream_handle = driver.stream_handle(stream)
        with self.device.current():
            infos = {
                name: self._checked_info(name, tensors[name], stream_handle) for name in expected
            }
        values: list[tuple[str, str, Any]] = []
        sources: list[tuple[str | None, TensorMapPlan | None]] = []
        for param in artifact.params:
            if param.kind == "tensor_map":
                spec = artifact.tensor_maps[param.name]
                tensor_map = self._tensor_map(spec, infos[spec.tensor])
                values.append((param.kind, param.name, tensor_map.raw))
                sources.append((spec.tensor, tensor_map.plan))
            elif param.kind == "pointer":
                values.append((param.kind, param.name, infos[param.name].ptr))
                sources.append((param.name, None))
            elif param.kind == "f32":
                values.append((param.kind, param.name, scalars[param.name]))
                sources.append((None, None))
            else:
                values.append((param.kind, param.name, self._i32_value(param, infos)))
                sources.append((None, None))
        pointers = {name: info.ptr for name, info in infos.items()}
        return PreparedLaunch(self, PackedParams(values), stream, tensors, sources, pointers)

    def launch(self, stream=None, **tensors) -> None:
        """Check the arguments and enqueue the kernel; does not wait for it."""
        self.prepare(stream, **tensors).launch()

    def synchronize(self, stream=None, timeout_s: float = 60.0) -> None:
        """Wait for `stream`; raises LaunchTimeout if the kernel is hung."""
        with self.device.current():
            synchronize(stream, timeout_s)

    def run_check(
        self,
        seed: int = 0,
        timeout_s: float = 60.0,
        bench: bool = False,
        iters: int = 20,
        backend: str = "auto",
    ) -> dict:
        """Run the kernel on random inputs and compare with the float64
        reference of the check its artifact declares (wsc.runtime.checks).

        Returns the report `wsc run` prints (see `wsc.runtime.run_cli`).
        """
        from .run_cli import evaluate

        # Its allocations, events and default stream are this GPU's.
        with self.device.current():
            return evaluate(
                self,
                seed=seed,
                timeout_s=timeout_s,
                check=True,
                bench=bench,
                iters=iters,
                backend=backend,
            )

    def _checked_info(self, name: str, tensor, stream_handle: int) -> TensorInfo:
        info = describe(tensor, name, stream_handle)
        check(
            info,
            self.artifact.tensors[name],
            name,
            device=self.device.ordinal,
            strided_rows=self.artifact.strided_rows(name),
        )
        if info.device is None:
            # The interface did not say where the memory lives: ask the driver,
            # which also catches host pointers posing as device arrays.
            owner = self.device.pointer_device(info.ptr)
            if owner != self.device.ordinal:
                where = "is not CUDA memory" if owner is None else f"belongs to cuda:{owner}"
                raise ArgumentError(
                    f"argument '{name}': pointer {info.ptr:#x} {where}; expected memory on cuda:{self.device.ordinal}"
                )
        return info

    def _tensor_map(self, spec: TensorMapSpec, info: TensorInfo) -> TensorMap:
        plan = plan_tensor_map(spec, info)
        cached = self._tensor_maps.get(spec.name)
        if cached is None or cached.plan != plan:
            cached = self._tensor_maps[spec.name] = encode_tensor_map(plan)
        return cached

    def _i32_value(self, param: ParamSpec, infos: dict[str, TensorInfo]) -> int:
        if param.row_stride is not None:
            return infos[param.row_stride].strides[-2]
        assert param.size is not None  # the parser gives an i32 one of the two
        return self.artifact.sizes[param.size]


class PreparedLaunch:
    """Checked, packed arguments for one kernel; launch it any number of times.

    It holds the tensors it was prepared with, so their memory stays alive.
    """

    def __init__(
        self,
        kernel: Kernel,
        params: PackedParams,
        stream,
        tensors: dict,
        sources: list | None = None,
        pointers: dict | None = None,
    ):
        self.kernel = kernel
        self.params = params
        self.stream = stream
        self.tensors = tensors
        #: Per parameter: (the tensor it is made of, its tensor map plan or None).
        self.sources = sources or []
        #: The data pointer of each tensor it was prepared with.
        self.pointers = pointers or {}

    def launch(self) -> None:
        artifact = self.kernel.artifact
        driver.launch(
            self.kernel.function,
            artifact.launch_grid(self.kernel.sm_count),
            artifact.block,
            artifact.dynamic_smem_bytes,
            self.params,
            self.stream,
        )


class BoundLaunch:
    """A kernel bound to one signature of its tensor arguments (shape, strides,
    dtype and device of each, as `Kernel.prepare` checked them): a launch then
    takes only each tensor's data pointer and a raw stream handle. A tensor
    map is encoded again only when its tensor's pointer changed, straight
    into the parameter buffer; nothing else is checked or converted again.

        bound = BoundLaunch(kernel.prepare(a=a, b=b, c=c))
        bound(stream_handle, a.data_ptr(), b.data_ptr(), c.data_ptr())

    The caller promises the signature: tensors of other shapes or strides
    need a launch prepared for them. Calls may come from several threads.
    """

    def __init__(self, prepared: PreparedLaunch):
        kernel = prepared.kernel
        artifact = kernel.artifact
        self.names = tuple(artifact.tensors)
        self._params = prepared.params
        self._pointers = [prepared.pointers[name] for name in self.names]
        # Per tensor (in self.names order): its pointer slots and map encoders.
        self._updates: list[list] = [[] for _ in self.names]
        for slot, (tensor, plan) in zip(prepared.params.slots, prepared.sources, strict=True):
            if tensor is None:
                continue
            index = self.names.index(tensor)
            if plan is None:
                self._updates[index].append(ctypes.c_uint64.from_address(slot.address))
            else:
                self._updates[index].append(TensorMapEncoder(plan, slot.address))
        self._lock = threading.Lock()
        calls = driver.HotCalls.get()
        self._launch, self._set_context = calls.launch, calls.set_context
        self._get_context = calls.get_context
        self._callers_context = ctypes.c_void_p()
        self._function = int(kernel.function.handle)
        grid = artifact.launch_grid(kernel.sm_count)
        self._shape = (*grid, *artifact.block, artifact.dynamic_smem_bytes)
        self._context = int(kernel.device.context)

    def __call__(self, stream: int, *pointers: int) -> None:
        """Launch on the raw stream handle `stream` (0: the legacy default
        stream) with the tensors at `pointers`, in the artifact's order."""
        with self._lock:
            for index, pointer in enumerate(pointers):
                if pointer != self._pointers[index]:
                    for update in self._updates[index]:
                        if isinstance(update, TensorMapEncoder):
                            update.encode(pointer)
                        else:
                            update.value = pointer
                    self._pointers[index] = pointer
            # The current context is per thread and the caller's may be
            # another GPU's: switch to the kernel's, and back after the launch
            # (torch reads its current device from it).
            driver.check_result("cuCtxGetCurrent", self._get_context(self._callers_context))
            callers = self._callers_context.value
            if callers != self._context:
                driver.check_result("cuCtxSetCurrent", self._set_context(self._context))
            try:
                driver.check_result(
                    "cuLaunchKernel",
                    self._launch(self._function, *self._shape, stream, self._params.address, None),
                )
            finally:
                if callers != self._context:
                    driver.check_result("cuCtxSetCurrent", self._set_context(callers))


_loaded_lock = threading.Lock()
#: Kernels loaded by `loaded_kernel`, by (artifact directory, device ordinal).
_loaded: dict[tuple[str, int], Kernel] = {}


def loaded_kernel(directory: str | Path, device: int = 0) -> Kernel:
    """The artifact in `directory` loaded on cuda:`device` once per process
    (the user APIs' kernels: a module load per call would cost milliseconds)."""
    key = (str(directory), device)
    with _loaded_lock:
        kernel = _loaded.get(key)
    if kernel is None:
        kernel = Kernel(directory, device=device)
        with _loaded_lock:
            kernel = _loaded.setdefault(key, kernel)
    return kernel
