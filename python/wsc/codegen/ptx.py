"""From wsc IR to PTX text: --convert-wsc-to-nvvm, then upstream NVVM -> PTX."""

from __future__ import annotations

from mlir import ir
from mlir.passmanager import PassManager

from wsc.codegen.convert import GPU_MODULE_NAME, lower_module
from wsc.codegen.debug import DebugOptions
from wsc.codegen.info import KernelInfo
from wsc.ir_utils import kernels, walk
from wsc.target.hopper import CHIP

#: What runs after --convert-wsc-to-nvvm: the NVVM ops that are PTX snippets
#: (wgmma.mma_async among them) become llvm.inline_asm, then LLVM's NVPTX
#: back end (at the target's O level) prints PTX into a gpu.binary.
PTX_PIPELINE = (
    "builtin.module(gpu.module(convert-nvvm-to-llvm,reconcile-unrealized-casts),"
    "gpu-module-to-binary{format=isa})"
)


class CodegenError(RuntimeError):
    """The lowered module could not be turned into PTX."""


def _working_copy(module) -> tuple[object, ir.Operation]:
    """(owner to keep alive, builtin.module operation to lower)."""
    if isinstance(module, str):
        from wsc.dialect import make_context, parse_module

        context = make_context()
        with context:
            parsed = parse_module(module)
        return (context, parsed), parsed.operation
    clone = module.operation.clone()
    return clone, clone


def kernel_infos(module: ir.Operation) -> list[KernelInfo]:
    """The KernelInfo of every kernel lowered by --convert-wsc-to-nvvm in `module`."""
    return [
        KernelInfo.loads(ir.StringAttr(op.attributes["wsc.kernel_info"]).value)
        for op in walk(module.operation)
        if op.name == "llvm.func" and "wsc.kernel_info" in op.attributes
    ]


def lower_to_ptx(
    module,
    chip: str = CHIP,
    ptx_version: int = 90,
    index_bitwidth: int = 32,
    debug: DebugOptions = DebugOptions(),
) -> tuple[str, KernelInfo]:
    """PTX text and launch description of the one kernel in `module`.

    `module` is wsc IR, or the output of --convert-wsc-to-nvvm (then the
    pass's options, `debug` included, are not used again): an `ir.Module` (or a builtin.module
    operation), left untouched (a copy is lowered), or MLIR text (parsed in a
    fresh wsc context and verified). Raises wsc.diagnostics.ParseError for text
    that does not parse, wsc.diagnostics.PassError for wsc IR the pass rejects
    and CodegenError if upstream lowering fails."""
    from wsc.verifier import verify_wsc

    owner, working = _working_copy(module)
    with working.context:
        if kernels(working) or not kernel_infos(working):
            verify_wsc(working)
            infos = lower_module(
                working,
                chip=chip,
                ptx_version=ptx_version,
                index_bitwidth=index_bitwidth,
                debug=debug,
            )
        else:  # already lowered by --convert-wsc-to-nvvm: only NVVM -> PTX is left
            infos = kernel_infos(working)
        if len(infos) != 1:
            raise CodegenError(f"lower_to_ptx wants exactly one kernel, found {len(infos)}")
        try:
            working.verify()
            PassManager.parse(PTX_PIPELINE).run(working)
        except ir.MLIRError as error:
            raise CodegenError(f"NVVM to PTX failed: {error}") from error
        ptx = _binary_assembly(working)
    del owner
    return ptx, infos[0]


def _binary_assembly(module: ir.Operation) -> str:
    from mlir.dialects import gpu

    for op in walk(module):
        if (
            op.name == "gpu.binary"
            and ir.StringAttr(op.attributes["sym_name"]).value == GPU_MODULE_NAME
        ):
            objects = ir.ArrayAttr(op.attributes["objects"])
            data = gpu.ObjectAttr(objects[0]).object
            return data.decode() if isinstance(data, bytes) else str(data)
    raise CodegenError("gpu-module-to-binary produced no gpu.binary")
