"""V1: TMA + WGMMA, one warpgroup, every step in lockstep.

C[M, N] = A[M, K] B[N, K]^T; f16 in, f32 accumulate and out; 128x128x64 tiles.

    block (bx, by), 4 warps (one warpgroup), one shared tile of A and of B:
      full = mbarrier(arrivals = 1)            # "the tile has landed"
      acc = 0
      for k in K tiles:                        # phase flips every tile
        one thread: expect_tx(full, |A tile| + |B tile|); tma A, B -> tile
        all:        wait(full, phase)
                    wgmma(acc += A tile * B tile^T); wait for it
                    sync                       # nobody reads the tile any more
      store acc -> C[bx*128:, by*128:]

The loop is a ring of one stage (`kb.range(..., stages=1)`): the stage is
always 0 and the phase flips every trip. Nothing overlaps: the next copy
starts only after the previous tile was multiplied.
"""

import sys

from common import run_example

from wsc.builder import CONSUMER_INITIAL_PHASE, KernelBuilder, f16, f32


def matmul_v1(block_m=128, block_n=128, block_k=64):
    kb = KernelBuilder("matmul", num_warps=4, grid=[("m", block_m), ("n", block_n)], check="matmul")
    a, b, c = kb.global_tensor(f16), kb.global_tensor(f16), kb.global_tensor(f32)
    offset_m = kb.block_idx.x * block_m
    offset_n = kb.block_idx.y * block_n
    sa = kb.shared_tensor(f16, [1, block_m, block_k])
    sb = kb.shared_tensor(f16, [1, block_n, block_k])
    full = kb.mbarrier.alloc(arrival_count=1, num_barriers=1)
    kb.sync()  # every thread sees the initialised barrier
    acc = kb.register_tensor(f32, [block_m, block_n])
    for it in kb.range(0, a.shape[1], block_k, stages=1, phase=CONSUMER_INITIAL_PHASE):
        with kb.single_thread():
            kb.mbarrier.arrive_and_expect_tx(full[0], sa[0].nbytes + sb[0].nbytes)
            kb.tma.global_to_shared(a, sa[0], [offset_m, it.offset], mbarrier=full[0])
            kb.tma.global_to_shared(b, sb[0], [offset_n, it.offset], mbarrier=full[0])
        kb.mbarrier.wait(full[0], phase=it.phase)
        kb.wgmma.fence()
        kb.wgmma.mma(sa[0], sb[0].transpose(), acc)
        kb.wgmma.commit_group()
        kb.wgmma.wait_group(0)
        kb.sync()  # the next copy may overwrite the tile
    kb.store_global(c, acc, [offset_m, offset_n])
    return kb.finish()


if __name__ == "__main__":
    sys.exit(run_example(__doc__, matmul_v1))
