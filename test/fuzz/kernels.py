"""A fuzzer of kernels, not of text (issue 18): seeded random matmul problems
and configs -- tile shapes, 1 to 8 stages, 1, 2 or 4 consumer warpgroups, a
producer warp or warpgroup, persistent or not, ping-pong or not, WGMMAs issued
in turn by the consumer groups or not, register,
TMA or coalesced stores, clusters along M or N, split-K, swapped
operands, both B layouts, and fused
epilogues of register-tile math -- built by wsc.kernels.matmul as V2-form
kernels and compiled through --warp-specialize, --unroll-ring-buffer,
--verify-pipeline and --convert-wsc-to-nvvm to PTX. The family "fp8" draws
the same kernels with fp8 (e4m3) operands and per-tensor or block scales (B
as [N, K], K tiles of 32 to 128 elements). The family
"back_to_back" draws instead the two-product kernel of
examples/back_to_back.py: two accumulators, register math on the first
product (SCORE_MATH), its cast read as the second WGMMA's A operand, tile
shapes, head and value widths, dtypes, 1 to 8 stages, 1, 2 or 4 groups.

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
    python test/fuzz/kernels.py --family back_to_back --seeds 0:1000
    python test/fuzz/kernels.py --family fp8 --seeds 0:1000 [--artifacts DIR]
    python test/fuzz/kernels.py --seeds 0:16000 --where ping_pong --artifacts DIR
    python test/fuzz/kernels.py --family fp8 --seeds 0:2000 --where block_scales --artifacts DIR

test/python/test_fuzz_kernels.py runs a seeded slice of each family in CI.
With --artifacts each accepted matmul is also assembled and written as an
artifact directory for a seeded problem size (`sizes`), which `wsc run
--check` runs against float64 on a GPU; so is each back-to-back kernel
without register math (the check knows none).
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
from wsc.target.hopper import E4M3

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))

from back_to_back import SCORE_MATH, back_to_back  # noqa: E402

#: The kinds of kernel drawn: wsc.kernels.matmul's (16-bit or fp8 operands),
#: or examples/back_to_back.py's.
FAMILIES = ("matmul", "fp8", "back_to_back")
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
    # WGMMA turns from a stream of their own, as clusters along N below.
    turns = random.Random(f"wgmma_turns {seed}").random() < 0.3
    if rng.random() < 0.25:
        # Drawn last: no other field of a seed depends on it.
        config["ping_pong"] = rng.random() < 0.2
        config["wgmma_turns"] = turns
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
    if not config["persistent"] and config["split_k"] == 1 and config["cluster_m"] == 1:
        # Clusters along N, from a stream of their own: the other fields of a
        # seed stay what they were before they existed.
        cluster_n = random.Random(f"cluster_n {seed}").choice([1, 2, 4])
        if config["block_m"] % (8 * cluster_n) == 0:
            config["cluster_n"] = cluster_n
    # Ping-pong (drawn last, as above): two groups taking whole tiles in turn
    # in a persistent kernel, each tile half as tall, so that a group holds
    # the rows a cooperative group would.
    config["ping_pong"] = (
        config["persistent"] and groups == 2 and config["cluster_m"] == 1 and rng.random() < 0.5
    )
    if config["ping_pong"]:
        config["block_m"] //= 2
    config["wgmma_turns"] = turns and groups > 1 and not config["ping_pong"]
    return problem, config


def sizes(seed: int) -> tuple[int, int, int]:
    """The problem (M, N, K) `seed`'s artifact is written for: ragged M, and
    N and K multiples of 8, which TMA's 16-byte rows need in every layout."""
    rng = random.Random(f"sizes {seed}")
    return rng.randint(1, 600), 8 * rng.randint(1, 170), 8 * rng.randint(1, 130)


def draw_fp8(seed: int) -> tuple[dict, dict]:
    """`draw`'s kernel of `seed` with fp8 operands: B as [N, K] (the one
    layout WGMMA reads fp8 in), no bias or residual (an activation may stay),
    a K tile of 32, 64 or 128 elements; three in ten with block scales, whose
    K tile is one block, its columns within one block of B's, and a WGMMA
    group in flight across K tiles only in a persistent kernel (two product
    tiles in turn)."""
    problem, config = draw(seed)
    problem.update(dtype=E4M3, b_layout="nk", bias=False, residual=False)
    rng = random.Random(f"fp8 {seed}")
    config["block_k"] = rng.choice([32, 64, 128])
    problem["block_scales"] = rng.random() < 0.3
    if problem["block_scales"]:
        in_flight = config["wgmma_in_flight"] if config["persistent"] else 0
        config.update(block_k=128, wgmma_in_flight=in_flight, swap_ab=False)
        config["block_n"] = rng.choice([32, 64, 128])
    return problem, config


def fp8_sizes(seed: int) -> tuple[int, int, int]:
    """`sizes` with K a multiple of 16: TMA's 16-byte rows of 1-byte elements."""
    m, n, k = sizes(seed)
    return m, n, 16 * -(-k // 16)


def draw_back_to_back(seed: int) -> dict:
    """The keyword arguments of examples/back_to_back.py's kernel for `seed`."""
    rng = random.Random(f"back_to_back {seed}")
    groups = rng.choice([1, 2, 4])
    return {
        "num_stages": rng.randint(1, 8),
        "num_consumer_groups": groups,
        "block_m": min(256, 64 * groups * rng.choice([1, 2])),
        "block_n": rng.choice([16, 32, 64, 128, 256]),
        "head": rng.choice([16, 32, 64]),
        "value": rng.choice([16, 32, 64, 128, 256]),
        "dtype": rng.choice(["f16", "bf16"]),
        "out_dtype": rng.choice(["f32", "f16", "bf16"]),
        # Half without math: those are checked on a GPU (--artifacts).
        "score_math": rng.sample(sorted(SCORE_MATH), rng.choice([0, 0, 1, 2])),
        "producer": rng.choice(["warp", "warpgroup"]),
        # Refused (two WGMMA groups per K tile): a few, to keep it refused.
        "wgmma_in_flight": int(rng.random() < 0.1),
    }


def back_to_back_sizes(seed: int, config: dict) -> dict:
    """The problem `seed`'s back-to-back artifact is written for: ragged M and
    N, the head and value widths at most the kernel's (one tile each) and
    multiples of 8 (TMA's 16-byte rows)."""
    rng = random.Random(f"back_to_back sizes {seed}")
    return {
        "m": rng.randint(1, 600),
        "n": rng.randint(1, 1000),
        "k": 8 * rng.randint(1, config["head"] // 8),
        "d_dim1": 8 * rng.randint(1, config["value"] // 8),
    }


def drawn_fields(seed: int, family: str) -> dict:
    """The fields `seed` draws in `family`, of its problem and its config."""
    if family == "back_to_back":
        return draw_back_to_back(seed)
    problem, config = (draw_fp8 if family == "fp8" else draw)(seed)
    return {**problem, **config}


def run(seed: int, artifacts: Path | None = None, family: str = "matmul") -> Outcome:
    """Build and compile `seed`'s kernel of `family` (in this process, bounded
    by TIMEOUT_S); with `artifacts`, write a compiled one's artifact there."""
    if family == "back_to_back":
        return _run_back_to_back(seed, artifacts)
    if family == "fp8":
        return _run_matmul(seed, artifacts, draw_fp8, fp8_sizes)
    return _run_matmul(seed, artifacts)


def _bounded(outcome: Outcome, compile_it) -> Outcome:
    """`compile_it()` within TIMEOUT_S, its end classified into `outcome`."""
    from wsc.builder import BuildError
    from wsc.compiler import CompileError

    def timed_out(signum, frame):
        raise TimeoutError(f"no end within {TIMEOUT_S} s")

    previous = signal.signal(signal.SIGALRM, timed_out)
    signal.alarm(TIMEOUT_S)
    try:
        compile_it()
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


def _run_back_to_back(seed: int, artifacts: Path | None) -> Outcome:
    from wsc.compiler import compile_module

    config = draw_back_to_back(seed)
    outcome = Outcome(seed, "compiled", {"family": "back_to_back"}, config)

    def compile_it():
        kernel = back_to_back(**config, allow_spills=True)
        with kernel.context:
            result = compile_module(
                kernel.module.operation.clone(),
                kernel.remaining_passes(),
                assemble=artifacts is not None,
                allow_spills=True,
            )
        if artifacts is not None and not config["score_math"]:
            from wsc.builder import CompiledKernel

            CompiledKernel(kernel, result).write_artifact(
                artifacts / f"seed{seed}", **back_to_back_sizes(seed, config)
            )

    return _bounded(outcome, compile_it)


def _run_matmul(seed: int, artifacts: Path | None, drawn=draw, sized=sizes) -> Outcome:
    from mlir import ir

    from wsc.compiler import compile_module
    from wsc.dialect import make_context
    from wsc.kernels.matmul.build import (
        build_matmul,
        specialization_passes,
        write_matmul_artifact,
    )
    from wsc.kernels.matmul.config import MatmulConfig, MatmulProblem

    problem, config = drawn(seed)
    outcome = Outcome(seed, "compiled", problem, config)
    try:
        matmul_problem, matmul_config = MatmulProblem(**problem), MatmulConfig(**config)
        matmul_config.check_problem(matmul_problem)
    except ValueError as error:
        outcome.kind, outcome.message = "refused", str(error)
        return outcome

    def compile_it():
        with make_context(), ir.Location.unknown():
            module = build_matmul(matmul_problem, matmul_config)
            result = compile_module(
                module,
                specialization_passes(matmul_config),
                assemble=artifacts is not None,
                allow_spills=True,
            )
        if artifacts is not None:
            m, n, k = sized(seed)
            write_matmul_artifact(
                artifacts / f"seed{seed}", result, m, n, k, matmul_problem, matmul_config
            )

    return _bounded(outcome, compile_it)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", default="0:100", help="first:end (end excluded)")
    parser.add_argument("--out", help="write every outcome as a JSON line here")
    parser.add_argument(
        "--artifacts", type=Path, help="write each compiled kernel's artifact under this directory"
    )
    parser.add_argument("--family", choices=FAMILIES, default="matmul")
    parser.add_argument(
        "--where",
        metavar="FIELD",
        help="run only the seeds whose problem or config sets FIELD (e.g. ping_pong, "
        "block_scales): a targeted sample",
    )
    args = parser.parse_args(argv)
    first, end = (int(part) for part in args.seeds.split(":"))
    counts: collections.Counter = collections.Counter()
    start = time.perf_counter()
    out = open(args.out, "w") if args.out else None
    try:
        for seed in range(first, end):
            if args.where and not drawn_fields(seed, args.family).get(args.where):
                continue
            outcome = run(seed, args.artifacts, args.family)
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
