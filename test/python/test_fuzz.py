"""Bad input never crashes wsc-opt: a bounded, deterministic fuzz slice.

hypothesis mutates the example kernels and the lit inputs (see
test/fuzz/fuzzlib.py for the mutations) and runs each mutant through
`--warp-specialize --unroll-ring-buffer --verify-pipeline` and through
`--convert-wsc-to-nvvm` in a worker subprocess, so that an abort or a
segfault in MLIR's C++ code is a failing example, not a dead test run. Each
run must exit 0, or exit 1 with a located `file:line:col: error:`, with no
Python traceback and no internal error.

The slice is derandomized, so CI sees the same mutants every time; set
WSC_FUZZ_EXAMPLES for more of them, or run test/fuzz/run.py for a long run
that collects every finding (results in test/fuzz/RESULTS.md).
"""

import os
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "fuzz"))

from fuzzlib import (  # noqa: E402
    PIPELINES,
    WEIGHTED_KINDS,
    Mutation,
    Result,
    Runner,
    load_corpus,
    make_mutant,
    problems,
    token_pools,
)

CORPUS = load_corpus()
POOLS = token_pools(CORPUS)
EXAMPLES = int(os.environ.get("WSC_FUZZ_EXAMPLES", "1000"))

mutations = st.builds(
    Mutation,
    kind=st.sampled_from(WEIGHTED_KINDS),
    a=st.integers(0, 1 << 20),
    b=st.integers(0, 1 << 20),
    c=st.integers(0, 1 << 20),
    data=st.binary(min_size=1, max_size=8),
)
mutants = st.tuples(st.integers(0, len(CORPUS) - 1), st.lists(mutations, min_size=1, max_size=3))


@pytest.fixture(scope="module")
def runner():
    runner = Runner()
    yield runner
    runner.close()


def _explain(name: str, data: bytes, result: Result) -> str:
    return (
        f"mutant of {name}:\n{data.decode('utf-8', errors='replace')}\n"
        f"-- stderr:\n{result.stderr[-3000:]}"
    )


@pytest.mark.parametrize("pipeline", sorted(PIPELINES))
def test_corpus_itself_keeps_the_rule(runner, pipeline):
    for name, text in CORPUS:
        result = runner.run(PIPELINES[pipeline], text.encode())
        assert not problems(result), _explain(name, text.encode(), result)


@pytest.mark.parametrize("pipeline", sorted(PIPELINES))
@settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(case=mutants)
def test_mutants_keep_the_rule(runner, pipeline, case):
    index, edits = case
    name, text = CORPUS[index]
    data = make_mutant(text, edits, POOLS)
    result = runner.run(PIPELINES[pipeline], data)
    assert not problems(result), _explain(name, data, result)


def test_a_hung_worker_is_a_finding_and_is_replaced():
    runner = Runner(timeout_s=0.001)
    try:
        hung = runner.run(PIPELINES["lower"], CORPUS[0][1].encode())
        assert hung.crash is not None and problems(hung) == [hung.crash]
        runner.timeout_s = 60
        result = runner.run(PIPELINES["lower"], b"garbage")
        assert result.rc == 1 and not problems(result)
    finally:
        runner.close()


# A stand-in for worker.py that dies on its first request, its stderr where
# worker.py puts it.
_CRASHING_WORKER = """\
import faulthandler, os, signal, sys
log = os.open(os.path.join(sys.argv[1], "stderr.txt"), os.O_WRONLY | os.O_CREAT, 0o644)
os.dup2(log, 2)
faulthandler.enable()
sys.stdin.readline()
os.kill(os.getpid(), signal.{signal})
"""


@pytest.mark.parametrize(
    "signal_name, crash",
    [("SIGSEGV", "crash: segmentation"), ("SIGKILL", "killed by signal SIGKILL")],
)
def test_a_crashing_worker_is_a_finding(tmp_path, signal_name, crash):
    worker = tmp_path / "worker.py"
    worker.write_text(_CRASHING_WORKER.format(signal=signal_name))
    runner = Runner(worker=worker)
    try:
        result = runner.run(PIPELINES["lower"], b"")
    finally:
        runner.close()
    assert result.crash is not None and result.crash.startswith(crash)
    assert problems(result) == [result.crash]


@pytest.mark.parametrize(
    "result, found",
    [
        (Result(0, "", 0.0), []),
        (Result(1, "/x/mutant.mlir:3:7: error: bad\n", 0.0), []),
        (
            Result(1, "error: Unable to parse module assembly\n", 0.0),
            ["exit 1 without a located error"],
        ),
        (
            Result(1, "wsc-opt: internal error: KeyError: 'x'\nmutant.mlir:1:1: error: y\n", 0.0),
            ["internal error"],
        ),
        (
            Result(1, "Traceback (most recent call last):\n", 0.0),
            ["Python traceback", "exit 1 without a located error"],
        ),
        (Result(0, "mutant.mlir:1:1: error: y\n", 0.0), ["exit 0 with an error"]),
        (
            Result(None, "LLVM ERROR: boom", 0.0, crash="killed by signal SIGABRT"),
            ["killed by signal SIGABRT"],
        ),
    ],
)
def test_the_rule(result, found):
    assert problems(result) == found
