"""wsc.softmax: the checks of a call (on any machine), and on a Hopper GPU the
result against float64 on every element, the output poisoned with NaN first.
The GPU tests need the kernels of GPU_KERNELS in the cache
(test/gpu/matmul_cache.py compiles them)."""

import importlib.util
import math
import sys
from pathlib import Path

import pytest

import wsc
import wsc.softmax  # noqa: F401  (registers torch.ops.wsc.softmax and softmax_out)
from wsc.device import hopper_gpu_visible
from wsc.kernels.softmax.schedule import (
    SCHEDULES,
    SOFTMAX,
    Schedule,
    check_row_length,
    schedule,
    softmax_view,
)

torch = pytest.importorskip("torch")

REPO = Path(__file__).resolve().parents[2]

#: (shape, dtype) of each GPU test: rows of each measured length, f16 and
#: bf16, rows that fill no tile, batched leading dims, a single row.
GPU_CASES = [
    ((999, 1024), "bfloat16"),
    ((4097, 2048), "bfloat16"),
    ((3, 5, 4096), "float16"),
    ((1, 8192), "bfloat16"),
    ((333, 768), "float16"),
]
#: The (row length, wsc dtype) of every kernel GPU_CASES runs.
GPU_KERNELS = sorted(
    {(shape[-1], {"bfloat16": "bf16", "float16": "f16"}[dtype]) for shape, dtype in GPU_CASES}
)

needs_hopper = pytest.mark.skipif(
    not (torch.cuda.is_available() and hopper_gpu_visible()), reason="needs a Hopper GPU"
)


def test_wsc_softmax_is_the_function_however_the_module_was_imported():
    import wsc.softmax  # noqa: F401  (binds the module's name in the package, which keeps the function)

    assert wsc.softmax is sys.modules["wsc.softmax"].softmax


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: wsc.softmax([1.0, 2.0]), "x must be a torch tensor, got list"),
        (
            lambda: wsc.softmax(torch.zeros(4, 1024)),
            "x is torch.float32; the kernel takes bfloat16 and float16",
        ),
        (
            lambda: wsc.softmax(torch.zeros(4, 1024, dtype=torch.bfloat16), dim=0),
            r"reduces the last dim of x \(dim=-1\), got dim=0 for x of shape \[4, 1024\]",
        ),
        (
            lambda: wsc.softmax(torch.zeros(4, 1024, dtype=torch.float16, requires_grad=True)),
            "wsc.softmax has no backward: x requires grad",
        ),
        (
            lambda: wsc.softmax(torch.zeros(1024, 4, dtype=torch.float16).T),
            r"x of strides \[1, 4\] is not contiguous",
        ),
        (
            lambda: wsc.softmax(
                torch.zeros(4, 1024, dtype=torch.float16),
                out=torch.zeros(4, 1024, dtype=torch.bfloat16),
            ),
            r"out must be a contiguous torch.float16 tensor of x's shape \[4, 1024\]",
        ),
        (
            lambda: wsc.softmax(torch.zeros(4, 1000, dtype=torch.float16)),
            "rows of 1000 elements; the kernel takes multiples of 256 from 256 to 8192",
        ),
        (
            lambda: wsc.softmax(torch.zeros(4, 16384, dtype=torch.float16)),
            "rows of 16384 elements",
        ),
        (
            lambda: wsc.softmax(torch.zeros(4, 1024, dtype=torch.float16)),
            "x is on cpu; the kernel runs on CUDA tensors",
        ),
    ],
)
def test_a_call_the_kernel_cannot_take_is_refused_with_the_reason(call, message):
    with pytest.raises((TypeError, ValueError), match=message):
        call()


def test_under_no_grad_a_tensor_that_requires_grad_is_taken():
    x = torch.zeros(4, 1024, dtype=torch.float16, requires_grad=True)
    with torch.no_grad(), pytest.raises(ValueError, match="x is on cpu"):
        wsc.softmax(x)


def meta(*shape, dtype=torch.bfloat16):
    return torch.empty(*shape, dtype=dtype, device="meta")


def test_meta_tensors_get_the_results_metadata():
    y = wsc.softmax(meta(4, 3, 1024))
    assert y.shape == (4, 3, 1024) and y.dtype == torch.bfloat16 and y.device.type == "meta"
    out = meta(8, 512, dtype=torch.float16)
    assert wsc.softmax(meta(8, 512, dtype=torch.float16), out=out) is out


def test_more_rows_than_the_kernel_s_i32_sizes_hold_are_refused_before_any_launch():
    # 2^26 rows of 8192 are 2^32 rows of the kernel's view (a row spans 64 of them).
    with pytest.raises(
        ValueError, match="x has 67108864 rows, which the kernel views as 4294967296"
    ):
        wsc.softmax(meta(2**26, 8192))


def test_the_ops_fake_implementations_check_as_eager_does():
    with pytest.raises(ValueError, match="rows of 1000 elements"):
        torch.ops.wsc.softmax(meta(4, 1000))
    with pytest.raises(ValueError, match="out must be a contiguous torch.bfloat16 tensor"):
        torch.ops.wsc.softmax_out(meta(4, 1024), -1, meta(4, 1024, dtype=torch.float16))
    with pytest.raises(ValueError, match="reduces the last dim of x"):
        torch.ops.wsc.softmax(meta(4, 1024), 0)


def assert_the_ops_pass_opcheck(x):
    """torch.library.opcheck of softmax and softmax_out on x: every check passes."""
    for op, arguments in (
        (torch.ops.wsc.softmax.default, (x, -1)),
        (torch.ops.wsc.softmax_out.default, (x, -1, torch.empty_like(x))),
    ):
        results = torch.library.opcheck(op, arguments)
        assert set(results.values()) == {"SUCCESS"}, results


def test_the_ops_pass_torch_s_custom_op_checks():
    """Schema (what each op mutates), fake implementation, autograd
    registration and tracing, on meta tensors (the GPU test runs the kernel)."""
    x = meta(8, 1024)
    assert_the_ops_pass_opcheck(x)


def test_torch_compile_traces_one_custom_op_call():
    graphs = []

    def record(graph_module, example_inputs):
        graphs.append(graph_module)
        return graph_module.forward

    @torch.compile(backend=record, fullgraph=True)
    def probabilities(x):
        return wsc.softmax(x).float() * 2

    y = probabilities(meta(16, 2048))
    assert y.shape == (16, 2048) and y.dtype == torch.float32
    targets = [str(node.target) for node in graphs[0].graph.nodes]
    assert "wsc.softmax" in targets or "wsc.softmax.default" in targets


def test_torch_compile_traces_rows_of_symbolic_length():
    probabilities = torch.compile(lambda x: wsc.softmax(x), backend="eager", dynamic=True)
    for shape in ((8, 512), (8, 1024), (3, 16, 2048)):
        assert probabilities(meta(*shape)).shape == shape


def test_the_ops_register_on_import_wsc_or_either_module_first():
    import subprocess

    # "import torch, wsc" registers both, as a torch extension's import does.
    for modules in ("wsc.softmax, wsc.matmul", "wsc.matmul, wsc.softmax", "wsc"):
        code = (
            f"import torch, {modules}; "
            "print(torch.ops.wsc.softmax.default, torch.ops.wsc.matmul.default)"
        )
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        assert done.stdout.split() == ["wsc.softmax.default", "wsc.matmul.default"]


def test_every_measured_row_length_keeps_its_schedule_and_others_get_one():
    for row_length, measured in SCHEDULES.items():
        check_row_length(row_length)
        assert schedule(row_length) == measured
    fallback = schedule(768)
    assert fallback.stages >= 1 and fallback.blocks_per_sm >= 1
    assert (768 // 16) % fallback.block_cols == 0 and not fallback.resident
    assert softmax_view(3, 1024) == {"a_dim0": 48, "a_dim1": 64}


def test_a_kernel_built_with_another_schedule_takes_its_fields():
    """softmax_kernel's schedule fields reach the kernel (the benchmark's
    candidate schedules are built this way)."""
    from wsc.kernels.softmax.schedule import softmax_kernel

    kept = str(softmax_kernel(1024))
    other = str(softmax_kernel(1024, num_stages=2, blocks_per_sm=3))
    measured = SCHEDULES[1024]
    assert f"wsc.blocks_per_sm = {measured.blocks_per_sm} : i32" in kept
    assert f"memref<{measured.stages}x64x64xbf16, 3>" in kept
    assert "wsc.blocks_per_sm = 3 : i32" in other and "memref<2x64x64xbf16, 3>" in other


def test_the_benchmark_reads_candidate_schedules_and_refuses_others(monkeypatch):
    monkeypatch.syspath_prepend(str(REPO / "benchmarks"))
    spec = importlib.util.spec_from_file_location(
        "bench_row_softmax", REPO / "benchmarks" / "row_softmax.py"
    )
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    text = "2/3/128/resident,1/4/64/online,2/3/128/online/32,3/3/128/resident/32/release"
    parsed = bench.parse_schedules(text)
    assert parsed == [
        Schedule(2, 3, 128, True),
        Schedule(1, 4, 64, False),
        Schedule(2, 3, 128, False, row_split=32),
        Schedule(3, 3, 128, True, row_split=32, release_on_read=True),
    ]
    assert ",".join(bench.schedule_name(s) for s in parsed) == text
    assert bench.parse_schedules("") == []
    bad_texts = (
        "2/3/128",
        "2/3/128/resident/1",
        "2/3/128/resident,",
        "a/3/128/online",
        "release",
        "2/3/128/online/release",
    )
    for bad in bad_texts:
        with pytest.raises((SystemExit, ValueError)):
            bench.parse_schedules(bad)


def test_the_benchmark_refuses_bad_row_lengths_and_shapes(monkeypatch, capsys):
    monkeypatch.syspath_prepend(str(REPO / "benchmarks"))
    spec = importlib.util.spec_from_file_location(
        "bench_row_softmax", REPO / "benchmarks" / "row_softmax.py"
    )
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    assert bench.row_lengths("1024,8192") == [1024, 8192]
    assert bench.shapes("4096x1024,16x256") == "4096x1024,16x256"
    for argv, message in (
        (["prepare", "--row-lengths", "100"], "the kernel takes multiples of 256"),
        (["prepare", "--row-lengths", "abc"], "'abc' is not a row length"),
        (["run", "--shapes", "4096", "--out", "x"], "'4096' is not RxC"),
    ):
        with pytest.raises(SystemExit) as exit_:
            bench.main(argv)
        assert exit_.value.code == 2 and message in capsys.readouterr().err


@pytest.mark.cuda
@needs_hopper
@pytest.mark.parametrize("shape, dtype", GPU_CASES)
def test_gpu_softmax_matches_float64_on_every_element(shape, dtype):
    generator = torch.Generator(device="cuda").manual_seed(hash(shape) % 2**31)
    x = (torch.randn(shape, device="cuda", generator=generator) * 4).to(getattr(torch, dtype))
    out = torch.full_like(x, math.nan)
    assert wsc.softmax(x, out=out) is out
    fresh = wsc.softmax(x)
    torch.cuda.synchronize()
    reference = torch.softmax(x.double(), dim=-1)
    for result in (out, fresh):
        assert not torch.isnan(result).any()
        error = torch.linalg.norm(result.double() - reference) / torch.linalg.norm(reference)
        # One rounding to the dtype (2^-8 for bf16), and as much again from the kernel.
        assert float(error) <= 2 * 2.0 ** -(8 if dtype == "bfloat16" else 11), float(error)
    assert torch.equal(out, fresh)  # the same kernel on the same input: the same bits


@pytest.mark.cuda
@needs_hopper
def test_gpu_softmax_runs_on_the_current_stream_and_in_a_graph():
    x = torch.randn(999, 1024, device="cuda", dtype=torch.bfloat16)
    expected = wsc.softmax(x)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        on_side = wsc.softmax(x)
    torch.cuda.current_stream().wait_stream(side)
    out = torch.full_like(x, math.nan)
    wsc.softmax(x, out=out)  # a signature is resolved before a capture, as torch asks
    out.fill_(math.nan)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        wsc.softmax(x, out=out)
    graph.replay()
    torch.cuda.synchronize()
    assert torch.equal(on_side, expected) and torch.equal(out, expected)


@pytest.mark.cuda
@needs_hopper
def test_gpu_softmax_under_torch_compile():
    x = (torch.randn(4097, 2048, device="cuda") * 4).to(torch.bfloat16)
    probabilities = torch.compile(lambda x: wsc.softmax(x).float() * 2, fullgraph=True)
    result = probabilities(x)
    reference = torch.softmax(x.double(), dim=-1) * 2
    assert not torch.isnan(result).any()
    error = torch.linalg.norm(result.double() - reference) / torch.linalg.norm(reference)
    assert float(error) <= 2 * 2.0**-8, float(error)


@pytest.mark.cuda
@needs_hopper
def test_gpu_ops_pass_torch_s_custom_op_checks():
    """The kernel as the ops run it: it writes `out` and nothing else, as the
    schemas say, and agrees with the fake implementation."""
    x = torch.randn(999, 1024, device="cuda", dtype=torch.bfloat16)
    assert_the_ops_pass_opcheck(x)
    # Called directly, the op checks as wsc.softmax does.
    with pytest.raises(ValueError, match="rows of 1000 elements"):
        torch.ops.wsc.softmax(torch.zeros(4, 1000, device="cuda", dtype=torch.float16))


#: (rows, wsc dtype, schedule fields): rows spread over two or four warps,
#: which hand each other their max and sum; row counts that fill no stage.
SPLIT_CASES = [
    (999, "bf16", {"num_stages": 2, "blocks_per_sm": 2, "resident": False, "row_split": 32}),
    (1, "bf16", {"num_stages": 2, "blocks_per_sm": 2, "resident": False, "row_split": 32}),
    (333, "bf16", {"num_stages": 2, "blocks_per_sm": 2, "resident": True, "row_split": 64}),
    (4097, "f16", {"num_stages": 2, "blocks_per_sm": 3, "resident": True, "row_split": 32}),
    # Stages handed back once in registers, the result out through a tile of its own.
    (
        4097,
        "bf16",
        {
            "num_stages": 2,
            "blocks_per_sm": 2,
            "resident": True,
            "row_split": 64,
            "release_on_read": True,
        },
    ),
    (
        333,
        "f16",
        {
            "num_stages": 2,
            "blocks_per_sm": 3,
            "resident": True,
            "row_split": 32,
            "release_on_read": True,
        },
    ),
]
SPLIT_ROW_LENGTHS = {"bf16": 8192, "f16": 2048}


@pytest.mark.cuda
@needs_hopper
@pytest.mark.parametrize("rows, dtype, config", SPLIT_CASES)
def test_gpu_rows_over_several_warps_match_float64_on_every_element(rows, dtype, config):
    from wsc.runtime import BoundLaunch, loaded_kernel

    row_length = SPLIT_ROW_LENGTHS[dtype]
    fixed = {"row_length": row_length, "dtype": dtype}
    directory = SOFTMAX.artifact(config, softmax_view(1, row_length, config["row_split"]), fixed)
    sizes = softmax_view(rows, row_length, config["row_split"])
    torch_dtype = {"bf16": torch.bfloat16, "f16": torch.float16}[dtype]
    generator = torch.Generator(device="cuda").manual_seed(rows)
    x = (torch.randn(rows, row_length, device="cuda", generator=generator) * 4).to(torch_dtype)
    out = torch.full_like(x, math.nan)
    kernel = loaded_kernel(directory, x.device.index or 0).resized(**sizes)
    launch = BoundLaunch(kernel.prepare(a=x.view(*sizes.values()), b=out.view(*sizes.values())))
    launch(torch.cuda.current_stream().cuda_stream, x.data_ptr(), out.data_ptr())
    torch.cuda.synchronize()
    reference = torch.softmax(x.double(), dim=-1)
    assert not torch.isnan(out).any()
    error = torch.linalg.norm(out.double() - reference) / torch.linalg.norm(reference)
    assert float(error) <= 2 * 2.0 ** -(8 if dtype == "bf16" else 11), float(error)


@pytest.mark.cuda
@needs_hopper
def test_gpu_softmax_of_no_rows_launches_nothing():
    x = torch.empty(0, 1024, device="cuda", dtype=torch.float16)
    assert wsc.softmax(x).shape == (0, 1024)


def test_the_gpu_cache_script_compiles_every_kernel_the_gpu_cases_run():
    path = Path(__file__).resolve().parents[1] / "gpu" / "matmul_cache.py"
    spec = importlib.util.spec_from_file_location("matmul_cache", path)
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    assert set(GPU_KERNELS) <= set(script.SOFTMAX_KERNELS)
    for _, dtype, config in SPLIT_CASES:
        assert (SPLIT_ROW_LENGTHS[dtype], dtype, config) in script.SOFTMAX_SPLIT_KERNELS
