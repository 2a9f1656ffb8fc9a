"""The wsc dialect at run time: a context with the IRDL definition loaded, the
dialect's types, and one Python builder per op.

IRDL ops have no custom assembly and no generated Python classes, so each
builder creates the op in generic form at the current insertion point and
location (`with ir.InsertionPoint(...), ir.Location...:`), exactly as
`dialects/wsc.irdl.mlir` declares it.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

from mlir import ir
from mlir.dialects import irdl

from wsc import ops
from wsc.dialects import IRDL_PATH

_IRDL_TEXT = IRDL_PATH.read_text()

#: The shared-memory address space of ring buffers (NVVM's).
SHARED_MEMORY_SPACE = 3

#: The phase a producer starts with on a fresh barrier: a wait for parity 1
#: returns at once, so every stage starts out empty.
PRODUCER_INITIAL_PHASE = True
#: The phase a consumer starts with: a wait for parity 0 blocks until the
#: first phase completes, i.e. until the stage's first copy has landed.
CONSUMER_INITIAL_PHASE = False


def load_dialect(context: ir.Context) -> None:
    """Load the wsc IRDL definition into `context`."""
    with context, ir.Location.unknown():
        irdl.load_dialects(ir.Module.parse(_IRDL_TEXT))


def make_context() -> ir.Context:
    """A new context with the upstream dialects and wsc loaded; unregistered
    dialects are rejected, so a misspelt op is an error, not an opaque op."""
    context = ir.Context()
    context.allow_unregistered_dialects = False
    load_dialect(context)
    return context


#: The ops of the dialect, as `wsc.<name>`.
OP_NAMES = frozenset(ops.DEFINITIONS)
_OP_NAME_TOKEN = re.compile(r"(?<![\w.!#$@%\"-])wsc\.\w+")


def _custom_form_op(text: str) -> tuple[int, int, str] | None:
    """(line, column, name) of the first wsc op written in custom form, i.e.
    without the quotes of the generic form (comments and strings skipped)."""
    for number, line in enumerate(text.splitlines(), start=1):
        code, in_string, i = [], False, 0
        while i < len(line):
            ch = line[i]
            if in_string:
                code.append(" ")
                if ch == "\\":
                    code.append(" ")
                    i += 1
                elif ch == '"':
                    in_string = False
            elif ch == '"':
                in_string = True
                code.append(ch)
            elif line.startswith("//", i):
                break
            else:
                code.append(ch)
            i += 1
        for match in _OP_NAME_TOKEN.finditer("".join(code)):
            if match.group() in OP_NAMES:
                return number, match.start() + 1, match.group()
    return None


#: A generic op name that is a dialect prefix and nothing after it: `"wsc."(`.
_NAMELESS_OP = re.compile(r'"([A-Za-z_][\w$]*)\."\s*\(')


def _nameless_op(text: str) -> tuple[int, int, str] | None:
    """(line, column, dialect) of the first generic op named only by its
    dialect's prefix, outside comments."""
    for number, line in enumerate(text.splitlines(), start=1):
        match = _NAMELESS_OP.search(line.split("//", 1)[0])
        if match is not None:
            return number, match.start() + 1, match.group(1)
    return None


def parse_module(text: str, engine=None) -> ir.Module:
    """Parse and verify `text` as a module in the current context; raise
    wsc.diagnostics.ParseError, with the errors as located diagnostics (also
    recorded in `engine`, a DiagnosticEngine, when given), if it fails.

    Two faults of the MLIR 22 bindings are worked around here:
      * after a wsc type (an IRDL type such as `!wsc.mbarriers`), a token the
        lexer rejects (an unterminated string, a bare `@`) is reported as an
        error, yet the parse "succeeds" without the rest of the input; the
        bindings then abort the process (an assertion that every captured
        error was raised). Error diagnostics are therefore sent to a handler
        instead of being captured, and any error fails the parse;
      * IRDL ops have no custom assembly, and one written in custom form
        (`wsc.sync` instead of `"wsc.sync"() : () -> ()`) fails to parse
        without any diagnostic; the error is then located at that op."""
    from wsc.diagnostics import DiagnosticEngine, ParseError, PassError

    engine = engine if engine is not None else DiagnosticEngine("-")
    first = len(engine.diagnostics)
    # MLIR aborts the process on such a name (it creates the op before it
    # checks that the dialect has it), so it is refused before parsing.
    nameless = _nameless_op(text)
    if nameless is not None:
        line, column, prefix = nameless
        engine.add_pass_error(
            PassError(
                ir.Location.file("-", line, column),
                f"op name '{prefix}.' has nothing after the dialect prefix",
            )
        )
        raise ParseError(engine.diagnostics[first:])
    context = ir.Context.current
    captured = context.emit_error_diagnostics
    context.emit_error_diagnostics = True
    handler = context.attach_diagnostic_handler(engine.handler)
    try:
        module = ir.Module.parse(text)
    except ir.MLIRError:
        module = None
    finally:
        handler.detach()
        context.emit_error_diagnostics = captured
    # The first fault above reports its error twice: keep one of each.
    unique = []
    for diagnostic in engine.diagnostics[first:]:
        if diagnostic not in unique:
            unique.append(diagnostic)
    for diagnostic in unique:
        diagnostic.message = _readable(diagnostic.message)
    engine.diagnostics[first:] = unique
    errors = [d for d in unique if d.severity == "error"]
    if module is not None and not errors:
        return module
    if not errors:
        found = _custom_form_op(text)
        if found is None:
            engine.add_error("MLIR could not parse the input and gave no reason")
        else:
            line, column, name = found
            engine.add_pass_error(
                PassError(
                    ir.Location.file("-", line, column),
                    f"custom op '{name}' has no custom assembly format; write it in generic "
                    f'form: "{name}"(operands) {{attributes}} : (operand types) -> '
                    f"(result types)",
                )
            )
    raise ParseError(engine.diagnostics[first:])


_UNSATISFIED = re.compile(r"'(wsc\.\w+)' op (.+) does not satisfy the constraint$")


def _readable(message: str) -> str:
    """IRDL's verifier errors, as an author can act on them: its own "op" not
    doubled after MLIR's, and a string attribute's allowed values named."""
    message = re.sub(r"^('[\w.]+' op) op ", r"\1 ", message)
    unsatisfied = _UNSATISFIED.match(message)
    if unsatisfied is None or unsatisfied.group(1) not in ops.DEFINITIONS:
        return message
    definition = ops.DEFINITIONS[unsatisfied.group(1)]
    value = unsatisfied.group(2).strip("'")
    refusing = [name for name, values in definition.choices.items() if value not in values]
    if len(refusing) != 1:
        return message
    (name,) = refusing
    allowed = ", ".join(definition.choices[name])
    return f"'{definition.name}' op attribute '{name}' must be one of {allowed}, got {value}"


# Types ----------------------------------------------------------------------


def mbarriers_type() -> ir.Type:
    return ir.Type.parse("!wsc.mbarriers")


def acc_type(shape: Sequence[int], element: ir.Type | str) -> ir.Type:
    return ir.Type.parse(f"!wsc.acc<array<i64: {', '.join(map(str, shape))}>, {element}>")


_ACC_RE = re.compile(r"^!wsc\.acc<array<i64(?::\s*([-\d,\s]*))?>,\s*(.+)>$")


def parse_acc_type(type_: ir.Type) -> tuple[tuple[int, ...], str] | None:
    """(shape, element type name) of a `!wsc.acc` type, or None for other types.

    IRDL types expose no parameter accessors to Python, hence the text."""
    match = _ACC_RE.match(str(type_))
    if not match:
        return None
    dims = tuple(int(d) for d in (match.group(1) or "").split(",") if d.strip())
    return dims, match.group(2).strip()


def acc_type_parameters(type_: ir.Type) -> tuple[tuple[int, ...], str]:
    """(shape, element type name) of a type that must be `!wsc.acc`, as every
    register tile of verified IR is."""
    parsed = parse_acc_type(type_)
    if parsed is None:
        raise ValueError(f"{type_} is not a !wsc.acc type")
    return parsed


def is_mbarriers(type_: ir.Type) -> bool:
    return str(type_) == "!wsc.mbarriers"


def shared_buffer_type(num_stages: int, rows: int, cols: int, element: str) -> ir.Type:
    return ir.Type.parse(f"memref<{num_stages}x{rows}x{cols}x{element}, {SHARED_MEMORY_SPACE}>")


# Builders -------------------------------------------------------------------


def _i32(value: int) -> ir.Attribute:
    return ir.IntegerAttr.get(ir.IntegerType.get_signless(32), int(value))


def _create(name: str, operands=(), results=(), attributes=None) -> ir.Operation:
    return ir.Operation.create(
        name, results=list(results), operands=list(operands), attributes=attributes or {}
    )


def role(
    role_name: str, thread_begin: int, num_threads: int, max_registers: int | None = None
) -> ir.Value:
    """`wsc.role`: an i1 that is true in threads [thread_begin, thread_begin + num_threads)."""
    attributes = {
        "role": ir.StringAttr.get(role_name),
        "thread_begin": _i32(thread_begin),
        "num_threads": _i32(num_threads),
    }
    if max_registers is not None:
        attributes["max_registers"] = _i32(max_registers)
    return _create(
        "wsc.role", results=[ir.IntegerType.get_signless(1)], attributes=attributes
    ).result


def elect() -> ir.Value:
    """`wsc.elect`: true in one thread of the enclosing role."""
    return _create("wsc.elect", results=[ir.IntegerType.get_signless(1)]).result


def alloc_shared(type_: ir.Type) -> ir.Value:
    """`wsc.alloc_shared`: a ring buffer in shared memory."""
    return _create("wsc.alloc_shared", results=[type_]).result


def mbarrier_alloc(arrival_count: int, num_barriers: int) -> ir.Value:
    """`wsc.mbarrier_alloc`: num_barriers mbarriers expecting arrival_count arrivals."""
    return _create(
        "wsc.mbarrier_alloc",
        results=[mbarriers_type()],
        attributes={"arrival_count": _i32(arrival_count), "num_barriers": _i32(num_barriers)},
    ).result


def _unit_attrs(**flags: bool) -> dict[str, ir.Attribute]:
    """The unit attributes named by the keywords that are true."""
    return {name: ir.UnitAttr.get() for name, on in flags.items() if on}


def mbarrier_arrive(
    barriers: ir.Value, stage: ir.Value, per_warp: bool = False, every_cta: bool = False
) -> ir.Operation:
    return _create(
        "wsc.mbarrier_arrive",
        operands=[barriers, stage],
        attributes=_unit_attrs(per_warp=per_warp, every_cta=every_cta),
    )


def mbarrier_arrive_expect_tx(barriers: ir.Value, stage: ir.Value, tx_bytes: int) -> ir.Operation:
    return _create(
        "wsc.mbarrier_arrive_expect_tx",
        operands=[barriers, stage],
        attributes={"tx_bytes": _i32(tx_bytes)},
    )


def mbarrier_wait(barriers: ir.Value, stage: ir.Value, phase: ir.Value) -> ir.Operation:
    return _create("wsc.mbarrier_wait", operands=[barriers, stage, phase])


def ring_advance(stage: ir.Value, phase: ir.Value, num_stages: int) -> tuple[ir.Value, ir.Value]:
    """`wsc.ring_advance`: (next stage, next phase) in a ring of num_stages."""
    advance = ops.RingAdvance(
        _create(
            "wsc.ring_advance",
            operands=[stage, phase],
            results=[ir.IndexType.get(), ir.IntegerType.get_signless(1)],
            attributes={"num_stages": _i32(num_stages)},
        )
    )
    return advance.next_stage, advance.next_phase


def tma_load(
    src: ir.Value,
    row: ir.Value,
    col: ir.Value,
    dst: ir.Value,
    stage: ir.Value,
    barriers: ir.Value,
    multicast: bool = False,
) -> ir.Operation:
    return _create(
        "wsc.tma_load",
        operands=[src, row, col, dst, stage, barriers],
        attributes=_unit_attrs(multicast=multicast),
    )


def batch_matrix(batch: ir.Value, index: ir.Value) -> ir.Value:
    """`wsc.batch_matrix`: matrix `index` of the rank-3 global tensor `batch`."""
    batch_type = ir.MemRefType(batch.type)
    matrix_type = ir.MemRefType.get(list(batch_type.shape[1:]), batch_type.element_type)
    return _create("wsc.batch_matrix", operands=[batch, index], results=[matrix_type]).result


def cluster_rank() -> ir.Value:
    return _create("wsc.cluster_rank", results=[ir.IndexType.get()]).result


def cluster_sync() -> ir.Operation:
    return _create("wsc.cluster_sync")


def tma_store(
    src: ir.Value, stage: ir.Value, dst: ir.Value, row: ir.Value, col: ir.Value
) -> ir.Operation:
    return _create("wsc.tma_store", operands=[src, stage, dst, row, col])


def coalesced_store(
    src: ir.Value, stage: ir.Value, dst: ir.Value, row: ir.Value, col: ir.Value
) -> ir.Operation:
    return _create("wsc.coalesced_store", operands=[src, stage, dst, row, col])


def tma_store_wait(pending: int) -> ir.Operation:
    return _create("wsc.tma_store_wait", attributes={"pending": _i32(pending)})


def fence_proxy_async() -> ir.Operation:
    return _create("wsc.fence_proxy_async")


def acc_alloc(type_: ir.Type) -> ir.Value:
    """`wsc.acc_alloc`: a zero-filled register tile."""
    return _create("wsc.acc_alloc", results=[type_]).result


def wgmma(
    a: ir.Value,
    b: ir.Value,
    stage: ir.Value,
    acc: ir.Value,
    a_row: int = 0,
    b_layout: str = "nk",
    a_transposed: bool = False,
    a_stage: int | None = None,
) -> ir.Operation:
    attributes = {"a_row": _i32(a_row), "b_layout": ir.StringAttr.get(b_layout)}
    if a_transposed:
        attributes["a_transposed"] = ir.UnitAttr.get()
    if a_stage is not None:
        attributes["a_stage"] = _i32(a_stage)
    return _create("wsc.wgmma", operands=[a, b, stage, acc], attributes=attributes)


def wgmma_register_a(
    a: ir.Value, b: ir.Value, stage: ir.Value, acc: ir.Value, b_layout: str = "nk"
) -> ir.Operation:
    """`wsc.wgmma_register_a`: acc += a (a register tile) * op(b[stage])."""
    return _create(
        "wsc.wgmma_register_a",
        operands=[a, b, stage, acc],
        attributes={"b_layout": ir.StringAttr.get(b_layout)},
    )


def wgmma_fence() -> ir.Operation:
    return _create("wsc.wgmma_fence")


def wgmma_commit_group() -> ir.Operation:
    return _create("wsc.wgmma_commit_group")


def wgmma_wait_group(pending: int) -> ir.Operation:
    return _create("wsc.wgmma_wait_group", attributes={"pending": _i32(pending)})


def sync() -> ir.Operation:
    return _create("wsc.sync")


def cast(src: ir.Value, element: str) -> ir.Value:
    shape, _ = acc_type_parameters(src.type)
    return _create("wsc.cast", operands=[src], results=[acc_type(shape, element)]).result


def _widest(*tiles: ir.Value) -> ir.Type:
    """The type of the tile with the most columns: that of an element-wise
    result, where row vectors [M, 1] are read broadcast along the rows."""
    return max((tile.type for tile in tiles), key=lambda type_: acc_type_parameters(type_)[0][1])


def _tile_of_kind(name: str, kind: str, result: ir.Type, *tiles: ir.Value) -> ir.Value:
    """Op `name` of `kind` on register tiles, with a result of type `result`."""
    return _create(
        name,
        operands=list(tiles),
        results=[result],
        attributes={"kind": ir.StringAttr.get(kind)},
    ).result


def tile_binary(kind: str, x: ir.Value, y: ir.Value) -> ir.Value:
    """`wsc.tile_binary`: x <kind> y, element by element (a row vector
    broadcast along the rows), of the wider operand's type."""
    return _tile_of_kind("wsc.tile_binary", kind, _widest(x, y), x, y)


def tile_unary(kind: str, x: ir.Value) -> ir.Value:
    """`wsc.tile_unary`: <kind>(x), element by element, of x's type."""
    return _tile_of_kind("wsc.tile_unary", kind, x.type, x)


def tile_select(
    predicate: str, lhs: ir.Value, rhs: ir.Value, on_true: ir.Value, on_false: ir.Value
) -> ir.Value:
    """`wsc.tile_select`: on_true where lhs <predicate> rhs, else on_false."""
    return _create(
        "wsc.tile_select",
        operands=[lhs, rhs, on_true, on_false],
        results=[_widest(lhs, rhs, on_true, on_false)],
        attributes={"predicate": ir.StringAttr.get(predicate)},
    ).result


def tile_iota(shape: Sequence[int], along: str, origin: ir.Value) -> ir.Value:
    """`wsc.tile_iota`: an f32 tile of `shape` whose elements are their row
    (or column) index, counted from `origin`."""
    return _create(
        "wsc.tile_iota",
        operands=[origin],
        results=[acc_type(shape, "f32")],
        attributes={"along": ir.StringAttr.get(along)},
    ).result


def tile_row_reduce(kind: str, x: ir.Value) -> ir.Value:
    """`wsc.tile_row_reduce`: the row vector [M, 1] of the <kind> of each row of x."""
    (rows, _), _ = acc_type_parameters(x.type)
    return _tile_of_kind("wsc.tile_row_reduce", kind, acc_type((rows, 1), "f32"), x)


def tile_assign(dst: ir.Value, src: ir.Value) -> ir.Operation:
    """`wsc.tile_assign`: dst (a wsc.acc_alloc's tile) takes src's elements."""
    return _create("wsc.tile_assign", operands=[dst, src])


def tile_splat(shape: Sequence[int], value: ir.Value) -> ir.Value:
    """`wsc.tile_splat`: an f32 register tile of `shape` with every element the
    f32 `value` (a scalar kernel argument)."""
    return _create("wsc.tile_splat", operands=[value], results=[acc_type(shape, "f32")]).result


def tile_fill(shape: Sequence[int], value: float) -> ir.Value:
    """`wsc.tile_fill`: an f32 register tile of `shape` with every element `value`."""
    return _create(
        "wsc.tile_fill",
        results=[acc_type(shape, "f32")],
        attributes={"value": ir.FloatAttr.get(ir.F32Type.get(), value)},
    ).result


def tile_col_reduce(kind: str, x: ir.Value, rows: int) -> ir.Value:
    """`wsc.tile_col_reduce`: the <kind> down each column of each group of
    `rows` rows of x, in every row of the group."""
    return _create(
        "wsc.tile_col_reduce",
        operands=[x],
        results=[x.type],
        attributes={"kind": ir.StringAttr.get(kind), "rows": _i32(rows)},
    ).result


def tile_load(
    src: ir.Value,
    row: ir.Value,
    col: ir.Value,
    shape: Sequence[int],
    transpose: bool = False,
    fill: float = 0.0,
) -> ir.Value:
    """`wsc.tile_load`: src's block at (row, col) as an f32 register tile of
    `shape`, `fill` outside src."""
    attributes = _unit_attrs(transpose=transpose)
    if fill != 0.0 or math.copysign(1.0, fill) < 0:
        attributes["fill"] = ir.FloatAttr.get(ir.F32Type.get(), fill)
    return _create(
        "wsc.tile_load",
        operands=[src, row, col],
        results=[acc_type(shape, "f32")],
        attributes=attributes,
    ).result


def tile_broadcast(src: ir.Value, offset: ir.Value, shape: Sequence[int], along: str) -> ir.Value:
    """`wsc.tile_broadcast`: the vector src[offset:] laid along the rows or
    columns of an f32 register tile of `shape`."""
    return _create(
        "wsc.tile_broadcast",
        operands=[src, offset],
        results=[acc_type(shape, "f32")],
        attributes={"along": ir.StringAttr.get(along)},
    ).result


def store(
    tile: ir.Value, dst: ir.Value, row: ir.Value, col: ir.Value, transpose: bool = False
) -> ir.Operation:
    return _create(
        "wsc.store", operands=[tile, dst, row, col], attributes=_unit_attrs(transpose=transpose)
    )


def _block_offsets(origin: tuple[int, int] | None) -> dict[str, ir.Attribute]:
    """The `row` and `col` attributes of a block of a stage tile at `origin`
    (none for the whole stage tile)."""
    if origin is None:
        return {}
    return {"row": _i32(origin[0]), "col": _i32(origin[1])}


def store_shared(
    tile: ir.Value, dst: ir.Value, stage: ir.Value, origin: tuple[int, int] | None = None
) -> ir.Operation:
    """`wsc.store_shared`: the tile into dst[stage], whole or at `origin`."""
    return _create(
        "wsc.store_shared", operands=[tile, dst, stage], attributes=_block_offsets(origin)
    )


def load_shared(
    src: ir.Value,
    stage: ir.Value,
    shape: Sequence[int],
    origin: tuple[int, int] | None = None,
    transpose: bool = False,
) -> ir.Value:
    """`wsc.load_shared`: src[stage], whole or its block at `origin`, as an
    f32 register tile of `shape` (with `transpose`, the block's transpose)."""
    attributes = _block_offsets(origin)
    if transpose:
        attributes["transpose"] = ir.UnitAttr.get()
    return _create(
        "wsc.load_shared",
        operands=[src, stage],
        results=[acc_type(shape, "f32")],
        attributes=attributes,
    ).result


def partial_store(
    tile: ir.Value, partials: ir.Value, row: ir.Value, split: ir.Value, splits: int
) -> ir.Operation:
    return _create(
        "wsc.partial_store",
        operands=[tile, partials, row, split],
        attributes={"splits": _i32(splits)},
    )


def partial_arrive(counters: ir.Value, row: ir.Value, splits: int) -> ir.Value:
    """`wsc.partial_arrive`: an i1, true where this was the last split's arrival."""
    return _create(
        "wsc.partial_arrive",
        operands=[counters, row],
        results=[ir.IntegerType.get_signless(1)],
        attributes={"splits": _i32(splits)},
    ).result


def partial_reduce(
    tile: ir.Value, partials: ir.Value, counters: ir.Value, row: ir.Value, splits: int
) -> ir.Operation:
    return _create(
        "wsc.partial_reduce",
        operands=[tile, partials, counters, row],
        attributes={"splits": _i32(splits)},
    )
