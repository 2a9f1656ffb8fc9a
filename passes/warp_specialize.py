"""--warp-specialize: split a non-specialized kernel into a TMA producer role and
WGMMA consumer warpgroups that hand ring-buffer stages over full/empty mbarriers.

This is the tutorial's V2 -> V3 step done by the compiler.

Contract
--------
Before: a kernel (func.func with `wsc.num_threads` = 128, one warpgroup, no
roles) whose body is prologue ops, one or more `wsc.acc_alloc`s (the
accumulators, of the same rows), one K-tile `scf.for` and an epilogue; or,
for a persistent kernel, prologue ops and a *tile loop* (an `scf.for`
carrying exactly the ring's (stage, phase)) whose body is pure arith ops, the
`wsc.acc_alloc`s (and register math setting them up), the K loop starting at
the tile loop's (stage, phase), the epilogue, and a yield of the K loop's
results. The K loop carries exactly
(stage, phase), advanced by one `wsc.ring_advance`; its body holds
  - an `scf.if` guarded by `wsc.elect` with one `wsc.mbarrier_arrive_expect_tx`
    and the `wsc.tma_load`s of the tile, all completing on the *full* barriers
    (arrival count 1), and nothing else but arith ops: every tile a K step
    loads shares one ring stage and one full barrier (one ring, whose stage
    holds every operand of the step);
  - `wsc.mbarrier_wait` on the full barriers, then one or more WGMMA groups:
    `wsc.wgmma_fence`, `wsc.wgmma`s and `wsc.wgmma_register_a`s (A from a
    register tile) accumulating into an accumulator or into a tile made by
    a `wsc.acc_alloc` in the loop (a product of one K tile),
    `wsc.wgmma_commit_group`, `wsc.wgmma_wait_group {pending = 0}`; between
    them register-tile math (`wsc.cast`, the ops of the epilogue below, and
    `wsc.tile_assign` of an accumulator, updating it in place from K tile to
    K tile), e.g. one product cast to f16 as the A operand of the next, and
    `wsc.load_shared`s of the K tile's stage of a ring the copies fill,
    after the wait (a K tile's block scales, copied beside its operands);
    nothing else reads shared memory into registers;
  - any number of block-wide `wsc.sync`s (`wsc.cluster_sync`s in a cluster)
    and pure arith ops.
Ops that make a value and nothing else, arith's and `wsc.batch_matrix` (the
matrix a tile's copies read and write), may sit anywhere; each role gets its
own copy (in a tile loop, per tile).
Before the K loop, register-tile math and `wsc.tile_assign`s may set the
accumulators up (a running max set to -inf); nothing else may use them there.
Without a tile loop the prologue may also copy tiles once, for every K tile
to read (attention's Q: a `wsc.wgmma` with `a_stage`): `scf.if`s on a
`wsc.elect` with TMA loads completing on barriers other than the full ones,
and `wsc.mbarrier_wait`s on those barriers.
In a kernel launched in clusters (`wsc.cluster_size` = n > 1) the copies may
include `multicast` `wsc.tma_load`s, which write every CTA's stages.
The epilogue may only use the accumulator through `wsc.cast`, `wsc.store`,
`wsc.store_shared` and register-tile math (`wsc.tile_binary`, `wsc.tile_unary`,
`wsc.tile_select`, `wsc.tile_row_reduce`, with tiles of `wsc.tile_fill`,
`wsc.tile_iota`, `wsc.tile_load` and `wsc.tile_broadcast`, each rebuilt for a
group's rows: a tile load reads, and a store writes, the group's rows, which
are dst's columns where it is `transpose`d, and row indices count from the
group's first row; a vector along columns is read whole), and in a split-K kernel
`wsc.partial_store` and
`wsc.partial_reduce`: there it stores the partial sum, arrives
(`wsc.partial_arrive`), and the rest of the epilogue, from the
`wsc.partial_reduce` on, sits in an `scf.if` on the arrival's result. Parts of
the epilogue may sit in `scf.if`s (without else regions) on any condition that
is the same in every thread: an arrival's result, or arith on block indices,
sizes and loop indices (a stream-K tile is stored whole or handed over,
wsc.kernels.matmul.build). A staged epilogue writes the tile into a one-stage buffer
of the accumulator's shape (`wsc.store_shared`, then `wsc.sync`) and copies
it out: with TMA, after a `wsc.fence_proxy_async` before the sync, under a
`wsc.elect` (`wsc.tma_store`, with `wsc.tma_store_wait`s under `wsc.elect`s
before it is written again), or by all threads (`wsc.coalesced_store`, with
a `wsc.sync` before it is written again).

After: the same computation, specialized (the seed's V3, generalised):
  - an *empty* barrier array beside the full one, with one arrival per consumer
    thread that reads a stage (128 x num-consumer-groups; 128 in ping-pong,
    where one group reads each stage; per warp with release = warp; times the
    CTAs of a cluster), initialised before the block-wide sync that makes
    barrier init visible, i.e. before the roles split;
  - num-consumer-groups consumer roles, warpgroup g on threads [128g, 128g+128),
    each owning rows [g*BM/G, (g+1)*BM/G) of the output tile: it waits on
    full[stage] (initial phase 0), runs its WGMMAs on its rows of A and all of
    B, with every register tile of the loop made in its rows (a stage read
    reads the block of the group's rows: its columns where `transpose`d),
    waits for them
    (wait_group 0), then releases the stage by arriving on empty[stage] after
    the last WGMMA group of the K tile; then it stores its rows (a split-K
    epilogue hands over the partial sums of its rows, each group counting
    its own arrivals on the counter of its first row; a staged epilogue's
    buffer gets one stage of those rows per group, G x BM/G x BN, and each
    group stages, syncs its own warps and stores from its stage);
    with wgmma-in-flight = 1 (for a K loop of one WGMMA group) it instead
    leaves the K tile's WGMMA group in
    flight (wait_group 1, which retires the previous K tile's group) and
    releases the *previous* stage, (stage - 1) mod N, from the second K tile
    on; after the loop it waits for the last group (wait_group 0) and
    releases the last K tile's stage, (k_tiles - 1) mod N, before storing.
    Every filled stage is still released exactly once, one K tile later, so
    the producer and its drain are unchanged. Where the register math after
    the K tile's wait reads a product of one K tile (a wsc.acc_alloc in the
    loop that its wsc.wgmmas write, e.g. block-scaled fp8's), the math
    instead runs a K tile late, under the next K tile's WGMMAs. The group
    gets two slots, used by the K tiles in turn, each holding uninitialized
    tiles for the products and for the register tiles the math reads that
    are made before the wait (the K tile's scales); its K loop takes two K
    tiles per trip. K tile j + 1's WGMMAs are issued (the first into each
    product with the wgmma `overwrite` attribute) and its math's input tiles
    made, then wait_group 1 retires K tile j's group, its stage is released
    and K tile j's math runs. K tile 0 is issued before that loop and the
    last one or two K tiles are taken after it (wait_group 0 before the last
    math), all under one k_tiles > 0 guard, so that the same WGMMA group is
    in flight on every path (ptxas serializes every WGMMA of a kernel where
    paths differ). --unroll-ring-buffer does not take such a loop. Refused
    with located errors: WGMMAs reading a register tile made in the loop, a
    wsc.wgmma_register_a into a product, and math reading an accumulator the
    in-flight group writes (not a product). In a cluster of n CTAs every
    release is an `every_cta` `wsc.mbarrier_arrive` (all CTAs' producers write
    the stage) and the empty barriers count n times the arrivals. With
    release = warp a release is one arrival per consumer warp (`per_warp`:
    the warp's wait_group has retired its lanes' WGMMAs), and the empty
    barriers count warps instead of threads;
    with wgmma-turns = 1 (for a K loop of one WGMMA group, 2 or 4 groups, not
    ping-pong) the groups issue each K tile's WGMMAs in turn, group 0 first:
    group g waits on turns[g] between its full wait and its wgmma_fence, and
    after its wgmma_commit_group each of its warps arrives on turns[g + 1 mod
    G] (a *turns* barrier array of G barriers counting a warpgroup's 4 warps).
    The wait's parity is that of the K tile's ring position (flipped for group
    0, whose first wait passes on the fresh barrier), so the turns run on
    across the tiles of a persistent kernel;
  - each group's accumulators and the register math before the loop made in
    its rows, before its loop;
  - the prologue's copies loaded once issued by the producer's elected
    thread before its loop, and their waits made by each consumer group
    before its own (the producer never waits for them);
  - one producer role after them (a warp, or a warpgroup when producer =
    warpgroup, which also records register budgets for setmaxnreg unless
    rebalance-registers = false): it waits on
    empty[stage] (initial phase 1: fresh barriers pass at once), then one elected
    thread declares the bytes and issues the copies; after the loop it drains
    the last release of each filled stage, min(num_stages, k_tiles) waits, so
    it never exits while consumers still arrive;
  - no block-wide wsc.sync left inside the loop;
  - wsc.num_threads = 128 x groups + (32 or 128).
The rings as resized must fit in shared memory together (an error at the
kernel, a note at each ring, otherwise). The mbarrier protocol of the output
is then checked by --verify-pipeline's simulator unless `verify=false`. Any input outside this form gets a located
error naming what is unsupported.

Options
-------
num-stages           ring depth; 0 keeps the ring as written
num-consumer-groups  1, 2 or 4 consumer warpgroups
producer             warp | warpgroup
producer-registers   setmaxnreg budget of a warpgroup producer (a multiple of 8
                     from 24 to 256; with a producer warp, leave it as it is)
consumer-registers   setmaxnreg budget of each consumer warpgroup (0: the most
                     the producer's released registers allow, at most 232;
                     else a multiple of 8 from 24 to 256, warpgroup producer)
rebalance-registers  false: no setmaxnreg, every role keeps the registers the
                     block starts with (what rebalancing gains is measured
                     against this); producer-registers is then unused and
                     consumer-registers must stay 0
ping-pong            consumer groups alternate over whole tiles (persistent
                     kernels with 2 consumer groups); with wgmma-in-flight = 1
                     a group retires its last WGMMA group and releases its
                     last stage before it hands the turn over
wgmma-turns          consumer groups issue each K tile's WGMMA group in turn
                     (2 or 4 groups, one WGMMA group per K tile, not ping-pong)
wgmma-in-flight      WGMMA groups a consumer leaves in flight across K tiles:
                     0 (release each stage after its own WGMMAs) or 1
                     (release one K tile late, or with a product of one K
                     tile, run its math under the next K tile's WGMMAs;
                     needs num-stages >= 2, since the stage in flight and the
                     one released must differ)
release              thread (every consumer thread arrives on the empty
                     barrier) | warp (one arrival per consumer warp: 32 times
                     fewer, each after its warp synchronizes)
verify               run the protocol check on the result
"""

from __future__ import annotations

from typing import NoReturn

from mlir import ir
from mlir.dialects import arith, scf

from wsc import dialect, ops
from wsc.diagnostics import PassError
from wsc.ir_utils import (
    KERNEL_THREADS_ATTR,
    blocks_per_sm,
    bool_constant,
    clone_remapped,
    cluster_size,
    constant_int,
    defining_op,
    enclosing,
    index_constant,
    kernel_threads,
    kernels,
    operands_deep,
    set_int_attr,
    walk,
)
from wsc.pass_registry import Option, OptionError, WscPass
from wsc.passes.warp_specialize_choices import (
    CONSUMER_GROUPS,
    PRODUCER_THREADS,
    PRODUCERS,
    RELEASES,
    WGMMA_IN_FLIGHT,
)
from wsc.target.hopper import (
    BUFFER_ALIGN,
    MAX_SETMAXNREG,
    MAX_STAGES,
    MIN_SETMAXNREG,
    PRODUCER_REGISTERS,
    SETMAXNREG_STEP,
    WARP_SIZE,
    WARPGROUP_SIZE,
    consumer_register_budget,
    entry_register_cap,
)
from wsc.verifier import verify_shared_total

_CONSUMER_OPS = (
    "wsc.mbarrier_wait",
    "wsc.wgmma_fence",
    "wsc.wgmma",
    "wsc.wgmma_register_a",
    "wsc.wgmma_commit_group",
    "wsc.wgmma_wait_group",
    "wsc.acc_alloc",
    "wsc.tile_assign",
    *ops.TILE_MAKERS,
)
_PURE_DIALECTS = ("arith.",)
#: Ops whose value is the same in every thread of the block.
_UNIFORM_VALUE_OPS = ("gpu.block_id", "gpu.grid_dim", "memref.dim")
#: Other ops that only make a value, as arith ops do (each role takes its own copy).
_VALUE_OPS = ("wsc.batch_matrix", *_UNIFORM_VALUE_OPS)


def _pure(name: str) -> bool:
    return name.startswith(_PURE_DIALECTS) or name in _VALUE_OPS


#: The epilogue's ops that name output rows (or a staging stage), which a
#: consumer group rewrites to its own: its rows' global row, partial sums and
#: arrival counter, its staging stage.
_EPILOGUE_ROW_OPS: dict[
    str,
    type[
        ops.Store
        | ops.TmaStore
        | ops.CoalescedStore
        | ops.StoreShared
        | ops.PartialStore
        | ops.PartialArrive
        | ops.PartialReduce
    ],
] = {
    "wsc.store": ops.Store,
    "wsc.tma_store": ops.TmaStore,
    "wsc.coalesced_store": ops.CoalescedStore,
    "wsc.store_shared": ops.StoreShared,
    "wsc.partial_store": ops.PartialStore,
    "wsc.partial_arrive": ops.PartialArrive,
    "wsc.partial_reduce": ops.PartialReduce,
}
#: The epilogue ops besides the stores that may read or write the accumulator.
_ACC_EPILOGUE_OPS = (
    *ops.TILE_MAPS,
    "wsc.tile_assign",
    "wsc.partial_store",
    "wsc.partial_reduce",
)


def _group_row_operand(op: ir.Operation) -> int | None:
    """The operand of a tile maker that a consumer group's first row adds to:
    the row of wsc.tile_load (its column if transposed), the offset of a
    wsc.tile_broadcast along rows, the origin of a wsc.tile_iota of row
    indices; None for other tile makers."""
    if op.name == "wsc.tile_load":
        name = "col" if ops.TileLoad(op).transpose else "row"
    elif op.name == "wsc.tile_broadcast" and ops.TileBroadcast(op).along == "rows":
        name = "offset"
    elif op.name == "wsc.tile_iota" and ops.TileIota(op).along == "rows":
        name = "origin"
    else:
        return None
    return ops.operand_number(op.name, name)


class WarpSpecialize(WscPass):
    ARGUMENT = "warp-specialize"
    SUMMARY = "Split a kernel into a TMA producer role and WGMMA consumer warpgroups"
    OPTIONS = (
        Option("num-stages", int, 0, "ring depth (0: as written)"),
        Option("num-consumer-groups", int, 1, "consumer warpgroups", choices=CONSUMER_GROUPS),
        Option("producer", str, "warp", "producer role size", choices=PRODUCERS),
        Option(
            "producer-registers",
            int,
            PRODUCER_REGISTERS,
            "setmaxnreg budget of a warpgroup producer",
        ),
        Option("consumer-registers", int, 0, "setmaxnreg budget of a consumer (0: auto)"),
        Option(
            "rebalance-registers",
            bool,
            True,
            "move registers from a warpgroup producer to the consumers with setmaxnreg",
        ),
        Option(
            "ping-pong",
            bool,
            False,
            "consumer groups take whole tiles in turn (persistent kernels, 2 groups)",
        ),
        Option(
            "wgmma-turns",
            bool,
            False,
            "consumer groups issue each K tile's WGMMAs in turn (2 or 4 groups)",
        ),
        Option(
            "wgmma-in-flight",
            int,
            0,
            "WGMMA groups left in flight across K tiles (1: release each stage one K tile late)",
            choices=WGMMA_IN_FLIGHT,
        ),
        Option("release", str, "thread", "who arrives on an empty barrier", choices=RELEASES),
        Option("verify", bool, True, "check the mbarrier protocol of the result"),
    )

    def __init__(self, **options):
        super().__init__(**options)
        if not 0 <= self.options.num_stages <= MAX_STAGES:
            raise OptionError(
                f"option {{num-stages}} must be 0 (as written) to {MAX_STAGES} (the stages "
                f"of {BUFFER_ALIGN} bytes that fit in shared memory), got "
                f"{self.options.num_stages}",
                self.ARGUMENT,
            )
        budgets = (
            ("producer-registers", self.options.producer_registers, ""),
            ("consumer-registers", self.options.consumer_registers, "0 (auto) or "),
        )
        for flag, budget, auto in budgets:
            if (auto and budget == 0) or (
                MIN_SETMAXNREG <= budget <= MAX_SETMAXNREG and budget % SETMAXNREG_STEP == 0
            ):
                continue
            raise OptionError(
                f"option {{{flag}}} must be {auto}a multiple of {SETMAXNREG_STEP} from "
                f"{MIN_SETMAXNREG} to {MAX_SETMAXNREG} (a setmaxnreg budget), got {budget}",
                self.ARGUMENT,
            )
        given = self.options.producer_registers != PRODUCER_REGISTERS or (
            self.options.consumer_registers != 0
        )
        if self.options.producer == "warp" and given:
            raise OptionError(
                "{producer-registers} and {consumer-registers} apply to {producer} = "
                "warpgroup (setmaxnreg is warpgroup-wide): with a producer warp every role "
                "keeps the registers the block starts with",
                self.ARGUMENT,
            )

    def run(self, module: ir.Operation) -> None:
        found = kernels(module.operation)
        for kernel in found:
            # Ops the pass creates carry the kernel's location, so a
            # diagnostic about one (e.g. from the protocol check) is located.
            with kernel.location:
                _Specializer(kernel, self.options).run()
            verify_shared_total(kernel)
        if self.options.verify and found:
            from wsc.protocol import check_protocol

            check_protocol(module.operation)


class _Specializer:
    """Rewrites one kernel; the fields name the parts of the input form."""

    def __init__(self, kernel: ir.Operation, options):
        self.kernel = kernel
        self.options = options
        self.body = kernel.regions[0].blocks[0]

    # Matching the input form ------------------------------------------------

    def _fail(self, op: ir.Operation, message: str) -> NoReturn:
        raise PassError(op.location, f"--warp-specialize: {message}")

    @property
    def _persistent_tile_loop(self) -> ir.Operation:
        """The tile loop, where the kernel is persistent (the caller's premise)."""
        if self.tile_loop is None:
            raise ValueError("the kernel has no tile loop")
        return self.tile_loop

    @property
    def _k_tiles(self) -> ir.Value:
        """The K loop's trip count."""
        return self.loop.opview.upperBound

    def _match(self) -> None:
        kernel = self.kernel
        if any(op.name == "wsc.role" for op in walk(kernel)):
            self._fail(kernel, "kernel is already specialized (it has wsc.role ops)")
        if kernel_threads(kernel) != WARPGROUP_SIZE:
            self._fail(
                kernel,
                f"expects a non-specialized kernel of one warpgroup "
                f"({KERNEL_THREADS_ATTR} = {WARPGROUP_SIZE})",
            )
        loops = _loops_with_copies(self.body)
        if len(loops) != 1:
            self._fail(
                loops[1] if loops else kernel,
                f"expects exactly one K-tile scf.for with TMA loads at the "
                f"top level of the kernel, found {len(loops)}",
            )
        self.tile_loop = None
        tile_block = self.body
        inner = _loops_with_copies(loops[0].regions[0].blocks[0])
        if inner:
            self.tile_loop = loops[0]
            tile_block = self.tile_loop.regions[0].blocks[0]
            if len(inner) != 1:
                self._fail(
                    inner[1],
                    f"expects exactly one K-tile scf.for with TMA "
                    f"loads in the tile loop, found {len(inner)}",
                )
            if _loops_with_copies(inner[0].regions[0].blocks[0]):
                self._fail(
                    self.tile_loop,
                    "expects at most two loops around the TMA loads (a persistent "
                    "tile loop around the K loop), found three: walk every tile of "
                    "the outer loop in one tile loop (e.g. a batch index and a tile "
                    "index computed from one work-item index)",
                )
            loops = inner
        self.loop = loops[0]
        self.loop_body = self.loop.regions[0].blocks[0]
        block_ops = [op.operation for op in tile_block.operations]
        self.prologue = block_ops[: block_ops.index(self.loop)]
        self.epilogue = block_ops[block_ops.index(self.loop) + 1 : -1]

        self.accs = [op for op in self.prologue if op.name == "wsc.acc_alloc"]
        if not self.accs:
            self._fail(
                self.loop,
                "expects a wsc.acc_alloc before the K loop, found none: the pass "
                "specializes a loop of WGMMAs into register accumulators; a loop "
                "that only reads its stages (wsc.load_shared) takes roles written "
                "by hand, as python/wsc/kernels/softmax/build.py writes them",
            )
        rows = {dialect.acc_type_parameters(op.result.type)[0][0] for op in self.accs}
        if len(rows) != 1:
            self._fail(
                self.accs[1],
                "every accumulator before the K loop must have the same rows (the "
                "consumer groups split them)",
            )
        self._match_loop()
        self._match_stage_reads()
        if self.tile_loop is not None:
            self._match_tile_loop(self.tile_loop)
        self._match_resident_copies(block_ops if self.tile_loop is None else self._body_ops())
        self._match_register_prologue()
        self._match_epilogue()

    def _match_register_prologue(self) -> None:
        """Register-tile math before the K loop (e.g. a running max set to
        -inf with wsc.tile_assign) runs in each consumer group, on its rows;
        nothing else before the loop may use an accumulator."""
        accumulators = {op.result for op in self.accs}
        self.register_prologue = [
            op for op in self.prologue if op.name in ops.TILE_MAKERS or op.name == "wsc.tile_assign"
        ]
        made = accumulators | {r for op in self.register_prologue for r in op.results}
        for op in self.prologue:
            if op in self.register_prologue or op.name == "wsc.acc_alloc":
                continue
            if made & set(operands_deep(op)):
                self._fail(
                    op,
                    f"before the K loop a register tile may only be used by register-tile "
                    f"math, not by '{op.name}'",
                )

    def _body_ops(self) -> list[ir.Operation]:
        """The kernel body's ops before its loop (the tile loop if any)."""
        ops_ = [op.operation for op in self.body.operations]
        return ops_[: ops_.index(self.tile_loop or self.loop)]

    def _match_resident_copies(self, block_ops: list[ir.Operation]) -> None:
        """Copies before the K loop load tiles once (e.g. attention's Q), for
        every K tile to read: an elected group of TMA loads, and waits on
        their barriers. The producer issues them before its loop, and each
        consumer group waits before its own."""
        self.resident_copies, self.resident_waits = [], []
        loop_index = block_ops.index(self.loop) if self.loop in block_ops else len(block_ops)
        for op in block_ops[:loop_index]:
            copies = op.name == "scf.if" and any(n.name == "wsc.tma_load" for n in walk(op))
            if not copies and op.name != "wsc.mbarrier_wait":
                continue
            if self.tile_loop is not None:
                self._fail(
                    op,
                    "copies before the K loop, loaded once, need a kernel without a tile "
                    "loop (a persistent kernel's tiles would each need their own)",
                )
            if op.name == "wsc.mbarrier_wait":
                if ops.MbarrierWait(op).barriers == self.full:
                    self._fail(op, "a wait on the full barriers before the K loop")
                self.resident_waits.append(op)
                continue
            if not _is_elected(op):
                self._fail(
                    op,
                    "copies before the K loop must be issued under a wsc.elect alone; "
                    "these are elected inside another condition",
                )
            elect = defining_op(op.opview.condition)
            for load in walk(op):
                if load.name == "wsc.tma_load" and ops.TmaLoad(load).barriers == self.full:
                    self._fail(
                        load, "a copy before the K loop completes on the ring's full barriers"
                    )
            self.resident_copies.append((elect, op))

    def _match_tile_loop(self, tile_loop: ir.Operation) -> None:
        loop = self.loop
        body = tile_loop.regions[0].blocks[0]
        args = list(body.arguments)
        yield_op = body.operations[len(body.operations) - 1].operation
        if (
            len(args) != 3
            or list(loop.opview.initArgs) != args[1:]
            or list(yield_op.operands) != list(loop.results)
        ):
            self._fail(
                tile_loop,
                "the tile loop must carry exactly the ring's (stage, "
                "phase): the K loop starts from them and the tile loop "
                "yields the K loop's results",
            )
        for op in self.prologue:
            register_math = op.name in ops.TILE_MAKERS or op.name == "wsc.tile_assign"
            if op.name != "wsc.acc_alloc" and not register_math and not _pure(op.name):
                self._fail(
                    op,
                    f"every role runs the tile loop: '{op.name}' before the K "
                    f"loop cannot be given to all of them",
                )

    def _match_loop(self) -> None:
        loop = self.loop
        advances = [
            op.operation
            for op in self.loop_body.operations
            if op.operation.name == "wsc.ring_advance"
        ]
        args = list(self.loop_body.arguments)
        if len(advances) != 1 or len(args) != 3:
            self._fail(
                loop,
                "the K loop must carry exactly (stage, phase), advanced by one wsc.ring_advance",
            )
        self.advance = advances[0]
        self.iv, self.stage, self.phase = args
        if constant_int(loop.opview.lowerBound) != 0 or constant_int(loop.opview.step) != 1:
            self._fail(
                loop,
                "the K loop must count K tiles from 0 in steps of 1 (for %kt = 0 to "
                "%k_tiles step 1, a K tile's offset %kt * block_k computed in the body)",
            )
        yield_op = self.loop_body.operations[len(self.loop_body.operations) - 1].operation
        advance = ops.RingAdvance(self.advance)
        if [advance.stage, advance.phase] != [self.stage, self.phase] or list(
            yield_op.operands
        ) != [advance.next_stage, advance.next_phase]:
            self._fail(
                self.advance, "the loop must yield wsc.ring_advance of its own (stage, phase)"
            )

        self.producer_anchors, self.consumer_anchors = [], []
        self.full = None
        for op in self.loop_body.operations:
            op = op.operation
            name = op.name
            if name == "scf.if" and any(n.name == "wsc.tma_load" for n in walk(op)):
                self._match_copies(op)
                self.producer_anchors.append(op)
            elif name in _CONSUMER_OPS:
                self.consumer_anchors.append(op)
                if name == "wsc.wgmma_wait_group" and ops.WgmmaWaitGroup(op).pending != 0:
                    self._fail(
                        op,
                        "only wgmma_wait_group {pending = 0} is supported in the "
                        "input: the stage is released after it",
                    )
            elif name in (
                "wsc.sync",
                "wsc.cluster_sync",
                "wsc.ring_advance",
                "wsc.elect",
                "scf.yield",
            ):
                continue
            elif name == "scf.if":
                self._fail(
                    op,
                    "cannot split an scf.if of the K loop between the producer and the "
                    "consumers: only the elected TMA copies may be guarded; mask register "
                    "math with wsc.tile_select (kb.where) instead",
                )
            elif not _pure(name):
                self._fail(
                    op, f"cannot assign '{name}' in the K loop to the producer or the consumers"
                )
        if self.full is None:
            self._fail(loop, "found no elected TMA copies in the K loop")
        waits = [op for op in self.consumer_anchors if op.name == "wsc.mbarrier_wait"]
        if len(waits) != 1 or ops.MbarrierWait(waits[0]).barriers != self.full:
            self._fail(
                loop, "the K loop must wait once on the full barriers its copies complete on"
            )
        wgmmas = [op for op in self.consumer_anchors if op.name in ops.WGMMA_OPS]
        if not wgmmas:
            self._fail(loop, "found no wsc.wgmma in the K loop")
        accumulators = {op.result for op in self.accs} | {
            op.result for op in self.consumer_anchors if op.name == "wsc.acc_alloc"
        }
        for op in wgmmas:
            if op.operands[ops.operand_number(op.name, "acc")] not in accumulators:
                self._fail(
                    op,
                    f"every {op.name} must accumulate into a wsc.acc_alloc of the kernel "
                    f"(before the K loop, or in it for a product of one K tile)",
                )
        groups = [op for op in self.consumer_anchors if op.name == "wsc.wgmma_commit_group"]
        # Both options schedule around a K tile's one WGMMA group.
        for option, value, what in (
            (
                "wgmma-in-flight",
                self.options.wgmma_in_flight,
                "leaves a K tile's one WGMMA group in flight",
            ),
            (
                "wgmma-turns",
                int(self.options.wgmma_turns),
                "passes the turn on after a K tile's one WGMMA group",
            ),
        ):
            if value and len(groups) != 1:
                self._fail(
                    groups[1] if groups else loop,
                    f"{option} = {value} {what}; this K loop commits {len(groups)}",
                )
        waits = [op for op in self.consumer_anchors if op.name == "wsc.wgmma_wait_group"]
        if self.options.wgmma_in_flight and len(waits) != 1:
            self._fail(
                waits[1] if waits else groups[0],
                f"wgmma-in-flight = {self.options.wgmma_in_flight} turns the K tile's "
                f"wsc.wgmma_wait_group into the wait that retires the previous K tile's "
                f"group; this K loop has {len(waits)}",
            )
        self.products: list[ir.Operation] = []
        if self.options.wgmma_in_flight:
            self._match_products()

    def _match_stage_reads(self) -> None:
        """A wsc.load_shared reads the K tile's stage of a ring its copies
        fill, in the K loop's body after the full wait (the consumers hand
        the stage back after it); any other read of shared memory into
        registers is refused."""
        copied = {
            ops.TmaLoad(op).dst
            for anchor in self.producer_anchors
            for op in walk(anchor)
            if op.name == "wsc.tma_load"
        }
        (wait,) = [op for op in self.consumer_anchors if op.name == "wsc.mbarrier_wait"]
        body = [op.operation for op in self.loop_body.operations]
        for op in walk(self.kernel):
            if op.name != "wsc.load_shared":
                continue
            load = ops.LoadShared(op)
            if (
                op not in body
                or body.index(op) < body.index(wait)
                or load.src not in copied
                or load.stage != self.stage
            ):
                self._fail(
                    op,
                    "wsc.load_shared is split over the consumer groups only where it "
                    "reads the K tile's stage of a ring the K loop's copies fill, in the "
                    "loop's body after its wait on the full barriers; write the producer "
                    "and consumer roles in the input for any other read, as "
                    "wsc.kernels.softmax does",
                )

    def _match_products(self) -> None:
        """With wgmma-in-flight = 1, the register math after the K tile's
        wait may read what its WGMMA group wrote only where that is a product
        of one K tile (a wsc.acc_alloc in the loop): the math then runs a K
        tile late, on two slots of the products and of the tiles it reads
        (_consume_in_pairs). The group may read no register tile made in the
        loop, since it is issued before the previous K tile's math."""
        body = [op.operation for op in self.loop_body.operations]
        (wait,) = [op for op in self.consumer_anchors if op.name == "wsc.wgmma_wait_group"]
        written = {
            op.operands[ops.operand_number(op.name, "acc")]
            for op in self.consumer_anchors
            if op.name in ops.WGMMA_OPS
        }
        made_here = {op.result: op for op in self.consumer_anchors if op.name == "wsc.acc_alloc"}
        reads = False
        for op in body[body.index(wait) + 1 :]:
            for tile in written & set(operands_deep(op)):
                if tile not in made_here:
                    self._fail(
                        op,
                        f"wgmma-in-flight = 1 leaves the K tile's WGMMA group in flight "
                        f"past its wait, but '{op.name}' reads a tile the group writes: "
                        f"only a product of one K tile (a wsc.acc_alloc in the K loop) "
                        f"can wait for the next K tile's WGMMAs, in a second tile",
                    )
                reads = True
        if not reads:
            for op in self.consumer_anchors:
                source = (
                    defining_op(ops.WgmmaRegisterA(op).a)
                    if op.name == "wsc.wgmma_register_a"
                    else None
                )
                if source is not None and enclosing(source, lambda p: p == self.loop) is not None:
                    self._fail(
                        op,
                        "wgmma-in-flight = 1 leaves the K tile's WGMMA group in flight "
                        "while the next K tile's ops run, and this WGMMA reads its A "
                        "operand from a register tile made in the K loop, which those "
                        "ops make again (ptxas would serialize every WGMMA): use "
                        "wgmma-in-flight = 0",
                    )
            return
        self.products = [made_here[tile] for tile in made_here if tile in written]
        before_wait = set(body[: body.index(wait)])
        issue_anchors = [
            op
            for op in self.consumer_anchors
            if op in before_wait
            and op.name
            in ("wsc.mbarrier_wait", "wsc.wgmma_fence", *ops.WGMMA_OPS, "wsc.wgmma_commit_group")
        ]
        self.issue_ops = [op for op in self._slice(issue_anchors) if op not in self.products]
        for op in self.issue_ops:
            if op.name == "wsc.wgmma_register_a" and op.operands[
                ops.operand_number(op.name, "acc")
            ] in {alloc.result for alloc in self.products}:
                self._fail(
                    op,
                    "wgmma-in-flight = 1 with a product of one K tile needs wsc.wgmma "
                    "into it (whose first step can overwrite the previous K tile's), "
                    "not wsc.wgmma_register_a",
                )
            if op.name in ops.TILE_MAKERS:
                self._fail(
                    op,
                    "wgmma-in-flight = 1 issues each K tile's WGMMAs before the "
                    "previous K tile's register math, so they cannot read a register "
                    "tile made in the loop",
                )
        math_anchors = [
            op
            for op in self.consumer_anchors
            if op not in issue_anchors and op != wait and op not in self.products
        ]
        math = [op for op in self._slice(math_anchors) if op not in self.products]
        self.math_before_wait = [op for op in math if op in before_wait]
        self.math_after_wait = [op for op in math if op not in before_wait]
        read_after = {v for op in self.math_after_wait for v in operands_deep(op)}
        self.math_inputs = [
            op.results[0]
            for op in self.math_before_wait
            if op.name in ops.TILE_MAKERS and op.results[0] in read_after
        ]
        # The index arithmetic the math itself reads (its tiles come loaded).
        made = frozenset(defining_op(tile) for tile in self.math_inputs)
        needed = set(self._slice(self.math_after_wait, stop=made))
        self.math_indices = [op for op in self.math_before_wait if op in needed]

    def _match_copies(self, if_op: ir.Operation) -> None:
        if not _is_elected(if_op):
            # The verifier guarantees each copy a wsc.elect: here one nested in if_op.
            self._fail(
                if_op,
                "TMA copies must be issued under a wsc.elect in the K loop's body; "
                "these are elected inside another condition (such as a prefetch "
                "guard): issue them under the elect alone, as the specialized "
                "producer runs ahead of the consumers by itself",
            )
        self.elect = defining_op(if_op.opview.condition)
        for op in walk(if_op):
            if op.name == "wsc.tma_load":
                barriers = ops.TmaLoad(op).barriers
            elif op.name == "wsc.mbarrier_arrive_expect_tx":
                barriers = ops.MbarrierArriveExpectTx(op).barriers
            elif op.name == "scf.yield" or _pure(op.name):
                continue
            else:
                # The group goes to the producer whole: anything else in it
                # would run in the wrong role, or read what only consumers hold.
                self._fail(
                    op,
                    f"the elected copy group may hold only TMA copies, their "
                    f"wsc.mbarrier_arrive_expect_tx, arithmetic and block indices and sizes; "
                    f"found '{op.name}'",
                )
            if self.full is not None and barriers != self.full:
                self._fail(op, "all copies of a K tile must complete on one barrier array")
            self.full = barriers
        full_alloc = defining_op(self.full)
        if full_alloc is None or full_alloc.name != "wsc.mbarrier_alloc":
            self._fail(if_op, "the full barriers must come from a wsc.mbarrier_alloc")
        arrival_count = ops.MbarrierAlloc(full_alloc).arrival_count
        if arrival_count != 1:
            self._fail(
                full_alloc,
                f"the full barriers must expect 1 arrival (the elected "
                f"producer thread), not {arrival_count}",
            )
        self.full_alloc = full_alloc
        stages = ops.RingAdvance(self.advance).num_stages
        barriers = ops.MbarrierAlloc(full_alloc).num_barriers
        if stages != barriers:
            # The roles are built around the barrier array's stages.
            self._fail(
                self.advance,
                f"the K loop counts {stages} stages, but its full barrier array has "
                f"{barriers}, one a stage: give the wsc.ring_advance num_stages = {barriers}",
            )

    def _match_epilogue(self) -> None:
        self.staging = None
        if not self._match_epilogue_ops(self.epilogue):
            self._fail(self.kernel, "the epilogue stores no result (wsc.store or wsc.store_shared)")

    def _match_epilogue_ops(self, epilogue: list[ir.Operation]) -> bool:
        """Check epilogue ops (those of a split-K guard's region too); whether
        they store a result."""
        accumulators = {op.result for op in self.accs}
        stores = False
        for op in epilogue:
            uses_acc = bool(accumulators & set(operands_deep(op)))
            if op.name in ("wsc.store", "wsc.store_shared"):
                stores = True
                if op.name == "wsc.store_shared":
                    self._match_staging(op)
            elif op.name == "scf.if" and _is_uniform_guard(op):
                body = [n.operation for n in op.regions[0].blocks[0].operations][:-1]
                if op.regions[1].blocks and list(op.regions[1].blocks[0].operations)[:-1]:
                    self._fail(op, "a guard in the epilogue has no else region")
                stores = self._match_epilogue_ops(body) or stores
            elif op.name == "scf.if":
                guard = defining_op(op.opview.condition)
                inner = [n.name for n in walk(op) if n.name != "scf.yield"]
                if (
                    guard is None
                    or guard.name != "wsc.elect"
                    or not set(inner) <= {"wsc.tma_store", "wsc.tma_store_wait"}
                ):
                    self._fail(
                        op,
                        "an scf.if in the epilogue must be a wsc.elect guarding "
                        "wsc.tma_store / wsc.tma_store_wait, or take its condition from "
                        "arith on block indices, sizes, loop indices and wsc.partial_arrive "
                        "(the same in every thread)",
                    )
            elif uses_acc and op.name not in _ACC_EPILOGUE_OPS:
                self._fail(
                    op,
                    f"the epilogue may use the accumulator only through "
                    f"{', '.join(_ACC_EPILOGUE_OPS)}, wsc.store and wsc.store_shared, "
                    f"not '{op.name}'",
                )
            elif op.name not in (
                *_ACC_EPILOGUE_OPS,
                *ops.TILE_MAKERS,
                "wsc.partial_arrive",
                "wsc.elect",
                "wsc.sync",
                "wsc.fence_proxy_async",
                "wsc.coalesced_store",
            ) and not _pure(op.name):
                where = (
                    ": allocate shared memory before the K loop (the roles split the kernel there)"
                    if op.name == "wsc.alloc_shared"
                    else ""
                )
                self._fail(op, f"unsupported epilogue op '{op.name}'{where}")
        return stores

    def _match_staging(self, op: ir.Operation) -> None:
        """The staged epilogue's buffer: one stage of the whole tile."""
        buffer = ops.StoreShared(op).dst
        alloc = defining_op(buffer)
        if self.staging is not None and buffer != self.staging:
            self._fail(op, "the epilogue stages the tile in more than one buffer")
        shape = ir.MemRefType(buffer.type).shape
        acc_shape, _ = dialect.acc_type_parameters(ops.StoreShared(op).tile.type)
        if (
            alloc is None
            or alloc.name != "wsc.alloc_shared"
            or alloc.parent is None
            or alloc.parent.operation != self.kernel
        ):
            self._fail(
                op, "the staging buffer must be a wsc.alloc_shared at the kernel's top level"
            )
        if shape[0] != 1 or list(shape[1:]) != list(acc_shape):
            self._fail(
                alloc,
                f"the staging buffer must be one stage of the "
                f"{acc_shape[0]}x{acc_shape[1]} tile, got "
                f"{shape[0]}x{shape[1]}x{shape[2]}",
            )
        self.staging = buffer

    # Building the output ------------------------------------------------------

    def _slice(
        self, anchors: list[ir.Operation], stop: frozenset = frozenset()
    ) -> list[ir.Operation]:
        """The loop-body ops `anchors` need, anchors included, in body order;
        not through the ops in `stop`."""
        body_ops = [op.operation for op in self.loop_body.operations]
        needed = set()
        pending = list(anchors)
        while pending:
            op = pending.pop()
            if op in needed or op in stop:
                continue
            needed.add(op)
            for value in operands_deep(op):
                producer = defining_op(value)
                if producer is not None and producer in body_ops:
                    pending.append(producer)
        return [op for op in body_ops if op in needed]

    def _resize_ring(self, num_stages: int) -> int:
        """Rebuild the ring buffers and barrier arrays with num_stages stages."""
        written = ops.MbarrierAlloc(self.full_alloc).num_barriers
        if num_stages in (0, written):
            return written
        ring = {ops.TmaLoad(op).dst for op in walk(self.loop) if op.name == "wsc.tma_load"}
        for op in [op.operation for op in self.body.operations]:
            if op.name == "wsc.alloc_shared" and op.result in ring:
                memref = ir.MemRefType(op.result.type)
                _, rows, cols = memref.shape
                # At the author's alloc's location: a ring too big for shared memory is theirs.
                with ir.InsertionPoint(op), op.location:
                    resized = dialect.alloc_shared(
                        dialect.shared_buffer_type(num_stages, rows, cols, str(memref.element_type))
                    )
                op.result.replace_all_uses_with(resized)
                op.erase()
            elif op == self.full_alloc:
                ops.MbarrierAlloc(op).num_barriers = num_stages
        ops.RingAdvance(self.advance).num_stages = num_stages
        return num_stages

    def _register_budgets(self, groups: int, threads: int) -> tuple[int | None, int | None]:
        """setmaxnreg budgets (producer, consumer), or (None, None) for a warp producer.

        The block starts with entry_register_cap(threads) registers per thread;
        consumers can only grow by what the producer warpgroup gives back, or
        their setmaxnreg.inc would wait forever."""
        if not self.options.rebalance_registers:
            if self.options.producer == "warp":
                self._fail(
                    self.kernel,
                    "rebalance-registers = false only applies to "
                    "producer = warpgroup: a producer warp never gives "
                    "registers away",
                )
            if self.options.consumer_registers:
                self._fail(
                    self.kernel,
                    f"consumer-registers = "
                    f"{self.options.consumer_registers} needs "
                    f"rebalance-registers = true: without setmaxnreg "
                    f"every role keeps the registers the block starts with",
                )
            return None, None
        if self.options.producer == "warp":
            # setmaxnreg is warpgroup-wide; a lone producer warp keeps the launch budget.
            return None, None
        entry = entry_register_cap(threads, blocks_per_sm(self.kernel))
        producer = self.options.producer_registers
        if producer > entry:
            self._fail(
                self.kernel,
                f"producer-registers = {producer} is more than the "
                f"{entry} registers per thread a block of {threads} "
                f"threads starts with",
            )
        spare_per_consumer = (entry - producer) // groups
        consumer = self.options.consumer_registers
        if consumer == 0:
            consumer = consumer_register_budget(
                threads, groups, producer, blocks_per_sm(self.kernel)
            )
        elif consumer > entry + spare_per_consumer:
            self._fail(
                self.kernel,
                f"consumer-registers = {consumer} cannot be met: a block "
                f"of {threads} threads starts with {entry} registers per "
                f"thread and a {producer}-register producer frees enough "
                f"for at most {entry + spare_per_consumer} per consumer",
            )
        return producer, consumer

    def run(self) -> None:
        self._match()
        self.ctas = cluster_size(self.kernel)
        groups = self.options.num_consumer_groups
        num_stages = self._resize_ring(self.options.num_stages)
        if self.options.wgmma_in_flight and num_stages < 2:
            self._fail(
                self.full_alloc,
                f"wgmma-in-flight = {self.options.wgmma_in_flight} "
                f"needs at least 2 stages: with {num_stages} the stage "
                f"a WGMMA group still reads is the one released",
            )
        # The tile's shape: a row vector (one column) spans its rows alone.
        widest = max(self.accs, key=lambda op: dialect.acc_type_parameters(op.result.type)[0][1])
        (block_m, block_n), _ = dialect.acc_type_parameters(widest.result.type)
        self.ping_pong = self.options.ping_pong
        if self.ping_pong:
            self._check_ping_pong(groups)
        if self.options.wgmma_turns and (groups == 1 or self.ping_pong):
            self._fail(
                self.loop,
                "wgmma-turns = 1 needs 2 or 4 consumer groups sharing each tile: "
                + (
                    "one group has no other to take turns with"
                    if groups == 1
                    else "in ping-pong the groups already take whole tiles in turn"
                ),
            )
        if self.options.wgmma_turns and self.products:
            self._fail(
                self.products[0],
                "wgmma-turns = 1 with wgmma-in-flight = 1 and a product of one K "
                "tile is not supported: each group issues a K tile's WGMMAs under "
                "the previous one's math, not in turn",
            )
        group_rows = block_m if self.ping_pong else block_m // groups
        if group_rows % 64:
            self._fail(
                self.accs[0],
                f"a {block_m}-row tile cannot be split over {groups} "
                f"consumer warpgroups in multiples of 64 rows",
            )
        producer_threads = PRODUCER_THREADS[self.options.producer]
        consumer_threads = WARPGROUP_SIZE * groups
        producer_registers, consumer_registers = self._register_budgets(
            groups, consumer_threads + producer_threads
        )

        # The empty barriers are initialised next to the full ones, so the
        # block-wide sync after them makes both visible before the roles split.
        # Every consumer thread (warp, with release = warp) that reads a stage
        # releases it: all groups' (each reads its rows), or in ping-pong the
        # one group whose tile it is.
        # In a cluster every CTA's copies write every CTA's stages, so each
        # stage is released by the consumers of every CTA.
        releasing = WARPGROUP_SIZE if self.ping_pong else consumer_threads
        if self.options.release == "warp":
            releasing //= WARP_SIZE
        with ir.InsertionPoint.after(self.full_alloc):
            empty = dialect.mbarrier_alloc(releasing * self.ctas, num_stages)
            self.turns = dialect.mbarrier_alloc(WARPGROUP_SIZE, 2) if self.ping_pong else None
            # One arrival per warp of the group whose turn ends.
            self.wgmma_turns = (
                dialect.mbarrier_alloc(WARPGROUP_SIZE // WARP_SIZE, groups)
                if self.options.wgmma_turns
                else None
            )
        self.group_rows = group_rows
        self.group_staging = self._split_staging(groups, group_rows, block_n)

        with ir.InsertionPoint(self.tile_loop or self.loop):
            stage0 = index_constant(0)
            for group in range(groups):
                is_consumer = dialect.role(
                    "consumer", WARPGROUP_SIZE * group, WARPGROUP_SIZE, consumer_registers
                )
                if_op = scf.IfOp(is_consumer)
                with ir.InsertionPoint(if_op.then_block):
                    self._build_consumer(group, group_rows, empty, stage0, num_stages)
                    scf.YieldOp([])
            is_producer = dialect.role(
                "producer", consumer_threads, producer_threads, producer_registers
            )
            if_op = scf.IfOp(is_producer)
            with ir.InsertionPoint(if_op.then_block):
                self._build_producer(empty, stage0, num_stages)
                scf.YieldOp([])

        if self.tile_loop is not None:
            self.tile_loop.erase()
        else:
            for op in reversed(self.epilogue):
                op.erase()
            self.loop.erase()
            for op in reversed(self.register_prologue):
                op.erase()
            for op in self.accs:
                op.erase()
            for op in self.resident_waits:
                op.erase()
            for elect, copy in self.resident_copies:
                copy.erase()
                if not list(elect.result.uses):  # the author may test it again
                    elect.erase()
        if self.staging is not None:
            defining_op(self.staging).erase()
        set_int_attr(self.kernel, KERNEL_THREADS_ATTR, consumer_threads + producer_threads)

    def _split_staging(self, groups: int, rows: int, cols: int) -> ir.Value | None:
        """The staging buffer rebuilt with one stage per consumer group, of the
        group's rows: groups stage and store independently."""
        if self.staging is None:
            return None
        alloc = defining_op(self.staging)
        element = str(ir.MemRefType(self.staging.type).element_type)
        with ir.InsertionPoint(alloc):
            return dialect.alloc_shared(dialect.shared_buffer_type(groups, rows, cols, element))

    def _check_ping_pong(self, groups: int) -> None:
        where = self.tile_loop or self.kernel
        if self.ctas > 1:
            self._fail(where, "ping-pong in a cluster is not supported")
        if self.tile_loop is None:
            self._fail(
                where,
                "ping-pong needs a persistent kernel: the consumer groups take "
                "turns over the tiles of a tile loop, and this kernel has none",
            )
        if groups != 2:
            self._fail(where, f"ping-pong needs num-consumer-groups = 2, not {groups}")
        if _inside(defining_op(self._k_tiles), self.tile_loop):
            self._fail(
                self.loop,
                "ping-pong needs the K loop's trip count defined before the "
                "tile loop: a group skips the other group's tiles by that "
                "many ring positions",
            )

    def _per_tile(
        self, stage0: ir.Value, initial_phase: bool, build_tile, extra: list[ir.Value]
    ) -> list:
        """A role's walk over its tiles: `build_tile(mapping, stage, phase,
        *extra)` emits one tile's work from ring position (stage, phase) and
        returns (stage, phase, *extra) after it. Without a tile loop it runs
        once from (stage0, initial_phase) (the phase still a Python bool, so
        the K loop makes its constant); in a persistent kernel inside a copy
        of the tile loop carrying them. Returns the values after the last tile."""
        if self.tile_loop is None:
            return build_tile({}, stage0, initial_phase, *extra)
        tile_loop = self.tile_loop.opview
        return self._tile_loop_copy(
            tile_loop.lowerBound,
            tile_loop.step,
            [stage0, bool_constant(initial_phase), *extra],
            build_tile,
        )

    def _tile_loop_copy(
        self, lower: ir.Value, step: ir.Value, inits: list[ir.Value], build_tile
    ) -> list:
        """A copy of the tile loop from `lower` in steps of `step`, up to the
        tile count, carrying `inits` through `build_tile` (see _per_tile)."""
        tile_loop = self._persistent_tile_loop
        tiles = scf.ForOp(lower, tile_loop.opview.upperBound, step, inits)
        with ir.InsertionPoint(tiles.body):
            tile = tile_loop.regions[0].blocks[0].arguments[0]
            scf.YieldOp(build_tile({tile: tiles.induction_variable}, *tiles.inner_iter_args))
        return list(tiles.results)

    def _clone_tile_prologue(self, mapping: dict) -> None:
        """A persistent kernel's per-tile ops before the K loop (the tile's
        coordinates), for one role; the accumulators and the register math
        on them are each consumer group's own (_build_consumer)."""
        if self.tile_loop is None:
            return  # they stay in the kernel's prologue, above the roles
        for op in self.prologue:
            if op.name != "wsc.acc_alloc" and op not in self.register_prologue:
                clone_remapped(op, mapping)

    def _ring_loop(self, stage: ir.Value, phase: ir.Value | bool, mapping: dict) -> scf.ForOp:
        """A copy of the K loop carrying (stage, phase) from the given position."""
        bounds = self.loop.opview
        lower, upper, step = (
            mapping.get(v, v) for v in (bounds.lowerBound, bounds.upperBound, bounds.step)
        )
        if isinstance(phase, bool):
            phase = bool_constant(phase)
        return scf.ForOp(lower, upper, step, [stage, phase])

    def _clone_body(
        self,
        loop: scf.ForOp,
        body: list[ir.Operation],
        mapping: dict,
        first_row: int | None = None,
    ) -> None:
        """`body`'s ops in `loop`; for a consumer group (from `first_row`),
        register tiles are made in the group's rows."""
        mapping.update(
            {
                self.iv: loop.induction_variable,
                self.stage: loop.inner_iter_args[0],
                self.phase: loop.inner_iter_args[1],
            }
        )
        if first_row is None:
            for op in body:
                clone_remapped(op, mapping)
        else:
            self._clone_for_group(body, mapping, first_row)

    def _clone_for_group(self, body: list[ir.Operation], mapping: dict, first_row: int) -> None:
        """`body`'s ops for the consumer group from `first_row`: register
        tiles are made in the group's rows, and read from memory from them."""
        row_offset = None
        for op in body:
            if op.name == "wsc.load_shared":
                self._clone_stage_read(op, mapping, first_row)
            elif op.name in ops.TILE_MAKERS or op.name == "wsc.acc_alloc":
                if first_row and row_offset is None and _group_row_operand(op) is not None:
                    row_offset = index_constant(first_row)
                self._clone_tile_maker(op, mapping, row_offset)
            else:
                clone_remapped(op, mapping)

    def _build_consumer(
        self, group: int, rows: int, empty: ir.Value, stage0: ir.Value, num_stages: int
    ) -> None:
        # The group's first row of the tile: in ping-pong it has every row.
        first_row = 0 if self.ping_pong else group * rows
        for wait in self.resident_waits:
            clone_remapped(wait, {})

        def tile(mapping, stage, phase, *turn_phase):
            self._clone_tile_prologue(mapping)
            # The group's accumulators and the register math before the loop;
            # they keep the author's locations (their diagnostics).
            self._clone_for_group([*self.accs, *self.register_prologue], mapping, first_row)
            if not self.ping_pong:
                after = self._consume_k_tiles(
                    group, first_row, empty, num_stages, stage, phase, mapping
                )
                self._store_rows(group, first_row, mapping)
                return after
            (turn_phase,) = turn_phase
            dialect.mbarrier_wait(self.turns, index_constant(group), turn_phase)
            after = self._consume_k_tiles(
                group, first_row, empty, num_stages, stage, phase, mapping
            )
            dialect.mbarrier_arrive(self.turns, index_constant(1 - group))
            self._store_rows(group, first_row, mapping)
            # The other group's tile comes next in the ring: step past it.
            return [
                *_skip_positions(*after, self._k_tiles, num_stages),
                arith.XOrIOp(turn_phase, bool_constant(True)).result,
            ]

        if not self.ping_pong:
            self._per_tile(stage0, dialect.CONSUMER_INITIAL_PHASE, tile, [])
            return
        # Tiles group, group + 2, ... of the block's walk; the ring position
        # starts past the tiles before the first of them. Group 0's first turn
        # wait passes on the fresh barrier (parity 1), group 1's waits for
        # group 0's first arrival.
        tile_loop = self._persistent_tile_loop.opview
        lower, step = tile_loop.lowerBound, tile_loop.step
        phase0 = bool_constant(dialect.CONSUMER_INITIAL_PHASE)
        start = [stage0, phase0]
        if group:
            lower = arith.AddIOp(lower, step).result
            start = _skip_positions(stage0, phase0, self._k_tiles, num_stages)
        double_step = arith.MulIOp(step, index_constant(2)).result
        self._tile_loop_copy(lower, double_step, [*start, bool_constant(group == 0)], tile)

    def _consume_k_tiles(
        self,
        group: int,
        first_row: int,
        empty: ir.Value,
        num_stages: int,
        stage: ir.Value,
        phase: ir.Value | bool,
        mapping: dict,
    ) -> list[ir.Value]:
        """Group `group`'s K loop from ring position (stage, phase); returns
        the position after it."""
        if self.products:
            return self._consume_in_pairs(
                group, first_row, empty, num_stages, stage, phase, mapping
            )
        in_flight = self.options.wgmma_in_flight
        loop = self._ring_loop(stage, phase, mapping)
        with ir.InsertionPoint(loop.body):
            self._clone_body(loop, self._slice(self.consumer_anchors), mapping, first_row)
            for op in walk(loop.operation):
                if op.name == "wsc.wgmma":
                    wgmma = ops.Wgmma(op)
                    wgmma.a_row = wgmma.a_row + first_row
                elif op.name == "wsc.wgmma_wait_group":
                    ops.WgmmaWaitGroup(op).pending = in_flight
            stage = mapping[self.stage]
            if self.wgmma_turns is not None:
                self._take_turn(loop, group, num_stages)
            if in_flight:
                # wait_group 1 retired the previous K tile's group, so its
                # stage is free; the first K tile has no previous one.
                has_previous = arith.CmpIOp(
                    arith.CmpIPredicate.ugt, loop.induction_variable, index_constant(0)
                ).result
                guard = scf.IfOp(has_previous)
                with ir.InsertionPoint(guard.then_block):
                    self._release(empty, _previous_stage(stage, num_stages))
                    scf.YieldOp([])
            else:
                # Released only after wait_group 0: the WGMMAs reading the stage are done.
                self._release(empty, stage)
            next_stage, next_phase = clone_remapped(self.advance, mapping).results
            scf.YieldOp([next_stage, next_phase])
        if in_flight:
            # The last K tile's group is still in flight: retire it, then
            # release its stage, the one before the loop's final stage.
            dialect.wgmma_wait_group(0)
            k_tiles = self._k_tiles
            any_tiles = arith.CmpIOp(
                arith.CmpIPredicate.ugt, mapping.get(k_tiles, k_tiles), index_constant(0)
            ).result
            guard = scf.IfOp(any_tiles)
            with ir.InsertionPoint(guard.then_block):
                self._release(empty, _previous_stage(loop.results[0], num_stages))
                scf.YieldOp([])
        return list(loop.results)

    def _consume_in_pairs(
        self,
        group: int,
        first_row: int,
        empty: ir.Value,
        num_stages: int,
        stage: ir.Value,
        phase: ir.Value | bool,
        mapping: dict,
    ) -> list[ir.Value]:
        """The K loop of a group whose register math reads a product of one K
        tile, with wgmma-in-flight = 1: two tiles per product, P0 and P1, used
        by the K tiles in turn, and a loop of two K tiles per trip (registers
        cannot be indexed by a run-time parity). K tile j's math runs after K
        tile j + 1's WGMMAs are issued, so the tensor cores work under it:

            if k_tiles > 0:
              issue(0) -> P0
              for j = 0, 2, ... while j + 2 < k_tiles:
                step(j, P0, issue j + 1 -> P1); step(j + 1, P1, issue j + 2 -> P0)
              the last one or two K tiles: step(j, P0, issue j + 1 -> P1) and
              last(j + 1, P1), or last(j, P0)

        where step(j, P, issue) is the issue (K tile j + 1's WGMMAs, and its
        math's input tiles, e.g. its scales, into the other slot), wait_group
        1, the release of stage(j) and K tile j's math on P and its inputs,
        and last(j, P) the same with no issue and wait_group 0. Every WGMMA
        is issued in code that runs whenever the trip does, and every path
        into the loop and out of the tail leaves the same group in flight
        (ptxas serializes the WGMMAs of a kernel where one path differs).
        Returns the ring position after the K tiles."""
        k_tiles = mapping.get(self._k_tiles, self._k_tiles)
        if isinstance(phase, bool):
            phase = bool_constant(phase)
        # Two slots, used by the K tiles in turn: the products' tiles, and
        # those of the math's inputs made before the wait (a K tile's
        # scales), loaded when the K tile's WGMMAs are issued, a K tile
        # before its math. Their tiles hold nothing until written.
        slots = [
            {
                tile: self._uninitialized_tile(tile)
                for tile in [*(op.result for op in self.products), *self.math_inputs]
            }
            for _ in range(2)
        ]
        products = {slot[op.result] for slot in slots for op in self.products}

        def at(index, stage, phase, slot) -> dict:
            """The mapping of K tile `index` at ring position (stage, phase)."""
            return {**mapping, self.iv: index, self.stage: stage, self.phase: phase, **slot}

        def advance(stage, phase) -> list[ir.Value]:
            return list(
                clone_remapped(self.advance, {self.stage: stage, self.phase: phase}).results
            )

        def issue(index, stage, phase, slot) -> None:
            """K tile `index`'s WGMMAs into `slot`'s products, then its math's inputs."""
            position = at(index, stage, phase, slot)
            started = set()
            for op in self.issue_ops:
                clone = clone_remapped(op, position)
                if clone.name == "wsc.wgmma":
                    wgmma = ops.Wgmma(clone)
                    wgmma.a_row = wgmma.a_row + first_row
                    if wgmma.acc in products and wgmma.acc not in started:
                        # The product's first WGMMA replaces the previous K tile's.
                        clone.attributes["overwrite"] = ir.UnitAttr.get()
                        started.add(wgmma.acc)
            loaded = dict(position)
            self._clone_for_group(self.math_before_wait, loaded, first_row)
            for tile in self.math_inputs:
                dialect.tile_assign(slot[tile], loaded[tile])

        def step(index, stage, phase, slot, following=None) -> None:
            """K tile `index`'s math on `slot`, after issuing K tile
            following = (index, stage, phase, slot)'s WGMMAs, if any."""
            position = at(index, stage, phase, slot)
            for op in self.math_indices:
                clone_remapped(op, position)
            if following is not None:
                issue(*following)
            dialect.wgmma_wait_group(1 if following is not None else 0)
            # The wait retired K tile `index`'s WGMMAs: its stage is free.
            self._release(empty, stage)
            self._clone_for_group(self.math_after_wait, position, first_row)

        zero, one, two = index_constant(0), index_constant(1), index_constant(2)
        position_types = [stage.type, phase.type]
        any_tiles = scf.IfOp(
            arith.CmpIOp(arith.CmpIPredicate.ugt, k_tiles, zero).result,
            position_types,
            has_else=True,
        )
        with ir.InsertionPoint(any_tiles.then_block):
            issue(zero, stage, phase, slots[0])
            # Trips while a third K tile follows the pair: (k_tiles - 1) / 2.
            # k_tiles > 0 here: k_tiles - 1 does not wrap (which makes the
            # tiles' indices provably >= 0 for their bounds checks).
            left = arith.SubIOp(k_tiles, one)
            left.attributes["overflowFlags"] = ir.Attribute.parse("#arith.overflow<nuw>")
            trips = arith.DivUIOp(left.result, two).result
            loop = scf.ForOp(zero, trips, one, [stage, phase])
            with ir.InsertionPoint(loop.body):
                at_stage, at_phase = loop.inner_iter_args
                first = arith.MulIOp(loop.induction_variable, two).result
                second = arith.AddIOp(first, one).result
                third = arith.AddIOp(second, one).result
                stage1, phase1 = advance(at_stage, at_phase)
                stage2, phase2 = advance(stage1, phase1)
                step(first, at_stage, at_phase, slots[0], (second, stage1, phase1, slots[1]))
                step(second, stage1, phase1, slots[1], (third, stage2, phase2, slots[0]))
                scf.YieldOp([stage2, phase2])
            # The one or two K tiles left, from K tile 2 * trips.
            at_stage, at_phase = loop.results
            first = arith.MulIOp(trips, two).result
            second = arith.AddIOp(first, one).result
            stage1, phase1 = advance(at_stage, at_phase)
            two_left = scf.IfOp(
                arith.CmpIOp(arith.CmpIPredicate.ult, second, k_tiles).result,
                position_types,
                has_else=True,
            )
            with ir.InsertionPoint(two_left.then_block):
                step(first, at_stage, at_phase, slots[0], (second, stage1, phase1, slots[1]))
                step(second, stage1, phase1, slots[1])
                scf.YieldOp(advance(stage1, phase1))
            with ir.InsertionPoint(two_left.else_block):
                step(first, at_stage, at_phase, slots[0])
                scf.YieldOp([stage1, phase1])
            scf.YieldOp(list(two_left.results))
        with ir.InsertionPoint(any_tiles.else_block):
            scf.YieldOp([stage, phase])
        return list(any_tiles.results)

    def _uninitialized_tile(self, tile: ir.Value) -> ir.Value:
        """A register tile like `tile`, in a group's rows, holding nothing
        until it is written (wsc.acc_alloc {uninitialized})."""
        (_, cols), element = dialect.acc_type_parameters(tile.type)
        return ir.Operation.create(
            "wsc.acc_alloc",
            results=[dialect.acc_type((self.group_rows, cols), element)],
            attributes={"uninitialized": ir.UnitAttr.get()},
        ).result

    def _take_turn(self, loop: scf.ForOp, group: int, num_stages: int) -> None:
        """Group `group`'s K tile issues its WGMMAs in its turn: it waits on
        its turns barrier before its wgmma_fence and passes the turn to the
        next group after its wgmma_commit_group (see wgmma-turns)."""
        body = [op.operation for op in loop.body.operations]
        fence = next(op for op in body if op.name == "wsc.wgmma_fence")
        commit = next(op for op in body if op.name == "wsc.wgmma_commit_group")
        groups = self.options.num_consumer_groups
        with ir.InsertionPoint(fence):
            stage, phase = loop.inner_iter_args
            parity = _position_parity(stage, phase, num_stages)
            if group == 0:
                parity = arith.XOrIOp(parity, bool_constant(True)).result
            dialect.mbarrier_wait(self.wgmma_turns, index_constant(group), parity)
        with ir.InsertionPoint.after(commit):
            dialect.mbarrier_arrive(
                self.wgmma_turns, index_constant((group + 1) % groups), per_warp=True
            )

    def _release(self, empty: ir.Value, stage: ir.Value) -> None:
        """A consumer's release of `stage`: on every CTA's empty barrier in a
        cluster, whose producers all write it."""
        per_warp = self.options.release == "warp"
        dialect.mbarrier_arrive(empty, stage, per_warp, every_cta=self.ctas > 1)

    def _store_rows(self, group: int, first_row: int, mapping: dict) -> None:
        """The epilogue for the group's rows of the tile, from `first_row`;
        a staged epilogue uses the group's stage of the staging buffer."""
        row_offset = index_constant(first_row) if first_row else None
        own_stage = None
        if self.staging is not None:
            mapping[self.staging] = self.group_staging
            own_stage = index_constant(group)
        self._clone_epilogue(self.epilogue, mapping, row_offset, own_stage)

    def _clone_epilogue(
        self,
        epilogue: list[ir.Operation],
        mapping: dict,
        row_offset: ir.Value | None,
        own_stage: ir.Value | None,
    ) -> None:
        for op in epilogue:
            if op.name in ops.TILE_MAKERS:
                self._clone_tile_maker(op, mapping, row_offset)
                continue
            if op.name == "scf.if" and _is_uniform_guard(op):
                # Its region holds casts of the group's tile: cloned op by op.
                guard = scf.IfOp(mapping[op.opview.condition])
                with ir.InsertionPoint(guard.then_block):
                    body = [n.operation for n in op.regions[0].blocks[0].operations][:-1]
                    self._clone_epilogue(body, mapping, row_offset, own_stage)
                    scf.YieldOp([])
                continue
            clone = clone_remapped(op, mapping)
            for target in (clone, *walk(clone)):
                view = _EPILOGUE_ROW_OPS.get(target.name)
                if view is None:
                    continue
                store = view(target)
                if row_offset is not None and not isinstance(store, ops.StoreShared):
                    with ir.InsertionPoint(target):
                        # A transposed store puts the tile's rows in dst's columns.
                        if isinstance(store, ops.Store) and store.transpose:
                            store.col = arith.AddIOp(store.col, row_offset).result
                        else:
                            store.row = arith.AddIOp(store.row, row_offset).result
                if isinstance(store, (ops.TmaStore, ops.CoalescedStore, ops.StoreShared)):
                    store.stage = own_stage

    def _clone_tile_maker(
        self, op: ir.Operation, mapping: dict, row_offset: ir.Value | None
    ) -> None:
        """A consumer group's copy of an op that makes a register tile: the
        group's tile has its share of the rows, so the tile is made again in
        that shape, and one read from memory is read from the group's rows
        (from `row_offset`)."""
        (_, cols), element = dialect.acc_type_parameters(op.results[0].type)
        operands = [mapping.get(value, value) for value in op.operands]
        if row_offset is not None:
            moved = _group_row_operand(op)
            if moved is not None:
                operands[moved] = arith.AddIOp(operands[moved], row_offset).result
        made = ir.Operation.create(
            op.name,
            results=[dialect.acc_type((self.group_rows, cols), element)],
            operands=operands,
            attributes={name: op.attributes[name] for name in op.attributes},
            loc=op.location,
        )
        mapping[op.results[0]] = made.result

    def _clone_stage_read(self, op: ir.Operation, mapping: dict, first_row: int) -> None:
        """A consumer group's wsc.load_shared: the block of the stage that
        holds the group's rows (its columns, read transposed)."""
        load = ops.LoadShared(op)
        (_, cols), _ = dialect.acc_type_parameters(load.result.type)
        row, col = load.row or 0, load.col or 0
        if load.transpose:
            col += first_row
        else:
            row += first_row
        stage_rows, stage_cols = ir.MemRefType(load.src.type).shape[1:]
        stage_tile = [stage_cols, stage_rows] if load.transpose else [stage_rows, stage_cols]
        origin = (
            None if (row, col) == (0, 0) and [self.group_rows, cols] == stage_tile else (row, col)
        )
        with op.location:
            mapping[load.result] = dialect.load_shared(
                mapping.get(load.src, load.src),
                mapping.get(load.stage, load.stage),
                (self.group_rows, cols),
                origin,
                load.transpose,
            )

    def _build_producer(self, empty: ir.Value, stage0: ir.Value, num_stages: int) -> None:
        for elect, copy in self.resident_copies:
            # The role's own elected thread (the original elects thread 0).
            mapping: dict = {}
            clone_remapped(elect, mapping)
            clone_remapped(copy, mapping)

        def tile(mapping, stage, phase, *filled):
            self._clone_tile_prologue(mapping)
            loop = self._ring_loop(stage, phase, mapping)
            with ir.InsertionPoint(loop.body):
                stage, phase = loop.inner_iter_args
                dialect.mbarrier_wait(empty, stage, phase)
                self._clone_body(loop, self._slice(self.producer_anchors), mapping)
                next_stage, next_phase = clone_remapped(self.advance, mapping).results
                scf.YieldOp([next_stage, next_phase])
            k_tiles = mapping.get(self._k_tiles, self._k_tiles)
            if filled:  # a tile loop counts the fills of every tile so far
                return [*loop.results, arith.AddIOp(filled[0], k_tiles).result]
            return [*loop.results, k_tiles]

        persistent = self.tile_loop is not None
        stage, phase, filled = self._per_tile(
            stage0, dialect.PRODUCER_INITIAL_PHASE, tile, [index_constant(0)] if persistent else []
        )
        # Drain: wait for the last release of every stage that was filled, so
        # the producer never leaves while consumers still arrive on empty
        # barriers. Position filled + j waits for the release of fill
        # filled + j - N, which exists only when filled + j >= N: of the N
        # positions after the last fill, min(N, filled) wait. (Counting the
        # waits from the final position alone would, for filled < N, wait on
        # stages that were never filled and pass at once.)
        ring_size = index_constant(num_stages)
        drain = scf.ForOp(index_constant(0), ring_size, index_constant(1), [stage, phase])
        with ir.InsertionPoint(drain.body):
            stage, phase = drain.inner_iter_args
            position = arith.AddIOp(drain.induction_variable, filled).result
            is_filled = arith.CmpIOp(arith.CmpIPredicate.uge, position, ring_size).result
            guard = scf.IfOp(is_filled)
            with ir.InsertionPoint(guard.then_block):
                dialect.mbarrier_wait(empty, stage, phase)
                scf.YieldOp([])
            next_stage, next_phase = dialect.ring_advance(stage, phase, num_stages)
            scf.YieldOp([next_stage, next_phase])


#: Ops whose results are the same in every thread of the block, given operands
#: that are (besides arith, which computes from its operands alone).
_UNIFORM_SOURCES = ("wsc.partial_arrive", *_UNIFORM_VALUE_OPS)


def _is_elected(if_op: ir.Operation) -> bool:
    """Whether scf.if `if_op` is guarded by a wsc.elect."""
    guard = defining_op(if_op.opview.condition)
    return guard is not None and guard.name == "wsc.elect"


def _is_uniform_guard(op: ir.Operation) -> bool:
    """Whether an scf.if's condition is the same in every thread of the block:
    a wsc.partial_arrive's result (a split-K hand-over), or arith on block
    indices, sizes and loop indices (e.g. whether a stream-K block sums the
    whole tile). The epilogue it guards then runs in every group or none."""
    pending, seen = [op.opview.condition], set()
    while pending:
        source = defining_op(pending.pop())
        if source is None or source in seen:
            continue  # a block argument: a kernel argument or a loop's index
        seen.add(source)
        if not (source.name.startswith("arith.") or source.name in _UNIFORM_SOURCES):
            return False
        pending.extend(source.operands)
    return True


def _inside(op: ir.Operation | None, ancestor: ir.Operation) -> bool:
    """Whether `op` is nested in `ancestor`'s regions."""
    parent = op.parent if op is not None else None
    while parent is not None and parent.name != "builtin.module":
        if parent == ancestor:
            return True
        parent = parent.parent
    return False


def _loops_with_copies(block: ir.Block) -> list[ir.Operation]:
    """The scf.for ops directly in `block` that issue TMA copies."""
    return [
        op.operation
        for op in block.operations
        if op.operation.name == "scf.for"
        and any(n.name == "wsc.tma_load" for n in walk(op.operation))
    ]


def _skip_positions(
    stage: ir.Value, phase: ir.Value, count: ir.Value, num_stages: int
) -> list[ir.Value]:
    """The ring position `count` positions after (stage, phase): the phase
    flips once per wrap past the last stage."""
    position = arith.AddIOp(stage, count).result
    stages = index_constant(num_stages)
    wraps = arith.DivUIOp(position, stages).result
    odd = arith.IndexCastOp(ir.IntegerType.get_signless(1), wraps).result
    return [arith.RemUIOp(position, stages).result, arith.XOrIOp(phase, odd).result]


def _position_parity(stage: ir.Value, phase: ir.Value, num_stages: int) -> ir.Value:
    """Whether a consumer's ring position (stage, phase) is an odd one: the
    K tiles it consumed before, counted modulo 2 x num_stages from the ring's
    start at (0, CONSUMER_INITIAL_PHASE), as the phase flips once per wrap.
    With an even num_stages the phase drops out; once --unroll-ring-buffer
    has made the stage a constant, the ops fold during lowering."""
    odd_stage = arith.CmpIOp(
        arith.CmpIPredicate.ne,
        arith.AndIOp(stage, index_constant(1)).result,
        index_constant(0),
    ).result
    if num_stages % 2 == 0:
        return odd_stage
    # The phase has flipped an odd number of times: it differs from the initial one.
    wrapped = (
        arith.XOrIOp(phase, bool_constant(True)).result if dialect.CONSUMER_INITIAL_PHASE else phase
    )
    return arith.XOrIOp(odd_stage, wrapped).result


def _previous_stage(stage: ir.Value, num_stages: int) -> ir.Value:
    """(stage - 1) mod num_stages; a constant once --unroll-ring-buffer has
    made `stage` one."""
    wraps = arith.CmpIOp(arith.CmpIPredicate.eq, stage, index_constant(0)).result
    before = arith.SubIOp(stage, index_constant(1)).result
    return arith.SelectOp(wraps, index_constant(num_stages - 1), before).result
