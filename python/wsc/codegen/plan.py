"""The planning half of --convert-wsc-to-nvvm: `KernelPlan.analyze()` reads
one specialized wsc kernel and raises a located PassError for anything the
lowering cannot take, before anything is changed (a rejected kernel leaves
the module untouched); it plans the parameter list, the shared-memory
layout, the tensor maps and the register budgets, and describes the launch
(`kernel_info()`). `wsc.codegen.lower_ops` emits the kernel from the plan.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from mlir import ir

from wsc import ops
from wsc.codegen import emit as E
from wsc.codegen.debug import DebugOptions, barrier_names
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
    BLOCKS_PER_SM_ATTR,
    blocks_per_sm,
    cluster_size,
    constant_int,
    defining_op,
    kernel_threads,
    memref_shape,
    memref_space,
    use_owner,
    walk,
)
from wsc.runtime.artifact import dim_size_name
from wsc.target.hopper import (
    BUFFER_ALIGN,
    ELEMENT_BYTES,
    MAX_DYNAMIC_SMEM,
    MAX_THREAD_REGISTERS,
    NAMED_BARRIERS,
    SM_SHARED_MEMORY,
    SMEM_RESERVED_PER_BLOCK,
    TENSOR_MAP_ALIGN,
    TENSOR_MAP_BYTES,
    WARP_ROWS,
    WARP_SIZE,
    WARPGROUP_SIZE,
    WGMMA_EXTRA_REGISTERS,
    WGMMA_M,
    entry_register_cap,
    tile_registers,
)

#: Dialects whose ops may stay in the kernel: the upstream conversions lower them.
PASSTHROUGH_DIALECTS = ("arith", "scf", "index")
GPU_INDEX_OPS = ("gpu.block_id", "gpu.thread_id", "gpu.block_dim", "gpu.grid_dim")
#: The ops that read a register tile, by the view that names it `tile`.
_TILE_USERS: dict[str, type[ops.Store | ops.StoreShared | ops.PartialStore | ops.PartialReduce]] = {
    "wsc.store": ops.Store,
    "wsc.store_shared": ops.StoreShared,
    "wsc.partial_store": ops.PartialStore,
    "wsc.partial_reduce": ops.PartialReduce,
}
#: The register-tile maps that combine elements of several rows or columns.
_REDUCTIONS = ("wsc.tile_row_reduce", "wsc.tile_col_reduce")
#: The ops that define a register tile.
_TILE_SOURCES = ("wsc.acc_alloc", *ops.TILE_MAKERS)


def _read_tiles(op: ir.Operation) -> list[ir.Value]:
    """The register tiles a tile-reading op takes."""
    if op.name in _TILE_USERS:
        return [_TILE_USERS[op.name](op).tile]
    if op.name == "wsc.tile_binary":
        binary = ops.TileBinary(op)
        return [binary.x, binary.y]
    if op.name == "wsc.tile_row_reduce":
        return [ops.TileRowReduce(op).x]
    if op.name == "wsc.tile_col_reduce":
        return [ops.TileColReduce(op).x]
    if op.name == "wsc.tile_select":
        select = ops.TileSelect(op)
        return [select.lhs, select.rhs, select.on_true, select.on_false]
    return [ops.Cast(op).src if op.name == "wsc.cast" else ops.TileUnary(op).x]


#: (op, operand) pairs that may take a matrix of a batch (wsc.batch_matrix).
_BATCH_MATRIX_USES = (("wsc.tma_load", "src"), ("wsc.tma_store", "dst"), ("memref.dim", None))

#: (op, operand) pairs that make a kernel argument a split-K workspace.
_WORKSPACE_OPERANDS = (
    ("wsc.partial_store", "partials"),
    ("wsc.partial_reduce", "partials"),
    ("wsc.partial_arrive", "counters"),
    ("wsc.partial_reduce", "counters"),
)


def _allocated(registers: int) -> int:
    """Registers the hardware sets aside per thread (allocation unit 8)."""
    return -(-registers // 8) * 8


def dim_index(op: ir.Operation) -> int:
    """The dimension a memref.dim reads: a constant one of its source's."""
    dim = constant_int(op.opview.index)
    rank = len(memref_shape(op.opview.source.type) or ())
    if dim is None or not 0 <= dim < rank:
        raise fail(op, f"needs a constant dimension index in [0, {rank})")
    return dim


def fail(op: ir.Operation, message: str, notes=None) -> PassError:
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
class ParamInfo:
    kind: str  # tensor_map | pointer | i32 | f32
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


class KernelPlan:
    """What the lowering of one kernel needs to know, read from it by analyze()."""

    def __init__(
        self, kernel: ir.Operation, index_bitwidth: int = 32, debug: DebugOptions = DebugOptions()
    ):
        self.kernel = kernel
        self.index_bitwidth = index_bitwidth
        self.debug = debug

    def analyze(self) -> None:
        kernel = self.kernel
        self.name = ir.StringAttr(kernel.attributes["sym_name"]).value
        self.threads = kernel_threads(kernel)
        self.cluster = cluster_size(kernel)
        self.blocks_per_sm = blocks_per_sm(kernel)
        if len(kernel.regions[0].blocks) != 1:
            raise fail(kernel, "kernel body must be a single block (structured control flow only)")
        self.block = kernel.regions[0].blocks[0]
        self.args = list(self.block.arguments)
        for position, arg in enumerate(self.args):
            if isinstance(arg.type, ir.F32Type):
                continue  # a scalar parameter, which wsc.tile_splat takes
            # Rank 1: a vector or a split-K workspace; rank 3: a batch of
            # matrices (the ops that use them check the rest).
            shape = memref_shape(arg.type)
            if shape is None or len(shape) not in (1, 2, 3) or memref_space(arg.type) != 0:
                raise fail(
                    kernel,
                    f"argument #{position} must be a rank-2 memref in global memory (a "
                    f"vector or a workspace rank 1, a batch of matrices rank 3) or an f32 "
                    f"scalar, got {arg.type}",
                )
            element = str(ir.MemRefType(arg.type).element_type)
            if element not in (*ELEMENT_BYTES, "i32"):
                raise fail(
                    kernel,
                    f"argument #{position} element type must be one of "
                    f"{', '.join(ELEMENT_BYTES)} or i32, got {element}",
                )
        if (
            kernel.attributes["function_type"]
            and ir.FunctionType(ir.TypeAttr(kernel.attributes["function_type"]).value).results
        ):
            raise fail(kernel, "a kernel returns no results")

        self.ops = list(walk(kernel))
        self.roles: dict[ir.Operation, RoleInfo] = {}
        # By the Python object of each op of self.ops: an ir.Operation's hash
        # follows its operands, which lowering replaces (see role_of).
        self._op_roles: dict[int, RoleInfo | None] = {}
        #: The role each WGMMA accumulator is allocated in.
        self.accumulator_roles: dict[ir.Value, RoleInfo | None] = {}
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
                    raise fail(
                        op, "must be at the top level of the kernel, where every thread runs it"
                    )
                self.barrier_ops.append(op)
            elif name in (
                "wsc.tma_load",
                "wsc.tma_store",
                "wsc.coalesced_store",
                "wsc.wgmma",
                "wsc.wgmma_register_a",
                "wsc.mbarrier_arrive",
                "wsc.mbarrier_arrive_expect_tx",
                "wsc.mbarrier_wait",
            ):
                self._check_sources(op)
                if name in ops.WGMMA_OPS:
                    acc = op.operands[ops.operand_number(name, "acc")]
                    self._check_wgmma_registers(op, acc)
                    self.wgmma_accumulators.add(acc)
                    owner = self._enclosing_role(defining_op(acc))
                    self.accumulator_roles[acc] = (
                        self.roles.get(owner) if owner is not None else None
                    )
            elif name == "wsc.batch_matrix":
                self._check_batch_matrix(op)
            elif name == "wsc.acc_alloc":
                self._check_register_budget(op, ops.AccAlloc(op).tile)
            elif name in (
                "wsc.tile_fill",
                "wsc.tile_splat",
                "wsc.tile_iota",
                "wsc.load_shared",
                *ops.TILE_LOADS,
            ):
                self._check_register_budget(op, op.results[0])
                if name == "wsc.tile_splat" and ops.TileSplat(op).value not in self.args:
                    raise fail(op, "its value must be a scalar argument of the kernel")
            elif name in (*_TILE_USERS, *ops.TILE_MAPS):
                for tile in _read_tiles(op):
                    source = defining_op(tile)
                    if source is None or source.name not in _TILE_SOURCES:
                        raise fail(
                            op,
                            f"tile must be defined by {', '.join(_TILE_SOURCES)} (in this kernel)",
                        )
                if name in ops.TILE_MAPS:
                    self._check_register_budget(op, op.results[0])
                if name == "wsc.cast":
                    tile = ops.Cast(op).src
                    _, src_element = acc_type_parameters(tile.type)
                    _, dst_element = acc_type_parameters(ops.Cast(op).result.type)
                    if src_element != dst_element and src_element != "f32":
                        raise fail(
                            op,
                            f"can only convert from f32 (or keep the type), "
                            f"got {src_element} to {dst_element}",
                        )
            self._op_roles[id(op)] = self.roles.get(role_op) if role_op is not None else None
            if role_op is not None and role_op not in self.roles:
                raise fail(op, "is guarded by a role defined after it")
            if name.startswith("wsc.partial_"):
                self._check_partial_op(op)
            return
        if name == "scf.if":
            condition = defining_op(op.opview.condition)
            if condition is not None and condition.name == "wsc.role":
                role = self.roles[condition]
                if role.guard is None:
                    role.guard = op
            return
        if name == "memref.dim":
            if self.tensor_position(op.opview.source) is None:
                raise fail(
                    op, "is only supported on the kernel's tensor arguments and their matrices"
                )
            dim_index(op)
            return
        if name in GPU_INDEX_OPS or name == "func.return" or dialect in PASSTHROUGH_DIALECTS:
            return
        raise fail(
            op,
            "cannot be lowered by --convert-wsc-to-nvvm (supported: wsc, arith, "
            "scf, index, memref.dim of kernel arguments, gpu block/thread ids)",
        )

    def _check_batch_matrix(self, op: ir.Operation) -> None:
        """A matrix of a batch argument, read and written by TMA copies: the
        copies address it with the batch index as a third coordinate."""
        view = ops.BatchMatrix(op)
        if view.batch not in self.args:
            raise fail(op, "its batch must be a tensor argument of the kernel")
        for use in view.matrix.uses:
            owner = use_owner(use)
            key = (owner.name, ops.operand_name(owner, use.operand_number))
            if key not in _BATCH_MATRIX_USES:
                raise fail(
                    owner,
                    "takes a matrix of a batch (wsc.batch_matrix), which only TMA "
                    "copies (wsc.tma_load, wsc.tma_store) and memref.dim take",
                    notes=[(op.location, "the matrix of a batch")],
                )

    def tensor_position(self, value: ir.Value) -> int | None:
        """The kernel argument a global tensor value is, or is a matrix of
        (wsc.batch_matrix); None for any other value."""
        if value in self.args:
            return self.args.index(value)
        source = defining_op(value)
        if source is not None and source.name == "wsc.batch_matrix":
            batch = ops.BatchMatrix(source).batch
            if batch in self.args:
                return self.args.index(batch)
        return None

    def checked_position(self, value: ir.Value) -> int:
        """tensor_position of a tensor that _check_op accepted."""
        position = self.tensor_position(value)
        assert position is not None
        return position

    def matrix_dim(self, position: int, dim: int) -> tuple[int, int]:
        """The (argument, dim) node of dim `dim` (0: rows, 1: columns) of the
        matrices of argument `position`: a batch's dims are [batch, rows, cols]."""
        return position, dim + (len(memref_shape(self.args[position].type) or ()) == 3)

    def dim_node(self, op: ir.Operation) -> tuple[int, int]:
        """The (argument, dim) node a memref.dim reads."""
        source = op.opview.source
        position = self.checked_position(source)
        if source in self.args:
            return position, dim_index(op)
        return self.matrix_dim(position, dim_index(op))

    @staticmethod
    def _check_register_budget(op: ir.Operation, tile: ir.Value) -> None:
        """A register tile is spread over one warpgroup's threads; one that
        needs more registers than a thread has would compile into spills."""
        (rows, cols), element = acc_type_parameters(tile.type)
        registers = tile_registers(rows, cols, element)
        if registers > MAX_THREAD_REGISTERS:
            raise fail(
                op,
                f"a {rows}x{cols} {element} register tile takes {registers} registers "
                f"in each thread of its warpgroup, more than the {MAX_THREAD_REGISTERS} a "
                f"thread has: split its rows over more consumer warpgroups or narrow it",
            )

    def _check_wgmma_registers(self, op: ir.Operation, acc: ir.Value) -> None:
        """ptxas allocates every thread the block's entry budget (not the
        setmaxnreg one): a WGMMA whose accumulator and operands exceed it
        does not assemble."""
        (rows, cols), element = acc_type_parameters(acc.type)
        registers = tile_registers(rows, cols, element)
        cap = entry_register_cap(self.threads, self.blocks_per_sm)
        if registers + WGMMA_EXTRA_REGISTERS > cap:
            raise fail(
                op,
                f"its {rows}x{cols} {element} accumulator takes {registers} registers per "
                f"thread and the WGMMA about {WGMMA_EXTRA_REGISTERS} more, but ptxas gives "
                f"each thread of a {self.threads}-thread block {cap}: use fewer threads per "
                f"block (fewer consumer warpgroups, a producer warp) or narrower tiles",
            )

    def _check_partial_op(self, op: ir.Operation) -> None:
        """A split-K hand-off runs in one warpgroup (the register tile's
        threads, which also count as one arrival) on workspace arguments."""
        role = self.role_of(op)
        threads = role.count if role is not None else self.threads
        if threads != WARPGROUP_SIZE:
            raise fail(
                op,
                f"must run in one warpgroup ({WARPGROUP_SIZE} threads), not in {threads} threads",
            )
        for position, value in enumerate(op.operands):
            if ops.operand_name(op, position) in ("partials", "counters") and (
                value not in self.args
            ):
                raise fail(op, "its workspace must be a tensor argument of the kernel")

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
                    raise fail(
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
            raise fail(op, f"needs a named barrier but only {NAMED_BARRIERS - 1} exist")
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
            ("wsc.wgmma_register_a", "b"),
            ("wsc.tma_store", "src"),
            ("wsc.coalesced_store", "src"),
            ("wsc.store_shared", "dst"),
            ("wsc.load_shared", "src"),
        }
        for use in ops.AllocShared(op).buffer.uses:
            owner = use_owner(use)
            if (owner.name, ops.operand_name(owner, use.operand_number)) not in allowed:
                raise fail(
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
            "wsc.wgmma_register_a": {"b": "wsc.alloc_shared", "acc": "wsc.acc_alloc"},
            "wsc.mbarrier_arrive": {"barriers": "wsc.mbarrier_alloc"},
            "wsc.mbarrier_arrive_expect_tx": {"barriers": "wsc.mbarrier_alloc"},
            "wsc.mbarrier_wait": {"barriers": "wsc.mbarrier_alloc"},
        }[op.name]
        for operand, producer in expected.items():
            position = ops.operand_number(op.name, operand)
            source = defining_op(op.operands[position])
            if source is None or source.name != producer:
                raise fail(
                    op, f"operand #{position} must be defined by {producer} (in this kernel)"
                )
        if op.name == "wsc.tma_load" and self.tensor_position(ops.TmaLoad(op).src) is None:
            raise fail(op, "source must be a tensor argument of the kernel or a matrix of one")
        if op.name == "wsc.tma_store" and self.tensor_position(ops.TmaStore(op).dst) is None:
            raise fail(op, "destination must be a tensor argument of the kernel or a matrix of one")
        if op.name == "wsc.coalesced_store" and ops.CoalescedStore(op).dst not in self.args:
            raise fail(op, "destination must be a tensor argument of the kernel")

    def _check_argument_uses(self) -> None:
        self.tma_args: set[int] = set()  # read with TMA
        self.tma_store_args: set[int] = set()
        self.store_args: set[int] = set()  # written by threads, from registers or shared
        self.workspace_args: set[int] = set()  # split-K partial sums and arrival counters
        self.load_args: set[int] = set()  # read by threads into register tiles
        self.scalar_args: set[int] = set()  # f32 values splat into register tiles
        for position, arg in enumerate(self.args):
            for owner, operand in ops.tensor_uses(arg):
                key = (owner.name, operand)
                if key == ("wsc.tma_load", "src"):
                    self.tma_args.add(position)
                elif key in ops.TMA_TENSOR_WRITES:
                    self.tma_store_args.add(position)
                elif key in ops.THREAD_TENSOR_WRITES:
                    self.store_args.add(position)
                elif key in _WORKSPACE_OPERANDS:
                    self.workspace_args.add(position)
                elif key in (("wsc.tile_load", "src"), ("wsc.tile_broadcast", "src")):
                    self.load_args.add(position)
                elif key == ("wsc.tile_splat", "value"):
                    self.scalar_args.add(position)
                elif owner.name == "memref.dim":
                    pass
                else:
                    raise fail(
                        owner,
                        f"uses kernel argument #{position} in a way "
                        f"--convert-wsc-to-nvvm cannot lower",
                    )
            if position in self.workspace_args and (
                position in self.tma_args | self.store_args | self.tma_store_args | self.load_args
            ):
                raise fail(
                    self.kernel,
                    f"argument #{position} is a split-K workspace and a tensor of the "
                    f"product at once",
                )
            read = self.tma_args | self.load_args
            if position in read and position in self.store_args | self.tma_store_args:
                raise fail(
                    self.kernel,
                    f"argument #{position} is both read and written, which is not supported",
                )
            for access, by_tma, by_threads, thread_ops in (
                (
                    "written",
                    self.tma_store_args,
                    self.store_args,
                    "wsc.store or wsc.coalesced_store",
                ),
                ("read", self.tma_args, self.load_args, "wsc.tile_load or wsc.tile_broadcast"),
            ):
                if position in by_tma and position in by_threads:
                    raise fail(
                        self.kernel,
                        f"argument #{position} is {access} both by TMA and by {thread_ops}, "
                        f"which is not supported (one tensor map or pointer per tensor)",
                    )

    def _plan_roles(self) -> None:
        """setmaxnreg: inc or dec from the entry count, and whether it can be met.

        setmaxnreg is warpgroup-wide, so a role with a budget must hold every
        thread the block has in each warpgroup it touches. setmaxnreg.inc only
        receives registers that setmaxnreg.dec gave back, and a dec in a
        warpgroup the block does not fully contain (e.g. V3's lone
        producer warp) gives back nothing an inc can use: a kernel relying on
        that hangs. So only decs of complete warpgroups fund incs."""
        self.entry_registers = entry_register_cap(self.threads, self.blocks_per_sm)
        entry = _allocated(self.entry_registers)
        released, needed = 0, 0
        increases = []
        for role in self.roles.values():
            if role.max_registers is None:
                continue
            if role.guard is None:
                raise fail(role.op, "has max_registers but guards no scf.if to put setmaxnreg in")
            end = role.begin + role.count
            complete = True
            for group in range(role.begin // WARPGROUP_SIZE, -(-end // WARPGROUP_SIZE)):
                lo = group * WARPGROUP_SIZE
                hi = min(lo + WARPGROUP_SIZE, self.threads)
                if lo < role.begin or hi > end:
                    raise fail(
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
            raise fail(
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
                raise fail(op, str(error)) from None
            self.buffers[op] = self.layout.add_buffer(f"buffer{position}", stages, tile)
        for position, op in enumerate(self.barrier_ops):
            alloc = ops.MbarrierAlloc(op)
            self.barriers[op] = self.layout.add_barriers(
                f"barriers{position}", alloc.num_barriers, alloc.arrival_count
            )
        self._plan_exchange()
        total = self.layout.dynamic_smem_bytes
        if total > MAX_DYNAMIC_SMEM:
            notes = [
                (op.location, f"this ring buffer takes {self.buffers[op].total_bytes} bytes")
                for op in self.buffer_ops
            ]
            raise fail(
                self.kernel,
                f"needs {total} bytes of shared memory ({self.layout.end} "
                f"for buffers and barriers + {ALIGN_PADDING} alignment "
                f"padding), more than the {MAX_DYNAMIC_SMEM} bytes "
                f"(227 KB) a block may use on sm_90",
                notes=notes,
            )
        per_sm = self.blocks_per_sm * (total + SMEM_RESERVED_PER_BLOCK)
        if self.blocks_per_sm > 1 and per_sm > SM_SHARED_MEMORY:
            raise fail(
                self.kernel,
                f"needs {total} bytes of shared memory per block: "
                f"{self.blocks_per_sm} blocks per SM ({BLOCKS_PER_SM_ATTR}) would "
                f"take {per_sm} bytes with the {SMEM_RESERVED_PER_BLOCK} each "
                f"reserves, more than an SM's {SM_SHARED_MEMORY}",
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
                raise fail(
                    op,
                    f"a {tile.rows}-row stage tile cannot be stored by {warps} "
                    f"warps in groups of 8 rows each",
                )
            if tile.atom_cols % WARP_SIZE:
                raise fail(
                    op,
                    f"the stage tile's {tile.swizzle}-byte swizzle atoms are "
                    f"{tile.atom_cols} elements wide; coalesced stores need rows "
                    f"of 32-element multiples per atom",
                )

    def role_of(self, op: ir.Operation) -> RoleInfo | None:
        """The role a wsc op of self.ops (that very object) runs in; None
        outside roles."""
        return self._op_roles[id(op)]

    def _executing_threads(self, op: ir.Operation) -> int:
        role = self.role_of(op)
        return role.count if role is not None else self.threads

    def _plan_exchange(self) -> None:
        """Shared memory for the reductions whose rows span several warps: one
        f32 per warp of the block and 64-row sub-tile of the largest such tile."""
        subtiles = []
        for op in self.ops:
            if op.name != "wsc.tile_col_reduce" or ops.TileColReduce(op).rows <= WARP_ROWS:
                continue
            # Whole warpgroups run it (the verifier's rule of register tiles),
            # so its groups of up to four warps are whole.
            reduce = ops.TileColReduce(op)
            subtiles.append(acc_type_parameters(reduce.x.type)[0][0] // WGMMA_M)
        if subtiles:
            warps = self.threads // WARP_SIZE
            self.layout.add_exchange(max(subtiles) * warps * ELEMENT_BYTES["f32"])

    def _check_barriers_published(self, op: ir.Operation) -> None:
        """A block-wide wsc.sync must follow the initialisation at top level."""
        seen = False
        for other in self.block.operations:
            other = other.operation
            if other == op:
                seen = True
            elif seen and other.name in ("wsc.sync", "wsc.cluster_sync"):
                return
        raise fail(
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
            position = self.checked_position(tensor)
            tile = self.buffers[defining_op(buffer)].tile
            box = [box_rows or tile.box[0], tile.box[1]]
            if self.matrix_dim(position, 0)[1]:
                box.insert(0, 1)  # one matrix of the batch
            spec = {"tensor": tensor_name(position), "box": box, "swizzle": tile.swizzle_name}
            if position in self.tensor_maps and self.tensor_maps[position] != spec:
                raise fail(
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
                loads_into.setdefault(defining_op(load.dst), set()).add(
                    self.checked_position(load.src)
                )
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
            a_m, a_k = (1, 0) if wgmma.a_transposed else (0, 1)
            # The sizes are named after C: a tile stored transposed (C^T = B A^T)
            # has its WGMMA's M along C's columns.
            swapped = any(c_tensors.values())
            rows, cols = ("n", "m") if swapped else ("m", "n")
            for label, nodes in (
                (
                    rows,
                    [(t, a_m) for t in a_tensors] + [(t, int(tr)) for t, tr in c_tensors.items()],
                ),
                ("k", [(t, a_k) for t in a_tensors] + [(t, b_k) for t in b_tensors]),
                (
                    cols,
                    [(t, b_n) for t in b_tensors] + [(t, 1 - tr) for t, tr in c_tensors.items()],
                ),
            ):
                nodes = [self.matrix_dim(*node) for node in nodes]
                for node in nodes:
                    classes.union(nodes[0], node)
                    labels.setdefault(node, label)
            matmul = matmul or bool(a_tensors and b_tensors and c_tensors)
        # A WGMMA reading A from registers (a tile made from an earlier
        # WGMMA's accumulator) has that WGMMA's rows, and its K is that one's N.
        for op in self.ops:
            if op.name != "wsc.wgmma_register_a":
                continue
            second = ops.WgmmaRegisterA(op)
            first = self._source_wgmma(second.a)
            if first is None:
                continue
            a_tensors = loads_into.get(defining_op(first.a), set())
            b1_tensors = loads_into.get(defining_op(first.b), set())
            b2_tensors = loads_into.get(defining_op(second.b), set())
            c_tensors = self._stored_tensors(second.acc)
            a_m = 1 if first.a_transposed else 0
            b1_n = 1 if first.b_layout == "kn" else 0
            b2_k, b2_n = (0, 1) if second.b_layout == "kn" else (1, 0)
            # (label, the tensor dims of one size); the second product's N has
            # no matmul label.
            chains: list[tuple[str | None, list[tuple[int, int]]]] = [
                (
                    "m",
                    [(t, a_m) for t in a_tensors] + [(t, int(tr)) for t, tr in c_tensors.items()],
                ),
                ("n", [(t, b1_n) for t in b1_tensors] + [(t, b2_k) for t in b2_tensors]),
                (
                    None,
                    [(t, b2_n) for t in b2_tensors] + [(t, 1 - tr) for t, tr in c_tensors.items()],
                ),
            ]
            for chain_label, nodes in chains:
                nodes = [self.matrix_dim(*node) for node in nodes]
                for node in nodes:
                    classes.union(nodes[0], node)
                    if chain_label is not None:
                        labels.setdefault(node, chain_label)
            matmul = matmul or bool(a_tensors and c_tensors)
        # A tile copied in by TMA and out of the same ring (a kernel that
        # rewrites its stages in place) has the source's sizes.
        for op in self.ops:
            if op.name == "wsc.tma_store":
                store = ops.TmaStore(op)
                for source in loads_into.get(defining_op(store.src), set()):
                    for dim in (0, 1):
                        classes.union(
                            self.matrix_dim(source, dim),
                            self.matrix_dim(self.checked_position(store.dst), dim),
                        )
        # So has one copied out of a ring of its own after element-wise math
        # on that tensor's tiles alone.
        rewritten_from: dict[int, set[int]] = {}
        for op in self.ops:
            if op.name == "wsc.load_shared":
                read = ops.LoadShared(op)
                for written in self._rewritten_tensors(read):
                    sources = loads_into.get(defining_op(read.src), set())
                    rewritten_from.setdefault(written, set()).update(sources)
        for written, sources in rewritten_from.items():
            if len(sources) == 1:
                for dim in (0, 1):
                    classes.union(
                        self.matrix_dim(next(iter(sources)), dim), self.matrix_dim(written, dim)
                    )
        # A tile read from global memory and stored with the result has its sizes.
        for op in self.ops:
            if op.name not in ops.TILE_LOADS:
                continue
            for stored, transposed in self._stored_tensors(op.results[0]).items():
                if op.name == "wsc.tile_load":
                    tile_load = ops.TileLoad(op)
                    position = self.args.index(tile_load.src)
                    flip = tile_load.transpose != transposed
                    shape, _ = acc_type_parameters(tile_load.result.type)
                    if shape[1] == 1:
                        # A row vector reads one column of src (one row if
                        # transposed): only that dim is C's rows.
                        classes.union(
                            (position, int(tile_load.transpose)),
                            self.matrix_dim(stored, int(transposed)),
                        )
                        continue
                    for dim in (0, 1):
                        classes.union(
                            (position, dim), self.matrix_dim(stored, 1 - dim if flip else dim)
                        )
                else:
                    broadcast = ops.TileBroadcast(op)
                    shape, _ = acc_type_parameters(broadcast.result.type)
                    if broadcast.along == "cols" and shape[1] == 1:
                        continue  # one element, src[offset], in every row: no size of C
                    tile_dim = 0 if broadcast.along == "rows" else 1
                    stored_dim = 1 - tile_dim if transposed else tile_dim
                    classes.union(
                        (self.args.index(broadcast.src), 0), self.matrix_dim(stored, stored_dim)
                    )
        # The matrices of batches taken at one index are of batches of one size.
        batch_nodes: dict[int, list[tuple[int, int]]] = {}
        batch_indices: list[ir.Value] = []
        for op in self.ops:
            if op.name == "wsc.batch_matrix":
                view = ops.BatchMatrix(op)
                if view.index not in batch_indices:
                    batch_indices.append(view.index)
                node = (self.args.index(view.batch), 0)
                batch_nodes.setdefault(batch_indices.index(view.index), []).append(node)
        for nodes in batch_nodes.values():
            for node in nodes:
                classes.union(nodes[0], node)
                labels.setdefault(node, "batch")

        # Dims the kernel reads: memref.dim results and the bounds of stores
        # by threads; then those of the tensors TMA copies (their tensor maps'),
        # which the host needs.
        used: list[tuple[int, int]] = []
        # Sources before destinations: a size is named after a tensor read with it.
        copied: dict[str, list[tuple[int, int]]] = {"wsc.tma_load": [], "wsc.tma_store": []}
        for op in self.ops:
            if op.name == "memref.dim":
                node = self.dim_node(op)
            elif op.name in copied:
                tensor = ops.TmaLoad(op).src if op.name == "wsc.tma_load" else ops.TmaStore(op).dst
                position = self.checked_position(tensor)
                copied[op.name].extend(self.matrix_dim(position, dim) for dim in (0, 1))
                continue
            elif op.name in ("wsc.store", "wsc.coalesced_store", "wsc.tile_load"):
                if op.name == "wsc.tile_load":
                    tensor = ops.TileLoad(op).src
                else:
                    tensor = (
                        ops.Store(op) if op.name == "wsc.store" else ops.CoalescedStore(op)
                    ).dst
                position = self.args.index(tensor)
                for node in ((position, 0), (position, 1)):
                    if node not in used:
                        used.append(node)
                continue
            elif op.name == "wsc.tile_broadcast":
                node = (self.args.index(ops.TileBroadcast(op).src), 0)
            else:
                continue
            if node not in used:
                used.append(node)
        for node in copied["wsc.tma_load"] + copied["wsc.tma_store"]:
            if node not in used:
                used.append(node)

        # Name each class: its matmul label if it has exactly one, else generic.
        class_name: dict[tuple[int, int], str] = {}
        order: list[str] = []
        for label in ("m", "n", "k", "batch") if matmul else ("batch",):
            roots = {classes.find(n) for n, lab in labels.items() if lab == label}
            if len(roots) == 1:
                root = roots.pop()
                if root not in class_name:
                    class_name[root] = label
                    order.append(label)
        for node in used + [node for nodes in batch_nodes.values() for node in nodes]:
            root = classes.find(node)
            if root not in class_name:
                name = dim_size_name(tensor_name(node[0]), node[1])
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
        for position in sorted(self.store_args | self.workspace_args | self.load_args):
            self.params.append(
                ParamInfo(
                    "pointer", tensor_name(position), ptr, {"llvm.noalias": ir.UnitAttr.get()}
                )
            )
        for name in order:
            self.params.append(ParamInfo("i32", name, E.i32()))
        for position in sorted(self.store_args | self.load_args):
            if len(memref_shape(self.args[position].type) or ()) == 2:
                self.params.append(ParamInfo("i32", f"ld{tensor_name(position)}", E.i32()))
        for position in sorted(self.scalar_args):
            self.params.append(ParamInfo("f32", tensor_name(position), ir.F32Type.get()))

    @staticmethod
    def _source_wgmma(tile: ir.Value) -> ops.Wgmma | None:
        """The wsc.wgmma whose accumulator `tile` is computed from through
        register-tile maps (e.g. a wsc.cast of it), if one is."""
        pending, seen = [tile], set()
        while pending:
            value = pending.pop()
            source = defining_op(value)
            if source is None or source in seen:
                continue
            seen.add(source)
            if source.name == "wsc.acc_alloc":
                for use in value.uses:
                    owner = use_owner(use)
                    if owner.name == "wsc.wgmma" and ops.Wgmma(owner).acc == value:
                        return ops.Wgmma(owner)
            elif source.name in ops.TILE_MAPS:
                pending.extend(source.operands)
        return None

    def _stored_tensors(self, acc: ir.Value) -> dict[int, bool]:
        """The tensors `acc` ends up in, through register-tile math and
        assignments, each with whether it is stored transposed: stored from
        registers, or staged in shared memory and copied out (with TMA or
        coalesced stores)."""
        found: dict[int, bool] = {}
        for owner, key in _element_uses(acc):
            if key == ("wsc.store", "tile"):
                store = ops.Store(owner)
                found[self.args.index(store.dst)] = store.transpose
            elif key == ("wsc.store_shared", "tile"):
                found.update(dict.fromkeys(self._copied_out(ops.StoreShared(owner).dst), False))
        return found

    def _rewritten_tensors(self, read: ops.LoadShared) -> set[int]:
        """The tensors copied out of rings of the stage shape of the ring `read`
        reads, into which its tile is stored after element-wise math only,
        element for element (a kernel that rewrites its stages through a ring
        of its own; a sum over several tiles is no such copy)."""
        read_shape, _ = acc_type_parameters(read.result.type)
        stage_shape = ir.MemRefType(read.src.type).shape[1:]
        found: set[int] = set()
        for owner, key in _element_uses(read.result, through_assign=False):
            if key != ("wsc.store_shared", "tile"):
                continue
            store = ops.StoreShared(owner)
            if (
                acc_type_parameters(store.tile.type)[0] == read_shape
                and ir.MemRefType(store.dst.type).shape[1:] == stage_shape
            ):
                found.update(self._copied_out(store.dst))
        return found

    def _copied_out(self, ring: ir.Value) -> list[int]:
        """The tensors copied out of shared-memory `ring` (by TMA or coalesced stores)."""
        found = []
        for copy_op, key in _uses(ring):
            if key == ("wsc.tma_store", "src"):
                found.append(self.checked_position(ops.TmaStore(copy_op).dst))
            elif key == ("wsc.coalesced_store", "src"):
                found.append(self.args.index(ops.CoalescedStore(copy_op).dst))
        return found

    def _check_debug_options(self) -> None:
        """delay-role must name a role, or the option would silently do nothing."""
        self.barrier_names = barrier_names(self.barrier_ops)
        role = self.debug.delay_role
        if role and not any(self.debug.delays(r.name) for r in self.roles.values()):
            names = ", ".join(sorted({r.name for r in self.roles.values()})) or "none"
            raise fail(
                self.kernel, f"has no role '{role}' to delay (delay-role={role}; roles: {names})"
            )

    def kernel_info(self) -> KernelInfo:
        """The launch description (available after analyze())."""
        return self.info

    def _make_kernel_info(self) -> KernelInfo:
        tensors = {}
        for position, arg in enumerate(self.args):
            if isinstance(arg.type, ir.F32Type):
                continue  # a parameter, not a tensor
            memref = ir.MemRefType(arg.type)
            role = (
                "input"
                if position in self.tma_args | self.load_args
                else "output"
                if position in self.store_args | self.tma_store_args
                else "workspace"
                if position in self.workspace_args
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
        if self.layout.exchange is not None:
            exchange = self.layout.exchange
            layout["exchange"] = {"offset": exchange.offset, "bytes": exchange.total_bytes}
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
            blocks_per_sm=self.blocks_per_sm,
        )

    def _accumulator_element(self) -> str:
        """The WGMMA accumulators' element type: f16 if any is f16."""
        elements = {acc_type_parameters(value.type)[1] for value in self.wgmma_accumulators}
        return "f16" if "f16" in elements else "f32" if elements else ""


def _uses(value: ir.Value):
    """Each use of `value`: its op, and (op name, operand name)."""
    for use in value.uses:
        owner = use_owner(use)
        yield owner, (owner.name, ops.operand_name(owner, use.operand_number))


def _element_uses(tile: ir.Value, through_assign: bool = True):
    """The uses of `tile`'s elements as they are: its own, and those of the
    register tiles made from it by element-wise math and, `through_assign`,
    assignments (a reduction holds no element as it is: attention's running
    max reaches its output only through a rescale)."""
    pending, seen = [tile], set()
    while pending:
        value = pending.pop()
        if value in seen:
            continue
        seen.add(value)
        for owner, key in _uses(value):
            yield owner, key
            if owner.name in ops.TILE_MAPS and owner.name not in _REDUCTIONS:
                pending.append(owner.results[0])
            elif through_assign and key == ("wsc.tile_assign", "src"):
                # Assigned into a tile (a sum across K tiles): stored where it is.
                pending.append(ops.TileAssign(owner).dst)
