"""KernelBuilder: one kernel, a func.func of wsc IR, built op by op from
Python; its regions (thread groups, single_thread, if_, ring loops, tile
loops) and the Pipeline that names a ring's hand-off."""

from __future__ import annotations

import contextlib
import dis
import inspect
import math
import numbers
import operator
import textwrap
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from mlir import ir
from mlir.dialects import arith, func, gpu, scf

from wsc import dialect
from wsc.builder.errors import (
    BuildError,
    BuildTypeError,
    SourceLocation,
    caller,
    check_dtype,
    expect,
    warn,
)
from wsc.builder.kernel import Kernel
from wsc.builder.ops import MbarrierOps, SplitKOps, TmaOps, WgmmaOps
from wsc.builder.values import (
    GLOBAL_DTYPES,
    REGISTER_DTYPES,
    TILE_DTYPES,
    BarrierRef,
    Barriers,
    GlobalTensor,
    KernelScalar,
    Predicate,
    RegisterTile,
    RingLoop,
    Scalar,
    SharedTensor,
    SharedTile,
    SplitKWorkspace,
    TileComparison,
    TileLoop,
    f32,
)
from wsc.dialect import CONSUMER_INITIAL_PHASE, PRODUCER_INITIAL_PHASE
from wsc.ir_utils import (
    BLOCKS_PER_SM_ATTR,
    CLUSTER_SIZE_ATTR,
    KERNEL_THREADS_ATTR,
    defining_op,
    use_owner,
)
from wsc.ops import (
    BROADCAST_ALONG,
    COL_REDUCE_ROWS,
    TILE_PREDICATES,
    broadcast_shape,
    writes_tensor,
)
from wsc.runtime.checks import check_config_problems, is_known_check
from wsc.target.hopper import (
    ELEMENT_BYTES,
    HALF_DTYPES,
    MAX_BLOCK_THREADS,
    MAX_BLOCKS_PER_SM,
    MAX_PORTABLE_CLUSTER,
    MAX_TMA_BOX,
    WARP_ROWS,
    WARP_SIZE,
    kernel_name_problem,
    swizzle_padded_cols,
)


def _check_stages(stages, what: str, where: SourceLocation) -> None:
    if isinstance(stages, bool) or not isinstance(stages, int) or stages < 1:
        raise BuildError(f"{what}: stages must be a positive int, got {stages!r}", where)


@dataclass
class _Scope:
    """A region being built: the block ops go into, what opened it and where,
    and the index constants made in it."""

    block: ir.Block
    kind: str
    where: SourceLocation
    constants: dict[int, ir.Value] = field(default_factory=dict)


def _broadcast_shape(shapes: list[tuple[int, ...]], what: str) -> tuple[int, int]:
    """The shape of an element-wise result (wsc.ops.broadcast_shape); a
    BuildError at the caller's line where the tiles do not combine."""
    widest = broadcast_shape(shapes)
    if widest is None:
        raise BuildError(
            f"{what}: tiles of shapes {', '.join(str(list(shape)) for shape in shapes)}: "
            f"element-wise math takes tiles of one shape, or row vectors [rows, 1] of its rows",
            caller(),
        )
    rows, cols = widest
    return rows, cols


#: What a reference function may use from outside itself (beside builtins):
#: the check that runs it provides these and nothing else.
REFERENCE_NAMES = ("np", "numpy", "math")


def _reference(function, where: SourceLocation) -> dict[str, str]:
    """A reference function as its artifacts carry it (the "reference"
    check's config): its name and source, which must stand alone."""
    if inspect.isfunction(function) and function.__name__ == "<lambda>":
        raise BuildTypeError(
            "check: a lambda has no name or source of its own to travel in the artifact; "
            "define the reference with def",
            where,
        )
    if not inspect.isfunction(function):
        raise BuildTypeError(
            f"check: expected a check's name or a reference function (a def), got "
            f"{type(function).__name__}",
            where,
        )
    names = inspect.getclosurevars(function)
    outside = sorted(set(names.nonlocals) | (set(names.globals) - set(REFERENCE_NAMES)))
    imported = sorted(
        module
        for module in _imported_modules(function.__code__)
        if module.partition(".")[0] not in REFERENCE_NAMES
    )
    if outside or imported:
        what = ", ".join(outside) if outside else f"import {', '.join(imported)}"
        raise BuildError(
            f"check: reference '{function.__name__}' uses {what} from outside "
            f"it; a reference travels alone in the artifact, with {', '.join(REFERENCE_NAMES)}",
            where,
        )
    try:
        source = textwrap.dedent(inspect.getsource(function))
    except OSError as error:
        raise BuildError(
            f"check: the source of reference '{function.__name__}' cannot be read ({error})",
            where,
        ) from error
    return {"function": function.__name__, "source": source}


def _imported_modules(code) -> Iterator[str]:
    """The modules `code` and the functions it defines import."""
    for instruction in dis.get_instructions(code):
        if instruction.opname == "IMPORT_NAME":
            yield instruction.argval
    for constant in code.co_consts:
        if inspect.iscode(constant):
            yield from _imported_modules(constant)


def _check_along(along: str, what: str) -> None:
    """`along` names a tile axis of BROADCAST_ALONG (a BuildError at the caller's line)."""
    if along not in BROADCAST_ALONG:
        raise BuildError(
            f"{what}: along must be one of {', '.join(map(repr, BROADCAST_ALONG))}, got {along!r}",
            caller(),
        )


def _grid_axis(pair) -> tuple[str, int] | None:
    """A grid axis (size name, positive tile), or None for anything else."""
    if not isinstance(pair, (list, tuple)) or len(pair) != 2 or not isinstance(pair[0], str):
        return None
    size, tile = pair
    if isinstance(tile, bool):
        return None
    try:
        tile = operator.index(tile)
    except TypeError:
        return None
    return (size, tile) if tile >= 1 else None


class KernelBuilder:
    """Builds one kernel, a func.func of wsc IR, op by op.

    `num_warps` fixes the block size (num_warps * 32 threads). `grid` says how
    many blocks a launch needs: one (size, tile) pair per grid dimension x, y,
    launching cdiv(size, tile) blocks, where size names a problem size the
    kernel reads ("m", "n" or "k" for a matmul). `check` names the reference
    `wsc run --check` compares its artifacts with ("matmul": C = A @ op(B),
    wsc.kernels.matmul.check), and `check_config` what that check reads of
    the kernel beside its tensors, written into each artifact's config (e.g.
    the matmul's {"epilogue": {"bias": "d", "activation": "gelu"}}). `check`
    may also be the author's own reference, a function of the inputs' float64
    values by tensor name that returns the outputs' (an array, or a dict by
    name): `def reference(a, b): return a @ b.T`. It travels in the
    artifacts (wsc.kernels.reference.check), so it may use numpy as np and
    math but nothing else from outside it; `check_config={"tolerance": t,
    "input_scale": s}` sets the relative error allowed and the scale of the
    random inputs, and `"reference_arguments": {name: value}` passes it
    constants of the build by keyword. A
    kernel whose registers ptxas spills to local memory fails to compile
    unless `allow_spills`. A `persistent` kernel strides over its grid's
    work items (the product of the grid's tile counts) by kb.grid_dim.x,
    and a launch has at most `blocks_per_sm` blocks per SM: the blocks an SM
    runs at once, which ptxas fits the registers to (65536 over the block's
    threads, in whole warpgroups, and the blocks). The builder owns its MLIR
    context, unless given one."""

    def __init__(
        self,
        name: str = "kernel",
        *,
        num_warps: int = 4,
        grid: Sequence[tuple[str, int]] = (),
        cluster_size: int = 1,
        context: ir.Context | None = None,
        check: str | Callable | None = None,
        check_config: Mapping[str, Any] | None = None,
        allow_spills: bool = False,
        persistent: bool = False,
        blocks_per_sm: int = 1,
    ):
        where = caller()
        #: The author's reference function and where it was given (checked
        #: against the kernel's arguments by finish()).
        self._reference: tuple[Callable, SourceLocation] | None = None
        given_config = dict(check_config or {})
        if check is not None and not isinstance(check, str):
            check_config = {**(check_config or {}), "reference": _reference(check, where)}
            self._reference = (check, where)
            check = "reference"
        for flag, value in (("allow_spills", allow_spills), ("persistent", persistent)):
            if not isinstance(value, bool):
                raise BuildTypeError(f"{flag} must be a bool, got {value!r}", where)
        if check_config is not None and check is None:
            raise BuildError(
                "check_config describes the kernel to a check: name one (check=)", where
            )
        if isinstance(check, str) and not is_known_check(check):
            raise BuildError(
                f"check={check!r}: no check of that name is registered "
                f"(wsc.runtime.checks.register_check) or packaged (wsc.kernels.{check}.check); "
                f"give the reference as a Python function instead (check=fn)",
                where,
            )
        if check is not None:
            for problem in check_config_problems(check, given_config):
                raise BuildError(f"check_config: {problem}", where)
        for count, number, most in (
            ("blocks_per_sm", blocks_per_sm, MAX_BLOCKS_PER_SM),
            ("cluster_size", cluster_size, MAX_PORTABLE_CLUSTER),
            ("num_warps", num_warps, MAX_BLOCK_THREADS // WARP_SIZE),
        ):
            if isinstance(number, bool) or not isinstance(number, int) or not 1 <= number <= most:
                raise BuildError(f"{count} must be an int in [1, {most}], got {number!r}", where)
        unnamable = kernel_name_problem(name)
        if unnamable is not None:
            raise BuildError(unnamable, where)
        pairs = [_grid_axis(pair) for pair in grid] if isinstance(grid, (list, tuple)) else [None]
        axes = [pair for pair in pairs if pair is not None]
        if len(axes) > 3 or len(axes) < len(pairs):
            raise BuildError(
                f"grid must be up to 3 (size name, positive tile) pairs, e.g. "
                f"[('m', 128), ('n', 256)], got {grid!r}",
                where,
            )
        self.grid = tuple(axes)
        self.name = name
        self.check = check
        self.check_config = dict(check_config or {})
        self.allow_spills = allow_spills
        self.persistent = persistent
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
            if blocks_per_sm > 1:
                self.func.attributes[BLOCKS_PER_SM_ATTR] = ir.IntegerAttr.get(i32, blocks_per_sm)
            self.body = self.func.add_entry_block()
        self.cluster_size = cluster_size
        # Innermost last: (block, kind, where) of each open region.
        self._scopes: list[_Scope] = [_Scope(self.body, "kernel", where)]
        self._tensors: list[GlobalTensor] = []
        self._scalars: list[KernelScalar] = []
        self._scalar_defaults: dict[str, float] = {}
        self._awaiting_sync: list[Barriers] = []
        self._thread_group: tuple[int, int] | None = None
        self._unroll: list[tuple[bool, SourceLocation]] = []
        self._finished = False
        self.mbarrier = MbarrierOps(self)
        self.tma = TmaOps(self)
        self.wgmma = WgmmaOps(self)
        self.split_k = SplitKOps(self)
        self._workspace: SplitKWorkspace | None = None
        #: The grid axes kb.block_idx read (0, 1, 2 for x, y, z), where first.
        self._block_axes: dict[int, SourceLocation] = {}
        self._grid_dim_read = False
        self._created = where

    # Plumbing --------------------------------------------------------------------

    @contextlib.contextmanager
    def _at(self, where: SourceLocation | None = None):
        """Emit at the innermost open region, located at the user's line."""
        if self._finished:
            raise BuildError(
                f"kernel '{self.name}' is finished; build a new KernelBuilder", where or caller()
            )
        where = where or caller()
        with self.context, where.mlir(), ir.InsertionPoint(self._scopes[-1].block):
            yield

    def _index(self, value, what: str) -> ir.Value:
        if isinstance(value, Scalar):
            self._own(value, what)
            return value.value
        if isinstance(value, bool) or not isinstance(value, int):
            raise BuildTypeError(
                f"{what}: expected an int or a run-time index value, got {type(value).__name__}",
                caller(),
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
                caller(),
            )
        return arith.ConstantOp(ir.IntegerType.get_signless(1), int(value)).result

    def _own(self, value, what: str):
        if getattr(value, "_builder", self) is not self:
            raise BuildError(f"{what}: the value belongs to another kernel's builder", caller())
        return value

    def _stage(self, stage, num_stages: int, what: str) -> tuple[ir.Value, object]:
        """(value, key) of a stage index; equal keys mean the same stage."""
        if isinstance(stage, int) and not isinstance(stage, bool) and not 0 <= stage < num_stages:
            raise BuildError(f"stage {stage} is outside the {what}'s {num_stages} stages", caller())
        with self._at():
            value = self._index(stage, f"{what} stage")
        return value, (stage if isinstance(stage, int) else value)

    def _offsets(self, offsets: Sequence, what: str) -> tuple[ir.Value, ir.Value]:
        if isinstance(offsets, (str, bytes)) or len(offsets) != 2:
            raise BuildTypeError(f"{what}: offsets must be [row, col]", caller())
        for name, offset in zip(("row", "col"), offsets, strict=True):
            if isinstance(offset, int) and offset < 0:
                raise BuildError(
                    f"{what} {name}: an offset is never negative, got {offset}", caller()
                )
        with self._at():
            return self._index(offsets[0], f"{what} row"), self._index(offsets[1], f"{what} col")

    def _barrier(self, barrier, what: str) -> BarrierRef:
        where = caller()
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
                caller(),
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

    def global_tensor(self, dtype: str, rank: int = 2) -> GlobalTensor:
        """The next kernel argument: a tensor of `dtype` in global memory, a
        matrix (rank 2), a vector (rank 1, read with kb.broadcast) or a batch
        of matrices (rank 3, [batch, rows, cols]: `x[b]` is matrix b, which
        TMA copies read and write)."""
        where = caller()
        check_dtype(dtype, GLOBAL_DTYPES, "global_tensor")
        if isinstance(rank, bool) or rank not in (1, 2, 3):
            raise BuildError(f"global_tensor: rank must be 1, 2 or 3, got {rank!r}", where)
        if self._finished:
            raise BuildError(f"kernel '{self.name}' is finished", where)
        return self._argument(dtype, rank, where)

    def _argument(self, dtype: str, rank: int, where: SourceLocation) -> GlobalTensor:
        """The next kernel argument, a memref of `rank` dynamic dims."""
        with self.context:
            type_ = ir.Type.parse(f"memref<{'?x' * rank}{dtype}>")
        value, name = self._add_argument(type_, where)
        tensor = GlobalTensor(self, value, name, dtype, where)
        self._tensors.append(tensor)
        return tensor

    def _add_argument(self, type_: ir.Type, where: SourceLocation) -> tuple[ir.Value, str]:
        """A new kernel argument of `type_` and its name (by position)."""
        from wsc.codegen.info import tensor_name

        with self.context:
            value = self.body.add_argument(type_, where.mlir())
            self.func.attributes["function_type"] = ir.TypeAttr.get(
                ir.FunctionType.get([arg.type for arg in self.body.arguments], [])
            )
        return value, tensor_name(len(self.body.arguments) - 1)

    def scalar(self, dtype: str = f32, default: float | None = None) -> KernelScalar:
        """The next kernel argument: an f32 given at each launch, by its name
        like the tensors (the fourth argument is "d"); its artifacts record
        the value runs use where the launch gives none, `default` or
        Kernel.write_artifact(scalars=...)'s. Register-tile math takes it as
        a number, e.g. `acc * alpha`."""
        where = caller()
        if dtype != f32:
            raise BuildTypeError(f"scalar: only f32 scalars are supported, got {dtype!r}", where)
        if default is not None and (
            isinstance(default, bool)
            or not isinstance(default, (int, float))
            or not math.isfinite(default)
        ):
            raise BuildTypeError(f"scalar: default must be a finite number, got {default!r}", where)
        if self._finished:
            raise BuildError(f"kernel '{self.name}' is finished", where)
        with self.context:
            type_ = ir.F32Type.get()
        value, name = self._add_argument(type_, where)
        scalar = KernelScalar(self, value, name, where)
        self._scalars.append(scalar)
        if default is not None:
            self._scalar_defaults[name] = float(default)
        return scalar

    @property
    def block_idx(self) -> GridIndex:
        """`kb.block_idx.x`: this block's index in the grid (gpu.block_id)."""
        return GridIndex(self, gpu.BlockIdOp)

    @property
    def grid_dim(self) -> GridIndex:
        """`kb.grid_dim.x`: the blocks of the launch along x (gpu.grid_dim), e.g.
        the stride of a persistent kernel's tile loop."""
        return GridIndex(self, gpu.GridDimOp)

    def shared_tensor(
        self, dtype: str, shape: Sequence[int], pad_rows: bool = False
    ) -> SharedTensor:
        """A ring buffer in shared memory of [stages, rows, cols] elements, each stage
        one TMA tile (rows <= 256) whose rows are a whole number of swizzle
        spans (32 bytes at least; codegen's TileLayout), or one row of at most
        256 columns and a multiple of 16 bytes, stored unswizzled (a vector
        per stage, read with kb.load_shared of its transpose, that one TMA box
        copies). A tile that TMA loads and WGMMA reads has rows of at most 128
        bytes (the widest span); a tile only stored from registers and copied
        out may have wider rows.

        With `pad_rows`, a [K, N] stage of WGMMA's B whose rows would take
        32-byte swizzle atoms (N = 112 f16) stores them padded to whole
        128-byte ones (target.hopper.swizzle_padded_cols): its TMA copies
        also fill the columns after N (the next tile's, or zeros), and WGMMA
        reads the first N. Such a ring is only copied into by TMA and read
        as that B operand."""
        from wsc.codegen.layout import LayoutError, TileLayout

        where = caller()
        check_dtype(dtype, TILE_DTYPES, "shared_tensor")
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
        stored = swizzle_padded_cols(cols, dtype) if pad_rows else cols
        if rows > MAX_TMA_BOX:
            raise BuildError(
                f"shared_tensor: a {rows}x{cols} {dtype} tile has more than "
                f"{MAX_TMA_BOX} rows (the TMA box)",
                where,
            )
        try:
            TileLayout.choose(rows, stored, ELEMENT_BYTES[dtype])
        except LayoutError as error:
            raise BuildError(
                f"shared_tensor: a {rows}x{cols} {dtype} tile: {error}", where
            ) from None
        self._require_top_level("shared_tensor", "shared memory is laid out once per block")
        with self._at(where):
            value = dialect.alloc_shared(dialect.shared_buffer_type(stages, rows, stored, dtype))
        return SharedTensor(self, value, dtype, shape, stored)

    @staticmethod
    def _register_shape(shape: Sequence[int], dtype: str, what: str) -> tuple[int, int]:
        """`shape` as a register tile's (a BuildError at the user's line)."""
        shape = tuple(shape)
        vector = len(shape) == 2 and shape[1] == 1 and dtype == f32
        if (
            len(shape) != 2
            or shape[0] % 64
            or shape[0] < 64
            or not (vector or (shape[1] % 8 == 0 and 8 <= shape[1] <= 256))
        ):
            wide = len(shape) == 2 and shape[1] > 256 and what == "load_shared"
            raise BuildError(
                f"{what}: shape must be [rows, cols] with rows a multiple "
                f"of 64 and cols a multiple of 8 in [8, 256] (the layout of a WGMMA "
                f"accumulator, which register tiles take), or 1 for an f32 row vector, "
                f"got {list(shape)!r} ({dtype})"
                + (": read a wider stage in blocks, load_shared(src, col=, cols=)" if wide else ""),
                caller(),
            )
        return shape[0], shape[1]

    def register_tensor(self, dtype: str, shape: Sequence[int]) -> RegisterTile:
        """A zero-filled [rows, cols] tile in the registers of the executing
        warpgroup(s): WGMMA's accumulator (rows a multiple of 64, cols of 8),
        or an f32 row vector [rows, 1] (a value per row, e.g. a running max)."""
        where = caller()
        check_dtype(dtype, REGISTER_DTYPES, "register_tensor")
        shape = self._register_shape(shape, dtype, "register_tensor")
        with self._at(where):
            value = dialect.acc_alloc(dialect.acc_type(shape, dtype))
        return RegisterTile(self, value, dtype, shape)

    def assign(self, dst: RegisterTile, src: RegisterTile) -> None:
        """Set every element of `dst`, a kb.register_tensor, to `src`'s: in
        place, so a tile made before a loop carries what the loop computes
        from trip to trip (`kb.assign(m, kb.max(m, kb.row_max(s)))`)."""
        where = caller()
        for tile, name in ((dst, "dst"), (src, "src")):
            self._own(expect(tile, RegisterTile, f"assign {name}", "a register tile"), "assign")
        source = defining_op(dst.value)
        if source is None or source.name != "wsc.acc_alloc":
            raise BuildError(
                "assign: dst must be a kb.register_tensor (a tile written in place), not the "
                "result of tile math",
                where,
            )
        if (dst.dtype, dst.shape) != (src.dtype, src.shape):
            raise BuildTypeError(
                f"assign: dst is a {dst.shape[0]}x{dst.shape[1]} {dst.dtype} tile, src a "
                f"{src.shape[0]}x{src.shape[1]} {src.dtype} one",
                where,
            )
        with self._at(where):
            dialect.tile_assign(dst.value, src.value)

    def cast(self, tile: RegisterTile, dtype: str) -> RegisterTile:
        """The tile converted element-wise to `dtype` (round to nearest even)."""
        expect(tile, RegisterTile, "cast", "a register tile")
        self._own(tile, "cast")
        check_dtype(dtype, REGISTER_DTYPES, "cast")
        with self._at():
            return RegisterTile(self, dialect.cast(tile.value, dtype), dtype, tile.shape)

    def max(self, x: RegisterTile | float, y: RegisterTile | float) -> RegisterTile:
        """max(x, y) element by element (NaN where either is NaN)."""
        return self._tile_binary("max", x, y)

    def min(self, x: RegisterTile | float, y: RegisterTile | float) -> RegisterTile:
        """min(x, y) element by element (NaN where either is NaN)."""
        return self._tile_binary("min", x, y)

    def exp2(self, x: RegisterTile) -> RegisterTile:
        """2^x element by element (PTX ex2.approx.ftz.f32: a result below
        2^-126 is 0)."""
        return self._tile_unary("exp2", x)

    def relu(self, x: RegisterTile) -> RegisterTile:
        """max(x, 0) element by element."""
        return self._tile_unary("relu", x)

    def log2(self, x: RegisterTile) -> RegisterTile:
        """log2(x) element by element (PTX lg2.approx.f32)."""
        return self._tile_unary("log2", x)

    def rsqrt(self, x: RegisterTile) -> RegisterTile:
        """1 / sqrt(x) element by element (PTX rsqrt.approx.f32)."""
        return self._tile_unary("rsqrt", x)

    def tanh(self, x: RegisterTile) -> RegisterTile:
        """tanh(x) element by element (PTX tanh.approx.f32)."""
        return self._tile_unary("tanh", x)

    def erf(self, x: RegisterTile) -> RegisterTile:
        """erf(x) element by element (a polynomial, absolute error below 1e-6)."""
        return self._tile_unary("erf", x)

    def row_max(self, x: RegisterTile) -> RegisterTile:
        """The row vector [rows, 1] of the max of each row of x (NaN where the
        row has one): an online softmax's running max. Row vectors combine
        with tiles of their rows element-wise, broadcast along the rows."""
        return self._row_reduce("max", x)

    def row_sum(self, x: RegisterTile) -> RegisterTile:
        """The row vector [rows, 1] of the sum of each row of x (one fixed
        order of additions: the same bits in every thread)."""
        return self._row_reduce("sum", x)

    def col_max(self, x: RegisterTile, rows: int) -> RegisterTile:
        """The max down each column of each group of `rows` consecutive rows
        of x (1, 2, 4, 8 or 16: rows one warp holds; 32 or 64 of a row
        vector: rows of two or four warps), in every row of the group: with
        x = kb.row_max(t), the max of each group's elements, e.g. of a
        matrix row laid over 16 rows of a tile. Over 32 or 64 rows the warps
        hand their values over through shared memory and a sync of the
        role, so every thread of the role must reach it (as kb.sync)."""
        return self._col_reduce("max", x, rows)

    def col_sum(self, x: RegisterTile, rows: int) -> RegisterTile:
        """The sum down each column of each group of `rows` consecutive rows
        of x, in every row of the group (see col_max)."""
        return self._col_reduce("sum", x, rows)

    def _col_reduce(self, kind: str, x, rows: int) -> RegisterTile:
        what = f"col_{kind}"
        tile = self._f32_tile(x, what)
        if rows not in COL_REDUCE_ROWS or isinstance(rows, bool):
            raise BuildError(
                f"{what}: rows must be one of {', '.join(map(str, COL_REDUCE_ROWS))} (rows "
                f"of one, two or four warps of each 64-row sub-tile), got {rows!r}",
                caller(),
            )
        single = [scope for scope in self._scopes if scope.kind == "single_thread"]
        if rows > WARP_ROWS and single:
            raise BuildError(
                f"{what}: rows={rows} syncs the warps of its thread group, so every thread of "
                f"the group must reach it, not one (the single_thread at {single[-1].where})",
                caller(),
            )
        if rows > WARP_ROWS and tile.shape[1] != 1:
            raise BuildError(
                f"{what}: rows={rows} spans several warps, which hand each other one value "
                f"each: x must be a row vector (e.g. kb.row_{kind}(t)), got a "
                f"{tile.shape[0]}x{tile.shape[1]} tile",
                caller(),
            )
        with self._at(caller()):
            value = dialect.tile_col_reduce(kind, tile.value, rows)
        return RegisterTile(self, value, f32, tile.shape)

    def compare(self, x: RegisterTile | float, predicate: str, y: RegisterTile | float):
        """x <predicate> y for kb.where, predicate one of TILE_PREDICATES:
        the comparison the operators <, <=, >, >=, == and != of a register
        tile make, spelled out (e.g. where both sides are numbers' tiles)."""
        if predicate not in TILE_PREDICATES:
            raise BuildError(
                f"compare: predicate must be one of {', '.join(map(repr, TILE_PREDICATES))}, "
                f"got {predicate!r}",
                caller(),
            )
        return TileComparison(predicate, x, y)

    def where(
        self,
        condition: TileComparison,
        on_true: RegisterTile | float,
        on_false: RegisterTile | float,
    ) -> RegisterTile:
        """on_true where `condition` holds, else on_false, element by element
        (wsc.tile_select): e.g. kb.where(cols > rows, -inf, scores), a causal
        mask. Comparisons with NaN are false, but "ne", which is true."""
        where = caller()
        expect(condition, TileComparison, "where condition", "a comparison of tiles, e.g. x < y")
        parts = (condition.lhs, condition.rhs, on_true, on_false)
        tiles = [v for v in parts if isinstance(v, RegisterTile)]
        if not tiles:
            raise BuildTypeError("where: at least one operand must be a register tile", where)
        shape = max((tile.shape for tile in tiles), key=lambda tile_shape: tile_shape[1])
        lhs, rhs, if_true, if_false = (self._f32_tile(v, "where", shape) for v in parts)
        shape = _broadcast_shape([t.shape for t in (lhs, rhs, if_true, if_false)], "where")
        with self._at(where):
            value = dialect.tile_select(
                condition.predicate, lhs.value, rhs.value, if_true.value, if_false.value
            )
        return RegisterTile(self, value, f32, shape)

    def indices(self, shape: Sequence[int], along: str = "rows", start=0) -> RegisterTile:
        """An f32 register tile of `shape` whose elements are their row index
        (along="rows") or column index (along="cols") in the matrix the tile is
        a block of, counted from `start` (the block's first row or column)."""
        where = caller()
        rows, cols = self._tile_shape(shape, "indices")
        _check_along(along, "indices")
        with self._at(where):
            origin = self._index(start, "indices start")
            value = dialect.tile_iota((rows, cols), along, origin)
        return RegisterTile(self, value, f32, (rows, cols))

    def _row_reduce(self, kind: str, x) -> RegisterTile:
        tile = self._f32_tile(x, f"row_{kind}")
        with self._at(caller()):
            value = dialect.tile_row_reduce(kind, tile.value)
        return RegisterTile(self, value, f32, (tile.shape[0], 1))

    def _loaded(self, src, rank: int, what: str) -> GlobalTensor:
        where = caller()
        self._own(expect(src, GlobalTensor, f"{what} src", "a global tensor"), what)
        if src.of_batch:
            src.check_matrix(what, by_threads=True)
        if src.rank != rank:
            raise BuildError(
                f"{what}: '{src.name}' has rank {src.rank}; {what} reads a "
                f"{'vector' if rank == 1 else 'matrix'} (rank {rank})",
                where,
            )
        return src

    def _tile_shape(self, shape: Sequence[int], what: str) -> tuple[int, int]:
        if (
            isinstance(shape, (str, bytes))
            or len(shape) != 2
            or not all(isinstance(n, int) and not isinstance(n, bool) for n in shape)
        ):
            raise BuildTypeError(f"{what}: shape must be [rows, cols], got {shape!r}", caller())
        return self._register_shape(shape, f32, what)

    def load_tile(
        self,
        src: GlobalTensor,
        offsets: Sequence,
        shape: Sequence[int],
        transpose: bool = False,
        fill: float = 0.0,
    ) -> RegisterTile:
        """src[offsets[0]:+rows, offsets[1]:+cols] as an f32 register tile of
        `shape` in the accumulator's layout, e.g. a residual to add to it.
        Elements outside src read as `fill` (rounded to f32): 0, or e.g.
        float("-inf") for a tile whose row_max must not see them. With
        `transpose` the tile is the transpose of src's block at `offsets`, as
        kb.store_global(..., transpose=True) writes it. A shape [rows, 1]
        loads a row vector: column offsets[1] of those rows."""
        where = caller()
        self._loaded(src, 2, "load_tile")
        rows, cols = self._tile_shape(shape, "load_tile")
        if not isinstance(transpose, bool):
            raise BuildTypeError(f"load_tile: transpose must be a bool, got {transpose!r}", where)
        if isinstance(fill, bool) or not isinstance(fill, numbers.Real):
            raise BuildTypeError(
                f"load_tile: fill must be a number (the value read outside src, e.g. "
                f'float("-inf")), got {fill!r}',
                where,
            )
        try:
            outside = float(fill)
        except OverflowError:
            raise BuildTypeError(f"load_tile: fill {fill} is beyond any float", where) from None
        row, col = self._offsets(offsets, "load_tile")
        with self._at(where):
            value = dialect.tile_load(src.value, row, col, (rows, cols), transpose, outside)
        return RegisterTile(self, value, f32, (rows, cols))

    def broadcast(
        self, src: GlobalTensor, offset, shape: Sequence[int], along: str = "cols"
    ) -> RegisterTile:
        """The vector src[offset:] laid over an f32 register tile of `shape`
        (0 past src's end): along="cols" repeats src[offset:offset+cols] on
        every row (a bias per column), along="rows" src[offset:offset+rows]
        down every column (a scale per row). A shape [rows, 1] makes a row
        vector: along="rows" a value per row, along="cols" src[offset] in
        every row (a scalar read from global memory, e.g. a scale)."""
        where = caller()
        self._loaded(src, 1, "broadcast")
        rows, cols = self._tile_shape(shape, "broadcast")
        _check_along(along, "broadcast")
        with self._at(where):
            start = self._index(offset, "broadcast offset")
            value = dialect.tile_broadcast(src.value, start, (rows, cols), along)
        return RegisterTile(self, value, f32, (rows, cols))

    def _f32_tile(self, value, what: str, shape: tuple[int, int] | None = None) -> RegisterTile:
        """`value` as an f32 register tile: a tile, or a number filled into one
        of `shape`, or a scalar argument or run-time size (a Scalar) as the row
        vector of `shape`'s rows."""
        where = caller()
        if isinstance(value, RegisterTile):
            self._own(value, what)
            if value.dtype != f32:
                raise BuildTypeError(
                    f"{what}: element-wise math takes f32 tiles, this one is {value.dtype}; "
                    f"compute in f32 and kb.cast the result",
                    where,
                )
            return value
        if isinstance(value, KernelScalar) and shape is not None:
            self._own(value, what)
            with self._at(where):
                return RegisterTile(self, dialect.tile_splat(shape, value.value), f32, shape)
        if isinstance(value, Scalar) and shape is not None:
            self._own(value, what)
            # The column index of a one-column tile counted from the size is the size.
            vector = (shape[0], 1)
            with self._at(where):
                return RegisterTile(
                    self, dialect.tile_iota(vector, "cols", value.value), f32, vector
                )
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise BuildTypeError(
                f"{what}: expected a register tile or a number, got {type(value).__name__}", where
            )
        if shape is None:
            raise BuildTypeError(
                f"{what} of numbers alone: one operand must be a register tile (compute "
                f"numbers in Python, e.g. math.exp2)",
                where,
            )
        with self._at(where):
            return RegisterTile(self, dialect.tile_fill(shape, float(value)), f32, shape)

    def _tile_binary(self, kind: str, x, y) -> RegisterTile:
        what = f"tile {kind}"
        tiles = [v for v in (x, y) if isinstance(v, RegisterTile)]
        shape = tiles[0].shape if tiles else None
        x_tile, y_tile = self._f32_tile(x, what, shape), self._f32_tile(y, what, shape)
        shape = _broadcast_shape([x_tile.shape, y_tile.shape], what)
        with self._at(caller()):
            value = dialect.tile_binary(kind, x_tile.value, y_tile.value)
        return RegisterTile(self, value, f32, shape)

    def _tile_unary(self, kind: str, x) -> RegisterTile:
        tile = self._f32_tile(x, f"tile {kind}")
        with self._at(caller()):
            return RegisterTile(self, dialect.tile_unary(kind, tile.value), f32, tile.shape)

    def store_global(
        self, dst: GlobalTensor, tile: RegisterTile, offsets: Sequence, transpose: bool = False
    ) -> None:
        """Store a register tile into dst[offsets[0]:+rows, offsets[1]:+cols], clipped at
        dst's bounds. With `transpose` the tile is the transpose of dst's block
        at `offsets` (dst[offsets[0]:+cols, offsets[1]:+rows]): the result of a
        WGMMA with swapped operands, C^T = B A^T, stored as C."""
        where = caller()
        self._own(expect(dst, GlobalTensor, "store_global dst", "a global tensor"), "store_global")
        dst.check_matrix("store_global", by_threads=True)
        self._own(
            expect(tile, RegisterTile, "store_global tile", "a register tile"), "store_global"
        )
        if tile.dtype != dst.dtype:
            raise BuildTypeError(
                f"store_global: the tile is {tile.dtype} but '{dst.name}' is "
                f"{dst.dtype}; convert it with kb.cast(tile, {dst.dtype!r})",
                where,
            )
        if not isinstance(transpose, bool):
            raise BuildTypeError(
                f"store_global: transpose must be a bool, got {transpose!r}", where
            )
        if tile.shape[1] == 1:
            raise BuildError(
                f"store_global: a row vector {list(tile.shape)} serves register math; a store "
                f"takes tiles of a multiple of 8 columns: broadcast it into one, e.g. "
                f"kb.register_tensor(f32, [{tile.shape[0]}, 8]) + v, and store that (the "
                f"store is clipped at the bounds of '{dst.name}')",
                where,
            )
        row, col = self._offsets(offsets, "store_global")
        with self._at(where):
            dialect.store(tile.value, dst.value, row, col, transpose=transpose)

    @staticmethod
    def _unpadded(tile: SharedTile, what: str, where) -> None:
        """A ring whose rows are stored padded (pad_rows=True) is only copied
        into by TMA and read as WGMMA's [K, N] B: refused anywhere else."""
        if tile.ring.padded:
            raise BuildError(
                f"{what}: the ring's rows are stored padded to {tile.ring.stored_cols} "
                f"columns (pad_rows=True): it is only copied into by TMA and read as "
                f"WGMMA's B operand, [K, N] as stored",
                where,
            )

    def _stage_block(
        self, tile: SharedTile, col: int, cols: int, what: str
    ) -> tuple[int, int] | None:
        """The origin in its stage tile of columns [col, col + cols) of the
        rows `tile` takes (None for the whole stage tile)."""
        where = caller()
        expect(tile, SharedTile, f"{what} tile", "a stage of a shared tensor, e.g. sx[stage]")
        self._own(tile.ring, what)
        self._unpadded(tile, what, where)
        if tile.transposed:
            raise BuildError(
                f"{what}: the stage tile is viewed transposed; use it as stored", where
            )
        for name, value in (("col", col), ("cols", cols)):
            if isinstance(value, bool) or not isinstance(value, int):
                raise BuildTypeError(f"{what}: {name} must be an int, got {value!r}", where)
        if col < 0 or col % 8 or cols < 8 or cols % 8 or col + cols > tile.cols:
            raise BuildError(
                f"{what}: columns [{col}, {col + cols}) are not a block of the stage "
                f"tile's {tile.cols} columns in whole 8-column steps",
                where,
            )
        if tile.is_whole_stage and cols == tile.cols:
            return None
        return (tile.row, col)

    def load_shared(self, src: SharedTile, col: int = 0, cols: int | None = None) -> RegisterTile:
        """Columns [col, col + cols) (all by default) of the stage tile `src`
        (e.g. sx[stage], or rows of it, sx[stage][64:128]) as an f32 register
        tile in the accumulator's layout, read now: the stage must have
        landed (a wait on its full barrier) and is released after the last
        read. At most 256 columns at a time; read a wider stage in blocks.
        A transposed view (sx[stage].transpose()) is read whole, element by
        element: a stage of one row [1, M] so becomes a row vector [M, 1], a
        value per row of the tile (a scale that TMA copied with the tile's
        operands)."""
        where = caller()
        expect(src, SharedTile, "load_shared src", "a stage of a shared tensor, e.g. sx[stage]")
        if src.transposed:
            origin = self._transposed_block(src, col, cols, where)
            block = (src.cols, src.rows)
        else:
            if cols is None:
                cols = src.cols - col if isinstance(col, int) and not isinstance(col, bool) else 0
            origin = self._stage_block(src, col, cols, "load_shared")
            block = (src.rows, cols)
        if src.dtype not in (*HALF_DTYPES, f32):
            raise BuildTypeError(
                f"load_shared: reads f16, bf16 or f32 stage tiles, this one is {src.dtype}", where
            )
        shape = self._register_shape(block, f32, "load_shared")
        with self._at(where):
            value = dialect.load_shared(src.ring.value, src.stage, shape, origin, src.transposed)
        return RegisterTile(self, value, f32, shape)

    def _transposed_block(
        self, tile: SharedTile, col: int, cols: int | None, where
    ) -> tuple[int, int] | None:
        """The origin in its stage tile of the rows a transposed view takes,
        read whole (None for the whole stage tile)."""
        self._own(tile.ring, "load_shared")
        self._unpadded(tile, "load_shared", where)
        if col != 0 or cols not in (None, tile.rows):
            raise BuildError(
                "load_shared: a transposed stage tile is read whole (transpose rows of "
                "it, sx[stage][64:128].transpose(), for a part)",
                where,
            )
        return None if tile.row == 0 and tile.rows == tile.ring.shape[1] else (tile.row, 0)

    def store_shared(self, dst: SharedTile, tile: RegisterTile, col: int = 0) -> None:
        """Write a register tile of dst's dtype into the stage tile `dst`
        (e.g. sc[stage], or rows of it), whole or at column `col`, in the
        layout a TMA store of the stage reads. Before a TMA store of it:
        kb.fence_proxy_async() in every writing thread, then a sync; before
        kb.shared_to_global, a sync."""
        where = caller()
        self._own(
            expect(tile, RegisterTile, "store_shared tile", "a register tile"), "store_shared"
        )
        origin = self._stage_block(dst, col, tile.shape[1], "store_shared")
        if tile.dtype != dst.dtype:
            raise BuildTypeError(
                f"store_shared: the tile is {tile.dtype} but dst is "
                f"{dst.dtype}; convert it with kb.cast(tile, {dst.dtype!r})",
                where,
            )
        if tile.shape[0] != dst.rows:
            raise BuildError(
                f"store_shared: the tile is {list(tile.shape)} but dst has {dst.rows} rows "
                f"(rows of a stage: ring[stage][row:row + {tile.shape[0]}])",
                where,
            )
        with self._at(where):
            dialect.store_shared(tile.value, dst.ring.value, dst.stage, origin)

    def shared_to_global(self, src: SharedTile, dst: GlobalTensor, offsets: Sequence) -> None:
        """Copy the stage tile `src` into dst[offsets[0]:+rows, offsets[1]:+cols],
        clipped at dst's bounds, with every thread of the group storing: each
        store of a warp writes 32 consecutive elements of a row, whatever
        dst's row length (kb.tma.shared_to_global needs 16-byte rows). Sync
        between the writes to `src` and this copy, and again before `src` is
        written again."""
        where = caller()
        row, col = self._stage_copy_offsets(src, dst, offsets, "shared_to_global", where)
        with self._at(where):
            dialect.coalesced_store(src.ring.value, src.stage, dst.value, row, col)

    def _stage_copy_offsets(
        self, src: SharedTile, dst: GlobalTensor, offsets: Sequence, what: str, where
    ) -> tuple[ir.Value, ir.Value]:
        """The checks of a copy of a whole stage tile into a global tensor; its
        (row, col) offsets."""
        expect(src, SharedTile, f"{what} src", "a stage of a shared tensor, e.g. sc[stage]")
        self._unpadded(src, what, where)
        self._own(expect(dst, GlobalTensor, f"{what} dst", "a global tensor"), what)
        dst.check_matrix(what, by_threads=what == "shared_to_global")
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
        where = caller()
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
        where = caller()
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
        where = caller()
        with self._at(where):
            guard = scf.IfOp(dialect.elect())
        with self._region(guard.then_block, "single_thread", where):
            yield

    def _one_thread(self, what: str, why: str, where: SourceLocation) -> None:
        """`what` is issued by one thread (`why`): refused outside single_thread()."""
        if not any(scope.kind == "single_thread" for scope in self._scopes):
            raise BuildError(
                f"{what} is issued by one thread ({why}): call it inside "
                f"`with kb.single_thread():`, or every thread of the group issues it",
                where,
            )

    @contextlib.contextmanager
    def if_(self, condition: Predicate):
        """Code that runs where `condition` holds."""
        where = caller()
        expect(condition, Predicate, "if_", "a run-time predicate (a comparison)")
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
        where = caller()
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
        expect(ring, TileLoop, "range ring", "a tile loop (the `tiles` of kb.tile_range)")
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
        where = caller()
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
        where = caller()
        expect(barriers, Barriers, "drain barriers", "an mbarrier array")
        expect(after, RingLoop, "drain after", "the ring loop (the `it` of `for it in kb.range`)")
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
        where = caller()
        return Pipeline(
            self,
            self.mbarrier.alloc(1, num_stages),
            self.mbarrier.alloc(consumer_arrivals, num_stages),
            where,
        )

    # Finishing ------------------------------------------------------------------------

    def _check_block_axes(self) -> None:
        """A block index along an axis the launch grid does not have is 0 in
        every block: the kernel would compute one tile where it meant many.
        The launch's axes are write_artifact's: grid's pairs, then the splits
        of a split-K workspace without slots; a persistent kernel's work
        items all on x; and x always where clusters are (whole clusters)."""
        splits = self._workspace is not None and self._workspace.slots is None
        if self.persistent:
            axes, how = 1, "a persistent kernel's launch has only x, its work items"
        else:
            axes = len(self.grid) + int(splits)
            how = f"the launch has {axes} axes: grid={list(self.grid)}" + (
                " and the splits of K" if splits else ""
            )
        if self.cluster_size > 1:
            axes = max(axes, 1)
        for axis, where in sorted(self._block_axes.items()):
            if axis >= axes:
                fix = (
                    "stride over the work items from kb.block_idx.x instead"
                    if self.persistent
                    else "name a size and tile for it in grid="
                )
                raise BuildError(
                    f"kb.block_idx.{'xyz'[axis]} would be 0 in every block ({how}); {fix}",
                    where,
                )
        if self.persistent and not self._grid_dim_read:
            raise BuildError(
                "a persistent kernel strides over its work items by kb.grid_dim.x (a "
                "launch has blocks_per_sm blocks per SM, fewer than a large problem's "
                "work items), and this one never reads kb.grid_dim: loop over the work "
                "items from kb.block_idx.x in steps of kb.grid_dim.x, or leave out "
                "persistent=True",
                self._created,
            )

    def finish(self, verify: bool = True) -> Kernel:
        """Close the kernel and verify it; raises BuildError at the first problem,
        located in the user's source. With `verify=False` the verifier's rules
        (shared memory budget, tile rules, ...) are left to the compile, which
        reports them as a CompileError; the builder's own checks still run."""
        where = caller()
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
        self._check_block_axes()
        split_k = None
        if self._workspace is not None:
            workspace = self._workspace
            if workspace.tile_shape is None:
                raise BuildError(
                    "the split_k.workspace never receives a partial sum (split_k.store)", where
                )
            split_k = (workspace.splits, workspace.tile_shape, workspace.slots)
        kernel = Kernel(
            self.module,
            self.context,
            self.name,
            self.grid,
            unroll=True in unrolled,
            check=self.check,
            split_k=split_k,
            check_config=self.check_config,
            allow_spills=self.allow_spills,
            scalars=self._scalar_defaults,
            persistent=self.persistent,
        )
        if verify:
            kernel.verify()
        for tensor in self._tensors:
            # Lowering keeps only the tensors the kernel reads or writes: an
            # unused one would silently leave the launch's parameters.
            if all(use_owner(use).name == "memref.dim" for use in tensor.value.uses):
                raise BuildError(
                    f"global tensor '{tensor.name}' ({tensor.dtype}), declared at "
                    f"{tensor.where}, is never loaded or stored: remove it, or use it",
                    tensor.where or where,
                )
        if not any(writes_tensor(tensor.value) for tensor in self._tensors):
            warn(
                f"kernel '{self.name}' writes no global tensor, so nothing it computes "
                f"outlives it: store a result (kb.store_global, kb.shared_to_global or "
                f"kb.tma.shared_to_global)"
            )
        for scalar in self._scalars:
            if not list(scalar.value.uses):
                raise BuildError(
                    f"scalar '{scalar.name}', declared at {scalar.where}, is never used: "
                    f"remove it, or use it",
                    scalar.where,
                )
        self._check_reference_parameters()
        return kernel

    def _check_reference_parameters(self) -> None:
        """The reference function is called with the kernel's inputs and
        scalars by name (and the check's reference_arguments): a parameter
        that names none of them, or names an output, could never be given."""
        if self._reference is None:
            return
        function, where = self._reference
        outputs = {tensor.name for tensor in self._tensors if writes_tensor(tensor.value)}
        given = [
            *(tensor.name for tensor in self._tensors if tensor.name not in outputs),
            *(scalar.name for scalar in self._scalars),
            *self.check_config.get("reference_arguments", {}),
        ]
        parameters = inspect.signature(function).parameters.values()
        by_keyword = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
        unknown = [p.name for p in parameters if p.kind in by_keyword and p.name not in given]
        if unknown:
            written = [name for name in unknown if name in outputs]
            others = [name for name in unknown if name not in outputs]
            what = "; ".join(
                part
                for part in (
                    written
                    and f"{', '.join(written)} name{'s' if len(written) == 1 else ''} the "
                    f"kernel's output{'s' if len(written) > 1 else ''}, whose values it returns",
                    others
                    and f"{', '.join(others)} name{'s' if len(others) == 1 else ''} no "
                    f"argument of the kernel",
                )
                if part
            )
            raise BuildError(
                f"check: reference '{function.__name__}' takes {', '.join(unknown)}: {what}; "
                f"it is called with the kernel's inputs and scalars by name "
                f"({', '.join(given) or 'none'})",
                where,
            )
        if not any(p.kind == inspect.Parameter.VAR_KEYWORD for p in parameters):
            taken = {p.name for p in parameters if p.kind in by_keyword}
            untaken = [name for name in given if name not in taken]
            if untaken:
                raise BuildError(
                    f"check: reference '{function.__name__}' does not take "
                    f"{', '.join(untaken)}: it is called with the kernel's inputs and scalars "
                    f"by name ({', '.join(given)}); add {'them' if len(untaken) > 1 else 'it'} "
                    f"as parameters (or **rest)",
                    where,
                )


class GridIndex:
    """x, y and z of a launch index: `op` is gpu.BlockIdOp or gpu.GridDimOp."""

    def __init__(self, builder: KernelBuilder, op):
        self._kb = builder
        self._op = op

    def _dim(self, dimension, axis: int) -> Scalar:
        if self._op is gpu.BlockIdOp:
            self._kb._block_axes.setdefault(axis, caller())
        else:
            self._kb._grid_dim_read = True
        with self._kb._at():
            return Scalar(self._kb, self._op(dimension).result)

    @property
    def x(self) -> Scalar:
        return self._dim(gpu.Dimension.x, 0)

    @property
    def y(self) -> Scalar:
        return self._dim(gpu.Dimension.y, 1)

    @property
    def z(self) -> Scalar:
        return self._dim(gpu.Dimension.z, 2)


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
