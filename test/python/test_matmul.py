"""wsc.matmul: argument checks and B-layout detection, config choice from the
cache, the torch custom op and its fake implementation (CPU); and on a Hopper
GPU, agreement with torch.matmul (tests marked `cuda`; where MLIR is missing,
test/gpu/matmul_cache.py compiles what they need beforehand)."""

import importlib
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

import wsc
from wsc.cache import Cache
from wsc.device import hopper_gpu_visible, run_artifacts
from wsc.matmul import (
    DEFAULT_CONFIGS,
    SPACES,
    MatmulPlan,
    NoCorrectKernel,
    _fixed,
    choose_config,
    compiled_kernel_dir,
    config_key,
    plan,
    shape_class,
    tuning_sizes,
)

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "gpu"))
from matmul_cache import (  # noqa: E402
    CLUSTER_ALONG_N_PROBLEM,
    CLUSTERS_ALONG_N,
    HALF_SPACES,
    cluster_along_n,
    cluster_along_n_plan,
    space_plan,
)

torch = pytest.importorskip("torch")


def meta(*shape, dtype=torch.float16):
    return torch.empty(*shape, dtype=dtype, device="meta")


@pytest.fixture
def cache(tmp_path):
    return Cache(root=tmp_path / "cache")


def test_import_wsc_stays_light():
    code = (
        "import sys, wsc; heavy = [m for m in ('torch', 'mlir', 'numpy') if m in sys.modules];"
        "print(heavy)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_wsc_matmul_is_the_function_however_the_module_was_imported():
    code = (
        "import wsc.matmul, wsc; from wsc.matmul import plan; import types;"
        "print(isinstance(wsc.matmul, types.FunctionType), wsc.matmul.__name__)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["True", "matmul"]


def test_the_search_failure_is_wsc_no_correct_kernel():
    # wsc.matmul is the function, so the module's exception is exported by the package.
    assert wsc.NoCorrectKernel is sys.modules["wsc.matmul"].NoCorrectKernel
    assert issubclass(wsc.NoCorrectKernel, RuntimeError)


# B's layout -------------------------------------------------------------------------------


def test_a_contiguous_b_is_read_as_k_by_n():
    assert plan(meta(1000, 520), meta(520, 1336)) == MatmulPlan(
        1000, 1336, 520, "f16", "f16", "kn", tma_store=True
    )


def test_the_transpose_of_a_weight_is_read_as_n_by_k():
    w = meta(1333, 520, dtype=torch.bfloat16)
    assert plan(meta(1000, 520, dtype=torch.bfloat16), w.T) == MatmulPlan(
        1000, 1333, 520, "bf16", "bf16", "nk", coalesced_store=True
    )


def test_c_goes_out_by_tma_where_its_rows_allow():
    w = meta(1336, 520)
    p = plan(meta(1000, 520), w.T)
    assert p.tma_store and not p.coalesced_store and p.space == "nk-tma"
    # Rows of 1333 halves are staged too, and copied out by coalesced stores.
    odd = plan(meta(1000, 520), meta(1333, 520).T)
    assert odd.coalesced_store and not odd.tma_store and odd.space == "nk-coalesced"
    # So do "kn" problems; fp32 results store from registers.
    assert plan(meta(1000, 520), meta(520, 1336)).space == "kn-tma"
    kn_odd_rows = meta(1000, 1340)[:, :1336]
    assert plan(meta(1000, 520), meta(520, 1336), out=kn_odd_rows).space == "kn-coalesced"
    assert plan(meta(1000, 520), w.T, out_dtype=torch.float32).space == "nk"
    assert plan(meta(1000, 520), meta(520, 1336), out_dtype=torch.float32).space == "kn"
    # An output's own row stride decides, not N.
    padded = meta(1000, 1344)[:, :1336]
    assert plan(meta(1000, 520), w.T, out=padded).space == "nk-tma"
    odd_rows = meta(1000, 1340)[:, :1336]
    assert plan(meta(1000, 520), w.T, out=odd_rows).space == "nk-coalesced"


def test_small_m_is_tuned_over_the_swapped_tiles_in_both_layouts():
    w = meta(1336, 520)
    assert plan(meta(64, 520), w.T).space == "nk-small-m"
    assert plan(meta(16, 520), meta(520, 1336)).space == "kn-small-m"
    assert plan(meta(65, 520), meta(520, 1336)).space == "kn-tma"


def test_padded_rows_are_fine_where_tma_can_read_them():
    wide_a = meta(64, 136)[:, :128]
    wide_w = meta(96, 136)[:, :128]
    assert plan(wide_a, wide_w.T).b_layout == "nk"


def test_numpy_arrays_and_their_transposes():
    a = np.zeros((64, 32), np.float16)
    w = np.zeros((48, 32), np.float16)
    assert plan(a, w.T).b_layout == "nk"
    assert plan(a, np.zeros((32, 48), np.float16)).b_layout == "kn"


def test_empty_products_need_no_layout():
    assert plan(meta(5, 0), meta(0, 7)) == MatmulPlan(
        5, 7, 0, "f16", "f16", "kn", coalesced_store=True
    )
    assert plan(meta(0, 520), meta(1333, 520).T).m == 0


def test_numpy_has_no_bfloat16_result_of_its_own():
    a = np.zeros((64, 64), np.float16)
    with pytest.raises(TypeError, match="numpy has no bfloat16 for the result: pass out="):
        wsc.matmul(a, a, out_dtype="bf16")


def test_out_dtype_and_out_decide_the_result_dtype():
    assert plan(meta(64, 64), meta(64, 64), out_dtype=torch.float32).out_dtype == "f32"
    assert (
        plan(meta(64, 64), meta(64, 64), out=meta(64, 64, dtype=torch.bfloat16)).out_dtype == "bf16"
    )


# Arguments it refuses, each naming the argument and the expected form ---------------------------


@pytest.mark.parametrize(
    "a, b, out, out_dtype, error, message",
    [
        (
            meta(64, 64, dtype=torch.float32),
            meta(64, 64),
            None,
            None,
            TypeError,
            "a must be float16 or bfloat16, got torch.float32",
        ),
        (
            meta(64, 64),
            meta(64, 64, dtype=torch.bfloat16),
            None,
            None,
            TypeError,
            "a and b must have the same dtype, got torch.float16 and torch.bfloat16",
        ),
        (
            meta(2, 64, 64),
            meta(64, 64),
            None,
            None,
            ValueError,
            r"a must be a 2-D matrix \(\[M, K\]\), got shape \[2, 64, 64\]",
        ),
        (
            meta(64, 64),
            meta(80, 64),
            None,
            None,
            ValueError,
            r"b must be \[K, N\] with K = 64 \(a is \[64, 64\]\), got b of shape \[80, 64\]",
        ),
        (
            meta(64, 130),
            meta(130, 64),
            None,
            None,
            ValueError,
            r"a: its rows are 260 bytes \(K = 130 x 2 B\); .* so K must be a multiple of 8",
        ),
        (
            meta(64, 64),
            meta(64, 1333),
            None,
            None,
            ValueError,
            r"b: its rows are 2666 bytes \(N = 1333 x 2 B\); .* so N must be a multiple of 8",
        ),
        (
            meta(64, 128)[:, ::2],
            meta(64, 64),
            None,
            None,
            ValueError,
            r"a must be row-major \[M, K\]",
        ),
        (
            meta(64, 64),
            meta(64, 128)[:, ::2],
            None,
            None,
            ValueError,
            r"b must be a row-major \[K, N\] tensor or the transpose of a row-major \[N, K\]",
        ),
        (
            meta(64, 64),
            meta(64, 64),
            meta(64, 32),
            None,
            ValueError,
            r"out must be \[M, N\] = \[64, 64\], got \[64, 32\]",
        ),
        (
            meta(64, 64),
            meta(64, 64),
            meta(64, 64, dtype=torch.int32),
            None,
            TypeError,
            "out must be float32, float16 or bfloat16",
        ),
        (
            meta(64, 64),
            meta(64, 64),
            meta(64, 64),
            torch.float32,
            TypeError,
            "out is torch.float16 but out_dtype says torch.float32",
        ),
        (
            meta(64, 64),
            meta(64, 64),
            None,
            torch.int8,
            TypeError,
            "out_dtype must be float32, float16 or bfloat16, got torch.int8",
        ),
        (
            meta(64, 64),
            np.zeros((64, 64), np.float16),
            None,
            None,
            TypeError,
            "a and b must both be torch tensors or both numpy arrays",
        ),
        (
            [[1.0]],
            meta(64, 64),
            None,
            None,
            TypeError,
            "a must be a torch tensor or a numpy array, got list",
        ),
    ],
)
def test_bad_arguments(a, b, out, out_dtype, error, message):
    with pytest.raises(error, match=message):
        plan(a, b, out, out_dtype)


def test_cpu_tensors_are_refused_with_the_way_out():
    with pytest.raises(
        ValueError,
        match=r"must be CUDA tensors, got tensors on cpu; move them "
        r"with .cuda\(\)",
    ):
        wsc.matmul(
            torch.zeros(64, 64, dtype=torch.float16), torch.zeros(64, 64, dtype=torch.float16)
        )


def test_every_torch_op_refuses_cpu_tensors_with_the_way_out():
    importlib.import_module("wsc.softmax")  # registers torch.ops.wsc.softmax
    h = torch.zeros(64, 64, dtype=torch.float16)
    scale = torch.ones((), dtype=torch.float32)
    calls = {
        "matmul": lambda: torch.ops.wsc.matmul(h, h),
        "matmul_out": lambda: torch.ops.wsc.matmul_out(h, h, h),
        "matmul_epilogue": lambda: torch.ops.wsc.matmul_epilogue(h, h, None, "relu", None),
        "matmul_epilogue_out": lambda: torch.ops.wsc.matmul_epilogue_out(
            h, h, None, "relu", None, h
        ),
        "scaled_mm": lambda: torch.ops.wsc.scaled_mm(h, h, scale, scale),
        "scaled_mm_out": lambda: torch.ops.wsc.scaled_mm_out(h, h, scale, scale, h),
        "bmm": lambda: torch.ops.wsc.bmm(h[None], h[None]),
        "bmm_out": lambda: torch.ops.wsc.bmm_out(h[None], h[None], h[None]),
        "softmax": lambda: torch.ops.wsc.softmax(h),
        "softmax_out": lambda: torch.ops.wsc.softmax_out(h, -1, h),
    }
    defined = {n for n in torch._C._dispatch_get_all_op_names() if n.startswith("wsc::")}
    assert {f"wsc::{name}" for name in calls} == defined, "a wsc op without a case here"
    for name, call in calls.items():
        with pytest.raises(
            ValueError,
            match=rf"torch.ops.wsc.{name}: takes CUDA tensors, got tensors on cpu; move them "
            r"with .cuda\(\)",
        ):
            call()


def test_a_machine_without_a_gpu_gets_one_short_error_with_the_way_out():
    if hopper_gpu_visible():
        pytest.skip("this machine has a GPU")
    code = "import numpy as np, wsc\na = np.ones((64, 64), np.float16)\nwsc.matmul(a, a)\n"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 1
    lines = proc.stderr.strip().splitlines()
    assert len(lines) <= 6, proc.stderr
    assert "During handling" not in proc.stderr
    assert "wsc.matmul needs an NVIDIA Hopper GPU and its CUDA driver" in lines[-1]
    assert "`wsc compile-matmul`" in lines[-1]


# The torch custom op, its fake implementation and torch.compile -----------------------------


def test_meta_tensors_get_the_results_metadata():
    c = wsc.matmul(meta(1000, 520), meta(1333, 520).T, out_dtype=torch.float32)
    assert c.shape == (1000, 1333) and c.dtype == torch.float32 and c.device.type == "meta"
    out = meta(1000, 1336, dtype=torch.bfloat16)
    assert (
        wsc.matmul(
            meta(1000, 520, dtype=torch.bfloat16), meta(520, 1336, dtype=torch.bfloat16), out=out
        )
        is out
    )


def test_sizes_beyond_the_kernels_i32_sizes_are_refused_before_any_launch():
    with pytest.raises(
        ValueError, match=r"wsc.matmul: M = 2147483648 does not fit in the kernels' i32"
    ):
        wsc.matmul(meta(2**31, 64), meta(64, 64))
    with pytest.raises(ValueError, match=r"wsc.bmm: B = 2147483648 does not fit"):
        wsc.bmm(meta(2**31, 1, 64), meta(2**31, 64, 64))


def test_the_fake_implementation_checks_as_eager_does():
    with pytest.raises(ValueError, match="b must be"):
        torch.ops.wsc.matmul(meta(64, 64), meta(80, 64), None)
    with pytest.raises(ValueError, match="out must be"):
        torch.ops.wsc.matmul_out(meta(64, 64), meta(64, 64), meta(32, 64))


def test_the_ops_pass_torch_s_custom_op_checks():
    """Schema (what each op mutates), fake implementation, autograd
    registration and tracing, on meta tensors."""
    a, w = meta(1000, 520), meta(1336, 520)
    batch_a, batch_b = meta(3, 200, 520), meta(3, 520, 1336)
    for op, arguments in (
        (torch.ops.wsc.matmul.default, (a, w.T, torch.float32)),
        (torch.ops.wsc.matmul_out.default, (a, w.T, meta(1000, 1336))),
        (torch.ops.wsc.bmm.default, (batch_a, batch_b)),
        (torch.ops.wsc.bmm_out.default, (batch_a, batch_b, meta(3, 200, 1336))),
    ):
        results = torch.library.opcheck(op, arguments)
        assert set(results.values()) == {"SUCCESS"}, results


def test_torch_compile_traces_one_custom_op_call():
    graphs = []

    def record(graph_module, example_inputs):
        graphs.append(graph_module)
        return graph_module.forward

    @torch.compile(backend=record, fullgraph=True)
    def project(x, w):
        return wsc.matmul(x, w.T).float().relu()

    y = project(meta(1000, 520, dtype=torch.bfloat16), meta(1333, 520, dtype=torch.bfloat16))
    assert y.shape == (1000, 1333) and y.dtype == torch.float32
    targets = [str(node.target) for node in graphs[0].graph.nodes]
    assert "wsc.matmul.default" in targets or "wsc.matmul" in targets


def test_fake_tensor_tracing_records_the_op():
    from torch.fx.experimental.proxy_tensor import make_fx

    traced = make_fx(
        lambda x, y: torch.ops.wsc.matmul(x, y, torch.float32) * 2, tracing_mode="fake"
    )(torch.randn(64, 32).half(), torch.randn(32, 48).half())
    calls = [node for node in traced.graph.nodes if node.op == "call_function"]
    assert str(calls[0].target) == "wsc.matmul.default"
    assert calls[0].meta["val"].shape == (64, 48) and calls[0].meta["val"].dtype == torch.float32


# Choosing the config -------------------------------------------------------------------------


def test_shape_classes_round_up_to_powers_of_two():
    assert shape_class(1000, 1333, 520) == [1024, 2048, 1024]
    assert shape_class(8192, 8192, 8192) == [8192, 8192, 8192]
    assert shape_class(65, 8193, 64) == [128, 16384, 64]


def test_small_m_classes_are_finer():
    """At M <= 64: M by 16, N and K by quarter octaves, so that 33 x 5000 x
    7000 does not take the config 64 x 8192 x 8192 was tuned for."""
    assert shape_class(33, 5000, 7000) == [48, 5120, 7168]
    assert shape_class(64, 8192, 8192) == [64, 8192, 8192]
    assert shape_class(16, 4097, 4096) == [16, 5120, 4096]
    assert shape_class(1, 1, 3) == [16, 1, 3]


P = MatmulPlan(1000, 1333, 520, "f16", "f16", "nk")


def test_a_cached_config_is_used_without_tuning(cache):
    best = SPACES["nk"].configs()[5]
    assert choose_config(P, "GPU", cache, tune=lambda p: (best, None, False)) == best
    # Same class, other shape: the choice is reused, nothing is tuned.
    same_class = MatmulPlan(900, 1100, 600, "f16", "f16", "nk")
    assert choose_config(same_class, "GPU", cache, tune=pytest.fail) == best


def test_tuning_reads_whole_16_byte_rows_where_the_call_pads_them():
    """A "kn" B of N = 4097 reaches TMA only with rows padded to 4104: the
    tuner, whose operands are contiguous, times that width (and K's rows)."""
    from wsc.matmul import tuning_sizes

    padded = MatmulPlan(57, 4097, 4100, "f16", "f16", "kn", coalesced_store=True)
    assert tuning_sizes(padded) == {"m": 57, "n": 4104, "k": 4104}
    # "nk" reads N-long rows of nothing: its N stays.
    assert tuning_sizes(MatmulPlan(57, 4097, 4104, "f16", "f16", "nk")) == {
        "m": 57,
        "n": 4097,
        "k": 4104,
    }


def test_each_class_dtype_layout_and_gpu_has_its_own_choice(cache):
    choose_config(P, "GPU", cache, tune=lambda p: (SPACES["nk"].configs()[5], None, False))
    tuned = []
    for other, device in (
        (MatmulPlan(1000, 1333, 520, "bf16", "bf16", "nk"), "GPU"),
        (MatmulPlan(1000, 1336, 520, "f16", "f16", "kn"), "GPU"),
        (MatmulPlan(1000, 1333, 520, "f16", "f32", "nk"), "GPU"),
        (MatmulPlan(4000, 1333, 520, "f16", "f16", "nk"), "GPU"),
        (P, "Other GPU"),
    ):
        choose_config(
            other,
            device,
            cache,
            tune=lambda p: (tuned.append(p) or DEFAULT_CONFIGS[p.b_layout], None, False),
        )
    assert len(tuned) == 5


def test_threads_that_meet_a_class_at_once_search_it_once(cache):
    searches, chosen = [], []
    start = threading.Barrier(4)
    best = SPACES["nk"].configs()[3]

    def slow_search(p):
        searches.append(p)
        time.sleep(0.3)  # the others arrive while this one searches
        return best, None, False

    def call():
        start.wait()
        chosen.append(choose_config(P, "GPU", cache, tune=slow_search))

    threads = [threading.Thread(target=call) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(searches) == 1 and chosen == [best] * 4


def test_processes_that_meet_a_class_at_once_search_it_once(cache, tmp_path):
    """Two processes on one cache (two ranks of a job): one searches, the other
    waits for its choice."""
    log = tmp_path / "searches"
    code = """if True:
        import sys, time
        from wsc.cache import Cache
        from wsc.matmul import SPACES, MatmulPlan, choose_config

        best = SPACES["nk"].configs()[3]

        def search(p):
            with open(sys.argv[2], "a") as log:
                log.write("search\\n")
            time.sleep(1.0)  # the other process arrives while this one searches
            return best, None, False

        p = MatmulPlan(1000, 1333, 520, "f16", "f16", "nk")
        print(choose_config(p, "GPU", Cache(sys.argv[1]), tune=search) == best)
    """
    ranks = [
        subprocess.Popen(
            [sys.executable, "-c", code, str(cache.root), str(log)],
            stdout=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    assert [rank.communicate(timeout=120)[0].strip() for rank in ranks] == ["True", "True"]
    assert log.read_text().splitlines() == ["search"]


def test_a_choice_outside_the_current_space_is_tuned_again(cache):
    cache.put(config_key(P, "GPU"), {"config": {"num_stages": 99}})
    best = SPACES["nk"].configs()[1]
    assert choose_config(P, "GPU", cache, tune=lambda p: (best, None, False)) == best
    assert cache.get(config_key(P, "GPU")) == {"config": best}


def test_a_search_that_finds_no_correct_config_is_an_error_cached_with_its_reason(cache):
    with pytest.raises(
        NoCorrectKernel, match="no config computes 1000x1333x520 .* Why: every candidate faulted"
    ):
        choose_config(P, "GPU", cache, tune=lambda p: (None, "every candidate faulted", True))
    assert cache.get(config_key(P, "GPU")) == {"config": None, "failure": "every candidate faulted"}
    with pytest.raises(NoCorrectKernel, match="every candidate faulted"):
        choose_config(P, "GPU", cache, tune=pytest.fail)  # not searched again


def test_a_search_that_could_not_run_falls_back_once_per_process(cache, monkeypatch):
    monkeypatch.setattr(sys.modules["wsc.matmul"], "_untuned", set())
    with pytest.warns(RuntimeWarning, match=r"could not run \(the worker died\), so the default"):
        assert (
            choose_config(P, "GPU", cache, tune=lambda p: (None, "the worker died", False))
            == DEFAULT_CONFIGS["nk"]
        )
    assert cache.get(config_key(P, "GPU")) is None  # the next process searches again
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # not said again, and not searched again here
        assert choose_config(P, "GPU", cache, tune=pytest.fail) == DEFAULT_CONFIGS["nk"]


def test_the_warning_names_the_caller_s_line(cache, monkeypatch):
    monkeypatch.setattr(sys.modules["wsc.matmul"], "_untuned", set())
    with pytest.warns(RuntimeWarning) as record:
        choose_config(P, "GPU", cache, tune=lambda p: (None, None, False))
    assert record[0].filename == __file__
    assert "found no Hopper GPU to time candidates on" in str(record[0].message)


def test_autograd_records_the_product_and_its_gradients():
    a = meta(64, 32).requires_grad_()
    w = meta(48, 32).requires_grad_()
    result = wsc.matmul(a, w.T)
    assert result.shape == (64, 48) and result.requires_grad
    result.sum().backward()
    assert a.grad.shape == (64, 32) and w.grad.shape == (48, 32)


def test_a_split_kernel_has_a_workspace_per_stream_and_per_captured_graph(monkeypatch):
    """_BoundSplitMatmul on CPU tensors, with streams and captures played by
    numbers: one set of workspaces per stream, shared by its launches; a
    graph being captured gets its own, which is never used outside it."""
    from wsc.runtime import driver

    api = sys.modules["wsc.matmul"]
    stream, captures, sets = [7], {}, []
    monkeypatch.setattr(api, "_current_stream", lambda ordinal: stream[0])
    monkeypatch.setattr(driver, "capture_id", lambda handle: captures.get(handle))

    def allocate(specs, ordinal):
        sets.append({name: torch.zeros(shape, dtype=dtype) for name, shape, dtype, _ in specs})
        return sets[-1]

    monkeypatch.setattr(api, "_allocate_workspaces", allocate)
    launches = []
    specs = [("d", (64,), torch.float32, False), ("e", (4,), torch.int32, True)]
    bound = api._BoundSplitMatmul(
        lambda handle, *pointers: launches.append((handle, pointers[3:])),
        (8, 8),
        torch.float32,
        0,
        specs,
    )

    def call():
        a, b = torch.empty(8, 16, dtype=torch.float16), torch.empty(16, 8, dtype=torch.float16)
        bound(a, b, None)
        return launches[-1][1]

    def pointers(index):
        return tuple(tensor.data_ptr() for tensor in sets[index].values())

    assert call() == call() == pointers(0)  # one stream's launches share a set
    stream[0] = 9
    assert call() == pointers(1) != pointers(0)  # another stream's may run at once
    stream[0], captures[7] = 7, 100
    assert call() == call() == pointers(0)  # a graph captured where the stream ran shares it
    stream[0], captures[11] = 11, 200
    assert call() == call() == pointers(2) and 11 not in bound.workspaces
    captures[11] = 201  # the stream's next capture: a set of the new graph's own
    assert call() == pointers(3) and len(sets) == 4
    del captures[11]  # capture over: eager launches never use a graph's set
    assert call() == pointers(4) and bound.workspaces[11] == pointers(4)
    assert set(bound._held) == {7, 9, 11}


def test_out_does_not_support_autograd_as_in_torch():
    a = meta(64, 32).requires_grad_()
    with pytest.raises(RuntimeError, match="out=... does not support automatic differentiation"):
        wsc.matmul(a, meta(48, 32).T, out=meta(64, 48))


@pytest.mark.parametrize("name", HALF_SPACES)
def test_every_config_of_the_space_compiles(cache, name):
    space = SPACES[name]
    problem = space_plan(name, "bf16", "bf16")
    result = space.tune(
        {**tuning_sizes(problem), "m": 1000},
        fixed=_fixed(problem),
        cache=cache,
        progress=False,
    )
    assert len(result.candidates) == len(space.configs())
    assert [c.error for c in result.candidates] == [None] * len(result.candidates)
    assert DEFAULT_CONFIGS[name] in space.configs()


def test_no_autotuning_uses_the_default(cache, monkeypatch):
    monkeypatch.setenv("WSC_AUTOTUNE", "0")
    assert choose_config(P, "GPU", cache, tune=pytest.fail) == DEFAULT_CONFIGS["nk"]


def test_one_compile_serves_every_shape(cache):
    config = DEFAULT_CONFIGS["nk"]  # 128x256 tiles
    directory = compiled_kernel_dir(P, config, cache)
    stamp = (directory / "kernel.json").stat().st_mtime_ns
    other = MatmulPlan(4096, 4096, 4096, "f16", "f16", "nk")
    assert compiled_kernel_dir(other, config, cache) == directory
    assert (directory / "kernel.json").stat().st_mtime_ns == stamp

    from wsc.runtime import load_artifact

    resized = load_artifact(directory).resized(m=4096, n=4096, k=4096)
    assert resized.grid == (32, 16, 1)
    assert resized.tensors["b"].shape == (4096, 4096) and resized.sizes["k"] == 4096


@pytest.mark.parametrize("space", ["nk", "kn"])
def test_every_layout_s_artifact_records_its_own_layout(cache, space):
    """At M = N = K the shapes of B cannot tell [N, K] from [K, N]: the kernel can."""
    from wsc.runtime import load_artifact

    square = MatmulPlan(256, 256, 256, "f16", "f32", space)
    artifact = load_artifact(compiled_kernel_dir(square, DEFAULT_CONFIGS[space], cache))
    assert artifact.tensors["b"].dims == (("n", "k") if space == "nk" else ("k", "n"))
    assert artifact.resized(m=64, n=512, k=128).tensors["b"].shape == (
        (512, 128) if space == "nk" else (128, 512)
    )


def test_a_cluster_kernel_is_resized_to_whole_clusters(cache):
    from wsc.runtime import load_artifact

    config = next(
        c for c in SPACES["nk-tma"].configs() if c["cluster_m"] == 2 and not c["persistent"]
    )
    tma = MatmulPlan(1024, 1336, 520, "f16", "f16", "nk", tma_store=True)
    artifact = load_artifact(compiled_kernel_dir(tma, config, cache))
    assert artifact.cluster == 2 and artifact.grid == (8, 6, 1)
    # 1100 rows are 9 tile rows of 128: the last cluster's second block has none.
    assert artifact.resized(m=1100, n=1336, k=520).grid == (10, 6, 1)


# On a Hopper GPU --------------------------------------------------------------------------------


@pytest.fixture
def gpu(monkeypatch):
    """A Hopper GPU. The tests use the cache of $WSC_CACHE_DIR (or ~/.cache/wsc):
    on a machine without MLIR, fill it first with test/gpu/matmul_cache.py.
    Each test starts with no call resolved, as a fresh process would: a
    signature resolved by another test (under its own WSC_AUTOTUNE or config)
    would otherwise launch without asking the cache."""
    if not hopper_gpu_visible() or not torch.cuda.is_available():
        pytest.skip("needs a Hopper GPU and CUDA torch")
    monkeypatch.setattr(sys.modules["wsc.matmul"], "_bound", {})
    return torch.device("cuda")


def relative_error(got, want) -> float:
    got, want = got.double(), want.double()
    return float(torch.linalg.norm(got - want) / torch.linalg.norm(want))


#: Relative Frobenius error allowed against the exact (float64) product, by
#: output dtype. A bf16 output cannot do better than its own rounding: the
#: exact product rounded to bf16 is already ~1.7e-3 away on random data, and
#: two bf16 results (ours and torch's) differ by up to twice that, so bf16 is
#: held to its unit roundoff, 2^-8, against float64.
TOLERANCE = {torch.float16: 1e-3, torch.float32: 1e-3, torch.bfloat16: 2.0**-8}


def assert_exact_within_tolerance(got, a, b):
    """`got` is a @ b up to the rounding of its dtype (checked against float64)."""
    assert not torch.isnan(got).any()
    assert relative_error(got, a.double() @ b.double()) < TOLERANCE[got.dtype]


SHAPES = [
    (128, 128, 64),
    (1000, 1333, 520),
    (511, 264, 1000),
    (2048, 2048, 2048),
    (8191, 8193, 8200),
    (64, 8, 8),
]


@pytest.mark.cuda
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("m, n, k", SHAPES)
def test_matches_torch_matmul(gpu, monkeypatch, dtype, m, n, k):
    monkeypatch.setenv("WSC_AUTOTUNE", "0")  # correctness of the default; tuning is tested below
    dtype = getattr(torch, dtype)
    generator = torch.Generator(device=gpu).manual_seed(m * n + k)
    a = torch.randn(m, k, device=gpu, generator=generator).to(dtype)
    w = torch.randn(n, k, device=gpu, generator=generator).to(dtype)
    result = wsc.matmul(a, w.T)
    assert_exact_within_tolerance(result, a, w.T)
    # As close to the exact product as torch.matmul (cuBLAS) is, up to rounding.
    reference = torch.matmul(a, w.T)
    assert relative_error(result, a.double() @ w.T.double()) < (
        relative_error(reference, a.double() @ w.T.double()) + TOLERANCE[torch.float16]
    )
    if n % 8 == 0:
        b = w.T.contiguous()
        assert_exact_within_tolerance(wsc.matmul(a, b), a, b)
    out = torch.full((m, n), float("nan"), device=gpu)
    wsc.matmul(a, w.T, out=out)
    assert_exact_within_tolerance(out, a, w.T)


@pytest.mark.cuda
def test_a_persistent_config_walks_several_tiles_per_block(gpu):
    """256 tiles of 128x256 on at most 132 blocks: the blocks walk two tiles
    each (one fewer on some), the ring carried from tile to tile."""
    from wsc.device import hopper_name
    from wsc.matmul import _cache

    generator = torch.Generator(device=gpu).manual_seed(7)
    a = torch.randn(2048, 512, device=gpu, generator=generator).half()
    w = torch.randn(4096, 512, device=gpu, generator=generator).half()
    out = torch.full((2048, 4096), float("nan"), device=gpu)
    persistent = next(c for c in SPACES["nk"].configs() if c["persistent"] and c["block_n"] == 256)
    _cache().put(
        config_key(plan(a, w.T, out=out), hopper_name(0, "wsc.matmul")), {"config": persistent}
    )
    wsc.matmul(a, w.T, out=out)
    assert_exact_within_tolerance(out, a, w.T)


@pytest.mark.cuda
def test_numpy_in_numpy_out(gpu, monkeypatch):
    monkeypatch.setenv("WSC_AUTOTUNE", "0")
    rng = np.random.default_rng(0)
    a = rng.standard_normal((300, 200)).astype(np.float16)
    w = rng.standard_normal((136, 200)).astype(np.float16)
    c = wsc.matmul(a, w.T, out_dtype=np.float32)
    assert isinstance(c, np.ndarray) and c.dtype == np.float32 and c.shape == (300, 136)
    want = a.astype(np.float64) @ w.T.astype(np.float64)
    assert np.linalg.norm(c - want) / np.linalg.norm(want) < 1e-3


@pytest.mark.cuda
def test_under_torch_compile(gpu, monkeypatch):
    monkeypatch.setenv("WSC_AUTOTUNE", "0")
    a = torch.randn(1000, 520, device=gpu).half()
    w = torch.randn(1333, 520, device=gpu).half()
    wsc.matmul(a, w.T)  # an eager call first: its signature's fast path must not be traced
    project = torch.compile(lambda x, y: wsc.matmul(x, y.T).float().relu(), fullgraph=True)
    assert relative_error(project(a, w), (a.float() @ w.T.float()).relu()) < 1e-3


@pytest.mark.cuda
def test_picks_a_config_from_the_space_and_remembers_it(gpu):
    a = torch.randn(1000, 520, device=gpu).half()
    w = torch.randn(1333, 520, device=gpu).half()
    assert relative_error(wsc.matmul(a, w.T), torch.matmul(a, w.T)) < 1e-3
    from wsc.device import hopper_name
    from wsc.matmul import _cache

    # Rows of 1333 halves: tuned over the coalesced-store configs.
    chosen = choose_config(plan(a, w.T), hopper_name(0, "wsc.matmul"), _cache(), tune=pytest.fail)
    assert chosen in SPACES["nk-coalesced"].configs() and chosen["coalesced_store"]


@pytest.mark.cuda
def test_rows_of_16_bytes_are_tuned_over_tma_store_configs(gpu):
    a = torch.randn(1000, 520, device=gpu).half()
    w = torch.randn(1336, 520, device=gpu).half()
    assert_exact_within_tolerance(wsc.matmul(a, w.T), a, w.T)
    from wsc.device import hopper_name
    from wsc.matmul import _cache

    chosen = choose_config(plan(a, w.T), hopper_name(0, "wsc.matmul"), _cache(), tune=pytest.fail)
    assert chosen in SPACES["nk-tma"].configs() and chosen["tma_store"]


@pytest.mark.cuda
@pytest.mark.parametrize(
    "name, n, config",
    [
        (name, n, config)
        for name, n in (("nk-tma", 1336), ("nk-coalesced", 1333), ("kn-tma", 1336))
        for config in SPACES[name].configs()
        if config["cluster_m"] == 2
    ],
    ids=lambda value: "-".join(map(str, value.values())) if isinstance(value, dict) else value,
)
def test_a_cluster_config_covers_an_odd_count_of_tile_rows(gpu, monkeypatch, name, n, config):
    """1100 rows are 9 tile rows of 128: the launch rounds up to 5 clusters,
    and the last one's second block must neither fault nor write C."""
    # The module, not the function `wsc.matmul` that the package exports.
    monkeypatch.setattr(sys.modules["wsc.matmul"], "choose_config", lambda *args, **kwargs: config)
    a = torch.randn(1100, 520, device=gpu).half()
    w = torch.randn(n, 520, device=gpu).half()
    b = w.T.contiguous() if name.startswith("kn") else w.T
    out = torch.full((1100, n), float("nan"), device=gpu, dtype=torch.float16)
    assert plan(a, b, out=out).space == name
    assert wsc.matmul(a, b, out=out) is out
    torch.cuda.synchronize()
    assert_exact_within_tolerance(out, a, b)


@pytest.mark.cuda
@pytest.mark.parametrize("layout", ["nk", "kn"])
@pytest.mark.parametrize(
    "fields", CLUSTERS_ALONG_N, ids=lambda f: f"{f['block_m']}x{f['block_n']}-c{f['cluster_n']}"
)
def test_a_cluster_along_n_is_correct(gpu, monkeypatch, layout, fields):
    """Clusters along N share A's tile: 1336 columns are 11 tile columns of
    128 (21 of 64), so the last cluster has blocks past N, which must
    neither fault nor write C; 200 rows fill no tile row."""
    config = cluster_along_n(fields)
    monkeypatch.setattr(sys.modules["wsc.matmul"], "choose_config", lambda *args, **kwargs: config)
    m, n, k = CLUSTER_ALONG_N_PROBLEM
    a = torch.randn(m, k, device=gpu).half()
    w = torch.randn(n, k, device=gpu).half()
    b = w.T.contiguous() if layout == "kn" else w.T
    out = torch.full((m, n), float("nan"), device=gpu, dtype=torch.float16)
    assert plan(a, b, out=out) == cluster_along_n_plan(layout)
    assert wsc.matmul(a, b, out=out) is out
    torch.cuda.synchronize()
    assert_exact_within_tolerance(out, a, b)


@pytest.mark.cuda
@pytest.mark.parametrize(
    "name, config",
    [
        (name, config)
        for name in ("nk", "nk-tma", "kn-tma", "nk-small-m", "kn-small-m")
        for config in SPACES[name].configs()
        if config["split_k"] > 1 and config["group_m"] == 8
    ],
    ids=lambda value: "-".join(map(str, value.values())) if isinstance(value, dict) else value,
)
def test_split_k_is_correct_and_the_same_bits_every_run(gpu, monkeypatch, name, config):
    """The last split adds the partial sums in split order: 20 runs of one
    product give the same bytes. Shapes: a decode step (K = 14336 in 224 K
    tiles, in the small-M spaces), ragged sizes, and K of 2 tiles for 4
    splits (two splits sum no K tile and hand over zeros)."""
    monkeypatch.setattr(sys.modules["wsc.matmul"], "choose_config", lambda *args, **kwargs: config)
    out_dtype = torch.float32 if name == "nk" else torch.float16
    shapes = [(777, 1336, 1032), (200, 1336, 72)]
    if name.endswith("-small-m"):
        shapes = [(16, 4096, 14336), (60, 1336, 1032), (33, 1336, 72)]
    for m, n, k in shapes:
        assert_correct_and_the_same_bits_every_run(gpu, name, m, n, k, out_dtype)


def assert_correct_and_the_same_bits_every_run(gpu, name, m, n, k, out_dtype) -> None:
    """20 calls of wsc.matmul on one product of fresh random inputs, each into
    a NaN-poisoned output, planned into space `name`: correct against
    float64, and the same bytes every run."""
    generator = torch.Generator(device=gpu).manual_seed(m + n + k)
    a = torch.randn(m, k, device=gpu, generator=generator).half()
    w = torch.randn(n, k, device=gpu, generator=generator).half()
    b = w.T.contiguous() if name.startswith("kn") else w.T
    assert plan(a, b, out_dtype=out_dtype).space == name
    runs = []
    for _ in range(20):
        out = torch.full((m, n), float("nan"), device=gpu, dtype=out_dtype)
        wsc.matmul(a, b, out=out)
        runs.append(out)
    torch.cuda.synchronize()
    assert_exact_within_tolerance(runs[0], a, b)
    # Byte for byte, so that equal bits are what is compared (a NaN too).
    first = runs[0].view(torch.uint8)
    assert all(torch.equal(run.view(torch.uint8), first) for run in runs[1:])


@pytest.mark.cuda
@pytest.mark.parametrize(
    "name, config",
    [
        (name, config)
        for name in ("nk-tma", "kn-tma")
        for config in SPACES[name].configs()
        if config.get("stream_k") and config["group_m"] == 8
    ],
    ids=lambda value: "-".join(map(str, value.values())) if isinstance(value, dict) else value,
)
def test_stream_k_is_correct_and_the_same_bits_every_run(gpu, monkeypatch, name, config):
    """More 128x256 tiles than SMs, so blocks start and end their shares
    mid-tile and hand tiles over: 16 x 20 tiles with ragged M, N and K (17 K
    tiles, the last of 8 columns), 13 x 11 tiles of 2 K tiles, and the LLM
    shape that needs it (4 x 112 tiles of 128 K tiles). The two partial sums
    of a tile are added in one order: 20 runs give the same bytes."""
    monkeypatch.setattr(sys.modules["wsc.matmul"], "choose_config", lambda *args, **kwargs: config)
    for m, n, k in [(1999, 5000, 1032), (1664, 2816, 72), (512, 28672, 8192)]:
        assert_correct_and_the_same_bits_every_run(gpu, name, m, n, k, torch.float16)


@pytest.mark.cuda
@pytest.mark.parametrize("name", HALF_SPACES)
def test_every_config_of_the_space_is_correct(gpu, name):
    """`wsc run --check` on every autotuning candidate of the space, in one
    process as the autotuner runs them, resized to another problem than the
    one they were written for; each reports its own B layout."""
    problem = space_plan(name, "f16")
    directories = [
        compiled_kernel_dir(problem, config, Cache()) for config in SPACES[name].configs()
    ]
    reports = run_artifacts(
        directories, bench=False, sizes={"m": 777, "n": problem.n + 64, "k": 1032}
    )
    for config, report in zip(SPACES[name].configs(), reports, strict=True):
        assert report["ok"] and report["nan_count"] == 0, (config, report)
        assert report["b_layout"] == problem.b_layout and report["shape"][0] == 777


@pytest.mark.cuda
def test_a_known_signature_launches_on_new_tensors(gpu, monkeypatch):
    """The second call of a signature takes the bound launch: new pointers
    re-encode the tensor maps, and the result is the new product."""
    monkeypatch.setenv("WSC_AUTOTUNE", "0")
    from wsc.matmul import _bound, _signature

    def operands(seed):
        generator = torch.Generator(device=gpu).manual_seed(seed)
        return (
            torch.randn(700, 264, device=gpu, generator=generator).half(),
            torch.randn(520, 264, device=gpu, generator=generator).half(),
        )

    a, w = operands(1)
    out = torch.full((700, 520), float("nan"), device=gpu, dtype=torch.float16)
    wsc.matmul(a, w.T, out=out)
    assert _signature(a, w.T, out, None) in _bound
    for seed in (2, 3):
        a, w = operands(seed)
        out = torch.full((700, 520), float("nan"), device=gpu, dtype=torch.float16)
        assert wsc.matmul(a, w.T, out=out) is out
        assert_exact_within_tolerance(out, a, w.T)
        functional = wsc.matmul(a, w.T)
        assert_exact_within_tolerance(functional, a, w.T)


@pytest.mark.cuda
def test_captured_in_a_cuda_graph_and_replayed(gpu, monkeypatch):
    monkeypatch.setenv("WSC_AUTOTUNE", "0")
    a = torch.randn(1000, 520, device=gpu).half()
    w = torch.randn(1336, 520, device=gpu).half()
    out = torch.empty((1000, 1336), device=gpu, dtype=torch.float16)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        wsc.matmul(a, w.T, out=out)  # warm-up, as before any capture: tunes and loads
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        wsc.matmul(a, w.T, out=out)
    for seed in range(3):
        generator = torch.Generator(device=gpu).manual_seed(seed)
        a.copy_(torch.randn(a.shape, device=gpu, generator=generator))
        w.copy_(torch.randn(w.shape, device=gpu, generator=generator))
        out.fill_(float("nan"))
        graph.replay()
        torch.cuda.synchronize()
        assert_exact_within_tolerance(out, a, w.T)


@pytest.mark.cuda
def test_the_hot_path_encodes_tensor_maps_as_the_driver_binding_does(gpu, monkeypatch):
    # The default config, which takes no split-K workspaces: a tuned one may.
    monkeypatch.setenv("WSC_AUTOTUNE", "0")
    from wsc.matmul import _kernel_for
    from wsc.runtime import BoundLaunch
    from wsc.runtime.tensor_map import TensorMapEncoder, encode_tensor_map

    a = torch.randn(300, 520, device=gpu).half()
    w = torch.randn(1336, 520, device=gpu).half()
    out = torch.empty((300, 1336), device=gpu, dtype=torch.float16)
    kernel = _kernel_for(plan(a, w.T, out=out), 0)
    prepared = kernel.prepare(a=a, b=w, c=out)
    plans = [p for _, p in prepared.sources if p is not None]
    assert plans and BoundLaunch(prepared).names == ("a", "b", "c")
    import ctypes

    for tensor_plan in plans:
        slot = (ctypes.c_ubyte * 192)()
        address = ctypes.addressof(slot) + (-ctypes.addressof(slot)) % 64
        encoder = TensorMapEncoder(tensor_plan, address)
        encoder.encode(tensor_plan.global_address)
        assert ctypes.string_at(address, 128) == encode_tensor_map(tensor_plan).raw
        # Another address, then the first again: from the encoder's recent maps.
        other = tensor_plan.global_address + 4096
        encoder.encode(other)
        assert ctypes.string_at(address, 128) != encode_tensor_map(tensor_plan).raw
        encoder.encode(tensor_plan.global_address)
        assert ctypes.string_at(address, 128) == encode_tensor_map(tensor_plan).raw


@pytest.mark.cuda
def test_a_launch_gives_the_thread_its_own_context_back(gpu, monkeypatch):
    """A bound launch makes its GPU's context current only for itself: a
    thread with none (or another GPU's, whose device torch reads from it)
    keeps it."""
    monkeypatch.setenv("WSC_AUTOTUNE", "0")  # no split-K workspaces to pass
    from cuda.bindings import driver as cu

    from wsc.matmul import _kernel_for
    from wsc.runtime import BoundLaunch

    a = torch.randn(300, 264, device=gpu).half()
    w = torch.randn(520, 264, device=gpu).half()
    out = torch.full((300, 520), float("nan"), device=gpu, dtype=torch.float16)
    launch = BoundLaunch(_kernel_for(plan(a, w.T, out=out), 0).prepare(a=a, b=w, c=out))
    stream = torch.cuda.current_stream().cuda_stream
    torch.cuda.synchronize()
    after = {}

    def call():
        cu.cuCtxSetCurrent(cu.CUcontext(0))
        launch(stream, a.data_ptr(), w.data_ptr(), out.data_ptr())
        after["context"] = int(cu.cuCtxGetCurrent()[1])

    thread = threading.Thread(target=call)
    thread.start()
    thread.join()
    torch.cuda.synchronize()
    assert after["context"] == 0
    assert_exact_within_tolerance(out, a, w.T)


@pytest.mark.cuda
def test_a_known_signature_still_checks_what_differs(gpu, monkeypatch):
    """out_dtype against out, a weight that is an nn.Parameter, a second thread."""
    monkeypatch.setenv("WSC_AUTOTUNE", "0")
    a = torch.randn(300, 264, device=gpu).half()
    weight = torch.nn.Parameter(torch.randn(520, 264, device=gpu).half(), requires_grad=False)
    out = torch.empty((300, 520), device=gpu, dtype=torch.float16)
    wsc.matmul(a, weight.T, out=out)
    with pytest.raises(TypeError, match="out is torch.float16 but out_dtype says torch.float32"):
        wsc.matmul(a, weight.T, out=out, out_dtype=torch.float32)
    import threading

    results, errors = {}, []

    def call(index):
        try:
            generator = torch.Generator(device=gpu).manual_seed(index)
            x = torch.randn(300, 264, device=gpu, generator=generator).half()
            results[index] = (x, wsc.matmul(x, weight.T))
            torch.cuda.synchronize()
        except Exception as error:  # reported below: a thread's exception is not the test's
            errors.append(error)

    threads = [threading.Thread(target=call, args=(i,)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == [] and len(results) == 4
    for x, result in results.values():
        assert_exact_within_tolerance(result, x, weight.T)


@pytest.mark.cuda
def test_gradients_flow_through_a_call(gpu, monkeypatch):
    monkeypatch.setenv("WSC_AUTOTUNE", "0")
    x = torch.randn(300, 264, device=gpu).half().requires_grad_()
    weight = torch.nn.Parameter(torch.randn(520, 264, device=gpu).half())
    wsc.matmul(x.detach(), weight.detach().T)  # the same signature, resolved without grad
    y = wsc.matmul(x, weight.T)
    assert_exact_within_tolerance(y.detach(), x.detach(), weight.detach().T)
    grad = torch.randn_like(y)
    y.backward(grad)
    assert_exact_within_tolerance(x.grad, grad, weight.detach())
    assert_exact_within_tolerance(weight.grad, grad.T, x.detach())


# The fused epilogue: C = act(a @ b + bias) + residual ------------------------------------


def test_a_fused_call_checks_its_epilogue():
    a, w = meta(64, 128), meta(256, 128)
    bias, residual = meta(256), meta(64, 256)
    p = plan(a, w.T, bias=bias, activation="gelu", residual=residual)
    assert p.epilogue == {"bias": True, "activation": "gelu", "residual": True}
    assert plan(a, w.T).epilogue == {}
    for kwargs, error, message in (
        ({"activation": "tanh"}, ValueError, "activation must be one of 'relu', 'gelu'"),
        ({"bias": meta(255)}, ValueError, r"bias must be \[N\] = \[256\], got \[255\]"),
        ({"bias": meta(256, dtype=torch.float32)}, TypeError, "bias must be torch.float16 like a"),
        ({"residual": meta(256, 64).T}, ValueError, "residual must have unit stride along N"),
        ({"residual": torch.empty(64, 256, dtype=torch.float16)}, ValueError, "must be on meta"),
        ({"bias": np.zeros(256, np.float16)}, TypeError, "bias is supported for torch tensors"),
    ):
        with pytest.raises(error, match=message):
            plan(a, w.T, **kwargs)


def test_a_fused_call_has_its_own_kernels_and_choice():
    a, w = meta(64, 128), meta(256, 128)
    plain, fused = plan(a, w.T), plan(a, w.T, activation="relu", residual=meta(64, 256))
    assert _fixed(plain) == {"dtype": "f16", "out_dtype": "f16", "b_layout": "nk"}
    assert _fixed(fused) == {**_fixed(plain), "activation": "relu", "residual": True}
    assert config_key(plain, "GPU") != config_key(fused, "GPU")
    assert "epilogue" not in config_key(plain, "GPU")


def test_a_fused_call_on_meta_tensors_gives_the_result_s_metadata():
    a, w, bias = meta(64, 128), meta(256, 128), meta(256)
    c = wsc.matmul(a, w.T, bias=bias, activation="silu", out_dtype=torch.float32)
    assert c.shape == (64, 256) and c.dtype == torch.float32 and c.device.type == "meta"
    out = meta(64, 256)
    assert wsc.matmul(a, w.T, residual=meta(64, 256), out=out) is out


def test_a_fused_call_refuses_autograd_and_numpy():
    a, w = meta(64, 128).requires_grad_(), meta(256, 128)
    with pytest.raises(NotImplementedError, match="does not support automatic differentiation"):
        wsc.matmul(a, w.T, activation="relu")
    with pytest.raises(TypeError, match="supported for torch tensors only"):
        wsc.matmul(np.zeros((4, 8), np.float16), np.zeros((8, 4), np.float16), activation="relu")


def reference_epilogue(a, b, bias, activation, residual, alpha=None):
    """act(alpha a @ b + bias) + residual in float64, as torch.nn.functional computes it."""
    functional = torch.nn.functional
    value = a.double() @ b.double()
    if alpha is not None:
        value = value * alpha
    if bias is not None:
        value = value + bias.double()
    if activation is not None:
        value = {
            "relu": functional.relu,
            "gelu": functional.gelu,
            "gelu_tanh": lambda x: functional.gelu(x, approximate="tanh"),
            "silu": functional.silu,
        }[activation](value)
    return value if residual is None else value + residual.double()


@pytest.mark.cuda
@pytest.mark.parametrize("m, n, k", [(40, 1336, 520), (300, 1336, 520), (1000, 1333, 520)])
def test_alpha_scales_the_product(gpu, monkeypatch, m, n, k):
    """alpha alone and with bias, GELU and residual, in each epilogue's
    default config, into a NaN-poisoned out=; a call with another alpha binds
    again and uses it."""
    monkeypatch.setenv("WSC_AUTOTUNE", "0")
    generator = torch.Generator(device=gpu).manual_seed(m + n + 1)
    a, w = (torch.randn(*s, device=gpu, generator=generator).half() for s in ((m, k), (n, k)))
    bias = torch.randn(n, device=gpu, generator=generator).half()
    residual = torch.randn(m, n, device=gpu, generator=generator).half()
    for alpha in (0.5, -3.0):
        for epilogue in ({}, {"bias": bias, "activation": "gelu", "residual": residual}):
            want = reference_epilogue(
                a,
                w.T,
                epilogue.get("bias"),
                epilogue.get("activation"),
                epilogue.get("residual"),
                alpha,
            )
            out = torch.full((m, n), float("nan"), device=gpu, dtype=torch.float16)
            wsc.matmul(a, w.T, alpha=alpha, out=out, **epilogue)
            torch.cuda.synchronize()
            assert not torch.isnan(out).any()
            assert relative_error(out, want) < TOLERANCE[torch.float16], (alpha, epilogue)


def test_alpha_is_a_finite_number_of_a_torch_call():
    a, w = meta(64, 32), meta(48, 32)
    assert plan(a, w.T, alpha=0.5).epilogue == {"alpha": True}
    for bad in (True, "2"):
        with pytest.raises(TypeError, match="alpha must be a finite real number"):
            plan(a, w.T, alpha=bad)
    for bad in (float("inf"), float("nan")):
        with pytest.raises(ValueError, match="alpha must be a finite real number"):
            plan(a, w.T, alpha=bad)
    with pytest.raises(TypeError, match="supported for torch tensors only"):
        wsc.matmul(np.zeros((4, 8), np.float16), np.zeros((8, 4), np.float16), alpha=2.0)


def test_an_alpha_kernel_records_its_check_s_alpha(cache):
    from wsc.kernels.matmul.check import MatmulCheck
    from wsc.runtime import load_artifact

    p = MatmulPlan(1000, 1336, 520, "f16", "f16", "nk", tma_store=True, bias=True, alpha=True)
    artifact = load_artifact(compiled_kernel_dir(p, DEFAULT_CONFIGS[p.space], cache))
    assert artifact.config["epilogue"] == {"bias": "d", "alpha": "e"}
    assert [(q.kind, q.name, q.value) for q in artifact.params if q.kind == "f32"] == [
        ("f32", "e", -0.75)
    ]
    check = MatmulCheck(artifact)
    assert check.epilogue.alpha == -0.75
    product = np.ones((2, 3))
    assert np.array_equal(
        check.epilogue.apply(product, np.zeros(3), None, None, np.tanh, np.exp), -0.75 * product
    )


@pytest.mark.cuda
@pytest.mark.parametrize("activation", ["relu", "gelu", "gelu_tanh", "silu", None])
@pytest.mark.parametrize("m, n, k", [(40, 1336, 520), (300, 1336, 520), (1000, 1333, 520)])
def test_a_fused_epilogue_is_correct(gpu, monkeypatch, activation, m, n, k):
    """Small M (swapped operands), a TMA-stored C and a C whose rows TMA
    cannot store (coalesced stores), each with bias and residual, functional
    and into a NaN-poisoned out=; the default config of each space (the
    schedules of test/gpu/matmul_cache.py's epilogue kernels)."""
    monkeypatch.setenv("WSC_AUTOTUNE", "0")
    generator = torch.Generator(device=gpu).manual_seed(m + n)
    a, w = (torch.randn(*s, device=gpu, generator=generator).half() for s in ((m, k), (n, k)))
    bias = torch.randn(n, device=gpu, generator=generator).half()
    residual = torch.randn(m, n, device=gpu, generator=generator).half()
    want = reference_epilogue(a, w.T, bias, activation, residual)
    got = wsc.matmul(a, w.T, bias=bias, activation=activation, residual=residual)
    out = torch.full((m, n), float("nan"), device=gpu, dtype=torch.float16)
    wsc.matmul(a, w.T, bias=bias, activation=activation, residual=residual, out=out)
    torch.cuda.synchronize()
    for result in (got, out):
        assert not torch.isnan(result).any()
        assert relative_error(result, want) < TOLERANCE[torch.float16]
