"""The emitting half of --convert-wsc-to-nvvm: `KernelLowering.build(scratch)`
moves a planned kernel (wsc.codegen.plan) into the `scratch` module and
rewrites every wsc op in place into arith/scf + llvm/nvvm ops, one
`_lower_<op>` method per op; wsc.codegen.convert then runs the upstream
conversions.

How each wsc op is lowered:

* wsc.role: (tid.x - begin) <u count; its first guarded scf.if starts with
  setmaxnreg.inc/dec to max_registers (inc above the entry count ptxas uses,
  see `entry_register_cap`, dec below; none when equal). wsc.elect: tid.x ==
  role begin (0 outside roles). wsc.sync: bar.sync 0 at top level, named
  barrier (1 + role index, role threads) inside a role.
* wsc.alloc_shared / wsc.mbarrier_alloc: offsets in the one extern shared array
  (layout.SharedLayout); thread 0 inits every mbarrier, then
  fence.mbarrier_init.release.cluster. Barrier addresses are base + 8*stage,
  buffers base + stage*stage_bytes, for constant or run-time stages.
* mbarrier arrive / arrive.expect_tx: NVVM ops (a `per_warp` arrive: bar.warp.sync,
  then lane 0 of each warp arrives); wait: a loop around
  mbarrier.try_wait.parity (inline asm returning the predicate), bounded
  when DebugOptions.wait_spin_limit is set (see wsc.codegen.debug, which also
  adds the random delays of DebugOptions.delay_role).
* wsc.tma_load: cp.async.bulk.tensor.2d per 128/64/32-byte-wide atom of the
  tile (one for an unswizzled one-row tile), coordinates (col, row),
  completing on barriers[stage].
  A `multicast` wsc.tma_load: the same for the executing CTA's slice of the
  tile's rows (rank * R/n onwards, where the box is R/n rows), into that
  slice of every CTA's stage (multicast mask of all n CTAs).
  An `every_cta` wsc.mbarrier_arrive: a local arrive, then one on the same
  barrier of each other CTA through mapa (release at CTA scope). wsc.cluster_rank:
  %cluster_ctarank; wsc.cluster_sync: barrier.cluster.arrive/wait.aligned.
* wsc.tma_store: the same per atom from shared to global, then one
  cp.async.bulk.commit_group; wsc.tma_store_wait is
  cp.async.bulk.wait_group.read, and the kernel ends with a wait for 0 (an
  exiting block's shared memory is reused). wsc.fence_proxy_async:
  fence.proxy.async.shared::cta. wsc.store_shared / wsc.load_shared: each
  thread's column pairs stored at (loaded from) their swizzled offsets in
  the stage tile, 2-element vectors; a load is volatile and never deferred
  to its readers (a later op may write the stage in place).
* wsc.tile_row_reduce / wsc.tile_col_reduce: in-thread combines, then
  shuffles across the lanes that share a row (lanes differing in bits 0-1)
  or a group of rows (bits 2-4); over 32 or 64 rows, then each warp's value
  through the shared-memory exchange area between two syncs of the role.
  wsc.coalesced_store: each warp copies whole rows of the stage tile, 32
  consecutive elements per store instruction (element loads and stores),
  with bounds checks only when the tile is partial.
* wsc.wgmma: per m64 sub-tile and k16 step one nvvm.wgmma.mma_async with
  descriptors from descriptors.OperandDescriptors (A K-major; B K-major for
  "nk", N-major for "kn"); f16 accumulators are kept as the f16x2 pairs
  WGMMA works on. fence/commit/wait map one to one; after a wait_group 0 the
  role's WGMMA accumulators pass through an empty asm, so LLVM cannot move a
  read of them above the wait. A WGMMA that is the first to touch a tile
  wsc.acc_alloc made in its block starts with scale-d = 0 (D = A B), so the
  zeros are never put in registers (a product tile made afresh per K tile).
* wsc.acc_alloc / wsc.cast / wsc.store: accumulators live in an llvm.alloca in
  the entry block that is only indexed by constants (LLVM's SROA turns it into
  registers); cast is a per-element fptrunc (round to nearest even); store
  writes the fragment (fragments.AccumulatorFragment) with 2-element vector
  stores when the whole tile is in bounds and pairs are aligned, element by
  element when it is in bounds but pairs are not (an odd row stride), and
  element by element with bounds checks for a partial tile.
* wsc.ring_advance: stage + 1 wrapping to 0 with the phase flipped.
* wsc.tile_load / wsc.tile_broadcast (along columns): each element one
  ld.global predicated off outside the tensor (0 there, or a tile load's
  `fill`: the register's value before the load where the element holds it
  exactly, else selected after widening), at an immediate
  offset from one address register per fragment row (per vector), .nc and
  mergeable where the kernel never writes the tensor; transposed loads, row
  vectors and broadcasts along rows address each element on its own.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from mlir import ir
from mlir.dialects import func as func_d
from mlir.dialects import llvm

from wsc import ops
from wsc.codegen import emit as E
from wsc.codegen.debug import DebugEmitter
from wsc.codegen.descriptors import OperandDescriptors
from wsc.codegen.fragments import (
    SUBTILE_ROWS,
    AccumulatorFragment,
    a_operand_registers,
    operand_register,
    row_register,
)
from wsc.codegen.info import tensor_name
from wsc.codegen.layout import (
    BufferSlot,
)
from wsc.codegen.plan import GPU_INDEX_OPS, KernelPlan
from wsc.dialect import acc_type_parameters
from wsc.ir_utils import (
    constant_int,
    defining_op,
    non_negative,
    parent_op,
    use_owner,
    walk,
)
from wsc.target.hopper import (
    BUFFER_ALIGN,
    ELEMENT_BYTES,
    WARP_ROWS,
    WARP_SIZE,
    WARPGROUP_SIZE,
)

#: The extern dynamic shared-memory symbol every kernel addresses.
SMEM_SYMBOL = "wsc_smem"


def _signed64(value: int) -> int:
    return value - (1 << 64) if value >= 1 << 63 else value


@dataclass
class AccSlot:
    address: ir.Value  # llvm.ptr to the alloca
    fragment: AccumulatorFragment
    element: str
    #: One m64 sub-tile: a struct of f32 or (`packed`) of f16x2 pairs, the
    #: forms WGMMA reads and writes; an array for other register tiles.
    sub_type: ir.Type
    whole_type: ir.Type
    packed: bool = False

    def subtile_address(self, i: int) -> ir.Value:
        return E.gep(self.address, [0, i], self.whole_type)

    def load_element(self, i: int, r: int) -> ir.Value:
        """Register r of sub-tile i."""
        if not self.packed:
            return E.load(
                E.float_type(self.element), E.gep(self.address, [0, i, r], self.whole_type)
            )
        pair = E.load(
            _pair_type(self.element), E.gep(self.address, [0, i, r // 2], self.whole_type)
        )
        return E.extractelement(pair, r % 2)

    def store_element(self, i: int, r: int, value: ir.Value) -> None:
        assert not self.packed, "packed tiles are written a pair at a time"
        E.store(value, E.gep(self.address, [0, i, r], self.whole_type))

    def store_pair(self, i: int, r: int, first: ir.Value, second: ir.Value) -> None:
        """Registers r (even) and r + 1 of sub-tile i of a packed tile."""
        pair = E.undef(_pair_type(self.element))
        pair = E.insertelement(E.insertelement(pair, first, 0), second, 1)
        E.store(pair, E.gep(self.address, [0, i, r // 2], self.whole_type))

    def pair_bits(self, i: int, r: int) -> ir.Value:
        """Registers r (even) and r + 1 of sub-tile i as one i32: a WGMMA A
        register, read from a packed tile with no instruction."""
        if not self.packed:
            return E.pack_pair(self.load_element(i, r), self.load_element(i, r + 1))
        pair = E.load(
            _pair_type(self.element), E.gep(self.address, [0, i, r // 2], self.whole_type)
        )
        return E.pair_bits(pair)


@dataclass
class DeferredTile:
    """A register tile never held whole: each element is computed where a
    reader asks for it, so an element-wise chain from the accumulator to its
    store needs no register tile per op (V8's epilogue, built tile by tile,
    spilled 2.7 KB)."""

    fragment: AccumulatorFragment
    element: str
    compute: Callable[[int, int], ir.Value]

    def load_element(self, i: int, r: int) -> ir.Value:
        return self.compute(i, r)

    def pair_bits(self, i: int, r: int) -> ir.Value:
        """Registers r (even) and r + 1 of sub-tile i packed into one i32."""
        return E.pack_pair(self.compute(i, r), self.compute(i, r + 1))


#: The index operands that place a global tile access (its origin).
_ORIGIN_OPERANDS = {
    "wsc.tile_load": lambda op: (ops.TileLoad(op).row, ops.TileLoad(op).col),
    "wsc.store": lambda op: (ops.Store(op).row, ops.Store(op).col),
    "wsc.coalesced_store": lambda op: (ops.CoalescedStore(op).row, ops.CoalescedStore(op).col),
    "wsc.tile_broadcast": lambda op: (ops.TileBroadcast(op).offset,),
}
#: Ops that write a register tile in place (the accumulator).
_TILE_WRITERS = ("wsc.wgmma", "wsc.wgmma_register_a", "wsc.partial_reduce", "wsc.tile_assign")


def _first_write_of_zeros(op: ir.Operation, acc: ir.Value) -> bool:
    """Whether the WGMMA `op` is the first op to touch `acc` since its
    wsc.acc_alloc filled it with zeros, in the alloc's block: then its first
    K step can overwrite the tile (scale-d = 0) instead of adding to zeros
    (a tile made afresh in each iteration of a loop, e.g. attention's S)."""
    alloc = defining_op(acc)
    if alloc is None or alloc.name != "wsc.acc_alloc" or op.block != alloc.block:
        return False
    for use in acc.uses:
        user: ir.Operation | None = use_owner(use)
        if user == op:
            continue
        while user is not None and user.block != op.block:
            user = parent_op(user)
        # A use in an op before this one reads the zeros.
        if user is None or user.is_before_in_block(op):
            return False
    return True


def _still_in_flight(wait: ir.Operation, pending: int) -> set[ir.Value] | None:
    """The accumulators of the `pending` WGMMA groups a wsc.wgmma_wait_group
    leaves in flight: those its block commits last before it; None where
    fewer than `pending` commits precede it there (then which registers stay
    in flight is not known here, and none is taken as retired)."""
    in_flight: set[ir.Value] = set()
    commits = 0
    for candidate in reversed(list(wait.block.operations)[: _index_in_block(wait)]):
        candidate = candidate.operation
        if candidate.name == "wsc.wgmma_commit_group":
            commits += 1
            if commits > pending:
                return in_flight
        elif candidate.name in ops.WGMMA_OPS and commits:
            in_flight.add(candidate.operands[ops.operand_number(candidate.name, "acc")])
    return in_flight if commits == pending else None


def _index_in_block(op: ir.Operation) -> int:
    return [other.operation for other in op.block.operations].index(op)


def _fragment(tile: ir.Value) -> AccumulatorFragment:
    """Which thread holds which element of the register tile `tile`."""
    (rows, cols), _ = acc_type_parameters(tile.type)
    return AccumulatorFragment(rows, cols)


def _pair_type(element: str) -> ir.Type:
    return ir.VectorType.get([2], E.float_type(element))


#: Each register of wsc.tile_binary's result from the two operands' registers.
_TILE_BINARY = {
    "add": lambda x, y: E.addf(x, y, contract=True),
    "sub": lambda x, y: E.subf(x, y, contract=True),
    "mul": lambda x, y: E.mulf(x, y, contract=True),
    "div": E.divf,
    "max": E.maximumf,
    "min": E.minimumf,
}
# Abramowitz and Stegun 7.1.26: erf(x) = 1 - t (a1 + t (a2 + ... a5 t)) e^(-x^2),
# t = 1 / (1 + p x) for x >= 0, with an absolute error below 1.5e-7 (rcp and ex2
# approximations add a few ulp).
_ERF_P = 0.3275911
_ERF_A = (0.254829592, -0.284496736, 1.421413741, -1.453152027, 1.061405429)
_LOG2_E = 1.4426950408889634


def _erf(x: ir.Value) -> ir.Value:
    add, sub, mul = _TILE_BINARY["add"], _TILE_BINARY["sub"], _TILE_BINARY["mul"]
    magnitude = E.absf(x)
    t = E.approx(
        "rcp.approx.ftz.f32", add(E.float_const(1.0), mul(E.float_const(_ERF_P), magnitude))
    )
    poly = E.float_const(_ERF_A[-1])
    for a in reversed(_ERF_A[:-1]):
        poly = add(mul(poly, t), E.float_const(a))
    gaussian = E.exp2_approx(mul(mul(magnitude, E.negf(magnitude)), E.float_const(_LOG2_E)))
    positive = sub(E.float_const(1.0), mul(mul(poly, t), gaussian))
    return E.select(E.cmpf_olt(x, E.float_const(0.0)), E.negf(positive), positive)


#: wsc.tile_select's comparisons as arith.cmpf's predicates: ordered (false
#: where either side is NaN) but "ne", which is true there, as torch compares.
_TILE_PREDICATES = {"lt": "olt", "le": "ole", "gt": "ogt", "ge": "oge", "eq": "oeq", "ne": "une"}
#: Each register of wsc.tile_unary's result from the operand's register.
_TILE_UNARY = {
    "exp2": E.exp2_approx,
    "log2": lambda x: E.approx("lg2.approx.f32", x),
    "rsqrt": lambda x: E.approx("rsqrt.approx.f32", x),
    "tanh": lambda x: E.approx("tanh.approx.f32", x),
    "erf": _erf,
    "relu": lambda x: E.maximumf(x, E.float_const(0.0)),
    "neg": E.negf,
}
if (
    set(_TILE_BINARY) != set(ops.TILE_BINARY_KINDS)
    or set(_TILE_UNARY) != set(ops.TILE_UNARY_KINDS)
    or set(_TILE_PREDICATES) != set(ops.TILE_PREDICATES)
):
    raise TypeError("the lowering of the register-tile ops misses a kind of wsc.ops")


class KernelLowering(KernelPlan):
    """A planned kernel, and how each of its ops is emitted."""

    def build(self, scratch: ir.Module) -> ir.Operation:
        """Lower into `scratch` (which must hold the smem global); returns the
        func.func of llvm/nvvm and upstream ops that wsc.codegen.convert turns
        into an llvm.func."""
        kernel = self.kernel
        location = kernel.location
        with location:
            param_types = [p.type for p in self.params]
            with ir.InsertionPoint(scratch.body):
                new_func = func_d.FuncOp(self.name, ir.FunctionType.get(param_types, []))
        self.block.append_to(new_func.regions[0])
        block = self.block
        self.param_values = {}
        for param in self.params:
            self.param_values[(param.kind, param.name)] = block.add_argument(param.type, location)
        self._prologue(block)
        self.debug_emitter = DebugEmitter(self.debug, scratch, self.entry_ip, self.name)
        self._lower_all()
        for _ in self.args:
            block.erase_argument(0)
        kernel.erase()
        return new_func

    def _param(self, kind: str, name: str) -> ir.Value:
        return self.param_values[(kind, name)]

    def _size(self, position: int, dim: int) -> ir.Value:
        return self._param("i32", self.size_param[(position, dim)])

    def _prologue(self, block: ir.Block) -> None:
        first = block.operations[0]
        with ir.InsertionPoint(first), self.kernel.location:
            self.tid = E.thread_id_x()
            self.smem_aligned = None
            if self.layout.end:
                base = llvm.AddressOfOp(E.ptr(3), SMEM_SYMBOL).result
                # Launder the address through asm: LLVM would otherwise fold the
                # rounding away from the global's declared 1024-byte alignment,
                # and the rounding is what the requested padding pays for.
                base32 = E.inline_asm(
                    "mov.b32 $0, $1;", "=r,r", [E.ptrtoint(base, E.i32())], E.i32()
                )
                pad = E.andi(
                    E.subi(E.const(0, E.i32()), base32), E.const(BUFFER_ALIGN - 1, E.i32())
                )
                self.smem_aligned = E.gep(base, [pad], E.i8())
                self.smem_aligned32 = E.addi(base32, pad)
        self.entry_ip = ir.InsertionPoint.at_block_begin(block)

    def _i32(self, value: ir.Value) -> ir.Value:
        if isinstance(value.type, ir.IndexType):
            return E.index_cast(value, E.i32())
        return value

    def _smem_offset(self, static: int, stage: ir.Value | None = None, stride: int = 0) -> ir.Value:
        """i32 byte offset static + stage*stride from the aligned base."""
        offset = E.const(static, E.i32())
        if stage is not None:
            index = constant_int(stage)
            if index is not None:
                return E.const(static + index * stride, E.i32())
            offset = E.addi(offset, E.muli(self._i32(stage), E.const(stride, E.i32())))
        return offset

    def _smem_ptr(self, offset: ir.Value) -> ir.Value:
        return E.gep(self.smem_aligned, [offset], E.i8())

    def _barrier(self, bars: ir.Value, stage: ir.Value) -> tuple[ir.Value, ir.Value]:
        """(ptr<3>, i32 offset) of barriers[stage]."""
        slot = self.barriers[defining_op(bars)]
        offset = self._smem_offset(slot.offset, stage, 8)
        return self._smem_ptr(offset), offset

    def _role_begin(self, op: ir.Operation) -> int:
        role = self.role_of(op)
        return role.begin if role is not None else 0

    def _local_thread(self, op: ir.Operation) -> ir.Value:
        """The executing thread's index in its role (in the block outside roles)."""
        return E.subi(self.tid, E.const(self._role_begin(op), E.i32()))

    def _warp_and_lane(self, op: ir.Operation) -> tuple[ir.Value, ir.Value]:
        """(warp in the warpgroup, lane) of the executing thread: the
        coordinates an accumulator fragment is laid out by."""
        local = self._local_thread(op)
        return (E.shrui(local, E.const(5, E.i32())), E.andi(local, E.const(31, E.i32())))

    def _lower_all(self) -> None:
        self.slots: dict[ir.Value, AccSlot | DeferredTile] = {}
        # Whether each global tile access's origin is provably >= 0, read
        # before lowering rewrites the block indices and sizes it is made of;
        # by the op's Python object, as an op's hash follows the operands
        # lowering replaces (a memref.dim lowered before the store it feeds).
        self.exact_origin = {
            id(op): all(non_negative(origin) for origin in _ORIGIN_OPERANDS[op.name](op))
            for op in self.ops
            if op.name in _ORIGIN_OPERANDS
        }
        doomed: list[ir.Operation] = []
        for op in self.ops:
            name = op.name
            if not (name.startswith("wsc.") or name == "memref.dim" or name in GPU_INDEX_OPS):
                continue
            method = getattr(self, "_lower_" + name.split(".", 1)[1])
            with ir.InsertionPoint(op), op.location:
                method(op)
            doomed.append(op)
        if any(op.name == "wsc.tma_store" for op in self.ops):
            # An exiting block's shared memory goes to the next block: every
            # thread's TMA stores must have read their source by then.
            terminator = self.block.operations[len(self.block.operations) - 1]
            with ir.InsertionPoint(terminator), self.kernel.location:
                E.bulk_wait_group_read(0)
        for role in self.roles.values():
            if (
                role.max_registers is not None
                and role.max_registers != self.entry_registers
                and role.guard is not None
            ):
                then_block = role.guard.regions[0].blocks[0]
                with ir.InsertionPoint.at_block_begin(then_block), role.op.location:
                    E.set_max_registers(role.max_registers, role.increase)
        for op in reversed(doomed):
            op.erase()

    def _replace(self, op: ir.Operation, *values: ir.Value) -> None:
        for result, value in zip(op.results, values, strict=True):
            result.replace_all_uses_with(value)

    def _lower_dim(self, op):
        size = self._param("i32", self.size_param[self.dim_node(op)])
        self._replace(op, E.index_castui(size, E.index()))

    def _lower_batch_matrix(self, op):
        """Nothing to emit: the TMA copies of the matrix add its index to
        their coordinates (_batch_coordinate)."""

    def _batch_coordinate(self, tensor: ir.Value) -> list[ir.Value]:
        """The outermost TMA coordinate of a matrix of a batch (its index), or
        none for a matrix argument."""
        source = defining_op(tensor)
        if source is None or source.name != "wsc.batch_matrix":
            return []
        return [self._i32(ops.BatchMatrix(source).index)]

    def _gpu_dim(self, op) -> str:
        return str(op.attributes["dimension"]).rstrip(">").split()[-1]

    def _lower_block_id(self, op):
        value = E.special_register("ctaid", self._gpu_dim(op))
        self._replace(op, E.index_castui(value, E.index()))

    def _lower_grid_dim(self, op):
        value = E.special_register("nctaid", self._gpu_dim(op))
        self._replace(op, E.index_castui(value, E.index()))

    def _lower_thread_id(self, op):
        if self._gpu_dim(op) == "x":
            self._replace(op, E.index_castui(self.tid, E.index()))
        else:
            self._replace(op, E.const(0))

    def _lower_block_dim(self, op):
        self._replace(op, E.const(self.threads if self._gpu_dim(op) == "x" else 1))

    def _lower_role(self, op):
        role = self.roles[op]
        local = E.subi(self.tid, E.const(role.begin, E.i32()))
        self._replace(op, E.cmpi("ult", local, E.const(role.count, E.i32())))

    def _lower_elect(self, op):
        self._replace(op, E.cmpi("eq", self.tid, E.const(self._role_begin(op), E.i32())))

    def _lower_sync(self, op):
        role = self.role_of(op)
        if role is None:
            E.barrier()
        else:
            E.barrier(role.barrier_id, role.count)

    def _lower_alloc_shared(self, op):
        pass  # placed by the layout; its users address it

    def _lower_mbarrier_alloc(self, op):
        slot = self.barriers[op]
        guard = E.if_then(E.cmpi("eq", self.tid, E.const(0, E.i32())))
        with E.then_body(guard):
            for index in range(slot.count):
                E.mbarrier_init(
                    self._smem_ptr(E.const(slot.address(index), E.i32())), slot.arrival_count
                )
            E.fence_mbarrier_init()

    def _maybe_delay(self, op) -> None:
        role = self.role_of(op)
        if self.debug.delays(role.name if role is not None else None):
            self.debug_emitter.delay(self.tid)

    @contextlib.contextmanager
    def _arriving_threads(self, op):
        """The threads that perform `op`'s arrivals: every executing thread,
        or with per_warp each warp's first lane once the warp has synchronized."""
        if not ops.MbarrierArrive(op).per_warp:
            yield
            return
        E.warp_sync()
        _, lane = self._warp_and_lane(op)
        guard = E.if_then(E.cmpi("eq", lane, E.const(0, E.i32())))
        with E.then_body(guard):
            yield

    def _lower_mbarrier_arrive_expect_tx(self, op):
        self._maybe_delay(op)
        arrive = ops.MbarrierArriveExpectTx(op)
        address, _ = self._barrier(arrive.barriers, arrive.stage)
        E.mbarrier_arrive_expect_tx(address, arrive.tx_bytes)

    def _lower_mbarrier_wait(self, op):
        self._maybe_delay(op)
        wait = ops.MbarrierWait(op)
        bars, stage, phase = wait.barriers, wait.stage, wait.phase
        _, offset = self._barrier(bars, stage)
        address32 = E.addi(self.smem_aligned32, offset)
        parity32 = E.extui(phase, E.i32())
        if not self.debug.wait_spin_limit:
            E.mbarrier_wait_parity(address32, parity32)
            return
        role = self.role_of(op)
        self.debug_emitter.bounded_wait(
            address32,
            parity32,
            tid=self.tid,
            stage32=self._i32(stage),
            barrier=self.barrier_names[defining_op(bars)],
            role=role.name if role is not None else None,
            location=op.location,
        )

    def _lower_ring_advance(self, op):
        ring = ops.RingAdvance(op)
        stage, phase, stages = ring.stage, ring.phase, ring.num_stages
        following = E.addi(stage, E.const(1))
        wrapped = E.cmpi("eq", following, E.const(stages))
        self._replace(op, E.select(wrapped, E.const(0), following), E.xori(phase, wrapped))

    def _lower_tma_load(self, op):
        """Per atom of the tile, one copy. A multicast load copies the
        executing CTA's slice of the tile's rows, [r*R/n, (r+1)*R/n) for rank
        r of n (the box is R/n rows), into the same rows of every CTA's stage
        (multicast mask: all n CTAs), completing on each CTA's barrier at
        this one's offset."""
        load = ops.TmaLoad(op)
        src, row, col, dst, stage = load.src, load.row, load.col, load.dst, load.stage
        bars = load.barriers
        slot = self.buffers[defining_op(dst)]
        tile = slot.tile
        tensor_map = self._param("tensor_map", tensor_name(self.checked_position(src)))
        batch = self._batch_coordinate(src)
        barrier, _ = self._barrier(bars, stage)
        row32, col32 = self._i32(row), self._i32(col)
        slice_bytes = mask = None
        if load.multicast:
            first_row = E.muli(E.cluster_rank(), E.const(tile.rows // self.cluster, E.i32()))
            row32 = E.addi(row32, first_row)
            slice_bytes = E.muli(first_row, E.const(tile.row_pitch, E.i32()))
            mask = E.const((1 << self.cluster) - 1, ir.IntegerType.get_signless(16))
        for atom in range(tile.num_atoms):
            offset = self._smem_offset(
                slot.offset + tile.atom_offset(atom), stage, slot.stage_bytes
            )
            if slice_bytes is not None:
                offset = E.addi(offset, slice_bytes)
            target = E.addrspacecast(self._smem_ptr(offset), 7)
            column = col32 if atom == 0 else E.addi(col32, E.const(atom * tile.atom_cols, E.i32()))
            E.tma_load(target, tensor_map, [column, row32, *batch], barrier, multicast_mask=mask)

    def _lower_mbarrier_arrive(self, op):
        """An arrive on this CTA's barrier; with every_cta, then on the same
        barrier of each other CTA of the cluster (ranks rank+1, rank+2, ... mod n)."""
        self._maybe_delay(op)
        arrive = ops.MbarrierArrive(op)
        address, _ = self._barrier(arrive.barriers, arrive.stage)
        with self._arriving_threads(op):
            E.mbarrier_arrive(address)
            if arrive.every_cta:
                rank = E.cluster_rank()
                for offset in range(1, self.cluster):
                    peer = E.remui(
                        E.addi(rank, E.const(offset, E.i32())), E.const(self.cluster, E.i32())
                    )
                    E.mbarrier_arrive_remote(address, peer)

    def _lower_cluster_rank(self, op):
        self._replace(op, E.index_castui(E.cluster_rank(), ir.IndexType.get()))

    def _lower_cluster_sync(self, op):
        E.cluster_sync()

    def _acc_slot(
        self, value: ir.Value, element: str, wgmma_form: bool, pairs: bool = False
    ) -> AccSlot:
        """A register tile's slot: in WGMMA's accumulator form (a struct), or
        an array; `pairs` keeps 16-bit elements in pairs (a WGMMA A operand)."""
        fragment = _fragment(value)
        scalar = E.float_type(element)
        packed = False
        if wgmma_form and element == "f16":
            # Kept packed between WGMMAs: unpacking would put moves that read
            # the accumulators between the WGMMAs, and ptxas then serializes
            # them (C7514).
            packed = True
            sub_type = E.struct_of(_pair_type(element), fragment.regs_per_subtile // 2)
        elif pairs:
            # Each pair one 32-bit register, written by one conversion: the
            # WGMMA reading them as A writes no register after its fence.
            packed = True
            sub_type = E.array_of(_pair_type(element), fragment.regs_per_subtile // 2)
        elif wgmma_form:
            sub_type = E.struct_of(scalar, fragment.regs_per_subtile)
        else:
            sub_type = E.array_of(scalar, fragment.regs_per_subtile)
        whole = E.array_of(sub_type, fragment.subtiles)
        with self.entry_ip, value.location:
            address = E.alloca(whole)
        slot = AccSlot(address, fragment, element, sub_type, whole, packed)
        self.slots[value] = slot
        return slot

    def _lower_acc_alloc(self, op):
        alloc = ops.AccAlloc(op)
        tile = alloc.tile
        _, element = acc_type_parameters(tile.type)
        slot = self._acc_slot(tile, element, wgmma_form=element in ("f32", "f16"))
        if alloc.uninitialized:
            return
        for i in range(slot.fragment.subtiles):
            E.store(E.zero(slot.sub_type), slot.subtile_address(i))

    def _descriptor_base(
        self, slot: BufferSlot, stage: ir.Value, operand: OperandDescriptors
    ) -> ir.Value:
        """i64: every descriptor field of the stage tile, the start address
        included. Opaque, so that the descriptors of an unrolled ring's stages
        (two registers each per WGMMA) are not all hoisted above its loop and
        held there, beside the accumulator, for the whole kernel."""
        offset = self._smem_offset(slot.offset, stage, slot.stage_bytes)
        address = E.opaque(E.addi(self.smem_aligned32, offset))
        field = E.shrui(E.andi(address, E.const(0x3FFFF, E.i32())), E.const(4, E.i32()))
        return E.ori(E.extui(field, E.i64()), E.const(_signed64(operand.static_bits), E.i64()))

    def _accumulator_inputs(self, acc_slot: AccSlot, overwrite: bool) -> list[ir.Value]:
        """The WGMMA's accumulator sub-tiles as it reads them: undefined where
        its first step overwrites them, so no register is zeroed for it."""
        if overwrite:
            return [E.undef(acc_slot.sub_type) for _ in range(acc_slot.fragment.subtiles)]
        return [
            E.load(acc_slot.sub_type, acc_slot.subtile_address(i))
            for i in range(acc_slot.fragment.subtiles)
        ]

    def _lower_wgmma(self, op):
        wgmma = ops.Wgmma(op)
        a, b, stage, acc = wgmma.a, wgmma.b, wgmma.stage, wgmma.acc
        a_slot = self.buffers[defining_op(a)]
        b_slot = self.buffers[defining_op(b)]
        k_major_a, k_major_b = not wgmma.a_transposed, wgmma.b_layout == "nk"
        a_desc = OperandDescriptors(a_slot.tile, k_major=k_major_a)
        b_desc = OperandDescriptors(b_slot.tile, k_major=k_major_b)
        acc_slot = self.slots[acc]
        fragment = acc_slot.fragment
        input_type = str(ir.MemRefType(a.type).element_type)
        a_row = wgmma.a_row
        a_stage = stage if wgmma.a_stage is None else E.const(wgmma.a_stage, ir.IndexType.get())
        a_base = self._descriptor_base(a_slot, a_stage, a_desc)
        b_base = self._descriptor_base(b_slot, stage, b_desc)
        overwrite = wgmma.overwrite or _first_write_of_zeros(op, acc)
        values = self._accumulator_inputs(acc_slot, overwrite)
        for k in range(a_desc.k_steps):
            b_value = E.addi(b_base, E.const(b_desc.offset(k) >> 4, E.i64()))
            for i in range(fragment.subtiles):
                a_offset = a_desc.offset(k, a_row + SUBTILE_ROWS * i)
                a_value = E.addi(a_base, E.const(a_offset >> 4, E.i64()))
                values[i] = E.wgmma_mma_async(
                    values[i],
                    a_value,
                    b_value,
                    fragment.cols,
                    input_type,
                    k_major_a,
                    k_major_b,
                    acc_slot.element,
                    accumulate=k > 0 or not overwrite,
                )
        for i, value in enumerate(values):
            E.store(value, acc_slot.subtile_address(i))

    def _lower_wgmma_register_a(self, op):
        wgmma = ops.WgmmaRegisterA(op)
        a_tile = self.slots[wgmma.a]
        b_slot = self.buffers[defining_op(wgmma.b)]
        k_major_b = wgmma.b_layout == "nk"
        b_desc = OperandDescriptors(b_slot.tile, k_major=k_major_b)
        acc_slot = self.slots[wgmma.acc]
        fragment = acc_slot.fragment
        input_type = str(ir.MemRefType(wgmma.b.type).element_type)
        b_base = self._descriptor_base(b_slot, wgmma.stage, b_desc)
        overwrite = _first_write_of_zeros(op, wgmma.acc)
        values = self._accumulator_inputs(acc_slot, overwrite)
        for k in range(b_desc.k_steps):
            b_value = E.addi(b_base, E.const(b_desc.offset(k) >> 4, E.i64()))
            for i in range(fragment.subtiles):
                a_registers = [a_tile.pair_bits(i, low) for low, _ in a_operand_registers(k)]
                values[i] = E.wgmma_register_a(
                    values[i],
                    a_registers,
                    b_value,
                    fragment.cols,
                    input_type,
                    k_major_b,
                    accumulate=k > 0 or not overwrite,
                )
        for i, value in enumerate(values):
            E.store(value, acc_slot.subtile_address(i))

    def _lower_tma_store(self, op):
        store = ops.TmaStore(op)
        src, stage, dst, row, col = store.src, store.stage, store.dst, store.row, store.col
        slot = self.buffers[defining_op(src)]
        tile = slot.tile
        tensor_map = self._param("tensor_map", tensor_name(self.checked_position(dst)))
        batch = self._batch_coordinate(dst)
        row32, col32 = self._i32(row), self._i32(col)
        for atom in range(tile.num_atoms):
            offset = self._smem_offset(
                slot.offset + tile.atom_offset(atom), stage, slot.stage_bytes
            )
            column = col32 if atom == 0 else E.addi(col32, E.const(atom * tile.atom_cols, E.i32()))
            E.tma_store(self._smem_ptr(offset), tensor_map, [column, row32, *batch])
        E.bulk_commit_group()

    def _lower_coalesced_store(self, op):
        """Warp w of the executing threads stores rows [w*R/W, (w+1)*R/W) of
        the stage tile, a row at a time, lane l the elements 32j + l: every
        store instruction writes 32 consecutive elements of one row, which
        needs no alignment beyond the element's (C's rows may be any length).
        The shared-memory reads of a warp fall in one 128-byte line: no bank
        conflicts. Rows within a warp's share are static, so their swizzle
        keys are too."""
        store = ops.CoalescedStore(op)
        src, stage, dst, row0, col0 = store.src, store.stage, store.dst, store.row, store.col
        buffer = self.buffers[defining_op(src)]
        tile = buffer.tile
        position = self.args.index(dst)
        name = tensor_name(position)
        scalar = E.float_type(str(ir.MemRefType(dst.type).element_type))
        i32, i64 = E.i32(), E.i64()
        rows, cols = self._size(position, 0), self._size(position, 1)
        ld64 = E.arith_extsi(self._param("i32", f"ld{name}"), i64)
        warp, lane = self._warp_and_lane(op)
        warp_rows = tile.rows // (self._executing_threads(op) // WARP_SIZE)
        first_row = E.muli(warp, E.const(warp_rows, i32))
        row0_32, col0_32 = self._i32(row0), self._i32(col0)
        lane_bytes = E.muli(lane, E.const(tile.element_bytes, i32))
        stage_base = E.addi(
            self._smem_offset(buffer.offset, stage, buffer.stage_bytes),
            E.muli(first_row, E.const(tile.row_pitch, i32)),
        )
        top_row = E.addi(row0_32, first_row)
        lane_col = E.addi(col0_32, lane)
        thread_base = E.gep(
            self._param("pointer", name),
            [E.addi(E.muli(E.arith_extsi(top_row, i64), ld64), E.arith_extsi(lane_col, i64))],
            scalar,
        )
        exact = self.exact_origin[id(op)]
        in_rows = self._fits(row0_32, tile.rows, rows, exact)
        in_cols = self._fits(col0_32, tile.cols, cols, exact)
        whole_tile = E.scf_if_else(E.andi(in_rows, in_cols))

        def store_rows(checked: bool):
            for r in range(warp_rows):
                # warp_rows is a multiple of 8: row r's swizzle key is row (r mod 8)'s.
                key = tile.swizzled_offset(r, 0) ^ tile.byte_offset(r, 0)
                row_address = E.gep(thread_base, [E.muli(E.const(r, i64), ld64)], scalar)
                row_ok = (
                    self._inside(E.addi(top_row, E.const(r, i32)), rows, exact) if checked else None
                )
                for first_col in range(0, tile.cols, WARP_SIZE):
                    atom, inner = divmod(first_col, tile.atom_cols)
                    in_row = E.addi(E.const(inner * tile.element_bytes, i32), lane_bytes)
                    offset = E.addi(
                        E.addi(
                            stage_base, E.const(tile.atom_offset(atom) + r * tile.row_pitch, i32)
                        ),
                        E.xori(in_row, E.const(key, i32)),
                    )
                    address = E.gep(row_address, [first_col], scalar)
                    if not checked:
                        E.store(E.load(scalar, self._smem_ptr(offset)), address)
                        continue
                    col_ok = self._inside(E.addi(lane_col, E.const(first_col, i32)), cols, exact)
                    guard = E.if_then(E.andi(row_ok, col_ok))
                    with E.then_body(guard):
                        E.store(E.load(scalar, self._smem_ptr(offset)), address)

        with ir.InsertionPoint.at_block_terminator(whole_tile.then_block):
            store_rows(checked=False)
        with ir.InsertionPoint.at_block_terminator(whole_tile.else_block):
            store_rows(checked=True)

    def _lower_tma_store_wait(self, op):
        E.bulk_wait_group_read(ops.TmaStoreWait(op).pending)

    def _lower_fence_proxy_async(self, op):
        E.fence_proxy_async_shared()

    def _stage_pairs(
        self, op, fragment: AccumulatorFragment, ring: ir.Value, stage: ir.Value, origin
    ) -> Iterator[tuple[int, int, ir.Value]]:
        """(subtile, first register, shared byte offset) of each column pair a
        thread holds of a fragment placed at `origin` = (row, col) of a stage
        tile, where the buffer's swizzled layout puts it. A warp's access
        covers 8 rows of one 16-byte chunk column, which the swizzle spreads
        over 8 different chunks: no bank conflicts with the 128-byte swizzle."""
        buffer = self.buffers[defining_op(ring)]
        tile = buffer.tile
        i32 = E.i32()
        warp, lane = self._warp_and_lane(op)
        quad_row = E.shrui(lane, E.const(2, i32))
        # The swizzle flips an offset's chunk bits by its bits 7 and up
        # (TileLayout.swizzled_offset). The rows this thread holds are
        # origin row (a multiple of 64) + 16*warp + lane/4 + 8*k, whose
        # offsets differ in those bits by multiples of the swizzle period:
        # all share lane/4's key.
        key = E.andi(
            E.shrui(E.muli(quad_row, E.const(tile.row_pitch, i32)), E.const(3, i32)),
            E.const(tile.swizzle_bits, i32),
        )
        row_bytes = E.muli(
            E.addi(E.muli(warp, E.const(16, i32)), quad_row), E.const(tile.row_pitch, i32)
        )
        pair_bytes = E.muli(E.andi(lane, E.const(3, i32)), E.const(2 * tile.element_bytes, i32))
        base = E.addi(self._smem_offset(buffer.offset, stage, buffer.stage_bytes), row_bytes)
        first_row, first_col = origin
        for i in range(fragment.subtiles):
            for h in range(2):
                row = first_row + SUBTILE_ROWS * i + 8 * h
                for j in range(fragment.cols // 8):
                    atom, inner = divmod(first_col + 8 * j, tile.atom_cols)
                    static = tile.atom_offset(atom) + row * tile.row_pitch
                    in_row = E.addi(E.const(inner * tile.element_bytes, i32), pair_bytes)
                    offset = E.addi(E.addi(base, E.const(static, i32)), E.xori(in_row, key))
                    yield i, 4 * j + 2 * h, offset

    def _lower_store_shared(self, op):
        """Each thread writes its column pairs (2-element stores)."""
        store = ops.StoreShared(op)
        slot = self.slots[store.tile]
        vector_type = ir.VectorType.get([2], E.float_type(slot.element))
        alignment = 2 * ELEMENT_BYTES[slot.element]
        origin = (store.row or 0, store.col or 0)
        for i, r, offset in self._stage_pairs(op, slot.fragment, store.dst, store.stage, origin):
            pair = E.undef(vector_type)
            for c in range(2):
                pair = E.insertelement(pair, slot.load_element(i, r + c), c)
            E.store(pair, self._smem_ptr(offset), alignment=alignment)

    def _lower_load_shared(self, op):
        """Each thread reads its column pairs (2-element loads), here and
        each time (volatile: a stage read twice is read twice, not kept in
        registers between the reads; a later op may write it in place or
        release it)."""
        load = ops.LoadShared(op)
        element = str(ir.MemRefType(load.src.type).element_type)
        scalar = E.float_type(element)
        target = self._acc_slot(load.result, "f32", wgmma_form=False)
        origin = (load.row or 0, load.col or 0)
        if load.transpose:
            self._load_shared_transposed(op, load, target, origin, scalar)
            return
        vector_type = ir.VectorType.get([2], scalar)
        alignment = 2 * ELEMENT_BYTES[element]
        for i, r, offset in self._stage_pairs(op, target.fragment, load.src, load.stage, origin):
            pair = E.load(vector_type, self._smem_ptr(offset), alignment=alignment, volatile=True)
            for c in range(2):
                value = E.extractelement(pair, c)
                if element != "f32":
                    value = E.extf(value, E.float_type("f32"))
                target.store_element(i, r + c, value)

    def _load_shared_transposed(self, op, load, target, origin, scalar) -> None:
        """A transposed read: each element by itself, from the stage row and
        column the fragment's column and row select, where the swizzle puts
        it (TileLayout.swizzled_offset, at run time)."""
        buffer = self.buffers[defining_op(load.src)]
        tile = buffer.tile
        i32 = E.i32()
        warp, lane = self._warp_and_lane(op)
        base = self._smem_offset(buffer.offset, load.stage, buffer.stage_bytes)
        stored_origin = (E.const(origin[0], i32), E.const(origin[1], i32))
        vector = _fragment(load.result).row_vector
        for i in range(target.fragment.subtiles):
            for r in range(target.fragment.regs_per_subtile):
                row, col = self._element_position(warp, lane, stored_origin, True, i, r, vector)
                inner = col
                offset = E.muli(row, E.const(tile.row_pitch, i32))
                if tile.num_atoms > 1:
                    atom = E.shrui(col, E.const((tile.atom_cols - 1).bit_length(), i32))
                    inner = E.andi(col, E.const(tile.atom_cols - 1, i32))
                    offset = E.addi(offset, E.muli(atom, E.const(tile.atom_bytes, i32)))
                offset = E.addi(offset, E.muli(inner, E.const(tile.element_bytes, i32)))
                if tile.swizzle_bits:
                    key = E.andi(E.shrui(offset, E.const(3, i32)), E.const(tile.swizzle_bits, i32))
                    offset = E.xori(offset, key)
                address = self._smem_ptr(E.addi(base, offset))
                value = E.load(scalar, address, alignment=tile.element_bytes, volatile=True)
                if scalar != E.float_type("f32"):
                    value = E.extf(value, E.float_type("f32"))
                target.store_element(i, r, value)

    def _lower_wgmma_fence(self, op):
        E.wgmma_fence()

    def _lower_wgmma_commit_group(self, op):
        E.wgmma_commit_group()

    def _lower_wgmma_wait_group(self, op):
        pending = ops.WgmmaWaitGroup(op).pending
        E.wgmma_wait_group(pending)
        in_flight = _still_in_flight(op, pending)
        if in_flight is None:
            return
        # To LLVM the accumulators are plain values that the wait does not
        # touch, so it may move a read of them (the epilogue's cast) above
        # the wait while a WGMMA still writes them; ptxas then serializes
        # every WGMMA (C7514). Tying each retired one's registers to an empty
        # asm after the wait keeps every later read below it.
        role = self.role_of(op)
        for value, slot in self.slots.items():
            if (
                value in self.wgmma_accumulators
                and self.accumulator_roles[value] is role
                and value not in in_flight
            ):
                for i in range(slot.fragment.subtiles):
                    address = slot.subtile_address(i)
                    fenced = E.register_fence(
                        E.load(slot.sub_type, address),
                        _pair_type(slot.element) if slot.packed else E.float_type(slot.element),
                        slot.fragment.regs_per_subtile // (2 if slot.packed else 1),
                    )
                    E.store(fenced, address)

    def _lower_cast(self, op):
        cast = ops.Cast(op)
        src = cast.src
        _, element = acc_type_parameters(cast.result.type)
        dst_scalar = E.float_type(element)

        def convert(i: int, r: int) -> ir.Value:
            value = self.slots[src].load_element(i, r)
            # From f32 (checked by analyze), or the same type.
            return value if element == self.slots[src].element else E.truncf(value, dst_scalar)

        self._define_tile(op, convert, element)

    def _deferrable(self, op: ir.Operation) -> bool:
        """Whether op's tile may be computed where it is read: every reader
        is in op's block or in a region of an op there, and nothing from op
        to the last of them writes a tile in place. Never a row vector: a
        broadcast reads each of its registers for a whole row of elements."""
        if _fragment(op.results[0]).row_vector:
            return False
        block = op.block
        last = op
        for use in op.results[0].uses:
            reader: ir.Operation | None = use_owner(use)
            while reader is not None and reader.block != block:
                parent = reader.parent
                reader = parent.operation if parent is not None else None
            if reader is None:
                return False
            if last.is_before_in_block(reader):
                last = reader
        following = False
        for candidate in block.operations:
            candidate = candidate.operation
            if candidate == op:
                following = True
                continue
            if following:
                if any(n.name in _TILE_WRITERS for n in (candidate, *walk(candidate))):
                    return False
                if candidate == last:
                    break
        return True

    def _define_tile(
        self, op: ir.Operation, compute: Callable[[int, int], ir.Value], element: str = "f32"
    ) -> None:
        """op's tile of `element`, element (i, r) = compute(i, r): deferred to
        its readers where that is safe, else computed here into registers."""
        result = op.results[0]
        if self._deferrable(op):
            self.slots[result] = DeferredTile(_fragment(result), element, compute)
            return
        read_as_a = any(
            use_owner(use).name == "wsc.wgmma_register_a"
            and ops.WgmmaRegisterA(use_owner(use)).a == result
            for use in result.uses
        )
        target = self._acc_slot(result, element, wgmma_form=False, pairs=read_as_a)
        for i in range(target.fragment.subtiles):
            if target.packed:
                for r in range(0, target.fragment.regs_per_subtile, 2):
                    target.store_pair(i, r, compute(i, r), compute(i, r + 1))
                continue
            for r in range(target.fragment.regs_per_subtile):
                target.store_element(i, r, compute(i, r))

    # Each compute function reads its operand tiles from self.slots when it
    # runs, never before: a deferred operand may be computed into registers
    # by then.

    def _operand(self, tile: ir.Value, result: ir.Value) -> Callable[[int, int], ir.Value]:
        """The element of operand `tile` that register (i, r) of the
        element-wise `result` reads (a row vector broadcast over a tile)."""
        fragment = _fragment(result)

        def element(i: int, r: int) -> ir.Value:
            slot = self.slots[tile]
            return slot.load_element(i, operand_register(slot.fragment, fragment, r))

        return element

    def _lower_tile_binary(self, op):
        binary = ops.TileBinary(op)
        combine = _TILE_BINARY[binary.kind]
        x, y = self._operand(binary.x, binary.result), self._operand(binary.y, binary.result)
        self._define_tile(op, lambda i, r: combine(x(i, r), y(i, r)))

    def _lower_tile_unary(self, op):
        unary = ops.TileUnary(op)
        apply = _TILE_UNARY[unary.kind]
        x = unary.x
        self._define_tile(op, lambda i, r: apply(self.slots[x].load_element(i, r)))

    def _lower_tile_row_reduce(self, op):
        # Computed here, whole: each row's value needs all of its elements.
        reduce = ops.TileRowReduce(op)
        x = self.slots[reduce.x]
        combine = _TILE_BINARY["max" if reduce.kind == "max" else "add"]
        target = self._acc_slot(reduce.result, "f32", wgmma_form=False)
        fragment = x.fragment
        for i in range(fragment.subtiles):
            for h in range(2):
                if fragment.row_vector:  # one value per row already
                    target.store_element(i, h, x.load_element(i, h))
                    continue
                # A thread's registers 4j + 2h + c of sub-tile i lie in one row;
                # the row's other columns are in the lanes that differ in bits 0-1.
                registers = [4 * j + 2 * h + c for j in range(fragment.cols // 8) for c in range(2)]
                # Combined in pairs, a tree: a chain would wait on each result.
                values = [x.load_element(i, r) for r in registers]
                while len(values) > 1:
                    pairs = zip(values[0::2], values[1::2], strict=False)
                    values = [combine(a, b) for a, b in pairs] + values[len(values) // 2 * 2 :]
                row = values[0]
                for lane_mask in (1, 2):
                    row = combine(row, E.shuffle_xor(row, lane_mask))
                target.store_element(i, h, row)

    def _lower_tile_col_reduce(self, op):
        # Computed here, whole: each element needs its group's rows. A
        # thread's rows are 16*warp + lane/4 + 8*h: a group of up to 8 rows
        # is the lanes that differ in bits 2-4 (lane/4), one of 16 adds h.
        reduce = ops.TileColReduce(op)
        x = self.slots[reduce.x]
        combine = _TILE_BINARY["max" if reduce.kind == "max" else "add"]
        target = self._acc_slot(reduce.result, "f32", wgmma_form=False)
        fragment = x.fragment
        group = min(reduce.rows, WARP_ROWS)
        lane_masks = [4 * bit for bit in (1, 2, 4) if bit < group]
        # The register of a thread's row 8 further down: r + 2 (r = 4j + 2h + c),
        # or of a row vector's r + 1 (r = h).
        below = 1 if fragment.row_vector else 2
        for i in range(fragment.subtiles):
            for first in range(0, fragment.regs_per_subtile, 2 * below):
                for c in range(below):
                    registers = [first + c, first + c + below]
                    values = [x.load_element(i, r) for r in registers]
                    if group == 16:
                        values = [combine(values[0], values[1])]
                    for lane_mask in lane_masks:
                        values = [combine(v, E.shuffle_xor(v, lane_mask)) for v in values]
                    for k, r in enumerate(registers):
                        target.store_element(i, r, values[k % len(values)])
        if reduce.rows > WARP_ROWS:
            self._combine_across_warps(op, target, reduce.rows // WARP_ROWS, combine)

    def _combine_across_warps(self, op, tile: AccSlot, warps: int, combine) -> None:
        """Each warp's value of the row vector `tile` (every thread of the
        warp holds it), combined over each group of `warps` consecutive warps
        of the fragment: lane 0 writes it to the exchange area, the role
        syncs, each thread combines its group's values in warp order (the
        same bits in every warp), and the role syncs again before the area
        can be written by the next such reduction."""
        exchange = self.layout.exchange
        assert exchange is not None, "planned for every col_reduce over several warps"
        block_warps = self.threads // WARP_SIZE
        value_bytes = ELEMENT_BYTES["f32"]
        local_warp, lane = self._warp_and_lane(op)
        warp = E.shrui(self.tid, E.const(5, E.i32()))
        first = E.subi(warp, E.remui(local_warp, E.const(warps, E.i32())))

        def address(i: int, block_warp: ir.Value) -> ir.Value:
            slot = E.addi(E.const(i * block_warps, E.i32()), block_warp)
            offset = E.addi(
                E.const(exchange.offset, E.i32()), E.muli(slot, E.const(value_bytes, E.i32()))
            )
            return self._smem_ptr(offset)

        subtiles = tile.fragment.subtiles
        guard = E.if_then(E.cmpi("eq", lane, E.const(0, E.i32())))
        with E.then_body(guard):
            for i in range(subtiles):
                E.store(tile.load_element(i, 0), address(i, warp))
        self._lower_sync(op)
        for i in range(subtiles):
            values = [
                E.load(E.float_type("f32"), address(i, E.addi(first, E.const(j, E.i32()))))
                for j in range(warps)
            ]
            while len(values) > 1:
                values = [combine(a, b) for a, b in zip(values[0::2], values[1::2], strict=True)]
            for r in range(tile.fragment.regs_per_subtile):
                tile.store_element(i, r, values[0])
        self._lower_sync(op)

    def _lower_tile_select(self, op):
        select = ops.TileSelect(op)
        predicate = _TILE_PREDICATES[select.predicate]
        lhs, rhs, on_true, on_false = (
            self._operand(tile, select.result)
            for tile in (select.lhs, select.rhs, select.on_true, select.on_false)
        )

        def element(i: int, r: int) -> ir.Value:
            condition = E.cmpf(predicate, lhs(i, r), rhs(i, r))
            return E.select(condition, on_true(i, r), on_false(i, r))

        self._define_tile(op, element)

    def _lower_tile_iota(self, op):
        iota = ops.TileIota(op)
        warp, lane = self._warp_and_lane(op)
        zero, origin = E.const(0, E.i32()), self._i32(iota.origin)
        along_rows = iota.along == "rows"

        vector = _fragment(iota.result).row_vector

        def index(i: int, r: int) -> ir.Value:
            row, col = self._element_position(
                warp, lane, (origin, zero) if along_rows else (zero, origin), False, i, r, vector
            )
            return E.sitofp(row if along_rows else col, E.float_type("f32"))

        self._define_tile(op, index)

    def _lower_tile_assign(self, op):
        assign = ops.TileAssign(op)
        dst, src = self.slots[assign.dst], self.slots[assign.src]
        fragment = dst.fragment
        # Every element first: an element of src may read a whole row of dst
        # (a row reduction of it), which the stores would change under it.
        values = [
            [src.load_element(i, r) for r in range(fragment.regs_per_subtile)]
            for i in range(fragment.subtiles)
        ]
        for i, row in enumerate(values):
            if dst.packed:
                for r in range(0, len(row), 2):
                    dst.store_pair(i, r, row[r], row[r + 1])
            else:
                for r, value in enumerate(row):
                    dst.store_element(i, r, value)

    def _lower_tile_splat(self, op):
        value = self._param("f32", tensor_name(self.args.index(ops.TileSplat(op).value)))
        self._define_tile(op, lambda i, r: value)

    def _lower_tile_fill(self, op):
        value = ops.TileFill(op).value
        self._define_tile(op, lambda i, r: E.float_const(value))

    def _lower_store(self, op):
        store = ops.Store(op)
        tile, dst, row0, col0 = store.tile, store.dst, store.row, store.col
        slot = self.slots[tile]
        fragment = slot.fragment
        position = self.args.index(dst)
        name = tensor_name(position)
        scalar = E.float_type(slot.element)
        element_bytes = 4 if slot.element == "f32" else 2
        base = self._param("pointer", name)
        ld = self._param("i32", f"ld{name}")
        rows, cols = self._size(position, 0), self._size(position, 1)
        i32 = E.i32()

        warp, lane = self._warp_and_lane(op)
        row0_32, col0_32 = self._i32(row0), self._i32(col0)
        exact = self.exact_origin[id(op)]
        if store.transpose:
            self._store_transposed(
                slot, base, ld, (rows, cols), (row0_32, col0_32), warp, lane, exact
            )
            return
        row_base, col_base = self._fragment_origin(warp, lane, (row0_32, col0_32))
        ld64 = E.arith_extsi(ld, E.i64())

        # Three paths: the tile is in bounds with column pairs aligned (2-wide
        # vector stores); in bounds, pairs not aligned (an odd row stride,
        # as for N = 8193: element stores, no bounds checks); a partial tile
        # (element stores, each checked).
        pair_align = 2 * element_bytes
        in_rows = self._fits(row0_32, fragment.rows, rows, exact)
        in_cols = self._fits(col0_32, fragment.cols, cols, exact)
        even = E.cmpi("eq", E.andi(E.ori(ld, col0_32), E.const(1, i32)), E.const(0, i32))
        aligned = E.cmpi(
            "eq",
            E.andi(E.ptrtoint(base, E.i64()), E.const(pair_align - 1, E.i64())),
            E.const(0, E.i64()),
        )
        whole_tile = E.scf_if_else(E.andi(in_rows, in_cols))
        vector_type = ir.VectorType.get([2], scalar)

        def row_offset(row):
            return E.muli(E.arith_extsi(row, E.i64()), ld64)

        def address(row_off, column):
            return E.gep(base, [E.addi(row_off, E.arith_extsi(column, E.i64()))], scalar)

        def fragment_rows():
            """(subtile, half, row) of every row this thread holds."""
            for i in range(fragment.subtiles):
                for h in range(2):
                    yield i, h, E.addi(row_base, E.const(SUBTILE_ROWS * i + 8 * h, i32))

        def store_element(i, h, j, c, row_off):
            column = E.addi(col_base, E.const(8 * j + c, i32))
            value = slot.load_element(i, 4 * j + 2 * h + c)
            E.store(value, address(row_off, column), alignment=element_bytes)

        with ir.InsertionPoint.at_block_terminator(whole_tile.then_block):
            pairs = E.scf_if_else(E.andi(even, aligned))
            with ir.InsertionPoint.at_block_terminator(pairs.then_block):
                for i, h, row in fragment_rows():
                    row_off = row_offset(row)
                    for j in range(fragment.cols // 8):
                        column = E.addi(col_base, E.const(8 * j, i32))
                        pair = E.undef(vector_type)
                        for c in range(2):
                            value = slot.load_element(i, 4 * j + 2 * h + c)
                            pair = E.insertelement(pair, value, c)
                        E.store(pair, address(row_off, column), alignment=pair_align)
            with ir.InsertionPoint.at_block_terminator(pairs.else_block):
                for i, h, row in fragment_rows():
                    row_off = row_offset(row)
                    for j in range(fragment.cols // 8):
                        for c in range(2):
                            store_element(i, h, j, c, row_off)
        with ir.InsertionPoint.at_block_terminator(whole_tile.else_block):
            for i, h, row in fragment_rows():
                row_ok = E.if_then(self._inside(row, rows, exact))
                with E.then_body(row_ok):
                    row_off = row_offset(row)
                    for j in range(fragment.cols // 8):
                        for c in range(2):
                            column = E.addi(col_base, E.const(8 * j + c, i32))
                            col_ok = E.if_then(self._inside(column, cols, exact))
                            with E.then_body(col_ok):
                                store_element(i, h, j, c, row_off)

    @staticmethod
    def _inside(index, bound, exact: bool) -> ir.Value:
        """index < bound; unless `exact` (the tile's origin is provably >= 0)
        compared unsigned, so that a negative index is outside too."""
        return E.cmpi("slt" if exact else "ult", index, bound)

    @staticmethod
    def _fits(origin, extent: int, bound, exact: bool) -> ir.Value:
        """[origin, origin + extent) lies in [0, bound) (origin >= 0 is
        checked unless `exact`)."""
        fits = E.cmpi("sle", E.addi(origin, E.const(extent, E.i32())), bound)
        return fits if exact else E.andi(fits, E.cmpi("sge", origin, E.const(0, E.i32())))

    @staticmethod
    def _element_position(warp, lane, origin, transpose, i: int, r: int, vector: bool = False):
        """(row, column) of register r of sub-tile i, held by thread (warp,
        lane), in the global tensor whose block at `origin` (row, col; i32)
        the tile (a row vector with `vector`) is, or with `transpose` whose
        block's transpose it is."""
        i32 = E.i32()
        row0, col0 = origin[::-1] if transpose else origin
        half = r if vector else row_register(r)
        row = E.addi(
            E.addi(row0, E.muli(warp, E.const(16, i32))),
            E.addi(E.shrui(lane, E.const(2, i32)), E.const(SUBTILE_ROWS * i + 8 * half, i32)),
        )
        if vector:
            return (col0, row) if transpose else (row, col0)
        col = E.addi(
            col0,
            E.addi(
                E.muli(E.andi(lane, E.const(3, i32)), E.const(2, i32)),
                E.const(8 * (r // 4) + r % 2, i32),
            ),
        )
        return (col, row) if transpose else (row, col)

    def _global_element(
        self,
        base,
        ld,
        bounds,
        row,
        col,
        element: str,
        read_only: bool,
        exact: bool,
        fill: float = 0.0,
    ) -> ir.Value:
        """tensor[row, col] as an f32 (`fill` outside `bounds`), by a load
        predicated off outside: the address needs no select, so a loop steps it."""
        inside = E.andi(self._inside(row, bounds[0], exact), self._inside(col, bounds[1], exact))
        i64 = E.i64()
        offset = E.addi(
            E.muli(E.arith_extsi(row, i64), E.arith_extsi(ld, i64)), E.arith_extsi(col, i64)
        )
        return self._vector_element(base, offset, inside, element, read_only, fill)

    @staticmethod
    def _vector_element(
        base, offset, inside, element: str, read_only: bool, fill: float = 0.0
    ) -> ir.Value:
        """base[offset] as an f32, or `fill` where `inside` is false."""
        address = E.ptrtoint(E.gep(base, [offset], E.float_type(element)), E.i64())
        return E.load_global_masked(address, 0, inside, element, read_only, fill)

    def _lower_tile_load(self, op):
        load = ops.TileLoad(op)
        position = self.args.index(load.src)
        name = tensor_name(position)
        element = str(ir.MemRefType(load.src.type).element_type)
        base, ld = self._param("pointer", name), self._param("i32", f"ld{name}")
        bounds = (self._size(position, 0), self._size(position, 1))
        warp, lane = self._warp_and_lane(op)
        origin = (self._i32(load.row), self._i32(load.col))
        exact = self.exact_origin[id(op)]
        read_only = self._read_only(position)
        fill = 0.0 if load.fill is None else load.fill
        vector = _fragment(load.result).row_vector
        if vector or load.transpose:

            def compute(i: int, r: int) -> ir.Value:
                row, col = self._element_position(warp, lane, origin, load.transpose, i, r, vector)
                return self._global_element(
                    base, ld, bounds, row, col, element, read_only, exact, fill
                )

            self._define_tile(op, compute)
            return
        # Each row's elements from one address register, at immediate offsets.
        fragment = _fragment(load.result)
        i32, i64 = E.i32(), E.i64()
        element_bytes = ELEMENT_BYTES[element]
        row_base, col_base = self._fragment_origin(warp, lane, origin)
        ld64 = E.arith_extsi(ld, i64)
        rows = {}
        for i in range(fragment.subtiles):
            for h in range(2):
                row = E.addi(row_base, E.const(SUBTILE_ROWS * i + 8 * h, i32))
                offset = E.addi(E.muli(E.arith_extsi(row, i64), ld64), E.arith_extsi(col_base, i64))
                address = E.ptrtoint(E.gep(base, [offset], E.float_type(element)), i64)
                rows[(i, h)] = (address, self._inside(row, bounds[0], exact))

        def element_of(i: int, r: int) -> ir.Value:
            address, row_inside = rows[(i, row_register(r))]
            column = 8 * (r // 4) + r % 2
            inside = E.andi(
                row_inside, self._inside(E.addi(col_base, E.const(column, i32)), bounds[1], exact)
            )
            return E.load_global_masked(
                address, column * element_bytes, inside, element, read_only, fill
            )

        self._define_tile(op, element_of)

    def _lower_tile_broadcast(self, op):
        broadcast = ops.TileBroadcast(op)
        position = self.args.index(broadcast.src)
        element = str(ir.MemRefType(broadcast.src.type).element_type)
        base = self._param("pointer", tensor_name(position))
        length = self._size(position, 0)
        warp, lane = self._warp_and_lane(op)
        zero = E.const(0, E.i32())
        offset = self._i32(broadcast.offset)
        exact = self.exact_origin[id(op)]
        along_rows = broadcast.along == "rows"
        origin = (offset, zero) if along_rows else (zero, offset)
        read_only = self._read_only(position)
        vector = _fragment(broadcast.result).row_vector
        if vector or along_rows:

            def compute(i: int, r: int) -> ir.Value:
                row, col = self._element_position(warp, lane, origin, False, i, r, vector)
                index = row if along_rows else col
                inside = self._inside(index, length, exact)
                return self._vector_element(
                    base, E.arith_extsi(index, E.i64()), inside, element, read_only
                )

            self._define_tile(op, compute)
            return
        # Along columns: every element from one address register, at
        # immediate offsets (a column's reads in different rows merge).
        i32, i64 = E.i32(), E.i64()
        _, col_base = self._fragment_origin(warp, lane, origin)
        address = E.ptrtoint(
            E.gep(base, [E.arith_extsi(col_base, i64)], E.float_type(element)), i64
        )

        def element_of(i: int, r: int) -> ir.Value:
            column = 8 * (r // 4) + r % 2
            inside = self._inside(E.addi(col_base, E.const(column, i32)), length, exact)
            return E.load_global_masked(
                address, column * ELEMENT_BYTES[element], inside, element, read_only
            )

        self._define_tile(op, element_of)

    def _read_only(self, position: int) -> bool:
        """Whether the kernel never writes tensor argument `position`."""
        return position not in self.store_args | self.tma_store_args | self.workspace_args

    @staticmethod
    def _fragment_origin(warp, lane, origin) -> tuple[ir.Value, ir.Value]:
        """(row, column) of the first element thread (warp, lane) holds of the
        tile at `origin`: its register 0 of sub-tile 0."""
        i32 = E.i32()
        row0, col0 = origin
        row = E.addi(E.addi(row0, E.muli(warp, E.const(16, i32))), E.shrui(lane, E.const(2, i32)))
        col = E.addi(col0, E.muli(E.andi(lane, E.const(3, i32)), E.const(2, i32)))
        return row, col

    def _store_transposed(self, slot, base, ld, bounds, origin, warp, lane, exact) -> None:
        """wsc.store {transpose}: fragment element (r, c) to dst[row0 + c, col0 + r],
        element by element (a thread's neighbours in the fragment are a row
        apart in dst); checked against dst's bounds only for a partial tile."""
        fragment = slot.fragment
        i64 = E.i64()
        scalar = E.float_type(slot.element)
        element_bytes = ELEMENT_BYTES[slot.element]
        (rows, cols), (row0, col0) = bounds, origin
        ld64 = E.arith_extsi(ld, i64)
        whole_tile = E.scf_if_else(
            E.andi(
                self._fits(row0, fragment.cols, rows, exact),
                self._fits(col0, fragment.rows, cols, exact),
            )
        )

        def elements():
            """(register, dst row, dst column) of every element this thread holds."""
            for i in range(fragment.subtiles):
                for r in range(fragment.regs_per_subtile):
                    yield (i, r), *self._element_position(warp, lane, origin, True, i, r)

        def store_element(register, row, column):
            offset = E.addi(E.muli(E.arith_extsi(row, i64), ld64), E.arith_extsi(column, i64))
            E.store(
                slot.load_element(*register),
                E.gep(base, [offset], scalar),
                alignment=element_bytes,
            )

        with ir.InsertionPoint.at_block_terminator(whole_tile.then_block):
            for register, row, column in elements():
                store_element(register, row, column)
        with ir.InsertionPoint.at_block_terminator(whole_tile.else_block):
            for register, row, column in elements():
                inside = E.andi(self._inside(row, rows, exact), self._inside(column, cols, exact))
                with E.then_body(E.if_then(inside)):
                    store_element(register, row, column)

    # Split-K: partial sums in global memory, laid out in fragment order so
    # that every access is a coalesced 16-byte vector (see wsc.partial_store).

    def _partial_quads(
        self,
        op: ir.Operation,
        partials: ir.Value,
        row: ir.Value,
        split: ir.Value | int,
        splits: int,
        fragment: AccumulatorFragment,
    ) -> tuple[ir.Value, list[int]]:
        """The global address of the executing thread's first group of four
        registers of split `split`'s partial sum of the rows from `row`, and
        each group's byte offset from it: group q is element
        (row * splits + split * R) * C + 4 * 128 * q + 4 * thread."""
        i64 = E.i64()
        split_rows = (
            E.const(split * fragment.rows, i64)
            if isinstance(split, int)
            else E.muli(E.index_cast(split, i64), E.const(fragment.rows, i64))
        )
        block_row = E.addi(E.muli(E.index_cast(row, i64), E.const(splits, i64)), split_rows)
        block = E.muli(block_row, E.const(fragment.cols, i64))
        thread = E.muli(E.arith_extsi(self._local_thread(op), i64), E.const(4, i64))
        base = self._param("pointer", tensor_name(self.args.index(partials)))
        first = E.global_address(base, E.addi(block, thread), E.float_type("f32"))
        quad_bytes = 4 * WARPGROUP_SIZE * ELEMENT_BYTES["f32"]
        return first, [quad * quad_bytes for quad in range(fragment.regs_per_thread // 4)]

    def _partial_registers(self, slot: AccSlot) -> list[tuple[int, int]]:
        """(sub-tile, register) of each register of a tile, in flat order."""
        fragment = slot.fragment
        return [(i, r) for i in range(fragment.subtiles) for r in range(fragment.regs_per_subtile)]

    def _lower_partial_store(self, op):
        store = ops.PartialStore(op)
        slot = self.slots[store.tile]
        registers = self._partial_registers(slot)
        first, offsets = self._partial_quads(
            op, store.partials, store.row, store.split, store.splits, slot.fragment
        )
        for quad, offset in enumerate(offsets):
            values = [slot.load_element(i, r) for i, r in registers[4 * quad : 4 * quad + 4]]
            E.store_global_v4(values, E.gep(first, [offset], E.i8()))

    def _counter(self, counters: ir.Value, row: ir.Value) -> ir.Value:
        base = self._param("pointer", tensor_name(self.args.index(counters)))
        return E.global_address(base, E.index_cast(row, E.i64()), E.i32())

    def _lower_partial_arrive(self, op):
        arrive = ops.PartialArrive(op)
        role = self.role_of(op)
        # Every thread's partial stores reach the GPU before the leader counts.
        E.fence_acq_rel_gpu()
        self._lower_sync(op)
        leader = E.cmpi("eq", self._local_thread(op), E.const(0, E.i32()))
        last = E.count_arrival(
            leader,
            self._counter(arrive.counters, arrive.row),
            arrive.splits,
            role.barrier_id if role is not None else 0,
            role.count if role is not None else None,
        )
        # And every split's partial sum is visible to every thread after it.
        E.fence_acq_rel_gpu()
        self._replace(op, last)

    def _lower_partial_reduce(self, op):
        reduce = ops.PartialReduce(op)
        slot = self.slots[reduce.tile]
        registers = self._partial_registers(slot)
        firsts = []
        for s in range(reduce.splits):
            first, offsets = self._partial_quads(
                op, reduce.partials, reduce.row, s, reduce.splits, slot.fragment
            )
            firsts.append(first)
        for quad, offset in enumerate(offsets):
            # Split order, whichever split arrived last: the sum is the same bits.
            total = E.load_global_v4_l2(firsts[0], offset)
            for first in firsts[1:]:
                part = E.load_global_v4_l2(first, offset)
                total = [E.addf(a, b) for a, b in zip(total, part, strict=True)]
            for (i, r), value in zip(registers[4 * quad : 4 * quad + 4], total, strict=True):
                slot.store_element(i, r, value)
        # One thread sets the counter back to zero for the next launch.
        guard = E.if_then(E.cmpi("eq", self._local_thread(op), E.const(0, E.i32())))
        with E.then_body(guard):
            E.store(E.const(0, E.i32()), self._counter(reduce.counters, reduce.row), alignment=4)
