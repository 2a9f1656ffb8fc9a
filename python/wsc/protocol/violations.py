"""The kinds of protocol violation, the order a report prefers them in, and
the errors the simulator raises."""

from __future__ import annotations

from mlir import ir

from wsc.diagnostics import PassError

# The kinds of violation (the docstring of wsc.protocol says what each means).
STALE_READ = "stale-read"
STAGE_OVERWRITTEN = "stage-overwritten"
EARLY_RELEASE = "early-release"
STAGING_RACE = "staging-race"
REGISTER_RACE = "register-race"
TX_MISMATCH = "expect-tx-mismatch"
STAGE_OUT_OF_RANGE = "stage-out-of-range"
BARRIER_BEFORE_INIT = "barrier-before-init"
OVER_ARRIVAL = "over-arrival"
PHASE_OVERRUN = "phase-overrun"
UNDER_ARRIVAL = "under-arrival"
DEADLOCK = "deadlock"
MISSING_DRAIN = "missing-drain"
PARTIAL_AFTER_ARRIVAL = "partial-after-arrival"
ARRIVAL_WITHOUT_PARTIAL = "arrival-without-partial"
EARLY_REDUCE = "early-reduce"
SPLITS_MISMATCH = "splits-mismatch"
PARTIAL_SHARED = "partial-shared"
STORE_BEFORE_REDUCE = "store-before-reduce"
COUNTER_LEFT_SET = "counter-left-set"
#: The kinds in the order a report prefers them when both schedules fail on
#: the same K extent.
DIAGNOSIS_ORDER = (
    STALE_READ,
    STAGE_OVERWRITTEN,
    EARLY_RELEASE,
    STAGING_RACE,
    REGISTER_RACE,
    TX_MISMATCH,
    STAGE_OUT_OF_RANGE,
    BARRIER_BEFORE_INIT,
    OVER_ARRIVAL,
    PHASE_OVERRUN,
    UNDER_ARRIVAL,
    DEADLOCK,
    MISSING_DRAIN,
    PARTIAL_SHARED,
    EARLY_REDUCE,
    STORE_BEFORE_REDUCE,
    PARTIAL_AFTER_ARRIVAL,
    ARRIVAL_WITHOUT_PARTIAL,
    SPLITS_MISMATCH,
    COUNTER_LEFT_SET,
)


class ProtocolViolation(PassError):
    """A synchronisation bug, located at the offending op; the message ends
    with the K extent (in tiles, the last of each dim maybe ragged), ring size
    and (when more than one) output tiles and blocks it shows up at."""

    def __init__(
        self,
        kind: str,
        location: ir.Location,
        message: str,
        k_tiles: int,
        num_stages: int,
        tiles: int = 1,
        grid: tuple[int, int] = (0, 1),
        notes: list[tuple[ir.Location, str]] | None = None,
        ragged: bool = False,
    ):
        last = ", every dim's last tile ragged" if ragged else ""
        where = f"k_tiles = {k_tiles}{last}, num_stages = {num_stages}"
        cluster, clusters = grid
        if clusters > 1:
            where += f", {tiles} output tiles over {clusters} blocks, as block {cluster}"
        elif tiles > 1:
            where += f", {tiles} output tiles per block"
        super().__init__(location, f"{message} ({where})", notes)
        self.kind = kind
        self.k_tiles = k_tiles
        self.num_stages = num_stages
        self.tiles = tiles
        self.ragged = ragged


class Violation(Exception):
    """A violation inside one simulation, before the K extent is attached."""

    def __init__(
        self,
        kind: str,
        op: ir.Operation,
        message: str,
        notes: list[tuple[ir.Location, str]] | None = None,
    ):
        super().__init__(message)
        self.kind, self.location, self.message = kind, op.location, message
        self.notes = notes or []


def unsupported(op: ir.Operation, why: str = "") -> PassError:
    return PassError(op.location, f"verify-pipeline cannot interpret '{op.name}'{why}")
