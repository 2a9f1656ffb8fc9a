"""Reading and validating a compiled kernel artifact directory.

The compile side writes `DIR/kernel.json` next to the kernel image (PTX and/or
cubin). Everything the runtime needs to bind arguments and launch comes from
that file, so it is validated here, once, with errors that name the file and
the offending key: a malformed artifact should fail at load time, not as a
mysterious launch failure on the GPU.

This module needs neither a GPU nor the MLIR bindings. It also defines the
runtime's base exception, because every other runtime module imports it.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from wsc.target.hopper import ELEMENT_BYTES

ARTIFACT_FILE = "kernel.json"

# Bytes per element of each dtype the kernels may use.
DTYPE_SIZES: Mapping[str, int] = ELEMENT_BYTES

TENSOR_ROLES = ("input", "output", "inout")
PARAM_KINDS = ("tensor_map", "pointer", "i32")
SWIZZLES = ("none", "32B", "64B", "128B")
#: "auto": decided per tensor when the map is encoded (tensor_map.plan_tensor_map).
L2_PROMOTIONS = ("auto", "none", "64B", "128B", "256B")
DEFAULT_L2_PROMOTION = "auto"

# An i32 parameter named "ld<tensor>" carries that tensor's row stride.
LEADING_DIM_PREFIX = "ld"

_VERSION_RE = re.compile(r"^\d+\.\d+\.\d+")
_INT32_MIN, _INT32_MAX = -(2**31), 2**31 - 1


class WscRuntimeError(Exception):
    """Base class of every error raised by `wsc.runtime`."""


class ArtifactError(WscRuntimeError, ValueError):
    """The artifact directory or its kernel.json is missing or malformed."""


class SizesError(ArtifactError):
    """The sizes given for a kernel are not the ones it reads, or not positive."""


def check_sizes(names, sizes: Mapping[str, Any], kernel: str) -> None:
    """Raise SizesError unless `sizes` gives a positive int for each of `names`, and no other."""
    if set(sizes) != set(names):
        raise SizesError(
            f"kernel '{kernel}' reads sizes {', '.join(sorted(names)) or 'none'}; "
            f"got {', '.join(sorted(sizes)) or 'none'}"
        )
    for name, value in sizes.items():
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise SizesError(f"size {name} must be a positive int, got {value!r}")


@dataclass(frozen=True)
class TensorSpec:
    name: str
    shape: tuple[int, ...]
    dtype: str
    role: str

    @property
    def element_size(self) -> int:
        return DTYPE_SIZES[self.dtype]


@dataclass(frozen=True)
class TensorMapSpec:
    name: str
    tensor: str
    # Outermost dimension first, like the tensor's shape.
    box: tuple[int, ...]
    swizzle: str
    l2_promotion: str


@dataclass(frozen=True)
class ParamSpec:
    kind: str
    name: str


def tile_grid(
    sizes: Mapping[str, int],
    grid_tiles: Sequence[tuple[str, int]],
    cluster: int = 1,
    persistent: bool = False,
) -> tuple[int, int, int]:
    """The grid of a kernel whose axes count tiles of the named sizes: one
    block per tile, x rounded up to whole clusters, or for a persistent
    kernel the tile count on x (Artifact.launch_grid caps it at the SM count)."""
    counts = [-(-sizes[size] // tile) for size, tile in grid_tiles]
    counts += [1] * (3 - len(counts))
    # A cluster's blocks are consecutive along x and launch together: the
    # last cluster's extra blocks find their tiles past the end.
    counts[0] = -(-counts[0] // cluster) * cluster
    if persistent:
        return (math.prod(counts), 1, 1)
    return (counts[0], counts[1], counts[2])


@dataclass(frozen=True)
class Artifact:
    directory: Path
    wsc_version: str
    kernel_name: str
    ptx_path: Path | None
    cubin_path: Path | None
    block: tuple[int, int, int]
    grid: tuple[int, int, int]
    dynamic_smem_bytes: int
    problem: Mapping[str, Any]
    config: Mapping[str, Any]
    tensors: Mapping[str, TensorSpec]
    tensor_maps: Mapping[str, TensorMapSpec]
    params: tuple[ParamSpec, ...]
    #: The kernel strides over its grid's work by gridDim.x: `grid` counts
    #: the work items and a launch runs at most one block per SM.
    persistent: bool = False
    #: Blocks per cluster along x (the kernel's .reqnctapercluster).
    cluster: int = 1
    #: The sizes the kernel reads at run time, each with the (tensor, dim)
    #: pairs it equals, and the (size, tile) pair each grid axis counts:
    #: what `resized` needs to launch the same kernel on other sizes.
    size_dims: Mapping[str, tuple[tuple[str, int], ...]] | None = None
    grid_tiles: tuple[tuple[str, int], ...] | None = None

    @property
    def json_path(self) -> Path:
        return self.directory / ARTIFACT_FILE

    def images(self) -> list[tuple[str, bytes]]:
        """Loadable images as (kind, bytes), preferred first.

        A cubin is preferred because it skips the JIT; the PTX follows as a
        fallback for a GPU the cubin was not built for. The driver wants PTX
        NUL-terminated.
        """
        images = []
        if self.cubin_path is not None:
            images.append(("cubin", self.cubin_path.read_bytes()))
        if self.ptx_path is not None:
            images.append(("ptx", self.ptx_path.read_bytes().rstrip(b"\0") + b"\0"))
        return images

    def launch_grid(self, sm_count: int) -> tuple[int, int, int]:
        """The grid to launch on a GPU of `sm_count` SMs."""
        if not self.persistent:
            return self.grid
        x, y, z = self.grid
        # Whole clusters: the work items come in clusters' multiples too.
        blocks = max(sm_count // self.cluster, 1) * self.cluster
        return (min(x * y * z, blocks), 1, 1)

    def size_values(self) -> dict[str, int]:
        """The value of each size this artifact was written for."""
        return {
            size: self.tensors[pairs[0][0]].shape[pairs[0][1]]
            for size, pairs in (self.size_dims or {}).items()
        }

    def resized(self, **sizes: int) -> Artifact:
        """The same kernel described for other sizes (e.g. m=, n=, k=): tensor
        shapes, grid and problem follow; the kernel reads sizes at run time."""
        if self.size_dims is None or self.grid_tiles is None:
            raise ArtifactError(
                f"{self.json_path}: no 'sizes' and 'grid_tiles': written by an "
                f"older wsc, it describes one problem only; recompile it"
            )
        check_sizes(self.size_dims, sizes, self.kernel_name)
        shapes = {name: list(spec.shape) for name, spec in self.tensors.items()}
        for size, pairs in self.size_dims.items():
            for tensor, dim in pairs:
                shapes[tensor][dim] = sizes[size]
        tensors = {
            name: replace(spec, shape=tuple(shapes[name])) for name, spec in self.tensors.items()
        }
        problem = {**self.problem, **{k: v for k, v in sizes.items() if k in self.problem}}
        return replace(
            self,
            tensors=tensors,
            problem=problem,
            grid=tile_grid(sizes, self.grid_tiles, self.cluster, self.persistent),
        )

    def leading_dim_tensor(self, param_name: str) -> str | None:
        """The tensor whose row stride an i32 param carries, or None.

        A problem value of the same name takes precedence, so "ld..." only
        means a stride when the problem does not define it.
        """
        if param_name in self.problem or not param_name.startswith(LEADING_DIM_PREFIX):
            return None
        tensor = param_name[len(LEADING_DIM_PREFIX) :]
        return tensor if tensor in self.tensors else None


def load_artifact(directory: str | Path) -> Artifact:
    """Read and validate `directory/kernel.json`; raise ArtifactError if bad."""
    directory = Path(directory)
    json_path = directory / ARTIFACT_FILE
    if not directory.is_dir():
        raise ArtifactError(f"{directory}: artifact directory does not exist")
    try:
        text = json_path.read_text()
    except OSError as exc:
        raise ArtifactError(f"{json_path}: cannot read artifact file: {exc}") from exc
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ArtifactError(f"{json_path}: invalid JSON: {exc}") from exc
    return _Parser(json_path).artifact(doc)


class _Parser:
    """Validates the JSON document; every error names the file and key path."""

    def __init__(self, json_path: Path):
        self.json_path = json_path
        self.directory = json_path.parent

    def fail(self, key: str, message: str) -> ArtifactError:
        return ArtifactError(f"{self.json_path}: key '{key}': {message}")

    def get(
        self, obj: Mapping[str, Any], key: str, path: str, kind: type | tuple, required: bool = True
    ):
        full = f"{path}.{key}" if path else key
        if key not in obj:
            if required:
                raise self.fail(full, "missing required key")
            return None
        value = obj[key]
        # bool is an int subclass; a `true` where a count belongs is a bug.
        if isinstance(value, bool) and bool not in _as_tuple(kind):
            raise self.fail(full, f"expected {_kind_name(kind)}, got {value!r}")
        if not isinstance(value, kind):
            raise self.fail(
                full, f"expected {_kind_name(kind)}, got {type(value).__name__} {value!r}"
            )
        return value

    def int_list(self, obj, key, path, length=None, minimum=1) -> tuple[int, ...]:
        full = f"{path}.{key}" if path else key
        values = self.get(obj, key, path, list)
        if length is not None and len(values) != length:
            raise self.fail(full, f"expected a list of {length} integers, got {values!r}")
        if not values or any(
            isinstance(v, bool) or not isinstance(v, int) or v < minimum for v in values
        ):
            raise self.fail(
                full, f"expected a non-empty list of integers >= {minimum}, got {values!r}"
            )
        return tuple(values)

    def choice(self, obj, key, path, choices, default=None) -> str:
        value = self.get(obj, key, path, str, required=default is None)
        if value is None:
            return default
        if value not in choices:
            full = f"{path}.{key}" if path else key
            raise self.fail(full, f"expected one of {', '.join(choices)}, got {value!r}")
        return value

    def image_path(self, doc, key) -> Path | None:
        name = self.get(doc, key, "", str, required=False)
        if name is None:
            return None
        path = self.directory / name
        if not path.is_file():
            raise self.fail(key, f"file {path} does not exist")
        return path

    def artifact(self, doc) -> Artifact:
        if not isinstance(doc, dict):
            raise ArtifactError(f"{self.json_path}: expected a JSON object at top level")
        version = self.get(doc, "wsc_version", "", str)
        if not _VERSION_RE.match(version):
            raise self.fail("wsc_version", f"expected a version like '0.1.0', got {version!r}")
        kernel_name = self.get(doc, "kernel_name", "", str)
        if not kernel_name:
            raise self.fail("kernel_name", "must not be empty")
        ptx_path = self.image_path(doc, "ptx")
        cubin_path = self.image_path(doc, "cubin")
        if ptx_path is None and cubin_path is None:
            raise self.fail("ptx", "missing required key (one of 'ptx' or 'cubin' must be given)")
        smem = self.get(doc, "dynamic_smem_bytes", "", int)
        if smem < 0:
            raise self.fail("dynamic_smem_bytes", f"expected an integer >= 0, got {smem}")
        problem = self.get(doc, "problem", "", dict)
        config = self.get(doc, "config", "", dict, required=False) or {}
        tensors = self.tensors(doc)
        tensor_maps = self.tensor_maps(doc, tensors)
        cluster = self.get(doc, "cluster", "", int, required=False)
        artifact = Artifact(
            directory=self.directory,
            wsc_version=version,
            kernel_name=kernel_name,
            ptx_path=ptx_path,
            cubin_path=cubin_path,
            block=self.int_list(doc, "block", "", length=3),
            grid=self.int_list(doc, "grid", "", length=3),
            dynamic_smem_bytes=smem,
            problem=problem,
            config=config,
            tensors=tensors,
            tensor_maps=tensor_maps,
            params=(),
            persistent=bool(self.get(doc, "persistent", "", bool, required=False)),
            cluster=1 if cluster is None else cluster,
            grid_tiles=self.grid_tiles(doc),
        )
        if artifact.cluster < 1 or artifact.grid[0] % artifact.cluster:
            raise self.fail(
                "cluster",
                f"expected an integer >= 1 that divides grid x "
                f"({artifact.grid[0]}), got {artifact.cluster}",
            )
        # Params refer to tensors, maps and problem values, so they are
        # checked against the otherwise complete artifact.
        return replace(
            artifact,
            params=self.params(doc, artifact),
            size_dims=self.size_dims(doc, tensors, artifact.grid_tiles),
        )

    def grid_tiles(self, doc) -> tuple[tuple[str, int], ...] | None:
        entries = self.get(doc, "grid_tiles", "", list, required=False)
        if entries is None:
            return None
        if not 1 <= len(entries) <= 3 or any(
            not isinstance(e, list)
            or len(e) != 2
            or not isinstance(e[0], str)
            or isinstance(e[1], bool)
            or not isinstance(e[1], int)
            or e[1] < 1
            for e in entries
        ):
            raise self.fail(
                "grid_tiles",
                f"expected 1 to 3 [size, tile] pairs with a positive tile, got {entries!r}",
            )
        return tuple((size, tile) for size, tile in entries)

    def size_dims(self, doc, tensors, grid_tiles) -> dict[str, tuple[tuple[str, int], ...]] | None:
        entries = self.get(doc, "sizes", "", dict, required=False)
        if entries is None:
            return None
        sizes = {}
        for size, pairs in entries.items():
            path = f"sizes.{size}"
            if not isinstance(pairs, list) or not pairs:
                raise self.fail(
                    path, f"expected a non-empty list of [tensor, dim] pairs, got {pairs!r}"
                )
            values = set()
            for pair in pairs:
                if (
                    not isinstance(pair, list)
                    or len(pair) != 2
                    or pair[0] not in tensors
                    or isinstance(pair[1], bool)
                    or not isinstance(pair[1], int)
                    or not 0 <= pair[1] < len(tensors[pair[0]].shape)
                ):
                    raise self.fail(
                        path, f"expected [tensor, dim] pairs naming dims of 'tensors', got {pair!r}"
                    )
                values.add(tensors[pair[0]].shape[pair[1]])
            if len(values) != 1:
                raise self.fail(path, f"the dims it names differ in extent: {sorted(values)}")
            sizes[size] = tuple((tensor, dim) for tensor, dim in pairs)
        for size, _ in grid_tiles or ():
            if size not in sizes:
                raise self.fail(
                    "grid_tiles", f"counts tiles of {size!r}, which 'sizes' does not name"
                )
        return sizes

    def tensors(self, doc) -> dict[str, TensorSpec]:
        tensors = {}
        for name, spec in self.get(doc, "tensors", "", dict).items():
            path = f"tensors.{name}"
            if not isinstance(spec, dict):
                raise self.fail(path, f"expected an object, got {spec!r}")
            tensors[name] = TensorSpec(
                name=name,
                shape=self.int_list(spec, "shape", path),
                dtype=self.choice(spec, "dtype", path, tuple(DTYPE_SIZES)),
                role=self.choice(spec, "role", path, TENSOR_ROLES),
            )
        if not tensors:
            raise self.fail("tensors", "expected at least one tensor")
        return tensors

    def tensor_maps(self, doc, tensors) -> dict[str, TensorMapSpec]:
        maps = {}
        for name, spec in (self.get(doc, "tensor_maps", "", dict, required=False) or {}).items():
            path = f"tensor_maps.{name}"
            if not isinstance(spec, dict):
                raise self.fail(path, f"expected an object, got {spec!r}")
            tensor = self.get(spec, "tensor", path, str)
            if tensor not in tensors:
                raise self.fail(f"{path}.tensor", f"names no tensor in 'tensors': {tensor!r}")
            box = self.int_list(spec, "box", path)
            if len(box) != len(tensors[tensor].shape):
                raise self.fail(
                    f"{path}.box",
                    f"expected {len(tensors[tensor].shape)} dims to match tensor '{tensor}', got {list(box)}",
                )
            maps[name] = TensorMapSpec(
                name=name,
                tensor=tensor,
                box=box,
                swizzle=self.choice(spec, "swizzle", path, SWIZZLES),
                l2_promotion=self.choice(
                    spec, "l2_promotion", path, L2_PROMOTIONS, DEFAULT_L2_PROMOTION
                ),
            )
        return maps

    def params(self, doc, artifact: Artifact) -> tuple[ParamSpec, ...]:
        params = []
        for index, spec in enumerate(self.get(doc, "params", "", list)):
            path = f"params[{index}]"
            if not isinstance(spec, dict):
                raise self.fail(path, f"expected an object, got {spec!r}")
            kind = self.choice(spec, "kind", path, PARAM_KINDS)
            name = self.get(spec, "name", path, str)
            if kind == "tensor_map" and name not in artifact.tensor_maps:
                raise self.fail(f"{path}.name", f"names no entry of 'tensor_maps': {name!r}")
            if kind == "pointer" and name not in artifact.tensors:
                raise self.fail(f"{path}.name", f"names no entry of 'tensors': {name!r}")
            if kind == "i32":
                self.check_i32(artifact, name, f"{path}.name")
            params.append(ParamSpec(kind=kind, name=name))
        return tuple(params)

    def check_i32(self, artifact: Artifact, name: str, path: str) -> None:
        if name in artifact.problem:
            value = artifact.problem[name]
            if isinstance(value, bool) or not isinstance(value, int):
                raise self.fail(
                    f"problem.{name}", f"i32 kernel parameter needs an integer, got {value!r}"
                )
            if not _INT32_MIN <= value <= _INT32_MAX:
                raise self.fail(f"problem.{name}", f"value {value} does not fit in i32")
            return
        tensor = artifact.leading_dim_tensor(name)
        if tensor is None:
            raise self.fail(
                path, f"i32 parameter {name!r} is neither a key of 'problem' nor 'ld<tensor>'"
            )
        if len(artifact.tensors[tensor].shape) < 2:
            raise self.fail(path, f"{name!r} needs a tensor of rank >= 2, '{tensor}' has rank 1")


def _as_tuple(kind) -> tuple:
    return kind if isinstance(kind, tuple) else (kind,)


def _kind_name(kind) -> str:
    names = {dict: "an object", list: "a list", str: "a string", int: "an integer", bool: "a bool"}
    return " or ".join(names.get(k, k.__name__) for k in _as_tuple(kind))
