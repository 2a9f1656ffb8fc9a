"""A long-lived `wsc-opt` process for the fuzzer: one request per line, many
mutants per process start.

Starting Python and importing MLIR costs ~0.3 s, ten times more than most
mutants take, so the fuzzer does not start `wsc-opt` per mutant. This
worker runs `wsc.tools.opt.main` in-process on each request instead; the
fuzzer keeps it in a subprocess so that a crash inside MLIR's C++ (abort,
segfault) kills only the worker and is seen as a finding.

    python worker.py WORKDIR
    stdin:  {"argv": [...], "input_b64": "..."}                one per line
    stdout: {"rc": 0, "stderr": "...", "stdout_bytes": 1234, "seconds": 0.01}

The mutant is written to WORKDIR/mutant.mlir and passed as the last
argument, so diagnostics name that file. File descriptors 1 and 2 point at
WORKDIR/stdout.txt and WORKDIR/stderr.txt for the whole life of the worker
(the protocol uses a duplicate of the original stdout), so whatever C++ code
prints before dying is left in stderr.txt for the fuzzer to read.
"""

from __future__ import annotations

import base64
import json
import os
import resource
import sys
import time

#: Address-space cap, so a mutant that asks for a huge allocation fails with
#: MemoryError (a finding) instead of swapping the machine to death.
MEMORY_LIMIT_BYTES = 6 << 30


def _reset(fd: int) -> None:
    os.ftruncate(fd, 0)
    os.lseek(fd, 0, os.SEEK_SET)


def main() -> int:
    workdir = sys.argv[1]
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT_BYTES, MEMORY_LIMIT_BYTES))
    protocol = os.fdopen(os.dup(1), "w", buffering=1)
    for fd, name in ((1, "stdout.txt"), (2, "stderr.txt")):
        target = os.open(os.path.join(workdir, name), os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(target, fd)
        os.close(target)
    from wsc.tools.opt import main as wsc_opt

    mutant_path = os.path.join(workdir, "mutant.mlir")
    stderr_path = os.path.join(workdir, "stderr.txt")
    for line in sys.stdin:
        request = json.loads(line)
        with open(mutant_path, "wb") as handle:
            handle.write(base64.b64decode(request["input_b64"]))
        for stream, fd in ((sys.stdout, 1), (sys.stderr, 2)):
            stream.flush()
            _reset(fd)
        start = time.perf_counter()
        rc = wsc_opt([*request["argv"], mutant_path])
        seconds = time.perf_counter() - start
        sys.stdout.flush()
        sys.stderr.flush()
        with open(stderr_path, "rb") as handle:
            stderr = handle.read().decode("utf-8", errors="replace")
        protocol.write(
            json.dumps(
                {
                    "rc": rc,
                    "stderr": stderr,
                    "seconds": seconds,
                    "stdout_bytes": os.fstat(1).st_size,
                }
            )
            + "\n"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
