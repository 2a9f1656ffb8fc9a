"""Files written so that a reader never sees half of one, with the modes the
user's umask gives (0644 files, 0755 directories by default), so artifacts
and a shared kernel cache are readable by whoever may read their folder.
tempfile's files (0600) and directories (0700) would not be."""

from __future__ import annotations

import os
import uuid
from pathlib import Path


def write_atomically(path: Path, data: bytes | str, durable: bool = False) -> None:
    """Write `data` to a temporary file beside `path`, then rename it over
    `path`; with `durable`, flush it to disk first. The temporary file never
    outlives a failure."""
    payload = data.encode() if isinstance(data, str) else data
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
    descriptor = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(payload)
            if durable:
                handle.flush()
                os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def new_directory(parent: Path, prefix: str) -> Path:
    """A new, uniquely named directory under `parent`."""
    path = parent / f"{prefix}{uuid.uuid4().hex}"
    os.mkdir(path, 0o777)
    return path
