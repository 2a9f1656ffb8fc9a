"""wsc.matmul with more than one GPU (marker `multi_gpu`, skipped with fewer
than two Hopper GPUs): a non-zero device ordinal alone, with its own current
stream and inside a CUDA graph; two GPUs driven at once from two threads; and
a two-rank torch.distributed (NCCL) tensor-parallel MLP whose ranks tune at
the same moment on one shared cache. Results are checked against float64
with the outputs NaN-poisoned first. On a machine without MLIR, fill the
cache first with test/gpu/matmul_cache.py (as for test_matmul's GPU tests)."""

import importlib
import json
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest

import wsc
from wsc.cache import Cache, default_root

torch = pytest.importorskip("torch")

from test_matmul import assert_exact_within_tolerance  # noqa: E402

REPO = Path(__file__).resolve().parents[2]

pytestmark = [pytest.mark.cuda, pytest.mark.multi_gpu]


def _hopper_gpus() -> int:
    if not torch.cuda.is_available():
        return 0
    return sum(
        torch.cuda.get_device_capability(i)[0] == 9 for i in range(torch.cuda.device_count())
    )


@pytest.fixture
def gpus(monkeypatch):
    """cuda:0 and cuda:1, with no call resolved yet (as in a fresh process)."""
    if _hopper_gpus() < 2:
        pytest.skip("needs two Hopper GPUs")
    monkeypatch.setattr(importlib.import_module("wsc.matmul"), "_bound", {})
    monkeypatch.setenv("WSC_AUTOTUNE", "0")  # tuning under concurrency: the distributed test
    return torch.device("cuda", 0), torch.device("cuda", 1)


def random_problem(device, m, n, k, seed):
    generator = torch.Generator(device=device).manual_seed(seed)
    a = torch.randn(m, k, device=device, generator=generator).half()
    w = torch.randn(n, k, device=device, generator=generator).half()
    return a, w


@pytest.mark.parametrize("m, n, k", [(1000, 1336, 520), (128, 128, 64), (2048, 4096, 1024)])
def test_the_second_gpu_alone(gpus, m, n, k):
    _, second = gpus
    a, w = random_problem(second, m, n, k, seed=m + n + k)
    out = torch.full((m, n), float("nan"), device=second, dtype=torch.float16)
    wsc.matmul(a, w.T, out=out)
    assert_exact_within_tolerance(out, a, w.T)
    fresh = wsc.matmul(a, w.T)  # a new output, on the inputs' device
    assert fresh.device == second
    assert_exact_within_tolerance(fresh, a, w.T)
    assert torch.cuda.current_device() == 0  # wsc leaves torch's current device alone


def test_runs_on_the_current_stream_of_its_tensors_gpu(gpus):
    """The launch follows work queued on cuda:1's current stream (a side
    stream) while cuda:0 is the current device: if wsc launched on another
    stream (cuda:0's, or cuda:1's default) it would read the inputs before
    they are written."""
    first, second = gpus
    a, w = random_problem(second, 2048, 2048, 2048, seed=5)
    fresh_a = torch.randn(a.shape, device=second).half()
    out = torch.full((2048, 2048), float("nan"), device=second, dtype=torch.float16)
    wsc.matmul(a, w.T, out=out)  # resolve the signature first
    side = torch.cuda.Stream(device=second)
    side.wait_stream(torch.cuda.current_stream(second))
    with torch.cuda.stream(side):
        out.fill_(float("nan"))
        torch.cuda._sleep(50_000_000)  # tens of milliseconds of queued work first
        a.copy_(fresh_a)
        with torch.cuda.device(first):
            wsc.matmul(a, w.T, out=out)
    side.synchronize()
    assert torch.cuda.current_device() == 0
    assert_exact_within_tolerance(out, fresh_a, w.T)


def test_captured_in_a_cuda_graph_on_the_second_gpu(gpus):
    _, second = gpus
    a, w = random_problem(second, 1000, 1336, 520, seed=11)
    out = torch.empty((1000, 1336), device=second, dtype=torch.float16)
    with torch.cuda.device(second):
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            wsc.matmul(a, w.T, out=out)  # warm-up before capture: loads the kernel
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            wsc.matmul(a, w.T, out=out)
    for seed in range(3):
        generator = torch.Generator(device=second).manual_seed(seed)
        a.copy_(torch.randn(a.shape, device=second, generator=generator))
        w.copy_(torch.randn(w.shape, device=second, generator=generator))
        out.fill_(float("nan"))
        graph.replay()
        torch.cuda.synchronize(second)
        assert_exact_within_tolerance(out, a, w.T)


def test_two_gpus_at_once_from_two_threads(gpus):
    """Each thread makes its first call (resolving and loading its kernel) at
    the same moment as the other, then calls again and again; every result is
    checked."""
    start = threading.Barrier(len(gpus))
    failures = []

    def drive(device, seed):
        try:
            torch.cuda.set_device(device)
            start.wait()
            for step in range(6):
                m, n, k = (1000, 1336, 520) if step % 2 else (2048, 2048, 1024)
                a, w = random_problem(device, m, n, k, seed=seed + step)
                out = torch.full((m, n), float("nan"), device=device, dtype=torch.float16)
                wsc.matmul(a, w.T, out=out)
                torch.cuda.synchronize(device)
                assert_exact_within_tolerance(out, a, w.T)
        except BaseException as error:  # reported by the main thread
            failures.append((device, error))

    threads = [threading.Thread(target=drive, args=(d, 100 * i)) for i, d in enumerate(gpus)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not failures, failures


def test_arguments_on_two_gpus_are_refused(gpus):
    first, second = gpus
    a, w = random_problem(first, 128, 128, 64, seed=1)
    with pytest.raises(ValueError, match="same device, got cuda:0 and cuda:1"):
        wsc.matmul(a, w.to(second).T)
    out = torch.empty((128, 128), device=second, dtype=torch.float16)
    with pytest.raises(ValueError, match="out must be on cuda:0 like a and b, got cuda:1"):
        wsc.matmul(a, w.T, out=out)


def _cache_without_choices(destination: Path) -> Path:
    """A copy of the cache the tests use, its compiled kernels kept and every
    tuned choice removed: what two ranks meet before either has tuned."""
    source = default_root()
    if not source.is_dir():
        pytest.skip(f"no kernel cache at {source}: run test/gpu/matmul_cache.py first")
    shutil.copytree(source, destination)
    for entry in (destination / "entries").glob("*.json"):
        key = json.loads(json.loads(entry.read_text())["key"])
        if key.get("kind") in ("wsc.matmul-config", "autotune-choice"):
            entry.unlink()
    return destination


def test_tensor_parallel_mlp_under_torch_distributed(gpus, tmp_path, monkeypatch):
    """Two ranks, one per GPU, run examples/tensor_parallel_mlp.py's MLP with
    every linear through wsc.matmul; both start on one cache with no tuned
    choices and make their first calls at the same moment. The all_reduced
    result matches a float64 reference of the whole MLP as closely as
    torch's own linears do, and each shape class is searched once in all (the
    other rank waits for the choice), never twice."""
    cache = _cache_without_choices(tmp_path / "cache")
    out = tmp_path / "reports"
    out.mkdir()
    env = {**os.environ, "WSC_CACHE_DIR": str(cache), "WSC_AUTOTUNE": "1"}
    command = [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node=2"]
    command += ["--master-port=29517", str(REPO / "test/gpu/tensor_parallel.py"), str(out)]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    reports = [json.loads((out / f"rank{r}.json").read_text()) for r in range(2)]
    assert [r["device"] for r in reports] == ["cuda:0", "cuda:1"]
    classes = reports[0]["classes"]
    assert reports[1]["classes"] == classes and len(classes) == 2
    searched = [c for r in reports for c in r["searched"]]
    assert sorted(searched) == sorted(classes), searched  # each class once, by one rank
    for report in reports:
        assert report["error"] < 2e-3, report
        assert report["error_again"] < 2e-3, report
        # As close to the exact MLP as torch's linears (cuBLAS), up to rounding.
        assert report["error"] <= report["torch_error"] + 5e-4, report
    # The choices the ranks wrote are whole entries that a later process reads.
    chosen = [e for e in (cache / "entries").glob("*.json") if "wsc.matmul-config" in e.read_text()]
    assert len(chosen) == len(classes)
    for entry in chosen:
        key = json.loads(json.loads(entry.read_text())["key"])
        assert Cache(cache).get(key)["config"] is not None
