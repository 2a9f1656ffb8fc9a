"""V5: V4 with one WGMMA group kept in flight; each stage is released one K tile late.

C[M, N] = A[M, K] B[N, K]^T; f16 in, f32 accumulate and out; 128x256x64 tiles.

    consumer g                                   producer: as in V4
      for k: pipe.wait(k)
             wgmma(acc_g += A[s] rows of g * B[s]^T); commit
             wait_group(1)        # tile k may still run; tile k-1's group is done
             if k > 0: pipe.release((s - 1) mod S)   # the stage tile k-1 read
      wait_group(0)                                  # the last group
      if K tiles > 0: pipe.release(stage of the last tile)
      store acc_g -> C

In V4 a consumer issues a WGMMA group and immediately waits for it, so the
tensor cores drain between tiles. Here the wait for tile k's group is deferred
to trip k+1, while tile k+1's group is already queued. Releasing stage s right
after wait_group(1) would free it while its own WGMMA may still read it (the
race --verify-pipeline reports as early-release); releasing the previous
stage is safe because wait_group(1) retired its group. Every stage is still
released exactly once, so the producer and its drain are V4's. This needs at
least 2 stages: the stage in flight and the one released must differ.
"""

import sys

from common import run_example
from v4_two_consumers import CONSUMER_REGISTERS, PRODUCER_REGISTERS

from wsc.autotune import autotune
from wsc.builder import KernelBuilder, f16, f32


@autotune("num_stages", [3, 4])
def matmul_v5(num_stages=4, block_m=128, block_n=256, block_k=64, consumer_groups=2):
    rows = block_m // consumer_groups
    num_warps = 4 * consumer_groups + 4
    kb = KernelBuilder(
        "matmul", num_warps=num_warps, grid=[("m", block_m), ("n", block_n)], check="matmul"
    )
    a, b, c = kb.global_tensor(f16), kb.global_tensor(f16), kb.global_tensor(f32)
    offset_m = kb.block_idx.x * block_m
    offset_n = kb.block_idx.y * block_n
    k_size = a.shape[1]
    sa = kb.shared_tensor(f16, [num_stages, block_m, block_k])
    sb = kb.shared_tensor(f16, [num_stages, block_n, block_k])
    pipe = kb.pipeline(num_stages, consumer_arrivals=128 * consumer_groups)
    kb.sync()  # barrier initialisation is visible before the roles split

    for group in range(consumer_groups):
        with kb.thread_group(
            thread_begin=128 * group,
            num_threads=128,
            role="consumer",
            max_registers=CONSUMER_REGISTERS,
        ):
            acc = kb.register_tensor(f32, [rows, block_n])
            for it in pipe.consumer_range(0, k_size, block_k, unroll=num_stages):
                pipe.wait(it)
                kb.wgmma.fence()
                kb.wgmma.mma(
                    sa[it.stage][group * rows : (group + 1) * rows], sb[it.stage].transpose(), acc
                )
                kb.wgmma.commit_group()
                kb.wgmma.wait_group(1)
                with kb.if_(it.index > 0):
                    pipe.release(it.previous_stage)
            kb.wgmma.wait_group(0)
            with kb.if_(it.trips > 0):
                pipe.release(it.previous_stage)  # after the loop: the last tile's stage
            kb.store_global(c, acc, [offset_m + group * rows, offset_n])

    with kb.thread_group(
        thread_begin=128 * consumer_groups,
        num_threads=128,
        role="producer",
        max_registers=PRODUCER_REGISTERS,
    ):
        for it in pipe.producer_range(0, k_size, block_k, unroll=num_stages):
            pipe.acquire(it)
            with kb.single_thread():
                pipe.commit(it, sa[it.stage].nbytes + sb[it.stage].nbytes)
                kb.tma.global_to_shared(
                    a, sa[it.stage], [offset_m, it.offset], mbarrier=pipe.full[it.stage]
                )
                kb.tma.global_to_shared(
                    b, sb[it.stage], [offset_n, it.offset], mbarrier=pipe.full[it.stage]
                )
        pipe.drain(after=it)
    return kb.finish()


if __name__ == "__main__":
    sys.exit(run_example(__doc__, matmul_v5))
