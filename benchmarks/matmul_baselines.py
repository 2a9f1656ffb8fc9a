"""The baselines benchmarks/matmul.py times wsc against: cuBLAS (through
torch.mm) and Triton (a host-descriptor kernel and a flat one that makes its
descriptors in the kernel). Triton is optional: without it the Triton column
reads n/a."""

from __future__ import annotations

import math

from matmul_harness import Inputs

# (BLOCK_M, BLOCK_N, BLOCK_K, stages, warps, warp-specialized loop, how C is
# stored): "masked" (pointer stores) or "tma" (a TMA descriptor), with the
# descriptors of A and B made on the host and the tile order in a helper;
# "device-tma" and "device-masked" are a flat kernel that makes its
# descriptors itself (tl.make_tensor_descriptor). Triton 3.6's Hopper
# warp-specialization pass fails on the notes' best config, (128, 256, 64, 3,
# 4, warp-specialized), in the host-descriptor kernel (UNREACHABLE in
# WSDataPartition with a TMA store; no answer within 90 s with masked stores:
# results/h200-triton-ws-probe.txt) and compiles it in the flat one. A TMA store
# needs C's rows 16-byte aligned, so those configs skip the ragged shape.
TRITON_CONFIGS = [
    (128, 256, 64, 3, 8, True, "masked"),
    (128, 256, 64, 3, 8, False, "masked"),
    (128, 256, 64, 3, 8, True, "tma"),
    (128, 128, 64, 4, 4, False, "tma"),
    (128, 128, 64, 4, 4, False, "masked"),
    (128, 256, 64, 3, 4, True, "device-tma"),
    (128, 256, 64, 3, 4, True, "device-masked"),
]
TRITON_GROUP_M = 8


def cublas_method(torch, inputs: Inputs):
    def run_once(a, b, c):
        torch.mm(a, b.T, out=c)

    return run_once, [lambda a=a, b=b, c=c: torch.mm(a, b.T, out=c) for a, b, c in inputs.sets]


try:  # Triton is optional: without it the Triton column reads n/a.
    import triton
    import triton.language as tl
except ImportError:
    triton = None

if triton is not None:

    @triton.jit
    def _triton_tile(
        a_desc,
        b_desc,
        M,
        N,
        K,
        BLOCK_M: tl.constexpr,
        BLOCK_N: tl.constexpr,
        BLOCK_K: tl.constexpr,
        GROUP_M: tl.constexpr,
        STAGES: tl.constexpr,
        SPECIALIZE: tl.constexpr,
    ):
        """(row0, col0, acc) of this program's tile: grouped tile order, the K
        loop over TMA-descriptor loads."""
        block = tl.program_id(0)
        tiles_m = tl.cdiv(M, BLOCK_M)
        tiles_n = tl.cdiv(N, BLOCK_N)
        group_size = GROUP_M * tiles_n
        first_row = block // group_size * GROUP_M
        rows_in_group = tl.minimum(tiles_m - first_row, GROUP_M)
        in_group = block % group_size
        row0 = (first_row + in_group % rows_in_group) * BLOCK_M
        col0 = (in_group // rows_in_group) * BLOCK_N
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for kt in tl.range(0, tl.cdiv(K, BLOCK_K), num_stages=STAGES, warp_specialize=SPECIALIZE):
            a = a_desc.load([row0, kt * BLOCK_K])
            b = b_desc.load([col0, kt * BLOCK_K])
            acc = tl.dot(a, b.T, acc)
        return row0, col0, acc

    @triton.jit
    def bench_triton_matmul(
        a_desc,
        b_desc,
        c_ptr,
        M,
        N,
        K,
        ldc,
        BLOCK_M: tl.constexpr,
        BLOCK_N: tl.constexpr,
        BLOCK_K: tl.constexpr,
        GROUP_M: tl.constexpr,
        STAGES: tl.constexpr,
        SPECIALIZE: tl.constexpr,
    ):
        """C = A B^T, TMA-descriptor loads, masked stores of C."""
        row0, col0, acc = _triton_tile(
            a_desc, b_desc, M, N, K, BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, STAGES, SPECIALIZE
        )
        rows = (row0 + tl.arange(0, BLOCK_M)).to(tl.int64)
        cols = col0 + tl.arange(0, BLOCK_N)
        inside = (rows[:, None] < M) & (cols[None, :] < N)
        tl.store(
            c_ptr + rows[:, None] * ldc + cols[None, :], acc.to(c_ptr.dtype.element_ty), mask=inside
        )

    @triton.jit
    def bench_triton_matmul_tma_store(
        a_desc,
        b_desc,
        c_desc,
        M,
        N,
        K,
        BLOCK_M: tl.constexpr,
        BLOCK_N: tl.constexpr,
        BLOCK_K: tl.constexpr,
        GROUP_M: tl.constexpr,
        STAGES: tl.constexpr,
        SPECIALIZE: tl.constexpr,
        OUT_BF16: tl.constexpr,
    ):
        """C = A B^T, TMA-descriptor loads and store of C."""
        row0, col0, acc = _triton_tile(
            a_desc, b_desc, M, N, K, BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, STAGES, SPECIALIZE
        )
        if OUT_BF16:
            c_desc.store([row0, col0], acc.to(tl.bfloat16))
        else:
            c_desc.store([row0, col0], acc.to(tl.float16))

    @triton.jit
    def bench_triton_matmul_device(
        a_ptr,
        b_ptr,
        c_ptr,
        M,
        N,
        K,
        ldc,
        BLOCK_M: tl.constexpr,
        BLOCK_N: tl.constexpr,
        BLOCK_K: tl.constexpr,
        GROUP_M: tl.constexpr,
        STAGES: tl.constexpr,
        SPECIALIZE: tl.constexpr,
        TMA_STORE: tl.constexpr,
        B_KN: tl.constexpr = False,
    ):
        """C = A B^T in one function, the tile order of _triton_tile, with the
        TMA descriptors made in the kernel: the form Triton 3.6's Hopper
        warp specialization compiles with 4 warps and 128x256 tiles. The
        tile loop is written out rather than taken from _triton_tile because
        this is the form that compiles (results/h200-triton-ws-probe.txt);
        whether the helper or the host-made descriptors break the pass was
        not isolated. With B_KN,
        B is a row-major [K, N] (C = A B)."""
        a_desc = tl.make_tensor_descriptor(
            a_ptr, shape=[M, K], strides=[K, 1], block_shape=[BLOCK_M, BLOCK_K]
        )
        if B_KN:
            b_desc = tl.make_tensor_descriptor(
                b_ptr, shape=[K, N], strides=[N, 1], block_shape=[BLOCK_K, BLOCK_N]
            )
        else:
            b_desc = tl.make_tensor_descriptor(
                b_ptr, shape=[N, K], strides=[K, 1], block_shape=[BLOCK_N, BLOCK_K]
            )
        block = tl.program_id(0)
        tiles_m = tl.cdiv(M, BLOCK_M)
        tiles_n = tl.cdiv(N, BLOCK_N)
        group_size = GROUP_M * tiles_n
        first_row = block // group_size * GROUP_M
        rows_in_group = tl.minimum(tiles_m - first_row, GROUP_M)
        in_group = block % group_size
        row0 = (first_row + in_group % rows_in_group) * BLOCK_M
        col0 = (in_group // rows_in_group) * BLOCK_N
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for kt in tl.range(0, tl.cdiv(K, BLOCK_K), num_stages=STAGES, warp_specialize=SPECIALIZE):
            a = a_desc.load([row0, kt * BLOCK_K])
            if B_KN:
                acc = tl.dot(a, b_desc.load([kt * BLOCK_K, col0]), acc)
            else:
                acc = tl.dot(a, b_desc.load([col0, kt * BLOCK_K]).T, acc)
        if TMA_STORE:
            c_desc = tl.make_tensor_descriptor(
                c_ptr, shape=[M, N], strides=[ldc, 1], block_shape=[BLOCK_M, BLOCK_N]
            )
            c_desc.store([row0, col0], acc.to(c_ptr.dtype.element_ty))
        else:
            rows = (row0 + tl.arange(0, BLOCK_M)).to(tl.int64)
            cols = col0 + tl.arange(0, BLOCK_N)
            inside = (rows[:, None] < M) & (cols[None, :] < N)
            tl.store(
                c_ptr + rows[:, None] * ldc + cols[None, :],
                acc.to(c_ptr.dtype.element_ty),
                mask=inside,
            )


def use_scratch_once_per_size(torch) -> None:
    """Triton's allocator for descriptors made in the kernel: a global scratch
    buffer per size, allocated once, so no launch pays for an allocation (the
    launches of one stream run in order, so they can share it)."""
    scratch = {}

    def allocate(size, alignment, stream):
        if size not in scratch:
            scratch[size] = torch.empty(size, device="cuda", dtype=torch.int8)
        return scratch[size]

    triton.set_allocator(allocate)


def triton_method(torch, inputs: Inputs, config):
    from triton.tools.tensor_descriptor import TensorDescriptor

    block_m, block_n, block_k, stages, warps, specialize, c_store = config
    shape = inputs.shape
    grid = (math.ceil(shape.m / block_m) * math.ceil(shape.n / block_n),)
    tma_store = c_store in ("tma", "device-tma")
    if tma_store and shape.n * 2 % 16:
        raise ValueError(f"a TMA store needs C's rows 16-byte aligned; N = {shape.n}")
    tiles = dict(
        BLOCK_M=block_m,
        BLOCK_N=block_n,
        BLOCK_K=block_k,
        GROUP_M=TRITON_GROUP_M,
        STAGES=stages,
        SPECIALIZE=specialize,
        num_warps=warps,
    )

    def device_launcher(a, b, c):
        return lambda: bench_triton_matmul_device[grid](
            a, b, c, shape.m, shape.n, shape.k, c.stride(0), TMA_STORE=tma_store, **tiles
        )

    def launcher(a, b, c):
        if c_store.startswith("device"):
            return device_launcher(a, b, c)
        a_desc = TensorDescriptor.from_tensor(a, [block_m, block_k])
        b_desc = TensorDescriptor.from_tensor(b, [block_n, block_k])
        if tma_store:
            c_desc = TensorDescriptor.from_tensor(c, [block_m, block_n])
            out_bf16 = c.dtype == torch.bfloat16

            def launch():
                bench_triton_matmul_tma_store[grid](
                    a_desc, b_desc, c_desc, shape.m, shape.n, shape.k, OUT_BF16=out_bf16, **tiles
                )

            return launch

        def launch():
            bench_triton_matmul[grid](
                a_desc, b_desc, c, shape.m, shape.n, shape.k, c.stride(0), **tiles
            )

        return launch

    if c_store.startswith("device"):
        use_scratch_once_per_size(torch)

    def run_once(a, b, c):
        launcher(a, b, c)()

    return run_once, [launcher(a, b, c) for a, b, c in inputs.sets]
