"""WGMMA shared-memory matrix descriptors: bit layout and per-instruction offsets.

Pure Python (no MLIR). A descriptor is a 64-bit value (PTX ISA, "Matrix
Descriptor Format" of wgmma.mma_async):

    bits  0-13  start address      (shared-window byte address & 0x3FFFF) >> 4
    bits 16-29  leading byte offset (LBO) >> 4
    bits 32-45  stride byte offset  (SBO) >> 4
    bits 49-51  matrix base offset  (0: tiles start on a swizzle-pattern boundary)
    bits 62-63  swizzle mode        0 none, 1 128-byte, 2 64-byte, 3 32-byte

Only the start address depends on run-time values (the shared region base and
the stage), so a descriptor is emitted as `static_bits | address_field`; the
address field of a given WGMMA is the stage tile's plus a compile-time offset,
which is what `OperandDescriptors.offsets` returns.

Operand layouts (see layout.TileLayout; the swizzle span S is 128, 64 or 32 B):

* K-major (A always; B when its stage tile is [N, K], b_layout "nk"): rows are
  M (or N), K is contiguous. One instruction's K is 32 bytes inside a
  swizzled row (16 elements of 16 bits, 32 of fp8), so instruction k advances the start address by
  32*k bytes within an atom (and to the next atom every S/32 steps); the
  8-row core-matrix groups along M/N are SBO = 8*S bytes apart; LBO is unused
  with a swizzle and set to 1 (16 bytes), as CUTLASS does.
* MN-major (B when its stage tile is [K, N], b_layout "kn"; A when its stage
  tile is [K, M], a_transposed; 16-bit elements only): rows are K, M or N is
  contiguous. Instruction k starts 16 rows further, 16*S bytes; the 8-row K groups are SBO = 8*S apart
  and consecutive M/N atoms (S bytes each) are LBO = rows*S apart. An A operand
  whose M extent starts at column `row0` starts at that column's atom.
"""

from __future__ import annotations

from dataclasses import dataclass

from wsc.codegen.layout import TileLayout
from wsc.target.hopper import WGMMA_K_BYTES

#: Rows of a core-matrix group (the swizzle pattern repeats every 8 rows).
CORE_ROWS = 8

SWIZZLE_MODES = {0: 0, 128: 1, 64: 2, 32: 3}
ADDRESS_MASK = 0x3FFFF
FIELD_MASK = 0x3FFF


def encode_field(byte_value: int) -> int:
    """A 14-bit descriptor field holding `byte_value` >> 4."""
    if byte_value % 16:
        raise ValueError(f"descriptor offsets are in 16-byte units, got {byte_value}")
    field = byte_value >> 4
    if field > FIELD_MASK:
        raise ValueError(f"descriptor offset {byte_value} does not fit in 14 bits of 16 bytes")
    return field


def address_field(address: int) -> int:
    """The start-address field of a shared-window byte address."""
    return (address & ADDRESS_MASK) >> 4


def encode(
    start_address: int,
    leading_byte_offset: int,
    stride_byte_offset: int,
    swizzle: int,
    base_offset: int = 0,
) -> int:
    """A complete descriptor; `swizzle` in bytes (0, 32, 64 or 128)."""
    return (
        address_field(start_address)
        | encode_field(leading_byte_offset) << 16
        | encode_field(stride_byte_offset) << 32
        | (base_offset & 0x7) << 49
        | SWIZZLE_MODES[swizzle] << 62
    )


def decode(descriptor: int) -> dict[str, int]:
    """The fields of a descriptor, in bytes where they are byte offsets."""
    modes = {v: k for k, v in SWIZZLE_MODES.items()}
    return {
        "start_address": (descriptor & FIELD_MASK) << 4,
        "leading_byte_offset": ((descriptor >> 16) & FIELD_MASK) << 4,
        "stride_byte_offset": ((descriptor >> 32) & FIELD_MASK) << 4,
        "base_offset": (descriptor >> 49) & 0x7,
        "swizzle": modes[(descriptor >> 62) & 0x3],
    }


@dataclass(frozen=True)
class OperandDescriptors:
    """The descriptors of one WGMMA operand tile, for every instruction that reads it."""

    tile: TileLayout
    k_major: bool

    def __post_init__(self):
        # WGMMA reads 8-row core matrices; only a one-row tile is unswizzled.
        if not self.tile.swizzle:
            raise ValueError(f"an unswizzled {self.tile.rows}-row tile is no WGMMA operand")

    @property
    def leading_byte_offset(self) -> int:
        return 16 if self.k_major else self.tile.atom_bytes

    @property
    def stride_byte_offset(self) -> int:
        return CORE_ROWS * self.tile.swizzle

    @property
    def static_bits(self) -> int:
        """Every field but the start address."""
        return encode(0, self.leading_byte_offset, self.stride_byte_offset, self.tile.swizzle)

    @property
    def k_steps(self) -> int:
        """How many WGMMA instructions cover the tile's K extent."""
        k_extent = self.tile.cols if self.k_major else self.tile.rows
        return k_extent // self.k_per_step

    @property
    def k_per_step(self) -> int:
        """K of one instruction: 32 bytes of elements."""
        return WGMMA_K_BYTES // self.tile.element_bytes

    def offset(self, k_step: int, row0: int = 0) -> int:
        """Byte offset from the tile start of instruction `k_step`'s operand whose
        M/N extent starts at `row0`: a row of a K-major tile (8-row aligned) or
        a column of an MN-major one (atom aligned)."""
        tile = self.tile
        if self.k_major:
            if row0 % CORE_ROWS:
                raise ValueError(f"operand row {row0} is not a multiple of {CORE_ROWS}")
            k_bytes = k_step * WGMMA_K_BYTES
            atom, inner = divmod(k_bytes, tile.swizzle)
            return tile.atom_offset(atom) + row0 * tile.swizzle + inner
        atom, inner = divmod(row0, tile.atom_cols)
        if inner:
            raise ValueError(
                f"an MN-major operand starts on an atom ({tile.atom_cols} columns), got column {row0}"
            )
        return tile.atom_offset(atom) + k_step * self.k_per_step * tile.swizzle

    def descriptor(self, tile_address: int, k_step: int, row0: int = 0) -> int:
        """The full descriptor for a tile at shared address `tile_address`."""
        return self.static_bits | address_field(tile_address + self.offset(k_step, row0))
