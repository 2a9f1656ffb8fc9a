"""The values a kernel's code handles while it is built: run-time scalars and
predicates, global and shared tensors, register tiles, mbarriers, and the
handles of ring loops and tile loops. Each wraps the MLIR value it stands for
and the KernelBuilder that emits the ops using it."""

from __future__ import annotations

import numbers
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, overload

from mlir import ir
from mlir.dialects import arith, memref, scf

from wsc import dialect
from wsc.builder.errors import BuildError, BuildTypeError, SourceLocation, caller
from wsc.target.hopper import E4M3, ELEMENT_BYTES, HALF_DTYPES, SHARED_DTYPES

if TYPE_CHECKING:
    from wsc.builder.kernel_builder import KernelBuilder

#: Element types, by their MLIR names.
f16, bf16, f32, e4m3 = "f16", "bf16", "f32", E4M3
GLOBAL_DTYPES = tuple(ELEMENT_BYTES)
#: What stage tiles hold (WGMMA reads all but f32).
TILE_DTYPES = SHARED_DTYPES
#: What register tiles hold (fp8 data reaches registers only inside a WGMMA).
REGISTER_DTYPES = (*HALF_DTYPES, f32)


class Scalar:
    """A run-time `index` value of the kernel (a block id, a size, an offset).

    Arithmetic with other Scalars and Python ints emits `arith` ops; sizes and
    offsets are never negative, so division, remainder and comparisons are
    the unsigned ones. A constant operand goes on the right, as MLIR's
    canonical form has it."""

    def __init__(self, builder: KernelBuilder, value: ir.Value):
        self._builder = builder
        self.value = value

    def _binary(self, other, op, what: str, constant_right: bool = True) -> Scalar:
        if isinstance(other, RegisterTile):
            return NotImplemented  # the tile's reflected operator: element-wise math
        # x + 0, x - 0, x * 1 and x // 1 are x: offsets such as
        # `offset_m + group * 64` stay the plain value for group 0.
        identity = 1 if op in (arith.MulIOp, arith.DivUIOp) else 0
        if (
            constant_right
            and isinstance(other, int)
            and not isinstance(other, bool)
            and other == identity
            and op is not arith.RemUIOp
        ):
            return self
        kb = self._builder
        with kb._at():
            rhs = kb._index(other, what)
            lhs, rhs = (self.value, rhs) if constant_right else (rhs, self.value)
            return Scalar(kb, op(lhs, rhs).result)

    def __add__(self, other: Scalar | int) -> Scalar:
        return self._binary(other, arith.AddIOp, "+")

    def __radd__(self, other: Scalar | int) -> Scalar:
        return self._binary(other, arith.AddIOp, "+")

    def __mul__(self, other: Scalar | int) -> Scalar:
        return self._binary(other, arith.MulIOp, "*")

    def __rmul__(self, other: Scalar | int) -> Scalar:
        return self._binary(other, arith.MulIOp, "*")

    def __sub__(self, other: Scalar | int) -> Scalar:
        return self._binary(other, arith.SubIOp, "-")

    def __rsub__(self, other: Scalar | int) -> Scalar:
        return self._binary(other, arith.SubIOp, "-", constant_right=False)

    def __floordiv__(self, other: Scalar | int) -> Scalar:
        return self._binary(other, arith.DivUIOp, "//")

    def __truediv__(self, other):
        if isinstance(other, RegisterTile):
            return NotImplemented  # the tile's reflected division
        raise BuildTypeError(
            "a run-time size divides with // (it is an index); divided by a register "
            "tile, or a tile divided by it, it is an f32 value",
            caller(),
        )

    def __mod__(self, other: Scalar | int) -> Scalar:
        return self._binary(other, arith.RemUIOp, "%")

    def _compare(self, other, predicate) -> Predicate:
        if isinstance(other, RegisterTile):
            return NotImplemented  # the tile's reflected comparison
        kb = self._builder
        with kb._at():
            rhs = kb._index(other, "comparison")
            return Predicate(kb, arith.CmpIOp(predicate, self.value, rhs).result)

    def __lt__(self, other: Scalar | int) -> Predicate:
        return self._compare(other, arith.CmpIPredicate.ult)

    def __le__(self, other: Scalar | int) -> Predicate:
        return self._compare(other, arith.CmpIPredicate.ule)

    def __gt__(self, other: Scalar | int) -> Predicate:
        return self._compare(other, arith.CmpIPredicate.ugt)

    def __ge__(self, other: Scalar | int) -> Predicate:
        return self._compare(other, arith.CmpIPredicate.uge)

    # Comparisons build a run-time predicate, which object's __eq__ signature
    # (returning bool) cannot express.
    def __eq__(self, other: Scalar | int) -> Predicate:  # type: ignore[override]
        return self._compare(other, arith.CmpIPredicate.eq)

    def __ne__(self, other: Scalar | int) -> Predicate:  # type: ignore[override]
        return self._compare(other, arith.CmpIPredicate.ne)

    __hash__ = object.__hash__

    def __bool__(self):
        raise BuildTypeError(
            "a run-time value has no truth value while the kernel is built; "
            "branch on it with `with kb.if_(condition):`",
            caller(),
        )

    def __index__(self):
        raise BuildTypeError(
            "a run-time value is not a Python int while the kernel is built: loop over it "
            "with kb.range(...), and give Python code (range, shapes) numbers",
            caller(),
        )


class Predicate:
    """A run-time `i1` of the kernel: a phase, or the result of a comparison."""

    def __init__(self, builder: KernelBuilder, value: ir.Value):
        self._builder = builder
        self.value = value

    def _binary(self, other, op) -> Predicate:
        kb = self._builder
        with kb._at():
            return Predicate(kb, op(self.value, kb._i1(other, "predicate")).result)

    def __and__(self, other: Predicate | bool) -> Predicate:
        return self._binary(other, arith.AndIOp)

    def __or__(self, other: Predicate | bool) -> Predicate:
        return self._binary(other, arith.OrIOp)

    def __xor__(self, other: Predicate | bool) -> Predicate:
        return self._binary(other, arith.XOrIOp)

    def __invert__(self) -> Predicate:
        return self._binary(True, arith.XOrIOp)

    def select(self, on_true: Scalar | int, on_false: Scalar | int) -> Scalar:
        """on_true where the predicate holds, else on_false (`arith.select`):
        e.g. a persistent loop's tile, chosen by which part of the schedule
        the trip is in."""
        kb = self._builder
        with kb._at():
            return Scalar(
                kb,
                arith.SelectOp(
                    self.value, kb._index(on_true, "select"), kb._index(on_false, "select")
                ).result,
            )

    def __bool__(self):
        raise BuildTypeError(
            "a run-time predicate has no truth value while the kernel is "
            "built; branch on it with `with kb.if_(predicate):`",
            caller(),
        )


@overload
def cdiv(numerator: int, denominator: int) -> int: ...
@overload
def cdiv(numerator: Scalar, denominator: Scalar | int) -> Scalar: ...
@overload
def cdiv(numerator: int, denominator: Scalar) -> Scalar: ...
def cdiv(numerator: Scalar | int, denominator: Scalar | int) -> Scalar | int:
    """ceil(numerator / denominator), as `arith.ceildivui` for run-time values."""
    if isinstance(numerator, int) and isinstance(denominator, int):
        return -(-numerator // denominator)
    return _scalar_op(numerator, denominator, arith.CeilDivUIOp, "cdiv")


@overload
def minimum(first: int, second: int) -> int: ...
@overload
def minimum(first: Scalar, second: Scalar | int) -> Scalar: ...
@overload
def minimum(first: int, second: Scalar) -> Scalar: ...
def minimum(first: Scalar | int, second: Scalar | int) -> Scalar | int:
    """The smaller of two sizes, as `arith.minui` for run-time values (e.g. the
    rows of a last, shorter group of tiles)."""
    if isinstance(first, int) and isinstance(second, int):
        return min(first, second)
    return _scalar_op(first, second, arith.MinUIOp, "minimum")


def _scalar_op(lhs: Scalar | int, rhs: Scalar | int, op, what: str) -> Scalar:
    """`op` of two index operands, one of them a run-time value, in that order."""
    scalar = lhs if isinstance(lhs, Scalar) else rhs
    if not isinstance(scalar, Scalar):
        raise BuildTypeError(
            f"{what}: expected ints or run-time index values, got "
            f"{type(lhs).__name__} and {type(rhs).__name__}",
            caller(),
        )
    kb = scalar._builder
    with kb._at():
        return Scalar(kb, op(kb._index(lhs, what), kb._index(rhs, what)).result)


class _Dims:
    """The run-time sizes of a global tensor: `a.shape[1]` is `memref.dim %a, 1`."""

    def __init__(self, tensor: GlobalTensor):
        self._tensor = tensor

    def __len__(self) -> int:
        return self._tensor.rank

    def __getitem__(self, dim: int) -> Scalar:
        """Dim `dim`; negative ones count from the last, as in Python."""
        rank = self._tensor.rank
        if isinstance(dim, bool) or not isinstance(dim, int) or not -rank <= dim < rank:
            dims = "one dim, 0 (or -1)" if rank == 1 else f"dims 0 to {rank - 1} (or -{rank} to -1)"
            raise BuildError(
                f"global tensor '{self._tensor.name}' has {dims}, not {dim!r}", caller()
            )
        kb = self._tensor._builder
        with kb._at():
            return Scalar(kb, memref.DimOp(self._tensor.value, kb._index(dim % rank, "dim")).result)

    def __iter__(self) -> Iterator[Scalar]:
        return iter([self[dim] for dim in range(len(self))])


class GlobalTensor:
    """A tensor in global memory, rank 2, 1 (a vector, e.g. a bias; a split-K
    workspace's two) or 3 (a batch of matrices): a kernel argument, or one
    matrix of a batch (`batch[b]`). The runtime names arguments by position:
    the first is "a", then "b", "c", ..."""

    def __init__(
        self,
        builder: KernelBuilder,
        value: ir.Value,
        name: str,
        dtype: str,
        where: SourceLocation | None = None,
    ):
        self._builder = builder
        self.value = value
        self.name = name
        self.dtype = dtype
        #: Where the kernel declared it (KernelBuilder.global_tensor).
        self.where = where
        #: A matrix of a batch (batch[b]), which TMA copies alone read and write.
        self.of_batch = False

    @property
    def shape(self) -> _Dims:
        return _Dims(self)

    @property
    def rank(self) -> int:
        return len(ir.MemRefType(self.value.type).shape)

    def __getitem__(self, index) -> GlobalTensor:
        """Matrix `index` of a batch of matrices (rank 3): a rank-2 tensor
        [rows, cols] for TMA copies, e.g. a[kb.block_idx.z]."""
        kb = self._builder
        where = caller()
        if self.rank != 3:
            raise BuildError(
                f"global tensor '{self.name}' has rank {self.rank}; only a batch of "
                f"matrices (rank 3) is indexed, a[b] being its matrix b",
                where,
            )
        with kb._at(where):
            value = dialect.batch_matrix(self.value, kb._index(index, "batch index"))
        matrix = GlobalTensor(kb, value, f"{self.name}[b]", self.dtype, where)
        matrix.of_batch = True
        return matrix

    def check_matrix(self, what: str, by_threads: bool = False) -> None:
        """Raise a located BuildError unless `what` may take this tensor as a
        matrix: rank 2, and not a matrix of a batch where `by_threads` (its
        threads read or write it: only TMA copies address those)."""
        if self.rank == 1:
            raise BuildError(
                f"{what}: '{self.name}' is a vector (rank 1); it takes a matrix (rank 2)",
                caller(),
            )
        if self.rank == 3:
            raise BuildError(
                f"{what}: '{self.name}' is a batch of matrices (rank 3); take one of them, "
                f"{self.name}[b]",
                caller(),
            )
        if by_threads and self.of_batch:
            raise BuildError(
                f"{what}: '{self.name}' is a matrix of a batch, which only TMA copies read "
                f"and write (kb.tma.global_to_shared, kb.tma.shared_to_global)",
                caller(),
            )


class KernelScalar:
    """An f32 kernel argument (kb.scalar), given at each launch by its name like
    a tensor: a number register-tile math takes, e.g. `acc * alpha`
    (wsc.tile_splat makes the tile of it)."""

    def __init__(self, builder: KernelBuilder, value: ir.Value, name: str, where: SourceLocation):
        self._builder = builder
        self.value = value
        self.name = name
        #: Where the kernel declared it.
        self.where = where

    def __bool__(self):
        raise BuildTypeError(
            f"kernel argument {self.name!r} has no truth value while the kernel is built "
            f"(it is given at each launch)",
            caller(),
        )


class SharedTensor:
    """A ring buffer in shared memory, [stages, rows, cols]; `ring[stage]` is one
    stage's tile. Its rows may be stored wider than `cols` (`stored_cols`,
    kb.shared_tensor(pad_rows=True))."""

    def __init__(
        self,
        builder: KernelBuilder,
        value: ir.Value,
        dtype: str,
        shape: tuple[int, int, int],
        stored_cols: int | None = None,
    ):
        self._builder = builder
        self.value = value
        self.dtype = dtype
        self.shape = shape
        self.stored_cols = shape[2] if stored_cols is None else stored_cols

    @property
    def padded(self) -> bool:
        return self.stored_cols != self.shape[2]

    @property
    def num_stages(self) -> int:
        return self.shape[0]

    def __getitem__(self, stage) -> SharedTile:
        value, key = self._builder._stage(stage, self.num_stages, "shared tensor")
        return SharedTile(self, value, key, 0, self.shape[1], transposed=False)

    def __getattr__(self, name: str):
        # What a stage has (transpose, rows, ...) asked of the whole ring.
        if not name.startswith("_") and name in dir(SharedTile):
            call = "()" if callable(getattr(SharedTile, name)) else ""
            raise BuildTypeError(
                f"'{name}' is a stage's, not the shared tensor's: index the stage first, "
                f"e.g. ring[stage].{name}{call}",
                caller(),
            )
        raise AttributeError(f"'SharedTensor' object has no attribute '{name}'")

    def __repr__(self) -> str:
        stages, rows, cols = self.shape
        return f"SharedTensor({self.dtype}, {stages} stages of [{rows}, {cols}])"


@dataclass(frozen=True)
class SharedTile:
    """Rows [row, row + rows) of one stage of a ring buffer, possibly viewed
    transposed (as WGMMA's B operand)."""

    ring: SharedTensor
    stage: ir.Value
    #: Tells whether two tiles or barriers are of the same stage.
    stage_key: object
    row: int
    rows: int
    transposed: bool

    @property
    def cols(self) -> int:
        return self.ring.shape[2]

    @property
    def dtype(self) -> str:
        return self.ring.dtype

    @property
    def nbytes(self) -> int:
        """The bytes a TMA copy of the tile delivers (padded rows whole)."""
        return self.rows * self.ring.stored_cols * ELEMENT_BYTES[self.dtype]

    @property
    def is_whole_stage(self) -> bool:
        """Every row of the stage, as stored (what TMA copies address)."""
        return not self.transposed and self.row == 0 and self.rows == self.ring.shape[1]

    def transpose(self) -> SharedTile:
        """This tile transposed: as WGMMA's B, a stage stored [N, K] used as a
        [K, N] operand; as its A, a stage stored [K, M] used as [M, K]."""
        return SharedTile(
            self.ring, self.stage, self.stage_key, self.row, self.rows, not self.transposed
        )

    def __getitem__(self, rows: slice) -> SharedTile:
        """Rows `start:stop` of the tile (multiples of 64: WGMMA's M), e.g. the part
        of A one of several consumer warpgroups multiplies."""
        where = caller()
        if not isinstance(rows, slice) or rows.step not in (None, 1):
            raise BuildTypeError("a shared tile is sliced by rows, as tile[start:stop]", where)
        start, stop, _ = rows.indices(self.rows)
        if self.transposed or start % 64 or stop <= start:
            raise BuildError(
                f"rows [{start}, {stop}) of a shared tile: a slice must be a "
                f"non-empty, 64-row aligned range of an untransposed tile",
                where,
            )
        return SharedTile(
            self.ring, self.stage, self.stage_key, self.row + start, stop - start, False
        )


class Barriers:
    """An array of mbarriers (one per stage of a ring); `barriers[stage]` is one."""

    def __init__(
        self,
        builder: KernelBuilder,
        value: ir.Value,
        arrival_count: int,
        num_barriers: int,
        where: SourceLocation,
    ):
        self._builder = builder
        self.value = value
        self.arrival_count = arrival_count
        self.num_barriers = num_barriers
        self.where = where

    def __getitem__(self, stage) -> BarrierRef:
        return BarrierRef(self, *self._builder._stage(stage, self.num_barriers, "mbarrier array"))


@dataclass(frozen=True)
class BarrierRef:
    """One mbarrier: `barriers[stage]`."""

    barriers: Barriers
    stage: ir.Value
    stage_key: object


class SplitKWorkspace:
    """The global memory through which a split-K kernel's blocks hand partial
    sums over: two kernel arguments, the f32 partial sums and the i32 arrival
    counters (all zero at launch), the number of splits of K, and the number
    of slots of `splits` partial tiles (None: one per output tile)."""

    def __init__(
        self,
        builder: KernelBuilder,
        partials: GlobalTensor,
        counters: GlobalTensor,
        splits: int,
        slots: int | None = None,
    ):
        self._builder = builder
        self.partials = partials
        self.counters = counters
        self.splits = splits
        self.slots = slots
        #: The register tile shape its partial sums have (set by the first store).
        self.tile_shape: tuple[int, int] | None = None


@dataclass(frozen=True)
class TileComparison:
    """`lhs <predicate> rhs` of register tiles (or a tile and a number), as
    kb.where takes it: made by <, <=, >, >= on tiles or by kb.compare."""

    predicate: str
    lhs: RegisterTile | float
    rhs: RegisterTile | float

    def __bool__(self):
        raise BuildTypeError(
            "a comparison of register tiles has no truth value while the kernel is built "
            "(an `if` or max() on tiles would take one branch for every element); choose "
            "element by element with kb.where(comparison, on_true, on_false), or kb.max/kb.min",
            caller(),
        )


class RegisterTile:
    """A tile in the registers of the executing warpgroup(s) (`!wsc.acc`).
    f32 tiles combine element by element with +, -, * and / (with a tile of
    the same shape or a row vector [rows, 1] of its rows, a number, a scalar
    argument, or a run-time size such as x.shape[1], exact below 2^24), unary
    - and abs(); kb.max, kb.min, kb.exp2 and kb.relu do the rest
    (wsc.tile_binary, wsc.tile_unary). <, <=, >, >=, == and != compare them
    element by element for kb.where (wsc.tile_select); a comparison has no
    truth value."""

    def __init__(self, builder: KernelBuilder, value: ir.Value, dtype: str, shape: tuple[int, int]):
        self._builder = builder
        self.value = value
        self.dtype = dtype
        self.shape = shape

    def __repr__(self) -> str:
        return f"RegisterTile({self.dtype}, {list(self.shape)})"

    def __add__(self, other: RegisterTile | KernelScalar | float) -> RegisterTile:
        return self._builder._tile_binary("add", self, other)

    def __radd__(self, other: KernelScalar | float) -> RegisterTile:
        return self._builder._tile_binary("add", other, self)

    def __sub__(self, other: RegisterTile | KernelScalar | float) -> RegisterTile:
        return self._builder._tile_binary("sub", self, other)

    def __rsub__(self, other: KernelScalar | float) -> RegisterTile:
        return self._builder._tile_binary("sub", other, self)

    def __mul__(self, other: RegisterTile | KernelScalar | float) -> RegisterTile:
        return self._builder._tile_binary("mul", self, other)

    def __rmul__(self, other: KernelScalar | float) -> RegisterTile:
        return self._builder._tile_binary("mul", other, self)

    def __neg__(self) -> RegisterTile:
        return self._builder._tile_unary("neg", self)

    def __abs__(self) -> RegisterTile:
        return self._builder._tile_binary("max", self, -self)

    def __truediv__(self, other: RegisterTile | KernelScalar | Scalar | float) -> RegisterTile:
        """Division, rounded as IEEE division rounds; by a number, a product
        with its reciprocal (one multiply per element)."""
        if isinstance(other, numbers.Real) and not isinstance(other, bool):
            if other == 0:
                raise BuildTypeError("a register tile divided by zero", caller())
            return self._builder._tile_binary("mul", self, 1.0 / float(other))
        return self._builder._tile_binary("div", self, other)

    def __rtruediv__(self, other: KernelScalar | Scalar | float) -> RegisterTile:
        return self._builder._tile_binary("div", other, self)

    def __pow__(self, other):
        raise BuildTypeError(
            "register tiles have no **: write t * t, or kb.exp2(p * kb.log2(t)) for t > 0",
            caller(),
        )

    def __lt__(self, other: RegisterTile | float) -> TileComparison:
        return TileComparison("lt", self, other)

    def __le__(self, other: RegisterTile | float) -> TileComparison:
        return TileComparison("le", self, other)

    def __gt__(self, other: RegisterTile | float) -> TileComparison:
        return TileComparison("gt", self, other)

    def __ge__(self, other: RegisterTile | float) -> TileComparison:
        return TileComparison("ge", self, other)

    # == and != compare element by element too (a Python bool would say
    # whether two handles are one object).
    def __eq__(self, other: RegisterTile | float) -> TileComparison:  # type: ignore[override]
        return TileComparison("eq", self, other)

    def __ne__(self, other: RegisterTile | float) -> TileComparison:  # type: ignore[override]
        return TileComparison("ne", self, other)

    __hash__ = object.__hash__

    def __bool__(self):
        raise BuildTypeError(
            "a register tile has no truth value while the kernel is built (an `if` would "
            "take one branch for every element); choose element by element with "
            "kb.where(comparison, on_true, on_false)",
            caller(),
        )


class _CarriesRingPosition:
    """A loop that carries the ring position (stage, phase) as its first two
    loop values: inside the body, this trip's; after the loop, the last."""

    _builder: KernelBuilder
    loop: scf.ForOp
    finished: bool

    def _carried(self, index: int) -> ir.Value:
        return self.loop.results[index] if self.finished else self.loop.inner_iter_args[index]

    @property
    def stage(self) -> Scalar:
        return Scalar(self._builder, self._carried(0))

    @property
    def phase(self) -> Predicate:
        return Predicate(self._builder, self._carried(1))


class RingLoop(_CarriesRingPosition):
    """The handle `for it in kb.range(...)` binds.

    Inside the body: `index` (the K tile), `offset` (start + index * step),
    `stage` and `phase` (the ring position of this trip) and `previous_stage`.
    After the loop: `stage` and `phase` are the position after the last trip,
    where a drain starts, and `previous_stage` that of the last trip.
    `trips` (the number of K tiles) is valid inside and after."""

    def __init__(
        self,
        builder: KernelBuilder,
        loop: scf.ForOp,
        start,
        step: int,
        num_stages: int,
        where: SourceLocation,
        continues: TileLoop | None = None,
    ):
        self._builder = builder
        self.loop = loop
        #: The tile loop whose ring position this loop starts at, if any.
        self.continues = continues
        self._start = start
        self._step = step
        self.num_stages = num_stages
        self.where = where
        self._offset: Scalar | None = None
        self.finished = False

    def _inside(self, what: str) -> None:
        if self.finished:
            raise BuildError(
                f"`{what}` of the ring loop at {self.where} exists only inside its body", caller()
            )

    @property
    def trips(self) -> Scalar:
        """The number of K tiles (the loop's upper bound)."""
        return Scalar(self._builder, self.loop.operation.operands[1])

    @property
    def index(self) -> Scalar:
        self._inside("index")
        return Scalar(self._builder, self.loop.induction_variable)

    @property
    def offset(self) -> Scalar:
        """start + index * step, built once at the top of the body so it can be
        used anywhere inside."""
        self._inside("offset")
        if self._offset is None:
            kb = self._builder
            body = self.loop.body
            top = ir.InsertionPoint.at_block_begin(body)
            with kb.context, self.where.mlir(), top:
                # Not kb._index: a constant it reuses from this block would come
                # after the top of the body.
                step = arith.ConstantOp(ir.IndexType.get(), self._step).result
                value = arith.MulIOp(self.loop.induction_variable, step).result
                if isinstance(self._start, Scalar):
                    value = arith.AddIOp(value, self._start.value).result
                elif self._start != 0:
                    start = arith.ConstantOp(ir.IndexType.get(), self._start).result
                    value = arith.AddIOp(value, start).result
            self._offset = Scalar(kb, value)
        return self._offset

    @property
    def previous_stage(self) -> Scalar:
        """(stage - 1) mod num_stages: the stage of the previous K tile (after
        the loop: of the last one)."""
        kb = self._builder
        stage = self.stage.value
        with kb._at():
            wraps = arith.CmpIOp(arith.CmpIPredicate.eq, stage, kb._index(0, "stage")).result
            before = arith.SubIOp(stage, kb._index(1, "stage")).result
            return Scalar(
                kb, arith.SelectOp(wraps, kb._index(self.num_stages - 1, "stage"), before).result
            )


class TileLoop(_CarriesRingPosition):
    """The handle `for tiles in kb.tile_range(...)` binds: a persistent kernel's
    loop over output tiles, carrying a ring position (stage, phase) from tile
    to tile so that each tile's ring loop continues where the previous one
    stopped (no stage is filled twice, no phase is lost).

    Inside the body: `tile` (this trip's tile number) and `stage` and `phase`
    (the ring position the trip starts at); the body's ring loop continues it
    with `kb.range(..., ring=tiles)`, and where that loop stops is where the
    next trip starts. After the loop: `stage` and `phase` are the position
    after the last tile."""

    def __init__(
        self,
        builder: KernelBuilder,
        loop: scf.ForOp,
        num_stages: int,
        where: SourceLocation,
    ):
        self._builder = builder
        self.loop = loop
        self.num_stages = num_stages
        self.where = where
        #: The ring loop of the body that continues the carried position.
        self.continued_by: RingLoop | None = None
        self.finished = False

    @property
    def tile(self) -> Scalar:
        if self.finished:
            raise BuildError(
                f"`tile` of the tile loop at {self.where} exists only inside its body", caller()
            )
        return Scalar(self._builder, self.loop.induction_variable)
