"""Runs a compiled kernel on the machine under each schedule and K extent,
and reports the most telling violation (see wsc.protocol)."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass

from wsc.ir_utils import (
    kernels,
)
from wsc.protocol.interpret import (
    BarrierSpec,
    Kernel,
    compile_kernel,
)
from wsc.protocol.machine import (
    Barrier,
    BarrierArray,
    Copy,
    Preempt,
    Process,
    Rendezvous,
    Ring,
    Wait,
)
from wsc.protocol.violations import (
    ARRIVAL_WITHOUT_PARTIAL,
    BARRIER_BEFORE_INIT,
    COUNTER_LEFT_SET,
    DEADLOCK,
    DIAGNOSIS_ORDER,
    EARLY_REDUCE,
    EARLY_RELEASE,
    MISSING_DRAIN,
    OVER_ARRIVAL,
    PARTIAL_AFTER_ARRIVAL,
    PARTIAL_SHARED,
    PHASE_OVERRUN,
    SPLITS_MISMATCH,
    STAGE_OUT_OF_RANGE,
    STAGE_OVERWRITTEN,
    STAGING_RACE,
    STALE_READ,
    STORE_BEFORE_REDUCE,
    UNDER_ARRIVAL,
    ProtocolViolation,
    Violation,
    unsupported,
)


def check_protocol(module_op, max_k_tiles: int | None = None, k_tiles: int | None = None) -> None:
    """Simulate every kernel of `module_op` and raise a `ProtocolViolation` at
    the first violation of the mbarrier protocol.

    Each kernel runs with K = k_tiles * block_k for k_tiles = 1 ..
    `max_k_tiles` (default 3 * num_stages + 1: every stage wraps around at
    least three times), or for `k_tiles` alone, and, under the first schedule,
    with the last tile of every dim ragged (one element of it: roles that
    count tiles differently, as floor and ceiling, part there); returns None
    when every run is clean.
    The violation carries `kind` (one of the kind constants of wsc.protocol),
    `k_tiles`, `num_stages` and `ragged`. An op the simulator cannot
    interpret raises a plain `PassError` instead."""
    for kernel_op in kernels(module_op.operation):
        kernel = compile_kernel(kernel_op)
        last = max_k_tiles or 3 * kernel.num_stages + 1
        arrivals = (False, True) if kernel.split_k else (True,)
        for tile_extent, grid in _GRIDS if kernel.persistent else ((1, (0, 1)),):
            for count in [k_tiles] if k_tiles else range(1, last + 1):
                # With one group waiting for copies, the order copies land in
                # among those it waits for changes nothing: newest first is
                # the first schedule again.
                schedules = _SCHEDULES if kernel.copy_waiters > 1 else _SCHEDULES[:-1]
                runs = [(schedule, False) for schedule in schedules] + [(_SCHEDULES[0], True)]
                found = [
                    (violation, ragged)
                    for schedule, ragged in runs
                    for arrives_last in arrivals
                    if (
                        violation := _simulate(
                            kernel, count, tile_extent, schedule, arrives_last, grid, ragged
                        )
                    )
                ]
                if found:
                    violation, ragged = min(
                        found, key=lambda found: DIAGNOSIS_ORDER.index(found[0].kind)
                    )
                    raise ProtocolViolation(
                        violation.kind,
                        violation.location,
                        violation.message,
                        count,
                        kernel.num_stages,
                        tile_extent**2,
                        grid,
                        violation.notes,
                        ragged,
                    )


#: A persistent kernel's runs: (tiles along M and along N, (the simulated
#: cluster, clusters in the grid)). The grid of three for four tiles puts
#: the simulated block's share of the work mid-way (a stream-K block then
#: hands tiles over at both ends); that of four for nine tiles gives a
#: stream-K block a whole tile first. A grid never exceeds the tiles, as no
#: launch does.
_GRIDS = ((1, (0, 1)), (2, (0, 1)), (2, (1, 3)), (3, (1, 4)))


@dataclass(frozen=True)
class _Schedule:
    lazy_delivery: bool  # copies land only when no process can move otherwise
    producers_first: bool  # processes issuing copies have priority
    #: The other processes (consumer groups, and CTAs) in the reverse order:
    #: a group that releases before it reads is caught only when it runs last.
    readers_reversed: bool = False
    #: Lazy delivery lands the newest copy a process waits for first: a read
    #: of an older copy that no wait of the reader covers then finds it in
    #: flight (the oldest first hides it behind another group's wait).
    newest_first: bool = False


_SCHEDULES = (
    _Schedule(lazy_delivery=True, producers_first=False),  # readers ahead
    _Schedule(lazy_delivery=False, producers_first=True),  # producers ahead
    _Schedule(lazy_delivery=False, producers_first=True, readers_reversed=True),
    _Schedule(lazy_delivery=True, producers_first=False, newest_first=True),
)  # producers ahead, readers reversed; readers ahead, newest copies first


class _Simulation:
    """One simulation of a kernel for one K extent under one schedule."""

    def __init__(
        self,
        kernel: Kernel,
        k_tiles: int,
        tile_extent: int,
        schedule: _Schedule,
        arrives_last: bool = True,
        grid: tuple[int, int] = (0, 1),
        ragged: bool = False,
    ):
        self.kernel, self.schedule = kernel, schedule
        #: (the simulated cluster, the grid's clusters) along x.
        self.cluster, self.clusters = grid
        #: Whether this block's wsc.partial_arrives are the last of their splits.
        self.arrives_last = arrives_last
        #: The last tile of every dim is one element wide (memref.dim).
        self.ragged = ragged
        self.k_extent = k_tiles * kernel.block_k - (kernel.block_k - 1 if ragged else 0)
        self.tile_extent = tile_extent
        # Per CTA of the cluster (one without clusters): its rings and barriers.
        ctas = kernel.ctas
        self.rings = [{spec: Ring(spec) for spec in kernel.rings} for _ in range(ctas)]
        self.arrays = [
            {
                spec: BarrierArray(spec, f" of CTA {cta}" if ctas > 1 else "")
                for spec in kernel.barriers
            }
            for cta in range(ctas)
        ]
        self.in_flight: deque[Copy] = deque()
        #: "empty" barrier spec -> the ring specs a copy issuer filled after a
        #: wait on it: an arrive on it releases a stage of those rings only.
        self.guarded: dict[BarrierSpec, set] = {}
        #: (ring, stage) -> (state, process) of the staged epilogues'
        #: staging stages: "written" by wsc.store_shared, "fenced" by the
        #: writers' wsc.fence_proxy_async, "published" by a wsc.sync after
        #: it (or "synced" by a wsc.sync without the fence: visible to the
        #: threads, not to TMA); then "reading" from a wsc.tma_store,
        #: "waited" after the storing thread's wsc.tma_store_wait, or
        #: "copied" by a wsc.coalesced_store; free again after a wsc.sync.
        self.staging: dict = {}
        #: (ring, stage) that wsc.store_shared or a TMA copy has filled: a
        #: store out of any other stage copies out memory nothing wrote.
        self.filled: set = set()
        #: (process, first row) -> rows of the partial sums it stored there.
        self.partial_rows: dict = {}
        self.step = 0
        self.processes = [
            Process(self, spec, kernel, cta) for cta in range(ctas) for spec in kernel.processes
        ]
        for cta in range(ctas):
            by_spec = {p.spec: p for p in self.processes if p.cta == cta}
            for ring in self.rings[cta].values():
                ring.readers = [by_spec[spec] for spec in ring.spec.readers]
        issuers = [p for p in self.processes if p.spec in kernel.copy_issuers]
        others = [p for p in self.processes if p.spec not in kernel.copy_issuers]
        if schedule.readers_reversed:
            others.reverse()
        self.priority = issuers + others if schedule.producers_first else others + issuers

    # -- scheduling

    def run(self) -> None:
        while True:
            process = next(
                (
                    p
                    for p in self.priority
                    if not p.finished and (p.pause is None or p.pause.ready(self))
                ),
                None,
            )
            if process is not None:
                self._resume(process)
            elif self.in_flight:
                self._deliver(self._next_landing())
            elif all(p.finished for p in self.processes):
                self._check_end()
                return
            else:
                raise self._deadlock()

    def _resume(self, process: Process) -> None:
        if isinstance(process.pause, Wait):
            barrier = process.pause.barrier
            # A wait that returns with no phase completed since the group's
            # last one has the wrong parity, unless the stage starts out free.
            if barrier.completed == process.observed.get(barrier, 0):
                process.early_waits[barrier] = process.pause
            else:
                process.early_waits.pop(barrier, None)
            process.observed[barrier] = barrier.completed
            process.waits += 1
            if barrier.spec.kind == "empty":
                process.empty_waited = barrier.spec
        elif isinstance(process.pause, Rendezvous):
            cluster = process.pause.cluster
            for cta, arrays in enumerate(self.arrays):
                for array in arrays.values():
                    if cluster or cta == process.cta:
                        array.visible |= array.allocated
                    if cluster:
                        array.cluster_visible |= array.allocated
        self.step += 1
        try:
            process.pause = next(process.steps)
            process.paused_at = self.step
        except StopIteration:
            process.finished = True

    def _next_landing(self) -> Copy:
        """The copy to land when no process can move: the oldest (or newest)
        one on a barrier a process waits on, else the oldest. Copies land in
        no set order, so one on a barrier no reader waited on must not land
        in the shadow of one that is waited on."""
        waited = {
            p.pause.barrier for p in self.processes if not p.finished and isinstance(p.pause, Wait)
        }
        order = reversed(self.in_flight) if self.schedule.newest_first else self.in_flight
        copy = next((c for c in order if c.barrier in waited), self.in_flight[0])
        self.in_flight.remove(copy)
        return copy

    def _deliver(self, copy: Copy) -> None:
        copy.delivered = True
        copy.barrier.delivered += copy.bytes
        self._settle(copy.barrier, copy.op)

    def _settle(self, barrier: Barrier, op) -> None:
        """Complete the barrier's phase once its arrivals and bytes are in (`op`
        brought the last of them). Raise when the bytes the phase expects are
        not those its copies deliver, or when a waiter whose phase has already
        completed has not returned yet: completing the next one flips the
        parity under it, and it misses its phase."""
        if not barrier.has_all_arrivals_and_bytes():
            return
        if barrier.issued != barrier.declared:
            raise barrier.tx_mismatch()
        for process in self.processes:
            pause = process.pause
            if isinstance(pause, Wait) and pause.barrier is barrier and pause.ready(self):
                done = (
                    f"by phase {barrier.completed - 1}"
                    if barrier.completed
                    else "on the fresh barrier"
                )
                raise Violation(
                    PHASE_OVERRUN,
                    op,
                    f"phase overrun on {barrier.name}: phase {barrier.completed} "
                    f"completes while the wait of the {process.name} for parity "
                    f"{pause.parity}, already satisfied {done}, has not returned: "
                    f"it then misses phase {barrier.completed} (more phases "
                    f"complete than the waiter expects)",
                )
        barrier.complete_phase()

    # -- the ops

    def _all_arrays(self) -> Iterator[BarrierArray]:
        for arrays in self.arrays:
            yield from arrays.values()

    def allocate(self, process: Process, spec: BarrierSpec) -> BarrierArray:
        array = self.arrays[process.cta][spec]
        array.allocated = True
        return array

    def rendezvous(self, process: Process, op, cluster: bool = False) -> Rendezvous:
        """Pause at a block-wide wsc.sync (or a wsc.cluster_sync); passing it
        makes the barriers allocated so far visible (see _resume)."""
        if cluster:
            process.cluster_syncs_reached += 1
            return Rendezvous(op, process.cluster_syncs_reached, process.cta, True)
        process.syncs_reached += 1
        return Rendezvous(op, process.syncs_reached, process.cta, False)

    def _barrier(self, op, array: BarrierArray, stage: int, remote: bool = False) -> Barrier:
        """barriers[stage] of `array`, used by its own CTA or (`remote`) another."""
        if remote and not array.cluster_visible:
            raise Violation(
                BARRIER_BEFORE_INIT,
                op,
                f"{array.spec.name} of another CTA is used "
                f"before its initialization is visible to this one: no "
                f"wsc.cluster_sync between its wsc.mbarrier_alloc and this op",
            )
        if not array.visible:
            raise Violation(
                BARRIER_BEFORE_INIT,
                op,
                f"{array.spec.name} is used before its initialization is visible: "
                f"no block-wide wsc.sync between its wsc.mbarrier_alloc and this op",
            )
        if not 0 <= stage < len(array.barriers):
            raise Violation(
                STAGE_OUT_OF_RANGE,
                op,
                f"stage {stage} is outside the {len(array.barriers)} barriers of {array.spec.name}",
            )
        return array.barriers[stage]

    def wait(self, op, array, stage, parity) -> Wait:
        return Wait(op, self._barrier(op, array, stage), parity)

    @staticmethod
    def _check_arrival(op, barrier: Barrier, count: int) -> None:
        pending = barrier.arrival_count - barrier.arrived
        if count <= pending:
            return
        if pending == 0 and barrier.delivered < barrier.declared:
            raise Violation(
                OVER_ARRIVAL,
                op,
                f"over-arrival on {barrier.name}: phase {barrier.completed} has all "
                f"its arrivals and waits only for "
                f"{barrier.declared - barrier.delivered} transaction bytes in "
                f"flight (the stage is re-armed before its previous copy landed)",
            )
        raise Violation(
            OVER_ARRIVAL,
            op,
            f"over-arrival on {barrier.name}: {count} arrivals exceed the "
            f"{pending} still pending in phase {barrier.completed}",
        )

    def _arrive(self, op, barrier: Barrier, count: int) -> None:
        self._check_arrival(op, barrier, count)
        barrier.arrived += count
        barrier.last_arrive = op
        self._settle(barrier, op)

    def arrive(
        self, process, op, array, stage, count, every_cta: bool = False, elected: bool = False
    ) -> type[Preempt]:
        """An arrive on barriers[stage] of `array`, or with `every_cta` on that
        barrier of every CTA of the cluster; `elected`: by one thread of the
        process for all of them."""
        targets = (
            [(arrays[array.spec], cta != process.cta) for cta, arrays in enumerate(self.arrays)]
            if every_cta
            else [(array, False)]
        )
        released = self._released_by(array.spec, stage)
        if elected and array.spec.kind != "turns":
            self._check_elected_release(process, op, array.spec, stage, released)
        for target, remote in targets:
            barrier = self._barrier(op, target, stage, remote)
            # An arrive on a turns array passes a turn and releases no stage.
            reader = next(filter(released, process.unretired_reads()), None)
            if array.spec.kind != "turns" and reader is not None:
                ring, _, wgmma = reader
                raise Violation(
                    EARLY_RELEASE,
                    op,
                    f"stage {stage} released before the WGMMA reading it has "
                    f"completed ({self._why_unretired(process, released)} before this "
                    f"arrive on {barrier.name})",
                    notes=[
                        (wgmma.location, f"the WGMMA that reads {ring.spec.name} stage {stage}")
                    ],
                )
            self._arrive(op, barrier, count)
        return Preempt

    @staticmethod
    def _check_elected_release(process, op, spec: BarrierSpec, stage: int, released) -> None:
        """An elected thread's release of a stage that its group's threads
        read with wsc.load_shared since their last wsc.sync: the other
        threads may still be reading it when the refill lands."""
        read = next((key for key in process.unsynced_reads if released((*key, None))), None)
        if read is None:
            return
        ring, _ = read
        raise Violation(
            EARLY_RELEASE,
            op,
            f"stage {stage} released by the elected thread alone while the other threads "
            f"of {process.name} may still be reading it: no wsc.sync between their "
            f"wsc.load_shared and this arrive on {spec.name} (sync first, or arrive with "
            f"every thread outside the wsc.elect)",
            notes=[
                (
                    process.unsynced_reads[read].location,
                    f"the wsc.load_shared that reads {ring.spec.name} stage {stage}",
                )
            ],
        )

    def _released_by(self, spec: BarrierSpec, stage: int):
        """The test of a (ring, stage) read being of the stage an arrive on
        `spec` releases: that stage of the rings filled after a wait on
        `spec`, or of every ring before any such fill."""
        rings = self.guarded.get(spec)
        return lambda read: read[1] == stage and (rings is None or read[0].spec in rings)

    @staticmethod
    def _why_unretired(process, released) -> str:
        """Why a WGMMA of `process` reading the `released` stage is still in
        flight, and what retires it."""
        if any(map(released, process.open_group)):
            return (
                "its group is not committed: a wsc.wgmma_commit_group, then a "
                "wsc.wgmma_wait_group, must retire it"
            )
        groups = list(process.committed)
        newest = max(i for i, group in enumerate(groups) if any(map(released, group)))
        later = len(groups) - 1 - newest
        if later == 0:
            return (
                "its group, the last committed, is still in flight: a "
                "wsc.wgmma_wait_group {pending = 0} must retire it"
            )
        return (
            f"its group is still in flight, {later} committed after it: a "
            f"wsc.wgmma_wait_group {{pending = {later}}} or fewer must retire it"
        )

    def arrive_expect_tx(self, op, array, stage, tx_bytes) -> type[Preempt]:
        barrier = self._barrier(op, array, stage)
        self._check_arrival(op, barrier, 1)
        barrier.declared += tx_bytes  # the bytes are expected before the arrival counts
        barrier.last_expect_tx = op
        self._arrive(op, barrier, 1)
        return Preempt

    def store_shared(self, process, op, ring: Ring, stage: int) -> None:
        if not 0 <= stage < ring.spec.num_stages:
            raise self._ring_stage_out_of_range(op, ring, stage)
        state, _ = self.staging.get((ring, stage), ("free", None))
        if state in ("reading", "waited"):
            why = (
                "no wsc.tma_store_wait by the storing thread"
                if state == "reading"
                else "no wsc.sync after the storing thread's wsc.tma_store_wait"
            )
            raise Violation(
                STAGING_RACE,
                op,
                f"{ring.spec.name} stage {stage} is written while a TMA store may "
                f"still read it ({why})",
            )
        if state == "copied":
            raise Violation(
                STAGING_RACE,
                op,
                f"{ring.spec.name} stage {stage} is written while other threads "
                f"may still copy it out (no wsc.sync after the "
                f"wsc.coalesced_store)",
            )
        self.staging[(ring, stage)] = ("written", process)
        self.filled.add((ring, stage))

    def _check_filled(self, op, what: str, ring: Ring, stage: int) -> None:
        if (ring, stage) not in self.filled:
            raise Violation(
                STAGING_RACE,
                op,
                f"{what} of {ring.spec.name} stage {stage}, which nothing wrote: no "
                f"wsc.store_shared or TMA copy filled it",
            )

    def _staging_step(self, process, before: str, after: str) -> None:
        for key, (state, owner) in self.staging.items():
            if owner is process and state == before:
                self.staging[key] = (after, process)

    def staging_fence(self, process) -> None:
        self._staging_step(process, "written", "fenced")

    def sync(self, process) -> None:
        """A wsc.sync or wsc.cluster_sync reached by every thread of `process`:
        their reads and staging writes before it are done."""
        process.unsynced_reads.clear()
        self._staging_step(process, "fenced", "published")
        self._staging_step(process, "written", "synced")
        self._staging_step(process, "waited", "free")
        self._staging_step(process, "copied", "free")

    def staging_wait(self, process, pending: int) -> None:
        """A wsc.tma_store_wait: every TMA store of `process` but its last
        `pending` has read its stage."""
        while len(process.stores) > pending:
            key = process.stores.popleft()
            if self.staging.get(key) == ("reading", process):
                self.staging[key] = ("waited", process)

    def tma_store(self, process, op, ring: Ring, stage: int) -> None:
        if not 0 <= stage < ring.spec.num_stages:
            raise self._ring_stage_out_of_range(op, ring, stage)
        self._check_filled(op, "TMA store", ring, stage)
        state, _ = self.staging.get((ring, stage), ("free", None))
        if state in ("written", "synced", "fenced"):
            why = (
                "no wsc.fence_proxy_async made them visible to TMA"
                if state != "fenced"
                else "no wsc.sync after the writers' wsc.fence_proxy_async"
            )
            raise Violation(
                STAGING_RACE,
                op,
                f"TMA store of {ring.spec.name} stage {stage}, which "
                f"wsc.store_shared wrote, but {why}",
            )
        self.staging[(ring, stage)] = ("reading", process)
        process.stores.append((ring, stage))

    def coalesced_store(self, process, op, ring: Ring, stage: int) -> None:
        if not 0 <= stage < ring.spec.num_stages:
            raise self._ring_stage_out_of_range(op, ring, stage)
        self._check_filled(op, "coalesced store", ring, stage)
        state, _ = self.staging.get((ring, stage), ("free", None))
        if state in ("written", "fenced"):
            raise Violation(
                STAGING_RACE,
                op,
                f"coalesced store of {ring.spec.name} stage {stage}, which "
                f"wsc.store_shared wrote, but no wsc.sync after the writes made "
                f"them visible to the other threads",
            )
        self.staging[(ring, stage)] = ("copied", process)

    def tma_load(
        self, op, ring: Ring, stage: int, array, multicast: bool, process: Process
    ) -> type[Preempt]:
        """A TMA copy of a tile into `ring`; `multicast`: the issuing CTA's
        slice of it into that ring of every CTA of the cluster, completing on
        each CTA's barrier."""
        if process.empty_waited is not None:
            self.guarded.setdefault(process.empty_waited, set()).add(ring.spec)
        if not multicast:
            self._copy(
                op, ring, stage, array, ring.copies[stage] + 1, ring.spec.tile_bytes, remote=False
            )
            return Preempt
        if ring.spec.exclusive:
            raise unsupported(op, " on a ring whose copies each go to one reader")
        ctas = self.kernel.ctas
        for cta in range(ctas):
            target = self.rings[cta][ring.spec]
            target.slices = ctas
            fill = target.issued[stage].get(process.cta, 0) + 1
            target.issued[stage][process.cta] = fill
            self._copy(
                op,
                target,
                stage,
                self.arrays[cta][array.spec],
                fill,
                ring.spec.tile_bytes // ctas,
                remote=cta != process.cta,
            )
        return Preempt

    def _copy(self, op, ring: Ring, stage: int, array, fill: int, size: int, remote: bool) -> None:
        """Copy `size` bytes of fill number `fill` into `ring`'s stage."""
        barrier = self._barrier(op, array, stage, remote)
        name = ring.spec.name
        if not 0 <= stage < ring.spec.num_stages:
            raise self._ring_stage_out_of_range(op, ring, stage)
        for other in self.processes:
            if any(read[:2] == (ring, stage) for read in other.unretired_reads()):
                raise Violation(
                    STAGE_OVERWRITTEN,
                    op,
                    f"{name} stage {stage} overwritten while a WGMMA of the "
                    f"{other.name} still reads it",
                )
        if self.staging.get((ring, stage), ("free", None))[0] == "reading":
            raise Violation(
                STAGING_RACE,
                op,
                f"{name} stage {stage} overwritten while a TMA store may still "
                f"read it (no wsc.tma_store_wait before the stage's release)",
            )
        self.staging.pop((ring, stage), None)
        self.filled.add((ring, stage))
        if ring.spec.exclusive and ring.taken[stage] < ring.copies[stage]:
            raise Violation(
                STAGE_OVERWRITTEN,
                op,
                f"{name} stage {stage} overwritten before any of its readers "
                f"read its previous copy (lost tile)",
            )
        for reader in [] if ring.spec.exclusive else ring.readers:
            if reader.reads.get((ring, stage), 0) < fill - 1:
                raise Violation(
                    STAGE_OVERWRITTEN,
                    op,
                    f"{name} stage {stage} overwritten before the "
                    f"{reader.name} read its previous copy (lost tile)",
                )
        copy = Copy(op, barrier, size)
        ring.copies[stage] = max(ring.copies[stage], fill)
        fills = ring.fills[stage]
        fills.setdefault(fill, []).append(copy)
        for old in [f for f in fills if f < fill - 1]:
            del fills[old]
        ring.latest[stage] = copy
        barrier.issued += copy.bytes
        barrier.last_copy = op
        if self.schedule.lazy_delivery:
            self.in_flight.append(copy)
        else:
            self._deliver(copy)

    @staticmethod
    def _ring_stage_out_of_range(op, ring: Ring, stage: int) -> Violation:
        return Violation(
            STAGE_OUT_OF_RANGE,
            op,
            f"stage {stage} is outside the {ring.spec.num_stages} stages of ring {ring.spec.name}",
        )

    def wgmma(self, process, op, reads: tuple[tuple[Ring, int, bool], ...]) -> None:
        """A WGMMA of `process` reads a stage of each of its operands' rings:
        `reads` holds (ring, stage, resident) triples; a resident stage (an
        operand loaded once, wsc.wgmma's a_stage) is read again and again, so
        every read sees its latest copy. Two WGMMAs reading one stage with no
        wait between them (A shared by two products) read the same copy."""
        for ring, stage, resident in reads:
            self._read(
                process, op, "wgmma", ring, stage, resident, self._again(process, ring, stage)
            )
            process.open_group.append((ring, stage, op))

    def load_shared(self, process, op, ring: Ring, stage: int) -> None:
        """A synchronous read of a stage into registers (wsc.load_shared);
        reads with no wait between them (a stage read in parts, or twice)
        read the same copy."""
        self._read(
            process, op, "wsc.load_shared", ring, stage, False, self._again(process, ring, stage)
        )
        process.unsynced_reads[(ring, stage)] = op

    @staticmethod
    def _again(process, ring: Ring, stage: int) -> bool:
        """Whether `process` read `ring`'s stage before in this loop trip with
        no wait since (that read's copy is the one this read sees), noting
        this read. A read a trip later is a new one: its wait may be missing."""
        key, now = (ring, stage), (process.waits, process.trips)
        again = key in process.reads and process.read_waits.get(key) == now
        process.read_waits[key] = now
        return again

    def _read(
        self, process, op, what: str, ring: Ring, stage: int, resident: bool, again: bool
    ) -> None:
        """`process` reads `ring`'s stage: the copy it waited for must have
        landed and must not have been replaced. `again`: the copy its
        previous read of the stage saw."""
        name = ring.spec.name
        if not 0 <= stage < ring.spec.num_stages:
            raise self._ring_stage_out_of_range(op, ring, stage)
        loaded = ring.copies[stage]
        if resident:
            expected = max(loaded, 1)
        elif ring.spec.exclusive:
            # The copy whose landing completed the phase this process's
            # wait saw: each copy into a stage completes one phase of its
            # barrier. A wait that saw none let the read through too early.
            latest = ring.latest[stage]
            expected = process.observed.get(latest.barrier, 0) if latest else 0
            if expected == 0:
                early = self._early_full_wait(process, stage)
                if early is not None:
                    raise self._early_read(process, op, what, ring, stage, early)
                raise Violation(
                    STALE_READ,
                    op,
                    f"{what} reads {name} stage {stage} before its data landed "
                    f"(the {process.name} has seen no copy into it "
                    f"complete)",
                )
        else:
            # The n-th read of a stage sees the n-th copy into it.
            expected = process.reads.get((ring, stage), 0) + (0 if again else 1)
        if loaded > expected:
            raise Violation(
                STALE_READ,
                op,
                f"{what} reads {name} stage {stage} after it was refilled: it "
                f"sees copy #{loaded} where it expects copy #{expected}",
            )
        if loaded < expected or not ring.landed(stage, expected):
            early = self._early_full_wait(process, stage)
            if early is not None:
                raise self._early_read(process, op, what, ring, stage, early)
            state = "is still in flight" if loaded == expected else "was never issued"
            raise Violation(
                STALE_READ,
                op,
                f"{what} reads {name} stage {stage} before its data landed "
                f"(copy #{expected} of the stage {state})",
            )
        process.reads[(ring, stage)] = expected
        ring.taken[stage] = max(ring.taken[stage], expected)

    @staticmethod
    def _early_full_wait(process, stage: int) -> Wait | None:
        """The group's latest wait on a full barrier of `stage` that returned
        with no phase completed since its previous one, if any."""
        early = [
            wait
            for barrier, wait in process.early_waits.items()
            if barrier.spec.kind == "full" and barrier.index == stage
        ]
        return early[-1] if early else None

    @staticmethod
    def _early_read(process, op, what: str, ring: Ring, stage: int, wait: Wait) -> Violation:
        """A read let through by a wait on a full barrier that returned at
        once: blamed on the wait, whose parity is one phase behind."""
        barrier = wait.barrier
        if barrier.completed == 0:
            why = (
                f"{barrier.name} has completed no phase yet, and a wait returns at once "
                f"while its parity differs from the barrier's current phase (0); the "
                f"first wait on a barrier that copies complete is for parity 0"
            )
        else:
            why = (
                f"phase {barrier.completed - 1} of {barrier.name} completed, which the "
                f"{process.name} had already waited for: its parity is one phase behind"
            )
        return Violation(
            STALE_READ,
            wait.op,
            f"this wait for parity {wait.parity} on {barrier.name} returns before the copy "
            f"it guards lands, so the {what} after it reads {ring.spec.name} stage {stage} "
            f"too early: {why}",
            notes=[(op.location, f"the {what} that reads {ring.spec.name} stage {stage}")],
        )

    # -- verdicts

    def _stalled_tx_mismatch(self) -> Violation | None:
        """A phase that has all its arrivals and every copy delivered, yet
        declared more bytes than arrived: nothing will ever complete it."""
        for array in self._all_arrays():
            for barrier in array.barriers:
                if (
                    barrier.arrived == barrier.arrival_count
                    and barrier.last_expect_tx
                    and barrier.issued == barrier.delivered != barrier.declared
                ):
                    return barrier.tx_mismatch()
        return None

    def _missing_arrival(self, waits: list[Process]) -> Violation | None:
        """A blocked wait whose barrier no op of the kernel arrives on, or
        whose copies landed in a phase no expect_tx opened: said in those
        terms, at the op the author left something out before."""
        for process in waits:
            assert isinstance(process.pause, Wait)  # the callers' premise
            barrier = process.pause.barrier
            if barrier.issued and barrier.arrived == 0 and barrier.last_expect_tx is None:
                return Violation(
                    DEADLOCK,
                    barrier.last_copy,
                    f"deadlock: these copies complete on {barrier.name}, but no "
                    f"wsc.mbarrier_arrive_expect_tx on {barrier.name} comes before them: its "
                    f"phase waits for {barrier.arrival_count} arrival(s) that never come, so "
                    f"the {process.name}'s wait on it never returns",
                )
        for process in waits:
            assert isinstance(process.pause, Wait)
            barrier = process.pause.barrier
            spec = barrier.spec
            if spec not in self.kernel.arrived_on:
                return Violation(
                    DEADLOCK,
                    process.pause.op,
                    f"deadlock: this wait on {barrier.name} never returns: nothing in the "
                    f"kernel arrives on {spec.name} (wsc.mbarrier_arrive), and its phases "
                    f"complete only after {spec.arrival_count} arrivals",
                )
        return None

    def _waiting_on_itself(self, waits: list[Process]) -> Violation | None:
        """A blocked wait on a stage release the waiting group itself must
        give (it arrives on that array): blamed before the other groups'
        waits, which block only because it does."""
        for process in waits:
            assert isinstance(process.pause, Wait)
            barrier = process.pause.barrier
            releasers = self.kernel.releasers.get(barrier.spec, ())
            if barrier.spec.kind == "turns" or barrier.arrived or process.spec not in releasers:
                continue
            full = [s.name for s in self.kernel.barriers if s.kind == "full"]
            hint = f" (the stages it reads are filled on {', '.join(full)})" if full else ""
            return Violation(
                DEADLOCK,
                process.pause.op,
                f"deadlock: this wait for parity {process.pause.parity} on {barrier.name} "
                f"never returns: the {process.name} waits on {barrier.spec.name}, whose "
                f"phases need its own wsc.mbarrier_arrive, and none has come in this "
                f"phase; is this the wrong barrier array{hint}? ({barrier.status()})",
            )
        return None

    def _deadlock(self) -> Violation:
        """Blame the wait that can never return: one on a barrier stuck with
        part of its arrivals if any, else the one that blocked last (before it
        blocked, every blocked process waited on one that could still run)."""
        mismatch = self._stalled_tx_mismatch()
        if mismatch:
            return mismatch
        waits = [p for p in self.processes if isinstance(p.pause, Wait)]
        missing = self._missing_arrival(waits)
        if missing:
            return missing
        own = self._waiting_on_itself(waits)
        if own:
            return own
        stuck = [p for p in waits if _stuck_with_part_of_its_arrivals(p.pause)]
        blamed = max(
            stuck or waits or [p for p in self.processes if not p.finished],
            key=lambda p: p.paused_at,
        )
        pause = blamed.pause
        if isinstance(pause, Rendezvous):
            what = (
                "wsc.cluster_sync is never reached by every thread group of the cluster"
                if pause.cluster
                else "block-wide wsc.sync is never reached by every thread group"
            )
            return Violation(DEADLOCK, pause.op, f"deadlock: this {what}")
        assert isinstance(pause, Wait)  # a blocked process waits or meets
        barrier = pause.barrier
        hint = ""
        if (
            barrier not in blamed.observed
            and pause.parity == 0
            and barrier.spec in self.kernel.release_waits.get(blamed.spec, ())
        ):
            hint = (
                f"; a stage is free before its first release, so the first wait on "
                f"{barrier.spec.name} is for parity 1, which returns at once on phase 0"
            )
        # Where every other group is blocked: the wait to fix may be one of those.
        others = []
        for process in waits:
            other = process.pause
            if process is not blamed and isinstance(other, Wait):
                others.append(
                    (
                        other.op.location,
                        f"the {process.name} is blocked here, waiting for parity "
                        f"{other.parity} on {other.barrier.name} ({other.barrier.status()})",
                    )
                )
        return Violation(
            DEADLOCK,
            pause.op,
            f"deadlock: this wait for parity {pause.parity} on "
            f"{barrier.name} never returns: every thread group is blocked and no "
            f"copy is in flight ({barrier.status()}){hint}",
            others,
        )

    # -- split-K hand-off: every block runs the same code on its own split, so
    # the simulated block's order of store, arrival and reduction stands for
    # every split's; its arrival is taken as the last one or as an earlier one.

    def _partial(self, process, op, row: int, splits: int) -> str | None:
        state, stored_splits, _ = process.partials.get(row, (None, splits, None))
        if stored_splits != splits:
            raise Violation(
                SPLITS_MISMATCH,
                op,
                f"splits-mismatch: {op.name} counts {splits} splits of the partial "
                f"sums of rows from {row}, stored as one of {stored_splits}",
            )
        return state

    def partial_store(self, process, op, row: int, splits: int, rows: int, tile) -> None:
        """`process` stores the partial sums `tile` holds, `rows` rows from `row`."""
        state = self._partial(process, op, row, splits)
        self.partial_rows[process, row] = rows
        process.partial_tiles[tile] = row
        sharer = next(
            (
                (other, first)
                for (other, first), count in self.partial_rows.items()
                if other is not process
                and other.cta == process.cta
                and first < row + rows
                and row < first + count
                and other.partials[first][0] != "reduced"
            ),
            None,
        )
        if sharer is not None:
            other, first = sharer
            raise Violation(
                PARTIAL_SHARED,
                op,
                f"partial-shared: the {process.name} stores a partial sum of rows "
                f"[{row}, {row + rows}), and the {other.name} one of rows "
                f"[{first}, {first + self.partial_rows[sharer]}): their workspace "
                f"rows (and counters) overlap, so the sums overwrite each other and "
                f"a split's arrivals are miscounted",
            )
        if state in ("published", "complete"):
            raise Violation(
                PARTIAL_AFTER_ARRIVAL,
                op,
                f"partial-after-arrival: the {process.name} stores a partial sum of rows "
                f"from {row} after its split arrived on their counter: the last split "
                f"may reduce them before it lands",
            )
        process.partials[row] = ("stored", splits, op)

    def store(self, process, op, tile) -> None:
        """A store of `tile` to C: its partial sums, if handed over, reduced."""
        row = process.partial_tiles.get(tile)
        state = process.partials[row][0] if row is not None else "reduced"
        if state != "reduced":
            why = {
                "stored": "before its split arrived on their counter",
                "published": "though its split's arrival was not the last: a later split "
                "reduces and stores the tile",
                "complete": "before wsc.partial_reduce added the other splits' sums",
            }[state]
            raise Violation(
                STORE_BEFORE_REDUCE,
                op,
                f"store-before-reduce: the {process.name} stores the tile whose partial "
                f"sums of rows from {row} it handed over, {why}",
            )

    def partial_arrive(self, process, op, row: int, splits: int) -> int:
        state = self._partial(process, op, row, splits)
        if state != "stored":
            raise Violation(
                ARRIVAL_WITHOUT_PARTIAL,
                op,
                f"arrival-without-partial: the {process.name} arrives on the counter of "
                f"rows from {row} without a partial sum of them stored since its "
                f"last arrival: the last split would reduce what the workspace holds",
            )
        process.partials[row] = ("complete" if self.arrives_last else "published", splits, op)
        return int(self.arrives_last)

    def partial_reduce(self, process, op, row: int, splits: int) -> None:
        state = self._partial(process, op, row, splits)
        if state != "complete":
            why = (
                "though its arrival was not the last: other splits may not have stored theirs"
                if state == "published"
                else "before its split arrived on their counter"
            )
            raise Violation(
                EARLY_REDUCE,
                op,
                f"early-reduce: the {process.name} reduces the partial sums of rows from "
                f"{row} {why}",
            )
        process.partials[row] = ("reduced", splits, op)

    def _check_end(self) -> None:
        """Once every process has finished: every phase a process opened must
        have completed, and every producer must have seen each stage it filled
        released before it exited."""
        for array in self._all_arrays():
            for barrier in array.barriers:
                if barrier.arrived == barrier.arrival_count or (
                    barrier.arrived == 0 and barrier.issued
                ):
                    raise barrier.tx_mismatch()
                if barrier.arrived:
                    raise Violation(
                        UNDER_ARRIVAL,
                        barrier.last_arrive,
                        f"under-arrival: every thread group has finished and {barrier.status()}",
                    )
        for process in self.processes:
            for row, (state, _, op) in process.partials.items():
                if state == "complete":
                    raise Violation(
                        COUNTER_LEFT_SET,
                        op,
                        f"counter-left-set: the {process.name}'s arrival on the counter of "
                        f"rows from {row} was the last, and it exits without "
                        f"wsc.partial_reduce: the counter is never set back to zero, so "
                        f"the next launch miscounts",
                    )
                if state == "stored":
                    raise Violation(
                        ARRIVAL_WITHOUT_PARTIAL,
                        op,
                        f"arrival-without-partial: the {process.name} stores a partial sum "
                        f"of rows from {row} and exits without arriving on their counter: "
                        f"the other splits never see it",
                    )
            releases = self.kernel.release_waits.get(process.spec, ())
            outstanding = sum(
                barrier.completed - process.observed.get(barrier, 0)
                for spec in releases
                for barrier in self.arrays[process.cta][spec].barriers
            )
            if outstanding:
                plural = "release" if outstanding == 1 else "releases"
                raise Violation(
                    MISSING_DRAIN,
                    process.spec.location_op,
                    f"producer exits with {outstanding} {plural} outstanding "
                    f"(missing drain): the {process.name} must wait on "
                    f"{', '.join(s.name for s in releases)} until every stage it "
                    f"filled has been released",
                )


def _stuck_with_part_of_its_arrivals(pause: object) -> bool:
    return isinstance(pause, Wait) and 0 < pause.barrier.arrived < pause.barrier.arrival_count


def _simulate(
    kernel: Kernel,
    k_tiles: int,
    tile_extent: int,
    schedule: _Schedule,
    arrives_last: bool,
    grid: tuple[int, int],
    ragged: bool,
) -> Violation | None:
    try:
        _Simulation(kernel, k_tiles, tile_extent, schedule, arrives_last, grid, ragged).run()
    except Violation as violation:
        return violation
    return None
