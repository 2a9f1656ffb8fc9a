"""What the GPU check scripts (hang.py, sanitize.py, stress.py) share.

Each script has a `compile` mode, run here where MLIR is, which writes
artifact directories, and a `run` mode, run on the GPU machine, which needs
only `wsc.runtime` (numpy and cuda-bindings; torch when present). The GPU
machine has no installed wsc, so `use_repo_runtime()` puts this checkout's
python/ on the path, and children get it through PYTHONPATH.

The kernels checked are the example kernels (the builder kernels of
examples/v1..v5 with their default configs, and examples/matmul_v2.mlir and
matmul_v3.mlir lowered as written) and the matmul kernel in the
configurations that exercise the compiler's paths: the seed schedule, one
stage, 32-wide K tiles, two and four consumer warpgroups with a producer
warpgroup (setmaxnreg), "kn" B with bf16, WGMMA groups kept in flight, and
persistent kernels (a tile loop per block, run-time stages), one of them with
ping-pong consumer groups, and the staged epilogues (TMA and coalesced
stores).
"""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"

SEED = dict(block_m=128, block_n=128, block_k=64, num_stages=4)
#: name -> (source, dtype, out_dtype, b_layout, MatmulConfig fields). A source
#: of "builder" is the matmul kernel with --warp-specialize and
#: --unroll-ring-buffer; an .mlir file is lowered as written (its schedule is
#: the seed's); "FILE.py:FUNCTION" is an example's kernel function called with
#: its defaults, which the fields restate (the stress shapes read block_k and
#: num_stages from them).
KERNELS = {
    "v1_tma_wgmma": ("v1_tma_wgmma.py:matmul_v1", "f16", "f32", "nk", dict(SEED, num_stages=1)),
    "v2_ring_buffer": ("v2_ring_buffer.py:matmul_v2", "f16", "f32", "nk", SEED),
    "v3_warp_specialized": ("v3_warp_specialized.py:matmul_v3", "f16", "f32", "nk", SEED),
    "v3_auto": ("v3_auto.py:matmul_v3_auto", "f16", "f32", "nk", SEED),
    "v4_two_consumers": (
        "v4_two_consumers.py:matmul_v4",
        "f16",
        "f32",
        "nk",
        dict(SEED, block_n=256),
    ),
    "v5_one_group_in_flight": (
        "v5_one_group_in_flight.py:matmul_v5",
        "f16",
        "f32",
        "nk",
        dict(SEED, block_n=256),
    ),
    "v6_256x256": (
        "v6_256x256.py:matmul_v6",
        "f16",
        "f16",
        "nk",
        dict(SEED, block_m=256, block_n=256, block_k=32, num_stages=3, tma_store=True),
    ),
    "example-v2": ("matmul_v2.mlir", "f16", "f32", "nk", SEED),
    "example-v3": ("matmul_v3.mlir", "f16", "f32", "nk", SEED),
    "seed": ("builder", "f16", "f32", "nk", SEED),
    "stages-1": ("builder", "f16", "f16", "nk", dict(SEED, num_stages=1)),
    "block-k-32": ("builder", "f16", "f32", "nk", dict(SEED, block_k=32, num_stages=6)),
    "groups-2-warpgroup": (
        "builder",
        "f16",
        "f32",
        "nk",
        dict(SEED, num_consumer_groups=2, producer="warpgroup"),
    ),
    "groups-4": (
        "builder",
        "bf16",
        "bf16",
        "nk",
        dict(SEED, block_m=256, num_stages=3, num_consumer_groups=4, producer="warpgroup"),
    ),
    "kn-bf16": ("builder", "bf16", "f16", "kn", dict(SEED, block_n=64)),
    "wgmma-in-flight": ("builder", "f16", "f32", "nk", dict(SEED, wgmma_in_flight=1)),
    "persistent": ("builder", "f16", "f32", "nk", dict(SEED, persistent=True)),
    "persistent-groups-2": (
        "builder",
        "f16",
        "f16",
        "nk",
        dict(
            SEED,
            block_n=256,
            num_consumer_groups=2,
            producer="warpgroup",
            group_m=8,
            persistent=True,
        ),
    ),
    "ping-pong": (
        "builder",
        "bf16",
        "f32",
        "nk",
        dict(
            SEED,
            num_consumer_groups=2,
            producer="warpgroup",
            group_m=8,
            persistent=True,
            ping_pong=True,
        ),
    ),
    "tma-store": ("builder", "f16", "f16", "nk", dict(SEED, tma_store=True)),
    "tma-store-persistent-in-flight": (
        "builder",
        "f16",
        "f16",
        "nk",
        dict(
            SEED,
            block_n=256,
            num_stages=3,
            num_consumer_groups=2,
            producer="warpgroup",
            wgmma_in_flight=1,
            group_m=8,
            persistent=True,
            tma_store=True,
        ),
    ),
    # Staging tiles of 64- and 32-byte rows: the narrower swizzles.
    "tma-store-n32": ("builder", "f16", "f16", "nk", dict(SEED, block_n=32, tma_store=True)),
    "tma-store-n16": ("builder", "bf16", "bf16", "nk", dict(SEED, block_n=16, tma_store=True)),
    "tma-store-ping-pong": (
        "builder",
        "bf16",
        "bf16",
        "nk",
        dict(
            SEED,
            num_consumer_groups=2,
            producer="warpgroup",
            group_m=8,
            persistent=True,
            ping_pong=True,
            tma_store=True,
        ),
    ),
    # Coalesced-store epilogues: C of any row length (odd N included).
    "coalesced-store": ("builder", "f16", "f16", "nk", dict(SEED, coalesced_store=True)),
    "coalesced-store-persistent-in-flight": (
        "builder",
        "bf16",
        "bf16",
        "nk",
        dict(
            SEED,
            block_n=256,
            num_stages=3,
            num_consumer_groups=2,
            producer="warpgroup",
            wgmma_in_flight=1,
            group_m=8,
            persistent=True,
            coalesced_store=True,
        ),
    ),
    "coalesced-store-n64-ping-pong": (
        "builder",
        "f16",
        "f16",
        "nk",
        dict(
            SEED,
            block_n=64,
            num_consumer_groups=2,
            producer="warpgroup",
            group_m=8,
            persistent=True,
            ping_pong=True,
            coalesced_store=True,
        ),
    ),
    # Clusters of two blocks sharing B's tile by multicast; an odd count of
    # tile rows leaves the second block of the last pair past M.
    "cluster-2": ("builder", "f16", "f32", "nk", dict(SEED, cluster_m=2)),
    "cluster-2-persistent-tma": (
        "builder",
        "f16",
        "f16",
        "nk",
        dict(
            SEED,
            block_n=256,
            num_stages=3,
            num_consumer_groups=2,
            producer="warpgroup",
            wgmma_in_flight=1,
            group_m=8,
            persistent=True,
            tma_store=True,
            cluster_m=2,
        ),
    ),
    "cluster-2-persistent-coalesced": (
        "builder",
        "bf16",
        "bf16",
        "nk",
        dict(
            SEED,
            block_n=256,
            num_stages=3,
            num_consumer_groups=2,
            producer="warpgroup",
            group_m=8,
            persistent=True,
            coalesced_store=True,
            cluster_m=2,
        ),
    ),
    "cluster-2-kn": ("builder", "bf16", "f16", "kn", dict(SEED, block_n=64, cluster_m=2)),
    # One release per consumer warp (release="warp"): the empty barriers count
    # warps, and each warp's first lane arrives after the warp synchronizes.
    "warp-release-seed": ("builder", "f16", "f32", "nk", dict(SEED, release="warp")),
    "warp-release-persistent-tma": (
        "builder",
        "f16",
        "f16",
        "nk",
        dict(
            SEED,
            block_n=256,
            num_stages=3,
            num_consumer_groups=2,
            producer="warpgroup",
            wgmma_in_flight=1,
            group_m=8,
            persistent=True,
            tma_store=True,
            release="warp",
        ),
    ),
    "warp-release-ping-pong": (
        "builder",
        "bf16",
        "bf16",
        "nk",
        dict(
            SEED,
            num_consumer_groups=2,
            producer="warpgroup",
            group_m=8,
            persistent=True,
            ping_pong=True,
            tma_store=True,
            release="warp",
        ),
    ),
    "warp-release-cluster-2-persistent-coalesced": (
        "builder",
        "f16",
        "f16",
        "nk",
        dict(
            SEED,
            block_n=256,
            num_stages=3,
            num_consumer_groups=2,
            producer="warpgroup",
            group_m=8,
            persistent=True,
            coalesced_store=True,
            cluster_m=2,
            release="warp",
        ),
    ),
    # Without setmaxnreg: every warpgroup keeps the launch's 168 registers.
    "keep-registers-persistent-tma": (
        "builder",
        "f16",
        "f16",
        "nk",
        dict(
            SEED,
            block_n=256,
            num_stages=3,
            num_consumer_groups=2,
            producer="warpgroup",
            wgmma_in_flight=1,
            group_m=8,
            persistent=True,
            tma_store=True,
            rebalance_registers=False,
        ),
    ),
}


def use_repo_runtime() -> dict:
    """Make this checkout's `wsc` importable; returns an environment for children."""
    python_dir = str(REPO / "python")
    if python_dir not in sys.path:
        sys.path.insert(0, python_dir)
    path = os.environ.get("PYTHONPATH")
    return {**os.environ, "PYTHONPATH": python_dir + (os.pathsep + path if path else "")}


# -- compile side (MLIR) ---------------------------------------------------------------


def compile_kernel(name: str, out: Path, m: int, n: int, k: int, **debug) -> Path:
    """The artifact of kernel `name` for an M x N x K problem in `out`;
    `debug` holds MatmulConfig's debug fields (debug_spin_limit, ...)."""
    from mlir import ir

    from wsc.compiler import compile_module
    from wsc.dialect import make_context, parse_module
    from wsc.kernels.matmul.build import compile_matmul, lowering_pass, write_matmul_artifact
    from wsc.kernels.matmul.config import MatmulConfig, MatmulProblem

    source, dtype, out_dtype, b_layout, fields = KERNELS[name]
    if source.endswith(".py") or ".py:" in source:
        if debug:
            raise ValueError(f"{name}: an example kernel has no debug options")
        return _example_kernel(source).compile().write_artifact(out, m=m, n=n, k=k)
    problem = MatmulProblem(dtype, out_dtype, b_layout)
    config = MatmulConfig(**fields, **debug)
    if source == "builder":
        compile_matmul(m, n, k, problem, config, out)
        return out
    with make_context(), ir.Location.unknown():
        module = parse_module((EXAMPLES / source).read_text())
        result = compile_module(module, [], lowering=lowering_pass(config))
    write_matmul_artifact(out, result, m, n, k, problem, config)
    return out


def _example_kernel(source: str):
    """The kernel that examples/FILE.py's FUNCTION builds with its defaults."""
    file_name, function = source.split(":")
    if str(EXAMPLES) not in sys.path:
        sys.path.insert(0, str(EXAMPLES))  # the examples import their `common`
    module = importlib.import_module(file_name.removesuffix(".py"))
    return getattr(module, function)()


# -- run side (no MLIR) ----------------------------------------------------------------


def run_json_child(command: list[str], timeout: float, env: dict) -> tuple[dict, str, float]:
    """Run `command`, whose last stdout line is a JSON report; returns
    (report, all output, seconds). A child that dies or hangs gets a report
    saying so."""
    start = time.monotonic()
    try:
        proc = subprocess.run(command, capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired as error:
        output = (
            (error.stdout or b"").decode(errors="replace")
            if isinstance(error.stdout, bytes)
            else (error.stdout or "")
        )
        return (
            {"ok": False, "error": f"no result within {timeout:g} s"},
            output,
            time.monotonic() - start,
        )
    seconds = time.monotonic() - start
    output = proc.stdout + proc.stderr
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    try:
        report = json.loads(lines[-1]) if lines else {}
    except json.JSONDecodeError:
        report = {}
    if not report:
        report = {"ok": False, "error": f"exit {proc.returncode}: {output.strip()[-500:]}"}
    report["returncode"] = proc.returncode
    return report, output, seconds
