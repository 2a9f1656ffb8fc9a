"""Fill the wsc cache with every kernel the `cuda` tests of
test/python/test_matmul.py, test_batched.py and test_softmax.py need, so that they run on a GPU
machine without the MLIR wheels (wsc.matmul and wsc.softmax compile only on a cache miss):

    WSC_CACHE_DIR=DIR python test/gpu/matmul_cache.py          # here: compile
    WSC_CACHE_DIR=DIR pytest -q -m cuda test/python/test_matmul.py   # there: run

That is: the default config of each space for every dtype and output dtype
the tests use, every config of every space for the per-config test, the
autotuning candidates of the problems the autotuning tests tune, the
fused-epilogue kernels of the epilogue tests, the tiles in clusters along N
of the cluster test, and the fp8 kernels of test_scaled_mm.py.
"""

from __future__ import annotations

import sys
import time

from wsc.cache import Cache
from wsc.kernels.matmul.config import ACTIVATIONS
from wsc.kernels.softmax.schedule import SOFTMAX, softmax_view
from wsc.matmul import DEFAULT_CONFIGS, SPACES, MatmulPlan, compiled_kernel_dir
from wsc.target.hopper import E4M3

#: The problem the GPU tests compile for first (the kernels read sizes at run
#: time; "kn" needs N a multiple of 8, and so does a TMA store of C).
M, K = 1000, 520
#: The small-M space's M (SMALL_M at most).
SMALL_M_ROWS = 60
N = {
    "nk": 1333,
    "nk-small-m": 1333,
    "kn-small-m": 1336,
    "kn": 1336,
    "nk-tma": 1336,
    "nk-coalesced": 1333,
    "kn-tma": 1336,
    "kn-coalesced": 1336,
    "nk-batched": 1336,
    "kn-batched": 1336,
}
#: The spaces whose C is 16-bit (a staging tile of the output's dtype).
STAGED = ("nk-tma", "nk-coalesced", "kn-tma", "kn-coalesced")
#: The batched products' spaces (wsc.bmm: 16-bit C stored with TMA), and the
#: number of matrices their problems have.
BATCHED = ("nk-batched", "kn-batched")
BATCH = 3
#: wsc.scaled_mm's problems in test_scaled_mm.py: (M, N, K, out dtype), one
#: per space an fp8 call plans (register, TMA and coalesced stores, small M).
FP8_PROBLEMS = [
    (1000, 1336, 528, "bf16"),
    (1000, 1336, 528, "f32"),
    (1000, 1333, 528, "bf16"),
    (40, 1336, 528, "bf16"),
]
#: The fp8 spaces whose every config test_scaled_mm.py checks.
FP8_SPACE, FP8_BLOCK_SPACES = "nk-tma", ("nk-block-scaled-tma", "nk-block-scaled")
#: wsc.scaled_mm's problems with block scales: a C TMA stores, and one it cannot.
FP8_BLOCK_PROBLEMS = [(1000, 1336, 528, "bf16"), (40, 1333, 1040, "f32")]
#: Tiles in clusters along N (MatmulConfig.cluster_n), swapped and not, beyond
#: the spaces' (a cluster of 3, a 16-row tile, ...): test_matmul.py's
#: test_a_cluster_along_n_is_correct runs each, in both layouts, on
#: CLUSTER_ALONG_N_PROBLEM (M, N, K).
CLUSTERS_ALONG_N = [
    {"block_m": 16, "block_n": 64, "num_stages": 8, "cluster_n": 2},
    *[
        {
            "block_m": block_m,
            "block_n": 128,
            "num_consumer_groups": 2,
            "producer": "warpgroup",
            "num_stages": 8,
            "cluster_n": cluster,
        }
        for block_m, cluster in ((72, 3), (80, 2), (64, 4))
    ],
    # cuBLAS's tile at M = 128, N = K = 8192 (results/h200-ncu-cublas-tiles.txt).
    {
        "block_m": 128,
        "block_n": 64,
        "num_consumer_groups": 2,
        "producer": "warpgroup",
        "num_stages": 8,
        "cluster_n": 2,
        "swap_ab": False,
        "tma_store": True,
    },
]
CLUSTER_ALONG_N_PROBLEM = (200, 1336, 1032)
#: (row length, dtype) of the kernels of test_softmax.py's GPU_CASES.
SOFTMAX_KERNELS = [(768, "f16"), (1024, "bf16"), (2048, "bf16"), (4096, "f16"), (8192, "bf16")]
#: (row length, dtype, schedule fields) of test_softmax.py's SPLIT_CASES:
#: rows spread over two and four warps, stages released on read.
SOFTMAX_SPLIT_KERNELS = [
    (8192, "bf16", {"num_stages": 2, "blocks_per_sm": 2, "resident": False, "row_split": 32}),
    (8192, "bf16", {"num_stages": 2, "blocks_per_sm": 2, "resident": True, "row_split": 64}),
    (2048, "f16", {"num_stages": 2, "blocks_per_sm": 3, "resident": True, "row_split": 32}),
    (
        8192,
        "bf16",
        {
            "num_stages": 2,
            "blocks_per_sm": 2,
            "resident": True,
            "row_split": 64,
            "release_on_read": True,
        },
    ),
    (
        2048,
        "f16",
        {
            "num_stages": 2,
            "blocks_per_sm": 3,
            "resident": True,
            "row_split": 32,
            "release_on_read": True,
        },
    ),
]
#: The spaces of 16-bit inputs (every one but the fp8 block-scaled ones).
HALF_SPACES = [name for name in SPACES if name not in FP8_BLOCK_SPACES]


def fp8_plan(m: int, n: int, k: int, out_dtype: str, block_scales: bool = False) -> MatmulPlan:
    """wsc.scaled_mm's plan of a contiguous problem (B as w.T)."""
    tma_store = out_dtype != "f32" and n * 2 % 16 == 0
    coalesced = out_dtype != "f32" and not tma_store and not block_scales
    return MatmulPlan(
        m, n, k, E4M3, out_dtype, "nk", tma_store, coalesced, block_scales=block_scales
    )


def space_plan(space: str, dtype: str, out_dtype: str | None = None) -> MatmulPlan:
    """The problem the GPU tests run `space`'s configs on; out_dtype defaults
    to f32 (the staged spaces' to the input dtype, as their C is 16-bit)."""
    if out_dtype is None:
        out_dtype = dtype if space in STAGED + BATCHED else "f32"
    return MatmulPlan(
        SMALL_M_ROWS if space.endswith("-small-m") else M,
        N[space],
        K,
        dtype,
        out_dtype,
        space.split("-")[0],
        tma_store=space.endswith("-tma") or space in BATCHED,
        coalesced_store=space.endswith("-coalesced"),
        batch=BATCH if space in BATCHED else None,
    )


def cluster_along_n(fields: dict) -> dict:
    """A complete config of CLUSTERS_ALONG_N's `fields` (the rest the small-M
    space's default: swapped, one WGMMA group in flight)."""
    return {**DEFAULT_CONFIGS["nk-small-m"], **fields}


def cluster_along_n_plan(layout: str) -> MatmulPlan:
    """wsc.matmul's plan of CLUSTER_ALONG_N_PROBLEM with an f16 C."""
    return MatmulPlan(*CLUSTER_ALONG_N_PROBLEM, "f16", "f16", layout, tma_store=True)


def main() -> int:
    cache = Cache()
    start = time.perf_counter()
    wanted = []
    for dtype in ("f16", "bf16"):
        for out_dtype in (dtype, "f32"):
            for space in HALF_SPACES:
                config = DEFAULT_CONFIGS[space]
                if space not in STAGED + BATCHED or out_dtype == dtype:
                    wanted.append((space_plan(space, dtype, out_dtype), config))
    for space in HALF_SPACES:
        wanted += [(space_plan(space, "f16"), config) for config in SPACES[space].configs()]
    # What the autotuning tests may choose (the staged spaces) and what the
    # split-K tests run (the small-M space too), with f16 results.
    for space in (*STAGED, "nk-small-m", "kn-small-m"):
        wanted += [(space_plan(space, "f16", "f16"), config) for config in SPACES[space].configs()]
    # The fused-epilogue tests: each space's default config, with a bias and a
    # residual and each activation (test_a_fused_epilogue_is_correct).
    for space, m, n in (
        ("nk-small-m", 40, 1336),
        ("nk-tma", 300, 1336),
        ("nk-coalesced", 1000, 1333),
    ):
        epilogues = [
            {"bias": True, "activation": activation, "residual": True}
            for activation in (*ACTIVATIONS, None)
        ]
        # alpha= alone and with the rest (test_alpha_scales_the_product).
        epilogues += [{"alpha": True}, {**epilogues[1], "alpha": True}]
        for epilogue in epilogues:
            fused = MatmulPlan(
                m,
                n,
                K,
                "f16",
                "f16",
                "nk",
                tma_store=space.endswith("-tma"),
                coalesced_store=space.endswith("-coalesced"),
                **epilogue,
            )
            assert fused.space == space
            wanted.append((fused, DEFAULT_CONFIGS[space]))
    for problem in FP8_PROBLEMS:
        plan = fp8_plan(*problem)
        wanted.append((plan, DEFAULT_CONFIGS[plan.space]))
    for problem in FP8_BLOCK_PROBLEMS:
        plan = fp8_plan(*problem, block_scales=True)
        wanted.append((plan, DEFAULT_CONFIGS[plan.space]))
    for space, plan in (
        (FP8_SPACE, fp8_plan(*FP8_PROBLEMS[0])),
        *[
            (name, fp8_plan(*p, block_scales=True))
            for name, p in zip(FP8_BLOCK_SPACES, FP8_BLOCK_PROBLEMS, strict=True)
        ],
    ):
        assert plan.space == space
        wanted += [(plan, config) for config in SPACES[space].configs()]
    for layout in ("nk", "kn"):
        wanted += [(cluster_along_n_plan(layout), cluster_along_n(f)) for f in CLUSTERS_ALONG_N]
    for plan, config in wanted:
        compiled_kernel_dir(plan, config, cache)
    for row_length, dtype in SOFTMAX_KERNELS:
        fixed = {"row_length": row_length, "dtype": dtype}
        SOFTMAX.artifact({}, softmax_view(1, row_length), fixed, cache)
    for row_length, dtype, config in SOFTMAX_SPLIT_KERNELS:
        fixed = {"row_length": row_length, "dtype": dtype}
        SOFTMAX.artifact(config, softmax_view(1, row_length, config["row_split"]), fixed, cache)
    failed, candidates = [], 0
    for space in STAGED:
        result = SPACES[space].tune(
            {"m": M, "n": N[space], "k": K},
            fixed={"dtype": "f16", "out_dtype": "f16", "b_layout": space.split("-")[0]},
            cache=cache,
        )
        failed += [c for c in result.candidates if c.error]
        candidates += len(result.candidates)
    print(
        f"{len(wanted)} matmul kernels, "
        f"{len(SOFTMAX_KERNELS) + len(SOFTMAX_SPLIT_KERNELS)} softmax kernels and "
        f"{candidates} autotuning candidates in "
        f"{cache.root} ({time.perf_counter() - start:.0f} s)"
    )
    for candidate in failed:
        print(f"candidate {candidate.config} failed: {candidate.error}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
