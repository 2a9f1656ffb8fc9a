"""wsc.runtime: load compiled wsc kernel artifacts and launch them.

This package runs where the kernels run, on GPU machines without the MLIR
Python bindings, so it imports only numpy and cuda-bindings (torch is used
by the `wsc run` CLI when it happens to be installed, never required).

    kernel = Kernel("build/matmul")                # load + bind to cuda:0
    kernel.launch(a=a, b=b, c=c)                   # check arguments, enqueue
    kernel.synchronize(timeout_s=30)               # LaunchTimeout if hung
    report = kernel.run_check(seed=0)              # self-test on random data
"""

from __future__ import annotations

from pathlib import Path

from . import driver
from .artifact import Artifact, ArtifactError, TensorMapSpec, WscRuntimeError, load_artifact
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
from .tensor_map import TensorMap, TensorMapError, encode_tensor_map, plan_tensor_map
from .tensors import ArgumentError, ArgumentTypeError, TensorInfo, check, describe, strided_rows_allowed

__all__ = [
    "Artifact",
    "ArtifactError",
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
    "synchronize",
]


class KernelLoadError(WscRuntimeError, RuntimeError):
    """The artifact's kernel could not be loaded or does not match its artifact."""


class Kernel:
    """A loaded artifact bound to one GPU, ready to launch."""

    def __init__(self, artifact: Artifact | str | Path, device: int = 0):
        self.artifact = artifact if isinstance(artifact, Artifact) else load_artifact(artifact)
        self.device = driver.get_device(device)
        self.function = self._load_function()
        self._check_param_sizes()
        smem = self.artifact.dynamic_smem_bytes
        if smem > self.device.max_dynamic_smem_bytes:
            raise KernelLoadError(
                f"kernel '{self.artifact.kernel_name}' needs {smem} bytes of dynamic shared memory; "
                f"{self.device.name} allows at most {self.device.max_dynamic_smem_bytes}"
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
            f"cannot load kernel '{self.artifact.kernel_name}' from {self.artifact.directory}:\n" + "\n".join(failures)
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

    def prepare(self, stream=None, **tensors) -> PreparedLaunch:
        """Check the tensor arguments and pack the kernel parameters."""
        artifact = self.artifact
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
        self.device.make_current()
        infos = {name: self._checked_info(name, tensors[name], stream_handle) for name in expected}
        values = []
        for param in artifact.params:
            if param.kind == "tensor_map":
                spec = artifact.tensor_maps[param.name]
                values.append((param.kind, param.name, self._tensor_map(spec, infos[spec.tensor]).raw))
            elif param.kind == "pointer":
                values.append((param.kind, param.name, infos[param.name].ptr))
            else:
                values.append((param.kind, param.name, self._i32_value(param.name, infos)))
        return PreparedLaunch(self, PackedParams(values), stream, tensors)

    def launch(self, stream=None, **tensors) -> None:
        """Check the arguments and enqueue the kernel; does not wait for it."""
        self.prepare(stream, **tensors).launch()

    def synchronize(self, stream=None, timeout_s: float = 60.0) -> None:
        """Wait for `stream`; raises LaunchTimeout if the kernel is hung."""
        self.device.make_current()
        synchronize(stream, timeout_s)

    def run_check(self, seed: int = 0, timeout_s: float = 60.0, bench: bool = False, iters: int = 20,
                  backend: str = "auto") -> dict:
        """Run the kernel on random matmul inputs and compare with float64.

        Returns the report `wsc run` prints (see `wsc.runtime.run_cli`).
        """
        from .run_cli import evaluate

        return evaluate(self, seed=seed, timeout_s=timeout_s, check=True, bench=bench, iters=iters, backend=backend)

    def _checked_info(self, name: str, tensor, stream_handle: int) -> TensorInfo:
        info = describe(tensor, name, stream_handle)
        check(
            info,
            self.artifact.tensors[name],
            name,
            device=self.device.ordinal,
            strided_rows=strided_rows_allowed(self.artifact, name),
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

    def _i32_value(self, name: str, infos: dict[str, TensorInfo]) -> int:
        tensor = self.artifact.leading_dim_tensor(name)
        if tensor is not None:
            return infos[tensor].strides[-2]
        return self.artifact.problem[name]


class PreparedLaunch:
    """Checked, packed arguments for one kernel; launch it any number of times.

    It holds the tensors it was prepared with, so their memory stays alive.
    """

    def __init__(self, kernel: Kernel, params: PackedParams, stream, tensors: dict):
        self.kernel = kernel
        self.params = params
        self.stream = stream
        self.tensors = tensors

    def launch(self) -> None:
        artifact = self.kernel.artifact
        driver.launch(
            self.kernel.function, artifact.launch_grid(self.kernel.sm_count), artifact.block, artifact.dynamic_smem_bytes, self.params, self.stream
        )
