"""What benchmarks/matmul.py measures: the shapes, and the kernels it
compiles (candidates from wsc.matmul's config spaces, and the technique
log's variants)."""

from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "python"))

from wsc.kernels.matmul.config import MatmulConfig  # noqa: E402 (after the path)
from wsc.kernels.matmul.space import SPACES  # noqa: E402

# (name, M, N, K, dtype): the benchmark set.
SHAPES = [
    ("4096x4096x4096", 4096, 4096, 4096, "f16"),
    ("8192x8192x8192", 8192, 8192, 8192, "f16"),
    ("16384x16384x8192", 16384, 16384, 8192, "f16"),
    ("8192x8192x1024", 8192, 8192, 1024, "f16"),
    ("llm-8192x4096x4096", 8192, 4096, 4096, "f16"),
    ("llm-8192x14336x4096", 8192, 14336, 4096, "f16"),
    ("llm-8192x4096x14336", 8192, 4096, 14336, "f16"),
    ("llm-8192x28672x8192", 8192, 28672, 8192, "f16"),
    ("ragged-8191x8193x8200", 8191, 8193, 8200, "f16"),
    ("8192x8192x8192-bf16", 8192, 8192, 8192, "bf16"),
]

#: The spaces wsc.matmul tunes this benchmark's problems over (B as [N, K], C
#: in the input dtype): "nk-tma" where C's rows allow a TMA store,
#: "nk-coalesced" elsewhere (the ragged shape; its candidates are timed on
#: every shape). Their configs are the candidates `run` tunes over, so the
#: benchmark's best is one wsc.matmul's tuner can pick.
BENCHMARK_SPACES = ("nk-tma", "nk-coalesced")


def candidate_name(config: dict) -> str:
    """A space config's name, e.g. 128x256_2g_s3_inflight_group8_persistent_tma."""
    c = MatmulConfig(**config)
    parts = [f"{c.block_m}x{c.block_n}_{c.num_consumer_groups}g_s{c.num_stages}"]
    parts += ["inflight"] if c.wgmma_in_flight else []
    parts += [f"group{c.group_m}"] if c.group_m else []
    parts += ["persistent"] if c.persistent else []
    parts += ["tma"] if c.tma_store else ["coalesced"] if c.coalesced_store else []
    parts += [f"cluster{c.cluster_m}"] if c.cluster_m > 1 else []
    return "_".join(parts)


SPACE_CANDIDATES = {
    candidate_name(config): config
    for space in BENCHMARK_SPACES
    for config in SPACES[space].configs()
}

_SEED = dict(block_m=128, block_n=128, block_k=64, num_stages=4)
_TWO_GROUPS = dict(num_consumer_groups=2, producer="warpgroup")
_BEST_TMA = SPACE_CANDIDATES["128x256_2g_s3_inflight_group16_persistent_tma"]
_TMA_CLUSTER = SPACE_CANDIDATES["128x256_2g_s3_inflight_group8_persistent_tma_cluster2"]
_COALESCED_CLUSTER = SPACE_CANDIDATES["128x256_2g_s3_group8_persistent_coalesced_cluster2"]
#: The technique log's variants (BENCHMARKS.md compares neighbours with
#: `compare`): the seed, one technique added or taken away at a time, and
#: schedules that lost on every shape. Compiled with the candidates, never
#: tuned over.
VARIANTS = {
    "seed": dict(_SEED),
    "seed_inflight_group8": dict(_SEED, wgmma_in_flight=1, group_m=8),
    "128x256_2g_s3_inflight_group8": dict(
        _SEED, block_n=256, num_stages=3, **_TWO_GROUPS, wgmma_in_flight=1, group_m=8
    ),
    "256x128_2g_inflight_group8": dict(
        _SEED, block_m=256, **_TWO_GROUPS, wgmma_in_flight=1, group_m=8
    ),
    "128x256_2g_group8": dict(_SEED, block_n=256, **_TWO_GROUPS, group_m=8),
    # Persistent kernels with register stores, without a WGMMA group in
    # flight (MatmulConfig: ptxas would serialize them).
    **{
        f"128x256_2g_s3_group{group}_persistent": dict(
            _SEED, block_n=256, num_stages=3, **_TWO_GROUPS, group_m=group, persistent=True
        )
        for group in (4, 8, 16)
    },
    # Ping-pong: the two consumer groups take whole 128x128 tiles in turn, so
    # one's epilogue overlaps the other's WGMMAs.
    "128x128_pingpong_group8": dict(
        _SEED, **_TWO_GROUPS, group_m=8, persistent=True, ping_pong=True
    ),
    "128x128_pingpong_group8_tma": dict(
        _SEED, **_TWO_GROUPS, group_m=8, persistent=True, ping_pong=True, tma_store=True
    ),
    # setmaxnreg's share: every warpgroup keeps the 168 registers a
    # 384-thread block starts with: the persistent winner fits them, the
    # unrolled kernel spills.
    "128x256_2g_s3_inflight_group16_persistent_tma_keep_registers": dict(
        _BEST_TMA, rebalance_registers=False
    ),
    "128x256_2g_s3_inflight_group8_tma_keep_registers": dict(
        SPACE_CANDIDATES["128x256_2g_s3_inflight_group8_tma"], rebalance_registers=False
    ),
    # Clusters without a WGMMA group in flight (TMA store), and with one
    # (coalesced store).
    "128x256_2g_s3_group8_persistent_tma_cluster2": dict(_TMA_CLUSTER, wgmma_in_flight=0),
    "128x256_2g_s3_inflight_group8_persistent_coalesced_cluster2": dict(
        _COALESCED_CLUSTER, wgmma_in_flight=1
    ),
    # One release per consumer warp instead of per thread (8 arrivals a stage
    # instead of 256, 16 instead of 512 in a cluster), on the winners.
    "128x256_2g_s3_inflight_group16_persistent_tma_warp_release": dict(_BEST_TMA, release="warp"),
    "128x256_2g_s3_group8_persistent_tma_cluster2_warp_release": dict(
        _TMA_CLUSTER, wgmma_in_flight=0, release="warp"
    ),
    "128x256_2g_s3_group8_persistent_coalesced_cluster2_warp_release": dict(
        _COALESCED_CLUSTER, release="warp"
    ),
}
#: Every kernel `compile` builds; shape and candidate names are also directory
#: names, so they keep to letters, digits, "x_-".
CANDIDATES = {**SPACE_CANDIDATES, **VARIANTS}
