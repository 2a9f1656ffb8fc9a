"""The matmul kernel of the tutorial, built as wsc IR in its V2 form: one
warpgroup that loads a K tile into a ring stage, waits for it, multiplies and
syncs. `compile_matmul` then specializes, unrolls and lowers it.

    C[M, N] = A[M, K] * op(B),  op(B) = B^T for B given as [N, K] ("nk"),
                                op(B) = B   for B given as [K, N] ("kn")

Tiles are numbered t = row + col * ceil(M/BM). Without `persistent` the grid
has one block per output tile, (ceil(M/BM), ceil(N/BN)), and block (x, y) is
tile x + y * ceil(M/BM). With `persistent` the grid is one block per SM (at
most one per tile; `wsc.runtime.artifact.tile_grid`) and a tile loop around the K loop
walks tiles blockIdx.x, blockIdx.x + gridDim.x, ...; the loop carries the
ring's (stage, phase) from tile to tile, so after --warp-specialize the
producer fills the next tile's stages while the consumers store the last one,
and no block pays its launch and pipeline fill again.

With `tma_store` the epilogue writes the tile (cast to C's dtype, f16 or bf16)
into a one-stage shared buffer, fences the writes for TMA, syncs and has one
thread copy it to C with TMA; a persistent kernel first waits until the
previous tile's copy has read the buffer. The copy goes out asynchronously
and is clipped at C's bounds, but TMA needs C's rows 16-byte aligned (N a
multiple of 8). With `coalesced_store` the tile is staged the same way
(without the fence) and every thread copies it out: each store instruction
of a warp writes 32 consecutive elements of one row, whatever C's row
length, where the register epilogue's stores of an odd-length row write
single elements scattered over 8 rows.

With `cluster_m` = 2 the blocks run in clusters of two along x. The tile
rows are taken in pairs: the block of rank r in a cluster takes tile row
2p + r of row pair p, in the tile column the order below gives that pair, so
the two blocks share B's tile. Each copies half of B's rows with
`wsc.tma_load_multicast` into the stages of both, so a block reads 16 + 16 KB
of each 128x256x64 K tile from L2 instead of 16 + 32. A persistent cluster
walks the pairs cluster by cluster (both blocks the same pairs, so their K
loops stay in step), and each stage is released to both blocks' empty
barriers (`wsc.mbarrier_arrive_cluster`), since both producers write it. A
rank-1 block whose tile row is past M computes on zeros and stores nothing.

With `group_m` = 0 tile t is (row, col) above: tiles worked on together share
one tile column and read every row panel of A. With `group_m` = G tile t walks
the tiles in groups of G tile rows, column by column inside a group, so the
tiles resident at one time read about G row panels of A and (resident
tiles)/G column panels of B, which stay in L2, instead of every panel of A.
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass
from pathlib import Path

from mlir import ir

from wsc.builder import (
    CONSUMER_INITIAL_PHASE,
    GlobalTensor,
    KernelBuilder,
    RegisterTile,
    Scalar,
    SharedTensor,
    TileLoop,
    cdiv,
    f32,
    minimum,
)
from wsc.compiler import CompileResult, compile_module, write_artifact
from wsc.passes.warp_specialize import CONSUMER_GROUPS, PRODUCERS, WGMMA_IN_FLIGHT
from wsc.target.hopper import (
    ELEMENT_BYTES,
    MAX_STAGES,
    MAX_TMA_BOX,
    OPERAND_DTYPES,
    RESULT_DTYPES,
    SWIZZLE_BYTES,
    TMA_ALIGN,
    WARP_SIZE,
    WARPGROUP_SIZE,
    WGMMA_K,
    WGMMA_M,
    WGMMA_N_MAX,
    WGMMA_N_STEP,
)

INPUT_DTYPES = OPERAND_DTYPES
OUTPUT_DTYPES = RESULT_DTYPES
#: The 16-bit elements of a swizzled row: A's K tile is one such TMA box row,
#: and so is a "kn" B tile's N extent.
SWIZZLED_ROW_ELEMENTS = SWIZZLE_BYTES // 2
B_LAYOUTS = ("nk", "kn")


#: MatmulConfig's field annotations (strings, see `annotations` above) and the
#: types their values must have.
_FIELD_TYPES = {"int": int, "bool": bool, "str": str}


@dataclass(frozen=True)
class MatmulConfig:
    """The tile shape and schedule of one matmul kernel."""

    block_m: int = 128
    block_n: int = 128
    block_k: int = 64
    num_stages: int = 4
    num_consumer_groups: int = 1
    producer: str = "warp"
    #: WGMMA groups a consumer leaves in flight across K tiles (0 or 1; see
    #: --warp-specialize's wgmma-in-flight).
    wgmma_in_flight: int = 0
    #: Tile rows per group of the grouped tile order (0: block id = tile).
    group_m: int = 0
    #: One block per SM looping over tiles (see the module docstring).
    persistent: bool = False
    #: A persistent kernel's two consumer groups take whole tiles in turn
    #: (--warp-specialize's ping-pong): one stores while the other multiplies.
    ping_pong: bool = False
    #: The epilogue stages the tile in shared memory and one thread stores it
    #: with TMA (16-bit outputs; see the module docstring).
    tma_store: bool = False
    #: The epilogue stages the tile in shared memory and all threads store it
    #: row by row (16-bit outputs, any row length; see the module docstring).
    coalesced_store: bool = False
    #: Blocks per cluster along M, sharing B's tile by multicast (1 or 2; see
    #: the module docstring).
    cluster_m: int = 1
    #: A warpgroup producer gives registers to the consumers with setmaxnreg
    #: (--warp-specialize's rebalance-registers); False keeps the launch
    #: budget in every role.
    rebalance_registers: bool = True
    #: Who releases a stage: every consumer thread ("thread") or one arrival
    #: per consumer warp ("warp"; --warp-specialize's release).
    release: str = "thread"
    #: Debug builds (wsc.codegen.debug): every mbarrier wait traps after this
    #: many failed probes, printing which wait it was (0: waits are unbounded).
    debug_spin_limit: int = 0
    #: Debug builds: random delays before the mbarrier ops of this role, e.g.
    #: "producer" or "consumer" ("": none).
    debug_delay_role: str = ""

    def __post_init__(self):
        for name, annotation in self.__annotations__.items():
            value, expected = getattr(self, name), _FIELD_TYPES[annotation]
            # bool is an int to Python, not to a config: True is no tile size.
            if not isinstance(value, expected) or isinstance(value, bool) != (expected is bool):
                raise ValueError(
                    f"{name} must be a{'n' if expected is int else ''} "
                    f"{expected.__name__}, got {value!r}"
                )
        self._check_ranges()
        if self.ping_pong and not (self.persistent and self.num_consumer_groups == 2):
            raise ValueError(
                "ping_pong = True needs persistent = True and "
                "num_consumer_groups = 2: the two groups take turns over the "
                "tiles of a persistent block"
            )
        if self.cluster_m not in (1, 2):
            raise ValueError(f"cluster_m must be 1 or 2, got {self.cluster_m}")
        if self.cluster_m > 1 and self.ping_pong:
            raise ValueError("cluster_m = 2 with ping_pong = True is not supported")
        if not self.rebalance_registers and self.producer != "warpgroup":
            raise ValueError(
                "rebalance_registers = False only applies to producer = "
                "'warpgroup': a producer warp never gives registers away"
            )
        if self.release not in ("thread", "warp"):
            raise ValueError(f"release must be 'thread' or 'warp', got '{self.release}'")
        if self.tma_store and self.coalesced_store:
            raise ValueError(
                "tma_store and coalesced_store are two ways to copy the staged tile out: choose one"
            )
        if self.persistent and self.wgmma_in_flight and not self.staged_store:
            raise ValueError(
                "persistent = True with wgmma_in_flight = 1 needs tma_store or "
                "coalesced_store = True: with the register-store epilogue ptxas "
                "serializes every WGMMA of that kernel (C7514); with a staged one "
                "it does not (ptxas 13.0)"
            )

    def _check_ranges(self) -> None:
        """Each field within what the kernel and the hardware take, named with
        its allowed values (before any IR is built)."""
        rules = (
            (
                "block_m",
                self.block_m % WGMMA_M == 0 and WGMMA_M <= self.block_m <= MAX_TMA_BOX,
                f"a multiple of {WGMMA_M} (the WGMMA M) up to {MAX_TMA_BOX} (a TMA box)",
            ),
            (
                "block_n",
                self.block_n % WGMMA_N_STEP == 0 and 0 < self.block_n <= WGMMA_N_MAX,
                f"a multiple of {WGMMA_N_STEP} up to {WGMMA_N_MAX} (the WGMMA N)",
            ),
            (
                "block_k",
                self.block_k % WGMMA_K == 0 and 0 < self.block_k <= SWIZZLED_ROW_ELEMENTS,
                f"a multiple of {WGMMA_K} (the WGMMA K) up to {SWIZZLED_ROW_ELEMENTS} (a "
                f"{SWIZZLE_BYTES}-byte swizzled row of 16-bit elements)",
            ),
            ("num_stages", 1 <= self.num_stages <= MAX_STAGES, f"1 to {MAX_STAGES}"),
            (
                "num_consumer_groups",
                self.num_consumer_groups in CONSUMER_GROUPS,
                " or ".join(map(str, CONSUMER_GROUPS)),
            ),
            ("producer", self.producer in PRODUCERS, " or ".join(map(repr, PRODUCERS))),
            (
                "wgmma_in_flight",
                self.wgmma_in_flight in WGMMA_IN_FLIGHT,
                " or ".join(map(str, WGMMA_IN_FLIGHT)),
            ),
            ("group_m", self.group_m >= 0, "0 (no grouping) or more tile rows"),
        )
        for name, ok, allowed in rules:
            if not ok:
                raise ValueError(f"{name} must be {allowed}, got {getattr(self, name)!r}")

    @classmethod
    def default_for(cls, problem: MatmulProblem, **fields) -> MatmulConfig:
        """The default config with `fields` set, its B tile narrowed to what
        the problem's layout takes unless `fields` set block_n."""
        if problem.b_layout == "kn" and "block_n" not in fields:
            fields["block_n"] = SWIZZLED_ROW_ELEMENTS
        return cls(**fields)

    def check_problem(self, problem: MatmulProblem) -> None:
        """The rules that depend on the problem: a "kn" B stage is [block_k,
        block_n], whose rows TMA reads as one swizzled box row."""
        if problem.b_layout == "kn" and self.block_n > SWIZZLED_ROW_ELEMENTS:
            raise ValueError(
                f"block_n must be at most {SWIZZLED_ROW_ELEMENTS} for B as [K, N] "
                f"(b_layout 'kn'): a B tile row is one {SWIZZLE_BYTES}-byte "
                f"swizzled TMA box row, got {self.block_n}"
            )
        if self.staged_store and problem.out_dtype not in INPUT_DTYPES:
            option = "tma_store" if self.tma_store else "coalesced_store"
            raise ValueError(
                f"{option} = True needs an f16 or bf16 output, got "
                f"{problem.out_dtype}: the staging tile is a shared-memory tile of "
                f"the output's dtype"
            )

    @property
    def staged_store(self) -> bool:
        """The epilogue goes through a shared-memory staging tile."""
        return self.tma_store or self.coalesced_store

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class MatmulProblem:
    """What the kernel computes: dtypes and B's layout (shapes are run-time)."""

    dtype: str = "f16"
    out_dtype: str = "f32"
    b_layout: str = "nk"

    def __post_init__(self):
        for name, value, allowed in (
            ("dtype", self.dtype, INPUT_DTYPES),
            ("out_dtype", self.out_dtype, OUTPUT_DTYPES),
            ("b_layout", self.b_layout, B_LAYOUTS),
        ):
            if value not in allowed:
                raise ValueError(f"{name} must be one of {', '.join(allowed)}, got '{value}'")


def _tile_counts(a: GlobalTensor, c: GlobalTensor, bm: int, bn: int) -> tuple[Scalar, Scalar]:
    """(ceil(M/BM), ceil(N/BN)): the output tiles along M and N."""
    return cdiv(a.shape[0], bm), cdiv(c.shape[1], bn)


def _tile_coordinates(
    tile: Scalar, tiles_m: Scalar, tiles_n: Scalar, group_m: int
) -> tuple[Scalar, Scalar]:
    """(tile row, tile column) of tile number `tile`, in the order of the
    module docstring."""
    if group_m == 0:
        return tile % tiles_m, tile // tiles_m
    group_size = tiles_n * group_m
    first_row = tile // group_size * group_m
    # The last group has fewer rows when group_m does not divide tiles_m.
    rows = minimum(tiles_m - first_row, group_m)
    in_group = tile % group_size
    return first_row + in_group % rows, in_group // rows


def store_through_shared(
    kb: KernelBuilder,
    tile: RegisterTile,
    sc: SharedTensor,
    c: GlobalTensor,
    row: Scalar,
    col: Scalar,
    wait_first: bool,
    tma: bool,
) -> None:
    """The staged epilogue: stage `tile` in sc[0] and copy it to C, from one
    thread with TMA or from all with coalesced stores. With `wait_first` (a
    buffer reused tile after tile) the copy of the previous tile must have
    read sc first."""
    if wait_first:
        if tma:
            with kb.single_thread():
                kb.tma.store_wait(0)
        kb.sync()
    kb.store_shared(sc[0], tile)
    if tma:
        kb.fence_proxy_async()
    kb.sync()
    if tma:
        with kb.single_thread():
            kb.tma.shared_to_global(sc[0], c, [row, col])
    else:
        kb.shared_to_global(sc[0], c, [row, col])


def build_matmul(problem: MatmulProblem, config: MatmulConfig, name: str = "matmul") -> ir.Module:
    """The V2-form matmul kernel as a module (needs an active wsc context)."""
    config.check_problem(problem)
    bm, bn, bk, stages = config.block_m, config.block_n, config.block_k, config.num_stages
    element, b_layout = problem.dtype, problem.b_layout
    ctas = config.cluster_m
    kb = KernelBuilder(
        name,
        num_warps=WARPGROUP_SIZE // WARP_SIZE,
        grid=[("m", bm), ("n", bn)],
        cluster_size=ctas,
        context=ir.Context.current,
    )
    a, b, c = (
        kb.global_tensor(element),
        kb.global_tensor(element),
        kb.global_tensor(problem.out_dtype),
    )
    k_tiles = cdiv(a.shape[1], bk)
    sa = kb.shared_tensor(element, [stages, bm, bk])
    sb = kb.shared_tensor(element, [stages, bn, bk] if b_layout == "nk" else [stages, bk, bn])
    sc = kb.shared_tensor(problem.out_dtype, [1, bm, bn]) if config.staged_store else None
    full = kb.mbarrier.alloc(arrival_count=1, num_barriers=stages)
    # Barrier init must be visible before use: in a cluster, to the other
    # block too, whose copies and releases reach these barriers.
    sync = kb.sync if ctas == 1 else kb.cluster_sync
    sync()
    tiles_m, tiles_n = _tile_counts(a, c, bm, bn)
    block_x = kb.block_idx.x
    # Work units: tiles, or in a cluster tile pairs (ctas tile rows of one
    # tile column), numbered like tiles over ceil(tiles_m / ctas) rows.
    units_m, rank = tiles_m, None
    if ctas > 1:
        units_m = cdiv(tiles_m, ctas)
        rank = kb.cluster_rank

    def one_tile(unit: Scalar, tiles: TileLoop | None) -> None:
        """Work unit `unit`'s K loop and its store; the loop continues the
        ring position `tiles` carries, or starts the ring."""
        tile_row, tile_col = _tile_coordinates(unit, units_m, tiles_n, config.group_m)
        if rank is not None:
            tile_row = tile_row * ctas + rank
        tile_m, tile_n = tile_row * bm, tile_col * bn
        acc = kb.register_tensor(f32, [bm, bn])
        ring_loop = (
            kb.range(0, k_tiles, 1, stages=stages, phase=CONSUMER_INITIAL_PHASE)
            if tiles is None
            else kb.range(0, k_tiles, 1, stages=stages, ring=tiles)
        )
        for it in ring_loop:
            k0 = it.index * bk
            a_tile, b_tile = sa[it.stage], sb[it.stage]
            with kb.single_thread():
                kb.mbarrier.arrive_and_expect_tx(full[it.stage], a_tile.nbytes + b_tile.nbytes)
                kb.tma.global_to_shared(a, a_tile, [tile_m, k0], mbarrier=full[it.stage])
                # B's tile is the cluster's: each block copies its share
                # into every block's stage.
                kb.tma.global_to_shared(
                    b,
                    b_tile,
                    [tile_n, k0] if b_layout == "nk" else [k0, tile_n],
                    mbarrier=full[it.stage],
                    multicast=ctas > 1,
                )
            kb.mbarrier.wait(full[it.stage], phase=it.phase)
            kb.wgmma.fence()
            kb.wgmma.mma(a_tile, b_tile.transpose() if b_layout == "nk" else b_tile, acc)
            kb.wgmma.commit_group()
            kb.wgmma.wait_group(0)
            # The stage is free once every block that reads it is done.
            sync()
        result = acc if problem.out_dtype == f32 else kb.cast(acc, problem.out_dtype)
        if sc is None:
            kb.store_global(c, result, [tile_m, tile_n])
        else:
            store_through_shared(
                kb,
                result,
                sc,
                c,
                tile_m,
                tile_n,
                wait_first=config.persistent,
                tma=config.tma_store,
            )

    # In a cluster, a unit per cluster: block x / ctas.
    first_unit = block_x // ctas
    if config.persistent:
        num_units = units_m * tiles_n
        step = kb.grid_dim.x // ctas
        for tiles in kb.tile_range(
            first_unit, num_units, step, stages=stages, phase=CONSUMER_INITIAL_PHASE
        ):
            one_tile(tiles.tile, tiles)
    else:
        one_tile(first_unit + kb.block_idx.y * units_m, None)
    # compile_matmul's callers expect the verifier's rules as CompileErrors.
    return kb.finish(verify=False).module


# Compiling -------------------------------------------------------------------------------


def specialization_passes(config: MatmulConfig) -> list:
    """--warp-specialize then, unless the kernel is persistent,
    --unroll-ring-buffer with `config`'s schedule."""
    from wsc.passes.unroll_ring_buffer import UnrollRingBuffer
    from wsc.passes.warp_specialize import WarpSpecialize

    specialize = WarpSpecialize(
        num_stages=config.num_stages,
        num_consumer_groups=config.num_consumer_groups,
        producer=config.producer,
        wgmma_in_flight=config.wgmma_in_flight,
        ping_pong=config.ping_pong,
        rebalance_registers=config.rebalance_registers,
        release=config.release,
    )
    # A persistent kernel's K loops start where the previous tile's stopped:
    # their stages stay run-time values (--unroll-ring-buffer rejects them).
    return [specialize] if config.persistent else [specialize, UnrollRingBuffer()]


def lowering_pass(config: MatmulConfig):
    """--convert-wsc-to-nvvm with `config`'s debug options."""
    from wsc.passes.convert_wsc_to_nvvm import ConvertWscToNvvm

    return ConvertWscToNvvm(
        wait_spin_limit=config.debug_spin_limit, delay_role=config.debug_delay_role
    )


def _check_tma_strides(
    k: int, n: int, problem: MatmulProblem, config: MatmulConfig | None = None
) -> None:
    """A and B are read with TMA, whose global row strides must be multiples
    of 16 bytes; so is C when `config` stores it with TMA (otherwise ordinary
    stores write it and it has no such rule)."""
    rows = [
        ("A", "K", k, problem.dtype),
        (
            "B",
            "K" if problem.b_layout == "nk" else "N",
            k if problem.b_layout == "nk" else n,
            problem.dtype,
        ),
    ]
    if config is not None and config.tma_store:
        rows.append(("C", "N", n, problem.out_dtype))
    for tensor, dim, extent, dtype in rows:
        size = ELEMENT_BYTES[dtype]
        if extent * size % TMA_ALIGN:
            raise ValueError(
                f"{tensor}'s rows are {extent * size} bytes ({dim} = {extent} x {size} B); TMA "
                f"needs a row stride that is a multiple of {TMA_ALIGN} bytes, so {dim} "
                f"must be a multiple of {TMA_ALIGN // size}"
            )


def compile_matmul(
    m: int,
    n: int,
    k: int,
    problem: MatmulProblem,
    config: MatmulConfig,
    out_dir: str | os.PathLike,
    dump_dir: str | os.PathLike | None = None,
    context: ir.Context | None = None,
) -> CompileResult:
    """Build, specialize, unroll and lower the matmul for an M x N x K problem and
    write its artifact directory."""
    from wsc.dialect import make_context

    for name, value in (("m", m), ("n", n), ("k", k)):
        if value < 1:
            raise ValueError(f"{name} must be positive, got {value}")
    _check_tma_strides(k, n, problem, config)
    context = context or make_context()
    with context, ir.Location.unknown():
        module = build_matmul(problem, config)
        result = compile_module(
            module, specialization_passes(config), dump_dir, lowering=lowering_pass(config)
        )
    write_matmul_artifact(out_dir, result, m, n, k, problem, config)
    return result


def write_matmul_artifact(
    out_dir: str | os.PathLike,
    result: CompileResult,
    m: int,
    n: int,
    k: int,
    problem: MatmulProblem,
    config: MatmulConfig,
) -> Path:
    """The artifact of a compiled matmul for one M x N x K problem. The kernel
    reads its sizes at run time, so one CompileResult serves every shape
    whose TMA row strides are legal."""
    _check_tma_strides(k, n, problem, config)
    problem_json = {
        "m": m,
        "n": n,
        "k": k,
        "dtype": problem.dtype,
        "out_dtype": problem.out_dtype,
        "b_layout": problem.b_layout,
    }
    return write_artifact(
        out_dir,
        result,
        {"m": m, "n": n, "k": k},
        (("m", config.block_m), ("n", config.block_n)),
        problem_json,
        config.as_dict(),
        persistent=config.persistent,
    )
