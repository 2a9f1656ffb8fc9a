"""Register tiles read from and written back to ring stages (kb.load_shared,
kb.store_shared at a block), reductions down columns over groups of rows
(kb.col_max, kb.col_sum), and the launch shape they serve: persistent
kernels with several blocks per SM (wsc.kernels.softmax)."""

import re

import pytest

from wsc.builder import (
    CONSUMER_INITIAL_PHASE,
    BuildError,
    BuildTypeError,
    KernelBuilder,
    bf16,
    cdiv,
    f16,
    f32,
)
from wsc.codegen import find_ptxas
from wsc.codegen.fragments import AccumulatorFragment
from wsc.compiler import CompileError
from wsc.kernels.softmax.build import softmax, softmax_rows
from wsc.kernels.softmax.schedule import SCHEDULES, softmax_view
from wsc.runtime import load_artifact

needs_ptxas = pytest.mark.skipif(find_ptxas() is None, reason="needs ptxas")

#: A kernel built to show some ops, which stores no result (a BuildWarning).
writes_nothing = pytest.mark.filterwarnings("ignore::wsc.builder.BuildWarning")


def stage_kernel():
    """A builder with a two-stage [64, 256] bf16 ring, for the ops below."""
    kb = KernelBuilder("stages", num_warps=4, grid=[("m", 64)])
    ring = kb.shared_tensor(bf16, [2, 64, 256])
    return kb, ring


@writes_nothing
def test_a_stage_is_read_whole_or_by_blocks_and_written_back_in_place():
    kb, ring = stage_kernel()
    whole = kb.load_shared(ring[0][0:64], col=0, cols=128)
    rest = kb.load_shared(ring[0], col=128)
    assert whole.shape == rest.shape == (64, 128) and whole.dtype == f32
    kb.store_shared(ring[1], kb.cast(whole + rest, bf16), col=128)
    text = str(kb.finish())
    assert '"wsc.load_shared"(%0, %c0) {col = 0 : i32, row = 0 : i32}' in text
    assert '"wsc.load_shared"(%0, %c0) {col = 128 : i32, row = 0 : i32}' in text
    assert re.search(
        r"\"wsc.store_shared\"\(%\d+, %0, %c1\) {col = 128 : i32, row = 0 : i32}", text
    )


@writes_nothing
def test_a_whole_stage_is_read_and_written_without_offsets():
    kb = KernelBuilder("whole", num_warps=4, grid=[("m", 64)])
    ring = kb.shared_tensor(f16, [1, 128, 64])
    tile = kb.load_shared(ring[0])
    assert tile.shape == (128, 64)
    kb.store_shared(ring[0], kb.cast(tile, f16))
    text = str(kb.finish())
    assert "row = " not in text and text.count('"wsc.load_shared"(%0, %c0) :') == 1


@pytest.mark.parametrize(
    "read, kind, message",
    [
        (
            lambda kb, ring: kb.load_shared(ring[0], col=4, cols=64),
            BuildError,
            r"load_shared: columns \[4, 68\) are not a block of the stage tile's 256 columns",
        ),
        (
            lambda kb, ring: kb.load_shared(ring[0], col=192, cols=128),
            BuildError,
            r"columns \[192, 320\) are not a block",
        ),
        (
            lambda kb, ring: kb.load_shared(ring[0], col="0"),
            BuildTypeError,
            "load_shared: col must be an int, got '0'",
        ),
        (
            lambda kb, ring: kb.load_shared(ring[0].transpose(), col=8, cols=8),
            BuildError,
            r"load_shared: a transposed stage tile is read whole \(transpose rows of it",
        ),
        (
            lambda kb, ring: kb.load_shared(ring),
            BuildTypeError,
            "load_shared src: expected a stage of a shared tensor",
        ),
    ],
)
def test_a_stage_read_is_checked_where_it_is_written(read, kind, message):
    kb, ring = stage_kernel()
    with pytest.raises(kind, match=message) as caught:
        read(kb, ring)
    assert caught.value.where.filename == __file__


@writes_nothing
def test_a_stage_read_transposed_is_its_block_s_transpose():
    """A one-row stage (a K tile's scales, copied by TMA) read transposed is a
    row vector of the tile's rows; rows of a stage read transposed are the
    block at their first row."""
    kb = KernelBuilder("transposed", num_warps=4, grid=[("m", 64)])
    scales = kb.shared_tensor(f32, [2, 1, 128])
    ring = kb.shared_tensor(f16, [2, 128, 64])
    per_row = kb.load_shared(scales[1].transpose())
    block = kb.load_shared(ring[0][64:128].transpose())
    assert per_row.shape == (128, 1) and block.shape == (64, 64)
    text = str(kb.finish())
    assert '"wsc.load_shared"(%0, %c1) {transpose} : (memref<2x1x128xf32, 3>, index)' in text
    assert '"wsc.load_shared"(%1, %c0) {col = 0 : i32, row = 64 : i32, transpose}' in text


def test_a_wide_stage_is_read_in_blocks_of_at_most_256_columns():
    kb = KernelBuilder("wide", num_warps=4, grid=[("m", 64)])
    ring = kb.shared_tensor(bf16, [1, 64, 512])
    with pytest.raises(BuildError, match=r"load_shared: shape must be .* got \[64, 512\]"):
        kb.load_shared(ring[0])
    assert kb.load_shared(ring[0], col=256, cols=256).shape == (64, 256)


def test_a_block_written_back_takes_the_rows_of_its_stage_tile():
    kb, ring = stage_kernel()
    tile = kb.cast(kb.register_tensor(f32, [128, 64]), bf16)
    with pytest.raises(BuildError, match=r"store_shared: the tile is \[128, 64\] but dst has 64"):
        kb.store_shared(ring[0], tile)
    with pytest.raises(BuildTypeError, match="the tile is f32 but dst is bf16"):
        kb.store_shared(ring[0], kb.register_tensor(f32, [64, 64]), col=64)


def test_columns_reduce_over_groups_of_the_rows_of_one_to_four_warps():
    kb = KernelBuilder("groups", num_warps=4, grid=[("m", 64)])
    out = kb.global_tensor(f32)
    tile = kb.register_tensor(f32, [64, 64])
    row_sum = kb.col_sum(kb.row_sum(tile), rows=16)
    pair_max = kb.col_max(tile, rows=2)
    assert row_sum.shape == (64, 1) and pair_max.shape == (64, 64)
    kb.store_global(out, pair_max * row_sum, [0, 0])
    text = str(kb.finish())
    assert '{kind = "sum", rows = 16 : i32}' in text and '{kind = "max", rows = 2 : i32}' in text
    other = KernelBuilder("k")
    with pytest.raises(BuildError, match="col_sum: rows must be one of 1, 2, 4, 8, 16, 32, 64"):
        other.col_sum(other.register_tensor(f32, [64, 1]), rows=128)
    with pytest.raises(BuildError, match=r"col_max: rows=32 spans several warps.* got a 64x64"):
        other.col_max(other.register_tensor(f32, [64, 64]), rows=32)
    rows_of_four_warps = other.col_max(other.register_tensor(f32, [128, 1]), rows=64)
    assert rows_of_four_warps.shape == (128, 1)
    with other.single_thread():
        with pytest.raises(BuildError, match=r"rows=32 syncs the warps .* not one \(the single_"):
            other.col_sum(other.register_tensor(f32, [64, 1]), rows=32)


def test_a_group_of_rows_is_one_warps_lanes_and_halves():
    """What wsc.tile_col_reduce's shuffles assume: the rows of a group of up
    to 16 (16-aligned) are held by one warp, by lanes that differ only in
    bits 2-4 (lane / 4) and, past 8 rows, in the register half h."""
    fragment = AccumulatorFragment(128, 16)
    for group in (2, 4, 8, 16):
        for first in range(0, 128, group):
            owners = [fragment.owner(row, 3) for row in range(first, first + group)]
            threads = {thread for thread, _, _ in owners}
            assert len({t // 32 for t in threads}) == 1  # one warp
            assert len({t % 4 for t in threads}) == 1  # one column pair of lanes
            lane_bits = {t % 32 // 4 for t in threads}
            assert len(lane_bits) == min(group, 8)
            halves = {index // 2 % 2 for _, _, index in owners}
            assert len(halves) == (2 if group == 16 else 1)


@pytest.mark.parametrize(
    "options, message",
    [
        ({"blocks_per_sm": 0}, r"blocks_per_sm must be an int in \[1, 32\], got 0"),
        ({"blocks_per_sm": True}, "blocks_per_sm must be an int"),
        ({"persistent": 1}, "persistent must be a bool, got 1"),
        # Each once reached the artifact (or a bare unpacking error) unrefused.
        ({"grid": "m"}, r"grid must be up to 3 \(size name, positive tile\) pairs, .* got 'm'"),
        ({"grid": [("m", 0)]}, r"grid must be up to 3 .* got \[\('m', 0\)\]"),
        ({"grid": [(128, "m")]}, "grid must be up to 3"),
        ({"check": "nonsense"}, r"check='nonsense': no check of that name is registered"),
    ],
)
def test_launch_options_are_checked(options, message):
    with pytest.raises((BuildError, BuildTypeError), match=message):
        KernelBuilder("k", **options)


def test_the_softmax_reference_is_a_softmax_of_each_row_of_x():
    import numpy as np

    x = np.random.default_rng(0).standard_normal((3, 16 * 8))
    view = x.reshape(3 * 16, 8)
    expected = np.exp(x - x.max(axis=1, keepdims=True))
    expected /= expected.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(softmax_rows(view, 16).reshape(3, -1), expected, rtol=1e-12)
    for row_split in (32, 64):
        got = softmax_rows(x.reshape(-1, 128 // row_split), row_split)
        np.testing.assert_allclose(got.reshape(3, -1), expected, rtol=1e-12)


@needs_ptxas
def test_the_softmax_kernel_compiles_clean_in_both_forms_for_every_row_length():
    for row_length, measured in SCHEDULES.items():
        forms = [False] + [True] * measured.resident
        reads = {}
        for resident in forms:
            compiled = softmax(row_length, resident=resident).compile()
            report = compiled.result.ptxas
            assert report.spill_stores == report.spill_loads == 0, (row_length, resident)
            assert f".minnctapersm {measured.blocks_per_sm}" in compiled.ptx
            reads[resident] = compiled.ptx.count("ld.volatile.shared")
        if measured.resident:
            # The online form reads each element of a stage twice, the resident once.
            assert reads[False] == 2 * reads[True], (row_length, reads)


@needs_ptxas
@pytest.mark.parametrize("row_split", [32, 64])
@pytest.mark.parametrize("resident", [False, True])
def test_rows_of_8192_spread_over_several_warps_compile_clean(row_split, resident):
    compiled = softmax(
        8192,
        num_stages=2,
        blocks_per_sm=2,
        resident=resident,
        row_split=row_split,
        release_on_read=False,
    ).compile()
    report = compiled.result.ptxas
    assert report.spill_stores == report.spill_loads == 0
    # Smaller stages: 64 / row_split rows of 8192 bf16 values each.
    layout = compiled.result.info.shared_layout
    assert layout["buffers"][0]["stage_bytes"] == 64 // row_split * 8192 * 2
    # One f32 per warp of the block for the warps' max and sum.
    assert layout["exchange"]["bytes"] == 5 * 4
    # A max and a sum per stage, each between two syncs of the consumers
    # (bar.sync 1), beside the one before the TMA store.
    assert compiled.ptx.count("bar.sync \t1, 128;") == 5


def test_a_row_split_must_divide_the_row():
    with pytest.raises(ValueError, match="row_split=64 for rows of 512 elements"):
        softmax(512, row_split=64)
    with pytest.raises(ValueError, match="row_split=24 .* one of 16, 32, 64"):
        softmax(1024, row_split=24)


@needs_ptxas
def test_a_resident_tile_too_large_for_the_registers_is_refused():
    with pytest.raises(
        CompileError, match="ptxas spilled registers .* at 128 registers per thread"
    ):
        softmax(
            4096, num_stages=2, blocks_per_sm=3, resident=True, row_split=16, release_on_read=False
        ).compile()


@needs_ptxas
def test_a_persistent_artifact_launches_its_blocks_per_sm(tmp_path):
    compiled = softmax(1024, blocks_per_sm=3).compile()
    artifact = load_artifact(compiled.write_artifact(tmp_path, **softmax_view(999, 1024)))
    assert artifact.persistent and artifact.blocks_per_sm == 3
    # One tensor's sizes: the stages copied in by TMA are copied out of the
    # same ring, so y has x's shape.
    assert {name: tensor.shape for name, tensor in artifact.tensors.items()} == {
        "a": (999 * 16, 64),
        "b": (999 * 16, 64),
    }
    assert artifact.grid == (-(-999 * 16 // 64), 1, 1)
    assert artifact.launch_grid(132) == (250, 1, 1)  # fewer work items than 3 x 132
    assert artifact.resized(a_dim0=65536 * 16, a_dim1=64).launch_grid(132) == (396, 1, 1)
    assert artifact.config["reference_arguments"] == {"row_split": 16}


@needs_ptxas
def test_a_stage_released_on_read_is_handed_back_before_the_math(tmp_path):
    assert SCHEDULES[4096].release_on_read
    compiled = softmax(4096).compile()
    report = compiled.result.ptxas
    assert report.spill_stores == report.spill_loads == 0
    # The result goes out through a tile of its own, beside the ring...
    buffers = compiled.result.info.shared_layout["buffers"]
    assert [buffer["stage_bytes"] for buffer in buffers] == [64 * 128 * 2] * 2
    # ... so the consumers arrive on the empty barrier right after their
    # reads of the stage, before the first exp2; a TMA store's read of the
    # tile is awaited only before the next result is written to it.
    ptx = compiled.ptx
    last_read = ptx.rindex("ld.volatile.shared")
    assert ptx.index("mbarrier.arrive", last_read) < ptx.index("ex2.approx", last_read)
    assert ptx.count("cp.async.bulk.wait_group.read") == 2  # the loop's and the kernel's end
    # y is written out of a ring TMA never loads, yet it has x's sizes.
    view = softmax_view(999, 4096)
    artifact = load_artifact(compiled.write_artifact(tmp_path, **view))
    assert {tensor.shape for tensor in artifact.tensors.values()} == {tuple(view.values())}


def _rewriting_kernel(summed: bool, second_source: bool):
    """y's tile written from x's through a ring of its own: x's tile as it is
    (plus w's fixed tile, `second_source`), or the sum of x's tiles along its
    row (`summed`)."""
    kb = KernelBuilder("rewrite", grid=[("a_dim0", 64)])
    x, y = kb.global_tensor(f16), kb.global_tensor(f16)
    w = kb.global_tensor(f16) if second_source else None
    ring, other, out = (kb.shared_tensor(f16, [1, 64, 64]) for _ in range(3))
    full = kb.mbarrier.alloc(arrival_count=1, num_barriers=1)
    kb.sync()
    row = kb.block_idx.x * 64
    acc = kb.register_tensor(f32, [64, 64])
    tiles = cdiv(x.shape[1], 64) if summed else 1
    for it in kb.range(0, tiles, 1, stages=1, phase=CONSUMER_INITIAL_PHASE):
        with kb.single_thread():
            nbytes = ring[0].nbytes + (other[0].nbytes if w is not None else 0)
            kb.mbarrier.arrive_and_expect_tx(full[0], nbytes)
            kb.tma.global_to_shared(x, ring[0], [row, it.offset * 64], mbarrier=full[0])
            if w is not None:
                kb.tma.global_to_shared(w, other[0], [0, 0], mbarrier=full[0])
        kb.mbarrier.wait(full[0], phase=it.phase)
        tile = kb.load_shared(ring[0])
        if w is not None:
            tile = tile + kb.load_shared(other[0])
        if summed:
            kb.assign(acc, acc + tile)
        else:
            kb.store_shared(out[0], kb.cast(tile, f16))
            kb.fence_proxy_async()
        kb.sync()
    if summed:
        kb.store_shared(out[0], kb.cast(acc, f16))
        kb.fence_proxy_async()
        kb.sync()
    with kb.single_thread():
        kb.tma.shared_to_global(out[0], y, [row, 0])
    return kb.finish().compile().result.info.dims


@needs_ptxas
def test_a_tensor_written_from_anothers_tiles_alone_takes_its_sizes():
    assert _rewriting_kernel(summed=False, second_source=False) == {
        "a_dim0": [["a", 0], ["b", 0]],
        "a_dim1": [["a", 1], ["b", 1]],
    }
    # A sum of x's tiles along its rows, or a tile of x plus one of w, is
    # not x's tile rewritten: y keeps sizes of its own.
    for summed, second_source in ((True, False), (False, True)):
        dims = _rewriting_kernel(summed, second_source)
        assert dims["b_dim1"] == [["b", 1]], (summed, second_source, dims)


def test_only_the_resident_form_releases_a_stage_on_read():
    with pytest.raises(ValueError, match="release_on_read needs the resident form"):
        softmax(4096, resident=False, release_on_read=True)


@needs_ptxas
def test_blocks_per_sm_must_fit_in_an_sms_shared_memory():
    with pytest.raises(CompileError, match="2 blocks per SM .* more than an SM's 233472"):
        softmax(8192, num_stages=2, blocks_per_sm=2, row_split=16).compile()


def test_the_softmax_kernel_names_its_row_length_limits():
    with pytest.raises(
        ValueError, match="rows of 1000 elements; the kernel takes multiples of 256"
    ):
        softmax(1000)
    with pytest.raises(ValueError, match="dtype 'f32'; the kernel takes bf16, f16"):
        softmax(1024, "f32")
    with pytest.raises(ValueError, match=r"block_cols=40 must divide the view's 192 columns"):
        softmax(3072, block_cols=40)
    for row_split in (16, 32):
        assert re.search(f"rows = {row_split} : i32", str(softmax(2048, row_split=row_split)))
