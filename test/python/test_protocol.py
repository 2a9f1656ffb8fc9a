"""check_protocol, the simulator behind --verify-pipeline: the seed's kernels
are clean for every ring size and K extent, and each planted bug is found, of
the right kind, at the op that commits it."""

import re
import time
from pathlib import Path

import pytest
from mlir import ir

from wsc import protocol
from wsc.diagnostics import PassError, file_line_col
from wsc.dialect import make_context
from wsc.protocol import ProtocolViolation, check_protocol

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

# The producer's drain in examples/matmul_v3.mlir, and the seed's: min(k_tiles,
# num_stages) unguarded waits from the stage after the last fill. When k_tiles <
# num_stages those stages were never filled, their fresh barriers pass at once,
# and the seed's drain stops before the releases of the stages it did fill.
DRAIN = re.compile(r"    // Drain:.*?\n    %ds:2 = scf.for.*?\n    }\n", re.S)
SEED_DRAIN = """\
    %drain = arith.minui %k_tiles, %c4 : index
    %ds:2 = scf.for %i = %c0 to %drain step %c1 iter_args(%stage = %ps#0, %phase = %ps#1) -> (index, i1) {
      "wsc.mbarrier_wait"(%empty, %stage, %phase) : (!wsc.mbarriers, index, i1) -> ()
      %next_stage, %next_phase = "wsc.ring_advance"(%stage, %phase) {num_stages = 4 : i32} : (index, i1) -> (index, i1)
      scf.yield %next_stage, %next_phase : index, i1
    }
"""


@pytest.fixture(autouse=True)
def context():
    with make_context() as ctx:
        yield ctx


def with_stages(text: str, num_stages: int) -> str:
    """An example with a ring of `num_stages`: buffer shapes, barrier counts,
    ring_advance and the drain's constant."""
    text = text.replace("memref<4x", f"memref<{num_stages}x")
    text = text.replace("num_barriers = 4 :", f"num_barriers = {num_stages} :")
    text = text.replace("num_stages = 4 :", f"num_stages = {num_stages} :")
    return text.replace(
        "%c4 = arith.constant 4 : index", f"%c4 = arith.constant {num_stages} : index"
    )


def matmul_v3(num_stages: int = 4) -> str:
    return with_stages((EXAMPLES / "matmul_v3.mlir").read_text(), num_stages)


def matmul_v2(num_stages: int = 4) -> str:
    return with_stages((EXAMPLES / "matmul_v2.mlir").read_text(), num_stages)


def find_violation(text: str, **options) -> ProtocolViolation | None:
    try:
        check_protocol(ir.Module.parse(text), **options)
    except ProtocolViolation as violation:
        return violation
    return None


def offending_line(text: str, violation: PassError) -> str:
    _, line, _ = file_line_col(violation.location)
    return text.splitlines()[line - 1]


def edit(text: str, old: str, new: str) -> str:
    assert old in text, old
    return text.replace(old, new, 1)


# --- clean kernels


@pytest.mark.parametrize("num_stages", range(1, 9))
def test_matmul_v3_is_clean(num_stages):
    assert find_violation(matmul_v3(num_stages), max_k_tiles=40) is None


@pytest.mark.parametrize("num_stages", range(1, 9))
def test_matmul_v2_is_clean(num_stages):
    assert find_violation(matmul_v2(num_stages), max_k_tiles=40) is None


def test_sweep_is_fast():
    module = ir.Module.parse(matmul_v3(4))
    start = time.perf_counter()
    check_protocol(module, max_k_tiles=25)
    assert time.perf_counter() - start < 1.0


# --- planted bugs: (edits of matmul_v3, kind, k_tiles, text of the offending line)

PRODUCER_WAIT = '"wsc.mbarrier_wait"(%empty, %stage, %phase) : (!wsc.mbarriers, index, i1) -> ()'
CONSUMER_WAIT = '"wsc.mbarrier_wait"(%full, %stage, %phase) : (!wsc.mbarriers, index, i1) -> ()'
RELEASE = '"wsc.mbarrier_arrive"(%empty, %stage) : (!wsc.mbarriers, index) -> ()'
WAIT_GROUP = '"wsc.wgmma_wait_group"() {pending = 0 : i32} : () -> ()'

PLANTED_BUGS = {
    "producer_initial_phase": (
        [("iter_args(%stage = %c0, %phase = %true)", "iter_args(%stage = %c0, %phase = %false)")],
        protocol.DEADLOCK,
        1,
        PRODUCER_WAIT,
    ),
    "consumer_initial_phase": (
        [("iter_args(%stage = %c0, %phase = %false)", "iter_args(%stage = %c0, %phase = %true)")],
        protocol.STALE_READ,
        1,
        CONSUMER_WAIT,
    ),
    "missing_drain": ([(DRAIN, "")], protocol.MISSING_DRAIN, 1, 'role = "producer"'),
    "seed_drain": ([(DRAIN, SEED_DRAIN)], protocol.MISSING_DRAIN, 1, 'role = "producer"'),
    "empty_arrival_count": (
        [("arrival_count = 128 : i32", "arrival_count = 64 : i32")],
        protocol.OVER_ARRIVAL,
        1,
        RELEASE,
    ),
    "empty_under_arrival": (
        [("arrival_count = 128 : i32", "arrival_count = 256 : i32")],
        protocol.DEADLOCK,
        1,
        PRODUCER_WAIT,
    ),
    "tx_bytes_short": (
        [("tx_bytes = 32768", "tx_bytes = 16384")],
        protocol.TX_MISMATCH,
        1,
        "wsc.mbarrier_arrive_expect_tx",
    ),
    "tx_bytes_long": (
        [("tx_bytes = 32768", "tx_bytes = 65536")],
        protocol.TX_MISMATCH,
        1,
        "wsc.mbarrier_arrive_expect_tx",
    ),
    "early_release": (
        [(WAIT_GROUP + "\n      " + RELEASE, RELEASE + "\n      " + WAIT_GROUP)],
        protocol.EARLY_RELEASE,
        1,
        RELEASE,
    ),
    "wait_group_pending_one": (
        [(WAIT_GROUP, WAIT_GROUP.replace("pending = 0", "pending = 1"))],
        protocol.EARLY_RELEASE,
        1,
        RELEASE,
    ),
    "barrier_before_sync": (
        [('  "wsc.sync"() : () -> ()\n', "")],
        protocol.BARRIER_BEFORE_INIT,
        1,
        CONSUMER_WAIT,
    ),
    "stage_overwritten": (
        [("      " + PRODUCER_WAIT + "\n      %k0", "      %k0")],
        protocol.STAGE_OVERWRITTEN,
        5,
        '"wsc.tma_load"(%a',
    ),
    "release_before_read": (
        [
            ("      " + RELEASE + "\n", ""),
            (CONSUMER_WAIT + "\n", CONSUMER_WAIT + "\n      " + RELEASE + "\n"),
        ],
        protocol.STAGE_OVERWRITTEN,
        5,
        '"wsc.tma_load"(%a',
    ),
}


def plant(text: str, edits) -> str:
    for old, new in edits:
        if isinstance(old, re.Pattern):
            assert old.search(text), old.pattern
            text = old.sub(lambda _, new=new: new, text, count=1)
        else:
            text = edit(text, old, new)
    return text


@pytest.mark.parametrize("name", PLANTED_BUGS)
def test_planted_bug_is_found(name):
    edits, kind, k_tiles, line = PLANTED_BUGS[name]
    text = plant(matmul_v3(4), edits)
    violation = find_violation(text)
    assert violation is not None, name
    assert (violation.kind, violation.k_tiles, violation.num_stages) == (kind, k_tiles, 4)
    assert violation.message.endswith(f"(k_tiles = {k_tiles}, num_stages = 4)")
    assert line in offending_line(text, violation)


def test_a_deadlock_notes_where_every_other_group_is_blocked():
    """The producer's first wait for the wrong parity deadlocks: the error is
    at that wait, and a note shows the consumer blocked at its own wait (the
    wait to fix may be either)."""
    edits, _, _, _ = PLANTED_BUGS["producer_initial_phase"]
    text = matmul_v3()
    for old, new in edits:
        text = edit(text, old, new)
    violation = find_violation(text)
    assert violation.kind == protocol.DEADLOCK
    ((location, message),) = violation.notes
    assert message.startswith(
        "the consumer role [0, 128) is blocked here, waiting for parity 0 on full[0]"
    )
    _, line, _ = file_line_col(location)
    assert CONSUMER_WAIT in text.splitlines()[line - 1]


@pytest.mark.parametrize("name", PLANTED_BUGS)
def test_planted_bug_is_found_with_two_stages(name):
    edits, kind, _, line = PLANTED_BUGS[name]
    text = plant(matmul_v3(4), edits)
    violation = find_violation(with_stages(text, 2))
    assert violation is not None and violation.kind == kind
    assert line in offending_line(text, violation)


@pytest.mark.parametrize("num_stages", range(2, 9))
def test_seed_drain_is_short_below_num_stages(num_stages):
    """The seed's min(k_tiles, num_stages) drain waits for only
    max(0, 2 * k_tiles - num_stages) of the k_tiles releases it owes."""
    text = with_stages(plant(matmul_v3(4), PLANTED_BUGS["seed_drain"][0]), num_stages)
    for k_tiles in range(1, 2 * num_stages + 1):
        violation = find_violation(text, k_tiles=k_tiles)
        if k_tiles >= num_stages:
            assert violation is None
            continue
        assert violation.kind == protocol.MISSING_DRAIN
        outstanding = k_tiles - max(0, 2 * k_tiles - num_stages)
        assert f"producer exits with {outstanding} release" in violation.message
        assert 'role = "producer"' in offending_line(text, violation)


def test_in_flight_wgmma_overwritten():
    """V2 with one stage and wait_group pending = 1 (the last group retired
    before the store): the next tile is copied into the stage the previous
    WGMMA still reads."""
    text = edit(matmul_v2(1), "{pending = 0 : i32}", "{pending = 1 : i32}")
    store = '  "wsc.store"(%acc'
    text = edit(text, store, '  "wsc.wgmma_wait_group"() {pending = 0 : i32} : () -> ()\n' + store)
    violation = find_violation(text)
    assert (violation.kind, violation.k_tiles) == (protocol.STAGE_OVERWRITTEN, 2)
    assert "still reads it" in violation.message
    assert '"wsc.tma_load"(%a' in offending_line(text, violation)


def test_in_flight_accumulator_stored():
    """V2 with wait_group pending = 1 and no wait after the loop: the store
    reads the accumulator while the last K tile's WGMMAs still write it."""
    text = edit(matmul_v2(4), "{pending = 0 : i32}", "{pending = 1 : i32}")
    violation = find_violation(text)
    assert (violation.kind, violation.k_tiles) == (protocol.REGISTER_RACE, 1)
    assert violation.message.startswith("wsc.store reads the 128x128 f32 register tile while")
    assert [message for _, message in violation.notes] == ["the register tile is made here"]
    assert '"wsc.store"(%acc' in offending_line(text, violation)


def test_phase_overrun():
    """Two consumer groups release each stage, but the empty barriers expect
    one group's arrivals: each release completes two phases, and the producer's
    wait for the first one misses it."""
    text = edit(matmul_v3(4), "num_threads = 160 : i32}", "num_threads = 288 : i32}")
    consumer = text[text.index("  %is_consumer =") : text.index("  %is_producer =")]
    second = consumer.replace("%is_consumer", "%is_consumer1").replace(
        "thread_begin = 0 :", "thread_begin = 128 :"
    )
    text = edit(text, "  %is_producer =", second + "  %is_producer =")
    text = edit(
        text,
        "thread_begin = 128 : i32, num_threads = 32",
        "thread_begin = 256 : i32, num_threads = 32",
    )
    assert find_violation(edit(text, "arrival_count = 128", "arrival_count = 256")) is None
    violation = find_violation(text)
    assert (violation.kind, violation.k_tiles) == (protocol.PHASE_OVERRUN, 1)
    assert RELEASE in offending_line(text, violation)


# --- the API


def test_k_tiles_checks_one_extent():
    text = plant(matmul_v3(4), PLANTED_BUGS["stage_overwritten"][0])
    assert find_violation(text, k_tiles=4) is None
    assert find_violation(text, max_k_tiles=4) is None
    assert find_violation(text, k_tiles=6).k_tiles == 6


def test_violation_is_a_located_pass_error():
    text = plant(matmul_v3(4), PLANTED_BUGS["tx_bytes_short"][0])
    with pytest.raises(PassError, match=r"declares 16384 bytes on full\[0\] .* deliver 32768"):
        check_protocol(ir.Module.parse(text))


def test_the_ir_is_unchanged():
    module = ir.Module.parse(matmul_v3(4))
    before = str(module)
    check_protocol(module)
    assert str(module) == before


def test_unknown_op_is_an_error():
    text = edit(matmul_v3(4), "%bx = gpu.block_id x", "%bx = gpu.thread_id x")
    with pytest.raises(PassError, match="verify-pipeline cannot interpret 'gpu.thread_id'") as info:
        check_protocol(ir.Module.parse(text))
    assert not isinstance(info.value, ProtocolViolation)
    assert "gpu.thread_id" in offending_line(text, info.value)
