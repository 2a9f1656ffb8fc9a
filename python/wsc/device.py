"""This machine's GPU, from the compiler's side: whether it is a Hopper, and
running a compiled matmul artifact on it in a process of its own.

No MLIR here, so GPU machines that only run artifacts (and the GPU tests
there) can import it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys


def hopper_gpu_visible() -> bool:
    """Whether device 0 is a Hopper GPU (compute capability 9.x) this process can use."""
    from wsc.runtime import WscRuntimeError, driver

    try:
        return driver.get_device(0).compute_capability[0] == 9
    except WscRuntimeError:  # no driver library, no device, or a driver call failed
        return False


def run_artifact(artifact_dir: str | os.PathLike, bench: bool = True,
                 timeout_s: float = 300.0) -> dict:
    """Run a matmul artifact on the GPU in a process of its own (a failed or hung
    launch must not take this one down): random inputs, a NaN-poisoned output,
    a float64 reference and, with `bench`, CUDA-event timings. Returns the
    report of `wsc run` (keys ok, rel_err, nan_count, ms, tflops, ...)."""
    command = [sys.executable, "-m", "wsc.runtime.run_cli", str(artifact_dir), "--check"]
    if bench:
        command.append("--bench")
    try:
        proc = subprocess.run(command, capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        return {"ok": False, "error": f"no report within {timeout_s} s"}
    reports = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    if not reports:
        return {"ok": False, "error": (proc.stderr.strip() or "no report")[-2000:]}
    return json.loads(reports[-1])
