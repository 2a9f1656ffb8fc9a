"""A static check of the mbarrier protocol of wsc kernels, by simulation.

`check_protocol(module)` runs every kernel of a module (a func.func with
`wsc.num_threads`) on K extents of 1 .. 3*num_stages+1 tiles and raises a
`ProtocolViolation`, a located `PassError`, at the first synchronisation bug it
finds. Block 0 of a grid of one block is simulated; every dim that is not a K
extent is one tile long, and, for a persistent kernel (one that reads
gpu.grid_dim to stride over tiles), also two tiles long, so its block walks
four tiles and the ring carries over from tile to tile. A kernel launched in
clusters (`wsc.cluster_size` = n) is simulated as one whole cluster: n
blocks, each with its own processes, rings and barriers, block x = rank, a grid
of n blocks; a multicast copy lands its slice in every block's ring and
completes on every block's barrier, a cluster arrive reaches every block's
barrier, and a `wsc.cluster_sync` waits for every process of the cluster (and
publishes the barriers to the other blocks, which a block-wide sync does
not). Passes call it on their own output; `--verify-pipeline` wraps it.

The kernel is interpreted concretely. Each thread group is one process: every
`wsc.role` is one (all its threads run the same code), and the block's threads
outside every role are one more (in the non-specialized form that is the whole
block). Every process runs the kernel body, entering only its own role's
`scf.if`; an `scf.if` on `wsc.elect` is run as the elected thread. The
processes share the ring buffers, the mbarriers and the TMA copies in flight,
and a scheduler interleaves them at every barrier, copy and WGMMA step.

One interleaving cannot show every race, so each K extent runs under two
schedules, each the worst case for one side of the pipeline:

  readers ahead     copies land as late as possible (only when no process can
                    move otherwise, oldest first) and processes that issue no
                    copy run first: a consumer that reads before its data has
                    landed is caught;
  producers ahead   copies land as soon as they are issued and processes that
                    issue copies run first: a producer that refills a stage
                    before every reader has read it is caught.

What is checked, each reported at the op that commits it (kind in brackets):

  [stale-read]          a WGMMA reads a stage whose copy has not landed, or
                        not the copy it expects: the n-th read of a stage by a
                        process must see the n-th copy into it (on a ring whose
                        copies each go to one reader, the copy whose landing
                        completed the phase the process's wait saw);
  [stage-overwritten]   a copy into a stage that a WGMMA still reads, or whose
                        previous copy some reader has not read (no reader, on
                        a ring whose copies each go to one reader: lost tile);
  [early-release]       a plain arrive while the process's own un-retired
                        WGMMAs read that stage index;
  [staging-race]        a TMA store of a stage that wsc.store_shared wrote
                        without a wsc.fence_proxy_async and then a wsc.sync
                        after it, or a wsc.store_shared into a stage that
                        a TMA store may still read (no wsc.tma_store_wait
                        by the storing thread, then a wsc.sync, in between);
                        a wsc.coalesced_store of a stage written without a
                        wsc.sync after the writes, or a wsc.store_shared
                        into one that other threads may still be copying
                        (no wsc.sync after the wsc.coalesced_store);
  [expect-tx-mismatch]  the bytes an expect_tx declares differ from those the
                        copies completing in its phase deliver;
  [stage-out-of-range]  a stage index outside its ring or barrier array;
  [barrier-before-init] a barrier op before the first block-wide wsc.sync
                        after the barriers' allocation;
  [over-arrival]        more arrivals than the current phase has pending;
  [phase-overrun]       a phase completes while a waiter for the previous one
                        has not returned (its wait then misses that phase);
  [under-arrival]       at the end, a phase left with part of its arrivals;
  [deadlock]            every process blocked and no copy in flight: the wait
                        blamed is one on a barrier stuck with part of its
                        arrivals, else the one that blocked last (it closed
                        the cycle: the others waited while it could still run);
  [missing-drain]       a producer (a process issuing copies) exits before its
                        waits have seen every release of the barriers other
                        processes release stages on.

A ring's copies each go to one reader (ping-pong consumer groups taking
whole tiles in turn) when two processes' WGMMAs read the same rows of its A
tile: they must be computing different output tiles. Else every reader reads
every copy (each its rows of the tile).

When both schedules fail, the report is the most telling violation, in the
order above: a data hazard (what the bug does to a tile) before the barrier
symptom it causes, the readers-ahead one on a tie.

mbarrier semantics: a barrier starts in phase 0; a phase completes when its
`arrival_count` arrivals are in and the transaction bytes declared by
`wsc.mbarrier_arrive_expect_tx` have been delivered by the copies completing
on it. A wait for parity P returns once the latest completed phase has parity
P, i.e. while (completed phases & 1) != P: a wait for parity 1 passes on a
fresh barrier (the producer's first pass over the empty barriers), a wait for
parity 0 blocks until the first completion (the consumer's first full wait).
A plain `wsc.mbarrier_arrive` counts one arrival per thread of the process
(one under `wsc.elect`, one per warp with `per_warp`); an expect_tx counts one.
"""

from __future__ import annotations

import operator
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from mlir import ir

from wsc import ops
from wsc.diagnostics import PassError
from wsc.dialect import acc_type_parameters
from wsc.ir_utils import (
    cluster_size,
    defining_op,
    kernel_threads,
    kernels,
    walk,
)
from wsc.target.hopper import WARP_SIZE

# Kinds of violation, in the order the report prefers them when both schedules
# fail on the same K extent (see the module docstring).
STALE_READ = "stale-read"
STAGE_OVERWRITTEN = "stage-overwritten"
EARLY_RELEASE = "early-release"
STAGING_RACE = "staging-race"
TX_MISMATCH = "expect-tx-mismatch"
STAGE_OUT_OF_RANGE = "stage-out-of-range"
BARRIER_BEFORE_INIT = "barrier-before-init"
OVER_ARRIVAL = "over-arrival"
PHASE_OVERRUN = "phase-overrun"
UNDER_ARRIVAL = "under-arrival"
DEADLOCK = "deadlock"
MISSING_DRAIN = "missing-drain"
_DIAGNOSIS_ORDER = (
    STALE_READ,
    STAGE_OVERWRITTEN,
    EARLY_RELEASE,
    STAGING_RACE,
    TX_MISMATCH,
    STAGE_OUT_OF_RANGE,
    BARRIER_BEFORE_INIT,
    OVER_ARRIVAL,
    PHASE_OVERRUN,
    UNDER_ARRIVAL,
    DEADLOCK,
    MISSING_DRAIN,
)

#: A loop running longer than this is a bug in the kernel's arithmetic, not a pipeline.
MAX_TRIP_COUNT = 1 << 16


class ProtocolViolation(PassError):
    """A synchronisation bug, located at the offending op; the message ends
    with the K extent, ring size and (when more than one) output tiles per
    block it shows up at."""

    def __init__(
        self,
        kind: str,
        location: ir.Location,
        message: str,
        k_tiles: int,
        num_stages: int,
        tiles: int = 1,
    ):
        where = f"k_tiles = {k_tiles}, num_stages = {num_stages}"
        if tiles > 1:
            where += f", {tiles} output tiles per block"
        super().__init__(location, f"{message} ({where})")
        self.kind = kind
        self.k_tiles = k_tiles
        self.num_stages = num_stages
        self.tiles = tiles


def check_protocol(module_op, max_k_tiles: int | None = None, k_tiles: int | None = None) -> None:
    """Simulate every kernel of `module_op` and raise a `ProtocolViolation` at
    the first violation of the mbarrier protocol.

    Each kernel runs with K = k_tiles * block_k for k_tiles = 1 ..
    `max_k_tiles` (default 3 * num_stages + 1: every stage wraps around at
    least three times), or for `k_tiles` alone; returns None when every run
    is clean. The violation carries `kind` (one of the kind constants of this
    module), `k_tiles` and `num_stages`. An op the simulator cannot interpret
    raises a plain `PassError` instead."""
    for kernel_op in kernels(module_op.operation):
        kernel = _compile_kernel(kernel_op)
        last = max_k_tiles or 3 * kernel.num_stages + 1
        for tile_extent in (1, 2) if kernel.persistent else (1,):
            for count in [k_tiles] if k_tiles else range(1, last + 1):
                found = [
                    v for v in (_simulate(kernel, count, tile_extent, s) for s in _SCHEDULES) if v
                ]
                if found:
                    violation = min(found, key=lambda v: _DIAGNOSIS_ORDER.index(v.kind))
                    raise ProtocolViolation(
                        violation.kind,
                        violation.location,
                        violation.message,
                        count,
                        kernel.num_stages,
                        tile_extent**2,
                    )


# ---------------------------------------------------------------------------
# The kernel, compiled once into nodes over frame slots


class _Violation(Exception):
    """A violation inside one simulation, before the K extent is attached."""

    def __init__(self, kind: str, op: ir.Operation, message: str):
        super().__init__(message)
        self.kind, self.location, self.message = kind, op.location, message


def _unsupported(op: ir.Operation, why: str = "") -> PassError:
    return PassError(op.location, f"verify-pipeline cannot interpret '{op.name}'{why}")


@dataclass(eq=False)
class _ProcessSpec:
    """A thread group: a `wsc.role`, or the block's threads outside every role."""

    name: str
    num_threads: int
    location_op: ir.Operation  # the wsc.role (the kernel): where a missing drain is reported


@dataclass(eq=False)
class _RingSpec:
    name: str
    num_stages: int
    tile_bytes: int
    readers: list[_ProcessSpec] = field(default_factory=list)  # the WGMMA issuers
    exclusive: bool = False  # each copy goes to one reader (see the module docstring)


@dataclass(eq=False)
class _BarrierSpec:
    name: str
    arrival_count: int
    num_barriers: int


@dataclass
class _Kernel:
    body: list
    num_slots: int
    num_stages: int
    block_k: int
    processes: list[_ProcessSpec]
    rings: list[_RingSpec]
    barriers: list[_BarrierSpec]
    copy_issuers: set  # _ProcessSpec that issue TMA copies
    release_waits: dict  # producer _ProcessSpec -> barrier specs others release it on
    persistent: bool  # strides over tiles by gpu.grid_dim
    ctas: int = 1  # CTAs per cluster: the simulation runs every one


def _int_width(type_: ir.Type) -> int:
    if isinstance(type_, ir.IndexType):
        return 64
    if isinstance(type_, ir.IntegerType):
        return type_.width
    raise ValueError(str(type_))


def _signed(value: int, width: int) -> int:
    return value - (1 << width) if value >> (width - 1) else value


def _ceildiv(a: int, b: int) -> int:
    return -(-a // b)


_BINARY: dict[str, Callable[[int, int], int]] = {
    "arith.addi": operator.add,
    "arith.subi": operator.sub,
    "arith.muli": operator.mul,
    "arith.divui": operator.floordiv,
    "arith.remui": operator.mod,
    "arith.ceildivui": _ceildiv,
    "arith.minui": min,
    "arith.maxui": max,
    "arith.xori": operator.xor,
    "arith.andi": operator.and_,
    "arith.ori": operator.or_,
}
# arith.cmpi predicates by their enum value; signed ones compare two's complement.
_CMPI = {
    0: operator.eq,
    1: operator.ne,
    2: operator.lt,
    3: operator.le,
    4: operator.gt,
    5: operator.ge,
    6: operator.lt,
    7: operator.le,
    8: operator.gt,
    9: operator.ge,
}
_SIGNED_CMPI = {2, 3, 4, 5}


class _Compute:
    """A pure op: result = fn(operands), wrapped to the result width."""

    nested = False
    __slots__ = ("op", "fn", "args", "result")

    def __init__(self, op, fn, args, result):
        self.op, self.fn, self.args, self.result = op, fn, args, result

    def execute(self, process, frame):
        try:
            frame[self.result] = self.fn(*[frame[a] for a in self.args])
        except ZeroDivisionError:
            raise PassError(self.op.location, f"'{self.op.name}' divides by zero") from None


class _Dim:
    """memref.dim: the K extent on the dims TMA loads K tiles from, a number
    of tiles (the simulation's tile_extent) elsewhere."""

    nested = False
    __slots__ = ("op", "extents", "index", "result")

    def __init__(self, op, extents, index, result):
        self.op, self.extents, self.index, self.result = op, extents, index, result

    def execute(self, process, frame):
        dimension = frame[self.index]
        if not 0 <= dimension < len(self.extents):  # MLIR's verifier allows it: it is UB
            raise PassError(
                self.op.location,
                f"'memref.dim' op dimension {dimension} is out "
                f"of range for a rank-{len(self.extents)} memref",
            )
        extent = self.extents[dimension]
        simulation = process.simulation
        frame[self.result] = (
            simulation.k_extent if extent is None else extent * simulation.tile_extent
        )


class _Effect:
    """An op acting on the shared state: `act(process, frame)` returns a pause or None."""

    nested = False
    __slots__ = ("op", "act")

    def __init__(self, op, act):
        self.op, self.act = op, act

    def execute(self, process, frame):
        return self.act(process, frame)


class _For:
    nested = True
    __slots__ = ("op", "bounds", "inits", "iv", "iter_args", "body", "yields", "results")

    def __init__(self, op, bounds, inits, iv, iter_args, body, yields, results):
        self.op, self.bounds, self.inits, self.iv = op, bounds, inits, iv
        self.iter_args, self.body, self.yields, self.results = iter_args, body, yields, results

    def run(self, process, frame):
        lower, upper, step = (frame[s] for s in self.bounds)
        if step == 0 or (upper - lower) // step > MAX_TRIP_COUNT:
            raise PassError(
                self.op.location,
                f"verify-pipeline: loop from {lower} to {upper} "
                f"step {step} runs too long to simulate",
            )
        values = [frame[s] for s in self.inits]
        for iv in range(lower, upper, step):
            frame[self.iv] = iv
            for slot, value in zip(self.iter_args, values, strict=True):
                frame[slot] = value
            yield from process.run_block(self.body, frame)
            values = [frame[s] for s in self.yields]
        for slot, value in zip(self.results, values, strict=True):
            frame[slot] = value


class _If:
    """scf.if; `taken(process, frame)` decides: a role's if is entered by that
    role's process, an elect's if by every process (as its elected thread)."""

    nested = True
    __slots__ = ("op", "taken", "then_body", "then_yields", "else_body", "else_yields", "results")

    def __init__(self, op, taken, then_body, then_yields, else_body, else_yields, results):
        self.op, self.taken = op, taken
        self.then_body, self.then_yields = then_body, then_yields
        self.else_body, self.else_yields = else_body, else_yields
        self.results = results

    def run(self, process, frame):
        if self.taken(process, frame):
            body, yields = self.then_body, self.then_yields
        else:
            body, yields = self.else_body, self.else_yields
        yield from process.run_block(body, frame)
        for slot, source in zip(self.results, yields, strict=True):
            frame[slot] = frame[source]


@dataclass
class _Context:
    """Where an op sits: inside which role (None: outside roles, run by every
    process) and whether under an elected thread."""

    role: _ProcessSpec | None = None
    elected: bool = False


class _Compiler:
    """Turns one kernel into nodes whose operands are slots of a flat frame."""

    def __init__(self, kernel: ir.Operation):
        self.kernel = kernel
        self.slots: dict[ir.Value, int] = {}
        self.block_threads = kernel_threads(kernel)
        self.processes: dict[ir.Operation, _ProcessSpec] = {}
        self.rings: dict[ir.Value, _RingSpec] = {}
        self.barriers: dict[ir.Value, _BarrierSpec] = {}
        # What each owner runs: a role's process spec, or None for the code
        # outside roles, which every process runs.
        self.readers: dict = {}  # ring spec -> owners issuing WGMMAs on it
        self.a_rows: list = []  # (owner, first, end): rows of the A tile a WGMMA reads
        self.copy_issuers: set = set()
        self.waits: dict = {}  # owner -> barrier specs waited on
        self.releases: dict = {}  # owner -> barrier specs arrived on (plain arrive)
        self._survey(kernel)

    # -- what the kernel contains, before any node is built

    def _survey(self, kernel: ir.Operation) -> None:
        kernel_ops = list(walk(kernel))
        for op in kernel_ops:
            if op.name == "wsc.role":
                role = ops.Role(op)
                begin, count = role.thread_begin, role.num_threads
                name = f"{role.role} role [{begin}, {begin + count})"
                self.processes[op] = _ProcessSpec(name, count, op)
        outside = self.block_threads - sum(p.num_threads for p in self.processes.values())
        self.outside = None
        if outside > 0:
            self.outside = _ProcessSpec(f"{outside} threads outside every role", outside, kernel)
        # Ring and barrier names read as the protocol: the A and B operands of
        # WGMMA, the full barriers copies complete on, the empty ones.
        operand_names: dict[ir.Value, str] = {}
        k_dims: dict[ir.Value, int] = {}
        for op in kernel_ops:
            if op.name == "wsc.wgmma":
                wgmma = ops.Wgmma(op)
                operand_names.setdefault(wgmma.a, "A")
                operand_names.setdefault(wgmma.b, "B")
                k_dims[wgmma.a] = 1
                k_dims[wgmma.b] = 1 if wgmma.b_layout == "nk" else 0
        for op in kernel_ops:
            if op.name == "wsc.store_shared":
                operand_names.setdefault(ops.StoreShared(op).dst, "C staging")
            elif op.name == "wsc.tma_store":
                operand_names.setdefault(ops.TmaStore(op).src, "C staging")
            elif op.name == "wsc.coalesced_store":
                operand_names.setdefault(ops.CoalescedStore(op).src, "C staging")
        full = {ops.TmaLoad(op).barriers for op in kernel_ops if op.name == "wsc.tma_load"}
        for op in kernel_ops:
            if op.name == "wsc.alloc_shared":
                stages, rows, cols = ir.MemRefType(op.result.type).shape
                element = ir.MemRefType(op.result.type).element_type
                name = operand_names.get(op.result, f"ring{len(self.rings)}")
                self.rings[op.result] = _RingSpec(name, stages, rows * cols * element.width // 8)
            elif op.name == "wsc.mbarrier_alloc":
                alloc = ops.MbarrierAlloc(op)
                name = "full" if alloc.barriers in full else "empty"
                self.barriers[alloc.barriers] = _BarrierSpec(
                    name, alloc.arrival_count, alloc.num_barriers
                )
        for kind in ("full", "empty"):
            same = [b for b in self.barriers.values() if b.name == kind]
            if len(same) > 1:
                for number, spec in enumerate(same):
                    spec.name = f"{kind}{number}"
        self.num_stages = (
            next(iter(self.rings.values())).num_stages
            if self.rings
            else next(iter(self.barriers.values())).num_barriers
            if self.barriers
            else 1
        )
        a_rings = [v for v, name in operand_names.items() if name == "A"]
        self.block_k = (
            ir.MemRefType(a_rings[0].type).shape[2]
            if a_rings
            else next(
                (
                    ir.MemRefType(ops.TmaLoad(op).dst.type).shape[2]
                    for op in kernel_ops
                    if op.name == "wsc.tma_load"
                ),
                1,
            )
        )
        self.extents = self._global_extents(kernel_ops, k_dims)

    @staticmethod
    def _global_extents(kernel_ops, k_dims) -> dict:
        """The extent memref.dim gives each dim of a global memref: the K extent
        (None) on the dim its TMA tiles advance along K, one tile elsewhere."""
        extents = {}
        for op in kernel_ops:
            if op.name == "wsc.tma_load":
                load = ops.TmaLoad(op)
                tile = list(ir.MemRefType(load.dst.type).shape[1:])
                tile[k_dims.get(load.dst, 1)] = None
                extents[load.src] = tuple(tile)
            elif op.name == "wsc.store":
                store = ops.Store(op)
                extents.setdefault(store.dst, acc_type_parameters(store.tile.type)[0])
            elif op.name in ("wsc.tma_store", "wsc.coalesced_store"):
                copy = ops.TmaStore(op) if op.name == "wsc.tma_store" else ops.CoalescedStore(op)
                extents.setdefault(copy.dst, tuple(ir.MemRefType(copy.src.type).shape[1:]))
        return extents

    # -- nodes

    @staticmethod
    def _allocated(table: dict, op: ir.Operation, value: ir.Value):
        """The spec of the ring or barrier array `value`, which must come
        straight from its allocation."""
        if value not in table:
            raise _unsupported(
                op, ": its ring buffer or mbarriers do not come straight from their allocation"
            )
        return table[value]

    def slot(self, value: ir.Value) -> int:
        return self.slots.setdefault(value, len(self.slots))

    def compile(self) -> _Kernel:
        entry = self.kernel.regions[0].blocks[0]
        for argument in entry.arguments:
            if not isinstance(argument.type, ir.MemRefType):
                raise PassError(
                    self.kernel.location,
                    f"verify-pipeline cannot give a value to kernel argument "
                    f"#{argument.arg_number} of type {argument.type}",
                )
        body, _ = self.block(entry, _Context())
        processes = list(self.processes.values()) + ([self.outside] if self.outside else [])
        everyone = set(processes)

        def members(owners):
            return {p for owner in owners for p in ([owner] if owner else everyone)}

        for ring, owners in self.readers.items():
            ring.readers = [p for p in processes if p in members(owners)]
            spans = [span for span in self.a_rows if span[0] in owners]
            ring.exclusive = any(
                a[0] != b[0] and a[1] < b[2] and b[1] < a[2]
                for i, a in enumerate(spans)
                for b in spans[i + 1 :]
            )
        issuers = members(self.copy_issuers)
        release_waits = {}
        for producer in issuers:
            waited = set(self.waits.get(producer, ())) | set(self.waits.get(None, ()))
            released = {
                b
                for owner, specs in self.releases.items()
                for p in members([owner]) - {producer}
                for b in specs
            }
            release_waits[producer] = [
                b for b in self.barriers.values() if b in waited and b in released
            ]
        return _Kernel(
            body,
            len(self.slots),
            self.num_stages,
            self.block_k,
            processes,
            list(self.rings.values()),
            list(self.barriers.values()),
            issuers,
            release_waits,
            any(op.name == "gpu.grid_dim" for op in walk(self.kernel)),
            cluster_size(self.kernel),
        )

    def block(self, block: ir.Block, context: _Context) -> tuple[list, list[int]]:
        """(nodes, slots the terminator yields) of a block."""
        nodes, yields = [], []
        for op in block.operations:
            op = op.operation
            if op.name in ("scf.yield", "func.return"):
                yields = [self.slot(v) for v in op.operands]
            else:
                node = self.op(op, context)
                if node is not None:
                    nodes.append(node)
        return nodes, yields

    def op(self, op: ir.Operation, context: _Context):
        name = op.name
        results = [self.slot(r) for r in op.results]
        args = [self.slot(v) for v in op.operands]
        if name == "arith.constant":
            attr = op.attributes["value"]
            if not isinstance(attr, (ir.IntegerAttr, ir.BoolAttr)):
                raise _unsupported(op, " with a non-integer value")
            value = int(attr.value) % (1 << _int_width(op.result.type))
            return _Compute(op, lambda: value, [], results[0])
        if name in _BINARY or name in (
            "arith.cmpi",
            "arith.select",
            "arith.index_cast",
            "arith.trunci",
            "arith.extui",
        ):
            return _Compute(op, self._arith(op), args, results[0])
        if name in ("gpu.block_id", "wsc.cluster_rank"):
            # One cluster (one block without clusters): block x is the rank.
            slot = results[0]

            def act(process, frame):
                frame[slot] = process.cta

            return _Effect(op, act)
        if name == "gpu.grid_dim":  # one cluster: a persistent kernel's first does every tile
            ctas = cluster_size(self.kernel)
            return _Compute(op, lambda: ctas, [], results[0])
        if name == "memref.dim":
            return self._dim(op, results)
        if name == "scf.for":
            return self._for(op, context, results)
        if name == "scf.if":
            return self._if(op, context, results)
        if name in ("wsc.role", "wsc.elect"):
            return _Compute(op, lambda: 1, [], results[0])
        if name in ("wsc.wgmma_fence", "wsc.acc_alloc", "wsc.cast", "wsc.store"):
            return None
        handler = getattr(self, "_" + name.removeprefix("wsc."), None)
        if not name.startswith("wsc.") or handler is None:
            raise _unsupported(op)
        return handler(op, context)

    @staticmethod
    def _arith(op: ir.Operation) -> Callable:
        mask = (1 << _int_width(op.result.type)) - 1
        name = op.name
        if name in _BINARY:
            binary = _BINARY[name]
            return lambda a, b: binary(a, b) & mask
        if name == "arith.cmpi":
            predicate = ir.IntegerAttr(op.attributes["predicate"]).value
            compare = _CMPI[predicate]
            if predicate in _SIGNED_CMPI:
                width = _int_width(op.opview.lhs.type)
                return lambda a, b: int(compare(_signed(a, width), _signed(b, width)))
            return lambda a, b: int(compare(a, b))
        if name == "arith.select":
            return lambda condition, a, b: a if condition else b
        if name == "arith.index_cast":
            width = _int_width(op.opview.in_.type)
            return lambda a: _signed(a, width) & mask
        return lambda a: a & mask  # trunci, extui

    def _dim(self, op, results):
        source = op.opview.source
        shape = ir.MemRefType(source.type).shape
        known = self.extents.get(source)
        extents = tuple(
            s if not ir.ShapedType.is_dynamic_size(s) else known[d] if known else -1
            for d, s in enumerate(shape)
        )
        if -1 in extents:
            raise PassError(
                op.location,
                "verify-pipeline cannot size this memref: it is "
                "neither loaded by wsc.tma_load nor stored by wsc.store, "
                "wsc.tma_store or wsc.coalesced_store",
            )
        return _Dim(op, extents, self.slot(op.opview.index), results[0])

    def _for(self, op, context, results):
        body_block = op.regions[0].blocks[0]
        iv, *iter_args = [self.slot(a) for a in body_block.arguments]
        body, yields = self.block(body_block, context)
        loop = op.opview
        bounds = [self.slot(v) for v in (loop.lowerBound, loop.upperBound, loop.step)]
        inits = [self.slot(v) for v in loop.initArgs]
        return _For(op, bounds, inits, iv, iter_args, body, yields, results)

    def _if(self, op, context, results):
        condition = defining_op(op.opview.condition)
        inner = context
        if condition is not None and condition.name == "wsc.role":
            role = self.processes[condition]
            inner = _Context(role=role)

            def taken(process, frame):
                return process.spec is role
        elif condition is not None and condition.name == "wsc.elect":
            if op.regions[1].blocks and list(op.regions[1].blocks[0].operations)[:-1]:
                raise _unsupported(op, " on wsc.elect with an else region")
            inner = _Context(role=context.role, elected=True)

            def taken(process, frame):
                return True
        else:
            condition_slot = self.slot(op.opview.condition)

            def taken(process, frame):
                return frame[condition_slot]

        then_body, then_yields = self.block(op.regions[0].blocks[0], inner)
        else_body, else_yields = ([], [])
        if op.regions[1].blocks:
            else_body, else_yields = self.block(op.regions[1].blocks[0], context)
        return _If(op, taken, then_body, then_yields, else_body, else_yields, results)

    # -- wsc ops with an effect on the shared state

    def _alloc_shared(self, op, context):
        buffer = ops.AllocShared(op).buffer
        ring, slot = self.rings[buffer], self.slot(buffer)

        def act(process, frame):
            frame[slot] = process.simulation.rings[process.cta][ring]

        return _Effect(op, act)

    def _mbarrier_alloc(self, op, context):
        barriers = ops.MbarrierAlloc(op).barriers
        spec, slot = self.barriers[barriers], self.slot(barriers)

        def act(process, frame):
            frame[slot] = process.simulation.allocate(process, spec)

        return _Effect(op, act)

    def _cluster_sync(self, op, context):
        if context.role is not None:
            raise _unsupported(op, " inside a role: every thread of the cluster must reach it")

        def act(process, frame):
            process.simulation.staging_sync(process)
            return process.simulation.rendezvous(process, op, cluster=True)

        return _Effect(op, act)

    def _sync(self, op, context):
        if context.role is not None:
            # A barrier of the role's own threads, which run as one process:
            # it only orders their staging writes and waits.
            def act_in_role(process, frame):
                process.simulation.staging_sync(process)

            return _Effect(op, act_in_role)

        def act(process, frame):
            process.simulation.staging_sync(process)
            return process.simulation.rendezvous(process, op)

        return _Effect(op, act)

    # The staged epilogues: each op moves a staging stage's state (see
    # _Simulation.staging).

    def _store_shared(self, op, context):
        store = ops.StoreShared(op)
        ring, stage = self.slot(store.dst), self.slot(store.stage)

        def act(process, frame):
            process.simulation.store_shared(process, op, frame[ring], frame[stage])

        return _Effect(op, act)

    def _fence_proxy_async(self, op, context):
        def act(process, frame):
            process.simulation.staging_fence(process)

        return _Effect(op, act)

    def _tma_store(self, op, context):
        store = ops.TmaStore(op)
        ring, stage = self.slot(store.src), self.slot(store.stage)

        def act(process, frame):
            process.simulation.tma_store(process, op, frame[ring], frame[stage])

        return _Effect(op, act)

    def _coalesced_store(self, op, context):
        store = ops.CoalescedStore(op)
        ring, stage = self.slot(store.src), self.slot(store.stage)

        def act(process, frame):
            process.simulation.coalesced_store(process, op, frame[ring], frame[stage])

        return _Effect(op, act)

    def _tma_store_wait(self, op, context):
        pending = ops.TmaStoreWait(op).pending

        def act(process, frame):
            if pending == 0:
                process.simulation.staging_wait(process)

        return _Effect(op, act)

    def _mbarrier_wait(self, op, context):
        wait = ops.MbarrierWait(op)
        self.waits.setdefault(context.role, set()).add(
            self._allocated(self.barriers, op, wait.barriers)
        )
        barriers, stage, phase = (self.slot(v) for v in (wait.barriers, wait.stage, wait.phase))

        def act(process, frame):
            return process.simulation.wait(op, frame[barriers], frame[stage], frame[phase])

        return _Effect(op, act)

    def _mbarrier_arrive(self, op, context):
        arrive = ops.MbarrierArrive(op)
        self.releases.setdefault(context.role, set()).add(
            self._allocated(self.barriers, op, arrive.barriers)
        )
        barriers, stage = self.slot(arrive.barriers), self.slot(arrive.stage)
        elected = context.elected
        every_cta, per_warp = arrive.every_cta, arrive.per_warp
        if elected and per_warp:
            raise _unsupported(op, " with 'per_warp' under wsc.elect")

        def act(process, frame):
            if elected:
                count = 1
            else:
                count = process.spec.num_threads // (WARP_SIZE if per_warp else 1)
            return process.simulation.arrive(
                process, op, frame[barriers], frame[stage], count, every_cta
            )

        return _Effect(op, act)

    def _mbarrier_arrive_expect_tx(self, op, context):
        arrive = ops.MbarrierArriveExpectTx(op)
        barriers, stage = self.slot(arrive.barriers), self.slot(arrive.stage)
        tx_bytes = arrive.tx_bytes

        def act(process, frame):
            return process.simulation.arrive_expect_tx(op, frame[barriers], frame[stage], tx_bytes)

        return _Effect(op, act)

    def _ring_advance(self, op, context):
        ring_advance = ops.RingAdvance(op)
        num_stages = ring_advance.num_stages

        def advance(stage, phase):
            return (0, phase ^ 1) if stage + 1 >= num_stages else (stage + 1, phase)

        stage, phase = self.slot(ring_advance.stage), self.slot(ring_advance.phase)
        next_stage = self.slot(ring_advance.next_stage)
        next_phase = self.slot(ring_advance.next_phase)

        def act(process, frame):
            frame[next_stage], frame[next_phase] = advance(frame[stage], frame[phase])

        return _Effect(op, act)

    def _tma_load(self, op, context):
        self.copy_issuers.add(context.role)
        load = ops.TmaLoad(op)
        ring, stage, barriers = (self.slot(v) for v in (load.dst, load.stage, load.barriers))
        multicast = load.multicast

        def act(process, frame):
            return process.simulation.tma_load(
                op, frame[ring], frame[stage], frame[barriers], multicast, process
            )

        return _Effect(op, act)

    def _wgmma(self, op, context):
        wgmma = ops.Wgmma(op)
        for operand in (wgmma.a, wgmma.b):
            ring = self._allocated(self.rings, op, operand)
            self.readers.setdefault(ring, set()).add(context.role)
        first = wgmma.a_row
        self.a_rows.append((context.role, first, first + acc_type_parameters(wgmma.acc.type)[0][0]))
        a, b, stage = (self.slot(v) for v in (wgmma.a, wgmma.b, wgmma.stage))

        def act(process, frame):
            process.simulation.wgmma(process, op, frame[a], frame[b], frame[stage])

        return _Effect(op, act)

    def _wgmma_commit_group(self, op, context):
        def act(process, frame):
            process.commit_group()

        return _Effect(op, act)

    def _wgmma_wait_group(self, op, context):
        pending = ops.WgmmaWaitGroup(op).pending

        def act(process, frame):
            process.wait_group(pending)

        return _Effect(op, act)


def _compile_kernel(kernel_op: ir.Operation) -> _Kernel:
    return _Compiler(kernel_op).compile()


# ---------------------------------------------------------------------------
# The shared state of one simulation


class _Barrier:
    """One mbarrier: its completed phases and the tally of the current one."""

    __slots__ = (
        "name",
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

    def __init__(self, name: str, arrival_count: int):
        self.name, self.arrival_count = name, arrival_count
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

    def tx_mismatch(self) -> _Violation:
        if self.last_expect_tx is None:
            return _Violation(
                TX_MISMATCH,
                self.last_copy,
                f"copies complete {self.issued} bytes on {self.name} in a phase "
                f"that no wsc.mbarrier_arrive_expect_tx declares",
            )
        return _Violation(
            TX_MISMATCH,
            self.last_expect_tx,
            f"expect_tx declares {self.declared} bytes on {self.name} but the "
            f"copies completing on it deliver {self.issued}",
        )


class _BarrierArray:
    """One CTA's barrier array: `visible` to its own threads after a sync,
    `cluster_visible` to the other CTAs' after a cluster sync."""

    __slots__ = ("spec", "barriers", "allocated", "visible", "cluster_visible")

    def __init__(self, spec: _BarrierSpec, suffix: str = ""):
        self.spec = spec
        self.barriers = [
            _Barrier(f"{spec.name}[{i}]{suffix}", spec.arrival_count)
            for i in range(spec.num_barriers)
        ]
        self.allocated = self.visible = self.cluster_visible = False


class _Copy:
    """A TMA copy of one tile into a ring stage, in flight until delivered."""

    __slots__ = ("op", "barrier", "bytes", "delivered")

    def __init__(self, op, barrier, size):
        self.op, self.barrier, self.bytes = op, barrier, size
        self.delivered = False


class _Ring:
    """One CTA's ring buffer: per stage, how many fills went in, the copies of
    each recent fill (one, or in a cluster one slice per CTA of a multicast
    tile), the latest copy and the newest fill some reader has read (the
    lost-tile check of an exclusive ring)."""

    __slots__ = ("spec", "copies", "latest", "readers", "taken", "fills", "issued", "slices")

    def __init__(self, spec: _RingSpec):
        self.spec = spec
        self.copies = [0] * spec.num_stages
        self.latest: list[_Copy | None] = [None] * spec.num_stages
        self.readers: list = []
        self.taken = [0] * spec.num_stages
        self.fills: list[dict] = [{} for _ in range(spec.num_stages)]
        self.issued: list[dict] = [{} for _ in range(spec.num_stages)]  # issuing CTA -> fills
        self.slices = 1

    def landed(self, stage: int, fill: int) -> bool:
        """Whether every copy of fill number `fill` of `stage` has landed."""
        copies = self.fills[stage].get(fill, [])
        return len(copies) == self.slices and all(copy.delivered for copy in copies)


class _Wait:
    """A process paused at an mbarrier wait."""

    __slots__ = ("op", "barrier", "parity")

    def __init__(self, op, barrier, parity):
        self.op, self.barrier, self.parity = op, barrier, parity

    def ready(self, simulation) -> bool:
        return self.barrier.passes(self.parity)


class _Rendezvous:
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


class _Preempt:
    """A scheduling point after a step that may let another process move."""

    @staticmethod
    def ready(simulation) -> bool:
        return True


def _stuck_with_part_of_its_arrivals(pause: object) -> bool:
    return isinstance(pause, _Wait) and 0 < pause.barrier.arrived < pause.barrier.arrival_count


class _Process:
    """One thread group running the kernel body as a generator that pauses at
    every step the scheduler must order."""

    def __init__(self, simulation, spec: _ProcessSpec, kernel: _Kernel, cta: int = 0):
        self.simulation, self.spec, self.cta = simulation, spec, cta
        self.finished = False
        self.pause: _Wait | _Rendezvous | type[_Preempt] | None = None
        self.paused_at = 0  # scheduler step of the current pause
        self.syncs_reached = 0
        self.cluster_syncs_reached = 0
        self.reads: dict = {}  # (ring, stage) -> copies of it read so far
        self.open_group: list = []
        self.committed: deque = deque()  # groups of (ring, stage) read, oldest first
        self.observed: dict = {}  # barrier -> completed phases a wait of ours has seen
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

    def unretired_reads(self) -> Iterator[tuple[_Ring, int]]:
        yield from self.open_group
        for group in self.committed:
            yield from group

    def commit_group(self) -> None:
        self.committed.append(self.open_group)
        self.open_group = []

    def wait_group(self, pending: int) -> None:
        while len(self.committed) > pending:
            self.committed.popleft()


@dataclass(frozen=True)
class _Schedule:
    lazy_delivery: bool  # copies land only when no process can move otherwise
    producers_first: bool  # processes issuing copies have priority


_SCHEDULES = (
    _Schedule(lazy_delivery=True, producers_first=False),  # readers ahead
    _Schedule(lazy_delivery=False, producers_first=True),
)  # producers ahead


class _Simulation:
    """One simulation of a kernel for one K extent under one schedule."""

    def __init__(self, kernel: _Kernel, k_tiles: int, tile_extent: int, schedule: _Schedule):
        self.kernel, self.schedule = kernel, schedule
        self.k_extent = k_tiles * kernel.block_k
        self.tile_extent = tile_extent
        # Per CTA of the cluster (one without clusters): its rings and barriers.
        ctas = kernel.ctas
        self.rings = [{spec: _Ring(spec) for spec in kernel.rings} for _ in range(ctas)]
        self.arrays = [
            {
                spec: _BarrierArray(spec, f" of CTA {cta}" if ctas > 1 else "")
                for spec in kernel.barriers
            }
            for cta in range(ctas)
        ]
        self.in_flight: deque[_Copy] = deque()
        #: (ring, stage) -> (state, process) of the staged epilogues'
        #: staging stages: "written" by wsc.store_shared, "fenced" by the
        #: writers' wsc.fence_proxy_async, "published" by a wsc.sync after
        #: it (or "synced" by a wsc.sync without the fence: visible to the
        #: threads, not to TMA); then "reading" from a wsc.tma_store,
        #: "waited" after the storing thread's wsc.tma_store_wait, or
        #: "copied" by a wsc.coalesced_store; free again after a wsc.sync.
        self.staging: dict = {}
        self.step = 0
        self.processes = [
            _Process(self, spec, kernel, cta) for cta in range(ctas) for spec in kernel.processes
        ]
        for cta in range(ctas):
            by_spec = {p.spec: p for p in self.processes if p.cta == cta}
            for ring in self.rings[cta].values():
                ring.readers = [by_spec[spec] for spec in ring.spec.readers]
        issuers = [p for p in self.processes if p.spec in kernel.copy_issuers]
        others = [p for p in self.processes if p.spec not in kernel.copy_issuers]
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
                self._deliver(self.in_flight.popleft())
            elif all(p.finished for p in self.processes):
                self._check_end()
                return
            else:
                raise self._deadlock()

    def _resume(self, process: _Process) -> None:
        if isinstance(process.pause, _Wait):
            process.observed[process.pause.barrier] = process.pause.barrier.completed
        elif isinstance(process.pause, _Rendezvous):
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

    def _deliver(self, copy: _Copy) -> None:
        copy.delivered = True
        copy.barrier.delivered += copy.bytes
        self._settle(copy.barrier, copy.op)

    def _settle(self, barrier: _Barrier, op) -> None:
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
            if isinstance(pause, _Wait) and pause.barrier is barrier and pause.ready(self):
                raise _Violation(
                    PHASE_OVERRUN,
                    op,
                    f"phase overrun on {barrier.name}: phase {barrier.completed} "
                    f"completes before the wait of the {process.name} for "
                    f"phase {barrier.completed - 1} has returned, which then "
                    f"misses it (more phases complete than the waiter expects)",
                )
        barrier.complete_phase()

    # -- the ops

    def _all_arrays(self) -> Iterator[_BarrierArray]:
        for arrays in self.arrays:
            yield from arrays.values()

    def allocate(self, process: _Process, spec: _BarrierSpec) -> _BarrierArray:
        array = self.arrays[process.cta][spec]
        array.allocated = True
        return array

    def rendezvous(self, process: _Process, op, cluster: bool = False) -> _Rendezvous:
        """Pause at a block-wide wsc.sync (or a wsc.cluster_sync); passing it
        makes the barriers allocated so far visible (see _resume)."""
        if cluster:
            process.cluster_syncs_reached += 1
            return _Rendezvous(op, process.cluster_syncs_reached, process.cta, True)
        process.syncs_reached += 1
        return _Rendezvous(op, process.syncs_reached, process.cta, False)

    def _barrier(self, op, array: _BarrierArray, stage: int, remote: bool = False) -> _Barrier:
        """barriers[stage] of `array`, used by its own CTA or (`remote`) another."""
        if remote and not array.cluster_visible:
            raise _Violation(
                BARRIER_BEFORE_INIT,
                op,
                f"{array.spec.name} of another CTA is used "
                f"before its initialization is visible to this one: no "
                f"wsc.cluster_sync between its wsc.mbarrier_alloc and this op",
            )
        if not array.visible:
            raise _Violation(
                BARRIER_BEFORE_INIT,
                op,
                f"{array.spec.name} is used before its initialization is visible: "
                f"no block-wide wsc.sync between its wsc.mbarrier_alloc and this op",
            )
        if not 0 <= stage < len(array.barriers):
            raise _Violation(
                STAGE_OUT_OF_RANGE,
                op,
                f"stage {stage} is outside the {len(array.barriers)} barriers of {array.spec.name}",
            )
        return array.barriers[stage]

    def wait(self, op, array, stage, parity) -> _Wait:
        return _Wait(op, self._barrier(op, array, stage), parity)

    @staticmethod
    def _check_arrival(op, barrier: _Barrier, count: int) -> None:
        pending = barrier.arrival_count - barrier.arrived
        if count <= pending:
            return
        if pending == 0 and barrier.delivered < barrier.declared:
            raise _Violation(
                OVER_ARRIVAL,
                op,
                f"over-arrival on {barrier.name}: phase {barrier.completed} has all "
                f"its arrivals and waits only for "
                f"{barrier.declared - barrier.delivered} transaction bytes in "
                f"flight (the stage is re-armed before its previous copy landed)",
            )
        raise _Violation(
            OVER_ARRIVAL,
            op,
            f"over-arrival on {barrier.name}: {count} arrivals exceed the "
            f"{pending} still pending in phase {barrier.completed}",
        )

    def _arrive(self, op, barrier: _Barrier, count: int) -> None:
        self._check_arrival(op, barrier, count)
        barrier.arrived += count
        barrier.last_arrive = op
        self._settle(barrier, op)

    def arrive(self, process, op, array, stage, count, every_cta: bool = False) -> type[_Preempt]:
        """An arrive on barriers[stage] of `array`, or with `every_cta` on that
        barrier of every CTA of the cluster."""
        targets = (
            [(arrays[array.spec], cta != process.cta) for cta, arrays in enumerate(self.arrays)]
            if every_cta
            else [(array, False)]
        )
        for target, remote in targets:
            barrier = self._barrier(op, target, stage, remote)
            if any(read_stage == stage for _, read_stage in process.unretired_reads()):
                raise _Violation(
                    EARLY_RELEASE,
                    op,
                    f"stage {stage} released before the WGMMA reading it has "
                    f"completed (no wsc.wgmma_wait_group retires it before this "
                    f"arrive on {barrier.name})",
                )
            self._arrive(op, barrier, count)
        return _Preempt

    def arrive_expect_tx(self, op, array, stage, tx_bytes) -> type[_Preempt]:
        barrier = self._barrier(op, array, stage)
        self._check_arrival(op, barrier, 1)
        barrier.declared += tx_bytes  # the bytes are expected before the arrival counts
        barrier.last_expect_tx = op
        self._arrive(op, barrier, 1)
        return _Preempt

    def store_shared(self, process, op, ring: _Ring, stage: int) -> None:
        if not 0 <= stage < ring.spec.num_stages:
            raise self._ring_stage_out_of_range(op, ring, stage)
        state, _ = self.staging.get((ring, stage), ("free", None))
        if state in ("reading", "waited"):
            why = (
                "no wsc.tma_store_wait by the storing thread"
                if state == "reading"
                else "no wsc.sync after the storing thread's wsc.tma_store_wait"
            )
            raise _Violation(
                STAGING_RACE,
                op,
                f"{ring.spec.name} stage {stage} is written while a TMA store may "
                f"still read it ({why})",
            )
        if state == "copied":
            raise _Violation(
                STAGING_RACE,
                op,
                f"{ring.spec.name} stage {stage} is written while other threads "
                f"may still copy it out (no wsc.sync after the "
                f"wsc.coalesced_store)",
            )
        self.staging[(ring, stage)] = ("written", process)

    def _staging_step(self, process, before: str, after: str) -> None:
        for key, (state, owner) in self.staging.items():
            if owner is process and state == before:
                self.staging[key] = (after, process)

    def staging_fence(self, process) -> None:
        self._staging_step(process, "written", "fenced")

    def staging_sync(self, process) -> None:
        self._staging_step(process, "fenced", "published")
        self._staging_step(process, "written", "synced")
        self._staging_step(process, "waited", "free")
        self._staging_step(process, "copied", "free")

    def staging_wait(self, process) -> None:
        self._staging_step(process, "reading", "waited")

    def tma_store(self, process, op, ring: _Ring, stage: int) -> None:
        if not 0 <= stage < ring.spec.num_stages:
            raise self._ring_stage_out_of_range(op, ring, stage)
        state, _ = self.staging.get((ring, stage), ("free", None))
        if state in ("written", "synced", "fenced"):
            why = (
                "no wsc.fence_proxy_async made them visible to TMA"
                if state != "fenced"
                else "no wsc.sync after the writers' wsc.fence_proxy_async"
            )
            raise _Violation(
                STAGING_RACE,
                op,
                f"TMA store of {ring.spec.name} stage {stage}, which "
                f"wsc.store_shared wrote, but {why}",
            )
        self.staging[(ring, stage)] = ("reading", process)

    def coalesced_store(self, process, op, ring: _Ring, stage: int) -> None:
        if not 0 <= stage < ring.spec.num_stages:
            raise self._ring_stage_out_of_range(op, ring, stage)
        state, _ = self.staging.get((ring, stage), ("free", None))
        if state in ("written", "fenced"):
            raise _Violation(
                STAGING_RACE,
                op,
                f"coalesced store of {ring.spec.name} stage {stage}, which "
                f"wsc.store_shared wrote, but no wsc.sync after the writes made "
                f"them visible to the other threads",
            )
        self.staging[(ring, stage)] = ("copied", process)

    def tma_load(
        self, op, ring: _Ring, stage: int, array, multicast: bool, process: _Process
    ) -> type[_Preempt]:
        """A TMA copy of a tile into `ring`; `multicast`: the issuing CTA's
        slice of it into that ring of every CTA of the cluster, completing on
        each CTA's barrier."""
        if not multicast:
            self._copy(
                op, ring, stage, array, ring.copies[stage] + 1, ring.spec.tile_bytes, remote=False
            )
            return _Preempt
        if ring.spec.exclusive:
            raise _unsupported(op, " on a ring whose copies each go to one reader")
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
        return _Preempt

    def _copy(self, op, ring: _Ring, stage: int, array, fill: int, size: int, remote: bool) -> None:
        """Copy `size` bytes of fill number `fill` into `ring`'s stage."""
        barrier = self._barrier(op, array, stage, remote)
        name = ring.spec.name
        if not 0 <= stage < ring.spec.num_stages:
            raise self._ring_stage_out_of_range(op, ring, stage)
        for other in self.processes:
            if (ring, stage) in other.unretired_reads():
                raise _Violation(
                    STAGE_OVERWRITTEN,
                    op,
                    f"{name} stage {stage} overwritten while a WGMMA of the "
                    f"{other.name} still reads it",
                )
        if ring.spec.exclusive and ring.taken[stage] < ring.copies[stage]:
            raise _Violation(
                STAGE_OVERWRITTEN,
                op,
                f"{name} stage {stage} overwritten before any of its readers "
                f"read its previous copy (lost tile)",
            )
        for reader in [] if ring.spec.exclusive else ring.readers:
            if reader.reads.get((ring, stage), 0) < fill - 1:
                raise _Violation(
                    STAGE_OVERWRITTEN,
                    op,
                    f"{name} stage {stage} overwritten before the "
                    f"{reader.name} read its previous copy (lost tile)",
                )
        copy = _Copy(op, barrier, size)
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
    def _ring_stage_out_of_range(op, ring: _Ring, stage: int) -> _Violation:
        return _Violation(
            STAGE_OUT_OF_RANGE,
            op,
            f"stage {stage} is outside the {ring.spec.num_stages} stages of ring {ring.spec.name}",
        )

    def wgmma(self, process, op, a: _Ring, b: _Ring, stage: int) -> None:
        for ring in (a, b):
            name = ring.spec.name
            if not 0 <= stage < ring.spec.num_stages:
                raise self._ring_stage_out_of_range(op, ring, stage)
            loaded = ring.copies[stage]
            if ring.spec.exclusive:
                # The copy whose landing completed the phase this process's
                # wait saw: each copy into a stage completes one phase of its
                # barrier. A wait that saw none let the read through too early.
                latest = ring.latest[stage]
                expected = process.observed.get(latest.barrier, 0) if latest else 0
                if expected == 0:
                    raise _Violation(
                        STALE_READ,
                        op,
                        f"wgmma reads {name} stage {stage} before its data landed "
                        f"(the {process.name} has seen no copy into it "
                        f"complete)",
                    )
            else:
                # The n-th read of a stage sees the n-th copy into it.
                expected = process.reads.get((ring, stage), 0) + 1
            if loaded > expected:
                raise _Violation(
                    STALE_READ,
                    op,
                    f"wgmma reads {name} stage {stage} after it was refilled: it "
                    f"sees copy #{loaded} where it expects copy #{expected}",
                )
            if loaded < expected or not ring.landed(stage, expected):
                state = "is still in flight" if loaded == expected else "was never issued"
                raise _Violation(
                    STALE_READ,
                    op,
                    f"wgmma reads {name} stage {stage} before its data landed "
                    f"(copy #{expected} of the stage {state})",
                )
            process.reads[(ring, stage)] = expected
            ring.taken[stage] = max(ring.taken[stage], expected)
            process.open_group.append((ring, stage))

    # -- verdicts

    def _stalled_tx_mismatch(self) -> _Violation | None:
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

    def _deadlock(self) -> _Violation:
        """Blame the wait that can never return: one on a barrier stuck with
        part of its arrivals if any, else the one that blocked last (before it
        blocked, every blocked process waited on one that could still run)."""
        mismatch = self._stalled_tx_mismatch()
        if mismatch:
            return mismatch
        waits = [p for p in self.processes if isinstance(p.pause, _Wait)]
        stuck = [p for p in waits if _stuck_with_part_of_its_arrivals(p.pause)]
        blamed = max(
            stuck or waits or [p for p in self.processes if not p.finished],
            key=lambda p: p.paused_at,
        )
        pause = blamed.pause
        if isinstance(pause, _Rendezvous):
            what = (
                "wsc.cluster_sync is never reached by every thread group of the cluster"
                if pause.cluster
                else "block-wide wsc.sync is never reached by every thread group"
            )
            return _Violation(DEADLOCK, pause.op, f"deadlock: this {what}")
        assert isinstance(pause, _Wait)  # a blocked process waits or meets
        barrier = pause.barrier
        return _Violation(
            DEADLOCK,
            pause.op,
            f"deadlock: this wait for parity {pause.parity} on "
            f"{barrier.name} never returns: every thread group is blocked and no "
            f"copy is in flight ({barrier.status()})",
        )

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
                    raise _Violation(
                        UNDER_ARRIVAL,
                        barrier.last_arrive,
                        f"under-arrival: every thread group has finished and {barrier.status()}",
                    )
        for process in self.processes:
            releases = self.kernel.release_waits.get(process.spec, ())
            outstanding = sum(
                barrier.completed - process.observed.get(barrier, 0)
                for spec in releases
                for barrier in self.arrays[process.cta][spec].barriers
            )
            if outstanding:
                plural = "release" if outstanding == 1 else "releases"
                raise _Violation(
                    MISSING_DRAIN,
                    process.spec.location_op,
                    f"producer exits with {outstanding} {plural} outstanding "
                    f"(missing drain): the {process.name} must wait on "
                    f"{', '.join(s.name for s in releases)} until every stage it "
                    f"filled has been released",
                )


def _simulate(
    kernel: _Kernel, k_tiles: int, tile_extent: int, schedule: _Schedule
) -> _Violation | None:
    try:
        _Simulation(kernel, k_tiles, tile_extent, schedule).run()
    except _Violation as violation:
        return violation
    return None
