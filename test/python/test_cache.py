"""wsc.cache: entries survive interrupted writes, corrupt or foreign entries
are misses that get rebuilt, and processes filling one cache at once leave
only complete entries."""

import hashlib
import json
import multiprocessing
import os
import random
import time
from pathlib import Path

import pytest

import wsc
from wsc.cache import FORMAT_VERSION, STAMP_FILE, Cache, CacheError, default_root

KEY = {"kind": "choice", "problem": {"m": 256, "n": 512}, "dtype": "f16"}


@pytest.fixture
def cache(tmp_path):
    return Cache(tmp_path / "cache")


def test_root_comes_from_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("WSC_CACHE_DIR", str(tmp_path))
    assert default_root() == tmp_path and Cache().root == tmp_path
    monkeypatch.delenv("WSC_CACHE_DIR")
    assert default_root() == Path.home() / ".cache" / "wsc"


def test_put_then_get(cache):
    assert cache.get(KEY) is None
    cache.put(KEY, {"config": {"num_stages": 4}})
    assert cache.get(KEY) == {"config": {"num_stages": 4}}
    # Key order does not matter; any other key is another entry.
    assert cache.get(dict(reversed(list(KEY.items())))) == {"config": {"num_stages": 4}}
    assert cache.get({**KEY, "dtype": "bf16"}) is None
    cache.put(KEY, {"config": {"num_stages": 3}})
    assert cache.get(KEY) == {"config": {"num_stages": 3}}


def test_keys_and_values_are_dicts(cache):
    with pytest.raises(TypeError):
        cache.put(["not", "a", "dict"], {})
    with pytest.raises(TypeError):
        cache.put(KEY, [1, 2])


def _entry(cache, **changes) -> bytes:
    document = {
        "format": FORMAT_VERSION,
        "wsc_version": wsc.__version__,
        "key": json.dumps(KEY, sort_keys=True, separators=(",", ":")),
        "value": {"config": {"num_stages": 4}},
    }
    return json.dumps({**document, **changes}).encode()


@pytest.mark.parametrize(
    "content",
    [
        pytest.param(lambda c: _entry(c)[:40], id="truncated"),
        pytest.param(lambda c: b"\xff\xfe garbage \x00", id="not-utf8"),
        pytest.param(lambda c: b"", id="empty"),
        pytest.param(lambda c: b"[1, 2, 3]", id="not-an-object"),
        pytest.param(lambda c: _entry(c, wsc_version="0.0.1"), id="foreign-wsc-version"),
        pytest.param(lambda c: _entry(c, format=FORMAT_VERSION + 1), id="foreign-format"),
        pytest.param(lambda c: _entry(c, key='{"other":1}'), id="other-key"),
        pytest.param(lambda c: _entry(c, value="not a dict"), id="bad-value"),
    ],
)
def test_bad_entries_are_misses_and_get_rebuilt(cache, content):
    path = cache.entry_path(KEY)
    path.parent.mkdir(parents=True)
    path.write_bytes(content(cache))
    assert cache.get(KEY) is None
    cache.put(KEY, {"config": {"num_stages": 2}})
    assert cache.get(KEY) == {"config": {"num_stages": 2}}


def test_an_interrupted_put_leaves_the_old_entry(cache, monkeypatch):
    cache.put(KEY, {"config": {"num_stages": 4}})

    def interrupted(source, target):
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "replace", interrupted)
    with pytest.raises(KeyboardInterrupt):
        cache.put(KEY, {"config": {"num_stages": 5}})
    monkeypatch.undo()
    assert cache.get(KEY) == {"config": {"num_stages": 4}}
    assert [p.name for p in cache.entry_path(KEY).parent.iterdir()] == [cache.entry_path(KEY).name]


def _killed_while_writing(root: str) -> None:
    """Dies (as SIGKILL would) after writing the temporary file, before the rename."""
    os.replace = lambda source, target: os._exit(9)
    Cache(root).put(KEY, {"config": {"num_stages": 5}, "padding": "x" * 100_000})


def test_a_process_killed_mid_put_leaves_no_corrupt_entry(cache):
    cache.put(KEY, {"config": {"num_stages": 4}})
    process = multiprocessing.get_context("spawn").Process(
        target=_killed_while_writing, args=(str(cache.root),)
    )
    process.start()
    process.join(60)
    assert process.exitcode == 9
    assert cache.get(KEY) == {"config": {"num_stages": 4}}


def _write_kernel(directory: Path, text: str = "ptx") -> None:
    (directory / "kernel.ptx").write_text(text)
    (directory / "kernel.json").write_text(json.dumps({"kernel_name": "k"}))


def test_artifact_is_built_once(cache):
    calls = []

    def build(directory):
        calls.append(directory)
        _write_kernel(directory)

    assert cache.get_artifact(KEY) is None
    first = cache.build_artifact(KEY, build)
    assert first == cache.artifact_dir(KEY) == cache.get_artifact(KEY)
    assert sorted(p.name for p in first.iterdir()) == ["kernel.json", "kernel.ptx", STAMP_FILE]
    assert cache.build_artifact(KEY, build) == first and len(calls) == 1
    assert not calls[0].exists()  # the staging directory was renamed away
    assert list((cache.root / "tmp").iterdir()) == []


@pytest.mark.parametrize(
    "damage",
    [
        pytest.param(lambda d: (d / "kernel.ptx").write_text("pt"), id="truncated-file"),
        pytest.param(lambda d: (d / "kernel.json").unlink(), id="missing-file"),
        pytest.param(lambda d: (d / STAMP_FILE).write_text("{"), id="corrupt-stamp"),
        pytest.param(
            lambda d: (d / STAMP_FILE).write_text(
                (d / STAMP_FILE).read_text().replace(wsc.__version__, "0.0.1")
            ),
            id="foreign-version",
        ),
    ],
)
def test_damaged_artifact_is_a_miss_and_gets_rebuilt(cache, damage):
    directory = cache.build_artifact(KEY, _write_kernel)
    damage(directory)
    assert cache.get_artifact(KEY) is None
    rebuilt = cache.build_artifact(KEY, lambda d: _write_kernel(d, "new ptx"))
    assert rebuilt == directory and (rebuilt / "kernel.ptx").read_text() == "new ptx"
    assert cache.get_artifact(KEY) == rebuilt


def test_a_failed_build_publishes_nothing(cache):
    def failing(directory):
        (directory / "kernel.ptx").write_text("half")
        raise RuntimeError("compile failed")

    with pytest.raises(RuntimeError, match="compile failed"):
        cache.build_artifact(KEY, failing)
    assert cache.get_artifact(KEY) is None and not cache.artifact_dir(KEY).exists()
    assert list((cache.root / "tmp").iterdir()) == []


# -- several processes at once ---------------------------------------------------

KEYS = [{"kind": "stress", "index": index} for index in range(4)]
PAYLOAD = 20_000


def _value(key_index: int, writer: int, round_: int) -> dict:
    payload = [writer * 1_000_003 + round_ * 7 + i for i in range(PAYLOAD)]
    return {
        "key": key_index,
        "writer": writer,
        "payload": payload,
        "checksum": hashlib.sha256(json.dumps(payload).encode()).hexdigest(),
    }


def _well_formed(key_index: int, value) -> bool:
    return (
        isinstance(value, dict)
        and value.get("key") == key_index
        and len(value["payload"]) == PAYLOAD
        and hashlib.sha256(json.dumps(value["payload"]).encode()).hexdigest() == value["checksum"]
    )


def _build(directory: Path, key_index: int, writer: int) -> None:
    for name in ("kernel.ptx", "kernel.cubin", "kernel.json"):
        (directory / name).write_text(f"{key_index} {writer} {name}\n" * 2000)
        time.sleep(0.001)


def _artifact_well_formed(directory: Path, key_index: int) -> bool:
    writers = set()
    for name in ("kernel.ptx", "kernel.cubin", "kernel.json"):
        lines = set((directory / name).read_text().splitlines())
        if len(lines) != 1:
            return False
        index, writer, file_name = lines.pop().split()
        if int(index) != key_index or file_name != name:
            return False
        writers.add(writer)
    return len(writers) == 1  # all three files from one build


def _hammer(root: str, writer: int, rounds: int, errors) -> None:
    rng = random.Random(writer)
    cache = Cache(root)
    for round_ in range(rounds):
        key_index = rng.randrange(len(KEYS))
        key = KEYS[key_index]
        action = rng.random()
        if action < 0.4:
            cache.put(key, _value(key_index, writer, round_))
        elif action < 0.8:
            # Every key was filled before the workers started and a put
            # replaces an entry atomically, so a reader always finds one.
            value = cache.get(key)
            if not _well_formed(key_index, value):
                errors.put(f"writer {writer}: key {key_index} read as {str(value)[:80]}")
        else:
            directory = cache.build_artifact(key, lambda d, k=key_index: _build(d, k, writer))
            if not _artifact_well_formed(directory, key_index):
                errors.put(f"writer {writer}: torn artifact for key {key_index}")


def test_processes_filling_one_cache_leave_complete_entries(cache):
    for key_index, key in enumerate(KEYS):
        cache.put(key, _value(key_index, -1, 0))
    context = multiprocessing.get_context("spawn")
    errors = context.Queue()
    workers = [
        context.Process(target=_hammer, args=(str(cache.root), writer, 150, errors))
        for writer in range(6)
    ]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(300)
    assert [w.exitcode for w in workers] == [0] * len(workers)
    found = []
    while not errors.empty():
        found.append(errors.get())
    assert found == []
    for key_index, key in enumerate(KEYS):
        value = cache.get(key)
        assert value is None or _well_formed(key_index, value)
        directory = cache.get_artifact(key)
        assert directory is None or _artifact_well_formed(directory, key_index)
    # Nothing half-built is left behind: every staging directory was published or removed.
    assert [p.name for p in (cache.root / "tmp").iterdir()] == []
    assert not [p for p in (cache.root / "entries").iterdir() if p.suffix == ".tmp"]


def test_a_root_that_cannot_be_written_is_named(tmp_path):
    (tmp_path / "file").touch()
    cache = Cache(root=tmp_path / "file" / "cache")
    assert cache.get({"kind": "k"}) is None  # reads never raise
    with pytest.raises(CacheError, match=f"the kernel cache at {cache.root} cannot be written"):
        cache.put({"kind": "k"}, {"value": 1})
    with pytest.raises(CacheError, match="set WSC_CACHE_DIR to a writable directory"):
        with cache.exclusive({"kind": "k"}):
            pass
    with pytest.raises(CacheError):
        cache.build_artifact({"kind": "k"}, lambda staging: None)


def test_entries_and_artifacts_take_the_modes_the_umask_gives(cache):
    """A cache shared by several users: its files 0644 and its directories
    0755 under umask 022, as any other program's would be."""
    previous = os.umask(0o022)
    try:
        cache.put({"kind": "k"}, {"value": 1})
        directory = cache.build_artifact({"kind": "a"}, lambda staging: (staging / "x").touch())
    finally:
        os.umask(previous)
    assert cache.entry_path({"kind": "k"}).stat().st_mode & 0o777 == 0o644
    assert directory.stat().st_mode & 0o777 == 0o755
    assert {path.stat().st_mode & 0o777 for path in directory.iterdir()} == {0o644}
