"""This machine's GPU, from the compiler's side: whether it is a Hopper, and
running compiled artifacts on it in a process of its own.

No MLIR here, so GPU machines that only run artifacts (and the GPU tests
there) can import it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys


def hopper_gpu_visible(device: int = 0) -> bool:
    """Whether cuda:`device` is a Hopper GPU (compute capability 9.x) this process can use."""
    from wsc.runtime import WscRuntimeError, driver

    try:
        return driver.get_device(device).compute_capability[0] == 9
    except WscRuntimeError:  # no driver library, no device, or a driver call failed
        return False


def hopper_name(ordinal: int, caller: str) -> str:
    """The name of cuda:`ordinal` with its architecture, as "<name> (sm_90)";
    ValueError, naming `caller`, if it is no Hopper GPU."""
    from wsc.runtime import driver

    device = driver.get_device(ordinal)
    major, minor = device.compute_capability
    if major != 9:
        raise ValueError(
            f"{caller}: cuda:{ordinal} is {device.name} (sm_{major}{minor}); "
            f"wsc kernels need a Hopper GPU (sm_90)"
        )
    return f"{device.name} (sm_{major}{minor})"


#: The errors after which `wsc run` reports and exits: the context is unusable.
FATAL_ERRORS = ("LaunchTimeout", "KernelFault")


def define_cuda_op(library, schema: str, **options) -> None:
    """Define the torch op `schema` in `library`, with a CPU kernel that says it
    takes CUDA tensors (torch's dispatcher would say only that no CPU kernel
    exists); its CUDA kernel is registered by the caller."""
    import torch

    library.define(schema, **options)
    name = schema.split("(", 1)[0]

    def refuse(*args, **kwargs):
        devices = sorted({str(a.device) for a in args if isinstance(a, torch.Tensor)})
        raise ValueError(
            f"torch.ops.wsc.{name}: takes CUDA tensors, got tensors on "
            f"{', '.join(devices)}; move them with .cuda()"
        )

    library.impl(name, refuse, "CPU")


def run_artifact(
    artifact_dir: str | os.PathLike,
    bench: bool = True,
    timeout_s: float = 300.0,
    sizes: dict | None = None,
    device: int = 0,
) -> dict:
    """Run an artifact on the GPU in a process of its own (a failed or hung
    launch must not take this one down): random inputs, NaN-poisoned outputs,
    the float64 reference of the check it declares and, with `bench`,
    CUDA-event timings. Returns the report of `wsc run` (keys ok, rel_err,
    nan_count, ms, tflops, ...)."""
    return run_artifacts([artifact_dir], bench, timeout_s, sizes, device)[0]


def run_artifacts(
    artifact_dirs: list,
    bench: bool = True,
    timeout_s: float = 300.0,
    sizes: dict | None = None,
    device: int = 0,
    timing: str = "flushed",
) -> list[dict]:
    """`run_artifact` for several artifacts of one problem (resized to `sizes`
    where given), all in one process of their own, which shares the inputs
    and reference among them. A kernel that faults or hangs ends that
    process: it is reported as failed and the artifacts after it run in a
    fresh one; one that writes into the inputs fails, and the inputs are
    drawn again. `timeout_s` bounds each artifact; they run on cuda:`device`,
    timed as `wsc run --timing` says."""
    from wsc.runtime.run_cli import STARTING

    reports: dict[int, dict] = {}
    while len(reports) < len(artifact_dirs):
        pending = [index for index in range(len(artifact_dirs)) if index not in reports]
        rest = [str(artifact_dirs[index]) for index in pending]
        command = [sys.executable, "-m", "wsc.runtime.run_cli", *rest, "--check"]
        command.append(f"--device={device}")
        command += [f"--size={name}={value}" for name, value in (sizes or {}).items()]
        if bench:
            command += ["--bench", f"--timing={timing}"]
        try:
            proc = subprocess.run(
                command, capture_output=True, text=True, timeout=timeout_s * len(rest)
            )
            stdout, stderr = proc.stdout, proc.stderr
            error = (stderr.strip() or "no report")[-2000:]
        except subprocess.TimeoutExpired as expired:
            stdout, stderr = (_text(expired.stdout), _text(expired.stderr))
            error = f"no report within {timeout_s} s"
        new = [json.loads(line) for line in stdout.splitlines() if line.startswith("{")]
        reports.update(zip(pending, new, strict=False))
        started = sum(line.startswith(STARTING) for line in stderr.splitlines())
        if len(new) < len(pending) and (started > len(new) or not new):
            # The process died on the last artifact it had started (or before
            # any): that one broke it. Those started before it, unreported
            # (`wsc run` prints its reports at the end), run again.
            reports[pending[max(started, 1) - 1]] = {"ok": False, "error": error}
    return [reports[index] for index in range(len(artifact_dirs))]


def _text(output) -> str:
    return output.decode(errors="replace") if isinstance(output, bytes) else output or ""
