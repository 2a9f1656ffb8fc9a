"""A tensor-parallel MLP whose linears are wsc.matmul calls, one rank per GPU
under torch.distributed (NCCL):

    pip install -e '.[torch]'    # it needs PyTorch, which wsc itself does not
    torchrun --nproc-per-node=2 examples/tensor_parallel_mlp.py

    y = relu(x W_up^T) W_down^T,   W_up: [ffn, hidden],  W_down: [hidden, ffn]

Rank r of w holds rows r*ffn/w .. (r+1)*ffn/w of W_up (column parallel: its
slice of the hidden activation, no communication) and the same columns of
W_down (row parallel: a partial sum of y); one all_reduce adds the partial
sums. Each rank calls wsc.matmul on its own device; ranks that share a
machine share its kernel cache ($WSC_CACHE_DIR), and a shape that several
ranks meet first at the same moment is tuned once (the others wait for the
choice).
"""

from __future__ import annotations

import argparse
import os
import sys

import torch
import torch.distributed as dist

import wsc


def wsc_linear(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    """x @ weight^T, weight as torch.nn.Linear stores it ([out, in])."""
    return wsc.matmul(x, weight.T)


def torch_linear(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.linear(x, weight)


def shard(w_up: torch.Tensor, w_down: torch.Tensor, rank: int, world: int):
    """Rank `rank`'s rows of W_up and columns of W_down (ffn split evenly)."""
    ffn = w_up.shape[0]
    if ffn % world:
        raise ValueError(f"ffn = {ffn} does not split over {world} ranks")
    part = slice(rank * ffn // world, (rank + 1) * ffn // world)
    return w_up[part].contiguous(), w_down[:, part].contiguous()


def relative_error(y: torch.Tensor, exact: torch.Tensor) -> float:
    """||y - exact|| / ||exact|| (Frobenius, in float64 on exact's device);
    NaN if y holds a NaN."""
    got = y.double().to(exact.device)
    if torch.isnan(got).any():
        return float("nan")
    return float(torch.linalg.norm(got - exact) / torch.linalg.norm(exact))


def mlp(x, w_up, w_down, linear=wsc_linear, group=None) -> torch.Tensor:
    """The MLP on this rank's shard; with a process group, the all_reduced y."""
    y = linear(torch.relu(linear(x, w_up)), w_down)
    if group is not None:
        dist.all_reduce(y, group=group)
    return y


def main() -> None:
    dist.init_process_group("nccl")
    rank, world = dist.get_rank(), dist.get_world_size()
    device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", rank)))
    torch.cuda.set_device(device)
    tokens, hidden, ffn = 1024, 2048, 8192
    # Every rank draws the same full weights and input, then keeps its shard.
    generator = torch.Generator().manual_seed(0)
    x = torch.randn(tokens, hidden, generator=generator).half()
    w_up = (torch.randn(ffn, hidden, generator=generator) / hidden**0.5).half()
    w_down = (torch.randn(hidden, ffn, generator=generator) / ffn**0.5).half()
    up, down = shard(w_up.to(device), w_down.to(device), rank, world)
    y = mlp(x.to(device), up, down, group=dist.group.WORLD)
    exact = torch.relu(x.double() @ w_up.double().T) @ w_down.double().T
    error = relative_error(y, exact)
    print(f"rank {rank}/{world} on {device}: relative error against float64 {error:.2e}")
    dist.destroy_process_group()


if __name__ == "__main__":
    argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0].replace("\n", " "),
        epilog="Run it under torchrun, one process per GPU: "
        "torchrun --nproc-per-node=2 examples/tensor_parallel_mlp.py",
    ).parse_args()
    if "RANK" not in os.environ:
        sys.exit(
            "tensor_parallel_mlp.py: error: run it under torchrun, one process per GPU: "
            "torchrun --nproc-per-node=2 examples/tensor_parallel_mlp.py"
        )
    main()
