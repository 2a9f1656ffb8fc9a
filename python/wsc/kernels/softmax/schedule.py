"""What the row softmax takes and how it runs, without MLIR: the GPU side
(`wsc.softmax` on a warm cache) needs it to check a call and size a launch,
and the autotuner keys compiled kernels by this file's source (with the
compiler's, which covers the kernel's).

The kernel sees X and Y [R, C] as [16 R, C/16] (a free view of contiguous
rows): row r of X is rows 16r .. 16r + 15 of the view, exactly the 16 rows
one warp holds of a 64-row register tile, so a row's max and sum are one
warp's shuffles.
"""

from __future__ import annotations

from typing import NamedTuple

from wsc.autotune import Autotuned
from wsc.target.hopper import ELEMENT_BYTES

#: Rows of the view per stage: one 64-row register tile, 4 rows of X.
TILE_ROWS = 64
#: The rows of the view one warp holds of a tile: one row of X.
ROW_SPLIT = 16
#: Row lengths are multiples of this (the view's width, C/16, a multiple of 16 columns)...
ROW_LENGTH_STEP = 16 * ROW_SPLIT
#: ... up to this, the longest built and measured (rows of 16384 spill registers).
MAX_ROW_LENGTH = 8192
#: Element types, by wsc name.
DTYPES = ("bf16", "f16")


class Schedule(NamedTuple):
    """How the kernel runs: a ring of `stages` per block, `blocks_per_sm` blocks
    sharing an SM, the view read `block_cols` columns at a time; `resident`
    keeps a stage's whole tile in registers (one read of shared memory and one
    exp2 per element) where the online form reads it twice."""

    stages: int
    blocks_per_sm: int
    block_cols: int
    resident: bool


#: The fastest measured on the H200 by row length (results/h200-row-softmax.md):
#: more blocks per SM beat more stages per block; rows of 8192 do not fit in
#: registers at any count of blocks that keeps the SM busy.
SCHEDULES = {
    1024: Schedule(3, 4, 64, resident=True),
    2048: Schedule(2, 3, 128, resident=True),
    4096: Schedule(2, 2, 128, resident=True),
    8192: Schedule(1, 3, 128, resident=False),
}
#: The shared memory an SM's rings may take together, below its 228 KB.
RING_BYTES = 192 * 1024


def check_row_length(row_length: int, caller: str = "softmax") -> None:
    """ValueError unless the kernel takes rows of `row_length` elements."""
    if row_length % ROW_LENGTH_STEP or not ROW_LENGTH_STEP <= row_length <= MAX_ROW_LENGTH:
        raise ValueError(
            f"{caller}: rows of {row_length} elements; the kernel takes multiples of "
            f"{ROW_LENGTH_STEP} from {ROW_LENGTH_STEP} to {MAX_ROW_LENGTH}"
        )


def softmax_view(rows: int, row_length: int) -> dict[str, int]:
    """The sizes of the kernel's view of an X of `rows` x `row_length`."""
    return {"a_dim0": rows * ROW_SPLIT, "a_dim1": row_length // ROW_SPLIT}


def schedule(row_length: int, dtype: str = "bf16") -> Schedule:
    """The schedule for rows of `row_length`: the fastest measured on the H200,
    else up to three blocks per SM with up to three stages each in RING_BYTES,
    in the online form (it fits in registers at any length)."""
    if row_length in SCHEDULES:
        return SCHEDULES[row_length]
    width = row_length // ROW_SPLIT
    stage_bytes = TILE_ROWS * width * ELEMENT_BYTES[dtype]
    blocks = max(1, min(3, RING_BYTES // stage_bytes))
    stages = max(1, min(3, RING_BYTES // (blocks * stage_bytes)))
    cols = next(cols for cols in (128, 64, 32, 16, 8) if width % cols == 0)
    return Schedule(stages, blocks, cols, resident=False)


def softmax_kernel(row_length: int, dtype: str = "bf16", **schedule):
    """The kernel of wsc.kernels.softmax.build for rows of `row_length`
    elements of `dtype`, with its schedule (a wsc.builder.Kernel); `schedule`
    replaces fields of it by build.softmax's arguments (num_stages,
    blocks_per_sm, block_cols, resident), as a benchmark of candidates does."""
    from wsc.kernels.softmax.build import softmax

    return softmax(row_length, dtype, **schedule)


#: The kernel as wsc.softmax compiles and caches it, one per row length and dtype.
SOFTMAX = Autotuned(softmax_kernel)
