"""The product benchmark of the warp-specialized row softmax (issue 17): the
kernel of examples/softmax.py against torch.softmax and against a
device-to-device copy of the same bytes, in one process on the same inputs,
methods timed in turn.

    here:  python benchmarks/row_softmax.py prepare --out DIR [--row-lengths 1024,8192]
    there: python benchmarks/row_softmax.py run DIR --shapes 4096x1024,65536x8192 \\
               --out results.jsonl

`prepare` builds the kernel for each row length (it is built for one) and
writes an artifact per length, DIR/c<C>. `run` resizes the artifact to each
shape R x C, checks it once against a float64 softmax on fresh random inputs
with the output NaN-poisoned (every element), then times a CUDA graph of
back-to-back calls per method, replayed in rotating order over several
rounds: the median and spread of the per-call microseconds, and the
bandwidth each reaches counting one read and one write of R x C bf16 values.
The kernel's bandwidth is also stated as a fraction of the copy's. `run`
needs torch and a Hopper GPU; no MLIR.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
from pathlib import Path

from wsc_matmul import graph_timer, in_turn

ROUNDS = 7
#: The row lengths of the issue's sizes (4096 x 1024 to 65536 x 8192).
ROW_LENGTHS = (1024, 2048, 4096, 8192)
SHAPES = ",".join(f"{rows}x{length}" for rows in (4096, 16384, 65536) for length in ROW_LENGTHS)
#: Random inputs are N(0, 1) times this: rows whose softmax is far from uniform.
INPUT_SCALE = 4.0


def prepare(out: Path, row_lengths: list[int]) -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "examples"))
    from softmax import softmax, softmax_view

    for row_length in row_lengths:
        directory = (
            softmax(row_length=row_length)
            .compile()
            .write_artifact(out / f"c{row_length}", **softmax_view(4096, row_length))
        )
        print(f"row length {row_length}: {directory}", flush=True)


def _calls(bytes_moved: int) -> int:
    """Calls per graph: a replay of about 2 ms at 3 TB/s."""
    return max(5, min(200, int(6e9 / bytes_moved)))


def bench(torch, directory: Path, rows: int, row_length: int, seed: int) -> dict:
    from wsc.kernels.matmul.check import relative_frobenius
    from wsc.runtime import Kernel
    from wsc.runtime.artifact import load_artifact

    artifact = load_artifact(directory / f"c{row_length}")
    split = artifact.config["row_split"]
    view = (rows * split, row_length // split)
    artifact = artifact.resized(a_dim0=view[0], a_dim1=view[1])
    kernel = Kernel(artifact)
    generator = torch.Generator(device="cuda").manual_seed(seed)
    x = (torch.randn(rows, row_length, device="cuda", generator=generator) * INPUT_SCALE).to(
        torch.bfloat16
    )
    y = torch.full_like(x, math.nan)
    tensors = {"a": x.view(view), "b": y.view(view)}
    kernel.launch(**tensors)
    kernel.synchronize(timeout_s=30)
    reference = torch.softmax(x.double(), dim=-1)
    nan_count = int(torch.isnan(y).sum())
    got = y.double()
    rel_err = relative_frobenius(got, reference, torch.linalg.norm)
    max_err = float((got - reference).abs().max())
    torch_err = relative_frobenius(torch.softmax(x, dim=-1).double(), reference, torch.linalg.norm)
    del reference, got
    # bf16 rounds each value to 2^-8 of itself: the kernel may add as much again.
    tolerance = 2 * 2.0**-8

    out = torch.empty_like(x)
    methods = {
        "wsc": lambda: kernel.launch(stream=torch.cuda.current_stream(), **tensors),
        "torch": lambda: torch.softmax(x, dim=-1, out=out),
        "copy": lambda: out.copy_(x),
    }
    bytes_moved = 2 * x.numel() * x.element_size()
    calls = _calls(bytes_moved)
    replays = {name: graph_timer(torch, call, [()], calls) for name, call in methods.items()}
    times: dict[str, list[float]] = {name: [] for name in methods}
    for name in in_turn(list(methods), ROUNDS):
        times[name].append(replays[name]())
    results = {}
    for name, values in times.items():
        median = statistics.median(values)
        results[name] = {
            "median_us": median,
            "min_us": min(values),
            "max_us": max(values),
            "tb_per_s": bytes_moved / median / 1e6,
        }
    return {
        "rows": rows,
        "row_length": row_length,
        "dtype": "bf16",
        "config": dict(artifact.config or {}),
        "rel_err": rel_err,
        "max_abs_err": max_err,
        "torch_rel_err": torch_err,
        "tol": tolerance,
        "nan_count": nan_count,
        "ok": nan_count == 0 and rel_err <= tolerance,
        "calls_per_graph": calls,
        "rounds": ROUNDS,
        "results": results,
        "wsc_over_copy": results["wsc"]["tb_per_s"] / results["copy"]["tb_per_s"],
        "wsc_over_torch": results["torch"]["median_us"] / results["wsc"]["median_us"],
    }


def run(directory: Path, shapes: str, seed: int, out_path: Path) -> int:
    import torch

    failed = False
    with out_path.open("a") as out:
        for shape in shapes.split(","):
            rows, row_length = (int(text) for text in shape.split("x"))
            record = bench(torch, directory, rows, row_length, seed)
            out.write(json.dumps(record) + "\n")
            out.flush()
            result = record["results"]
            line = ", ".join(
                f"{name} {r['median_us']:.1f} us [{r['min_us']:.1f}, {r['max_us']:.1f}] "
                f"{r['tb_per_s']:.2f} TB/s"
                for name, r in result.items()
            )
            print(
                f"{rows}x{row_length}: {'ok' if record['ok'] else 'FAILED'} rel_err "
                f"{record['rel_err']:.2e} (torch {record['torch_rel_err']:.2e}); {line}; "
                f"wsc / copy {record['wsc_over_copy']:.3f}, "
                f"torch / wsc {record['wsc_over_torch']:.2f}",
                flush=True,
            )
            failed = failed or not record["ok"]
    return 1 if failed else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    make = commands.add_parser("prepare", help="build the kernels' artifacts (needs MLIR)")
    make.add_argument("--out", type=Path, required=True)
    make.add_argument("--row-lengths", default=",".join(map(str, ROW_LENGTHS)))
    timed = commands.add_parser("run", help="check and time them (needs torch and a GPU)")
    timed.add_argument("directory", type=Path)
    timed.add_argument("--shapes", default=SHAPES, help="R x C of each run")
    timed.add_argument("--seed", type=int, default=0)
    timed.add_argument("--out", type=Path, required=True, help="JSON lines, one per run")
    args = parser.parse_args(argv)
    if args.command == "prepare":
        prepare(args.out, [int(text) for text in args.row_lengths.split(",")])
        return 0
    return run(args.directory, args.shapes, args.seed, args.out)


if __name__ == "__main__":
    sys.exit(main())
