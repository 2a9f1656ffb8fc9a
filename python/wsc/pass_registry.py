"""The machinery every wsc pass shares: options in MLIR syntax, registration
with an MLIR `PassManager`, and the structural verifier run before each pass.

A pass is a `WscPass` subclass in `passes/<flag with underscores>.py`;
`wsc.passes.REGISTRY` maps flags to those classes, so `wsc-opt --help` and the
pipeline parser see every pass without importing them all.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any, ClassVar

from mlir import ir
from mlir.passmanager import PassManager

from wsc.diagnostics import DiagnosticEngine, PassError


class OptionError(ValueError):
    """A bad value of a pass's options. The message names each option as a
    `{flag}` field, so that each front end spells it as its users write it:
    wsc-opt as 'num-stages' (str()), the builder as its keyword, num_stages
    (`spelled`)."""

    def __init__(self, template: str, argument: str | None = None):
        self.template = template
        #: The pass's flag, where the message names it.
        self.argument = argument
        prefix = f"pass '{argument}': " if argument else ""
        super().__init__(prefix + self.spelled(lambda flag: f"'{flag}'"))

    def spelled(self, spell: Callable[[str], str]) -> str:
        """The message with each option named by `spell(flag)`."""
        return re.sub(r"\{([a-z][a-z0-9-]*)\}", lambda match: spell(match[1]), self.template)


@dataclass(frozen=True)
class Option:
    """One pass option, spelled `name=value` on the command line."""

    name: str
    type: type
    default: Any
    help: str
    choices: tuple = ()

    def parse(self, text: str) -> Any:
        if self.type is bool:
            if text.lower() in ("1", "true"):
                return True
            if text.lower() in ("0", "false"):
                return False
            raise OptionError(f"option {{{self.name}}} expects true or false, got '{text}'")
        try:
            value = self.type(text)
        except ValueError:
            raise OptionError(
                f"option {{{self.name}}} expects {self.type.__name__}, got '{text}'"
            ) from None
        self.check(value)
        return value

    def check(self, value: Any) -> None:
        # A value given in Python (Kernel.warp_specialize) has not been parsed:
        # its type is checked here; bool is an int to Python, not to an option.
        if not isinstance(value, self.type) or (self.type is int and isinstance(value, bool)):
            raise OptionError(f"option {{{self.name}}} expects {self.type.__name__}, got {value!r}")
        if self.choices and value not in self.choices:
            allowed = ", ".join(map(str, self.choices))
            raise OptionError(f"option {{{self.name}}} must be one of {allowed}, got '{value}'")


class WscPass:
    """Base class of the wsc passes. Subclasses set ARGUMENT (the flag),
    SUMMARY (one line for --help), OPTIONS, and implement run()."""

    ARGUMENT: ClassVar[str]
    SUMMARY: ClassVar[str]
    OPTIONS: ClassVar[tuple[Option, ...]] = ()

    def __init__(self, **options: Any):
        known = {o.name.replace("-", "_"): o for o in self.OPTIONS}
        values = {name: option.default for name, option in known.items()}
        for name, value in options.items():
            key = name.replace("-", "_")
            if key not in known:
                raise ValueError(f"pass '{self.ARGUMENT}' has no option '{name}'")
            known[key].check(value)
            values[key] = value
        self.options = SimpleNamespace(**values)

    @classmethod
    def from_option_string(cls, text: str) -> WscPass:
        """Build the pass from MLIR option syntax: `num-stages=4 producer=warp`."""
        by_name = {o.name: o for o in cls.OPTIONS}
        values = {}
        for item in text.split():
            name, sep, value = item.partition("=")
            if not sep:
                raise ValueError(
                    f"pass '{cls.ARGUMENT}': option '{item}' needs a value (name=value)"
                )
            if name not in by_name:
                known = ", ".join(by_name) or "none"
                raise ValueError(f"pass '{cls.ARGUMENT}' has no option '{name}' (options: {known})")
            values[name] = by_name[name].parse(value)
        return cls(**values)

    def pipeline_element(self) -> str:
        """This pass in a textual pipeline, every option spelled with its
        value: `warp-specialize{num-stages=4 producer=warp ...}`."""
        values = []
        for option in self.OPTIONS:
            value = getattr(self.options, option.name.replace("-", "_"))
            values.append(f"{option.name}={str(value).lower() if option.type is bool else value}")
        return f"{self.ARGUMENT}{{{' '.join(values)}}}" if values else self.ARGUMENT

    def run(self, module: ir.Operation) -> None:
        raise NotImplementedError

    def apply(self, op: ir.Operation, engine: DiagnosticEngine) -> bool:
        """Run this pass alone over `op` (a builtin.module); its diagnostics go to
        `engine`. True when it succeeded."""
        pass_manager = PassManager("builtin.module", context=op.context)
        self.add_to(pass_manager, engine)
        try:
            pass_manager.run(op)
        except ir.MLIRError as error:
            # A failing wsc pass has already reported its located error; the
            # pass manager's own "failed to run" message would only repeat it.
            if not engine.has_errors:
                engine.add_mlir_error(error)
        return not engine.has_errors

    def add_to(self, pass_manager: PassManager, engine: DiagnosticEngine) -> None:
        """Append this pass to `pass_manager`; its errors go to `engine`."""
        from wsc.verifier import verify_wsc

        def run_pass(op: ir.Operation, external_pass) -> None:
            # A PassManager verifies after each pass, not before the first:
            # IR built through the Python API reaches here unverified.
            try:
                op.verify()
            except ir.MLIRError as error:
                engine.add_mlir_error(error)
                external_pass.signal_pass_failure()
                return
            # The wsc rules hold before the pass (passes may assume them) and
            # after it: a pass option can ask for what the hardware cannot do
            # (e.g. a register budget under 24), and the IR that results must
            # not reach a later pass or the user unchecked.
            try:
                verify_wsc(op)
                self.run(op.opview)
                verify_wsc(op)
            except PassError as error:
                engine.add_pass_error(error)
                external_pass.signal_pass_failure()

        pass_manager.add(
            run_pass, name=type(self).__name__, argument=self.ARGUMENT, description=self.SUMMARY
        )
