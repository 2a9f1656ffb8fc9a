"""One shape's wsc.matmul candidates timed two ways, beside cuBLAS, in one
process: as the autotuner times them (one launch between events after an L2
flush) and as the product benchmark times them (a CUDA graph of launches
back to back, input sets rotating). Where the two rank configs differently,
the tuner chooses for conditions the user does not run in.

    here:  python benchmarks/wsc_matmul.py prepare --layouts nk --shapes 3000x5000x7000
    there: python benchmarks/matmul_conditions.py 3000x5000x7000xnk [MxNxKxLAYOUT ...]

Prints, per config of the shape's space (group_m = 8, no split of K), the
median microseconds of each way. Needs torch and a Hopper GPU; no MLIR.
"""

from __future__ import annotations

import statistics
import sys

from wsc_matmul import graph_timer

SETS = 4
FLUSHED_LAUNCHES = 20
GRAPH_CALLS, GRAPH_ROUNDS = 40, 5
L2_FLUSH_BYTES = 2 * 60 * 2**20


def flushed(torch, launch) -> float:
    """Median us of single launches, each after a write over twice the L2."""
    buffer = torch.empty(L2_FLUSH_BYTES // 4, device="cuda", dtype=torch.float32)
    for _ in range(3):
        launch(0)
    times = []
    for _ in range(FLUSHED_LAUNCHES):
        buffer.zero_()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        launch(0)
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1e3)
    return statistics.median(times)


def graphed(torch, launch) -> float:
    """Median us per launch of a CUDA graph of launches over rotating sets."""
    replay = graph_timer(torch, launch, [(index,) for index in range(SETS)], GRAPH_CALLS)
    return statistics.median(replay() for _ in range(GRAPH_ROUNDS))


def conditions(torch, spec: str) -> None:
    from wsc.matmul import SPACES, _cache, _fixed, plan, tuning_sizes
    from wsc.runtime import Kernel
    from wsc.runtime.artifact import load_artifact

    m, n, k, layout = spec.split("x")
    m, n, k = int(m), int(n), int(k)
    a = [torch.randn(m, k, device="cuda").half() * k**-0.25 for _ in range(SETS)]
    w = [torch.randn(n, k, device="cuda").half() * k**-0.25 for _ in range(SETS)]
    b = [wt.T if layout == "nk" else wt.T.contiguous() for wt in w]
    c = [torch.empty(m, n, device="cuda", dtype=torch.float16) for _ in range(SETS)]
    p = plan(a[0], b[0])
    space = SPACES[p.space]
    print(f"== {spec}: space {p.space} (us: flushed single launch, graphed back to back)")

    def cublas(index: int) -> None:
        torch.mm(a[index], b[index], out=c[index])

    print(f"  {flushed(torch, cublas):8.1f} {graphed(torch, cublas):8.1f}  cuBLAS", flush=True)
    for config in space.configs():
        if config.get("group_m") != 8 or config.get("split_k", 1) > 1 or config.get("stream_k"):
            continue  # workspaces: timed by the tuner's own tables
        path = space.artifact(config, tuning_sizes(p), _fixed(p), _cache())
        artifact = load_artifact(path)
        kernel = Kernel(artifact.resized(**{**artifact.sizes, "m": m, "n": n, "k": k}))
        kernel_b = w if layout == "nk" else b
        # Prepared once per set and stream: a launch is the driver call alone.
        prepared: dict = {}

        def launch(index: int, kernel=kernel, kernel_b=kernel_b, prepared=prepared) -> None:
            stream = torch.cuda.current_stream()
            key = (index, stream.cuda_stream)
            if key not in prepared:
                prepared[key] = kernel.prepare(stream, a=a[index], b=kernel_b[index], c=c[index])
            prepared[key].launch()

        shown = {name: value for name, value in config.items() if name != "group_m"}
        print(f"  {flushed(torch, launch):8.1f} {graphed(torch, launch):8.1f}  {shown}", flush=True)


def main(argv: list[str]) -> int:
    import torch

    for spec in argv:
        conditions(torch, spec)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
