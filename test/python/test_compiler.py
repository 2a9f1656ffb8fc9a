"""The compile driver: the artifact it writes is what the runtime loads, every
stage leaves IR behind when asked, and bad requests fail with clear errors."""

import json
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

import wsc
from wsc.codegen import KernelInfo
from wsc.compiler import CompileResult, write_artifact
from wsc.kernels.matmul.build import compile_matmul
from wsc.kernels.matmul.config import MatmulConfig, MatmulProblem
from wsc.runtime import load_artifact
from wsc.runtime.artifact import Workspace

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


def split_result() -> CompileResult:
    """What the compile side reports of a split-K matmul: a and b read through
    tensor maps, c stored through a pointer, d and e (partial sums, arrival
    counters) workspaces the kernel reaches by pointer."""

    def tensor(arg, dtype, role, rank=2):
        return {"arg": arg, "dtype": dtype, "role": role, "shape": [-1] * rank}

    info = KernelInfo(
        name="split_matmul",
        block=(384, 1, 1),
        dynamic_smem_bytes=4096,
        params=[
            {"kind": "tensor_map", "name": "a"},
            {"kind": "tensor_map", "name": "b"},
            {"kind": "pointer", "name": "c"},
            {"kind": "pointer", "name": "d"},
            {"kind": "pointer", "name": "e"},
            {"kind": "i32", "name": "m"},
            {"kind": "i32", "name": "n"},
            {"kind": "i32", "name": "k"},
            {"kind": "i32", "name": "ldc"},
        ],
        tensor_maps={
            "a": {"tensor": "a", "box": [128, 64], "swizzle": "128B"},
            "b": {"tensor": "b", "box": [128, 64], "swizzle": "128B"},
        },
        tensors={
            "a": tensor(0, "f16", "input"),
            "b": tensor(1, "f16", "input"),
            "c": tensor(2, "f32", "output"),
            "d": tensor(3, "f32", "workspace", rank=1),
            "e": tensor(4, "i32", "workspace", rank=1),
        },
        dims={
            "m": [["a", 0], ["c", 0]],
            "n": [["b", 0], ["c", 1]],
            "k": [["a", 1], ["b", 1]],
        },
    )
    return CompileResult("// split-K ptx\n", info)


SPLIT_WORKSPACES = {
    "d": Workspace(("cdiv(m, 128) * cdiv(n, 128) * 4 * 16384",)),
    "e": Workspace(("cdiv(m, 128) * cdiv(n, 128)",), zeroed=True),
}


def test_an_artifact_with_workspaces_and_a_fixed_grid_axis(tmp_path):
    sizes = {"m": 256, "n": 384, "k": 4096}
    grid = [("m", 128), ("n", 128), 4]
    write_artifact(tmp_path, split_result(), sizes, grid, {}, workspaces=SPLIT_WORKSPACES)
    meta = json.loads((tmp_path / "kernel.json").read_text())
    assert meta["grid"] == ["cdiv(m, 128)", "cdiv(n, 128)", "4"]
    assert meta["tensors"]["d"] == {
        "role": "workspace",
        "dtype": "f32",
        "shape": ["cdiv(m, 128) * cdiv(n, 128) * 4 * 16384"],
        "layout": "row_major",
    }
    assert meta["tensors"]["e"]["zeroed"] is True and meta["tensors"]["e"]["dtype"] == "i32"
    assert {"kind": "pointer", "name": "e"} in meta["params"]
    artifact = load_artifact(tmp_path)
    assert artifact.grid == (2, 3, 4)
    assert artifact.tensors["d"].shape == (2 * 3 * 4 * 16384,)
    assert artifact.tensors["e"].shape == (6,) and artifact.tensors["e"].zeroed
    assert artifact.resized(m=1000, n=1333, k=520).tensors["e"].shape == (8 * 11,)


@pytest.mark.parametrize(
    "workspaces, grid, message",
    [
        ({"d": SPLIT_WORKSPACES["d"]}, None, "tensor 'e' is a workspace; give its shape"),
        (None, None, "tensor 'd' is a workspace; give its shape"),
        (
            {**SPLIT_WORKSPACES, "c": Workspace(("m", "n"))},
            None,
            r"workspaces names 'c', no workspace of the kernel \(its role is output\); "
            "its workspaces: d, e",
        ),
        (
            {**SPLIT_WORKSPACES, "z": Workspace(("m",))},
            None,
            r"workspaces names 'z', no workspace of the kernel \(it takes no such tensor\)",
        ),
        (
            {**SPLIT_WORKSPACES, "e": Workspace(("cdiv(m, 128)", "cdiv(n, 128)"))},
            None,
            r"workspace 'e' has rank 1; its shape \['cdiv\(m, 128\)', 'cdiv\(n, 128\)'\] has 2",
        ),
        (
            {**SPLIT_WORKSPACES, "e": Workspace(("cdiv(m, 128) * splits",))},
            None,
            "workspace 'e': 'cdiv.m, 128. [*] splits' reads size 'splits', not in 'sizes'",
        ),
        (
            {**SPLIT_WORKSPACES, "e": Workspace(("cdiv(m, 128) + 1",))},
            None,
            "workspace 'e': factor 'cdiv.m, 128. [+] 1' of .* is no size",
        ),
        (SPLIT_WORKSPACES, [("m", 128), ("n", 128), 0], "a fixed grid axis is a positive int"),
        (SPLIT_WORKSPACES, [("m", 128), ("q", 128)], "the grid counts tiles of 'q'"),
    ],
)
def test_bad_workspaces_are_named(tmp_path, workspaces, grid, message):
    sizes = {"m": 256, "n": 384, "k": 4096}
    with pytest.raises(ValueError, match=message):
        write_artifact(
            tmp_path,
            split_result(),
            sizes,
            grid or [("m", 128), ("n", 128), 4],
            {},
            workspaces=workspaces,
        )
    assert not (tmp_path / "kernel.json").exists()


def test_an_artifact_whose_tma_rows_no_launch_could_copy_is_refused(tmp_path):
    """The builder's write_artifact holds the sizes to TMA's 16-byte rows, as
    compile_matmul does (a kernel of A [m, k] f16 read by TMA: k a multiple of 8)."""
    sys.path.insert(0, str(EXAMPLES))
    from v2_ring_buffer import matmul_v2

    compiled = matmul_v2(prefetch=False).warp_specialize(num_stages=2).compile()
    message = (
        "kernel 'matmul': tensor 'a' is copied by TMA: its rows are 200 bytes (k = 100 x 2 B); "
        "TMA needs a row stride that is a multiple of 16 bytes, so k must be a multiple of 8"
    )
    with pytest.raises(ValueError, match=re.escape(message)):
        compiled.write_artifact(tmp_path / "k100", m=256, n=256, k=100)
    assert not (tmp_path / "k100").exists()
    assert (
        compiled.write_artifact(tmp_path / "k104", m=256, n=256, k=104) / "kernel.json"
    ).exists()


def test_an_artifact_is_written_for_sizes_a_launch_can_take_into_a_directory(tmp_path):
    """Sizes travel as i32 kernel parameters, and an artifact is a directory:
    both are refused before anything is written."""
    sys.path.insert(0, str(EXAMPLES))
    from v2_ring_buffer import matmul_v2

    compiled = matmul_v2(prefetch=False).warp_specialize(num_stages=2).compile()
    with pytest.raises(ValueError, match="size m = 2147483648 does not fit in the kernel's i32"):
        compiled.write_artifact(tmp_path / "big", m=2**31, n=256, k=256)
    assert not (tmp_path / "big").exists()
    (tmp_path / "file").write_text("")
    with pytest.raises(ValueError, match="could not write the artifact into .* it is a file"):
        compiled.write_artifact(tmp_path / "file", m=256, n=256, k=256)


def test_tma_row_stride_rule_is_a_compile_error(tmp_path):
    with pytest.raises(ValueError, match="K must be a multiple of 8"):
        compile_matmul(128, 128, 130, MatmulProblem(), MatmulConfig(), tmp_path / "x")


def test_shared_memory_limit_is_refused_with_the_stages_that_fit(tmp_path):
    # 8 stages of 256x64 A and 128x64 B tiles: 384 KB of shared memory.
    config = MatmulConfig(
        block_m=256, block_n=128, num_stages=8, num_consumer_groups=4, producer="warpgroup"
    )
    with pytest.raises(ValueError, match="393216 bytes, .* at most 4 stages fit"):
        compile_matmul(1024, 1024, 1024, MatmulProblem(), config, tmp_path / "big")
    assert not (tmp_path / "big").exists()


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
    # Its ring loops are unrolled: constant stages, no run-time ring position.
    assert "wsc.ring_advance" not in (tmp_path / "ir" / "02-unroll-ring-buffer.mlir").read_text()
    # The launch metadata goes beside the PTX, named on stdout, not printed there.
    metadata = json.loads((tmp_path / "v2.json").read_text())
    assert metadata["name"] == "matmul" and metadata["block"] == [160, 1, 1]
    assert (
        f"launch metadata (block, shared memory, parameters, tensor maps): {tmp_path / 'v2.json'}"
        in proc.stdout
    )
    assert "{" not in proc.stdout


def test_cli_verify_false_turns_off_every_pass_protocol_check(tmp_path):
    # A V2 kernel whose consumer releases each stage before its WGMMAs retire.
    text = (EXAMPLES / "matmul_v2.mlir").read_text()
    source = tmp_path / "no_wait.mlir"
    source.write_text(
        "\n".join(line for line in text.splitlines() if "wgmma_wait_group" not in line)
    )
    out = str(tmp_path / "k.ptx")
    checked = _wsc("compile", str(source), "-o", out)
    assert checked.returncode == 1 and "released before the WGMMA reading it" in checked.stderr
    unchecked = _wsc("compile", str(source), "-o", out, "--verify", "false")
    assert unchecked.returncode == 0, unchecked.stderr
    assert "unroll-ring-buffer" in unchecked.stdout


def test_cli_takes_options_only_as_spelled_and_refuses_others_in_the_subcommands_usage(tmp_path):
    v2 = str(EXAMPLES / "matmul_v2.mlir")
    abbreviated = _wsc("compile", v2, "-o", str(tmp_path / "k.ptx"), "--num-stage", "3")
    assert abbreviated.returncode == 2
    assert "wsc compile: error: unrecognized arguments: --num-stage 3" in abbreviated.stderr
    misplaced = _wsc(
        "compile-matmul",
        *("--m", "64", "--n", "64", "--k", "64"),
        "-o",
        str(tmp_path / "d"),
        *("--num-stages", "3"),
    )
    assert misplaced.returncode == 2 and misplaced.stderr.startswith("usage: wsc compile-matmul")
    assert "unrecognized arguments: --num-stages 3" in misplaced.stderr


def test_cli_leaves_run_time_stages_where_the_specialized_loop_takes_two_k_tiles(tmp_path):
    """wgmma-in-flight with a product of one K tile makes a K loop of two K
    tiles per trip, which --unroll-ring-buffer cannot unroll: wsc compile
    leaves its stages run-time, as it does a persistent kernel's."""
    source = Path(__file__).parents[1] / "passes" / "warp-specialize-products.mlir"
    proc = _wsc(
        "compile",
        str(source),
        "-o",
        str(tmp_path / "k.ptx"),
        *("--num-consumer-groups", "2", "--producer", "warpgroup", "--wgmma-in-flight", "1"),
    )
    assert proc.returncode == 0, proc.stderr
    assert "unroll-ring-buffer" in proc.stdout


def test_cli_compiles_a_specialized_kernel_as_written(tmp_path):
    out = tmp_path / "v3.ptx"
    proc = _wsc("compile", str(EXAMPLES / "matmul_v3.mlir"), "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    assert "verify-pipeline" in proc.stdout and "warp-specialize" not in proc.stdout
    assert out.read_text().startswith("//")


def test_cli_refuses_what_it_cannot_compile_as_asked_before_compiling(tmp_path):
    v2, v3 = str(EXAMPLES / "matmul_v2.mlir"), str(EXAMPLES / "matmul_v3.mlir")
    two = tmp_path / "two.mlir"
    text = (EXAMPLES / "matmul_v2.mlir").read_text()
    two.write_text(text + text.replace("@matmul", "@matmul2"))
    # Exit status 2: the command line asks for what cannot be done; 1: the input cannot be compiled.
    cases = [
        # Options a specialized kernel would not go through.
        (
            2,
            (v3, "-o", str(tmp_path / "v3.ptx"), "--num-stages", "2"),
            "is specialized already (it has wsc.role ops) and is compiled as written, "
            "so --num-stages would not apply",
        ),
        (
            1,
            (str(two), "-o", str(tmp_path / "two.ptx")),
            "takes one kernel (a func.func with wsc.num_threads) per file, found 2: "
            "@matmul, @matmul2",
        ),
        (
            2,
            (str(EXAMPLES / "v3_warp_specialized.py"), "-o", str(tmp_path / "x.ptx")),
            "a Python file; wsc compile takes a kernel in wsc MLIR (.mlir)",
        ),
        (2, (v2, "-o", str(tmp_path)), f"could not write '{tmp_path}': it is a directory"),
        (
            2,
            (v2, "-o", str(tmp_path / "no" / "v2.ptx")),
            f"could not write '{tmp_path / 'no' / 'v2.ptx'}': there is no directory",
        ),
        # A directory that takes no new files: the system's reason, no errno.
        (2, (v2, "-o", "/proc/v2.ptx"), "wsc compile: error: '/proc/v2.ptx': No such file"),
        (2, (v2, "-o", "-"), "-o -: the PTX goes to a file, its launch metadata beside it"),
        (2, (v2, "-o", str(tmp_path / "v2.ptx"), "--dump-ir", v2), "it is a file, not a dir"),
        (2, (v2, "-o", str(tmp_path / "v2.ptx"), "--num-stages", "-1"), "option --num-stages"),
        (
            2,
            (v2, "-o", str(tmp_path / "v2.ptx"), "--producer-registers", "7"),
            "option --producer-registers must be a multiple of 8",
        ),
    ]
    for status, args, message in cases:
        proc = _wsc("compile", *args)
        assert proc.returncode == status and message in proc.stderr, proc.stderr
        assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr
    assert not (tmp_path / "v3.ptx").exists()
    proc = _wsc("compile-matmul", "--m", "64", "--n", "64", "--k", "64", "-o", v2)
    assert proc.returncode == 2
    assert f"could not write '{v2}': it is a file, not a directory" in proc.stderr
    out = str(tmp_path / "mm")
    for args, message in (
        (("--m", "0", "--k", "64"), "--m must be a positive int, got 0"),
        (("--m", str(2**31), "--k", "64"), "--m = 2147483648 does not fit in the kernel's i32"),
        (("--m", "64", "--k", "100"), "A: its rows are 200 bytes (K = 100 x 2 B)"),
        (
            ("--m", "64", "--k", "64", "--dtype", "f8E4M3FN", "--b-layout", "kn"),
            "f8E4M3FN operands take B as [N, K]",
        ),
    ):
        proc = _wsc("compile-matmul", *args, "--n", "64", "-o", out)
        assert proc.returncode == 2 and message in proc.stderr, proc.stderr
    assert not (tmp_path / "mm").exists()
    demo = str(tmp_path / "demo")
    for size, message in (
        ("0", "wsc demo: error: --size must be a positive int, got 0"),
        ("100", "wsc demo: error: --size 100: A: its rows are 200 bytes"),
    ):
        proc = _wsc("demo", f"--size={size}", "-o", demo)
        assert proc.returncode == 2 and message in proc.stderr, proc.stderr
        assert proc.stdout == "", proc.stdout  # refused before the banner
    assert not (tmp_path / "demo").exists()


def test_cli_compiles_what_it_cannot_specialize_as_written(tmp_path):
    """A builder kernel printed to a file compiles as the builder compiles it:
    one with no loop of TMA loads as written, and a specialized one with
    --unroll-ring-buffer where its ring loops asked for unrolling (the PTX
    is the builder's)."""
    from wsc.builder import KernelBuilder, f32

    sys.path.insert(0, str(EXAMPLES))
    from v3_warp_specialized import matmul_v3

    kb = KernelBuilder("relu", grid=[("a_dim0", 64), ("a_dim1", 64)])
    x, y = kb.global_tensor(f32), kb.global_tensor(f32)
    row, col = kb.block_idx.x * 64, kb.block_idx.y * 64
    kb.store_global(y, kb.relu(kb.load_tile(x, [row, col], [64, 64])), [row, col])
    relu = tmp_path / "relu.mlir"
    relu.write_text(str(kb.finish()))
    proc = _wsc("compile", str(relu), "-o", str(tmp_path / "relu.ptx"))
    assert proc.returncode == 0, proc.stderr
    assert "verify-pipeline" in proc.stdout and "warp-specialize" not in proc.stdout
    proc = _wsc("compile", str(relu), "-o", str(tmp_path / "relu.ptx"), "--num-stages", "2")
    assert proc.returncode == 2
    assert "has no loop of TMA loads to specialize and is compiled as written" in proc.stderr

    kernel = matmul_v3()
    assert kernel.unroll
    v3 = tmp_path / "v3.mlir"
    v3.write_text(str(kernel))
    proc = _wsc("compile", str(v3), "-o", str(tmp_path / "v3.ptx"), "--unroll-ring-buffer")
    assert proc.returncode == 0, proc.stderr
    ptx = (tmp_path / "v3.ptx").read_text()
    assert ptx.split("\n.version", 1)[1] == kernel.compile().result.ptx.split("\n.version", 1)[1]
    proc = _wsc(
        "compile",
        str(EXAMPLES / "matmul_v2.mlir"),
        "-o",
        str(tmp_path / "v2.ptx"),
        "--unroll-ring-buffer",
    )
    assert proc.returncode == 2
    assert "--unroll-ring-buffer applies to a kernel compiled as written" in proc.stderr


def test_cli_names_its_version():
    proc = _wsc("--version")
    assert proc.returncode == 0 and proc.stdout == f"wsc {wsc.__version__}\n"


def test_cli_reads_its_input_as_wsc_opt_does(tmp_path):
    """A missing file and a parse error read as wsc-opt's (the second a
    located line of its own); `-` is standard input."""
    proc = _wsc("compile", str(tmp_path / "none.mlir"), "-o", str(tmp_path / "x.ptx"))
    assert proc.returncode == 2
    assert proc.stderr == (
        f"wsc compile: error: could not open input file '{tmp_path / 'none.mlir'}': "
        "No such file or directory\n"
    )
    bad = tmp_path / "bad.mlir"
    bad.write_text("func.func @k(%a: i32 {\n")
    proc = _wsc("compile", str(bad), "-o", str(tmp_path / "x.ptx"))
    assert proc.returncode == 1 and proc.stderr.startswith(f"{bad}:1:23: error: "), proc.stderr
    proc = subprocess.run(
        [sys.executable, "-m", "wsc.tools.cli", "compile", "-", "-o", str(tmp_path / "v2.ptx")],
        input=(EXAMPLES / "matmul_v2.mlir").read_text(),
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    assert "wsc compile: <stdin> ->" in proc.stdout
    assert ".entry" in (tmp_path / "v2.ptx").read_text()


def test_cli_takes_every_warp_specialize_option_and_locates_errors_in_the_file(tmp_path):
    proc = _wsc(
        "compile",
        str(EXAMPLES / "matmul_v2.mlir"),
        "-o",
        str(tmp_path / "v2.ptx"),
        "--num-stages",
        "3",
        "--wgmma-in-flight",
        "1",
        "--release",
        "warp",
    )
    assert proc.returncode == 0, proc.stderr
    proc = _wsc("compile", str(EXAMPLES / "matmul_v2.mlir"), "-o", "x.ptx", "--producer", "bogus")
    assert proc.returncode == 2
    assert "option 'producer' must be one of warp, warpgroup, got 'bogus'" in proc.stderr
    # A pass error names the file, not "<module>".
    bad = tmp_path / "bad.mlir"
    text = (EXAMPLES / "matmul_v2.mlir").read_text()
    bad.write_text(text.replace("{arrival_count = 1 : i32", "{arrival_count = 2 : i32", 1))
    proc = _wsc("compile", str(bad), "-o", str(tmp_path / "bad.ptx"))
    assert proc.returncode == 1
    assert f"{bad}:" in proc.stderr and "<module>" not in proc.stderr, proc.stderr


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
    assert proc.returncode == 2
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
    assert proc.returncode == 2
    assert "error: --config: num_stages must be 1 to 227, got 0" in proc.stderr
    assert "Traceback" not in proc.stderr
