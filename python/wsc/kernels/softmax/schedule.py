"""What the row softmax takes and how it runs, without MLIR: the GPU side
(`wsc.softmax` on a warm cache) needs it to check a call and size a launch,
and the autotuner keys compiled kernels by this file's source (with the
compiler's, which covers the kernel's).

The kernel sees X and Y [R, C] as [S R, C/S] (a free view of contiguous
rows), S the schedule's `row_split`: row r of X is rows S r .. S r + S - 1
of the view. With S = 16 those are exactly the rows one warp holds of a
64-row register tile, so a row's max and sum are one warp's shuffles; with
32 or 64 a row spans two or four warps, which then hand each other their
partial max and sum, and a stage of the ring holds 64 / S rows of X.
"""

from __future__ import annotations

from typing import NamedTuple

from wsc.autotune import Autotuned
from wsc.target.hopper import ELEMENT_BYTES, WARP_ROWS

#: Rows of the view per stage: one 64-row register tile.
TILE_ROWS = 64
#: The rows of the view a row of X may span: those of one, two or four warps.
ROW_SPLITS = (WARP_ROWS, 2 * WARP_ROWS, 4 * WARP_ROWS)
#: The view's width is a multiple of this many columns (32 bytes, the
#: narrowest swizzle span of its stage tiles)...
WIDTH_STEP = 16
#: ... so row lengths are multiples of this...
ROW_LENGTH_STEP = WIDTH_STEP * WARP_ROWS
#: ... up to this, the longest built and measured (rows of 16384 spill registers).
MAX_ROW_LENGTH = 8192
#: Element types, by wsc name.
DTYPES = ("bf16", "f16")


class Schedule(NamedTuple):
    """How the kernel runs: a ring of `stages` per block, `blocks_per_sm` blocks
    sharing an SM, the view read `block_cols` columns at a time; `resident`
    keeps a stage's whole tile in registers (one read of shared memory and one
    exp2 per element) where the online form reads it twice; a row of X
    spans `row_split` rows of the view; `release_on_read` (resident only)
    hands a stage back to the producer as soon as it is in registers, the
    result going out through a tile of its own."""

    stages: int
    blocks_per_sm: int
    block_cols: int
    resident: bool
    row_split: int = WARP_ROWS
    release_on_read: bool = False


#: The fastest measured by row length on the H200 (results/h200-row-softmax.md):
#: stages handed back once in registers, more blocks per SM over more stages
#: per block, and a row over two or four warps keeps more, shorter rows in
#: flight (rows of 8192 over 64 rows of the view fit in registers, resident).
SCHEDULES = {
    1024: Schedule(2, 5, 64, resident=True, release_on_read=True),
    2048: Schedule(4, 4, 64, resident=True, row_split=2 * WARP_ROWS, release_on_read=True),
    4096: Schedule(2, 4, 128, resident=True, row_split=2 * WARP_ROWS, release_on_read=True),
    8192: Schedule(3, 3, 128, resident=True, row_split=4 * WARP_ROWS, release_on_read=True),
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


def check_row_split(row_length: int, row_split: int) -> None:
    """ValueError unless rows of `row_length` elements may span `row_split`
    rows of the view."""
    if row_split not in ROW_SPLITS or row_length % (WIDTH_STEP * row_split):
        raise ValueError(
            f"softmax: row_split={row_split} for rows of {row_length} elements; it must be one "
            f"of {', '.join(map(str, ROW_SPLITS))} and divide the rows into views of a "
            f"multiple of {WIDTH_STEP} columns"
        )


def softmax_view(rows: int, row_length: int, row_split: int | None = None) -> dict[str, int]:
    """The sizes of the kernel's view of an X of `rows` x `row_length`, a row
    spanning `row_split` rows of it (by default its schedule's)."""
    split = row_split or schedule(row_length).row_split
    return {"a_dim0": rows * split, "a_dim1": row_length // split}


def schedule(row_length: int, dtype: str = "bf16") -> Schedule:
    """The schedule for rows of `row_length`: the fastest measured (SCHEDULES),
    else up to three blocks per SM with up to three stages each in RING_BYTES,
    in the online form (it fits in registers at any length)."""
    if row_length in SCHEDULES:
        return SCHEDULES[row_length]
    width = row_length // WARP_ROWS
    stage_bytes = TILE_ROWS * width * ELEMENT_BYTES[dtype]
    blocks = max(1, min(3, RING_BYTES // stage_bytes))
    stages = max(1, min(3, RING_BYTES // (blocks * stage_bytes)))
    cols = next(cols for cols in (128, 64, 32, 16, 8) if width % cols == 0)
    return Schedule(stages, blocks, cols, resident=False)


def softmax_kernel(row_length: int, dtype: str = "bf16", **schedule):
    """The kernel of wsc.kernels.softmax.build for rows of `row_length`
    elements of `dtype`, with its schedule (a wsc.builder.Kernel); `schedule`
    replaces fields of it by build.softmax's arguments (num_stages,
    blocks_per_sm, block_cols, resident, row_split, release_on_read), as a benchmark of
    candidates does."""
    from wsc.kernels.softmax.build import softmax

    return softmax(row_length, dtype, **schedule)


#: The kernel as wsc.softmax compiles and caches it, one per row length and dtype.
SOFTMAX = Autotuned(softmax_kernel)
