"""Fill the wsc cache with every kernel the `cuda` tests of
test/python/test_matmul.py need, so that they run on a GPU machine without
the MLIR wheels (wsc.matmul compiles only on a cache miss):

    WSC_CACHE_DIR=DIR python test/gpu/matmul_cache.py          # here: compile
    WSC_CACHE_DIR=DIR pytest -q -m cuda test/python/test_matmul.py   # there: run

That is: the default config of each B layout for every dtype and output
dtype the tests use, every config of both spaces for the per-config test,
and the autotuning candidates of the problem the autotuning test tunes.
"""

from __future__ import annotations

import sys
import time

from wsc.cache import Cache
from wsc.matmul import DEFAULT_CONFIGS, SPACES, MatmulPlan, compiled_kernel_dir

#: The problem the GPU tests compile for first (the kernels read sizes at run
#: time; "kn" needs N a multiple of 8).
M, K = 1000, 520
N = {"nk": 1333, "kn": 1336}
TUNED = {"m": 1000, "n": 1333, "k": 520}


def main() -> int:
    cache = Cache()
    start = time.perf_counter()
    wanted = []
    for dtype in ("f16", "bf16"):
        for out_dtype in (dtype, "f32"):
            for layout, config in DEFAULT_CONFIGS.items():
                wanted.append((MatmulPlan(M, N[layout], K, dtype, out_dtype, layout), config))
    for layout, space in SPACES.items():
        for config in space.configs():
            wanted.append((MatmulPlan(M, N[layout], K, "f16", "f32", layout), config))
    for config in SPACES["nk"].configs():  # what the autotuning test may choose
        wanted.append((MatmulPlan(M, N["nk"], K, "f16", "f16", "nk"), config))
    for plan, config in wanted:
        compiled_kernel_dir(plan, config, cache)
    result = SPACES["nk"].tune(TUNED, fixed={"dtype": "f16", "out_dtype": "f16",
                                             "b_layout": "nk"}, cache=cache)
    failed = [c for c in result.candidates if c.error]
    print(f"{len(wanted)} kernels and {len(result.candidates)} autotuning candidates in "
          f"{cache.root} ({time.perf_counter() - start:.0f} s)")
    for candidate in failed:
        print(f"candidate {candidate.config} failed: {candidate.error}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
