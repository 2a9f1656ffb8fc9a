"""V4: two consumer warpgroups sharing each B tile, written with a Pipeline.

C[M, N] = A[M, K] B[N, K]^T; f16 in, f32 accumulate and out; 128x256x64 tiles.

    block (bx, by), 12 warps: consumer warpgroups 0 and 1, producer warpgroup 2
      pipe = Pipeline(S stages, consumer arrivals = 2 x 128)
             full[s]: 1 arrival + the bytes;  empty[s]: 256 arrivals

      consumer g (threads 128g ..), 232 registers    producer (threads 256-383), 40 registers
      for k: pipe.wait(k)                            for k: pipe.acquire(k)     # empty[s]
             wgmma(acc_g += A[s] rows 64g..64g+63          one thread: pipe.commit(k, bytes)
                           * B[s]^T); wait for it                      tma A, B -> stage s
             pipe.release(s)                         pipe.drain()
      store acc_g -> C rows 64g..

Each consumer owns 64 rows of the 128x256 output tile, so two independent
WGMMA streams keep the tensor cores busy while sharing one loaded B tile.
The producer is a whole warpgroup so setmaxnreg can move registers: it gives
up all but 40 and each consumer grows to 232 (a 64x256 f32 accumulator alone
is 128 registers a thread). `Pipeline` names the barrier protocol
(acquire/commit, wait/release) and keeps each role's initial phase; it emits
exactly the ops V3 writes by hand.
"""

import sys

from common import run_example

from wsc.autotune import autotune
from wsc.builder import KernelBuilder, f16, f32

CONSUMER_REGISTERS = 232
PRODUCER_REGISTERS = 40


@autotune("num_stages", [3, 4])
def matmul_v4(num_stages=4, block_m=128, block_n=256, block_k=64, consumer_groups=2):
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
                kb.wgmma.wait_group(0)
                pipe.release(it.stage)
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
    sys.exit(run_example(__doc__, matmul_v4))
