"""The checks `wsc run --check` compares kernels with, found by the name an
artifact declares (its "check" key).

A check knows what a kind of kernel computes; the runtime knows only the
artifact. `wsc run` asks the check for the scale of the random inputs, the
relative error of the outputs against a float64 reference, the error allowed,
the work done (for TFLOP/s) and what to report of the problem. The memory
(`wsc.runtime.memory`) draws the inputs, so every check sees the same ones.

The check named K is `register_check(K, factory)`'s factory, else the `CHECK`
of module `wsc.kernels.K.check`, imported on first use (each kernel package
of wsc carries its own). An artifact whose check is neither fails with
UnknownCheckError.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable
from typing import Any, Protocol

from .artifact import Artifact, ArtifactError
from .memory import Inputs, Memory


class UnknownCheckError(ArtifactError):
    """The artifact declares a check no package provides."""


class Check(Protocol):
    """What `wsc run` needs to know of a kind of kernel beyond its artifact.
    A factory builds one from an artifact, raising ArtifactError when the
    artifact does not describe that kind of kernel."""

    @property
    def input_scale(self) -> float:
        """The scale of the normal random inputs."""
        ...

    @property
    def tolerance(self) -> float:
        """The relative error allowed."""
        ...

    @property
    def flops(self) -> float | None:
        """Floating-point operations of one launch, for TFLOP/s (None: not reported)."""
        ...

    def describe(self) -> dict[str, Any]:
        """The problem, as the report's first keys."""
        ...

    def relative_error(
        self, memory: Memory, inputs: Inputs, outputs: dict[str, Any], seed: int
    ) -> float:
        """The relative error of `outputs` (arrays of `memory` by tensor name)
        against a float64 reference computed from `inputs`; `seed` drives
        any sampling."""
        ...


CheckFactory = Callable[[Artifact], Check]
_registered: dict[str, CheckFactory] = {}
_NAME = re.compile(r"[a-z_][a-z0-9_]*")


def register_check(name: str, factory: CheckFactory) -> None:
    """Make `factory` the check of artifacts that declare `name`."""
    _registered[name] = factory


def is_known_check(name: str) -> bool:
    """Whether an artifact declaring check `name` would find one (find_check)."""
    return name in _registered or _packaged_check(name) is not None


def find_check(artifact: Artifact) -> Check | None:
    """The check the artifact declares, built for it; None if it declares none."""
    name = artifact.check
    if name is None:
        return None
    factory = _registered.get(name) or _packaged_check(name)
    if factory is None:
        raise UnknownCheckError(
            f"{artifact.json_path}: key 'check': no check named {name!r}: neither registered "
            f"(wsc.runtime.checks.register_check) nor a CHECK of wsc.kernels.{name}.check"
        )
    return factory(artifact)


def check_config_problems(name: str, config: dict[str, Any]) -> list[str]:
    """What is wrong with `config` as a kernel's check_config for check
    `name`, before any artifact is written: keys the check does not read (its
    factory's CONFIG_KEYS) and values it would refuse (its config_problems).
    A check that declares neither accepts any config."""
    factory = _registered.get(name) or _packaged_check(name)
    keys = getattr(factory, "CONFIG_KEYS", None)
    problems = []
    if keys is not None:
        problems += [
            f"key {key!r} is not one check '{name}' reads ({', '.join(sorted(keys)) or 'none'})"
            for key in sorted(set(config) - set(keys))
        ]
    judge = getattr(factory, "config_problems", None)
    if judge is not None:
        problems += judge(config)
    return problems


def _packaged_check(name: str) -> CheckFactory | None:
    if not _NAME.fullmatch(name):
        return None
    module_name = f"wsc.kernels.{name}.check"
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as error:
        if error.name is None or not module_name.startswith(error.name):
            raise  # the check exists but needs a module that is missing
        return None
    factory = getattr(module, "CHECK", None)
    if factory is not None:
        _registered[name] = factory
    return factory
