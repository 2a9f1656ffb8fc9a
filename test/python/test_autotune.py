"""@autotune (wsc.autotune): config spaces, parallel compiles in worker
processes, candidates that drop out with their reason, and the choice kept
in the persistent cache."""

import json
import sys
from pathlib import Path

import pytest

import wsc.autotune as autotune_module
from wsc.autotune import Autotuned, autotune
from wsc.cache import Cache, CacheError
from wsc.runtime.artifact import SizesError

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
sys.path.insert(0, str(EXAMPLES))

from v3_warp_specialized import matmul_v3  # noqa: E402

SIZES = {"m": 256, "n": 256, "k": 256}


# 8 stages of 128x64 A and B tiles need 256 KB of shared memory: more than a block has.
@autotune("num_stages", [2, 8])
def seed_kernel(num_stages=4, block_n=128):
    return matmul_v3(num_stages=num_stages, block_n=block_n)


# Its 3-stage config meets a file it cannot read: the machine's fault, not the config's.
@autotune("num_stages", [2, 3])
def kernel_meeting_an_unreadable_file(num_stages=2):
    if num_stages == 3:
        raise PermissionError(13, "Permission denied", "/unreadable")
    return matmul_v3(num_stages=num_stages)


@pytest.fixture
def cache(tmp_path):
    return Cache(root=tmp_path / "cache")


def test_the_space_is_the_product_of_the_decorators_in_written_order():
    @autotune("num_stages", [2, 3])
    @autotune("block_m, block_n", [[128, 64], [128, 128]])
    def kernel(num_stages=4, block_m=128, block_n=128):
        return (num_stages, block_m, block_n)

    assert isinstance(kernel, Autotuned)
    assert kernel.configs() == [
        {"num_stages": 2, "block_m": 128, "block_n": 64},
        {"num_stages": 2, "block_m": 128, "block_n": 128},
        {"num_stages": 3, "block_m": 128, "block_n": 64},
        {"num_stages": 3, "block_m": 128, "block_n": 128},
    ]
    assert kernel() == (4, 128, 128) and kernel(num_stages=3) == (3, 128, 128)


def test_wsc_autotune_is_the_decorator_after_its_module_is_imported():
    """`import wsc.autotune` binds the name to the module (as the examples'
    `from wsc.autotune import autotune` does); `@wsc.autotune` still decorates."""
    import wsc

    assert wsc.autotune is autotune_module

    @wsc.autotune("num_stages", [2, 3])
    def kernel(num_stages=4):
        return num_stages

    assert isinstance(kernel, Autotuned) and kernel.configs() == [
        {"num_stages": 2},
        {"num_stages": 3},
    ]


def test_the_seeds_space_is_declared_on_the_example():
    assert len(matmul_v3.configs()) == 10
    assert {"num_stages": 6, "block_n": 64} in matmul_v3.configs()


def test_decorator_mistakes_are_named():
    with pytest.raises(ValueError, match="has no parameter num_warps"):
        autotune("num_warps", [4])(lambda num_stages=2: None)
    with pytest.raises(ValueError, match="does not give one value per name"):
        autotune("block_m, block_n", [[128]])
    with pytest.raises(ValueError, match="num_stages already has a space"):
        autotune("num_stages", [2])(autotune("num_stages", [3])(lambda num_stages=2: None))


@pytest.mark.parametrize("jobs", [1, 2])
def test_tune_without_a_gpu_compiles_every_candidate_and_drops_the_bad_ones(cache, jobs):
    result = seed_kernel.tune(SIZES, cache=cache, jobs=jobs, progress=False)
    good, bad = result.candidates
    assert good.config == {"num_stages": 2} and good.error is None
    assert (good.artifact_dir / "kernel.json").exists()
    assert bad.config == {"num_stages": 8} and "227 KB" in bad.error
    assert result.best is None  # nothing was timed
    assert "dropped: CompileError" in result.table()

    # Nothing is compiled again: the artifact and the failure both come from the cache.
    again = seed_kernel.tune(SIZES, cache=cache, jobs=jobs, progress=False)
    assert [c.compile_seconds for c in again.candidates] == [None, None]
    assert again.candidates[0].artifact_dir == good.artifact_dir
    assert again.candidates[1].error == bad.error


def on_a_fake_gpu(monkeypatch, run_artifacts, devices=(0,)):
    """Tune as on Hopper GPUs cuda:`devices` whose `wsc run` processes are
    `run_artifacts`."""
    import wsc.device

    def timed_back_to_back(directories, *, timing, **kwargs):
        assert timing == autotune_module.TIMING == "back-to-back"
        return run_artifacts(directories, **kwargs)

    monkeypatch.setattr(wsc.device, "hopper_gpu_visible", lambda device=0: device in devices)
    monkeypatch.setattr(wsc.device, "run_artifacts", timed_back_to_back)
    monkeypatch.setattr(autotune_module, "_gpu_identity", lambda ordinal: "Test GPU (sm_90)")


def test_tune_on_a_gpu_keeps_the_fastest_correct_candidate(cache, monkeypatch):
    runs = []

    @autotune("num_stages", [2, 3])
    def kernel(num_stages=2):
        return matmul_v3(num_stages=num_stages)

    reports = {
        2: {"ok": True, "ms": 0.9, "tflops": 10.0},
        3: {"ok": False, "rel_err": 0.5, "error": "wrong"},
    }

    problem = {"sizes": SIZES}

    def run(directories, bench=True, timeout_s=300.0, sizes=None, device=0):
        assert sizes == problem["sizes"]  # the candidates are resized to the problem
        runs.extend(directories)
        return [
            reports[
                next(
                    s
                    for s in reports
                    if Path(directory)
                    == cache.artifact_dir(kernel._candidate_key({"num_stages": s}, {}))
                )
            ]
            for directory in directories
        ]

    on_a_fake_gpu(monkeypatch, run)
    result = kernel.tune(SIZES, cache=cache, jobs=1, progress=False)
    assert result.best == {"num_stages": 2} and not result.cached
    assert "failed its check" in result.candidates[1].error
    assert len(runs) == 2

    again = kernel.tune(SIZES, cache=cache, jobs=1, progress=False)
    assert again.cached and again.best == {"num_stages": 2} and len(runs) == 2
    assert again.best_artifact == result.best_artifact
    # Another problem needs no compile: the same artifacts, resized.
    other = {"m": 512, "n": 128, "k": 1024}
    monkeypatch.setattr(autotune_module, "_compile_into", pytest.fail)
    reports[3] = {"ok": True, "ms": 0.5, "tflops": 20.0}
    problem["sizes"] = other
    assert kernel.tune(other, cache=cache, jobs=1, progress=False).best == {"num_stages": 3}


def test_extra_configs_are_timed_beside_the_space_and_never_cached_as_the_choice(
    cache, monkeypatch
):
    @autotune("num_stages", [2])
    def kernel(num_stages=2):
        return matmul_v3(num_stages=num_stages)

    timed = []

    def run(directories, bench=True, timeout_s=300.0, sizes=None, device=0):
        timed.append(len(directories))
        # The extra config (3 stages) is the faster.
        return [{"ok": True, "ms": 1.0 - 0.5 * i, "tflops": 1.0} for i in range(len(directories))]

    on_a_fake_gpu(monkeypatch, run)
    tried = kernel.tune(SIZES, cache=cache, jobs=1, progress=False, extra=[{"num_stages": 3}])
    assert [c.config for c in tried.candidates] == [{"num_stages": 2}, {"num_stages": 3}]
    assert tried.best == {"num_stages": 3} and not tried.cached and timed == [2]
    # The space's own search does not take the extra config's win as its choice.
    searched = kernel.tune(SIZES, cache=cache, jobs=1, progress=False)
    assert searched.best == {"num_stages": 2} and not searched.cached and timed == [2, 1]
    # Nor does a second search with extras read the cached choice.
    again = kernel.tune(SIZES, cache=cache, jobs=1, progress=False, extra=[{"num_stages": 3}])
    assert not again.cached and timed == [2, 1, 2]


def test_candidates_are_timed_on_the_gpu_of_the_search(cache, monkeypatch):
    """A search for cuda:1 (a rank on the second GPU) times there, and only a
    Hopper cuda:1 counts: cuda:0 being one does not."""
    devices = []

    @autotune("num_stages", [2, 3])
    def kernel(num_stages=2):
        return matmul_v3(num_stages=num_stages)

    def run(directories, bench=True, timeout_s=300.0, sizes=None, device=0):
        devices.append(device)
        return [{"ok": True, "ms": 1.0, "tflops": 1.0} for _ in directories]

    on_a_fake_gpu(monkeypatch, run, devices=(1,))
    assert kernel.tune(SIZES, cache=cache, jobs=1, progress=False, device=1).best is not None
    assert devices == [1]
    untimed = kernel.tune(SIZES, cache=cache, jobs=1, progress=False, device=0)
    assert untimed.best is None and devices == [1]


def test_a_search_that_finds_nothing_is_recorded_with_its_reasons(cache, monkeypatch):
    runs = []

    @autotune("num_stages", [2, 3])
    def kernel(num_stages=2):
        return matmul_v3(num_stages=num_stages)

    def run(directories, bench=True, timeout_s=300.0, sizes=None, device=0):
        runs.extend(directories)
        return [{"ok": False, "error": "KernelFault: illegal address"} for _ in directories]

    on_a_fake_gpu(monkeypatch, run)
    result = kernel.tune(SIZES, cache=cache, jobs=1, progress=False)
    assert result.best is None and "illegal address" in result.failure
    assert result.failure_is_final
    again = kernel.tune(SIZES, cache=cache, jobs=1, progress=False)
    assert again.cached and again.best is None and again.failure == result.failure
    assert again.failure_is_final and len(runs) == 2  # not run again


def test_a_search_the_machine_broke_is_not_recorded(cache, monkeypatch):
    runs = []

    @autotune("num_stages", [2, 3])
    def kernel(num_stages=2):
        return matmul_v3(num_stages=num_stages)

    def run(directories, bench=True, timeout_s=300.0, sizes=None, device=0):
        runs.extend(directories)
        return [
            {"ok": False, "error": "CudaError: cuMemAlloc failed: out of memory"},
            {"ok": False, "rel_err": 0.5},
        ]

    on_a_fake_gpu(monkeypatch, run)
    result = kernel.tune(SIZES, cache=cache, jobs=1, progress=False)
    assert result.best is None and "out of memory" in result.failure
    assert not result.failure_is_final
    kernel.tune(SIZES, cache=cache, jobs=1, progress=False)
    assert len(runs) == 4  # searched again


@pytest.mark.parametrize("jobs", [1, 2])
def test_a_cache_the_machine_cannot_write_stops_the_search_and_records_no_failure(
    cache, jobs, monkeypatch
):
    """A file where the cache's tmp/ should be fails every candidate's build:
    the search stops with the cache named, and once the file is gone the
    same search compiles every candidate (none was recorded as failed)."""

    @autotune("num_stages", [2, 3])
    def kernel(num_stages=2):
        return matmul_v3(num_stages=num_stages)

    cache.root.mkdir(parents=True)
    (cache.root / "tmp").touch()
    with pytest.raises(CacheError, match=f"the kernel cache at {cache.root} cannot be written"):
        kernel.tune(SIZES, cache=cache, jobs=jobs, progress=False)
    (cache.root / "tmp").unlink()
    result = kernel.tune(SIZES, cache=cache, jobs=jobs, progress=False)
    assert [c.error for c in result.candidates] == [None, None]


@pytest.mark.parametrize("jobs", [1, 2])
def test_a_file_error_of_one_candidate_stops_the_search_in_a_worker_too(cache, jobs):
    """jobs=2 compiles in worker processes (the function is importable), whose
    file error comes back as an OSError, not as the candidate's failure."""
    with pytest.raises(OSError, match="Permission denied: '/unreadable'"):
        kernel_meeting_an_unreadable_file.tune(SIZES, cache=cache, jobs=jobs, progress=False)
    entries = [json.loads(path.read_text()) for path in (cache.root / "entries").glob("*.json")]
    assert not [e for e in entries if "autotune-candidate-failure" in e["key"]]


def test_sizes_a_candidate_cannot_be_written_for_are_not_its_failure(cache):
    """K = 100 gives A rows of 200 bytes, which TMA cannot copy: the candidate
    drops out of that search, and compiles for the next sizes."""

    @autotune("num_stages", [2])
    def kernel(num_stages=2):
        return matmul_v3(num_stages=num_stages)

    result = kernel.tune({"m": 256, "n": 256, "k": 100}, cache=cache, jobs=1, progress=False)
    (candidate,) = result.candidates
    assert candidate.error.startswith("UnfitSizesError: kernel 'matmul': tensor 'a' is copied")
    result = kernel.tune(SIZES, cache=cache, jobs=1, progress=False)
    assert [c.error for c in result.candidates] == [None]


def test_sizes_the_kernel_does_not_read_are_the_caller_s_mistake(cache):
    """Wrong size names stop the search at the first candidate compiled: the
    others would fail alike."""
    built = []

    @autotune("num_stages", [2, 3, 4])
    def kernel(num_stages=2):
        built.append(num_stages)
        return matmul_v3(num_stages=num_stages)

    with pytest.raises(SizesError, match="reads sizes k, m, n; got m"):
        kernel.tune({"m": 256}, cache=cache, jobs=1, progress=False)
    assert built == [2]
    # Nothing of the configs was cached as a failure: the right sizes compile them.
    result = kernel.tune(SIZES, cache=cache, jobs=1, progress=False)
    assert [c.error for c in result.candidates] == [None, None, None]
