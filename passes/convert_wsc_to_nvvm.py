"""Lower specialized wsc kernels to NVVM/LLVM for sm_90a.

Before: the module holds one or more kernels, each a `func.func` with
`wsc.num_threads = T : i32` whose arguments are rank-2 global memrefs (rank 1:
vectors and split-K workspaces; rank 3: batches of matrices, whose matrices,
`wsc.batch_matrix`, only TMA copies take: their batch index becomes the copy's
third coordinate) and whose
body uses wsc ops (as `--warp-specialize`, optionally `--unroll-ring-buffer`,
leave them: roles are `wsc.role` predicates guarding `scf.if`; stage operands
may be constants or run-time values), arith, scf, index, `gpu.block_id` /
`thread_id` / `block_dim` / `grid_dim`, and `memref.dim` of kernel arguments
and their matrices.
A kernel with `wsc.cluster_size = n` gets `nvvm.cluster_dim = [n, 1, 1]`
(`.reqnctapercluster`) and `"cluster": n` in its kernel info. Tensors both
read by TMA and written are not supported, nor tensors written
both by TMA (`wsc.tma_store`) and by threads (`wsc.store`,
`wsc.coalesced_store`); a located error says so.

After: the kernels are gone and the module (marked `gpu.container_module`)
holds `gpu.module @wsc_kernels [#nvvm.target<chip = C, features = "+ptxV", O = 3>]`
with one `llvm.func` per kernel (`nvvm.kernel`, `nvvm.maxntid = [T, 1, 1]`,
`nvvm.minctasm = 1`) whose body has llvm and nvvm ops only (wgmma.mma_async
and the mbarrier/TMA/setmaxnreg/fence ops stay NVVM ops: run
`convert-nvvm-to-llvm` before `gpu-module-to-binary`, as
`wsc.codegen.lower_to_ptx` does), plus the extern shared array
`@wsc_smem` (`.extern .shared .align 1024 .b8 wsc_smem[]`). Kernel parameters
are TMA descriptors passed by value (`llvm.byval = !llvm.array<128 x i8>`,
`nvvm.grid_constant`, 64-byte aligned), raw output pointers, then i32 sizes and
leading dimensions; each `llvm.func` carries the launch description as JSON
in its `wsc.kernel_info` attribute (see `wsc.codegen.info` for the naming and
ordering rules). A kernel needing more than 227 KB of shared memory, or
register budgets the block cannot supply (setmaxnreg.inc only gets what
setmaxnreg.dec in complete warpgroups gives back), is rejected with a located
error.

Options:
  chip=<str>            target chip (default sm_90a; wgmma and setmaxnreg need
                        an "a" target)
  ptx-version=<int>     PTX ISA version as major*10+minor (default 90 = PTX 9.0,
                        the newest ptxas 13.0 and driver 580 take; 80 works too)
  index-bitwidth=<int>  width of `index` in the kernel, 32 or 64 (default 32)
Debug options (see wsc.codegen.debug):
  wait-spin-limit=<int> every mbarrier wait gives up after this many failed
                        try_wait probes: the thread prints the barrier array,
                        stage and phase it waited on, then traps (0: no bound)
  delay-role=<str>      threads of the roles with this name sleep a random
                        0..delay-max-ns ns before each mbarrier wait and arrive
  delay-max-ns=<int>    the longest such delay (default 2000)
"""

from __future__ import annotations

from mlir import ir

from wsc.pass_registry import Option, WscPass
from wsc.target.hopper import CHIP, PTX_VERSIONS


class ConvertWscToNvvm(WscPass):
    """Lower specialized wsc kernels to NVVM/LLVM for sm_90a (see the module docstring)."""

    ARGUMENT = "convert-wsc-to-nvvm"
    SUMMARY = "Lower specialized wsc kernels to NVVM/LLVM for sm_90a"
    OPTIONS = (
        Option("chip", str, CHIP, "target chip", choices=(CHIP,)),
        Option(
            "ptx-version",
            int,
            90,
            "PTX ISA version as major*10+minor, e.g. 90 for 9.0",
            choices=PTX_VERSIONS,
        ),
        Option("index-bitwidth", int, 32, "bit width of index in the kernel", choices=(32, 64)),
        Option(
            "wait-spin-limit",
            int,
            0,
            "debug: trap after this many failed mbarrier "
            "try_wait probes, naming the wait (0: no bound)",
        ),
        Option("delay-role", str, "", "debug: random delays before the mbarrier ops of this role"),
        Option("delay-max-ns", int, 2000, "debug: the longest random delay, in ns"),
    )

    def __init__(self, **options):
        super().__init__(**options)
        from wsc.codegen.debug import DebugOptions

        try:
            self.debug = DebugOptions(
                self.options.wait_spin_limit, self.options.delay_role, self.options.delay_max_ns
            )
        except ValueError as error:
            raise ValueError(f"pass '{self.ARGUMENT}': {error}") from None

    def run(self, module: ir.Module) -> None:
        from wsc.codegen.convert import lower_module

        lower_module(
            module.operation,
            chip=self.options.chip,
            ptx_version=self.options.ptx_version,
            index_bitwidth=self.options.index_bitwidth,
            debug=self.debug,
        )
