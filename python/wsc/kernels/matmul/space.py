"""The config spaces wsc.matmul tunes over, and the kernel function they are
spaces of; benchmarks/matmul.py tunes over the same configs. A module of its
own, without MLIR at import: the autotuner keys
compiled kernels by this file's source (with the compiler's), so the API
around it (wsc.matmul) can change without invalidating them.
"""

from __future__ import annotations

from wsc.autotune import autotune


def matmul_kernel(
    dtype: str,
    out_dtype: str,
    b_layout: str,
    block_m: int = 128,
    block_n: int = 256,
    block_k: int | None = None,
    num_stages: int = 4,
    num_consumer_groups: int = 2,
    producer: str = "warpgroup",
    wgmma_in_flight: int = 1,
    group_m: int = 8,
    persistent: bool = False,
    ping_pong: bool = False,
    wgmma_turns: bool = False,
    tma_store: bool = False,
    coalesced_store: bool = False,
    cluster_m: int = 1,
    cluster_n: int = 1,
    split_k: int = 1,
    stream_k: bool = False,
    swap_ab: bool = False,
    bias: bool = False,
    activation: str | None = None,
    residual: bool = False,
    batched: bool = False,
    alpha: bool = False,
    block_scales: bool = False,
):
    """The matmul kernel of wsc.kernels.matmul.build for one config, specialized
    and ready to compile (a wsc.builder.Kernel)."""
    from mlir import ir

    from wsc.builder import Kernel
    from wsc.dialect import make_context
    from wsc.kernels.matmul.build import ALPHA_DEFAULT, build_matmul, grid_tiles, partial_sums
    from wsc.kernels.matmul.config import MatmulConfig, MatmulProblem, row_elements

    problem = MatmulProblem(
        dtype, out_dtype, b_layout, bias, activation, residual, batched, alpha, block_scales
    )
    config = MatmulConfig(
        block_m=block_m,
        block_n=block_n,
        # A K tile of one swizzled row: 64 16-bit elements, 128 of fp8.
        block_k=block_k or row_elements(dtype),
        num_stages=num_stages,
        num_consumer_groups=num_consumer_groups,
        producer=producer,
        wgmma_in_flight=wgmma_in_flight,
        group_m=group_m,
        persistent=persistent,
        ping_pong=ping_pong,
        wgmma_turns=wgmma_turns,
        tma_store=tma_store,
        coalesced_store=coalesced_store,
        cluster_m=cluster_m,
        cluster_n=cluster_n,
        split_k=split_k,
        stream_k=stream_k,
        swap_ab=swap_ab,
    )
    context = make_context()
    with context, ir.Location.unknown():
        module = build_matmul(problem, config)
    # A persistent kernel's stages stay run-time values: nothing to unroll.
    simple = Kernel(
        module,
        context,
        "matmul",
        grid=(*grid_tiles(config), *((("batch", 1),) if batched else ())),
        unroll=not persistent,
        persistent=persistent,
        check="matmul",
        split_k=partial_sums(config),
        check_config={"epilogue": problem.epilogue()} if problem.epilogue() else None,
        scalars={problem.epilogue_tensors()["alpha"]: ALPHA_DEFAULT} if alpha else None,
        # The tuner weighs a config's spills by its speed: they are not errors here.
        allow_spills=True,
    )
    return simple.warp_specialize(
        num_stages=num_stages,
        num_consumer_groups=num_consumer_groups,
        producer=producer,
        wgmma_in_flight=wgmma_in_flight,
        ping_pong=ping_pong,
        wgmma_turns=wgmma_turns,
    )


_TILES = (
    "block_m, block_n, num_consumer_groups, producer, num_stages, wgmma_in_flight, persistent, "
    "split_k"
)
_CLUSTERED_TILES = _TILES + ", cluster_m"
#: Split-K tiles (see wsc.kernels.matmul.build): two or four blocks per output
#: tile for problems whose tiles leave most SMs idle (M = 16, N = 4096: 32
#: tiles of 64 x 128 for 132 SMs). Split-K with two consumer groups is not in
#: the spaces: one H200 run failed a "kn" 128x256 split-4 kernel, the next
#: passed it (results/h200-split-k.md), and the tuner never chose them.
_SPLIT_TILES = [(64, 128, 1, "warp", 6, 1, False, splits) for splits in (2, 4)]
#: The config spaces, by epilogue; B's layout does not narrow them (a "kn" B
#: stage wider than 64 columns is copied as one TMA box per 64-column swizzle
#: atom, read by WGMMA N-major). The tiles and schedules are the fastest on
#: the H200 (BENCHMARKS.md; the tuning is in
#: benchmarks/results/comparison-log.txt): one WGMMA group in flight, or
#: persistent without one, each with and without the grouped tile order,
#: which pays off on large problems and costs a few percent at short K.
#: "-tma" is the space of problems whose C can be stored with TMA
#: (MatmulPlan.tma_store): the TMA-store epilogue won every such shape of
#: BENCHMARKS.md, persistent ones with a WGMMA group in flight most of them.
#: "-coalesced" is that of the other problems with a 16-bit C
#: (MatmulPlan.coalesced_store): the coalesced-store epilogue won the ragged
#: shape of BENCHMARKS.md, whose rows are 8193 halves. Both staged spaces hold
#: the 2-CTA cluster configs (cluster_m = 2) that won their shapes there: short
#: K, K = 14336, and the ragged shape's K = 8200. The narrow tiles (64 or 128
#: rows, one consumer warpgroup) are for small M, where 128x256 tiles leave most
#: SMs idle (M = 128, N = 4096: 16 tiles for 132 SMs).
_REGISTER_STORE = autotune(
    _TILES,
    [
        (128, 128, 1, "warp", 4, 1, False, 1),
        (128, 256, 2, "warpgroup", 3, 1, False, 1),
        (128, 256, 2, "warpgroup", 4, 1, False, 1),
        (256, 128, 2, "warpgroup", 4, 1, False, 1),
        (128, 128, 2, "warpgroup", 6, 1, False, 1),
        (128, 256, 2, "warpgroup", 3, 0, True, 1),
        (128, 256, 2, "warpgroup", 4, 0, True, 1),
        (64, 128, 1, "warp", 6, 1, False, 1),
        (64, 256, 1, "warp", 4, 1, False, 1),
        *_SPLIT_TILES,
    ],
)(autotune("group_m", [0, 8])(matmul_kernel))
#: Stream-K (see wsc.kernels.matmul.build): the persistent 128x256 tiles with
#: every block summing the same share of K tiles, for tile counts just above a
#: multiple of the SMs (M = 512, N = 28672: 448 tiles, 3.4 waves of 132).
_STREAM_K_TILES = [
    (128, 256, 2, "warpgroup", 3, in_flight, True, 1, 1, True) for in_flight in (1, 0)
]
#: Ping-pong (see MatmulConfig.ping_pong): each consumer group a whole 128x128
#: tile, one group's epilogue under the other's WGMMAs: the tuner's choice for
#: a fused bias, GELU and residual on 9 of the 11 LLM shapes with M >= 2048 on
#: the H200 (results/h200-fused-epilogue-vs-torch-compile.md). Two staging
#: tiles of 32 KB leave room for 4 or 5 stages.
_PING_PONG_TILES = [
    (128, 128, 2, "warpgroup", stages, 1, True, 1, 1, False, True) for stages in (4, 5)
]
#: Tiles in clusters along N (MatmulConfig.cluster_n), the blocks of a
#: cluster sharing A's tile: at M = 200, N = 5000 on the H200 128 x 112 tiles
#: in pairs ran at 317 TFLOP/s and 128 x 128 in pairs at 300-302, against 286-289
#: for the best tile without them (results/h200-clusters-along-n.md).
_CLUSTERS_ALONG_N = [
    ((128, 112, 2, "warpgroup", 6, 1, False, 1, 1), 2),
    ((128, 128, 2, "warpgroup", 6, 1, False, 1, 1), 2),
]
#: The grouped tile orders (MatmulConfig.group_m) the TMA-store space tries
#: with each tile whose order is the tile loop's.
_GROUP_M = (8, 16)
_TMA_STORE = autotune(
    _CLUSTERED_TILES + ", stream_k, ping_pong, cluster_n, group_m",
    [
        *[
            (*tile, False, False, 1, group_m)
            for tile in [
                (128, 256, 2, "warpgroup", 3, 1, True, 1, 1),
                (128, 256, 2, "warpgroup", 3, 0, True, 1, 1),
                (128, 256, 2, "warpgroup", 3, 1, False, 1, 1),
                (256, 128, 2, "warpgroup", 3, 1, True, 1, 1),
                (128, 256, 2, "warpgroup", 3, 1, True, 1, 2),
                (128, 256, 2, "warpgroup", 3, 1, False, 1, 2),
                (64, 128, 1, "warp", 6, 1, False, 1, 1),
                (64, 256, 1, "warp", 4, 1, False, 1, 1),
                (128, 128, 1, "warp", 4, 1, False, 1, 1),
                # cuBLAS's tile at M = 512 on the H200 (nvjet 128x128, 6 stages, pairs).
                (128, 128, 2, "warpgroup", 6, 1, False, 1, 1),
                (128, 128, 2, "warpgroup", 6, 1, False, 1, 2),
                # Persistent, for a few waves of them (M = 128 to 512, N = 5000
                # to 14336), and cuBLAS's tile at M = 128 (nvjet 64x64, 13
                # stages): results/h200-small-shapes-tiles.md.
                (128, 128, 2, "warpgroup", 6, 1, True, 1, 1),
                (128, 128, 2, "warpgroup", 6, 1, True, 1, 2),
                (64, 64, 1, "warp", 12, 1, False, 1, 1),
                # Tiles of 192 columns where 256 leave the last wave part empty
                # (M = 3000, N = 5000: 648 tiles in 4.9 waves of 132 SMs, not
                # 480 in 3.6): results/h200-wave-filling-tiles.md.
                (128, 192, 2, "warpgroup", 4, 1, True, 1, 2),
                # cuBLAS's tile at M = 128, N = K = 8192 (nvjet 128x64, 8 stages).
                (128, 64, 2, "warpgroup", 8, 1, False, 1, 1),
                *[(*tile, 1) for tile in _SPLIT_TILES],
            ]
            for group_m in _GROUP_M
        ],
        *[(*tile, False, 1, group_m) for tile in _STREAM_K_TILES for group_m in _GROUP_M],
        *[(*tile, 1, group_m) for tile in _PING_PONG_TILES for group_m in _GROUP_M],
        # A cluster's blocks take their tiles in grid order: no group_m applies.
        *[(*tile, False, False, cluster, 8) for tile, cluster in _CLUSTERS_ALONG_N],
    ],
)(autotune("tma_store", [True])(matmul_kernel))
_COALESCED_STORE = autotune(
    _CLUSTERED_TILES,
    [
        (128, 256, 2, "warpgroup", 3, 0, True, 1, 1),
        (128, 256, 2, "warpgroup", 3, 1, True, 1, 1),
        (128, 256, 2, "warpgroup", 3, 1, False, 1, 1),
        (128, 256, 2, "warpgroup", 3, 0, True, 1, 2),
    ],
)(autotune("group_m", [8, 16])(autotune("coalesced_store", [True])(matmul_kernel)))
#: Batched products (wsc.bmm; batched = True is fixed by the problem:
#: MatmulPlan.space, wsc.matmul._fixed): the TMA-store space's tiles, a block
#: per output tile of each matrix (the grid's z the matrices) or persistent
#: blocks walking every matrix's tiles, whose store of a tile runs under the
#: next tile's loads (128x256, and 128x128 for N = 128: attention's P V); and one-warpgroup tiles with two stages, two blocks per
#: SM, for K of a few tiles (attention's Q K^T, K = 128).
_BATCHED = autotune(
    _CLUSTERED_TILES,
    [
        (128, 256, 2, "warpgroup", 3, 1, True, 1, 1),
        (128, 256, 2, "warpgroup", 3, 0, True, 1, 1),
        (128, 256, 2, "warpgroup", 3, 1, True, 1, 2),
        (128, 256, 2, "warpgroup", 3, 1, False, 1, 1),
        (128, 256, 2, "warpgroup", 3, 1, False, 1, 2),
        (128, 128, 2, "warpgroup", 6, 1, True, 1, 1),
        (128, 128, 2, "warpgroup", 6, 1, False, 1, 1),
        (128, 128, 2, "warpgroup", 6, 1, False, 1, 2),
        (128, 128, 1, "warp", 4, 1, False, 1, 1),
        (64, 128, 1, "warp", 6, 1, False, 1, 1),
        (64, 256, 1, "warp", 4, 1, False, 1, 1),
        (64, 128, 1, "warp", 2, 1, False, 1, 1),
        (64, 256, 1, "warp", 2, 1, False, 1, 1),
    ],
)(autotune("group_m", [8])(autotune("tma_store", [True])(matmul_kernel)))
#: fp8 with block scales (MatmulProblem.block_scales): tiles at most 128
#: columns wide (one block of B's scales), the K tile one block of 128, each
#: K tile's product held beside the sum until it is scaled; with
#: wgmma_in_flight = 1 (persistent tiles, staged store) in one of two product
#: tiles, so the next K tile's WGMMAs and scale loads run under the scaling
#: (about 5 % faster on the H200: results/h200-fp8-block-scales.md). Stored
#: from registers (any C), or for a 16-bit C whose rows TMA can store, staged
#: and stored with TMA (at 8192^3 on the H200, 1150 TFLOP/s against 1035 from
#: registers: results/h200-fp8-block-scales.md).
_BLOCK_SCALED_TILES = [
    (128, 128, 2, "warpgroup", 4, 0, True, 1),
    (128, 64, 2, "warpgroup", 8, 0, True, 1),
    (64, 128, 1, "warp", 6, 0, False, 1),
]
#: Six stages of 128 x 128 tiles and their scales leave no room for a staged C tile.
_BLOCK_SCALED_SIX_STAGES = [
    (128, 128, 2, "warpgroup", 6, 0, True, 1),
    (128, 128, 2, "warpgroup", 6, 0, False, 1),
]
_BLOCK_SCALED = autotune(
    _TILES,
    [*_BLOCK_SCALED_TILES, *_BLOCK_SCALED_SIX_STAGES, (64, 128, 1, "warp", 6, 0, False, 2)],
)(autotune("group_m", [8])(matmul_kernel))
#: With a staged store, persistent tiles may also keep a WGMMA group in flight:
#: first, the tile the tuner chose on 8 of the 10 fp8 shapes on the H200; with
#: five stages it ran at 1209-1217 TFLOP/s at 8192^3 on an H100, four
#: 1103-1193 (results/h100-fp8-block-scales-variants.md).
_BLOCK_SCALED_TMA = autotune(
    _TILES,
    [
        (128, 128, 2, "warpgroup", 5, 1, True, 1),
        (128, 128, 2, "warpgroup", 4, 1, True, 1),
        *_BLOCK_SCALED_TILES,
    ],
)(autotune("group_m", [8])(autotune("tma_store", [True])(matmul_kernel)))
#: Small M (MatmulPlan.space): tiles of 16 to 64 rows of M by
#: 64 (or 256) of N with the operands swapped (swap_ab: N along the WGMMA's M, so a
#: 16-row tile is not padded to 64), deep rings of these small stages, and
#: split-K where the N tiles alone leave SMs idle (cuBLAS's kernels at these
#: sizes on the H200 have such 64 x 16 and 64 x 32 tiles, seen by ncu); beside
#: them the register-store space's narrow tiles, and its persistent 128x256
#: tile for a wide N. The shallow rings (5 to 8 stages) let two to four
#: blocks share an SM, so that 224 or 448 tiles of a wide N run in one wave
#: sharing the HBM bandwidth instead of a full wave and a partial one
#: (results/h200-small-m-shallow-rings.md).
_SWAPPED_TILES = [
    (16, 64, 1, "warp", 5, 1, False, 1),
    (16, 64, 1, "warp", 8, 1, False, 1),
    (16, 64, 1, "warp", 16, 1, False, 1),
    (16, 64, 1, "warp", 16, 1, False, 2),
    (16, 64, 1, "warp", 16, 1, False, 4),
    (32, 64, 1, "warp", 8, 1, False, 1),
    (32, 64, 1, "warp", 16, 1, False, 1),
    (32, 64, 1, "warp", 16, 1, False, 2),
    (64, 64, 1, "warp", 6, 1, False, 1),
    (64, 64, 1, "warp", 12, 1, False, 1),
    (64, 64, 1, "warp", 12, 1, False, 2),
    # 256 of N (a group's two WGMMAs of 64 rows each): cuBLAS's tile at M = 16,
    # N = 28672 (nvjet 256x16, 6 stages), 112 blocks where 64 of N make 448.
    (16, 256, 2, "warpgroup", 6, 1, False, 1),
]
#: Swapped tiles in clusters along N, for M of 33 to 64: at 33 x 5000 x 7000
#: on the H200 these ran at 105-106 TFLOP/s against 85-86 for the best tile
#: without them (results/h200-clusters-along-n.md).
_SWAPPED_CLUSTERS_ALONG_N = [
    ((48, 64, 1, "warp", 12, 1, False, 1), 3),
    ((64, 64, 1, "warp", 12, 1, False, 1), 4),
]
_SMALL_M = autotune(
    _TILES + ", swap_ab, cluster_n",
    [
        *[(*tile, True, 1) for tile in _SWAPPED_TILES],
        *[(*tile, True, cluster) for tile, cluster in _SWAPPED_CLUSTERS_ALONG_N],
        (64, 128, 1, "warp", 6, 1, False, 1, False, 1),
        (64, 256, 1, "warp", 4, 1, False, 1, False, 1),
        (128, 256, 2, "warpgroup", 4, 0, True, 1, False, 1),
        *[(*tile, False, 1) for tile in _SPLIT_TILES],
    ],
)(autotune("group_m", [8])(matmul_kernel))
#: The largest M of the small-M space. At M = 128 the TMA-store space's
#: narrow tiles beat these on the H200 (0.90 against 0.80 of cuBLAS at
#: 128 x 4096 x 4096, results/h200-small-m-swap-ab.md).
SMALL_M = 64
#: By MatmulPlan.space: the B layout, then the staged epilogue if any. The
#: layout is an argument of each candidate (`fixed`), so the two layouts'
#: kernels and choices are cached apart.
SPACES = {
    f"{layout}{epilogue}": space
    for layout in ("nk", "kn")
    for epilogue, space in (
        ("", _REGISTER_STORE),
        ("-tma", _TMA_STORE),
        ("-coalesced", _COALESCED_STORE),
    )
}
SPACES.update({f"{layout}-small-m": _SMALL_M for layout in ("nk", "kn")})
SPACES.update({f"{layout}-batched": _BATCHED for layout in ("nk", "kn")})
SPACES.update({"nk-block-scaled": _BLOCK_SCALED, "nk-block-scaled-tma": _BLOCK_SCALED_TMA})
#: The config per B layout when there is nothing to go on (WSC_AUTOTUNE=0 and a
#: cache miss): for "nk" the best one at 8192^3 in BENCHMARKS.md.
_DEFAULT_REGISTER_STORE = {
    "block_m": 128,
    "block_n": 256,
    "num_consumer_groups": 2,
    "producer": "warpgroup",
    "num_stages": 3,
    "wgmma_in_flight": 1,
    "persistent": False,
    "split_k": 1,
    "group_m": 8,
}
_DEFAULT_STAGED = {
    "block_m": 128,
    "block_n": 256,
    "num_consumer_groups": 2,
    "producer": "warpgroup",
    "num_stages": 3,
    "persistent": True,
    "split_k": 1,
    "group_m": 8,
    "cluster_m": 1,
}
DEFAULT_CONFIGS = {
    f"{layout}{epilogue}": config
    for layout in ("nk", "kn")
    for epilogue, config in (
        ("", _DEFAULT_REGISTER_STORE),
        (
            "-tma",
            {
                **_DEFAULT_STAGED,
                "wgmma_in_flight": 1,
                "tma_store": True,
                "stream_k": False,
                "ping_pong": False,
                "cluster_n": 1,
            },
        ),
        ("-coalesced", {**_DEFAULT_STAGED, "wgmma_in_flight": 0, "coalesced_store": True}),
    )
}
_DEFAULT_SMALL_M = {
    **dict(zip(_TILES.replace(" ", "").split(","), _SWAPPED_TILES[0], strict=True)),
    "swap_ab": True,
    "cluster_n": 1,
    "group_m": 8,
}
DEFAULT_CONFIGS.update({f"{layout}-small-m": _DEFAULT_SMALL_M for layout in ("nk", "kn")})
DEFAULT_CONFIGS.update({f"{layout}-batched": _BATCHED.configs()[0] for layout in ("nk", "kn")})
DEFAULT_CONFIGS.update(
    {name: SPACES[name].configs()[0] for name in ("nk-block-scaled", "nk-block-scaled-tma")}
)
