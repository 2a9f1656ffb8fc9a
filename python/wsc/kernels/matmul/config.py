"""The matmul's problem and config: what it computes and its tile shape and
schedule, with the checks that need no IR. No MLIR here: wsc.matmul and the
GPU side use it without the bindings.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from wsc.passes.warp_specialize_choices import (
    CONSUMER_GROUPS,
    PRODUCER_THREADS,
    PRODUCERS,
    RELEASES,
    WGMMA_IN_FLIGHT,
)
from wsc.runtime.artifact import dim_size_name, size_value
from wsc.target.hopper import (
    E4M3,
    ELEMENT_BYTES,
    HALF_DTYPES,
    MAX_DYNAMIC_SMEM,
    MAX_STAGES,
    MAX_TMA_BOX,
    OPERAND_DTYPES,
    RESULT_DTYPES,
    SWIZZLE_BYTES,
    SWIZZLE_SPANS,
    TMA_ALIGN,
    WARPGROUP_SIZE,
    WGMMA_EXTRA_REGISTERS,
    WGMMA_M,
    WGMMA_N_MAX,
    WGMMA_N_STEP,
    consumer_register_budget,
    entry_register_cap,
    stage_bytes,
    swizzle_padded_cols,
    tile_registers,
    tma_row_problem,
    wgmma_k,
)

INPUT_DTYPES = OPERAND_DTYPES
OUTPUT_DTYPES = RESULT_DTYPES
#: The widest K tile: a swizzled row of the narrowest elements (fp8); a
#: problem's dtype narrows it (`row_elements`).
SWIZZLED_ROW_ELEMENTS = SWIZZLE_BYTES // min(ELEMENT_BYTES.values())


def row_elements(dtype: str) -> int:
    """The elements of `dtype` in one swizzled row: A's K tile is one such TMA
    box row at most (wsc.matmul's spaces take it whole)."""
    return SWIZZLE_BYTES // ELEMENT_BYTES[dtype]


B_LAYOUTS = ("nk", "kn")
#: The blocks block scales cover (MatmulProblem.block_scales): 128 elements of
#: K for a row of A, 128 x 128 of B.
SCALE_BLOCK = 128
#: The kernel takes scale_a's transpose with rows padded to a multiple of this
#: many scales: 16 bytes, as TMA copies rows.
SCALE_ROW_ALIGN = TMA_ALIGN // ELEMENT_BYTES["f32"]
#: The activations a fused epilogue applies (wsc.kernels.matmul.epilogue),
#: as torch.nn.functional computes them: "gelu" by erf, "gelu_tanh" by the
#: tanh approximation.
ACTIVATIONS = ("relu", "gelu", "gelu_tanh", "silu")


#: MatmulConfig's field annotations (strings, see `annotations` above) and the
#: types their values must have.
_FIELD_TYPES = {"int": int, "bool": bool, "str": str}


@dataclass(frozen=True)
class MatmulConfig:
    """The tile shape and schedule of one matmul kernel."""

    block_m: int = 128
    block_n: int = 128
    #: At most one swizzled row of the problem's dtype (`row_elements`).
    block_k: int = 64
    num_stages: int = 4
    num_consumer_groups: int = 1
    producer: str = "warp"
    #: WGMMA groups a consumer leaves in flight across K tiles (0 or 1; see
    #: --warp-specialize's wgmma-in-flight).
    wgmma_in_flight: int = 0
    #: Tile rows per group of the grouped tile order (0: block id = tile).
    group_m: int = 0
    #: One block per SM looping over tiles (see wsc.kernels.matmul.build).
    persistent: bool = False
    #: A persistent kernel's two consumer groups take whole tiles in turn
    #: (--warp-specialize's ping-pong): one stores while the other multiplies.
    ping_pong: bool = False
    #: The consumer groups issue each K tile's WGMMAs in turn
    #: (--warp-specialize's wgmma-turns), so that one group's register math
    #: after its wait (block scales) may run under the next group's WGMMAs.
    #: In no space: with block scales on the H200 it tied or lost
    #: (results/h200-fp8-wgmma-turns.md).
    wgmma_turns: bool = False
    #: The epilogue stages the tile in shared memory and one thread stores it
    #: with TMA (16-bit outputs; see wsc.kernels.matmul.build).
    tma_store: bool = False
    #: The epilogue stages the tile in shared memory and all threads store it
    #: row by row (16-bit outputs, any row length; see wsc.kernels.matmul.build).
    coalesced_store: bool = False
    #: Blocks per cluster along M, sharing B's tile by multicast (1 or 2; see
    #: wsc.kernels.matmul.build).
    cluster_m: int = 1
    #: Blocks per cluster along N, sharing A's tile by multicast (1 to 4; see
    #: wsc.kernels.matmul.build).
    cluster_n: int = 1
    #: A warpgroup producer gives registers to the consumers with setmaxnreg
    #: (--warp-specialize's rebalance-registers); False keeps the launch
    #: budget in every role.
    rebalance_registers: bool = True
    #: Who releases a stage: every consumer thread ("thread") or one arrival
    #: per consumer warp ("warp"; --warp-specialize's release).
    release: str = "thread"
    #: Blocks that share each output tile, each summing a share of K (grid
    #: axis z), the last to finish adding the partial sums in a fixed order
    #: (1: no split; see wsc.kernels.matmul.build).
    split_k: int = 1
    #: A persistent block sums an equal share of all tiles' K tiles, taken in
    #: tile order, so the last wave is as full as the others; a tile shared by
    #: two blocks is handed over through the split-K workspace and added in a
    #: fixed order (see wsc.kernels.matmul.build).
    stream_k: bool = False
    #: The WGMMA computes C^T = B A^T: B's tile (block_n rows of N) is its A
    #: operand, A's tile (block_m rows of M) its B operand, and the tile is
    #: stored transposed. For small M, where block_m can then be 16 or 32
    #: (the WGMMA N) instead of the WGMMA M of 64 (see wsc.kernels.matmul.build).
    swap_ab: bool = False
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
        if self.wgmma_turns and (self.num_consumer_groups == 1 or self.ping_pong):
            raise ValueError(
                "wgmma_turns = True needs num_consumer_groups of 2 or 4 sharing each tile "
                "(not ping_pong = True): the groups take turns issuing a K tile's WGMMAs"
            )
        if self.cluster_m not in (1, 2):
            raise ValueError(f"cluster_m must be 1 or 2, got {self.cluster_m}")
        if self.cluster_n not in (1, 2, 3, 4):
            raise ValueError(f"cluster_n must be 1 to 4, got {self.cluster_n}")
        if self.cluster_n > 1 and (self.persistent or self.split_k > 1 or self.cluster_m > 1):
            raise ValueError(
                "cluster_n > 1 launches a block per tile, a cluster's along N: it takes "
                "neither persistent = True, split_k > 1 nor cluster_m = 2"
            )
        if self.cluster_n > 1 and self.block_m % (8 * self.cluster_n):
            raise ValueError(
                f"cluster_n = {self.cluster_n} splits A's tile of {self.block_m} rows between "
                f"the blocks of a cluster in slices of 8 rows: it needs a multiple of "
                f"{8 * self.cluster_n} rows"
            )
        if self.cluster_m > 1 and self.ping_pong:
            raise ValueError("cluster_m = 2 with ping_pong = True is not supported")
        if not self.rebalance_registers and self.producer != "warpgroup":
            raise ValueError(
                "rebalance_registers = False only applies to producer = "
                "'warpgroup': a producer warp never gives registers away"
            )
        if self.release not in RELEASES:
            raise ValueError(f"release must be 'thread' or 'warp', got '{self.release}'")
        if self.tma_store and self.coalesced_store:
            raise ValueError(
                "tma_store and coalesced_store are two ways to copy the staged tile out: choose one"
            )
        if self.split_k > 1 and (self.persistent or self.cluster_m > 1):
            raise ValueError(
                "split_k > 1 launches a block per tile and split: it takes neither "
                "persistent = True nor cluster_m = 2"
            )
        if self.stream_k and not (
            self.persistent and self.cluster_m == 1 and not self.ping_pong and self.split_k == 1
        ):
            raise ValueError(
                "stream_k = True shares K tiles between the blocks of a persistent grid: it "
                "needs persistent = True and takes neither cluster_m = 2, ping_pong = True "
                "nor split_k > 1"
            )
        if self.swap_ab and (self.staged_store or self.persistent or self.cluster_m > 1):
            raise ValueError(
                "swap_ab = True stores the transposed tile from registers, a block "
                "per tile: it takes neither tma_store, coalesced_store, persistent "
                "nor cluster_m = 2"
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
        # The tile side along the WGMMA's M and the one along its N.
        wgmma_m, wgmma_n = ("block_n", "block_m") if self.swap_ab else ("block_m", "block_n")
        along_m, along_n = getattr(self, wgmma_m), getattr(self, wgmma_n)
        rules = (
            (
                wgmma_m,
                along_m % WGMMA_M == 0 and WGMMA_M <= along_m <= MAX_TMA_BOX,
                f"a multiple of {WGMMA_M} (the WGMMA M) up to {MAX_TMA_BOX} (a TMA box)"
                + (" with swap_ab = True" if self.swap_ab else ""),
            ),
            (
                wgmma_n,
                along_n % WGMMA_N_STEP == 0 and 0 < along_n <= WGMMA_N_MAX,
                f"a multiple of {WGMMA_N_STEP} up to {WGMMA_N_MAX} (the WGMMA N)"
                + (" with swap_ab = True" if self.swap_ab else ""),
            ),
            (
                "block_k",
                self.block_k % wgmma_k("f16") == 0 and 0 < self.block_k <= SWIZZLED_ROW_ELEMENTS,
                f"a multiple of {wgmma_k('f16')} (the WGMMA K) up to {SWIZZLED_ROW_ELEMENTS} "
                f"(a {SWIZZLE_BYTES}-byte swizzled row of fp8)",
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
            ("split_k", self.split_k >= 1, "1 (no split) or more blocks per tile"),
        )
        for name, ok, allowed in rules:
            if not ok:
                raise ValueError(f"{name} must be {allowed}, got {getattr(self, name)!r}")
        groups = self.num_consumer_groups
        # A ping-pong group takes the whole tile: its rows are not split.
        if not self.ping_pong and along_m % (WGMMA_M * groups):
            raise ValueError(
                f"{wgmma_m} = {along_m} cannot be split over {groups} consumer warpgroups "
                f"in multiples of {WGMMA_M} rows (the WGMMA M)"
            )
        # A group's f32 accumulator: its share of the rows, or (ping-pong) the tile.
        rows = along_m if self.ping_pong else along_m // groups
        self._check_registers(
            tile_registers(rows, along_n, "f32"),
            f"each consumer group's {rows}x{along_n} f32 accumulator takes",
            self._accumulator_remedy(along_m, along_n),
        )

    def _accumulator_remedy(self, along_m: int, along_n: int) -> str:
        """What makes each consumer group's accumulator fit: the group counts
        and producer with which it would, else a narrower tile."""

        def fits(groups: int, producer: str) -> bool:
            if not self.ping_pong and along_m % (WGMMA_M * groups):
                return False
            rows = along_m if self.ping_pong else along_m // groups
            threads = groups * WARPGROUP_SIZE + PRODUCER_THREADS[producer]
            needed = tile_registers(rows, along_n, "f32") + WGMMA_EXTRA_REGISTERS
            return needed <= entry_register_cap(threads)

        # Ping-pong takes exactly two groups, WGMMA turns more than one.
        allowed = [
            groups
            for groups in CONSUMER_GROUPS
            if (groups == 2 or not self.ping_pong) and (groups > 1 or not self.wgmma_turns)
        ]
        remedies = [
            f"num_consumer_groups = {groups}"
            for groups in allowed
            if groups != self.num_consumer_groups and fits(groups, self.producer)
        ]
        remedies += [
            f"producer = {producer!r}"
            for producer in PRODUCERS
            if producer != self.producer and fits(self.num_consumer_groups, producer)
        ]
        return "use " + " or ".join([*remedies, "a narrower tile"])

    @property
    def _threads(self) -> int:
        return self.num_consumer_groups * WARPGROUP_SIZE + PRODUCER_THREADS[self.producer]

    def _check_registers(
        self, registers: int, holding: str, remedy: str, rebalanced: bool = False
    ) -> None:
        """A consumer thread's register tiles (`registers`, what `holding`
        says), with its WGMMA's, within what ptxas gives each thread of the
        block, or with `rebalanced` within the consumer's setmaxnreg budget
        where a producer warpgroup gives registers back."""
        threads = self._threads
        cap = entry_register_cap(threads)
        if rebalanced and self.producer == "warpgroup" and self.rebalance_registers:
            cap = consumer_register_budget(threads, self.num_consumer_groups)
        if registers + WGMMA_EXTRA_REGISTERS > cap:
            given = (
                f"each thread of the {threads}-thread block {cap}"
                if cap == entry_register_cap(threads)
                else f"each consumer thread at most {cap} (setmaxnreg)"
            )
            raise ValueError(
                f"{holding} {registers} registers per thread and its WGMMA about "
                f"{WGMMA_EXTRA_REGISTERS} more, but ptxas gives {given}: {remedy}"
            )

    def check_problem(self, problem: MatmulProblem) -> None:
        """The rules that depend on the problem."""
        block_k = self.block_k
        if block_k % wgmma_k(problem.dtype) or block_k > row_elements(problem.dtype):
            raise ValueError(
                f"block_k must be a multiple of {wgmma_k(problem.dtype)} (the WGMMA K of "
                f"{problem.dtype}) up to {row_elements(problem.dtype)} (a {SWIZZLE_BYTES}-byte "
                f"swizzled row), got {block_k}"
            )
        b_rows, b_cols = self.b_stage_tile(problem)
        narrowest = SWIZZLE_SPANS[-1]
        if b_cols * ELEMENT_BYTES[problem.dtype] % narrowest:
            raise ValueError(
                f"B's tile rows are {b_cols} x {ELEMENT_BYTES[problem.dtype]} B with b_layout "
                f"'{problem.b_layout}': TMA and WGMMA need a multiple of {narrowest} B"
            )
        if self.staged_store and self.block_n * ELEMENT_BYTES[problem.out_dtype] % narrowest:
            raise ValueError(
                f"the staged epilogue's tile rows are {self.block_n} x "
                f"{ELEMENT_BYTES[problem.out_dtype]} B: TMA needs a multiple of {narrowest} B"
            )
        if self.cluster_m > 1 and b_rows % (8 * self.cluster_m):
            raise ValueError(
                f"cluster_m = {self.cluster_m} splits B's tile of {b_rows} rows between the "
                f"blocks of a cluster in slices of 8 rows: it needs a multiple of "
                f"{8 * self.cluster_m} rows"
            )
        if problem.batched and not (self.tma_store and self.split_k == 1):
            raise ValueError(
                "a batched product stores C with TMA (tma_store = True) and does not split K: "
                "its matrices are read and written by TMA copies only"
            )
        if problem.batched and self.stream_k:
            raise ValueError("a batched product shares no tile between blocks: not stream-K")
        if problem.block_scales:
            self._check_block_scales(problem)
        if self.staged_store and problem.out_dtype not in HALF_DTYPES:
            option = "tma_store" if self.tma_store else "coalesced_store"
            raise ValueError(
                f"{option} = True needs an f16 or bf16 output, got "
                f"{problem.out_dtype}: the staging tile is a shared-memory tile of "
                f"the output's dtype"
            )
        self._check_shared_memory(problem)

    def b_stage_tile(self, problem: MatmulProblem) -> tuple[int, int]:
        """B's stage tile as stored: [BN, BK] for "nk", [BK, BN] for "kn", a
        "kn" row padded to whole swizzle atoms where it would take 32-byte
        ones (target.hopper.swizzle_padded_cols; WGMMA reads the first BN
        columns)."""
        if problem.b_layout == "nk":
            return self.block_n, self.block_k
        return self.block_k, swizzle_padded_cols(self.block_n, problem.dtype)

    def _check_shared_memory(self, problem: MatmulProblem) -> None:
        """The ring's stages and the staged C tile within a block's shared
        memory, refused here with the stage count that fits rather than by
        the lowering at a line of this package (the lowering still weighs
        the rest: barriers, a second staging tile)."""
        b_rows, b_cols = self.b_stage_tile(problem)
        stage = stage_bytes(self.block_m, self.block_k, problem.dtype) + stage_bytes(
            b_rows, b_cols, problem.dtype
        )
        scales = stage_bytes(1, self.block_m, "f32") if problem.block_scales else 0
        stage += scales
        staging = 0
        if self.staged_store:
            staging = stage_bytes(self.block_m, self.block_n, problem.out_dtype)
        needed = self.num_stages * stage + staging
        if needed > MAX_DYNAMIC_SMEM:
            fit = max(0, (MAX_DYNAMIC_SMEM - staging) // stage)
            raise ValueError(
                f"num_stages = {self.num_stages}: a stage holds a {self.block_m}x"
                f"{self.block_k} tile of A and a {b_rows}x{b_cols} tile of B"
                + (f" ({problem.dtype}) and a row of {self.block_m} f32 scales" if scales else "")
                + f", {stage} bytes"
                + ("" if scales else f" of {problem.dtype}")
                + (f", and the staged C tile takes {staging}" if staging else "")
                + f": {needed} bytes, more than the {MAX_DYNAMIC_SMEM} of shared memory a "
                f"block may use; "
                + (f"at most {fit} stages fit" if fit else "no stage fits: narrow the tile")
            )

    def _check_block_scales(self, problem: MatmulProblem) -> None:
        """Each K tile is one block of the scales, each tile's columns within
        one block of B's, and the product of a K tile waits in registers beside
        the sum until it is scaled; with wgmma_in_flight = 1 in one of two
        product tiles, while the next K tile's WGMMAs fill the other, in a
        persistent kernel without wgmma_turns (the K loop of two K tiles per
        trip that --warp-specialize makes is not one --unroll-ring-buffer
        takes, nor one whose groups take turns)."""
        if (
            self.block_k != SCALE_BLOCK
            or SCALE_BLOCK % self.block_n
            or self.swap_ab
            or (self.wgmma_in_flight and not (self.persistent and not self.wgmma_turns))
        ):
            raise ValueError(
                f"block scales need block_k = {SCALE_BLOCK} (a block of the scales), block_n "
                f"dividing {SCALE_BLOCK}, swap_ab = False and, with wgmma_in_flight = 1, "
                f"persistent = True and wgmma_turns = False, got block_k = {self.block_k}, "
                f"block_n = {self.block_n}, swap_ab = {self.swap_ab}, wgmma_in_flight = "
                f"{self.wgmma_in_flight}, persistent = {self.persistent}, wgmma_turns = "
                f"{self.wgmma_turns}"
            )
        rows = self.block_m // self.num_consumer_groups
        products = 2 if self.wgmma_in_flight else 1
        self._check_registers(
            (1 + products) * tile_registers(rows, self.block_n, "f32"),
            f"with block scales each consumer group's {rows}x{self.block_n} f32 sum and "
            f"{'two K tile products' if products > 1 else 'a K tile product'} take",
            "use a narrower tile" + (" or wgmma_in_flight = 0" if self.wgmma_in_flight else ""),
            rebalanced=True,
        )

    @property
    def cluster(self) -> int:
        """Blocks per cluster (along M or along N)."""
        return self.cluster_m * self.cluster_n

    @property
    def staged_store(self) -> bool:
        """The epilogue goes through a shared-memory staging tile."""
        return self.tma_store or self.coalesced_store

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class MatmulProblem:
    """What the kernel computes: dtypes and B's layout (shapes are run-time),
    and its fused epilogue, C = act(alpha A op(B) + bias) + residual: a scalar
    argument alpha, a bias [N] and a residual [M, N] of A's dtype, each
    optional, and an activation of ACTIVATIONS or None. `batched`: A, B and C are batches of matrices
    ([batch, M, K] ...), C[i] = A[i] op(B[i]): a block per tile of each matrix
    (the grid's z the matrices), or persistent blocks walking every matrix's
    tiles. fp8 (e4m3) operands come with per-tensor scales, f32 tensors of one
    element (as torch._scaled_mm's): C = act(alpha scale_a scale_b A B^T),
    B as [N, K] ("nk", the one layout WGMMA reads fp8 in). With
    `block_scales` (DeepSeek-V3's): a scale per row of A and block of
    SCALE_BLOCK along K, scale_a [M, cdiv(K, 128)] (the kernel takes its
    transpose [cdiv(K, 128), M], whose row of a K tile TMA copies beside A's
    tile), and per 128 x 128 block of B, scale_b [cdiv(N, 128), cdiv(K, 128)]
    (the kernel reads it flat), applied in registers to each K tile's product
    before it is added up."""

    dtype: str = "f16"
    out_dtype: str = "f32"
    b_layout: str = "nk"
    bias: bool = False
    activation: str | None = None
    residual: bool = False
    batched: bool = False
    alpha: bool = False
    block_scales: bool = False

    def __post_init__(self):
        for name, value, allowed in (
            ("dtype", self.dtype, INPUT_DTYPES),
            ("out_dtype", self.out_dtype, OUTPUT_DTYPES),
            ("b_layout", self.b_layout, B_LAYOUTS),
        ):
            if value not in allowed:
                raise ValueError(f"{name} must be one of {', '.join(allowed)}, got '{value}'")
        if self.activation is not None and self.activation not in ACTIVATIONS:
            raise ValueError(
                f"activation must be one of {', '.join(ACTIVATIONS)} or None, got {self.activation!r}"
            )
        for name in ("bias", "residual", "batched", "alpha", "block_scales"):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"{name} must be a bool, got {getattr(self, name)!r}")
        if self.batched and self.epilogue():
            raise ValueError(
                "a batched product has no fused epilogue (alpha, bias, activation, residual)"
            )
        if self.scaled and (self.b_layout != "nk" or self.bias or self.residual or self.batched):
            raise ValueError(
                f"{E4M3} operands take B as [N, K] (b_layout 'nk': WGMMA reads fp8 K-major "
                f"only), and neither a bias, a residual nor batches, got b_layout "
                f"'{self.b_layout}'"
                + "".join(
                    f", {part}" for part in ("bias", "residual", "batched") if getattr(self, part)
                )
            )
        if self.block_scales and not self.scaled:
            raise ValueError(f"block_scales = True scales {E4M3} operands, got {self.dtype}")

    @property
    def scaled(self) -> bool:
        """The product is scaled (fp8 operands): by two per-tensor scales, or
        with `block_scales` block by block."""
        return self.dtype == E4M3

    def epilogue_tensors(self) -> dict[str, str]:
        """The kernel's names of the tensors of its epilogue after a, b and c
        ("d", "e", ...): the bias, the residual, the scales; then of its
        scalar alpha."""
        names = iter("defg")
        parts = {
            "bias": self.bias,
            "residual": self.residual,
            "scale_a": self.scaled,
            "scale_b": self.scaled,
            "alpha": self.alpha,
        }
        return {part: next(names) for part, present in parts.items() if present}

    def scale_size_rules(self) -> dict[str, str]:
        """The sizes the kernel reads beside M, N, K (and batch), as size
        expressions of M, N and K: the length of each per-tensor scale, 1;
        with block scales, the sizes of scale_a's transpose [K blocks, M]
        (rows padded to 16 bytes, as TMA copies them) and the length of the
        flat scale_b."""
        names = self.epilogue_tensors()
        if not self.scaled:
            return {}
        if not self.block_scales:
            return {dim_size_name(names[scale], 0): "1" for scale in ("scale_a", "scale_b")}
        k_blocks = f"cdiv(k, {SCALE_BLOCK})"
        padded_m = f"cdiv(m, {SCALE_ROW_ALIGN}) * {SCALE_ROW_ALIGN}"
        return {
            dim_size_name(names["scale_a"], 0): k_blocks,
            dim_size_name(names["scale_a"], 1): padded_m,
            dim_size_name(names["scale_b"], 0): f"cdiv(n, {SCALE_BLOCK}) * {k_blocks}",
        }

    def scale_sizes(self, m: int, n: int, k: int) -> dict[str, int]:
        """scale_size_rules' sizes for an M x N x K product."""
        return {
            name: size_value(rule, {"m": m, "n": n, "k": k})
            for name, rule in self.scale_size_rules().items()
        }

    def epilogue(self) -> dict:
        """The epilogue as the matmul check reads it from an artifact's config."""
        described: dict = dict(self.epilogue_tensors())
        if self.activation is not None:
            described["activation"] = self.activation
        if self.block_scales:
            described["scale_block"] = SCALE_BLOCK
        return described


def check_tma_strides(
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
        why = tma_row_problem(dim, extent, ELEMENT_BYTES[dtype])
        if why is not None:
            raise ValueError(f"{tensor}: {why}")
