"""The check of attention artifacts: O = softmax(Q K^T / sqrt(D)) V against
float64. No MLIR here."""

from __future__ import annotations

import numpy as np

from wsc.kernels.back_to_back.check import BackToBackCheck

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

    def torch_reference(self, torch, q, k, v):
        weights = torch.softmax(q.double() @ k.double().T * self.k**-0.5, dim=1)
        return weights @ v.double()

    def host_reference(self, q: np.ndarray, k: np.ndarray, v: np.ndarray) -> np.ndarray:
        scores = q @ k.T * self.k**-0.5
        weights = np.exp(scores - scores.max(axis=1, keepdims=True))
        return (weights / weights.sum(axis=1, keepdims=True)) @ v


#: The factory wsc.runtime.checks finds for "check": "attention".
CHECK = AttentionCheck
