"""The matmul kernel of the tutorial, built as wsc IR in its V2 form: one
warpgroup that loads a K tile into a ring stage, waits for it, multiplies and
syncs. `compile_matmul` then specializes, unrolls and lowers it.

    C[M, N] = A[M, K] * op(B),  op(B) = B^T for B given as [N, K] ("nk"),
                                op(B) = B   for B given as [K, N] ("kn")

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

With `group_m` = 0 tile t is (row, col) above: tiles worked on together share
one tile column and read every row panel of A. With `group_m` = G tile t walks
the tiles in groups of G tile rows, column by column inside a group, so the
tiles resident at one time read about G row panels of A and (resident
tiles)/G column panels of B, which stay in L2, instead of every panel of A.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from mlir import ir
from mlir.dialects import arith, func, gpu, memref, scf

from wsc import dialect
from wsc.compiler import CompileResult, compile_module, write_artifact
from wsc.ir_utils import CLUSTER_SIZE_ATTR, KERNEL_THREADS_ATTR, bool_constant, index_constant
from wsc.kernels.matmul.config import MatmulConfig, MatmulProblem, check_tma_strides
from wsc.target.hopper import WARPGROUP_SIZE


def _global(element: str) -> ir.Type:
    return ir.Type.parse(f"memref<?x?x{element}>")


def _tile_counts(a: ir.Value, c: ir.Value, bm: int, bn: int) -> tuple[ir.Value, ir.Value]:
    """(ceil(M/BM), ceil(N/BN)): the output tiles along M and N."""
    tiles_m = arith.CeilDivUIOp(
        memref.DimOp(a, index_constant(0)).result, index_constant(bm)
    ).result
    tiles_n = arith.CeilDivUIOp(
        memref.DimOp(c, index_constant(1)).result, index_constant(bn)
    ).result
    return tiles_m, tiles_n


def _tile_coordinates(
    tile: ir.Value, tiles_m: ir.Value, tiles_n: ir.Value, group_m: int
) -> tuple[ir.Value, ir.Value]:
    """(tile row, tile column) of tile number `tile`, in the order of the
    module docstring."""
    if group_m == 0:
        return arith.RemUIOp(tile, tiles_m).result, arith.DivUIOp(tile, tiles_m).result
    group_size = arith.MulIOp(index_constant(group_m), tiles_n).result
    first_row = arith.MulIOp(arith.DivUIOp(tile, group_size).result, index_constant(group_m)).result
    # The last group has fewer rows when group_m does not divide tiles_m.
    rows = arith.MinUIOp(arith.SubIOp(tiles_m, first_row).result, index_constant(group_m)).result
    in_group = arith.RemUIOp(tile, group_size).result
    tile_row = arith.AddIOp(first_row, arith.RemUIOp(in_group, rows).result).result
    tile_col = arith.DivUIOp(in_group, rows).result
    return tile_row, tile_col


def store_through_shared(
    tile: ir.Value,
    sc: ir.Value,
    c: ir.Value,
    row: ir.Value,
    col: ir.Value,
    wait_first: bool,
    tma: bool,
) -> None:
    """The staged epilogue: stage `tile` in sc[0] and copy it to C, from one
    thread with TMA or from all with coalesced stores. With `wait_first` (a
    buffer reused tile after tile) the copy of the previous tile must have
    read sc first."""
    stage0 = index_constant(0)
    if wait_first:
        if tma:
            with _elected():
                dialect.tma_store_wait(0)
        dialect.sync()
    dialect.store_shared(tile, sc, stage0)
    if tma:
        dialect.fence_proxy_async()
    dialect.sync()
    if tma:
        with _elected():
            dialect.tma_store(sc, stage0, c, row, col)
    else:
        dialect.coalesced_store(sc, stage0, c, row, col)


@contextlib.contextmanager
def _elected():
    """Ops for one thread of the executing threads: an scf.if on wsc.elect."""
    guard = scf.IfOp(dialect.elect())
    with ir.InsertionPoint(guard.then_block):
        yield
        scf.YieldOp([])


def build_matmul(problem: MatmulProblem, config: MatmulConfig, name: str = "matmul") -> ir.Module:
    """The V2-form matmul kernel as a module (needs an active wsc context)."""
    config.check_problem(problem)
    bm, bn, bk, stages = config.block_m, config.block_n, config.block_k, config.num_stages
    element = problem.dtype
    b_tile = (bn, bk) if problem.b_layout == "nk" else (bk, bn)
    tx_bytes = (bm * bk + bn * bk) * 2
    module = ir.Module.create()
    with ir.InsertionPoint(module.body):
        kernel = func.FuncOp(
            name,
            ir.FunctionType.get(
                [_global(element), _global(element), _global(problem.out_dtype)], []
            ),
        )
        i32 = ir.IntegerType.get_signless(32)
        kernel.attributes[KERNEL_THREADS_ATTR] = ir.IntegerAttr.get(i32, WARPGROUP_SIZE)
        ctas = config.cluster_m
        if ctas > 1:
            kernel.attributes[CLUSTER_SIZE_ATTR] = ir.IntegerAttr.get(i32, ctas)
        entry = kernel.add_entry_block()
    with ir.InsertionPoint(entry):
        a, b, c = entry.arguments
        c1 = index_constant(1)
        k_size = memref.DimOp(a, c1).result
        k_tiles = arith.CeilDivUIOp(k_size, index_constant(bk)).result
        sa = dialect.alloc_shared(dialect.shared_buffer_type(stages, bm, bk, element))
        sb = dialect.alloc_shared(dialect.shared_buffer_type(stages, *b_tile, element))
        sc = None
        if config.staged_store:
            sc = dialect.alloc_shared(dialect.shared_buffer_type(1, bm, bn, problem.out_dtype))
        full = dialect.mbarrier_alloc(1, stages)
        # Barrier init must be visible before use: in a cluster, to the other
        # block too, whose copies and releases reach these barriers.
        sync = dialect.sync if ctas == 1 else dialect.cluster_sync
        sync()
        tiles_m, tiles_n = _tile_counts(a, c, bm, bn)
        block_x = gpu.BlockIdOp(gpu.Dimension.x).result
        ring_start = [index_constant(0), bool_constant(dialect.CONSUMER_INITIAL_PHASE)]
        # Work units: tiles, or in a cluster tile pairs (ctas tile rows of one
        # tile column), numbered like tiles over ceil(tiles_m / ctas) rows.
        units_m, rank = tiles_m, None
        if ctas > 1:
            units_m = arith.CeilDivUIOp(tiles_m, index_constant(ctas)).result
            rank = dialect.cluster_rank()

        def one_tile(unit: ir.Value, stage: ir.Value, phase: ir.Value) -> list[ir.Value]:
            """Work unit `unit`'s K loop, from ring position (stage, phase), and
            its store; returns the ring position after it."""
            tile_row, tile_col = _tile_coordinates(unit, units_m, tiles_n, config.group_m)
            if rank is not None:
                tile_row = arith.AddIOp(
                    arith.MulIOp(tile_row, index_constant(ctas)).result, rank
                ).result
            tile_m = arith.MulIOp(tile_row, index_constant(bm)).result
            tile_n = arith.MulIOp(tile_col, index_constant(bn)).result
            acc = dialect.acc_alloc(dialect.acc_type((bm, bn), "f32"))
            loop = scf.ForOp(index_constant(0), k_tiles, c1, [stage, phase])
            with ir.InsertionPoint(loop.body):
                k_tile = loop.induction_variable
                stage, phase = loop.inner_iter_args
                k0 = arith.MulIOp(k_tile, index_constant(bk)).result
                with _elected():
                    dialect.mbarrier_arrive_expect_tx(full, stage, tx_bytes)
                    dialect.tma_load(a, tile_m, k0, sa, stage, full)
                    # B's tile is the cluster's: each block copies its share
                    # into every block's stage.
                    multicast = ctas > 1
                    if problem.b_layout == "nk":
                        dialect.tma_load(b, tile_n, k0, sb, stage, full, multicast)
                    else:
                        dialect.tma_load(b, k0, tile_n, sb, stage, full, multicast)
                dialect.mbarrier_wait(full, stage, phase)
                dialect.wgmma_fence()
                dialect.wgmma(sa, sb, stage, acc, 0, problem.b_layout)
                dialect.wgmma_commit_group()
                dialect.wgmma_wait_group(0)
                # The stage is free once every block that reads it is done.
                sync()
                scf.YieldOp(list(dialect.ring_advance(stage, phase, stages)))
            result = acc if problem.out_dtype == "f32" else dialect.cast(acc, problem.out_dtype)
            if sc is None:
                dialect.store(result, c, tile_m, tile_n)
            else:
                store_through_shared(
                    result,
                    sc,
                    c,
                    tile_m,
                    tile_n,
                    wait_first=config.persistent,
                    tma=config.tma_store,
                )
            return list(loop.results)

        # In a cluster, a unit per cluster: block x / ctas.
        first_unit = block_x if ctas == 1 else arith.DivUIOp(block_x, index_constant(ctas)).result
        if config.persistent:
            num_units = arith.MulIOp(units_m, tiles_n).result
            grid_x = gpu.GridDimOp(gpu.Dimension.x).result
            step = grid_x if ctas == 1 else arith.DivUIOp(grid_x, index_constant(ctas)).result
            units = scf.ForOp(first_unit, num_units, step, ring_start)
            with ir.InsertionPoint(units.body):
                scf.YieldOp(one_tile(units.induction_variable, *units.inner_iter_args))
        else:
            block_y = gpu.BlockIdOp(gpu.Dimension.y).result
            one_tile(
                arith.AddIOp(first_unit, arith.MulIOp(block_y, units_m).result).result, *ring_start
            )
        func.ReturnOp([])
    return module


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
        result = compile_module(
            module, specialization_passes(config), dump_dir, lowering=lowering_pass(config)
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
    return write_artifact(
        out_dir,
        result,
        {"m": m, "n": n, "k": k},
        (("m", config.block_m), ("n", config.block_n)),
        config.as_dict(),
        persistent=config.persistent,
        check="matmul",
    )
