"""The driver of --convert-wsc-to-nvvm: every wsc kernel (a func.func with
wsc ops) of a module becomes an NVVM kernel (an llvm.func with llvm and nvvm
ops) in `gpu.module @wsc_kernels`.

Two phases, so that a rejected kernel leaves the module untouched: every
kernel is planned first (wsc.codegen.plan), then each is emitted
(wsc.codegen.lower_ops) into a scratch module, where the upstream
conversions (scf -> cf -> llvm, arith/index/func -> llvm) leave one llvm.func
whose `wsc.kernel_info` attribute holds the KernelInfo JSON.

What the GPU has run correctly of this lowering (kernel forms, dtypes,
swizzles, epilogues) is in results/h200-correctness.md and
results/h200-matmul-tests.txt.
"""

from __future__ import annotations

from mlir import ir
from mlir.dialects import llvm
from mlir.passmanager import PassManager

from wsc.codegen import emit as E
from wsc.codegen.debug import DebugOptions
from wsc.codegen.info import KernelInfo
from wsc.codegen.lower_ops import SMEM_SYMBOL, KernelLowering
from wsc.codegen.plan import fail
from wsc.diagnostics import PassError
from wsc.ir_utils import (
    KERNEL_THREADS_ATTR,
    walk,
)
from wsc.target.hopper import (
    BUFFER_ALIGN,
    CHIP,
)


def convert_kernel(lowering: KernelLowering, scratch: ir.Module, new_func) -> ir.Operation:
    """Run the upstream conversions on `scratch` after `lowering` built its
    kernel there (`new_func`); returns the llvm.func, its launch description
    in the `wsc.kernel_info` attribute."""
    width = lowering.index_bitwidth
    pipeline = (
        "builtin.module(arith-expand,convert-scf-to-cf,"
        f"convert-arith-to-llvm{{index-bitwidth={width}}},"
        f"convert-index-to-llvm{{index-bitwidth={width}}},"
        f"convert-func-to-llvm{{index-bitwidth={width}}},"
        f"convert-cf-to-llvm{{index-bitwidth={width}}},"
        "reconcile-unrealized-casts,canonicalize,cse)"
    )
    # Upstream passes may crash on IR that does not verify, and a
    # PassManager does not verify its input: check what the rewrite built.
    try:
        scratch.operation.verify()
    except ir.MLIRError as error:
        raise PassError(
            new_func.location,
            f"kernel '{lowering.name}' was rewritten into IR "
            f"that does not verify (internal error): "
            f"{error}",
        ) from None
    PassManager.parse(pipeline).run(scratch.operation)
    lowered = None
    for op in scratch.body.operations:
        op = op.operation
        if (
            op.name == "llvm.func"
            and ir.StringAttr(op.attributes["sym_name"]).value == lowering.name
        ):
            lowered = op
    assert lowered is not None, "func-to-llvm produced no llvm.func"
    for op in walk(lowered):
        if op.name.split(".")[0] not in ("llvm", "nvvm"):
            raise fail(op, "was left after lowering to LLVM (internal error)")
    lowered.attributes["nvvm.kernel"] = ir.UnitAttr.get()
    lowered.attributes["nvvm.maxntid"] = ir.DenseI32ArrayAttr.get([lowering.threads, 1, 1])
    lowered.attributes["nvvm.minctasm"] = ir.IntegerAttr.get(E.i32(), lowering.blocks_per_sm)
    if lowering.cluster > 1:
        lowered.attributes["nvvm.cluster_dim"] = ir.DenseI32ArrayAttr.get([lowering.cluster, 1, 1])
    lowered.attributes["arg_attrs"] = ir.ArrayAttr.get(
        [ir.DictAttr.get(p.attrs) for p in lowering.params]
    )
    lowered.attributes["wsc.kernel_info"] = ir.StringAttr.get(lowering.kernel_info().dumps())
    return lowered


def smem_global() -> None:
    """The extern dynamic shared-memory array, at the current insertion point.

    External linkage keeps it `.extern .shared .align 1024 .b8 wsc_smem[]` in PTX;
    an internal zero-sized global would be demoted to a function-local 1-byte
    variable that overlaps nothing the layout planned."""
    llvm.GlobalOp(
        E.array_of(E.i8(), 0),
        SMEM_SYMBOL,
        ir.Attribute.parse("#llvm.linkage<external>"),
        alignment=BUFFER_ALIGN,
        addr_space=3,
    )


#: The gpu.module every lowered kernel goes into.
GPU_MODULE_NAME = "wsc_kernels"


def nvvm_target(chip: str, ptx_version: int, opt_level: int = 3) -> ir.Attribute:
    return ir.Attribute.parse(
        f'#nvvm.target<chip = "{chip}", features = "+ptx{ptx_version}", O = {opt_level}>'
    )


def lower_module(
    module: ir.Operation,
    chip: str = CHIP,
    ptx_version: int = 90,
    index_bitwidth: int = 32,
    debug: DebugOptions = DebugOptions(),
) -> list[KernelInfo]:
    """Lower every wsc kernel of `module` (in place) into
    `gpu.module @wsc_kernels [#nvvm.target<...>]`; returns their KernelInfo.
    `debug` adds instrumentation (wsc.codegen.debug)."""
    from mlir.dialects import gpu

    from wsc.ir_utils import kernels

    module = module.operation
    found = kernels(module)
    if not found:
        # Located at the first function, which lacks the attribute, where there is one.
        functions = [op for op in walk(module) if op.name == "func.func"]
        raise PassError(
            (functions[0] if functions else module).location,
            f"found no kernel to lower (a func.func with the '{KERNEL_THREADS_ATTR}' attribute)",
        )
    for op in walk(module):
        if (
            op.name == "gpu.module"
            and ir.StringAttr(op.attributes["sym_name"]).value == GPU_MODULE_NAME
        ):
            raise PassError(
                op.location, f"the module already holds a gpu.module @{GPU_MODULE_NAME}"
            )
    lowerings = [KernelLowering(kernel, index_bitwidth, debug) for kernel in found]
    for lowering in lowerings:
        lowering.analyze()
    infos = [lowering.kernel_info() for lowering in lowerings]
    with module.location:
        scratch = ir.Module.create()
        with ir.InsertionPoint(scratch.body):
            smem_global()
        for lowering in lowerings:
            convert_kernel(lowering, scratch, lowering.build(scratch))
        body = module.regions[0].blocks[0]
        with ir.InsertionPoint(body):
            gpu_module = gpu.GPUModuleOp(
                GPU_MODULE_NAME, targets=ir.ArrayAttr.get([nvvm_target(chip, ptx_version)])
            )
        target_block = gpu_module.regions[0].blocks.append()
        for op in list(scratch.body.operations):
            op = op.operation
            op.detach_from_parent()
            ir.InsertionPoint(target_block).insert(op)
    module.attributes["gpu.container_module"] = ir.UnitAttr.get()
    try:
        gpu_module.operation.verify()
    except ir.MLIRError as error:
        raise PassError(
            gpu_module.location, f"the lowered kernel does not verify (internal error): {error}"
        ) from None
    return infos
