"""V3-auto: the simple V2 kernel, warp-specialized by the compiler.

C[M, N] = A[M, K] B[N, K]^T; f16 in, f32 accumulate and out; 128x128x64 tiles.

    matmul_v2(prefetch=False)                   # v2_ring_buffer.py: one warpgroup,
      for k: one thread: load tile k -> stage s #   every trip loads its own tile,
             wait(full[s]); wgmma; sync         #   waits for it and multiplies
        |
        |  kernel.warp_specialize(num_stages=4)        (--warp-specialize)
        v
    the seed's V3 (v3_warp_specialized.py):
      consumer warpgroup: wait full[s]; wgmma; wait; arrive empty[s]; store
      producer warp:      wait empty[s]; one thread: expect_tx, tma; drain

The compiler finds the producer's work (the elected copies) and the
consumer's (wait, WGMMA), adds the empty barriers with one arrival per
consumer thread, gives each role its initial phase and the producer its
drain. The result is structurally the explicit V3 kernel: the same ops, in
the same order and nesting, reading the same values (test_builder.py and
test/examples/v3-auto.test check it).
"""

import sys

from common import run_example
from v2_ring_buffer import matmul_v2


def matmul_v3_auto(num_stages=4, num_consumer_groups=1, producer="warp"):
    simple = matmul_v2(num_stages=num_stages, prefetch=False)
    return simple.warp_specialize(
        num_stages=num_stages, num_consumer_groups=num_consumer_groups, producer=producer
    )


if __name__ == "__main__":
    sys.exit(run_example(__doc__, matmul_v3_auto))
