"""Built kernels: a finished, verified Kernel (passes by keyword, compile) and
the CompiledKernel that writes the artifact directory the runtime launches."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from mlir import ir

from wsc.builder.errors import BuildError, SourceLocation, caller
from wsc.diagnostics import DiagnosticEngine, PassError, file_line_col
from wsc.ir_utils import kernels

if TYPE_CHECKING:
    from wsc.codegen.info import KernelInfo
    from wsc.compiler import CompileResult
    from wsc.runtime.artifact import Workspace


def _located_failure(engine: DiagnosticEngine) -> str:
    return "\n".join(d.format() for d in engine.diagnostics)


def split_k_workspaces(
    info: KernelInfo,
    grid: tuple[tuple[str, int], ...],
    splits: int,
    tile_shape: tuple[int, int],
    slots: int | None = None,
) -> dict[str, Workspace]:
    """The workspace arguments of a lowered split-K kernel (`info`) whose
    grid's (size, tile) axes count its output tiles, each a register tile of
    `tile_shape`: per output tile, or per slot of `slots`, `splits` f32
    partial tiles and one i32 arrival counter per row (wsc.partial_store),
    zero at launch."""
    from wsc.runtime.artifact import Workspace

    rows, cols = tile_shape
    tiles = (
        " * ".join(f"cdiv({size}, {tile})" for size, tile in grid) if slots is None else str(slots)
    )
    elements = {"f32": rows * splits * cols, "i32": rows}
    return {
        name: Workspace(
            shape=(f"{tiles} * {elements[spec['dtype']]}",), zeroed=spec["dtype"] == "i32"
        )
        for name, spec in info.tensors.items()
        if spec["role"] == "workspace"
    }


class Kernel:
    """A finished, verified kernel: its module and how to compile it.

    `str(kernel)` is its IR. `warp_specialize(...)` and `unroll_ring_buffer()`
    return new Kernels with the pass applied; `compile(...)` runs what is left
    (--unroll-ring-buffer when the ring loops asked for it, else the protocol
    check) and lowers to PTX."""

    def __init__(
        self,
        module: ir.Module | ir.Operation,
        context: ir.Context,
        name: str,
        grid: tuple[tuple[str, int], ...],
        unroll: bool,
        made_by: str = "builder",
        previous: Kernel | None = None,
        persistent: bool = False,
        check: str | None = None,
        split_k: tuple[int, tuple[int, int], int | None] | None = None,
        check_config: Mapping[str, Any] | None = None,
        allow_spills: bool = False,
        scalars: Mapping[str, float] | None = None,
    ):
        self.module = module
        self.context = context
        self.name = name
        #: (size, tile) pairs: the tiles of each size the kernel covers. A
        #: persistent kernel strides over all of them by gridDim.x, so its
        #: launch grid is their count on x, capped at the SM count by the
        #: runtime (Artifact.launch_grid); otherwise one block per tile.
        self.grid = grid
        self.persistent = persistent
        #: The reference its artifacts are checked with (KernelBuilder), or None,
        #: and what that check reads of the kernel (written into their config).
        self.check = check
        self.check_config = dict(check_config or {})
        #: (splits, partial tile shape, slots) of a kernel that hands partial
        #: sums over (kb.split_k.workspace); without slots its grid has an
        #: axis of `splits` blocks after the tile axes.
        self.split_k = split_k
        self.unroll = unroll
        #: "builder", or the flag of the pass that made this kernel from `previous`.
        self.made_by = made_by
        self.previous = previous
        #: Whether ptxas may spill registers (compile() fails on spills otherwise).
        self.allow_spills = allow_spills
        #: The default value of each scalar argument that has one (kb.scalar).
        self.scalars = dict(scalars or {})

    def lineage(self) -> list[Kernel]:
        """The built kernel and every kernel a pass made from it, ending with this one."""
        chain = [self]
        while chain[-1].previous is not None:
            chain.append(chain[-1].previous)
        return chain[::-1]

    def __str__(self) -> str:
        return str(self.module)

    def verify(self) -> None:
        """MLIR's verifier and the wsc rules; BuildError at the first violation."""
        from wsc.verifier import verify_wsc

        engine = DiagnosticEngine("<kernel>")
        with self.context:
            try:
                self.module.operation.verify()
                verify_wsc(self.module.operation)
            except ir.MLIRError as error:
                engine.add_mlir_error(error)
            except PassError as error:
                engine.add_pass_error(error)
        if engine.has_errors:
            first = engine.diagnostics[0]
            where = SourceLocation.of(first.filename, first.line, first.col)
            single = "\n".join([first.message, *(note.format() for note in first.notes)])
            if "does not dominate this use" in first.message:
                single += (
                    "\n(a value made inside a region of the builder, kb.range, kb.if_, a "
                    "thread group or single_thread, exists only inside it: use it there, or "
                    "store it there and load it after)"
                )
            raise BuildError(
                single if len(engine.diagnostics) == 1 else _located_failure(engine), where
            )

    def _apply(self, wsc_pass) -> Kernel:
        from wsc.compiler import CompileError

        clone = self.module.operation.clone()
        engine = DiagnosticEngine("<kernel>")
        if not wsc_pass.apply(clone.operation, engine):
            raise CompileError(_located_failure(engine))
        return Kernel(
            clone,
            self.context,
            self.name,
            self.grid,
            self.unroll,
            wsc_pass.ARGUMENT,
            self,
            self.persistent,
            self.check,
            self.split_k,
            self.check_config,
            self.allow_spills,
            self.scalars,
        )

    def warp_specialize(self, **options) -> Kernel:
        """This (non-specialized) kernel through --warp-specialize, with its options
        as keyword arguments: num_stages, num_consumer_groups, producer, ..."""
        from wsc.passes.warp_specialize import WarpSpecialize

        return self._apply(_configured(WarpSpecialize, options))

    def unroll_ring_buffer(self) -> Kernel:
        """This kernel through --unroll-ring-buffer."""
        from wsc.passes.unroll_ring_buffer import UnrollRingBuffer

        unrolled = self._apply(UnrollRingBuffer())
        unrolled.unroll = False
        return unrolled

    def remaining_passes(self) -> list:
        """What compile() runs before lowering."""
        from wsc.passes.unroll_ring_buffer import UnrollRingBuffer
        from wsc.passes.verify_pipeline import VerifyPipeline

        return [UnrollRingBuffer()] if self.unroll else [VerifyPipeline()]

    def compile(self, dump_dir: str | os.PathLike | None = None) -> CompiledKernel:
        """Run the remaining passes and lower to PTX (sizes are run-time
        parameters, so one compile serves every problem). `dump_dir` receives
        the IR after each pass."""
        from wsc.compiler import compile_module

        with self.context:
            result = compile_module(
                self.module.operation.clone(),
                self.remaining_passes(),
                dump_dir,
                allow_spills=self.allow_spills,
            )
            self._check_grid_sizes(result.info.dims)
        return CompiledKernel(self, result)

    def _check_grid_sizes(self, read: Mapping[str, Any]) -> None:
        """Each grid axis counts tiles of a size the kernel reads (its names
        are known once lowered), or no artifact of it could be written."""
        unknown = [size for size, _ in self.grid if size not in read]
        if unknown:
            raise BuildError(
                f"grid: the kernel reads no size {', '.join(map(repr, unknown))}; it reads "
                f"{', '.join(sorted(read)) or 'none'} (a matmul's m, n, k; else "
                f"<tensor>_dim<i>: README, 'Writing kernels')",
                SourceLocation.of(*file_line_col(kernels(self.module.operation)[0].location)),
            )


def _configured(pass_class, options: dict):
    """`pass_class` with keyword `options`; a bad one is a BuildError at the
    author's line, naming options as the keywords the author wrote."""
    from wsc.pass_registry import OptionError

    where = caller()
    keywords = [option.name.replace("-", "_") for option in pass_class.OPTIONS]
    for name in options:
        if name not in keywords:
            raise BuildError(
                f"{pass_class.ARGUMENT} has no option {name!r}; its options: {', '.join(keywords)}",
                where,
            )
    try:
        return pass_class(**options)
    except OptionError as error:
        message = error.spelled(lambda flag: flag.replace("-", "_"))
        raise BuildError(f"{pass_class.ARGUMENT}: {message}", where) from None


class CompiledKernel:
    """A kernel lowered to PTX: `write_artifact` makes the directory the runtime
    launches for one problem."""

    def __init__(self, kernel: Kernel, result: CompileResult):
        self.kernel = kernel
        #: The compile driver's CompileResult: ptx, info, stages, ptxas.
        self.result = result

    @property
    def ptx(self) -> str:
        return self.result.ptx

    def summary(self) -> str:
        """One line per compile stage: its name, time and what the IR holds after it."""
        width = max(len(stage.name) for stage in self.result.stages)
        return "\n".join(
            f"  {stage.name:<{width}}  {stage.seconds * 1000:7.1f} ms  {stage.summary}"
            for stage in self.result.stages
        )

    def write_artifact(
        self,
        out_dir: str | os.PathLike | None = None,
        scalars: Mapping[str, float] | None = None,
        derived_sizes: Mapping[str, str] | None = None,
        **sizes: int,
    ) -> Path:
        """kernel.ptx and kernel.json for the problem `sizes` (e.g. m=, n=, k=), in
        `out_dir` or a new temporary directory: the kernel's tensors, sizes,
        grid and parameters, and the check it declares; `scalars` gives
        scalar arguments (kb.scalar, by name) the value runs use by default,
        in place of the kernel's own defaults (kb.scalar(default=));
        `derived_sizes` the sizes that follow from the others, as size
        expressions (e.g. {"d_dim0": "cdiv(k, 128)"}), which `wsc run
        --size` and Artifact.resized recompute."""
        from wsc.compiler import write_artifact

        # CompileResult types its info loosely: it is the lowering's KernelInfo.
        info = cast("KernelInfo", self.result.info)
        grid = self.kernel.grid
        config: dict[str, Any] = {f"block_{size}": tile for size, tile in grid}
        if self.kernel.persistent:
            config["persistent"] = True
        if info.cluster > 1:
            config["cluster_m"] = info.cluster
        grid_axes: tuple[tuple[str, int] | int, ...] = grid
        workspaces = None
        if self.kernel.split_k is not None:
            splits, tile_shape, slots = self.kernel.split_k
            config["splits"] = splits
            if slots is None:
                grid_axes = (*grid, splits)
            workspaces = split_k_workspaces(info, grid, splits, tile_shape, slots)
        config.update(self.kernel.check_config)
        out = Path(out_dir) if out_dir is not None else Path(tempfile.mkdtemp(prefix="wsc-"))
        return write_artifact(
            out,
            self.result,
            dict(sizes),
            grid_axes,
            config,
            persistent=self.kernel.persistent,
            check=self.kernel.check,
            workspaces=workspaces,
            scalars={**self.kernel.scalars, **(scalars or {})},
            derived_sizes=derived_sizes,
        )
