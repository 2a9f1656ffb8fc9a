"""V3 (the seed): warp specialization, 1 producer warp + 1 consumer warpgroup.

C[M, N] = A[M, K] B[N, K]^T; f16 in, f32 accumulate and out; 128x128x64 tiles.

    block (bx, by), 5 warps: the consumer warpgroup is warps 0-3 (WGMMA needs an
    aligned warpgroup), the producer warp 4.
      full[S]  = mbarrier(arrivals = 1)         # "stage s has landed"
      empty[S] = mbarrier(arrivals = 128)       # "every consumer thread is done with s"

      consumer (threads 0-127)                  producer (threads 128-159)
      phase = CONSUMER_INITIAL_PHASE (0)        phase = PRODUCER_INITIAL_PHASE (1):
                                                  fresh barriers pass at once
      for k: wait(full[s], phase)               for k: wait(empty[s], phase)
             wgmma(acc += A[s] B[s]^T)                 one thread: expect_tx(full[s], bytes)
             wait for it                                           tma A, B -> stage s
             arrive(empty[s])                   drain: wait for the last release of
      store acc -> C                                   every stage it filled
      (s, phase advance together around the ring; unroll=S makes every s a constant)

No block-wide sync inside the loop: the two roles meet only at a stage's
barriers, so the producer runs up to S tiles ahead. The seed calls full/empty
`consumer_barriers`/`producer_barriers` (after who waits on them).
"""

import sys

from common import run_example

from wsc.autotune import autotune
from wsc.builder import CONSUMER_INITIAL_PHASE, PRODUCER_INITIAL_PHASE, KernelBuilder, f16, f32


@autotune("num_stages", [2, 3, 4, 5, 6])
@autotune("block_n", [64, 128])
def matmul_v3(num_stages=4, block_m=128, block_n=128, block_k=64):
    kb = KernelBuilder("matmul", num_warps=5, grid=[("m", block_m), ("n", block_n)], check="matmul")
    a, b, c = kb.global_tensor(f16), kb.global_tensor(f16), kb.global_tensor(f32)
    offset_m = kb.block_idx.x * block_m
    offset_n = kb.block_idx.y * block_n
    k_size = a.shape[1]
    sa = kb.shared_tensor(f16, [num_stages, block_m, block_k])
    sb = kb.shared_tensor(f16, [num_stages, block_n, block_k])
    full = kb.mbarrier.alloc(arrival_count=1, num_barriers=num_stages)
    empty = kb.mbarrier.alloc(arrival_count=128, num_barriers=num_stages)
    kb.sync()  # barrier initialisation is visible before the roles split

    with kb.thread_group(thread_begin=0, num_threads=128, role="consumer"):
        acc = kb.register_tensor(f32, [block_m, block_n])
        for it in kb.range(
            0, k_size, block_k, stages=num_stages, phase=CONSUMER_INITIAL_PHASE, unroll=num_stages
        ):
            kb.mbarrier.wait(full[it.stage], phase=it.phase)
            kb.wgmma.fence()
            kb.wgmma.mma(sa[it.stage], sb[it.stage].transpose(), acc)
            kb.wgmma.commit_group()
            kb.wgmma.wait_group(0)
            kb.mbarrier.arrive(empty[it.stage])  # safe: the WGMMA reading it is done
        kb.store_global(c, acc, [offset_m, offset_n])

    with kb.thread_group(thread_begin=128, num_threads=32, role="producer"):
        for it in kb.range(
            0, k_size, block_k, stages=num_stages, phase=PRODUCER_INITIAL_PHASE, unroll=num_stages
        ):
            kb.mbarrier.wait(empty[it.stage], phase=it.phase)
            with kb.single_thread():
                kb.mbarrier.arrive_and_expect_tx(
                    full[it.stage], sa[it.stage].nbytes + sb[it.stage].nbytes
                )
                kb.tma.global_to_shared(
                    a, sa[it.stage], [offset_m, it.offset], mbarrier=full[it.stage]
                )
                kb.tma.global_to_shared(
                    b, sb[it.stage], [offset_n, it.offset], mbarrier=full[it.stage]
                )
        kb.drain(empty, after=it)
    return kb.finish()


if __name__ == "__main__":
    sys.exit(run_example(__doc__, matmul_v3))
