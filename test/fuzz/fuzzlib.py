"""Mutation fuzzing of `wsc-opt`: the corpus, the mutations, a crash-proof
runner and the rule every result must satisfy.

The corpus is every `// -----` chunk of `examples/*.mlir` and
`test/**/*.mlir`. A mutant is a chunk with a few `Mutation`s applied: byte
flips, truncation, line deletion, duplication and swaps, random bytes, and
token replacements and swaps (numbers, attribute values, op names, types,
SSA names) drawn from the corpus and from boundary values. A mutation is
plain data (kind and integers, reduced modulo what they index), so
hypothesis can draw and shrink it and a seeded `random.Random` can draw it
for long runs alike.

`Runner` feeds mutants to a `worker.py` subprocess, so a crash of MLIR's C++
code or a hang is a result, not the end of the test process. `problems`
states the rule: exit 0, or exit 1 with a located `file:line:col: error:`,
and never a Python traceback or an internal error.
"""

from __future__ import annotations

import base64
import json
import os
import random
import re
import select
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
WORKER = Path(__file__).with_name("worker.py")
SPLIT_MARKER = "// -----"

#: The pipelines every mutant goes through. Most of the corpus is already
#: specialized, which --warp-specialize rejects at once, so the passes after
#: it also get a pipeline of their own.
PIPELINES = {
    "specialize": ["--warp-specialize", "--unroll-ring-buffer", "--verify-pipeline"],
    "unroll": ["--unroll-ring-buffer", "--verify-pipeline"],
    "lower": ["--convert-wsc-to-nvvm"],
}

#: Seconds one mutant may take before it counts as a hang.
MUTANT_TIMEOUT_S = 30.0

# Token classes a mutation can replace or swap.
TOKEN_PATTERNS = {
    "number": re.compile(r"(?<![\w%#@])-?(?:0x[0-9a-fA-F]+|\d+(?:\.\d+)?)\b"),
    "attribute": re.compile(r"(?<=\b= )(?:\"[^\"\n]*\"|[-\w.]+(?: : \w+)?)"),
    "op": re.compile(r"\"?\b(?:wsc|arith|scf|func|gpu|memref|index|llvm|nvvm|cf)\.[a-z_.]+\b\"?"),
    "type": re.compile(
        r"!wsc\.acc<array<i64[^>]*>, \w+>|!wsc\.\w+|memref<[^<>]*>|"
        r"\b(?:i1|i8|i16|i32|i64|index|f16|bf16|f32|f64)\b"
    ),
    "ssa": re.compile(r"%[\w.$-]+(?:#\d+)?"),
}
#: Token classes in the order a token edit picks them (by its `a` modulo the
#: length): values that keep the text parseable come up more often than SSA
#: names and op names, which mostly give parse errors.
TOKEN_CLASSES = ("number", "number", "attribute", "attribute", "type", "op", "ssa")
BOUNDARY_NUMBERS = [
    "0",
    "1",
    "-1",
    "2",
    "3",
    "7",
    "8",
    "15",
    "16",
    "24",
    "31",
    "32",
    "33",
    "63",
    "64",
    "65",
    "127",
    "128",
    "129",
    "255",
    "256",
    "257",
    "1023",
    "1024",
    "65536",
    "232448",
    "2147483647",
    "2147483648",
    "-2147483648",
    "4294967296",
    "9223372036854775807",
    "18446744073709551616",
    "1e30",
    "0x7fffffff",
]
BOUNDARY_ATTRIBUTES = [
    '""',
    '"nk"',
    '"kn"',
    '"warp"',
    "true",
    "false",
    "unit",
    "0 : i32",
    "-1 : i32",
    "2147483647 : i32",
    "300 : i32",
    "1 : i64",
    "1.5 : f32",
    "array<i32: 1>",
    "dense<1> : tensor<2xi32>",
]
BOUNDARY_TYPES = [
    "i1",
    "i32",
    "index",
    "f16",
    "f32",
    "none",
    "memref<?x?xf16>",
    "memref<0x128x64xf16, 3>",
    "memref<4x128x64xf32, 3>",
    "memref<4x512x64xf16, 3>",
    "memref<2147483647x128x64xf16, 3>",
    "memref<4x128x64xf16, 5>",
    "memref<4x?x64xf16, 3>",
    "memref<128x64xf16, 3>",
    "!wsc.mbarriers",
    "!wsc.acc<array<i64: 128, 128>, f32>",
    "!wsc.acc<array<i64: 64>, f32>",
    "!wsc.acc<array<i64: 0, 0>, f32>",
    "!wsc.acc<array<i64: 9223372036854775807, 8>, f16>",
    "!wsc.acc<array<i64: 64, -8>, f32>",
    "!wsc.acc<array<i32: 64, 64>, f32>",
    "tensor<4xf16>",
]


@dataclass(frozen=True)
class Mutation:
    """One edit; `a`, `b`, `c` are reduced modulo whatever they index."""

    kind: str
    a: int
    b: int
    c: int
    data: bytes = b""


def load_corpus(root: Path = REPO) -> list[tuple[str, str]]:
    """(name, text) of every chunk of the example kernels and lit inputs."""
    files = sorted(root.glob("examples/*.mlir")) + sorted(
        p for p in root.glob("test/**/*.mlir") if "Output" not in p.parts
    )
    corpus = []
    for path in files:
        chunks = path.read_text().split("\n" + SPLIT_MARKER + "\n")
        for index, chunk in enumerate(chunks):
            corpus.append((f"{path.relative_to(root)}#{index}", chunk))
    return corpus


def token_pools(corpus: list[tuple[str, str]]) -> dict[str, list[str]]:
    """Replacement values per token class: every spelling in the corpus plus
    boundary values."""
    pools = {name: set() for name in TOKEN_PATTERNS}
    for _, text in corpus:
        for name, pattern in TOKEN_PATTERNS.items():
            pools[name].update(pattern.findall(text))
    pools["number"].update(BOUNDARY_NUMBERS)
    pools["attribute"].update(BOUNDARY_ATTRIBUTES)
    pools["type"].update(BOUNDARY_TYPES)
    return {name: sorted(values) for name, values in pools.items()}


def _lines(data: bytes) -> list[bytes]:
    return data.splitlines(keepends=True) or [b""]


def apply_mutation(data: bytes, mutation: Mutation, pools: dict[str, list[str]]) -> bytes:
    """`data` with `mutation` applied (unchanged where it has nothing to act on)."""
    kind, a, b, c = mutation.kind, mutation.a, mutation.b, mutation.c
    if kind == "flip":
        # Bits 0-6 only: flipping bit 7 of ASCII text gives invalid UTF-8,
        # which insert_bytes already covers and the tool rejects up front.
        if not data:
            return data
        position = a % len(data)
        return data[:position] + bytes([data[position] ^ (1 << (b % 7))]) + data[position + 1 :]
    if kind == "truncate":
        return data[: a % (len(data) + 1)]
    if kind == "insert_bytes":
        position = a % (len(data) + 1)
        return data[:position] + mutation.data + data[position:]
    if kind in ("delete_line", "duplicate_line", "swap_lines"):
        lines = _lines(data)
        i, j = a % len(lines), b % len(lines)
        if kind == "delete_line":
            del lines[i]
        elif kind == "duplicate_line":
            lines.insert(j, lines[i])
        else:
            lines[i], lines[j] = lines[j], lines[i]
        return b"".join(lines)
    # Token edits work on text; bytes that are not UTF-8 pass through unchanged.
    text = data.decode("utf-8", errors="surrogateescape")
    name = TOKEN_CLASSES[a % len(TOKEN_CLASSES)]
    matches = list(TOKEN_PATTERNS[name].finditer(text))
    if not matches:
        return data
    first = matches[b % len(matches)]
    if kind == "replace_token":
        pool = pools[name]
        replacement = pool[c % len(pool)]
        text = text[: first.start()] + replacement + text[first.end() :]
    elif kind == "swap_tokens":
        second = matches[c % len(matches)]
        if first.start() > second.start():
            first, second = second, first
        if first.end() > second.start():
            return data
        text = (
            text[: first.start()]
            + second.group()
            + text[first.end() : second.start()]
            + first.group()
            + text[second.end() :]
        )
    else:
        raise ValueError(f"unknown mutation kind {kind!r}")
    return text.encode("utf-8", errors="surrogateescape")


def make_mutant(seed_text: str, mutations: list[Mutation], pools: dict[str, list[str]]) -> bytes:
    data = seed_text.encode()
    for mutation in mutations:
        data = apply_mutation(data, mutation, pools)
    return data


#: How often the long run draws each kind. Token edits come first: most of
#: them keep the text parseable, so they reach the verifier and the passes,
#: where byte-level edits mostly stop at the parser.
KIND_WEIGHTS = {
    "replace_token": 12,
    "swap_tokens": 3,
    "delete_line": 2,
    "duplicate_line": 1,
    "swap_lines": 1,
    "flip": 1,
    "truncate": 1,
    "insert_bytes": 1,
}
#: The kinds, each repeated by its weight (for strategies without weights).
WEIGHTED_KINDS = tuple(kind for kind, weight in KIND_WEIGHTS.items() for _ in range(weight))


def random_mutations(rng: random.Random, max_count: int = 3) -> list[Mutation]:
    """A few random mutations, as the long run draws them."""
    kinds = rng.choices(
        list(KIND_WEIGHTS), weights=list(KIND_WEIGHTS.values()), k=rng.randint(1, max_count)
    )
    return [
        Mutation(
            kind,
            rng.randrange(1 << 20),
            rng.randrange(1 << 20),
            rng.randrange(1 << 20),
            rng.randbytes(rng.randrange(1, 9)),
        )
        for kind in kinds
    ]


@dataclass
class Result:
    """What one wsc-opt run did. `crash` is set when the worker died or hung."""

    rc: int | None
    stderr: str
    seconds: float
    crash: str | None = None


class Runner:
    """Runs wsc-opt on mutants in a worker subprocess, restarting it after a crash."""

    def __init__(self, timeout_s: float = MUTANT_TIMEOUT_S, worker: Path = WORKER):
        """`worker` is the script run as `python worker WORKDIR` (worker.py's protocol)."""
        self.timeout_s = timeout_s
        self.worker = worker
        self.workdir = tempfile.TemporaryDirectory(prefix="wsc-fuzz-")
        self.process: subprocess.Popen | None = None
        self.buffer = b""

    def _start(self) -> None:
        self.process = subprocess.Popen(
            [sys.executable, str(self.worker), self.workdir.name],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env={**os.environ, "PYTHONFAULTHANDLER": "1"},
        )
        self.buffer = b""

    def _stop(self) -> None:
        if self.process is not None:
            if self.process.poll() is None:
                self.process.kill()
            self.process.wait()
            self.process.stdin.close()
            self.process.stdout.close()
            self.process = None

    def close(self) -> None:
        self._stop()
        self.workdir.cleanup()

    def _crash_log(self) -> str:
        path = Path(self.workdir.name) / "stderr.txt"
        return path.read_text(errors="replace")[-4000:] if path.exists() else ""

    def _read_line(self, deadline: float) -> bytes | None:
        """One protocol line, or None if the worker died, reported a fatal
        error (after which it may never exit), or the deadline passed."""
        stdout = self.process.stdout
        while b"\n" not in self.buffer:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            ready, _, _ = select.select([stdout], [], [], min(remaining, 1.0))
            if not ready:
                if "Fatal Python error" in self._crash_log():
                    return None
                continue
            chunk = os.read(stdout.fileno(), 1 << 16)
            if not chunk:
                return None
            self.buffer += chunk
        line, _, self.buffer = self.buffer.partition(b"\n")
        return line

    def run(self, argv: list[str], data: bytes) -> Result:
        if self.process is None:
            self._start()
        request = {"argv": argv, "input_b64": base64.b64encode(data).decode()}
        start = time.monotonic()
        try:
            self.process.stdin.write((json.dumps(request) + "\n").encode())
            self.process.stdin.flush()
        except BrokenPipeError:
            pass
        line = self._read_line(start + self.timeout_s)
        if line is not None:
            reply = json.loads(line)
            return Result(reply["rc"], reply["stderr"], reply["seconds"])
        seconds = time.monotonic() - start
        try:  # a worker that closed its output is dying: let it finish
            self.process.wait(timeout=2)
        except subprocess.TimeoutExpired:
            pass
        fatal = re.search(r"Fatal Python error: (\w+)", self._crash_log())
        hung = self.process.poll() is None and fatal is None
        if hung:
            # Dump the Python stack of the hung worker before killing it.
            self.process.send_signal(signal.SIGABRT)
            try:
                self.process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass
        status = self.process.poll()
        log = self._crash_log()
        self._stop()
        if fatal:  # the worker may not exit after printing this: it counts as a crash
            crash = f"crash: {fatal.group(1).lower()}"
        elif hung:
            crash = f"hang: no result within {self.timeout_s:g} s"
        elif status is not None and status < 0:
            crash = f"killed by signal {signal.Signals(-status).name}"
        else:
            crash = f"worker exited with status {status}"
        return Result(None, log, seconds, crash)


def problems(result: Result, filename: str = "mutant.mlir") -> list[str]:
    """Why `result` breaks the rule (empty when it keeps it)."""
    if result.crash is not None:
        return [result.crash]
    found = []
    if result.rc not in (0, 1):
        found.append(f"exit status {result.rc}")
    if "Traceback" in result.stderr:
        found.append("Python traceback")
    if "internal error" in result.stderr:
        found.append("internal error")
    located = re.search(rf"^(?:\S*/)?{re.escape(filename)}:\d+:\d+: error: ", result.stderr, re.M)
    if result.rc == 1 and not located:
        found.append("exit 1 without a located error")
    if result.rc == 0 and re.search(r"\berror: ", result.stderr):
        found.append("exit 0 with an error")
    return found


def signature(result: Result) -> str:
    """A short key grouping results with the same cause (for reports): what
    broke, and the first telling line of stderr with its numbers blanked."""
    marker = re.search(
        r"(LLVM ERROR: .*|Assertion .*|\w+Error: .*|internal error: .*|"
        r"error: .*)",
        result.stderr,
    )
    lines = result.stderr.strip().splitlines()
    detail = marker.group(1) if marker else (lines[-1] if lines else "")
    return f"{'; '.join(problems(result))} | {re.sub(r'[0-9]+', 'N', detail)[:160]}"
