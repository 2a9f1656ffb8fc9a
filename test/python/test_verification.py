"""No upstream MLIR code runs on IR that does not verify: upstream passes may
abort on it, taking the process with them. IR from the Python API is
verified before the first pass, and the lowering verifies what it built
before the upstream conversions run."""

from pathlib import Path

import pytest
from mlir import ir
from mlir.dialects import func, llvm

from wsc.codegen import lower_to_ptx
from wsc.codegen.lower_ops import KernelLowering
from wsc.compiler import CompileError, compile_module
from wsc.diagnostics import PassError
from wsc.dialect import make_context
from wsc.passes.verify_pipeline import VerifyPipeline

V3 = (Path(__file__).resolve().parents[2] / "examples" / "matmul_v3.mlir").read_text()


def test_api_built_ir_is_verified_before_the_first_pass():
    with make_context(), ir.Location.unknown():
        module = ir.Module.create()
        with ir.InsertionPoint(module.body):
            kernel = func.FuncOp("k", ir.FunctionType.get([], []))
            kernel.attributes["wsc.num_threads"] = ir.IntegerAttr.get(
                ir.IntegerType.get_signless(32), 128
            )
            kernel.add_entry_block()  # no terminator
        with pytest.raises(CompileError, match="empty block: expect at least a terminator"):
            compile_module(module, [VerifyPipeline()])


def test_lowering_checks_its_own_output_before_upstream_conversion(monkeypatch):
    def broken_sync(self, op):
        # A terminator in the middle of a block: IR that does not verify.
        llvm.ReturnOp()

    monkeypatch.setattr(KernelLowering, "_lower_sync", broken_sync)
    with pytest.raises(
        PassError,
        match=r"kernel 'matmul' was rewritten into IR that does "
        r"not verify \(internal error\)",
    ):
        lower_to_ptx(V3)
