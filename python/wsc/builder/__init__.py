"""The kernel builder: wsc kernels written in Python, as the tutorial writes them.

Explicitly, as in the seed (V3): thread groups with their own code, shared ring
buffers, mbarriers, TMA copies and WGMMA, each call emitting the wsc op it names:

    kb = KernelBuilder("matmul", num_warps=5, grid=[("m", 128), ("n", 128)])
    a, b, c = kb.global_tensor(f16), kb.global_tensor(f16), kb.global_tensor(f32)
    sa = kb.shared_tensor(f16, [stages, 128, 64])
    full = kb.mbarrier.alloc(arrival_count=1, num_barriers=stages)
    kb.sync()
    with kb.thread_group(thread_begin=0, num_threads=128, role="consumer"):
        for it in kb.range(0, a.shape[1], 64, stages=stages,
                           phase=CONSUMER_INITIAL_PHASE, unroll=stages):
            kb.mbarrier.wait(full[it.stage], phase=it.phase)
            ...
    kernel = kb.finish()            # a verified `Kernel`
    kernel.compile().write_artifact(out_dir, m=M, n=N, k=K)

Automatically: write the non-specialized kernel (the tutorial's V2) the same
way and ask for specialization with --warp-specialize's options as keyword
arguments, `kernel.warp_specialize(num_stages=4)`; the result is structurally
the kernel the explicit form builds (`structure()` says what that means).

`kb.range` is the ring loop: its body runs once in Python and becomes an
`scf.for` over K tiles carrying the ring position (stage, phase), advanced by
`wsc.ring_advance` at the end of each trip, the form --warp-specialize and
--unroll-ring-buffer work on. `unroll=N` asks for --unroll-ring-buffer. A
persistent kernel's `kb.tile_range` is a loop over output tiles that carries
the ring position from tile to tile; its ring loop, `kb.range(..., ring=tiles)`,
continues where the previous tile's stopped (wsc.kernels.matmul builds the
production matmul this way).

Errors in the kernel's code are raised while it is built, as `BuildError`s
naming the user's file:line:col (a kernel that builds but likely does not do
what was meant, e.g. writes nothing, gives a `BuildWarning` there); every op
carries that location too, so the verifier's and the passes' diagnostics
point into the user's Python file.

The package: `values` (what a kernel's code handles), `ops` (kb.mbarrier,
kb.tma, kb.wgmma), `kernel_builder` (KernelBuilder and its regions),
`errors`, `kernel` (a built Kernel and its compile) and `structure`; this
module re-exports their public names.
"""

from wsc.builder.errors import BuildError, BuildTypeError, BuildWarning, SourceLocation
from wsc.builder.kernel import CompiledKernel, Kernel, split_k_workspaces
from wsc.builder.kernel_builder import KernelBuilder, Pipeline
from wsc.builder.structure import structure
from wsc.builder.values import (
    BarrierRef,
    Barriers,
    GlobalTensor,
    KernelScalar,
    Predicate,
    RegisterTile,
    RingLoop,
    Scalar,
    SharedTensor,
    SharedTile,
    SplitKWorkspace,
    TileComparison,
    TileLoop,
    bf16,
    cdiv,
    e4m3,
    f16,
    f32,
    minimum,
)
from wsc.dialect import CONSUMER_INITIAL_PHASE, PRODUCER_INITIAL_PHASE

__all__ = [
    "BarrierRef",
    "Barriers",
    "BuildError",
    "BuildTypeError",
    "BuildWarning",
    "CONSUMER_INITIAL_PHASE",
    "CompiledKernel",
    "GlobalTensor",
    "KernelScalar",
    "Kernel",
    "KernelBuilder",
    "PRODUCER_INITIAL_PHASE",
    "Pipeline",
    "Predicate",
    "RegisterTile",
    "RingLoop",
    "Scalar",
    "SharedTensor",
    "SharedTile",
    "SourceLocation",
    "SplitKWorkspace",
    "TileComparison",
    "TileLoop",
    "bf16",
    "cdiv",
    "e4m3",
    "f16",
    "f32",
    "minimum",
    "split_k_workspaces",
    "structure",
]
