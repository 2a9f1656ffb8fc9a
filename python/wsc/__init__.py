"""wsc: a warp-specialization compiler for NVIDIA Hopper (sm_90a) built on MLIR.

The compiler side (dialect, passes, driver) needs the MLIR Python bindings; the
runtime (`wsc.runtime`) does not, so compiled kernels run where only the CUDA
driver is. This module therefore imports nothing from `mlir` (nor torch): the
names below are loaded on first use. Where torch is imported before wsc, as
in a PyTorch program, `import wsc` also registers the torch.ops.wsc operators
(matmul, bmm, scaled_mm, softmax and their out= forms), as torch extensions do.

    wsc.matmul(a, b)                  C = A @ B with a tuned wsc kernel (module wsc.matmul)
    wsc.bmm(a, b)                     C[i] = A[i] @ B[i], batches of matrices (wsc.matmul)
    wsc.scaled_mm(a, b, sa, sb)       C = sa sb A @ B for fp8 e4m3 A and B (wsc.matmul)
    wsc.softmax(x)                    softmax along the last dim, bf16 or f16 (module wsc.softmax)
    wsc.NoCorrectKernel               raised where autotuning found no correct kernel (wsc.matmul)
    wsc.KernelBuilder                 write kernels in Python (wsc.builder)
    wsc.autotune                      config spaces for kernel functions (wsc.autotune)
"""

import sys
import types

__version__ = "0.1.0"

_LAZY = {
    "matmul": "wsc.matmul",
    "bmm": "wsc.matmul",
    "scaled_mm": "wsc.matmul",
    "NoCorrectKernel": "wsc.matmul",
    "softmax": "wsc.softmax",
    "autotune": "wsc.autotune",
    "KernelBuilder": "wsc.builder",
    "PRODUCER_INITIAL_PHASE": "wsc.builder",
    "CONSUMER_INITIAL_PHASE": "wsc.builder",
}


def __getattr__(name):
    if name not in _LAZY:
        raise AttributeError(f"module 'wsc' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(_LAZY[name]), name)
    setattr(sys.modules[__name__], name, value)
    return value


def __dir__():
    return sorted([*globals(), *_LAZY])


class _Package(types.ModuleType):
    """The `wsc` package. Importing the module `wsc.matmul` (however it happens)
    makes the import system bind the name `matmul` here to that module; the
    package exports the function of that name instead, so `wsc.matmul(a, b)`
    is always the plain function torch.compile can trace (and so for
    `wsc.softmax`)."""

    def __setattr__(self, name, value):
        if name in ("matmul", "softmax") and isinstance(value, types.ModuleType):
            value = getattr(value, name)
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package

if "torch" in sys.modules:
    # A program that already pays for torch expects torch.ops.wsc.* once wsc
    # is imported. By name, as the lazy names above: this facade sits above
    # the layers (ARCHITECTURE.md), not in the user API's.
    import importlib

    importlib.import_module("wsc.matmul")
    importlib.import_module("wsc.softmax")
