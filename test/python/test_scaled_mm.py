"""fp8 (e4m3) products with per-tensor or block scales: the e4m3 encoding the
runtime draws inputs with, the WGMMA's fp8 form (K-major operands, K of 32 per
instruction), the scaled epilogue, the block-scaled K loop and their checks,
and wsc.scaled_mm's argument checks; on a Hopper GPU, wsc.scaled_mm against a
float64 reference of the dequantized product, and every config of its
TMA-store space and of the block-scaled spaces."""

from __future__ import annotations

import importlib
import json
import sys
from pathlib import Path

import numpy as np
import pytest

from wsc.cache import Cache
from wsc.device import hopper_gpu_visible, run_artifacts
from wsc.kernels.matmul.check import MatmulCheck
from wsc.kernels.matmul.config import MatmulConfig, MatmulProblem
from wsc.matmul import SPACES, compiled_kernel_dir, plan
from wsc.runtime import load_artifact
from wsc.runtime.memory import E4M3_VALUES, Inputs, float32_to_e4m3_bits
from wsc.target.hopper import E4M3

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "gpu"))
from matmul_cache import (  # noqa: E402
    FP8_BLOCK_PROBLEMS,
    FP8_BLOCK_SPACES,
    FP8_PROBLEMS,
    FP8_SPACE,
    fp8_plan,
)

torch = pytest.importorskip("torch")


def test_e4m3_rounding_is_torchs():
    """Every pattern decodes as torch reads it, and rounding to nearest (ties
    to even, halfway points included) picks torch's pattern."""
    patterns = torch.arange(256, dtype=torch.int32).to(torch.uint8)
    decoded = patterns.view(torch.float8_e4m3fn).double().numpy()
    np.testing.assert_array_equal(E4M3_VALUES, decoded)
    finite = E4M3_VALUES[:127]
    values = np.concatenate(
        [
            np.random.default_rng(0).standard_normal(50_000) * 40,
            finite,
            (finite[:-1] + finite[1:]) / 2,  # every halfway point
            -finite,
            [0.0, -0.0, 1e-9, 447.9, 448.0],
        ]
    ).astype(np.float32)
    expected = torch.from_numpy(values).clamp(-448, 448).to(torch.float8_e4m3fn)
    np.testing.assert_array_equal(float32_to_e4m3_bits(values), expected.view(torch.uint8).numpy())
    # Past the largest finite magnitude: saturated, not NaN.
    assert E4M3_VALUES[float32_to_e4m3_bits(np.float32([1e4, -1e4]))].tolist() == [448, -448]


def test_fp8_problem_and_config_rules():
    assert MatmulProblem(E4M3, "bf16").epilogue_tensors() == {"scale_a": "d", "scale_b": "e"}
    assert MatmulProblem(E4M3, "bf16").scale_sizes(1000, 1336, 528) == {"d_dim0": 1, "e_dim0": 1}
    block = MatmulProblem(E4M3, "bf16", block_scales=True)
    # scale_a's transpose [K blocks, M], and scale_b's 11 x 5 blocks read flat.
    assert block.scale_sizes(1000, 1336, 528) == {"d_dim0": 5, "d_dim1": 1000, "e_dim0": 55}
    assert block.epilogue() == {"scale_a": "d", "scale_b": "e", "scale_block": 128}
    with pytest.raises(ValueError, match="block_scales = True scales f8E4M3FN operands"):
        MatmulProblem("f16", block_scales=True)
    tile = dict(
        block_k=128, block_n=128, wgmma_in_flight=0, num_consumer_groups=2, producer="warpgroup"
    )
    MatmulConfig(**tile).check_problem(block)
    for bad in (dict(block_k=64), dict(block_n=256), dict(wgmma_in_flight=1)):
        with pytest.raises(ValueError, match="block scales need block_k = 128"):
            MatmulConfig(**{**tile, **bad}).check_problem(block)
    one_group = dict(num_consumer_groups=1, producer="warp")
    with pytest.raises(
        ValueError, match="group's 128x128 f32 sum and a K tile product take 256 registers"
    ):
        MatmulConfig(**{**tile, **one_group}).check_problem(block)


def test_fp8_kernel_reads_scales_and_runs_e4m3_wgmmas(tmp_path):
    """The default TMA-store config compiled for fp8: m64nNk32 e4m3 WGMMAs on
    128-element K tiles, the scales as one-element tensors of their own."""
    from wsc.kernels.matmul.build import compile_matmul

    config = MatmulConfig(
        block_m=128,
        block_n=256,
        block_k=128,
        num_stages=3,
        num_consumer_groups=2,
        producer="warpgroup",
        wgmma_in_flight=1,
        persistent=True,
        tma_store=True,
        group_m=8,
    )
    result = compile_matmul(1000, 1336, 528, MatmulProblem(E4M3, "bf16"), config, tmp_path)
    assert result.ptxas.spill_stores == 0
    assert "wgmma.mma_async.sync.aligned.m64n256k32.f32.e4m3.e4m3" in result.ptx
    assert "k16" not in result.ptx
    doc = json.loads((tmp_path / "kernel.json").read_text())
    assert doc["sizes"] == {"m": 1000, "n": 1336, "k": 528, "d_dim0": 1, "e_dim0": 1}
    assert {name: (spec["dtype"], spec["shape"]) for name, spec in doc["tensors"].items()} == {
        "a": (E4M3, ["m", "k"]),
        "b": (E4M3, ["n", "k"]),
        "c": ("bf16", ["m", "n"]),
        "d": ("f32", ["d_dim0"]),
        "e": ("f32", ["e_dim0"]),
    }
    assert doc["tensor_maps"]["a"]["box"] == [128, 128]
    assert doc["config"]["epilogue"] == {"scale_a": "d", "scale_b": "e"}

    # The check's reference is the product of the e4m3 values times both scales.
    check = MatmulCheck(load_artifact(tmp_path).resized(m=40, n=24, k=32, d_dim0=1, e_dim0=1))
    rng = np.random.default_rng(1)
    a, b = (
        float32_to_e4m3_bits(rng.standard_normal(s, dtype=np.float32)) for s in ((40, 32), (24, 32))
    )
    hosts = {"a": a, "b": b, "d": np.float32([0.5]), "e": np.float32([-3.0])}
    exact = (E4M3_VALUES[a] @ E4M3_VALUES[b].T) * -1.5
    inputs = Inputs(arrays={}, hosts=hosts, cache={})
    assert check.relative_error(HostOutputs(), inputs, {"c": exact}, seed=0) < 1e-12
    assert check.relative_error(HostOutputs(), inputs, {"c": exact / -1.5}, seed=0) > 1


class HostOutputs:
    """The numpy path of MatmulCheck: the outputs given are float64 already."""

    def float64(self, values, dtype):
        return values


def block_scaled_product(a, b_nk, scale_a, scale_b):
    """sum over K blocks kb of (A[:, kb] B[:, kb]^T) scale_a[:, kb] scale_b[n / 128, kb]
    for float64 A [M, K] and B [N, K] (numpy or torch): the blocks' products
    one by one, as the kernel sums them, not the check's dequantized operands."""
    k, n = a.shape[1], b_nk.shape[0]
    scale_b = scale_b.reshape(-(-n // 128), -(-k // 128))
    column_block = [j // 128 for j in range(n)]
    product = 0
    for kb in range(-(-k // 128)):
        block = slice(kb * 128, (kb + 1) * 128)
        partial = a[:, block] @ b_nk[:, block].T
        product = product + partial * scale_a[:, kb : kb + 1] * scale_b[column_block, kb][None, :]
    return product


def test_block_scaled_kernel_scales_each_k_tile_s_product(tmp_path):
    """The block-scaled space's default config: each K tile's product times
    scale_a's row vector and the block's scale_b, added to the sum; the
    check's reference dequantizes A and B block by block."""
    from wsc.kernels.matmul.build import compile_matmul
    from wsc.matmul import DEFAULT_CONFIGS

    problem = MatmulProblem(E4M3, "bf16", block_scales=True)
    config = MatmulConfig(**DEFAULT_CONFIGS["nk-block-scaled"], block_k=128)
    result = compile_matmul(1000, 1336, 528, problem, config, tmp_path)
    assert result.ptxas.spill_stores == 0
    assert "wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e4m3" in result.ptx
    doc = json.loads((tmp_path / "kernel.json").read_text())
    sizes = {"m": 1000, "n": 1336, "k": 528, "d_dim0": 5, "d_dim1": 1000, "e_dim0": 55}
    assert doc["sizes"] == sizes
    # scale_a as its transpose, whose rows TMA copies into the ring's stages.
    assert doc["tensors"]["d"]["shape"] == ["d_dim0", "d_dim1"]
    assert doc["tensors"]["e"]["shape"] == ["e_dim0"]
    # Per K tile, A's and B's tiles and the 128 scales of the tile's rows in
    # one box (a one-row stage tile is stored unswizzled).
    assert result.ptx.count("cp.async.bulk.tensor.2d.shared::cluster.global") == 3
    assert doc["tensor_maps"]["d"] == {
        "box": [1, 128],
        "swizzle": "none",
        "tensor": "d",
    }
    # The scales' sizes follow M, N and K when the artifact is resized.
    assert doc["derived_sizes"] == {
        "d_dim0": "cdiv(k, 128)",
        "d_dim1": "cdiv(m, 4) * 4",
        "e_dim0": "cdiv(n, 128) * cdiv(k, 128)",
    }

    m, n, k = 199, 300, 400  # 2 x 3 blocks of B, the last ragged; 4 K blocks
    resized = load_artifact(tmp_path).resized(m=m, n=n, k=k)
    # scale_a's transpose has rows of 200: whole 16 bytes.
    assert [resized.sizes[name] for name in ("d_dim0", "d_dim1", "e_dim0")] == [4, 200, 12]
    check = MatmulCheck(resized)
    rng = np.random.default_rng(2)
    a, b = (
        float32_to_e4m3_bits(rng.standard_normal(s, dtype=np.float32)) for s in ((m, k), (n, k))
    )
    scale_a = rng.uniform(0.5, 2, (m, 4)).astype(np.float32)
    scale_b = rng.uniform(0.5, 2, 12).astype(np.float32)
    exact = block_scaled_product(
        E4M3_VALUES[a], E4M3_VALUES[b], scale_a.astype(np.float64), scale_b.astype(np.float64)
    )
    padded = np.full((4, 200), np.nan, dtype=np.float32)
    padded[:, :m] = scale_a.T
    hosts = {"a": a, "b": b, "d": padded, "e": scale_b}
    inputs = Inputs(arrays={}, hosts=hosts, cache={})
    assert check.relative_error(HostOutputs(), inputs, {"c": exact}, seed=0) < 1e-12
    unscaled = E4M3_VALUES[a] @ E4M3_VALUES[b].T
    assert check.relative_error(HostOutputs(), inputs, {"c": unscaled}, seed=0) > 0.1


@pytest.mark.parametrize(
    "name, problem", list(zip(FP8_BLOCK_SPACES, FP8_BLOCK_PROBLEMS, strict=True))
)
def test_every_block_scaled_config_compiles(tmp_path, name, problem):
    from wsc.matmul import _fixed, tuning_sizes

    plan = fp8_plan(*problem, block_scales=True)
    assert plan.space == name
    space = SPACES[name]
    result = space.tune(
        tuning_sizes(plan), fixed=_fixed(plan), cache=Cache(root=tmp_path), progress=False
    )
    assert [c.error for c in result.candidates] == [None] * len(space.configs())


def test_fp8_operands_must_be_k_major():
    from wsc.builder import BuildError, KernelBuilder, e4m3

    kb = KernelBuilder("k", grid=[("m", 64)])
    sa = kb.shared_tensor(e4m3, [1, 64, 128])
    sb = kb.shared_tensor(e4m3, [1, 128, 64])
    acc = kb.register_tensor("f32", [64, 64])
    with pytest.raises(BuildError, match="reads f8E4M3FN K-major only") as error:
        kb.wgmma.mma(sa[0], sb[0], acc)
    assert str(error.value).startswith(f"{__file__}:")


def test_an_f32_stage_is_no_wgmma_operand():
    """f32 stages hold what registers read (block scales); WGMMA refuses them."""
    from wsc.builder import BuildTypeError, KernelBuilder

    kb = KernelBuilder("k", grid=[("m", 64)])
    sa = kb.shared_tensor("f32", [1, 64, 32])
    sb = kb.shared_tensor("f32", [1, 64, 32])
    acc = kb.register_tensor("f32", [64, 64])
    with pytest.raises(
        BuildTypeError, match="WGMMA reads stage tiles of f16, bf16, f8E4M3FN, B is f32"
    ):
        kb.wgmma.mma(sa[0], sb[0].transpose(), acc)


def meta(*shape, dtype=torch.float8_e4m3fn):
    return torch.empty(*shape, dtype=dtype, device="meta")


def test_scaled_mm_plan_and_its_errors():
    import wsc

    a, w = meta(1000, 528), meta(1336, 528)
    scales = (meta(1, dtype=torch.float32), meta((), dtype=torch.float32))
    p = plan(a, w.T, scales=scales)
    assert (p.dtype, p.out_dtype, p.b_layout, p.space) == (E4M3, "bf16", "nk", "nk-tma")
    block_a, block_b = meta(1000, 5, dtype=torch.float32), meta(11, 5, dtype=torch.float32)
    p = plan(a, w.T, scales=(block_a, block_b))
    assert (p.block_scales, p.space, p.epilogue) == (
        True,
        "nk-block-scaled-tma",
        {"block_scales": True},
    )
    assert wsc.scaled_mm(a, w.T, block_a, block_b, out_dtype=torch.float32).dtype == torch.float32
    # C that TMA cannot store: from registers (no coalesced-store space for block scales).
    assert plan(a, w.T, out_dtype=torch.float32, scales=(block_a, block_b)).space == (
        "nk-block-scaled"
    )
    odd = plan(a, meta(1333, 528).T, scales=(block_a, block_b))
    assert (odd.space, odd.tma_store, odd.coalesced_store) == ("nk-block-scaled", False, False)
    assert plan(a, w.T, out_dtype=torch.float32, scales=scales).space == "nk"
    assert wsc.scaled_mm(a, w.T, *scales).dtype == torch.bfloat16
    out = meta(1000, 1336, dtype=torch.float16)
    assert wsc.scaled_mm(a, w.T, *scales, out=out) is out
    for call, error, message in (
        (lambda: plan(a, w.T), TypeError, r"fp8 takes scales: wsc.scaled_mm"),
        (lambda: plan(a.half(), w.T.half(), scales=scales), TypeError, "must be float8_e4m3fn"),
        (lambda: plan(a, w.T.contiguous(), scales=scales), ValueError, "b must be column-major"),
        (
            lambda: plan(a, w.T, scales=(scales[0], meta(2, dtype=torch.float32))),
            ValueError,
            r"per-tensor scales \(one element each\) or block scales of shapes \[1000, 5\] and "
            r"\[11, 5\], got \[1\] and \[2\]",
        ),
        (
            lambda: wsc.scaled_mm(a, w.T, 1.0, scales[1]),
            TypeError,
            "wsc.scaled_mm: scale_a must be a torch tensor or a numpy array, got float",
        ),
        (
            lambda: plan(a, w.T, scales=(scales[0].half(), scales[1])),
            TypeError,
            "scale_a must be a float32 tensor, got torch.float16",
        ),
        (
            lambda: plan(a, w.T, scales=(meta(1000, 10, dtype=torch.float32)[:, ::2], block_b)),
            ValueError,
            r"scale_a must be column-major \(strides \[1, 1000\]\) or row-major "
            r"\(strides \[5, 1\]\), got strides \[10, 2\]",
        ),
        (
            lambda: plan(a, w.T, scales=(block_a, block_b.T.contiguous().T)),
            ValueError,
            r"scale_b must be contiguous, got strides \[1, 11\]",
        ),
        (
            lambda: plan(meta(1000, 520), meta(1336, 520).T, scales=scales),
            ValueError,
            "must be a multiple of 16",
        ),
        (
            lambda: plan(a, w.T, out_dtype=torch.float8_e4m3fn, scales=scales),
            TypeError,
            "out_dtype must be float32, float16 or bfloat16",
        ),
    ):
        with pytest.raises(error, match=message):
            call()


def test_scale_a_reaches_the_kernel_as_its_transpose(monkeypatch):
    """The kernel copies scale_a's transpose [K blocks, M] row by row with
    TMA, M padded to 16 bytes: a column-major scale_a with M a multiple of 4
    is passed in place (its transpose view), a row-major one or one of
    another M as a padded copy; the call that binds the launch and those that
    reuse it alike. The launch is a recorder here, so this runs without a GPU."""
    matmul = importlib.import_module("wsc.matmul")  # the module, not wsc.matmul the call

    class Recorder:
        block_scales = True

        def __init__(self):
            self.passed = []

        def __call__(self, *tensors):
            self.passed.append(tensors)

    n = 256
    # (M, K, scale_a's layout, read in place); one K block: [M, 1] has strides (1, 1).
    cases = ((40, 384, "column", True), (40, 384, "row", False), (42, 384, "column", False))
    for m, k, layout, in_place in (*cases, (40, 128, "row", False)):
        blocks = -(-k // 128)
        a = torch.zeros(m, k).to(torch.float8_e4m3fn)
        w = torch.zeros(n, k).to(torch.float8_e4m3fn)
        scale_a = torch.arange(m * blocks, dtype=torch.float32).reshape(m, blocks)
        if layout == "column":
            scale_a = scale_a.t().contiguous().t()
        scale_b = torch.ones(2, blocks)
        out = torch.empty(m, n, dtype=torch.bfloat16)
        recorder = Recorder()
        signature = matmul._signature(a, w.T, out, None, scales=(scale_a, scale_b))
        monkeypatch.setitem(matmul._bound, signature, recorder)
        matmul.scaled_mm(a, w.T, scale_a, scale_b, out=out)
        matmul._run_torch(a, w.T, out, scales=(scale_a, scale_b))
        assert len(recorder.passed) == 2
        for tensors in recorder.passed:
            kernel_scale_a = tensors[3]
            padded = -(-m // 4) * 4
            assert kernel_scale_a.shape == (blocks, padded), (m, layout)
            assert kernel_scale_a.stride() == (padded, 1), (m, layout)
            assert torch.equal(kernel_scale_a[:, :m], scale_a.t()), (m, layout)
            assert (kernel_scale_a.data_ptr() == scale_a.data_ptr()) == in_place, (m, layout)
            assert tensors[4] is scale_b


@pytest.fixture
def gpu(monkeypatch):
    if not hopper_gpu_visible() or not torch.cuda.is_available():
        pytest.skip("needs a Hopper GPU and CUDA torch")
    monkeypatch.setattr(sys.modules["wsc.matmul"], "_bound", {})
    return torch.device("cuda")


def random_fp8(gpu, m: int, n: int, k: int):
    """a [M, K] and w [N, K] of random e4m3 values, and the generator that drew
    them (seeded by the sizes), for more draws."""
    generator = torch.Generator(device=gpu).manual_seed(m + n + k)
    a, w = (
        (torch.randn(rows, k, device=gpu, generator=generator) * 2).to(torch.float8_e4m3fn)
        for rows in (m, n)
    )
    return a, w, generator


@pytest.mark.cuda
@pytest.mark.parametrize("problem", FP8_PROBLEMS, ids=lambda p: "x".join(map(str, p)))
def test_scaled_mm_is_correct_on_every_element(gpu, monkeypatch, problem):
    """Each space's default config (the problems of matmul_cache.FP8_PROBLEMS)
    into a NaN-poisoned output, against the float64 product of the e4m3
    values times the scales; a second call gives the same bits."""
    import wsc
    from wsc.kernels.matmul.check import relative_frobenius

    monkeypatch.setenv("WSC_AUTOTUNE", "0")
    m, n, k, out_dtype = problem
    dtype = {"bf16": torch.bfloat16, "f32": torch.float32}[out_dtype]
    a, w, _ = random_fp8(gpu, m, n, k)
    scale_a = torch.tensor([0.375], device=gpu)
    scale_b = torch.tensor(-1.5, device=gpu)
    out = torch.full((m, n), float("nan"), device=gpu, dtype=dtype)
    assert wsc.scaled_mm(a, w.T, scale_a, scale_b, out=out) is out
    reference = (a.double() @ w.double().T) * (0.375 * -1.5)
    assert not torch.isnan(out).any()
    error = relative_frobenius(out.double(), reference, torch.linalg.norm)
    assert error < (1e-2 if out_dtype == "bf16" else 1e-3), error
    again = wsc.scaled_mm(a, w.T, scale_a, scale_b, out_dtype=dtype)
    assert torch.equal(again, out)
    # A new scale's value is read at the next launch: no host copy of it.
    scale_b.fill_(3.0)
    scaled = wsc.scaled_mm(a, w.T, scale_a, scale_b, out_dtype=dtype)
    assert torch.allclose(scaled.double(), out.double() * -2, rtol=0, atol=0)
    assert fp8_plan(*problem) == plan(a, w.T, out, scales=(scale_a, scale_b))


@pytest.mark.cuda
@pytest.mark.parametrize("problem", FP8_BLOCK_PROBLEMS, ids=lambda p: "x".join(map(str, p)))
def test_block_scaled_mm_is_correct_on_every_element(gpu, monkeypatch, problem):
    """Block scales (a scale per row of A and 128 of K, per 128 x 128 block
    of w) in the block-scaled space's default config, ragged in M, N and K,
    into a NaN-poisoned output, against the float64 product of the
    dequantized operands; scale_a row-major or column-major, M a multiple of
    4 or not."""
    import wsc
    from wsc.kernels.matmul.check import relative_frobenius

    monkeypatch.setenv("WSC_AUTOTUNE", "0")
    m, n, k, out_dtype = problem
    dtype = {"bf16": torch.bfloat16, "f32": torch.float32}[out_dtype]
    a, w, generator = random_fp8(gpu, m, n, k)
    blocks = -(-k // 128)
    scale_a = torch.rand(m, blocks, device=gpu, generator=generator) + 0.5
    scale_b = -torch.rand(-(-n // 128), blocks, device=gpu, generator=generator) - 0.5
    out = torch.full((m, n), float("nan"), device=gpu, dtype=dtype)
    assert wsc.scaled_mm(a, w.T, scale_a, scale_b, out=out) is out
    reference = block_scaled_product(a.double(), w.double(), scale_a.double(), scale_b.double())
    assert not torch.isnan(out).any()
    error = relative_frobenius(out.double(), reference, torch.linalg.norm)
    assert error < (1e-2 if out_dtype == "bf16" else 1e-3), error
    # A column-major scale_a, as torch._scaled_mm takes it (read in place), gives the same bits.
    column_major = torch.full_like(out, float("nan"))
    wsc.scaled_mm(a, w.T, scale_a.t().contiguous().t(), scale_b, out=column_major)
    assert torch.equal(column_major, out)
    # So do the first M - 1 rows (M - 1 not a multiple of 4: scale_a copied, rows padded).
    fewer = torch.full_like(out[: m - 1], float("nan"))
    scale_a_fewer = scale_a[: m - 1].t().contiguous().t()
    wsc.scaled_mm(a[: m - 1], w.T, scale_a_fewer, scale_b, out=fewer)
    assert torch.equal(fewer, out[: m - 1])
    assert fp8_plan(*problem, block_scales=True) == plan(a, w.T, out, scales=(scale_a, scale_b))


@pytest.mark.cuda
@pytest.mark.parametrize("scale_a_layout", ["row-major", "column-major"])
def test_a_split_k_block_scaled_launch_is_correct_when_called_again(
    gpu, monkeypatch, scale_a_layout
):
    """The register-store block-scaled space's split-K config (its only one)
    as the default: the first call binds the launch and its workspace, the
    second reuses them (the fast path) after scale_a's values changed in
    place; both into a NaN-poisoned output, against float64. A row-major
    scale_a is copied into the kernel's form on each call, a column-major one
    (M a multiple of 4) read in place."""
    import wsc
    from wsc.kernels.matmul.check import relative_frobenius

    wsc_matmul = importlib.import_module("wsc.matmul")  # the module, not wsc.matmul the call
    monkeypatch.setenv("WSC_AUTOTUNE", "0")
    space = FP8_BLOCK_SPACES[1]
    split = next(config for config in SPACES[space].configs() if config["split_k"] > 1)
    monkeypatch.setitem(wsc_matmul.DEFAULT_CONFIGS, space, split)
    # The default runs, not a choice a tuner may have cached for this class.
    monkeypatch.setattr(wsc_matmul, "_cached_choice", lambda *args: None)
    monkeypatch.setattr(wsc_matmul, "_bound", {})
    m, n, k, out_dtype = FP8_BLOCK_PROBLEMS[1]
    assert m % 4 == 0 and fp8_plan(m, n, k, out_dtype, block_scales=True).space == space
    a, w, generator = random_fp8(gpu, m, n, k)
    blocks = -(-k // 128)
    scale_a = torch.rand(m, blocks, device=gpu, generator=generator) + 0.5
    if scale_a_layout == "column-major":
        scale_a = scale_a.t().contiguous().t()
    scale_b = torch.rand(-(-n // 128), blocks, device=gpu, generator=generator) + 0.5
    for call in range(2):
        if call:
            scale_a.mul_(torch.rand(m, blocks, device=gpu, generator=generator) + 0.5)
        out = torch.full((m, n), float("nan"), device=gpu, dtype=torch.float32)
        wsc.scaled_mm(a, w.T, scale_a, scale_b, out=out)
        reference = block_scaled_product(a.double(), w.double(), scale_a.double(), scale_b.double())
        assert not torch.isnan(out).any(), call
        error = relative_frobenius(out.double(), reference, torch.linalg.norm)
        assert error < 1e-3, (call, error)
    (bound,) = wsc_matmul._bound.values()
    assert isinstance(bound, wsc_matmul._BoundSplitMatmul)


@pytest.mark.cuda
@pytest.mark.parametrize("space", [FP8_SPACE, *FP8_BLOCK_SPACES])
def test_every_fp8_config_is_correct(gpu, space):
    """`wsc run --check` on every config of the fp8 TMA-store space and of the
    block-scaled ones, resized to another problem, against float64 on every
    element."""
    block = space in FP8_BLOCK_SPACES
    problem = (
        fp8_plan(*FP8_BLOCK_PROBLEMS[FP8_BLOCK_SPACES.index(space)], block_scales=True)
        if block
        else fp8_plan(*FP8_PROBLEMS[0])
    )
    configs = SPACES[space].configs()
    directories = [compiled_kernel_dir(problem, config, Cache()) for config in configs]
    sizes = {"m": 777, "n": 1400, "k": 1040}
    if block:
        sizes.update(d_dim0=9, d_dim1=780, e_dim0=11 * 9)
    reports = run_artifacts(directories, bench=False, sizes=sizes)
    for config, report in zip(configs, reports, strict=True):
        assert report["ok"] and report["nan_count"] == 0, (config, report)
        assert report["dtype"] == E4M3 and report["shape"] == [777, 1400, 1040]
