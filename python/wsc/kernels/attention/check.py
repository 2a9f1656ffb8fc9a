"""The check of attention artifacts: O = softmax(Q K^T / sqrt(D)) V against
float64. No MLIR here."""

from __future__ import annotations

from typing import Any

import numpy as np

from wsc.kernels.back_to_back.check import BackToBackCheck
from wsc.runtime.memory import Inputs, Memory, TorchMemory, to_float64

#: Relative error allowed: the kernel rounds the softmax's numerators to f16
#: before the second product and O to f16, each about 2^-12 on average.
TOLERANCE = 2e-3


class AttentionCheck(BackToBackCheck):
    """Q [m, k], K [n, k], V [n, e] (tensors a, b, c) and O [m, e] (d), as a
    back-to-back product's; the reference is the softmax's."""

    NAME = "attention"

    @property
    def input_scale(self) -> float:
        return 1.0

    @property
    def tolerance(self) -> float:
        return TOLERANCE

    def relative_error(
        self, memory: Memory, inputs: Inputs, outputs: dict[str, Any], seed: int
    ) -> float:
        scale = self.k**-0.5
        if isinstance(memory, TorchMemory):
            torch = memory.torch
            if "reference" not in inputs.cache:
                q, k, v = (inputs.arrays[t].double() for t in "abc")
                weights = torch.softmax(q @ k.T * scale, dim=1)
                inputs.cache["reference"] = weights @ v
            reference = inputs.cache["reference"]
            got = outputs["d"].double()
            norm = torch.linalg.norm(reference)
            error = torch.linalg.norm(got - reference)
            return float(error / norm) if float(norm) else float(error)
        if "reference" not in inputs.cache:
            q, k, v = (to_float64(inputs.hosts[t], self.dtype) for t in "abc")
            scores = q @ k.T * scale
            weights = np.exp(scores - scores.max(axis=1, keepdims=True))
            inputs.cache["reference"] = (weights / weights.sum(axis=1, keepdims=True)) @ v
        reference = inputs.cache["reference"]
        got = memory.float64(outputs["d"], self.out_dtype)
        norm = np.linalg.norm(reference)
        error = np.linalg.norm(got - reference)
        return float(error / norm) if norm else float(error)


#: The factory wsc.runtime.checks finds for "check": "attention".
CHECK = AttentionCheck
