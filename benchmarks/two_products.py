"""The product benchmark of kernels with two products per K step (issue 18):
the back-to-back GEMM O = f16(Q K^T) V against two torch.mm calls through
memory, and attention against torch's scaled_dot_product_attention, in one
process on the same inputs, methods timed in turn.

    here:  python examples/back_to_back.py --compile-only --out DIR_B
           python examples/attention.py --compile-only --out DIR_A
    there: python benchmarks/two_products.py --back-to-back DIR_B/bench \\
               --attention DIR_A/bench --sizes 4096,8192,16384 --out results.jsonl

Each artifact is resized to M = N = size (the kernels read their sizes at run
time), checked once against the float64 reference of its declared check on
fresh random inputs with the output NaN-poisoned, then timed: a CUDA graph of
back-to-back launches per method, replayed in turn (wsc_matmul.in_turn) over
several rounds; the median and the spread of the per-launch microseconds. Needs torch
and a Hopper GPU; no MLIR.
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
#: Launches per graph: enough that one replay takes milliseconds.
CALLS = 50


def _inputs(torch, artifact, check, seed: int) -> dict:
    generator = torch.Generator(device="cuda").manual_seed(seed)
    dtype = {"f16": torch.float16, "bf16": torch.bfloat16, "f32": torch.float32, "i32": torch.int32}
    tensors = {}
    for name, spec in artifact.tensors.items():
        if spec.role in ("input", "inout"):
            values = torch.randn(*spec.shape, device="cuda", generator=generator)
            tensors[name] = (values * check.input_scale).to(dtype[spec.dtype])
        elif spec.role == "workspace" and spec.zeroed:
            # Split counters: zero at the first launch, and zero again after each.
            tensors[name] = torch.zeros(*spec.shape, device="cuda", dtype=dtype[spec.dtype])
        else:
            tensors[name] = torch.empty(*spec.shape, device="cuda", dtype=dtype[spec.dtype])
    return tensors


def _baseline(torch, kind: str):
    if kind == "back_to_back":
        return lambda q, k, v: torch.mm(torch.mm(q, k.T), v)
    if kind == "attention":
        sdpa = torch.nn.functional.scaled_dot_product_attention
        return lambda q, k, v: sdpa(q[None, None], k[None, None], v[None, None])[0, 0]
    raise ValueError(f"no baseline for {kind!r}")


def bench(torch, kind: str, directory: Path, size: int, seed: int) -> dict:
    from wsc.kernels.matmul.check import relative_frobenius
    from wsc.runtime import Kernel
    from wsc.runtime.artifact import load_artifact
    from wsc.runtime.checks import find_check

    artifact = load_artifact(directory)
    artifact = artifact.resized(**{**artifact.sizes, "m": size, "n": size})
    check = find_check(artifact)
    kernel = Kernel(artifact)
    tensors = _inputs(torch, artifact, check, seed)
    q, k, v, out = (tensors[name] for name in "abcd")
    out.fill_(math.nan)
    kernel.launch(**tensors)
    kernel.synchronize(timeout_s=30)
    reference = check.torch_reference(torch, q, k, v)
    nan_count = int(torch.isnan(out).sum())
    rel_err = relative_frobenius(out.double(), reference, torch.linalg.norm)
    baseline = _baseline(torch, kind)
    baseline_err = relative_frobenius(baseline(q, k, v).double(), reference, torch.linalg.norm)
    del reference

    def wsc_call():
        kernel.launch(stream=torch.cuda.current_stream(), **tensors)

    methods = {"wsc": wsc_call, "torch": lambda: baseline(q, k, v)}
    replays = {name: graph_timer(torch, call, [()], CALLS) for name, call in methods.items()}
    times: dict[str, list[float]] = {name: [] for name in methods}
    for name in in_turn(list(methods), ROUNDS):
        times[name].append(replays[name]())
    return {
        "kind": kind,
        **check.describe(),
        "config": dict(artifact.config or {}),
        "rel_err": rel_err,
        "tol": check.tolerance,
        "baseline_rel_err": baseline_err,
        "nan_count": nan_count,
        "ok": nan_count == 0 and rel_err <= check.tolerance,
        "calls_per_graph": CALLS,
        "rounds": ROUNDS,
        "results": {
            name: {
                "median_us": statistics.median(values),
                "min_us": min(values),
                "max_us": max(values),
                "tflops": check.flops / statistics.median(values) / 1e6,
            }
            for name, values in times.items()
        },
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    parser.add_argument("--back-to-back", type=Path, help="a back_to_back artifact directory")
    parser.add_argument("--attention", type=Path, help="an attention artifact directory")
    parser.add_argument("--sizes", default="4096,8192,16384", help="M = N of each run")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, required=True, help="JSON lines, one per run")
    args = parser.parse_args(argv)
    import torch

    runs = [
        (kind, directory)
        for kind, directory in (("back_to_back", args.back_to_back), ("attention", args.attention))
        if directory is not None
    ]
    failed = False
    with args.out.open("a") as out:
        for kind, directory in runs:
            for size in (int(text) for text in args.sizes.split(",")):
                record = bench(torch, kind, directory, size, args.seed)
                out.write(json.dumps(record) + "\n")
                out.flush()
                wsc, base = record["results"]["wsc"], record["results"]["torch"]
                print(
                    f"{kind} {size}: {'ok' if record['ok'] else 'FAILED'} "
                    f"rel_err {record['rel_err']:.2e} (torch {record['baseline_rel_err']:.2e}); "
                    f"wsc {wsc['median_us']:.1f} us [{wsc['min_us']:.1f}, {wsc['max_us']:.1f}] "
                    f"{wsc['tflops']:.0f} TFLOP/s; torch {base['median_us']:.1f} us "
                    f"[{base['min_us']:.1f}, {base['max_us']:.1f}]; "
                    f"torch / wsc {base['median_us'] / wsc['median_us']:.2f}",
                    flush=True,
                )
                failed = failed or not record["ok"]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
