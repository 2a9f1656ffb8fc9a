"""Generated kernels never crash the compiler (issue 18's fuzzer of kernels,
test/fuzz/kernels.py): a seeded slice, the same seeds every run. Each must be
refused up front, rejected with a located error, or compile to PTX."""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "fuzz"))

from kernels import run  # noqa: E402

SEEDS = range(100)


@pytest.mark.parametrize("seed", SEEDS)
def test_a_generated_kernel_ends_cleanly(seed):
    outcome = run(seed)
    assert outcome.kind in ("refused", "rejected", "compiled"), (
        outcome.problem,
        outcome.config,
        outcome.message[:2000],
    )


def test_the_slice_reaches_every_end_but_a_finding():
    """The slice is not all refusals: kernels compile and passes reject some."""
    kinds = {run(seed).kind for seed in range(40)}
    assert {"refused", "compiled"} <= kinds
