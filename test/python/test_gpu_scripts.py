"""The CPU half of the GPU check scripts in test/gpu: what they compile and
how they describe launches, so a run on the GPU machine does not fail on a
mistake that could have been caught here."""

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import pytest

GPU_DIR = Path(__file__).resolve().parents[1] / "gpu"
sys.path.insert(0, str(GPU_DIR))

import gpulib  # noqa: E402
import hang  # noqa: E402
import stress  # noqa: E402

from wsc.runtime import load_artifact  # noqa: E402


@pytest.fixture(scope="module")
def hang_cases(tmp_path_factory):
    out = tmp_path_factory.mktemp("hang")
    proc = subprocess.run(
        [sys.executable, str(GPU_DIR / "hang.py"), "compile", str(out)],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    return out


def test_hang_compiles_a_spin_limited_and_an_unbounded_planted_hang(hang_cases):
    assert json.loads((hang_cases / "cases.json").read_text()) == hang.CASES
    for name, limit in hang.CASES.items():
        artifact = load_artifact(hang_cases / name)
        assert artifact.cubin_path is not None and artifact.config["debug_spin_limit"] == limit
        ptx = artifact.ptx_path.read_text()
        assert ("trap;" in ptx) == bool(limit)


def test_hang_verdicts():
    report = (
        "wsc: wait-spin-limit: kernel matmul: thread 128 of block (1, 0, 0), role producer "
        "gave up after 65536 tries waiting on barrier empty, stage 0, phase parity 0 "
        "(wait at line 67, column 7); trapping\n"
    )
    fault = {"outcome": "KernelFault"}
    assert hang.check("spin-65536", 65536, fault, report, 2.0, 30) == []
    assert hang.check("spin-65536", 65536, fault, "", 2.0, 30) == [
        "no wait-spin-limit report in the output"
    ]
    assert hang.check("spin-65536", 65536, {"outcome": "LaunchTimeout"}, report, 31.0, 30) == [
        "expected KernelFault, got LaunchTimeout",
        "took 31.0 s, more than the 30 s timeout",
    ]
    assert hang.check("unbounded", 0, {"outcome": "LaunchTimeout"}, "", 30.0, 30) == []


def test_resized_describes_one_kernel_for_another_problem(hang_cases):
    artifact = load_artifact(hang_cases / "unbounded")
    other = artifact.resized(m=300, n=136, k=72)
    assert other.grid == (3, 2, 1)
    assert {n: s.shape for n, s in other.tensors.items()} == {
        "a": (300, 72),
        "b": (136, 72),
        "c": (300, 136),
    }
    assert other.sizes == {"m": 300, "n": 136, "k": 72}
    assert other.ptx_path == artifact.ptx_path


def _with_b_layout(artifact, b_layout):
    """The artifact with B's dims in `b_layout`'s order."""
    dims = ("n", "k") if b_layout == "nk" else ("k", "n")
    b = dataclasses.replace(
        artifact.tensors["b"], dims=dims, shape=tuple(artifact.sizes[d] for d in dims)
    )
    return dataclasses.replace(artifact, tensors={**artifact.tensors, "b": b})


@pytest.mark.parametrize("b_layout", ["nk", "kn"])
def test_stress_shapes_are_legal_for_tma(hang_cases, b_layout):
    artifact = _with_b_layout(load_artifact(hang_cases / "unbounded"), b_layout)
    shapes = stress.shapes(artifact, gpulib.SEED, 200, seed=1)
    assert len(shapes) == 200 and shapes[0] == (1, 8 if b_layout == "kn" else 1, 8)
    for m, n, k in shapes:
        assert m >= 1 and k % 8 == 0 and k >= 8
        assert n % 8 == 0 if b_layout == "kn" else n >= 1
    # The edges: one K tile, K one element row short of the ring, a full tile past it.
    assert shapes[1][2] == 64 and shapes[2][2] == 4 * 64 - 8 and shapes[3] == (128, 128, 264)


def test_an_example_kernel_is_compiled_with_its_defaults(tmp_path):
    artifact = load_artifact(
        gpulib.compile_kernel("v4_two_consumers", tmp_path / "v4", 200, 136, 200)
    )
    _, _, _, _, fields = gpulib.KERNELS["v4_two_consumers"]
    assert artifact.config["block_m"] == fields["block_m"]
    assert artifact.config["block_n"] == fields["block_n"]
    assert artifact.grid == (2, 1, 1) and artifact.cubin_path is not None
    with pytest.raises(ValueError, match="an example kernel has no debug options"):
        gpulib.compile_kernel(
            "v4_two_consumers", tmp_path / "x", 8, 8, 8, debug_delay_role="producer"
        )


class _FakeKernel:
    """Stands in for wsc.runtime.Kernel: "launching" computes C with torch on
    the CPU, right or with one element wrong, so launch_and_check's
    judgement is tested without a GPU."""

    def __init__(self, artifact, torch, corrupt=False):
        self.artifact, self.torch, self.corrupt = artifact, torch, corrupt

    def launch(self, a, b, c):
        nk = self.artifact.tensors["b"].dims == ("n", "k")
        product = a.double() @ (b.double().T if nk else b.double())
        c.copy_(product.to(c.dtype))
        if self.corrupt:
            c[0, 0] = float("nan")

    def synchronize(self, timeout_s):
        pass


@pytest.mark.parametrize("b_layout", ["nk", "kn"])
def test_stress_judges_a_launch(hang_cases, b_layout):
    torch = pytest.importorskip("torch")
    artifact = _with_b_layout(load_artifact(hang_cases / "unbounded"), b_layout)
    artifact = artifact.resized(m=70, n=24, k=48)
    cpu = torch.device("cpu")
    rel_err, nan_count = stress.launch_and_check(_FakeKernel(artifact, torch), torch, cpu, 1, 5)
    assert nan_count == 0 and rel_err < 1e-6
    _, nan_count = stress.launch_and_check(
        _FakeKernel(artifact, torch, corrupt=True), torch, cpu, 1, 5
    )
    assert nan_count == 1
