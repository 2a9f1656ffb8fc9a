"""Reading and validating a compiled kernel artifact directory.

The compile side writes `DIR/kernel.json` next to the kernel image (PTX and/or
cubin). Everything the runtime needs to bind arguments and launch comes from
that file, so it is validated here, once, with errors that name the file and
the offending key: a malformed artifact should fail at load time, not as a
mysterious launch failure on the GPU.

An artifact describes its kernel, whatever it computes:

    "format": 3,                       ARTIFACT_FORMAT; another is refused
    "sizes": {"m": 4096, "k": 512},    the sizes it was written for (any
                                       others: Artifact.resized)
    "derived_sizes": {"d_dim1": "cdiv(k, 128)"}
                                       optional: sizes that follow from the
                                       others (size expressions of sizes not
                                       derived), e.g. a block scale's length;
                                       resizing recomputes them
    "tensors": {"a": {"role": "input", "dtype": "f16", "shape": ["m", "k"],
                      "layout": "row_major"}, ...}
                                       each dim names a size; row_major: unit
                                       stride along the last dim
               "d": {"role": "workspace", "dtype": "f32",
                     "shape": ["cdiv(m, 128) * cdiv(n, 256) * 4 * 32768"],
                     "layout": "row_major", "zeroed": false}
                                       global memory the kernel needs beside
                                       its inputs and outputs, passed like
                                       them; each dim a size expression: a
                                       product (*) of factors, each a size, a
                                       positive integer or cdiv(<size>,
                                       <positive integer>). "zeroed": true
                                       (workspaces only; default false): it
                                       must be all zero bits at launch, and the
                                       kernel leaves it so
    "grid": ["cdiv(m, 128)", "4"],     1 to 3 axes, each the tiles of a size
                                       or a fixed count
    "params": [{"kind": "tensor_map", "name": "a"},
               {"kind": "pointer", "name": "c"},
               {"kind": "i32", "name": "m", "size": "m"},
               {"kind": "i32", "name": "ldc", "row_stride": "c"},
               {"kind": "f32", "name": "d", "value": 0.5}]
                                       launch order; a scalar parameter says
                                       where its value comes from (an f32 its
                                       value, which a launch may override by
                                       name); a pointer may name a workspace
    "check": "matmul"                  optional: the reference `wsc run
                                       --check` compares with (wsc.runtime.checks)
    "store_reach": [{"tensor": "b", "dim": 1, "axis": null, "step": 0,
                     "covered": 64}]   optional: where the stores into an
                                       output's dim reach (StoreReach); sizes
                                       that leave its elements unwritten are
                                       refused

plus the kernel's name, images, block, dynamic shared memory, tensor maps,
cluster, persistence, blocks per SM, WGMMA accumulator type and its build
config (reported, never interpreted).

This module needs neither a GPU nor the MLIR bindings. It also defines the
runtime's base exception, because every other runtime module imports it.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from wsc.target.hopper import ELEMENT_BYTES, MAX_GRID

ARTIFACT_FILE = "kernel.json"
#: The version of kernel.json's layout; bumped whenever a key changes meaning
#: (3: workspace tensors, size expressions, fixed grid axes).
ARTIFACT_FORMAT = 3

# Bytes per element of each dtype the kernels may use: i32 holds a
# workspace's counters, which are no WGMMA or TMA operand.
DTYPE_SIZES: Mapping[str, int] = {**ELEMENT_BYTES, "i32": 4}

#: "workspace": global memory the kernel needs for itself (partial sums,
#: counters); the caller allocates it, no caller reads it.
TENSOR_ROLES = ("input", "output", "inout", "workspace")
#: "row_major": the last dim is contiguous; rows may be padded where the
#: kernel reads the row stride (Artifact.strided_rows).
TENSOR_LAYOUTS = ("row_major",)
PARAM_KINDS = ("tensor_map", "pointer", "i32", "f32")
SWIZZLES = ("none", "32B", "64B", "128B")
#: "auto": decided per tensor when the map is encoded (tensor_map.plan_tensor_map).
L2_PROMOTIONS = ("auto", "none", "64B", "128B", "256B")
DEFAULT_L2_PROMOTION = "auto"
ACCUMULATORS = ("f32", "f16")

_VERSION_RE = re.compile(r"^\d+\.\d+\.\d+")
_GRID_AXIS_RE = re.compile(r"^cdiv\(\s*([A-Za-z_]\w*)\s*,\s*([1-9]\d*)\s*\)$")
_SIZE_NAME_RE = re.compile(r"^[A-Za-z_]\w*$")
_COUNT_RE = re.compile(r"^[1-9]\d*$")
_INT32_MIN, _INT32_MAX = -(2**31), 2**31 - 1
#: The largest size a kernel reads: its size parameters are i32.
MAX_SIZE = _INT32_MAX


class WscRuntimeError(Exception):
    """Base class of every error raised by `wsc.runtime`."""


class ArtifactError(WscRuntimeError, ValueError):
    """The artifact directory or its kernel.json is missing or malformed."""


class SizesError(ArtifactError):
    """The sizes given for a kernel are not the ones it reads, or not positive."""


def tensor_name(position: int) -> str:
    """The name of kernel argument `position`: a, b, ..., z, t26, t27, ..."""
    return chr(ord("a") + position) if position < 26 else f"t{position}"


def dim_size_name(tensor: str, dim: int) -> str:
    """The size a kernel reads for a tensor dim that no product's M, N, K or
    batch gives (e.g. "d_dim0", the length of a scale)."""
    return f"{tensor}_dim{dim}"


def check_sizes(names: Iterable[str], sizes: Mapping[str, Any], kernel: str) -> None:
    """Raise SizesError unless `sizes` gives a positive int for each of `names`, and no other."""
    names = set(names)
    if set(sizes) != names:
        raise SizesError(
            f"kernel '{kernel}' reads sizes {', '.join(sorted(names)) or 'none'}; "
            f"got {', '.join(sorted(sizes)) or 'none'}"
        )
    for name, value in sizes.items():
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise SizesError(f"size {name} must be a positive int, got {value!r}")
        if value > MAX_SIZE:
            raise SizesError(
                f"size {name} = {value} does not fit in the kernel's i32 size parameters "
                f"(at most {MAX_SIZE})"
            )


def base_sizes(rules: Mapping[str, str], sizes: Mapping[str, int]) -> dict[str, int]:
    """The sizes of `sizes` that no rule of `rules` derives."""
    return {name: value for name, value in sizes.items() if name not in rules}


def derived_size_problems(
    rules: Mapping[str, Any], sizes: Mapping[str, int]
) -> Iterator[tuple[str, str]]:
    """(name, why) for each rule of `rules` that does not derive its size of
    `sizes` from the sizes not derived."""
    base = base_sizes(rules, sizes)
    for name, rule in rules.items():
        if name not in sizes:
            yield name, "derives no size in 'sizes'"
        elif not isinstance(rule, str):
            yield name, f"expected a size expression, got {rule!r}"
        else:
            try:
                value = size_value(rule, base)
            except ValueError as error:
                yield name, f"{error} (or it is derived itself)"
                continue
            if value != sizes[name]:
                yield name, f"{rule} = {value} at these sizes, not {sizes[name]}"


def derive_sizes(rules: Mapping[str, str], sizes: Mapping[str, int], kernel: str) -> dict[str, int]:
    """`sizes` with each size of `rules` (name: a size expression of sizes
    not derived) computed where it is missing; SizesError where a given one
    breaks its rule."""
    base = base_sizes(rules, sizes)
    derived = dict(sizes)
    for name, rule in rules.items():
        try:
            value = size_value(rule, base)
        except MissingSize:
            # check_sizes names the missing size.
            continue
        except ValueError as error:
            raise SizesError(f"kernel '{kernel}': derived size {name}: {error}") from None
        if derived.setdefault(name, value) != value:
            raise SizesError(
                f"kernel '{kernel}': size {name} follows from the others, {rule} = {value}; "
                f"got {sizes[name]}"
            )
    return derived


class MissingSize(ValueError):
    """A size expression reads a size it is not given."""


def size_value(expression: str, sizes: Mapping[str, int]) -> int:
    """The value of a size expression for `sizes`: a product (`*`) of
    factors, each a size, a positive integer or `cdiv(<size>, <positive
    integer>)` (e.g. "cdiv(m, 64) * cdiv(n, 128) * 32768"). ValueError names
    a factor that is none of these or a size not in `sizes`."""
    value = 1
    for text in expression.split("*"):
        factor = text.strip()
        if _COUNT_RE.match(factor):
            value *= int(factor)
            continue
        tiles = _GRID_AXIS_RE.match(factor)
        name = tiles[1] if tiles else factor
        if not _SIZE_NAME_RE.match(name):
            raise ValueError(
                f"factor {factor!r} of {expression!r} is no size, positive integer "
                f"or cdiv(<size>, <positive integer>)"
            )
        if name not in sizes:
            raise MissingSize(f"{expression!r} reads size {name!r}, not in 'sizes'")
        value *= -(-sizes[name] // int(tiles[2])) if tiles else sizes[name]
    return value


@dataclass(frozen=True)
class Workspace:
    """A workspace tensor of a kernel, as the compile side declares it."""

    #: Per dim, outermost first, a size expression (`size_value`).
    shape: tuple[str, ...]
    #: It must be all zero at launch, and the kernel leaves it all zero.
    zeroed: bool = False

    def __post_init__(self):
        # A lone string would pass for a tuple of one-character dims.
        if isinstance(self.shape, str):
            raise TypeError(f"Workspace.shape is a tuple of size expressions, got {self.shape!r}")


@dataclass(frozen=True)
class TensorSpec:
    name: str
    #: The size each dim equals, outermost first; a workspace's dims are
    #: size expressions (`size_value`).
    dims: tuple[str, ...]
    #: The extents for the artifact's sizes.
    shape: tuple[int, ...]
    dtype: str
    role: str
    layout: str = "row_major"
    #: A workspace that must be all zero at launch and that the kernel leaves so.
    zeroed: bool = False

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
    """One kernel parameter, in launch order. An i32 is a scalar: the value of
    the size `size`, or the row stride (in elements) of tensor `row_stride`;
    an f32 is a scalar kernel argument, `value` unless a launch gives another."""

    kind: str
    name: str
    size: str | None = None
    row_stride: str | None = None
    value: float | None = None


#: A grid axis: the tiles of a size, as its (size, tile) pair, or a fixed count.
GridAxis = tuple[str, int] | int


def grid_axis(axis: GridAxis) -> str:
    """The grid expression of an axis: "cdiv(<size>, <tile>)" or the count."""
    if isinstance(axis, int):
        return str(axis)
    size, tile = axis
    return f"cdiv({size}, {tile})"


@dataclass(frozen=True)
class StoreReach:
    """Where the stores into dim `dim` of output `tensor` reach: each at
    block_idx.<axis> * step + a constant (axis None: at a constant alone),
    the tiles of one step covering its elements [0, covered) without a gap."""

    tensor: str
    dim: int
    axis: int | None
    step: int
    covered: int

    def reach(self, blocks: int) -> int:
        """The elements [0, reach) the stores write with `blocks` blocks along
        the axis; none past them."""
        return self.covered if self.axis is None else (blocks - 1) * self.step + self.covered


def check_stores_reach(
    kernel: str,
    reaches: Sequence[StoreReach],
    dims: Mapping[str, Sequence[str | None]],
    sizes: Mapping[str, int],
    grid: Sequence[int] | None,
) -> None:
    """SizesError where a kernel's stores leave elements of an output
    unwritten at `sizes`: past the constant offsets' reach, or, with its
    launch `grid` (None for a persistent kernel, whose blocks are no tiles),
    a gap between the tiles of one step of the block index or a size past
    what the last of the grid's blocks reaches. `dims` names each tensor's
    dims by size."""
    for stores in reaches:
        shape = dims.get(stores.tensor, ())
        size = shape[stores.dim] if stores.dim < len(shape) else None
        if size is None:
            continue
        length = size_value(size, sizes)
        what = (
            ("rows", "columns")[stores.dim] if len(shape) == 2 else f"elements of dim {stores.dim}"
        )
        if stores.axis is None:
            if length > stores.covered:
                raise SizesError(
                    f"kernel '{kernel}': every store into '{stores.tensor}' is at a constant "
                    f"offset along its {what}, reaching {what} [0, {stores.covered}); "
                    f"{size} = {length} leaves the rest unwritten: step the offset with a "
                    f"grid axis or a loop, or give {size} <= {stores.covered}"
                )
            continue
        if grid is None:
            continue
        index = f"kb.block_idx.{'xyz'[stores.axis]}"
        if stores.covered < stores.step and length > stores.covered:
            raise SizesError(
                f"kernel '{kernel}': the stores into '{stores.tensor}' step its {what} by "
                f"{index} * {stores.step} but write {what} [0, {stores.covered}) of each "
                f"step: the rest of every step is never written (a tile of {stores.step} "
                f"{what}, or a step of {stores.covered}, closes the gap)"
            )
        blocks = grid[stores.axis]
        if length > stores.reach(blocks):
            raise SizesError(
                f"kernel '{kernel}': the stores into '{stores.tensor}' step its {what} by "
                f"{index} * {stores.step}, and the grid's {blocks} blocks along "
                f"{'xyz'[stores.axis]} reach {what} [0, {stores.reach(blocks)}); "
                f"{size} = {length} leaves the rest unwritten: make the grid axis count "
                f"tiles of {stores.step} {what}"
            )


def check_grid(kernel: str, sizes: Mapping[str, int], grid: Sequence[int]) -> None:
    """SizesError where `grid` (that of a kernel that is not persistent, at
    `sizes`) has more blocks along an axis than a launch may have."""
    if any(blocks > most for blocks, most in zip(grid, MAX_GRID, strict=True)):
        raise SizesError(
            f"kernel '{kernel}': sizes {dict(sizes)} make a grid of {list(grid)} blocks, "
            f"beyond a launch's {list(MAX_GRID)} along x, y, z"
        )


def tile_grid(
    sizes: Mapping[str, int],
    grid_tiles: Sequence[GridAxis],
    cluster: int = 1,
    persistent: bool = False,
) -> tuple[int, int, int]:
    """The grid of a kernel whose axes count tiles of the named sizes (or a
    fixed number of blocks, such as the splits of K): one block per tile and
    split, x rounded up to whole clusters, or for a persistent kernel the
    count of its work items, every axis's product, on x (Artifact.launch_grid
    caps it at the SM count)."""
    counts = [
        axis if isinstance(axis, int) else -(-sizes[axis[0]] // axis[1]) for axis in grid_tiles
    ]
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
    dynamic_smem_bytes: int
    #: The value of each size the kernel reads, for this description.
    sizes: Mapping[str, int]
    tensors: Mapping[str, TensorSpec]
    tensor_maps: Mapping[str, TensorMapSpec]
    params: tuple[ParamSpec, ...]
    #: Per grid axis, the (size, tile) pair it counts the tiles of, or its
    #: fixed count.
    grid_tiles: tuple[GridAxis, ...]
    #: The kernel strides over its grid's work by gridDim.x: `grid` counts
    #: the work items and a launch runs at most `blocks_per_sm` blocks per SM.
    persistent: bool = False
    #: Blocks per cluster along x (the kernel's .reqnctapercluster).
    cluster: int = 1
    #: Blocks each SM runs at once (the kernel's .minnctapersm).
    blocks_per_sm: int = 1
    #: The element type of its WGMMA accumulators ("" without WGMMA).
    accumulator: str = ""
    #: The kind of reference `wsc run --check` compares with, or None.
    check: str | None = None
    #: How the kernel was built (tile, stages, ...): reported, not interpreted.
    config: Mapping[str, Any] | None = None
    #: The sizes that follow from the others, each a size expression of them.
    derived_sizes: Mapping[str, str] = field(default_factory=dict)
    #: Where the kernel's stores into its outputs reach (check_stores_reach).
    store_reach: tuple[StoreReach, ...] = ()

    @property
    def json_path(self) -> Path:
        return self.directory / ARTIFACT_FILE

    @property
    def grid(self) -> tuple[int, int, int]:
        """The grid for `sizes` (of work items, for a persistent kernel)."""
        return tile_grid(self.sizes, self.grid_tiles, self.cluster, self.persistent)

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
        """The grid to launch on a GPU of `sm_count` SMs; SizesError where the
        sizes make more blocks along an axis than a launch may have."""
        if not self.persistent:
            check_grid(self.kernel_name, self.sizes, self.grid)
            return self.grid
        x, y, z = self.grid
        # Whole clusters: the work items come in clusters' multiples too.
        blocks = max(sm_count * self.blocks_per_sm // self.cluster, 1) * self.cluster
        return (min(x * y * z, blocks), 1, 1)

    def scalars(self) -> dict[str, float]:
        """The value of each scalar argument (f32 parameter), by name."""
        return {p.name: p.value for p in self.params if p.kind == "f32" and p.value is not None}

    def with_scalars(self, **values: float) -> Artifact:
        """The same kernel run with other values of its scalar arguments."""
        known = self.scalars()
        unknown = sorted(set(values) - set(known))
        if unknown:
            raise ArtifactError(
                f"{self.json_path}: kernel '{self.kernel_name}' has no scalar argument "
                f"{', '.join(unknown)} (its scalar arguments: {', '.join(known) or 'none'})"
            )
        params = tuple(
            replace(p, value=float(values[p.name])) if p.name in values else p for p in self.params
        )
        return replace(self, params=params)

    def resized(self, **sizes: int) -> Artifact:
        """The same kernel described for other sizes (e.g. m=, n=, k=): tensor
        shapes (workspaces' too) and grid follow; the kernel reads sizes at
        run time. Derived sizes are computed where not given, and must
        follow their rule where given."""
        sizes = derive_sizes(self.derived_sizes, sizes, self.kernel_name)
        check_sizes(self.sizes, sizes, self.kernel_name)
        tensors = {
            name: replace(spec, shape=tuple(size_value(dim, sizes) for dim in spec.dims))
            for name, spec in self.tensors.items()
        }
        grid = None if self.persistent else tile_grid(sizes, self.grid_tiles, self.cluster)
        dims = {name: spec.dims for name, spec in self.tensors.items()}
        check_stores_reach(self.kernel_name, self.store_reach, dims, sizes, grid)
        return replace(self, sizes=dict(sizes), tensors=tensors)

    def strided_rows(self, tensor: str) -> bool:
        """Whether the kernel copes with a padded row stride for `tensor`:
        tensor maps carry real strides; a raw pointer does only when the
        kernel also receives the tensor's row stride."""
        if len(self.tensors[tensor].shape) < 2:
            return False
        as_pointer = any(p.kind == "pointer" and p.name == tensor for p in self.params)
        return not as_pointer or any(p.row_stride == tensor for p in self.params)


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

    def artifact(self, doc: Any) -> Artifact:
        if not isinstance(doc, dict):
            raise ArtifactError(f"{self.json_path}: expected a JSON object at top level")
        version = self.get(doc, "format", "", int, required=False)
        if version != ARTIFACT_FORMAT:
            raise self.fail(
                "format",
                f"this runtime reads artifact format {ARTIFACT_FORMAT}, got "
                f"{'none (an older wsc)' if version is None else version}; recompile the kernel",
            )
        wsc_version = self.get(doc, "wsc_version", "", str)
        if not _VERSION_RE.match(wsc_version):
            raise self.fail("wsc_version", f"expected a version like '0.1.0', got {wsc_version!r}")
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
        sizes = self.sizes(doc)
        tensors = self.tensors(doc, sizes)
        cluster = self.get(doc, "cluster", "", int, required=False)
        blocks_per_sm = self.get(doc, "blocks_per_sm", "", int, required=False)
        block = self.int_list(doc, "block", "", length=3)
        artifact = Artifact(
            directory=self.directory,
            wsc_version=wsc_version,
            kernel_name=kernel_name,
            ptx_path=ptx_path,
            cubin_path=cubin_path,
            block=(block[0], block[1], block[2]),
            dynamic_smem_bytes=smem,
            sizes=sizes,
            tensors=tensors,
            tensor_maps=self.tensor_maps(doc, tensors),
            params=(),
            grid_tiles=self.grid(doc, sizes),
            persistent=bool(self.get(doc, "persistent", "", bool, required=False)),
            cluster=1 if cluster is None else cluster,
            blocks_per_sm=1 if blocks_per_sm is None else blocks_per_sm,
            accumulator=self.choice(doc, "accumulator", "", ("", *ACCUMULATORS), ""),
            check=self.get(doc, "check", "", str, required=False),
            config=self.get(doc, "config", "", dict, required=False) or {},
            derived_sizes=self.derived_sizes(doc, sizes),
            store_reach=self.store_reach(doc, tensors),
        )
        if artifact.cluster < 1:
            raise self.fail("cluster", f"expected an integer >= 1, got {artifact.cluster}")
        if artifact.blocks_per_sm < 1:
            raise self.fail(
                "blocks_per_sm", f"expected an integer >= 1, got {artifact.blocks_per_sm}"
            )
        # Params refer to tensors, maps and sizes, so they are checked against
        # the otherwise complete artifact.
        return replace(artifact, params=self.params(doc, artifact))

    def sizes(self, doc: dict) -> dict[str, int]:
        sizes = self.get(doc, "sizes", "", dict)
        for name, value in sizes.items():
            if not re.fullmatch(r"[A-Za-z_]\w*", name):
                raise self.fail(f"sizes.{name}", "a size's name is an identifier")
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise self.fail(f"sizes.{name}", f"expected a positive integer, got {value!r}")
        return dict(sizes)

    def store_reach(self, doc: dict, tensors: Mapping[str, TensorSpec]) -> tuple[StoreReach, ...]:
        reaches = []
        for index, entry in enumerate(self.get(doc, "store_reach", "", list, required=False) or []):
            path = f"store_reach[{index}]"
            if not isinstance(entry, dict):
                raise self.fail(path, f"expected an object, got {entry!r}")
            tensor = self.get(entry, "tensor", path, str)
            dim = self.get(entry, "dim", path, int)
            axis = self.get(entry, "axis", path, (int, type(None)))
            step = self.get(entry, "step", path, int)
            covered = self.get(entry, "covered", path, int)
            if tensor not in tensors or not 0 <= dim < len(tensors[tensor].dims):
                raise self.fail(path, f"names no dim of a tensor: {tensor!r}, dim {dim}")
            if axis is not None and not 0 <= axis < 3 or step < 0 or covered < 0:
                raise self.fail(path, "expected an axis 0 to 2 or null, a step and covered >= 0")
            reaches.append(StoreReach(tensor, dim, axis, step, covered))
        return tuple(reaches)

    def derived_sizes(self, doc: dict, sizes: Mapping[str, int]) -> dict[str, str]:
        rules = self.get(doc, "derived_sizes", "", dict, required=False) or {}
        for name, why in derived_size_problems(rules, sizes):
            raise self.fail(f"derived_sizes.{name}", why)
        return dict(rules)

    def grid(self, doc: dict, sizes: Mapping[str, int]) -> tuple[GridAxis, ...]:
        axes = self.get(doc, "grid", "", list)
        if not 1 <= len(axes) <= 3:
            raise self.fail("grid", f"expected 1 to 3 axes, got {axes!r}")
        tiles: list[GridAxis] = []
        for index, axis in enumerate(axes):
            if isinstance(axis, str) and _COUNT_RE.match(axis):
                tiles.append(int(axis))
                continue
            match = _GRID_AXIS_RE.match(axis) if isinstance(axis, str) else None
            if match is None:
                raise self.fail(
                    f"grid[{index}]",
                    f"expected 'cdiv(<size>, <positive tile>)' or a positive count such "
                    f"as '4', got {axis!r}",
                )
            if match[1] not in sizes:
                raise self.fail(f"grid[{index}]", f"counts tiles of {match[1]!r}, not in 'sizes'")
            tiles.append((match[1], int(match[2])))
        return tuple(tiles)

    def tensors(self, doc: dict, sizes: Mapping[str, int]) -> dict[str, TensorSpec]:
        tensors = {}
        for name, spec in self.get(doc, "tensors", "", dict).items():
            path = f"tensors.{name}"
            if not isinstance(spec, dict):
                raise self.fail(path, f"expected an object, got {spec!r}")
            role = self.choice(spec, "role", path, TENSOR_ROLES)
            dims = self.get(spec, "shape", path, list)
            if role == "workspace":
                shape = self.size_expressions(dims, sizes, f"{path}.shape")
            elif not dims or any(not isinstance(dim, str) or dim not in sizes for dim in dims):
                raise self.fail(
                    f"{path}.shape", f"expected a non-empty list of names of 'sizes', got {dims!r}"
                )
            else:
                shape = tuple(sizes[dim] for dim in dims)
            zeroed = self.get(spec, "zeroed", path, bool, required=False)
            if zeroed is not None and role != "workspace":
                raise self.fail(f"{path}.zeroed", f"only a workspace is zeroed, not an {role}")
            tensors[name] = TensorSpec(
                name=name,
                dims=tuple(dims),
                shape=shape,
                dtype=self.choice(spec, "dtype", path, tuple(DTYPE_SIZES)),
                role=role,
                layout=self.choice(spec, "layout", path, TENSOR_LAYOUTS),
                zeroed=bool(zeroed),
            )
        if not tensors:
            raise self.fail("tensors", "expected at least one tensor")
        return tensors

    def size_expressions(self, dims, sizes: Mapping[str, int], path: str) -> tuple[int, ...]:
        """The extents of a workspace's dims, each a size expression."""
        if not dims or not all(isinstance(dim, str) for dim in dims):
            raise self.fail(path, f"expected a non-empty list of size expressions, got {dims!r}")
        try:
            return tuple(size_value(dim, sizes) for dim in dims)
        except ValueError as error:
            raise self.fail(path, str(error)) from None

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

    def params(self, doc: dict, artifact: Artifact) -> tuple[ParamSpec, ...]:
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
            size = row_stride = None
            if kind == "i32":
                size = self.get(spec, "size", path, str, required=False)
                row_stride = self.get(spec, "row_stride", path, str, required=False)
                if (size is None) == (row_stride is None):
                    raise self.fail(path, "an i32 parameter gives one of 'size' or 'row_stride'")
                if size is not None and size not in artifact.sizes:
                    raise self.fail(f"{path}.size", f"names no entry of 'sizes': {size!r}")
                if size is not None and artifact.sizes[size] > MAX_SIZE:
                    raise self.fail(
                        f"sizes.{size}", f"value {artifact.sizes[size]} does not fit in i32"
                    )
                if row_stride is not None and (
                    row_stride not in artifact.tensors
                    or len(artifact.tensors[row_stride].shape) < 2
                ):
                    raise self.fail(
                        f"{path}.row_stride", f"names no tensor of rank >= 2: {row_stride!r}"
                    )
            value = None
            if kind == "f32":
                value = float(self.get(spec, "value", path, (int, float)))
                if not math.isfinite(value):
                    raise self.fail(f"{path}.value", f"must be a finite number, got {value!r}")
                if name in artifact.tensors:
                    raise self.fail(f"{path}.name", f"is a tensor's name: {name!r}")
            params.append(
                ParamSpec(kind=kind, name=name, size=size, row_stride=row_stride, value=value)
            )
        return tuple(params)


def _as_tuple(kind) -> tuple:
    return kind if isinstance(kind, tuple) else (kind,)


def _kind_name(kind) -> str:
    names = {dict: "an object", list: "a list", str: "a string", int: "an integer", bool: "a bool"}
    return " or ".join(names.get(k, k.__name__) for k in _as_tuple(kind))
