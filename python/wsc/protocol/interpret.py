"""The kernel, compiled once into nodes over the slots of a flat frame: pure ops
compute, scf.for and scf.if run their bodies, and each wsc op with an effect
on the shared state (wsc.protocol.machine) becomes one step of a process."""

from __future__ import annotations

import operator
from collections.abc import Callable
from dataclasses import dataclass, field

from mlir import ir

from wsc import ops
from wsc.diagnostics import PassError
from wsc.dialect import acc_type_parameters, parse_acc_type
from wsc.ir_utils import (
    cluster_size,
    defining_op,
    kernel_threads,
    launch_axis,
    use_owner,
    walk,
)
from wsc.protocol.violations import REGISTER_RACE, Violation, unsupported
from wsc.runtime.artifact import tensor_name
from wsc.target.hopper import WARP_SIZE

#: Ops that touch only registers (or global memory no barrier guards), or
#: nothing (a matrix of a batch is a view).
_REGISTER_ONLY = (
    "wsc.batch_matrix",
    "wsc.wgmma_fence",
    "wsc.cast",
    "wsc.tile_binary",
    "wsc.tile_unary",
    "wsc.tile_fill",
    "wsc.tile_splat",
    "wsc.tile_assign",
    "wsc.tile_select",
    "wsc.tile_iota",
    "wsc.tile_row_reduce",
    "wsc.tile_col_reduce",
    "wsc.tile_load",
    "wsc.tile_broadcast",
)
#: A loop running longer than this is a bug in the kernel's arithmetic, not a pipeline.
MAX_TRIP_COUNT = 1 << 16


@dataclass(eq=False)
class ProcessSpec:
    """A thread group: a `wsc.role`, or the block's threads outside every role."""

    name: str
    num_threads: int
    location_op: ir.Operation  # the wsc.role (the kernel): where a missing drain is reported


@dataclass(eq=False)
class RingSpec:
    name: str
    num_stages: int
    tile_bytes: int
    readers: list[ProcessSpec] = field(default_factory=list)  # WGMMA issuers, load_shared
    exclusive: bool = False  # each copy goes to one reader (see wsc.protocol)


@dataclass(eq=False)
class BarrierSpec:
    name: str
    arrival_count: int
    num_barriers: int
    #: "full" (copies complete on it), "empty" (a copy issuer waits on it
    #: before refilling a stage, so an arrive on it releases the stage) or
    #: "turns" (consumer groups pass turns on it: ping-pong, wgmma-turns).
    kind: str = "empty"


@dataclass
class Kernel:
    body: list
    num_slots: int
    num_stages: int
    block_k: int
    processes: list[ProcessSpec]
    rings: list[RingSpec]
    barriers: list[BarrierSpec]
    copy_issuers: set  # ProcessSpec that issue TMA copies
    release_waits: dict  # producer ProcessSpec -> barrier specs others release it on
    persistent: bool  # strides over tiles by gpu.grid_dim
    ctas: int = 1  # CTAs per cluster: the simulation runs every one
    #: Hands partial sums over (wsc.partial_arrive): simulated both as the
    #: last split to arrive and as an earlier one.
    split_k: bool = False
    #: The barrier arrays some op arrives on (wsc.mbarrier_arrive or
    #: wsc.mbarrier_arrive_expect_tx): a wait on any other never returns.
    arrived_on: frozenset = frozenset()
    #: barrier spec -> the ProcessSpecs whose wsc.mbarrier_arrive releases it.
    releasers: dict = field(default_factory=dict)
    #: The thread groups that wait on barriers TMA copies complete on.
    copy_waiters: int = 1


def _name_barriers(specs: list[BarrierSpec]) -> None:
    """Name each barrier array by its kind, numbered in allocation order
    where a kernel has several of a kind."""
    for kind in dict.fromkeys(spec.kind for spec in specs):
        same = [spec for spec in specs if spec.kind == kind]
        for number, spec in enumerate(same):
            spec.name = f"{kind}{number}" if len(same) > 1 else kind


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
    """memref.dim: a static dim's size; the K extent on the dims TMA loads K
    tiles from, a number of tiles (the simulation's tile_extent) elsewhere,
    the last of them one element wide in a ragged run."""

    nested = False
    __slots__ = ("op", "extents", "dynamic", "index", "result")

    def __init__(self, op, extents, dynamic, index, result):
        self.op, self.extents, self.dynamic = op, extents, dynamic
        self.index, self.result = index, result

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
        if not self.dynamic[dimension]:
            frame[self.result] = extent
        elif extent is None:
            frame[self.result] = simulation.k_extent
        else:
            ragged = extent - 1 if simulation.ragged else 0
            frame[self.result] = extent * simulation.tile_extent - ragged


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
            process.trips += 1
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

    role: ProcessSpec | None = None
    elected: bool = False


def _computed_from(value: ir.Value, is_source: Callable[[ir.Value], bool]) -> bool:
    """Whether `value` is, or is computed from, a value `is_source` accepts."""
    pending, seen = [value], set()
    while pending:
        current = pending.pop()
        if is_source(current):
            return True
        if current in seen:
            continue
        seen.add(current)
        source = defining_op(current)
        if source is not None:
            pending.extend(source.operands)
    return False


def _is_induction_variable(value: ir.Value) -> bool:
    owner = value.owner
    return (
        isinstance(owner, ir.Block)
        and owner.owner.name == "scf.for"
        and ir.BlockArgument(value).arg_number == 0
    )


def _streamed_dim(load: ir.Operation) -> int | None:
    """The dim of its tensor a TMA load's tiles advance along from one trip of
    the pipelined loop around it to the next: the one coordinate computed from
    that loop's induction variable (the innermost scf.for around the load, with
    no loop nested in it: a tile loop of a persistent kernel is not one), or
    None."""
    loop = load.parent
    while loop is not None and loop.operation.name != "scf.for":
        loop = loop.operation.parent
    if loop is None or any(op.name == "scf.for" for op in walk(loop.operation)):
        return None
    loop = loop.operation
    induction = loop.regions[0].blocks[0].arguments[0]
    coordinates = (ops.TmaLoad(load).row, ops.TmaLoad(load).col)
    streamed = [
        dim
        for dim, value in enumerate(coordinates)
        if _computed_from(value, lambda v: v == induction)
    ]
    return streamed[0] if len(streamed) == 1 else None


class _Compiler:
    """Turns one kernel into nodes whose operands are slots of a flat frame."""

    def __init__(self, kernel: ir.Operation):
        self.kernel = kernel
        self.slots: dict[ir.Value, int] = {}
        self.block_threads = kernel_threads(kernel)
        self.processes: dict[ir.Operation, ProcessSpec] = {}
        self.rings: dict[ir.Value, RingSpec] = {}
        self.barriers: dict[ir.Value, BarrierSpec] = {}
        # What each owner runs: a role's process spec, or None for the code
        # outside roles, which every process runs.
        self.readers: dict = {}  # ring spec -> owners reading it (WGMMA, load_shared)
        self.a_rows: list = []  # (owner, first, end): rows of the A tile a WGMMA reads
        self.copy_issuers: set = set()
        self.waits: dict = {}  # owner -> barrier specs waited on
        self.elected_waits: list = []  # (owner, barrier spec, op) of waits under wsc.elect
        self.filled_on: dict = {}  # ring spec -> barrier specs its copies complete on
        self.releases: dict = {}  # owner -> barrier specs arrived on (plain arrive)
        self.arrived_on: set = set()  # barrier specs any op arrives on
        self.split_k = any(op.name == "wsc.partial_arrive" for op in walk(kernel))
        self._survey(kernel)

    # -- what the kernel contains, before any node is built

    def _survey(self, kernel: ir.Operation) -> None:
        kernel_ops = list(walk(kernel))
        for op in kernel_ops:
            if op.name == "wsc.role":
                role = ops.Role(op)
                begin, count = role.thread_begin, role.num_threads
                name = f"{role.role} role [{begin}, {begin + count})"
                self.processes[op] = ProcessSpec(name, count, op)
        outside = self.block_threads - sum(p.num_threads for p in self.processes.values())
        self.outside = None
        if outside > 0:
            self.outside = ProcessSpec(f"{outside} threads outside every role", outside, kernel)
        # Ring and barrier names read as the protocol: the A and B operands of
        # WGMMA, the full barriers copies complete on, the empty ones.
        operand_names: dict[ir.Value, str] = {}
        k_dims: dict[ir.Value, int] = {}
        for op in kernel_ops:
            if op.name == "wsc.wgmma":
                wgmma = ops.Wgmma(op)
                operand_names.setdefault(wgmma.a, "A")
                operand_names.setdefault(wgmma.b, "B")
                k_dims[wgmma.a] = 0 if wgmma.a_transposed else 1
                k_dims[wgmma.b] = 1 if wgmma.b_layout == "nk" else 0
            elif op.name == "wsc.wgmma_register_a":
                register_a = ops.WgmmaRegisterA(op)
                operand_names.setdefault(register_a.b, "B")
                k_dims[register_a.b] = 1 if register_a.b_layout == "nk" else 0
        # A ring read into registers (wsc.load_shared) is named after the
        # tensor its tiles come from, and streams along the dim its copies'
        # coordinate takes from a loop.
        for op in kernel_ops:
            if op.name == "wsc.tma_load" and any(
                use_owner(use).name == "wsc.load_shared" for use in ops.TmaLoad(op).dst.uses
            ):
                load = ops.TmaLoad(op)
                source = load.src
                if isinstance(source, ir.OpResult) and source.owner.name == "wsc.batch_matrix":
                    source = ops.BatchMatrix(source.owner).batch  # a matrix of a batch
                position = list(kernel.regions[0].blocks[0].arguments).index(source)
                operand_names.setdefault(load.dst, f"ring of '{tensor_name(position)}'")
                k_dims.setdefault(
                    load.dst, 0 if _computed_from(load.row, _is_induction_variable) else 1
                )
        # Where a load's coordinates show the dim its pipelined loop streams
        # (the rows of K and V in attention, not the WGMMA's K), they decide.
        streamed_loads = []
        for op in kernel_ops:
            if op.name == "wsc.tma_load" and (dim := _streamed_dim(op)) is not None:
                k_dims[ops.TmaLoad(op).dst] = dim
                streamed_loads.append(ops.TmaLoad(op).dst)
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
                self.rings[op.result] = RingSpec(name, stages, rows * cols * element.width // 8)
            elif op.name == "wsc.mbarrier_alloc":
                alloc = ops.MbarrierAlloc(op)
                kind = "full" if alloc.barriers in full else "empty"
                self.barriers[alloc.barriers] = BarrierSpec(
                    kind, alloc.arrival_count, alloc.num_barriers, kind
                )
        # The deepest ring sets the sweep (a resident operand has one stage).
        self.num_stages = max(
            [ring.num_stages for ring in self.rings.values()]
            or [array.num_barriers for array in self.barriers.values()]
            or [1]
        )

        def streamed_extent(ring: ir.Value) -> int:
            """The ring's tile extent along the dim its copies stream."""
            return ir.MemRefType(ring.type).shape[1 + k_dims.get(ring, 1)]

        operands = [v for v, name in operand_names.items() if name in ("A", "B")]
        streamed = [v for v in operands if v in streamed_loads] or streamed_loads
        a_rings = [v for v, name in operand_names.items() if name == "A"]
        if streamed:
            self.block_k = streamed_extent(streamed[0])
        elif a_rings:
            self.block_k = ir.MemRefType(a_rings[0].type).shape[2]
        else:
            loads = [ops.TmaLoad(op).dst for op in kernel_ops if op.name == "wsc.tma_load"]
            self.block_k = streamed_extent(loads[0]) if loads else 1
        self.extents = self._global_extents(kernel_ops, k_dims)

    @staticmethod
    def _global_extents(kernel_ops, k_dims) -> dict:
        """The extent memref.dim gives each dim of a global memref: the K extent
        (None) on the dim its TMA tiles advance along K, one tile (of a copy,
        a store or a register load) elsewhere."""
        extents = {}
        for op in kernel_ops:
            if op.name == "wsc.tma_load":
                load = ops.TmaLoad(op)
                tile = list(ir.MemRefType(load.dst.type).shape[1:])
                tile[k_dims.get(load.dst, 1)] = None
                extents[load.src] = tuple(tile)
            elif op.name == "wsc.store":
                store = ops.Store(op)
                shape = acc_type_parameters(store.tile.type)[0]
                extents.setdefault(store.dst, shape[::-1] if store.transpose else shape)
            elif op.name in ("wsc.tma_store", "wsc.coalesced_store"):
                copy = ops.TmaStore(op) if op.name == "wsc.tma_store" else ops.CoalescedStore(op)
                extents.setdefault(copy.dst, tuple(ir.MemRefType(copy.src.type).shape[1:]))
            elif op.name == "wsc.tile_load":
                tile_load = ops.TileLoad(op)
                shape = acc_type_parameters(tile_load.result.type)[0]
                extents.setdefault(tile_load.src, shape[::-1] if tile_load.transpose else shape)
            elif op.name == "wsc.tile_broadcast":
                broadcast = ops.TileBroadcast(op)
                rows, cols = acc_type_parameters(broadcast.result.type)[0]
                extents.setdefault(broadcast.src, (cols if broadcast.along == "cols" else rows,))
        for op in kernel_ops:
            if op.name == "wsc.batch_matrix":
                # A batch of one matrix: the grid's z is one block.
                view = ops.BatchMatrix(op)
                if view.matrix in extents:
                    extents.setdefault(view.batch, (1, *extents[view.matrix]))
        return extents

    # -- nodes

    @staticmethod
    def _allocated(table: dict, op: ir.Operation, value: ir.Value):
        """The spec of the ring or barrier array `value`, which must come
        straight from its allocation."""
        if value not in table:
            raise unsupported(
                op, ": its ring buffer or mbarriers do not come straight from their allocation"
            )
        return table[value]

    def slot(self, value: ir.Value) -> int:
        return self.slots.setdefault(value, len(self.slots))

    def compile(self) -> Kernel:
        entry = self.kernel.regions[0].blocks[0]
        for argument in entry.arguments:
            # An f32 scalar only feeds register math (wsc.tile_splat), never the protocol.
            if not isinstance(argument.type, (ir.MemRefType, ir.F32Type)):
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
        # A stage's data is the waiting threads' only: every thread that reads it waits.
        for owner, spec, wait in self.elected_waits:
            for ring, readers in self.readers.items():
                if owner in readers and spec in self.filled_on.get(ring, ()):
                    raise PassError(
                        wait.location,
                        "only the elected thread waits here for the copies that fill a "
                        "stage, but every thread of its role reads the stage (its WGMMA or "
                        "wsc.load_shared): wait with every thread, outside the wsc.elect",
                    )
        issuers = members(self.copy_issuers)
        release_waits = {}
        refilling: set = set()  # the arrays some copy issuer waits on
        for producer in issuers:
            waited = set(self.waits.get(producer, ())) | set(self.waits.get(None, ()))
            refilling |= waited
            released = {
                b
                for owner, specs in self.releases.items()
                for p in members([owner]) - {producer}
                for b in specs
            }
            release_waits[producer] = [
                b for b in self.barriers.values() if b in waited and b in released
            ]
        # An array consumers wait on and no copy issuer does is one they pass
        # turns on (ping-pong, wgmma-turns). One nobody waits on stays
        # "empty": its producer forgot the wait.
        consumer_waited = {
            spec
            for owner, specs in self.waits.items()
            if owner is not None and owner not in issuers
            for spec in specs
        }
        turns = consumer_waited - refilling if issuers else set()
        for spec in self.barriers.values():
            if spec.kind == "empty" and spec in turns:
                spec.kind = "turns"
        _name_barriers(list(self.barriers.values()))
        copied_on = set().union(*self.filled_on.values())
        return Kernel(
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
            self.split_k,
            frozenset(self.arrived_on),
            {
                spec: frozenset(members([o for o, specs in self.releases.items() if spec in specs]))
                for spec in self.barriers.values()
            },
            len(members([owner for owner, specs in self.waits.items() if specs & copied_on])),
        )

    def block(self, block: ir.Block, context: _Context) -> tuple[list, list[int]]:
        """(nodes, slots the terminator yields) of a block."""
        nodes, yields = [], []
        for op in block.operations:
            op = op.operation
            if op.name in ("scf.yield", "func.return"):
                yields = [self.slot(v) for v in op.operands]
            else:
                access = _register_access(op)
                if access is not None:
                    nodes.append(access)
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
                raise unsupported(op, " with a non-integer value")
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
        if name in ("gpu.block_id", "wsc.cluster_rank", "gpu.grid_dim"):
            return self._block_index(op, results[0])
        if name == "memref.dim":
            return self._dim(op, results)
        if name == "scf.for":
            return self._for(op, context, results)
        if name == "scf.if":
            return self._if(op, context, results)
        if name in ("wsc.role", "wsc.elect"):
            # A role or an elected thread is followed only into an scf.if on
            # the value itself: through arithmetic, which threads take a
            # branch is not known.
            for use in op.result.uses:
                user = use_owner(use)
                if user.name != "scf.if":
                    raise unsupported(
                        user, f" on the value of {name}: branch on it directly (scf.if)"
                    )
            return _Compute(op, lambda: 1, [], results[0])
        if name in _REGISTER_ONLY:
            return None
        handler = getattr(self, "_" + name.removeprefix("wsc."), None)
        if not name.startswith("wsc.") or handler is None:
            raise unsupported(op)
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
        dynamic = tuple(ir.ShapedType.is_dynamic_size(s) for s in shape)
        extents = tuple(
            s if not dynamic[d] else known[d] if known else -1 for d, s in enumerate(shape)
        )
        if -1 in extents:
            raise PassError(
                op.location,
                "verify-pipeline cannot size this memref: it is neither "
                "loaded by wsc.tma_load, wsc.tile_load or wsc.tile_broadcast nor "
                "stored by wsc.store, wsc.tma_store or wsc.coalesced_store",
            )
        return _Dim(op, extents, dynamic, self.slot(op.opview.index), results[0])

    def _for(self, op, context, results):
        body_block = op.regions[0].blocks[0]
        iv, *iter_args = [self.slot(a) for a in body_block.arguments]
        body, yields = self.block(body_block, context)
        loop = op.opview
        bounds = [self.slot(v) for v in (loop.lowerBound, loop.upperBound, loop.step)]
        inits = [self.slot(v) for v in loop.initArgs]
        return _For(op, bounds, inits, iv, iter_args, body, yields, results)

    def _block_index(self, op, slot):
        """gpu.block_id, wsc.cluster_rank or gpu.grid_dim of the simulated
        cluster (a block without clusters) of the simulation's grid along x;
        along y and z the grid is one cluster, and block 0 (split 0 of a
        split-K grid) is simulated."""
        ctas = cluster_size(self.kernel)
        along_x = op.name != "wsc.cluster_rank" and launch_axis(op) == 0
        if op.name == "gpu.grid_dim":

            def act(process, frame):
                frame[slot] = ctas * (process.simulation.clusters if along_x else 1)

        else:

            def act(process, frame):
                cluster = process.simulation.cluster if along_x else 0
                frame[slot] = cluster * ctas + process.cta

        return _Effect(op, act)

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
                raise unsupported(op, " on wsc.elect with an else region")
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
            raise unsupported(op, " inside a role: every thread of the cluster must reach it")

        def act(process, frame):
            process.simulation.sync(process)
            return process.simulation.rendezvous(process, op, cluster=True)

        return _Effect(op, act)

    def _sync(self, op, context):
        if context.role is not None:
            # A barrier of the role's own threads, which run as one process:
            # it only orders their staging writes and waits.
            def act_in_role(process, frame):
                process.simulation.sync(process)

            return _Effect(op, act_in_role)

        def act(process, frame):
            process.simulation.sync(process)
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
            process.simulation.staging_wait(process, pending)

        return _Effect(op, act)

    # Split-K: each thread group's partial sums, by their first row (see
    # _Simulation.partial_store).

    @staticmethod
    def _whole_group(op, context) -> None:
        if context.elected:
            raise unsupported(op, " under wsc.elect: every thread of its warpgroup runs it")

    def _partial_step(self, op, context, view, step: str):
        """A wsc.partial_store or wsc.partial_reduce: the simulation's method
        `step` on the rows it names (a store also says how many)."""
        self._whole_group(op, context)
        partial = view(op)
        row, splits = self.slot(partial.row), partial.splits
        tile = (
            (acc_type_parameters(partial.tile.type)[0][0], partial.tile)
            if isinstance(partial, ops.PartialStore)
            else ()
        )

        def act(process, frame):
            getattr(process.simulation, step)(process, op, frame[row], splits, *tile)

        return _Effect(op, act)

    def _partial_store(self, op, context):
        return self._partial_step(op, context, ops.PartialStore, "partial_store")

    def _acc_alloc(self, op, context):
        """A fresh accumulator: in a split-K kernel, no partial sums of it
        handed over yet (a tile loop allocates one per tile)."""
        if not self.split_k:
            return None
        tile = op.result

        def act(process, frame):
            process.partial_tiles.pop(tile, None)

        return _Effect(op, act)

    def _store(self, op, context):
        """A store of C from registers: of a tile whose partial sums the
        group handed over, only once they are reduced (split-K)."""
        if not self.split_k:
            return None
        tile = ops.Store(op).tile

        def act(process, frame):
            process.simulation.store(process, op, tile)

        return _Effect(op, act)

    def _partial_arrive(self, op, context):
        self._whole_group(op, context)
        arrive = ops.PartialArrive(op)
        row, last, splits = self.slot(arrive.row), self.slot(arrive.last), arrive.splits

        def act(process, frame):
            frame[last] = process.simulation.partial_arrive(process, op, frame[row], splits)

        return _Effect(op, act)

    def _partial_reduce(self, op, context):
        return self._partial_step(op, context, ops.PartialReduce, "partial_reduce")

    def _mbarrier_wait(self, op, context):
        wait = ops.MbarrierWait(op)
        spec = self._allocated(self.barriers, op, wait.barriers)
        self.waits.setdefault(context.role, set()).add(spec)
        if context.elected:
            self.elected_waits.append((context.role, spec, op))
        barriers, stage, phase = (self.slot(v) for v in (wait.barriers, wait.stage, wait.phase))

        def act(process, frame):
            return process.simulation.wait(op, frame[barriers], frame[stage], frame[phase])

        return _Effect(op, act)

    def _mbarrier_arrive(self, op, context):
        arrive = ops.MbarrierArrive(op)
        spec = self._allocated(self.barriers, op, arrive.barriers)
        self.releases.setdefault(context.role, set()).add(spec)
        self.arrived_on.add(spec)
        barriers, stage = self.slot(arrive.barriers), self.slot(arrive.stage)
        elected = context.elected
        every_cta, per_warp = arrive.every_cta, arrive.per_warp
        if elected and per_warp:
            raise unsupported(op, " with 'per_warp' under wsc.elect")

        def act(process, frame):
            if elected:
                count = 1
            else:
                count = process.spec.num_threads // (WARP_SIZE if per_warp else 1)
            return process.simulation.arrive(
                process, op, frame[barriers], frame[stage], count, every_cta, elected
            )

        return _Effect(op, act)

    def _mbarrier_arrive_expect_tx(self, op, context):
        arrive = ops.MbarrierArriveExpectTx(op)
        self.arrived_on.add(self._allocated(self.barriers, op, arrive.barriers))
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
        self.filled_on.setdefault(self._allocated(self.rings, op, load.dst), set()).add(
            self._allocated(self.barriers, op, load.barriers)
        )
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
        a_stage = wgmma.a_stage

        def act(process, frame):
            reads = (
                (frame[a], frame[stage], False) if a_stage is None else (frame[a], a_stage, True),
                (frame[b], frame[stage], False),
            )
            process.simulation.wgmma(process, op, reads)

        return _Effect(op, act)

    def _load_shared(self, op, context):
        load = ops.LoadShared(op)
        ring = self._allocated(self.rings, op, load.src)
        self.readers.setdefault(ring, set()).add(context.role)
        src, stage = self.slot(load.src), self.slot(load.stage)

        def act(process, frame):
            process.simulation.load_shared(process, op, frame[src], frame[stage])

        return _Effect(op, act)

    def _wgmma_register_a(self, op, context):
        wgmma = ops.WgmmaRegisterA(op)
        ring = self._allocated(self.rings, op, wgmma.b)
        self.readers.setdefault(ring, set()).add(context.role)
        b, stage = self.slot(wgmma.b), self.slot(wgmma.stage)

        def act(process, frame):
            process.simulation.wgmma(process, op, ((frame[b], frame[stage], False),))

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


def _register_access(op: ir.Operation) -> _Effect | None:
    """The check of `op`'s reads and writes of register tiles against the
    WGMMA groups its process has in flight (register-race); a WGMMA's own
    tiles join its open group."""
    name = op.name
    tiles = [v for v in op.operands if parse_acc_type(v.type) is not None]
    if name == "wsc.acc_alloc":
        if ops.AccAlloc(op).uninitialized:
            return None
        reads, writes = [], [op.result]  # its zeros
    elif not tiles:
        return None
    elif name in ops.WGMMA_OPS:
        acc = op.operands[ops.operand_number(name, "acc")]
        sources = [tile for tile in tiles if tile != acc]

        def issue(process, frame):
            _check_tiles(process, op, sources, [acc], asynchronous=True)
            process.open_tiles.extend([(acc, True), *((tile, False) for tile in sources)])

        return _Effect(op, issue)
    elif name == "wsc.tile_assign":
        assign = ops.TileAssign(op)
        reads, writes = [assign.src], [assign.dst]
    elif name == "wsc.partial_reduce":
        reads = writes = tiles
    else:
        reads, writes = tiles, []
    return _Effect(op, lambda process, frame: _check_tiles(process, op, reads, writes))


def _check_tiles(process, op, reads, writes, asynchronous: bool = False) -> None:
    """`op` reads `reads` and writes `writes` (a WGMMA, `asynchronous`, adds
    to tiles other WGMMAs write: the hardware orders those)."""
    in_flight = list(process.tiles_in_flight())
    written = {tile for tile, write in in_flight if write}
    read = {tile for tile, write in in_flight if not write}
    for tile in reads:
        if tile in written:
            raise Violation(
                REGISTER_RACE,
                op,
                f"{op.name} reads {_tile_name(tile)} while a WGMMA group that writes it is "
                f"in flight: retire the group first (a wsc.wgmma_wait_group leaving fewer "
                f"groups pending)",
                _made_here(tile),
            )
    for tile in writes:
        if tile in read or (tile in written and not asynchronous):
            raise Violation(
                REGISTER_RACE,
                op,
                f"{op.name} writes {_tile_name(tile)} while a WGMMA group that "
                f"{'reads' if tile in read else 'writes'} it is in flight: retire the group "
                f"first (a wsc.wgmma_wait_group leaving fewer groups pending)",
                _made_here(tile),
            )


def _tile_name(tile: ir.Value) -> str:
    shape, element = acc_type_parameters(tile.type)
    return f"the {'x'.join(map(str, shape))} {element} register tile"


def _made_here(tile: ir.Value) -> list[tuple[ir.Location, str]]:
    """A note at the op that made `tile` (located by the diagnostics, which
    map a buffer's lines back to the user's file)."""
    source = defining_op(tile)
    return [(source.location, "the register tile is made here")] if source else []


def compile_kernel(kernel_op: ir.Operation) -> Kernel:
    return _Compiler(kernel_op).compile()
