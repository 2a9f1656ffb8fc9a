"""`wsc`: the compiler and runtime driver.

    wsc demo                               the tutorial's matmul through every stage
    wsc compile KERNEL.mlir -o OUT.ptx     a kernel file through the whole pipeline
    wsc compile-matmul --m M --n N --k K -o DIR
    wsc run DIR [--check] [--bench]        load and launch an artifact (no MLIR needed)

Only `run` works without the MLIR wheels; it never imports them. The exit
status is 0 on success, 1 when the kernel fails to compile, and 2 when the
command line asks for what cannot be done (an option, an input or output path).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import traceback
from pathlib import Path

import wsc
from wsc.kernels.matmul.config import B_LAYOUTS
from wsc.target.hopper import OPERAND_DTYPES, RESULT_DTYPES


def _print_stages(result) -> None:
    width = max(len(stage.name) for stage in result.stages)
    for stage in result.stages:
        print(f"  {stage.name:<{width}}  {stage.seconds * 1000:7.1f} ms  {stage.summary}")


class CommandLineError(ValueError):
    """The command line asks for what cannot be done: exit status 2, as argparse's own errors."""


def _config_from_args(args):
    from wsc.kernels.matmul.config import MatmulConfig

    values = {}
    if args.config:
        try:
            values = json.loads(args.config)
        except json.JSONDecodeError as error:
            raise CommandLineError(f"--config is not valid JSON: {error}") from None
        if not isinstance(values, dict):
            raise CommandLineError("--config must be a JSON object")
    fields = MatmulConfig.__dataclass_fields__
    unknown = sorted(set(values) - set(fields))
    if unknown:
        raise CommandLineError(
            f"--config: no MatmulConfig field {', '.join(map(repr, unknown))} "
            f"(fields: {', '.join(fields)})"
        )
    try:
        return MatmulConfig(**values)
    except ValueError as error:
        raise CommandLineError(f"--config: {error}") from None


def _writable_file(path: str) -> None:
    """Refuse, before compiling, an output file that cannot be written."""
    if path == "-":
        raise CommandLineError(
            "-o -: the PTX goes to a file, its launch metadata beside it; name the file"
        )
    if os.path.isdir(path):
        raise CommandLineError(f"could not write '{path}': it is a directory")
    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(parent):
        raise CommandLineError(f"could not write '{path}': there is no directory '{parent}'")


def _writable_directory(path: str) -> None:
    """Refuse, before compiling, an output directory that is a file."""
    if os.path.exists(path) and not os.path.isdir(path):
        raise CommandLineError(f"could not write '{path}': it is a file, not a directory")


def _compile_matmul(args) -> int:
    from wsc.kernels.matmul.build import compile_matmul
    from wsc.kernels.matmul.config import MatmulProblem, check_tma_strides
    from wsc.runtime.artifact import SizesError, check_sizes

    _writable_directory(args.output)
    if args.dump_ir is not None:
        _writable_directory(args.dump_ir)
    try:
        check_sizes(("m", "n", "k"), {"m": args.m, "n": args.n, "k": args.k}, "matmul")
    except SizesError as error:
        raise CommandLineError(f"--{str(error).removeprefix('size ')}") from None
    config = _config_from_args(args)
    # What no config compiles is the request's mistake, refused before compiling.
    try:
        problem = MatmulProblem(args.dtype, args.out_dtype, args.b_layout)
        check_tma_strides(args.k, args.n, problem, config)
    except ValueError as error:
        raise CommandLineError(str(error)) from None
    result = compile_matmul(
        args.m, args.n, args.k, problem, config, args.output, dump_dir=args.dump_ir
    )
    print(
        f"wsc compile-matmul: {args.m}x{args.n}x{args.k} {args.dtype}->{args.out_dtype} "
        f"b={args.b_layout} {config.as_dict()} -> {args.output}"
    )
    _print_stages(result)
    return 0


def _compile(args) -> int:
    from mlir import ir

    from wsc.compiler import compile_module
    from wsc.diagnostics import DiagnosticEngine
    from wsc.dialect import make_context, parse_module
    from wsc.ir_utils import kernels, walk
    from wsc.pass_registry import OptionError, WscPass
    from wsc.passes.unroll_ring_buffer import UnrollRingBuffer
    from wsc.passes.verify_pipeline import VerifyPipeline
    from wsc.passes.warp_specialize import WarpSpecialize
    from wsc.tools.opt import UsageError, read_input

    if args.input.endswith(".py"):
        raise CommandLineError(
            f"{args.input}: a Python file; wsc compile takes a kernel in wsc MLIR (.mlir). "
            "A kernel of the Python builder compiles in Python: kernel.compile(), "
            "kernel.write_artifact(DIR), or its example's --compile-only"
        )
    _writable_file(args.output)
    if args.dump_ir is not None:
        _writable_directory(args.dump_ir)
    given = {
        option.name: getattr(args, option.name.replace("-", "_"))
        for option in WarpSpecialize.OPTIONS
        if getattr(args, option.name.replace("-", "_")) is not None
    }
    try:
        name, text = read_input(args.input)
    except UsageError as error:
        raise CommandLineError(str(error)) from None
    context = make_context()
    with context, ir.Location.unknown():
        module = parse_module(text, DiagnosticEngine(name))
        found = kernels(module.operation)
        if len(found) != 1:
            named = ", ".join(f"@{ir.StringAttr(k.attributes['sym_name']).value}" for k in found)
            raise ValueError(
                f"{name}: wsc compile takes one kernel (a func.func with "
                f"wsc.num_threads) per file, found {len(found)}{': ' + named if named else ''}"
            )
        names = {op.name for op in walk(module.operation)}
        pipelined = any(
            op.name == "wsc.tma_load" and _inside_loop(op) for op in walk(module.operation)
        )
        passes: list[WscPass]
        if "wsc.role" in names or not pipelined:
            why = (
                "is specialized already (it has wsc.role ops)"
                if "wsc.role" in names
                else "has no loop of TMA loads to specialize"
            )
            if given:
                raise CommandLineError(
                    f"{name}: the kernel {why} and is compiled as written, so "
                    f"{', '.join('--' + name for name in given)} would not apply: give its "
                    "V2 form, or leave the options out"
                )
            # As written: a ring loop is unrolled where asked, and the protocol checked.
            passes = [UnrollRingBuffer()] if args.unroll_ring_buffer else [VerifyPipeline()]
        elif args.unroll_ring_buffer:
            raise CommandLineError(
                f"{name}: --unroll-ring-buffer applies to a kernel compiled as written; "
                "a V2-form kernel's ring loops are unrolled after --warp-specialize unless "
                "their stages stay run-time (persistent, or two K tiles per trip)"
            )
        else:
            try:
                passes = [
                    WarpSpecialize(**{name.replace("-", "_"): v for name, v in given.items()})
                ]
            except OptionError as error:
                raise CommandLineError(error.spelled(lambda flag: f"--{flag}")) from None
            # --verify applies to the unrolled result too.
            passes.append(UnrollRingBuffer(verify=given.get("verify", True), where_possible=True))
        result = compile_module(
            module, passes, args.dump_ir, source=name, allow_spills=args.allow_spills
        )
    with open(args.output, "w") as out:
        out.write(result.ptx)
    metadata = launch_metadata_path(args.output)
    with open(metadata, "w") as out:
        json.dump(result.info.to_json(), out, indent=1)
    print(f"wsc compile: {name} -> {args.output}")
    _print_stages(result)
    print(f"launch metadata (block, shared memory, parameters, tensor maps): {metadata}")
    return 0


def _inside_loop(op) -> bool:
    parent = op.parent
    while parent is not None and parent.name != "func.func":
        if parent.name == "scf.for":
            return True
        parent = parent.parent
    return False


def launch_metadata_path(ptx: str) -> str:
    """Where `wsc compile -o PTX` writes the kernel's launch metadata: beside
    the PTX, its suffix .json."""
    path = Path(ptx)
    return str(path.with_suffix(".json") if path.suffix != ".json" else Path(f"{ptx}.launch.json"))


def _hopper_visible() -> bool:
    try:
        from cuda.bindings import driver

        (err,) = driver.cuInit(0)
    except Exception:  # no cuda-bindings, or no driver library on this machine
        return False
    if err != driver.CUresult.CUDA_SUCCESS:
        return False
    err, count = driver.cuDeviceGetCount()
    if err != driver.CUresult.CUDA_SUCCESS or count == 0:
        return False
    err, major = driver.cuDeviceGetAttribute(
        driver.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, 0
    )
    return err == driver.CUresult.CUDA_SUCCESS and major == 9


def _demo(args) -> int:
    import subprocess
    import tempfile

    from wsc.kernels.matmul.build import compile_matmul
    from wsc.kernels.matmul.config import MatmulConfig, MatmulProblem, check_tma_strides
    from wsc.runtime.artifact import SizesError, check_sizes

    config = MatmulConfig()
    problem = MatmulProblem("f16", "f32", "nk")
    m = n = k = args.size
    # Refused before the banner and the artifact directory.
    try:
        check_sizes(("m",), {"m": m}, "matmul")
    except SizesError as error:
        raise CommandLineError(f"--size {str(error).removeprefix('size m ')}") from None
    try:
        check_tma_strides(k, n, problem, config)
    except ValueError as error:
        raise CommandLineError(f"--size {args.size}: {error}") from None
    if args.output is not None:
        _writable_directory(args.output)
    out_dir = args.output or tempfile.mkdtemp(prefix="wsc-demo-")
    print(
        f"The tutorial's V3 matmul: C[{m}, {n}] = A[{m}, {k}] B[{n}, {k}]^T, f16 -> f32, "
        f"{config.block_m}x{config.block_n}x{config.block_k} tiles, "
        f"{config.num_stages} stages, 1 producer warp + 1 consumer warpgroup"
    )
    result = compile_matmul(m, n, k, problem, config, out_dir, dump_dir=os.path.join(out_dir, "ir"))
    _print_stages(result)
    print(f"artifact: {out_dir} (IR after each pass in {out_dir}/ir)")
    if not _hopper_visible():
        print("no Hopper GPU visible: compiled only (run `wsc run DIR --check` on one)")
        return 0
    print("Hopper GPU found: running and checking against a float64 reference")
    return subprocess.call(
        [sys.executable, "-m", "wsc.runtime.run_cli", out_dir, "--check", "--bench"]
    )


def _option_value(option):
    """An argparse type that reads a pass option as the pass does."""

    def convert(text: str):
        try:
            return option.parse(text)
        except ValueError as error:
            raise argparse.ArgumentTypeError(str(error)) from None

    convert.__name__ = option.type.__name__
    return convert


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="wsc", description=__doc__.split("\n\n")[0], allow_abbrev=False
    )
    parser.add_argument("--version", action="version", version=f"wsc {wsc.__version__}")
    commands = parser.add_subparsers(dest="command", required=True)

    demo = commands.add_parser(
        "demo", help="compile (and on a Hopper GPU, run) the tutorial's matmul", allow_abbrev=False
    )
    demo.add_argument("--size", type=int, default=4096, help="M = N = K")
    demo.add_argument("-o", "--output", help="artifact directory (default: a temporary one)")

    compile_ = commands.add_parser(
        "compile",
        allow_abbrev=False,
        help="compile a kernel file in wsc MLIR (one kernel) to PTX: a V2-form one (a loop of "
        "TMA loads, no roles) through --warp-specialize (and --unroll-ring-buffer), any other "
        "as written",
    )
    compile_.add_argument("input", help="the kernel, wsc MLIR (.mlir); - reads standard input")
    compile_.add_argument(
        "-o",
        "--output",
        required=True,
        help="PTX file; the launch metadata goes beside it, its suffix .json",
    )
    from wsc.passes.warp_specialize import WarpSpecialize

    # Left unset (None) unless given, so that options a specialized kernel
    # would ignore are refused, not dropped.
    for option in WarpSpecialize.OPTIONS:
        compile_.add_argument(
            f"--{option.name}",
            type=_option_value(option),
            help=f"--warp-specialize's {option.name} (default {option.default}): {option.help}",
        )
    compile_.add_argument(
        "--unroll-ring-buffer",
        action="store_true",
        help="for a kernel compiled as written (specialized already, or with no loop of TMA "
        "loads): unroll its ring loops by their stages, as the builder's range(unroll=) asks",
    )
    compile_.add_argument("--dump-ir", metavar="DIR", help="write the IR after every pass here")
    compile_.add_argument(
        "--allow-spills",
        action="store_true",
        help="accept registers ptxas spills to local memory (an error otherwise)",
    )

    matmul = commands.add_parser(
        "compile-matmul", help="compile a matmul into an artifact directory", allow_abbrev=False
    )
    for dim in ("m", "n", "k"):
        matmul.add_argument(f"--{dim}", type=int, required=True)
    matmul.add_argument("--dtype", default="f16", choices=OPERAND_DTYPES)
    matmul.add_argument("--out-dtype", default="f32", choices=RESULT_DTYPES)
    matmul.add_argument(
        "--b-layout",
        default="nk",
        choices=B_LAYOUTS,
        help="nk: B is a contiguous [N, K] (C = A B^T); kn: a contiguous [K, N]",
    )
    matmul.add_argument("--config", help='JSON, e.g. \'{"num_stages": 4, "block_n": 128}\'')
    matmul.add_argument("-o", "--output", required=True, help="artifact directory")
    matmul.add_argument("--dump-ir", metavar="DIR", help="write the IR after every pass here")

    commands.add_parser(
        "run", help="load an artifact and launch it (see `wsc run -h`)", add_help=False
    )
    for command in (demo, compile_, matmul):
        command.set_defaults(command_parser=command)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["run"]:
        # Dispatched before anything imports MLIR: `run` must work without it.
        from wsc.runtime.run_cli import main as run_main

        return run_main(argv[1:])
    parser = _parser()
    args, unknown = parser.parse_known_args(argv)
    if unknown:  # refused in the usage of the (sub)command they were given to
        before = argv[: argv.index(args.command)]
        refusing = parser if any(arg in before for arg in unknown) else args.command_parser
        refusing.error(f"unrecognized arguments: {' '.join(unknown)}")
    handlers = {"demo": _demo, "compile": _compile, "compile-matmul": _compile_matmul}
    try:
        return handlers[args.command](args)
    except Exception as error:  # located compile errors and bad arguments, without traceback
        from wsc.compiler import CompileError

        if os.environ.get("WSC_DEBUG"):
            traceback.print_exc()
        if isinstance(error, CompileError):  # already formatted `error:` diagnostics
            print(f"wsc {args.command}: compilation failed\n{error}", file=sys.stderr)
        elif isinstance(error, (ValueError, OSError)):
            message = str(error)  # a located diagnostic starts with its file:line:col
            if isinstance(error, OSError) and error.filename is not None:
                message = f"'{error.filename}': {error.strerror}"
            located = ": error: " in message
            print(message if located else f"wsc {args.command}: error: {message}", file=sys.stderr)
            if isinstance(error, (CommandLineError, OSError)):
                return 2
        else:
            print(
                f"wsc {args.command}: internal error: {type(error).__name__}: {error} "
                f"(set WSC_DEBUG=1 for a traceback)",
                file=sys.stderr,
            )
        return 1


if __name__ == "__main__":
    sys.exit(main())
