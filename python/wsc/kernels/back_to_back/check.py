"""The check of back-to-back artifacts: O = round(Q K^T) V, the first
product rounded to the operands' dtype (as the kernel rounds it in registers
before the second WGMMA reads it), against float64. No MLIR here."""

from __future__ import annotations

from typing import Any

import numpy as np

from wsc.kernels.matmul.check import relative_frobenius, tolerance_for
from wsc.runtime.artifact import Artifact, ArtifactError
from wsc.runtime.memory import Inputs, Memory, TorchMemory, float32_to_bf16_bits, to_float64
from wsc.target.hopper import HALF_DTYPES, RESULT_DTYPES


class BackToBackCheck:
    """Q [m, k], K [n, k], V [n, e] (tensors a, b, c) and O [m, e] (d)."""

    #: The check's name in artifacts (and in its errors).
    NAME = "back_to_back"
    #: It reads no check_config.
    CONFIG_KEYS: frozenset[str] = frozenset()

    def __init__(self, artifact: Artifact):
        def fail(message: str) -> ArtifactError:
            return ArtifactError(f"{artifact.json_path}: check '{self.NAME}': {message}")

        tensors = artifact.tensors
        for name in ("a", "b", "c", "d"):
            if name not in tensors or len(tensors[name].dims) != 2:
                raise fail(f"expected matrices a, b, c, d; '{name}' is missing or not rank 2")
        (m, k), (n, b_k), (c_n, e), (d_m, d_e) = (tensors[t].dims for t in "abcd")
        if (b_k, c_n, d_m, d_e) != (k, n, m, e):
            raise fail(
                f"dims a {[m, k]}, b {[n, b_k]}, c {[c_n, e]}, d {[d_m, d_e]} are not "
                f"Q [m, k], K [n, k], V [n, e], O [m, e]"
            )
        dtypes = {tensors[t].dtype for t in "abc"}
        if len(dtypes) != 1 or not dtypes <= set(HALF_DTYPES):
            raise fail(f"a, b and c must share a dtype of {', '.join(HALF_DTYPES)}")
        if tensors["d"].dtype not in RESULT_DTYPES:
            raise fail(f"d's dtype must be one of {', '.join(RESULT_DTYPES)}")
        self.dtype, self.out_dtype = dtypes.pop(), tensors["d"].dtype
        self.m, self.n, self.k, self.e = (artifact.sizes[size] for size in (m, n, k, e))

    @property
    def input_scale(self) -> float:
        # Q K^T's entries near unit variance, as the matmul check's products.
        return float(self.k**-0.25)

    @property
    def tolerance(self) -> float:
        # The second product sums n terms in f32.
        return tolerance_for(self.out_dtype, "f32", self.n)

    @property
    def flops(self) -> float:
        return 2.0 * self.m * self.n * (self.k + self.e)

    def describe(self) -> dict[str, Any]:
        return {
            "shape": [self.m, self.n, self.k, self.e],
            "dtype": self.dtype,
            "out_dtype": self.out_dtype,
        }

    def relative_error(
        self, memory: Memory, inputs: Inputs, outputs: dict[str, Any], seed: int
    ) -> float:
        if isinstance(memory, TorchMemory):
            torch = memory.torch
            if "reference" not in inputs.cache:
                q, k, v = (inputs.arrays[t] for t in "abc")
                inputs.cache["reference"] = self.torch_reference(torch, q, k, v)
            return relative_frobenius(
                outputs["d"].double(), inputs.cache["reference"], torch.linalg.norm
            )
        if "reference" not in inputs.cache:
            q, k, v = (to_float64(inputs.hosts[t], self.dtype) for t in "abc")
            inputs.cache["reference"] = self.host_reference(q, k, v)
        got = memory.float64(outputs["d"], self.out_dtype)
        return relative_frobenius(got, inputs.cache["reference"], np.linalg.norm)

    def torch_reference(self, torch, q, k, v):
        """O in float64 from the device tensors Q, K and V."""
        scores = q.double() @ k.double().T
        return scores.to(q.dtype).double() @ v.double()

    def host_reference(self, q: np.ndarray, k: np.ndarray, v: np.ndarray) -> np.ndarray:
        """O from Q, K and V's float64 host values."""
        return self._rounded(q @ k.T) @ v

    def _rounded(self, values: np.ndarray) -> np.ndarray:
        """`values` rounded to the operands' dtype (nearest, ties to even)."""
        if self.dtype == "bf16":
            return to_float64(float32_to_bf16_bits(values.astype(np.float32)), "bf16")
        return values.astype(np.float16).astype(np.float64)


#: The factory wsc.runtime.checks finds for "check": "back_to_back".
CHECK = BackToBackCheck
