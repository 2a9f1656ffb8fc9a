"""The engine of --convert-wsc-to-nvvm: one specialized wsc kernel (a func.func
with wsc ops) becomes an NVVM kernel (an llvm.func with llvm and nvvm ops).

Two phases, so that a rejected kernel leaves the module untouched:

* `KernelLowering.analyze()` reads the kernel and raises a located PassError
  for anything it cannot lower; it plans the parameter list, the shared-memory
  layout, the tensor maps and the register budgets.
* `KernelLowering.build(scratch)` moves the kernel into the `scratch` module,
  rewrites every wsc op in place into arith/scf + llvm/nvvm ops, then runs
  the upstream conversions (scf -> cf -> llvm, arith/index/func -> llvm) on
  `scratch`, leaving one llvm.func whose `wsc.kernel_info` attribute holds the
  KernelInfo JSON.

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
  tile, coordinates (col, row), completing on barriers[stage].
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
  fence.proxy.async.shared::cta. wsc.store_shared: each thread's column
  pairs stored at their swizzled offsets in the stage tile.
  wsc.coalesced_store: each warp copies whole rows of the stage tile, 32
  consecutive elements per store instruction (element loads and stores),
  with bounds checks only when the tile is partial.
* wsc.wgmma: per m64 sub-tile and k16 step one nvvm.wgmma.mma_async with
  descriptors from descriptors.OperandDescriptors (A K-major; B K-major for
  "nk", N-major for "kn"); f16 accumulators are kept as the f16x2 pairs
  WGMMA works on. fence/commit/wait map one to one; after a wait_group 0 the
  role's WGMMA accumulators pass through an empty asm, so LLVM cannot move a
  read of them above the wait.
* wsc.acc_alloc / wsc.cast / wsc.store: accumulators live in an llvm.alloca in
  the entry block that is only indexed by constants (LLVM's SROA turns it into
  registers); cast is a per-element fptrunc (round to nearest even); store
  writes the fragment (fragments.AccumulatorFragment) with 2-element vector
  stores when the whole tile is in bounds and pairs are aligned, element by
  element when it is in bounds but pairs are not (an odd row stride), and
  element by element with bounds checks for a partial tile.
* wsc.ring_advance: stage + 1 wrapping to 0 with the phase flipped.

Checked on an H200 (driver 580): V2, V3 (run-time and unrolled constant
stages), f16/bf16 inputs, f32/f16/bf16 outputs, "kn" B, 128/64/32-byte
swizzles, two consumer warpgroups with a producer warpgroup, persistent
kernels (tile loops, ping-pong); ragged shapes; f16 accumulators (V6) and
TMA-store epilogues with 128/64/32-byte swizzled staging tiles.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field

from mlir import ir
from mlir.dialects import func as func_d
from mlir.dialects import llvm
from mlir.passmanager import PassManager

from wsc import ops
from wsc.codegen import emit as E
from wsc.codegen.debug import DebugEmitter, DebugOptions, barrier_names
from wsc.codegen.descriptors import OperandDescriptors
from wsc.codegen.fragments import SUBTILE_ROWS, AccumulatorFragment
from wsc.codegen.info import KernelInfo, tensor_name
from wsc.codegen.layout import (
    ALIGN_PADDING,
    BarrierSlot,
    BufferSlot,
    LayoutError,
    SharedLayout,
    TileLayout,
)
from wsc.diagnostics import PassError
from wsc.dialect import acc_type_parameters
from wsc.ir_utils import (
    KERNEL_THREADS_ATTR,
    cluster_size,
    constant_int,
    defining_op,
    kernel_threads,
    memref_shape,
    memref_space,
    walk,
)
from wsc.target.hopper import (
    BUFFER_ALIGN,
    MAX_DYNAMIC_SMEM,
    MAX_THREAD_REGISTERS,
    NAMED_BARRIERS,
    REGISTER_FILE,
    TENSOR_MAP_ALIGN,
    TENSOR_MAP_BYTES,
    WARP_SIZE,
    WARPGROUP_SIZE,
    WGMMA_K,
)

#: The extern dynamic shared-memory symbol every kernel addresses.
SMEM_SYMBOL = "wsc_smem"

#: Dialects whose ops may stay in the kernel: the upstream conversions lower them.
PASSTHROUGH_DIALECTS = ("arith", "scf", "index")
GPU_INDEX_OPS = ("gpu.block_id", "gpu.thread_id", "gpu.block_dim", "gpu.grid_dim")


def entry_register_cap(threads: int) -> int:
    """The per-thread register count ptxas gives a kernel launched with
    `.maxntid threads` and `.minnctapersm 1` that uses setmaxnreg: all it may,
    with the block rounded up to whole warpgroups,
    min(255, floor(65536 / roundup(threads, 128) / 8) * 8)
    (160 threads -> 255, 288 or 384 -> 168, observed with ptxas 13.0)."""
    rounded = -(-threads // WARPGROUP_SIZE) * WARPGROUP_SIZE
    per_thread = REGISTER_FILE // rounded
    return min(MAX_THREAD_REGISTERS, per_thread // 8 * 8)


def _allocated(registers: int) -> int:
    """Registers the hardware sets aside per thread (allocation unit 8)."""
    return -(-registers // 8) * 8


def _signed64(value: int) -> int:
    return value - (1 << 64) if value >= 1 << 63 else value


def _dim_index(op: ir.Operation) -> int:
    """The dimension a memref.dim reads: a constant 0 or 1."""
    dim = constant_int(op.opview.index)
    if dim is None or dim not in (0, 1):
        raise _fail(op, "needs a constant dimension index 0 or 1")
    return dim


def _owner(use) -> ir.Operation:
    owner = use.owner
    return owner.operation if hasattr(owner, "operation") else owner


def _fail(op: ir.Operation, message: str, notes=None) -> PassError:
    return PassError(op.location, f"'{op.name}' op {message}", notes=notes)


@dataclass
class RoleInfo:
    op: ir.Operation
    name: str
    begin: int
    count: int
    max_registers: int | None
    barrier_id: int
    guard: ir.Operation | None = None  # the first scf.if it guards
    increase: bool = False


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
        assert not self.packed, "packed tiles are written whole, by WGMMA"
        E.store(value, E.gep(self.address, [0, i, r], self.whole_type))


def _pair_type(element: str) -> ir.Type:
    return ir.VectorType.get([2], E.float_type(element))


@dataclass
class ParamInfo:
    kind: str  # tensor_map | pointer | i32
    name: str
    type: ir.Type
    attrs: dict = field(default_factory=dict)


class _DimClasses:
    """Union-find over (tensor position, dim) pairs that must be equal."""

    def __init__(self):
        self.parent: dict[tuple[int, int], tuple[int, int]] = {}

    def find(self, node):
        self.parent.setdefault(node, node)
        while self.parent[node] != node:
            self.parent[node] = self.parent[self.parent[node]]
            node = self.parent[node]
        return node

    def union(self, a, b):
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.parent[rb] = ra

    def members(self, node):
        root = self.find(node)
        return sorted(n for n in list(self.parent) if self.find(n) == root)


class KernelLowering:
    def __init__(
        self, kernel: ir.Operation, index_bitwidth: int = 32, debug: DebugOptions = DebugOptions()
    ):
        self.kernel = kernel
        self.index_bitwidth = index_bitwidth
        self.debug = debug

    # ------------------------------------------------------------------ analysis

    def analyze(self) -> None:
        kernel = self.kernel
        self.name = ir.StringAttr(kernel.attributes["sym_name"]).value
        self.threads = kernel_threads(kernel)
        self.cluster = cluster_size(kernel)
        if len(kernel.regions[0].blocks) != 1:
            raise _fail(kernel, "kernel body must be a single block (structured control flow only)")
        self.block = kernel.regions[0].blocks[0]
        self.args = list(self.block.arguments)
        for position, arg in enumerate(self.args):
            shape = memref_shape(arg.type)
            if shape is None or len(shape) != 2 or memref_space(arg.type) != 0:
                raise _fail(
                    kernel,
                    f"argument #{position} must be a rank-2 memref in global "
                    f"memory, got {arg.type}",
                )
            element = str(ir.MemRefType(arg.type).element_type)
            if element not in ("f16", "bf16", "f32"):
                raise _fail(
                    kernel,
                    f"argument #{position} element type must be f16, bf16 or f32, got {element}",
                )
        if (
            kernel.attributes["function_type"]
            and ir.FunctionType(ir.TypeAttr(kernel.attributes["function_type"]).value).results
        ):
            raise _fail(kernel, "a kernel returns no results")

        self.ops = list(walk(kernel))
        self.roles: dict[ir.Operation, RoleInfo] = {}
        self.role_of: dict[ir.Operation, RoleInfo | None] = {}
        self.buffer_ops: list[ir.Operation] = []
        self.barrier_ops: list[ir.Operation] = []
        self.wgmma_accumulators: set[ir.Value] = set()
        for op in self.ops:
            self._check_op(op)
        self._check_argument_uses()
        self._plan_roles()
        self._check_debug_options()
        self._plan_shared_memory()
        self._check_coalesced_stores()
        self._plan_tensor_maps()
        self._plan_params()
        self.info = self._make_kernel_info()

    def _check_op(self, op: ir.Operation) -> None:
        name = op.name
        dialect = name.split(".")[0]
        if name.startswith("wsc."):
            role_op = self._enclosing_role(op)
            if name == "wsc.role":
                self._add_role(op)
            elif name == "wsc.alloc_shared":
                self.buffer_ops.append(op)
                self._check_shared_uses(op)
            elif name == "wsc.mbarrier_alloc":
                if op.parent is None or op.parent.operation != self.kernel:
                    raise _fail(
                        op, "must be at the top level of the kernel, where every thread runs it"
                    )
                self.barrier_ops.append(op)
            elif name in (
                "wsc.tma_load",
                "wsc.tma_store",
                "wsc.coalesced_store",
                "wsc.wgmma",
                "wsc.mbarrier_arrive",
                "wsc.mbarrier_arrive_expect_tx",
                "wsc.mbarrier_wait",
            ):
                self._check_sources(op)
                if name == "wsc.wgmma":
                    self.wgmma_accumulators.add(ops.Wgmma(op).acc)
            elif name in ("wsc.store", "wsc.store_shared", "wsc.cast"):
                tile = (
                    ops.Store(op).tile
                    if name == "wsc.store"
                    else ops.StoreShared(op).tile
                    if name == "wsc.store_shared"
                    else ops.Cast(op).src
                )
                source = defining_op(tile)
                if source is None or source.name not in ("wsc.acc_alloc", "wsc.cast"):
                    raise _fail(op, "tile must be defined by wsc.acc_alloc or wsc.cast")
                if name == "wsc.cast":
                    _, src_element = acc_type_parameters(tile.type)
                    _, dst_element = acc_type_parameters(ops.Cast(op).result.type)
                    if src_element != dst_element and src_element != "f32":
                        raise _fail(
                            op,
                            f"can only convert from f32 (or keep the type), "
                            f"got {src_element} to {dst_element}",
                        )
            self.role_of[op] = self.roles.get(role_op) if role_op is not None else None
            if role_op is not None and role_op not in self.roles:
                raise _fail(op, "is guarded by a role defined after it")
            return
        if name == "scf.if":
            condition = defining_op(op.opview.condition)
            if condition is not None and condition.name == "wsc.role":
                role = self.roles[condition]
                if role.guard is None:
                    role.guard = op
            return
        if name == "memref.dim":
            source = op.opview.source
            if source not in self.args:
                raise _fail(op, "is only supported on the kernel's tensor arguments")
            _dim_index(op)
            return
        if name in GPU_INDEX_OPS or name == "func.return" or dialect in PASSTHROUGH_DIALECTS:
            return
        raise _fail(
            op,
            "cannot be lowered by --convert-wsc-to-nvvm (supported: wsc, arith, "
            "scf, index, memref.dim of kernel arguments, gpu block/thread ids)",
        )

    def _enclosing_role(self, op: ir.Operation) -> ir.Operation | None:
        """The wsc.role whose scf.if then-branch holds `op` (innermost), if any."""
        child = op
        parent = child.parent
        while parent is not None and parent.operation != self.kernel:
            parent = parent.operation
            if parent.name == "scf.if":
                condition = defining_op(parent.opview.condition)
                if condition is not None and condition.name == "wsc.role":
                    if child.block == parent.regions[0].blocks[0]:
                        return condition
                    raise _fail(
                        op,
                        "is in the else branch of a role's scf.if; a role's "
                        "code goes in the then branch",
                        notes=[(condition.location, "role defined here")],
                    )
            child = parent
            parent = child.parent
        return None

    def _add_role(self, op: ir.Operation) -> None:
        if len(self.roles) + 1 >= NAMED_BARRIERS:
            raise _fail(op, f"needs a named barrier but only {NAMED_BARRIERS - 1} exist")
        role = ops.Role(op)
        self.roles[op] = RoleInfo(
            op,
            role.role,
            role.thread_begin,
            role.num_threads,
            role.max_registers,
            len(self.roles) + 1,
        )

    def _check_shared_uses(self, op: ir.Operation) -> None:
        allowed = {
            ("wsc.tma_load", "dst"),
            ("wsc.wgmma", "a"),
            ("wsc.wgmma", "b"),
            ("wsc.tma_store", "src"),
            ("wsc.coalesced_store", "src"),
            ("wsc.store_shared", "dst"),
        }
        for use in ops.AllocShared(op).buffer.uses:
            owner = _owner(use)
            if (owner.name, ops.operand_name(owner, use.operand_number)) not in allowed:
                raise _fail(
                    owner,
                    "uses a wsc.alloc_shared buffer in a way --convert-wsc-to-nvvm cannot lower",
                    notes=[(op.location, "buffer allocated here")],
                )

    def _check_sources(self, op: ir.Operation) -> None:
        expected = {
            "wsc.tma_load": {"dst": "wsc.alloc_shared", "barriers": "wsc.mbarrier_alloc"},
            "wsc.tma_store": {"src": "wsc.alloc_shared"},
            "wsc.coalesced_store": {"src": "wsc.alloc_shared"},
            "wsc.wgmma": {"a": "wsc.alloc_shared", "b": "wsc.alloc_shared", "acc": "wsc.acc_alloc"},
            "wsc.mbarrier_arrive": {"barriers": "wsc.mbarrier_alloc"},
            "wsc.mbarrier_arrive_expect_tx": {"barriers": "wsc.mbarrier_alloc"},
            "wsc.mbarrier_wait": {"barriers": "wsc.mbarrier_alloc"},
        }[op.name]
        for operand, producer in expected.items():
            position = ops.operand_number(op.name, operand)
            source = defining_op(op.operands[position])
            if source is None or source.name != producer:
                raise _fail(
                    op, f"operand #{position} must be defined by {producer} (in this kernel)"
                )
        if op.name == "wsc.tma_load" and ops.TmaLoad(op).src not in self.args:
            raise _fail(op, "source must be a tensor argument of the kernel")
        if op.name == "wsc.tma_store" and ops.TmaStore(op).dst not in self.args:
            raise _fail(op, "destination must be a tensor argument of the kernel")
        if op.name == "wsc.coalesced_store" and ops.CoalescedStore(op).dst not in self.args:
            raise _fail(op, "destination must be a tensor argument of the kernel")

    def _check_argument_uses(self) -> None:
        self.tma_args: set[int] = set()  # read with TMA
        self.tma_store_args: set[int] = set()
        self.store_args: set[int] = set()  # written by threads, from registers or shared
        for position, arg in enumerate(self.args):
            for use in arg.uses:
                owner = _owner(use)
                key = (owner.name, ops.operand_name(owner, use.operand_number))
                if key == ("wsc.tma_load", "src"):
                    self.tma_args.add(position)
                elif key == ("wsc.tma_store", "dst"):
                    self.tma_store_args.add(position)
                elif key in (("wsc.store", "dst"), ("wsc.coalesced_store", "dst")):
                    self.store_args.add(position)
                elif owner.name == "memref.dim":
                    pass
                else:
                    raise _fail(
                        owner,
                        f"uses kernel argument #{position} in a way "
                        f"--convert-wsc-to-nvvm cannot lower",
                    )
            if position in self.tma_args and position in self.store_args | self.tma_store_args:
                raise _fail(
                    self.kernel,
                    f"argument #{position} is both read and written, which is not supported",
                )
            if position in self.tma_store_args and position in self.store_args:
                raise _fail(
                    self.kernel,
                    f"argument #{position} is written both by TMA and by "
                    f"wsc.store or wsc.coalesced_store, which is not "
                    f"supported (one tensor map or pointer per tensor)",
                )

    def _plan_roles(self) -> None:
        """setmaxnreg: inc or dec from the entry count, and whether it can be met.

        setmaxnreg is warpgroup-wide, so a role with a budget must hold every
        thread the block has in each warpgroup it touches. setmaxnreg.inc only
        receives registers that setmaxnreg.dec gave back, and (seen on an H200)
        a dec in a warpgroup the block does not fully contain (e.g. V3's lone
        producer warp) gives back nothing an inc can use: a kernel relying on
        that hangs. So only decs of complete warpgroups fund incs."""
        self.entry_registers = entry_register_cap(self.threads)
        entry = _allocated(self.entry_registers)
        released, needed = 0, 0
        increases = []
        for role in self.roles.values():
            if role.max_registers is None:
                continue
            if role.guard is None:
                raise _fail(role.op, "has max_registers but guards no scf.if to put setmaxnreg in")
            end = role.begin + role.count
            complete = True
            for group in range(role.begin // WARPGROUP_SIZE, -(-end // WARPGROUP_SIZE)):
                lo = group * WARPGROUP_SIZE
                hi = min(lo + WARPGROUP_SIZE, self.threads)
                if lo < role.begin or hi > end:
                    raise _fail(
                        role.op,
                        f"has max_registers but setmaxnreg is warpgroup-wide: "
                        f"the role covers threads [{role.begin}, {end}) and "
                        f"warpgroup {group} has threads [{lo}, {hi}) in the "
                        f"block",
                    )
                complete = complete and lo + WARPGROUP_SIZE <= self.threads
            role.increase = role.max_registers > self.entry_registers
            delta = _allocated(role.max_registers) - entry
            if delta > 0:
                needed += delta * role.count
                increases.append(role)
            elif complete:
                released -= delta * role.count
        if needed > released:
            role = increases[0]
            raise _fail(
                role.op,
                f"max_registers = {role.max_registers} cannot be met: a block "
                f"of {self.threads} threads starts with "
                f"{self.entry_registers} registers per thread, the roles' "
                f"setmaxnreg.inc need {needed} more and setmaxnreg.dec in "
                f"complete warpgroups gives back {released}, so the inc would "
                f"wait forever (lower the budgets, or make the decreasing "
                f"role a whole warpgroup)",
            )

    def _plan_shared_memory(self) -> None:
        self.layout = SharedLayout()
        self.buffers: dict[ir.Operation, BufferSlot] = {}
        self.barriers: dict[ir.Operation, BarrierSlot] = {}
        for position, op in enumerate(self.buffer_ops):
            memref = ir.MemRefType(ops.AllocShared(op).buffer.type)
            stages, rows, cols = memref.shape
            try:
                tile = TileLayout.choose(rows, cols, memref.element_type.width // 8)
            except LayoutError as error:
                raise _fail(op, str(error)) from None
            self.buffers[op] = self.layout.add_buffer(f"buffer{position}", stages, tile)
        for position, op in enumerate(self.barrier_ops):
            alloc = ops.MbarrierAlloc(op)
            self.barriers[op] = self.layout.add_barriers(
                f"barriers{position}", alloc.num_barriers, alloc.arrival_count
            )
        total = self.layout.dynamic_smem_bytes
        if total > MAX_DYNAMIC_SMEM:
            notes = [
                (op.location, f"this ring buffer takes {self.buffers[op].total_bytes} bytes")
                for op in self.buffer_ops
            ]
            raise _fail(
                self.kernel,
                f"needs {total} bytes of shared memory ({self.layout.end} "
                f"for buffers and barriers + {ALIGN_PADDING} alignment "
                f"padding), more than the {MAX_DYNAMIC_SMEM} bytes "
                f"(227 KB) a block may use on sm_90",
                notes=notes,
            )
        for op in self.barrier_ops:
            self._check_barriers_published(op)

    def _check_coalesced_stores(self) -> None:
        """wsc.coalesced_store's lowering gives each warp whole 8-row groups
        of the stage tile (the rows whose swizzle is the same), and a warp's
        32 lanes 32 consecutive elements of one swizzle atom's row."""
        for op in self.ops:
            if op.name != "wsc.coalesced_store":
                continue
            tile = self.buffers[defining_op(ops.CoalescedStore(op).src)].tile
            warps = self._executing_threads(op) // WARP_SIZE
            if tile.rows % (8 * warps):
                raise _fail(
                    op,
                    f"a {tile.rows}-row stage tile cannot be stored by {warps} "
                    f"warps in groups of 8 rows each",
                )
            if tile.atom_cols % WARP_SIZE:
                raise _fail(
                    op,
                    f"the stage tile's {tile.swizzle}-byte swizzle atoms are "
                    f"{tile.atom_cols} elements wide; coalesced stores need rows "
                    f"of 32-element multiples per atom",
                )

    def _executing_threads(self, op: ir.Operation) -> int:
        role = self.role_of.get(op)
        return role.count if role is not None else self.threads

    def _check_barriers_published(self, op: ir.Operation) -> None:
        """A block-wide wsc.sync must follow the initialisation at top level."""
        seen = False
        for other in self.block.operations:
            other = other.operation
            if other == op:
                seen = True
            elif seen and other.name in ("wsc.sync", "wsc.cluster_sync"):
                return
        raise _fail(
            op,
            "must be followed by a block-wide wsc.sync at the kernel's top level "
            "(other threads may not use the barriers before they are initialised)",
        )

    def _plan_tensor_maps(self) -> None:
        self.tensor_maps: dict[int, dict] = {}
        first_copy: dict[int, ir.Operation] = {}
        for op in self.ops:
            box_rows = None
            if op.name == "wsc.tma_load":
                load = ops.TmaLoad(op)
                tensor, buffer = load.src, load.dst
                if load.multicast:
                    # Each CTA copies its slice of the tile's rows.
                    box_rows = self.buffers[defining_op(buffer)].tile.rows // self.cluster
            elif op.name == "wsc.tma_store":
                store = ops.TmaStore(op)
                tensor, buffer = store.dst, store.src
            else:
                continue
            position = self.args.index(tensor)
            tile = self.buffers[defining_op(buffer)].tile
            box = [box_rows or tile.box[0], tile.box[1]]
            spec = {"tensor": tensor_name(position), "box": box, "swizzle": tile.swizzle_name}
            if position in self.tensor_maps and self.tensor_maps[position] != spec:
                raise _fail(
                    op,
                    f"copies tensor '{tensor_name(position)}' with box {spec['box']} "
                    f"and {spec['swizzle']} swizzle, but an earlier TMA copy uses "
                    f"{self.tensor_maps[position]['box']} and "
                    f"{self.tensor_maps[position]['swizzle']}; one tensor map per "
                    f"tensor is supported",
                    notes=[(first_copy[position].location, "earlier copy here")],
                )
            self.tensor_maps[position] = spec
            first_copy.setdefault(position, op)

    def _plan_params(self) -> None:
        classes = _DimClasses()
        labels: dict[tuple[int, int], str] = {}
        loads_into: dict[ir.Operation, set[int]] = {}
        for op in self.ops:
            if op.name == "wsc.tma_load":
                load = ops.TmaLoad(op)
                loads_into.setdefault(defining_op(load.dst), set()).add(self.args.index(load.src))
        matmul = False
        for op in self.ops:
            if op.name != "wsc.wgmma":
                continue
            wgmma = ops.Wgmma(op)
            a_tensors = loads_into.get(defining_op(wgmma.a), set())
            b_tensors = loads_into.get(defining_op(wgmma.b), set())
            c_tensors = self._stored_tensors(wgmma.acc)
            kn = wgmma.b_layout == "kn"
            b_k, b_n = (0, 1) if kn else (1, 0)
            for label, nodes in (
                ("m", [(t, 0) for t in a_tensors] + [(t, 0) for t in c_tensors]),
                ("k", [(t, 1) for t in a_tensors] + [(t, b_k) for t in b_tensors]),
                ("n", [(t, b_n) for t in b_tensors] + [(t, 1) for t in c_tensors]),
            ):
                for node in nodes:
                    classes.union(nodes[0], node)
                    labels.setdefault(node, label)
            matmul = matmul or bool(a_tensors and b_tensors and c_tensors)

        # Dims the kernel reads: memref.dim results and the bounds of stores
        # by threads.
        used: list[tuple[int, int]] = []
        for op in self.ops:
            if op.name == "memref.dim":
                node = (self.args.index(op.opview.source), _dim_index(op))
            elif op.name in ("wsc.store", "wsc.coalesced_store"):
                store = ops.Store(op) if op.name == "wsc.store" else ops.CoalescedStore(op)
                position = self.args.index(store.dst)
                for node in ((position, 0), (position, 1)):
                    if node not in used:
                        used.append(node)
                continue
            else:
                continue
            if node not in used:
                used.append(node)

        # Name each class: its matmul label if it has exactly one, else generic.
        class_name: dict[tuple[int, int], str] = {}
        taken: set[str] = set()
        order: list[str] = []
        if matmul:
            for label in ("m", "n", "k"):
                roots = {classes.find(n) for n, lab in labels.items() if lab == label}
                if len(roots) == 1:
                    root = roots.pop()
                    if root not in class_name:
                        class_name[root] = label
                        taken.add(label)
                        order.append(label)
        for node in used:
            root = classes.find(node)
            if root not in class_name:
                name = f"{tensor_name(node[0])}_dim{node[1]}"
                class_name[root] = name
                order.append(name)
        self.size_param: dict[tuple[int, int], str] = {}
        self.dims: dict[str, list[list]] = {name: [] for name in order}
        for node in list(classes.parent) + used:
            param = class_name.get(classes.find(node))
            if param is not None:
                self.size_param[node] = param
                entry = [tensor_name(node[0]), node[1]]
                if entry not in self.dims[param]:
                    self.dims[param].append(entry)
        for name in self.dims:
            self.dims[name].sort()

        ptr = E.ptr()
        tm_attrs = {
            "llvm.byval": ir.TypeAttr.get(E.array_of(E.i8(), TENSOR_MAP_BYTES)),
            "llvm.align": ir.IntegerAttr.get(E.i64(), TENSOR_MAP_ALIGN),
            "nvvm.grid_constant": ir.UnitAttr.get(),
        }
        self.params: list[ParamInfo] = []
        for position in sorted(self.tma_args | self.tma_store_args):
            self.params.append(ParamInfo("tensor_map", tensor_name(position), ptr, tm_attrs))
        for position in sorted(self.store_args):
            self.params.append(
                ParamInfo(
                    "pointer", tensor_name(position), ptr, {"llvm.noalias": ir.UnitAttr.get()}
                )
            )
        for name in order:
            self.params.append(ParamInfo("i32", name, E.i32()))
        for position in sorted(self.store_args):
            self.params.append(ParamInfo("i32", f"ld{tensor_name(position)}", E.i32()))

    def _stored_tensors(self, acc: ir.Value) -> set[int]:
        """The tensors `acc` ends up in: stored from registers, or staged in
        shared memory and copied out (with TMA or coalesced stores)."""
        found: set[int] = set()
        pending = [acc]
        while pending:
            value = pending.pop()
            for use in value.uses:
                owner = _owner(use)
                key = (owner.name, ops.operand_name(owner, use.operand_number))
                if key == ("wsc.store", "tile"):
                    found.add(self.args.index(ops.Store(owner).dst))
                elif key == ("wsc.store_shared", "tile"):
                    for copy in ops.StoreShared(owner).dst.uses:
                        copy_op = _owner(copy)
                        copy_key = (copy_op.name, ops.operand_name(copy_op, copy.operand_number))
                        if copy_key == ("wsc.tma_store", "src"):
                            found.add(self.args.index(ops.TmaStore(copy_op).dst))
                        elif copy_key == ("wsc.coalesced_store", "src"):
                            found.add(self.args.index(ops.CoalescedStore(copy_op).dst))
                elif owner.name == "wsc.cast":
                    pending.append(ops.Cast(owner).result)
        return found

    # ------------------------------------------------------------------- results

    def kernel_info(self) -> KernelInfo:
        """The launch description (available after analyze())."""
        return self.info

    def _make_kernel_info(self) -> KernelInfo:
        tensors = {}
        for position, arg in enumerate(self.args):
            memref = ir.MemRefType(arg.type)
            role = (
                "input"
                if position in self.tma_args
                else "output"
                if position in self.store_args | self.tma_store_args
                else "unused"
            )
            tensors[tensor_name(position)] = {
                "arg": position,
                "dtype": str(memref.element_type),
                "role": role,
                "shape": memref_shape(arg.type),
            }
        layout = {
            "base_align": BUFFER_ALIGN,
            "buffers": [
                {
                    "offset": s.offset,
                    "stages": s.num_stages,
                    "stage_bytes": s.stage_bytes,
                    "rows": s.tile.rows,
                    "cols": s.tile.cols,
                    "swizzle": s.tile.swizzle_name,
                }
                for s in self.layout.buffers
            ],
            "barriers": [
                {"offset": b.offset, "count": b.count, "arrival_count": b.arrival_count}
                for b in self.layout.barriers
            ],
            "end": self.layout.end,
        }
        return KernelInfo(
            name=self.name,
            block=(self.threads, 1, 1),
            dynamic_smem_bytes=self.layout.dynamic_smem_bytes,
            params=[{"kind": p.kind, "name": p.name} for p in self.params],
            tensor_maps={
                tensor_name(pos): dict(spec) for pos, spec in sorted(self.tensor_maps.items())
            },
            tensors=tensors,
            dims=self.dims,
            entry_registers=self.entry_registers,
            shared_layout=layout,
            accumulator=self._accumulator_element(),
            cluster=self.cluster,
        )

    def _accumulator_element(self) -> str:
        """The WGMMA accumulators' element type: f16 if any is f16."""
        elements = {acc_type_parameters(value.type)[1] for value in self.wgmma_accumulators}
        return "f16" if "f16" in elements else "f32" if elements else ""

    # ---------------------------------------------------------------------- build

    def build(self, scratch: ir.Module) -> ir.Operation:
        """Lower into `scratch` (which must hold the smem global); returns the llvm.func."""
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
        return self._convert(scratch, new_func)

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

    # -- helpers on lowered values

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
        role = self.role_of.get(op)
        return role.begin if role is not None else 0

    def _warp_and_lane(self, op: ir.Operation) -> tuple[ir.Value, ir.Value]:
        """(warp in the warpgroup, lane) of the executing thread: the
        coordinates an accumulator fragment is laid out by."""
        local = E.subi(self.tid, E.const(self._role_begin(op), E.i32()))
        return (E.shrui(local, E.const(5, E.i32())), E.andi(local, E.const(31, E.i32())))

    # -- the rewrite

    def _lower_all(self) -> None:
        self.slots: dict[ir.Value, AccSlot] = {}
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
        position = self.args.index(op.opview.source)
        size = self._size(position, _dim_index(op))
        self._replace(op, E.index_castui(size, E.index()))

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
        role = self.role_of.get(op)
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

    def _check_debug_options(self) -> None:
        """delay-role must name a role, or the option would silently do nothing."""
        self.barrier_names = barrier_names(self.barrier_ops)
        role = self.debug.delay_role
        if role and not any(self.debug.delays(r.name) for r in self.roles.values()):
            names = ", ".join(sorted({r.name for r in self.roles.values()})) or "none"
            raise _fail(
                self.kernel, f"has no role '{role}' to delay (delay-role={role}; roles: {names})"
            )

    def _maybe_delay(self, op) -> None:
        role = self.role_of.get(op)
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
        role = self.role_of.get(op)
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
        tensor_map = self._param("tensor_map", tensor_name(self.args.index(src)))
        barrier, _ = self._barrier(bars, stage)
        row32, col32 = self._i32(row), self._i32(col)
        slice_bytes = mask = None
        if load.multicast:
            first_row = E.muli(E.cluster_rank(), E.const(tile.rows // self.cluster, E.i32()))
            row32 = E.addi(row32, first_row)
            slice_bytes = E.muli(first_row, E.const(tile.swizzle, E.i32()))
            mask = E.const((1 << self.cluster) - 1, ir.IntegerType.get_signless(16))
        for atom in range(tile.num_atoms):
            offset = self._smem_offset(
                slot.offset + tile.atom_offset(atom), stage, slot.stage_bytes
            )
            if slice_bytes is not None:
                offset = E.addi(offset, slice_bytes)
            target = E.addrspacecast(self._smem_ptr(offset), 7)
            column = col32 if atom == 0 else E.addi(col32, E.const(atom * tile.atom_cols, E.i32()))
            E.tma_load_2d(target, tensor_map, [column, row32], barrier, multicast_mask=mask)

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

    def _acc_slot(self, value: ir.Value, element: str, wgmma_form: bool) -> AccSlot:
        (rows, cols), _ = acc_type_parameters(value.type)
        fragment = AccumulatorFragment(rows, cols)
        scalar = E.float_type(element)
        packed = False
        if wgmma_form and element == "f16":
            # Kept packed between WGMMAs: unpacking would put moves that read
            # the accumulators between the WGMMAs, and ptxas then serializes
            # them (C7514).
            packed = True
            sub_type = E.struct_of(_pair_type(element), fragment.regs_per_subtile // 2)
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
        tile = ops.AccAlloc(op).tile
        _, element = acc_type_parameters(tile.type)
        slot = self._acc_slot(tile, element, wgmma_form=element in ("f32", "f16"))
        for i in range(slot.fragment.subtiles):
            E.store(E.zero(slot.sub_type), slot.subtile_address(i))

    def _descriptor_base(
        self, slot: BufferSlot, stage: ir.Value, operand: OperandDescriptors
    ) -> ir.Value:
        """i64: every descriptor field of the stage tile, the start address included."""
        offset = self._smem_offset(slot.offset, stage, slot.stage_bytes)
        address = E.addi(self.smem_aligned32, offset)
        field = E.shrui(E.andi(address, E.const(0x3FFFF, E.i32())), E.const(4, E.i32()))
        return E.ori(E.extui(field, E.i64()), E.const(_signed64(operand.static_bits), E.i64()))

    def _lower_wgmma(self, op):
        wgmma = ops.Wgmma(op)
        a, b, stage, acc = wgmma.a, wgmma.b, wgmma.stage, wgmma.acc
        a_slot = self.buffers[defining_op(a)]
        b_slot = self.buffers[defining_op(b)]
        k_major_b = wgmma.b_layout == "nk"
        a_desc = OperandDescriptors(a_slot.tile, k_major=True)
        b_desc = OperandDescriptors(b_slot.tile, k_major=k_major_b)
        acc_slot = self.slots[acc]
        fragment = acc_slot.fragment
        input_type = str(ir.MemRefType(a.type).element_type)
        a_row = wgmma.a_row
        a_base = self._descriptor_base(a_slot, stage, a_desc)
        b_base = self._descriptor_base(b_slot, stage, b_desc)
        values = [
            E.load(acc_slot.sub_type, acc_slot.subtile_address(i)) for i in range(fragment.subtiles)
        ]
        k_steps = a_slot.tile.cols // WGMMA_K
        for k in range(k_steps):
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
                    k_major_b,
                    acc_slot.element,
                )
        for i, value in enumerate(values):
            E.store(value, acc_slot.subtile_address(i))

    def _lower_tma_store(self, op):
        store = ops.TmaStore(op)
        src, stage, dst, row, col = store.src, store.stage, store.dst, store.row, store.col
        slot = self.buffers[defining_op(src)]
        tile = slot.tile
        tensor_map = self._param("tensor_map", tensor_name(self.args.index(dst)))
        row32, col32 = self._i32(row), self._i32(col)
        for atom in range(tile.num_atoms):
            offset = self._smem_offset(
                slot.offset + tile.atom_offset(atom), stage, slot.stage_bytes
            )
            column = col32 if atom == 0 else E.addi(col32, E.const(atom * tile.atom_cols, E.i32()))
            E.tma_store_2d(self._smem_ptr(offset), tensor_map, [column, row32])
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
            E.muli(first_row, E.const(tile.swizzle, i32)),
        )
        top_row = E.addi(row0_32, first_row)
        lane_col = E.addi(col0_32, lane)
        thread_base = E.gep(
            self._param("pointer", name),
            [E.addi(E.muli(E.arith_extsi(top_row, i64), ld64), E.arith_extsi(lane_col, i64))],
            scalar,
        )
        in_rows = E.cmpi("sle", E.addi(row0_32, E.const(tile.rows, i32)), rows)
        in_cols = E.cmpi("sle", E.addi(col0_32, E.const(tile.cols, i32)), cols)
        whole_tile = E.scf_if_else(E.andi(in_rows, in_cols))

        def store_rows(checked: bool):
            for r in range(warp_rows):
                # warp_rows is a multiple of 8: row r's swizzle key is row (r mod 8)'s.
                key = tile.swizzled_offset(r, 0) ^ tile.byte_offset(r, 0)
                row_address = E.gep(thread_base, [E.muli(E.const(r, i64), ld64)], scalar)
                row_ok = E.cmpi("slt", E.addi(top_row, E.const(r, i32)), rows) if checked else None
                for first_col in range(0, tile.cols, WARP_SIZE):
                    atom, inner = divmod(first_col, tile.atom_cols)
                    in_row = E.addi(E.const(inner * tile.element_bytes, i32), lane_bytes)
                    offset = E.addi(
                        E.addi(stage_base, E.const(tile.atom_offset(atom) + r * tile.swizzle, i32)),
                        E.xori(in_row, E.const(key, i32)),
                    )
                    address = E.gep(row_address, [first_col], scalar)
                    if not checked:
                        E.store(E.load(scalar, self._smem_ptr(offset)), address)
                        continue
                    col_ok = E.cmpi("slt", E.addi(lane_col, E.const(first_col, i32)), cols)
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

    def _lower_store_shared(self, op):
        """Each thread writes its column pairs (2-element stores) where the
        buffer's swizzled layout puts them. A warp's store covers 8 rows of
        one 16-byte chunk column, which the swizzle spreads over 8 different
        chunks: no bank conflicts with the 128-byte swizzle."""
        store = ops.StoreShared(op)
        tile_value, dst, stage = store.tile, store.dst, store.stage
        slot = self.slots[tile_value]
        fragment = slot.fragment
        buffer = self.buffers[defining_op(dst)]
        tile = buffer.tile
        i32 = E.i32()
        scalar = E.float_type(slot.element)
        vector_type = ir.VectorType.get([2], scalar)
        warp, lane = self._warp_and_lane(op)
        quad_row = E.shrui(lane, E.const(2, i32))
        # The swizzle flips an offset's chunk bits by its bits 7 and up
        # (TileLayout.swizzled_offset). The rows this thread holds are
        # 16*warp + lane/4 + 8*k, whose offsets differ in those bits by
        # multiples of the swizzle period: all share lane/4's key.
        key = E.andi(
            E.shrui(E.muli(quad_row, E.const(tile.swizzle, i32)), E.const(3, i32)),
            E.const(tile.swizzle_bits, i32),
        )
        row_bytes = E.muli(
            E.addi(E.muli(warp, E.const(16, i32)), quad_row), E.const(tile.swizzle, i32)
        )
        pair_bytes = E.muli(E.andi(lane, E.const(3, i32)), E.const(2 * tile.element_bytes, i32))
        base = E.addi(self._smem_offset(buffer.offset, stage, buffer.stage_bytes), row_bytes)
        for i in range(fragment.subtiles):
            for h in range(2):
                row = SUBTILE_ROWS * i + 8 * h
                for j in range(fragment.cols // 8):
                    atom, inner = divmod(8 * j, tile.atom_cols)
                    static = tile.atom_offset(atom) + row * tile.swizzle
                    in_row = E.addi(E.const(inner * tile.element_bytes, i32), pair_bytes)
                    offset = E.addi(E.addi(base, E.const(static, i32)), E.xori(in_row, key))
                    pair = E.undef(vector_type)
                    for c in range(2):
                        value = slot.load_element(i, 4 * j + 2 * h + c)
                        pair = E.insertelement(pair, value, c)
                    E.store(pair, self._smem_ptr(offset), alignment=2 * tile.element_bytes)

    def _lower_wgmma_fence(self, op):
        E.wgmma_fence()

    def _lower_wgmma_commit_group(self, op):
        E.wgmma_commit_group()

    def _lower_wgmma_wait_group(self, op):
        pending = ops.WgmmaWaitGroup(op).pending
        E.wgmma_wait_group(pending)
        if pending:
            return
        # To LLVM the accumulators are plain values that the wait does not
        # touch, so it may move a read of them (the epilogue's cast) above
        # the wait while a WGMMA still writes them; ptxas then serializes
        # every WGMMA (C7514). Tying each register to an empty asm after
        # the wait keeps every later read below it.
        role = self.role_of.get(op)
        for value, slot in self.slots.items():
            if value in self.wgmma_accumulators and self.role_of.get(defining_op(value)) is role:
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
        source = self.slots[cast.src]
        _, element = acc_type_parameters(cast.result.type)
        target = self._acc_slot(cast.result, element, wgmma_form=False)
        dst_scalar = E.float_type(element)
        for i in range(source.fragment.subtiles):
            for r in range(source.fragment.regs_per_subtile):
                value = source.load_element(i, r)
                if element != source.element:  # from f32 (checked by analyze)
                    value = E.truncf(value, dst_scalar)
                target.store_element(i, r, value)

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
        row_base = E.addi(
            E.addi(row0_32, E.muli(warp, E.const(16, i32))), E.shrui(lane, E.const(2, i32))
        )
        col_base = E.addi(col0_32, E.muli(E.andi(lane, E.const(3, i32)), E.const(2, i32)))
        ld64 = E.arith_extsi(ld, E.i64())

        # Three paths: the tile is in bounds with column pairs aligned (2-wide
        # vector stores); in bounds, pairs not aligned (an odd row stride,
        # as for N = 8193: element stores, no bounds checks); a partial tile
        # (element stores, each checked).
        pair_align = 2 * element_bytes
        in_rows = E.cmpi("sle", E.addi(row0_32, E.const(fragment.rows, i32)), rows)
        in_cols = E.cmpi("sle", E.addi(col0_32, E.const(fragment.cols, i32)), cols)
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
                row_ok = E.if_then(E.cmpi("slt", row, rows))
                with E.then_body(row_ok):
                    row_off = row_offset(row)
                    for j in range(fragment.cols // 8):
                        for c in range(2):
                            column = E.addi(col_base, E.const(8 * j + c, i32))
                            col_ok = E.if_then(E.cmpi("slt", column, cols))
                            with E.then_body(col_ok):
                                store_element(i, h, j, c, row_off)

    # ------------------------------------------------------------- conversion

    def _convert(self, scratch: ir.Module, new_func) -> ir.Operation:
        width = self.index_bitwidth
        pipeline = (
            "builtin.module(arith-expand,convert-scf-to-cf,"
            f"convert-arith-to-llvm{{index-bitwidth={width}}},"
            f"convert-index-to-llvm{{index-bitwidth={width}}},"
            f"convert-func-to-llvm{{index-bitwidth={width}}},"
            f"convert-cf-to-llvm{{index-bitwidth={width}}},"
            "reconcile-unrealized-casts,canonicalize,cse)"
        )
        # Upstream passes may crash on IR that does not verify, and a
        # PassManager does not verify its input: check what the rewrite built.
        try:
            scratch.operation.verify()
        except ir.MLIRError as error:
            raise PassError(
                new_func.location,
                f"kernel '{self.name}' was rewritten into IR "
                f"that does not verify (internal error): "
                f"{error}",
            ) from None
        PassManager.parse(pipeline).run(scratch.operation)
        lowered = None
        for op in scratch.body.operations:
            op = op.operation
            if (
                op.name == "llvm.func"
                and ir.StringAttr(op.attributes["sym_name"]).value == self.name
            ):
                lowered = op
        assert lowered is not None, "func-to-llvm produced no llvm.func"
        for op in walk(lowered):
            if op.name.split(".")[0] not in ("llvm", "nvvm"):
                raise _fail(op, "was left after lowering to LLVM (internal error)")
        lowered.attributes["nvvm.kernel"] = ir.UnitAttr.get()
        lowered.attributes["nvvm.maxntid"] = ir.DenseI32ArrayAttr.get([self.threads, 1, 1])
        lowered.attributes["nvvm.minctasm"] = ir.IntegerAttr.get(E.i32(), 1)
        if self.cluster > 1:
            lowered.attributes["nvvm.cluster_dim"] = ir.DenseI32ArrayAttr.get([self.cluster, 1, 1])
        lowered.attributes["arg_attrs"] = ir.ArrayAttr.get(
            [ir.DictAttr.get(p.attrs) for p in self.params]
        )
        lowered.attributes["wsc.kernel_info"] = ir.StringAttr.get(self.kernel_info().dumps())
        return lowered


def smem_global() -> None:
    """The extern dynamic shared-memory array, at the current insertion point.

    External linkage keeps it `.extern .shared .align 1024 .b8 wsc_smem[]` in PTX;
    an internal zero-sized global would be demoted to a function-local 1-byte
    variable that overlaps nothing the layout planned."""
    llvm.GlobalOp(
        E.array_of(E.i8(), 0),
        SMEM_SYMBOL,
        ir.Attribute.parse("#llvm.linkage<external>"),
        alignment=BUFFER_ALIGN,
        addr_space=3,
    )


#: The gpu.module every lowered kernel goes into.
GPU_MODULE_NAME = "wsc_kernels"


def nvvm_target(chip: str, ptx_version: int, opt_level: int = 3) -> ir.Attribute:
    return ir.Attribute.parse(
        f'#nvvm.target<chip = "{chip}", features = "+ptx{ptx_version}", O = {opt_level}>'
    )


def lower_module(
    module: ir.Operation,
    chip: str = "sm_90a",
    ptx_version: int = 90,
    index_bitwidth: int = 32,
    debug: DebugOptions = DebugOptions(),
) -> list[KernelInfo]:
    """Lower every wsc kernel of `module` (in place) into
    `gpu.module @wsc_kernels [#nvvm.target<...>]`; returns their KernelInfo.
    `debug` adds instrumentation (wsc.codegen.debug)."""
    from mlir.dialects import gpu

    from wsc.ir_utils import kernels

    module = module.operation
    found = kernels(module)
    if not found:
        raise PassError(
            module.location,
            f"found no kernel to lower (a func.func with the '{KERNEL_THREADS_ATTR}' attribute)",
        )
    for op in walk(module):
        if (
            op.name == "gpu.module"
            and ir.StringAttr(op.attributes["sym_name"]).value == GPU_MODULE_NAME
        ):
            raise PassError(
                op.location, f"the module already holds a gpu.module @{GPU_MODULE_NAME}"
            )
    lowerings = [KernelLowering(kernel, index_bitwidth, debug) for kernel in found]
    for lowering in lowerings:
        lowering.analyze()
    infos = [lowering.kernel_info() for lowering in lowerings]
    with module.location:
        scratch = ir.Module.create()
        with ir.InsertionPoint(scratch.body):
            smem_global()
        for lowering in lowerings:
            lowering.build(scratch)
        body = module.regions[0].blocks[0]
        with ir.InsertionPoint(body):
            gpu_module = gpu.GPUModuleOp(
                GPU_MODULE_NAME, targets=ir.ArrayAttr.get([nvvm_target(chip, ptx_version)])
            )
        target_block = gpu_module.regions[0].blocks.append()
        for op in list(scratch.body.operations):
            op = op.operation
            op.detach_from_parent()
            ir.InsertionPoint(target_block).insert(op)
    module.attributes["gpu.container_module"] = ir.UnitAttr.get()
    try:
        gpu_module.operation.verify()
    except ir.MLIRError as error:
        raise PassError(
            gpu_module.location, f"the lowered kernel does not verify (internal error): {error}"
        ) from None
    return infos
