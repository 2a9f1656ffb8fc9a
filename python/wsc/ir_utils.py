"""Small queries over IR shared by the verifier and the passes."""

from __future__ import annotations

from collections.abc import Iterator

from mlir import ir

# Registers the views (`op.opview`) that name the operands of upstream ops
# (scf.for's lowerBound and initArgs, scf.if's condition, memref.dim's
# source, arith.cmpi's lhs, ...): the wsc modules read them by name.
from mlir.dialects import arith, memref, scf  # noqa: F401

KERNEL_THREADS_ATTR = "wsc.num_threads"
#: Blocks of the kernel each SM runs at once (ptxas fits the registers to it).
BLOCKS_PER_SM_ATTR = "wsc.blocks_per_sm"
#: A kernel attribute: the CTAs of a cluster (along x), 1 when absent.
CLUSTER_SIZE_ATTR = "wsc.cluster_size"


def walk(op: ir.Operation) -> Iterator[ir.Operation]:
    """`op`'s nested operations in pre-order (not `op` itself)."""
    for region in op.regions:
        for block in region.blocks:
            for child in block.operations:
                child = child.operation
                yield child
                yield from walk(child)


def int_attr(op: ir.Operation, name: str) -> int | None:
    """The value of integer attribute `name`, or None when absent."""
    if name not in op.attributes:
        return None
    attr = op.attributes[name]
    if isinstance(attr, ir.BoolAttr):
        return int(attr.value)
    return ir.IntegerAttr(attr).value


def defining_op(value: ir.Value) -> ir.Operation | None:
    owner = value.owner
    return (
        owner.operation if isinstance(owner, ir.OpView) or isinstance(owner, ir.Operation) else None
    )


def constant_int(value: ir.Value) -> int | None:
    """The integer a value is defined as by arith.constant, else None."""
    op = defining_op(value)
    if op is None or op.name != "arith.constant":
        return None
    attr = op.attributes["value"]
    if isinstance(attr, ir.BoolAttr):
        return int(attr.value)
    if isinstance(attr, ir.IntegerAttr):
        return attr.value
    return None


def launch_axis(op: ir.Operation) -> int:
    """0, 1 or 2: the axis (x, y, z) of a gpu.block_id or gpu.grid_dim."""
    return ("#gpu<dim x>", "#gpu<dim y>", "#gpu<dim z>").index(str(op.attributes["dimension"]))


#: Index sources that are never negative: block and thread indices and
#: counts, a block's rank in its cluster, sizes.
_NON_NEGATIVE_SOURCES = (
    "gpu.block_id",
    "gpu.thread_id",
    "gpu.grid_dim",
    "gpu.block_dim",
    "wsc.cluster_rank",
    "memref.dim",
)
#: Integer ops whose result is non-negative where all their operands are.
_NON_NEGATIVE_MAPS = (
    "arith.addi",
    "arith.muli",
    "arith.divui",
    "arith.ceildivui",
    "arith.divsi",
    "arith.remsi",
    "arith.ceildivsi",
    "arith.floordivsi",
    "arith.maxui",
    "arith.minsi",
    "arith.index_cast",
    "arith.index_castui",
    "arith.extui",
    "arith.select",
)


def non_negative(value: ir.Value, depth: int = 32) -> bool:
    """Whether an integer value is provably >= 0: a constant, a block or
    thread index, a size, a loop index from a non-negative start, a
    difference that does not wrap (arith.subi overflow<nuw>), an unsigned
    min or remainder bounded by one of those, or sums, products, quotients,
    min/max and selects of those. False where unknown (another difference,
    a function argument)."""
    if depth == 0:
        return False
    number = constant_int(value)
    if number is not None:
        return number >= 0
    op = defining_op(value)
    if op is None:
        # An scf.for's induction variable (its block's first argument).
        parent = ir.BlockArgument(value).owner.owner
        parent = parent.operation if isinstance(parent, ir.OpView) else parent
        return (
            parent is not None
            and parent.name == "scf.for"
            and ir.BlockArgument(value).arg_number == 0
            and non_negative(parent.operands[0], depth - 1)
        )
    if op.name in _NON_NEGATIVE_SOURCES:
        return True
    if op.name == "arith.subi":
        # a - b with no unsigned wrap: a >= b.
        flags = op.attributes["overflowFlags"] if "overflowFlags" in op.attributes else None
        return flags is not None and "nuw" in str(flags)
    if op.name in ("arith.minui", "arith.maxsi"):
        # At most a non-negative operand (unsigned), or at least one (signed).
        return any(non_negative(operand, depth - 1) for operand in op.operands)
    if op.name == "arith.remui":
        # Below its divisor (unsigned).
        return non_negative(op.operands[1], depth - 1)
    if op.name in _NON_NEGATIVE_MAPS:
        operands = list(op.operands)[1:] if op.name == "arith.select" else op.operands
        return all(non_negative(operand, depth - 1) for operand in operands)
    return False


def kernels(module: ir.Operation) -> list[ir.Operation]:
    """The func.func ops of `module` that carry wsc.num_threads."""
    return [
        op for op in walk(module) if op.name == "func.func" and KERNEL_THREADS_ATTR in op.attributes
    ]


def parent_op(op: ir.Operation) -> ir.Operation | None:
    parent = op.parent
    return parent.operation if parent is not None else None


def enclosing(op: ir.Operation, predicate) -> ir.Operation | None:
    """The innermost ancestor of `op` that satisfies predicate."""
    current = parent_op(op)
    while current is not None:
        if predicate(current):
            return current
        current = parent_op(current)
    return None


def role_of_if(if_op: ir.Operation) -> ir.Operation | None:
    """The wsc.role op whose predicate guards scf.if `if_op`, if any."""
    if if_op.name != "scf.if":
        return None
    condition = defining_op(if_op.opview.condition)
    return condition if condition is not None and condition.name == "wsc.role" else None


def enclosing_role(op: ir.Operation) -> ir.Operation | None:
    """The wsc.role whose scf.if `op` is nested in, if any."""
    guard = enclosing(op, lambda p: role_of_if(p) is not None)
    return role_of_if(guard) if guard is not None else None


def enclosing_kernel(op: ir.Operation) -> ir.Operation | None:
    return enclosing(op, lambda p: p.name == "func.func" and KERNEL_THREADS_ATTR in p.attributes)


def kernel_threads(kernel: ir.Operation) -> int:
    """The threads per block of `kernel` (its wsc.num_threads)."""
    threads = int_attr(kernel, KERNEL_THREADS_ATTR)
    if threads is None:
        raise ValueError(f"{kernel.name} has no '{KERNEL_THREADS_ATTR}': not a kernel")
    return threads


def cluster_size(kernel: ir.Operation) -> int:
    """The CTAs per cluster of `kernel` (its wsc.cluster_size, 1 when absent)."""
    ctas = int_attr(kernel, CLUSTER_SIZE_ATTR)
    return 1 if ctas is None else ctas


def blocks_per_sm(kernel: ir.Operation) -> int:
    """The blocks of `kernel` an SM runs at once (its wsc.blocks_per_sm, 1 when absent)."""
    blocks = int_attr(kernel, BLOCKS_PER_SM_ATTR)
    return 1 if blocks is None else blocks


def memref_shape(type_: ir.Type) -> list[int] | None:
    if not isinstance(type_, ir.MemRefType):
        return None
    return [d if not ir.ShapedType.is_dynamic_size(d) else -1 for d in ir.MemRefType(type_).shape]


def memref_space(type_: ir.Type) -> int | None:
    space = ir.MemRefType(type_).memory_space
    if space is None:
        return 0
    if isinstance(space, ir.IntegerAttr):
        return space.value
    return None


def element_bytes(type_: ir.Type) -> int:
    return ir.MemRefType(type_).element_type.width // 8


def clone_remapped(op: ir.Operation, mapping: dict) -> ir.Operation:
    """Clone `op` at the current insertion point, replacing every operand (its
    own and its nested ops') found in `mapping`; record its results in `mapping`
    so later clones use them."""
    clone = op.clone()
    for target in (clone, *walk(clone)):
        for index, operand in enumerate(target.operands):
            if operand in mapping:
                target.operands[index] = mapping[operand]
    for old, new in zip(op.results, clone.results, strict=True):
        mapping[old] = new
    return clone


def use_owner(use) -> ir.Operation:
    """The operation a use of a value belongs to."""
    owner = use.owner
    return owner.operation if hasattr(owner, "operation") else owner


def operands_deep(op: ir.Operation) -> list[ir.Value]:
    """The operands of `op` and of every op nested in it."""
    values = list(op.operands)
    for nested in walk(op):
        values.extend(nested.operands)
    return values


def index_constant(value: int) -> ir.Value:
    return arith.ConstantOp(ir.IndexType.get(), value).result


def bool_constant(value: bool) -> ir.Value:
    return arith.ConstantOp(ir.IntegerType.get_signless(1), int(value)).result


def set_int_attr(op: ir.Operation, name: str, value: int) -> None:
    op.attributes[name] = ir.IntegerAttr.get(ir.IntegerType.get_signless(32), value)
