"""Differential test: every row of tests/data/cel/*.yaml on both CEL backends, cel-python and cel-expr.

The two must agree: both a value (the same plain-Python value, type-strict) or both an error of the same phase
(compile, evaluate, cost); where the row names an expected error, both messages must contain it. Rows listed in
tests/data/cel/known_differences.yaml (each with the cel-go answer and the reason) must still disagree, so the
list cannot go stale.
"""

from __future__ import annotations

import datetime
from typing import Any

import pytest

from tests import tables
from webhook.cel import extension_bindings
from webhook.cel.backend import Backend
from webhook.cel.environment import Environment, backend_named
from webhook.errors import CelCompileError, CelError, CostLimitExceeded
from webhook.settings import CEL_ENGINES as ENGINES

from .tables import KNOWN, rows, strict

NOW = datetime.datetime(2024, 5, 6, 7, 8, 9, tzinfo=datetime.UTC)


ROWS = rows()
DIFFERENCES = tables.load(KNOWN)
KNOWN_ROWS = {row: difference["cause"] for difference in DIFFERENCES for row in difference["rows"]}


def outcome(backend: Backend, row: dict[str, Any]) -> tuple[str, Any]:
    """``("value", strict plain value)`` or ``(phase, message)`` with phase ``compile``/``evaluate``/``cost``."""
    values = dict(row.get("variables") or {})
    try:
        program = Environment(values, backend=backend).compile(row["expression"])
    except CelCompileError as error:
        return "compile", str(error)
    try:
        activation = {**extension_bindings(None, NOW), **{name: backend.to_cel(v) for name, v in values.items()}}
        return "value", strict(backend.to_python(program.evaluate(activation)))
    except CostLimitExceeded as error:
        return "cost", str(error)
    except CelError as error:
        return "evaluate", str(error)


def agree(row: dict[str, Any], first: tuple[str, Any], second: tuple[str, Any]) -> bool:
    """Same kind of outcome, equal values, and both errors containing the row's expected error text."""
    if first[0] != second[0]:
        return False
    if first[0] == "value":
        return bool(first[1] == second[1])
    return "error" not in row or (row["error"] in first[1] and row["error"] in second[1])


def test_known_differences_name_existing_rows_and_all_answers() -> None:
    assert set(KNOWN_ROWS) <= set(ROWS), sorted(set(KNOWN_ROWS) - set(ROWS))
    for difference in DIFFERENCES:
        assert {"cause", "rows", "cel-python", "cel-expr", "cel-go", "why"} <= set(difference), difference["cause"]


@pytest.mark.parametrize("row_id", ROWS)
def test_backends_agree(row_id: str) -> None:
    row = ROWS[row_id]
    first, second = (outcome(backend_named(name), row) for name in ENGINES)
    if row_id in KNOWN_ROWS:
        assert not agree(row, first, second), f"now agrees: remove it from {KNOWN.name} ({KNOWN_ROWS[row_id]})"
    else:
        assert agree(row, first, second), f"{ENGINES[0]}: {first}\n{ENGINES[1]}: {second}"
