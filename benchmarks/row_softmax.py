"""The product benchmark of the warp-specialized row softmax (issue 17):
`wsc.softmax` as users call it against torch.softmax and against a
device-to-device copy of the same bytes, in one process on the same inputs,
methods timed in turn. Each method runs over the same input and output pairs
in turn, enough of them that no call finds its tensors in L2.

    here:  python benchmarks/row_softmax.py prepare [--row-lengths 1024,8192]
    there: python benchmarks/row_softmax.py run --shapes 4096x1024,65536x8192 \\
               --out results.jsonl

`prepare` compiles the kernel for each row length (it is built for one) into
the wsc cache ($WSC_CACHE_DIR), as a user's CPU machine would before the GPU
machine runs. `run` checks `wsc.softmax(x, out=y)` once per shape R x C
against a float64 softmax on fresh random inputs with the output
NaN-poisoned (every element), then, methods in turn over several rounds,
times a block of back-to-back calls by the host clock until it has finished
(the user path: wall time per call, host included) and the same block
captured in a CUDA graph and replayed (the kernel alone): medians and
spread of the microseconds per call, and the bandwidth each reaches counting
one read and one write of R x C bf16 values. The kernel's bandwidth is also
stated as a fraction of the copy's. `run` needs torch and a Hopper GPU; no
MLIR.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
from pathlib import Path

from wsc_matmul import L2_BYTES, graph_timer, in_turn, timed_block

ROUNDS = 7
#: The row lengths of the issue's sizes (4096 x 1024 to 65536 x 8192).
ROW_LENGTHS = (1024, 2048, 4096, 8192)
SHAPES = ",".join(f"{rows}x{length}" for rows in (4096, 16384, 65536) for length in ROW_LENGTHS)
#: Random inputs are N(0, 1) times this: rows whose softmax is far from uniform.
INPUT_SCALE = 4.0
#: Input and output pairs used in turn, enough to fill three times the L2
#: cache: no call finds its tensors in L2 from the one before, as in the
#: matmul benchmark (a copy of 8 MB back to back on one pair stays in L2).
MAX_SETS = 16


def prepare(row_lengths: list[int]) -> None:
    from wsc.kernels.softmax.schedule import SOFTMAX, softmax_view

    for row_length in row_lengths:
        fixed = {"row_length": row_length, "dtype": "bf16"}
        directory = SOFTMAX.artifact({}, softmax_view(1, row_length), fixed)
        print(f"row length {row_length}: {directory}", flush=True)


def _calls(bytes_moved: int) -> int:
    """Calls per graph: a replay of about 2 ms at 3 TB/s."""
    return max(5, min(200, int(6e9 / bytes_moved)))


def bench(torch, rows: int, row_length: int, seed: int) -> dict:
    import wsc
    from wsc.kernels.matmul.check import relative_frobenius
    from wsc.kernels.softmax.schedule import schedule

    generator = torch.Generator(device="cuda").manual_seed(seed)
    x = (torch.randn(rows, row_length, device="cuda", generator=generator) * INPUT_SCALE).to(
        torch.bfloat16
    )
    y = torch.full_like(x, math.nan)
    wsc.softmax(x, out=y)
    torch.cuda.synchronize()
    reference = torch.softmax(x.double(), dim=-1)
    nan_count = int(torch.isnan(y).sum())
    got = y.double()
    rel_err = relative_frobenius(got, reference, torch.linalg.norm)
    max_err = float((got - reference).abs().max())
    torch_err = relative_frobenius(torch.softmax(x, dim=-1).double(), reference, torch.linalg.norm)
    del reference, got
    # bf16 rounds each value to 2^-8 of itself: the kernel may add as much again.
    tolerance = 2 * 2.0**-8

    bytes_moved = 2 * x.numel() * x.element_size()
    count = max(1, min(MAX_SETS, math.ceil(3 * L2_BYTES / bytes_moved)))
    sets = [(x, torch.empty_like(x))]
    sets += [(torch.randn_like(x) * INPUT_SCALE, torch.empty_like(x)) for _ in range(count - 1)]
    methods = {
        "wsc": lambda x, out: wsc.softmax(x, out=out),
        "torch": lambda x, out: torch.softmax(x, dim=-1, out=out),
        "copy": lambda x, out: out.copy_(x),
    }
    calls = _calls(bytes_moved)
    replays = {name: graph_timer(torch, call, sets, calls) for name, call in methods.items()}
    graphed: dict[str, list[float]] = {name: [] for name in methods}
    wall: dict[str, list[float]] = {name: [] for name in methods}
    for name in in_turn(list(methods), ROUNDS):
        graphed[name].append(replays[name]())
        wall[name].append(timed_block(torch, methods[name], sets, calls)[1])
    results = {}
    for name in methods:
        median = statistics.median(graphed[name])
        results[name] = {
            "median_us": median,
            "min_us": min(graphed[name]),
            "max_us": max(graphed[name]),
            "tb_per_s": bytes_moved / median / 1e6,
            "wall_us": statistics.median(wall[name]),
            "wall_min_us": min(wall[name]),
            "wall_max_us": max(wall[name]),
        }
    return {
        "rows": rows,
        "row_length": row_length,
        "dtype": "bf16",
        "config": schedule(row_length)._asdict(),
        "rel_err": rel_err,
        "max_abs_err": max_err,
        "torch_rel_err": torch_err,
        "tol": tolerance,
        "nan_count": nan_count,
        "ok": nan_count == 0 and rel_err <= tolerance,
        "calls_per_graph": calls,
        "input_sets": count,
        "rounds": ROUNDS,
        "results": results,
        "wsc_over_copy": results["wsc"]["tb_per_s"] / results["copy"]["tb_per_s"],
        "wsc_over_torch": results["torch"]["median_us"] / results["wsc"]["median_us"],
        "wsc_over_torch_wall": results["torch"]["wall_us"] / results["wsc"]["wall_us"],
    }


def run(shapes: str, seed: int, out_path: Path) -> int:
    import torch

    failed = False
    with out_path.open("a") as out:
        for shape in shapes.split(","):
            rows, row_length = (int(text) for text in shape.split("x"))
            record = bench(torch, rows, row_length, seed)
            out.write(json.dumps(record) + "\n")
            out.flush()
            result = record["results"]
            line = ", ".join(
                f"{name} {r['median_us']:.1f} us [{r['min_us']:.1f}, {r['max_us']:.1f}] "
                f"{r['tb_per_s']:.2f} TB/s (wall {r['wall_us']:.1f} us)"
                for name, r in result.items()
            )
            print(
                f"{rows}x{row_length}: {'ok' if record['ok'] else 'FAILED'} rel_err "
                f"{record['rel_err']:.2e} (torch {record['torch_rel_err']:.2e}); {line}; "
                f"wsc / copy {record['wsc_over_copy']:.3f}, "
                f"torch / wsc {record['wsc_over_torch']:.2f} "
                f"(wall {record['wsc_over_torch_wall']:.2f})",
                flush=True,
            )
            failed = failed or not record["ok"]
    return 1 if failed else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    make = commands.add_parser("prepare", help="compile the kernels into the cache (needs MLIR)")
    make.add_argument("--row-lengths", default=",".join(map(str, ROW_LENGTHS)))
    timed = commands.add_parser("run", help="check and time wsc.softmax (needs torch and a GPU)")
    timed.add_argument("--shapes", default=SHAPES, help="R x C of each run")
    timed.add_argument("--seed", type=int, default=0)
    timed.add_argument("--out", type=Path, required=True, help="JSON lines, one per run")
    args = parser.parse_args(argv)
    if args.command == "prepare":
        prepare([int(text) for text in args.row_lengths.split(",")])
        return 0
    return run(args.shapes, args.seed, args.out)


if __name__ == "__main__":
    sys.exit(main())
