"""The compile driver: the artifact it writes is what the runtime loads, every
stage leaves IR behind when asked, and bad requests fail with clear errors."""

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from wsc.compiler import CompileError
from wsc.kernels.matmul.build import compile_matmul
from wsc.kernels.matmul.config import MatmulConfig, MatmulProblem
from wsc.runtime import load_artifact

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def test_seed_artifact_loads_in_the_runtime(tmp_path):
    start = time.perf_counter()
    result = compile_matmul(
        1000,
        1333,
        520,
        MatmulProblem("f16", "f32", "nk"),
        MatmulConfig(),
        tmp_path / "seed",
        dump_dir=tmp_path / "ir",
    )
    assert time.perf_counter() - start < 5.0
    artifact = load_artifact(tmp_path / "seed")
    meta = json.loads((tmp_path / "seed" / "kernel.json").read_text())
    assert meta["grid"] == ["cdiv(m, 128)", "cdiv(n, 128)"]
    assert artifact.grid == (8, 11, 1)  # ceil(1000 / 128), ceil(1333 / 128)
    assert meta["block"] == [160, 1, 1]
    assert [p["kind"] for p in meta["params"]][:3] == ["tensor_map", "tensor_map", "pointer"]
    assert meta["tensors"]["b"]["shape"] == ["n", "k"]
    assert artifact.tensors["b"].shape == (1333, 520)
    assert artifact.kernel_name == result.info.name
    ptx = (tmp_path / "seed" / "kernel.ptx").read_text()
    assert ".target sm_90a" in ptx and "wgmma.mma_async" in ptx
    stages = [s["name"] for s in meta["compile"]["stages"]]
    assert stages[:5] == [
        "input",
        "warp-specialize",
        "unroll-ring-buffer",
        "convert-wsc-to-nvvm",
        "ptx",
    ]
    dumped = sorted(p.name for p in (tmp_path / "ir").iterdir())
    assert dumped[:4] == [
        "00-input.mlir",
        "01-warp-specialize.mlir",
        "02-unroll-ring-buffer.mlir",
        "03-convert-wsc-to-nvvm.mlir",
    ]
    if result.ptxas is not None:
        assert result.ptxas.spill_stores == result.ptxas.spill_loads == 0


def test_kn_layout_shapes_b_as_k_by_n(tmp_path):
    compile_matmul(
        256,
        192,
        128,
        MatmulProblem("bf16", "bf16", "kn"),
        MatmulConfig(block_n=64),
        tmp_path / "kn",
    )
    meta = json.loads((tmp_path / "kn" / "kernel.json").read_text())
    assert meta["tensors"]["b"]["shape"] == ["k", "n"]
    assert load_artifact(tmp_path / "kn").tensors["b"].shape == (128, 192)
    assert meta["tensor_maps"]["b"]["box"] == [64, 64]


def test_tma_row_stride_rule_is_a_compile_error(tmp_path):
    with pytest.raises(ValueError, match="K must be a multiple of 8"):
        compile_matmul(128, 128, 130, MatmulProblem(), MatmulConfig(), tmp_path / "x")


def test_shared_memory_limit_is_a_compile_error(tmp_path):
    # 8 stages of 256x64 A and 256x64 B tiles: 512 KB of shared memory.
    config = MatmulConfig(
        block_m=256, block_n=256, num_stages=8, num_consumer_groups=4, producer="warpgroup"
    )
    with pytest.raises(CompileError, match="227 KB"):
        compile_matmul(1024, 1024, 1024, MatmulProblem(), config, tmp_path / "big")


def _wsc(*args):
    return subprocess.run(
        [sys.executable, "-m", "wsc.tools.cli", *args], capture_output=True, text=True
    )


def test_cli_compile_writes_ptx_and_reports_stages(tmp_path):
    out = tmp_path / "v2.ptx"
    proc = _wsc(
        "compile",
        str(EXAMPLES / "matmul_v2.mlir"),
        "-o",
        str(out),
        "--dump-ir",
        str(tmp_path / "ir"),
    )
    assert proc.returncode == 0, proc.stderr
    assert "warp-specialize" in proc.stdout and out.read_text().startswith("//")
    assert (tmp_path / "ir" / "01-warp-specialize.mlir").exists()


def test_cli_reports_bad_config_without_traceback(tmp_path):
    proc = _wsc(
        "compile-matmul",
        "--m",
        "64",
        "--n",
        "64",
        "--k",
        "64",
        "-o",
        str(tmp_path),
        "--config",
        '{"num_stage": 3}',
    )
    assert proc.returncode == 1
    assert "error: --config: no MatmulConfig field 'num_stage' (fields: block_m," in proc.stderr
    assert "num_stages" in proc.stderr and "Traceback" not in proc.stderr


def test_cli_compiles_b_as_k_by_n_with_the_default_config(tmp_path):
    proc = _wsc(
        "compile-matmul",
        "--m",
        "64",
        "--n",
        "64",
        "--k",
        "64",
        "--b-layout",
        "kn",
        "-o",
        str(tmp_path),
    )
    assert proc.returncode == 0, proc.stderr
    artifact = json.loads((tmp_path / "kernel.json").read_text())
    # The default config's 128-column B tile: two TMA boxes of 64 columns a stage.
    assert artifact["tensors"]["b"]["shape"] == ["k", "n"] and artifact["config"]["block_n"] == 128
    assert artifact["check"] == "matmul"


def test_cli_names_a_config_value_out_of_range(tmp_path):
    proc = _wsc(
        "compile-matmul",
        "--m",
        "64",
        "--n",
        "64",
        "--k",
        "64",
        "-o",
        str(tmp_path),
        "--config",
        '{"num_stages": 0}',
    )
    assert proc.returncode == 1
    assert "error: num_stages must be 1 to 227, got 0" in proc.stderr
    assert "Traceback" not in proc.stderr
