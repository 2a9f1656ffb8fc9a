"""The row softmax kernel, warp-specialized: a producer warp streams rows through a ring, a consumer warpgroup reduces them.

Y[R, C] = softmax(X[R, C]) along each row; bf16 or f16 in and out, f32 math;
C a multiple of 256 up to 8192 fixed when the kernel is built (`row_length`),
R any. The kernel sees X and Y as [P R, C/P] (a free view, `softmax_view`),
P = `row_split`: row r of X is rows P r .. P r + P - 1 of the view. With
P = 16 those are the 16 rows one warp holds of a 64-row register tile
(wsc.codegen.fragments), so a row's max and sum are one warp's shuffles:
kb.row_max, then kb.col_max over groups of 16 rows. With P = 32 or 64 a row
spans two or four warps, which combine their max and sum once per stage
through shared memory (kb.col_max over 32 or 64 rows), and a stage holds
fewer rows: for long rows, more stages fit. X is read from HBM once.

    persistent block b, 5 warps: the consumer warpgroup 0-3, the producer warp 4
      ring of S stages, each a [64, W] tile of the view (64 / P rows of X), W = C/P
      full[S]  = mbarrier(arrivals = 1)    # "stage s has landed"
      empty[S] = mbarrier(arrivals = 128)  # "stage s may be refilled"

      producer                              consumer
      for t = b, b + grid, ...:             for t = b, b + grid, ...:
        wait(empty[s])                        wait(full[s])
        one thread: expect_tx(full[s])        resident form (W up to 256):
                    TMA X[64t:] -> s            x = s log2(e)                # all in registers
      drain                                     e = 2^(x - rowmax(x))        # over the P rows
                                                s <- round(e / rowsum(e))    # in place
                                              online form (any row length):
                                                for each block x of <= 128 columns of s:
                                                  x = x log2(e)              # per row of the view:
                                                  m' = max(m, rowmax(x))
                                                  l = l 2^(m - m') + rowsum(2^(x - m')); m = m'
                                                over a row of X's P rows (lanes, then warps):
                                                  m' = max(m); l = sum(l 2^(m - m')); m = m'
                                                for each block x of s:
                                                  s <- round(2^(x log2(e) - m - log2(l)))
                                              fence; sync (the warpgroup)
                                              one thread: TMA s -> Y[64t:]; wait until read
                                              arrive(empty[s])

With `release_on_read` (resident form only) the consumers hand a stage back
as soon as they hold it in registers, so that the producer refills it during
their math and the store, and the result goes out through a tile of its own:

      consumer: wait(full[s]); x = s log2(e); arrive(empty[s])
                e = ... as above
                one thread: wait until the last TMA store has read out; sync
                out <- round(e / rowsum(e)); fence; sync
                one thread: TMA out -> Y[64t:]
"""

from __future__ import annotations

import functools
import operator

import numpy as np

from wsc.builder import (
    CONSUMER_INITIAL_PHASE,
    PRODUCER_INITIAL_PHASE,
    KernelBuilder,
    bf16,
    cdiv,
    f16,
)

from .schedule import TILE_ROWS, check_row_length, check_row_split, schedule

LOG2E = 1.4426950408889634
#: The builder's element types by wsc name.
_ELEMENT_TYPES = {"bf16": bf16, "f16": f16}


def softmax_rows(a, row_split):
    """The float64 reference on the view: a softmax over each group of
    `row_split` rows."""
    rows = a.reshape(-1, row_split * a.shape[1])
    e = np.exp(rows - rows.max(axis=1, keepdims=True))
    return (e / e.sum(axis=1, keepdims=True)).reshape(a.shape)


def softmax(
    row_length=1024,
    dtype="bf16",
    num_stages=None,
    block_cols=None,
    blocks_per_sm=None,
    resident=None,
    row_split=None,
    release_on_read=None,
):
    """The kernel for rows of `row_length` elements of `dtype` ("bf16" or
    "f16"), a ring of `num_stages` per block; blocks of `block_cols` columns
    of the view are read into registers at a time; `blocks_per_sm` blocks
    share each SM (their rings and registers), so that one's copies and
    barriers overlap another's math; `resident` keeps a stage's tile in
    registers between its one read and its write; a row spans `row_split`
    rows of the view; `release_on_read` (resident only) releases a stage as
    soon as it is in registers and writes the result through a tile of its
    own (`Schedule`). What is not given comes from `schedule(row_length)`."""
    check_row_length(row_length)
    if dtype not in _ELEMENT_TYPES:
        raise ValueError(f"softmax: dtype {dtype!r}; the kernel takes {', '.join(_ELEMENT_TYPES)}")
    element = _ELEMENT_TYPES[dtype]
    measured = schedule(row_length, dtype)
    blocks_per_sm = blocks_per_sm or measured.blocks_per_sm
    block_cols = block_cols or measured.block_cols
    resident = measured.resident if resident is None else resident
    row_split = row_split or measured.row_split
    if release_on_read is None:
        release_on_read = measured.release_on_read and resident
    num_stages = num_stages or measured.stages
    check_row_split(row_length, row_split)
    if release_on_read and not resident:
        raise ValueError(
            "softmax: release_on_read needs the resident form (the online one reads a stage twice)"
        )
    width = row_length // row_split
    block_cols = min(block_cols, width)
    if width % block_cols:
        raise ValueError(
            f"block_cols={block_cols} must divide the view's {width} columns (row_length / "
            f"row_split)"
        )
    kb = KernelBuilder(
        "softmax",
        num_warps=5,
        grid=[("a_dim0", TILE_ROWS)],
        persistent=True,
        blocks_per_sm=blocks_per_sm,
        check=softmax_rows,
        check_config={"input_scale": 4.0, "reference_arguments": {"row_split": row_split}},
    )
    x, y = kb.global_tensor(element), kb.global_tensor(element)
    sx = kb.shared_tensor(element, [num_stages, TILE_ROWS, width])
    sy = kb.shared_tensor(element, [1, TILE_ROWS, width]) if release_on_read else None
    full = kb.mbarrier.alloc(arrival_count=1, num_barriers=num_stages)
    empty = kb.mbarrier.alloc(arrival_count=128, num_barriers=num_stages)
    kb.sync()
    tiles = cdiv(x.shape[0], TILE_ROWS)
    first, stride = kb.block_idx.x, kb.grid_dim.x
    trips = cdiv(tiles - first, stride)

    with kb.thread_group(thread_begin=0, num_threads=128, role="consumer"):
        for it in kb.range(0, trips, 1, stages=num_stages, phase=CONSUMER_INITIAL_PHASE):
            kb.mbarrier.wait(full[it.stage], phase=it.phase)
            stage = sx[it.stage]
            if release_on_read:
                blocks = _read_scores(kb, stage, width, block_cols)
                kb.mbarrier.arrive(empty[it.stage])
                out = sy[0]
                probabilities = _softmax_resident(kb, blocks, row_split)
                # The elected thread is the role's first, the one that issued the last store.
                with kb.single_thread():
                    kb.tma.store_wait(0)  # the last tile written out has been read
                kb.sync()
                _store_blocks(kb, out, probabilities, element, block_cols)
            elif resident:
                out = stage
                blocks = _read_scores(kb, stage, width, block_cols)
                _store_blocks(
                    kb, out, _softmax_resident(kb, blocks, row_split), element, block_cols
                )
            else:
                out = stage
                _softmax_online(kb, stage, width, block_cols, element, row_split)
            kb.fence_proxy_async()
            kb.sync()
            with kb.single_thread():
                kb.tma.shared_to_global(out, y, [(first + it.offset * stride) * TILE_ROWS, 0])
                if not release_on_read:
                    kb.tma.store_wait(0)  # the stage is refilled once released
            if not release_on_read:
                kb.mbarrier.arrive(empty[it.stage])

    with kb.thread_group(thread_begin=128, num_threads=32, role="producer"):
        for it in kb.range(0, trips, 1, stages=num_stages, phase=PRODUCER_INITIAL_PHASE):
            kb.mbarrier.wait(empty[it.stage], phase=it.phase)
            with kb.single_thread():
                kb.mbarrier.arrive_and_expect_tx(full[it.stage], sx[it.stage].nbytes)
                kb.tma.global_to_shared(
                    x,
                    sx[it.stage],
                    [(first + it.offset * stride) * TILE_ROWS, 0],
                    mbarrier=full[it.stage],
                )
        kb.drain(empty, after=it)
    return kb.finish()


def _softmax_online(kb, stage, width, block_cols, element, row_split):
    """Two reads of the stage: an online max and sum of each row of the view,
    combined over a row of X's P rows (its lanes and warps), then each block
    rescaled."""
    m = total = None
    for col in range(0, width, block_cols):
        values = kb.load_shared(stage, col=col, cols=block_cols)
        block_max = kb.row_max(values) * LOG2E
        m_next = block_max if m is None else kb.max(m, block_max)
        block_sum = kb.row_sum(kb.exp2(values * LOG2E - m_next))
        total = block_sum if m is None else total * kb.exp2(m - m_next) + block_sum
        m = m_next
    m_row = kb.col_max(m, rows=row_split)
    total = kb.col_sum(total * kb.exp2(m - m_row), rows=row_split)
    shift = m_row + kb.log2(total)
    for col in range(0, width, block_cols):
        scores = kb.load_shared(stage, col=col, cols=block_cols) * LOG2E
        kb.store_shared(stage, kb.cast(kb.exp2(scores - shift), element), col=col)


def _read_scores(kb, stage, width, block_cols):
    """The stage's tile in registers, a block of `block_cols` columns at a
    time, scaled to base 2."""
    return [
        kb.load_shared(stage, col=col, cols=block_cols) * LOG2E
        for col in range(0, width, block_cols)
    ]


def _softmax_resident(kb, blocks, row_split):
    """One exp2 per element of a tile held in registers: each reduction is a
    thread's blocks, then the row's lanes and warps."""
    m = kb.col_max(kb.row_max(functools.reduce(kb.max, blocks)), rows=row_split)
    exponentials = [kb.exp2(scores - m) for scores in blocks]
    total = kb.col_sum(kb.row_sum(functools.reduce(operator.add, exponentials)), rows=row_split)
    inverse = kb.exp2(-kb.log2(total))
    return [e * inverse for e in exponentials]


def _store_blocks(kb, tile, blocks, element, block_cols):
    """`blocks` rounded to `element` into consecutive columns of `tile`."""
    for index, block in enumerate(blocks):
        kb.store_shared(tile, kb.cast(block, element), col=index * block_cols)
