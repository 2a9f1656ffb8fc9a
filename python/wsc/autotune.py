"""@autotune: the config spaces of a kernel-building function, as the seed's
`@tilus.autotune`, and the search over them.

    @autotune("num_stages", [2, 3, 4])
    @autotune("block_m, block_n", [[128, 128], [128, 256]])
    def matmul_v3(num_stages=4, block_m=128, block_n=128, block_k=64) -> Kernel:
        ...                                  # builds with wsc.builder

    matmul_v3()                              # a plain call builds one kernel
    matmul_v3.configs()                      # every point of the space (6 here)
    result = matmul_v3.tune(sizes=dict(m=4096, n=4096, k=4096))
    result.best, result.best_artifact        # the fastest correct candidate

`tune` compiles every candidate the cache does not hold yet, each in a process
of its own and several at a time; a candidate that fails to build or compile
(too much shared memory, a register budget that cannot be met, ...) drops out
with the compiler's reason. A candidate is compiled once per config and
fixed arguments: the kernels read their sizes at run time, so its artifact
is resized to each problem (`Artifact.resized`). On a Hopper GPU `tune` then
runs the compiled candidates in one process of their own, on shared inputs
(a candidate that faults or hangs ends that process and the rest go on in a
fresh one), checks each against the float64 reference of the check its
artifact declares (`wsc run --check`), times it back to back (`TIMING`), and records
the fastest correct one in the persistent cache (`wsc.cache`), keyed by the
function, its source file, the fixed arguments, the problem (or a class of
problems) and the GPU; if none is correct, it records that, with the
reasons, so the search is not repeated. Without a GPU it compiles only and
records nothing.

This module imports neither MLIR nor the builder; workers do.
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import importlib.util
import inspect
import itertools
import json
import os
import subprocess
import sys
import threading
import time
import types
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

#: How candidates are timed (`wsc run --timing`): as a run of calls keeps the
#: GPU busy, where flushed single launches run at a clock sustained work does
#: not hold, and rank some configs differently
#: (results/h200-tuning-vs-back-to-back.md, results/h200-tuner-timing.md).
TIMING = "back-to-back"


def autotune(names: str, values: Sequence) -> Callable:
    """Add one dimension to a kernel function's config space: `names` is one
    parameter ("num_stages") or several ("block_m, block_n"), `values` the
    values to try (for several names, one sequence per point). Stacked
    decorators multiply their spaces."""
    keys = tuple(name.strip() for name in names.split(",") if name.strip())
    if not keys:
        raise ValueError("autotune: name at least one parameter")
    points = []
    for value in values:
        point = (value,) if len(keys) == 1 else tuple(value)
        if len(point) != len(keys):
            raise ValueError(f"autotune({names!r}): {value!r} does not give one value per name")
        points.append(point)
    if not points:
        raise ValueError(f"autotune({names!r}): no values to try")

    def decorate(target):
        tuned = target if isinstance(target, Autotuned) else Autotuned(target)
        tuned._add_dimension(keys, points)
        return tuned

    return decorate


@dataclass
class Candidate:
    """One point of the space: its config, where it compiled to, and how it did."""

    config: dict
    artifact_dir: Path | None = None
    compile_seconds: float | None = None
    #: Why it dropped out (build or compile error, failed check), else None.
    error: str | None = None
    #: The `wsc run` report on the GPU (ok, rel_err, ms, tflops, ...), if it ran.
    report: dict | None = None

    @property
    def ms(self) -> float | None:
        return self.report.get("ms") if self.report and self.report.get("ok") else None


@dataclass
class TuneResult:
    """What `tune` found. `best` is None when nothing was timed (no GPU)."""

    candidates: list[Candidate] = field(default_factory=list)
    best: dict | None = None
    best_artifact: Path | None = None
    #: True when the choice came from the cache, not from timing now.
    cached: bool = False
    #: Why there is no `best` after a search on the GPU (every candidate
    #: dropped out), else None.
    failure: str | None = None
    #: The failure says something about the kernels (each failed to compile,
    #: computed a wrong result, faulted or hung), not about the machine the
    #: search ran on (a worker that died or ran out of memory): it is cached.
    failure_is_final: bool = False

    def table(self) -> str:
        """One line per candidate: config, compile time, and time or reason."""
        lines = []
        for c in self.candidates:
            config = ", ".join(f"{k}={v}" for k, v in c.config.items())
            ms = c.ms
            if c.error:
                outcome = f"dropped: {c.error.splitlines()[0]}"
            elif ms is not None and c.report is not None:
                outcome = f"{ms:.3f} ms, {c.report.get('tflops', 0):.0f} TFLOPS"
            else:
                outcome = "compiled"
            mark = "*" if c.config == self.best else " "
            took = f"{c.compile_seconds:5.1f} s" if c.compile_seconds is not None else "cached "
            lines.append(f" {mark} {config:<60} {took}  {outcome}")
        return "\n".join(lines)


class Autotuned:
    """A kernel function with a config space; calling it builds one kernel."""

    def __init__(self, fn: Callable):
        self.fn = fn
        self.space: list[tuple[tuple[str, ...], list[tuple]]] = []
        self.__name__ = getattr(fn, "__name__", "kernel")
        self.__qualname__ = getattr(fn, "__qualname__", self.__name__)
        self.__module__ = getattr(fn, "__module__", "")
        self.__doc__ = getattr(fn, "__doc__", None)

    def _add_dimension(self, keys: tuple[str, ...], points: list[tuple]) -> None:
        taken = {k for dim_keys, _ in self.space for k in dim_keys}
        if taken & set(keys):
            raise ValueError(
                f"autotune: {', '.join(sorted(taken & set(keys)))} already has a "
                f"space on {self.__qualname__}"
            )
        parameters = inspect.signature(self.fn).parameters
        accepts_any = any(p.kind is p.VAR_KEYWORD for p in parameters.values())
        unknown = [k for k in keys if k not in parameters and not accepts_any]
        if unknown:
            raise ValueError(f"autotune: {self.__qualname__} has no parameter {', '.join(unknown)}")
        # Decorators apply bottom-up; inserting first keeps the space in the
        # order the decorators are written.
        self.space.insert(0, (keys, points))

    def __call__(self, *args, **kwargs):
        return self.fn(*args, **kwargs)

    def configs(self) -> list[dict]:
        """Every point of the space, the first decorator's dimension slowest."""
        result = []
        for combination in itertools.product(*(points for _, points in self.space)):
            config: dict = {}
            for (keys, _), point in zip(self.space, combination, strict=True):
                config.update(zip(keys, point, strict=True))
            result.append(config)
        return result

    # Identity ------------------------------------------------------------------------

    def _source_file(self) -> str | None:
        try:
            return inspect.getfile(self.fn)
        except TypeError:
            return None

    def identity(self) -> dict:
        """What the cache keys of this function's results hold: the function, a
        hash of its source file and one of the compiler's, so editing either
        invalidates them."""
        path = self._source_file()
        digest = None
        if path is not None and os.path.exists(path):
            digest = hashlib.sha256(Path(path).read_bytes()).hexdigest()[:16]
        return {
            "function": f"{self.__module__}.{self.__qualname__}",
            "source": digest,
            "compiler": compiler_digest(),
        }

    def _importable(self) -> bool:
        return "<locals>" not in self.__qualname__ and self._source_file() is not None

    # Compiling -----------------------------------------------------------------------

    def _candidate_key(self, config: dict, fixed: dict) -> dict:
        return {"kind": "autotune-candidate", **self.identity(), "fixed": fixed, "config": config}

    def artifact(self, config: dict, sizes: dict, fixed: dict | None = None, cache=None) -> Path:
        """The artifact directory of one config: the cached one, or compiled now
        in this process (written for the problem `sizes`) and cached. It serves
        any problem: resize it (`Artifact.resized`) to the sizes at hand."""
        cache = cache or _default_cache()
        fixed = fixed or {}
        return cache.build_artifact(
            self._candidate_key(config, fixed),
            lambda staging: _compile_into(self.fn, {**fixed, **config}, sizes, staging),
        )

    def _compile_all(
        self, candidates: list[Candidate], sizes: dict, fixed: dict, cache, jobs: int, progress
    ) -> None:
        """Compile the candidates the cache lacks into it, `jobs` at a time; a
        failure is cached too, so a known-bad candidate is not compiled again.
        Sizes the kernel does not read stop the candidates not yet begun: every
        one would fail alike."""
        in_workers = jobs > 1 and self._importable()
        unknown_sizes = threading.Event()

        def compile_one(candidate: Candidate) -> None:
            if unknown_sizes.is_set():
                progress(1)
                return
            key = self._candidate_key(candidate.config, fixed)
            failure_key = {**key, "kind": "autotune-candidate-failure"}
            arguments = {**fixed, **candidate.config}

            def build(staging: Path) -> None:
                if in_workers:
                    self._compile_in_worker(arguments, sizes, staging)
                else:
                    _compile_into(self.fn, arguments, sizes, staging)

            start = time.perf_counter()
            try:
                candidate.artifact_dir = cache.build_artifact(key, build)
            except OSError:
                raise  # the machine's fault (a cache or disk it cannot write), not the config's
            except Exception as error:  # a candidate's failure drops it, not the search
                candidate.error = _reason(error)
                # Sizes the kernel does not read are the caller's mistake, and
                # sizes it cannot be written for the sizes' fault, not the config's.
                if candidate.error.startswith(f"{SIZES_ERROR}:"):
                    unknown_sizes.set()
                elif not candidate.error.startswith(f"{UnfitSizesError.__name__}:"):
                    cache.put(failure_key, {"error": candidate.error})
            candidate.compile_seconds = time.perf_counter() - start
            progress(1)

        with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
            list(pool.map(compile_one, candidates))

    def _compile_in_worker(self, arguments: dict, sizes: dict, out: Path) -> None:
        """Compile in a fresh interpreter (no shared MLIR context, no fork of
        this process's threads); raises CandidateError with the reason it failed."""
        request = {
            "module": self.__module__,
            "file": self._source_file(),
            "qualname": self.__qualname__,
            "arguments": arguments,
            "sizes": sizes,
            "out": str(out),
        }
        proc = subprocess.run(
            [sys.executable, "-m", "wsc.autotune", json.dumps(request)],
            capture_output=True,
            text=True,
        )
        replies = [line for line in proc.stdout.splitlines() if line.startswith("{")]
        if proc.returncode != 0 or not replies:
            raise CandidateError(
                (proc.stderr.strip() or f"worker exited with status {proc.returncode}")[-2000:]
            )
        reply = json.loads(replies[-1])
        if reply.get("os_error"):
            raise OSError(reply["error"])
        if reply.get("error") is not None:
            raise CandidateError(reply["error"])

    # Searching -----------------------------------------------------------------------

    def tune(
        self,
        sizes: dict,
        *,
        fixed: dict | None = None,
        problem_class: dict | None = None,
        cache=None,
        jobs: int | None = None,
        progress: bool = True,
        retune: bool = False,
        device: int = 0,
        extra: Sequence[dict] = (),
    ) -> TuneResult:
        """Find the fastest correct config for the problem `sizes` (see the module
        docstring). `fixed` are arguments passed to every candidate (e.g. the
        dtype); `problem_class` is what the cached choice is keyed by instead
        of the exact sizes (e.g. shape buckets); `retune` ignores a cached
        choice. Candidates are timed on cuda:`device`. `extra` configs are
        candidates beside the space's, to try configs out without editing the
        space (whose source keys every cached kernel): a search with them
        neither reads nor writes the cached choice."""
        from wsc.device import hopper_gpu_visible, run_artifacts

        cache = cache or _default_cache()
        fixed = dict(fixed or {})
        jobs = jobs or min(8, os.cpu_count() or 1)
        gpu = _gpu_identity(device) if hopper_gpu_visible(device) else None
        choice_key = {
            "kind": "autotune-choice",
            **self.identity(),
            "fixed": fixed,
            "problem": problem_class or sizes,
            "space": self.configs(),
            "device": gpu,
            "timing": TIMING,
        }
        candidates = [Candidate(config) for config in [*self.configs(), *extra]]
        if gpu is not None and not retune and not extra:
            entry = cache.get(choice_key)
            if entry is not None and entry.get("best") is None and entry.get("failure"):
                return TuneResult(cached=True, failure=entry["failure"], failure_is_final=True)
            if entry is not None and entry.get("best") in self.configs():
                best = entry["best"]
                path = self.artifact(best, sizes, fixed, cache)
                return TuneResult([Candidate(best, path)], best, path, cached=True)

        to_compile = []
        for candidate in candidates:
            key = self._candidate_key(candidate.config, fixed)
            failure = cache.get({**key, "kind": "autotune-candidate-failure"})
            candidate.artifact_dir = cache.get_artifact(key)
            if failure is not None:
                candidate.error = failure["error"]
            elif candidate.artifact_dir is None:
                to_compile.append(candidate)
        steps = len(to_compile) + (1 if gpu is not None else 0)
        with _progress_bar(steps, f"autotune {self.__name__}", progress) as advance:
            self._compile_all(to_compile, sizes, fixed, cache, jobs, advance)
            for candidate in to_compile:
                error = candidate.error or ""
                if error.startswith(f"{SIZES_ERROR}:"):
                    from wsc.runtime.artifact import SizesError

                    raise SizesError(error.split(": ", 1)[1])
            result = TuneResult(candidates)
            if gpu is None:
                return result
            runnable = [c for c in candidates if c.error is None]
            reports = run_artifacts(
                [c.artifact_dir for c in runnable], sizes=sizes, device=device, timing=TIMING
            )
            for candidate, report in zip(runnable, reports, strict=True):
                candidate.report = report
                if not report.get("ok"):
                    candidate.error = "failed its check on the GPU: " + json.dumps(report)
            advance(1)
        timed = [(c, ms) for c in candidates if (ms := c.ms) is not None]
        if timed:
            fastest, fastest_ms = min(timed, key=lambda pair: pair[1])
            result.best, result.best_artifact = fastest.config, fastest.artifact_dir
            if extra:
                return result
            cache.put(
                choice_key,
                {
                    "best": fastest.config,
                    "ms": fastest_ms,
                    "timings": [{"config": c.config, "ms": ms} for c, ms in timed],
                },
            )
        else:
            result.failure = (
                "; ".join(
                    f"{c.config}: {(c.error or 'not timed').splitlines()[0][:300]}"
                    for c in candidates
                )
                or "the space is empty"
            )
            result.failure_is_final = all(map(_failed_for_good, candidates))
            if result.failure_is_final and not extra:
                cache.put(choice_key, {"best": None, "failure": result.failure})
        return result


#: Modules of the wsc package that do not take part in compiling a kernel or
#: in the artifact format (running, caching, tuning and calling kernels):
#: edits of them keep compiled kernels valid.
NOT_COMPILER = (
    "runtime",
    "tools",
    "matmul.py",
    "softmax.py",
    "autotune.py",
    "device.py",
    "cache.py",
    "kernels/matmul/check.py",
    # Compiled softmax kernels are keyed by its source (their Autotuned's identity).
    "kernels/softmax/schedule.py",
)
#: ... but for the artifact format, which the runtime reads back.
ARTIFACT_FORMAT = "runtime/artifact.py"


@functools.lru_cache(maxsize=1)
def compiler_digest() -> str:
    """A hash of the compiler's source (the wsc package but NOT_COMPILER, the
    passes, the dialect, and the artifact format): cached kernels are keyed by it, because the
    cache's version stamp, wsc.__version__, does not change with every edit
    of the compiler, and a kernel compiled by an older one must not be
    reused."""
    roots = [
        Path(location)
        for name in ("wsc", "wsc.passes", "wsc.dialects")
        for location in _package_dirs(name)
    ]
    skipped = {roots[0] / name for name in NOT_COMPILER}
    kept = roots[0] / ARTIFACT_FORMAT
    digest = hashlib.sha256()
    for root in roots:
        for path in sorted(root.rglob("*")):
            if path.suffix in (".py", ".mlir") and (
                path == kept or not skipped & {path, *path.parents}
            ):
                digest.update(str(path.relative_to(root)).encode())
                digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


#: The name of wsc.runtime.artifact.SizesError, as a worker reports it
#: (this module imports no runtime).
SIZES_ERROR = "SizesError"


class UnfitSizesError(ValueError):
    """A candidate that compiled cannot be written for the sizes at hand
    (e.g. a TMA-copied tensor's rows are not multiples of 16 bytes there):
    its failure is the sizes', so it is not cached for the config."""


def _failed_for_good(candidate: Candidate) -> bool:
    """Whether a candidate's failure is its kernel's: a build or compile error
    (no report), a wrong result (a report without an error) or a fault or
    hang; not an error of the run around it."""
    from wsc.device import FATAL_ERRORS

    if candidate.report is None:
        return candidate.error is not None
    error = candidate.report.get("error")
    return error is None or error.startswith(FATAL_ERRORS)


class CandidateError(RuntimeError):
    """A candidate failed to build or compile in a worker; the message is why."""


def _reason(error: BaseException) -> str:
    if isinstance(error, CandidateError):
        return str(error)
    return f"{type(error).__name__}: {error}"


def _compile_into(fn: Callable, arguments: dict, sizes: dict, out: Path) -> None:
    compiled = fn(**arguments).compile()
    try:
        compiled.write_artifact(out, **sizes)
    except ValueError as error:
        if type(error).__name__ == SIZES_ERROR:
            raise
        raise UnfitSizesError(str(error)) from None


def _gpu_identity(ordinal: int) -> str:
    from wsc.runtime import driver

    device = driver.get_device(ordinal)
    major, minor = device.compute_capability
    return f"{device.name} (sm_{major}{minor})"


def _default_cache():
    from wsc.cache import Cache

    return Cache()


class _progress_bar:
    """A tqdm bar when tqdm is installed and `enabled`, else silent."""

    def __init__(self, total: int, description: str, enabled: bool):
        self.bar = None
        if enabled and total:
            try:
                from tqdm.auto import tqdm
            except ImportError:
                tqdm = None
            if tqdm is not None:
                self.bar = tqdm(total=total, desc=description, leave=False)

    def __enter__(self):
        return self.bar.update if self.bar is not None else (lambda steps: None)

    def __exit__(self, *exc):
        if self.bar is not None:
            self.bar.close()


def _package_dirs(name: str) -> list[str]:
    spec = importlib.util.find_spec(name)
    if spec is None or spec.submodule_search_locations is None:
        raise ImportError(f"{name} is not an installed package")
    return list(spec.submodule_search_locations)


def _load_function(request: dict) -> Callable:
    """The kernel function a worker request names: imported by module, else
    (a script's `__main__`, or a module only importable from its directory)
    loaded from its file under another name, so an `if __name__ ==
    "__main__":` block does not run."""
    module: types.ModuleType | None = None
    if request["module"] != "__main__":
        try:
            module = importlib.import_module(request["module"])
        except ImportError:  # e.g. a test module importable only from its own directory
            module = None
    if module is None:
        path = request["file"]
        sys.path.insert(0, os.path.dirname(os.path.abspath(path)))
        spec = importlib.util.spec_from_file_location("wsc_autotune_script", path)
        if spec is None or spec.loader is None:
            raise ImportError(f"cannot load the kernel function's file {path}")
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module
        spec.loader.exec_module(module)
    target: Any = module
    for part in request["qualname"].split("."):
        target = getattr(target, part)
    return target.fn if isinstance(target, Autotuned) else target


def _worker(argv: list[str]) -> int:
    """`python -m wsc.autotune REQUEST`: compile one candidate, print one JSON line."""
    request = json.loads(argv[0])
    try:
        fn = _load_function(request)
        _compile_into(fn, request["arguments"], request["sizes"], Path(request["out"]))
    except Exception as error:  # reported to the parent, which drops the candidate
        print(json.dumps({"error": _reason(error), "os_error": isinstance(error, OSError)}))
        return 0
    print(json.dumps({"error": None}))
    return 0


class _DecoratorModule(types.ModuleType):
    """This module, callable as its decorator: importing it binds the name
    `wsc.autotune` to the module, and `@wsc.autotune(...)` must still work."""

    def __call__(self, names: str, values: Sequence) -> Callable:
        return autotune(names, values)


sys.modules[__name__].__class__ = _DecoratorModule

if __name__ == "__main__":
    # Run as a script this file is `__main__`, a second copy of the module; the
    # kernel's module imports `wsc.autotune`, whose Autotuned is the one to test for.
    from wsc.autotune import _worker as worker

    sys.exit(worker(sys.argv[1:]))
