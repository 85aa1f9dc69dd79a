"""Which composited variables a policy's one expression alone needs (``specs.exclusive_variables``), and the raw
texts of a spec it is computed from (``specs.texts``)."""

from __future__ import annotations

import pytest

from webhook.cel import Environment
from webhook.policy.loading.specs import exclusive_variables, texts
from webhook.policy.model import Expression, Variable

ANY_PROGRAM = Environment([]).compile("true")  # only the texts matter here


def declared(**expressions: str) -> tuple[Variable, ...]:
    return tuple(Variable(name, Expression(text, ANY_PROGRAM)) for name, text in expressions.items())


@pytest.mark.parametrize(
    ("variables", "expressions", "exclusive"),
    [
        pytest.param({"a": "1"}, ["variables.a > 0"], {"a"}, id="read by one expression"),
        pytest.param({"a": "1"}, ["variables.a > 0 && variables.a < 9"], {"a"}, id="read twice by one expression"),
        pytest.param({"a": "1"}, ["variables.a > 0", "variables.a < 9"], set(), id="read by two expressions"),
        pytest.param({"a": "1"}, ["true"], set(), id="read by none"),
        pytest.param({"a": "1"}, ["'variables.a' != ''"], set(), id="named inside a string only"),
        pytest.param(
            {"a": "1", "b": "variables.a + 1"}, ["variables.b > 0"], {"a", "b"}, id="read by a variable one needs"
        ),
        pytest.param(
            {"a": "1", "b": "variables.a + 1"},
            ["variables.b > 0", "variables.b < 9"],
            set(),
            id="read by a variable two need",
        ),
        pytest.param(
            {"a": "1", "b": "variables.a + 1"},
            ["variables.b > 0 && variables.a > 0"],
            {"b"},
            id="read by an expression and by a variable",
        ),
    ],
)
def test_a_variable_is_exclusive_when_one_expression_alone_needs_it(
    variables: dict[str, str], expressions: list[str], exclusive: set[str]
) -> None:
    assert exclusive_variables(declared(**variables), expressions) == exclusive


def test_texts_are_read_where_the_spec_has_them_and_skipped_elsewhere() -> None:
    validations = [{"expression": "a"}, {"message": "m"}, "not a mapping", {"expression": 1}, {"expression": "b"}]
    assert texts(validations, "expression") == ["a", "b"]
    assert texts([{"jsonPatch": {"expression": "p"}}, {"jsonPatch": None}], "jsonPatch", "expression") == ["p"]
    assert texts("not a list", "expression") == []
