"""Scalar kernel arguments: kb.scalar() (an f32 kernel argument, splat into a
register tile by wsc.tile_splat), its f32 launch parameter with the value the
artifact records, a launch that gives another by name, and the reference
check that receives it; on a Hopper GPU, a scaled product checked against
float64."""

from __future__ import annotations

import json

import numpy as np
import pytest

from wsc.kernels.reference.check import ReferenceCheck
from wsc.runtime import ArtifactError, load_artifact
from wsc.runtime.memory import Inputs

SIZES = {"m": 200, "n": 136, "k": 72}


def reference(a, b, d):
    return d * (a @ b.T)


def scaled_matmul():
    """C = d * (A B^T): one warpgroup, a ring of two stages, the scale a scalar."""
    from wsc.builder import CONSUMER_INITIAL_PHASE, KernelBuilder, f16, f32

    kb = KernelBuilder("scaled", num_warps=4, grid=[("m", 64), ("n", 64)], check=reference)
    a, b, c = kb.global_tensor(f16), kb.global_tensor(f16), kb.global_tensor(f32)
    alpha = kb.scalar()
    sa, sb = kb.shared_tensor(f16, [2, 64, 64]), kb.shared_tensor(f16, [2, 64, 64])
    full = kb.mbarrier.alloc(arrival_count=1, num_barriers=2)
    kb.sync()
    row, col = kb.block_idx.x * 64, kb.block_idx.y * 64
    acc = kb.register_tensor(f32, [64, 64])
    for it in kb.range(0, a.shape[1], 64, stages=2, phase=CONSUMER_INITIAL_PHASE):
        with kb.single_thread():
            kb.mbarrier.arrive_and_expect_tx(
                full[it.stage], sa[it.stage].nbytes + sb[it.stage].nbytes
            )
            kb.tma.global_to_shared(a, sa[it.stage], [row, it.offset], mbarrier=full[it.stage])
            kb.tma.global_to_shared(b, sb[it.stage], [col, it.offset], mbarrier=full[it.stage])
        kb.mbarrier.wait(full[it.stage], phase=it.phase)
        kb.wgmma.fence()
        kb.wgmma.mma(sa[it.stage], sb[it.stage].transpose(), acc)
        kb.wgmma.commit_group()
        kb.wgmma.wait_group(0)
        kb.sync()
    kb.store_global(c, acc * alpha, [row, col])
    return kb.finish()


@pytest.fixture(scope="module")
def scaled(tmp_path_factory):
    pytest.importorskip("mlir")
    compiled = scaled_matmul().compile()
    return compiled, compiled.write_artifact(
        tmp_path_factory.mktemp("scaled"), scalars={"d": 0.5}, **SIZES
    )


def test_a_scalar_is_an_f32_parameter_with_its_value(scaled):
    compiled, directory = scaled
    assert "wsc.tile_splat" in str(compiled.kernel)
    assert ".param .f32 scaled_param_" in compiled.ptx
    doc = json.loads((directory / "kernel.json").read_text())
    assert doc["params"][-1] == {"kind": "f32", "name": "d", "value": 0.5}
    assert "d" not in doc["tensors"]
    assert load_artifact(directory).params[-1].value == 0.5


def test_write_artifact_wants_each_scalar_s_value(scaled, tmp_path):
    compiled, _ = scaled
    with pytest.raises(ValueError, match=r"scalar argument 'd' needs the value runs use"):
        compiled.write_artifact(tmp_path / "x", **SIZES)
    with pytest.raises(ValueError, match=r"scalars names e, no scalar argument of the kernel"):
        compiled.write_artifact(tmp_path / "y", scalars={"d": 1.0, "e": 2.0}, **SIZES)
    for value in (float("nan"), float("inf"), True, "1.0"):
        with pytest.raises(ValueError, match=r"scalar argument 'd' must be a finite number"):
            compiled.write_artifact(tmp_path / "z", scalars={"d": value}, **SIZES)


def test_an_artifact_s_f32_parameter_has_a_finite_value(scaled, tmp_path):
    _, directory = scaled
    doc = json.loads((directory / "kernel.json").read_text())
    for value, message in ((None, r"params\[7\].value': missing"), (float("nan"), "finite")):
        broken = dict(doc, params=[*doc["params"][:-1], {"kind": "f32", "name": "d"}])
        broken.pop("cubin")
        if value is not None:
            broken["params"][-1]["value"] = value
        target = tmp_path / f"bad-{value}"
        target.mkdir()
        (target / "kernel.ptx").write_text("// ptx\n")
        (target / "kernel.json").write_text(json.dumps(broken))
        with pytest.raises(ArtifactError, match=message):
            load_artifact(target)


def test_the_reference_receives_the_scalar(scaled):
    _, directory = scaled
    check = ReferenceCheck(load_artifact(directory))
    assert check.scalars == {"d": 0.5}

    class Host:
        def float64(self, values, dtype):
            return values

    rng = np.random.default_rng(0)
    a = rng.standard_normal((200, 72)).astype(np.float16)
    b = rng.standard_normal((136, 72)).astype(np.float16)
    exact = 0.5 * (a.astype(np.float64) @ b.astype(np.float64).T)
    inputs = Inputs(arrays={"a": a, "b": b}, hosts={"a": a, "b": b}, cache={})
    assert check.relative_error(Host(), inputs, {"c": exact}, seed=0) < 1e-12
    inputs.cache.clear()
    assert check.relative_error(Host(), inputs, {"c": 2 * exact}, seed=0) > 0.5


def test_scalar_misuse_is_located():
    pytest.importorskip("mlir")
    from wsc.builder import BuildError, BuildTypeError, KernelBuilder, f16, f32

    kb = KernelBuilder("k", grid=[("m", 64)])
    with pytest.raises(BuildTypeError, match="only f32 scalars are supported, got 'f16'"):
        kb.scalar(f16)
    out = kb.global_tensor(f32)
    kb.scalar()
    kb.store_global(out, kb.register_tensor(f32, [64, 64]), [0, 0])
    with pytest.raises(BuildError, match=r"scalar 'b', declared at .*, is never used"):
        kb.finish()
    other = KernelBuilder("other", grid=[("m", 64)]).scalar()
    with pytest.raises(BuildError, match="belongs to another kernel's builder"):
        KernelBuilder("k2", grid=[("m", 64)]).register_tensor(f32, [64, 64]) * other


@pytest.mark.cuda
def test_a_scaled_product_is_correct_on_the_gpu(scaled, tmp_path):
    """`wsc run --check` of the artifact (its d = 0.5), and of one written with
    d = -3 (the value reaches the kernel, not a constant of it)."""
    from wsc.device import hopper_gpu_visible, run_artifact

    if not hopper_gpu_visible():
        pytest.skip("needs a Hopper GPU")
    compiled, directory = scaled
    other = compiled.write_artifact(tmp_path / "minus3", scalars={"d": -3.0}, **SIZES)
    for path in (directory, other):
        report = run_artifact(path, bench=False)
        assert report["ok"] and report["nan_count"] == 0, report


def test_a_run_may_give_a_scalar_another_value(scaled):
    import argparse

    from wsc.runtime.run_cli import _base_report, _scalar

    _, directory = scaled
    artifact = load_artifact(directory)
    assert artifact.scalars() == {"d": 0.5}
    other = artifact.with_scalars(d=-2.0)
    assert other.scalars() == {"d": -2.0} and artifact.scalars() == {"d": 0.5}
    assert ReferenceCheck(other).scalars == {"d": -2.0}
    assert _base_report(other)["scalars"] == {"d": -2.0}
    with pytest.raises(
        ArtifactError, match=r"has no scalar argument e \(its scalar arguments: d\)"
    ):
        artifact.with_scalars(e=1.0)
    assert _scalar("d=0.25") == ("d", 0.25)
    for text in ("d=", "=1", "d=nan", "d=x"):
        with pytest.raises(argparse.ArgumentTypeError, match="finite number"):
            _scalar(text)
