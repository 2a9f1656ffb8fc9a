"""A persistent on-disk cache that several processes can fill at once.

    cache = Cache()                              # $WSC_CACHE_DIR, else ~/.cache/wsc
    cache.put({"kind": "choice", ...}, {"config": {...}})
    cache.get({"kind": "choice", ...})           # the dict, or None
    path = cache.build_artifact(key, lambda tmp: compile_into(tmp))
    path = cache.get_artifact(key)               # the published directory, or None

A key is any JSON-serializable dict; its canonical JSON (sorted keys) is
hashed into the file name and stored in the entry, so a hash collision reads
as a miss. Every entry is stamped with the wsc version and the cache's
format version; an entry from another version is a miss (the caller rebuilds
it and the new entry replaces it), as is one that is truncated, corrupt or
not an entry at all. Nothing the cache reads makes it raise; a root it cannot
write raises CacheError, which names the root.

Writes never leave a half-written entry where a reader looks: a value is
written to a temporary file in the same directory and renamed over the
entry (`os.replace`, atomic on POSIX), and an artifact directory is built
under a temporary name, stamped (with a SHA-256 of each of its files) and
then renamed into place. So a process killed in the middle of a write leaves
at most an orphaned temporary file, and processes racing to fill the same
key each publish a complete entry; the last rename wins.

Layout under the root:

    entries/<digest>.json        put/get values
    artifacts/<digest>/          published artifact directories, each with
                                 wsc-cache.json (the stamp) beside its files
    tmp/                         directories being built; leftovers of killed
                                 builders older than a day are removed
    locks/<digest>.lock          the locks of `exclusive`
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import json
import os
import shutil
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import wsc
from wsc.runtime.files import new_directory, write_atomically

#: Bumped whenever the layout or an entry's fields change meaning (2: artifact
#: format 2, kernel-agnostic kernel.json; older entries are rebuilt, not misread).
#: A new artifact format needs no bump: compiled kernels are keyed by the
#: compiler's digest, which covers runtime/artifact.py (autotune.compiler_digest).
FORMAT_VERSION = 2
#: The stamp file of a published artifact directory.
STAMP_FILE = "wsc-cache.json"
#: Temporary directories older than this are leftovers of killed builders.
STALE_TMP_SECONDS = 24 * 3600
#: Renames tried before giving up on publishing an artifact directory (each
#: retry means another process replaced an invalid entry meanwhile).
PUBLISH_ATTEMPTS = 100


def default_root() -> Path:
    """$WSC_CACHE_DIR, else ~/.cache/wsc."""
    explicit = os.environ.get("WSC_CACHE_DIR")
    return Path(explicit) if explicit else Path.home() / ".cache" / "wsc"


def canonical_key(key: dict) -> str:
    """The key's canonical JSON: what its digest hashes and its entry stores."""
    if not isinstance(key, dict):
        raise TypeError(f"a cache key is a dict, got {type(key).__name__}")
    return json.dumps(key, sort_keys=True, separators=(",", ":"), allow_nan=False)


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


class CacheError(OSError):
    """The cache's root cannot be written (a read-only or missing file system,
    a file where a directory should be, a full disk), or an entry could not be
    published while other processes kept replacing it."""


class Cache:
    """The cache rooted at `root` (default: `default_root()`)."""

    def __init__(self, root: str | os.PathLike | None = None):
        self.root = Path(root) if root is not None else default_root()

    @contextlib.contextmanager
    def _writing(self) -> Iterator[None]:
        """Turn a file-system error of the block into a CacheError naming the root."""
        try:
            yield
        except CacheError:
            raise
        except OSError as error:
            where = f" ({error.filename})" if error.filename else ""
            raise CacheError(
                f"the kernel cache at {self.root} cannot be written: "
                f"{error.strerror or error}{where}; set WSC_CACHE_DIR to a writable directory"
            ) from None

    # -- keys and stamps

    def digest(self, key: dict) -> str:
        return hashlib.sha256(canonical_key(key).encode()).hexdigest()

    def _stamp(self, key: dict) -> dict:
        return {"format": FORMAT_VERSION, "wsc_version": wsc.__version__, "key": canonical_key(key)}

    def _stamp_matches(self, document, key: dict) -> bool:
        if not isinstance(document, dict):
            return False
        return all(document.get(name) == value for name, value in self._stamp(key).items())

    # -- values

    def entry_path(self, key: dict) -> Path:
        return self.root / "entries" / f"{self.digest(key)}.json"

    def get(self, key: dict) -> dict | None:
        """The value stored under `key`, or None when there is none or the
        entry is unreadable, corrupt, or from another wsc or format version."""
        path = self.entry_path(key)
        try:
            document = json.loads(path.read_bytes())
        except (OSError, ValueError):  # ValueError: bad JSON or bad UTF-8
            return None
        if not self._stamp_matches(document, key) or not isinstance(document.get("value"), dict):
            return None
        return document["value"]

    def put(self, key: dict, value: dict) -> None:
        """Store `value` (a JSON-serializable dict) under `key`, atomically."""
        if not isinstance(value, dict):
            raise TypeError(f"a cache value is a dict, got {type(value).__name__}")
        text = json.dumps({**self._stamp(key), "value": value}, allow_nan=False)
        path = self.entry_path(key)
        with self._writing():
            path.parent.mkdir(parents=True, exist_ok=True)
            write_atomically(path, text, durable=True)

    # -- exclusive work

    @contextlib.contextmanager
    def exclusive(self, key: dict) -> Iterator[None]:
        """Hold `key`'s lock for the block: the processes (and threads) that
        share this root run such blocks for one key one at a time, so work
        that should happen once, such as a search whose result is `put` under
        `key`, is done by the first and read from the cache by the rest. The
        lock is an advisory lock (flock) on a file under locks/; the system
        drops it when its holder exits, however it exits."""
        path = self.root / "locks" / f"{self.digest(key)}.lock"
        with self._writing():
            path.parent.mkdir(parents=True, exist_ok=True)
            handle = path.open("a")
        with handle:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle.fileno(), fcntl.LOCK_UN)

    # -- artifact directories

    def artifact_dir(self, key: dict) -> Path:
        """Where the artifact directory of `key` is published (it may not exist
        yet; use `build_artifact` to fill it, `get_artifact` to read it)."""
        return self.root / "artifacts" / self.digest(key)

    def get_artifact(self, key: dict) -> Path | None:
        """The published artifact directory of `key`, or None when it is
        missing, or its stamp or any file it lists is not what was published."""
        directory = self.artifact_dir(key)
        return directory if self._artifact_is_valid(directory, key) else None

    def _artifact_is_valid(self, directory: Path, key: dict) -> bool:
        try:
            stamp = json.loads((directory / STAMP_FILE).read_bytes())
        except (OSError, ValueError):
            return False
        if not self._stamp_matches(stamp, key) or not isinstance(stamp.get("files"), dict):
            return False
        try:
            return all(
                _sha256(directory / name) == digest for name, digest in stamp["files"].items()
            )
        except OSError:
            return False

    def build_artifact(self, key: dict, build: Callable[[Path], object]) -> Path:
        """The artifact directory of `key`: the published one if it is valid,
        else `build(tmp)` fills a fresh temporary directory, which is stamped
        and renamed into place. If `build` raises, nothing is published.

        Processes racing on one key each build; the first rename publishes
        and the others keep that entry. An invalid published entry is moved
        aside and replaced."""
        existing = self.get_artifact(key)
        if existing is not None:
            return existing
        with self._writing():
            staging = self._new_tmp_dir()
        try:
            build(staging)
            with self._writing():
                files = {
                    str(path.relative_to(staging)): _sha256(path)
                    for path in sorted(staging.rglob("*"))
                    if path.is_file()
                }
                stamp = {**self._stamp(key), "files": files}
                (staging / STAMP_FILE).write_text(json.dumps(stamp))
                return self._publish(staging, key)
        finally:
            shutil.rmtree(staging, ignore_errors=True)

    def _new_tmp_dir(self) -> Path:
        tmp = self.root / "tmp"
        tmp.mkdir(parents=True, exist_ok=True)
        self._remove_stale(tmp)
        return new_directory(tmp, "build-")

    @staticmethod
    def _remove_stale(tmp: Path) -> None:
        cutoff = time.time() - STALE_TMP_SECONDS
        for leftover in tmp.iterdir():
            try:
                if leftover.stat().st_mtime < cutoff:
                    shutil.rmtree(leftover, ignore_errors=True)
            except OSError:  # another process removed it first
                pass

    def _publish(self, staging: Path, key: dict) -> Path:
        final = self.artifact_dir(key)
        final.parent.mkdir(parents=True, exist_ok=True)
        for _ in range(PUBLISH_ATTEMPTS):
            try:
                os.rename(staging, final)  # atomic; fails if `final` is taken
                return final
            except OSError as error:
                if error.errno not in (errno.ENOTEMPTY, errno.EEXIST, errno.ENOTDIR):
                    raise
            if self._artifact_is_valid(final, key):
                return final  # another process published first: keep its entry
            # Invalid (another version's, corrupt): move it aside atomically, retry.
            trash = self.root / "tmp" / f"trash-{uuid.uuid4().hex}"
            try:
                os.rename(final, trash)
            except FileNotFoundError:
                continue  # another process moved it first
            if trash.is_dir():
                shutil.rmtree(trash, ignore_errors=True)
            else:
                trash.unlink(missing_ok=True)
        raise CacheError(
            f"could not publish the cache entry {final}: it was replaced "
            f"{PUBLISH_ATTEMPTS} times while this process tried"
        )
