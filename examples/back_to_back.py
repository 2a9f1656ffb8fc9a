"""A back-to-back product: O = f16(Q K^T) V, the first product kept in registers.

Q [M, D], K [N, D], V [N, E] f16 in, O [M, E] f32 out; D and E the widths of
one tile of Q and of V (`head`, `value`: 64 by default, 128 and 256 checked
on the GPU; at 256, 64-row K and V tiles in 2 stages keep O, S and P in 168
registers with two consumer warpgroups); N any length. This is
attention without the softmax, built in the simple V2 form and specialized by
--warp-specialize: two accumulators, register math and a WGMMA that reads its
A operand from registers, in the K loop.

    block bx, one warpgroup, the V2 loop over N in tiles of 128:
      one thread: load Q[bx] -> sq (its own barrier, once); wait for it
      O = 0                                     # [128, E] f32, across the loop
      for j: one thread: load K[j], V[j] -> stage s (one expect_tx)
             wait(full[s])
             S = Q K[j]^T                       # wgmma: a fresh [128, 128] f32 tile;
                                                #   A from sq, B from the ring
             P = f16(S)                         # in registers: S's layout is the
                                                #   A fragment of the next WGMMA
             O += P V[j]                        # wgmma, A from registers
             sync                               # the stage is free
      O -> out[bx]
        |
        |  kernel.warp_specialize(num_stages=4, num_consumer_groups=2)
        v
    each consumer warpgroup takes 64 rows of Q, S, P and O and waits for Q
    once; a producer warpgroup loads Q, then the stages; every stage is
    released after the second WGMMA that reads it.

With `splits` > 1 the grid gains an axis of that many blocks per row block,
each summing O over its share of the N tiles (O is linear in them, as C is in
K for split-K): a block stores its partial O, and the row block's last one
adds them in split order (kb.split_k) and stores O. Below M of about 16K rows
a block per 128 rows leaves SMs idle; the splits fill them. On the H200 the
fastest split was the smallest that makes about one block per SM (row
blocks times splits near 128): at M = 4096, 4 for D = 128 (1.34 times two
torch.mm, against 0.63 unsplit; results/h200-two-products.md).
"""

import sys

from common import run_example

from wsc.builder import CONSUMER_INITIAL_PHASE, KernelBuilder, cdiv, f16, f32

#: The kernel's sizes: m rows of Q and O, n rows of K and V, k = D, and
#: d_dim1 = E (no product names it: the plan's name for O's columns).
RAGGED = {"m": 1000, "n": 1000, "k": 64, "d_dim1": 64}


#: Register math a variant may apply to S before the cast (the fuzzer of
#: test/fuzz/kernels.py draws them; the check knows none of them).
SCORE_MATH = {
    "scale": lambda kb, s: s * 0.125,
    "relu": lambda kb, s: kb.relu(s),
    "exp2": lambda kb, s: kb.exp2(s * 0.125 - 4.0),
    # Row vectors: broadcast over S, and math between vectors.
    "center": lambda kb, s: s - kb.row_max(s),
    "normalize": lambda kb, s: s * kb.exp2(-kb.log2(kb.row_sum(kb.relu(s)) + 1.0)),
}


#: The fastest ring measured for each head width, as (stages, rows of a K and
#: V tile): results/h200-two-products.md for 64 and 128, and
#: results/h100-back-to-back-d256.md for 256 (at 4 stages of 128 rows a head
#: of 256 would need 576 KB of shared memory).
RING_BY_HEAD = {64: (4, 128), 128: (2, 128), 256: (2, 64)}


def back_to_back(
    num_stages=None,
    num_consumer_groups=2,
    block_m=128,
    block_n=None,
    head=64,
    value=64,
    dtype=f16,
    out_dtype=f32,
    score_math=(),
    producer=None,
    wgmma_in_flight=0,
    allow_spills=False,
    splits=1,
):
    """The kernel in the V2 form, specialized; `score_math` names SCORE_MATH
    entries applied to S in turn (a kernel with any is checked by nothing);
    `splits` blocks share each row block's N tiles. `num_stages` and
    `block_n` left out take RING_BY_HEAD's entry for the narrowest head
    measured at least as wide as `head` (the widest for a wider one)."""
    ring = RING_BY_HEAD[min((h for h in RING_BY_HEAD if h >= head), default=max(RING_BY_HEAD))]
    num_stages = ring[0] if num_stages is None else num_stages
    block_n = ring[1] if block_n is None else block_n
    kb = KernelBuilder(
        "back_to_back",
        num_warps=4,
        grid=[("m", block_m)],
        check=None if score_math else "back_to_back",
        allow_spills=allow_spills,
    )
    q, k, v = kb.global_tensor(dtype), kb.global_tensor(dtype), kb.global_tensor(dtype)
    out = kb.global_tensor(out_dtype)
    workspace = kb.split_k.workspace(splits) if splits > 1 else None
    sq = kb.shared_tensor(dtype, [1, block_m, head])
    sk = kb.shared_tensor(dtype, [num_stages, block_n, head])
    sv = kb.shared_tensor(dtype, [num_stages, block_n, value])
    q_full = kb.mbarrier.alloc(arrival_count=1, num_barriers=1)
    full = kb.mbarrier.alloc(arrival_count=1, num_barriers=num_stages)
    kb.sync()
    row = kb.block_idx.x * block_m
    n_tiles = cdiv(k.shape[0], block_n)
    split = kb.block_idx.y if workspace else 0
    first_tile = split * n_tiles // splits
    with kb.single_thread():
        kb.mbarrier.arrive_and_expect_tx(q_full[0], sq[0].nbytes)
        kb.tma.global_to_shared(q, sq[0], [row, 0], mbarrier=q_full[0])
    kb.mbarrier.wait(q_full[0], phase=CONSUMER_INITIAL_PHASE)
    o = kb.register_tensor(f32, [block_m, value])
    my_tiles = (split + 1) * n_tiles // splits - first_tile
    for it in kb.range(0, my_tiles, 1, stages=num_stages, phase=CONSUMER_INITIAL_PHASE):
        stage = it.stage
        offset = (first_tile + it.index) * block_n
        with kb.single_thread():
            kb.mbarrier.arrive_and_expect_tx(full[stage], sk[stage].nbytes + sv[stage].nbytes)
            kb.tma.global_to_shared(k, sk[stage], [offset, 0], mbarrier=full[stage])
            kb.tma.global_to_shared(v, sv[stage], [offset, 0], mbarrier=full[stage])
        kb.mbarrier.wait(full[stage], phase=it.phase)
        s = kb.register_tensor(f32, [block_m, block_n])
        kb.wgmma.fence()
        kb.wgmma.mma(sq[0], sk[stage].transpose(), s)  # A at its one stage
        kb.wgmma.commit_group()
        kb.wgmma.wait_group(0)
        for name in score_math:
            s = SCORE_MATH[name](kb, s)
        p = kb.cast(s, dtype)  # before the fence, which orders it before the WGMMA
        kb.wgmma.fence()
        kb.wgmma.mma(p, sv[stage], o)
        kb.wgmma.commit_group()
        kb.wgmma.wait_group(0)
        kb.sync()
    if workspace:
        kb.split_k.store(workspace, o, row, split)
        with kb.if_(kb.split_k.arrive(workspace, row)):
            kb.split_k.reduce(workspace, o, row)
            kb.store_global(out, o if out_dtype == f32 else kb.cast(o, out_dtype), [row, 0])
    else:
        kb.store_global(out, o if out_dtype == f32 else kb.cast(o, out_dtype), [row, 0])
    return kb.finish().warp_specialize(
        num_stages=num_stages,
        num_consumer_groups=num_consumer_groups,
        producer=producer or ("warpgroup" if num_consumer_groups > 1 else "warp"),
        wgmma_in_flight=wgmma_in_flight,
    )


if __name__ == "__main__":
    sys.exit(
        run_example(
            __doc__,
            back_to_back,
            ragged=RAGGED,
            bench_sizes=lambda size: {"m": size, "n": size, "k": 64, "d_dim1": 64},
        )
    )
