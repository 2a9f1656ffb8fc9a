"""`wsc run` for any kernel: the check an artifact declares (wsc.runtime.checks),
the matmul's (wsc.kernels.matmul.check), and evaluate/main dispatching to
them, on fake devices (numpy arrays stand in for device memory)."""

from __future__ import annotations

import contextlib
import functools
import json
import math
import re
from pathlib import Path

import numpy as np
import pytest

import wsc.kernels.matmul.check as matmul_check
import wsc.runtime.checks as checks
import wsc.runtime.run_cli as run_cli
from wsc.kernels.matmul.check import MatmulCheck, sample_indices, sampled_relative_error
from wsc.runtime import ArtifactError, load_artifact
from wsc.runtime.artifact import ARTIFACT_FORMAT
from wsc.runtime.checks import UnknownCheckError, find_check, register_check
from wsc.runtime.driver import HOST_DTYPES, CudaUnavailableError
from wsc.runtime.memory import NAN_BITS, Inputs, TorchMemory, random_operand, to_float64


def artifact_doc(b_layout="nk", out_dtype="f32", check="matmul", m=300, n=200, k=136):
    b_dims = ["n", "k"] if b_layout == "nk" else ["k", "n"]
    doc = {
        "format": ARTIFACT_FORMAT,
        "wsc_version": "0.1.0",
        "kernel_name": "matmul",
        "ptx": "kernel.ptx",
        "block": [128, 1, 1],
        "grid": ["cdiv(m, 64)", "cdiv(n, 32)"],
        "dynamic_smem_bytes": 0,
        "sizes": {"m": m, "n": n, "k": k},
        "tensors": {
            "a": {"role": "input", "dtype": "f16", "shape": ["m", "k"], "layout": "row_major"},
            "b": {"role": "input", "dtype": "f16", "shape": b_dims, "layout": "row_major"},
            "c": {"role": "output", "dtype": out_dtype, "shape": ["m", "n"], "layout": "row_major"},
        },
        "params": [
            {"kind": "pointer", "name": "a"},
            {"kind": "pointer", "name": "b"},
            {"kind": "pointer", "name": "c"},
        ],
        "config": {"block_m": 64},
    }
    if check is not None:
        doc["check"] = check
    return doc


def write(directory: Path, doc: dict) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "kernel.ptx").write_text("// ptx\n")
    (directory / "kernel.json").write_text(json.dumps(doc))
    return directory


def load(tmp_path, **fields):
    return load_artifact(write(tmp_path / "artifact", artifact_doc(**fields)))


# ---------------------------------------------------------------- finding the check


def test_an_artifact_without_a_check_has_none(tmp_path):
    assert find_check(load(tmp_path, check=None)) is None


@pytest.mark.parametrize("name", ["nope", "Not-A-Module"])
def test_an_unknown_check_is_named(tmp_path, name):
    with pytest.raises(UnknownCheckError, match=f"key 'check': no check named '{name}'"):
        find_check(load(tmp_path, check=name))


def test_the_matmul_check_is_found_in_its_package(tmp_path):
    assert isinstance(find_check(load(tmp_path)), MatmulCheck)


def test_a_registered_check_serves_its_artifacts(tmp_path, monkeypatch):
    monkeypatch.setattr(checks, "_registered", {})
    register_check("mine", lambda artifact: ("mine", artifact.kernel_name))
    assert find_check(load(tmp_path, check="mine")) == ("mine", "matmul")


# ---------------------------------------------------------------- the matmul check


@pytest.mark.parametrize("b_layout", ["nk", "kn"])
def test_the_matmul_is_read_from_the_tensors(tmp_path, b_layout):
    check = MatmulCheck(load(tmp_path, b_layout=b_layout))
    assert check.describe() == {
        "shape": [300, 200, 136],
        "dtype": "f16",
        "out_dtype": "f32",
        "b_layout": b_layout,
    }
    assert (check.tile_m, check.tile_n) == (64, 32)
    assert check.flops == 2.0 * 300 * 200 * 136
    assert check.input_scale == pytest.approx(136**-0.25)
    assert check.tolerance == 1e-3


def test_the_layout_comes_from_the_dims_not_the_extents(tmp_path):
    """N = K: the extents cannot tell "nk" from "kn"; the dims' names can."""
    assert MatmulCheck(load(tmp_path, b_layout="kn", n=128, k=128)).b_layout == "kn"


def test_f16_accumulators_allow_more_error(tmp_path):
    doc = artifact_doc(out_dtype="f16", k=8192)
    doc["accumulator"] = "f16"
    check = MatmulCheck(load_artifact(write(tmp_path / "f16acc", doc)))
    assert check.tolerance == pytest.approx(2.0**-11 * (8192 / 16) ** 0.5)


@pytest.mark.parametrize(
    "path, value, message",
    [
        (("tensors", "b", "shape"), ["m", "k"], r"b's dims are \['m', 'k'\]; expected"),
        (("tensors", "c", "shape"), ["n", "m"], r"c's rows are size 'n', a's are 'm'"),
        (("tensors", "b", "dtype"), "bf16", "a and b must share a dtype"),
        (("tensors", "a", "shape"), ["m"], r"tensors a, b, c have ranks 1, 2, 2; expected"),
    ],
)
def test_an_artifact_that_is_no_matmul_is_named(tmp_path, path, value, message):
    doc = artifact_doc()
    doc[path[0]][path[1]][path[2]] = value
    with pytest.raises(ArtifactError, match=f"check 'matmul': {message}"):
        MatmulCheck(load_artifact(write(tmp_path / "bad", doc)))


def test_a_matmul_without_c_is_named(tmp_path):
    doc = artifact_doc()
    doc["tensors"]["d"] = doc["tensors"].pop("c")
    doc["params"][2]["name"] = "d"
    with pytest.raises(ArtifactError, match="expected tensors a, b, c; 'tensors' has no 'c'"):
        MatmulCheck(load_artifact(write(tmp_path / "bad", doc)))


def test_sample_indices_cover_last_tile():
    rng = np.random.default_rng(0)
    rows = sample_indices(rng, 1000, 64, 128)
    assert np.all(np.diff(rows) > 0)
    assert set(range(896, 1000)) <= set(rows.tolist())
    assert len(rows) >= 104 and rows.max() < 1000
    assert sample_indices(rng, 10, 64, 128).tolist() == list(range(10))


@pytest.mark.parametrize("b_layout", ["nk", "kn"])
@pytest.mark.parametrize("full", [True, False])
def test_sampled_relative_error(tmp_path, monkeypatch, b_layout, full):
    if not full:
        monkeypatch.setattr(matmul_check, "FULL_REFERENCE_MAX_WORK", 1)
    problem = MatmulCheck(load(tmp_path, b_layout=b_layout, m=200, n=150, k=40))
    rng = np.random.default_rng(1)
    a = rng.standard_normal((200, 40)).astype(np.float16)
    b = rng.standard_normal((150, 40) if b_layout == "nk" else (40, 150)).astype(np.float16)
    b_kn = b.astype(np.float64).T if b_layout == "nk" else b.astype(np.float64)
    exact = a.astype(np.float64) @ b_kn
    hosts = {"a": a, "b": b}
    assert sampled_relative_error(problem, hosts, exact, np.random.default_rng(2)) < 1e-12
    wrong = exact.copy()
    wrong[-1, :] = 0.0  # a broken ragged last row must be caught, sampled or not
    assert sampled_relative_error(problem, hosts, wrong, np.random.default_rng(2)) > 1e-2


def epilogue_doc(**epilogue):
    doc = artifact_doc(m=200, n=150, k=40)
    doc["tensors"]["d"] = {"role": "input", "dtype": "f16", "shape": ["n"], "layout": "row_major"}
    doc["tensors"]["e"] = {
        "role": "input",
        "dtype": "f16",
        "shape": ["m", "n"],
        "layout": "row_major",
    }
    doc["params"] += [{"kind": "pointer", "name": "d"}, {"kind": "pointer", "name": "e"}]
    doc["config"]["epilogue"] = epilogue
    return doc


@pytest.mark.parametrize("activation", [None, "relu", "gelu", "gelu_tanh", "silu"])
@pytest.mark.parametrize("full", [True, False])
def test_an_epilogue_is_applied_to_the_reference(tmp_path, monkeypatch, activation, full):
    """C = act(A B^T + bias) + residual, each activation as torch.nn.functional
    computes it (written out here with math's functions, element by element)."""
    if not full:
        monkeypatch.setattr(matmul_check, "FULL_REFERENCE_MAX_WORK", 1)
    doc = epilogue_doc(bias="d", activation=activation, residual="e")
    problem = MatmulCheck(load_artifact(write(tmp_path / "artifact", doc)))
    rng = np.random.default_rng(1)
    hosts = {
        "a": rng.standard_normal((200, 40)).astype(np.float16),
        "b": rng.standard_normal((150, 40)).astype(np.float16),
        "d": rng.standard_normal(150).astype(np.float16),
        "e": rng.standard_normal((200, 150)).astype(np.float16),
    }
    x = hosts["a"].astype(np.float64) @ hosts["b"].astype(np.float64).T + hosts["d"]
    by_element = {
        None: lambda v: v,
        "relu": lambda v: max(v, 0.0),
        "gelu": lambda v: 0.5 * v * (1 + math.erf(v / math.sqrt(2))),
        "gelu_tanh": lambda v: (
            0.5 * v * (1 + math.tanh(0.7978845608028654 * (v + 0.044715 * v**3)))
        ),
        "silu": lambda v: v / (1 + math.exp(-v)),
    }[activation]
    exact = np.vectorize(by_element)(x) + hosts["e"]
    assert sampled_relative_error(problem, hosts, exact, np.random.default_rng(2)) < 1e-12
    without_residual = exact - hosts["e"]
    assert sampled_relative_error(problem, hosts, without_residual, np.random.default_rng(2)) > 1e-2


@pytest.mark.parametrize(
    "epilogue, message",
    [
        (dict(activation="tanh"), "activation must be one of relu, gelu, gelu_tanh, silu"),
        (dict(bias="e"), "tensor 'e' must have dims ['n']"),
        (dict(residual="x"), "tensor 'x' must have dims ['m', 'n']"),
        (dict(scale=2.0), "unknown keys scale"),
    ],
)
def test_a_wrong_epilogue_is_named(tmp_path, epilogue, message):
    artifact = load_artifact(write(tmp_path / "artifact", epilogue_doc(**epilogue)))
    with pytest.raises(ArtifactError, match=re.escape(message)):
        MatmulCheck(artifact)


# ---------------------------------------------------------------- wsc run on fake devices


class HostMemory:
    """Device memory played by numpy arrays, drawn like DriverMemory's."""

    kind = "host"

    def __init__(self):
        self.draws = 0

    def inputs(self, specs, scale, seed):
        self.draws += 1
        rng = np.random.default_rng(seed)
        hosts = {s.name: random_operand(rng, s.shape, s.dtype, scale) for s in specs}
        return Inputs({name: host.copy() for name, host in hosts.items()}, hosts)

    def empty(self, shape, dtype):
        return np.empty(shape, HOST_DTYPES[dtype])

    def poison(self, array, dtype):
        array[...] = np.nan

    def workspace(self, shape, dtype, zeroed):
        array = np.zeros(shape, HOST_DTYPES[dtype])
        if not zeroed:
            array[...] = np.nan if dtype in NAN_BITS else -1
        return array

    def nonzero_count(self, array, dtype):
        return int(np.count_nonzero(array.view(f"u{array.itemsize}")))

    def float64(self, array, dtype):
        return to_float64(array, dtype)

    def nan_count(self, array, dtype):
        return int(np.isnan(self.float64(array, dtype)).sum())

    def intact(self, inputs):
        return all(np.array_equal(h, inputs.arrays[n]) for n, h in inputs.hosts.items())


class FakeDevice:
    ordinal = 0

    def current(self):
        return contextlib.nullcontext()


class FakeKernel:
    """Launching computes C = A @ op(B) on the host, or with `rows` only C's
    first rows (a kernel that leaves elements unwritten)."""

    def __init__(self, artifact, device=0, rows=None):
        self.artifact = (
            artifact if not isinstance(artifact, (str, Path)) else load_artifact(artifact)
        )
        self.device = FakeDevice()
        self.rows = rows

    def prepare(self, **tensors):
        kernel, nk = self, self.artifact.tensors["b"].dims[0] == "n"

        class Launch:
            stream = None

            def launch(self):
                a = tensors["a"].astype(np.float64)
                b = tensors["b"].astype(np.float64)
                product = a @ (b.T if nk else b)
                rows = kernel.rows or product.shape[0]
                tensors["c"][:rows] = product[:rows]

        return Launch()

    def synchronize(self, stream=None, timeout_s=60.0):
        pass


def split_artifact_doc(splits=4, **fields):
    """A split-K matmul's artifact: f32 partial tiles in d, one zeroed i32
    arrival counter per C tile in e, the splits along the grid's z."""
    doc = artifact_doc(**fields)
    doc["grid"].append(str(splits))
    doc["tensors"]["d"] = {
        "role": "workspace",
        "dtype": "f32",
        "shape": [f"cdiv(m, 64) * cdiv(n, 32) * {splits}", "2048"],
        "layout": "row_major",
    }
    doc["tensors"]["e"] = {
        "role": "workspace",
        "dtype": "i32",
        "shape": ["cdiv(m, 64) * cdiv(n, 32)"],
        "layout": "row_major",
        "zeroed": True,
    }
    doc["params"] += [{"kind": "pointer", "name": "d"}, {"kind": "pointer", "name": "e"}]
    return doc


class FakeSplitKernel(FakeKernel):
    """C = A @ op(B) by splits of K that meet in the workspaces: each split
    writes its partial product into d and counts itself on e; the last one
    sums the partials, writes C and sets e back to zero, except on launches
    from `leaky_from` on. A counter that is not zero at launch loses C."""

    def __init__(self, artifact, device=0, leaky_from=None):
        super().__init__(artifact, device)
        self.leaky_from = leaky_from
        self.launches = 0

    def prepare(self, **tensors):
        kernel = self
        a, b, c, d, e = (tensors[name] for name in "abcde")
        splits = self.artifact.grid_tiles[-1]
        assert np.isnan(d).all(), "wsc run poisons a workspace that is not zeroed"

        class Launch:
            stream = None

            def launch(self):
                kernel.launches += 1
                k = a.shape[1]
                nk = kernel.artifact.tensors["b"].dims[0] == "n"
                b_kn = b.astype(np.float64).T if nk else b.astype(np.float64)
                started = e.copy()
                partials = []
                for split in range(splits):
                    lo, hi = split * k // splits, (split + 1) * k // splits
                    partials.append(a[:, lo:hi].astype(np.float64) @ b_kn[lo:hi])
                    d.reshape(-1)[split] = split  # a partial tile, as far as wsc run sees
                    e[...] += 1
                if not started.any():
                    c[...] = sum(partials)
                if kernel.leaky_from is None or kernel.launches < kernel.leaky_from:
                    e[...] = 0

        return Launch()


def test_a_split_kernel_runs_on_its_workspaces(tmp_path, memory):
    artifact = load_artifact(write(tmp_path / "split", split_artifact_doc()))
    drawn, draw = [], memory.inputs

    def inputs(specs, scale, seed):
        drawn.append([spec.name for spec in specs])
        return draw(specs, scale, seed)

    memory.inputs = inputs
    report = run_cli.evaluate(FakeSplitKernel(artifact))
    assert report["ok"] and report["nan_count"] == 0 and report["rel_err"] < 1e-6, report
    assert drawn == [["a", "b"]]  # workspaces are no inputs, nor outputs to count NaNs in
    assert "error" not in report


def test_a_kernel_that_leaves_a_zeroed_workspace_non_zero_fails(tmp_path, memory):
    artifact = load_artifact(write(tmp_path / "split", split_artifact_doc()))
    report = run_cli.evaluate(FakeSplitKernel(artifact, leaky_from=1))
    assert not report["ok"] and report["rel_err"] < 1e-6
    assert report["error"] == (
        "kernel left workspace 'e' non-zero: 35 of 35 elements after its first launch"
    )


def test_a_workspace_left_non_zero_by_the_timed_launches_fails(tmp_path, memory, monkeypatch):
    def bench(launch, kernel, iters, timeout_s):
        for _ in range(iters):
            launch.launch()
        return 1.0

    monkeypatch.setattr(run_cli, "_bench", bench)
    artifact = load_artifact(write(tmp_path / "split", split_artifact_doc()))
    report = run_cli.evaluate(FakeSplitKernel(artifact), bench=True, iters=3)
    assert report["ok"] and report["ms"] == 1.0, report
    report = run_cli.evaluate(FakeSplitKernel(artifact, leaky_from=3), bench=True, iters=3)
    assert not report["ok"] and report["ms"] == 1.0
    assert report["error"].endswith("non-zero: 35 of 35 elements after the timed launches")


def test_torch_memory_zeroes_poisons_and_reads_workspaces_as_bits():
    torch = pytest.importorskip("torch")
    memory = TorchMemory(torch, 0)
    memory.device = torch.device("cpu")  # the same calls as on a GPU
    zeroed = memory.workspace((3, 4), "i32", zeroed=True)
    assert zeroed.dtype == torch.int32 and memory.nonzero_count(zeroed, "i32") == 0
    poisoned = memory.workspace((5,), "i32", zeroed=False)
    assert poisoned.tolist() == [-1] * 5 and memory.nonzero_count(poisoned, "i32") == 5
    partials = memory.workspace((6,), "f32", zeroed=False)
    assert torch.isnan(partials).all()
    partials.zero_()
    partials[2] = -0.0  # zero by value, not by bits: the next launch would see it
    assert memory.nonzero_count(partials, "f32") == 1


@pytest.fixture
def memory(monkeypatch):
    memory = HostMemory()
    monkeypatch.setattr(run_cli, "make_memory", lambda backend, device: memory)
    return memory


@pytest.mark.parametrize("b_layout", ["nk", "kn"])
def test_evaluate_checks_with_the_declared_check(tmp_path, memory, b_layout):
    report = run_cli.evaluate(FakeKernel(load(tmp_path, b_layout=b_layout)))
    assert report["ok"] and report["nan_count"] == 0 and report["rel_err"] < 1e-6, report
    assert report["shape"] == [300, 200, 136] and report["b_layout"] == b_layout
    assert report["tol"] == 1e-3 and report["config"] == {"block_m": 64}


def test_evaluate_counts_unwritten_elements(tmp_path, memory):
    report = run_cli.evaluate(FakeKernel(load(tmp_path), rows=100))
    assert not report["ok"] and report["nan_count"] == 200 * 200
    assert report["rel_err"] is None  # NaN is no error to report


def test_artifacts_of_one_problem_share_their_inputs(tmp_path, memory):
    inputs: dict = {}
    artifact = load(tmp_path)
    for _ in range(2):
        assert run_cli.evaluate(FakeKernel(artifact), inputs=inputs)["ok"]
    assert memory.draws == 1
    run_cli.evaluate(FakeKernel(artifact.resized(m=64, n=64, k=64)), inputs=inputs)
    assert memory.draws == 2


def back_to_back_doc(m=150, n=130, k=40, e=24) -> dict:
    """An artifact of examples/back_to_back.py's kernel: Q, K, V and O."""

    def tensor(role, dtype, shape):
        return {"role": role, "dtype": dtype, "shape": shape, "layout": "row_major"}

    doc = artifact_doc(check="back_to_back")
    doc["sizes"] = {"m": m, "n": n, "k": k, "d_dim1": e}
    doc["grid"] = ["cdiv(m, 64)"]
    doc["tensors"] = {
        "a": tensor("input", "f16", ["m", "k"]),
        "b": tensor("input", "f16", ["n", "k"]),
        "c": tensor("input", "f16", ["n", "d_dim1"]),
        "d": tensor("output", "f32", ["m", "d_dim1"]),
    }
    doc["params"] = [{"kind": "pointer", "name": name} for name in "abcd"]
    return doc


class FakeQKV(FakeKernel):
    """A kernel of Q, K and V (tensors a, b, c) that writes O (d) as
    `compute(q, k, v)` does on the host, in f32."""

    def __init__(self, artifact, compute):
        super().__init__(artifact)
        self.compute = compute

    def prepare(self, **tensors):
        compute = self.compute

        class Launch:
            stream = None

            def launch(self):
                q, k, v = (tensors[name].astype(np.float32) for name in "abc")
                tensors["d"][:] = compute(q, k, v)

        return Launch()


def back_to_back_on_host(q, k, v, wrong=False):
    """O = round(Q K^T) V, as the kernel rounds the first product to f16 in
    registers; `wrong` reverses V's rows (a wrong pairing of P's columns with
    V's rows)."""
    p = (q @ k.T).astype(np.float16).astype(np.float32)
    return p @ (v[::-1] if wrong else v)


def test_the_back_to_back_check_rounds_the_first_product(tmp_path, memory):
    artifact = load_artifact(write(tmp_path / "b2b", back_to_back_doc()))
    report = run_cli.evaluate(FakeQKV(artifact, back_to_back_on_host))
    assert report["ok"] and report["nan_count"] == 0 and report["rel_err"] < 1e-5, report
    assert report["shape"] == [150, 130, 40, 24]
    wrong = functools.partial(back_to_back_on_host, wrong=True)
    report = run_cli.evaluate(FakeQKV(artifact, wrong))
    assert not report["ok"] and report["rel_err"] > 0.5, report


def attention_on_host(q, k, v, wrong=False):
    """O = softmax(Q K^T / sqrt(D)) V in f32, the numerators rounded to f16 as
    the kernel rounds them, and O to f16; `wrong` leaves them unnormalized
    (no division by the row sums)."""
    scores = q @ k.T / np.float32(math.sqrt(q.shape[1]))
    p = np.exp(scores - scores.max(axis=1, keepdims=True))
    sums = np.ones_like(p[:, :1]) if wrong else p.sum(axis=1, keepdims=True)
    return (p.astype(np.float16).astype(np.float32) @ v / sums).astype(np.float16)


def test_the_attention_check_is_the_softmax(tmp_path, memory):
    doc = back_to_back_doc()
    doc["check"] = "attention"
    doc["tensors"]["d"]["dtype"] = "f16"
    artifact = load_artifact(write(tmp_path / "attention", doc))
    report = run_cli.evaluate(FakeQKV(artifact, attention_on_host))
    assert report["ok"] and report["nan_count"] == 0 and report["rel_err"] < 2e-3, report
    wrong = functools.partial(attention_on_host, wrong=True)
    report = run_cli.evaluate(FakeQKV(artifact, wrong))
    assert not report["ok"] and report["rel_err"] > 0.5, report


def test_a_back_to_back_artifact_of_other_shapes_is_named(tmp_path):
    doc = back_to_back_doc()
    doc["tensors"]["c"]["shape"] = ["d_dim1", "n"]
    with pytest.raises(ArtifactError, match=r"are not Q \[m, k\], K \[n, k\], V \[n, e\]"):
        find_check(load_artifact(write(tmp_path / "b2b", doc)))


def test_without_a_check_a_kernel_runs_unchecked(tmp_path, memory):
    artifact = load(tmp_path, check=None)
    report = run_cli.evaluate(FakeKernel(artifact), check=False)
    assert report["ok"] and report["tol"] is None and report["rel_err"] is None
    assert report["kernel"] == "matmul" and report["sizes"] == {"m": 300, "n": 200, "k": 136}
    with pytest.raises(ArtifactError, match="declares no 'check': there is no reference"):
        run_cli.evaluate(FakeKernel(artifact), check=True)


def test_wsc_run_reports_each_artifact(tmp_path, memory, monkeypatch, capsys):
    monkeypatch.setattr(run_cli, "Kernel", FakeKernel)
    good = write(tmp_path / "good", artifact_doc())
    unknown = write(tmp_path / "unknown", artifact_doc(check="nope"))
    unchecked = write(tmp_path / "unchecked", artifact_doc(check=None))
    code = run_cli.main([str(good), str(unknown), str(unchecked), "--check", "--size", "m=64"])
    reports = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert code == 1
    assert reports[0]["ok"] and reports[0]["shape"] == [64, 200, 136]
    assert "UnknownCheckError" in reports[1]["error"] and "'nope'" in reports[1]["error"]
    assert "declares no 'check'" in reports[2]["error"]


def test_wsc_run_without_a_gpu_says_so_once_and_reports_each_artifact(
    tmp_path, monkeypatch, capsys
):
    def no_gpu(artifact, device=0):
        raise CudaUnavailableError("CUDA driver library not available: not found")

    monkeypatch.setattr(run_cli, "Kernel", no_gpu)
    dirs = [str(write(tmp_path / name, artifact_doc())) for name in ("one", "two")]
    code = run_cli.main([*dirs, "--check"])
    out, err = capsys.readouterr()
    reports = [json.loads(line) for line in out.splitlines()]
    assert code == 1 and len(reports) == 2
    assert all(not r["ok"] and "CudaUnavailableError" in r["error"] for r in reports)
    said = [line for line in err.splitlines() if "error:" in line]
    assert said == [
        "wsc run: error: no usable CUDA GPU on this machine (CUDA driver library not "
        "available: not found); artifacts compiled here run where a Hopper GPU is"
    ]


# ------------------------------------------------------------- a reference beside the kernel


def reference_doc(source: str, function: str = "reference", **config) -> dict:
    """The matmul artifact, checked by the author's `function` in `source`."""
    doc = artifact_doc(check="reference")
    doc["config"] = {**doc["config"], "reference": {"function": function, "source": source}}
    doc["config"].update(config)
    return doc


PRODUCT = "def reference(a, b):\n    return a @ b.T\n"


def test_a_reference_beside_the_kernel_checks_it(tmp_path, memory):
    artifact = load_artifact(write(tmp_path / "right", reference_doc(PRODUCT)))
    report = run_cli.evaluate(FakeKernel(artifact))
    assert report["ok"] and report["rel_err"] < 1e-6, report
    assert report["kernel"] == "matmul" and report["sizes"] == {"m": 300, "n": 200, "k": 136}
    assert report["tol"] == 1e-4  # an f32 output's default
    twice = "import numpy\n\ndef twice(a, b):\n    return {'c': 2 * numpy.matmul(a, b.T)}\n"
    artifact = load_artifact(write(tmp_path / "wrong", reference_doc(twice, "twice")))
    report = run_cli.evaluate(FakeKernel(artifact))
    assert not report["ok"] and math.isclose(report["rel_err"], 0.5, rel_tol=1e-6)


def test_a_reference_takes_constants_of_the_build(tmp_path, memory):
    scaled = "def scaled(a, b, factor):\n    return factor * (a @ b.T)\n"
    for factor, ok in ((1.0, True), (3.0, False)):
        doc = reference_doc(scaled, "scaled", reference_arguments={"factor": factor})
        artifact = load_artifact(write(tmp_path / str(factor), doc))
        report = run_cli.evaluate(FakeKernel(artifact))
        assert report["ok"] is ok, report
    doc = reference_doc(scaled, "scaled", reference_arguments=[3.0])
    with pytest.raises(ArtifactError, match="reference_arguments must map argument names"):
        find_check(load_artifact(write(tmp_path / "list", doc)))
    doc = reference_doc(scaled, "scaled", reference_arguments={"a": 1.0, "factor": 2.0})
    with pytest.raises(ArtifactError, match="reference_arguments names a, which the kernel's"):
        find_check(load_artifact(write(tmp_path / "clash", doc)))


def test_a_reference_sets_its_tolerance_and_input_scale(tmp_path):
    doc = reference_doc(PRODUCT, tolerance=0.25, input_scale=0.5)
    reference = find_check(load_artifact(write(tmp_path / "a", doc)))
    assert (reference.tolerance, reference.input_scale) == (0.25, 0.5)


@pytest.mark.parametrize(
    "source, function, config, message",
    [
        ("def reference(a, b):\n    return a\n", "other", {}, "defines no function 'other'"),
        ("def reference(a, b:\n", "reference", {}, "does not run: SyntaxError"),
        (PRODUCT, "reference", {"tolerance": -1}, "tolerance must be a positive number"),
    ],
)
def test_a_broken_reference_is_named(tmp_path, source, function, config, message):
    doc = reference_doc(source, function, **config)
    with pytest.raises(ArtifactError, match=message):
        _ = find_check(load_artifact(write(tmp_path / "a", doc))).function


def test_a_reference_s_source_runs_only_when_the_artifact_is_checked(tmp_path, memory):
    marker = tmp_path / "ran"
    source = f"open({str(marker)!r}, 'w').close()\n{PRODUCT}"
    artifact = load_artifact(write(tmp_path / "a", reference_doc(source)))
    reference = find_check(artifact)  # what a launch or a benchmark without --check reads
    assert reference.input_scale == 1.0 and not marker.exists()
    assert run_cli.evaluate(FakeKernel(artifact))["ok"]
    assert marker.exists()


def test_a_reference_must_return_every_output(tmp_path, memory):
    source = "def reference(a, b):\n    return {'d': a}\n"
    artifact = load_artifact(write(tmp_path / "a", reference_doc(source)))
    with pytest.raises(ArtifactError, match="the reference returned no c"):
        run_cli.evaluate(FakeKernel(artifact))
