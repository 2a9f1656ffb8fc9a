"""`--verify-diagnostics`: match the diagnostics of a run against the
`expected-error`/`-warning`/`-note`/`-remark` comments of its input, as
mlir-opt does.

    // expected-error @below {{stage 4 is outside}}     the next line
    // expected-error @+2 {{...}}                       two lines down
    // expected-error {{...}}                           this line
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from wsc.diagnostics import Diagnostic

_EXPECTED = re.compile(
    r"expected-(error|warning|note|remark)\s*(@below|@above|@[+-]\d+)?\s*\{\{(.*?)\}\}"
)


@dataclass
class Expectation:
    severity: str
    line: int  # 1-based, in the file
    text: str
    comment_line: int
    matched: bool = False


def parse_expectations(source: str, line_offset: int = 0) -> list[Expectation]:
    expectations = []
    for index, line in enumerate(source.splitlines()):
        comment_line = index + 1 + line_offset
        for match in _EXPECTED.finditer(line):
            severity, where, text = match.groups()
            target = comment_line
            if where == "@below":
                target += 1
            elif where == "@above":
                target -= 1
            elif where:
                target += int(where[1:])
            expectations.append(Expectation(severity, target, text, comment_line))
    return expectations


def _flatten(diagnostics: list[Diagnostic]) -> list[Diagnostic]:
    flat = []
    for diagnostic in diagnostics:
        flat.append(diagnostic)
        flat.extend(_flatten(diagnostic.notes))
    return flat


def verify(
    diagnostics: list[Diagnostic], expectations: list[Expectation], filename: str
) -> list[str]:
    """Return the mismatches as error lines (empty when everything matched).

    Every error, warning and remark must be expected; a note must be matched
    only when a comment expects it."""
    problems = []
    for diagnostic in _flatten(diagnostics):
        found = next(
            (
                e
                for e in expectations
                if not e.matched
                and e.severity == diagnostic.severity
                and e.line == diagnostic.line
                and e.text in diagnostic.message
            ),
            None,
        )
        if found is not None:
            found.matched = True
        elif diagnostic.severity != "note":
            where = f"{diagnostic.filename}:{diagnostic.line}:{diagnostic.col}: "
            if diagnostic.line is None:
                where = f"{filename}: "
            problems.append(f"{where}error: unexpected {diagnostic.severity}: {diagnostic.message}")
    for expectation in expectations:
        if not expectation.matched:
            problems.append(
                f"{filename}:{expectation.comment_line}:1: error: expected "
                f'{expectation.severity} "{expectation.text}" was not produced '
                f"at line {expectation.line}"
            )
    return problems
