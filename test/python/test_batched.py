"""Batches of matrices: rank-3 global tensors, their matrices (wsc.batch_matrix)
read and written by TMA copies at the batch index as a third coordinate, the
batched matmul kernel and its check, and wsc.bmm's argument checks; on a
Hopper GPU, wsc.bmm against a float64 reference."""

from __future__ import annotations

import json

import numpy as np
import pytest

from wsc.kernels.matmul.check import MatmulCheck
from wsc.kernels.matmul.config import MatmulConfig, MatmulProblem
from wsc.kernels.matmul.space import matmul_kernel
from wsc.runtime import load_artifact
from wsc.runtime.memory import Inputs

torch = pytest.importorskip("torch")

SIZES = {"m": 200, "n": 136, "k": 72, "batch": 3}


@pytest.fixture(scope="module")
def batched_nk(tmp_path_factory):
    """The batched kernel ("nk", 64x128 tiles) compiled and written for SIZES."""
    kernel = matmul_kernel(
        "f16",
        "f16",
        "nk",
        block_m=64,
        block_n=128,
        num_stages=3,
        num_consumer_groups=1,
        producer="warp",
        tma_store=True,
        batched=True,
    ).compile()
    return kernel, kernel.write_artifact(tmp_path_factory.mktemp("bmm"), **SIZES)


def test_batched_kernel_reads_its_matrices_with_3d_copies(batched_nk):
    kernel, directory = batched_nk
    assert kernel.result.ptxas.spill_stores == 0
    ptx = kernel.ptx
    # Loads of A and B, the store of C: each addresses its matrix (ctaid.z).
    assert ptx.count("cp.async.bulk.tensor.3d.shared::cluster.global") >= 2
    assert "cp.async.bulk.tensor.3d.global.shared::cta" in ptx
    assert "cp.async.bulk.tensor.2d" not in ptx
    assert "%ctaid.z" in ptx
    doc = json.loads((directory / "kernel.json").read_text())
    assert doc["sizes"] == SIZES
    assert doc["grid"] == ["cdiv(m, 64)", "cdiv(n, 128)", "cdiv(batch, 1)"]
    assert {name: spec["shape"] for name, spec in doc["tensors"].items()} == {
        "a": ["batch", "m", "k"],
        "b": ["batch", "n", "k"],
        "c": ["batch", "m", "n"],
    }
    assert doc["tensor_maps"]["a"]["box"] == [1, 64, 64]
    assert doc["tensor_maps"]["c"]["box"][0] == 1


def _inputs(rng, b_layout):
    batch, m, n, k = (SIZES[s] for s in ("batch", "m", "n", "k"))
    a = rng.standard_normal((batch, m, k)).astype(np.float16)
    b = rng.standard_normal((batch, n, k) if b_layout == "nk" else (batch, k, n))
    b = b.astype(np.float16)
    b_kn = b.astype(np.float64).transpose(0, 2, 1) if b_layout == "nk" else b.astype(np.float64)
    return a, b, a.astype(np.float64) @ b_kn


def test_batched_check_compares_every_matrix(batched_nk):
    _, directory = batched_nk
    check = MatmulCheck(load_artifact(directory))
    assert (check.batch, check.b_layout) == (3, "nk")
    assert check.flops == 2.0 * 3 * 200 * 136 * 72
    assert check.describe()["batch"] == 3

    class Host:
        """The numpy path of MatmulCheck: outputs are float64 already."""

        def float64(self, values, dtype):
            return values

    a, b, exact = _inputs(np.random.default_rng(0), "nk")
    inputs = Inputs(arrays={}, hosts={"a": a, "b": b}, cache={})
    assert check.relative_error(Host(), inputs, {"c": exact}, seed=0) < 1e-12
    wrong = exact.copy()
    wrong[2] = exact[1]  # the last matrix's product is another's
    assert check.relative_error(Host(), inputs, {"c": wrong}, seed=0) > 0.5


def test_batched_problem_rules():
    with pytest.raises(ValueError, match="a batched product has no fused epilogue"):
        MatmulProblem("f16", "f16", "nk", bias=True, batched=True)
    problem = MatmulProblem("f16", "f16", "nk", batched=True)
    with pytest.raises(ValueError, match="stores C with TMA"):
        MatmulConfig(tma_store=False).check_problem(problem)
    with pytest.raises(ValueError, match="shares no tile between blocks: not stream-K"):
        MatmulConfig(tma_store=True, persistent=True, stream_k=True).check_problem(problem)


def test_batch_misuse_is_located():
    # Here, not at the top: a GPU machine runs the cuda tests without MLIR.
    from wsc.builder import BuildError, KernelBuilder, f16

    kb = KernelBuilder("k", grid=[("m", 64)])
    batch, matrix = kb.global_tensor(f16, rank=3), kb.global_tensor(f16)
    ring = kb.shared_tensor(f16, [1, 64, 64])
    full = kb.mbarrier.alloc(arrival_count=1, num_barriers=1)
    kb.sync()
    with pytest.raises(BuildError, match=r"only a batch of matrices \(rank 3\) is indexed") as e:
        matrix[0]
    assert str(e.value).startswith(f"{__file__}:")
    with pytest.raises(BuildError, match=r"'a' is a batch of matrices \(rank 3\); take one"):
        kb.tma.global_to_shared(batch, ring[0], [0, 0], mbarrier=full[0])
    assert len(batch.shape) == 3
    first = batch[kb.block_idx.z]
    acc = kb.register_tensor("f32", [64, 64])
    with pytest.raises(BuildError, match="'a\\[b\\]' is a matrix of a batch, which only TMA"):
        kb.store_global(first, kb.cast(acc, f16), [0, 0])
    with pytest.raises(BuildError, match="'a\\[b\\]' is a matrix of a batch"):
        kb.load_tile(first, [0, 0], [64, 64])


def meta(*shape, dtype=torch.float16):
    return torch.empty(*shape, dtype=dtype, device="meta")


def test_bmm_plan_and_its_errors():
    from wsc.matmul import plan_bmm

    a, w = meta(6, 1000, 520), meta(6, 1336, 520)
    p = plan_bmm(a, w.transpose(1, 2))
    assert (p.batch, p.m, p.n, p.k, p.b_layout, p.space) == (6, 1000, 1336, 520, "nk", "nk-batched")
    assert plan_bmm(a, meta(6, 520, 1336)).b_layout == "kn"
    # Padded rows are fine; matrices must follow one another.
    assert plan_bmm(meta(6, 1000, 528)[:, :, :520], w.transpose(1, 2)).batch == 6
    assert torch.ops.wsc.bmm(a, w.transpose(1, 2)).shape == (6, 1000, 1336)
    # One weight for every matrix: one matmul of all the rows.
    import wsc

    assert wsc.bmm(a, w[0].T).shape == (6, 1000, 1336)
    with pytest.raises(ValueError, match="out must be contiguous"):
        wsc.bmm(a, w[0].T, out=meta(1336, 6, 1000).permute(1, 2, 0))
    for out in (meta(5, 1000, 1336), meta(6000, 1336)):
        with pytest.raises(ValueError, match=r"wsc.bmm: out must be \[6, 1000, 1336\], got"):
            wsc.bmm(a, w[0].T, out=out)
    # Its dtype is the one matmul's: f32 too.
    assert wsc.bmm(a, w[0].T, out=meta(6, 1000, 1336, dtype=torch.float32)).dtype == torch.float32
    for call, error, message in (
        (lambda: plan_bmm(a[0], w[0].T), ValueError, r"a must be a batch of matrices"),
        (lambda: plan_bmm(a, meta(5, 520, 1336)), ValueError, "hold as many matrices, got 6 and 5"),
        (lambda: plan_bmm(a, w), ValueError, "per matrix, b must be .K, N. with K = 520"),
        (
            lambda: plan_bmm(a, meta(6, 520, 1335)),
            ValueError,
            "per matrix, b: its rows are 2670 bytes",
        ),
        (
            lambda: plan_bmm(meta(12, 1000, 520)[::2], w.transpose(1, 2)),
            ValueError,
            r"a's matrices must follow one another \(batch stride 520000\)",
        ),
        (
            lambda: plan_bmm(a, w.transpose(1, 2), out=meta(6, 1000, 1336, dtype=torch.float32)),
            TypeError,
            "out must be float16 or bfloat16",
        ),
        (
            lambda: plan_bmm(a, w.transpose(1, 2), out=meta(6, 1000, 1337)),
            ValueError,
            r"per matrix, out must be \[M, N\]",
        ),
        (
            lambda: plan_bmm(a, w.transpose(1, 2), out=meta(5, 1000, 1336)),
            ValueError,
            r"out must be \[B, M, N\]",
        ),
    ):
        with pytest.raises(error, match=message):
            call()


@pytest.mark.cuda
@pytest.mark.parametrize("b_layout", ["nk", "kn"])
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_bmm_is_correct_on_every_element(monkeypatch, b_layout, dtype):
    """The default config (test_matmul.py checks every config of the batched
    spaces with `wsc run --check`) on ragged sizes, a single matrix and a
    small M, into a NaN-poisoned output, against float64."""
    import wsc
    from wsc.device import hopper_gpu_visible
    from wsc.kernels.matmul.check import relative_frobenius

    if not hopper_gpu_visible() or not torch.cuda.is_available():
        pytest.skip("needs a Hopper GPU and CUDA torch")
    monkeypatch.setenv("WSC_AUTOTUNE", "0")
    dtype = getattr(torch, dtype)
    generator = torch.Generator(device="cuda").manual_seed(7)
    for batch, m, n, k in ((5, 1000, 1336, 520), (1, 64, 256, 64), (7, 33, 200, 1000)):
        a = torch.randn(batch, m, k, device="cuda", generator=generator).to(dtype)
        w = torch.randn(batch, n, k, device="cuda", generator=generator).to(dtype)
        b = w.transpose(1, 2) if b_layout == "nk" else w.transpose(1, 2).contiguous()
        out = torch.full((batch, m, n), float("nan"), device="cuda", dtype=dtype)
        wsc.bmm(a, b, out=out)
        reference = a.double() @ b.double()
        assert not torch.isnan(out).any()
        assert relative_frobenius(out.double(), reference, torch.linalg.norm) < 1e-2
        again = wsc.bmm(a, b)
        assert torch.equal(again, out)
        # One weight for every matrix (a wsc.matmul of all the rows).
        shared = torch.full((batch, m, n), float("nan"), device="cuda", dtype=dtype)
        wsc.bmm(a, b[0], out=shared)
        reference = a.double() @ b[0].double()
        assert not torch.isnan(shared).any()
        assert relative_frobenius(shared.double(), reference, torch.linalg.norm) < 1e-2
