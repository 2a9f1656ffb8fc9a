"""Device memory for `wsc run`: random inputs, NaN-poisoned outputs,
workspaces (zeroed, or poisoned so that a read of what the kernel never
wrote shows), and the reads a check needs, for any kernel's tensors.

Two kinds: torch's (when it is importable and sees a GPU), on its default
(legacy) stream as the launches, inputs drawn on the GPU; or this runtime's
own `DeviceArray`, inputs drawn by numpy on the host, whose copies stay for
the checks. Inputs are normal random values times a scale, drawn tensor by
tensor in the artifact's order from one generator seeded by the seed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from wsc.target.hopper import E4M3

from .artifact import TensorSpec
from .driver import HOST_DTYPES, CudaUnavailableError, DeviceArray

NAN_BITS = {"f32": 0x7FC00000, "f16": 0x7E00, "bf16": 0x7FC0, E4M3: 0x7F}
#: What a workspace holds at launch unless it is zeroed: NaN, or for
#: integers all bits set (a counter far from any count the kernel expects).
POISON_BITS = {**NAN_BITS, "i32": 0xFFFFFFFF}


@dataclass
class Inputs:
    """A kernel's input tensors, drawn once and shared by the artifacts of one problem."""

    #: Device arrays by tensor name.
    arrays: dict[str, Any]
    #: Host copies by tensor name (DriverMemory), as HOST_DTYPES hold them.
    hosts: dict[str, np.ndarray] = field(default_factory=dict)
    #: What a check keeps across the artifacts of one problem (e.g. its reference).
    cache: dict[str, Any] = field(default_factory=dict)
    #: A fingerprint of the device arrays, to tell whether a kernel wrote into them.
    digest: list[int] = field(default_factory=list)


def random_operand(
    rng: np.random.Generator, shape: tuple[int, ...], dtype: str, scale: float
) -> np.ndarray:
    """Normal random values rounded to `dtype`, as the host array of HOST_DTYPES[dtype]."""
    values = rng.standard_normal(shape, dtype=np.float32)
    values *= np.float32(scale)
    if dtype == "bf16":
        return float32_to_bf16_bits(values)
    if dtype == E4M3:
        return float32_to_e4m3_bits(values)
    return values.astype(HOST_DTYPES[dtype], copy=False)


def _e4m3_values() -> np.ndarray:
    """The value of each of the 256 e4m3 bit patterns (sign, 4 exponent bits
    of bias 7, 3 mantissa bits; no infinities, S.1111.111 is NaN)."""
    bits = np.arange(256)
    exponent, mantissa = (bits >> 3) & 0xF, bits & 0x7
    magnitude = np.where(
        exponent == 0,
        mantissa / 8 * 2.0**-6,
        (1 + mantissa / 8) * np.exp2(exponent.astype(np.float64) - 7),
    )
    magnitude[(exponent == 0xF) & (mantissa == 0x7)] = np.nan
    return np.where(bits & 0x80, -magnitude, magnitude)


E4M3_VALUES = _e4m3_values()
#: The largest finite e4m3 magnitude and its bit pattern.
E4M3_MAX_BITS = 0x7E


def float32_to_e4m3_bits(values: np.ndarray) -> np.ndarray:
    """Round float32 to e4m3 (nearest, ties to even), magnitudes past the
    largest finite one saturated to it; returns the uint8 bit patterns."""
    magnitudes = E4M3_VALUES[: E4M3_MAX_BITS + 1]  # ascending with the bits
    x = np.abs(values.astype(np.float64))
    above = np.clip(np.searchsorted(magnitudes, x), 1, E4M3_MAX_BITS)
    low, high = magnitudes[above - 1], magnitudes[above]
    # Between two neighbours: the nearer, on a tie the even pattern.
    take_high = (x - low > high - x) | ((x - low == high - x) & (above % 2 == 0))
    bits = np.where(take_high, above, above - 1)
    bits = np.where(x >= magnitudes[-1], E4M3_MAX_BITS, bits)
    return (bits | np.where(np.signbit(values), 0x80, 0)).astype(np.uint8)


def float32_to_bf16_bits(values: np.ndarray) -> np.ndarray:
    """Round float32 to bf16 (nearest, ties to even); returns the uint16 bit patterns."""
    bits = values.astype(np.float32, copy=False).view(np.uint32)
    rounding = np.uint32(0x7FFF) + ((bits >> np.uint32(16)) & np.uint32(1))
    return ((bits + rounding) >> np.uint32(16)).astype(np.uint16)


def to_float64(host: np.ndarray, dtype: str) -> np.ndarray:
    """Exact float64 values of a host array holding `dtype` data."""
    if dtype == "bf16":
        return (host.astype(np.uint32) << np.uint32(16)).view(np.float32).astype(np.float64)
    if dtype == E4M3:
        return E4M3_VALUES[host]
    return host.astype(np.float64)


class DriverMemory:
    """Device memory through `DeviceArray` (no torch needed); inputs from numpy."""

    kind = "driver"

    def __init__(self, device: int):
        self.device = device

    def inputs(self, specs: list[TensorSpec], scale: float, seed: int) -> Inputs:
        rng = np.random.default_rng(seed)
        hosts = {spec.name: random_operand(rng, spec.shape, spec.dtype, scale) for spec in specs}
        arrays = {
            spec.name: DeviceArray.from_host(hosts[spec.name], spec.dtype, self.device)
            for spec in specs
        }
        return Inputs(arrays, hosts)

    def empty(self, shape: tuple[int, ...], dtype: str) -> DeviceArray:
        return DeviceArray(shape, dtype, self.device)

    def intact(self, inputs: Inputs) -> bool:
        return all(
            np.array_equal(host, inputs.arrays[name].to_host())
            for name, host in inputs.hosts.items()
        )

    def poison(self, array: DeviceArray, dtype: str) -> None:
        array.fill_bits(NAN_BITS[dtype])

    def workspace(self, shape: tuple[int, ...], dtype: str, zeroed: bool) -> DeviceArray:
        array = DeviceArray(shape, dtype, self.device)
        array.fill_bits(0 if zeroed else POISON_BITS[dtype])
        return array

    def nonzero_count(self, array: DeviceArray, dtype: str) -> int:
        """The elements whose bits are not all zero."""
        host = array.to_host()
        return int(np.count_nonzero(host.view(f"u{host.itemsize}")))

    def float64(self, array: DeviceArray, dtype: str) -> np.ndarray:
        """The array's values on the host, exactly, as float64."""
        return to_float64(array.to_host(), dtype)

    def nan_count(self, array: DeviceArray, dtype: str) -> int:
        return int(np.isnan(self.float64(array, dtype)).sum())


class TorchMemory:
    """Device memory through torch, on its default (legacy) stream, as the
    launches; inputs drawn on the GPU."""

    kind = "torch"

    def __init__(self, torch: Any, device: int):
        self.torch = torch
        self.device = torch.device("cuda", device)
        self.dtypes = {
            "f16": torch.float16,
            "bf16": torch.bfloat16,
            E4M3: torch.float8_e4m3fn,
            "f32": torch.float32,
            "i32": torch.int32,
        }
        # Same-sized integers, to read elements as bits.
        self.bits = {1: torch.int8, 2: torch.int16, 4: torch.int32}

    def inputs(self, specs: list[TensorSpec], scale: float, seed: int) -> Inputs:
        generator = self.torch.Generator(device=self.device).manual_seed(seed)
        arrays = {}
        for spec in specs:
            values = self.torch.randn(spec.shape, generator=generator, device=self.device)
            arrays[spec.name] = (values * scale).to(self.dtypes[spec.dtype])
        inputs = Inputs(arrays)
        inputs.digest = self._digest(inputs)
        return inputs

    def _digest(self, inputs: Inputs) -> list[int]:
        torch = self.torch
        return [
            int(t.view(torch.int8 if t.element_size() == 1 else torch.int16).sum(dtype=torch.int64))
            for t in inputs.arrays.values()
        ]

    def intact(self, inputs: Inputs) -> bool:
        return self._digest(inputs) == inputs.digest

    def empty(self, shape: tuple[int, ...], dtype: str) -> Any:
        return self.torch.empty(shape, dtype=self.dtypes[dtype], device=self.device)

    def poison(self, tensor: Any, dtype: str) -> None:
        tensor.fill_(float("nan"))

    def workspace(self, shape: tuple[int, ...], dtype: str, zeroed: bool) -> Any:
        tensor = self.torch.empty(shape, dtype=self.dtypes[dtype], device=self.device)
        # fill_ takes a value: -1 is the i32 poison's bits.
        tensor.fill_(0 if zeroed else float("nan") if dtype in NAN_BITS else -1)
        return tensor

    def nonzero_count(self, tensor: Any, dtype: str) -> int:
        """The elements whose bits are not all zero."""
        bits = tensor.view(self.bits[tensor.element_size()])
        return int(self.torch.count_nonzero(bits))

    def nan_count(self, tensor: Any, dtype: str) -> int:
        return int(self.torch.isnan(tensor).sum())


Memory = DriverMemory | TorchMemory


def make_memory(name: str, device: int) -> Memory:
    """The memory `--backend name` asks for: "torch", "driver", or "auto"
    (torch if it is importable and sees a GPU)."""
    if name in ("auto", "torch"):
        torch: Any
        try:
            import torch
        except ImportError:
            torch = None
        if torch is not None and torch.cuda.is_available():
            return TorchMemory(torch, device)
        if name == "torch":
            raise CudaUnavailableError(
                "--backend torch: torch is not installed or sees no CUDA device"
            )
    return DriverMemory(device)
