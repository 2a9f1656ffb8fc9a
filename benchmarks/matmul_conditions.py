"""One shape's wsc.matmul candidates timed two ways, beside cuBLAS, in one
process: one launch between events after an L2 flush (as the autotuner
timed them before it timed back to back, `wsc run --timing`) and as the
product benchmark times them (a CUDA graph of launches back to back, input
sets rotating). Where the two rank configs differently, flushed launches
choose for conditions the user does not run in.

    here:  python benchmarks/wsc_matmul.py prepare --layouts nk --shapes 3000x5000x7000
    there: python benchmarks/matmul_conditions.py 3000x5000x7000xnk [MxNxKxLAYOUT ...]
           python benchmarks/matmul_conditions.py --graph-ms 4,20,100 SHAPE ...

Prints, per config of the shape's space (group_m = 8, no split of K), the
median microseconds of each way. With --graph-ms the graphs last about those
milliseconds each (not GRAPH_CALLS launches), and after each the SM clock and
the board's power are read through NVML (pynvml, where installed): a large
GEMM back to back runs at the power limit, with its clock lowered
(results/h200-power-capped-gemm.md). Needs torch and a Hopper GPU; no MLIR.
"""

from __future__ import annotations

import argparse
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


def graphed(torch, launch, calls: int = GRAPH_CALLS) -> float:
    """Median us per launch of a CUDA graph of `calls` launches over rotating sets."""
    replay = graph_timer(torch, launch, [(index,) for index in range(SETS)], calls)
    return statistics.median(replay() for _ in range(GRAPH_ROUNDS))


def nvml_probe():
    """A function reading (SM clock MHz, board power W) now, or None without pynvml."""
    try:
        import pynvml

        pynvml.nvmlInit()
        handle = pynvml.nvmlDeviceGetHandleByIndex(0)
    except Exception:  # no pynvml, or no NVML driver: the columns are left out
        return None

    def read() -> tuple[int, float]:
        clock = pynvml.nvmlDeviceGetClockInfo(handle, pynvml.NVML_CLOCK_SM)
        return clock, pynvml.nvmlDeviceGetPowerUsage(handle) / 1000

    return read


def timings(torch, launch, graph_ms: list[float], probe) -> str:
    """The flushed median, then per graph length its median (and the clock and
    power after it), as one line's cells."""
    single = flushed(torch, launch)
    cells = [f"{single:8.1f}"]
    if not graph_ms:
        return cells[0] + f" {graphed(torch, launch):8.1f}"
    for milliseconds in graph_ms:
        median = graphed(torch, launch, max(10, int(milliseconds * 1e3 / single)))
        reading = "" if probe is None else " {} MHz {:.0f} W".format(*probe())
        cells.append(f"{median:8.1f}{reading}")
    return " |".join(cells)


def conditions(torch, spec: str, graph_ms: list[float], probe) -> None:
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

    print(f"  {timings(torch, cublas, graph_ms, probe)}  cuBLAS", flush=True)
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
        print(f"  {timings(torch, launch, graph_ms, probe)}  {shown}", flush=True)
    print(f"  {timings(torch, cublas, graph_ms, probe)}  cuBLAS again", flush=True)


def _lengths(text: str) -> list[float]:
    try:
        lengths = [float(value) for value in text.split(",") if value]
    except ValueError:
        lengths = []
    if not lengths or min(lengths) <= 0:
        raise argparse.ArgumentTypeError(
            f"expected positive milliseconds, e.g. 4,20,100; got {text!r}"
        )
    return lengths


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("shapes", nargs="+", metavar="MxNxKxLAYOUT")
    parser.add_argument(
        "--graph-ms",
        type=_lengths,
        default=[],
        help="graph lengths in ms, comma-separated (default: one graph of "
        f"{GRAPH_CALLS} launches, no NVML readings)",
    )
    args = parser.parse_args(argv)
    graph_ms = args.graph_ms
    import torch

    probe = nvml_probe() if graph_ms else None
    for spec in args.shapes:
        conditions(torch, spec, graph_ms, probe)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
