"""V2: a ring buffer of stages, each with its own TMA barrier; copies run ahead.

C[M, N] = A[M, K] B[N, K]^T; f16 in, f32 accumulate and out; 128x128x64 tiles.

    block (bx, by), 4 warps (one warpgroup), a ring of S stages of A and B tiles:
      full[S] = mbarrier(arrivals = 1)          # "stage s has landed"
      prefill: for s < S - 1 (and s < K tiles): one thread: load tile s -> stage s
      for k in K tiles:                         # (stage, phase) = (k mod S, k / S odd)
        if k + S - 1 < K tiles: one thread: load tile k + S - 1 -> stage (k - 1) mod S
        all: wait(full[stage], phase)
             wgmma(acc += A[stage] * B[stage]^T); wait for it
             sync                               # stage k mod S is free to refill
      store acc -> C

    load tile t -> stage s:  expect_tx(full[s], |A tile| + |B tile|); tma A, B -> stage s

The copies of the next S - 1 tiles overlap the multiplication, but every warp
still does everything, and a block-wide sync separates each tile's WGMMA
from the copy that reuses its stage.

With `prefetch=False` each trip loads its own tile and waits for it: the
simple form `--warp-specialize` takes as input (see v3_auto.py), where the
overlap comes from a producer running ahead instead.
"""

import sys

from common import run_example

from wsc.builder import CONSUMER_INITIAL_PHASE, KernelBuilder, cdiv, f16, f32


def matmul_v2(num_stages=4, block_m=128, block_n=128, block_k=64, prefetch=True):
    kb = KernelBuilder("matmul", num_warps=4, grid=[("m", block_m), ("n", block_n)], check="matmul")
    a, b, c = kb.global_tensor(f16), kb.global_tensor(f16), kb.global_tensor(f32)
    offset_m = kb.block_idx.x * block_m
    offset_n = kb.block_idx.y * block_n
    k_size = a.shape[1]
    sa = kb.shared_tensor(f16, [num_stages, block_m, block_k])
    sb = kb.shared_tensor(f16, [num_stages, block_n, block_k])
    full = kb.mbarrier.alloc(arrival_count=1, num_barriers=num_stages)
    kb.sync()  # every thread sees the initialised barriers
    acc = kb.register_tensor(f32, [block_m, block_n])

    def load(offset_k, stage):
        with kb.single_thread():
            kb.mbarrier.arrive_and_expect_tx(full[stage], sa[stage].nbytes + sb[stage].nbytes)
            kb.tma.global_to_shared(a, sa[stage], [offset_m, offset_k], mbarrier=full[stage])
            kb.tma.global_to_shared(b, sb[stage], [offset_n, offset_k], mbarrier=full[stage])

    if prefetch:
        k_tiles = cdiv(k_size, block_k)
        for stage in range(num_stages - 1):
            with kb.if_(k_tiles > stage):
                load(stage * block_k, stage)
    for it in kb.range(
        0, k_size, block_k, stages=num_stages, phase=CONSUMER_INITIAL_PHASE, unroll=num_stages
    ):
        if prefetch:
            # The stage the previous trip read: its sync has freed it.
            with kb.if_(it.index + (num_stages - 1) < it.trips):
                load(it.offset + (num_stages - 1) * block_k, it.previous_stage)
        else:
            load(it.offset, it.stage)
        kb.mbarrier.wait(full[it.stage], phase=it.phase)
        kb.wgmma.fence()
        kb.wgmma.mma(sa[it.stage], sb[it.stage].transpose(), acc)
        kb.wgmma.commit_group()
        kb.wgmma.wait_group(0)
        kb.sync()
    kb.store_global(c, acc, [offset_m, offset_n])
    return kb.finish()


if __name__ == "__main__":
    sys.exit(run_example(__doc__, matmul_v2))
