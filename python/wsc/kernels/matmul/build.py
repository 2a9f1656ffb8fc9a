"""The matmul kernel of the tutorial, built as wsc IR in its V2 form: one
warpgroup that loads a K tile into a ring stage, waits for it, multiplies and
syncs. `compile_matmul` then specializes, unrolls and lowers it.

    C[M, N] = A[M, K] * op(B),  op(B) = B^T for B given as [N, K] ("nk"),
                                op(B) = B   for B given as [K, N] ("kn")

or, with the problem's fused epilogue (wsc.kernels.matmul.epilogue), C =
act(alpha A op(B) + bias) + residual, computed in registers before every store;
fp8 operands' products are scaled by their two per-tensor scales there too, or,
with block scales, each K tile's product in the K loop before it is added
(`_block_scale`: a product tile beside the sum, so no WGMMA group stays in
flight across K tiles).

Tiles are numbered t = row + col * ceil(M/BM). Without `persistent` the grid
has one block per output tile, (ceil(M/BM), ceil(N/BN)), and block (x, y) is
tile x + y * ceil(M/BM). With `persistent` the grid is one block per SM (at
most one per tile; `wsc.runtime.artifact.tile_grid`) and a tile loop around the K loop
walks tiles blockIdx.x, blockIdx.x + gridDim.x, ...; the loop carries the
ring's (stage, phase) from tile to tile, so after --warp-specialize the
producer fills the next tile's stages while the consumers store the last one,
and no block pays its launch and pipeline fill again.

With `tma_store` the epilogue writes the tile (cast to C's dtype, f16 or bf16)
into a one-stage shared buffer, fences the writes for TMA, syncs and has one
thread copy it to C with TMA; a persistent kernel first waits until the
previous tile's copy has read the buffer. The copy goes out asynchronously
and is clipped at C's bounds, but TMA needs C's rows 16-byte aligned (N a
multiple of 8). With `coalesced_store` the tile is staged the same way
(without the fence) and every thread copies it out: each store instruction
of a warp writes 32 consecutive elements of one row, whatever C's row
length, where the register epilogue's stores of an odd-length row write
single elements scattered over 8 rows.

With `cluster_m` = 2 the blocks run in clusters of two along x. The tile
rows are taken in pairs: the block of rank r in a cluster takes tile row
2p + r of row pair p, in the tile column the order below gives that pair, so
the two blocks share B's tile. Each copies half of B's rows with
`wsc.tma_load {multicast}` into the stages of both, so a block reads 16 + 16 KB
of each 128x256x64 K tile from L2 instead of 16 + 32. A persistent cluster
walks the pairs cluster by cluster (both blocks the same pairs, so their K
loops stay in step), and each stage is released to both blocks' empty
barriers (`wsc.mbarrier_arrive {every_cta}`), since both producers write it. A
rank-1 block whose tile row is past M computes on zeros and stores nothing.

With `cluster_n` = C > 1 (a block per tile) the cluster runs along N
instead: the grid's x counts tile columns (rounded up to whole clusters) and
y tile rows, so the C blocks of a cluster take adjacent tile columns of one
tile row and share A's tile, each copying 1/C of its rows into the stages of
all. With `swap_ab` A's tile is the WGMMA's B operand, the small one at small
M, which every block reads in full otherwise (M = 200, N = 5000: 120 blocks
of 72 x 128 read A's 72 rows and B's 128 per K tile). Blocks past N compute
on zeros and store nothing.

With `split_k` = S > 1 the grid gains a z axis of S blocks per tile: block
z sums K tiles [z * kt / S, (z + 1) * kt / S) and hands its partial sum over
through the split-K workspace (`kb.split_k`, partial tiles at row t * BM):
the last of the tile's blocks to arrive adds the S partial sums in split
order, so the result is the same bits on every run, and stores the tile.
For problems whose tiles leave most SMs idle (small M); not persistent, not
in clusters.

With `stream_k` (persistent) the blocks share the last tiles by K tiles,
so every block has the same work however many tiles there are (448 tiles of
128x256 on 132 SMs leave the fourth wave 61 % empty). Of U tiles on G blocks
(G <= U: the grid is capped at the tile count), the first W = U / G - 1
waves are whole tiles, trip w of block c tile w * G + c, so that the tiles
in flight at one time are neighbours in tile order and share their operands
in L2. Of the T = (U - W G) * k_tiles K tiles of the rest, in tile order,
block c then sums [c * T / G, (c + 1) * T / G), each tile that range touches
over the K tiles of it in the range. U - W G >= G, so a share spans at least
one tile's K tiles and a tile is shared by at most two blocks: the one that
ends in it sums its first K tiles, the one that starts in it the rest. Both store their partial sums through the
split-K workspace in the slot of the boundary between them (block c's start
is boundary c), as splits 0 and 1, and the later to arrive adds them in that
order and stores the tile: the same bits every run on one GPU (G is its SM
count).

With `swap_ab` the WGMMA computes the tile's transpose, C^T = op(B)^T A^T:
B's tile of BN rows is its A operand (read K-major for "nk", M-major for
"kn") and A's tile of BM rows its B operand, so BM is the WGMMA's N (16 or 32
for M = 16 or 32, where a 64-row WGMMA M would be mostly padding) and the
BN x BM accumulator is stored transposed, from registers. For small M.

A batched problem (MatmulProblem.batched) takes A, B and C as batches of
matrices [batch, rows, cols]: a tile reads and writes the matrices at its
index (kb's x[i], wsc.batch_matrix: TMA copies with the index as a third
coordinate, so a ragged tile never reads the next matrix). Without
`persistent` the grid's z is the index; with it the tile loop walks every
matrix's tiles, matrix after matrix, and a tile's store of C runs under the
next tile's loads.

With `group_m` = 0 tile t is (row, col) above: tiles worked on together share
one tile column and read every row panel of A. With `group_m` = G tile t walks
the tiles in groups of G tile rows, column by column inside a group, so the
tiles resident at one time read about G row panels of A and (resident
tiles)/G column panels of B, which stay in L2, instead of every panel of A.
"""

from __future__ import annotations

import os
from pathlib import Path

from mlir import ir

from wsc.builder import (
    CONSUMER_INITIAL_PHASE,
    GlobalTensor,
    KernelBuilder,
    Predicate,
    RegisterTile,
    Scalar,
    SharedTensor,
    SharedTile,
    TileLoop,
    cdiv,
    f32,
    minimum,
    split_k_workspaces,
)
from wsc.compiler import CompileResult, compile_module, write_artifact
from wsc.kernels.matmul.config import (
    SCALE_BLOCK,
    MatmulConfig,
    MatmulProblem,
    check_tma_strides,
)
from wsc.kernels.matmul.epilogue import fused_epilogue
from wsc.target.hopper import MAX_SMS, WARP_SIZE, WARPGROUP_SIZE

#: A stream-K tile's two shares: its first K tiles and the rest.
STREAM_K_SPLITS = 2
#: The alpha an artifact's runs use (the tuner's and `wsc run --check`'s):
#: not 1, so that a kernel that ignored it would fail its check.
ALPHA_DEFAULT = -0.75


def _tile_counts(a: GlobalTensor, c: GlobalTensor, bm: int, bn: int) -> tuple[Scalar, Scalar]:
    """(ceil(M/BM), ceil(N/BN)): the output tiles along M and N (of each
    matrix of a batch)."""
    return cdiv(a.shape[-2], bm), cdiv(c.shape[-1], bn)


def _tile_coordinates(
    tile: Scalar, tiles_m: Scalar, tiles_n: Scalar, group_m: int
) -> tuple[Scalar, Scalar]:
    """(tile row, tile column) of tile number `tile`, in the order of the
    module docstring."""
    if group_m == 0:
        return tile % tiles_m, tile // tiles_m
    group_size = tiles_n * group_m
    first_row = tile // group_size * group_m
    # The last group has fewer rows when group_m does not divide tiles_m.
    rows = minimum(tiles_m - first_row, group_m)
    in_group = tile % group_size
    return first_row + in_group % rows, in_group // rows


def _block_scale(
    kb: KernelBuilder,
    scale_a_tile: SharedTile,
    scale_b: GlobalTensor,
    k_tile: Scalar,
    tile_n: Scalar,
    k_tiles: Scalar,
) -> RegisterTile:
    """The row vector of K tile `k_tile`'s block scales for the tile at
    (tile_m, tile_n): scale_a[row, k_tile] of each row, which TMA copied
    into the stage with the operands (a row of scale_a's transpose), times
    the one scale of B's block, scale_b[tile_n / SCALE_BLOCK, k_tile] of the
    flat scale_b (its rows k_tiles long)."""
    per_row = kb.load_shared(scale_a_tile.transpose())
    block = (tile_n // SCALE_BLOCK) * k_tiles + k_tile
    return per_row * kb.broadcast(scale_b, block, [per_row.shape[0], 1])


def store_through_shared(
    kb: KernelBuilder,
    tile: RegisterTile,
    sc: SharedTensor,
    c: GlobalTensor,
    row: Scalar,
    col: Scalar,
    wait_first: bool,
    tma: bool,
) -> None:
    """The staged epilogue: stage `tile` in sc[0] and copy it to C, from one
    thread with TMA or from all with coalesced stores. With `wait_first` (a
    buffer reused tile after tile) the copy of the previous tile must have
    read sc first."""
    if wait_first:
        if tma:
            with kb.single_thread():
                kb.tma.store_wait(0)
        kb.sync()
    kb.store_shared(sc[0], tile)
    if tma:
        kb.fence_proxy_async()
    kb.sync()
    if tma:
        with kb.single_thread():
            kb.tma.shared_to_global(sc[0], c, [row, col])
    else:
        kb.shared_to_global(sc[0], c, [row, col])


def build_matmul(problem: MatmulProblem, config: MatmulConfig, name: str = "matmul") -> ir.Module:
    """The V2-form matmul kernel as a module (needs an active wsc context)."""
    config.check_problem(problem)
    bm, bn, bk, stages = config.block_m, config.block_n, config.block_k, config.num_stages
    swap = config.swap_ab
    # The accumulator's shape: C's tile, or its transpose with swap_ab.
    acc_shape = accumulator_shape(config)
    element, b_layout = problem.dtype, problem.b_layout
    ctas = config.cluster
    kb = KernelBuilder(
        name,
        num_warps=WARPGROUP_SIZE // WARP_SIZE,
        grid=[*grid_tiles(config), *([("batch", 1)] if problem.batched else [])],
        cluster_size=ctas,
        persistent=config.persistent,
        context=ir.Context.current,
    )
    tensor_rank = 3 if problem.batched else 2
    a, b, c = (
        kb.global_tensor(element, tensor_rank),
        kb.global_tensor(element, tensor_rank),
        kb.global_tensor(problem.out_dtype, tensor_rank),
    )
    # Declared next, so that they are "d", "e", ... (MatmulProblem.epilogue_tensors).
    bias = kb.global_tensor(element, rank=1) if problem.bias else None
    residual = kb.global_tensor(element) if problem.residual else None
    scales = None
    if problem.scaled:
        # Block scales: scale_a's transpose [K blocks, M], whose row of a K
        # tile TMA copies beside A's tile; scale_b flat (B's blocks row by row).
        rank_a = 2 if problem.block_scales else 1
        scales = (kb.global_tensor(f32, rank=rank_a), kb.global_tensor(f32, rank=1))
    # Next, so that it is named as MatmulProblem.epilogue_tensors says.
    alpha = kb.scalar() if problem.alpha else None
    partials = partial_sums(config)
    workspace = kb.split_k.workspace(partials[0], partials[2]) if partials else None
    k_tiles = cdiv(a.shape[-1], bk)
    sa = kb.shared_tensor(element, [stages, bm, bk])
    # A "kn" stage's rows padded to whole swizzle atoms (MatmulConfig.b_stage_tile).
    sb = kb.shared_tensor(
        element, [stages, bn, bk] if b_layout == "nk" else [stages, bk, bn], pad_rows=True
    )
    sc = kb.shared_tensor(problem.out_dtype, [1, bm, bn]) if config.staged_store else None
    ss = kb.shared_tensor(f32, [stages, 1, bm]) if problem.block_scales else None
    full = kb.mbarrier.alloc(arrival_count=1, num_barriers=stages)
    # Barrier init must be visible before use: in a cluster, to the other
    # block too, whose copies and releases reach these barriers.
    sync = kb.sync if ctas == 1 else kb.cluster_sync
    sync()
    tiles_m, tiles_n = _tile_counts(a, c, bm, bn)
    block_x = kb.block_idx.x
    # Work units: tiles, or in a cluster tile pairs (ctas tile rows of one
    # tile column), numbered like tiles over ceil(tiles_m / ctas) rows.
    units_m, rank = tiles_m, None
    if config.cluster_m > 1:
        units_m = cdiv(tiles_m, ctas)
        rank = kb.cluster_rank

    def one_tile(
        unit: Scalar,
        tiles: TileLoop | None,
        share: tuple[Scalar, Scalar] | None = None,
        matrix: Scalar | None = None,
    ) -> None:
        """Work unit `unit`'s K loop and its store; the loop continues the
        ring position `tiles` carries, or starts the ring. With stream-K,
        `share` is the block's [begin, end) of all tiles' K tiles; in a
        batched product `matrix` is the unit's matrix."""
        a_k, b_k, c_tile = (a, b, c) if matrix is None else (a[matrix], b[matrix], c[matrix])
        if config.cluster_n > 1:
            # Clusters along N: a block's tile is its place in the grid (not
            # `unit`: a grouped order would split a cluster over tile rows).
            tile_row, tile_col = kb.block_idx.y, block_x
        else:
            tile_row, tile_col = _tile_coordinates(unit, units_m, tiles_n, config.group_m)
        if rank is not None:
            tile_row = tile_row * ctas + rank
        tile_m, tile_n = tile_row * bm, tile_col * bn
        acc = kb.register_tensor(f32, list(acc_shape))
        first_k_tile: Scalar | int = 0
        my_k_tiles = k_tiles
        # Stream-K: the first of the tile's K tiles in the share, and whether
        # the share holds all of them.
        share_start: Scalar | None = None
        whole: Predicate | None = None
        if share is not None:
            begin, end = share
            tile_start = unit * k_tiles
            # The tile's K tiles in [begin, end), in unsigned arithmetic: only
            # the first tile of the share starts after tile_start.
            share_start = first_k_tile = begin - minimum(begin, tile_start)
            my_k_tiles = minimum(end - tile_start, k_tiles) - share_start
            whole = (share_start == 0) & (my_k_tiles == k_tiles)
        elif workspace is not None:
            # Split z sums K tiles [z * k_tiles / splits, (z + 1) * k_tiles / splits).
            split = kb.block_idx.z
            splits = config.split_k
            first_k_tile = split * k_tiles // splits
            my_k_tiles = (split + 1) * k_tiles // splits - first_k_tile
        ring_loop = (
            kb.range(0, my_k_tiles, 1, stages=stages, phase=CONSUMER_INITIAL_PHASE)
            if tiles is None
            else kb.range(0, my_k_tiles, 1, stages=stages, ring=tiles)
        )
        for it in ring_loop:
            k0 = (first_k_tile + it.index) * bk
            a_tile, b_tile = sa[it.stage], sb[it.stage]
            scale_tile = ss[it.stage] if ss is not None else None
            with kb.single_thread():
                kb.mbarrier.arrive_and_expect_tx(
                    full[it.stage],
                    a_tile.nbytes + b_tile.nbytes + (scale_tile.nbytes if scale_tile else 0),
                )
                # A cluster shares A's tile along N and B's along M: each
                # block copies its share into every block's stage.
                kb.tma.global_to_shared(
                    a_k,
                    a_tile,
                    [tile_m, k0],
                    mbarrier=full[it.stage],
                    multicast=config.cluster_n > 1,
                )
                kb.tma.global_to_shared(
                    b_k,
                    b_tile,
                    [tile_n, k0] if b_layout == "nk" else [k0, tile_n],
                    mbarrier=full[it.stage],
                    multicast=config.cluster_m > 1,
                )
                if scale_tile is not None and scales is not None:
                    kb.tma.global_to_shared(
                        scales[0],
                        scale_tile,
                        [first_k_tile + it.index, tile_m],
                        mbarrier=full[it.stage],
                    )
            kb.mbarrier.wait(full[it.stage], phase=it.phase)
            block_scale = None
            if scale_tile is not None and scales is not None:
                block_scale = _block_scale(
                    kb, scale_tile, scales[1], first_k_tile + it.index, tile_n, k_tiles
                )
            kb.wgmma.fence()
            # B's tile as the WGMMA sees it: [K, N] ("nk" stages are [N, K]).
            b_kn = b_tile.transpose() if b_layout == "nk" else b_tile
            # With block scales each K tile's product is scaled before it is added.
            product = kb.register_tensor(f32, list(acc_shape)) if problem.block_scales else acc
            if swap:
                kb.wgmma.mma(b_kn.transpose(), a_tile.transpose(), product)
            else:
                kb.wgmma.mma(a_tile, b_kn, product)
            kb.wgmma.commit_group()
            kb.wgmma.wait_group(0)
            if block_scale is not None:
                kb.assign(acc, acc + product * block_scale)
            # The stage is free once every block that reads it is done.
            sync()
        if workspace is None:
            store_tile(acc, tile_m, tile_n, c_tile)
            return
        if share_start is None or whole is None:
            # The partial tile's rows in the workspace: the tile's number
            # times the accumulator's rows.
            hand_over(acc, unit * acc_shape[0], split, tile_m, tile_n)
            return
        with kb.if_(whole):
            store_tile(acc, tile_m, tile_n)
        with kb.if_(~whole):
            # Split 1 (the tile's later K tiles) starts the block's share, at
            # boundary block_x; split 0 ends it, at boundary block_x + 1.
            later = minimum(share_start, 1)
            hand_over(acc, (block_x + 1 - later) * acc_shape[0], later, tile_m, tile_n)

    def hand_over(
        acc: RegisterTile, row: Scalar, split: Scalar, tile_m: Scalar, tile_n: Scalar
    ) -> None:
        """Store `acc` as split `split`'s partial sum at workspace row `row`;
        the last split to arrive adds them all and stores the tile."""
        assert workspace is not None  # the callers' premise
        kb.split_k.store(workspace, acc, row, split)
        with kb.if_(kb.split_k.arrive(workspace, row)):
            kb.split_k.reduce(workspace, acc, row)
            store_tile(acc, tile_m, tile_n)

    def store_tile(acc: RegisterTile, tile_m: Scalar, tile_n: Scalar, c: GlobalTensor = c) -> None:
        acc = fused_epilogue(
            kb,
            acc,
            (tile_m, tile_n),
            bias,
            problem.activation,
            residual,
            transpose=swap,
            alpha=alpha,
            scales=None if problem.block_scales else scales,
        )
        result = acc if problem.out_dtype == f32 else kb.cast(acc, problem.out_dtype)
        if sc is None:
            kb.store_global(c, result, [tile_m, tile_n], transpose=swap)
        else:
            store_through_shared(
                kb,
                result,
                sc,
                c,
                tile_m,
                tile_n,
                wait_first=config.persistent,
                tma=config.tma_store,
            )

    # In a cluster, a unit per cluster: block x / ctas.
    first_unit = block_x // ctas
    if config.stream_k:
        blocks, units = kb.grid_dim.x, units_m * tiles_n
        # Whole waves first (trip w: tile w * G + block), then the shared K
        # tiles of the last G to 2G tiles (the grid is capped at the tiles).
        waves = units // blocks - 1
        first_shared = waves * blocks
        shared = (units - first_shared) * k_tiles
        begin = first_shared * k_tiles + block_x * shared // blocks
        end = first_shared * k_tiles + (block_x + 1) * shared // blocks
        first_tile = begin // k_tiles
        trips = waves + (end - 1) // k_tiles + 1 - first_tile
        for tiles in kb.tile_range(0, trips, 1, stages=stages, phase=CONSUMER_INITIAL_PHASE):
            in_wave = tiles.tile < waves
            unit = in_wave.select(tiles.tile * blocks + block_x, first_tile + tiles.tile - waves)
            start = unit * k_tiles
            one_tile(
                unit, tiles, (in_wave.select(start, begin), in_wave.select(start + k_tiles, end))
            )
    elif config.persistent:
        # A batched product's units are every matrix's, matrix after matrix.
        per_matrix = units_m * tiles_n
        num_units = per_matrix * a.shape[0] if problem.batched else per_matrix
        step = kb.grid_dim.x // ctas
        for tiles in kb.tile_range(
            first_unit, num_units, step, stages=stages, phase=CONSUMER_INITIAL_PHASE
        ):
            if problem.batched:
                one_tile(tiles.tile % per_matrix, tiles, matrix=tiles.tile // per_matrix)
            else:
                one_tile(tiles.tile, tiles)
    else:
        unit = first_unit + kb.block_idx.y * units_m
        one_tile(unit, None, matrix=kb.block_idx.z if problem.batched else None)
    # compile_matmul's callers expect the verifier's rules as CompileErrors.
    return kb.finish(verify=False).module


def accumulator_shape(config: MatmulConfig) -> tuple[int, int]:
    """The register tile a block sums: C's tile, transposed with swap_ab."""
    tile = (config.block_m, config.block_n)
    return tile[::-1] if config.swap_ab else tile


def grid_tiles(config: MatmulConfig) -> tuple[tuple[str, int], tuple[str, int]]:
    """The grid's x and y axes, each counting tiles of a size: M's then N's,
    or N's first with clusters along N (a cluster's blocks are consecutive
    along x)."""
    tiles = (("m", config.block_m), ("n", config.block_n))
    return (tiles[1], tiles[0]) if config.cluster_n > 1 else tiles


def partial_sums(config: MatmulConfig) -> tuple[int, tuple[int, int], int | None] | None:
    """(splits, partial tile shape, slots) of the kernel's split-K workspace
    (kb.split_k.workspace; slots None: one per output tile), or None."""
    if config.stream_k:
        # Boundaries between blocks: fewer than the SMs a grid is capped at.
        return STREAM_K_SPLITS, accumulator_shape(config), MAX_SMS
    if config.split_k > 1:
        return config.split_k, accumulator_shape(config), None
    return None


# Compiling -------------------------------------------------------------------------------


def specialization_passes(config: MatmulConfig) -> list:
    """--warp-specialize then, unless the kernel is persistent,
    --unroll-ring-buffer with `config`'s schedule."""
    from wsc.passes.unroll_ring_buffer import UnrollRingBuffer
    from wsc.passes.warp_specialize import WarpSpecialize

    specialize = WarpSpecialize(
        num_stages=config.num_stages,
        num_consumer_groups=config.num_consumer_groups,
        producer=config.producer,
        wgmma_in_flight=config.wgmma_in_flight,
        ping_pong=config.ping_pong,
        wgmma_turns=config.wgmma_turns,
        rebalance_registers=config.rebalance_registers,
        release=config.release,
    )
    # A persistent kernel's K loops start where the previous tile's stopped:
    # their stages stay run-time values (--unroll-ring-buffer rejects them).
    return [specialize] if config.persistent else [specialize, UnrollRingBuffer()]


def lowering_pass(config: MatmulConfig):
    """--convert-wsc-to-nvvm with `config`'s debug options."""
    from wsc.passes.convert_wsc_to_nvvm import ConvertWscToNvvm

    return ConvertWscToNvvm(
        wait_spin_limit=config.debug_spin_limit, delay_role=config.debug_delay_role
    )


def compile_matmul(
    m: int,
    n: int,
    k: int,
    problem: MatmulProblem,
    config: MatmulConfig,
    out_dir: str | os.PathLike,
    dump_dir: str | os.PathLike | None = None,
    context: ir.Context | None = None,
) -> CompileResult:
    """Build, specialize, unroll and lower the matmul for an M x N x K problem and
    write its artifact directory."""
    from wsc.dialect import make_context

    for name, value in (("m", m), ("n", n), ("k", k)):
        if value < 1:
            raise ValueError(f"{name} must be positive, got {value}")
    check_tma_strides(k, n, problem, config)
    context = context or make_context()
    with context, ir.Location.unknown():
        module = build_matmul(problem, config)
        # wsc.matmul weighs a config's spills by its speed: they are not errors here.
        result = compile_module(
            module,
            specialization_passes(config),
            dump_dir,
            lowering=lowering_pass(config),
            allow_spills=True,
        )
    write_matmul_artifact(out_dir, result, m, n, k, problem, config)
    return result


def write_matmul_artifact(
    out_dir: str | os.PathLike,
    result: CompileResult,
    m: int,
    n: int,
    k: int,
    problem: MatmulProblem,
    config: MatmulConfig,
) -> Path:
    """The artifact of a compiled matmul for one M x N x K problem. The kernel
    reads its sizes at run time, so one CompileResult serves every shape
    whose TMA row strides are legal."""
    check_tma_strides(k, n, problem, config)
    tiles = grid_tiles(config)
    splits = config.split_k
    partials = partial_sums(config)
    return write_artifact(
        out_dir,
        result,
        {"m": m, "n": n, "k": k},
        (*tiles, splits) if splits > 1 else tiles,
        {**config.as_dict(), **({"epilogue": problem.epilogue()} if problem.epilogue() else {})},
        persistent=config.persistent,
        check="matmul",
        workspaces=split_k_workspaces(result.info, tiles, *partials) if partials else None,
        derived_sizes=problem.scale_size_rules(),
    )
