"""The kernel builder: wsc kernels written in Python, as the tutorial writes them.

Explicitly, as in the seed (V3): thread groups with their own code, shared ring
buffers, mbarriers, TMA copies and WGMMA, each call emitting the wsc op it names:

    kb = KernelBuilder("matmul", num_warps=5, grid=[("m", 128), ("n", 128)])
    a, b, c = kb.global_tensor(f16), kb.global_tensor(f16), kb.global_tensor(f32)
    sa = kb.shared_tensor(f16, [stages, 128, 64])
    full = kb.mbarrier.alloc(arrival_count=1, num_barriers=stages)
    kb.sync()
    with kb.thread_group(thread_begin=0, num_threads=128, role="consumer"):
        for it in kb.range(0, a.shape[1], 64, stages=stages,
                           phase=CONSUMER_INITIAL_PHASE, unroll=stages):
            kb.mbarrier.wait(full[it.stage], phase=it.phase)
            ...
    kernel = kb.finish()            # a verified `Kernel`
    kernel.compile().write_artifact(out_dir, m=M, n=N, k=K)

Automatically: write the non-specialized kernel (the tutorial's V2) the same
way and ask for specialization with --warp-specialize's options as keyword
arguments, `kernel.warp_specialize(num_stages=4)`; the result is structurally
the kernel the explicit form builds (`structure()` says what that means).

`kb.range` is the ring loop: its body runs once in Python and becomes an
`scf.for` over K tiles carrying the ring position (stage, phase), advanced by
`wsc.ring_advance` at the end of each trip, the form --warp-specialize and
--unroll-ring-buffer work on. `unroll=N` asks for --unroll-ring-buffer.

Errors in the kernel's code are raised while it is built, as `BuildError`s
naming the user's file:line:col; every op carries that location too, so the
verifier's and the passes' diagnostics point into the user's Python file.
"""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import overload

from mlir import ir
from mlir.dialects import arith, func, gpu, memref, scf

from wsc import dialect
from wsc.diagnostics import DiagnosticEngine, PassError
from wsc.dialect import CONSUMER_INITIAL_PHASE, PRODUCER_INITIAL_PHASE
from wsc.ir_utils import CLUSTER_SIZE_ATTR, KERNEL_THREADS_ATTR
from wsc.target.hopper import (
    ELEMENT_BYTES,
    MAX_BLOCK_THREADS,
    MAX_PORTABLE_CLUSTER,
    MAX_TMA_BOX,
    OPERAND_DTYPES,
    SWIZZLE_BYTES,
    WARP_SIZE,
)

__all__ = [
    "BuildError",
    "BuildTypeError",
    "CONSUMER_INITIAL_PHASE",
    "CompiledKernel",
    "Kernel",
    "KernelBuilder",
    "PRODUCER_INITIAL_PHASE",
    "Pipeline",
    "bf16",
    "cdiv",
    "f16",
    "f32",
    "minimum",
    "structure",
]

#: Element types, by their MLIR names.
f16, bf16, f32 = "f16", "bf16", "f32"
GLOBAL_DTYPES = tuple(ELEMENT_BYTES)
#: What TMA and WGMMA read from shared memory.
TILE_DTYPES = OPERAND_DTYPES


# Errors ---------------------------------------------------------------------


@dataclass(frozen=True)
class SourceLocation:
    """Where in the user's Python source an op was built (col is 1-based)."""

    filename: str
    line: int
    col: int

    def __str__(self) -> str:
        return f"{self.filename}:{self.line}:{self.col}"

    def mlir(self) -> ir.Location:
        return ir.Location.file(self.filename, self.line, self.col)


class BuildError(ValueError):
    """A mistake in a kernel's code, found while building it; the message starts
    with the user's file:line:col."""

    def __init__(self, message: str, where: SourceLocation | None = None):
        self.message = message
        self.where = where
        super().__init__(f"{where}: error: {message}" if where is not None else message)


class BuildTypeError(BuildError, TypeError):
    """A wrong kind of value or a wrong dtype in a kernel's code."""


_INTERNAL_FILES = {os.path.abspath(__file__), os.path.abspath(contextlib.__file__)}


def _caller() -> SourceLocation:
    """The innermost frame outside this module (and contextlib, which runs the
    `with` blocks): the user's line that asked for the op being built."""
    frame = sys._getframe(1)
    while frame.f_back is not None and os.path.abspath(frame.f_code.co_filename) in _INTERNAL_FILES:
        frame = frame.f_back
    col = 0
    positions = list(frame.f_code.co_positions())
    index = frame.f_lasti // 2
    if 0 <= index < len(positions) and positions[index][2] is not None:
        col = positions[index][2]
    return SourceLocation(frame.f_code.co_filename, frame.f_lineno, col + 1)


def _check_dtype(dtype, allowed: Sequence[str], what: str) -> str:
    if dtype not in allowed:
        raise BuildTypeError(
            f"{what}: dtype must be one of {', '.join(allowed)}, got {dtype!r}", _caller()
        )
    return dtype


def _expect(value, kind: type | tuple, what: str, expected: str):
    if not isinstance(value, kind):
        raise BuildTypeError(f"{what}: expected {expected}, got {type(value).__name__}", _caller())
    return value


def _check_stages(stages, what: str, where: SourceLocation) -> None:
    if isinstance(stages, bool) or not isinstance(stages, int) or stages < 1:
        raise BuildError(f"{what}: stages must be a positive int, got {stages!r}", where)


# Values -----------------------------------------------------------------------


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

    def __add__(self, other):
        return self._binary(other, arith.AddIOp, "+")

    def __radd__(self, other):
        return self._binary(other, arith.AddIOp, "+")

    def __mul__(self, other):
        return self._binary(other, arith.MulIOp, "*")

    def __rmul__(self, other):
        return self._binary(other, arith.MulIOp, "*")

    def __sub__(self, other):
        return self._binary(other, arith.SubIOp, "-")

    def __rsub__(self, other):
        return self._binary(other, arith.SubIOp, "-", constant_right=False)

    def __floordiv__(self, other):
        return self._binary(other, arith.DivUIOp, "//")

    def __mod__(self, other):
        return self._binary(other, arith.RemUIOp, "%")

    def _compare(self, other, predicate) -> Predicate:
        kb = self._builder
        with kb._at():
            rhs = kb._index(other, "comparison")
            return Predicate(kb, arith.CmpIOp(predicate, self.value, rhs).result)

    def __lt__(self, other):
        return self._compare(other, arith.CmpIPredicate.ult)

    def __le__(self, other):
        return self._compare(other, arith.CmpIPredicate.ule)

    def __gt__(self, other):
        return self._compare(other, arith.CmpIPredicate.ugt)

    def __ge__(self, other):
        return self._compare(other, arith.CmpIPredicate.uge)

    def __eq__(self, other):
        return self._compare(other, arith.CmpIPredicate.eq)

    def __ne__(self, other):
        return self._compare(other, arith.CmpIPredicate.ne)

    __hash__ = object.__hash__

    def __bool__(self):
        raise BuildTypeError(
            "a run-time value has no truth value while the kernel is built; "
            "branch on it with `with kb.if_(condition):`",
            _caller(),
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

    def __and__(self, other):
        return self._binary(other, arith.AndIOp)

    def __or__(self, other):
        return self._binary(other, arith.OrIOp)

    def __xor__(self, other):
        return self._binary(other, arith.XOrIOp)

    def __invert__(self) -> Predicate:
        return self._binary(True, arith.XOrIOp)

    def __bool__(self):
        raise BuildTypeError(
            "a run-time predicate has no truth value while the kernel is "
            "built; branch on it with `with kb.if_(predicate):`",
            _caller(),
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
            _caller(),
        )
    kb = scalar._builder
    with kb._at():
        return Scalar(kb, op(kb._index(lhs, what), kb._index(rhs, what)).result)


class _Dims:
    """The run-time sizes of a global tensor: `a.shape[1]` is `memref.dim %a, 1`."""

    def __init__(self, tensor: GlobalTensor):
        self._tensor = tensor

    def __len__(self) -> int:
        return 2

    def __getitem__(self, dim: int) -> Scalar:
        if not isinstance(dim, int) or dim not in (0, 1):
            raise BuildError(
                f"global tensor '{self._tensor.name}' has dims 0 and 1, not {dim!r}", _caller()
            )
        kb = self._tensor._builder
        with kb._at():
            return Scalar(kb, memref.DimOp(self._tensor.value, kb._index(dim, "dim")).result)

    def __iter__(self) -> Iterator[Scalar]:
        return iter((self[0], self[1]))


class GlobalTensor:
    """A rank-2 tensor in global memory: a kernel argument. The runtime names
    arguments by position: the first is "a", then "b", "c", ..."""

    def __init__(self, builder: KernelBuilder, value: ir.Value, name: str, dtype: str):
        self._builder = builder
        self.value = value
        self.name = name
        self.dtype = dtype

    @property
    def shape(self) -> _Dims:
        return _Dims(self)


class SharedTensor:
    """A ring buffer in shared memory, [stages, rows, cols]; `ring[stage]` is one
    stage's tile."""

    def __init__(
        self, builder: KernelBuilder, value: ir.Value, dtype: str, shape: tuple[int, int, int]
    ):
        self._builder = builder
        self.value = value
        self.dtype = dtype
        self.shape = shape

    @property
    def num_stages(self) -> int:
        return self.shape[0]

    def __getitem__(self, stage) -> SharedTile:
        value, key = self._builder._stage(stage, self.num_stages, "shared tensor")
        return SharedTile(self, value, key, 0, self.shape[1], transposed=False)


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
        return self.rows * self.cols * ELEMENT_BYTES[self.dtype]

    @property
    def is_whole_stage(self) -> bool:
        """Every row of the stage, as stored (what TMA copies address)."""
        return not self.transposed and self.row == 0 and self.rows == self.ring.shape[1]

    def transpose(self) -> SharedTile:
        """This tile as WGMMA's B^T: a stage stored [N, K] used as a [K, N] operand."""
        return SharedTile(
            self.ring, self.stage, self.stage_key, self.row, self.rows, not self.transposed
        )

    def __getitem__(self, rows: slice) -> SharedTile:
        """Rows `start:stop` of the tile (multiples of 64: WGMMA's M), e.g. the part
        of A one of several consumer warpgroups multiplies."""
        where = _caller()
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


class RegisterTile:
    """A tile in the registers of the executing warpgroup(s) (`!wsc.acc`)."""

    def __init__(self, builder: KernelBuilder, value: ir.Value, dtype: str, shape: tuple[int, int]):
        self._builder = builder
        self.value = value
        self.dtype = dtype
        self.shape = shape


class RingLoop:
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
                f"`{what}` of the ring loop at {self.where} exists only inside its body", _caller()
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
    def stage(self) -> Scalar:
        if self.finished:
            return Scalar(self._builder, self.loop.results[0])
        return Scalar(self._builder, self.loop.inner_iter_args[0])

    @property
    def phase(self) -> Predicate:
        if self.finished:
            return Predicate(self._builder, self.loop.results[1])
        return Predicate(self._builder, self.loop.inner_iter_args[1])

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


class TileLoop:
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
                f"`tile` of the tile loop at {self.where} exists only inside its body", _caller()
            )
        return Scalar(self._builder, self.loop.induction_variable)

    @property
    def stage(self) -> Scalar:
        if self.finished:
            return Scalar(self._builder, self.loop.results[0])
        return Scalar(self._builder, self.loop.inner_iter_args[0])

    @property
    def phase(self) -> Predicate:
        if self.finished:
            return Predicate(self._builder, self.loop.results[1])
        return Predicate(self._builder, self.loop.inner_iter_args[1])


# Op namespaces, named as in the seed ----------------------------------------------


class _Mbarrier:
    def __init__(self, builder: KernelBuilder):
        self._kb = builder

    def alloc(self, arrival_count: int, num_barriers: int) -> Barriers:
        """`num_barriers` mbarriers, each completing a phase after `arrival_count`
        arrivals (and the transaction bytes declared on it). Every thread runs
        this, so it belongs at the top level of the kernel, followed by a
        block-wide `kb.sync()` before first use."""
        kb = self._kb
        where = _caller()
        for name, value in (("arrival_count", arrival_count), ("num_barriers", num_barriers)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise BuildError(
                    f"mbarrier.alloc: {name} must be a positive int, got {value!r}", where
                )
        kb._require_top_level(
            "mbarrier.alloc",
            "every thread of the block initialises the barriers before the roles split",
        )
        with kb._at(where):
            barriers = Barriers(
                kb,
                dialect.mbarrier_alloc(arrival_count, num_barriers),
                arrival_count,
                num_barriers,
                where,
            )
        kb._awaiting_sync.append(barriers)
        return barriers

    def wait(self, barrier: BarrierRef, phase) -> None:
        """Block until the phase of `barrier` with parity `phase` has completed."""
        kb = self._kb
        ref = kb._barrier(barrier, "mbarrier.wait")
        with kb._at():
            dialect.mbarrier_wait(ref.barriers.value, ref.stage, kb._i1(phase, "phase"))

    def arrive(self, barrier: BarrierRef, every_cta: bool = False, per_warp: bool = False) -> None:
        """Every executing thread arrives once on `barrier`; with `every_cta`,
        on that barrier of every CTA of the cluster (the release of a stage
        that other CTAs' multicast copies write). With `per_warp` each
        executing warp arrives once, after its threads synchronize: allocate
        the barrier with arrival_count counting warps."""
        kb = self._kb
        ref = kb._barrier(barrier, "mbarrier.arrive")
        if every_cta and kb.cluster_size < 2:
            raise BuildError(
                "mbarrier.arrive: every_cta=True needs a kernel in clusters "
                "(KernelBuilder(cluster_size=2, ...))",
                _caller(),
            )
        if per_warp and any(scope.kind == "single_thread" for scope in kb._scopes):
            raise BuildError(
                "mbarrier.arrive: per_warp=True inside single_thread: one "
                "thread cannot arrive for its warp",
                _caller(),
            )
        with kb._at():
            if every_cta:
                dialect.mbarrier_arrive_cluster(ref.barriers.value, ref.stage, per_warp)
            else:
                dialect.mbarrier_arrive(ref.barriers.value, ref.stage, per_warp)

    def arrive_and_expect_tx(self, barrier: BarrierRef, transaction_bytes: int) -> None:
        """Arrive once and add `transaction_bytes` to the bytes `barrier` waits for."""
        kb = self._kb
        ref = kb._barrier(barrier, "mbarrier.arrive_and_expect_tx")
        if (
            isinstance(transaction_bytes, bool)
            or not isinstance(transaction_bytes, int)
            or transaction_bytes < 1
        ):
            raise BuildError(
                f"mbarrier.arrive_and_expect_tx: transaction_bytes must be a "
                f"positive int, got {transaction_bytes!r}",
                _caller(),
            )
        with kb._at():
            dialect.mbarrier_arrive_expect_tx(ref.barriers.value, ref.stage, transaction_bytes)


class _Tma:
    def __init__(self, builder: KernelBuilder):
        self._kb = builder

    def global_to_shared(
        self,
        src: GlobalTensor,
        dst: SharedTile,
        offsets: Sequence,
        mbarrier: BarrierRef,
        multicast: bool = False,
    ) -> None:
        """Copy src[offsets[0]:+rows, offsets[1]:+cols] into the stage tile `dst`
        (zero-filled out of bounds), completing on `mbarrier`, which must be the
        barrier of dst's stage. With `multicast` the tile is the cluster's:
        the CTA of rank r copies its r-th slice of rows into dst in every CTA
        of the cluster, completing on each CTA's `mbarrier` (which therefore
        expects the whole tile's bytes)."""
        kb = self._kb
        where = _caller()
        what = "tma.global_to_shared"
        kb._own(_expect(src, GlobalTensor, f"{what} src", "a global tensor"), what)
        _expect(dst, SharedTile, f"{what} dst", "a stage of a shared tensor, e.g. sa[stage]")
        ref = kb._barrier(mbarrier, what)
        if src.dtype != dst.dtype:
            raise BuildTypeError(
                f"{what}: src '{src.name}' is {src.dtype} but dst is {dst.dtype}", where
            )
        if not dst.is_whole_stage:
            raise BuildError(f"{what}: dst must be a whole stage tile, ring[stage]", where)
        if dst.cols * ELEMENT_BYTES[dst.dtype] > SWIZZLE_BYTES:
            raise BuildError(
                f"{what}: dst rows are {dst.cols * ELEMENT_BYTES[dst.dtype]} "
                f"bytes; a TMA load fills at most {SWIZZLE_BYTES} (the swizzle "
                f"span)",
                where,
            )
        if ref.stage_key != dst.stage_key:
            raise BuildError(
                f"{what}: the copy into a stage completes on that stage's "
                f"barrier; use mbarrier=<barriers>[same stage as dst]",
                where,
            )
        if multicast:
            if kb.cluster_size < 2:
                raise BuildError(
                    f"{what}: multicast=True needs a kernel in clusters "
                    f"(KernelBuilder(cluster_size=2, ...))",
                    where,
                )
            if dst.rows % (8 * kb.cluster_size):
                raise BuildError(
                    f"{what}: a {dst.rows}-row tile cannot be split over "
                    f"{kb.cluster_size} CTAs in 8-row slices",
                    where,
                )
        row, col = kb._offsets(offsets, what)
        load = dialect.tma_load_multicast if multicast else dialect.tma_load
        with kb._at(where):
            load(src.value, row, col, dst.ring.value, dst.stage, ref.barriers.value)

    def shared_to_global(self, src: SharedTile, dst: GlobalTensor, offsets: Sequence) -> None:
        """Copy the stage tile `src` into dst[offsets[0]:+rows, offsets[1]:+cols],
        clipped at dst's bounds, from one thread (e.g. under kb.single_thread()).
        The copy reads `src` asynchronously: wait with tma.store_wait() before
        writing it again."""
        where = _caller()
        row, col = self._kb._stage_copy_offsets(src, dst, offsets, "tma.shared_to_global", where)
        with self._kb._at(where):
            dialect.tma_store(src.ring.value, src.stage, dst.value, row, col)

    def store_wait(self, pending: int = 0) -> None:
        """Wait until at most `pending` of this thread's shared_to_global copies
        still read shared memory (before their source is written again)."""
        if isinstance(pending, bool) or not isinstance(pending, int) or pending < 0:
            raise BuildError(
                f"tma.store_wait: pending must be an int >= 0, got {pending!r}", _caller()
            )
        with self._kb._at():
            dialect.tma_store_wait(pending)


class _Wgmma:
    def __init__(self, builder: KernelBuilder):
        self._kb = builder

    def fence(self) -> None:
        """Order earlier register accesses before the WGMMAs that follow."""
        with self._kb._at():
            dialect.wgmma_fence()

    def mma(self, a: SharedTile, b: SharedTile, acc: RegisterTile) -> None:
        """acc += a @ b, asynchronously, in the open WGMMA group. `a` is [M, K]
        (rows of A's stage); `b` is a [K, N] stage, or `sb[stage].transpose()`
        for a stage stored [N, K]."""
        kb = self._kb
        where = _caller()
        _expect(a, SharedTile, "wgmma.mma a", "a stage of a shared tensor, e.g. sa[stage]")
        _expect(
            b,
            SharedTile,
            "wgmma.mma b",
            "a stage of a shared tensor, e.g. sb[stage] or sb[stage].transpose()",
        )
        kb._own(
            _expect(acc, RegisterTile, "wgmma.mma acc", "a register tile (kb.register_tensor)"),
            "wgmma.mma",
        )
        if a.transposed:
            raise BuildError(
                "wgmma.mma: A is read as stored, [M, K]; it cannot be transposed", where
            )
        if b.row != 0 or b.rows != b.ring.shape[1]:
            raise BuildError(
                "wgmma.mma: B is a whole stage tile; only A's rows can be sliced", where
            )
        if a.dtype != b.dtype:
            raise BuildTypeError(f"wgmma.mma: A is {a.dtype} but B is {b.dtype}", where)
        b_k, b_n = (b.cols, b.rows) if b.transposed else (b.rows, b.cols)
        m, n = acc.shape
        if a.rows != m or b_n != n or a.cols != b_k:
            layout = "[N, K] stage, transposed" if b.transposed else "[K, N] stage"
            raise BuildError(
                f"wgmma.mma: shapes do not chain: A is [{a.rows}, {a.cols}], B "
                f"is [{b_k}, {b_n}] (a {layout}), acc is [{m}, {n}]",
                where,
            )
        if a.stage_key != b.stage_key:
            raise BuildError("wgmma.mma: A and B must be the same stage of their rings", where)
        with kb._at(where):
            dialect.wgmma(
                a.ring.value,
                b.ring.value,
                a.stage,
                acc.value,
                a.row,
                "nk" if b.transposed else "kn",
            )

    def commit_group(self) -> None:
        """Close the open group of WGMMAs."""
        with self._kb._at():
            dialect.wgmma_commit_group()

    def wait_group(self, pending: int) -> None:
        """Wait until at most `pending` committed WGMMA groups are in flight."""
        if isinstance(pending, bool) or not isinstance(pending, int) or pending < 0:
            raise BuildError(
                f"wgmma.wait_group: pending must be an int >= 0, got {pending!r}", _caller()
            )
        with self._kb._at():
            dialect.wgmma_wait_group(pending)


# The builder ------------------------------------------------------------------------


@dataclass
class _Scope:
    """A region being built: the block ops go into, what opened it and where,
    and the index constants made in it."""

    block: ir.Block
    kind: str
    where: SourceLocation
    constants: dict[int, ir.Value] = field(default_factory=dict)


class KernelBuilder:
    """Builds one kernel, a func.func of wsc IR, op by op.

    `num_warps` fixes the block size (num_warps * 32 threads). `grid` says how
    many blocks a launch needs: one (size, tile) pair per grid dimension x, y,
    launching cdiv(size, tile) blocks, where size names a problem size the
    kernel reads ("m", "n" or "k" for a matmul). The builder owns its MLIR
    context, unless given one."""

    def __init__(
        self,
        name: str = "kernel",
        *,
        num_warps: int = 4,
        grid: Sequence[tuple[str, int]] = (),
        cluster_size: int = 1,
        context: ir.Context | None = None,
    ):
        where = _caller()
        if (
            isinstance(cluster_size, bool)
            or not isinstance(cluster_size, int)
            or not 1 <= cluster_size <= MAX_PORTABLE_CLUSTER
        ):
            raise BuildError(
                f"cluster_size must be an int in [1, {MAX_PORTABLE_CLUSTER}], got {cluster_size!r}",
                where,
            )
        if (
            isinstance(num_warps, bool)
            or not isinstance(num_warps, int)
            or not 1 <= num_warps * WARP_SIZE <= MAX_BLOCK_THREADS
        ):
            raise BuildError(
                f"num_warps must be an int in [1, {MAX_BLOCK_THREADS // WARP_SIZE}], "
                f"got {num_warps!r}",
                where,
            )
        self.grid = tuple((str(size), int(tile)) for size, tile in grid)
        if len(self.grid) > 3 or any(tile < 1 for _, tile in self.grid):
            raise BuildError(
                f"grid must be up to 3 (size name, positive tile) pairs, got {list(grid)!r}", where
            )
        self.name = name
        self.num_threads = num_warps * WARP_SIZE
        self.context = context or dialect.make_context()
        with self.context, where.mlir():
            self.module = ir.Module.create()
            with ir.InsertionPoint(self.module.body):
                self.func = func.FuncOp(name, ir.FunctionType.get([], []))
            i32 = ir.IntegerType.get_signless(32)
            self.func.attributes[KERNEL_THREADS_ATTR] = ir.IntegerAttr.get(i32, self.num_threads)
            if cluster_size > 1:
                self.func.attributes[CLUSTER_SIZE_ATTR] = ir.IntegerAttr.get(i32, cluster_size)
            self.body = self.func.add_entry_block()
        self.cluster_size = cluster_size
        # Innermost last: (block, kind, where) of each open region.
        self._scopes: list[_Scope] = [_Scope(self.body, "kernel", where)]
        self._tensors: list[GlobalTensor] = []
        self._awaiting_sync: list[Barriers] = []
        self._thread_group: tuple[int, int] | None = None
        self._unroll: list[tuple[bool, SourceLocation]] = []
        self._finished = False
        self.mbarrier = _Mbarrier(self)
        self.tma = _Tma(self)
        self.wgmma = _Wgmma(self)

    # Plumbing --------------------------------------------------------------------

    @contextlib.contextmanager
    def _at(self, where: SourceLocation | None = None):
        """Emit at the innermost open region, located at the user's line."""
        if self._finished:
            raise BuildError(
                f"kernel '{self.name}' is finished; build a new KernelBuilder", where or _caller()
            )
        where = where or _caller()
        with self.context, where.mlir(), ir.InsertionPoint(self._scopes[-1].block):
            yield

    def _index(self, value, what: str) -> ir.Value:
        if isinstance(value, Scalar):
            self._own(value, what)
            return value.value
        if isinstance(value, bool) or not isinstance(value, int):
            raise BuildTypeError(
                f"{what}: expected an int or a run-time index value, got {type(value).__name__}",
                _caller(),
            )
        # One constant per value and region: one made in an enclosing region
        # earlier dominates everything built inside the current one.
        for scope in reversed(self._scopes):
            if value in scope.constants:
                return scope.constants[value]
        constant = arith.ConstantOp(ir.IndexType.get(), value).result
        self._scopes[-1].constants[value] = constant
        return constant

    def _i1(self, value, what: str) -> ir.Value:
        if isinstance(value, Predicate):
            self._own(value, what)
            return value.value
        if not isinstance(value, bool):
            raise BuildTypeError(
                f"{what}: expected a bool (e.g. PRODUCER_INITIAL_PHASE) or a "
                f"run-time phase, got {type(value).__name__}",
                _caller(),
            )
        return arith.ConstantOp(ir.IntegerType.get_signless(1), int(value)).result

    def _own(self, value, what: str):
        if getattr(value, "_builder", self) is not self:
            raise BuildError(f"{what}: the value belongs to another kernel's builder", _caller())
        return value

    def _stage(self, stage, num_stages: int, what: str) -> tuple[ir.Value, object]:
        """(value, key) of a stage index; equal keys mean the same stage."""
        if isinstance(stage, int) and not isinstance(stage, bool) and not 0 <= stage < num_stages:
            raise BuildError(
                f"stage {stage} is outside the {what}'s {num_stages} stages", _caller()
            )
        with self._at():
            value = self._index(stage, f"{what} stage")
        return value, (stage if isinstance(stage, int) else value)

    def _offsets(self, offsets: Sequence, what: str) -> tuple[ir.Value, ir.Value]:
        if isinstance(offsets, (str, bytes)) or len(offsets) != 2:
            raise BuildTypeError(f"{what}: offsets must be [row, col]", _caller())
        with self._at():
            return self._index(offsets[0], f"{what} row"), self._index(offsets[1], f"{what} col")

    def _barrier(self, barrier, what: str) -> BarrierRef:
        where = _caller()
        if isinstance(barrier, Barriers):
            raise BuildTypeError(
                f"{what}: pick one barrier of the array, e.g. barriers[stage]", where
            )
        if not isinstance(barrier, BarrierRef):
            raise BuildTypeError(
                f"{what}: expected one mbarrier, barriers[stage] of an array "
                f"from kb.mbarrier.alloc, got {type(barrier).__name__}",
                where,
            )
        if barrier.barriers._builder is not self:
            raise BuildError(
                f"{what}: the mbarrier was never allocated in this kernel (it "
                f"belongs to another builder); allocate it with "
                f"kb.mbarrier.alloc",
                where,
            )
        if barrier.barriers in self._awaiting_sync:
            raise BuildError(
                f"{what}: the mbarriers allocated at {barrier.barriers.where} are "
                f"used before a block-wide kb.sync() made their initialisation "
                f"visible to every thread",
                where,
            )
        return barrier

    def _require_top_level(self, what: str, why: str) -> None:
        if len(self._scopes) > 1:
            scope = self._scopes[-1]
            raise BuildError(
                f"{what} belongs at the top level of the kernel ({why}), not "
                f"inside the {scope.kind} opened at {scope.where}",
                _caller(),
            )

    @contextlib.contextmanager
    def _region(
        self, block: ir.Block, kind: str, where: SourceLocation, terminator=lambda: scf.YieldOp([])
    ):
        self._scopes.append(_Scope(block, kind, where))
        yield
        with self.context, where.mlir(), ir.InsertionPoint(block):
            terminator()
        self._scopes.pop()

    # Values ------------------------------------------------------------------------

    def global_tensor(self, dtype: str) -> GlobalTensor:
        """The next kernel argument: a rank-2 tensor of `dtype` in global memory."""
        where = _caller()
        _check_dtype(dtype, GLOBAL_DTYPES, "global_tensor")
        if self._finished:
            raise BuildError(f"kernel '{self.name}' is finished", where)
        from wsc.codegen.info import tensor_name

        with self.context:
            type_ = ir.Type.parse(f"memref<?x?x{dtype}>")
            value = self.body.add_argument(type_, where.mlir())
            self.func.attributes["function_type"] = ir.TypeAttr.get(
                ir.FunctionType.get([arg.type for arg in self.body.arguments], [])
            )
        tensor = GlobalTensor(self, value, tensor_name(len(self._tensors)), dtype)
        self._tensors.append(tensor)
        return tensor

    @property
    def block_idx(self) -> _GridIndex:
        """`kb.block_idx.x`: this block's index in the grid (gpu.block_id)."""
        return _GridIndex(self, gpu.BlockIdOp)

    @property
    def grid_dim(self) -> _GridIndex:
        """`kb.grid_dim.x`: the blocks of the launch along x (gpu.grid_dim), e.g.
        the stride of a persistent kernel's tile loop."""
        return _GridIndex(self, gpu.GridDimOp)

    def shared_tensor(self, dtype: str, shape: Sequence[int]) -> SharedTensor:
        """A ring buffer in shared memory of [stages, rows, cols] elements, each stage
        one TMA tile (rows <= 256). A tile that TMA loads and WGMMA reads has
        rows of at most 128 bytes (the swizzle span); a tile only stored from
        registers and copied out may have wider rows, of whole 128-byte spans."""
        where = _caller()
        _check_dtype(dtype, TILE_DTYPES, "shared_tensor")
        shape = tuple(shape)
        if len(shape) != 3 or any(
            isinstance(d, bool) or not isinstance(d, int) or d < 1 for d in shape
        ):
            raise BuildError(
                f"shared_tensor: shape must be [stages, rows, cols] of positive "
                f"ints, got {list(shape)!r}",
                where,
            )
        stages, rows, cols = shape
        row_bytes = cols * ELEMENT_BYTES[dtype]
        if (row_bytes > SWIZZLE_BYTES and row_bytes % SWIZZLE_BYTES) or rows > MAX_TMA_BOX:
            raise BuildError(
                f"shared_tensor: a {rows}x{cols} {dtype} tile breaks the tile "
                f"rules: at most {MAX_TMA_BOX} rows (the TMA box) and "
                f"{SWIZZLE_BYTES} bytes a row (the swizzle span) or a multiple "
                f"of it, it has {row_bytes}",
                where,
            )
        self._require_top_level("shared_tensor", "shared memory is laid out once per block")
        with self._at(where):
            value = dialect.alloc_shared(dialect.shared_buffer_type(stages, rows, cols, dtype))
        return SharedTensor(self, value, dtype, shape)

    def register_tensor(self, dtype: str, shape: Sequence[int]) -> RegisterTile:
        """A zero-filled [rows, cols] tile in the registers of the executing
        warpgroup(s): WGMMA's accumulator (rows a multiple of 64, cols of 8)."""
        where = _caller()
        _check_dtype(dtype, GLOBAL_DTYPES, "register_tensor")
        shape = tuple(shape)
        if (
            len(shape) != 2
            or shape[0] % 64
            or shape[0] < 64
            or shape[1] % 8
            or not 8 <= shape[1] <= 256
        ):
            raise BuildError(
                f"register_tensor: shape must be [rows, cols] with rows a multiple "
                f"of 64 (WGMMA's M) and cols a multiple of 8 in [8, 256] (WGMMA's "
                f"N), got {list(shape)!r}",
                where,
            )
        with self._at(where):
            value = dialect.acc_alloc(dialect.acc_type(shape, dtype))
        return RegisterTile(self, value, dtype, shape)

    def cast(self, tile: RegisterTile, dtype: str) -> RegisterTile:
        """The tile converted element-wise to `dtype` (round to nearest even)."""
        _expect(tile, RegisterTile, "cast", "a register tile")
        self._own(tile, "cast")
        _check_dtype(dtype, GLOBAL_DTYPES, "cast")
        with self._at():
            return RegisterTile(self, dialect.cast(tile.value, dtype), dtype, tile.shape)

    def store_global(self, dst: GlobalTensor, tile: RegisterTile, offsets: Sequence) -> None:
        """Store a register tile into dst[offsets[0]:+rows, offsets[1]:+cols], clipped at
        dst's bounds."""
        where = _caller()
        self._own(_expect(dst, GlobalTensor, "store_global dst", "a global tensor"), "store_global")
        self._own(
            _expect(tile, RegisterTile, "store_global tile", "a register tile"), "store_global"
        )
        if tile.dtype != dst.dtype:
            raise BuildTypeError(
                f"store_global: the tile is {tile.dtype} but '{dst.name}' is "
                f"{dst.dtype}; convert it with kb.cast(tile, {dst.dtype!r})",
                where,
            )
        row, col = self._offsets(offsets, "store_global")
        with self._at(where):
            dialect.store(tile.value, dst.value, row, col)

    def store_shared(self, dst: SharedTile, tile: RegisterTile) -> None:
        """Write a register tile into the stage tile `dst` (e.g. sc[stage]) of the
        same shape and dtype, in the layout a TMA store of `dst` reads. Before
        a TMA store of it: kb.fence_proxy_async() in every writing thread, then
        a sync; before kb.shared_to_global, a sync."""
        where = _caller()
        _expect(dst, SharedTile, "store_shared dst", "a stage of a shared tensor, e.g. sc[stage]")
        self._own(
            _expect(tile, RegisterTile, "store_shared tile", "a register tile"), "store_shared"
        )
        if not dst.is_whole_stage:
            raise BuildError("store_shared: dst must be a whole stage tile, ring[stage]", where)
        if tile.dtype != dst.dtype:
            raise BuildTypeError(
                f"store_shared: the tile is {tile.dtype} but dst is "
                f"{dst.dtype}; convert it with kb.cast(tile, {dst.dtype!r})",
                where,
            )
        if list(tile.shape) != [dst.rows, dst.cols]:
            raise BuildError(
                f"store_shared: the tile is {list(tile.shape)} but the stage tile "
                f"is [{dst.rows}, {dst.cols}]",
                where,
            )
        with self._at(where):
            dialect.store_shared(tile.value, dst.ring.value, dst.stage)

    def shared_to_global(self, src: SharedTile, dst: GlobalTensor, offsets: Sequence) -> None:
        """Copy the stage tile `src` into dst[offsets[0]:+rows, offsets[1]:+cols],
        clipped at dst's bounds, with every thread of the group storing: each
        store of a warp writes 32 consecutive elements of a row, whatever
        dst's row length (kb.tma.shared_to_global needs 16-byte rows). Sync
        between the writes to `src` and this copy, and again before `src` is
        written again."""
        where = _caller()
        row, col = self._stage_copy_offsets(src, dst, offsets, "shared_to_global", where)
        with self._at(where):
            dialect.coalesced_store(src.ring.value, src.stage, dst.value, row, col)

    def _stage_copy_offsets(
        self, src: SharedTile, dst: GlobalTensor, offsets: Sequence, what: str, where
    ) -> tuple[ir.Value, ir.Value]:
        """The checks of a copy of a whole stage tile into a global tensor; its
        (row, col) offsets."""
        _expect(src, SharedTile, f"{what} src", "a stage of a shared tensor, e.g. sc[stage]")
        self._own(_expect(dst, GlobalTensor, f"{what} dst", "a global tensor"), what)
        if src.dtype != dst.dtype:
            raise BuildTypeError(
                f"{what}: src is {src.dtype} but dst '{dst.name}' is {dst.dtype}", where
            )
        if not src.is_whole_stage:
            raise BuildError(f"{what}: src must be a whole stage tile, ring[stage]", where)
        return self._offsets(offsets, what)

    def fence_proxy_async(self) -> None:
        """Make this thread's writes to shared memory visible to later TMA copies."""
        with self._at():
            dialect.fence_proxy_async()

    def sync(self) -> None:
        """A barrier of every thread of the block, or of the enclosing thread group.
        At the top level it also makes mbarrier initialisation visible."""
        with self._at():
            dialect.sync()
        if len(self._scopes) == 1:
            self._awaiting_sync.clear()

    def cluster_sync(self) -> None:
        """A barrier of every thread of every CTA of the cluster; it makes
        mbarrier initialisation visible to the other CTAs too."""
        where = _caller()
        if self.cluster_size < 2:
            raise BuildError(
                "cluster_sync needs a kernel in clusters (KernelBuilder(cluster_size=2, ...))",
                where,
            )
        if self._thread_group is not None:
            raise BuildError(
                "cluster_sync inside a thread group: every thread of the cluster must reach it",
                where,
            )
        with self._at(where):
            dialect.cluster_sync()
        if len(self._scopes) == 1:
            self._awaiting_sync.clear()

    @property
    def cluster_rank(self) -> Scalar:
        """This CTA's rank in its cluster, 0 .. cluster_size - 1."""
        with self._at():
            return Scalar(self, dialect.cluster_rank())

    # Regions -------------------------------------------------------------------------

    @contextlib.contextmanager
    def thread_group(
        self, thread_begin: int, num_threads: int, role: str, max_registers: int | None = None
    ):
        """Code for threads [thread_begin, thread_begin + num_threads) only: a warp
        role (`wsc.role` guarding an scf.if). `role` names it ("producer",
        "consumer"); `max_registers` is its setmaxnreg budget."""
        where = _caller()
        if not isinstance(role, str) or not role:
            raise BuildTypeError(
                f'thread_group: role must name the role (e.g. "producer"), got {role!r}', where
            )
        if self._thread_group is not None:
            raise BuildError("thread groups do not nest: close the enclosing one first", where)
        for name, value in (("thread_begin", thread_begin), ("num_threads", num_threads)):
            if isinstance(value, bool) or not isinstance(value, int) or value % WARP_SIZE:
                raise BuildError(
                    f"thread_group: {name} must be a multiple of {WARP_SIZE} "
                    f"(whole warps), got {value!r}",
                    where,
                )
        if (
            thread_begin < 0
            or num_threads < WARP_SIZE
            or thread_begin + num_threads > self.num_threads
        ):
            raise BuildError(
                f"thread_group: threads [{thread_begin}, "
                f"{thread_begin + num_threads}) are not inside the block of "
                f"{self.num_threads} threads",
                where,
            )
        self._require_top_level("thread_group", "roles split the block's threads")
        with self._at(where):
            guard = scf.IfOp(dialect.role(role, thread_begin, num_threads, max_registers))
        self._thread_group = (thread_begin, num_threads)
        with self._region(guard.then_block, f"thread group '{role}'", where):
            yield
        self._thread_group = None

    @contextlib.contextmanager
    def single_thread(self):
        """Code for one thread of the enclosing thread group (of the block outside
        groups): `wsc.elect` guarding an scf.if."""
        where = _caller()
        with self._at(where):
            guard = scf.IfOp(dialect.elect())
        with self._region(guard.then_block, "single_thread", where):
            yield

    @contextlib.contextmanager
    def if_(self, condition: Predicate):
        """Code that runs where `condition` holds."""
        where = _caller()
        _expect(condition, Predicate, "if_", "a run-time predicate (a comparison)")
        with self._at(where):
            guard = scf.IfOp(self._i1(condition, "if_"))
        with self._region(guard.then_block, "if_", where):
            yield

    def range(
        self,
        start,
        stop,
        step: int,
        *,
        stages: int,
        phase: bool | None = None,
        unroll: int | None = None,
        ring: TileLoop | None = None,
    ) -> Iterator[RingLoop]:
        """The ring loop over offsets start, start + step, ... < stop: one trip per
        K tile, carrying the ring position (stage, phase) from (0, phase) and
        advancing it after every trip. `phase` is the role's initial phase
        (PRODUCER_INITIAL_PHASE or CONSUMER_INITIAL_PHASE). `unroll` =
        `stages` asks for --unroll-ring-buffer, which unrolls every ring loop of
        the kernel so each stage index is a constant. With step 1 the offsets
        are the trips themselves (e.g. K tile numbers up to a `cdiv` count).

        With `ring` (a tile loop of kb.tile_range, instead of `phase`) the
        loop starts at the position the tile loop carries and hands back the
        one it stops at, for the next tile. It must be the body's only ring
        loop, directly inside it, and cannot be unrolled: its stages are
        run-time values.

        The body runs once, in Python, to build the loop; leave it by its end
        (no break or return)."""
        where = _caller()
        if isinstance(step, bool) or not isinstance(step, int) or step < 1:
            raise BuildError(f"range: step must be a positive int, got {step!r}", where)
        _check_stages(stages, "range", where)
        if ring is not None:
            self._continue_tiles(ring, stages, phase, unroll, where)
        elif not isinstance(phase, bool):
            raise BuildTypeError(
                "range: phase must be PRODUCER_INITIAL_PHASE or CONSUMER_INITIAL_PHASE (a bool)",
                where,
            )
        if unroll is not None and unroll != stages:
            raise BuildError(
                f"range: --unroll-ring-buffer unrolls a ring loop by its number "
                f"of stages; unroll={unroll!r} differs from stages={stages}",
                where,
            )
        self._unroll.append((unroll is not None, where))
        with self._at(where):
            start_value = self._index(start, "range start")
            span = self._index(stop, "range stop")
            if not (isinstance(start, int) and start == 0):
                span = arith.SubIOp(span, start_value).result
            trips = span
            if step != 1:
                trips = arith.CeilDivUIOp(span, self._index(step, "range step")).result
            zero = self._index(0, "stage")
            position = (
                [zero, self._i1(phase, "phase")]
                if ring is None
                else [ring.stage.value, ring.phase.value]
            )
            loop = scf.ForOp(zero, trips, self._index(1, "step"), position)
        it = RingLoop(self, loop, start, step, stages, where, continues=ring)
        if ring is not None:
            ring.continued_by = it

        def advance():
            stage, phase_ = loop.inner_iter_args
            scf.YieldOp(list(dialect.ring_advance(stage, phase_, stages)))

        with self._region(loop.body, "ring loop", where, terminator=advance):
            yield it
        it.finished = True

    def _continue_tiles(
        self, ring, stages: int, phase, unroll: int | None, where: SourceLocation
    ) -> None:
        """The rules of a ring loop that continues tile loop `ring`."""
        _expect(ring, TileLoop, "range ring", "a tile loop (the `tiles` of kb.tile_range)")
        self._own(ring, "range")
        if ring.finished or self._scopes[-1].block != ring.loop.body:
            raise BuildError(
                f"range: a ring loop continues the tile loop at {ring.where} "
                f"directly inside its body (not after it, nor inside a nested "
                f"block, whose result the tile loop could not carry)",
                where,
            )
        if ring.continued_by is not None:
            raise BuildError(
                f"range: the tile loop at {ring.where} is already continued by "
                f"the ring loop at {ring.continued_by.where}; it carries one ring position",
                where,
            )
        if stages != ring.num_stages:
            raise BuildError(
                f"range: stages={stages} differs from the {ring.num_stages} "
                f"stages of the tile loop at {ring.where}",
                where,
            )
        if phase is not None:
            raise BuildError(
                "range: with ring=, the loop starts at the tile loop's phase; leave out phase=",
                where,
            )
        if unroll is not None:
            raise BuildError(
                "range: a ring loop that continues a tile loop starts at a "
                "run-time stage, which --unroll-ring-buffer cannot unroll; "
                "leave out unroll=",
                where,
            )

    def tile_range(self, start, stop, step, *, stages: int, phase: bool) -> Iterator[TileLoop]:
        """A persistent kernel's tile loop over tiles start, start + step, ... <
        stop (e.g. from kb.block_idx.x by kb.grid_dim.x), carrying the ring
        position of a ring of `stages` from (0, phase) across tiles: the ring
        loop of each trip, `kb.range(..., ring=tiles)`, starts where the
        previous trip's stopped (see TileLoop).

        The body runs once, in Python, to build the loop; leave it by its end
        (no break or return)."""
        where = _caller()
        if isinstance(step, int) and (isinstance(step, bool) or step < 1):
            raise BuildError(
                f"tile_range: step must be a positive int or a run-time value, got {step!r}",
                where,
            )
        _check_stages(stages, "tile_range", where)
        if not isinstance(phase, bool):
            raise BuildTypeError(
                "tile_range: phase must be PRODUCER_INITIAL_PHASE or "
                "CONSUMER_INITIAL_PHASE (a bool)",
                where,
            )
        with self._at(where):
            loop = scf.ForOp(
                self._index(start, "tile_range start"),
                self._index(stop, "tile_range stop"),
                self._index(step, "tile_range step"),
                [self._index(0, "stage"), self._i1(phase, "phase")],
            )
        tiles = TileLoop(self, loop, stages, where)

        def carry():
            if tiles.continued_by is None:
                raise BuildError(
                    f"the tile loop at {where} carries a ring position, but no "
                    f"ring loop of its body continues it (kb.range(..., ring=tiles))",
                    where,
                )
            scf.YieldOp(list(tiles.continued_by.loop.results))

        with self._region(loop.body, "tile loop", where, terminator=carry):
            yield tiles
        tiles.finished = True

    def drain(self, barriers: Barriers, after: RingLoop) -> None:
        """The producer's drain (the seed's loop of min(stages, k_tiles) waits):
        after the ring loop `after`, wait on `barriers` for the last release of
        every stage that loop filled, so the producer leaves only when no
        consumer will arrive again."""
        where = _caller()
        _expect(barriers, Barriers, "drain barriers", "an mbarrier array")
        _expect(after, RingLoop, "drain after", "the ring loop (the `it` of `for it in kb.range`)")
        self._own(barriers, "drain")
        self._own(after, "drain")
        if not after.finished:
            raise BuildError("drain: runs after the ring loop, not inside it", where)
        if after.continues is not None:
            raise BuildError(
                f"drain: the ring loop at {after.where} continues a tile loop, "
                f"so it need not start at stage 0; drain counts the stages a "
                f"loop from stage 0 filled",
                where,
            )
        stages = after.num_stages
        with self._at(where):
            ring_size = self._index(stages, "stages")
            one = self._index(1, "step")
            loop = scf.ForOp(
                self._index(0, "start"),
                ring_size,
                one,
                [after.loop.results[0], after.loop.results[1]],
            )
            with ir.InsertionPoint(loop.body):
                stage, phase = loop.inner_iter_args
                # Position trips + j waits for the release of fill trips + j - N,
                # which exists only when trips + j >= N.
                position = arith.AddIOp(
                    loop.induction_variable, after.loop.operation.operands[1]
                ).result
                filled = arith.CmpIOp(arith.CmpIPredicate.uge, position, ring_size).result
                guard = scf.IfOp(filled)
                with ir.InsertionPoint(guard.then_block):
                    dialect.mbarrier_wait(barriers.value, stage, phase)
                    scf.YieldOp([])
                scf.YieldOp(list(dialect.ring_advance(stage, phase, stages)))

    def pipeline(self, num_stages: int, consumer_arrivals: int) -> Pipeline:
        """The full/empty barrier pair of a ring of `num_stages` (see Pipeline)."""
        where = _caller()
        return Pipeline(
            self,
            self.mbarrier.alloc(1, num_stages),
            self.mbarrier.alloc(consumer_arrivals, num_stages),
            where,
        )

    # Finishing ------------------------------------------------------------------------

    def finish(self) -> Kernel:
        """Close the kernel and verify it; raises BuildError at the first problem,
        located in the user's source."""
        where = _caller()
        if len(self._scopes) > 1:
            scope = self._scopes[-1]
            raise BuildError(
                f"the {scope.kind} opened at {scope.where} was left before its end "
                f"(a break or return inside a builder loop or block)",
                where,
            )
        if self._finished:
            raise BuildError(f"kernel '{self.name}' is already finished", where)
        with self.context, where.mlir(), ir.InsertionPoint(self.body):
            func.ReturnOp([])
        self._finished = True
        unrolled = {flag for flag, _ in self._unroll}
        if len(unrolled) > 1:
            plain = next(loc for flag, loc in self._unroll if not flag)
            raise BuildError(
                f"--unroll-ring-buffer unrolls every ring loop of a kernel, but "
                f"the ring loop at {plain} has no unroll=",
                plain,
            )
        kernel = Kernel(self.module, self.context, self.name, self.grid, unroll=True in unrolled)
        kernel.verify()
        return kernel


class _GridIndex:
    """x, y and z of a launch index: `op` is gpu.BlockIdOp or gpu.GridDimOp."""

    def __init__(self, builder: KernelBuilder, op):
        self._kb = builder
        self._op = op

    def _dim(self, dimension) -> Scalar:
        with self._kb._at():
            return Scalar(self._kb, self._op(dimension).result)

    @property
    def x(self) -> Scalar:
        return self._dim(gpu.Dimension.x)

    @property
    def y(self) -> Scalar:
        return self._dim(gpu.Dimension.y)

    @property
    def z(self) -> Scalar:
        return self._dim(gpu.Dimension.z)


class Pipeline:
    """A ring's hand-off between a producer and its consumers, in the names of
    the protocol (the tutorial's V4 `Pipeline`):

        producer: acquire (wait until the stage is empty), commit (declare the
                  bytes the copies will deliver), ..., then drain
        consumer: wait (until the stage is full), ..., release (the stage is empty)

    `full[stage]` completes when a stage's copies have landed (1 arrival plus
    the transaction bytes); `empty[stage]` when every consumer thread has
    released it (`consumer_arrivals` arrivals)."""

    def __init__(
        self, builder: KernelBuilder, full: Barriers, empty: Barriers, where: SourceLocation
    ):
        self._kb = builder
        self.full = full
        self.empty = empty
        self.num_stages = full.num_barriers
        self.where = where

    def producer_range(self, start, stop, step: int, unroll: int | None = None):
        """The producer's ring loop: it starts at PRODUCER_INITIAL_PHASE, so the
        first pass over the fresh empty barriers does not block."""
        return self._kb.range(
            start, stop, step, stages=self.num_stages, phase=PRODUCER_INITIAL_PHASE, unroll=unroll
        )

    def consumer_range(self, start, stop, step: int, unroll: int | None = None):
        """A consumer's ring loop: it starts at CONSUMER_INITIAL_PHASE, so its first
        wait blocks until the first copy has landed."""
        return self._kb.range(
            start, stop, step, stages=self.num_stages, phase=CONSUMER_INITIAL_PHASE, unroll=unroll
        )

    def acquire(self, it: RingLoop) -> None:
        """Producer: wait until this trip's stage is empty."""
        self._kb.mbarrier.wait(self.empty[it.stage], phase=it.phase)

    def commit(self, it: RingLoop, transaction_bytes: int) -> None:
        """Producer, one thread: declare the bytes this trip's copies deliver to
        full[stage] (pass `pipe.full[it.stage]` as each copy's mbarrier)."""
        self._kb.mbarrier.arrive_and_expect_tx(self.full[it.stage], transaction_bytes)

    def wait(self, it: RingLoop) -> None:
        """Consumer: wait until this trip's stage is full."""
        self._kb.mbarrier.wait(self.full[it.stage], phase=it.phase)

    def release(self, stage, per_warp: bool = False) -> None:
        """Consumer: hand `stage` back to the producer (after the WGMMAs reading it
        have completed); with `per_warp`, one arrival per warp (count warps in
        `consumer_arrivals`)."""
        self._kb.mbarrier.arrive(self.empty[stage], per_warp=per_warp)

    def drain(self, after: RingLoop) -> None:
        """Producer, after its loop: wait for the last release of every filled stage."""
        self._kb.drain(self.empty, after)


# Built kernels -------------------------------------------------------------------------


def _located_failure(engine: DiagnosticEngine) -> str:
    return "\n".join(d.format() for d in engine.diagnostics)


class Kernel:
    """A finished, verified kernel: its module and how to compile it.

    `str(kernel)` is its IR. `warp_specialize(...)` and `unroll_ring_buffer()`
    return new Kernels with the pass applied; `compile(...)` runs what is left
    (--unroll-ring-buffer when the ring loops asked for it, else the protocol
    check) and lowers to PTX."""

    def __init__(
        self,
        module: ir.Module | ir.Operation,
        context: ir.Context,
        name: str,
        grid: tuple[tuple[str, int], ...],
        unroll: bool,
        made_by: str = "builder",
        previous: Kernel | None = None,
        persistent: bool = False,
    ):
        self.module = module
        self.context = context
        self.name = name
        #: (size, tile) pairs: the tiles of each size the kernel covers. A
        #: persistent kernel strides over all of them by gridDim.x, so its
        #: launch grid is their count on x, capped at the SM count by the
        #: runtime (Artifact.launch_grid); otherwise one block per tile.
        self.grid = grid
        self.persistent = persistent
        self.unroll = unroll
        #: "builder", or the flag of the pass that made this kernel from `previous`.
        self.made_by = made_by
        self.previous = previous

    def lineage(self) -> list[Kernel]:
        """The built kernel and every kernel a pass made from it, ending with this one."""
        chain = [self]
        while chain[-1].previous is not None:
            chain.append(chain[-1].previous)
        return chain[::-1]

    def __str__(self) -> str:
        return str(self.module)

    def verify(self) -> None:
        """MLIR's verifier and the wsc rules; BuildError at the first violation."""
        from wsc.verifier import verify_wsc

        engine = DiagnosticEngine("<kernel>")
        with self.context:
            try:
                self.module.operation.verify()
                verify_wsc(self.module.operation)
            except ir.MLIRError as error:
                engine.add_mlir_error(error)
            except PassError as error:
                engine.add_pass_error(error)
        if engine.has_errors:
            first = engine.diagnostics[0]
            where = (
                SourceLocation(first.filename, first.line, first.col)
                if first.line is not None
                else None
            )
            raise BuildError(
                first.message if len(engine.diagnostics) == 1 else _located_failure(engine), where
            )

    def _apply(self, wsc_pass) -> Kernel:
        from wsc.compiler import CompileError

        clone = self.module.operation.clone()
        engine = DiagnosticEngine("<kernel>")
        if not wsc_pass.apply(clone.operation, engine):
            raise CompileError(_located_failure(engine))
        return Kernel(
            clone,
            self.context,
            self.name,
            self.grid,
            self.unroll,
            wsc_pass.ARGUMENT,
            self,
            self.persistent,
        )

    def warp_specialize(self, **options) -> Kernel:
        """This (non-specialized) kernel through --warp-specialize, with its options
        as keyword arguments: num_stages, num_consumer_groups, producer, ..."""
        from wsc.passes.warp_specialize import WarpSpecialize

        return self._apply(WarpSpecialize(**options))

    def unroll_ring_buffer(self) -> Kernel:
        """This kernel through --unroll-ring-buffer."""
        from wsc.passes.unroll_ring_buffer import UnrollRingBuffer

        unrolled = self._apply(UnrollRingBuffer())
        unrolled.unroll = False
        return unrolled

    def remaining_passes(self) -> list:
        """What compile() runs before lowering."""
        from wsc.passes.unroll_ring_buffer import UnrollRingBuffer
        from wsc.passes.verify_pipeline import VerifyPipeline

        return [UnrollRingBuffer()] if self.unroll else [VerifyPipeline()]

    def compile(self, dump_dir: str | os.PathLike | None = None) -> CompiledKernel:
        """Run the remaining passes and lower to PTX (sizes are run-time
        parameters, so one compile serves every problem). `dump_dir` receives
        the IR after each pass."""
        from wsc.compiler import compile_module

        with self.context:
            result = compile_module(
                self.module.operation.clone(), self.remaining_passes(), dump_dir
            )
        return CompiledKernel(self, result)


class CompiledKernel:
    """A kernel lowered to PTX: `write_artifact` makes the directory the runtime
    launches for one problem."""

    def __init__(self, kernel: Kernel, result):
        self.kernel = kernel
        #: The compile driver's CompileResult: ptx, info, stages, ptxas.
        self.result = result

    @property
    def ptx(self) -> str:
        return self.result.ptx

    def summary(self) -> str:
        """One line per compile stage: its name, time and what the IR holds after it."""
        width = max(len(stage.name) for stage in self.result.stages)
        return "\n".join(
            f"  {stage.name:<{width}}  {stage.seconds * 1000:7.1f} ms  {stage.summary}"
            for stage in self.result.stages
        )

    def write_artifact(self, out_dir: str | os.PathLike | None = None, **sizes: int) -> Path:
        """kernel.ptx and kernel.json for the problem `sizes` (e.g. m=, n=, k=), in
        `out_dir` or a new temporary directory: tensor shapes from the sizes
        the kernel reads (KernelInfo.dims), the grid from the kernel's (size,
        tile) pairs, and for a matmul what `wsc run --check` needs."""
        from wsc.compiler import write_artifact

        info = self.result.info
        grid = self.kernel.grid
        problem = dict(sizes)
        config = {f"block_{size}": tile for size, tile in grid}
        if self.kernel.persistent:
            config["persistent"] = True
        if info.cluster > 1:
            config["cluster_m"] = info.cluster
        used = {name for name, spec in info.tensors.items() if spec["role"] != "unused"}
        if {"a", "b", "c"} <= used and {"m", "n", "k"} <= set(sizes):
            # B is [N, K] when its first dim is N: read from the kernel, not
            # from the sizes, which cannot tell the layouts apart where N = K.
            b_layout = "nk" if ["b", 0] in info.dims.get("n", []) else "kn"
            problem.update(
                dtype=info.tensors["a"]["dtype"],
                out_dtype=info.tensors["c"]["dtype"],
                b_layout=b_layout,
            )
            if info.accumulator == "f16":
                problem["accumulator"] = "f16"
        out = Path(out_dir) if out_dir is not None else Path(tempfile.mkdtemp(prefix="wsc-"))
        return write_artifact(
            out, self.result, dict(sizes), grid, problem, config, persistent=self.kernel.persistent
        )


# Structural comparison ------------------------------------------------------------------

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
