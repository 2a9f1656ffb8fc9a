"""The wsc dialect's definition: `wsc.irdl.mlir`, an IRDL module loaded at run
time by `wsc.dialect.make_context()`. Installed as the `wsc.dialects` package so
the definition ships with the compiler."""

from pathlib import Path

IRDL_PATH = Path(__file__).with_name("wsc.irdl.mlir")
