"""The wsc ops as `dialects/wsc.irdl.mlir` defines them: each op's operands,
results, required attributes and optional attributes by name, read from the
IRDL definition at import time (the one place that states them)."""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir

from wsc.dialects import IRDL_PATH

#: The key of an irdl.operation's attribute dictionary that declares the
#: op's optional attributes (IRDL declares required ones only), each with its
#: base: UNIT_BASE or INTEGER_BASE.
OPTIONAL_ATTRIBUTES_KEY = "optional_attributes"
UNIT_BASE = "#builtin.unit"
INTEGER_BASE = "#builtin.integer"


@dataclass(frozen=True)
class OpDefinition:
    """One op of the IRDL definition, as the views need it."""

    name: str  # e.g. "wsc.tma_load"
    operands: tuple[str, ...]
    results: tuple[str, ...]
    attributes: tuple[str, ...]  # required: IRDL checks their presence and kind
    #: name -> UNIT_BASE or INTEGER_BASE; the verifier checks these
    optional_attributes: dict[str, str]

    @property
    def fields(self) -> frozenset[str]:
        return frozenset(
            (*self.operands, *self.results, *self.attributes, *self.optional_attributes)
        )


def _names(op: ir.Operation, key: str) -> tuple[str, ...]:
    return tuple(ir.StringAttr(name).value for name in ir.ArrayAttr(op.attributes[key]))


def _read_definitions(text: str) -> dict[str, OpDefinition]:
    definitions = {}
    with ir.Context(), ir.Location.unknown():
        module = ir.Module.parse(text)
        dialect = module.body.operations[0]
        prefix = ir.StringAttr(dialect.attributes["sym_name"]).value
        for node in dialect.regions[0].blocks[0].operations:
            if node.operation.name != "irdl.operation":
                continue
            name = f"{prefix}.{ir.StringAttr(node.attributes['sym_name']).value}"
            parts: dict[str, tuple[str, ...]] = {}
            for part in node.regions[0].blocks[0].operations:
                key = "attributeValueNames" if part.name == "irdl.attributes" else "names"
                if part.name in ("irdl.operands", "irdl.results", "irdl.attributes"):
                    parts[part.name] = _names(part.operation, key)
            optional = {}
            if OPTIONAL_ATTRIBUTES_KEY in node.attributes:
                for entry in ir.DictAttr(node.attributes[OPTIONAL_ATTRIBUTES_KEY]):
                    base = ir.StringAttr(entry.attr).value
                    if base not in (UNIT_BASE, INTEGER_BASE):
                        raise ValueError(f"{name}: optional attribute {entry.name} of base {base}")
                    optional[entry.name] = base
            definitions[name] = OpDefinition(
                name,
                parts.get("irdl.operands", ()),
                parts.get("irdl.results", ()),
                parts.get("irdl.attributes", ()),
                optional,
            )
    return definitions


#: Every op of the dialect, by its full name.
DEFINITIONS: dict[str, OpDefinition] = _read_definitions(IRDL_PATH.read_text())
