"""Facts of NVIDIA Hopper (sm_90a) that wsc's rules and code generation rest on.

Every other module imports these rather than restating them: the verifier,
the builder, the passes, code generation, the runtime and wsc.matmul. No
MLIR and no driver here, so the runtime can import it where neither is.
Sources: the PTX ISA (wgmma, cp.async.bulk.tensor, mbarrier, setmaxnreg) and
the CUDA driver API (cuTensorMapEncodeTiled, launch limits) for sm_90.
"""

import re

#: The target these facts hold for: WGMMA and setmaxnreg need the "a" variant.
CHIP = "sm_90a"
#: PTX ISA versions (major*10+minor) that can target CHIP: from 8.0, the
#: first with sm_90a, to 9.0, the newest ptxas 13.0 and driver 580 take.
PTX_VERSIONS = (80, 81, 82, 83, 84, 85, 86, 87, 88, 90)

#: A PTX identifier, as a kernel's name must be: a letter then letters, digits,
#: _ or $; or _ or $ then at least one of those. LLVM's NVPTX back end aborts
#: the process on some other names, and ptxas refuses the rest.
PTX_IDENTIFIER = r"[A-Za-z][A-Za-z0-9_$]*|[_$][A-Za-z0-9_$]+"


def kernel_name_problem(name) -> str | None:
    """Why `name` cannot name a kernel, or None where it can."""
    if isinstance(name, str) and re.fullmatch(PTX_IDENTIFIER, name):
        return None
    return (
        f"name {name!r} is not a PTX identifier, as a kernel's must be: a letter, then "
        f"letters, digits, _ or $ (or _ or $ and at least one more of those)"
    )


#: Threads of a warp, and of a warpgroup (the unit WGMMA and setmaxnreg work on).
WARP_SIZE = 32
WARPGROUP_SIZE = 128
#: Threads of a block.
MAX_BLOCK_THREADS = 1024
#: Blocks per cluster a launch may ask for without opting in to more.
MAX_PORTABLE_CLUSTER = 8
#: Blocks of a grid along x, y and z.
MAX_GRID = (2**31 - 1, 65535, 65535)
#: SMs of a full GH100 die: no Hopper part has more (the H100 SXM and H200 enable
#: 132), so a persistent grid capped at the SM count never has more blocks.
MAX_SMS = 144

#: 32-bit registers of an SM, and the most one thread may use.
REGISTER_FILE = 65536
MAX_THREAD_REGISTERS = 255
#: Registers a WGMMA needs beside its accumulator's: ptxas 13.0 refuses an
#: m64n256 f32 WGMMA (128 accumulator registers) below 154 per thread (C7602).
WGMMA_EXTRA_REGISTERS = 26


def entry_register_cap(threads: int, blocks_per_sm: int = 1) -> int:
    """The per-thread register count ptxas gives a kernel launched with
    `.maxntid threads` and `.minnctapersm blocks_per_sm` that uses setmaxnreg:
    all it may, with the block rounded up to whole warpgroups,
    min(255, floor(65536 / roundup(threads, 128) / blocks_per_sm / 8) * 8)
    (160 threads -> 255, 288 or 384 -> 168, observed with ptxas 13.0). ptxas
    checks each WGMMA's registers against it (C7602) even where setmaxnreg
    raises a role's budget; other code after a setmaxnreg.inc may use up to
    the raised budget."""
    rounded = -(-threads // WARPGROUP_SIZE) * WARPGROUP_SIZE
    per_thread = REGISTER_FILE // rounded // blocks_per_sm
    return min(MAX_THREAD_REGISTERS, per_thread // 8 * 8)


#: The setmaxnreg budgets CUTLASS-style kernels settle on: a producer
#: warpgroup lowered to 40 registers, consumers raised to at most 232.
PRODUCER_REGISTERS = 40
MAX_CONSUMER_REGISTERS = 232


def consumer_register_budget(
    threads: int, groups: int, producer_registers: int = PRODUCER_REGISTERS, blocks_per_sm: int = 1
) -> int:
    """What each of `groups` consumer warpgroups may raise its registers to
    with setmaxnreg in a block of `threads` whose producer warpgroup lowers
    its own to `producer_registers`: the entry budget and its share of what
    the producer frees, in whole 8s, at most MAX_CONSUMER_REGISTERS (a
    setmaxnreg.inc beyond what is free would wait forever)."""
    entry = entry_register_cap(threads, blocks_per_sm)
    spare = (entry - producer_registers) // groups
    return min(MAX_CONSUMER_REGISTERS, (entry + spare) // 8 * 8)


def tile_registers(rows: int, cols: int, element: str) -> int:
    """The 32-bit registers each thread of a warpgroup holds of a rows x cols
    register tile of `element` (the tile is spread over the warpgroup; a row
    vector, cols = 1, two per 64 rows: the rows of the thread's quad)."""
    if cols == 1:
        return 2 * rows // WGMMA_M
    return rows * cols * ELEMENT_BYTES[element] // 4 // WARPGROUP_SIZE


#: setmaxnreg takes budgets in [24, 256], in multiples of 8.
MIN_SETMAXNREG, MAX_SETMAXNREG, SETMAXNREG_STEP = 24, 256, 8
#: Named barriers (bar.sync ids) of a block.
NAMED_BARRIERS = 16

#: Dynamic shared memory one block may opt in to (227 KB).
MAX_DYNAMIC_SMEM = 232448
#: Shared memory of an SM that its resident blocks share (228 KB; each block
#: also takes 1 KB the system reserves).
SM_SHARED_MEMORY = 233472
SMEM_RESERVED_PER_BLOCK = 1024
#: Blocks an SM may run at once.
MAX_BLOCKS_PER_SM = 32
#: The 128-byte swizzle repeats every 1024 bytes: a swizzled buffer starts on
#: such a boundary.
BUFFER_ALIGN = 1024


def round_up(value: int, multiple: int) -> int:
    """`value` rounded up to a multiple of `multiple` (an alignment above)."""
    return (value + multiple - 1) // multiple * multiple


def stage_bytes(rows: int, cols: int, element: str) -> int:
    """The shared memory of one stage of a ring: a rows x cols tile of
    `element`, each stage starting on a BUFFER_ALIGN boundary."""
    return round_up(rows * cols * ELEMENT_BYTES[element], BUFFER_ALIGN)


#: Stages of a ring of BUFFER_ALIGN-byte buffers that fit in shared memory.
MAX_STAGES = MAX_DYNAMIC_SMEM // BUFFER_ALIGN
#: The most blocks that may share an output tile's sum (split-K): the last
#: one's reduction reads every split's partial sums in turn, in unrolled code.
MAX_SPLITS = 64
#: An mbarrier object's bytes.
MBARRIER_BYTES = 8
#: The largest arrival count and transaction byte count of an mbarrier phase.
MAX_MBARRIER_COUNT = (1 << 20) - 1

#: The swizzle spans TMA and WGMMA descriptors share, widest first; the widest
#: bounds the inner extent of a box.
SWIZZLE_SPANS = (128, 64, 32)
SWIZZLE_BYTES = SWIZZLE_SPANS[0]


def swizzle_padded_cols(cols: int, element: str) -> int:
    """The columns to store of a tile row of `cols` elements that TMA copies
    and WGMMA reads: a row wider than one widest swizzle atom that only the
    narrowest span divides (112 f16: 224 bytes, seven 32-byte atoms, as many
    TMA boxes) is padded to whole widest atoms; others are stored as they are."""
    row = cols * ELEMENT_BYTES[element]
    if row <= SWIZZLE_BYTES or row % (2 * SWIZZLE_SPANS[-1]) == 0:
        return cols
    atom = SWIZZLE_BYTES // ELEMENT_BYTES[element]
    return -(-cols // atom) * atom


#: TMA: global base addresses and row strides are multiples of 16 bytes.
TMA_ALIGN = 16


def tma_row_problem(dim: str, extent: int, element_bytes: int) -> str | None:
    """Why TMA cannot copy rows of `extent` elements of `element_bytes`
    (a row stride not a multiple of TMA_ALIGN bytes; `dim` names the extent),
    or None where it can."""
    row = extent * element_bytes
    if row % TMA_ALIGN == 0:
        return None
    return (
        f"its rows are {row} bytes ({dim} = {extent} x {element_bytes} B); TMA needs a row "
        f"stride that is a multiple of {TMA_ALIGN} bytes, so {dim} must be a multiple of "
        f"{TMA_ALIGN // element_bytes}"
    )


#: TMA box dimensions, tensor rank, global extents and strides.
MAX_TMA_BOX = 256
MAX_TMA_RANK = 5
MAX_TMA_GLOBAL_DIM = 2**32
MAX_TMA_GLOBAL_STRIDE = 2**40
#: A CUtensorMap passed by value as a kernel parameter.
TENSOR_MAP_BYTES = 128
TENSOR_MAP_ALIGN = 64

#: One wgmma.mma_async: M per warpgroup, N in steps up to a maximum, and K
#: per instruction as bytes of a row of A (16 elements of 16 bits, 32 of fp8).
WGMMA_M = 64
WGMMA_N_STEP, WGMMA_N_MAX = 8, 256
#: The rows of an accumulator's WGMMA_M-row sub-tile that one warp holds.
WARP_ROWS = WGMMA_M * WARP_SIZE // WARPGROUP_SIZE
WGMMA_K_BYTES = 32

#: fp8 e4m3 as MLIR spells it (f8E4M3FN: finite, one NaN pattern).
E4M3 = "f8E4M3FN"
#: Bytes of each element type wsc kernels read or write.
ELEMENT_BYTES = {"f16": 2, "bf16": 2, E4M3: 1, "f32": 4}
#: The 16-bit floats: WGMMA reads them K-major or MN-major, from shared memory
#: or (A) from registers; register tiles convert to them.
HALF_DTYPES = ("f16", "bf16")
#: WGMMA operands: fp8 only K-major from shared memory.
OPERAND_DTYPES = (*HALF_DTYPES, E4M3)
#: What ring stages hold (TMA copies them in and out): WGMMA operands, and
#: f32 that registers read (a block scale per row).
SHARED_DTYPES = (*OPERAND_DTYPES, "f32")
#: What a result may be.
RESULT_DTYPES = ("f32", *HALF_DTYPES)


def wgmma_k(element: str) -> int:
    """K of one WGMMA instruction on `element` operands."""
    return WGMMA_K_BYTES // ELEMENT_BYTES[element]
