"""Shared-memory layout of a kernel: where each ring buffer and mbarrier lives.

Pure Python (no MLIR), so the arithmetic is unit-testable.

One extern dynamic shared region holds everything. Its base is rounded up to
1024 bytes at run time (the 128-byte swizzle of TMA copies and WGMMA operands
repeats every 1024 bytes and both assume pattern-aligned tiles), and the
kernel asks for 1024 extra bytes to pay for that rounding. Then, from the
aligned base:

    ring buffer 0: stage 0 | stage 1 | ...   each stage 1024-byte aligned
    ring buffer 1: ...
    mbarriers:     array 0 (8 bytes each) | array 1 | ...
    exchange:      4 bytes per warp and 64-row sub-tile, where warps hand
                   each other the partial reductions of a matrix row that
                   spans several warps (wsc.tile_col_reduce over 32 or 64 rows)

A stage tile [rows, cols] is stored as `num_atoms` column blocks ("atoms")
of `swizzle` bytes per row: atom j holds columns [j*atom_cols, (j+1)*atom_cols)
of every row, rows `swizzle` bytes apart, with the hardware swizzle of that
span. When cols * element size <= 128 there is one atom and the tile is
plain row-major (then swizzled); each atom is exactly what one TMA box of
[rows, atom_cols] writes. A one-row tile (e.g. a row of block scales) has no
rows for a swizzle to spread and, up to a TMA box's 256 columns, is stored
unswizzled, one atom as wide as the row: one TMA box copies it, where
128-byte atoms would take a box each.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from wsc.target.hopper import (
    BUFFER_ALIGN,
    MAX_TMA_BOX,
    MBARRIER_BYTES,
    SWIZZLE_SPANS,
    TMA_ALIGN,
    round_up,
)

#: Bytes requested on top of the layout so the base can be rounded up at run time.
ALIGN_PADDING = BUFFER_ALIGN


class LayoutError(ValueError):
    """A tile or a kernel's buffers cannot be laid out; the message says why."""


@dataclass(frozen=True)
class TileLayout:
    """How one stage tile [rows, cols] of `element_bytes`-byte elements is stored."""

    rows: int
    cols: int
    element_bytes: int
    swizzle: int  # bytes: 128, 64 or 32; 0 for none (one row)

    @staticmethod
    def choose(rows: int, cols: int, element_bytes: int) -> TileLayout:
        """The widest swizzle whose span divides a row; rows wider than 128 B
        are split into 128-B atoms. One row that one TMA box can copy is
        stored unswizzled."""
        row_bytes = cols * element_bytes
        if rows == 1 and row_bytes % TMA_ALIGN == 0 and cols <= MAX_TMA_BOX:
            return TileLayout(rows, cols, element_bytes, 0)
        for span in SWIZZLE_SPANS:
            if row_bytes % span == 0:
                return TileLayout(rows, cols, element_bytes, span)
        raise LayoutError(
            f"a tile row of {cols} x {element_bytes} B = {row_bytes} B is not a multiple of "
            f"32 B, the narrowest TMA/WGMMA swizzle span"
        )

    @property
    def row_pitch(self) -> int:
        """Bytes from one row of an atom to the next: the swizzle span, or
        the whole row unswizzled."""
        return self.swizzle or self.cols * self.element_bytes

    @property
    def atom_cols(self) -> int:
        """Columns (elements) of one atom, i.e. the inner extent of one TMA box."""
        return self.row_pitch // self.element_bytes

    @property
    def num_atoms(self) -> int:
        return self.cols * self.element_bytes // self.row_pitch

    @property
    def atom_bytes(self) -> int:
        return self.rows * self.row_pitch

    @property
    def tile_bytes(self) -> int:
        return self.rows * self.cols * self.element_bytes

    @property
    def swizzle_name(self) -> str:
        """The name the runtime's tensor-map spec uses ("128B", "64B", "32B", "none")."""
        return f"{self.swizzle}B" if self.swizzle else "none"

    @property
    def box(self) -> tuple[int, int]:
        """The TMA box, outermost first: [rows, atom_cols]."""
        return (self.rows, self.atom_cols)

    def atom_offset(self, atom: int) -> int:
        """Byte offset of atom `atom` from the tile start."""
        return atom * self.atom_bytes

    def byte_offset(self, row: int, col: int) -> int:
        """Byte offset of element (row, col) before swizzling (the swizzle permutes
        16-byte chunks inside each 8-row group; TMA and WGMMA both apply it)."""
        atom, inner = divmod(col, self.atom_cols)
        return self.atom_offset(atom) + row * self.row_pitch + inner * self.element_bytes

    @property
    def swizzle_bits(self) -> int:
        """The 16-byte-chunk bits of an offset that the swizzle flips: chunk
        c of the 128-byte line l of an atom is stored at chunk
        c ^ (l mod swizzle/16) (for 128-byte rows, l is the row); none
        unswizzled."""
        return max(self.swizzle - 16, 0)

    def swizzled_offset(self, row: int, col: int) -> int:
        """Byte offset where TMA and WGMMA find element (row, col), with the
        swizzle applied (atoms start on whole swizzle periods)."""
        offset = self.byte_offset(row, col)
        return offset ^ ((offset >> 3) & self.swizzle_bits)


@dataclass
class BufferSlot:
    name: str
    num_stages: int
    tile: TileLayout
    offset: int  # from the aligned base
    stage_bytes: int

    @property
    def total_bytes(self) -> int:
        return self.num_stages * self.stage_bytes


@dataclass
class BarrierSlot:
    name: str
    count: int
    arrival_count: int
    offset: int

    def address(self, index: int) -> int:
        return self.offset + MBARRIER_BYTES * index


@dataclass
class ExchangeSlot:
    offset: int
    total_bytes: int


@dataclass
class SharedLayout:
    """The offsets of every buffer and barrier array, from the aligned base."""

    buffers: list[BufferSlot] = field(default_factory=list)
    barriers: list[BarrierSlot] = field(default_factory=list)
    exchange: ExchangeSlot | None = None

    def add_buffer(self, name: str, num_stages: int, tile: TileLayout) -> BufferSlot:
        if self.barriers or self.exchange is not None:
            raise LayoutError("add every buffer before the barriers and the exchange area")
        stage_bytes = round_up(tile.tile_bytes, BUFFER_ALIGN)
        slot = BufferSlot(name, num_stages, tile, self.buffers_end, stage_bytes)
        self.buffers.append(slot)
        return slot

    def add_barriers(self, name: str, count: int, arrival_count: int) -> BarrierSlot:
        if self.exchange is not None:
            raise LayoutError("add every barrier array before the exchange area")
        offset = self.end
        slot = BarrierSlot(name, count, arrival_count, offset)
        self.barriers.append(slot)
        return slot

    @property
    def buffers_end(self) -> int:
        if not self.buffers:
            return 0
        last = self.buffers[-1]
        return last.offset + last.total_bytes

    def add_exchange(self, total_bytes: int) -> ExchangeSlot:
        self.exchange = ExchangeSlot(self.end, total_bytes)
        return self.exchange

    @property
    def end(self) -> int:
        """Bytes used from the aligned base."""
        if self.exchange is not None:
            return self.exchange.offset + self.exchange.total_bytes
        if self.barriers:
            last = self.barriers[-1]
            return last.offset + MBARRIER_BYTES * last.count
        return self.buffers_end

    @property
    def dynamic_smem_bytes(self) -> int:
        """What the launch must request: the layout plus the alignment padding
        (0 when nothing lives in shared memory)."""
        return self.end + ALIGN_PADDING if self.end else 0

    def overlaps(self) -> list[tuple[str, str]]:
        """Pairs of slots whose byte ranges intersect (empty for a valid layout)."""
        ranges = [(s.name, s.offset, s.offset + s.total_bytes) for s in self.buffers]
        ranges += [(b.name, b.offset, b.offset + MBARRIER_BYTES * b.count) for b in self.barriers]
        if self.exchange is not None:
            exchange = self.exchange
            ranges.append(("exchange", exchange.offset, exchange.offset + exchange.total_bytes))
        found = []
        for i, (name_i, lo_i, hi_i) in enumerate(ranges):
            for name_j, lo_j, hi_j in ranges[i + 1 :]:
                if lo_i < hi_j and lo_j < hi_i:
                    found.append((name_i, name_j))
        return found
