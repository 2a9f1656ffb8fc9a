"""Typed views of the wsc ops: operands, results and attributes by the names
`dialects/wsc.irdl.mlir` gives them, never by position.

The IRDL definition is the one place that orders an op's operands and names
its attributes; `DEFINITIONS` is read from it at import time. Each view class
names the fields of one op, and a class whose fields differ from its op's
definition (a name missing, one too many) fails at import, so views cannot
drift from the dialect. Ops without operands, results or attributes need no
view.

    load = TmaLoad(op)        # op: an ir.Operation named wsc.tma_load
    load.barriers             # the ir.Value of its `barriers` operand
    load.multicast            # its unit attribute, as a bool
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Generic, TypeVar, overload

from mlir import ir

from wsc.dialects import IRDL_PATH
from wsc.target.hopper import WARP_ROWS

#: The key of an irdl.operation's attribute dictionary that declares the
#: op's optional attributes (IRDL declares required ones only), each with its
#: base: UNIT_BASE, INTEGER_BASE or FLOAT_BASE.
OPTIONAL_ATTRIBUTES_KEY = "optional_attributes"
UNIT_BASE = "#builtin.unit"
INTEGER_BASE = "#builtin.integer"
FLOAT_BASE = "#builtin.float"


@dataclass(frozen=True)
class OpDefinition:
    """One op of the IRDL definition, as the views need it."""

    name: str  # e.g. "wsc.tma_load"
    operands: tuple[str, ...]
    results: tuple[str, ...]
    attributes: tuple[str, ...]  # required: IRDL checks their presence and kind
    #: name -> UNIT_BASE, INTEGER_BASE or FLOAT_BASE; the verifier checks these
    optional_attributes: dict[str, str]
    #: required attribute -> the string values IRDL allows it (`irdl.any_of`
    #: of `irdl.is "..."`), as MLIR prints them ('"nk"')
    choices: dict[str, tuple[str, ...]]

    @property
    def fields(self) -> frozenset[str]:
        return frozenset(
            (*self.operands, *self.results, *self.attributes, *self.optional_attributes)
        )


def _names(op: ir.Operation, key: str) -> tuple[str, ...]:
    return tuple(ir.StringAttr(name).value for name in ir.ArrayAttr(op.attributes[key]))


def _read_definitions(text: str) -> dict[str, OpDefinition]:
    definitions = {}
    with ir.Context(), ir.Location.unknown():
        module = ir.Module.parse(text)
        dialect = module.body.operations[0]
        prefix = ir.StringAttr(dialect.attributes["sym_name"]).value
        for node in dialect.regions[0].blocks[0].operations:
            if node.operation.name != "irdl.operation":
                continue
            name = f"{prefix}.{ir.StringAttr(node.attributes['sym_name']).value}"
            parts: dict[str, tuple[str, ...]] = {}
            choices = {}
            for part in node.regions[0].blocks[0].operations:
                key = "attributeValueNames" if part.name == "irdl.attributes" else "names"
                if part.name in ("irdl.operands", "irdl.results", "irdl.attributes"):
                    parts[part.name] = _names(part.operation, key)
                if part.name == "irdl.attributes":
                    for attribute, constraint in zip(parts[part.name], part.operands, strict=True):
                        values = _string_choices(constraint.owner)
                        if values:
                            choices[attribute] = values
            optional = {}
            if OPTIONAL_ATTRIBUTES_KEY in node.attributes:
                for entry in ir.DictAttr(node.attributes[OPTIONAL_ATTRIBUTES_KEY]):
                    base = ir.StringAttr(entry.attr).value
                    if base not in (UNIT_BASE, INTEGER_BASE, FLOAT_BASE):
                        raise ValueError(f"{name}: optional attribute {entry.name} of base {base}")
                    optional[entry.name] = base
            definitions[name] = OpDefinition(
                name,
                parts.get("irdl.operands", ()),
                parts.get("irdl.results", ()),
                parts.get("irdl.attributes", ()),
                optional,
                choices,
            )
    return definitions


def _string_choices(constraint: ir.Operation) -> tuple[str, ...]:
    """The strings an `irdl.any_of` of `irdl.is` string constraints allows."""
    if constraint.name != "irdl.any_of":
        return ()
    values = []
    for operand in constraint.operands:
        option = operand.owner
        if option.name != "irdl.is" or not isinstance(option.attributes["expected"], ir.StringAttr):
            return ()
        values.append(str(option.attributes["expected"]))
    return tuple(values)


#: Every op of the dialect, by its full name.
DEFINITIONS: dict[str, OpDefinition] = _read_definitions(IRDL_PATH.read_text())


def operand_name(op: ir.Operation, number: int) -> str | None:
    """The name of `op`'s operand `number` (e.g. a use's operand_number), or
    None for an op that is not a wsc op."""
    definition = DEFINITIONS.get(op.name)
    return definition.operands[number] if definition is not None else None


def operand_number(op_name: str, operand: str) -> int:
    """The position of operand `operand` of op `op_name`."""
    return DEFINITIONS[op_name].operands.index(operand)


#: The operands through which a kernel writes a global tensor: by TMA, and by threads.
TMA_TENSOR_WRITES = (("wsc.tma_store", "dst"),)
THREAD_TENSOR_WRITES = (("wsc.store", "dst"), ("wsc.coalesced_store", "dst"))


def tensor_uses(tensor: ir.Value) -> list[tuple[ir.Operation, str | None]]:
    """Each use of a kernel's tensor argument as (op, operand name); a batch's
    uses include those of the matrices wsc.batch_matrix takes from it."""
    found = []
    values = [tensor]
    while values:
        for use in values.pop().uses:
            owner = use.owner.operation if hasattr(use.owner, "operation") else use.owner
            name = operand_name(owner, use.operand_number)
            if (owner.name, name) == ("wsc.batch_matrix", "batch"):
                values.append(BatchMatrix(owner).matrix)
            else:
                found.append((owner, name))
    return found


def writes_tensor(tensor: ir.Value) -> bool:
    """Whether the kernel writes its tensor argument `tensor`."""
    return any(
        use in TMA_TENSOR_WRITES + THREAD_TENSOR_WRITES
        for use in ((owner.name, name) for owner, name in tensor_uses(tensor))
    )


# Fields ---------------------------------------------------------------------

T = TypeVar("T")


class _Field(Generic[T]):
    """A named part of an op, read (and for some written) through a view."""

    name = ""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def bind(self, definition: OpDefinition) -> None:
        """Resolve the field against its op's definition (at class creation)."""

    @overload
    def __get__(self, view: None, owner: type) -> _Field[T]: ...
    @overload
    def __get__(self, view: WscOp, owner: type) -> T: ...
    def __get__(self, view: WscOp | None, owner: type) -> _Field[T] | T:
        if view is None:
            return self
        return self.read(view.op)

    def read(self, op: ir.Operation) -> T:
        raise NotImplementedError


class Operand(_Field[ir.Value]):
    index = -1

    def bind(self, definition: OpDefinition) -> None:
        self.index = definition.operands.index(self.name)

    def read(self, op: ir.Operation) -> ir.Value:
        return op.operands[self.index]

    def __set__(self, view: WscOp, value: ir.Value) -> None:
        view.op.operands[self.index] = value


class Result(_Field[ir.Value]):
    index = -1

    def bind(self, definition: OpDefinition) -> None:
        self.index = definition.results.index(self.name)

    def read(self, op: ir.Operation) -> ir.Value:
        return op.results[self.index]


def _i32(value: int) -> ir.Attribute:
    return ir.IntegerAttr.get(ir.IntegerType.get_signless(32), value)


class IntAttr(_Field[int]):
    def read(self, op: ir.Operation) -> int:
        return int(ir.IntegerAttr(op.attributes[self.name]).value)

    def __set__(self, view: WscOp, value: int) -> None:
        view.op.attributes[self.name] = _i32(value)


class OptionalIntAttr(_Field[int | None]):
    def read(self, op: ir.Operation) -> int | None:
        if self.name not in op.attributes:
            return None
        return int(ir.IntegerAttr(op.attributes[self.name]).value)


class OptionalFloatAttr(_Field[float | None]):
    def read(self, op: ir.Operation) -> float | None:
        if self.name not in op.attributes:
            return None
        return float(ir.FloatAttr(op.attributes[self.name]).value)


class StrAttr(_Field[str]):
    def read(self, op: ir.Operation) -> str:
        return str(ir.StringAttr(op.attributes[self.name]).value)


class FloatAttr(_Field[float]):
    def read(self, op: ir.Operation) -> float:
        return float(ir.FloatAttr(op.attributes[self.name]).value)


class Flag(_Field[bool]):
    """A unit attribute: present or not."""

    def read(self, op: ir.Operation) -> bool:
        return self.name in op.attributes


# Views ----------------------------------------------------------------------

_VIEWS: dict[str, type[WscOp]] = {}


class WscOp:
    """A view of one wsc op; subclasses declare `name=` and one field per
    operand, result and attribute of the op's definition."""

    NAME: ClassVar[str]
    DEFINITION: ClassVar[OpDefinition]

    def __init_subclass__(cls, name: str, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        definition = DEFINITIONS[name]
        fields = {n: f for n, f in vars(cls).items() if isinstance(f, _Field)}
        if set(fields) != definition.fields:
            raise TypeError(
                f"view {cls.__name__} names {sorted(fields)}, but {name} defines "
                f"{sorted(definition.fields)} ({IRDL_PATH.name})"
            )
        for field in fields.values():
            field.bind(definition)
        cls.NAME, cls.DEFINITION = name, definition
        _VIEWS[name] = cls

    def __init__(self, op: ir.Operation | ir.OpView) -> None:
        op = op.operation
        if op.name != self.NAME:
            raise ValueError(f"{type(self).__name__} views {self.NAME}, not {op.name}")
        self.op: ir.Operation = op

    @property
    def location(self) -> ir.Location:
        return self.op.location


class Role(WscOp, name="wsc.role"):
    role = StrAttr()
    thread_begin = IntAttr()
    num_threads = IntAttr()
    max_registers = OptionalIntAttr()
    is_member = Result()


class Elect(WscOp, name="wsc.elect"):
    is_elected = Result()


class AllocShared(WscOp, name="wsc.alloc_shared"):
    buffer = Result()


class MbarrierAlloc(WscOp, name="wsc.mbarrier_alloc"):
    arrival_count = IntAttr()
    num_barriers = IntAttr()
    barriers = Result()


class MbarrierArrive(WscOp, name="wsc.mbarrier_arrive"):
    barriers = Operand()
    stage = Operand()
    per_warp = Flag()
    every_cta = Flag()


class MbarrierArriveExpectTx(WscOp, name="wsc.mbarrier_arrive_expect_tx"):
    barriers = Operand()
    stage = Operand()
    tx_bytes = IntAttr()


class MbarrierWait(WscOp, name="wsc.mbarrier_wait"):
    barriers = Operand()
    stage = Operand()
    phase = Operand()


class RingAdvance(WscOp, name="wsc.ring_advance"):
    stage = Operand()
    phase = Operand()
    num_stages = IntAttr()
    next_stage = Result()
    next_phase = Result()


class BatchMatrix(WscOp, name="wsc.batch_matrix"):
    batch = Operand()
    index = Operand()
    matrix = Result()


class TmaLoad(WscOp, name="wsc.tma_load"):
    src = Operand()
    row = Operand()
    col = Operand()
    dst = Operand()
    stage = Operand()
    barriers = Operand()
    multicast = Flag()


class ClusterRank(WscOp, name="wsc.cluster_rank"):
    rank = Result()


class TmaStore(WscOp, name="wsc.tma_store"):
    src = Operand()
    stage = Operand()
    dst = Operand()
    row = Operand()
    col = Operand()


class CoalescedStore(WscOp, name="wsc.coalesced_store"):
    src = Operand()
    stage = Operand()
    dst = Operand()
    row = Operand()
    col = Operand()


class TmaStoreWait(WscOp, name="wsc.tma_store_wait"):
    pending = IntAttr()


class AccAlloc(WscOp, name="wsc.acc_alloc"):
    tile = Result()
    #: No zeros are put in its registers: a write sets them first.
    uninitialized = Flag()


class Wgmma(WscOp, name="wsc.wgmma"):
    a = Operand()
    b = Operand()
    stage = Operand()
    acc = Operand()
    a_row = IntAttr()
    b_layout = StrAttr()
    #: A's stage tile is [K, M]: WGMMA reads A M-major.
    a_transposed = Flag()
    #: A's stage when A is read outside the ring (loaded once); None: `stage`.
    a_stage = OptionalIntAttr()
    #: The product replaces acc instead of adding to it.
    overwrite = Flag()


class WgmmaRegisterA(WscOp, name="wsc.wgmma_register_a"):
    a = Operand()
    b = Operand()
    stage = Operand()
    acc = Operand()
    b_layout = StrAttr()


class WgmmaWaitGroup(WscOp, name="wsc.wgmma_wait_group"):
    pending = IntAttr()


class Cast(WscOp, name="wsc.cast"):
    src = Operand()
    result = Result()


#: The element-wise operations of wsc.tile_binary and wsc.tile_unary (an
#: attribute IRDL checks only as a string).
TILE_BINARY_KINDS = ("add", "sub", "mul", "div", "max", "min")
TILE_UNARY_KINDS = ("exp2", "log2", "rsqrt", "tanh", "erf", "relu", "neg")
#: The comparisons of wsc.tile_select.
TILE_PREDICATES = ("lt", "le", "gt", "ge", "eq", "ne")
#: How wsc.tile_broadcast lays a vector over a tile, and which index
#: wsc.tile_iota gives each element.
BROADCAST_ALONG = ("rows", "cols")
#: What wsc.tile_row_reduce computes of each row and wsc.tile_col_reduce of
#: each column's groups of rows.
ROW_REDUCE_KINDS = ("max", "sum")
#: The groups of rows wsc.tile_col_reduce combines: rows one warp holds
#: (a warp's shuffles), or those of 2 or 4 warps (of a row vector only: the
#: warps exchange their values through shared memory).
COL_REDUCE_ROWS = (1, 2, 4, 8, WARP_ROWS, 2 * WARP_ROWS, 4 * WARP_ROWS)


def broadcast_shape(shapes: Sequence[tuple[int, ...]]) -> tuple[int, ...] | None:
    """The shape of an element-wise result of register tiles of `shapes`: the
    widest, where each other is it or a row vector [rows, 1] of its rows
    (read broadcast along the rows); None where they do not combine."""
    widest: tuple[int, ...] = max(shapes, key=lambda shape: shape[1])
    combine = all(shape in (widest, (widest[0], 1)) for shape in shapes)
    return widest if combine else None


#: The WGMMAs: asynchronous, each accumulating into its register tile `acc`.
WGMMA_OPS = ("wsc.wgmma", "wsc.wgmma_register_a")
#: The ops that make a register tile of their operands' rows from them,
#: element by element or row by row.
TILE_MAPS = (
    "wsc.cast",
    "wsc.tile_binary",
    "wsc.tile_unary",
    "wsc.tile_select",
    "wsc.tile_row_reduce",
    "wsc.tile_col_reduce",
)
#: The ops that read a register tile from global memory.
TILE_LOADS = ("wsc.tile_load", "wsc.tile_broadcast")
#: The ops that make a register tile besides wsc.acc_alloc, of the shape their
#: result type names (the maps take it from their operands).
TILE_MAKERS = (
    *TILE_MAPS,
    "wsc.tile_fill",
    "wsc.tile_splat",
    "wsc.tile_iota",
    *TILE_LOADS,
    "wsc.load_shared",
)


class TileBinary(WscOp, name="wsc.tile_binary"):
    x = Operand()
    y = Operand()
    kind = StrAttr()
    result = Result()


class TileUnary(WscOp, name="wsc.tile_unary"):
    x = Operand()
    kind = StrAttr()
    result = Result()


class TileSelect(WscOp, name="wsc.tile_select"):
    lhs = Operand()
    rhs = Operand()
    on_true = Operand()
    on_false = Operand()
    predicate = StrAttr()
    result = Result()


class TileIota(WscOp, name="wsc.tile_iota"):
    origin = Operand()
    along = StrAttr()
    result = Result()


class TileRowReduce(WscOp, name="wsc.tile_row_reduce"):
    x = Operand()
    kind = StrAttr()
    result = Result()


class TileColReduce(WscOp, name="wsc.tile_col_reduce"):
    x = Operand()
    kind = StrAttr()
    rows = IntAttr()
    result = Result()


class LoadShared(WscOp, name="wsc.load_shared"):
    src = Operand()
    stage = Operand()
    row = OptionalIntAttr()
    col = OptionalIntAttr()
    transpose = Flag()
    result = Result()


class TileLoad(WscOp, name="wsc.tile_load"):
    src = Operand()
    row = Operand()
    col = Operand()
    transpose = Flag()
    fill = OptionalFloatAttr()
    result = Result()


class TileBroadcast(WscOp, name="wsc.tile_broadcast"):
    src = Operand()
    offset = Operand()
    along = StrAttr()
    result = Result()


class TileAssign(WscOp, name="wsc.tile_assign"):
    dst = Operand()
    src = Operand()


class TileFill(WscOp, name="wsc.tile_fill"):
    value = FloatAttr()
    result = Result()


class TileSplat(WscOp, name="wsc.tile_splat"):
    value = Operand()
    result = Result()


class StoreShared(WscOp, name="wsc.store_shared"):
    tile = Operand()
    dst = Operand()
    stage = Operand()
    row = OptionalIntAttr()
    col = OptionalIntAttr()


class Store(WscOp, name="wsc.store"):
    tile = Operand()
    dst = Operand()
    row = Operand()
    col = Operand()
    transpose = Flag()


class PartialStore(WscOp, name="wsc.partial_store"):
    tile = Operand()
    partials = Operand()
    row = Operand()
    split = Operand()
    splits = IntAttr()


class PartialArrive(WscOp, name="wsc.partial_arrive"):
    counters = Operand()
    row = Operand()
    splits = IntAttr()
    last = Result()


class PartialReduce(WscOp, name="wsc.partial_reduce"):
    tile = Operand()
    partials = Operand()
    counters = Operand()
    row = Operand()
    splits = IntAttr()


_UNVIEWED = [d.name for d in DEFINITIONS.values() if d.fields and d.name not in _VIEWS]
if _UNVIEWED:
    raise TypeError(f"ops {_UNVIEWED} have operands, results or attributes but no view here")
