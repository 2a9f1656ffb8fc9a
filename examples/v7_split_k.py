"""V7: split-K, for problems with too few output tiles to fill the GPU.

C[M, N] = A[M, K] B[N, K]^T; f16 in, f32 accumulate and out; 64x128x64 tiles.

At M = 64, N = 4096 there are 32 output tiles for 132 SMs. Splitting K over
the grid's z axis gives each tile `splits` blocks, each summing its share of
the K tiles; they hand their partial sums over through global memory:

    block (bx, by, z), one warpgroup (V2 without prefetch, then --warp-specialize):
      acc = sum over K tiles [z * kt / splits, (z + 1) * kt / splits)
      split_k.store(acc)                   # partials[tile][z], fragment order
      if split_k.arrive():                 # the last of the tile's splits:
          split_k.reduce(acc)              #   acc = partials[0] + ... in split order
          store acc -> C                   #   (and the tile's counter back to 0)

The sum is added in split order whichever block finishes last, so the result
is the same bits on every run. The workspace (partial sums and one arrival
counter per tile row) is two more kernel arguments; the runtime allocates
them (kernel.json lists them) and the counters start, and end, at zero.
"""

import sys

from common import run_example

from wsc.builder import CONSUMER_INITIAL_PHASE, KernelBuilder, cdiv, f16, f32


def matmul_split_k(splits=4, num_stages=4, block_m=64, block_n=128, block_k=64):
    # The reduction holds the partial tile beside the accumulator: ptxas
    # spills 8 bytes per thread there.
    kb = KernelBuilder(
        "matmul",
        num_warps=4,
        grid=[("m", block_m), ("n", block_n)],
        check="matmul",
        allow_spills=True,
    )
    a, b, c = kb.global_tensor(f16), kb.global_tensor(f16), kb.global_tensor(f32)
    workspace = kb.split_k.workspace(splits)
    offset_m = kb.block_idx.x * block_m
    offset_n = kb.block_idx.y * block_n
    split = kb.block_idx.z
    # The output tile's number times its rows: where its partial sums live.
    row = (kb.block_idx.x + kb.block_idx.y * cdiv(a.shape[0], block_m)) * block_m
    k_tiles = cdiv(a.shape[1], block_k)
    first_k_tile = split * k_tiles // splits
    sa = kb.shared_tensor(f16, [num_stages, block_m, block_k])
    sb = kb.shared_tensor(f16, [num_stages, block_n, block_k])
    full = kb.mbarrier.alloc(arrival_count=1, num_barriers=num_stages)
    kb.sync()
    acc = kb.register_tensor(f32, [block_m, block_n])
    my_k_tiles = (split + 1) * k_tiles // splits - first_k_tile
    for it in kb.range(0, my_k_tiles, 1, stages=num_stages, phase=CONSUMER_INITIAL_PHASE):
        offset_k = (first_k_tile + it.index) * block_k
        with kb.single_thread():
            kb.mbarrier.arrive_and_expect_tx(
                full[it.stage], sa[it.stage].nbytes + sb[it.stage].nbytes
            )
            kb.tma.global_to_shared(a, sa[it.stage], [offset_m, offset_k], mbarrier=full[it.stage])
            kb.tma.global_to_shared(b, sb[it.stage], [offset_n, offset_k], mbarrier=full[it.stage])
        kb.mbarrier.wait(full[it.stage], phase=it.phase)
        kb.wgmma.fence()
        kb.wgmma.mma(sa[it.stage], sb[it.stage].transpose(), acc)
        kb.wgmma.commit_group()
        kb.wgmma.wait_group(0)
        kb.sync()
    kb.split_k.store(workspace, acc, row, split)
    with kb.if_(kb.split_k.arrive(workspace, row)):
        kb.split_k.reduce(workspace, acc, row)
        kb.store_global(c, acc, [offset_m, offset_n])
    return kb.finish().warp_specialize(num_stages=num_stages)


if __name__ == "__main__":
    sys.exit(run_example(__doc__, matmul_split_k, ragged={"m": 100, "n": 1333, "k": 4104}))
