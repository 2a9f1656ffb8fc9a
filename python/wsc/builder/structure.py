"""structure(): the canonical text of a module that two kernels share exactly
when they are structurally the same (behind "V3-auto is V3")."""

from __future__ import annotations

from mlir import ir

#: Ops whose position in a block does not matter (no side effects, no
#: ordering): compared as the expressions their users read.
_EXPRESSION_DIALECTS = ("arith.",)
_EXPRESSION_OPS = (
    "memref.dim",
    "gpu.block_id",
    "gpu.thread_id",
    "wsc.elect",
    "wsc.role",
    "wsc.ring_advance",
)
_COMMUTATIVE = (
    "arith.addi",
    "arith.muli",
    "arith.andi",
    "arith.ori",
    "arith.xori",
    "arith.maxui",
    "arith.minui",
)


def _is_expression(op: ir.Operation) -> bool:
    return op.name.startswith(_EXPRESSION_DIALECTS) or op.name in _EXPRESSION_OPS


def _attributes(op: ir.Operation) -> str:
    named = sorted(
        (op.attributes[i].name, str(op.attributes[i].attr)) for i in range(len(op.attributes))
    )
    return "{" + ", ".join(f"{name}={value}" for name, value in named) + "}" if named else ""


def structure(module: ir.Module | ir.Operation) -> str:
    """A canonical text of a module that two kernels share exactly when they are
    structurally the same: the same ops with the same attributes in the same
    order, nested the same way, reading the same values. Ops without side
    effects (arith, memref.dim, block ids, wsc.role/elect/ring_advance) are
    written as expressions inside the operands that read them, so where they
    sit, how they are shared and whether unused ones linger does not matter;
    SSA names and locations do not either."""
    names: dict = {}
    lines: list[str] = []

    def value_text(value: ir.Value) -> str:
        if value in names:
            return names[value]
        owner = value.owner
        if isinstance(owner, ir.Block):
            return f"<unbound block argument {value.arg_number}>"
        op = owner.operation
        if not _is_expression(op):
            return f"<result of {op.name} defined later>"
        operands = [value_text(operand) for operand in op.operands]
        if op.name in _COMMUTATIVE:
            operands.sort()
        if op.name == "arith.constant":
            return f"{op.attributes['value']}"
        result = f"#{list(op.results).index(value)}" if len(op.results) > 1 else ""
        return f"{op.name}{_attributes(op)}({', '.join(operands)}){result}"

    def emit_block(block: ir.Block, depth: int, path: str) -> None:
        for index, argument in enumerate(block.arguments):
            names[argument] = f"^{path}.{index}"
        for op in block.operations:
            op = op.operation
            if _is_expression(op):
                continue
            operands = ", ".join(value_text(operand) for operand in op.operands)
            label = f"%{len(lines)}"
            result_types = ", ".join(str(result.type) for result in op.results)
            for number, result in enumerate(op.results):
                names[result] = f"{label}#{number}" if len(op.results) > 1 else label
            lines.append(
                f"{'  ' * depth}{label} = {op.name}{_attributes(op)}({operands})"
                + (f" -> {result_types}" if result_types else "")
            )
            for r, region in enumerate(op.regions):
                for b, inner in enumerate(region.blocks):
                    emit_block(inner, depth + 1, f"{label}.{r}.{b}")

    top = module.operation if isinstance(module, ir.Module) else module
    for region in top.regions:
        for block in region.blocks:
            emit_block(block, 0, "top")
    return "\n".join(lines)
