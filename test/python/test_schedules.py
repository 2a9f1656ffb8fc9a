"""The performance options of the matmul: one WGMMA group in flight with
delayed release (--warp-specialize wgmma-in-flight), the grouped tile order
(MatmulConfig.group_m), and the benchmark's table helpers."""

from __future__ import annotations

import importlib.util
import json
import math
import re
import sys
from pathlib import Path

import pytest
from mlir import ir

from wsc import ops
from wsc.codegen import find_ptxas
from wsc.compiler import compile_module
from wsc.dialect import make_context
from wsc.ir_utils import constant_int, walk
from wsc.kernels.matmul.build import build_matmul, compile_matmul, specialization_passes
from wsc.kernels.matmul.config import MatmulConfig, MatmulProblem
from wsc.kernels.matmul.space import matmul_kernel
from wsc.protocol import check_protocol
from wsc.runtime import load_artifact
from wsc.target.hopper import E4M3, MAX_SMS

REPO = Path(__file__).resolve().parents[2]
needs_ptxas = pytest.mark.skipif(find_ptxas() is None, reason="ptxas not installed")


@pytest.mark.parametrize("stages,groups", [(2, 1), (3, 1), (4, 2), (5, 2)])
def test_in_flight_protocol_is_clean(stages, groups):
    """Delayed release keeps the mbarrier protocol sound for every K extent,
    before and after unrolling (both passes also check on their own)."""
    config = MatmulConfig(
        num_stages=stages,
        num_consumer_groups=groups,
        producer="warpgroup" if groups > 1 else "warp",
        wgmma_in_flight=1,
    )
    with make_context(), ir.Location.unknown():
        module = build_matmul(MatmulProblem(), config)
        for wsc_pass in specialization_passes(config):
            wsc_pass.run(module.operation)
            check_protocol(module.operation, max_k_tiles=4 * stages + 1)


@pytest.mark.parametrize("stages,groups", [(1, 1), (2, 1), (4, 2), (3, 4)])
def test_persistent_protocol_is_clean(stages, groups):
    """Every role walks the tiles with the ring carried across them; the
    check runs a block over one and four tiles for every K extent."""
    config = MatmulConfig(
        num_stages=stages,
        num_consumer_groups=groups,
        persistent=True,
        block_m=64 * max(groups, 2),
        group_m=2,
        producer="warpgroup" if groups > 1 else "warp",
    )
    passes = specialization_passes(config)
    assert [p.ARGUMENT for p in passes] == ["warp-specialize"]  # stages stay run-time
    with make_context(), ir.Location.unknown():
        module = build_matmul(MatmulProblem(), config)
        for wsc_pass in passes:
            wsc_pass.run(module.operation)
        check_protocol(module.operation, max_k_tiles=3 * stages + 2)


@pytest.mark.parametrize(
    "stages,in_flight,block_m", [(1, 0, 128), (2, 0, 128), (4, 0, 128), (2, 1, 128), (5, 1, 64)]
)
def test_ping_pong_protocol_is_clean(stages, in_flight, block_m):
    """The two groups take whole tiles in turn: each reads every other tile's
    copies, and the turn barriers keep each one's full waits at most one
    phase ahead; with a WGMMA group in flight each group releases its last
    stage before it hands the turn over. A group's tile is not split, so it
    may be 64 rows."""
    config = MatmulConfig(
        num_stages=stages,
        num_consumer_groups=2,
        producer="warpgroup",
        persistent=True,
        ping_pong=True,
        wgmma_in_flight=in_flight,
        block_m=block_m,
        tma_store=bool(in_flight),
    )
    problem = MatmulProblem(out_dtype="f16" if in_flight else "f32")
    with make_context(), ir.Location.unknown():
        module = build_matmul(problem, config)
        for wsc_pass in specialization_passes(config):
            wsc_pass.run(module.operation)
        check_protocol(module.operation, max_k_tiles=3 * stages + 2)


@pytest.mark.parametrize("stages,groups", [(2, 1), (3, 2)])
def test_stream_k_protocol_is_clean(stages, groups):
    """Blocks share tiles by K tiles and hand a shared tile over through the
    workspace: the check runs the block also as block 1 of 3 over four
    tiles, whose share starts and ends mid-tile, for every K extent, as the
    last and as an earlier arrival."""
    config = MatmulConfig(
        num_stages=stages,
        num_consumer_groups=groups,
        block_m=64 * groups,
        producer="warpgroup" if groups > 1 else "warp",
        persistent=True,
        tma_store=True,
        wgmma_in_flight=1,
        stream_k=True,
    )
    with make_context(), ir.Location.unknown():
        module = build_matmul(MatmulProblem("f16", "f16"), config)
        for wsc_pass in specialization_passes(config):
            wsc_pass.run(module.operation)
        check_protocol(module.operation, max_k_tiles=3 * stages + 2)


@pytest.mark.parametrize(
    "fields",
    [
        dict(),
        dict(persistent=True, cluster_m=2),
        dict(persistent=True, ping_pong=True, num_consumer_groups=2, block_m=128),
    ],
)
def test_stream_k_needs_a_persistent_grid_of_single_blocks(fields):
    with pytest.raises(ValueError, match="stream_k = True shares K tiles between the blocks"):
        MatmulConfig(stream_k=True, **fields)


def test_a_stream_k_artifact_has_a_workspace_slot_per_block(tmp_path):
    """Stream-K hands tiles over between neighbouring blocks of the
    persistent grid: its workspace has a fixed number of slots (one per
    boundary between blocks, as many as a Hopper GPU has SMs), two partial
    tiles each, and the grid gains no axis of splits."""
    kernel = matmul_kernel(
        "f16", "f16", "nk", num_stages=3, persistent=True, tma_store=True, stream_k=True
    )
    directory = kernel.compile().write_artifact(tmp_path, m=512, n=28672, k=8192)
    artifact = load_artifact(directory)
    assert artifact.persistent and artifact.grid == (4 * 112, 1, 1)
    assert artifact.tensors["d"].shape == (MAX_SMS * 2 * 128 * 256,)
    assert artifact.tensors["e"].shape == (MAX_SMS * 128,) and artifact.tensors["e"].zeroed
    assert json.loads((directory / "kernel.json").read_text())["config"]["splits"] == 2


@pytest.mark.parametrize(
    "fields",
    [
        dict(num_stages=3),
        dict(num_stages=4, wgmma_in_flight=1),
        dict(num_stages=2, num_consumer_groups=4, block_m=256),
        dict(num_stages=3, persistent=True, tma_store=True),
        dict(num_stages=5, persistent=True, tma_store=True, wgmma_in_flight=1),
        dict(num_stages=4, split_k=2),
        dict(num_stages=3, persistent=True, cluster_m=2, tma_store=True),
        dict(num_stages=4, cluster_n=2),
    ],
)
def test_wgmma_turns_protocol_is_clean(fields):
    """The consumer groups issue each K tile's WGMMAs in turn: each waits on
    its turns barrier with the parity of the K tile's ring position and passes
    the turn on after its commit, across a persistent block's tiles too, for
    every K extent (0 K tiles included)."""
    fields = {"num_consumer_groups": 2, "producer": "warpgroup", **fields}
    config = MatmulConfig(wgmma_turns=True, **fields)
    problem = MatmulProblem(out_dtype="f16" if config.tma_store else "f32")
    with make_context(), ir.Location.unknown():
        module = build_matmul(problem, config)
        for wsc_pass in specialization_passes(config):
            wsc_pass.run(module.operation)
        # The turns: one barrier per group, each counting the 4 warps of a group.
        barriers = [
            (alloc.arrival_count, alloc.num_barriers)
            for alloc in (
                ops.MbarrierAlloc(op)
                for op in walk(module.operation)
                if op.name == "wsc.mbarrier_alloc"
            )
        ]
        assert barriers.count((4, config.num_consumer_groups)) == 1
        check_protocol(module.operation, max_k_tiles=3 * config.num_stages + 2)


@pytest.mark.parametrize("persistent", [False, True])
def test_block_scaled_wgmma_turns_protocol_is_clean(persistent):
    """The kernel the turns were made for: fp8 with block scales, each K
    tile's product scaled in registers after its group's wait."""
    config = MatmulConfig(
        block_k=128,
        num_stages=4,
        num_consumer_groups=2,
        producer="warpgroup",
        persistent=persistent,
        tma_store=True,
        wgmma_turns=True,
    )
    problem = MatmulProblem(E4M3, "bf16", "nk", block_scales=True)
    with make_context(), ir.Location.unknown():
        module = build_matmul(problem, config)
        for wsc_pass in specialization_passes(config):
            wsc_pass.run(module.operation)
        check_protocol(module.operation, max_k_tiles=3 * config.num_stages + 2)


#: The block-scaled kernel whose products wait a K tile in a second tile.
BLOCK_SCALED_IN_FLIGHT = dict(
    block_k=128,
    num_consumer_groups=2,
    producer="warpgroup",
    persistent=True,
    tma_store=True,
    wgmma_in_flight=1,
)


@pytest.mark.parametrize("stages", [2, 3, 4])
def test_block_scaled_products_in_turn_protocol_is_clean(stages):
    """fp8 with block scales and a WGMMA group in flight: two product tiles
    used by the K tiles in turn, a K loop of two K tiles per trip; odd and
    even K tile counts, persistent tiles carrying the ring on."""
    config = MatmulConfig(num_stages=stages, **BLOCK_SCALED_IN_FLIGHT)
    problem = MatmulProblem(E4M3, "bf16", "nk", block_scales=True)
    with make_context(), ir.Location.unknown():
        module = build_matmul(problem, config)
        for wsc_pass in specialization_passes(config):
            wsc_pass.run(module.operation)
        check_protocol(module.operation, max_k_tiles=3 * config.num_stages + 2)
        uninitialized = [
            op
            for op in walk(module.operation)
            if op.name == "wsc.acc_alloc" and ops.AccAlloc(op).uninitialized
        ]
    # Per consumer group: two products and two scale vectors.
    assert len(uninitialized) == 2 * 4


@needs_ptxas
def test_block_scaled_products_in_turn_compile_without_serialized_wgmmas():
    """Every path leaves the same WGMMA group in flight, so ptxas keeps the
    WGMMAs asynchronous (no C7514 / C7518), and the three tiles per thread
    fit the consumers' setmaxnreg budget without spills."""
    config = MatmulConfig(num_stages=4, **BLOCK_SCALED_IN_FLIGHT)
    problem = MatmulProblem(E4M3, "bf16", "nk", block_scales=True)
    with make_context(), ir.Location.unknown():
        result = compile_module(build_matmul(problem, config), specialization_passes(config))
    assert result.ptxas.warnings == []
    assert result.ptxas.spill_stores == result.ptxas.spill_loads == 0
    assert result.ptx.count("wgmma.wait_group.sync.aligned \t1;") > 0


@pytest.mark.parametrize(
    "fields, message",
    [
        (dict(persistent=False, tma_store=False), "with wgmma_in_flight = 1, persistent = True"),
        (dict(wgmma_turns=True), "and wgmma_turns = False"),
        (dict(block_n=256), "block_n dividing 128"),
        (dict(num_consumer_groups=1, producer="warp"), "sum and two K tile products take 384"),
    ],
)
def test_block_scaled_products_in_turn_are_refused_where_they_cannot_run(fields, message):
    config = MatmulConfig(**{**BLOCK_SCALED_IN_FLIGHT, **fields})
    with pytest.raises(ValueError, match=re.escape(message)):
        config.check_problem(MatmulProblem(E4M3, "bf16", "nk", block_scales=True))


@pytest.mark.parametrize(
    "fields",
    [
        dict(num_consumer_groups=1),
        dict(
            num_consumer_groups=2,
            producer="warpgroup",
            persistent=True,
            ping_pong=True,
            tma_store=True,
        ),
    ],
)
def test_wgmma_turns_need_groups_sharing_a_tile(fields):
    with pytest.raises(ValueError, match="wgmma_turns = True needs num_consumer_groups of 2 or 4"):
        MatmulConfig(wgmma_turns=True, **fields)


def test_ping_pong_needs_a_persistent_kernel_of_two_groups():
    with pytest.raises(ValueError, match="ping_pong = True needs persistent = True"):
        MatmulConfig(num_consumer_groups=2, producer="warpgroup", ping_pong=True)


def test_persistent_in_flight_kernels_store_through_shared_memory():
    with pytest.raises(
        ValueError, match="wgmma_in_flight = 1 needs tma_store or coalesced_store = True"
    ):
        MatmulConfig(persistent=True, wgmma_in_flight=1)
    MatmulConfig(persistent=True, wgmma_in_flight=1, tma_store=True)
    MatmulConfig(persistent=True, wgmma_in_flight=1, coalesced_store=True)


def test_one_staged_epilogue_at_a_time():
    with pytest.raises(ValueError, match="tma_store and coalesced_store are two ways"):
        MatmulConfig(tma_store=True, coalesced_store=True)


@pytest.mark.parametrize(
    "fields",
    [
        dict(),
        dict(
            num_consumer_groups=2,
            producer="warpgroup",
            block_n=256,
            num_stages=3,
            wgmma_in_flight=1,
        ),
        dict(
            num_consumer_groups=2,
            producer="warpgroup",
            block_n=256,
            num_stages=3,
            wgmma_in_flight=1,
            persistent=True,
        ),
        dict(num_consumer_groups=2, producer="warpgroup", persistent=True, ping_pong=True),
    ],
)
@pytest.mark.parametrize("epilogue", ["tma_store", "coalesced_store"])
def test_staged_store_protocol_is_clean(fields, epilogue):
    config = MatmulConfig(**fields, **{epilogue: True})
    with make_context(), ir.Location.unknown():
        module = build_matmul(MatmulProblem(out_dtype="f16"), config)
        for wsc_pass in specialization_passes(config):
            wsc_pass.run(module.operation)
        check_protocol(module.operation, max_k_tiles=3 * config.num_stages + 2)
        text = str(module)
    # One staging stage per consumer group, each group storing from its own.
    groups = fields.get("num_consumer_groups", 1)
    rows = 128 if fields.get("ping_pong") else 128 // groups
    assert f"memref<{groups}x{rows}x{config.block_n}xf16, 3>" in text
    assert text.count(f'"wsc.{epilogue}"(') == groups


@pytest.mark.parametrize("epilogue", ["tma_store", "coalesced_store"])
def test_a_staged_store_needs_a_16_bit_output(epilogue):
    with make_context(), ir.Location.unknown():
        with pytest.raises(ValueError, match=f"{epilogue} = True needs an f16 or bf16 output"):
            build_matmul(MatmulProblem(out_dtype="f32"), MatmulConfig(**{epilogue: True}))


def test_tma_store_needs_16_byte_rows_of_c(tmp_path):
    config = MatmulConfig(tma_store=True)
    with pytest.raises(ValueError, match="C: its rows are 2666 bytes"):
        compile_matmul(1000, 1333, 520, MatmulProblem(out_dtype="f16"), config, tmp_path)


@needs_ptxas
def test_a_persistent_in_flight_tma_store_kernel_compiles_clean():
    """With the TMA-store epilogue a persistent kernel keeps a WGMMA group in
    flight without ptxas serializing its WGMMAs (with register stores it
    does, C7514)."""
    config = MatmulConfig(
        block_n=256,
        num_stages=3,
        num_consumer_groups=2,
        producer="warpgroup",
        wgmma_in_flight=1,
        group_m=8,
        persistent=True,
        tma_store=True,
    )
    with make_context(), ir.Location.unknown():
        result = compile_module(
            build_matmul(MatmulProblem(out_dtype="f16"), config), specialization_passes(config)
        )
    assert result.ptxas.warnings == []
    assert result.ptxas.spill_stores == result.ptxas.spill_loads == 0
    ptx = result.ptx
    assert ptx.count("cp.async.bulk.tensor.2d.global.shared::cta") == 2 * 4  # 2 groups x 4 atoms
    assert "fence.proxy.async.shared::cta" in ptx


@needs_ptxas
def test_a_coalesced_store_kernel_takes_any_row_length(tmp_path):
    """No TMA writes C: rows of 1333 halves (2666 bytes) are fine, and the
    persistent kernel keeps a WGMMA group in flight without ptxas
    serializing its WGMMAs."""
    config = MatmulConfig(
        block_n=256,
        num_stages=3,
        num_consumer_groups=2,
        producer="warpgroup",
        wgmma_in_flight=1,
        group_m=8,
        persistent=True,
        coalesced_store=True,
    )
    result = compile_matmul(1000, 1333, 520, MatmulProblem(out_dtype="f16"), config, tmp_path)
    assert result.ptxas.warnings == []
    assert result.ptxas.spill_stores == result.ptxas.spill_loads == 0
    ptx = result.ptx
    assert "cp.async.bulk.tensor.2d.global.shared::cta" not in ptx
    assert "fence.proxy.async" not in ptx
    # C's rows are only 2-byte aligned: element stores only, and a group's
    # 64x256 rows over 4 warps, 32 elements a store, are 128 stores a thread
    # on the unchecked path alone.
    assert "st.global.v" not in ptx and "st.global.b32" not in ptx
    assert ptx.count("st.global.b16") >= 2 * 128


@needs_ptxas
@pytest.mark.parametrize("rebalance", [True, False])
def test_register_rebalancing_is_an_option(rebalance):
    """setmaxnreg moves the producer's registers to the consumers; without it
    every role keeps the 168 a 384-thread block starts with, and this
    persistent 128x256 kernel still fits them (no spills)."""
    config = MatmulConfig(
        block_n=256,
        num_stages=3,
        num_consumer_groups=2,
        producer="warpgroup",
        wgmma_in_flight=1,
        group_m=16,
        persistent=True,
        tma_store=True,
        rebalance_registers=rebalance,
    )
    with make_context(), ir.Location.unknown():
        result = compile_module(
            build_matmul(MatmulProblem(out_dtype="f16"), config), specialization_passes(config)
        )
    assert result.ptxas.warnings == []
    assert result.ptxas.spill_stores == result.ptxas.spill_loads == 0
    setmaxnreg = [
        " ".join(line.split()) for line in result.ptx.splitlines() if "setmaxnreg" in line
    ]
    if rebalance:
        assert setmaxnreg == ["setmaxnreg.inc.sync.aligned.u32 232;"] * 2 + [
            "setmaxnreg.dec.sync.aligned.u32 40;"
        ]
    else:
        assert setmaxnreg == []


def test_only_a_producer_warpgroup_rebalances_registers():
    with pytest.raises(ValueError, match="rebalance_registers = False only applies"):
        MatmulConfig(rebalance_registers=False)


@needs_ptxas
def test_a_persistent_kernel_compiles_clean():
    config = MatmulConfig(
        block_n=256, num_consumer_groups=2, producer="warpgroup", group_m=8, persistent=True
    )
    with make_context(), ir.Location.unknown():
        result = compile_module(
            build_matmul(MatmulProblem(out_dtype="f16"), config), specialization_passes(config)
        )
    assert result.ptxas.warnings == []
    assert result.ptxas.spill_stores == result.ptxas.spill_loads == 0
    # It reads the grid size to stride over the tiles.
    assert "%nctaid.x" in result.ptx


@needs_ptxas
@pytest.mark.parametrize("out_dtype", ["f16", "f32"])
def test_in_flight_reads_accumulators_only_after_the_last_wait(out_dtype):
    """With a group in flight, no read of the accumulators may be scheduled
    above the final wait_group 0 (ptxas would serialize every WGMMA, C7514)."""
    config = MatmulConfig(wgmma_in_flight=1)
    with make_context(), ir.Location.unknown():
        result = compile_module(
            build_matmul(MatmulProblem(out_dtype=out_dtype), config), specialization_passes(config)
        )
    assert not [w for w in result.ptxas.warnings if "C7514" in w]
    assert result.ptxas.spill_stores == result.ptxas.spill_loads == 0
    ptx = result.ptx
    assert ptx.count("wgmma.wait_group.sync.aligned \t1;") == config.num_stages
    last_wait = ptx.rindex("wgmma.wait_group.sync.aligned \t0;")
    first_read = ptx.index("cvt.rn.f16.f32" if out_dtype == "f16" else "st.global")
    assert last_wait < first_read


def _tile_of_each_block(m: int, n: int, config: MatmulConfig) -> list[tuple[int, int]]:
    """Evaluate the builder's tile arithmetic for every block of the tiled
    grid, in launch order: the (row, col) origin its wsc.store writes. A
    persistent kernel is evaluated as block t's first trip of the tile loop,
    whose tile is t."""
    with make_context(), ir.Location.unknown():
        module = build_matmul(MatmulProblem(), config)
        kernel = module.body.operations[0]
        args = list(kernel.regions[0].blocks[0].arguments)
        body = list(kernel.regions[0].blocks[0].operations)
        tile_loop = next(
            (
                op
                for op in body
                if op.operation.name == "scf.for"
                and op.operation.operands[0].owner.name == "gpu.block_id"
            ),
            None,
        )
        if tile_loop is not None:
            body = body + list(tile_loop.regions[0].blocks[0].operations)
        store = next(op for op in body if op.operation.name == "wsc.store")
        shapes = {0: (m, 64), 2: (m, n)}  # a [M, K], c [M, N]
        tiles = (math.ceil(m / config.block_m), math.ceil(n / config.block_n))
        grid = (tiles[0] * tiles[1], 1) if config.persistent else tiles
        binary = {
            "arith.muli": lambda a, b: a * b,
            "arith.addi": lambda a, b: a + b,
            "arith.subi": lambda a, b: a - b,
            "arith.divui": lambda a, b: a // b,
            "arith.remui": lambda a, b: a % b,
            "arith.minui": min,
            "arith.ceildivui": lambda a, b: -(-a // b),
        }
        origins = []  # in launch order: block x varies fastest
        for y in range(grid[1]):
            for x in range(grid[0]):
                values = {}
                for op in body:
                    op = op.operation
                    name = op.name
                    if name == "arith.constant" and isinstance(op.result.type, ir.IndexType):
                        values[op.result] = constant_int(op.result)
                    elif name == "gpu.block_id":
                        values[op.result] = (
                            x if str(op.attributes["dimension"]).endswith("x>") else y
                        )
                    elif name == "memref.dim":
                        values[op.result] = shapes[args.index(op.operands[0])][
                            values[op.operands[1]]
                        ]
                    elif name in binary:
                        values[op.result] = binary[name](*(values[v] for v in op.operands))
                    elif tile_loop is not None and op == tile_loop.operation:
                        values[op.regions[0].blocks[0].arguments[0]] = values[op.operands[0]]
                origins.append((values[store.operands[2]], values[store.operands[3]]))
    return origins


@pytest.mark.parametrize(
    "m,n,group_m", [(1000, 1400, 3), (1024, 768, 8), (128, 1280, 4), (2048, 128, 5)]
)
def test_grouped_order_visits_every_tile_once(m, n, group_m):
    config = MatmulConfig(group_m=group_m)
    origins = _tile_of_each_block(m, n, config)
    tiles = {
        (r * 128, c * 128) for r in range(math.ceil(m / 128)) for c in range(math.ceil(n / 128))
    }
    assert sorted(origins) == sorted(tiles)
    # Blocks in launch order fill a group of group_m tile rows column by column.
    rows_first_group = min(group_m, math.ceil(m / 128))
    assert origins[:rows_first_group] == [(r * 128, 0) for r in range(rows_first_group)]


def test_default_order_is_the_block_id():
    origins = _tile_of_each_block(300, 200, MatmulConfig())
    assert origins == [(x * 128, y * 128) for y in range(2) for x in range(3)]


def test_persistent_tiles_are_the_launch_order_of_the_tiled_grid():
    """Tile t of a persistent block is what block t of the tiled grid does."""
    tiled = _tile_of_each_block(1000, 1400, MatmulConfig(group_m=3))
    assert _tile_of_each_block(1000, 1400, MatmulConfig(group_m=3, persistent=True)) == tiled


def _benchmark_module():
    spec = importlib.util.spec_from_file_location("bench_matmul", REPO / "benchmarks" / "matmul.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses resolve annotations there
    spec.loader.exec_module(module)
    return module


def test_benchmark_picks_the_fastest_correct_candidate_and_reports_ratios():
    bench = _benchmark_module()
    tune = [
        {"candidate": "a", "shape": "s", "ok": True, "ms": 2.0},
        {"candidate": "b", "shape": "s", "ok": True, "ms": 1.0},
        {"candidate": "c", "shape": "s", "ok": False, "ms": 0.5},
    ]
    assert bench._best_candidates(tune)["s"]["candidate"] == "b"
    row = {
        "shape": "s",
        "dtype": "f16",
        "results": [
            {"method": "cublas", "ok": True, "ms": 1.0, "tflops": 100.0},
            {"method": "triton", "ok": True, "ms": 1.2, "tflops": 83.3},
            {"method": "wsc", "ok": True, "ms": 0.8, "tflops": 125.0, "candidate": "b"},
        ],
    }
    report = importlib.import_module("matmul_report")  # beside the script, on its path
    assert report.ratios(row) == pytest.approx((1.25, 1.5))
    table = report.format_table([row])
    assert "| 1.25 | 1.50 | b |" in table
    assert "geometric mean over 1 shapes: 1.250" in table


class _FakeCuda:
    """Stands in for torch.cuda: events read a clock that each launch advances
    by its method's duration, so Inputs.time's medians and launch order are
    checked without a GPU."""

    def __init__(self):
        self.clock, self.launches = 0.0, []

    def synchronize(self):
        pass

    def Event(self, enable_timing):  # noqa: N802 (torch's name)
        cuda = self

        class Event:
            def record(self):
                self.at = cuda.clock

            def elapsed_time(self, end):
                return end.at - self.at

        return Event()


def test_benchmark_compares_only_candidates_it_compiled(tmp_path):
    pytest.importorskip("torch")
    bench = _benchmark_module()
    (tmp_path / "index.json").write_text('{"candidates": {"seed": {}}}')
    with pytest.raises(SystemExit, match="not a candidate of .*: seed_typo"):
        bench.compare(tmp_path, ["seed", "seed_typo"], tmp_path / "out.json")


def test_benchmark_interleaves_methods_on_alternating_input_sets():
    bench = _benchmark_module()
    cuda = _FakeCuda()

    def launcher(method, data_set, ms):
        def launch():
            cuda.launches.append((method, data_set))
            cuda.clock += ms

        return launch

    inputs = bench.Inputs.__new__(bench.Inputs)
    inputs.torch = type("FakeTorch", (), {"cuda": cuda})
    methods = [
        [launcher(name, s, ms) for s in range(3)]
        for name, ms in (("cublas", 1.0), ("triton", 2.0), ("wsc", 3.0))
    ]
    assert inputs.time(methods, warmup=2, iters=5) == [1.0, 2.0, 3.0]
    timed = cuda.launches[2 * 3 :]
    assert [name for name, _ in timed[:3]] == ["cublas", "triton", "wsc"]
    # No launch follows one on the same inputs (L2 would still hold part of them).
    assert all(a[1] != b[1] for a, b in zip(cuda.launches, cuda.launches[1:], strict=False))


@pytest.mark.parametrize(
    "fields",
    [
        dict(),
        dict(persistent=True),
        dict(persistent=True, wgmma_in_flight=1, tma_store=True),
        dict(persistent=True, coalesced_store=True),
    ],
)
def test_cluster_protocol_is_clean(fields):
    """Two blocks share B's tile: the protocol check runs both, with the
    multicast copies landing in both and every release reaching both."""
    config = MatmulConfig(
        block_n=256,
        num_stages=3,
        num_consumer_groups=2,
        producer="warpgroup",
        group_m=8,
        cluster_m=2,
        **fields,
    )
    problem = MatmulProblem(out_dtype="f16" if config.staged_store else "f32")
    with make_context(), ir.Location.unknown():
        module = build_matmul(problem, config)
        check_protocol(module.operation, max_k_tiles=4)  # the V2 form, cluster syncs
        for wsc_pass in specialization_passes(config):
            wsc_pass.run(module.operation)
        check_protocol(module.operation, max_k_tiles=3 * config.num_stages + 2)
        text = str(module)
    assert re.search(r'"wsc.tma_load"\(.*\{multicast\}', text)
    # Two groups of 128 threads in each of the two blocks release every stage.
    assert "arrival_count = 512" in text
    assert len(re.findall(r'"wsc.mbarrier_arrive"\(.*\{every_cta', text)) >= 2


@pytest.mark.parametrize(
    "fields",
    [
        dict(wgmma_in_flight=1),
        dict(num_consumer_groups=2, producer="warpgroup", persistent=True, tma_store=True),
        dict(num_consumer_groups=2, producer="warpgroup", persistent=True, ping_pong=True),
        dict(
            num_consumer_groups=2,
            producer="warpgroup",
            persistent=True,
            coalesced_store=True,
            cluster_m=2,
        ),
    ],
)
def test_warp_release_protocol_is_clean(fields):
    """One release per consumer warp: the empty barriers count warps, and
    the check still finds every stage released once per fill."""
    # Ping-pong groups each hold the whole tile: 128x128 fits their registers.
    wide = fields.get("num_consumer_groups") and not fields.get("ping_pong")
    config = MatmulConfig(
        block_n=256 if wide else 128,
        num_stages=3,
        group_m=8,
        release="warp",
        **fields,
    )
    problem = MatmulProblem(out_dtype="f16" if config.staged_store else "f32")
    with make_context(), ir.Location.unknown():
        module = build_matmul(problem, config)
        for wsc_pass in specialization_passes(config):
            wsc_pass.run(module.operation)
        check_protocol(module.operation, max_k_tiles=3 * config.num_stages + 2)
        text = str(module)
    warps = (1 if config.ping_pong else config.num_consumer_groups) * 4 * config.cluster_m
    assert f"arrival_count = {warps} :" in text
    assert re.search(r"\{(every_cta, )?per_warp\}", text)


@pytest.mark.parametrize(
    "field, value, message",
    [
        ("num_stages", "3", "num_stages must be an int, got '3'"),
        ("block_n", True, "block_n must be an int, got True"),
        ("persistent", 1, "persistent must be a bool, got 1"),
        ("producer", None, "producer must be a str, got None"),
    ],
)
def test_config_fields_have_their_types(field, value, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        MatmulConfig(**{field: value})


@pytest.mark.parametrize(
    "field, value, message",
    [
        ("num_stages", 0, "num_stages must be 1 to 227, got 0"),
        ("num_stages", -2, "num_stages must be 1 to 227, got -2"),
        ("block_m", 96, "block_m must be a multiple of 64 (the WGMMA M) up to 256"),
        ("block_n", 260, "block_n must be a multiple of 8 up to 256 (the WGMMA N), got 260"),
        ("block_k", 256, "block_k must be a multiple of 16 (the WGMMA K) up to 128"),
        ("num_consumer_groups", 3, "num_consumer_groups must be 1 or 2 or 4, got 3"),
        ("producer", "thread", "producer must be 'warp' or 'warpgroup', got 'thread'"),
        ("wgmma_in_flight", 2, "wgmma_in_flight must be 0 or 1, got 2"),
        ("group_m", -1, "group_m must be 0 (no grouping) or more tile rows, got -1"),
    ],
)
def test_config_values_out_of_range_are_named_with_what_is_allowed(field, value, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        MatmulConfig(**{field: value})


def test_b_as_k_by_n_takes_the_tiles_of_b_as_n_by_k():
    """A "kn" B stage wider than 64 columns is copied as one TMA box per
    128-byte swizzle atom: no narrower tile is forced."""
    kn = MatmulProblem(b_layout="kn")
    for block_n in (64, 128, 256):
        MatmulConfig(block_n=block_n, num_consumer_groups=2, producer="warpgroup").check_problem(kn)


@pytest.mark.parametrize("b_layout", ["nk", "kn"])
def test_swapped_operands_read_b_as_the_wgmma_a_in_either_layout(tmp_path, b_layout):
    """C^T = op(B)^T A^T: B's stage is the WGMMA's A operand, read K-major
    from an [N, K] stage and M-major (trans-a 1) from a [K, N] one; the
    second consumer group reads the stage's second 64 rows or its second
    128-byte atom of columns. Sizes are named after C either way."""
    config = MatmulConfig(
        block_m=32,
        block_n=128,
        num_stages=4,
        num_consumer_groups=2,
        producer="warpgroup",
        swap_ab=True,
    )
    result = compile_matmul(
        40, 1336, 520, MatmulProblem("f16", "f32", b_layout), config, tmp_path / "x"
    )
    wgmmas = [
        " ".join(line.split()) for line in result.ptx.splitlines() if "wgmma.mma_async" in line
    ]
    trans_a = "1" if b_layout == "kn" else "0"
    assert wgmmas and all(
        "m64n32k16" in w and w.endswith(f"p, 1, 1, {trans_a}, 0;") for w in wgmmas
    )
    tensors = json.loads((tmp_path / "x" / "kernel.json").read_text())["tensors"]
    assert tensors["a"]["shape"] == ["m", "k"] and tensors["c"]["shape"] == ["m", "n"]
    assert tensors["b"]["shape"] == (["k", "n"] if b_layout == "kn" else ["n", "k"])


def test_release_options():
    with pytest.raises(ValueError, match="release must be 'thread' or 'warp', got 'lane'"):
        MatmulConfig(release="lane")


@needs_ptxas
def test_a_warp_release_kernel_compiles_clean():
    config = MatmulConfig(
        block_n=256,
        num_stages=3,
        num_consumer_groups=2,
        producer="warpgroup",
        wgmma_in_flight=1,
        group_m=8,
        persistent=True,
        tma_store=True,
        cluster_m=2,
        release="warp",
    )
    with make_context(), ir.Location.unknown():
        result = compile_module(
            build_matmul(MatmulProblem(out_dtype="f16"), config), specialization_passes(config)
        )
    assert result.ptxas.warnings == []
    assert result.ptxas.spill_stores == result.ptxas.spill_loads == 0
    # Each group releases in and after its K loop: the warp synchronizes first.
    assert result.ptx.count("bar.warp.sync") == 2 * 2


def test_cluster_options():
    with pytest.raises(ValueError, match="cluster_m must be 1 or 2"):
        MatmulConfig(cluster_m=4)
    with pytest.raises(ValueError, match="cluster_m = 2 with ping_pong"):
        MatmulConfig(
            num_consumer_groups=2,
            producer="warpgroup",
            persistent=True,
            ping_pong=True,
            cluster_m=2,
        )


@needs_ptxas
def test_a_cluster_kernel_compiles_clean_and_launches_in_whole_clusters(tmp_path):
    from wsc.runtime.artifact import load_artifact, tile_grid

    config = MatmulConfig(
        block_n=256,
        num_stages=3,
        num_consumer_groups=2,
        producer="warpgroup",
        wgmma_in_flight=1,
        group_m=8,
        persistent=True,
        tma_store=True,
        cluster_m=2,
    )
    # 1100 rows are 9 tile rows: the last pair's second block computes on zeros.
    result = compile_matmul(1100, 1336, 520, MatmulProblem(out_dtype="f16"), config, tmp_path)
    assert result.ptxas.warnings == []
    assert ".reqnctapercluster 2, 1, 1" in result.ptx
    assert "multicast::cluster" in result.ptx and "mapa.shared::cluster" in result.ptx
    artifact = load_artifact(tmp_path)
    assert artifact.cluster == 2 and artifact.tensor_maps["b"].box == (128, 64)
    assert (
        artifact.grid
        == (10 * 6, 1, 1)
        == tile_grid({"m": 1100, "n": 1336}, (("m", 128), ("n", 256)), 2, True)
    )
    assert artifact.launch_grid(132) == (60, 1, 1)
    assert artifact.launch_grid(7) == (6, 1, 1)  # whole clusters of the SMs there are


@pytest.mark.parametrize("layout", ["nk", "kn"])
@pytest.mark.parametrize(
    "fields",
    [
        dict(block_m=16, block_n=64, cluster_n=2),
        dict(block_m=72, block_n=128, num_consumer_groups=2, producer="warpgroup", cluster_n=3),
        dict(block_m=32, block_n=128, num_consumer_groups=2, producer="warpgroup", cluster_n=4),
        dict(
            block_m=128,
            block_n=64,
            num_consumer_groups=2,
            producer="warpgroup",
            cluster_n=2,
            swap_ab=False,
            tma_store=True,
        ),
    ],
)
def test_cluster_along_n_protocol_is_clean(layout, fields):
    """Clusters along N: the blocks share A's tile (with swap_ab the WGMMA's
    B operand), each copying its slice into every block's stages, and every
    release reaches every block."""
    config = MatmulConfig(**{"num_stages": 4, "wgmma_in_flight": 1, "swap_ab": True, **fields})
    problem = MatmulProblem(out_dtype="f16", b_layout=layout)
    with make_context(), ir.Location.unknown():
        module = build_matmul(problem, config)
        check_protocol(module.operation, max_k_tiles=4)
        for wsc_pass in specialization_passes(config):
            wsc_pass.run(module.operation)
        check_protocol(module.operation, max_k_tiles=3 * config.num_stages + 2)
        text = str(module)
    copies = [
        (copy.group(1), "{multicast}" in copy.group(0))
        for copy in re.finditer(r'"wsc.tma_load"\((%arg\d+),.*', text)
    ]
    # A's copies (%arg0) are multicast, B's (%arg1) are not.
    assert {tensor for tensor, _ in copies} == {"%arg0", "%arg1"}
    assert all(multicast == (tensor == "%arg0") for tensor, multicast in copies)
    threads = config.num_consumer_groups * 128 * config.cluster_n
    assert f"arrival_count = {threads} :" in text
    assert re.search(r'"wsc.mbarrier_arrive"\(.*\{every_cta', text)


def test_cluster_along_n_options():
    with pytest.raises(ValueError, match="cluster_n must be 1 to 4, got 8"):
        MatmulConfig(block_m=64, block_n=64, swap_ab=True, cluster_n=8)
    takes = "takes neither persistent = True, split_k > 1 nor cluster_m = 2"
    with pytest.raises(ValueError, match=takes):
        MatmulConfig(block_m=16, block_n=64, swap_ab=True, cluster_n=2, split_k=2)
    with pytest.raises(ValueError, match=takes):
        MatmulConfig(cluster_n=2, persistent=True, tma_store=True)
    with pytest.raises(ValueError, match=takes):
        MatmulConfig(cluster_n=2, cluster_m=2)
    with pytest.raises(ValueError, match="A's tile of 16 rows .* a multiple of 32 rows"):
        MatmulConfig(block_m=16, block_n=64, swap_ab=True, cluster_n=4)


@needs_ptxas
def test_a_swapped_cluster_kernel_counts_tile_columns_along_x(tmp_path):
    from wsc.runtime.artifact import load_artifact

    config = MatmulConfig(
        block_m=72,
        block_n=128,
        num_stages=8,
        num_consumer_groups=2,
        producer="warpgroup",
        wgmma_in_flight=1,
        swap_ab=True,
        cluster_n=3,
    )
    # 5000 columns are 40 tile columns, 42 in whole clusters of 3; 200 rows 3 tile rows.
    result = compile_matmul(200, 5000, 7000, MatmulProblem(out_dtype="f16"), config, tmp_path)
    assert result.ptxas.warnings == []
    assert result.ptxas.spill_stores == result.ptxas.spill_loads == 0
    assert ".reqnctapercluster 3, 1, 1" in result.ptx and "multicast::cluster" in result.ptx
    artifact = load_artifact(tmp_path)
    assert artifact.cluster == 3 and artifact.tensor_maps["a"].box == (24, 64)
    assert artifact.grid == (42, 3, 1) and artifact.launch_grid(132) == (42, 3, 1)


def test_a_fused_epilogue_reads_its_tensors_in_every_schedule(tmp_path):
    """act(A B^T + bias) + residual: the bias and the residual are kernel
    arguments d and e, whose sizes are C's, for a plain, a swapped (C^T)
    and a split-K tile, and the artifact's config names the epilogue for
    the matmul check."""
    problem = MatmulProblem("f16", "f16", "nk", bias=True, activation="silu", residual=True)
    assert problem.epilogue() == {"bias": "d", "residual": "e", "activation": "silu"}
    for config in (
        MatmulConfig(tma_store=True),
        MatmulConfig(block_m=16, block_n=64, num_stages=8, swap_ab=True, split_k=2),
    ):
        compile_matmul(100, 1336, 520, problem, config, tmp_path / "x")
        meta = json.loads((tmp_path / "x" / "kernel.json").read_text())
        assert meta["config"]["epilogue"] == problem.epilogue()
        assert meta["tensors"]["d"]["shape"] == ["n"] and meta["tensors"]["d"]["role"] == "input"
        assert meta["tensors"]["e"]["shape"] == ["m", "n"]


def test_an_epilogue_is_checked_when_the_problem_is_made():
    with pytest.raises(ValueError, match="activation must be one of relu, gelu, gelu_tanh, silu"):
        MatmulProblem(activation="tanh")
    assert MatmulProblem(residual=True).epilogue_tensors() == {"residual": "d"}
