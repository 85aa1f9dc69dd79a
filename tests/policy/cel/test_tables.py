"""The data-driven CEL tables of tests/data/cel/*.yaml: one row = one expression and its expected outcome.

A row has ``why`` (the test id), ``expression``, optional ``variables`` (JSON-shaped values), and either
``expected`` (the plain-Python result) or ``error`` (a substring of the message) with ``phase`` ``compile``
or ``evaluate`` (default). Expected values come from the Kubernetes / cel-go semantics.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from webhook.errors import CelCompileError, CelError, CelEvaluationError, CostLimitExceeded
from webhook.policy.cel import evaluate

TABLES = Path(__file__).resolve().parents[2] / "data" / "cel"
PHASES: dict[str, type[CelError]] = {
    "compile": CelCompileError,
    "evaluate": CelEvaluationError,
    "cost": CostLimitExceeded,
}


def _rows() -> list[Any]:
    params = []
    for table in sorted(TABLES.glob("*.yaml")):
        if table.name == "known_differences.yaml":  # not a table: read by test_backends_agree.py
            continue
        for row in yaml.safe_load(table.read_text(encoding="utf-8")):
            params.append(pytest.param(row, id=f"{table.stem}: {row['why']}"))
    return params


def _strict(value: Any) -> Any:
    """``value`` with its Python type attached at every level, so that ``1 != 1.0 != True``."""
    if isinstance(value, list):
        return ("list", [_strict(item) for item in value])
    if isinstance(value, dict):
        return ("dict", {key: _strict(item) for key, item in value.items()})
    return (type(value).__name__, value)


@pytest.mark.parametrize("row", _rows())
def test_row(row: dict[str, Any]) -> None:
    expression, variables = row["expression"], row.get("variables")
    if "error" in row:
        with pytest.raises(PHASES[row.get("phase", "evaluate")]) as raised:
            evaluate(expression, variables)
        assert row["error"] in str(raised.value)
    else:
        assert _strict(evaluate(expression, variables)) == _strict(row["expected"])
