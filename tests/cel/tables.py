"""The CEL case tables of tests/data/cel/*.yaml, shared by the table test and the two-backend test."""

from __future__ import annotations

from typing import Any

from tests import tables

TABLES = tables.DATA / "cel"
KNOWN = TABLES / "known_differences.yaml"  # not a table: the documented cel-python / cel-expr differences


def rows() -> dict[str, dict[str, Any]]:
    """Every row of every table, keyed by its test id ``<table>: <why>``."""
    found: dict[str, dict[str, Any]] = {}
    for table in sorted(TABLES.glob("*.yaml")):
        if table != KNOWN:
            found.update({f"{table.stem}: {row['why']}": row for row in tables.load(table)})
    return found


def strict(value: Any) -> Any:
    """``value`` with its Python type attached at every level, so that ``1 != 1.0 != True``."""
    if isinstance(value, list):
        return ("list", [strict(item) for item in value])
    if isinstance(value, dict):
        return ("dict", {key: strict(item) for key, item in value.items()})
    return (type(value).__name__, value)
