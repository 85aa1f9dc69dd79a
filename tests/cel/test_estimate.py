"""Load-time cost estimates against the kube-apiserver's own: CRD rules whose estimate it prints, Kubernetes' cost
test figures, and what it does with admission policies whose estimate is huge.

The apiserver refuses a CRD ``x-kubernetes-validations`` rule estimated above 10,000,000 and prints the estimate as
a factor of that limit (``tests/data/oracle/crd_costs.yaml``): with six decimals below 1.5 (to 10 cost units),
one decimal up to 100, ``more than 100x`` beyond. Each rule is estimated here with the shape its schema gives
``self`` and must fall within 10% of the interval the message allows. All rules recorded match exactly today; the
10% leave room for the small changes cel-go makes to a few costs between releases (equality, list appends) while
a wrong macro expansion, size bound or function cost is off by 20% to several times and fails.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from tests import tables
from webhook.cel import Environment
from webhook.cel.environment import backend_named
from webhook.cel.estimate import ADMISSION_VARIABLES, PER_CALL_LIMIT, SATURATED, estimate, from_schema
from webhook.cel.frontend.parser import parse
from webhook.cel.frontend.tree import collapse
from webhook.settings import CEL_ENGINES

#: The apiserver's limit on one CRD rule's estimated cost (``StaticEstimatedCostLimit``).
CRD_RULE_LIMIT = 10_000_000
TOLERANCE = 0.10
NAMESPACES = ("sets", "strings", "lists", "ip", "format", "optional", "jsonpatch")
_FACTOR = re.compile(r"estimated rule cost exceeds budget by factor of (more than 100x|[0-9.]+x)")


def _crd_rows() -> list[Any]:
    recorded = {row["id"]: row for row in tables.load("oracle/crd_costs.yaml")}
    return tables.params([{**case, **recorded[case["id"]]} for case in tables.load("oracle/cost_cases.yaml")], key="id")


def apiserver_bounds(status: int, message: str) -> tuple[float, float]:
    """The interval of estimated costs an answer to a CRD create allows (``math.inf`` above ``more than 100x``)."""
    if status == 201:
        return 0, CRD_RULE_LIMIT
    found = _FACTOR.search(message)
    assert found is not None, message
    factor = found.group(1)
    if factor == "more than 100x":
        return 100 * CRD_RULE_LIMIT, float("inf")
    digits = len(factor.rstrip("x").split(".")[1])
    half = 0.5 * 10**-digits
    value = float(factor.rstrip("x"))
    return (value - half) * CRD_RULE_LIMIT, (value + half) * CRD_RULE_LIMIT


def crd_estimate(rule: str, properties: dict[str, Any]) -> int:
    """Our estimate of ``rule`` on ``spec`` with ``properties``, ``self`` and ``oldSelf`` typed by the schema."""
    shape = from_schema({"type": "object", "properties": properties})
    return estimate(collapse(parse(rule)), {"self": shape, "oldSelf": shape}, NAMESPACES)


@pytest.mark.parametrize("row", _crd_rows())
def test_a_crd_rule_is_estimated_as_the_apiserver_estimates_it(row: dict[str, Any]) -> None:
    low, high = apiserver_bounds(row["status"], row["message"])
    ours = crd_estimate(row["rule"], row["properties"])
    assert low * (1 - TOLERANCE) <= ours <= high * (1 + TOLERANCE), (ours, low, high)
    assert (ours > CRD_RULE_LIMIT) == (row["status"] == 422)


@pytest.mark.parametrize("row", tables.params(tables.load("policy/estimates.yaml")))
def test_an_admission_expression_is_estimated(row: dict[str, Any]) -> None:
    program = Environment(ADMISSION_VARIABLES).compile(row["expression"])
    assert program.estimated_cost == row["cost"]


@pytest.mark.parametrize(
    "expression",
    [
        "object.spec.items.filter(i, i.name.startsWith('a')).map(i, i.name).join(',') != ''",
        "size(" + " + ".join(["object.metadata.name"] * 40) + ") > 0",  # nested deeper than cel-cpp parses
    ],
    ids=["an ordinary expression", "an expression cel-cpp cannot parse"],
)
def test_both_engines_carry_the_same_estimate(expression: str) -> None:
    costs = {
        Environment(ADMISSION_VARIABLES, backend=backend_named(engine)).compile(expression).estimated_cost
        for engine in CEL_ENGINES
    }
    assert len(costs) == 1
    assert costs.pop() > PER_CALL_LIMIT


def test_costs_saturate_as_cel_go_s() -> None:
    nested = "object.a.all(a, object.b.all(b, object.c.all(c, object.d.all(d, true))))"
    assert Environment(ADMISSION_VARIABLES).compile(nested).estimated_cost == SATURATED


@pytest.mark.parametrize("row", tables.params(tables.load("oracle/policy_costs.yaml"), key="kind"))
def test_the_apiserver_creates_admission_policies_whatever_their_estimate(row: dict[str, Any]) -> None:
    """What the loader follows: no refusal of a policy on its estimate (the apiserver's answer is recorded)."""
    assert (row["status"], row["message"]) == (201, "")
    assert Environment(ADMISSION_VARIABLES).compile(row["expression"]).estimated_cost == SATURATED
