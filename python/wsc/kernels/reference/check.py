"""The check of artifacts whose kernel names a Python function as its
reference (`KernelBuilder(..., check=function)`): the function's source
travels in the artifact's config, and `wsc run --check` calls it on the
float64 values of the kernel's inputs, by tensor name, and the values of its
scalar arguments (those the run launched with), by name, and the constants
of its build that the kernel's author gave (`check_config=
{"reference_arguments": {...}}`), by name, for the float64 values its
outputs must hold. No MLIR here.

Checking such an artifact runs the Python it carries: check only artifacts
you would also run the kernels of.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from wsc.kernels.matmul.check import relative_frobenius
from wsc.runtime.artifact import Artifact, ArtifactError
from wsc.runtime.memory import Inputs, Memory, TorchMemory, to_float64

#: The relative error allowed by default, by the output's dtype (its rounding
#: and f32 sums of a few thousand terms); `check_config={"tolerance": ...}`
#: says otherwise.
DEFAULT_TOLERANCE = {"f32": 1e-4, "f16": 2e-3, "bf16": 1.6e-2}
#: What a reference's module holds: the names it may use without importing them.
REFERENCE_GLOBALS = {"np": np, "numpy": np, "math": math}


class ReferenceCheck:
    """Inputs are the tensors of role input and inout; outputs those of role
    output and inout, compared by the largest relative error among them."""

    #: The check's name in artifacts (and in its errors).
    NAME = "reference"
    #: The keys of a kernel's check_config this check reads (the builder adds "reference").
    CONFIG_KEYS = frozenset({"tolerance", "input_scale", "reference_arguments"})

    @staticmethod
    def config_problems(config: Mapping[str, Any]) -> list[str]:
        """What is wrong with the values of a check_config (each a phrase
        beginning with its key)."""
        problems = []
        for key in ("tolerance", "input_scale"):
            value = config.get(key)
            if value is not None and (
                isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0
            ):
                problems.append(f"{key} must be a positive number, got {value!r}")
        arguments = config.get("reference_arguments", {})
        if not isinstance(arguments, dict) or not all(isinstance(k, str) for k in arguments):
            problems.append(
                f"reference_arguments must map argument names to values, got {arguments!r}"
            )
        return problems

    def __init__(self, artifact: Artifact):
        def fail(message: str) -> ArtifactError:
            return ArtifactError(f"{artifact.json_path}: check '{self.NAME}': {message}")

        config = artifact.config or {}
        spec = config.get("reference")
        if (
            not isinstance(spec, dict)
            or not isinstance(spec.get("function"), str)
            or not isinstance(spec.get("source"), str)
        ):
            raise fail('config.reference must be {"function": name, "source": its Python}')
        self._spec, self._fail, self._source_name = (
            spec,
            fail,
            f"<reference of {artifact.json_path}>",
        )
        self._function: Callable[..., Any] | None = None
        tensors = artifact.tensors
        self.inputs: list[str] = [n for n, t in tensors.items() if t.role in ("input", "inout")]
        self.outputs: list[str] = [n for n, t in tensors.items() if t.role in ("output", "inout")]
        self.dtypes: dict[str, str] = {name: tensor.dtype for name, tensor in tensors.items()}
        self.scalars: dict[str, float] = artifact.scalars()
        self.kernel: str = artifact.kernel_name
        self.sizes: dict[str, int] = dict(artifact.sizes)
        for problem in self.config_problems(config):
            raise fail(f"config.{problem}")
        tolerance = config.get("tolerance")
        if tolerance is None:
            tolerance = max(DEFAULT_TOLERANCE.get(self.dtypes[n], 1e-4) for n in self.outputs)
        self._tolerance: float = float(tolerance)
        self._input_scale: float = float(config.get("input_scale", 1.0))
        arguments = config.get("reference_arguments", {})
        clashes = sorted(set(arguments) & {*self.inputs, *self.scalars})
        if clashes:
            raise fail(
                f"config.reference_arguments names {', '.join(clashes)}, which the kernel's "
                f"inputs or scalars already pass"
            )
        self.arguments: dict[str, Any] = arguments

    @property
    def function(self) -> Callable[..., Any]:
        """The reference, its source run on first use: only a check runs the
        Python an artifact carries, not a launch or a benchmark."""
        if self._function is None:
            spec, fail = self._spec, self._fail
            namespace: dict[str, Any] = dict(REFERENCE_GLOBALS)
            try:
                exec(compile(spec["source"], self._source_name, "exec"), namespace)
            except Exception as error:  # the author's code: any error is theirs to see
                raise fail(f"its source does not run: {type(error).__name__}: {error}") from error
            function = namespace.get(spec["function"])
            if not callable(function):
                raise fail(f"its source defines no function '{spec['function']}'")
            self._function = function
        return self._function

    @property
    def input_scale(self) -> float:
        return self._input_scale

    @property
    def tolerance(self) -> float:
        return self._tolerance

    @property
    def flops(self) -> float | None:
        return None

    def describe(self) -> dict[str, Any]:
        return {"kernel": self.kernel, "sizes": self.sizes}

    def relative_error(
        self, memory: Memory, inputs: Inputs, outputs: dict[str, Any], seed: int
    ) -> float:
        if "reference" not in inputs.cache:
            values = {name: self._host(memory, inputs, name) for name in self.inputs}
            result = self.function(**values, **self.scalars, **self.arguments)
            inputs.cache["reference"] = self._expected(result)
        expected = inputs.cache["reference"]
        got = {**inputs.arrays, **outputs}
        return max(
            relative_frobenius(
                self._float64(memory, got[name], name), expected[name], np.linalg.norm
            )
            for name in self.outputs
        )

    def _host(self, memory: Memory, inputs: Inputs, name: str) -> np.ndarray:
        if name in inputs.hosts:
            return to_float64(inputs.hosts[name], self.dtypes[name])
        return self._float64(memory, inputs.arrays[name], name)

    def _float64(self, memory: Memory, array: Any, name: str) -> np.ndarray:
        if isinstance(memory, TorchMemory):
            return array.double().cpu().numpy()
        return memory.float64(array, self.dtypes[name])

    def _expected(self, result: Any) -> dict[str, np.ndarray]:
        """The reference's result by output name: a dict of them, or one array
        for a kernel of one output."""
        if not isinstance(result, dict):
            if len(self.outputs) != 1:
                raise ArtifactError(
                    f"check '{self.NAME}': the reference returned one array; kernel "
                    f"'{self.kernel}' has outputs {', '.join(self.outputs)}: return a dict by name"
                )
            result = {self.outputs[0]: result}
        missing = [name for name in self.outputs if name not in result]
        if missing:
            raise ArtifactError(
                f"check '{self.NAME}': the reference returned no {', '.join(missing)} "
                f"(kernel '{self.kernel}' writes {', '.join(self.outputs)})"
            )
        return {name: np.asarray(result[name], dtype=np.float64) for name in self.outputs}


#: The factory wsc.runtime.checks finds for "check": "reference".
CHECK = ReferenceCheck
