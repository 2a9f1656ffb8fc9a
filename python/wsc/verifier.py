"""Structural verification of wsc IR beyond what IRDL can say.

IRDL (dialects/wsc.irdl.mlir) checks operand and result types and the presence
of attributes. This module checks the rest: value ranges (stage counts, arrival
counts, register budgets), that roles are warp-aligned thread ranges inside the
block, that WGMMA runs in warpgroup-aligned roles and register tiles in
whole warpgroups, and the tile rules of TMA and WGMMA. Every tool runs it right after parsing and before every wsc pass,
so passes may assume it holds; the first violation is raised as a PassError.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NoReturn

from mlir import ir

from wsc import ops
from wsc.diagnostics import PassError
from wsc.dialect import SHARED_MEMORY_SPACE, parse_acc_type
from wsc.ir_utils import (
    BLOCKS_PER_SM_ATTR,
    CLUSTER_SIZE_ATTR,
    KERNEL_THREADS_ATTR,
    cluster_size,
    constant_int,
    defining_op,
    enclosing,
    enclosing_kernel,
    enclosing_role,
    int_attr,
    kernel_threads,
    kernels,
    memref_shape,
    memref_space,
    parent_op,
    use_owner,
    walk,
)
from wsc.ops import DEFINITIONS, FLOAT_BASE, INTEGER_BASE, UNIT_BASE
from wsc.target.hopper import (
    BUFFER_ALIGN,
    HALF_DTYPES,
    MAX_BLOCK_THREADS,
    MAX_BLOCKS_PER_SM,
    MAX_DYNAMIC_SMEM,
    MAX_MBARRIER_COUNT,
    MAX_PORTABLE_CLUSTER,
    MAX_SETMAXNREG,
    MAX_SPLITS,
    MAX_STAGES,
    MAX_TMA_BOX,
    MIN_SETMAXNREG,
    OPERAND_DTYPES,
    REGISTER_FILE,
    RESULT_DTYPES,
    SETMAXNREG_STEP,
    SHARED_DTYPES,
    WARP_ROWS,
    WARP_SIZE,
    WARPGROUP_SIZE,
    WGMMA_M,
    WGMMA_N_MAX,
    WGMMA_N_STEP,
    kernel_name_problem,
    stage_bytes,
    wgmma_k,
)


def _fail(op: ir.Operation, message: str) -> NoReturn:
    raise PassError(op.location, f"'{op.name}' op {message}")


def _verify_kernel(kernel: ir.Operation) -> int:
    problem = kernel_name_problem(ir.StringAttr(kernel.attributes["sym_name"]).value)
    if problem is not None:
        _fail(kernel, problem)
    attribute = kernel.attributes[KERNEL_THREADS_ATTR]
    if not isinstance(attribute, ir.IntegerAttr):  # attributes come typed (BoolAttr is not one)
        _fail(
            kernel,
            f"attribute '{KERNEL_THREADS_ATTR}' must be an integer (the block's "
            f"threads), got {attribute}",
        )
    if len(kernel.regions[0].blocks) != 1:
        _fail(
            kernel,
            "must have a body of one block: a kernel is a definition, not a "
            "declaration, and its control flow is structured",
        )
    threads = int_attr(kernel, KERNEL_THREADS_ATTR)
    if threads is None or threads < 1 or threads > MAX_BLOCK_THREADS or threads % WARP_SIZE:
        _fail(
            kernel,
            f"attribute '{KERNEL_THREADS_ATTR}' must be a multiple of {WARP_SIZE} "
            f"in [{WARP_SIZE}, {MAX_BLOCK_THREADS}], got {threads}",
        )
    for name, most, what in (
        (BLOCKS_PER_SM_ATTR, MAX_BLOCKS_PER_SM, "the blocks an SM runs at once"),
        (CLUSTER_SIZE_ATTR, MAX_PORTABLE_CLUSTER, "the portable cluster size"),
    ):
        value = kernel.attributes[name] if name in kernel.attributes else None
        if value is not None and not (
            isinstance(value, ir.IntegerAttr) and 1 <= value.value <= most
        ):
            _fail(
                kernel,
                f"attribute '{name}' must be an integer in [1, {most}] ({what}), got {value}",
            )
    return threads


def _verify_clustered(op: ir.Operation) -> int:
    """The op needs a kernel launched in clusters; returns their size."""
    kernel = enclosing_kernel(op)
    ctas = cluster_size(kernel) if kernel is not None else 1
    if ctas < 2:
        _fail(op, f"needs a kernel with '{CLUSTER_SIZE_ATTR}' of at least 2 (CTAs per cluster)")
    return ctas


#: Ops whose value can differ between the threads of one warp (wsc.role cannot:
#: roles are whole warps).
_PER_THREAD_OPS = ("gpu.thread_id", "gpu.lane_id", "wsc.elect")


def _per_thread_source(value: ir.Value) -> str | None:
    """The name of an op of _PER_THREAD_OPS that `value` is computed from, if
    any; through scf.for's loop-carried values too (their initial and yielded
    values), and any other loop's block argument counts as per thread."""
    pending: list[ir.Value] = [value]
    seen: list[ir.Value] = []
    while pending:
        value = pending.pop()
        if any(value == other for other in seen):
            continue
        seen.append(value)
        if isinstance(value, ir.BlockArgument):
            loop = value.owner.owner.operation
            if not loop.name.startswith("scf.") or (
                loop.name == "scf.for" and value.arg_number == 0
            ):
                continue  # kernel arguments and induction variables are uniform
            if loop.name != "scf.for":
                return f"a block argument of {loop.name}"
            carried = value.arg_number - 1
            body = value.owner
            terminator = body.operations[len(body.operations) - 1]
            pending += [loop.opview.initArgs[carried], terminator.operands[carried]]
            continue
        op = value.owner.operation  # not a block argument: an op's result
        if op.name in _PER_THREAD_OPS:
            return op.name
        pending.extend(op.operands)
    return None


#: Each optional attribute of the dialect, and the ops that declare it.
_OPTIONAL_ATTR_OWNERS = {
    attr: [d.name for d in DEFINITIONS.values() if attr in d.optional_attributes]
    for d in DEFINITIONS.values()
    for attr in d.optional_attributes
}


def _verify_optional_attrs(op: ir.Operation) -> None:
    """The optional attributes IRDL cannot check: only on the ops that declare
    them, and of the declared base."""
    declared = DEFINITIONS[op.name].optional_attributes
    for attr, owners in _OPTIONAL_ATTR_OWNERS.items():
        if attr not in op.attributes:
            continue
        if attr not in declared:
            _fail(op, f"'{attr}' applies to {' and '.join(owners)} only")
        value = op.attributes[attr]
        if declared[attr] == UNIT_BASE and not isinstance(value, ir.UnitAttr):
            _fail(op, f"'{attr}' must be a unit attribute, got {value}")
        if declared[attr] == INTEGER_BASE and not isinstance(value, ir.IntegerAttr):
            _fail(op, f"'{attr}' must be an integer attribute, got {value}")
        if declared[attr] == FLOAT_BASE and not (
            isinstance(value, ir.FloatAttr) and isinstance(value.type, ir.F32Type)
        ):
            _fail(op, f"'{attr}' must be an f32 attribute, got {value}")


def _verify_role(op: ir.Operation) -> None:
    role = ops.Role(op)
    kernel = enclosing_kernel(op)
    if kernel is None:
        _fail(op, f"must be inside a func.func with '{KERNEL_THREADS_ATTR}'")
    block_threads = kernel_threads(kernel)
    begin, count = role.thread_begin, role.num_threads
    if begin < 0 or count < WARP_SIZE or begin % WARP_SIZE or count % WARP_SIZE:
        _fail(
            op,
            f"thread range [{begin}, {begin + count}) must be whole warps "
            f"(multiples of {WARP_SIZE} threads)",
        )
    if begin + count > block_threads:
        _fail(
            op,
            f"thread range [{begin}, {begin + count}) is outside the block of "
            f"{block_threads} threads",
        )
    registers = role.max_registers
    if registers is not None and (
        registers < MIN_SETMAXNREG or registers > MAX_SETMAXNREG or registers % SETMAXNREG_STEP
    ):
        _fail(
            op,
            f"max_registers must be a multiple of {SETMAXNREG_STEP} in [{MIN_SETMAXNREG}, "
            f"{MAX_SETMAXNREG}], got {registers}",
        )
    for user in role.is_member.uses:
        if user.owner.name != "scf.if":
            _fail(op, "result may only be used as the condition of an scf.if")


def _verify_roles_disjoint(kernel: ir.Operation) -> None:
    seen: list[tuple[int, int, ir.Operation]] = []
    for op in walk(kernel):
        if op.name != "wsc.role":
            continue
        role = ops.Role(op)
        begin = role.thread_begin
        end = begin + role.num_threads
        for other_begin, other_end, other in seen:
            if begin < other_end and other_begin < end:
                raise PassError(
                    op.location,
                    f"'wsc.role' op thread range [{begin}, {end}) overlaps "
                    f"another role's [{other_begin}, {other_end})",
                    notes=[(other.location, "the other role is here")],
                )
        seen.append((begin, end, op))


def _verify_shared_buffer(
    op: ir.Operation, type_: ir.Type, what: str, elements: tuple[str, ...] = SHARED_DTYPES
) -> list[int]:
    shape = memref_shape(type_)
    if shape is None or len(shape) != 3 or -1 in shape:
        _fail(
            op,
            f"{what} must be a static memref<stages x rows x cols> in shared memory, got {type_}",
        )
    if memref_space(type_) != SHARED_MEMORY_SPACE:
        _fail(
            op,
            f"{what} must be in shared memory (address space {SHARED_MEMORY_SPACE}), got {type_}",
        )
    if shape[0] < 1:
        _fail(op, f"{what} needs at least 1 stage, got {shape[0]}")
    element = str(ir.MemRefType(type_).element_type)
    if element not in elements:
        _fail(op, f"{what} element type must be one of {', '.join(elements)}, got {element}")
    stages, rows, cols = shape
    stage = stage_bytes(rows, cols, element)
    if stages * stage > MAX_DYNAMIC_SMEM:
        _fail(
            op,
            f"{what} needs {stages} x {stage} = {stages * stage} bytes of "
            f"shared memory ({stages} stages of {rows}x{cols}x{element}, each "
            f"{BUFFER_ALIGN}-byte aligned), more than the {MAX_DYNAMIC_SMEM} bytes "
            f"(227 KB) a block may use on sm_90",
        )
    return shape


def verify_shared_total(kernel: ir.Operation) -> None:
    """Raise a PassError unless a kernel's shared buffers fit in a block's
    shared memory together: what a pass that sets the rings' stages checks
    of its result. (Each buffer alone is a rule of every kernel, checked
    first; a V2 form's rings may exceed the total until --warp-specialize sets
    their stages; the lowering adds barriers and padding, and checks the
    exact total.)"""
    sizes = []
    for op in walk(kernel):
        if op.name == "wsc.alloc_shared":
            stages, rows, cols = _verify_shared_buffer(op, op.result.type, "result")
            element = str(ir.MemRefType(op.result.type).element_type)
            sizes.append((op, stages * stage_bytes(rows, cols, element)))
    total = sum(size for _, size in sizes)
    if total > MAX_DYNAMIC_SMEM:
        raise PassError(
            kernel.location,
            f"'{kernel.name}' op's shared buffers take {total} bytes together, more than the "
            f"{MAX_DYNAMIC_SMEM} bytes (227 KB) a block may use on sm_90: fewer stages, or "
            f"smaller tiles",
            notes=[(op.location, f"this ring buffer takes {size} bytes") for op, size in sizes],
        )


def _verify_global(op: ir.Operation, type_: ir.Type, what: str) -> None:
    shape = memref_shape(type_)
    if shape is None or len(shape) != 2 or memref_space(type_) != 0:
        _fail(op, f"{what} must be a rank-2 memref in global memory, got {type_}")


def _verify_batch_matrix(op: ir.Operation) -> None:
    view = ops.BatchMatrix(op)
    batch, matrix = view.batch.type, view.matrix.type
    shape = memref_shape(batch)
    if shape is None or len(shape) != 3 or memref_space(batch) != 0:
        _fail(op, f"batch must be a rank-3 memref in global memory, got {batch}")
    _verify_global(op, matrix, "matrix")
    if ir.MemRefType(matrix).element_type != ir.MemRefType(batch).element_type:
        _fail(op, f"matrix {matrix} must have the element type of its batch {batch}")
    if shape[1:] != memref_shape(matrix):
        _fail(op, f"matrix {matrix} must have the shape of one matrix of its batch {batch}")


def _verify_stage(op: ir.Operation, stage: ir.Value, num_stages: int) -> None:
    index = constant_int(stage)
    if index is not None and not 0 <= index < num_stages:
        _fail(op, f"stage {index} is outside the ring of {num_stages} stages")


def _barrier_count(barriers: ir.Value) -> int | None:
    """The barriers of the array `barriers`, when its wsc.mbarrier_alloc is in sight."""
    alloc = defining_op(barriers)
    if alloc is None or alloc.name != "wsc.mbarrier_alloc":
        return None
    return ops.MbarrierAlloc(alloc).num_barriers


def _verify_barrier_stage(op: ir.Operation, barriers: ir.Value, stage: ir.Value) -> None:
    count = _barrier_count(barriers)
    if count is not None:
        _verify_stage(op, stage, count)


def _verify_mbarrier_alloc(op: ir.Operation) -> None:
    alloc = ops.MbarrierAlloc(op)
    if not 1 <= alloc.num_barriers <= MAX_STAGES:
        _fail(
            op,
            f"num_barriers must be in [1, {MAX_STAGES}] (one per stage; a ring has "
            f"at most {MAX_STAGES} {BUFFER_ALIGN}-byte stages in {MAX_DYNAMIC_SMEM} "
            f"bytes of shared memory), got {alloc.num_barriers}",
        )
    if not 1 <= alloc.arrival_count <= MAX_MBARRIER_COUNT:
        _fail(
            op,
            f"arrival_count must be in [1, {MAX_MBARRIER_COUNT}] (the mbarrier "
            f"arrival count limit), got {alloc.arrival_count}",
        )


def _verify_mbarrier_arrive(op: ir.Operation) -> None:
    arrive = ops.MbarrierArrive(op)
    if arrive.every_cta:
        _verify_clustered(op)
    if arrive.per_warp:
        # A warp's threads synchronize before one of them arrives for all, so
        # no enclosing condition may split a warp.
        split = enclosing(
            op, lambda p: p.name == "scf.if" and _per_thread_source(p.opview.condition)
        )
        if split is not None:
            _fail(
                op,
                f"'per_warp' under a condition computed from "
                f"{_per_thread_source(split.opview.condition)}, which can split a warp: "
                f"every thread of each warp must execute the arrive",
            )
    _verify_barrier_stage(op, arrive.barriers, arrive.stage)


def _enclosing_elect(op: ir.Operation) -> ir.Operation | None:
    """The wsc.elect whose scf.if runs `op` in its then region, if any: the
    one thread it elects is all that runs `op`."""
    child, parent = op, parent_op(op)
    while parent is not None:
        if parent.name == "scf.if" and child.block.region == parent.regions[0]:
            guard = defining_op(parent.opview.condition)
            if guard is not None and guard.name == "wsc.elect":
                return guard
        child, parent = parent, parent_op(parent)
    return None


def _verify_one_thread(op: ir.Operation, what: str) -> None:
    """An op that must run in one thread (`what` says why) sits in the then
    region of an scf.if on a wsc.elect of its own role: every thread of the
    role that reaches it elsewhere issues it, and an elect of another role
    (or of the block outside roles) picks a thread that never reaches it."""
    guard = _enclosing_elect(op)
    if guard is None:
        _fail(
            op,
            f"must be issued by one thread ({what}): put it in the then region of an scf.if "
            f"whose condition is a wsc.elect (other conditions may enclose that scf.if)",
        )
    elector, issuer = enclosing_role(guard), enclosing_role(op)
    same = elector is issuer if elector is None or issuer is None else elector == issuer
    if not same:
        _fail(
            op,
            f"must be issued by one thread of its role ({what}), but the "
            f"wsc.elect guarding it is made outside that role: the thread it "
            f"elects never reaches it; make the elect inside the role",
        )


def _verify_mbarrier_arrive_expect_tx(op: ir.Operation) -> None:
    arrive = ops.MbarrierArriveExpectTx(op)
    _verify_barrier_stage(op, arrive.barriers, arrive.stage)
    if not 1 <= arrive.tx_bytes <= MAX_MBARRIER_COUNT:
        _fail(
            op,
            f"tx_bytes must be in [1, {MAX_MBARRIER_COUNT}] (the mbarrier "
            f"transaction count limit), got {arrive.tx_bytes}",
        )
    _verify_one_thread(op, "it arrives once")


def _verify_mbarrier_wait(op: ir.Operation) -> None:
    wait = ops.MbarrierWait(op)
    _verify_barrier_stage(op, wait.barriers, wait.stage)


def _verify_ring_advance(op: ir.Operation) -> None:
    num_stages = ops.RingAdvance(op).num_stages
    if not 1 <= num_stages <= MAX_STAGES:
        _fail(
            op,
            f"num_stages must be in [1, {MAX_STAGES}] (a ring has at most "
            f"{MAX_STAGES} {BUFFER_ALIGN}-byte stages in {MAX_DYNAMIC_SMEM} bytes of "
            f"shared memory), got {num_stages}",
        )


#: The ops that take a ring's stage as the index of a barrier array (each
#: view has `stage` and `barriers`).
_STAGED_BARRIER_OPS: dict[str, Any] = {
    "wsc.mbarrier_wait": ops.MbarrierWait,
    "wsc.mbarrier_arrive": ops.MbarrierArrive,
    "wsc.mbarrier_arrive_expect_tx": ops.MbarrierArriveExpectTx,
    "wsc.tma_load": ops.TmaLoad,
}


def _verify_rings_agree(kernel: ir.Operation) -> None:
    """Every ring loop that indexes a barrier array with its stage counts the
    same stages: a producer and a consumer that wrap around at different
    stages wait for phases the other side never completes (a deadlock or a
    stale read far from the cause)."""
    first: dict = {}  # barrier array -> (num_stages, the first ring_advance indexing it)
    for op in walk(kernel):
        if op.name != "wsc.ring_advance":
            continue
        advance = ops.RingAdvance(op)
        for use in advance.stage.uses:
            user = use_owner(use)
            view = _STAGED_BARRIER_OPS.get(user.name)
            staged = view(user) if view is not None else None
            if staged is None or staged.stage != advance.stage:
                continue
            num_stages, other = first.setdefault(staged.barriers, (advance.num_stages, op))
            if num_stages != advance.num_stages:
                raise PassError(
                    op.location,
                    f"'{op.name}' op this ring loop counts {advance.num_stages} stages, "
                    f"but a barrier array its stage indexes (in its '{user.name}') is "
                    f"also indexed by a ring loop of {num_stages} stages: both sides "
                    f"of a ring must wrap around at the same stage",
                    notes=[(other.location, f"the ring loop of {num_stages} stages")],
                )


def _verify_pending(op: ir.Operation, pending: int) -> None:
    if pending < 0:
        _fail(op, f"pending must be non-negative, got {pending}")


def _verify_tma_store_wait(op: ir.Operation) -> None:
    _verify_pending(op, ops.TmaStoreWait(op).pending)


def _verify_wgmma_wait_group(op: ir.Operation) -> None:
    _verify_pending(op, ops.WgmmaWaitGroup(op).pending)


def _verify_alloc_shared(op: ir.Operation) -> None:
    _verify_shared_buffer(op, ops.AllocShared(op).buffer.type, "result")


def _verify_acc_alloc(op: ir.Operation) -> None:
    _verify_acc(op, ops.AccAlloc(op).tile.type, row_vector=True)


def _verify_coalesced_store(op: ir.Operation) -> None:
    store = ops.CoalescedStore(op)
    _verify_stage_copy(op, store.src, store.dst, store.stage, shared_is_dst=False)


def _verify_cast(op: ir.Operation) -> None:
    cast = ops.Cast(op)
    _verify_acc(op, cast.src.type)
    _verify_acc(op, cast.result.type)


def _verify_f32_tile(
    op: ir.Operation, value: ir.Value, what: str, row_vector: bool = False
) -> tuple[int, ...]:
    shape, element = _verify_acc(op, value.type, row_vector)
    if element != "f32":
        _fail(op, f"{what} must be an f32 register tile, got {element}")
    return shape


def _verify_choice(op: ir.Operation, attribute: str, value: str, choices: tuple[str, ...]) -> None:
    """A string attribute IRDL checks only as a string: one of `choices`."""
    if value not in choices:
        _fail(op, f"{attribute} must be one of {', '.join(choices)}, got '{value}'")


def _broadcast_shape(
    op: ir.Operation, named: tuple[tuple[ir.Value, str], ...], result: ir.Value
) -> None:
    """Operands of one shape, or of the rows of the widest with one column
    (row vectors, read broadcast along the rows), and a result of the widest
    operand's type."""
    shapes = [_verify_f32_tile(op, value, name, row_vector=True) for value, name in named]
    widest = ops.broadcast_shape(shapes)
    if widest is None:
        listed = ", ".join(
            f"{name} {list(shape)}" for (_, name), shape in zip(named, shapes, strict=True)
        )
        _fail(op, f"operands have shapes {listed}: not one shape, or its rows with one column")
    expected = named[shapes.index(widest)][0].type
    if result.type != expected:
        _fail(op, f"result type {result.type} differs from the widest operand's {expected}")


def _verify_tile_binary(op: ir.Operation) -> None:
    binary = ops.TileBinary(op)
    _verify_choice(op, "kind", binary.kind, ops.TILE_BINARY_KINDS)
    _broadcast_shape(op, ((binary.x, "x"), (binary.y, "y")), binary.result)


def _verify_tile_unary(op: ir.Operation) -> None:
    unary = ops.TileUnary(op)
    _verify_choice(op, "kind", unary.kind, ops.TILE_UNARY_KINDS)
    _verify_f32_tile(op, unary.x, "x", row_vector=True)
    if unary.result.type != unary.x.type:
        _fail(op, f"result type {unary.result.type} differs from the operand's {unary.x.type}")


def _verify_tile_row_reduce(op: ir.Operation) -> None:
    reduce = ops.TileRowReduce(op)
    _verify_choice(op, "kind", reduce.kind, ops.ROW_REDUCE_KINDS)
    rows, _ = _verify_f32_tile(op, reduce.x, "x", row_vector=True)
    shape = _verify_f32_tile(op, reduce.result, "result", row_vector=True)
    if shape != (rows, 1):
        _fail(op, f"result must be the row vector [{rows}, 1] of x's rows, got {list(shape)}")


def _verify_tile_col_reduce(op: ir.Operation) -> None:
    reduce = ops.TileColReduce(op)
    _verify_choice(op, "kind", reduce.kind, ops.ROW_REDUCE_KINDS)
    _, cols = _verify_f32_tile(op, reduce.x, "x", row_vector=True)
    if reduce.rows not in ops.COL_REDUCE_ROWS:
        _fail(
            op,
            f"rows must be one of {', '.join(map(str, ops.COL_REDUCE_ROWS))} (rows of one, "
            f"two or four warps of each {WGMMA_M}-row sub-tile), got {reduce.rows}",
        )
    if reduce.rows > WARP_ROWS and cols != 1:
        _fail(
            op,
            f"rows = {reduce.rows} spans several warps, which combine one value each: x must "
            f"be a row vector [rows, 1] (e.g. a tile_row_reduce), got {cols} columns",
        )
    if reduce.result.type != reduce.x.type:
        _fail(op, f"result type {reduce.result.type} differs from the operand's {reduce.x.type}")


def _verify_tile_select(op: ir.Operation) -> None:
    select = ops.TileSelect(op)
    _verify_choice(op, "predicate", select.predicate, ops.TILE_PREDICATES)
    named = (
        (select.lhs, "lhs"),
        (select.rhs, "rhs"),
        (select.on_true, "on_true"),
        (select.on_false, "on_false"),
    )
    _broadcast_shape(op, named, select.result)


def _verify_tile_iota(op: ir.Operation) -> None:
    iota = ops.TileIota(op)
    _verify_choice(op, "along", iota.along, ops.BROADCAST_ALONG)
    _verify_f32_tile(op, iota.result, "result", row_vector=True)


def _verify_tile_assign(op: ir.Operation) -> None:
    assign = ops.TileAssign(op)
    _verify_acc(op, assign.dst.type, row_vector=True)
    if assign.src.type != assign.dst.type:
        _fail(op, f"src's type {assign.src.type} differs from dst's {assign.dst.type}")
    source = defining_op(assign.dst)
    if source is not None and source.name != "wsc.acc_alloc":
        _fail(op, f"dst must be a tile of wsc.acc_alloc (written in place), not of '{source.name}'")


def _verify_tile_fill(op: ir.Operation) -> None:
    fill = ops.TileFill(op)
    _verify_f32_tile(op, fill.result, "result", row_vector=True)
    if not isinstance(op.attributes["value"].type, ir.F32Type):
        _fail(op, f"value must be an f32 attribute, got {op.attributes['value']}")


def _verify_tile_splat(op: ir.Operation) -> None:
    _verify_f32_tile(op, ops.TileSplat(op).result, "result", row_vector=True)


def _verify_loaded_element(op: ir.Operation, src: ir.Value) -> None:
    element = str(ir.MemRefType(src.type).element_type)
    if element not in (*HALF_DTYPES, "f32"):
        _fail(
            op,
            f"source element type must be one of {', '.join(HALF_DTYPES)}, f32; got {element}",
        )


def _verify_tile_load(op: ir.Operation) -> None:
    load = ops.TileLoad(op)
    _verify_global(op, load.src.type, "source")
    _verify_loaded_element(op, load.src)
    _verify_f32_tile(op, load.result, "result", row_vector=True)


def _verify_tile_broadcast(op: ir.Operation) -> None:
    broadcast = ops.TileBroadcast(op)
    shape = memref_shape(broadcast.src.type)
    if shape is None or len(shape) != 1 or memref_space(broadcast.src.type) != 0:
        _fail(op, f"source must be a rank-1 memref in global memory, got {broadcast.src.type}")
    _verify_loaded_element(op, broadcast.src)
    _verify_choice(op, "along", broadcast.along, ops.BROADCAST_ALONG)
    _verify_f32_tile(op, broadcast.result, "result", row_vector=True)


def _verify_store(op: ir.Operation) -> None:
    store = ops.Store(op)
    _verify_global(op, store.dst.type, "destination")
    _, element = _verify_acc(op, store.tile.type)
    _verify_tile_element(op, element, store.dst)


def _verify_workspace(op: ir.Operation, value: ir.Value, element: str, what: str) -> None:
    type_ = value.type
    shape = memref_shape(type_)
    if (
        shape is None
        or len(shape) != 1
        or memref_space(type_) != 0
        or str(ir.MemRefType(type_).element_type) != element
    ):
        _fail(op, f"{what} must be a rank-1 memref of {element} in global memory, got {type_}")


def _verify_splits(op: ir.Operation, splits: int) -> None:
    if not 2 <= splits <= MAX_SPLITS:
        _fail(op, f"splits must be 2 to {MAX_SPLITS}, got {splits}")


def _verify_partial_tile(op: ir.Operation, tile: ir.Value) -> None:
    _, element = _verify_acc(op, tile.type)
    if element != "f32":
        _fail(op, f"partial sums are f32: the register tile is {element}")


def _verify_partial_store(op: ir.Operation) -> None:
    store = ops.PartialStore(op)
    _verify_splits(op, store.splits)
    _verify_partial_tile(op, store.tile)
    _verify_workspace(op, store.partials, "f32", "partials")
    split = constant_int(store.split)
    if split is not None and not 0 <= split < store.splits:
        _fail(op, f"split {split} is outside the {store.splits} splits")


def _verify_partial_arrive(op: ir.Operation) -> None:
    arrive = ops.PartialArrive(op)
    _verify_splits(op, arrive.splits)
    _verify_workspace(op, arrive.counters, "i32", "counters")


def _verify_partial_reduce(op: ir.Operation) -> None:
    reduce = ops.PartialReduce(op)
    _verify_splits(op, reduce.splits)
    _verify_partial_tile(op, reduce.tile)
    _verify_workspace(op, reduce.partials, "f32", "partials")
    _verify_workspace(op, reduce.counters, "i32", "counters")


def _verify_stage_copy(
    op: ir.Operation, src: ir.Value, dst: ir.Value, stage: ir.Value, shared_is_dst: bool
) -> list[int]:
    """The rules a copy between a global tensor and a ring stage keeps (TMA,
    in either direction, or wsc.coalesced_store); returns the ring's shape."""
    shared, tensor = (dst, src) if shared_is_dst else (src, dst)
    _verify_global(op, tensor.type, "source" if shared_is_dst else "destination")
    shape = _verify_shared_buffer(op, shared.type, "destination" if shared_is_dst else "source")
    _verify_stage(op, stage, shape[0])
    src_element = str(ir.MemRefType(src.type).element_type)
    dst_element = str(ir.MemRefType(dst.type).element_type)
    if src_element != dst_element:
        _fail(op, f"source element type {src_element} differs from the destination's {dst_element}")
    return shape


def _verify_tma_load(op: ir.Operation) -> None:
    load = ops.TmaLoad(op)
    dst = load.dst
    shape = _verify_stage_copy(op, load.src, dst, load.stage, shared_is_dst=True)
    # A row wider than the swizzle span is copied as one box per span-wide
    # column block (codegen.layout.TileLayout), at most 128 elements wide,
    # and a one-row tile of at most MAX_TMA_BOX columns as one box: only the
    # rows can exceed a box.
    rows, cols = shape[1], shape[2]
    if rows > MAX_TMA_BOX:
        _fail(op, f"TMA box {rows}x{cols} exceeds {MAX_TMA_BOX} elements in a dimension")
    count = _barrier_count(load.barriers)
    if count is not None and count != shape[0]:
        _fail(op, f"the ring has {shape[0]} stages but its barrier array has {count}")
    if load.multicast:
        ctas = _verify_clustered(op)
        if rows % (8 * ctas):
            _fail(
                op,
                f"a {rows}-row tile cannot be split over {ctas} CTAs in slices of whole "
                f"8-row swizzle periods",
            )
    _verify_one_thread(op, "it is one copy")


def _verify_tma_store(op: ir.Operation) -> None:
    store = ops.TmaStore(op)
    shape = _verify_stage_copy(op, store.src, store.dst, store.stage, shared_is_dst=False)
    if shape[1] > MAX_TMA_BOX:
        _fail(op, f"TMA box of {shape[1]} rows exceeds {MAX_TMA_BOX}")
    _verify_one_thread(op, "it is one copy")


def _verify_tile_element(op: ir.Operation, element: str, dst: ir.Value) -> None:
    """A register tile is stored as it is: its element type must be dst's."""
    dst_element = str(ir.MemRefType(dst.type).element_type)
    if element != dst_element:
        _fail(
            op,
            f"tile element type {element} differs from the destination's "
            f"{dst_element} (convert it with wsc.cast)",
        )


def _verify_stage_block(
    op: ir.Operation,
    tile: tuple[int, ...],
    stage_tile: list[int],
    row: int | None,
    col: int | None,
    transpose: bool = False,
) -> None:
    """A register tile's block of a stage tile: the whole stage tile without
    offsets, else inside it at a 64-row, 8-column aligned (row, col); with
    `transpose` the tile is the block's transpose, which is aligned the
    other way."""
    rows, cols = tile[::-1] if transpose else tile
    if row is None and col is None:
        if [rows, cols] != stage_tile:
            what = f"transposed block {rows}x{cols}" if transpose else f"tile {rows}x{cols}"
            _fail(
                op,
                f"{what} differs from the {stage_tile[0]}x{stage_tile[1]} stage "
                f"tile (give row and col to address a block of it)",
            )
        return
    row, col = row or 0, col or 0
    row_step, col_step = (WGMMA_N_STEP, WGMMA_M) if transpose else (WGMMA_M, WGMMA_N_STEP)
    if row < 0 or row % row_step or col < 0 or col % col_step:
        _fail(
            op,
            f"block offset ({row}, {col}) must be a multiple of {row_step} rows and "
            f"{col_step} columns (a fragment's "
            + ("column pairs and rows, transposed)" if transpose else "rows and column pairs)"),
        )
    if row + rows > stage_tile[0] or col + cols > stage_tile[1]:
        _fail(
            op,
            f"block [{row}:{row + rows}, {col}:{col + cols}] is outside the "
            f"{stage_tile[0]}x{stage_tile[1]} stage tile",
        )


def _verify_store_shared(op: ir.Operation) -> None:
    store = ops.StoreShared(op)
    tile, dst, stage = store.tile, store.dst, store.stage
    shape, element = _verify_acc(op, tile.type)
    stages, *stage_tile = _verify_shared_buffer(op, dst.type, "destination")
    _verify_stage(op, stage, stages)
    _verify_tile_element(op, element, dst)
    _verify_stage_block(op, shape, stage_tile, store.row, store.col)


def _verify_load_shared(op: ir.Operation) -> None:
    load = ops.LoadShared(op)
    stages, *stage_tile = _verify_shared_buffer(op, load.src.type, "source")
    _verify_stage(op, load.stage, stages)
    _verify_loaded_element(op, load.src)
    # A row vector is a stage row read down the tile's rows.
    shape = _verify_f32_tile(op, load.result, "result", row_vector=load.transpose)
    _verify_stage_block(op, shape, stage_tile, load.row, load.col, load.transpose)


def _verify_acc(
    op: ir.Operation, type_: ir.Type, row_vector: bool = False
) -> tuple[tuple[int, ...], str]:
    """(shape, element) of a register tile type that keeps the WGMMA rules,
    or with `row_vector` (register math) also of an f32 row vector [M, 1]."""
    parsed = parse_acc_type(type_)
    if parsed is None:  # IRDL checks only that the shape is some dense array
        _fail(
            op, f"register tile type must be !wsc.acc<array<i64: rows, cols>, element>, got {type_}"
        )
    shape, element = parsed
    if len(shape) != 2:
        _fail(op, f"register tile must be rank 2, got shape {list(shape)}")
    if shape[0] % WGMMA_M or shape[0] < WGMMA_M:
        _fail(
            op, f"register tile rows must be a multiple of {WGMMA_M} (the WGMMA M), got {shape[0]}"
        )
    if shape[1] == 1:
        if not (row_vector and element == "f32"):
            _fail(
                op,
                f"a row vector [{shape[0]}, 1] ({element}) serves register math alone, in f32: "
                f"'{op.name}' takes tiles of a multiple of {WGMMA_N_STEP} columns",
            )
    elif shape[1] % WGMMA_N_STEP or not WGMMA_N_STEP <= shape[1] <= WGMMA_N_MAX:
        _fail(
            op,
            f"register tile columns must be a multiple of {WGMMA_N_STEP} in "
            f"[{WGMMA_N_STEP}, {WGMMA_N_MAX}] (the WGMMA N), got {shape[1]}",
        )
    if shape[0] * shape[1] > REGISTER_FILE:
        _fail(
            op,
            f"register tile {shape[0]}x{shape[1]} has {shape[0] * shape[1]} elements, "
            f"more than the {REGISTER_FILE} 32-bit registers of an SM",
        )
    if element not in RESULT_DTYPES:
        _fail(op, f"register tile element type must be f32, f16 or bf16, got {element}")
    return shape, element


def _verify_fenced(op: ir.Operation) -> None:
    """A WGMMA group opens with a wsc.wgmma_fence: without it the PTX has no
    wgmma.fence, and WGMMA may read accumulator registers before earlier
    writes to them (undefined behaviour)."""
    block_ops = [other.operation for other in op.operation.block.operations]
    for earlier in reversed(block_ops[: block_ops.index(op.operation)]):
        if earlier.name == "wsc.wgmma_fence":
            return
        if earlier.name == "wsc.wgmma_commit_group":
            break
    _fail(
        op,
        "needs a wsc.wgmma_fence before it in its block (after the previous "
        "wsc.wgmma_commit_group): WGMMA reads its accumulator asynchronously, "
        "and the fence orders the register writes before it",
    )


def _verify_wgmma(op: ir.Operation) -> None:
    wgmma = ops.Wgmma(op)
    a, b, stage, acc = wgmma.a, wgmma.b, wgmma.stage, wgmma.acc
    a_shape = _verify_shared_buffer(op, a.type, "A", OPERAND_DTYPES)
    b_shape = _verify_shared_buffer(op, b.type, "B", OPERAND_DTYPES)
    (m, n), element = _verify_acc(op, acc.type)
    input_element = str(ir.MemRefType(a.type).element_type)
    if element != "f32" and not (element == "f16" == input_element):
        _fail(
            op,
            f"accumulator must be f32 (or f16 for f16 operands), got {element} for "
            f"{input_element} operands",
        )
    a_stage = wgmma.a_stage
    if a_stage is None and a_shape[0] != b_shape[0]:
        _fail(op, f"A and B rings have {a_shape[0]} and {b_shape[0]} stages")
    if a_stage is not None and not 0 <= a_stage < a_shape[0]:
        _fail(op, f"a_stage {a_stage} is outside A's {a_shape[0]} stages")
    _verify_stage(op, stage, b_shape[0])
    if str(ir.MemRefType(a.type).element_type) != str(ir.MemRefType(b.type).element_type):
        _fail(op, "A and B element types differ")
    a_row = wgmma.a_row
    # A's stage tile is [M, K], or [K, M] when transposed.
    a_m, block_k = (a_shape[2], a_shape[1]) if wgmma.a_transposed else (a_shape[1], a_shape[2])
    step = wgmma_k(input_element)
    if block_k % step:
        _fail(op, f"K tile {block_k} is not a multiple of {step} (the WGMMA K of {input_element})")
    if input_element not in HALF_DTYPES and (wgmma.a_transposed or wgmma.b_layout != "nk"):
        _fail(
            op,
            f"WGMMA reads {input_element} operands K-major only: A as [M, K] and B as "
            f'[N, K] (b_layout = "nk"), not transposed',
        )
    if a_row < 0 or a_row % WGMMA_M or a_row + m > a_m:
        side = "column" if wgmma.a_transposed else "row"
        _fail(
            op,
            f"{side}s [{a_row}, {a_row + m}) of A are outside its {a_m}-{side} tile "
            f"or not {WGMMA_M}-aligned",
        )
    _verify_b_stage(op, b_shape, wgmma.b_layout, n, block_k)
    _verify_warpgroup_issuer(op)


def _verify_wgmma_register_a(op: ir.Operation) -> None:
    wgmma = ops.WgmmaRegisterA(op)
    (a_m, block_k), a_element = _verify_acc(op, wgmma.a.type)
    b_shape = _verify_shared_buffer(op, wgmma.b.type, "B", OPERAND_DTYPES)
    (m, n), element = _verify_acc(op, wgmma.acc.type)
    b_element = str(ir.MemRefType(wgmma.b.type).element_type)
    if a_element not in HALF_DTYPES or a_element != b_element:
        _fail(
            op,
            f"A (registers) and B must be both f16 or both bf16, got {a_element} and {b_element}",
        )
    if element != "f32":
        _fail(op, f"accumulator must be f32, got {element}")
    if a_m != m:
        _fail(op, f"A has {a_m} rows, the accumulator {m}")
    step = wgmma_k(a_element)
    if block_k % step:
        _fail(op, f"A's {block_k} columns (K) are not a multiple of {step} (the WGMMA K)")
    _verify_stage(op, wgmma.stage, b_shape[0])
    _verify_b_stage(op, b_shape, wgmma.b_layout, n, block_k)
    _verify_warpgroup_issuer(op)


def _verify_b_stage(
    op: ir.Operation, b_shape: list[int], layout: str, n: int, block_k: int
) -> None:
    """B's stage tile is [N, K] ("nk") or [K, N] ("kn") of the product; a
    "kn" tile may be wider than N (its rows padded to whole swizzle atoms:
    WGMMA reads the first N columns)."""
    b_n, b_k = (b_shape[1], b_shape[2]) if layout == "nk" else (b_shape[2], b_shape[1])
    if b_k != block_k or b_n < n or (b_n != n and layout == "nk"):
        _fail(
            op,
            f"B stage tile {b_shape[1]}x{b_shape[2]} ({layout}) does not match N={n}, K={block_k}"
            + (
                " (a kn tile may be wider than N, not narrower)"
                if layout == "kn" and b_n < n
                else ""
            ),
        )


def _executing_threads(op: ir.Operation) -> tuple[int, int, ir.Operation | None] | None:
    """(first thread, threads, role op) of the threads that run `op`: its
    role's, or the whole block's (role op None); None outside a kernel."""
    role_op = enclosing_role(op)
    if role_op is not None:
        role = ops.Role(role_op)
        return role.thread_begin, role.num_threads, role_op
    kernel = enclosing_kernel(op)
    return (0, kernel_threads(kernel), None) if kernel is not None else None


def _fail_threads(
    op: ir.Operation, role_op: ir.Operation | None, role: str, block: str
) -> NoReturn:
    """Fail `op` for the threads that run it: with `role` and a note at its
    role, or with `block` where the whole block runs it."""
    if role_op is not None:
        raise PassError(
            op.location, f"'{op.name}' op {role}", notes=[(role_op.location, "role defined here")]
        )
    _fail(op, block)


def _verify_warpgroup_issuer(op: ir.Operation) -> None:
    """A WGMMA runs in one warpgroup, after a wsc.wgmma_fence."""
    threads = _executing_threads(op)
    if threads is not None:
        begin, count, role_op = threads
        if begin % WARPGROUP_SIZE or count != WARPGROUP_SIZE:
            _fail_threads(
                op,
                role_op,
                f"must run in one warpgroup-aligned role (4 warps starting at a multiple of "
                f"{WARPGROUP_SIZE} threads); its role covers threads [{begin}, {begin + count})",
                f"outside a role needs a block of exactly one warpgroup ({WARPGROUP_SIZE} threads)",
            )
    _verify_fenced(op)


def verify_wsc(module: ir.Operation) -> None:
    """Raise a PassError at the first wsc rule `module` breaks."""
    for kernel in kernels(module):
        _verify_kernel(kernel)
        _verify_roles_disjoint(kernel)
        _verify_rings_agree(kernel)
    for op in walk(module):
        if op.name.startswith("wsc."):
            _verify_optional_attrs(op)
            rule = _RULES.get(op.name)
            if rule is not None:
                rule(op)
            if any(parse_acc_type(value.type) is not None for value in [*op.results, *op.operands]):
                _verify_register_tile_threads(op)


def _verify_register_tile_threads(op: ir.Operation) -> None:
    """A register tile is laid out over one warpgroup's four warps (each
    holding its own rows), so the threads that make one are whole
    warpgroups: with fewer, the rows of the missing warps are never computed."""
    verb = "makes" if any(parse_acc_type(r.type) is not None for r in op.results) else "reads"
    if _enclosing_elect(op) is not None:
        _fail(
            op,
            f"{verb} a register tile under a wsc.elect: the one thread elected holds "
            "only its own fragment, and a register tile is held by whole warpgroups; move it "
            "out of the single-thread region",
        )
    threads = _executing_threads(op)
    if threads is not None:
        begin, count, role_op = threads
        if begin % WARPGROUP_SIZE or count % WARPGROUP_SIZE:
            _fail_threads(
                op,
                role_op,
                f"{verb} a register tile, which whole warpgroups hold; its role covers threads "
                f"[{begin}, {begin + count}), not a multiple of {WARPGROUP_SIZE} threads "
                f"starting at one",
                f"{verb} a register tile, which whole warpgroups hold; outside a role it needs a "
                f"block of a multiple of {WARPGROUP_SIZE} threads, this one has {count}",
            )


#: The rule of each wsc op beyond what IRDL checks (ops not named need none).
_RULES: dict[str, Callable[[ir.Operation], object]] = {
    "wsc.role": _verify_role,
    "wsc.alloc_shared": _verify_alloc_shared,
    "wsc.mbarrier_alloc": _verify_mbarrier_alloc,
    "wsc.mbarrier_arrive": _verify_mbarrier_arrive,
    "wsc.mbarrier_arrive_expect_tx": _verify_mbarrier_arrive_expect_tx,
    "wsc.mbarrier_wait": _verify_mbarrier_wait,
    "wsc.ring_advance": _verify_ring_advance,
    "wsc.tma_load": _verify_tma_load,
    "wsc.batch_matrix": _verify_batch_matrix,
    "wsc.cluster_rank": _verify_clustered,
    "wsc.cluster_sync": _verify_clustered,
    "wsc.tma_store": _verify_tma_store,
    "wsc.coalesced_store": _verify_coalesced_store,
    "wsc.tma_store_wait": _verify_tma_store_wait,
    "wsc.store_shared": _verify_store_shared,
    "wsc.wgmma": _verify_wgmma,
    "wsc.wgmma_register_a": _verify_wgmma_register_a,
    "wsc.wgmma_wait_group": _verify_wgmma_wait_group,
    "wsc.acc_alloc": _verify_acc_alloc,
    "wsc.cast": _verify_cast,
    "wsc.store": _verify_store,
    "wsc.partial_store": _verify_partial_store,
    "wsc.partial_arrive": _verify_partial_arrive,
    "wsc.partial_reduce": _verify_partial_reduce,
    "wsc.tile_binary": _verify_tile_binary,
    "wsc.tile_unary": _verify_tile_unary,
    "wsc.tile_fill": _verify_tile_fill,
    "wsc.tile_splat": _verify_tile_splat,
    "wsc.tile_assign": _verify_tile_assign,
    "wsc.tile_select": _verify_tile_select,
    "wsc.tile_iota": _verify_tile_iota,
    "wsc.tile_row_reduce": _verify_tile_row_reduce,
    "wsc.tile_col_reduce": _verify_tile_col_reduce,
    "wsc.load_shared": _verify_load_shared,
    "wsc.tile_load": _verify_tile_load,
    "wsc.tile_broadcast": _verify_tile_broadcast,
}
