"""The data-driven CEL tables of tests/data/cel/*.yaml: one row = one expression and its expected outcome.

A row has ``why`` (the test id), ``expression``, optional ``variables`` (JSON-shaped values), and either
``expected`` (the plain-Python result) or ``error`` (a substring of the message) with ``phase`` ``compile``
or ``evaluate`` (default). Expected values come from the Kubernetes / cel-go semantics.
"""

from __future__ import annotations

from typing import Any

import pytest

from webhook.errors import CelCompileError, CelError, CelEvaluationError, CostLimitExceeded
from webhook.policy.cel import evaluate

from .tables import rows, strict

PHASES: dict[str, type[CelError]] = {
    "compile": CelCompileError,
    "evaluate": CelEvaluationError,
    "cost": CostLimitExceeded,
}


ROWS = rows()


@pytest.mark.parametrize("row", ROWS.values(), ids=ROWS.keys())
def test_row(row: dict[str, Any]) -> None:
    expression, variables = row["expression"], row.get("variables")
    if "error" in row:
        with pytest.raises(PHASES[row.get("phase", "evaluate")]) as raised:
            evaluate(expression, variables)
        assert row["error"] in str(raised.value)
    else:
        assert strict(evaluate(expression, variables)) == strict(row["expected"])
