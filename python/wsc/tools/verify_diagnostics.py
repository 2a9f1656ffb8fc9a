"""`--verify-diagnostics`: match the diagnostics of a run against the
`expected-error`/`-warning`/`-note`/`-remark` comments of its input, as
mlir-opt does.

    // expected-error @below {{stage 4 is outside}}     the next line without a directive
    // expected-error @above {{...}}                    the last line without one
    // expected-error @+2 {{...}}                       two lines down
    // expected-error @unknown {{...}}                  a diagnostic with no location
    // expected-error {{...}}                           this line
    // expected-error-re {{stage {{[0-9]+}} is}}        literal text, {{regex}} blocks

A comment that names a directive it cannot parse is an error itself, so a
mistyped expectation cannot pass unnoticed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from wsc.diagnostics import Diagnostic

_EXPECTED = re.compile(
    r"expected-(error|warning|note|remark)(-re)?\s*(@below|@above|@unknown|@[+-]\d+)?\s*"
    r"\{\{(.*)\}\}\s*$"
)
#: What marks a line as meant to hold a directive.
_DIRECTIVE = re.compile(r"expected-(error|warning|note|remark)\b")


@dataclass
class Expectation:
    severity: str
    line: int | None  # 1-based, in the file; None for @unknown
    text: str
    comment_line: int
    pattern: re.Pattern | None = None
    matched: bool = False

    def matches(self, message: str) -> bool:
        if self.pattern is not None:
            return self.pattern.search(message) is not None
        return self.text in message


class ExpectationError(ValueError):
    """A directive that cannot be read: its line of the file, and why."""

    def __init__(self, line: int, why: str):
        super().__init__(why)
        self.line = line


def _regex(text: str, comment_line: int) -> re.Pattern:
    """An -re directive's text: literal, but for {{...}} blocks of regex."""
    parts, rest = [], text
    while "{{" in rest:
        literal, rest = rest.split("{{", 1)
        if "}}" not in rest:
            raise ExpectationError(comment_line, "a regex block '{{' with no end '}}'")
        block, rest = rest.split("}}", 1)
        parts += [re.escape(literal), f"({block})"]
    parts.append(re.escape(rest))
    try:
        return re.compile("".join(parts))
    except re.error as error:
        raise ExpectationError(comment_line, f"invalid regex: {error}") from None


def parse_expectations(source: str, line_offset: int = 0) -> list[Expectation]:
    """The expectations of `source`, whose first line is line `line_offset` + 1
    of its file; raises ExpectationError at a directive it cannot read."""
    expectations: list[Expectation] = []
    lines = source.splitlines()
    last_plain = line_offset + 1  # the last line without a directive
    below: list[Expectation] = []
    for index, line in enumerate(lines):
        number = index + 1 + line_offset
        match = _EXPECTED.search(line)
        if match is None:
            if _DIRECTIVE.search(line):
                raise ExpectationError(
                    number,
                    "cannot read this expected-* directive: it must read "
                    "expected-<severity>[-re] [@below|@above|@unknown|@+N|@-N] {{text}}",
                )
            for expectation in below:
                expectation.line = number
            below.clear()
            last_plain = number
            continue
        severity, regex, where, text = match.groups()
        expectation = Expectation(severity, number, text, number)
        if regex:
            expectation.pattern = _regex(text, number)
        if where == "@below":
            expectation.line = line_offset + len(lines) + 1  # dangling unless a line follows
            below.append(expectation)
        elif where == "@above":
            expectation.line = last_plain
        elif where == "@unknown":
            expectation.line = None
        elif where:
            expectation.line = number + int(where[1:])
        expectations.append(expectation)
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
                and e.matches(diagnostic.message)
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
                + (f"at line {expectation.line}" if expectation.line else "without a location")
            )
    return problems
