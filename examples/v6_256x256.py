"""V6: a 256x256 tile, four consumer warpgroups, fp16 accumulation (fails to compile today).

C[M, N] = A[M, K] B[N, K]^T; f16 in, f16 accumulate and out; 256x256x64 tiles.

    block (bx, by), 20 warps: consumer warpgroups 0-3, producer warpgroup 4
      pipe = Pipeline(3 stages, consumer arrivals = 4 x 128)

      consumer g (64 rows each), 112 registers        producer, 24 registers
      for k: pipe.wait(k)                             for k: pipe.acquire(k)
             wgmma(acc_g += A[s] rows 64g.. * B[s]^T)        one thread: pipe.commit(k, 64 KB)
             wait_group(1)                                               tma A, B -> s
             if k > 0: pipe.release((s - 1) mod 3)    pipe.drain()
      wait_group(0); release the last stage
      store acc_g -> C rows 64g..
      (the tutorial then has the producer store C with TMA: see below)

Four WGMMA streams share each 256-wide B tile, so each A and B byte loaded
from global memory feeds twice the FLOPs of V5's 128x256 tile. The price is
registers: a 256x256 tile is 256 KB, the whole register file, as fp32. So the
tutorial accumulates in fp16 (64 registers per consumer thread for a 64x256
tile instead of 128); with fp32 accumulators ptxas finds 96 registers per
thread where it needs over 150.

What wsc lacks, as of this writing, and how the example says so:
  - fp16 accumulation: the verifier requires an fp32 WGMMA accumulator, so
    this example stops at its `wgmma.mma` line with "'wsc.wgmma' op
    accumulator must be f32, got f16" (test/examples/v6-256x256.test checks
    that this is the error it gets);
  - the TMA-store epilogue: the tutorial's consumers write their tile to
    shared memory and the producer stores it with one TMA copy
    (fence.proxy.async first). wsc has the copy (`wsc.tma_store`, not lowered
    yet) but no op that writes a register tile to shared memory, so the
    consumers store C from registers here, as V3-V5 do.
"""

import sys

from common import run_example

from wsc.builder import KernelBuilder, f16

CONSUMER_REGISTERS = 112
PRODUCER_REGISTERS = 24


def matmul_v6(num_stages=3, block_m=256, block_n=256, block_k=64, consumer_groups=4):
    rows = block_m // consumer_groups
    num_warps = 4 * consumer_groups + 4
    kb = KernelBuilder("matmul", num_warps=num_warps, grid=[("m", block_m), ("n", block_n)])
    a, b, c = kb.global_tensor(f16), kb.global_tensor(f16), kb.global_tensor(f16)
    offset_m = kb.block_idx.x * block_m
    offset_n = kb.block_idx.y * block_n
    k_size = a.shape[1]
    sa = kb.shared_tensor(f16, [num_stages, block_m, block_k])
    sb = kb.shared_tensor(f16, [num_stages, block_n, block_k])
    pipe = kb.pipeline(num_stages, consumer_arrivals=128 * consumer_groups)
    kb.sync()  # barrier initialisation is visible before the roles split

    for group in range(consumer_groups):
        with kb.thread_group(thread_begin=128 * group, num_threads=128, role="consumer",
                             max_registers=CONSUMER_REGISTERS):
            acc = kb.register_tensor(f16, [rows, block_n])
            for it in pipe.consumer_range(0, k_size, block_k, unroll=num_stages):
                pipe.wait(it)
                kb.wgmma.fence()
                kb.wgmma.mma(sa[it.stage][group * rows:(group + 1) * rows],
                             sb[it.stage].transpose(), acc)
                kb.wgmma.commit_group()
                kb.wgmma.wait_group(1)
                with kb.if_(it.index > 0):
                    pipe.release(it.previous_stage)
            kb.wgmma.wait_group(0)
            with kb.if_(it.trips > 0):
                pipe.release(it.previous_stage)
            kb.store_global(c, acc, [offset_m + group * rows, offset_n])

    with kb.thread_group(thread_begin=128 * consumer_groups, num_threads=128, role="producer",
                         max_registers=PRODUCER_REGISTERS):
        for it in pipe.producer_range(0, k_size, block_k, unroll=num_stages):
            pipe.acquire(it)
            with kb.single_thread():
                pipe.commit(it, sa[it.stage].nbytes + sb[it.stage].nbytes)
                kb.tma.global_to_shared(a, sa[it.stage], [offset_m, it.offset],
                                        mbarrier=pipe.full[it.stage])
                kb.tma.global_to_shared(b, sb[it.stage], [offset_n, it.offset],
                                        mbarrier=pipe.full[it.stage])
        pipe.drain(after=it)
    return kb.finish()


if __name__ == "__main__":
    sys.exit(run_example(__doc__, matmul_v6))
