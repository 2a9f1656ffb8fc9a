"""The wsc passes, one module per pass, each named after its flag.

REGISTRY maps a flag to "module:Class"; classes are imported on first use so
that listing the passes (wsc-opt --help) stays cheap.
"""

from __future__ import annotations

import importlib
import importlib.util

REGISTRY = {
    "warp-specialize": "warp_specialize:WarpSpecialize",
    "unroll-ring-buffer": "unroll_ring_buffer:UnrollRingBuffer",
    "verify-pipeline": "verify_pipeline:VerifyPipeline",
    "convert-wsc-to-nvvm": "convert_wsc_to_nvvm:ConvertWscToNvvm",
}


def available() -> list[str]:
    """The flags whose pass module exists in this checkout."""
    found = []
    for flag, target in REGISTRY.items():
        module_name = target.split(":")[0]
        if importlib.util.find_spec(f"{__name__}.{module_name}") is not None:
            found.append(flag)
    return found


def lookup(flag: str):
    """The pass class registered under `flag`, or None."""
    target = REGISTRY.get(flag)
    if target is None:
        return None
    module_name, class_name = target.split(":")
    module = importlib.import_module(f"{__name__}.{module_name}")
    return getattr(module, class_name)
