"""wsc-opt: run wsc and upstream passes over MLIR text, like mlir-opt.

    wsc-opt [options] [input.mlir | -]
    wsc-opt --warp-specialize=num-stages=4 kernel.mlir -o out.mlir
    wsc-opt --pass-pipeline='builtin.module(warp-specialize{num-stages=4},cse)' kernel.mlir

Errors are printed as `file:line:col: error: message` and give exit status 1;
no Python traceback reaches the user (set WSC_DEBUG=1 to see one for an
internal error).
"""

from __future__ import annotations

import os
import re
import sys
import traceback
from dataclasses import dataclass, field
from pathlib import Path

import wsc
from wsc.diagnostics import DiagnosticEngine, ParseError, PassError

SPLIT_MARKER = "// -----"

_USAGE = """\
OVERVIEW: wsc modular optimizer driver (warp-specialization passes for sm_90a)

USAGE: wsc-opt [options] <input file, or - for stdin>

OPTIONS:
  -o <file>                      Output file (default: stdout)
  --split-input-file             Split the input at '// -----' and process each chunk alone
  --verify-diagnostics           Check diagnostics against expected-* comments in the input
  --dump-pass-pipeline           Print the pipeline that will run, options spelled out, to stderr
  --mlir-print-ir-after-all      Print the IR to stderr after every pass
  --mlir-print-ir-after-change   With --mlir-print-ir-after-all: only after passes that changed it
  --mlir-print-ir-after-failure  Print the IR to stderr after a failed pass only (no other pass's)
  --mlir-print-ir-after=<passes> Print the IR to stderr after these passes (comma-separated names)
  --mlir-print-ir-before-all     Print the IR to stderr before every pass
  --mlir-print-ir-before=<passes> Print the IR to stderr before these passes
  --mlir-print-op-generic        Print operations in generic form
  --mlir-timing                  Print the time each pass took to stderr
  --pass-pipeline=<pipeline>     A textual pipeline, e.g. 'builtin.module(warp-specialize{num-stages=4})'
  --version                      Print the wsc version
  -h, --help                     Print this help

PASSES (--<pass> or --<pass>='opt=value opt=value'; MLIR's own passes too, e.g. --canonicalize, --cse):
"""


class UsageError(Exception):
    """A bad command line; printed as `wsc-opt: error: ...`."""


@dataclass
class Options:
    input: str = "-"
    output: str = "-"
    split_input_file: bool = False
    verify_diagnostics: bool = False
    dump_pass_pipeline: bool = False
    print_ir_after_all: bool = False
    print_ir_after_change: bool = False
    print_ir_after_failure: bool = False
    print_ir_before_all: bool = False
    #: The passes (by argument name) to print the IR after or before.
    print_ir_after: frozenset = frozenset()
    print_ir_before: frozenset = frozenset()
    print_generic: bool = False
    timing: bool = False
    pipeline: list = field(default_factory=list)  # WscPass instances and upstream pipeline text


def _help_text() -> str:
    from wsc import passes

    lines = [_USAGE]
    for flag in passes.available():
        pass_class = passes.lookup(flag)
        lines.append(f"  --{flag:<29}{pass_class.SUMMARY}")
        for option in pass_class.OPTIONS:
            default = f" (default: {option.default})"
            lines.append(
                f"      {option.name + '=<' + option.type.__name__ + '>':<27}{option.help}{default}"
            )
    return "\n".join(lines) + "\n"


def _split_top_level(text: str) -> list[str]:
    """Split at commas outside (), {} and []."""
    items, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch in "({[":
            depth += 1
        elif ch in ")}]":
            depth -= 1
            if depth < 0:
                raise UsageError(f"unbalanced '{ch}' in pass pipeline")
        elif ch == "," and depth == 0:
            items.append(text[start:i].strip())
            start = i + 1
    if depth:
        raise UsageError("unbalanced brackets in pass pipeline")
    items.append(text[start:].strip())
    if items != [""] and "" in items:
        raise UsageError(f"empty element in pass pipeline '{text}'")
    return [item for item in items if item]


def _pass_from_flag(flag: str, option_text: str):
    from wsc import passes

    pass_class = passes.lookup(flag) if flag in passes.available() else None
    if pass_class is None:
        return None
    try:
        return pass_class.from_option_string(option_text)
    except ValueError as error:
        raise UsageError(str(error)) from None


def _parse_pipeline(text: str) -> list:
    text = text.strip()
    anchor = "builtin.module("
    if text.count("(") != text.count(")"):
        raise UsageError(f"pass pipeline has unbalanced parentheses: '{text}'")
    if not (text.startswith(anchor) and text.endswith(")")):
        raise UsageError(f"pass pipeline must be anchored as 'builtin.module(...)', got '{text}'")
    pipeline = []
    for element in _split_top_level(text[len(anchor) : -1]):
        name, _, rest = element.partition("{")
        options = rest[:-1] if rest.endswith("}") else ""
        wsc_pass = _pass_from_flag(name.strip(), options)
        nested = element.partition("(")[2]
        if wsc_pass is None and any(
            _pass_from_flag(inner.partition("{")[0].strip(), "") is not None
            for inner in _split_top_level(nested[:-1] if nested.endswith(")") else nested)
        ):
            raise UsageError(
                f"'{element}': wsc's passes run on the module (each transforms its "
                "kernels): list them directly in builtin.module(...)"
            )
        if wsc_pass is None:
            _check_upstream_element(element)
        pipeline.append(wsc_pass if wsc_pass is not None else element)
    return pipeline


def _upstream_error(element: str) -> str | None:
    """Why MLIR refuses `element` as a pass of the module, or None if it takes it."""
    from mlir.passmanager import PassManager

    from wsc.dialect import make_context

    with make_context():
        try:
            PassManager("builtin.module").add(element)
        except ValueError as error:
            return str(error).splitlines()[0].split(": error: ", 1)[-1]
    return None


def _upstream_flag(arg: str, flag: str, option_text: str) -> str:
    """The pipeline element of an upstream pass given as mlir-opt spells it
    (--canonicalize, --cse='...'), nested in the op it is restricted to
    (--buffer-hoisting runs on each func.func), as mlir-opt nests it."""
    element = f"{flag}{{{option_text}}}" if option_text else flag
    why = _upstream_error(flag)
    if why is not None:
        anchor = re.search(r"restricted to '([\w.]+)'", why)
        if anchor is None:
            raise UsageError(
                f"unknown command line argument '{arg}'; see 'wsc-opt --help' for the passes"
            )
        element = f"{anchor.group(1)}({element})"
    why = _upstream_error(element)
    if why is not None:
        raise UsageError(f"{arg}: {why}")
    return element


def _check_upstream_element(element: str) -> None:
    """Refuse a pipeline element that names no wsc pass and that MLIR does not
    know either, before any input is read (MLIR's parser says why)."""
    why = _upstream_error(element)
    if why is not None:
        raise UsageError(
            f"invalid pass pipeline element '{element}': {why}; see 'wsc-opt --help' for the passes"
        )


#: mlir-opt's printing, timing and pipeline flags wsc-opt takes, by the Options field each sets.
_FLAGS = {
    "dump-pass-pipeline": "dump_pass_pipeline",
    "mlir-print-ir-after-all": "print_ir_after_all",
    "mlir-print-ir-after-change": "print_ir_after_change",
    "mlir-print-ir-after-failure": "print_ir_after_failure",
    "mlir-print-ir-before-all": "print_ir_before_all",
    "mlir-print-op-generic": "print_generic",
    "mlir-timing": "timing",
}


#: mlir-opt's flags that name passes to print the IR around, by the Options field each sets.
_PASS_LIST_FLAGS = {
    "mlir-print-ir-after": "print_ir_after",
    "mlir-print-ir-before": "print_ir_before",
}


def _pass_names(flag: str, text: str | None) -> frozenset:
    """The pass names of --mlir-print-ir-after/before, each a wsc pass or
    one MLIR registers."""
    from wsc import passes

    names = [name.strip() for name in (text or "").split(",")]
    if not all(names):
        raise UsageError(f"--{flag} needs pass names, e.g. --{flag}=warp-specialize")
    for name in names:
        if name not in passes.available():
            try:
                _check_upstream_element(name)
            except UsageError:
                raise UsageError(
                    f"--{flag}: '{name}' names no pass; see 'wsc-opt --help' for the passes"
                ) from None
    return frozenset(names)


def parse_args(argv: list[str]) -> Options | None:
    """The options of a command line, or None when --help/--version was handled."""
    options = Options()
    inputs = []
    pipeline_given = None
    args = iter(argv)
    for arg in args:
        if arg in ("-h", "--help", "-help"):
            sys.stdout.write(_help_text())
            return None
        if arg == "--version":
            print(f"wsc-opt {wsc.__version__}")
            return None
        if arg in ("-o", "--o"):
            output = next(args, None)
            if output is None:
                raise UsageError("-o needs a file name")
            options.output = output
        elif arg.startswith(("-o=", "--o=")):
            options.output = arg.split("=", 1)[1]
        elif arg in ("--split-input-file", "-split-input-file"):
            options.split_input_file = True
        elif arg in ("--verify-diagnostics", "-verify-diagnostics"):
            options.verify_diagnostics = True
        elif arg.lstrip("-") in _FLAGS:
            setattr(options, _FLAGS[arg.lstrip("-")], True)
        elif arg.lstrip("-").partition("=")[0] in _PASS_LIST_FLAGS:
            flag, given, listed = arg.lstrip("-").partition("=")
            names = listed if given else next(args, None)
            setattr(options, _PASS_LIST_FLAGS[flag], _pass_names(flag, names))
        elif arg.startswith("--pass-pipeline"):
            pipeline_given = arg.split("=", 1)[1] if "=" in arg else next(args, None)
            if pipeline_given is None:
                raise UsageError("--pass-pipeline needs a pipeline")
        elif arg.startswith("-") and arg != "-":
            flag, _, option_text = arg.lstrip("-").partition("=")
            wsc_pass = _pass_from_flag(flag, option_text)
            if wsc_pass is None:
                options.pipeline.append(_upstream_flag(arg, flag, option_text))
            else:
                options.pipeline.append(wsc_pass)
        else:
            inputs.append(arg)
    if len(inputs) > 1:
        raise UsageError(f"expected one input file, got {len(inputs)}: {' '.join(inputs)}")
    if inputs:
        options.input = inputs[0]
    if pipeline_given is not None:
        if options.pipeline:
            raise UsageError("--pass-pipeline cannot be combined with individual pass flags")
        options.pipeline = _parse_pipeline(pipeline_given)
    return options


def read_input(path: str) -> tuple[str, str]:
    """(display name, text) of the input; raise UsageError when unreadable."""
    name = "<stdin>" if path == "-" else path
    try:
        data = sys.stdin.buffer.read() if path == "-" else open(path, "rb").read()
    except OSError as error:
        raise UsageError(f"could not open input file '{path}': {error.strerror}") from None
    try:
        return name, data.decode("utf-8")
    except UnicodeDecodeError as error:
        line = data[: error.start].count(b"\n") + 1
        col = error.start - (data.rfind(b"\n", 0, error.start) + 1) + 1
        raise UsageError(f"{name}:{line}:{col}: error: input is not valid UTF-8 text") from None


def _chunks(text: str, split: bool) -> list[tuple[str, int]]:
    """(chunk, line offset) pairs of the input."""
    if not split:
        return [(text, 0)]
    chunks: list[tuple[str, int]] = []
    current: list[str] = []
    start = 0
    for number, line in enumerate(text.splitlines(keepends=True)):
        if line.strip() == SPLIT_MARKER:
            chunks.append(("".join(current), start))
            current, start = [], number + 1
        else:
            current.append(line)
    chunks.append(("".join(current), start))
    return chunks


def process_chunk(
    chunk: str, line_offset: int, name: str, options: Options
) -> tuple[str | None, DiagnosticEngine]:
    """Parse, verify and transform one buffer; (printed IR or None, diagnostics)."""
    from mlir import ir
    from mlir.passmanager import PassManager

    from wsc.dialect import make_context, parse_module
    from wsc.verifier import verify_wsc

    engine = DiagnosticEngine(name, line_offset)
    context = make_context()
    context.attach_diagnostic_handler(engine.handler)
    with context:
        try:
            module = parse_module(chunk, engine)
            verify_wsc(module.operation)
        except ParseError:  # its diagnostics are in `engine` already
            return None, engine
        except PassError as error:
            engine.add_pass_error(error)
            return None, engine
        if options.dump_pass_pipeline:  # as mlir-opt: for each buffer it runs on
            print(f"Pass Manager with {len(options.pipeline)} passes:", file=sys.stderr)
            print(pipeline_text(options.pipeline) + "\n", file=sys.stderr)
        for elements, before, after in _runs(options):
            pass_manager = PassManager("builtin.module")
            printing = {
                "print_before_all": options.print_ir_before_all or before,
                # As in mlir-opt, printing after failures prints after no other pass.
                "print_after_all": options.print_ir_after_all
                or options.print_ir_after_failure
                or after,
                "print_after_failure": options.print_ir_after_failure,
            }
            if any(printing.values()):
                pass_manager.enable_ir_printing(
                    **printing,
                    print_after_change=options.print_ir_after_change,
                    print_generic_op_form=options.print_generic,
                )
            if options.timing:
                pass_manager.enable_timing()
            for element in elements:
                if isinstance(element, str):
                    pass_manager.add(element)  # checked by _parse_pipeline
                else:
                    element.add_to(pass_manager, engine)
            try:
                pass_manager.run(module.operation)
            except ir.MLIRError as error:
                # A failing wsc pass has already reported its located error; the
                # pass manager's own "failed to run" message would only repeat it.
                if not engine.has_errors:
                    engine.add_mlir_error(error)
                return None, engine
            if engine.has_errors:
                return None, engine
        return module.operation.get_asm(print_generic_op_form=options.print_generic), engine


def _runs(options: Options) -> list[tuple[list, bool, bool]]:
    """The pipeline as pass managers to run in turn: (elements, print before
    them, print after them). One of the whole pipeline; where passes are
    named for printing (MLIR's Python pass manager has no filter), a named
    pass runs in a pass manager of its own that prints around it."""
    if not (options.print_ir_after or options.print_ir_before):
        return [(options.pipeline, False, False)]
    runs: list[tuple[list, bool, bool]] = []
    for element in options.pipeline:
        name = element if isinstance(element, str) else element.ARGUMENT
        name = name.partition("{")[0].partition("(")[0].strip()
        before, after = name in options.print_ir_before, name in options.print_ir_after
        if before or after or not runs or runs[-1][1] or runs[-1][2]:
            runs.append(([element], before, after))
        else:
            runs[-1][0].append(element)
    return runs


def pipeline_text(pipeline: list) -> str:
    """The pipeline as mlir-opt's --dump-pass-pipeline spells it: every
    option of every pass with its value."""
    from mlir.passmanager import PassManager

    from wsc.dialect import make_context

    elements = []
    with make_context():
        for element in pipeline:
            if isinstance(element, str):
                spelled = str(PassManager.parse(f"builtin.module({element})"))
                elements.append(spelled.removeprefix("builtin.module(").removesuffix(")"))
            else:
                elements.append(element.pipeline_element())
    return f"builtin.module({','.join(elements)})"


def run(options: Options) -> int:
    name, text = read_input(options.input)
    outputs, failed = [], False
    for chunk, line_offset in _chunks(text, options.split_input_file):
        printed, engine = process_chunk(chunk, line_offset, name, options)
        if options.verify_diagnostics:
            from wsc.tools.verify_diagnostics import ExpectationError, parse_expectations, verify

            try:
                expectations = parse_expectations(chunk, line_offset)
            except ExpectationError as error:
                problems = [f"{name}:{error.line}:1: error: {error}"]
            else:
                problems = verify(engine.diagnostics, expectations, name)
            for problem in problems:
                print(problem, file=sys.stderr)
            failed |= bool(problems)
        else:
            for diagnostic in engine.diagnostics:
                print(diagnostic.format(), file=sys.stderr)
            failed |= printed is None
        if printed is not None:
            outputs.append(printed)
    result = (SPLIT_MARKER + "\n").join(outputs)
    if options.output == "-":
        sys.stdout.write(result)
    elif failed:
        # As mlir-opt: a failed run leaves no output file, not a stale or partial one.
        try:
            Path(options.output).unlink(missing_ok=True)
        except OSError:
            pass
    else:
        try:
            with open(options.output, "w") as out:
                out.write(result)
        except OSError as error:
            raise UsageError(f"could not write '{options.output}': {error.strerror}") from None
    return 1 if failed else 0


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    try:
        options = parse_args(argv)
        return 0 if options is None else run(options)
    except UsageError as error:
        message = str(error)
        print(message if ": error: " in message else f"wsc-opt: error: {message}", file=sys.stderr)
        return 1
    except BrokenPipeError:
        return 1
    except Exception as error:  # an internal error must still not end in a traceback
        if os.environ.get("WSC_DEBUG"):
            traceback.print_exc()
        print(
            f"wsc-opt: internal error: {type(error).__name__}: {error} "
            f"(set WSC_DEBUG=1 for a traceback)",
            file=sys.stderr,
        )
        return 1


if __name__ == "__main__":
    sys.exit(main())
