"""Attention forward: O = softmax(Q K^T / sqrt(D)) V, an online softmax between two products.

Q [M, D], K [N, D], V [N, D] f16 in, O [M, D] f16 out; D = `head` = 64 (one
tile: the first product's K and the second's N; 128 builds too), N any
length (the last tile masked).
Built in the simple V2 form and specialized by --warp-specialize, as
examples/back_to_back.py, with the softmax's running state in register tiles
that wsc.tile_assign updates in place from K tile to K tile: O, and the row
vectors m and l (a value per row, broadcast along the rows where they meet
a tile).

    block bx, one warpgroup:
      one thread: load Q[bx] -> sq (once); wait for it
      O = 0; m = -inf; l = 0                    # O [128, 64]; m, l [128, 1]
      for j: one thread: load K[j], V[j] -> stage s; wait(full[s])
             S = Q K[j]^T * log2(e) / sqrt(D)   # wgmma, [128, 128]; columns past N: -inf
             m' = max(m, rowmax(S))
             P = 2^(S - m'); a = 2^(m - m')     # exp2 of the base-2 scores
             l = l a + rowsum(P); m = m'        # wsc.tile_assign, in place
             O = O a                            # wsc.tile_assign
             O += f16(P) V[j]                   # wgmma, A from registers
             sync
      out[bx] = f16(O / l)
        |
        |  kernel.warp_specialize(num_stages=2, num_consumer_groups=2)
        v
    each consumer warpgroup runs the softmax on its 64 rows (a row's max and
    sum are a warp's, by shuffles); a producer warpgroup loads Q, then K and
    V through the ring.
"""

import math
import sys

from common import run_example

from wsc.builder import CONSUMER_INITIAL_PHASE, KernelBuilder, f16, f32

#: The kernel's sizes: m rows of Q and O, n rows of K and V, k = D, and
#: d_dim1 = V's and O's columns (also D).
RAGGED = {"m": 1000, "n": 1000, "k": 64, "d_dim1": 64}


def attention(num_stages=2, num_consumer_groups=2, block_m=128, block_n=128, head=64):
    """The kernel for head dimension `head`, with K and V tiles of `block_n` rows."""
    kb = KernelBuilder("attention", num_warps=4, grid=[("m", block_m)], check="attention")
    q, k, v = kb.global_tensor(f16), kb.global_tensor(f16), kb.global_tensor(f16)
    out = kb.global_tensor(f16)
    sq = kb.shared_tensor(f16, [1, block_m, head])
    sk = kb.shared_tensor(f16, [num_stages, block_n, head])
    sv = kb.shared_tensor(f16, [num_stages, block_n, head])
    q_full = kb.mbarrier.alloc(arrival_count=1, num_barriers=1)
    full = kb.mbarrier.alloc(arrival_count=1, num_barriers=num_stages)
    kb.sync()
    row = kb.block_idx.x * block_m
    n = k.shape[0]
    with kb.single_thread():
        kb.mbarrier.arrive_and_expect_tx(q_full[0], sq[0].nbytes)
        kb.tma.global_to_shared(q, sq[0], [row, 0], mbarrier=q_full[0])
    kb.mbarrier.wait(q_full[0], phase=CONSUMER_INITIAL_PHASE)
    shape, rows = [block_m, block_n], [block_m, 1]
    o = kb.register_tensor(f32, [block_m, head])
    m, l = kb.register_tensor(f32, rows), kb.register_tensor(f32, rows)
    kb.assign(m, m - 1e30)
    bound = kb.indices(rows, along="cols", start=n)  # n in every row: exact below 2^24
    for it in kb.range(0, n, block_n, stages=num_stages, phase=CONSUMER_INITIAL_PHASE):
        stage = it.stage
        with kb.single_thread():
            kb.mbarrier.arrive_and_expect_tx(full[stage], sk[stage].nbytes + sv[stage].nbytes)
            kb.tma.global_to_shared(k, sk[stage], [it.offset, 0], mbarrier=full[stage])
            kb.tma.global_to_shared(v, sv[stage], [it.offset, 0], mbarrier=full[stage])
        kb.mbarrier.wait(full[stage], phase=it.phase)
        s = kb.register_tensor(f32, shape)
        kb.wgmma.fence()
        kb.wgmma.mma(sq[0], sk[stage].transpose(), s)
        kb.wgmma.commit_group()
        kb.wgmma.wait_group(0)
        # Base-2 scores; K's rows past N (zero-filled by TMA) score -inf.
        columns = kb.indices(shape, along="cols", start=it.offset)
        scores = kb.where(columns < bound, s * (math.log2(math.e) / math.sqrt(head)), -1e30)
        m_next = kb.max(m, kb.row_max(scores))
        p = kb.exp2(scores - m_next)
        rescale = kb.exp2(m - m_next)
        kb.assign(l, l * rescale + kb.row_sum(p))
        kb.assign(m, m_next)
        kb.assign(o, o * rescale)
        p16 = kb.cast(p, f16)  # before the fence, which orders it before the WGMMA
        kb.wgmma.fence()
        kb.wgmma.mma(p16, sv[stage], o)
        kb.wgmma.commit_group()
        kb.wgmma.wait_group(0)
        kb.sync()
    # 1 / l as 2^-log2(l), two approximate MUFU ops per row: well within the f16 output's rounding.
    kb.store_global(out, kb.cast(o * kb.exp2(-kb.log2(l)), f16), [row, 0])
    return kb.finish().warp_specialize(
        num_stages=num_stages,
        num_consumer_groups=num_consumer_groups,
        producer="warpgroup" if num_consumer_groups > 1 else "warp",
    )


if __name__ == "__main__":
    sys.exit(
        run_example(
            __doc__,
            attention,
            ragged=RAGGED,
            bench_sizes=lambda size: {"m": size, "n": size, "k": 64, "d_dim1": 64},
        )
    )
