"""What the host needs to know to launch a lowered kernel (no MLIR needed).

`--convert-wsc-to-nvvm` records a `KernelInfo` as JSON in the
`wsc.kernel_info` string attribute of the `llvm.func` it emits, and
`lower_to_ptx` returns it next to the PTX.

Naming rule. Kernel argument names do not survive in IR, so the rank-2
global tensors are named by position: argument 0 is "a", 1 is "b", 2 is "c",
and so on through the alphabet ("t26", "t27", ... after "z").

Parameters, in launch order:
  1. a `tensor_map` (a 128-byte CUtensorMap passed by value, `.param .align 64
     .b8 p[128]`) for each tensor read by wsc.tma_load, in argument order;
  2. a `pointer` (global address of element [0, 0]) for each tensor written by
     wsc.store, in argument order;
  3. the `i32` problem sizes: "m", "n", "k" when the kernel is a matmul (the
     dims of A [m, k], B [n, k] or [k, n], C [m, n] as wired by wsc.wgmma,
     wsc.tma_load and wsc.store), always all three and in that order; any
     other dimension the kernel reads is "<tensor>_dim<i>" (e.g. "a_dim0"),
     in order of first use;
  4. "ld<tensor>" (`i32`, row stride in elements) for each `pointer` tensor.

`dims` says which tensor dimensions each size parameter must equal, so the
host can derive and check them; `tensor_maps` gives the TMA box (outermost
first, in the tensor's own dim order) and swizzle of each tensor map.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any

from wsc.runtime.artifact import tensor_name

__all__ = ["KernelInfo", "tensor_name"]


@dataclass
class KernelInfo:
    name: str
    block: tuple[int, int, int]
    dynamic_smem_bytes: int
    params: list[dict[str, str]]
    tensor_maps: dict[str, dict[str, Any]]
    #: {"a": {"arg": 0, "dtype": "f16", "role": "input", "shape": [-1, -1]}, ...}
    tensors: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: {"m": [["a", 0], ["c", 0]], ...}: the tensor dims each size param equals.
    dims: dict[str, list[list[Any]]] = field(default_factory=dict)
    #: The per-thread register count the kernel starts with (the cap ptxas
    #: uses when setmaxnreg is present), which decides setmaxnreg inc vs dec.
    entry_registers: int = 0
    #: Byte offsets from the 1024-aligned base: {"buffers": [...], "barriers": [...]}.
    shared_layout: dict[str, Any] = field(default_factory=dict)
    #: The element type of the kernel's WGMMA accumulators ("f32" or "f16";
    #: "" without WGMMA), which bounds how accurate its result can be.
    accumulator: str = ""
    #: CTAs per cluster along x (wsc.cluster_size): a launch's grid x must be
    #: a multiple of it.
    cluster: int = 1
    #: Blocks each SM runs at once (wsc.blocks_per_sm): a persistent launch
    #: has this many per SM.
    blocks_per_sm: int = 1

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["block"] = list(self.block)
        return data

    def dumps(self) -> str:
        return json.dumps(self.to_json(), sort_keys=True)

    @staticmethod
    def loads(text: str) -> KernelInfo:
        data = json.loads(text)
        data["block"] = tuple(data["block"])
        return KernelInfo(**data)
