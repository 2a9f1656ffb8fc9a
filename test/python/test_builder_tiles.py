"""The kernel builder's persistent kernels: a tile loop (kb.tile_range) that
carries the ring position from tile to tile, its ring loop (kb.range(...,
ring=tiles)), the launch's grid (kb.grid_dim) and tile order arithmetic
(minimum), with the mistakes they catch located at the user's line."""

from pathlib import Path

import pytest

from wsc.builder import (
    CONSUMER_INITIAL_PHASE,
    PRODUCER_INITIAL_PHASE,
    BuildError,
    BuildTypeError,
    KernelBuilder,
    cdiv,
    f16,
    f32,
    minimum,
)

#: A kernel built to show some ops, which stores no result (a BuildWarning).
writes_nothing = pytest.mark.filterwarnings("ignore::wsc.builder.BuildWarning")


def line_of(marker: str) -> int:
    """The line of this file that carries `marker` (a comment on the offending call)."""
    lines = Path(__file__).read_text().splitlines()
    return next(
        number
        for number, text in enumerate(lines, 1)
        if text.rstrip().endswith(marker) and "line_of(" not in text
    )


def build_error(build, kind=BuildError) -> BuildError:
    with pytest.raises(kind) as caught:
        build()
    assert caught.value.where is not None and caught.value.where.filename == __file__
    return caught.value


def persistent_v2(stages: int = 2, block: int = 64):
    """The V2 form of a persistent matmul: each block walks the tiles
    blockIdx.x, blockIdx.x + gridDim.x, ... and each tile's K loop continues
    the ring where the previous tile's stopped."""
    kb = KernelBuilder("persistent", num_warps=4, grid=[("m", block), ("n", block)])
    a, b, c = kb.global_tensor(f16), kb.global_tensor(f16), kb.global_tensor(f32)
    k_tiles = cdiv(a.shape[1], block)
    sa = kb.shared_tensor(f16, [stages, block, block])
    sb = kb.shared_tensor(f16, [stages, block, block])
    full = kb.mbarrier.alloc(arrival_count=1, num_barriers=stages)
    kb.sync()
    tiles_m, tiles_n = cdiv(a.shape[0], block), cdiv(c.shape[1], block)
    for tiles in kb.tile_range(
        kb.block_idx.x,
        tiles_m * tiles_n,
        kb.grid_dim.x,
        stages=stages,
        phase=CONSUMER_INITIAL_PHASE,
    ):
        row, col = tiles.tile % tiles_m * block, tiles.tile // tiles_m * block
        acc = kb.register_tensor(f32, [block, block])
        for it in kb.range(0, k_tiles, 1, stages=stages, ring=tiles):
            offset_k = it.index * block
            with kb.single_thread():
                kb.mbarrier.arrive_and_expect_tx(
                    full[it.stage], sa[it.stage].nbytes + sb[it.stage].nbytes
                )
                kb.tma.global_to_shared(a, sa[it.stage], [row, offset_k], full[it.stage])
                kb.tma.global_to_shared(b, sb[it.stage], [col, offset_k], full[it.stage])
            kb.mbarrier.wait(full[it.stage], phase=it.phase)
            kb.wgmma.fence()
            kb.wgmma.mma(sa[it.stage], sb[it.stage].transpose(), acc)
            kb.wgmma.commit_group()
            kb.wgmma.wait_group(0)
            kb.sync()
        kb.store_global(c, acc, [row, col])
    return kb.finish()


def test_a_tile_loop_carries_the_ring_position_of_its_ring_loop():
    kernel = persistent_v2()
    text = str(kernel)
    assert "gpu.grid_dim  x" in text
    # The K loop starts at the tile loop's position and the tile loop yields
    # where the K loop stopped.
    tile_loop = next(line for line in text.splitlines() if "scf.for" in line)
    assert "iter_args" in tile_loop and "-> (index, i1)" in tile_loop
    position = tile_loop.split("iter_args(")[1].split(" = ")[0]
    k_loop = [line for line in text.splitlines() if "scf.for" in line][1]
    assert f"= {position}," in k_loop
    # A step of 1 counts trips without a division.
    assert "arith.ceildivui %dim, %c64" in text and text.count("arith.ceildivui") == 3


@pytest.mark.parametrize("stages", [1, 2, 3])
def test_a_persistent_kernel_specializes_into_a_clean_protocol(stages):
    from wsc.protocol import check_protocol

    kernel = persistent_v2(stages).warp_specialize(num_stages=stages)
    with kernel.context:
        check_protocol(kernel.module.operation, max_k_tiles=3 * stages + 2)


def test_the_ring_position_after_the_tile_loop_is_its_result():
    kb = KernelBuilder("k")
    a = kb.global_tensor(f16)
    for tiles in kb.tile_range(0, a.shape[0], 1, stages=2, phase=PRODUCER_INITIAL_PHASE):
        for _ in kb.range(0, a.shape[1], 64, stages=2, ring=tiles):
            pass
    assert tiles.stage.value == tiles.loop.results[0]
    assert tiles.phase.value == tiles.loop.results[1]


def test_minimum_of_ints_is_an_int_and_of_run_time_values_an_op():
    assert minimum(3, 5) == 3
    kb = KernelBuilder("k")
    a = kb.global_tensor(f16)
    rows = minimum(a.shape[0], 8)
    assert rows.value.owner.name == "arith.minui"
    assert minimum(8, a.shape[0]).value.owner.name == "arith.minui"


def test_minimum_needs_index_values():
    error = build_error(lambda: minimum(2.5, 1), BuildTypeError)  # error: a float
    assert error.where.line == line_of("# error: a float")
    assert "minimum: expected ints or run-time index values" in str(error)


# Mistakes ------------------------------------------------------------------------------


def test_a_ring_loop_continues_a_tile_loop_directly_inside_it():
    def build():
        kb = KernelBuilder("k")
        a = kb.global_tensor(f16)
        for tiles in kb.tile_range(0, a.shape[0], 1, stages=2, phase=CONSUMER_INITIAL_PHASE):
            with kb.if_(tiles.tile < 4):
                for _ in kb.range(0, 64, 64, stages=2, ring=tiles):  # error: nested
                    pass

    error = build_error(build)
    assert error.where.line == line_of("# error: nested")
    assert "directly inside its body" in str(error)


def test_a_tile_loop_is_continued_once():
    def build():
        kb = KernelBuilder("k")
        for tiles in kb.tile_range(0, 8, 1, stages=2, phase=CONSUMER_INITIAL_PHASE):
            for _ in kb.range(0, 64, 64, stages=2, ring=tiles):
                pass
            for _ in kb.range(0, 64, 64, stages=2, ring=tiles):  # error: twice
                pass

    error = build_error(build)
    assert error.where.line == line_of("# error: twice")
    assert "is already continued by the ring loop at" in str(error)


def test_a_tile_loop_without_a_ring_loop_names_the_tile_loop():
    def build():
        kb = KernelBuilder("k")
        for _ in kb.tile_range(0, 8, 1, stages=2, phase=CONSUMER_INITIAL_PHASE):  # error: none
            kb.sync()

    error = build_error(build)
    assert error.where.line == line_of("# error: none")
    assert "no ring loop of its body continues it" in str(error)


@pytest.mark.parametrize(
    "options, message",
    [
        ({"stages": 3}, "stages=3 differs from the 2 stages of the tile loop"),
        ({"stages": 2, "phase": CONSUMER_INITIAL_PHASE}, "leave out phase="),
        ({"stages": 2, "unroll": 2}, "--unroll-ring-buffer cannot unroll"),
    ],
)
def test_a_continuing_ring_loop_takes_the_tile_loops_ring(options, message):
    def build():
        kb = KernelBuilder("k")
        for tiles in kb.tile_range(0, 8, 1, stages=2, phase=CONSUMER_INITIAL_PHASE):
            for _ in kb.range(0, 64, 64, ring=tiles, **options):  # error: ring
                pass

    error = build_error(build)
    assert error.where.line == line_of("# error: ring")
    assert message in str(error)


def test_ring_must_be_a_tile_loop():
    def build():
        kb = KernelBuilder("k")
        for it in kb.range(0, 64, 64, stages=2, phase=CONSUMER_INITIAL_PHASE):
            for _ in kb.range(0, 64, 64, stages=2, ring=it):  # error: not tiles
                pass

    error = build_error(build, BuildTypeError)
    assert error.where.line == line_of("# error: not tiles")
    assert "expected a tile loop" in str(error)


def test_a_continuing_ring_loop_has_no_drain():
    def build():
        kb = KernelBuilder("k")
        empty = kb.mbarrier.alloc(arrival_count=1, num_barriers=2)
        kb.sync()
        for tiles in kb.tile_range(0, 8, 1, stages=2, phase=PRODUCER_INITIAL_PHASE):
            for it in kb.range(0, 64, 64, stages=2, ring=tiles):
                kb.mbarrier.wait(empty[it.stage], phase=it.phase)
            kb.drain(empty, after=it)  # error: drain

    error = build_error(build)
    assert error.where.line == line_of("# error: drain")
    assert "continues a tile loop" in str(error)


def test_tile_exists_only_inside_the_tile_loop():
    def build():
        kb = KernelBuilder("k")
        for tiles in kb.tile_range(0, 8, 1, stages=2, phase=CONSUMER_INITIAL_PHASE):
            for _ in kb.range(0, 64, 64, stages=2, ring=tiles):
                pass
        return tiles.tile  # error: after

    error = build_error(build)
    assert error.where.line == line_of("# error: after")
    assert "exists only inside its body" in str(error)


@pytest.mark.parametrize(
    "options, kind, message",
    [
        ({"step": 0}, BuildError, "step must be a positive int or a run-time value"),
        ({"stages": 0}, BuildError, "stages must be a positive int"),
        ({"phase": 1}, BuildTypeError, "phase must be PRODUCER_INITIAL_PHASE"),
    ],
)
def test_tile_range_checks_its_arguments(options, kind, message):
    def build():
        kb = KernelBuilder("k")
        arguments = {"step": 1, "stages": 2, "phase": CONSUMER_INITIAL_PHASE, **options}
        step = arguments.pop("step")
        for _ in kb.tile_range(0, 8, step, **arguments):  # error: arguments
            pass

    error = build_error(build, kind)
    assert error.where.line == line_of("# error: arguments")
    assert message in str(error)


@writes_nothing
def test_finish_can_leave_the_verifier_to_the_compile():
    """A kernel over the shared-memory budget: finish() refuses it where the
    tensor was allocated; finish(verify=False) returns it and its compile
    fails instead."""
    from wsc.compiler import CompileError

    def build(verify: bool):
        kb = KernelBuilder("k")
        kb.shared_tensor(f16, [8, 256, 64])  # error: too big
        return kb.finish(verify=verify)

    error = build_error(lambda: build(True))
    assert error.where.line == line_of("# error: too big")
    assert "bytes of shared memory" in str(error)
    with pytest.raises(CompileError, match="227 KB"):
        build(False).compile()
