"""The shared state a simulated cluster runs on: mbarriers and their phases,
ring stages and the TMA copies into them, and the processes (thread groups)
with the pauses at which the scheduler (wsc.protocol.simulate) interleaves
them."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator

from wsc.protocol.interpret import BarrierSpec, Kernel, ProcessSpec, RingSpec
from wsc.protocol.violations import (
    TX_MISMATCH,
    Violation,
)


class Barrier:
    """One mbarrier: its completed phases and the tally of the current one."""

    __slots__ = (
        "name",
        "spec",
        "index",
        "arrival_count",
        "completed",
        "arrived",
        "declared",
        "issued",
        "delivered",
        "last_arrive",
        "last_expect_tx",
        "last_copy",
    )

    def __init__(self, name: str, spec: BarrierSpec, index: int):
        self.name, self.arrival_count = name, spec.arrival_count
        #: The array's spec and this barrier's index in it.
        self.spec, self.index = spec, index
        self.completed = 0
        self._open_phase()

    def _open_phase(self) -> None:
        self.arrived = self.declared = self.issued = self.delivered = 0
        self.last_arrive = self.last_expect_tx = self.last_copy = None

    def passes(self, parity: int) -> bool:
        """Whether a wait for `parity` returns now."""
        return (self.completed & 1) != parity

    def status(self) -> str:
        text = (
            f"{self.name} is in phase {self.completed} with {self.arrived} of "
            f"{self.arrival_count} arrivals"
        )
        if self.declared or self.delivered:
            text += f" and {self.delivered} of {self.declared} transaction bytes"
        return text

    def has_all_arrivals_and_bytes(self) -> bool:
        return self.arrived == self.arrival_count and self.delivered == self.declared

    def complete_phase(self) -> None:
        self.completed += 1
        self._open_phase()

    def tx_mismatch(self) -> Violation:
        if self.last_expect_tx is None:
            return Violation(
                TX_MISMATCH,
                self.last_copy,
                f"copies complete {self.issued} bytes on {self.name} in a phase "
                f"that no wsc.mbarrier_arrive_expect_tx declares",
            )
        return Violation(
            TX_MISMATCH,
            self.last_expect_tx,
            f"expect_tx declares {self.declared} bytes on {self.name} but the "
            f"copies completing on it deliver {self.issued}",
        )


class BarrierArray:
    """One CTA's barrier array: `visible` to its own threads after a sync,
    `cluster_visible` to the other CTAs' after a cluster sync."""

    __slots__ = ("spec", "barriers", "allocated", "visible", "cluster_visible")

    def __init__(self, spec: BarrierSpec, suffix: str = ""):
        self.spec = spec
        self.barriers = [
            Barrier(f"{spec.name}[{i}]{suffix}", spec, i) for i in range(spec.num_barriers)
        ]
        self.allocated = self.visible = self.cluster_visible = False


class Copy:
    """A TMA copy of one tile into a ring stage, in flight until delivered."""

    __slots__ = ("op", "barrier", "bytes", "delivered")

    def __init__(self, op, barrier, size):
        self.op, self.barrier, self.bytes = op, barrier, size
        self.delivered = False


class Ring:
    """One CTA's ring buffer: per stage, how many fills went in, the copies of
    each recent fill (one, or in a cluster one slice per CTA of a multicast
    tile), the latest copy and the newest fill some reader has read (the
    lost-tile check of an exclusive ring)."""

    __slots__ = ("spec", "copies", "latest", "readers", "taken", "fills", "issued", "slices")

    def __init__(self, spec: RingSpec):
        self.spec = spec
        self.copies = [0] * spec.num_stages
        self.latest: list[Copy | None] = [None] * spec.num_stages
        self.readers: list = []
        self.taken = [0] * spec.num_stages
        self.fills: list[dict] = [{} for _ in range(spec.num_stages)]
        self.issued: list[dict] = [{} for _ in range(spec.num_stages)]  # issuing CTA -> fills
        self.slices = 1

    def landed(self, stage: int, fill: int) -> bool:
        """Whether every copy of fill number `fill` of `stage` has landed."""
        copies = self.fills[stage].get(fill, [])
        return len(copies) == self.slices and all(copy.delivered for copy in copies)


class Wait:
    """A process paused at an mbarrier wait."""

    __slots__ = ("op", "barrier", "parity")

    def __init__(self, op, barrier, parity):
        self.op, self.barrier, self.parity = op, barrier, parity

    def ready(self, simulation) -> bool:
        return self.barrier.passes(self.parity)


class Rendezvous:
    """A process paused at its n-th block-wide wsc.sync (of its CTA) or n-th
    wsc.cluster_sync (of every CTA)."""

    __slots__ = ("op", "number", "cta", "cluster")

    def __init__(self, op, number, cta, cluster):
        self.op, self.number, self.cta, self.cluster = op, number, cta, cluster

    def ready(self, simulation) -> bool:
        if self.cluster:
            return all(
                p.finished or p.cluster_syncs_reached >= self.number for p in simulation.processes
            )
        return all(
            p.finished or p.syncs_reached >= self.number
            for p in simulation.processes
            if p.cta == self.cta
        )


class Preempt:
    """A scheduling point after a step that may let another process move."""

    @staticmethod
    def ready(simulation) -> bool:
        return True


class Process:
    """One thread group running the kernel body as a generator that pauses at
    every step the scheduler must order."""

    def __init__(self, simulation, spec: ProcessSpec, kernel: Kernel, cta: int = 0):
        self.simulation, self.spec, self.cta = simulation, spec, cta
        self.finished = False
        self.pause: Wait | Rendezvous | type[Preempt] | None = None
        self.paused_at = 0  # scheduler step of the current pause
        self.syncs_reached = 0
        self.cluster_syncs_reached = 0
        self.reads: dict = {}  # (ring, stage) -> copies of it read so far
        self.waits = 0  # mbarrier waits passed so far
        self.trips = 0  # loop trips begun so far, of any loop
        #: The "empty" barrier array of our latest wait that returned: the
        #: rings we copy into next are the ones its releases hand back.
        self.empty_waited: BarrierSpec | None = None
        #: (ring, stage) -> (`waits`, `trips`) at its latest read: reads in one
        #: loop trip with no wait between them read one copy.
        self.read_waits: dict = {}
        #: (ring, stage) -> the wsc.load_shared that read it since the group's
        #: last wsc.sync: until then only the reading thread knows it is done.
        self.unsynced_reads: dict = {}
        self.open_group: list = []
        #: groups of (ring, stage, WGMMA op) read, oldest first
        self.committed: deque = deque()
        #: The register tiles each WGMMA group writes and reads (as the
        #: groups above): (tile, written) pairs, the tile an ir.Value.
        self.open_tiles: list = []
        self.committed_tiles: deque = deque()
        self.stores: deque = deque()  # (ring, stage) of TMA stores not waited for, oldest first
        self.observed: dict = {}  # barrier -> completed phases a wait of ours has seen
        #: barrier -> our latest wait on it, if it returned with no phase
        #: completed since our previous one (insertion order: oldest first).
        self.early_waits: dict = {}
        #: Split-K: first row of each partial sum this group handled -> (state,
        #: splits, op): "stored", then "published" by its arrival, or
        #: "complete" when that arrival was the last, then "reduced".
        self.partials: dict[int, tuple[str, int, object]] = {}
        #: The register tile (an ir.Value) whose partial sums went to a first row.
        self.partial_tiles: dict = {}
        self.steps = self.run_block(kernel.body, [None] * kernel.num_slots)

    @property
    def name(self) -> str:
        """The thread group, and in a cluster its CTA, as reports name it."""
        ctas = self.simulation.kernel.ctas
        return self.spec.name + (f" of CTA {self.cta}" if ctas > 1 else "")

    def run_block(self, nodes, frame) -> Iterator:
        for node in nodes:
            if node.nested:
                yield from node.run(self, frame)
            else:
                pause = node.execute(self, frame)
                if pause is not None:
                    yield pause

    def unretired_reads(self) -> Iterator[tuple[Ring, int, object]]:
        yield from self.open_group
        for group in self.committed:
            yield from group

    def tiles_in_flight(self) -> Iterator[tuple[object, bool]]:
        """(tile, written) of every WGMMA of this process not yet retired."""
        yield from self.open_tiles
        for group in self.committed_tiles:
            yield from group

    def commit_group(self) -> None:
        self.committed.append(self.open_group)
        self.open_group = []
        self.committed_tiles.append(self.open_tiles)
        self.open_tiles = []

    def wait_group(self, pending: int) -> None:
        while len(self.committed) > pending:
            self.committed.popleft()
        while len(self.committed_tiles) > pending:
            self.committed_tiles.popleft()
