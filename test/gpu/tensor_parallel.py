"""One rank of test_multi_gpu's tensor-parallel check, started by torchrun:

    torchrun --nproc-per-node=2 test/gpu/tensor_parallel.py OUT_DIR

The MLP of examples/tensor_parallel_mlp.py on fresh random data, every
linear through wsc.matmul, all ranks making their first calls at the same
moment on a cache that holds compiled kernels but no tuned choices. Each rank
writes OUT_DIR/rank<r>.json: its error against a float64 reference of the
whole MLP (and torch's own linears' error), the shape classes it searched
(autotuned) itself, and the ones it found chosen.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
from pathlib import Path

import torch
import torch.distributed as dist

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))
from tensor_parallel_mlp import mlp, relative_error, shard, torch_linear  # noqa: E402

#: Tokens (not a multiple of any tile), hidden size and FFN size (each rank's
#: slice of it a multiple of 8, so the up projection's f16 rows go out by TMA).
TOKENS, HIDDEN, FFN = 1000, 2048, 5632


def main(out_dir: Path) -> None:
    dist.init_process_group("nccl")
    rank, world = dist.get_rank(), dist.get_world_size()
    device = torch.device("cuda", int(os.environ["LOCAL_RANK"]))
    torch.cuda.set_device(device)
    import wsc

    matmul_module = importlib.import_module("wsc.matmul")
    searched = []
    tune = matmul_module._tune

    def counting_tune(p, *args, **kwargs):
        searched.append(repr(matmul_module._class(p)))
        return tune(p, *args, **kwargs)

    matmul_module._tune = counting_tune

    generator = torch.Generator().manual_seed(1234)
    x = torch.randn(TOKENS, HIDDEN, generator=generator).half()
    w_up = (torch.randn(FFN, HIDDEN, generator=generator) / HIDDEN**0.5).half()
    w_down = (torch.randn(HIDDEN, FFN, generator=generator) / FFN**0.5).half()
    up, down = shard(w_up.to(device), w_down.to(device), rank, world)
    x_dev = x.to(device)

    dist.barrier()  # every rank's first wsc.matmul call at the same moment
    y = mlp(x_dev, up, down, group=dist.group.WORLD)
    y_torch = mlp(x_dev, up, down, linear=torch_linear, group=dist.group.WORLD)
    # The steady state: the same call again, its output poisoned first.
    again = torch.full_like(y, float("nan"))
    h = torch.relu(wsc.matmul(x_dev, up.T))
    wsc.matmul(h, down.T, out=again)
    dist.all_reduce(again)
    torch.cuda.synchronize(device)

    exact = torch.relu(x.double() @ w_up.double().T) @ w_down.double().T

    classes = sorted({repr(matmul_module._class(p)) for p in _plans(x_dev, up, down, h)})
    report = {
        "rank": rank,
        "device": str(device),
        "error": relative_error(y, exact),
        "error_again": relative_error(again, exact),
        "torch_error": relative_error(y_torch, exact),
        "searched": searched,
        "classes": classes,
        "current_device": torch.cuda.current_device(),
    }
    (out_dir / f"rank{rank}.json").write_text(json.dumps(report))
    dist.destroy_process_group()


def _plans(x, up, down, h):
    from wsc.matmul import plan

    return [plan(x, up.T), plan(h, down.T)]


if __name__ == "__main__":
    main(Path(sys.argv[1]))
