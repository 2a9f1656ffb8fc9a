"""A planted hang must become a Python exception, in time, that says where.

    python test/gpu/hang.py compile DIR                    # here (MLIR)
    python test/gpu/hang.py run DIR [--out FILE]           # on the GPU

The kernel is test/gpu/planted-hang.mlir: the V3 matmul with the producer's
first empty-barrier wait on the wrong phase, a deadlock --verify-pipeline
reports. `compile` lowers it without that check, three ways:

  spin-65536, spin-1048576   with --convert-wsc-to-nvvm=wait-spin-limit=N: a
                             wait gives up after N failed probes, prints the
                             barrier, stage and phase, and traps;
  unbounded                  as a plain build: the launch never finishes.

`run` launches each in a child process (a trapped or hung kernel leaves its
CUDA context unusable) and checks: a spin-limited build raises KernelFault
within the timeout and its output has at least one report, each naming
barrier full or empty, stage 0 and phase parity 0 (where the deadlock
leaves both roles); the unbounded build raises LaunchTimeout at the timeout.
It prints a table and exits 1 if any check failed.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import gpulib  # noqa: E402

KERNEL = Path(__file__).resolve().with_name("planted-hang.mlir")
M = N = K = 256
CASES = {"spin-65536": 1 << 16, "spin-1048576": 1 << 20, "unbounded": 0}
#: The waits the deadlock leaves: consumers on full[0] and the producer on
#: empty[0], both for phase parity 0 (the consumers' first phase, and the
#: producer's wrong one).
EXPECTED_WAITS = {("full", 0, 0), ("empty", 0, 0)}
_REPORT = re.compile(
    r"wsc: wait-spin-limit: kernel (\w+): thread (\d+) of block \((\d+), (\d+), "
    r"(\d+)\)(?:, role (\w+))? gave up after (\d+) tries waiting on barrier "
    r"(\w+), stage (\d+), phase parity (\d+)"
)


def compile_cases(out: Path) -> int:
    from wsc.codegen import assemble, lower_to_ptx
    from wsc.codegen.debug import DebugOptions, reports_in_ptx
    from wsc.compiler import CompileResult
    from wsc.kernels.matmul.build import write_matmul_artifact
    from wsc.kernels.matmul.config import MatmulConfig, MatmulProblem

    text = KERNEL.read_text()
    for name, limit in CASES.items():
        ptx, info = lower_to_ptx(text, debug=DebugOptions(wait_spin_limit=limit))
        result = CompileResult(ptx, info, ptxas=assemble(ptx))
        write_matmul_artifact(
            out / name, result, M, N, K, MatmulProblem(), MatmulConfig(debug_spin_limit=limit)
        )
        reports = reports_in_ptx(ptx)
        print(f"{name}: {len(reports)} wait sites report; {result.ptxas.registers} registers")
        for report in reports:
            print("   ", report.rstrip())
    (out / "cases.json").write_text(json.dumps(CASES))
    return 0


def launch(directory: Path, timeout: float) -> None:
    """In a child: launch once on random inputs, report how it ended as JSON."""
    import numpy as np
    from cuda.bindings import driver as cu

    from wsc.runtime import DeviceArray, Kernel, KernelFault, LaunchTimeout

    kernel = Kernel(directory)
    rng = np.random.default_rng(0)
    a = DeviceArray.from_host(rng.standard_normal((M, K)).astype(np.float16), "f16")
    b = DeviceArray.from_host(rng.standard_normal((N, K)).astype(np.float16), "f16")
    c = DeviceArray((M, N), "f32")
    kernel.launch(a=a, b=b, c=c)
    try:
        kernel.synchronize(timeout_s=timeout)
        outcome = {"outcome": "finished"}
    except KernelFault as error:
        outcome = {"outcome": "KernelFault", "error": str(error)}
        # A synchronize is where the driver writes out the device's printf
        # buffer; on a faulted context it returns at once (with the error).
        with kernel.device.current():
            cu.cuCtxSynchronize()
    except LaunchTimeout as error:
        outcome = {"outcome": "LaunchTimeout", "error": str(error)}
    # The device's printf output sits in the C library's stdout buffer, and
    # os._exit (the only safe exit with a dead context) would drop it.
    sys.stdout.flush()
    ctypes.CDLL(None).fflush(None)
    print(json.dumps(outcome), flush=True)
    os._exit(0)


def check(
    name: str, limit: int, report: dict, output: str, seconds: float, timeout: float
) -> list[str]:
    """What went wrong with one case (empty: as expected)."""
    problems = []
    if limit:
        if report.get("outcome") != "KernelFault":
            problems.append(f"expected KernelFault, got {report.get('outcome') or report}")
        if seconds > timeout:
            problems.append(f"took {seconds:.1f} s, more than the {timeout:g} s timeout")
        waits = {(m.group(8), int(m.group(9)), int(m.group(10))) for m in _REPORT.finditer(output)}
        if not waits:
            problems.append("no wait-spin-limit report in the output")
        elif not waits <= EXPECTED_WAITS:
            problems.append(
                f"reports name waits {sorted(waits)}, expected among {sorted(EXPECTED_WAITS)}"
            )
        if any(int(m.group(7)) != limit for m in _REPORT.finditer(output)):
            problems.append(f"a report names another limit than {limit}")
    elif report.get("outcome") != "LaunchTimeout":
        problems.append(f"expected LaunchTimeout, got {report.get('outcome') or report}")
    return problems


def run_cases(out: Path, timeout: float, log: Path | None) -> int:
    env = gpulib.use_repo_runtime()
    rows, failed, logs = [], 0, []
    for name, limit in json.loads((out / "cases.json").read_text()).items():
        command = [sys.executable, __file__, "launch", str(out / name), "--timeout", str(timeout)]
        report, output, seconds = gpulib.run_json_child(command, timeout + 120, env)
        problems = check(name, limit, report, output, seconds, timeout)
        failed += bool(problems)
        reports = _REPORT.findall(output)
        rows.append(
            f"| {name} | {report.get('outcome', report.get('error'))} | {seconds:.1f} s | "
            f"{len(reports)} | {'; '.join(problems) or 'ok'} |"
        )
        logs.append(f"== {name} ({seconds:.1f} s)\n{output}")
    table = [
        "| case | outcome | time | reports printed | verdict |",
        "| --- | --- | --- | --- | --- |",
        *rows,
        f"\n{len(rows) - failed} as expected, {failed} not (timeout {timeout:g} s)",
    ]
    print("\n".join(table))
    if log is not None:
        log.write_text("\n".join(logs) + "\n\n" + "\n".join(table) + "\n")
    return 1 if failed else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("mode", choices=("compile", "run", "launch"))
    parser.add_argument("dir", type=Path)
    parser.add_argument(
        "--timeout",
        type=float,
        default=60.0,
        help="seconds a launch may take before it counts as hung",
    )
    parser.add_argument("--out", type=Path, help="write every child's output and the table here")
    args = parser.parse_args()
    if args.mode == "compile":
        return compile_cases(args.dir)
    gpulib.use_repo_runtime()
    if args.mode == "launch":
        launch(args.dir, args.timeout)
    return run_cases(args.dir, args.timeout, args.out)


if __name__ == "__main__":
    sys.exit(main())
