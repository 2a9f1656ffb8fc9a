"""Tests of wsc.runtime: artifact loading, argument checks, TMA rules, param packing, CLI.

Most tests need no GPU. Tests marked `cuda` need a CUDA device (and nvcc, to
build a small TMA matmul test kernel) and are skipped cleanly without them.
"""

from __future__ import annotations

import ctypes
import json
import math
import os
import shutil
import struct
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from wsc.kernels.matmul.check import MatmulCheck
from wsc.runtime import (
    ArgumentError,
    ArgumentTypeError,
    ArtifactError,
    TensorMapError,
    load_artifact,
)
from wsc.runtime.artifact import (
    ARTIFACT_FORMAT,
    ParamSpec,
    TensorMapSpec,
    TensorSpec,
    Workspace,
    size_value,
    tile_grid,
)
from wsc.runtime.driver import PackedParams
from wsc.runtime.memory import float32_to_bf16_bits, to_float64
from wsc.runtime.run_cli import MAX_GRAPH_LAUNCHES, MAX_INPUT_SETS, main
from wsc.runtime.tensor_map import plan_tensor_map
from wsc.runtime.tensors import TensorInfo, check, describe

PYTHON_DIR = Path(__file__).resolve().parents[2] / "python"


def matmul_doc(
    m=256,
    n=128,
    k=64,
    b_layout="nk",
    dtype="f16",
    out_dtype="f32",
    box_m=128,
    box_n=128,
    box_k=64,
    swizzle="128B",
    grid=None,
    block=(128, 1, 1),
    smem=0,
    kernel_name="matmul_kernel",
    params=None,
):
    b_dims = ["n", "k"] if b_layout == "nk" else ["k", "n"]
    b_box = [box_n, box_k] if b_layout == "nk" else [box_k, box_n]
    return {
        "format": ARTIFACT_FORMAT,
        "wsc_version": "0.1.0",
        "kernel_name": kernel_name,
        "ptx": "kernel.ptx",
        "block": list(block),
        # The test kernel takes C's tile columns along x.
        "grid": grid or [f"cdiv(n, {box_n})", f"cdiv(m, {box_m})"],
        "dynamic_smem_bytes": smem,
        "sizes": {"m": m, "n": n, "k": k},
        "check": "matmul",
        "config": {"num_stages": 1, "block_m": box_m, "block_n": box_n, "block_k": box_k},
        "tensors": {
            "a": {"shape": ["m", "k"], "dtype": dtype, "role": "input", "layout": "row_major"},
            "b": {"shape": b_dims, "dtype": dtype, "role": "input", "layout": "row_major"},
            "c": {"shape": ["m", "n"], "dtype": out_dtype, "role": "output", "layout": "row_major"},
        },
        "tensor_maps": {
            "a": {"tensor": "a", "box": [box_m, box_k], "swizzle": swizzle},
            "b": {"tensor": "b", "box": b_box, "swizzle": swizzle},
        },
        "params": params
        or [
            {"kind": "tensor_map", "name": "a"},
            {"kind": "tensor_map", "name": "b"},
            {"kind": "pointer", "name": "c"},
            {"kind": "i32", "name": "m", "size": "m"},
            {"kind": "i32", "name": "n", "size": "n"},
            {"kind": "i32", "name": "k", "size": "k"},
            {"kind": "i32", "name": "ldc", "row_stride": "c"},
        ],
    }


def write_artifact(
    directory: Path, doc: dict, ptx: str | None = "// ptx\n", cubin: bytes | None = None
) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    if ptx is not None:
        (directory / "kernel.ptx").write_text(ptx)
    if cubin is not None:
        (directory / "kernel.cubin").write_bytes(cubin)
        doc = {**doc, "cubin": "kernel.cubin"}
    (directory / "kernel.json").write_text(json.dumps(doc))
    return directory


class FakeCudaArray:
    """Only a __cuda_array_interface__; no memory behind it (checks never touch it)."""

    def __init__(self, shape, typestr="<f2", ptr=0x7F0000000000, strides=None, readonly=False):
        self.__cuda_array_interface__ = {
            "shape": tuple(shape),
            "typestr": typestr,
            "data": (ptr, readonly),
            "strides": strides,
            "version": 3,
        }


class FakeTorchDevice:
    def __init__(self, type_, index):
        self.type, self.index = type_, index


class FakeTorchTensor:
    """Duck-types the few torch.Tensor members the runtime reads."""

    __module__ = "torch"

    def __init__(
        self, shape, dtype="torch.float16", device=("cuda", 0), ptr=0x7F0000000000, strides=None
    ):
        self.shape = tuple(shape)
        self.dtype = dtype
        self.device = FakeTorchDevice(*device)
        self._ptr = ptr
        self._strides = strides or tuple(int(np.prod(shape[i + 1 :])) for i in range(len(shape)))

    def data_ptr(self):
        return self._ptr

    def stride(self):
        return self._strides


# ---------------------------------------------------------------- artifact


def test_load_valid_artifact(tmp_path):
    artifact = load_artifact(write_artifact(tmp_path, matmul_doc()))
    assert artifact.kernel_name == "matmul_kernel"
    assert artifact.block == (128, 1, 1)
    assert artifact.grid == (1, 2, 1)
    assert artifact.sizes == {"m": 256, "n": 128, "k": 64}
    assert artifact.tensors["b"] == TensorSpec("b", ("n", "k"), (128, 64), "f16", "input")
    assert artifact.tensor_maps["a"] == TensorMapSpec("a", "a", (128, 64), "128B", "auto")
    assert [(p.kind, p.name) for p in artifact.params][:3] == [
        ("tensor_map", "a"),
        ("tensor_map", "b"),
        ("pointer", "c"),
    ]
    assert artifact.params[3] == ParamSpec("i32", "m", size="m")
    assert artifact.params[6] == ParamSpec("i32", "ldc", row_stride="c")
    assert artifact.check == "matmul"
    ((kind, image),) = artifact.images()
    assert kind == "ptx" and image == b"// ptx\n\0"


def test_a_persistent_kernel_runs_at_most_one_block_per_sm(tmp_path):
    plain = load_artifact(write_artifact(tmp_path / "plain", matmul_doc()))
    assert not plain.persistent and plain.launch_grid(1) == (1, 2, 1)
    doc = dict(matmul_doc(m=64000, box_m=128), grid=["cdiv(m, 128)"], persistent=True)
    persistent = load_artifact(write_artifact(tmp_path / "persistent", doc))
    assert persistent.grid == (500, 1, 1)
    assert persistent.launch_grid(132) == (132, 1, 1)
    assert persistent.launch_grid(1000) == (500, 1, 1)


def test_tile_grid_counts_tiles():
    tiles = (("m", 128), ("n", 256))
    assert tile_grid({"m": 1000, "n": 1333}, tiles) == (8, 6, 1)
    assert tile_grid({"m": 1000, "n": 1333}, tiles, persistent=True) == (48, 1, 1)
    # Clusters of two blocks take tile rows in pairs: 9 rows make 5 pairs.
    assert tile_grid({"m": 1100, "n": 1333}, tiles, cluster=2) == (10, 6, 1)
    assert tile_grid({"m": 1100, "n": 1333}, tiles, cluster=2, persistent=True) == (60, 1, 1)


def test_an_artifact_resizes_to_other_sizes(tmp_path):
    artifact = load_artifact(write_artifact(tmp_path, matmul_doc(m=256, n=128, k=64)))
    other = artifact.resized(m=1000, n=1333, k=520)
    assert other.tensors["a"].shape == (1000, 520) and other.tensors["b"].shape == (1333, 520)
    assert other.tensors["c"].shape == (1000, 1333) and other.grid == (11, 8, 1)
    assert other.sizes == {"m": 1000, "n": 1333, "k": 520}
    with pytest.raises(ArtifactError, match="reads sizes k, m, n; got m"):
        artifact.resized(m=5)
    with pytest.raises(ArtifactError, match="size k must be a positive int, got 0"):
        artifact.resized(m=5, n=5, k=0)


def scaled_doc(m=256, n=128, k=640):
    """matmul_doc with a scale per row of A and 128 of K: d [M, cdiv(K, 128)],
    its length a derived size."""
    doc = matmul_doc(m=m, n=n, k=k)
    doc["sizes"]["d_dim1"] = -(-k // 128)
    doc["derived_sizes"] = {"d_dim1": "cdiv(k, 128)"}
    doc["tensors"]["d"] = {
        "shape": ["m", "d_dim1"],
        "dtype": "f32",
        "role": "input",
        "layout": "row_major",
    }
    doc["params"].append({"kind": "pointer", "name": "d"})
    return doc


def test_derived_sizes_follow_the_others(tmp_path):
    """A size that follows from the others (a block scale's length) is
    recomputed when the artifact is resized, and refused where given wrong."""
    artifact = load_artifact(write_artifact(tmp_path, scaled_doc()))
    assert artifact.derived_sizes == {"d_dim1": "cdiv(k, 128)"}
    other = artifact.resized(m=1000, n=1333, k=1136)
    assert other.sizes["d_dim1"] == 9 and other.tensors["d"].shape == (1000, 9)
    assert artifact.resized(m=1000, n=1333, k=1136, d_dim1=9).sizes == other.sizes
    with pytest.raises(
        ArtifactError, match=r"size d_dim1 follows from the others, cdiv\(k, 128\) = 9; got 5"
    ):
        artifact.resized(m=1000, n=1333, k=1136, d_dim1=5)
    with pytest.raises(ArtifactError, match="reads sizes d_dim1, k, m, n; got m, n"):
        artifact.resized(m=1000, n=1333)


def test_wsc_run_resizes_derived_sizes(tmp_path, capsys):
    """`wsc run --size k=...` recomputes the sizes derived from K; the report
    (without a GPU, its error) carries the new shape."""
    directory = write_artifact(tmp_path, scaled_doc())
    main([str(directory), "--size", "k=1136", "--size", "m=1000"])
    report = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert report["shape"] == [1000, 128, 1136]
    assert "SizesError" not in report.get("error", ""), report


def test_wsc_run_refuses_sizes_whose_rows_tma_cannot_copy_before_it_needs_a_gpu(tmp_path, capsys):
    directory = write_artifact(tmp_path, scaled_doc())
    assert main([str(directory), "--size", "k=1001"]) == 1
    report = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert (
        report["error"].startswith("SizesError: kernel ") and "is copied by TMA" in report["error"]
    )
    assert "its rows are 2002 bytes (k = 1001 x 2 B)" in report["error"]


def test_wsc_run_reads_each_artifact_once(tmp_path, capsys, monkeypatch):
    """Checking the --size names and running share one load of each artifact."""
    from wsc.runtime import run_cli

    directory = write_artifact(tmp_path, scaled_doc())
    loads = []
    real = run_cli.load_artifact
    monkeypatch.setattr(run_cli, "load_artifact", lambda d: loads.append(d) or real(d))
    main([str(directory), "--size", "m=1000"])
    capsys.readouterr()
    assert loads == [str(directory)]


def test_wsc_run_refuses_a_size_or_scalar_no_artifact_reads(tmp_path, capsys):
    directory = write_artifact(tmp_path, scaled_doc())
    for flag, value, read in (
        ("--size", "q=4", "d_dim1, k, m, n"),
        ("--scalar", "q=0.5", "none"),
    ):
        with pytest.raises(SystemExit) as exit_:
            main([str(directory), flag, value, "--size", "m=1000"])
        assert exit_.value.code == 2
        error = capsys.readouterr().err
        expected = (
            f"{flag} q: no artifact given reads a {flag[2:]} of that name (they read: {read})"
        )
        assert expected in error, error


@pytest.mark.parametrize(
    "path, value, message",
    [
        (
            ("derived_sizes", "d_dim1"),
            "cdiv(k, 64)",
            r"'derived_sizes.d_dim1': cdiv\(k, 64\) = 10 at",
        ),
        (("derived_sizes", "q"), "cdiv(k, 128)", r"'derived_sizes.q': derives no size in 'sizes'"),
        (("derived_sizes", "d_dim1"), 5, r"'derived_sizes.d_dim1': expected a size expression"),
        (("derived_sizes", "d_dim1"), "cdiv(d_dim1, 1)", r"reads size 'd_dim1'.*derived itself"),
    ],
)
def test_bad_derived_sizes_are_named(tmp_path, path, value, message):
    with pytest.raises(ArtifactError, match=message):
        load_artifact(write_artifact(tmp_path, _mutated(scaled_doc(), path, value)))


@pytest.mark.parametrize(
    "path, value, message",
    [
        (("sizes", "m"), 0, r"'sizes.m': expected a positive integer, got 0"),
        (("tensors", "a", "shape"), ["m", "q"], r"'tensors.a.shape': expected a non-empty list"),
        (("tensors", "a", "shape"), [256, 64], r"'tensors.a.shape': expected a non-empty list"),
        (("tensors", "a", "layout"), "col_major", r"'tensors.a.layout': expected one of row_major"),
        (("grid",), [], r"'grid': expected 1 to 3 axes"),
        (("grid", 0), "cdiv(m, 0)", r"'grid\[0\]': expected 'cdiv\(<size>, <positive tile>\)'"),
        (("grid", 0), "m / 128", r"'grid\[0\]': expected 'cdiv"),
        (("grid", 1), "cdiv(q, 64)", r"'grid\[1\]': counts tiles of 'q', not in 'sizes'"),
        (("params", 3, "size"), "q", r"'params\[3\].size': names no entry of 'sizes'"),
        (("params", 6, "row_stride"), "z", r"'params\[6\].row_stride': names no tensor"),
        (("params", 6, "size"), "m", r"'params\[6\]': an i32 parameter gives one of"),
        (("params", 3, "size"), KeyError, r"'params\[3\]': an i32 parameter gives one of"),
        (("sizes", "m"), 2**31, "key 'sizes.m': value 2147483648 does not fit in i32"),
        (("check",), 3, "key 'check': expected a string"),
        (("accumulator",), "f64", "key 'accumulator': expected one of"),
    ],
)
def test_bad_descriptions_are_named(tmp_path, path, value, message):
    with pytest.raises(ArtifactError, match=message):
        load_artifact(write_artifact(tmp_path, _mutated(matmul_doc(), path, value)))


@pytest.mark.parametrize("version", [KeyError, 2, ARTIFACT_FORMAT + 1])
def test_an_artifact_of_another_format_is_refused(tmp_path, version):
    doc = _mutated(matmul_doc(), ("format",), version)
    with pytest.raises(
        ArtifactError, match=f"reads artifact format {ARTIFACT_FORMAT}, got .*; recompile"
    ):
        load_artifact(write_artifact(tmp_path, doc))


def test_cubin_is_preferred_over_ptx(tmp_path):
    artifact = load_artifact(write_artifact(tmp_path, matmul_doc(), cubin=b"\x7fELF"))
    assert [kind for kind, _ in artifact.images()] == ["cubin", "ptx"]


def test_explicit_l2_promotion(tmp_path):
    doc = matmul_doc()
    doc["tensor_maps"]["a"]["l2_promotion"] = "128B"
    assert load_artifact(write_artifact(tmp_path, doc)).tensor_maps["a"].l2_promotion == "128B"


def split_doc(m=256, n=128, k=512, splits=4):
    """A split-K matmul: `splits` blocks per C tile along z, f32 partial
    tiles in d, one i32 arrival counter per C tile in e."""
    doc = matmul_doc(m=m, n=n, k=k, grid=["cdiv(n, 128)", "cdiv(m, 128)", str(splits)])
    doc["tensors"]["d"] = {
        "role": "workspace",
        "dtype": "f32",
        "shape": [f"cdiv(m, 128) * cdiv(n, 128) * {splits} * 16384"],
        "layout": "row_major",
    }
    doc["tensors"]["e"] = {
        "role": "workspace",
        "dtype": "i32",
        "shape": ["cdiv(m, 128)", "cdiv(n, 128)"],
        "layout": "row_major",
        "zeroed": True,
    }
    doc["params"][3:3] = [{"kind": "pointer", "name": "d"}, {"kind": "pointer", "name": "e"}]
    return doc


def test_a_split_kernel_describes_its_workspaces(tmp_path):
    artifact = load_artifact(write_artifact(tmp_path, split_doc(m=256, n=128)))
    d, e = artifact.tensors["d"], artifact.tensors["e"]
    assert d == TensorSpec(
        "d", ("cdiv(m, 128) * cdiv(n, 128) * 4 * 16384",), (2 * 1 * 4 * 16384,), "f32", "workspace"
    )
    assert e.role == "workspace" and e.zeroed and e.shape == (2, 1) and e.dtype == "i32"
    assert not d.zeroed and not artifact.tensors["c"].zeroed
    assert artifact.grid_tiles == (("n", 128), ("m", 128), 4)
    assert artifact.grid == (1, 2, 4) and artifact.launch_grid(132) == (1, 2, 4)
    assert artifact.params[3] == ParamSpec("pointer", "d") and not artifact.strided_rows("e")
    other = artifact.resized(m=1000, n=1333, k=520)
    assert other.tensors["d"].shape == (8 * 11 * 4 * 16384,)
    assert other.tensors["e"].shape == (8, 11) and other.tensors["e"].zeroed
    assert other.grid == (11, 8, 4)
    # The check's tiles come from the axes that count tiles, not the fixed one.
    assert (MatmulCheck(other).tile_m, MatmulCheck(other).tile_n) == (128, 128)


@pytest.mark.parametrize(
    "expression, value",
    [
        ("m", 1000),
        ("7", 7),
        ("cdiv(m, 128)", 8),
        ("cdiv( n , 64 )", 21),
        ("cdiv(m, 128) * cdiv(n, 256) * 4 * 32768", 8 * 6 * 4 * 32768),
        ("m*n", 1000 * 1333),
        ("2 * k * cdiv(k, 1000)", 2 * 520),
    ],
)
def test_size_expressions_evaluate(expression, value):
    assert size_value(expression, {"m": 1000, "n": 1333, "k": 520}) == value


@pytest.mark.parametrize(
    "path, value, message",
    [
        (
            ("tensors", "d", "shape"),
            ["cdiv(m, 0)"],
            r"'tensors.d.shape': factor 'cdiv\(m, 0\)' of 'cdiv\(m, 0\)' is no",
        ),
        (
            ("tensors", "d", "shape"),
            ["m ** 2"],
            r"'tensors.d.shape': factor '' of 'm \*\* 2' is no size",
        ),
        (("tensors", "d", "shape"), ["m + 1"], r"'tensors.d.shape': factor 'm \+ 1'"),
        (("tensors", "d", "shape"), ["0 * m"], r"'tensors.d.shape': factor '0'"),
        (("tensors", "d", "shape"), ["-4 * m"], r"'tensors.d.shape': factor '-4'"),
        (
            ("tensors", "d", "shape"),
            ["cdiv(q, 64) * 4"],
            r"'tensors.d.shape': '.*' reads size 'q', not in 'sizes'",
        ),
        (
            ("tensors", "d", "shape"),
            ["m * q"],
            r"'tensors.d.shape': '.*' reads size 'q', not in 'sizes'",
        ),
        (
            ("tensors", "d", "shape"),
            [],
            r"'tensors.d.shape': expected a non-empty list of size expressions",
        ),
        (
            ("tensors", "d", "shape"),
            [4096],
            r"'tensors.d.shape': expected a non-empty list of size expressions",
        ),
        (
            ("tensors", "c", "shape"),
            ["m", "cdiv(n, 2)"],
            r"'tensors.c.shape': expected a non-empty",
        ),
        (("tensors", "c", "zeroed"), True, r"'tensors.c.zeroed': only a workspace is zeroed"),
        (("tensors", "e", "zeroed"), 1, r"'tensors.e.zeroed': expected a bool"),
        (("tensors", "e", "role"), "scratch", r"'tensors.e.role': expected one of"),
        (("grid", 2), "0", r"'grid\[2\]': expected 'cdiv\(<size>, <positive tile>\)' or a pos"),
        (("grid", 2), "-4", r"'grid\[2\]': expected"),
        (("grid", 2), 4, r"'grid\[2\]': expected"),
        (("grid", 2), "k / 128", r"'grid\[2\]': expected"),
    ],
)
def test_bad_workspaces_and_fixed_axes_are_named(tmp_path, path, value, message):
    doc = _mutated(split_doc(), path, value)
    with pytest.raises(ArtifactError, match=f"kernel.json: key {message}") as error:
        load_artifact(write_artifact(tmp_path, doc))
    assert str(tmp_path / "kernel.json") in str(error.value)


def test_a_grid_beyond_a_launch_s_limits_is_refused_before_it_launches(tmp_path):
    artifact = load_artifact(write_artifact(tmp_path, matmul_doc(m=256, n=128, k=64)))
    # The test kernel takes C's tile rows along y: 65536 of them, one more than y may have.
    assert artifact.resized(m=65535 * 128, n=128, k=64).launch_grid(132) == (1, 65535, 1)
    with pytest.raises(ArtifactError, match=r"make a grid of \[1, 65536, 1\] blocks, beyond"):
        artifact.resized(m=65536 * 128, n=128, k=64).launch_grid(132)


def test_tile_grid_with_a_fixed_axis():
    tiles = (("m", 128), ("n", 256), 4)
    assert tile_grid({"m": 1000, "n": 1333}, tiles) == (8, 6, 4)
    # A persistent kernel counts every (tile, split) as a work item.
    assert tile_grid({"m": 1000, "n": 1333}, tiles, persistent=True) == (192, 1, 1)
    assert tile_grid({"m": 1000, "n": 1333}, (3, ("m", 128))) == (3, 8, 1)
    assert tile_grid({"m": 1000}, (3, ("m", 128)), cluster=2) == (4, 8, 1)


def test_a_persistent_split_kernel_launches_at_most_one_block_per_sm(tmp_path):
    doc = dict(split_doc(m=4096, n=4096), grid=["cdiv(m, 128)", "cdiv(n, 128)", "4"])
    artifact = load_artifact(write_artifact(tmp_path, {**doc, "persistent": True}))
    assert artifact.grid == (32 * 32 * 4, 1, 1)
    assert artifact.launch_grid(132) == (132, 1, 1)
    assert artifact.resized(m=128, n=128, k=64).launch_grid(132) == (4, 1, 1)


def test_a_workspace_shape_is_a_tuple():
    assert Workspace(("cdiv(m, 64) * 4",), zeroed=True).shape == ("cdiv(m, 64) * 4",)
    with pytest.raises(TypeError, match="a tuple of size expressions"):
        Workspace("cdiv(m, 64) * 4")


def _mutated(doc, path, value=KeyError):
    """Copy of `doc` with the key at `path` set to `value`, or removed."""
    doc = json.loads(json.dumps(doc))
    target = doc
    for key in path[:-1]:
        target = target[key]
    if value is KeyError:
        del target[path[-1]]
    else:
        target[path[-1]] = value
    return doc


@pytest.mark.parametrize(
    "path, value, expected",
    [
        (("grid",), KeyError, "key 'grid': missing required key"),
        (("wsc_version",), KeyError, "key 'wsc_version': missing required key"),
        (("wsc_version",), "latest", "key 'wsc_version'"),
        (("kernel_name",), 3, "key 'kernel_name': expected a string"),
        (("block",), [128, 1], "key 'block': expected a list of 3 integers"),
        (("block",), [128, 0, 1], "key 'block'"),
        (("dynamic_smem_bytes",), True, "key 'dynamic_smem_bytes': expected an integer"),
        (
            ("tensors", "a", "dtype"),
            "f64",
            "key 'tensors.a.dtype': expected one of f16, bf16, f8E4M3FN, f32, i32, got 'f64'",
        ),
        (("tensors", "a", "role"), "scratch", "key 'tensors.a.role'"),
        (("tensors", "c", "shape"), KeyError, "key 'tensors.c.shape': missing required key"),
        (("tensors", "c", "layout"), KeyError, "key 'tensors.c.layout': missing required key"),
        (("tensor_maps", "a", "tensor"), "z", "key 'tensor_maps.a.tensor': names no tensor"),
        (("tensor_maps", "a", "box"), [128], "key 'tensor_maps.a.box': expected 2 dims"),
        (("tensor_maps", "b", "swizzle"), "256B", "key 'tensor_maps.b.swizzle'"),
        (("params", 2, "name"), "z", "key 'params[2].name': names no entry of 'tensors'"),
        (("params", 0, "name"), "z", "key 'params[0].name': names no entry of 'tensor_maps'"),
        (("params", 3, "kind"), "f64", "key 'params[3].kind'"),
        (("sizes",), KeyError, "key 'sizes': missing required key"),
        (("persistent",), 1, "key 'persistent': expected a bool, got int 1"),
        (("cluster",), 0, "key 'cluster': expected an integer >= 1, got 0"),
    ],
)
def test_artifact_errors_name_file_and_key(tmp_path, path, value, expected):
    write_artifact(tmp_path, _mutated(matmul_doc(), path, value))
    with pytest.raises(ArtifactError) as info:
        load_artifact(tmp_path)
    assert str(tmp_path / "kernel.json") in str(info.value)
    assert expected in str(info.value)


def test_artifact_missing_image_file(tmp_path):
    write_artifact(tmp_path, matmul_doc(), ptx=None)
    with pytest.raises(ArtifactError, match=r"key 'ptx': file .*kernel.ptx does not exist"):
        load_artifact(tmp_path)


def test_artifact_without_any_image(tmp_path):
    write_artifact(tmp_path, _mutated(matmul_doc(), ("ptx",)))
    with pytest.raises(ArtifactError, match="one of 'ptx' or 'cubin'"):
        load_artifact(tmp_path)


def test_artifact_invalid_json_and_missing_dir(tmp_path):
    (tmp_path / "kernel.json").write_text("{ not json")
    with pytest.raises(ArtifactError, match="invalid JSON"):
        load_artifact(tmp_path)
    with pytest.raises(ArtifactError, match="does not exist"):
        load_artifact(tmp_path / "nope")
    (tmp_path / "kernel.json").unlink()
    with pytest.raises(ArtifactError, match="cannot read"):
        load_artifact(tmp_path)


def test_artifact_errors_are_value_errors():
    assert issubclass(ArtifactError, ValueError)


# ---------------------------------------------------------------- tensors

F16_SPEC = TensorSpec("b", ("d0", "d1"), (128, 64), "f16", "input")


def test_cuda_array_interface_is_described():
    info = describe(FakeCudaArray((128, 64), ptr=0x1000), "b")
    assert info == TensorInfo(0x1000, (128, 64), (64, 1), "f16", "cuda", None, False)
    check(info, F16_SPEC, "b")


def test_cuda_array_interface_byte_strides():
    info = describe(FakeCudaArray((128, 64), typestr="<f4", strides=(512, 4)), "c")
    assert info.strides == (128, 1) and info.dtype == "f32"


def test_wrong_dtype():
    with pytest.raises(ArgumentTypeError, match="argument 'b': expected dtype f16, got f32"):
        check(describe(FakeCudaArray((128, 64), typestr="<f4"), "b"), F16_SPEC, "b")


def test_wrong_dtype_from_torch_tensor():
    info = describe(FakeTorchTensor((128, 64), dtype="torch.bfloat16"), "b")
    with pytest.raises(ArgumentTypeError, match="argument 'b': expected dtype f16, got bf16"):
        check(info, F16_SPEC, "b")
    other = describe(FakeTorchTensor((128, 64), dtype="torch.int64"), "b")
    with pytest.raises(ArgumentTypeError, match="got torch.int64"):
        check(other, F16_SPEC, "b")
    counters = describe(FakeTorchTensor((128, 64), dtype="torch.int32"), "e")
    with pytest.raises(ArgumentTypeError, match="argument 'e': expected dtype f16, got i32"):
        check(counters, F16_SPEC, "e")


def test_torch_tensor_device_checks():
    with pytest.raises(
        ArgumentError, match="argument 'b': expected a CUDA device tensor, got one on cpu"
    ):
        check(describe(FakeTorchTensor((128, 64), device=("cpu", None)), "b"), F16_SPEC, "b")
    with pytest.raises(ArgumentError, match="expected a tensor on cuda:0, got one on cuda:1"):
        check(
            describe(FakeTorchTensor((128, 64), device=("cuda", 1)), "b"), F16_SPEC, "b", device=0
        )


def test_wrong_shape():
    with pytest.raises(
        ArgumentError, match=r"argument 'b': expected shape \[128, 64\], got \[64, 128\]"
    ):
        check(describe(FakeCudaArray((64, 128)), "b"), F16_SPEC, "b")


def test_non_contiguous_transposed():
    info = describe(FakeCudaArray((128, 64), strides=(2, 256)), "b")
    with pytest.raises(
        ArgumentError, match=r"argument 'b': expected row-major contiguous strides \[64, 1\]"
    ):
        check(info, F16_SPEC, "b")
    with pytest.raises(ArgumentError, match="padded rows allowed"):
        check(info, F16_SPEC, "b", strided_rows=True)


def test_padded_rows_only_when_allowed():
    info = describe(FakeCudaArray((128, 64), strides=(2 * 72, 2)), "b")
    with pytest.raises(ArgumentError, match=r"got \[72, 1\]"):
        check(info, F16_SPEC, "b")
    check(info, F16_SPEC, "b", strided_rows=True)


def test_extent_one_dims_ignore_strides():
    spec = TensorSpec("x", ("d0", "d1"), (1, 64), "f16", "input")
    check(describe(FakeCudaArray((1, 64), strides=(2, 2)), "x"), spec, "x")


def test_misaligned_base():
    with pytest.raises(
        ArgumentError, match="argument 'b': base address 0x1008 is not 16-byte aligned"
    ):
        check(describe(FakeCudaArray((128, 64), ptr=0x1008), "b"), F16_SPEC, "b")


def test_null_pointer():
    with pytest.raises(ArgumentError, match="null data pointer"):
        check(describe(FakeCudaArray((128, 64), ptr=0), "b"), F16_SPEC, "b")


def test_readonly_output():
    spec = TensorSpec("c", ("d0", "d1"), (128, 64), "f16", "output")
    with pytest.raises(
        ArgumentError, match="argument 'c': is an output of the kernel but its memory is read-only"
    ):
        check(describe(FakeCudaArray((128, 64), readonly=True), "c"), spec, "c")
    check(describe(FakeCudaArray((128, 64), readonly=True), "b"), F16_SPEC, "b")


def test_host_array_through_dlpack_is_rejected():
    host = np.zeros((128, 64), dtype=np.float16)
    info = describe(host, "b")
    assert info.ptr == host.ctypes.data
    assert (info.shape, info.strides, info.dtype, info.device_type) == (
        (128, 64),
        (64, 1),
        "f16",
        "cpu",
    )
    with pytest.raises(
        ArgumentError, match="argument 'b': expected a CUDA device tensor, got one on cpu"
    ):
        check(info, F16_SPEC, "b")


def test_dlpack_strided_view_and_offset():
    host = np.zeros((8, 16), dtype=np.float32)
    view = host[2:, ::2]
    info = describe(view, "x")
    assert info.ptr == view.ctypes.data
    assert (info.shape, info.strides, info.dtype) == ((6, 8), (16, 2), "f32")
    assert describe(np.zeros(3, dtype=np.float64), "x").dtype == "f64"


def test_unsupported_object():
    with pytest.raises(ArgumentTypeError, match="argument 'a': expected a CUDA tensor .* got list"):
        describe([1, 2, 3], "a")


def test_strided_rows_follow_params(tmp_path):
    artifact = load_artifact(write_artifact(tmp_path / "with_ld", matmul_doc()))
    assert artifact.strided_rows("a")  # reached through a tensor map
    assert artifact.strided_rows("c")  # pointer plus ldc
    doc = matmul_doc()
    doc["params"] = doc["params"][:-1]
    artifact = load_artifact(write_artifact(tmp_path / "without_ld", doc))
    assert not artifact.strided_rows("c")


# ---------------------------------------------------------------- tensor maps


def _info(shape, dtype="f16", ptr=0x7F0000000000, strides=None):
    strides = strides or tuple(int(np.prod(shape[i + 1 :])) for i in range(len(shape)))
    return TensorInfo(ptr, tuple(shape), tuple(strides), dtype, "cuda", 0)


def _map(box, swizzle="128B", name="a"):
    return TensorMapSpec(name, "a", tuple(box), swizzle, "256B")


def test_plan_converts_to_innermost_first():
    plan = plan_tensor_map(_map((128, 64)), _info((8192, 4096)))
    assert plan.global_dims == (4096, 8192)
    assert plan.global_strides == (4096 * 2,)
    assert plan.box_dims == (64, 128)
    assert plan.element_strides == (1, 1)
    assert (plan.dtype, plan.swizzle, plan.l2_promotion) == ("f16", "128B", "256B")


def test_auto_l2_promotion_follows_the_row_stride():
    auto = TensorMapSpec("a", "a", (128, 64), "128B", "auto")
    assert plan_tensor_map(auto, _info((8192, 8192))).l2_promotion == "256B"
    # Rows 16400 bytes apart straddle 256-byte segments: 128-byte promotion.
    assert plan_tensor_map(auto, _info((8192, 8200))).l2_promotion == "128B"


def test_an_encoder_keeps_the_maps_of_a_cycle_of_addresses(monkeypatch):
    from wsc.runtime import tensor_map

    encoded = []

    class Calls:
        @staticmethod
        def encode(destination, dtype, rank, address, *arrays):
            encoded.append(address)
            ctypes.memmove(destination, address.to_bytes(8, "little") * 16, 128)
            return 0

    monkeypatch.setattr(tensor_map.HotCalls, "get", classmethod(lambda cls: Calls))
    slot = (ctypes.c_ubyte * 128)()
    encoder = tensor_map.TensorMapEncoder(
        plan_tensor_map(_map((128, 64)), _info((8192, 4096))), ctypes.addressof(slot)
    )
    # A model's activations: more buffers than double buffering, in turn.
    cycle = [0x10000 * (index + 1) for index in range(16)]
    for _ in range(3):
        for address in cycle:
            encoder.encode(address)
            assert bytes(slot) == address.to_bytes(8, "little") * 16
    assert encoded == cycle
    # Past RECENT_TENSOR_MAPS addresses the oldest is encoded again.
    others = [0x10000 * (index + 17) for index in range(tensor_map.RECENT_TENSOR_MAPS)]
    for address in [*others, cycle[0]]:
        encoder.encode(address)
    assert encoded[-1] == cycle[0] and len(encoded) == len(cycle) + len(others) + 1


def test_plan_uses_actual_row_stride():
    plan = plan_tensor_map(_map((64, 16), "64B"), _info((300, 136), "f32", strides=(144, 1)))
    assert plan.global_dims == (136, 300) and plan.global_strides == (144 * 4,)


@pytest.mark.parametrize(
    "box, swizzle, info, expected",
    [
        (
            (128, 64),
            "128B",
            _info((256, 64), ptr=0x7F0000000008),
            "base address 0x7f0000000008 is not 16-byte aligned",
        ),
        ((128, 64), "128B", _info((256, 100)), "stride of dim 0 is 200 bytes"),
        ((128, 64), "128B", _info((256, 64), strides=(128, 2)), "innermost stride is 2 elements"),
        ((257, 64), "128B", _info((512, 64)), "box dim 0 is 257, outside 1..256"),
        ((0, 64), "128B", _info((512, 64)), "box dim 0 is 0"),
        (
            (128, 128),
            "128B",
            _info((256, 128)),
            "box inner extent is 256 bytes, more than the 128-byte span of 128B",
        ),
        ((128, 64), "64B", _info((256, 64)), "more than the 64-byte span of 64B swizzle"),
        ((128, 32), "32B", _info((256, 64), "f32"), "more than the 32-byte span of 32B swizzle"),
        (
            (128, 4),
            "none",
            _info((256, 64)),
            "box inner extent is 8 bytes; it must be a multiple of 16",
        ),
        ((128, 64), "none", _info((256, 64), "f64"), "dtype f64 has no TMA data type"),
        ((128,), "none", _info((256, 64)), "box [128] has 1 dims, the tensor has 2"),
    ],
)
def test_plan_rejects_tma_violations(box, swizzle, info, expected):
    with pytest.raises(TensorMapError) as error:
        plan_tensor_map(_map(box, swizzle), info)
    assert "tensor map 'a' (tensor 'a')" in str(error.value)
    assert expected in str(error.value)
    assert isinstance(error.value, ValueError)


def test_plan_accepts_each_swizzle_at_its_span():
    for swizzle, inner in (("none", 256), ("32B", 16), ("64B", 32), ("128B", 64)):
        plan_tensor_map(_map((64, inner), swizzle), _info((64, 256)))


# ---------------------------------------------------------------- param packing


def _pointer_array(packed: PackedParams) -> list[int]:
    array = (ctypes.c_void_p * len(packed.slots)).from_address(packed.address)
    return [int(p) for p in array]


def test_packed_params_layout():
    descriptor = bytes(range(128))
    packed = PackedParams(
        [
            ("tensor_map", "a", descriptor),
            ("tensor_map", "b", descriptor[::-1]),
            ("pointer", "c", 0x7F00DEADBEEF00),
            ("i32", "m", -5),
            ("i32", "ldc", 2**31 - 1),
            ("f32", "d", 0.5),
        ]
    )
    assert [(s.kind, s.size) for s in packed.slots] == [
        ("tensor_map", 128),
        ("tensor_map", 128),
        ("pointer", 8),
        ("i32", 4),
        ("i32", 4),
        ("f32", 4),
    ]
    assert _pointer_array(packed) == [s.address for s in packed.slots]
    a, b, c, m, ldc, d = packed.slots
    assert a.address % 64 == 0 and b.address % 64 == 0
    assert ctypes.string_at(a.address, 128) == descriptor
    assert ctypes.string_at(b.address, 128) == descriptor[::-1]
    assert ctypes.string_at(c.address, 8) == struct.pack("<Q", 0x7F00DEADBEEF00)
    assert ctypes.string_at(m.address, 4) == struct.pack("<i", -5)
    assert ctypes.string_at(ldc.address, 4) == struct.pack("<i", 2**31 - 1)
    assert ctypes.string_at(d.address, 4) == struct.pack("<f", 0.5)


def test_packed_params_reject_bad_values():
    with pytest.raises(
        ValueError, match="param 'm': expected an integer in the i32 range, got 2147483648"
    ):
        PackedParams([("i32", "m", 2**31)])
    with pytest.raises(ValueError, match="param 'c': expected an integer in the u64 pointer range"):
        PackedParams([("pointer", "c", -1)])
    with pytest.raises(ValueError, match="param 'a': tensor map must be 128 bytes, got 64"):
        PackedParams([("tensor_map", "a", bytes(64))])
    with pytest.raises(TypeError, match="param 'd': an f32 is a number, got '0.5'"):
        PackedParams([("f32", "d", "0.5")])
    with pytest.raises(ValueError, match="unknown kind 'f64'"):
        PackedParams([("f64", "x", 1.0)])


def test_packed_params_empty_is_null():
    assert PackedParams([]).address == 0


# ---------------------------------------------------------------- run CLI helpers


def test_bf16_rounding_and_decoding():
    values = np.array([1.0, -2.5, 0.0], dtype=np.float32)
    assert float32_to_bf16_bits(values).tolist() == [0x3F80, 0xC020, 0x0000]
    ties = np.array([0x3F808000, 0x3F818000, 0x3F808001], dtype=np.uint32).view(np.float32)
    # Halfway cases round to even; above halfway rounds up.
    assert float32_to_bf16_bits(ties).tolist() == [0x3F80, 0x3F82, 0x3F81]
    assert to_float64(np.array([0x3F80, 0xC020], dtype=np.uint16), "bf16").tolist() == [1.0, -2.5]
    assert to_float64(np.array([1.5], dtype=np.float16), "f16").dtype == np.float64


def test_cli_reports_bad_artifact_as_json_and_on_stderr(tmp_path, capsys):
    missing = tmp_path / "missing"
    assert main([str(missing), "--check"]) == 1
    out, err = capsys.readouterr()
    report = json.loads(out.strip())
    assert report["ok"] is False and "ArtifactError" in report["error"]
    assert f"wsc run: error: {missing}: artifact directory does not exist" in err, err


def test_cli_names_the_timings_it_knows(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_:
        main([str(tmp_path), "--bench", "--timing", "warm"])
    assert exit_.value.code == 2
    assert "choose from 'flushed', 'back-to-back'" in capsys.readouterr().err


def test_cli_refuses_a_timeout_that_is_no_time(tmp_path, capsys):
    for text in ("-1", "0", "nan", "inf", "soon"):
        with pytest.raises(SystemExit) as exit_:
            main([str(tmp_path), "--timeout", text])
        assert exit_.value.code == 2
        assert f"expected a positive number of seconds, got {text}" in capsys.readouterr().err


# ---------------------------------------------------------------- imports


def test_the_gpu_side_imports_without_mlir():
    """What runs on a GPU machine without the MLIR wheels (the runtime, `wsc
    run`, wsc.matmul and wsc.softmax on a warm cache, the tuner's timing side,
    the matmul's config, space and check, the softmax's schedule) must import
    there, and not import mlir."""
    code = textwrap.dedent(
        """
        import sys
        class BlockMlir:
            def find_spec(self, name, path=None, target=None):
                if name == "mlir" or name.startswith("mlir."):
                    raise ImportError("mlir is blocked in this test")
                return None
        sys.meta_path.insert(0, BlockMlir())
        import wsc.runtime, wsc.runtime.run_cli
        assert "torch" not in sys.modules
        import wsc.matmul, wsc.softmax, wsc.autotune, wsc.device, wsc.cache
        import wsc.kernels.softmax.schedule
        import wsc.kernels.matmul.config, wsc.kernels.matmul.space, wsc.kernels.matmul.check
        loaded = sorted(m for m in sys.modules if m == "mlir" or m.startswith("mlir."))
        assert not loaded, loaded
        print("ok")
        """
    )
    env = {**os.environ, "PYTHONPATH": str(PYTHON_DIR)}
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"


# ---------------------------------------------------------------- GPU

# A small TMA matmul with the artifact's parameter convention: tensor maps by
# value, C pointer, m, n, k, ldc. Each 128-thread block computes a 64x64 tile
# of C = A @ B^T (nk) or A @ B (kn), loading 64x32 / 32x64 tiles with TMA
# (no swizzle), relying on TMA zero-fill for ragged edges.
TEST_KERNEL_SOURCE = r"""
#include <cuda_fp16.h>
struct alignas(64) TmaDescriptor { unsigned long long words[16]; };
constexpr int BM = 64, BN = 64, BK = 32, THREADS = 128;

__device__ __forceinline__ unsigned smem_address(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void tma_load_2d(void* dst, const TmaDescriptor* map, int inner, int outer, unsigned bar) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];"
      :: "r"(smem_address(dst)), "l"(map), "r"(inner), "r"(outer), "r"(bar) : "memory");
}

extern "C" __global__ void __launch_bounds__(THREADS)
test_matmul(const __grid_constant__ TmaDescriptor a_map, const __grid_constant__ TmaDescriptor b_map,
            float* c, int m, int n, int k, int ldc) {
  extern __shared__ __align__(1024) unsigned char smem[];
  __half* a_tile = reinterpret_cast<__half*>(smem);
  __half* b_tile = a_tile + BM * BK;
  unsigned long long* bar = reinterpret_cast<unsigned long long*>(b_tile + BN * BK);
  const unsigned bar_addr = smem_address(bar);
  const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
  if (threadIdx.x == 0) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(bar_addr));
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  }
  __syncthreads();
  float acc[BM * BN / THREADS];
  for (int i = 0; i < BM * BN / THREADS; ++i) acc[i] = 0.f;
  unsigned phase = 0;
  for (int k0 = 0; k0 < k; k0 += BK) {
    if (threadIdx.x == 0) {
      asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;"
                   :: "r"(bar_addr), "r"((BM * BK + BN * BK) * 2) : "memory");
      tma_load_2d(a_tile, &a_map, k0, m0, bar_addr);
#if B_KN
      tma_load_2d(b_tile, &b_map, n0, k0, bar_addr);
#else
      tma_load_2d(b_tile, &b_map, k0, n0, bar_addr);
#endif
    }
    asm volatile(
        "{\n .reg .pred done;\n WAIT_%=:\n"
        " mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
        " @!done bra WAIT_%=;\n}" :: "r"(bar_addr), "r"(phase) : "memory");
    phase ^= 1;
    for (int i = 0; i < BM * BN / THREADS; ++i) {
      const int idx = threadIdx.x + i * THREADS, row = idx / BN, col = idx % BN;
      float sum = acc[i];
      for (int kk = 0; kk < BK; ++kk) {
#if B_KN
        const float b_value = __half2float(b_tile[kk * BN + col]);
#else
        const float b_value = __half2float(b_tile[col * BK + kk]);
#endif
        sum += __half2float(a_tile[row * BK + kk]) * b_value;
      }
      acc[i] = sum;
    }
    __syncthreads();
  }
  for (int i = 0; i < BM * BN / THREADS; ++i) {
    const int idx = threadIdx.x + i * THREADS, row = m0 + idx / BN, col = n0 + idx % BN;
    if (row < m && col < n) c[(size_t)row * ldc + col] = acc[i];
  }
}

extern "C" __global__ void spin_until_set(const int* flag) {
  while (atomicAdd(const_cast<int*>(flag), 0) == 0) __nanosleep(1000);
}

// Split-K C = A @ B^T without TMA: split blockIdx.z of gridDim.z sums its
// share of K for a 64x64 tile of C into d, counts itself on the tile's
// counter in e, and the last split to arrive adds the partials in split
// order, writes C and sets the counter back to zero (unless LEAKY).
template <bool LEAKY>
__device__ void split_matmul(const __half* a, const __half* b, float* c, float* d, int* e,
                             int m, int n, int k) {
  const int splits = gridDim.z, split = blockIdx.z;
  const int tile = blockIdx.y * gridDim.x + blockIdx.x;
  const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
  const int k0 = split * k / splits, k1 = (split + 1) * k / splits;
  float* partials = d + (size_t)tile * splits * BM * BN;
  for (int i = threadIdx.x; i < BM * BN; i += THREADS) {
    const int row = m0 + i / BN, col = n0 + i % BN;
    float sum = 0.f;
    for (int kk = k0; row < m && col < n && kk < k1; ++kk)
      sum += __half2float(a[(size_t)row * k + kk]) * __half2float(b[(size_t)col * k + kk]);
    partials[(size_t)split * BM * BN + i] = sum;
  }
  __threadfence();
  __syncthreads();
  __shared__ bool last;
  if (threadIdx.x == 0) last = atomicAdd(&e[tile], 1) == splits - 1;
  __syncthreads();
  if (!last) return;
  __threadfence();
  for (int i = threadIdx.x; i < BM * BN; i += THREADS) {
    const int row = m0 + i / BN, col = n0 + i % BN;
    float sum = 0.f;
    for (int s = 0; s < splits; ++s) sum += __ldcg(&partials[(size_t)s * BM * BN + i]);
    if (row < m && col < n) c[(size_t)row * n + col] = sum;
  }
  if (threadIdx.x == 0 && !LEAKY) e[tile] = 0;
}

extern "C" __global__ void test_split_matmul(const __half* a, const __half* b, float* c, float* d,
                                             int* e, int m, int n, int k) {
  split_matmul<false>(a, b, c, d, e, m, n, k);
}

extern "C" __global__ void test_split_matmul_leaky(const __half* a, const __half* b, float* c,
                                                   float* d, int* e, int m, int n, int k) {
  split_matmul<true>(a, b, c, d, e, m, n, k);
}
"""

# 64 KiB exceeds the 48 KiB default, so launching needs the opt-in attribute.
TEST_SMEM_BYTES = 64 * 1024
RAGGED = {"m": 300, "n": 200, "k": 136}


def _find_nvcc() -> str | None:
    candidates = [shutil.which("nvcc")]
    for root in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
        if root:
            candidates.append(str(Path(root) / "bin" / "nvcc"))
    return next((c for c in candidates if c and os.access(c, os.X_OK)), None)


@pytest.fixture(scope="session")
def cuda_device():
    """Skip unless a CUDA driver and device are usable."""
    try:
        from cuda.bindings import driver as cu

        (result,) = cu.cuInit(0)
        if result != cu.CUresult.CUDA_SUCCESS:
            pytest.skip(f"cuInit failed: {result}")
        result, count = cu.cuDeviceGetCount()
        if result != cu.CUresult.CUDA_SUCCESS or count == 0:
            pytest.skip("no CUDA device")
    except Exception as exc:  # no driver library at all
        pytest.skip(f"CUDA driver unavailable: {exc}")
    return 0


@pytest.fixture(scope="session")
def test_images(cuda_device, tmp_path_factory):
    """{(b_layout, 'ptx'|'cubin'): path} of the compiled test kernel."""
    nvcc = _find_nvcc()
    if nvcc is None:
        pytest.skip("nvcc not found; it builds the test kernel")
    directory = tmp_path_factory.mktemp("kernels")
    source = directory / "test_kernel.cu"
    source.write_text(TEST_KERNEL_SOURCE)
    images = {}
    for layout, flag in (("nk", "0"), ("kn", "1")):
        for kind in ("ptx", "cubin"):
            out = directory / f"test_{layout}.{kind}"
            subprocess.run(
                [nvcc, "-arch=sm_90a", f"-{kind}", f"-DB_KN={flag}", "-o", str(out), str(source)],
                check=True,
                capture_output=True,
            )
            images[(layout, kind)] = out
    return images


def _gpu_artifact(directory: Path, images, b_layout="nk", kind="ptx", **overrides) -> Path:
    doc = matmul_doc(
        **RAGGED,
        b_layout=b_layout,
        box_m=64,
        box_n=64,
        box_k=32,
        swizzle="none",
        kernel_name="test_matmul",
        smem=TEST_SMEM_BYTES,
        **overrides,
    )
    image = images[(b_layout, kind)]
    if kind == "ptx":
        return write_artifact(directory, doc, ptx=image.read_text())
    doc.pop("ptx")
    return write_artifact(directory, doc, ptx=None, cubin=image.read_bytes())


def _split_gpu_artifact(directory: Path, images, kernel_name="test_split_matmul") -> Path:
    """The split-K test kernel: 4 splits along z, one 64x64 tile of C per block."""
    doc = matmul_doc(**RAGGED, kernel_name=kernel_name, grid=["cdiv(n, 64)", "cdiv(m, 64)", "4"])
    doc["tensors"]["d"] = {
        "role": "workspace",
        "dtype": "f32",
        "shape": ["cdiv(m, 64) * cdiv(n, 64) * 4", "4096"],
        "layout": "row_major",
    }
    doc["tensors"]["e"] = {
        "role": "workspace",
        "dtype": "i32",
        "shape": ["cdiv(m, 64) * cdiv(n, 64)"],
        "layout": "row_major",
        "zeroed": True,
    }
    doc["tensor_maps"] = {}
    doc["params"] = [{"kind": "pointer", "name": name} for name in "abcde"] + [
        {"kind": "i32", "name": size, "size": size} for size in "mnk"
    ]
    return write_artifact(directory, doc, ptx=images[("nk", "ptx")].read_text())


def _run_cli(capsys, argv) -> tuple[int, dict]:
    code = main(argv)
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == 1, lines
    return code, json.loads(lines[0])


def _torch_or_skip():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch sees no CUDA device")
    return torch


@pytest.mark.cuda
@pytest.mark.parametrize("timing", ["flushed", "back-to-back"])
@pytest.mark.parametrize("backend", ["driver", "torch"])
@pytest.mark.parametrize("b_layout, kind", [("nk", "ptx"), ("kn", "cubin")])
def test_gpu_cli_check_and_bench(tmp_path, capsys, test_images, backend, b_layout, kind, timing):
    if backend == "torch":
        _torch_or_skip()
    directory = _gpu_artifact(tmp_path, test_images, b_layout, kind)
    argv = [str(directory), "--check", "--bench", "--iters", "3", "--backend", backend]
    code, report = _run_cli(capsys, [*argv, "--timing", timing])
    assert code == 0, report
    assert report["ok"] and report["nan_count"] == 0 and report["rel_err"] < 1e-5
    assert report["shape"] == [300, 200, 136] and report["b_layout"] == b_layout
    assert report["ms"] > 0 and report["tflops"] > 0 and report["timing"] == timing
    if timing == "back-to-back":
        # A problem this small takes the most input sets, each launched in turn.
        assert report["input_sets"] == MAX_INPUT_SETS
        assert MAX_INPUT_SETS <= report["launches_per_graph"] <= MAX_GRAPH_LAUNCHES
        assert report["ms_low"] <= report["ms"] <= report["ms_high"]


@pytest.mark.cuda
def test_gpu_cli_times_the_artifacts_of_a_run_together_in_rounds(tmp_path, capsys, test_images):
    layouts = ["nk", "kn"]
    directories = [
        str(_gpu_artifact(tmp_path / layout, test_images, layout, "cubin")) for layout in layouts
    ]
    argv = ["--check", "--bench", "--iters", "4", "--timing", "back-to-back"]
    assert main([*directories, *argv]) == 0
    reports = [json.loads(line) for line in capsys.readouterr().out.strip().splitlines()]
    assert [report["b_layout"] for report in reports] == layouts
    for report in reports:
        assert report["ok"] and report["rounds"] == 4, report
        assert report["ms_low"] <= report["ms"] <= report["ms_high"]
        flops = 2 * math.prod(report["shape"])
        assert report["tflops"] == pytest.approx(flops / (report["ms"] * 1e-3) / 1e12)


@pytest.mark.cuda
@pytest.mark.parametrize("backend", ["driver", "torch"])
def test_gpu_cli_runs_a_split_kernel_on_its_workspaces(tmp_path, capsys, test_images, backend):
    if backend == "torch":
        _torch_or_skip()
    directory = _split_gpu_artifact(tmp_path / "split", test_images)
    argv = [str(directory), "--check", "--bench", "--iters", "3", "--backend", backend]
    code, report = _run_cli(capsys, argv)
    assert code == 0 and report["ok"] and report["rel_err"] < 1e-5, report
    # Launches back to back in a graph leave the zeroed workspace zero too.
    code, report = _run_cli(capsys, [*argv, "--timing", "back-to-back"])
    assert code == 0 and report["ok"] and report["input_sets"] > 1, report
    code, report = _run_cli(capsys, [*argv, "--size", "m=1000", "--size", "k=520"])
    assert code == 0 and report["ok"] and report["shape"] == [1000, 200, 520], report
    leaky = _split_gpu_artifact(tmp_path / "leaky", test_images, "test_split_matmul_leaky")
    code, report = _run_cli(capsys, [str(leaky), "--check", "--backend", backend])
    assert code == 1 and not report["ok"] and report["rel_err"] < 1e-5
    assert report["error"] == (
        "kernel left workspace 'e' non-zero: 20 of 20 elements after its first launch"
    )


@pytest.mark.cuda
def test_gpu_split_kernel_workspaces_per_stream_and_per_graph(tmp_path, test_images):
    """wsc.matmul's bound split kernel: right on the default stream, on a side
    stream (a set of its own), captured in a graph without a warm-up on the
    capture stream (the graph's own set, zeroed by the graph) and replayed,
    and eagerly on the capture stream after the capture."""
    torch = _torch_or_skip()
    import wsc.matmul  # noqa: F401  (the module, not the function wsc.matmul)
    from wsc.runtime import BoundLaunch, Kernel

    api = sys.modules["wsc.matmul"]
    kernel = Kernel(_split_gpu_artifact(tmp_path, test_images))
    m, n, k = RAGGED["m"], RAGGED["n"], RAGGED["k"]
    specs = [
        (spec.name, spec.shape, api._torch_dtype(spec.dtype), spec.zeroed)
        for spec in kernel.artifact.tensors.values()
        if spec.role == "workspace"
    ]
    a = torch.randn(m, k, device="cuda").half()
    w = torch.randn(n, k, device="cuda").half()
    workspaces = api._allocate_workspaces(specs, 0)
    out = torch.empty(m, n, device="cuda")
    launch = BoundLaunch(kernel.prepare(a=a, b=w, c=out, **workspaces))
    bound = api._BoundSplitMatmul(launch, (m, n), torch.float32, 0, specs)
    bound.workspace(api._current_stream(0), workspaces)

    def expect(c):
        torch.cuda.synchronize()
        assert torch.allclose(c.double(), a.double() @ w.double().T, rtol=1e-4, atol=1e-4)

    expect(bound(a, w, None))
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        expect(bound(a, w, None))
    assert len(bound.workspaces) == 2
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        bound(a, w, out)
    assert len(bound.workspaces) == 2  # the graph's set is its own
    for seed in range(3):
        generator = torch.Generator(device="cuda").manual_seed(seed)
        a.copy_(torch.randn(a.shape, device="cuda", generator=generator))
        out.fill_(float("nan"))
        graph.replay()
        expect(out)
    with torch.cuda.stream(torch.cuda.graph.default_capture_stream):
        expect(bound(a, w, None))
    assert len(bound.workspaces) == 3
    for held in bound._held.values():
        assert int(torch.count_nonzero(held["e"])) == 0


@pytest.mark.cuda
def test_gpu_run_check_in_a_process_without_torch(tmp_path, test_images):
    """Kernel.run_check with timing, where nothing but wsc ever made a CUDA
    context current: its events and allocations find the kernel's."""
    directory = _gpu_artifact(tmp_path, test_images)
    code = (
        "import json; from wsc.runtime import Kernel;"
        f"report = Kernel({str(directory)!r}).run_check(bench=True, iters=3, backend='driver');"
        "print(json.dumps(report))"
    )
    env = {**os.environ, "PYTHONPATH": str(PYTHON_DIR)}
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120
    )
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads(done.stdout.splitlines()[-1])
    assert report["ok"] and report["nan_count"] == 0 and report["ms"] > 0, report


@pytest.mark.cuda
def test_gpu_cli_sampled_reference(tmp_path, capsys, test_images, monkeypatch):
    import wsc.kernels.matmul.check as matmul_check

    monkeypatch.setattr(matmul_check, "FULL_REFERENCE_MAX_WORK", 1)
    code, report = _run_cli(
        capsys, [str(_gpu_artifact(tmp_path, test_images)), "--check", "--backend", "driver"]
    )
    assert code == 0 and report["rel_err"] < 1e-5, report


@pytest.mark.cuda
def test_gpu_cli_detects_unwritten_output(tmp_path, capsys, test_images):
    # One block covers only C's first 64x64 tile: the NaN poison must show.
    directory = _gpu_artifact(tmp_path, test_images, grid=["cdiv(m, 512)", "cdiv(n, 512)"])
    code, report = _run_cli(capsys, [str(directory), "--check", "--backend", "driver"])
    assert code == 1 and not report["ok"]
    assert report["nan_count"] == 300 * 200 - 64 * 64
    assert report["rel_err"] is None


@pytest.mark.cuda
def test_gpu_kernel_launch_with_torch_views_and_dlpack(tmp_path, test_images):
    torch = _torch_or_skip()
    from wsc.runtime import Kernel

    kernel = Kernel(_gpu_artifact(tmp_path, test_images))
    m, n, k = RAGGED["m"], RAGGED["n"], RAGGED["k"]
    # Padded rows: the tensor maps carry the real strides.
    a = torch.randn(m, k + 8, device="cuda").half()[:, :k]
    b = torch.randn(n, k, device="cuda").half()

    class DlpackOnly:
        def __init__(self, tensor):
            self.tensor = tensor

        def __dlpack__(self, **kwargs):
            return self.tensor.__dlpack__(**kwargs)

        def __dlpack_device__(self):
            return self.tensor.__dlpack_device__()

    c = torch.full((m, n), float("nan"), device="cuda")
    kernel.launch(a=a, b=DlpackOnly(b), c=c)
    kernel.synchronize(timeout_s=30)
    expected = a.double() @ b.double().T
    assert torch.allclose(c.double(), expected, rtol=1e-4, atol=1e-4)


@pytest.mark.cuda
def test_gpu_argument_errors(tmp_path, test_images):
    from wsc.runtime import DeviceArray, Kernel

    kernel = Kernel(_gpu_artifact(tmp_path, test_images))
    m, n, k = RAGGED["m"], RAGGED["n"], RAGGED["k"]
    a, b, c = DeviceArray((m, k), "f16"), DeviceArray((n, k), "f16"), DeviceArray((m, n), "f32")
    host = np.zeros((m, n), dtype=np.float32)
    with pytest.raises(ArgumentError, match="argument 'c': pointer 0x[0-9a-f]+ is not CUDA memory"):
        kernel.launch(a=a, b=b, c=FakeCudaArray((m, n), typestr="<f4", ptr=host.ctypes.data))
    with pytest.raises(ArgumentTypeError, match="missing c; unexpected d"):
        kernel.launch(a=a, b=b, d=c)
    with pytest.raises(ArgumentTypeError, match="argument 'b': expected dtype f16, got f32"):
        kernel.launch(a=a, b=DeviceArray((n, k), "f32"), c=c)


@pytest.mark.cuda
def test_gpu_param_mismatch_and_bad_ptx(tmp_path, test_images):
    from wsc.runtime import Kernel, KernelLoadError

    doc_params = matmul_doc()["params"][:-1]
    with pytest.raises(
        KernelLoadError,
        match=r"has byte sizes \[128, 128, 8, 4, 4, 4\].*sizes \[128, 128, 8, 4, 4, 4, 4\]",
    ):
        Kernel(_gpu_artifact(tmp_path / "params", test_images, params=doc_params))
    bad = write_artifact(
        tmp_path / "bad", matmul_doc(), ptx=".version 8.0\n.target sm_90a\nthis is not ptx\n"
    )
    with pytest.raises(KernelLoadError, match="cuModuleLoadDataEx") as error:
        Kernel(bad)
    assert "ptx:" in str(error.value)


@pytest.mark.cuda
def test_gpu_hung_kernel_times_out(tmp_path, test_images):
    """A kernel that never finishes becomes LaunchTimeout (in a child: the context is lost)."""
    doc = {
        "format": ARTIFACT_FORMAT,
        "wsc_version": "0.1.0",
        "kernel_name": "spin_until_set",
        "ptx": "kernel.ptx",
        "block": [1, 1, 1],
        "grid": ["cdiv(n, 4)"],
        "dynamic_smem_bytes": 0,
        "sizes": {"n": 4},
        "tensors": {
            "flag": {"shape": ["n"], "dtype": "f32", "role": "input", "layout": "row_major"}
        },
        "params": [{"kind": "pointer", "name": "flag"}],
    }
    directory = write_artifact(tmp_path, doc, ptx=test_images[("nk", "ptx")].read_text())
    code = textwrap.dedent(
        f"""
        import os, sys
        from wsc.runtime import DeviceArray, Kernel, LaunchTimeout
        kernel = Kernel({str(directory)!r})
        flag = DeviceArray((4,), "f32")
        flag.fill_bits(0)
        kernel.launch(flag=flag)
        try:
            kernel.synchronize(timeout_s=2)
        except LaunchTimeout as exc:
            print("timeout:", exc, flush=True)
            os._exit(0)
        os._exit(3)
        """
    )
    env = {**os.environ, "PYTHONPATH": str(PYTHON_DIR)}
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "did not finish within 2 s" in result.stdout


@pytest.mark.cuda
@pytest.mark.parametrize("dtype", ["f16", "bf16", "f32"])
def test_gpu_encode_every_swizzle(cuda_device, dtype):
    from wsc.runtime import DeviceArray
    from wsc.runtime.artifact import DTYPE_SIZES
    from wsc.runtime.tensor_map import SWIZZLE_SPAN_BYTES, encode_tensor_map

    array = DeviceArray((512, 512), dtype)
    info = describe(array, "x")
    raws = set()
    for swizzle, span in SWIZZLE_SPAN_BYTES.items():
        inner = (span or 256) // DTYPE_SIZES[dtype]
        raw = encode_tensor_map(plan_tensor_map(_map((128, inner), swizzle), info)).raw
        assert len(raw) == 128
        raws.add(raw)
    assert len(raws) == len(SWIZZLE_SPAN_BYTES)
