"""Tensor-parallel scaling: the MLP of examples/tensor_parallel_mlp.py on one
GPU and on two, every linear through wsc.matmul, against the same MLP with
torch's own linears (F.linear: cuBLAS), in one torchrun job:

    torchrun --nproc-per-node=2 benchmarks/tensor_parallel_mlp.py run --out DIR
    python benchmarks/tensor_parallel_mlp.py report DIR/tensor_parallel_mlp.jsonl

The MLP is the up and down projection of a Llama-70B-sized layer (hidden
8192, FFN 28672, f16, no gate), for 2048 and 8192 tokens. On one GPU rank 0
runs it with the whole weights while rank 1 waits; on two GPUs each rank runs
its shard (W_up's rows, W_down's columns) and all_reduce adds the partial
outputs. First each method's output is checked against a float64 reference
of the whole MLP; then, methods in turn, round after round, each rank times
a block of back-to-back layers with CUDA events (host time included, as a
user's loop has it), the ranks starting each block together. A figure is the
median over the rounds of the time per layer (the slower rank's, on two
GPUs), with the lowest and highest round beside it.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from functools import partial
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "examples"))

HIDDEN, FFN = 8192, 28672
TOKENS = [2048, 8192]
ROUNDS = 15
LAYERS_PER_BLOCK = 5
#: Relative Frobenius error against float64 allowed to either method (f16
#: activations and outputs, fp32 accumulation).
TOLERANCE = 2e-3


def _run(out: Path) -> None:
    import torch
    import torch.distributed as dist
    from tensor_parallel_mlp import mlp, relative_error, shard, torch_linear, wsc_linear

    dist.init_process_group("nccl")
    rank, world = dist.get_rank(), dist.get_world_size()
    device = torch.device("cuda", int(os.environ["LOCAL_RANK"]))
    torch.cuda.set_device(device)
    methods = {"wsc": wsc_linear, "torch": torch_linear}
    records = []
    for tokens in TOKENS:
        # Rank 0 draws the layer; every rank gets the same full copy.
        generator = torch.Generator(device=device).manual_seed(tokens)
        x = torch.randn(tokens, HIDDEN, device=device, generator=generator).half()
        w_up = (torch.randn(FFN, HIDDEN, device=device, generator=generator) / HIDDEN**0.5).half()
        w_down = (torch.randn(HIDDEN, FFN, device=device, generator=generator) / FFN**0.5).half()
        for tensor in (x, w_up, w_down):
            dist.broadcast(tensor, src=0)
        exact = torch.relu(x.double() @ w_up.double().T) @ w_down.double().T
        for gpus in (1, world):
            active = rank < gpus
            if gpus == 1:
                up, down, group = w_up, w_down, None
            else:
                (up, down), group = shard(w_up, w_down, rank, world), dist.group.WORLD
            results = {}
            for name, linear in methods.items():
                first = _layer_seconds(partial(mlp, x, up, down, linear, group), active)
                y = mlp(x, up, down, linear, group) if active else None
                error = relative_error(y, exact) if active else None
                results[name] = {"error": error, "first_call_s": first, "per_layer_ms": []}
            for _ in range(ROUNDS):
                for name, linear in methods.items():
                    ms = _time_block(partial(mlp, x, up, down, linear, group), active, device)
                    slowest = torch.tensor([ms], device=device)
                    dist.all_reduce(slowest, op=dist.ReduceOp.MAX)
                    results[name]["per_layer_ms"].append(float(slowest) / LAYERS_PER_BLOCK)
            if rank == 0:
                for name, result in results.items():
                    series = result.pop("per_layer_ms")
                    records.append(
                        {
                            "tokens": tokens,
                            "hidden": HIDDEN,
                            "ffn": FFN,
                            "gpus": gpus,
                            "method": name,
                            **result,
                            "per_layer_ms": {
                                "median": statistics.median(series),
                                "min": min(series),
                                "max": max(series),
                            },
                        }
                    )
                    print(json.dumps(records[-1]), flush=True)
        del exact
    if rank == 0:
        out.mkdir(parents=True, exist_ok=True)
        environment = {
            "gpu": torch.cuda.get_device_name(device),
            "gpus": world,
            "torch": torch.__version__,
            "rounds": ROUNDS,
            "layers_per_block": LAYERS_PER_BLOCK,
        }
        lines = [json.dumps({"environment": environment})] + [json.dumps(r) for r in records]
        (out / "tensor_parallel_mlp.jsonl").write_text("\n".join(lines) + "\n")
        failed = [r for r in records if not (r["error"] is not None and r["error"] < TOLERANCE)]
        if failed:
            print(f"checks failed: {failed}", file=sys.stderr)
            dist.destroy_process_group()
            sys.exit(1)
    dist.destroy_process_group()


def _layer_seconds(layer, active: bool) -> float | None:
    """Wall seconds of the first layer (tuning and loading each shape's kernel)."""
    import time

    import torch
    import torch.distributed as dist

    dist.barrier()
    if not active:
        dist.barrier()
        return None
    start = time.perf_counter()
    layer()
    torch.cuda.synchronize()
    seconds = time.perf_counter() - start
    dist.barrier()
    return seconds


def _time_block(layer, active: bool, device) -> float:
    """Milliseconds of LAYERS_PER_BLOCK back-to-back layers on this rank (0
    where it sits the round out), all ranks starting together."""
    import torch
    import torch.distributed as dist

    torch.cuda.synchronize(device)
    dist.barrier()
    if not active:
        return 0.0
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(LAYERS_PER_BLOCK):
        layer()
    end.record()
    end.synchronize()
    return start.elapsed_time(end)


def _report(path: Path) -> None:
    lines = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    records = [r for r in lines if "method" in r]
    figure = {(r["tokens"], r["gpus"], r["method"]): r["per_layer_ms"] for r in records}
    worlds = sorted({r["gpus"] for r in records})
    print(
        "| tokens | GPUs | wsc ms/layer | torch ms/layer | wsc / torch (time) "
        "| speed-up over 1 GPU: wsc / torch |"
    )
    print("|---|---|---|---|---|---|")
    for tokens in sorted({r["tokens"] for r in records}):
        for gpus in worlds:
            wsc, torch = figure[(tokens, gpus, "wsc")], figure[(tokens, gpus, "torch")]
            one_wsc, one_torch = figure[(tokens, 1, "wsc")], figure[(tokens, 1, "torch")]
            print(
                f"| {tokens} | {gpus} | {_cell(wsc)} | {_cell(torch)} "
                f"| {wsc['median'] / torch['median']:.3f} "
                f"| {one_wsc['median'] / wsc['median']:.2f} / "
                f"{one_torch['median'] / torch['median']:.2f} |"
            )


def _cell(stats: dict) -> str:
    return f"{stats['median']:.3f} ({stats['min']:.3f}-{stats['max']:.3f})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser("run", help="time the MLP (under torchrun, one rank per GPU)")
    run.add_argument("--out", type=Path, required=True)
    report = commands.add_parser("report", help="the markdown table of a run's records")
    report.add_argument("records", type=Path)
    args = parser.parse_args()
    if args.command == "run":
        _run(args.out)
    else:
        _report(args.records)


if __name__ == "__main__":
    main()
