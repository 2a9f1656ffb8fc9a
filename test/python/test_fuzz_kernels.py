"""Generated kernels never crash the compiler (issue 18's fuzzer of kernels,
test/fuzz/kernels.py): a seeded slice, the same seeds every run. Each must be
refused up front, rejected with a located error, or compile to PTX."""

import collections
import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "fuzz"))

from kernels import (  # noqa: E402
    back_to_back_sizes,
    draw_back_to_back,
    draw_fp8,
    drawn_fields,
    fp8_sizes,
    main,
    run,
    sizes,
)

from wsc.codegen import find_ptxas  # noqa: E402
from wsc.kernels.matmul.config import MatmulProblem  # noqa: E402
from wsc.runtime import load_artifact  # noqa: E402

SEEDS = range(100)


@pytest.mark.parametrize("seed", SEEDS)
def test_a_generated_kernel_ends_cleanly(seed):
    outcome = run(seed)
    assert outcome.kind in ("refused", "rejected", "compiled"), (
        outcome.problem,
        outcome.config,
        outcome.message[:2000],
    )


@pytest.mark.parametrize("seed", range(40))
def test_a_generated_fp8_kernel_ends_cleanly(seed):
    outcome = run(seed, family="fp8")
    assert outcome.kind in ("refused", "rejected", "compiled"), (
        outcome.problem,
        outcome.config,
        outcome.message[:2000],
    )


def test_the_fp8_slice_compiles_most_of_its_agreeing_draws():
    kinds = collections.Counter(run(seed, family="fp8").kind for seed in range(40))
    assert kinds["compiled"] >= 15, kinds


@pytest.mark.skipif(find_ptxas() is None, reason="needs ptxas")
def test_a_compiled_fp8_kernel_is_written_with_its_scales(tmp_path):
    seed = next(seed for seed in range(40) if run(seed, family="fp8").kind == "compiled")
    assert run(seed, tmp_path, "fp8").kind == "compiled"
    artifact = load_artifact(tmp_path / f"seed{seed}")
    m, n, k = fp8_sizes(seed)
    problem = MatmulProblem(**draw_fp8(seed)[0])
    assert artifact.sizes == {"m": m, "n": n, "k": k, **problem.scale_sizes(m, n, k)}
    assert artifact.tensors["a"].dtype == "f8E4M3FN" and k % 16 == 0


def test_the_fp8_slice_compiles_block_scaled_kernels():
    block = [seed for seed in range(40) if draw_fp8(seed)[0]["block_scales"]]
    assert any(run(seed, family="fp8").kind == "compiled" for seed in block), block


@pytest.mark.parametrize("seed", range(40))
def test_a_generated_back_to_back_kernel_ends_cleanly(seed):
    outcome = run(seed, family="back_to_back")
    assert outcome.kind in ("rejected", "compiled"), (outcome.config, outcome.message[:2000])


def test_the_back_to_back_slice_compiles_most_and_rejects_some():
    kinds = collections.Counter(run(seed, family="back_to_back").kind for seed in range(40))
    assert kinds["compiled"] >= 15 and kinds["rejected"] >= 1, kinds


def test_the_slice_reaches_every_end_but_a_finding():
    """The slice is not all refusals: kernels compile and passes reject some."""
    kinds = {run(seed).kind for seed in range(40)}
    assert {"refused", "compiled"} <= kinds


@pytest.mark.skipif(find_ptxas() is None, reason="needs ptxas")
def test_a_compiled_kernel_is_written_as_an_artifact_for_its_seeded_sizes(tmp_path):
    """--artifacts: the GPU sample's input, one matmul artifact per compiled seed."""
    seed = next(seed for seed in SEEDS if run(seed).kind == "compiled")
    assert run(seed, tmp_path).kind == "compiled"
    artifact = load_artifact(tmp_path / f"seed{seed}")
    m, n, k = sizes(seed)
    assert artifact.sizes == {"m": m, "n": n, "k": k} and artifact.check == "matmul"
    assert n % 8 == 0 and k % 8 == 0


@pytest.mark.skipif(find_ptxas() is None, reason="needs ptxas")
def test_a_back_to_back_kernel_without_math_is_written_for_its_check(tmp_path):
    """Its artifact names the back-to-back check and the seeded sizes, head
    and value widths within the kernel's tiles."""
    seed = next(
        seed
        for seed in range(40)
        if not draw_back_to_back(seed)["score_math"]
        and run(seed, family="back_to_back").kind == "compiled"
    )
    assert run(seed, tmp_path, "back_to_back").kind == "compiled"
    artifact = load_artifact(tmp_path / f"seed{seed}")
    config = draw_back_to_back(seed)
    assert artifact.check == "back_to_back"
    assert artifact.sizes == back_to_back_sizes(seed, config)
    assert artifact.sizes["k"] <= config["head"] and artifact.sizes["d_dim1"] <= config["value"]


def test_a_targeted_sample_runs_only_the_seeds_that_draw_its_field(tmp_path, capsys):
    drawn = [seed for seed in range(200) if drawn_fields(seed, "matmul").get("ping_pong")]
    assert drawn, "no seed of the first 200 draws ping-pong"
    out = tmp_path / "outcomes.jsonl"
    assert main(["--seeds", "0:200", "--where", "ping_pong", "--out", str(out)]) == 0
    ran = [json.loads(line) for line in out.read_text().splitlines()]
    assert [outcome["seed"] for outcome in ran] == drawn
    assert all(outcome["config"]["ping_pong"] for outcome in ran)


def test_a_targeted_sample_may_name_a_field_of_the_problem(tmp_path):
    drawn = [seed for seed in range(4) if drawn_fields(seed, "fp8").get("block_scales")]
    assert drawn and len(drawn) < 4, "seeds 0-3 draw block scales in some, not all"
    out = tmp_path / "outcomes.jsonl"
    assert (
        main(["--family", "fp8", "--seeds", "0:4", "--where", "block_scales", "--out", str(out)])
        == 0
    )
    ran = [json.loads(line) for line in out.read_text().splitlines()]
    assert [outcome["seed"] for outcome in ran] == drawn
    assert all(outcome["problem"]["block_scales"] for outcome in ran)
