"""Stress: every kernel launched many times over random supported shapes, and
with random delays in one role, every result checked.

    python test/gpu/stress.py compile DIR                        # here (MLIR)
    python test/gpu/stress.py run DIR [--launches 1000] [--out FILE]   # on the GPU

A race shows up as a rare wrong result, so one launch per shape is not
enough: `run` launches each kernel of gpulib.KERNELS `--launches` times, each
on a fresh random shape (M, N in 1..640, K in 8..1024 a multiple of 8, as TMA
needs 16-byte rows; N too for "kn" B), fresh random inputs and a
NaN-poisoned output, and compares with a float64 product computed on the GPU
(torch), within `wsc run`'s tolerance for the output dtype. The first
launches of each kernel take the edge shapes (M = N = 1, K = 8, K = one
tile, K one short of the ring).

A persistent kernel launches at most one block per SM, and these shapes have
fewer tiles than the H200 has SMs: so that its blocks walk several tiles, each
of its launches pretends the GPU has 1 to 8 SMs (Kernel.sm_count).

The `delayed-*` kernels are the seed, the two-consumer-group kernel, the
persistent two-consumer-group kernel, the ping-pong kernel and the persistent
TMA-store kernel compiled with `--convert-wsc-to-nvvm=delay-role=producer|consumer`: before
each mbarrier op, threads of that role sleep a random 0..2000 ns, which
shifts how the roles interleave; the results must not change.

One compiled kernel serves every shape (it reads M, N, K at run time), so
`compile` writes one artifact per kernel and `run` re-describes it per shape
(Artifact.resized). Each kernel runs in its own process (a fault poisons the
CUDA context), `--jobs` of them at a time. Prints a table; exits 1 if any
launch was wrong.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import gpulib  # noqa: E402

#: name -> (kernel of gpulib.KERNELS, role to delay)
DELAYED = {
    "delayed-producer-seed": ("seed", "producer"),
    "delayed-consumer-seed": ("seed", "consumer"),
    "delayed-producer-groups-2": ("groups-2-warpgroup", "producer"),
    "delayed-consumer-groups-2": ("groups-2-warpgroup", "consumer"),
    "delayed-producer-persistent": ("persistent-groups-2", "producer"),
    "delayed-consumer-persistent": ("persistent-groups-2", "consumer"),
    "delayed-producer-ping-pong": ("ping-pong", "producer"),
    "delayed-consumer-ping-pong": ("ping-pong", "consumer"),
    "delayed-producer-tma-store": ("tma-store-persistent-in-flight", "producer"),
    "delayed-consumer-tma-store": ("tma-store-persistent-in-flight", "consumer"),
    "delayed-producer-cluster": ("cluster-2-persistent-tma", "producer"),
    "delayed-consumer-cluster": ("cluster-2-persistent-tma", "consumer"),
    "delayed-producer-warp-release": ("warp-release-cluster-2-persistent-coalesced", "producer"),
    "delayed-consumer-warp-release": ("warp-release-cluster-2-persistent-coalesced", "consumer"),
}
MAX_MN, MAX_K = 640, 1024


def compile_cases(out: Path) -> int:
    out.mkdir(parents=True, exist_ok=True)
    cases = {}
    for name in gpulib.KERNELS:
        gpulib.compile_kernel(name, out / name, 256, 256, 256)
        cases[name] = name
    for name, (kernel, role) in DELAYED.items():
        gpulib.compile_kernel(kernel, out / name, 256, 256, 256, debug_delay_role=role)
        cases[name] = kernel
    (out / "cases.json").write_text(json.dumps(cases))
    print(f"{len(cases)} kernels in {out}")
    return 0


def shapes(artifact, fields: dict, count: int, seed: int) -> list[tuple[int, int, int]]:
    """Edge shapes first, then random ones, all legal for the kernel's TMA
    reads; `fields` are the kernel's gpulib.KERNELS config fields."""
    from wsc.kernels.matmul.check import MatmulCheck

    problem = MatmulCheck(artifact)
    block_m, block_n = fields["block_m"], fields["block_n"]
    block_k, stages = fields["block_k"], fields["num_stages"]
    # TMA reads B's rows (N of them, for "kn") and writes C's with tma_store:
    # 16-byte rows.
    n_step = 8 if problem.b_layout == "kn" or fields.get("tma_store") else 1
    edges = [
        (1, n_step, 8),
        (1, n_step, block_k),
        (129, 8 * n_step, block_k * stages - 8),
        (block_m, block_n, block_k * stages + 8),
    ]
    rng = random.Random(seed)
    found = edges[:count]
    while len(found) < count:
        found.append(
            (
                rng.randint(1, MAX_MN),
                rng.randint(1, MAX_MN // n_step) * n_step,
                rng.randint(1, MAX_K // 8) * 8,
            )
        )
    return found


def launch_and_check(kernel, torch, device, seed: int, timeout: float) -> tuple[float, int]:
    """One launch on the problem the kernel's artifact describes, with fresh
    random inputs and a NaN-poisoned output on the torch `device`; (relative
    Frobenius error against a float64 product, NaN count). Inputs, output
    and reference stay on the GPU: a CPU reference would take most of the
    time."""
    from wsc.kernels.matmul.check import MatmulCheck

    problem = MatmulCheck(kernel.artifact)
    m, n, k = problem.m, problem.n, problem.k
    dtypes = {"f16": torch.float16, "bf16": torch.bfloat16, "f32": torch.float32}
    generator = torch.Generator(device=device).manual_seed(seed)
    scale = problem.input_scale
    b_shape = (n, k) if problem.b_layout == "nk" else (k, n)
    a = (torch.randn(m, k, generator=generator, device=device) * scale).to(dtypes[problem.dtype])
    b = (torch.randn(*b_shape, generator=generator, device=device) * scale).to(
        dtypes[problem.dtype]
    )
    c = torch.full((m, n), float("nan"), dtype=dtypes[problem.out_dtype], device=device)
    kernel.launch(a=a, b=b, c=c)
    kernel.synchronize(timeout_s=timeout)
    reference = a.double() @ (b.double().T if problem.b_layout == "nk" else b.double())
    got = c.double()
    nan_count = int(torch.isnan(got).sum())
    norm = float(torch.linalg.vector_norm(reference))
    error = float(torch.linalg.vector_norm(torch.nan_to_num(got) - reference))
    return (error / norm if norm else error), nan_count


def run_one(directory: Path, kernel_name: str, launches: int, seed: int, timeout: float) -> None:
    """In a child: every launch of one kernel of gpulib.KERNELS; prints a
    JSON summary."""
    import torch

    from wsc.kernels.matmul.check import MatmulCheck
    from wsc.runtime import Kernel, load_artifact

    base = load_artifact(directory)
    kernel = Kernel(base)
    device = torch.device("cuda", kernel.device.ordinal)
    wrong, worst, start = [], 0.0, time.monotonic()
    loosest = 0.0
    rng = random.Random(seed)
    for index, (m, n, k) in enumerate(shapes(base, gpulib.KERNELS[kernel_name][4], launches, seed)):
        # A Kernel launches with whatever its artifact describes.
        kernel.artifact = base.resized(m=m, n=n, k=k)
        if base.persistent:
            kernel.sm_count = rng.randint(1, 8)
        rel_err, nan_count = launch_and_check(
            kernel, torch, device, seed * 100_003 + index, timeout
        )
        worst = max(worst, rel_err)
        tolerance = MatmulCheck(kernel.artifact).tolerance
        loosest = max(loosest, tolerance)
        if nan_count or not rel_err <= tolerance:
            wrong.append({"shape": [m, n, k], "rel_err": rel_err, "nan_count": nan_count})
    print(
        json.dumps(
            {
                "ok": not wrong,
                "launches": launches,
                "wrong": len(wrong),
                "first_wrong": wrong[:5],
                "worst_rel_err": worst,
                "tolerance": loosest,
                "seconds": time.monotonic() - start,
            }
        ),
        flush=True,
    )


def run_cases(
    out: Path, launches: int, seed: int, timeout: float, log: Path | None, jobs: int
) -> int:
    env = gpulib.use_repo_runtime()
    cases = json.loads((out / "cases.json").read_text())

    def run(name: str):
        command = [
            sys.executable,
            __file__,
            "run-one",
            str(out / name),
            "--kernel",
            cases[name],
            "--launches",
            str(launches),
            "--seed",
            str(seed),
            "--timeout",
            str(timeout),
        ]
        return gpulib.run_json_child(command, launches * timeout + 600, env)

    with ThreadPoolExecutor(max_workers=jobs) as pool:
        results = list(pool.map(run, cases))
    rows, failed, outputs = [], 0, []
    for (name, kernel), (report, output, seconds) in zip(cases.items(), results, strict=True):
        failed += not (report.get("ok") and report.get("returncode") == 0)
        outputs.append(f"== {name}\n{output}")
        if "wrong" in report:
            rows.append(
                f"| {name} | {kernel} | {report['launches']} | {report['wrong']} | "
                f"{report['worst_rel_err']:.2e} | {seconds:.0f} s | "
                f"{'ok' if report['ok'] else report['first_wrong']} |"
            )
        else:
            rows.append(
                f"| {name} | {kernel} | - | - | - | {seconds:.0f} s | "
                f"failed: {report.get('error', '?')[:200]} |"
            )
    table = [
        "| case | kernel | launches | wrong | worst rel. error | time | verdict |",
        "| --- | --- | --- | --- | --- | --- | --- |",
        *rows,
        f"\n{len(rows) - failed} of {len(rows)} kernels always right (seed {seed})",
    ]
    print("\n".join(table))
    if log is not None:
        log.write_text("\n".join(outputs) + "\n" + "\n".join(table) + "\n")
    return 1 if failed else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("mode", choices=("compile", "run", "run-one"))
    parser.add_argument("dir", type=Path)
    parser.add_argument("--kernel", help="(run-one) the gpulib.KERNELS entry of DIR")
    parser.add_argument("--launches", type=int, default=1000, help="launches per kernel")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--timeout", type=float, default=30.0, help="seconds per launch")
    parser.add_argument("--out", type=Path, help="(run) every child's output and the table")
    parser.add_argument("--jobs", type=int, default=4, help="(run) kernels checked at a time")
    args = parser.parse_args()
    if args.mode == "compile":
        return compile_cases(args.dir)
    gpulib.use_repo_runtime()
    if args.mode == "run-one":
        run_one(args.dir, args.kernel, args.launches, args.seed, args.timeout)
        return 0
    return run_cases(args.dir, args.launches, args.seed, args.timeout, args.out, args.jobs)


if __name__ == "__main__":
    sys.exit(main())
