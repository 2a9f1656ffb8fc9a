"""compute-sanitizer over every example kernel at small shapes.

    python test/gpu/sanitize.py compile DIR                          # here (MLIR)
    python test/gpu/sanitize.py run DIR --out FILE [--tools ...]     # on the GPU

`compile` writes one artifact per kernel of gpulib.KERNELS for a ragged
200 x 136 x 200 problem (partial tiles in M, N and K: TMA zero-fill, guarded
stores, a short last K tile). `run` launches each artifact once, checked
against a float64 reference (`python -m wsc.runtime.run_cli DIR --check
--backend driver`: no torch, so the tools see only our kernel and the
driver's copies), under

    compute-sanitizer --tool memcheck|racecheck|synccheck|initcheck
                      --print-limit 2000 --report-api-errors no --error-exitcode 97

The API-error reports are off: cuda-bindings probes the driver with
cuGetProcAddress calls that fail by design, and those reports, printed
first, would hide the kernel's (see the print-limit note in
shared/notes/hopper-mlir22.md). Every run's full output goes to FILE, then a
table of kernel x tool: the tool's error count and whether the launch's
result was right. A cell is clean when the tool reports 0 errors and the
result is right. Runs go four at a time; all of them take a few minutes.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import gpulib  # noqa: E402

M, N, K = 200, 136, 200
TOOLS = ("memcheck", "racecheck", "synccheck", "initcheck")
ERROR_EXIT = 97
_SUMMARY = re.compile(r"=+ (?:ERROR|RACECHECK) SUMMARY: (\d+) (?:errors?|hazards?)")


def compile_cases(out: Path) -> int:
    out.mkdir(parents=True, exist_ok=True)
    for name in gpulib.KERNELS:
        gpulib.compile_kernel(name, out / name, M, N, K)
        print(f"{name}: {out / name}")
    (out / "cases.json").write_text(json.dumps(list(gpulib.KERNELS)))
    return 0


def find_sanitizer() -> str | None:
    """compute-sanitizer on PATH, else in the CUDA install."""
    return shutil.which("compute-sanitizer") or next(
        (
            path
            for path in (
                "/usr/local/cuda/bin/compute-sanitizer",
                "/usr/local/cuda/compute-sanitizer/compute-sanitizer",
            )
            if Path(path).exists()
        ),
        None,
    )


def _sanitize(
    sanitizer: str, tool: str, directory: Path, timeout: float, env: dict
) -> tuple[dict, str, float]:
    command = [
        sanitizer,
        "--tool",
        tool,
        "--print-limit",
        "2000",
        "--report-api-errors",
        "no",
        "--error-exitcode",
        str(ERROR_EXIT),
        sys.executable,
        "-m",
        "wsc.runtime.run_cli",
        str(directory),
        "--check",
        "--backend",
        "driver",
        "--timeout",
        str(timeout),
    ]
    return gpulib.run_json_child(command, timeout + 300, env)


def verdict(report: dict, output: str) -> tuple[str, bool]:
    """(errors as the tool counted them, clean?) of one run."""
    counts = [int(count) for count in _SUMMARY.findall(output)]
    errors = sum(counts) if counts else None
    clean = errors == 0 and bool(report.get("ok")) and report.get("returncode") == 0
    return ("?" if errors is None else str(errors)), clean


def run_cases(
    out: Path, log: Path, tools: list[str], kernels: list[str] | None, timeout: float, jobs: int
) -> int:
    sanitizer = find_sanitizer()
    if sanitizer is None:
        print("compute-sanitizer not found (PATH, /usr/local/cuda)", file=sys.stderr)
        return 2
    env = gpulib.use_repo_runtime()
    names = [n for n in json.loads((out / "cases.json").read_text()) if not kernels or n in kernels]
    runs = [(name, tool) for name in names for tool in tools]
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        results = list(
            pool.map(lambda run: _sanitize(sanitizer, run[1], out / run[0], timeout, env), runs)
        )
    rows, sections, dirty = {}, [], 0
    for (name, tool), (report, output, seconds) in zip(runs, results, strict=True):
        errors, clean = verdict(report, output)
        dirty += not clean
        rel_err = report.get("rel_err")
        result = (
            "right"
            if report.get("ok")
            else f"WRONG (rel. error {rel_err})"
            if rel_err is not None
            else f"failed: {report.get('error', '?')[:120]}"
        )
        rows.setdefault(name, {})[tool] = f"{errors} errors, {result}" + ("" if clean else " **")
        sections.append(
            f"===== {name} / {tool} ({seconds:.0f} s, exit "
            f"{report.get('returncode')}) =====\n{output.rstrip()}\n"
        )
    table = ["| kernel | " + " | ".join(tools) + " |", "| --- |" + " --- |" * len(tools)]
    table += [
        f"| {name} | " + " | ".join(rows[name][tool] for tool in tools) + " |" for name in names
    ]
    table.append(
        f"\n{len(runs) - dirty} of {len(runs)} runs clean (** marks the others); "
        f"problem {M} x {N} x {K}"
    )
    log.write_text("\n".join(sections) + "\n" + "\n".join(table) + "\n")
    print("\n".join(table))
    return 1 if dirty else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("mode", choices=("compile", "run"))
    parser.add_argument("dir", type=Path)
    parser.add_argument("--out", type=Path, help="(run) the text file for every output")
    parser.add_argument("--tools", nargs="+", default=list(TOOLS), choices=TOOLS)
    parser.add_argument("--kernels", nargs="+", help="(run) only these kernels")
    parser.add_argument(
        "--timeout", type=float, default=300.0, help="seconds one launch may take under a tool"
    )
    parser.add_argument("--jobs", type=int, default=4, help="runs at a time")
    args = parser.parse_args()
    if args.mode == "compile":
        return compile_cases(args.dir)
    if args.out is None:
        parser.error("run needs --out FILE")
    return run_cases(args.dir, args.out, args.tools, args.kernels, args.timeout, args.jobs)


if __name__ == "__main__":
    sys.exit(main())
