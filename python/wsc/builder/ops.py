"""The op namespaces of a KernelBuilder, named as in the seed: kb.mbarrier,
kb.tma and kb.wgmma. Each method checks its operands (BuildError at the
user's line) and emits the wsc op it names."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from wsc import dialect
from wsc.builder.errors import BuildError, BuildTypeError, SourceLocation, caller, expect
from wsc.builder.values import (
    BarrierRef,
    Barriers,
    GlobalTensor,
    Predicate,
    RegisterTile,
    SharedTile,
    SplitKWorkspace,
    f32,
)
from wsc.target.hopper import HALF_DTYPES, MAX_SPLITS, OPERAND_DTYPES

if TYPE_CHECKING:
    from wsc.builder.kernel_builder import KernelBuilder


class MbarrierOps:
    """kb.mbarrier: allocating, waiting on and arriving at mbarriers."""

    def __init__(self, builder: KernelBuilder):
        self._kb = builder

    def alloc(self, arrival_count: int, num_barriers: int) -> Barriers:
        """`num_barriers` mbarriers, each completing a phase after `arrival_count`
        arrivals (and the transaction bytes declared on it). Every thread runs
        this, so it belongs at the top level of the kernel, followed by a
        block-wide `kb.sync()` before first use."""
        kb = self._kb
        where = caller()
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
                caller(),
            )
        if per_warp and any(scope.kind == "single_thread" for scope in kb._scopes):
            raise BuildError(
                "mbarrier.arrive: per_warp=True inside single_thread: one "
                "thread cannot arrive for its warp",
                caller(),
            )
        with kb._at():
            dialect.mbarrier_arrive(ref.barriers.value, ref.stage, per_warp, every_cta)

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
                caller(),
            )
        kb._one_thread("mbarrier.arrive_and_expect_tx", "it arrives once", caller())
        with kb._at():
            dialect.mbarrier_arrive_expect_tx(ref.barriers.value, ref.stage, transaction_bytes)


class TmaOps:
    """kb.tma: bulk tensor copies between global and shared memory."""

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
        where = caller()
        what = "tma.global_to_shared"
        kb._own(expect(src, GlobalTensor, f"{what} src", "a global tensor"), what)
        src.check_matrix(what)
        expect(dst, SharedTile, f"{what} dst", "a stage of a shared tensor, e.g. sa[stage]")
        ref = kb._barrier(mbarrier, what)
        if src.dtype != dst.dtype:
            raise BuildTypeError(
                f"{what}: src '{src.name}' is {src.dtype} but dst is {dst.dtype}", where
            )
        if not dst.is_whole_stage:
            raise BuildError(f"{what}: dst must be a whole stage tile, ring[stage]", where)
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
        kb._one_thread(what, "it is one copy", where)
        with kb._at(where):
            dialect.tma_load(
                src.value, row, col, dst.ring.value, dst.stage, ref.barriers.value, multicast
            )

    def shared_to_global(self, src: SharedTile, dst: GlobalTensor, offsets: Sequence) -> None:
        """Copy the stage tile `src` into dst[offsets[0]:+rows, offsets[1]:+cols],
        clipped at dst's bounds, from one thread (under kb.single_thread()).
        The copy reads `src` asynchronously: wait with tma.store_wait() before
        writing it again."""
        where = caller()
        row, col = self._kb._stage_copy_offsets(src, dst, offsets, "tma.shared_to_global", where)
        self._kb._one_thread("tma.shared_to_global", "it is one copy", where)
        with self._kb._at(where):
            dialect.tma_store(src.ring.value, src.stage, dst.value, row, col)

    def store_wait(self, pending: int = 0) -> None:
        """Wait until at most `pending` of this thread's shared_to_global copies
        still read shared memory (before their source is written again)."""
        if isinstance(pending, bool) or not isinstance(pending, int) or pending < 0:
            raise BuildError(
                f"tma.store_wait: pending must be an int >= 0, got {pending!r}", caller()
            )
        with self._kb._at():
            dialect.tma_store_wait(pending)


class WgmmaOps:
    """kb.wgmma: warpgroup matrix multiplies from shared memory into registers."""

    def __init__(self, builder: KernelBuilder):
        self._kb = builder

    def fence(self) -> None:
        """Order earlier register accesses before the WGMMAs that follow."""
        with self._kb._at():
            dialect.wgmma_fence()

    def mma(self, a: SharedTile | RegisterTile, b: SharedTile, acc: RegisterTile) -> None:
        """acc += a @ b, asynchronously, in the open WGMMA group. `a` is [M, K]
        (rows of A's stage: the same stage as B's, or a fixed one, e.g.
        `sq[0]` of a tile loaded once before the loop), or
        `sa[stage].transpose()` for a stage stored [K, M], or an f16/bf16
        register tile of M x K (e.g. `kb.cast(acc1,
        f16)`: read from registers, not shared memory; it must stay unchanged
        until the group is waited for); `b` is a [K, N] stage, or
        `sb[stage].transpose()` for a stage stored [N, K]."""
        kb = self._kb
        where = caller()
        if not isinstance(a, RegisterTile):
            expect(
                a,
                SharedTile,
                "wgmma.mma a",
                "a stage of a shared tensor, e.g. sa[stage], or a 16-bit register tile",
            )
        expect(
            b,
            SharedTile,
            "wgmma.mma b",
            "a stage of a shared tensor, e.g. sb[stage] or sb[stage].transpose()",
        )
        kb._own(
            expect(acc, RegisterTile, "wgmma.mma acc", "a register tile (kb.register_tensor)"),
            "wgmma.mma",
        )
        if b.row != 0 or b.rows != b.ring.shape[1]:
            raise BuildError(
                "wgmma.mma: B is a whole stage tile; only A's rows can be sliced", where
            )
        if b.transposed:
            kb._unpadded(b, "wgmma.mma b, transposed", where)
        if isinstance(a, SharedTile):
            kb._unpadded(a, "wgmma.mma a", where)
        if b.dtype not in OPERAND_DTYPES:
            raise BuildTypeError(
                f"wgmma.mma: WGMMA reads stage tiles of {', '.join(OPERAND_DTYPES)}, B is "
                f"{b.dtype}",
                where,
            )
        if isinstance(a, RegisterTile):
            self._mma_register_a(a, b, acc, where)
            return
        if a.dtype != b.dtype:
            raise BuildTypeError(f"wgmma.mma: A is {a.dtype} but B is {b.dtype}", where)
        if a.dtype not in HALF_DTYPES and (a.transposed or not b.transposed):
            raise BuildError(
                f"wgmma.mma: WGMMA reads {a.dtype} K-major only: A a [M, K] stage "
                f"(sa[stage]) and B an [N, K] one (sb[stage].transpose())",
                where,
            )
        a_m, a_k = (a.cols, a.rows) if a.transposed else (a.rows, a.cols)
        b_k, b_n = (b.cols, b.rows) if b.transposed else (b.rows, b.cols)
        m, n = acc.shape
        if a_m != m or b_n != n or a_k != b_k:
            a_layout = "[K, M] stage, transposed" if a.transposed else "[M, K] stage"
            b_layout = "[N, K] stage, transposed" if b.transposed else "[K, N] stage"
            raise BuildError(
                f"wgmma.mma: shapes do not chain: A is [{a_m}, {a_k}] (a {a_layout}), B "
                f"is [{b_k}, {b_n}] (a {b_layout}), acc is [{m}, {n}]",
                where,
            )
        # A of a fixed stage (e.g. sq[0], loaded once before the loop) is
        # read there whatever stage B's ring is at.
        a_stage = None
        if a.stage_key != b.stage_key:
            if not isinstance(a.stage_key, int):
                raise BuildError(
                    "wgmma.mma: A and B must be the same stage of their rings, or A a "
                    "fixed stage (sa[0])",
                    where,
                )
            a_stage = a.stage_key
        with kb._at(where):
            dialect.wgmma(
                a.ring.value,
                b.ring.value,
                b.stage,
                acc.value,
                a.row,
                "nk" if b.transposed else "kn",
                a_transposed=a.transposed,
                a_stage=a_stage,
            )

    def _mma_register_a(
        self, a: RegisterTile, b: SharedTile, acc: RegisterTile, where: SourceLocation
    ) -> None:
        kb = self._kb
        kb._own(a, "wgmma.mma")
        if a.dtype != b.dtype:
            raise BuildTypeError(
                f"wgmma.mma: A (registers) is {a.dtype} but B is {b.dtype}; cast A "
                f"to B's dtype (kb.cast)",
                where,
            )
        if acc.dtype != f32:
            raise BuildTypeError(
                f"wgmma.mma: with A in registers the accumulator is f32, got {acc.dtype}", where
            )
        b_k, b_n = (b.cols, b.rows) if b.transposed else (b.rows, b.cols)
        (a_m, a_k), (m, n) = a.shape, acc.shape
        if a_m != m or b_n != n or a_k != b_k:
            b_layout = "[N, K] stage, transposed" if b.transposed else "[K, N] stage"
            raise BuildError(
                f"wgmma.mma: shapes do not chain: A is [{a_m}, {a_k}] (registers), B is "
                f"[{b_k}, {b_n}] (a {b_layout}), acc is [{m}, {n}]",
                where,
            )
        with kb._at(where):
            dialect.wgmma_register_a(
                a.value, b.ring.value, b.stage, acc.value, "nk" if b.transposed else "kn"
            )

    def commit_group(self) -> None:
        """Close the open group of WGMMAs."""
        with self._kb._at():
            dialect.wgmma_commit_group()

    def wait_group(self, pending: int) -> None:
        """Wait until at most `pending` committed WGMMA groups are in flight."""
        if isinstance(pending, bool) or not isinstance(pending, int) or pending < 0:
            raise BuildError(
                f"wgmma.wait_group: pending must be an int >= 0, got {pending!r}", caller()
            )
        with self._kb._at():
            dialect.wgmma_wait_group(pending)


class SplitKOps:
    """kb.split_k: blocks that each sum a share of K for the same output tile
    and hand their partial sums over through global memory. Block z of the
    grid's `splits` takes split z; each stores its partial sum, arrives, and
    the last to arrive reduces all of them, in split order (bit-identical run
    to run), and stores the result:

        workspace = kb.split_k.workspace(splits=4)
        ...                                        # the K loop of split kb.block_idx.z
        kb.split_k.store(workspace, acc, row, kb.block_idx.z)
        with kb.if_(kb.split_k.arrive(workspace, row)):
            kb.split_k.reduce(workspace, acc, row)
            ...                                    # the epilogue

    `row` is the output tile's index among the grid's tiles times the tile's
    rows: the workspace holds one partial tile per split and output tile.
    With `slots` = S it holds S such sets of partial tiles instead, and `row`
    is a slot's index times the tile's rows: blocks of a persistent grid that
    share a tile hand over through the slot they choose (stream-K: one per
    boundary between two blocks' shares of the K tiles), and the grid gains
    no axis."""

    def __init__(self, builder: KernelBuilder):
        self._kb = builder

    def workspace(self, splits: int, slots: int | None = None) -> SplitKWorkspace:
        """The kernel's split-K workspace, two kernel arguments after those
        declared so far; without `slots` the grid gains an axis of `splits`
        blocks."""
        kb = self._kb
        where = caller()
        if isinstance(splits, bool) or not isinstance(splits, int) or not 2 <= splits <= MAX_SPLITS:
            raise BuildError(
                f"split_k.workspace: splits must be an int from 2 to {MAX_SPLITS}, got {splits!r}",
                where,
            )
        if slots is not None and (
            isinstance(slots, bool) or not isinstance(slots, int) or slots < 1
        ):
            raise BuildError(
                f"split_k.workspace: slots must be None or an int >= 1, got {slots!r}", where
            )
        if kb._workspace is not None:
            raise BuildError("split_k.workspace: the kernel already has one", where)
        if slots is None and len(kb.grid) > 2:
            raise BuildError(
                "split_k.workspace: the splits take a grid axis, and the grid has three already",
                where,
            )
        kb._require_top_level("split_k.workspace", "it declares kernel arguments")
        kb._workspace = SplitKWorkspace(
            kb, kb._argument("f32", 1, where), kb._argument("i32", 1, where), splits, slots
        )
        return kb._workspace

    def _check(self, workspace: SplitKWorkspace, tile: RegisterTile | None, what: str) -> None:
        kb = self._kb
        kb._own(expect(workspace, SplitKWorkspace, what, "the kernel's split_k.workspace"), what)
        if tile is None:
            return
        kb._own(expect(tile, RegisterTile, f"{what} tile", "a register tile"), what)
        if tile.dtype != "f32":
            raise BuildTypeError(
                f"{what}: partial sums are f32, the tile is {tile.dtype}", caller()
            )
        if workspace.tile_shape not in (None, tile.shape):
            raise BuildError(
                f"{what}: the workspace holds {workspace.tile_shape[0]}x"
                f"{workspace.tile_shape[1]} partial tiles, not {tile.shape[0]}x{tile.shape[1]}",
                caller(),
            )
        workspace.tile_shape = tile.shape

    def store(self, workspace: SplitKWorkspace, tile: RegisterTile, row, split) -> None:
        """Store `tile` as split `split`'s partial sum of the output rows from `row`."""
        kb = self._kb
        self._check(workspace, tile, "split_k.store")
        with kb._at():
            row_value = kb._index(row, "split_k.store row")
            split_value = kb._index(split, "split_k.store split")
            dialect.partial_store(
                tile.value, workspace.partials.value, row_value, split_value, workspace.splits
            )

    def arrive(self, workspace: SplitKWorkspace, row) -> Predicate:
        """Publish this split's partial sum of the rows from `row`; true in every
        thread when this split was the last to arrive."""
        kb = self._kb
        self._check(workspace, None, "split_k.arrive")
        with kb._at():
            row_value = kb._index(row, "split_k.arrive row")
            return Predicate(
                kb, dialect.partial_arrive(workspace.counters.value, row_value, workspace.splits)
            )

    def reduce(self, workspace: SplitKWorkspace, tile: RegisterTile, row) -> None:
        """Set `tile` to the sum of every split's partial sum of the rows from
        `row`; only where `arrive` returned true."""
        kb = self._kb
        self._check(workspace, tile, "split_k.reduce")
        with kb._at():
            row_value = kb._index(row, "split_k.reduce row")
            dialect.partial_reduce(
                tile.value,
                workspace.partials.value,
                workspace.counters.value,
                row_value,
                workspace.splits,
            )
