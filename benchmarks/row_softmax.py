"""The product benchmark of the warp-specialized row softmax:
`wsc.softmax` as users call it against torch.softmax and against a
device-to-device copy of the same bytes, in one process on the same inputs,
methods timed in turn. Each method runs over the same input and output pairs
in turn, enough of them that no call finds its tensors in L2.

    here:  python benchmarks/row_softmax.py prepare [--row-lengths 1024,8192]
               [--schedules 2/3/128/resident,1/4/128/online,2/3/128/online/32]
    there: python benchmarks/row_softmax.py run --shapes 4096x1024,65536x8192 \\
               [--schedules ...] --out results.jsonl

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
stated as a fraction of the copy's best: the faster of the copy's two timings,
as the captured copy of a 512 MiB tensor runs at 2.7 TB/s where the same copy
back to back reaches 4.0 (results/h200-row-softmax.md). `--schedules` names
candidate schedules (stages/blocks per SM/block columns/form, then
optionally /row split: the rows of the kernel's view one row spans, and
/release: the stage released once in registers) whose kernels
are checked and timed beside wsc.softmax's, in the same rounds, to choose
the schedule of a row length. `run` needs torch and a Hopper GPU; no MLIR.
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


def parse_schedules(text: str) -> list:
    """The Schedules of `text`: stages/blocks_per_sm/block_cols/form[/row_split][/release],
    comma separated, the form "resident" or "online", "release" for
    release_on_read."""
    if not text:
        return []
    from wsc.kernels.softmax.schedule import ROW_SPLITS, WARP_ROWS, Schedule

    schedules = []
    for item in text.split(","):
        fields = item.split("/")
        release = fields[-1] == "release"
        fields = fields[:-1] if release else fields
        if (
            len(fields) not in (4, 5)
            or fields[3] not in ("resident", "online")
            or (len(fields) == 5 and fields[4] not in map(str, ROW_SPLITS))
            or (release and fields[3] != "resident")
        ):
            raise SystemExit(
                f"--schedules: {item!r} is not stages/blocks/cols/resident|online[/row_split]"
                f"[/release], row_split one of {', '.join(map(str, ROW_SPLITS))}, /release "
                f"with the resident form only"
            )
        stages, blocks, cols = (int(field) for field in fields[:3])
        split = int(fields[4]) if len(fields) == 5 else WARP_ROWS
        schedules.append(Schedule(stages, blocks, cols, fields[3] == "resident", split, release))
    return schedules


def schedule_name(schedule) -> str:
    from wsc.kernels.softmax.schedule import WARP_ROWS

    form = "resident" if schedule.resident else "online"
    name = f"{schedule.stages}/{schedule.blocks_per_sm}/{schedule.block_cols}/{form}"
    name = name if schedule.row_split == WARP_ROWS else f"{name}/{schedule.row_split}"
    return f"{name}/release" if schedule.release_on_read else name


def schedule_artifact(schedule, row_length: int):
    """The kernel of `schedule` for rows of `row_length` bf16 values: cached,
    or compiled now (where MLIR is installed)."""
    from wsc.kernels.softmax.schedule import SOFTMAX, softmax_view

    config = {
        "num_stages": schedule.stages,
        "blocks_per_sm": schedule.blocks_per_sm,
        "block_cols": schedule.block_cols,
        "resident": schedule.resident,
        "row_split": schedule.row_split,
        "release_on_read": schedule.release_on_read,
    }
    fixed = {"row_length": row_length, "dtype": "bf16"}
    return SOFTMAX.artifact(config, softmax_view(1, row_length, schedule.row_split), fixed)


def prepare(row_lengths: list[int], schedules: list) -> None:
    from wsc.kernels.softmax.schedule import SOFTMAX, softmax_view

    for row_length in row_lengths:
        fixed = {"row_length": row_length, "dtype": "bf16"}
        directory = SOFTMAX.artifact({}, softmax_view(1, row_length), fixed)
        print(f"row length {row_length}: {directory}", flush=True)
        for schedule in schedules:
            try:
                directory = schedule_artifact(schedule, row_length)
            except Exception as error:  # a schedule that does not fit this row length
                print(f"  {schedule_name(schedule)}: not built ({error})".splitlines()[0])
                continue
            print(f"  {schedule_name(schedule)}: {directory}", flush=True)


def schedule_launch(torch, schedule, x):
    """A launch (x, out) of `schedule`'s kernel for x's shape, or None where
    `prepare` did not build it."""
    from wsc.kernels.softmax.schedule import softmax_view
    from wsc.runtime import BoundLaunch, loaded_kernel

    rows, row_length = x.shape
    try:
        directory = schedule_artifact(schedule, row_length)
    except Exception:  # not in the cache, and no compiler here
        return None
    sizes = softmax_view(rows, row_length, schedule.row_split)
    kernel = loaded_kernel(directory, x.device.index or 0).resized(**sizes)
    bound = BoundLaunch(kernel.prepare(a=x.view(*sizes.values()), b=x.view(*sizes.values())))

    def launch(x, out):
        bound(torch.cuda.current_stream().cuda_stream, x.data_ptr(), out.data_ptr())

    return launch


def _calls(bytes_moved: int) -> int:
    """Calls per graph: a replay of about 2 ms at 3 TB/s."""
    return max(5, min(200, int(6e9 / bytes_moved)))


def bench(torch, rows: int, row_length: int, seed: int, schedules=()) -> dict:
    import wsc
    from wsc.kernels.matmul.check import relative_frobenius
    from wsc.kernels.softmax.schedule import schedule

    generator = torch.Generator(device="cuda").manual_seed(seed)
    x = (torch.randn(rows, row_length, device="cuda", generator=generator) * INPUT_SCALE).to(
        torch.bfloat16
    )
    reference = torch.softmax(x.double(), dim=-1)
    # bf16 rounds each value to 2^-8 of itself: the kernel may add as much again.
    tolerance = 2 * 2.0**-8

    def check(launch, reference) -> dict:
        y = torch.full_like(x, math.nan)
        launch(x, y)
        torch.cuda.synchronize()
        got = y.double()
        nan_count = int(torch.isnan(y).sum())
        rel_err = relative_frobenius(got, reference, torch.linalg.norm)
        max_err = float((got - reference).abs().max())
        ok = nan_count == 0 and rel_err <= tolerance
        return {"rel_err": rel_err, "max_abs_err": max_err, "nan_count": nan_count, "ok": ok}

    methods = {
        "wsc": lambda x, out: wsc.softmax(x, out=out),
        "torch": lambda x, out: torch.softmax(x, dim=-1, out=out),
        "copy": lambda x, out: out.copy_(x),
    }
    checked = check(methods["wsc"], reference)
    candidates = {}
    for candidate in schedules:
        launch = schedule_launch(torch, candidate, x)
        if launch is None:
            candidates[schedule_name(candidate)] = {"built": False}
            continue
        methods[schedule_name(candidate)] = launch
        candidates[schedule_name(candidate)] = {"built": True, **check(launch, reference)}
    torch_err = relative_frobenius(torch.softmax(x, dim=-1).double(), reference, torch.linalg.norm)
    del reference

    bytes_moved = 2 * x.numel() * x.element_size()
    count = max(1, min(MAX_SETS, math.ceil(3 * L2_BYTES / bytes_moved)))
    sets = [(x, torch.empty_like(x))]
    sets += [(torch.randn_like(x) * INPUT_SCALE, torch.empty_like(x)) for _ in range(count - 1)]
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
    copy_best = bytes_moved / min(results["copy"]["median_us"], results["copy"]["wall_us"]) / 1e6
    return {
        "rows": rows,
        "row_length": row_length,
        "dtype": "bf16",
        "config": schedule(row_length)._asdict(),
        **checked,
        "ok": checked["ok"] and all(c.get("ok", True) for c in candidates.values()),
        "torch_rel_err": torch_err,
        "tol": tolerance,
        "schedules": candidates,
        "calls_per_graph": calls,
        "input_sets": count,
        "rounds": ROUNDS,
        "results": results,
        "copy_best_tb_per_s": copy_best,
        "wsc_over_copy": results["wsc"]["tb_per_s"] / copy_best,
        "wsc_over_torch": results["torch"]["median_us"] / results["wsc"]["median_us"],
        "wsc_over_torch_wall": results["torch"]["wall_us"] / results["wsc"]["wall_us"],
        "candidates_over_copy": {
            name: results[name]["tb_per_s"] / copy_best for name in methods if "/" in name
        },
    }


def run(shapes: str, seed: int, out_path: Path, schedules: list) -> int:
    import torch

    failed = False
    with out_path.open("a") as out:
        for shape in shapes.split(","):
            rows, row_length = (int(text) for text in shape.split("x"))
            record = bench(torch, rows, row_length, seed, schedules)
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
                f"wsc / copy {record['wsc_over_copy']:.3f} (copy at best "
                f"{record['copy_best_tb_per_s']:.2f} TB/s), "
                f"torch / wsc {record['wsc_over_torch']:.2f} "
                f"(wall {record['wsc_over_torch_wall']:.2f})",
                flush=True,
            )
            for name, candidate in record["schedules"].items():
                if not candidate["built"]:
                    print(f"  {name}: not in the cache (run prepare with it)", flush=True)
                    continue
                print(
                    f"  {name}: {'ok' if candidate['ok'] else 'FAILED'} rel_err "
                    f"{candidate['rel_err']:.2e}, {result[name]['tb_per_s']:.2f} TB/s, "
                    f"/ copy {record['candidates_over_copy'][name]:.3f}",
                    flush=True,
                )
            failed = failed or not record["ok"]
    return 1 if failed else 0


def row_lengths(text: str) -> list[int]:
    """--row-lengths: row lengths the kernel takes, comma separated."""
    from wsc.kernels.softmax.schedule import check_row_length

    lengths = []
    for item in text.split(","):
        if not item.isdecimal():
            raise argparse.ArgumentTypeError(f"{item!r} is not a row length (a positive int)")
        try:
            check_row_length(int(item))
        except ValueError as error:
            raise argparse.ArgumentTypeError(str(error)) from None
        lengths.append(int(item))
    return lengths


def shapes(text: str) -> str:
    """--shapes: R x C shapes of positive ints, comma separated."""
    for item in text.split(","):
        fields = item.split("x")
        if len(fields) != 2 or not all(field.isdecimal() and int(field) > 0 for field in fields):
            raise argparse.ArgumentTypeError(f"{item!r} is not RxC (two positive ints)")
    return text


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    make = commands.add_parser("prepare", help="compile the kernels into the cache (needs MLIR)")
    make.add_argument("--row-lengths", type=row_lengths, default=ROW_LENGTHS, help="e.g. 1024,8192")
    schedules_help = "candidate schedules, stages/blocks_per_sm/block_cols/resident|online"
    make.add_argument("--schedules", default="", help=schedules_help)
    timed = commands.add_parser("run", help="check and time wsc.softmax (needs torch and a GPU)")
    timed.add_argument("--shapes", type=shapes, default=SHAPES, help="R x C of each run")
    timed.add_argument("--seed", type=int, default=0)
    timed.add_argument("--out", type=Path, required=True, help="JSON lines, one per run")
    timed.add_argument("--schedules", default="", help=schedules_help)
    args = parser.parse_args(argv)
    schedules = parse_schedules(args.schedules)
    if args.command == "prepare":
        prepare(args.row_lengths, schedules)
        return 0
    return run(args.shapes, args.seed, args.out, schedules)


if __name__ == "__main__":
    sys.exit(main())
