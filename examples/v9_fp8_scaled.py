"""V9: fp8 (e4m3) operands with per-tensor scales.

C[M, N] = sa sb A[M, K] B[N, K]^T; A and B e4m3, sa and sb f32 tensors of one
element (as torch._scaled_mm takes them), C bf16, f32 accumulation;
128x256x128 tiles (a K tile is one 128-byte swizzled row of fp8), two
consumer warpgroups after --warp-specialize.

    block (bx, by), one warpgroup, the simple V2 loop (v3_auto.py):
      for k: one thread: load tile k -> stage s; wait(full[s]); wgmma; sync
             (four m64n256k32 e4m3 WGMMAs per 64 rows and K tile)
    epilogue, in registers:
      x = acc * (sa[0] * sb[0])     # kb.broadcast of one element into a row vector
      C[m0:, n0:] = bf16(x)
        |
        |  kernel.warp_specialize(num_stages=4, num_consumer_groups=2)
        v
    each consumer warpgroup scales and stores its 64 rows

WGMMA reads fp8 operands K-major only: A as [M, K] and B as [N, K] (the
builder refuses a transposed fp8 stage). The scales are read by the kernel,
so a caller never copies them to the host; the artifact's config names them,
and the matmul check multiplies its float64 reference by their values.
"""

import sys

from common import RAGGED, run_example

from wsc.builder import CONSUMER_INITIAL_PHASE, KernelBuilder, bf16, e4m3, f32
from wsc.kernels.matmul.config import MatmulProblem
from wsc.kernels.matmul.epilogue import fused_epilogue

#: The sizes of the scales, one element each ("d_dim0", "e_dim0").
SCALE_SIZES = MatmulProblem(e4m3).scale_sizes(m=1, n=1, k=1)


def matmul_fp8_scaled(num_stages=4, block_m=128, block_n=256, block_k=128):
    kb = KernelBuilder(
        "matmul_fp8",
        num_warps=4,
        grid=[("m", block_m), ("n", block_n)],
        check="matmul",
        check_config={"epilogue": {"scale_a": "d", "scale_b": "e"}},
    )
    a, b, c = kb.global_tensor(e4m3), kb.global_tensor(e4m3), kb.global_tensor(bf16)
    scales = kb.global_tensor(f32, rank=1), kb.global_tensor(f32, rank=1)
    offset_m = kb.block_idx.x * block_m
    offset_n = kb.block_idx.y * block_n
    sa = kb.shared_tensor(e4m3, [num_stages, block_m, block_k])
    sb = kb.shared_tensor(e4m3, [num_stages, block_n, block_k])
    full = kb.mbarrier.alloc(arrival_count=1, num_barriers=num_stages)
    kb.sync()
    acc = kb.register_tensor(f32, [block_m, block_n])
    for it in kb.range(
        0, a.shape[1], block_k, stages=num_stages, phase=CONSUMER_INITIAL_PHASE, unroll=num_stages
    ):
        with kb.single_thread():
            kb.mbarrier.arrive_and_expect_tx(
                full[it.stage], sa[it.stage].nbytes + sb[it.stage].nbytes
            )
            kb.tma.global_to_shared(a, sa[it.stage], [offset_m, it.offset], mbarrier=full[it.stage])
            kb.tma.global_to_shared(b, sb[it.stage], [offset_n, it.offset], mbarrier=full[it.stage])
        kb.mbarrier.wait(full[it.stage], phase=it.phase)
        kb.wgmma.fence()
        kb.wgmma.mma(sa[it.stage], sb[it.stage].transpose(), acc)
        kb.wgmma.commit_group()
        kb.wgmma.wait_group(0)
        kb.sync()
    out = fused_epilogue(kb, acc, (offset_m, offset_n), scales=scales)
    kb.store_global(c, kb.cast(out, bf16), [offset_m, offset_n])
    return kb.finish().warp_specialize(
        num_stages=num_stages, num_consumer_groups=2, producer="warpgroup"
    )


if __name__ == "__main__":
    sys.exit(
        run_example(
            __doc__,
            matmul_fp8_scaled,
            # K a multiple of 16: TMA's 16-byte rows of 1-byte elements.
            ragged={**RAGGED, "k": 528, **SCALE_SIZES},
            bench_sizes=lambda size: {"m": size, "n": size, "k": size, **SCALE_SIZES},
        )
    )
