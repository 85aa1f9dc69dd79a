"""The data-driven CEL tables of tests/data/cel/*.yaml: one row = one expression and its expected outcome.

A row has ``why`` (the test id), ``expression``, optional ``variables`` (JSON-shaped values), and either
``expected`` (the plain-Python result) or ``error`` (a substring of the message) with ``phase`` ``compile``
or ``evaluate`` (default). Expected values come from the Kubernetes / cel-go semantics. The rows run here on
cel-python; test_backends_agree.py requires cel-expr to give the same answers, except the rows listed in
tests/data/cel/known_differences.yaml.
"""

from __future__ import annotations

from typing import Any

import pytest

from webhook.cel import evaluate
from webhook.errors import CelCompileError, CelError, CelEvaluationError, CostLimitExceeded

from .tables import rows, strict

PHASES: dict[str, type[CelError]] = {
    "compile": CelCompileError,
    "evaluate": CelEvaluationError,
    "cost": CostLimitExceeded,
}


ROWS = rows()
ENGINE = "cel-python"


@pytest.mark.parametrize("row", ROWS.values(), ids=ROWS.keys())
def test_row(row: dict[str, Any]) -> None:
    expression, variables = row["expression"], row.get("variables")
    if "error" in row:
        with pytest.raises(PHASES[row.get("phase", "evaluate")]) as raised:
            evaluate(expression, variables, engine=ENGINE)
        assert row["error"] in str(raised.value)
    else:
        assert strict(evaluate(expression, variables, engine=ENGINE)) == strict(row["expected"])
