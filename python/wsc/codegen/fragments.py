"""Register fragments of WGMMA accumulators: which thread holds which element.

Pure Python (no MLIR). For wgmma.mma_async .m64nNk16 with an f32 (or f16)
accumulator D (PTX ISA, "Register Fragments" of wgmma, matrix D), each thread
of the warpgroup holds N/2 elements. With w = warp in the warpgroup (0..3),
l = lane (0..31) and register index r = 4*j + 2*h + c:

    row = 16*w + l/4 + 8*h          h in {0, 1}
    col = 8*j + 2*(l%4) + c          j in [0, N/8), c in {0, 1}

i.e. each 8-column block j holds a pair of adjacent columns in row l/4 and the
same pair 8 rows further down, exactly like the mma.sync m16n8 C fragment
repeated over N/8 column blocks and 4 warps.

A register tile (`!wsc.acc<[M, N], T>`) of M = 64*s rows is s such m64nN
fragments ("sub-tiles") stacked along M: sub-tile i covers rows [64*i, 64*i+64).
Flat register index of (i, r): i * (N/2) + r.

A row vector (N = 1: a value per row, e.g. an online softmax's running max)
has the same rows: register h of sub-tile i is row 64*i + 16*w + l/4 + 8*h,
held alike by the four lanes of a quad, so that a tile's register r reads
its row's value from the vector's register `row_register(r)` (broadcasting).

The same layout, read as columns [16k, 16k + 16), is the A operand fragment
of an m64nNk16 WGMMA with A in registers (PTX ISA, matrix A of wgmma in
registers: a0, a1 in row l/4, a2, a3 eight rows down, a4..a7 the same eight
columns further): a 16-bit tile of an accumulator's shape feeds the next
WGMMA without going through shared memory (`a_operand_registers`).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from wsc.target.hopper import WARP_SIZE, WARPGROUP_SIZE, WGMMA_M

#: A fragment's rows come in subtiles of one WGMMA's M.
SUBTILE_ROWS = WGMMA_M


@dataclass(frozen=True)
class FragmentElement:
    subtile: int  # i: which m64 slab
    index: int  # r: register index inside the sub-tile's fragment
    half: int  # h: 0 for row l/4, 1 for row l/4 + 8
    block: int  # j: 8-column block
    pair: int  # c: 0 or 1 inside the column pair
    row: int  # row offset from (16*w + l/4), i.e. 64*i + 8*h
    col: int  # column offset from 2*(l%4), i.e. 8*j + c


def row_register(r: int) -> int:
    """The register of a row vector's sub-tile that holds the row of a
    tile's register r (r = 4j + 2h + c: h)."""
    return r // 2 % 2


def operand_register(operand: AccumulatorFragment, result: AccumulatorFragment, r: int) -> int:
    """The register of `operand` that element-wise math reads for register r
    of its `result` (of the same rows): the same register, or where a row
    vector is broadcast over a tile, the one holding r's row."""
    return row_register(r) if operand.row_vector and not result.row_vector else r


@dataclass(frozen=True)
class AccumulatorFragment:
    rows: int  # M, a multiple of 64
    cols: int  # N, a multiple of 8 in [8, 256], or 1: a row vector

    def __post_init__(self):
        if self.rows % SUBTILE_ROWS or self.rows <= 0:
            raise ValueError(f"accumulator rows must be a positive multiple of 64, got {self.rows}")
        if self.cols != 1 and (self.cols % 8 or not 8 <= self.cols <= 256):
            raise ValueError(
                f"accumulator columns must be 1 or a multiple of 8 in [8, 256], got {self.cols}"
            )

    @property
    def row_vector(self) -> bool:
        return self.cols == 1

    @property
    def subtiles(self) -> int:
        return self.rows // SUBTILE_ROWS

    @property
    def regs_per_subtile(self) -> int:
        return 2 if self.row_vector else self.cols // 2

    @property
    def regs_per_thread(self) -> int:
        return self.subtiles * self.regs_per_subtile

    def elements(self) -> Iterator[FragmentElement]:
        """Every element a thread holds, in register order."""
        if self.row_vector:
            for i in range(self.subtiles):
                for h in range(2):
                    yield FragmentElement(i, h, h, 0, 0, SUBTILE_ROWS * i + 8 * h, 0)
            return
        for i in range(self.subtiles):
            for j in range(self.cols // 8):
                for h in range(2):
                    for c in range(2):
                        yield FragmentElement(
                            i, 4 * j + 2 * h + c, h, j, c, SUBTILE_ROWS * i + 8 * h, 8 * j + c
                        )

    @staticmethod
    def thread_base(thread: int) -> tuple[int, int]:
        """(row, col) of a warpgroup thread's first element (thread in [0, 128))."""
        warp, lane = divmod(thread % WARPGROUP_SIZE, WARP_SIZE)
        return 16 * warp + lane // 4, 2 * (lane % 4)

    def coordinates(self, thread: int, subtile: int, index: int) -> tuple[int, int]:
        """(row, col) in the tile of register `index` of sub-tile `subtile` in `thread`."""
        base_row, base_col = self.thread_base(thread)
        if self.row_vector:
            return base_row + SUBTILE_ROWS * subtile + 8 * index, 0
        j, rest = divmod(index, 4)
        h, c = divmod(rest, 2)
        return base_row + SUBTILE_ROWS * subtile + 8 * h, base_col + 8 * j + c

    def owner(self, row: int, col: int) -> tuple[int, int, int]:
        """(thread, subtile, index) holding tile element (row, col): the inverse
        map (of a row vector's four copies, the first lane's)."""
        subtile, r = divmod(row, SUBTILE_ROWS)
        warp, r = divmod(r, 16)
        h, group = divmod(r, 8)
        if self.row_vector:
            return WARP_SIZE * warp + 4 * group, subtile, h
        j, cc = divmod(col, 8)
        quad, c = divmod(cc, 2)
        lane = 4 * group + quad
        return WARP_SIZE * warp + lane, subtile, 4 * j + 2 * h + c


def a_operand_registers(step: int) -> list[tuple[int, int]]:
    """The register pairs of a sub-tile that form the A operand of WGMMA K
    step `step` (columns [16 step, 16 step + 16)), in the order of its four
    32-bit A registers: 8-column blocks 2 step and 2 step + 1, each the pair
    of row l/4 and the pair of row l/4 + 8."""
    first = 8 * step
    return [(first + 2 * q, first + 2 * q + 1) for q in range(4)]
