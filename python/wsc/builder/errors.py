"""The kernel builder's errors (BuildError, BuildTypeError) and warnings
(BuildWarning), located at the line of the user's source that asked for the
op being built."""

from __future__ import annotations

import contextlib
import os
import sys
import warnings
from collections.abc import Sequence
from dataclasses import dataclass

from mlir import ir


@dataclass(frozen=True)
class SourceLocation:
    """Where in the user's Python source an op was built (col is 1-based)."""

    filename: str
    line: int
    col: int

    def __str__(self) -> str:
        return f"{self.filename}:{self.line}:{self.col}"

    def mlir(self) -> ir.Location:
        return ir.Location.file(self.filename, self.line, self.col)

    @staticmethod
    def of(filename: str | None, line: int | None, col: int | None) -> SourceLocation | None:
        """The location of a diagnostic's file, line and column, or None where it has none."""
        if filename is None or line is None:
            return None
        return SourceLocation(filename, line, col or 0)


class BuildWarning(UserWarning):
    """A kernel that builds but is likely not what its author meant."""


class BuildError(ValueError):
    """A mistake in a kernel's code, found while building it; the message starts
    with the user's file:line:col."""

    def __init__(self, message: str, where: SourceLocation | None = None):
        self.message = message
        self.where = where
        super().__init__(f"{where}: error: {message}" if where is not None else message)


class BuildTypeError(BuildError, TypeError):
    """A wrong kind of value or a wrong dtype in a kernel's code."""


_PACKAGE = os.path.dirname(os.path.abspath(__file__))
_CONTEXTLIB = os.path.abspath(contextlib.__file__)


def _internal(filename: str) -> bool:
    path = os.path.abspath(filename)
    return os.path.dirname(path) == _PACKAGE or path == _CONTEXTLIB


def _user_frame():
    """The innermost frame outside this package (and contextlib, which runs the
    `with` blocks)."""
    frame = sys._getframe(1)
    while frame.f_back is not None and _internal(frame.f_code.co_filename):
        frame = frame.f_back
    return frame


def warn(message: str) -> None:
    """A BuildWarning at the user's line, shown once per line as Python's own
    warnings are (not on every build of a kernel, e.g. by an autotuner)."""
    frame = _user_frame()
    module_globals = frame.f_globals
    warnings.warn_explicit(
        message,
        BuildWarning,
        frame.f_code.co_filename,
        frame.f_lineno,
        module=module_globals.get("__name__"),
        registry=module_globals.setdefault("__warningregistry__", {}),
        module_globals=module_globals,
    )


def caller() -> SourceLocation:
    """The user's line that asked for the op being built."""
    frame = _user_frame()
    col = 0
    positions = list(frame.f_code.co_positions())
    index = frame.f_lasti // 2
    if 0 <= index < len(positions):
        col = positions[index][2] or 0
    return SourceLocation(frame.f_code.co_filename, frame.f_lineno, col + 1)


def check_dtype(dtype, allowed: Sequence[str], what: str) -> str:
    if dtype not in allowed:
        raise BuildTypeError(
            f"{what}: dtype must be one of {', '.join(allowed)}, got {dtype!r}", caller()
        )
    return dtype


def expect(value, kind: type | tuple, what: str, expected: str):
    if not isinstance(value, kind):
        raise BuildTypeError(f"{what}: expected {expected}, got {type(value).__name__}", caller())
    return value
