"""Hopper (sm_90a) code generation: wsc IR -> NVVM/LLVM -> PTX -> cubin.

    from wsc.codegen import lower_to_ptx, assemble
    ptx, info = lower_to_ptx(module)        # --convert-wsc-to-nvvm + NVVM -> PTX
    report = assemble(ptx)                  # ptxas -arch=sm_90a -v
    info.params, info.tensor_maps, info.dynamic_smem_bytes, report.registers

Modules: `layout` (shared-memory layout), `descriptors` (WGMMA descriptors),
`fragments` (accumulator register fragments), `info` (KernelInfo and the
parameter naming rule) and `ptxas` need no MLIR; `emit` (op builders), the
pass's engine (`plan`: what a kernel needs, checked before anything changes;
`lower_ops`: one emitter per wsc op; `convert`: the upstream conversions and
the gpu.module) and `ptx` use the MLIR bindings and are imported on first
use, so the runtime side can import this package without them.
"""

from __future__ import annotations

from wsc.codegen.info import KernelInfo, tensor_name
from wsc.codegen.ptxas import PtxasError, PtxasReport, assemble, find_ptxas

__all__ = [
    "KernelInfo",
    "tensor_name",
    "PtxasError",
    "PtxasReport",
    "assemble",
    "find_ptxas",
    "lower_to_ptx",
    "kernel_infos",
    "CodegenError",
]


def __getattr__(name):
    if name in ("lower_to_ptx", "kernel_infos", "CodegenError"):
        from wsc.codegen import ptx

        return getattr(ptx, name)
    raise AttributeError(name)
