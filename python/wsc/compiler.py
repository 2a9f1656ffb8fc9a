"""The compile driver, for any kernel: from a module to PTX and an artifact directory.

    result = compile_module(module, passes, dump_dir)   # wsc passes, then PTX
    write_artifact(out_dir, result, sizes, grid_tiles, config, check="matmul")

Kernels build on it (`wsc.kernels.matmul.build.compile_matmul`, `wsc.builder`).

Each pass runs in its own PassManager so the driver can time it, summarise the
IR after it and dump that IR (`dump_dir`); the stages are the ones
ARCHITECTURE.md lists. An artifact directory holds `kernel.ptx` and
`kernel.json`, everything `wsc.runtime` needs to launch without MLIR: the
kernel described by its tensors, sizes, grid and parameters
(`wsc.runtime.artifact`), with nothing that depends on what it computes but
the name of its check. A kernel that needs global memory of its own (a
split-K kernel's partial sums and counters) declares each such workspace's
shape, expressions of the sizes, in `write_artifact(workspaces=...)`.
"""

from __future__ import annotations

import dataclasses
import json
import math
import numbers
import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mlir import ir

import wsc
from wsc import ops
from wsc.codegen.info import KernelInfo
from wsc.codegen.ptxas import PtxasReport
from wsc.diagnostics import DiagnosticEngine, PassError
from wsc.dialect import acc_type_parameters
from wsc.ir_utils import constant_int, defining_op, launch_axis, walk
from wsc.runtime.artifact import (
    ARTIFACT_FORMAT,
    GridAxis,
    StoreReach,
    Workspace,
    check_grid,
    check_sizes,
    check_stores_reach,
    derive_sizes,
    derived_size_problems,
    grid_axis,
    size_value,
    tensor_name,
    tile_grid,
)
from wsc.runtime.files import write_atomically
from wsc.target.hopper import ELEMENT_BYTES, tile_registers, tma_row_problem
from wsc.verifier import verify_wsc


class CompileError(Exception):
    """A compile failure; the message holds the located diagnostics."""


@dataclass
class StageReport:
    """What one stage did: its name, wall time and a one-line summary."""

    name: str
    seconds: float
    summary: str


@dataclass
class CompileResult:
    ptx: str
    info: KernelInfo
    stages: list[StageReport] = field(default_factory=list)
    #: When ptxas ran.
    ptxas: PtxasReport | None = None
    #: store_reach of the kernel as given.
    store_reach: tuple[StoreReach, ...] = ()


def _block_offset(value: ir.Value) -> tuple[int | None, int, int] | None:
    """(axis, step, constant) where `value` is block_idx.<axis> * step +
    constant (arith.muli and arith.addi of gpu.block_id and constants), (None,
    0, constant) where it is a constant; None for any other form, whose
    reach is left unknown."""
    constant = constant_int(value)
    if constant is not None:
        return None, 0, constant
    op = defining_op(value)
    if op is None:
        return None
    if op.name == "gpu.block_id":
        return launch_axis(op), 1, 0
    if op.name in ("arith.muli", "arith.addi") and len(op.operands) == 2:
        for term, number in (op.operands, reversed(list(op.operands))):
            amount, inner = constant_int(number), _block_offset(term)
            if amount is None or inner is None or inner[0] is None:
                continue
            axis, step, start = inner
            if op.name == "arith.addi":
                return axis, step, start + amount
            if start == 0:
                return axis, step * amount, 0
    return None


def store_reach(module: ir.Operation) -> tuple[StoreReach, ...]:
    """A StoreReach for each dim of an output along which every
    store into it (wsc.store, wsc.tma_store, wsc.coalesced_store) is at a
    constant offset, or at block_idx.<axis> * step plus one, the same axis
    and step for all: a store reaches no element past its tile, so an output
    longer than the reach, or a gap between the tiles of one step, keeps
    elements no launch writes. Dims stored at any other offset (a loop's, a
    persistent kernel's tile index) are left out."""
    spans: dict[tuple[str, int], list[tuple[int, int]]] = {}
    strides: dict[tuple[str, int], set[tuple[int | None, int]]] = {}
    unknown: set[tuple[str, int]] = set()
    for op in walk(module):
        if op.name == "wsc.store":
            store = ops.Store(op)
            (rows, cols), _ = acc_type_parameters(store.tile.type)
            shape = (cols, rows) if store.transpose else (rows, cols)
            dst, offsets = store.dst, (store.row, store.col)
        elif op.name in ("wsc.tma_store", "wsc.coalesced_store"):
            copy = ops.TmaStore(op) if op.name == "wsc.tma_store" else ops.CoalescedStore(op)
            shape = tuple(ir.MemRefType(copy.src.type).shape[-2:])
            dst, offsets = copy.dst, (copy.row, copy.col)
        else:
            continue
        owner = dst.owner
        if not isinstance(owner, ir.Block) or owner.owner.operation.name != "func.func":
            continue
        name = tensor_name(ir.BlockArgument(dst).arg_number)
        for dim, (offset, extent) in enumerate(zip(offsets, shape, strict=True)):
            found = _block_offset(offset)
            if found is None:
                unknown.add((name, dim))
                continue
            axis, step, start = found
            strides.setdefault((name, dim), set()).add((axis, step))
            spans.setdefault((name, dim), []).append((start, start + extent))
    reaches = []
    for (tensor, dim), tiles in sorted(spans.items()):
        if (tensor, dim) in unknown or len(strides[tensor, dim]) != 1:
            continue
        covered = 0
        for start, end in sorted(tiles):
            if start <= covered:
                covered = max(covered, end)
        ((axis, step),) = strides[tensor, dim]
        reaches.append(StoreReach(tensor, dim, axis, step, covered))
    return tuple(reaches)


def summarize(module: ir.Operation) -> str:
    """A one-line account of a kernel's roles, barriers, loops and ops."""
    ops = list(walk(module))
    roles = [op for op in ops if op.name == "wsc.role"]
    parts = []
    if roles:
        parts.append(
            "roles "
            + ", ".join(
                f"{ir.StringAttr(r.attributes['role']).value}"
                f"[{ir.IntegerAttr(r.attributes['thread_begin']).value},"
                f"{ir.IntegerAttr(r.attributes['thread_begin']).value + ir.IntegerAttr(r.attributes['num_threads']).value})"
                for r in roles
            )
        )
    barriers = [op for op in ops if op.name == "wsc.mbarrier_alloc"]
    if barriers:
        parts.append(
            "barriers "
            + ", ".join(
                f"{ir.IntegerAttr(b.attributes['num_barriers']).value}x"
                f"count{ir.IntegerAttr(b.attributes['arrival_count']).value}"
                for b in barriers
            )
        )
    for names, label in (
        (("scf.for",), "loops"),
        (("wsc.tma_load",), "tma copies"),
        (("wsc.wgmma", "wsc.wgmma_register_a"), "wgmma"),
        (("wsc.mbarrier_wait",), "waits"),
        (("nvvm.wgmma.mma_async",), "wgmma.mma_async"),
    ):
        count = sum(op.name in names for op in ops)
        if count:
            parts.append(f"{label} {count}")
    return "; ".join(parts) or f"{len(ops)} ops"


def _run_pass(
    module: ir.Module, wsc_pass, dump_dir: Path | None, index: int, source: str
) -> StageReport:
    engine = DiagnosticEngine(source)
    start = time.perf_counter()
    succeeded = wsc_pass.apply(module.operation, engine)
    seconds = time.perf_counter() - start
    if not succeeded:
        raise CompileError("\n".join(d.format() for d in engine.diagnostics))
    if dump_dir is not None:
        (dump_dir / f"{index:02d}-{wsc_pass.ARGUMENT}.mlir").write_text(str(module))
    return StageReport(wsc_pass.ARGUMENT, seconds, summarize(module.operation))


def compile_module(
    module: ir.Module,
    passes: list,
    dump_dir: str | os.PathLike | None = None,
    assemble: bool = True,
    lowering=None,
    source: str = "<module>",
    allow_spills: bool = False,
) -> CompileResult:
    """Run `passes` over `module`, then lower it to PTX with `lowering` (a
    ConvertWscToNvvm; default options when None) and assemble it with ptxas
    when `assemble` and ptxas is available. Errors are located in `source`,
    the file the module was parsed from. Registers ptxas spills to local
    memory are an error at the kernel, naming its register tiles, unless
    `allow_spills`."""
    from wsc import codegen
    from wsc.passes.convert_wsc_to_nvvm import ConvertWscToNvvm

    dump = Path(dump_dir) if dump_dir is not None else None
    if dump is not None:
        dump.mkdir(parents=True, exist_ok=True)
        (dump / "00-input.mlir").write_text(str(module))
    try:
        verify_wsc(module.operation)
    except PassError as error:
        engine = DiagnosticEngine(source)
        engine.add_pass_error(error)
        raise CompileError("\n".join(d.format() for d in engine.diagnostics)) from None
    stages = [StageReport("input", 0.0, summarize(module.operation))]
    # For a spill error: the author's tiles, then (before lowering erases
    # them) the tiles a thread holds once the passes have split them.
    written = register_tiles(module.operation)
    reach = store_reach(module.operation)
    for index, wsc_pass in enumerate(passes, start=1):
        stages.append(_run_pass(module, wsc_pass, dump, index, source))
    held = register_tiles(module.operation)
    lowering = lowering or ConvertWscToNvvm()
    stages.append(_run_pass(module, lowering, dump, len(passes) + 1, source))
    start = time.perf_counter()
    try:
        ptx, info = codegen.lower_to_ptx(module)
    except PassError as error:
        engine = DiagnosticEngine(source)
        engine.add_pass_error(error)
        raise CompileError("\n".join(d.format() for d in engine.diagnostics)) from None
    stages.append(
        StageReport(
            "ptx",
            time.perf_counter() - start,
            f"{ptx.count(chr(10))} lines, "
            f"{ptx.count('wgmma.mma_async')} wgmma.mma_async, "
            f"{ptx.count('cp.async.bulk.tensor')} TMA copies, "
            f"{info.dynamic_smem_bytes} B dynamic shared memory",
        )
    )
    if dump is not None:
        (dump / "kernel.ptx").write_text(ptx)
    result = CompileResult(ptx, info, stages, store_reach=reach)
    if assemble and codegen.find_ptxas() is not None:
        start = time.perf_counter()
        try:
            result.ptxas = codegen.assemble(ptx)
        except codegen.PtxasError as error:
            engine = DiagnosticEngine(source)
            engine.add_pass_error(_ptxas_error(error, written, held))
            raise CompileError("\n".join(d.format() for d in engine.diagnostics)) from None
        stages.append(
            StageReport(
                "ptxas",
                time.perf_counter() - start,
                f"{result.ptxas.registers} registers, "
                f"{result.ptxas.spill_stores + result.ptxas.spill_loads} "
                f"spill bytes, {result.ptxas.smem_bytes} B static shared memory",
            )
        )
        spilled = result.ptxas.spill_stores + result.ptxas.spill_loads
        if spilled and not allow_spills:
            engine = DiagnosticEngine(source)
            engine.add_pass_error(_spill_error(result.ptxas, written, held))
            raise CompileError("\n".join(d.format() for d in engine.diagnostics))
    return result


@dataclass(frozen=True)
class RegisterTileUse:
    """A register tile of a compiled kernel and the registers it takes in each
    thread of its warpgroup."""

    location: ir.Location
    shape: tuple[int, int]
    element: str
    registers: int


def register_tiles(module: ir.Operation) -> list[RegisterTileUse]:
    """The register tiles `module` makes (accumulators and the tiles of
    register-tile math), largest first."""
    found = []
    for op in walk(module):
        if op.name == "wsc.acc_alloc" or op.name in ops.TILE_MAKERS:
            (rows, cols), element = acc_type_parameters(op.results[0].type)
            registers = tile_registers(rows, cols, element)
            found.append(RegisterTileUse(op.location, (rows, cols), element, registers))
    return sorted(found, key=lambda tile: -tile.registers)


def _spill_error(
    ptxas: PtxasReport, written: list[RegisterTileUse], held: list[RegisterTileUse]
) -> PassError:
    """ptxas's spills as an error at the author's largest register tile (one
    held whole next to others is the usual cause), the next ones as notes,
    naming the tiles a thread holds after the passes."""
    spilled = (
        f"ptxas spilled registers to local memory ({ptxas.spill_stores} bytes stored, "
        f"{ptxas.spill_loads} loaded per thread) at {ptxas.registers} registers per thread"
    )
    accept = "or accept the spills (KernelBuilder(allow_spills=True), wsc compile --allow-spills)"
    if not written:
        return PassError(ir.Location.unknown(), f"{spilled}; {accept}")
    shapes = dict.fromkeys(
        f"{tile.shape[0]}x{tile.shape[1]} {tile.element} ({tile.registers} registers)"
        for tile in held
    )
    largest = written[0]
    return PassError(
        largest.location,
        f"{spilled}, holding register tiles of {', '.join(shapes)} per thread; narrow "
        f"the register tile made here or split its rows over more consumer "
        f"warpgroups, {accept}",
        [
            (tile.location, f"a {tile.shape[0]}x{tile.shape[1]} {tile.element} register tile")
            for tile in written[1:3]
        ],
    )


#: ptxas's fatal errors that mean the kernel's registers cannot be allocated.
_REGISTER_FAILURES = ("C7600", "C7602")


def _ptxas_error(
    error: Exception, written: list[RegisterTileUse], held: list[RegisterTileUse]
) -> PassError:
    """ptxas's failure as an error: where it cannot allocate the registers, at
    the author's largest register tile, naming the tiles a thread holds
    after the passes (as for spills); otherwise at that tile too (the
    kernel's first), with ptxas's fatal lines."""
    fatal = [line.strip() for line in str(error).splitlines() if "fatal" in line]
    reason = "; ".join(fatal) or str(error).strip()
    location = written[0].location if written else ir.Location.unknown()
    if not any(code in reason for code in _REGISTER_FAILURES) or not written:
        return PassError(location, f"ptxas failed on this kernel: {reason}")
    shapes = dict.fromkeys(
        f"{tile.shape[0]}x{tile.shape[1]} {tile.element} ({tile.registers} registers)"
        for tile in held
    )
    return PassError(
        location,
        f"ptxas cannot allocate this kernel's registers ({reason}), holding register tiles "
        f"of {', '.join(shapes)} per thread; narrow the register tile made here, or "
        f"change the consumer warpgroups its rows are split over",
        [
            (tile.location, f"a {tile.shape[0]}x{tile.shape[1]} {tile.element} register tile")
            for tile in written[1:3]
        ],
    )


def write_artifact(
    out_dir: str | os.PathLike,
    result: CompileResult,
    sizes: dict[str, int],
    grid_tiles: Sequence[GridAxis],
    config: dict,
    *,
    persistent: bool = False,
    check: str | None = None,
    workspaces: Mapping[str, Workspace] | None = None,
    scalars: Mapping[str, float] | None = None,
    derived_sizes: Mapping[str, str] | None = None,
) -> Path:
    """Write kernel.ptx and kernel.json (the kernel's description,
    `wsc.runtime.artifact`) into out_dir for the problem `sizes` (the sizes
    the kernel reads, KernelInfo.dims), and kernel.cubin when ptxas
    assembled the PTX (the runtime prefers it: no JIT at load, and it is the
    very code the ptxas report describes). Each grid axis counts the tiles
    of a (size, tile) pair of `grid_tiles`, or is a fixed count (an int); a
    `persistent` kernel's grid counts its work items (Artifact.launch_grid).
    Tensors name their dims by size, so the runtime can resize the artifact
    to any other problem (Artifact.resized); each tensor the kernel reports
    as a workspace takes its shape, size expressions, from `workspaces`.
    `check` names the reference `wsc run --check` compares with
    (wsc.runtime.checks); `config` is reported as is. `scalars` gives each
    scalar kernel argument (an f32 parameter, by name) the value runs use
    where the launch gives none. `derived_sizes` gives the sizes that follow
    from the others (a block scale's length), each a size expression of
    sizes not derived, computed where `sizes` leaves them out and again by
    resizing."""
    info = result.info
    rules = dict(derived_sizes or {})
    expressions = {name: rule for name, rule in rules.items() if isinstance(rule, str)}
    sizes = derive_sizes(expressions, sizes, info.name)
    check_sizes(info.dims, sizes, info.name)
    for name, why in derived_size_problems(rules, sizes):
        raise ValueError(f"kernel '{info.name}': derived size {name}: {why}")
    scalar_names = {param["name"] for param in info.params if param["kind"] == "f32"}
    unknown = sorted(set(scalars or {}) - scalar_names)
    if unknown:
        raise ValueError(
            f"kernel '{info.name}': scalars names {', '.join(unknown)}, no scalar argument of "
            f"the kernel (its scalar arguments: {', '.join(sorted(scalar_names)) or 'none'})"
        )
    for axis in grid_tiles:
        if isinstance(axis, int) and (isinstance(axis, bool) or axis < 1):
            raise ValueError(f"a fixed grid axis is a positive int, got {axis!r}")
        if not isinstance(axis, int) and axis[0] not in sizes:
            raise ValueError(f"the grid counts tiles of {axis[0]!r}; got sizes {', '.join(sizes)}")
    grid = None if persistent else tile_grid(sizes, grid_tiles, info.cluster)
    if grid is not None:
        check_grid(info.name, sizes, grid)
    used = [name for name, spec in info.tensors.items() if spec["role"] != "unused"]
    described = _workspace_entries(info, sizes, workspaces or {})
    dims: dict[str, list[str | None]] = {
        name: [None] * len(info.tensors[name]["shape"]) for name in used
    }
    for size, pairs in info.dims.items():
        for tensor, dim in pairs:
            if tensor in dims:
                dims[tensor][dim] = size
    tensors = {}
    for name in used:
        if name not in described and None in dims[name]:
            raise ValueError(
                f"kernel '{info.name}': tensor '{name}' has a dim that none of the "
                f"sizes it reads gives"
            )
        spec = info.tensors[name]
        tensors[name] = {
            "role": spec["role"],
            "dtype": spec["dtype"],
            "shape": dims[name],
            "layout": "row_major",
            **described.get(name, {}),
        }
    _check_tma_rows(info, dims, sizes)
    check_stores_reach(info.name, result.store_reach, dims, sizes, grid)
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise ValueError(f"could not write the artifact into '{out}': it is a file")
    out.mkdir(parents=True, exist_ok=True)
    write_atomically(out / "kernel.ptx", result.ptx)
    images = {"ptx": "kernel.ptx"}
    if result.ptxas is not None and result.ptxas.cubin:
        cubin = out / "kernel.cubin"
        write_atomically(cubin, result.ptxas.cubin)
        images["cubin"] = cubin.name
    meta = {
        "format": ARTIFACT_FORMAT,
        "wsc_version": wsc.__version__,
        "kernel_name": info.name,
        **images,
        "block": list(info.block),
        "grid": [grid_axis(axis) for axis in grid_tiles],
        **({"persistent": True} if persistent else {}),
        **({"cluster": info.cluster} if info.cluster > 1 else {}),
        **({"blocks_per_sm": info.blocks_per_sm} if info.blocks_per_sm > 1 else {}),
        "dynamic_smem_bytes": info.dynamic_smem_bytes,
        "sizes": dict(sizes),
        **({"derived_sizes": rules} if rules else {}),
        **(
            {"store_reach": [dataclasses.asdict(reach) for reach in result.store_reach]}
            if result.store_reach
            else {}
        ),
        "tensors": tensors,
        "tensor_maps": info.tensor_maps,
        "params": [
            _param(param, sizes, tensors, info.name, scalars or {}) for param in info.params
        ],
        **({"accumulator": info.accumulator} if info.accumulator else {}),
        **({"check": check} if check is not None else {}),
        "config": config,
        "compile": {
            "stages": [
                {"name": s.name, "seconds": round(s.seconds, 4), "summary": s.summary}
                for s in result.stages
            ],
            "ptxas": result.ptxas.as_dict() if result.ptxas is not None else None,
        },
    }
    write_atomically(out / "kernel.json", json.dumps(meta, indent=2) + "\n")
    return out


def _check_tma_rows(info: KernelInfo, dims: dict, sizes: dict[str, int]) -> None:
    """Each tensor a TMA copy reads or writes has rows of a multiple of
    TMA_ALIGN bytes at these sizes, or no launch of the artifact could run."""
    for tensor_map in info.tensor_maps.values():
        name = tensor_map["tensor"]
        inner = dims.get(name, [None])[-1]
        if inner is None:
            continue
        problem = tma_row_problem(inner, sizes[inner], ELEMENT_BYTES[info.tensors[name]["dtype"]])
        if problem is not None:
            raise ValueError(f"kernel '{info.name}': tensor '{name}' is copied by TMA: {problem}")


def _workspace_entries(
    info: KernelInfo, sizes: dict[str, int], workspaces: Mapping[str, Workspace]
) -> dict[str, dict]:
    """The kernel.json keys ("shape", "zeroed") of each tensor the kernel
    reports as a workspace, from its entry of `workspaces`, checked against
    the sizes and the tensor's rank."""
    reported = [name for name, spec in info.tensors.items() if spec["role"] == "workspace"]
    for name in workspaces:
        if name not in reported:
            what = f"its role is {info.tensors[name]['role']}" if name in info.tensors else None
            raise ValueError(
                f"kernel '{info.name}': workspaces names '{name}', no workspace of the kernel "
                f"({what or 'it takes no such tensor'}); its workspaces: "
                f"{', '.join(reported) or 'none'}"
            )
    entries = {}
    for name in reported:
        if name not in workspaces:
            raise ValueError(
                f"kernel '{info.name}': tensor '{name}' is a workspace; give its shape "
                f"in workspaces"
            )
        workspace = workspaces[name]
        rank = len(info.tensors[name]["shape"])
        if len(workspace.shape) != rank:
            raise ValueError(
                f"kernel '{info.name}': workspace '{name}' has rank {rank}; its shape "
                f"{list(workspace.shape)} has {len(workspace.shape)} dims"
            )
        for dim in workspace.shape:
            try:
                size_value(dim, sizes)
            except ValueError as error:
                raise ValueError(f"kernel '{info.name}': workspace '{name}': {error}") from None
        entries[name] = {
            "shape": list(workspace.shape),
            **({"zeroed": True} if workspace.zeroed else {}),
        }
    return entries


def _param(
    param: dict[str, str],
    sizes: dict[str, int],
    tensors: dict,
    kernel: str,
    scalars: Mapping[str, float],
) -> dict[str, Any]:
    """A kernel parameter as the artifact lists it: an i32 says where its
    value comes from, a size or a tensor's row stride ("ld<tensor>",
    wsc.codegen.info); an f32 its value, from `scalars`."""
    kind, name = param["kind"], param["name"]
    if kind == "f32":
        if name not in scalars:
            raise ValueError(
                f"kernel '{kernel}': scalar argument '{name}' needs the value runs use: "
                f"write_artifact(..., scalars={{{name!r}: ...}})"
            )
        value = scalars[name]
        if (
            isinstance(value, bool)
            or not isinstance(value, numbers.Real)
            or not math.isfinite(value)
        ):
            raise ValueError(
                f"kernel '{kernel}': scalar argument '{name}' must be a finite number, "
                f"got {value!r}"
            )
        return {"kind": kind, "name": name, "value": float(value)}
    if kind != "i32":
        return {"kind": kind, "name": name}
    if name in sizes:
        return {"kind": kind, "name": name, "size": name}
    if name.startswith("ld") and name[2:] in tensors:
        return {"kind": kind, "name": name, "row_stride": name[2:]}
    raise ValueError(f"i32 parameter {name!r} is neither a size nor 'ld<tensor>'")
