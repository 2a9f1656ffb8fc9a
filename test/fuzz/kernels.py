"""A fuzzer of kernels, not of text (issue 18): seeded random matmul problems
and configs -- tile shapes, 1 to 8 stages, 1, 2 or 4 consumer warpgroups, a
producer warp or warpgroup, persistent or not, register, TMA or coalesced
stores, clusters, split-K, swapped operands, both B layouts, and fused
epilogues of register-tile math -- built by wsc.kernels.matmul as V2-form
kernels and compiled through --warp-specialize, --unroll-ring-buffer,
--verify-pipeline and --convert-wsc-to-nvvm to PTX.

Each seed ends one of four ways:
    refused   the config or problem is refused before any IR (ValueError)
    rejected  a pass or the verifier rejects the kernel with a located error
    compiled  the kernel lowers to PTX (every pass, the verifier among them,
              accepted it)
    finding   anything else: another exception, an internal error, a Python
              traceback in a message, an unlocated error, or no end within
              TIMEOUT_S

    python test/fuzz/kernels.py --seeds 0:10000 [--out FILE]   # a long run
    python test/fuzz/kernels.py --seeds 2000:2400 --artifacts DIR   # a GPU sample

test/python/test_fuzz_kernels.py runs a seeded slice in CI. Every accepted
kernel is a matmul: with --artifacts each is also assembled and written as
an artifact directory for a seeded problem size (`sizes`), which
`wsc run --check` runs against float64 on a GPU.
"""

from __future__ import annotations

import argparse
import collections
import json
import random
import re
import signal
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from wsc.kernels.matmul.config import ACTIVATIONS

#: A seed's compile may take this long before it counts as a hang.
TIMEOUT_S = 120
#: A located diagnostic: file:line:col: error: ...
_LOCATED = re.compile(r"^\S+:\d+:\d+: error: ", re.MULTILINE)


@dataclass
class Outcome:
    seed: int
    kind: str  # refused | rejected | compiled | finding
    problem: dict
    config: dict
    message: str = ""


def draw(seed: int) -> tuple[dict, dict]:
    """The problem and config of `seed` (keyword arguments of MatmulProblem
    and MatmulConfig): three seeds in four draw a config whose fields agree
    with each other (most compile), the fourth any combination (most are
    refused up front)."""
    rng = random.Random(seed)
    problem = {
        "dtype": rng.choice(["f16", "bf16"]),
        "out_dtype": rng.choice(["f16", "bf16", "f32"]),
        "b_layout": rng.choice(["nk", "kn"]),
        "bias": rng.random() < 0.3,
        "activation": rng.choice([None, None, *ACTIVATIONS]),
        "residual": rng.random() < 0.3,
    }
    config = {
        "block_m": rng.choice([16, 32, 64, 128, 192, 256]),
        "block_n": rng.choice([8, 16, 32, 64, 128, 192, 256]),
        "block_k": rng.choice([16, 32, 64]),
        "num_stages": rng.randint(1, 8),
        "num_consumer_groups": rng.choice([1, 2, 4]),
        "producer": rng.choice(["warp", "warpgroup"]),
        "wgmma_in_flight": rng.choice([0, 1]),
        "group_m": rng.choice([0, 8]),
        "persistent": rng.random() < 0.3,
        "tma_store": rng.random() < 0.3,
        "coalesced_store": rng.random() < 0.15,
        "cluster_m": rng.choice([1, 1, 2]),
        "split_k": rng.choice([1, 1, 2, 4]),
        "swap_ab": rng.random() < 0.2,
        "release": rng.choice(["thread", "warp"]),
    }
    if rng.random() < 0.25:
        return problem, config
    # Agreeing fields: the WGMMA's M side 64 rows per consumer group (one or
    # two WGMMAs each), 16-byte-multiple tile rows, the schedule's exclusions.
    swap = config["swap_ab"] = config["swap_ab"] and problem["b_layout"] == "nk"
    groups = config["num_consumer_groups"] = rng.choice([1, 1, 2, 4] if not swap else [1, 2])
    along_m = min(256, 64 * groups * rng.choice([1, 2]))
    if along_m % (64 * groups):
        along_m = 64 * groups
    along_n = rng.choice([16, 32, 64] if swap else [16, 32, 64, 128, 256])
    config["block_m"], config["block_n"] = (along_n, along_m) if swap else (along_m, along_n)
    config["num_stages"] = rng.randint(1, 6 if along_m * along_n <= 128 * 128 else 4)
    staged = problem["out_dtype"] != "f32" and not swap
    config["tma_store"] = staged and rng.random() < 0.5
    config["coalesced_store"] = staged and not config["tma_store"] and rng.random() < 0.3
    if swap or config["split_k"] > 1:
        config["persistent"] = False
        config["cluster_m"] = 1
    if (
        config["persistent"]
        and config["wgmma_in_flight"]
        and not (config["tma_store"] or config["coalesced_store"])
    ):
        config["wgmma_in_flight"] = 0
    if config["cluster_m"] > 1 and config["block_n"] % 16:
        config["cluster_m"] = 1
    return problem, config


def sizes(seed: int) -> tuple[int, int, int]:
    """The problem (M, N, K) `seed`'s artifact is written for: ragged M, and
    N and K multiples of 8, which TMA's 16-byte rows need in every layout."""
    rng = random.Random(f"sizes {seed}")
    return rng.randint(1, 600), 8 * rng.randint(1, 170), 8 * rng.randint(1, 130)


def run(seed: int, artifacts: Path | None = None) -> Outcome:
    """Build and compile `seed`'s kernel (in this process, bounded by
    TIMEOUT_S); with `artifacts`, write a compiled one's artifact there."""
    from mlir import ir

    from wsc.builder import BuildError
    from wsc.compiler import CompileError, compile_module
    from wsc.dialect import make_context
    from wsc.kernels.matmul.build import (
        build_matmul,
        specialization_passes,
        write_matmul_artifact,
    )
    from wsc.kernels.matmul.config import MatmulConfig, MatmulProblem

    problem, config = draw(seed)
    outcome = Outcome(seed, "compiled", problem, config)
    try:
        matmul_problem, matmul_config = MatmulProblem(**problem), MatmulConfig(**config)
        matmul_config.check_problem(matmul_problem)
    except ValueError as error:
        outcome.kind, outcome.message = "refused", str(error)
        return outcome

    def timed_out(signum, frame):
        raise TimeoutError(f"no end within {TIMEOUT_S} s")

    previous = signal.signal(signal.SIGALRM, timed_out)
    signal.alarm(TIMEOUT_S)
    try:
        with make_context(), ir.Location.unknown():
            module = build_matmul(matmul_problem, matmul_config)
            result = compile_module(
                module,
                specialization_passes(matmul_config),
                assemble=artifacts is not None,
                allow_spills=True,
            )
        if artifacts is not None:
            m, n, k = sizes(seed)
            write_matmul_artifact(
                artifacts / f"seed{seed}", result, m, n, k, matmul_problem, matmul_config
            )
    except (CompileError, BuildError) as error:
        text = str(error)
        located = _LOCATED.search(text) is not None
        internal = "internal error" in text.lower() or "Traceback" in text
        outcome.kind = "rejected" if located and not internal else "finding"
        outcome.message = text
    except Exception as error:  # every other end is a finding
        outcome.kind, outcome.message = "finding", f"{type(error).__name__}: {error}"
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    return outcome


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", default="0:100", help="first:end (end excluded)")
    parser.add_argument("--out", help="write every outcome as a JSON line here")
    parser.add_argument(
        "--artifacts", type=Path, help="write each compiled kernel's artifact under this directory"
    )
    args = parser.parse_args(argv)
    first, end = (int(part) for part in args.seeds.split(":"))
    counts: collections.Counter = collections.Counter()
    start = time.perf_counter()
    out = open(args.out, "w") if args.out else None
    try:
        for seed in range(first, end):
            outcome = run(seed, args.artifacts)
            counts[outcome.kind] += 1
            if out is not None:
                out.write(json.dumps(outcome.__dict__) + "\n")
                out.flush()  # a long run stopped early keeps every seed it ran
            if outcome.kind == "finding":
                print(f"seed {seed}: {outcome.message[:500]}", flush=True)
    finally:
        if out is not None:
            out.close()
    seconds = time.perf_counter() - start
    print(f"seeds {first}:{end} in {seconds:.0f} s: {dict(sorted(counts.items()))}")
    return 1 if counts["finding"] else 0


if __name__ == "__main__":
    sys.exit(main())
