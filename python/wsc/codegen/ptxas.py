"""Assembling PTX with ptxas and reading its resource report (no MLIR needed)."""

from __future__ import annotations

import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field

from wsc.target.hopper import CHIP

#: ptxas warns with this code when it ignores setmaxnreg (no register cap at
#: kernel entry, or a structure it cannot honour): a silent loss of the
#: register budgets, so assemble() treats it as an error.
SETMAXNREG_IGNORED = "C7508"


class PtxasError(RuntimeError):
    """ptxas failed, or reported something the kernel must not have."""


@dataclass
class PtxasReport:
    registers: int
    spill_stores: int
    spill_loads: int
    smem_bytes: int
    warnings: list[str] = field(default_factory=list)
    stack_frame: int = 0
    barriers: int = 0
    log: str = ""
    cubin: bytes | None = None

    def as_dict(self) -> dict:
        """The numbers and warnings, JSON-ready (no log, no cubin)."""
        return {
            "registers": self.registers,
            "spill_stores": self.spill_stores,
            "spill_loads": self.spill_loads,
            "smem_bytes": self.smem_bytes,
            "stack_frame": self.stack_frame,
            "barriers": self.barriers,
            "warnings": list(self.warnings),
        }


def find_ptxas() -> str | None:
    """$WSC_PTXAS, ptxas on PATH, a CUDA install, or the nvidia-cuda-nvcc wheel."""
    explicit = os.environ.get("WSC_PTXAS")
    if explicit:
        return explicit
    found = shutil.which("ptxas")
    if found:
        return found
    candidates = ["/usr/local/bin/ptxas", "/usr/local/cuda/bin/ptxas"]
    for entry in sys.path:
        candidates += glob.glob(os.path.join(entry, "nvidia", "cuda_nvcc", "bin", "ptxas"))
    return next((c for c in candidates if os.path.exists(c)), None)


def _int(pattern: str, text: str, default: int = 0) -> int:
    match = re.search(pattern, text)
    return int(match.group(1)) if match else default


def parse_report(log: str) -> PtxasReport:
    """Registers, spills and shared memory from `ptxas -v` output (one kernel)."""
    # ptxas prints some warnings as "info" lines with a code, e.g.
    # "ptxas info    : (C7508) Potential Performance Loss: 'setmaxnreg' ignored; ...".
    warnings = [
        line.strip()
        for line in log.splitlines()
        if "warning" in line.lower() or re.search(r"\(C\d{4}\)", line)
    ]
    return PtxasReport(
        registers=_int(r"Used (\d+) registers", log),
        spill_stores=_int(r"(\d+) bytes spill stores", log),
        spill_loads=_int(r"(\d+) bytes spill loads", log),
        smem_bytes=_int(r"(\d+) bytes smem", log),
        warnings=warnings,
        stack_frame=_int(r"(\d+) bytes stack frame", log),
        barriers=_int(r"used (\d+) barriers", log),
        log=log,
    )


def assemble(
    ptx: str, arch: str = CHIP, ptxas: str | None = None, extra_args: tuple[str, ...] = ()
) -> PtxasReport:
    """Run `ptxas -arch=<arch> -v` on `ptx`; the report carries the cubin.

    Raises PtxasError if ptxas is missing, fails, or warns that it ignored
    setmaxnreg (C7508)."""
    tool = ptxas or find_ptxas()
    if tool is None:
        raise PtxasError("ptxas not found (set WSC_PTXAS or put CUDA's ptxas on PATH)")
    with tempfile.TemporaryDirectory(prefix="wsc-ptxas-") as tmp:
        source = os.path.join(tmp, "kernel.ptx")
        output = os.path.join(tmp, "kernel.cubin")
        with open(source, "w") as handle:
            handle.write(ptx)
        command = [tool, f"-arch={arch}", "-v", *extra_args, "-o", output, source]
        result = subprocess.run(command, capture_output=True, text=True)
        log = result.stdout + result.stderr
        if result.returncode != 0:
            raise PtxasError(f"ptxas failed (exit {result.returncode}):\n{log}")
        report = parse_report(log)
        with open(output, "rb") as handle:
            report.cubin = handle.read()
    if SETMAXNREG_IGNORED in log:
        raise PtxasError(f"ptxas ignored setmaxnreg (warning {SETMAXNREG_IGNORED}):\n{log}")
    return report
