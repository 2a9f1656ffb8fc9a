"""Located diagnostics shared by the tools and the passes.

MLIR reports parse and verifier errors through the context's diagnostic
handler; wsc passes, written in Python, raise `PassError` with an
`ir.Location`. Both end up as `Diagnostic` records in one `DiagnosticEngine`,
so `wsc-opt` prints them alike (`file:line:col: error: message`) and
`--verify-diagnostics` matches them alike.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from mlir import ir

# The note MLIR attaches to every verifier error; it repeats the whole op and
# carries no information a user of wsc-opt needs.
_OP_DUMP_NOTE = "see current operation:"
_OP_NAME_IN_DUMP = re.compile(r'"([a-z_][\w.]*)"\(')


@dataclass
class Diagnostic:
    severity: str  # "error", "warning", "note" or "remark"
    message: str
    filename: str | None = None
    line: int | None = None
    col: int | None = None
    notes: list[Diagnostic] = field(default_factory=list)

    def format(self) -> str:
        where = f"{self.filename}:{self.line}:{self.col}: " if self.line is not None else ""
        lines = [f"{where}{self.severity}: {self.message}"]
        lines += [note.format() for note in self.notes]
        return "\n".join(lines)


class PassError(Exception):
    """A located error raised by a wsc pass or by the wsc verifier."""

    def __init__(
        self,
        location: ir.Location,
        message: str,
        notes: list[tuple[ir.Location, str]] | None = None,
    ):
        super().__init__(message)
        self.location = location
        self.message = message
        self.notes = notes or []


class ParseError(ValueError):
    """MLIR text that does not parse or verify; `diagnostics` says where and why."""

    def __init__(self, diagnostics: list[Diagnostic]):
        super().__init__("\n".join(d.format() for d in diagnostics))
        self.diagnostics = diagnostics


def file_line_col(location: ir.Location) -> tuple[str | None, int | None, int | None]:
    """The first file:line:col inside `location` (name, call-site and fused
    locations wrap one)."""
    if location.is_a_file():
        return location.filename, location.start_line, location.start_col
    if location.is_a_name():
        return file_line_col(location.child_loc)
    if location.is_a_callsite():
        return file_line_col(location.callee)
    if location.is_a_fused():
        for inner in location.locations:
            found = file_line_col(inner)
            if found[1] is not None:
                return found
    return None, None, None


#: MLIR's advice for an op of a dialect no one registered names a flag wsc's
#: tools do not take: they parse registered dialects only (wsc.dialect.make_context).
_UNREGISTERED_ADVICE = (
    "If this is intended, please use -allow-unregistered-dialect with the MLIR tool used"
)
_REGISTERED_ONLY = (
    "wsc's tools parse only registered dialects (MLIR's upstream ones and wsc): "
    "check the op's dialect prefix"
)


def _name_the_op(message: str, op_dump: str) -> str:
    """IRDL's constraint errors ("expected 'i1' but got 'i32'") do not say which
    op broke them; take the name from the op dump MLIR attaches as a note."""
    if re.match(r"'[\w.]+' op ", message):
        return message
    match = _OP_NAME_IN_DUMP.search(op_dump)
    if match is None or f"'{match.group(1)}'" in message:
        return message
    return f"'{match.group(1)}' op {message[:1].lower()}{message[1:]}"


_SEVERITIES = {
    ir.DiagnosticSeverity.ERROR: "error",
    ir.DiagnosticSeverity.WARNING: "warning",
    ir.DiagnosticSeverity.NOTE: "note",
    ir.DiagnosticSeverity.REMARK: "remark",
}


class DiagnosticEngine:
    """Collects diagnostics for one input buffer.

    MLIR names buffers parsed from a string "-"; `filename` and `line_offset`
    map those locations back to the user's file (and to the right line when
    `--split-input-file` parsed a chunk of it).
    """

    def __init__(self, filename: str, line_offset: int = 0):
        self.filename = filename
        self.line_offset = line_offset
        self.diagnostics: list[Diagnostic] = []

    def _locate(self, location: ir.Location) -> tuple[str | None, int | None, int | None]:
        name, line, col = file_line_col(location)
        if line is None:
            return self.filename, None, None
        if name in ("-", "", None):
            return self.filename, line + self.line_offset, col
        return name, line, col

    def _from_mlir(self, diagnostic) -> Diagnostic:
        name, line, col = self._locate(diagnostic.location)
        message = str(diagnostic.message).replace(_UNREGISTERED_ADVICE, _REGISTERED_ONLY)
        notes = []
        for note in diagnostic.notes:
            note_text = str(note.message)
            if note_text.startswith(_OP_DUMP_NOTE):
                message = _name_the_op(message, note_text)
            else:
                notes.append(self._from_mlir(note))
        return Diagnostic(
            _SEVERITIES.get(diagnostic.severity, "error"), message, name, line, col, notes
        )

    def handler(self, diagnostic) -> bool:
        """A context diagnostic handler: record and consume `diagnostic`."""
        self.diagnostics.append(self._from_mlir(diagnostic))
        return True

    def add_mlir_error(self, error: ir.MLIRError) -> None:
        for diagnostic in error.error_diagnostics:
            self.diagnostics.append(self._from_mlir(diagnostic))
        if not error.error_diagnostics:
            self.diagnostics.append(Diagnostic("error", str(error), self.filename, None, None))

    def add_pass_error(self, error: PassError) -> None:
        name, line, col = self._locate(error.location)
        notes = []
        for note_location, note_message in error.notes:
            n_name, n_line, n_col = self._locate(note_location)
            notes.append(Diagnostic("note", note_message, n_name, n_line, n_col))
        self.diagnostics.append(Diagnostic("error", error.message, name, line, col, notes))

    def add_error(self, message: str, line: int | None = None, col: int | None = None) -> None:
        self.diagnostics.append(Diagnostic("error", message, self.filename, line, col))

    @property
    def has_errors(self) -> bool:
        return any(d.severity == "error" for d in self.diagnostics)
