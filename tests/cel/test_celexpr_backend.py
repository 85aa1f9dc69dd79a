"""What a cel-expr evaluation carries: only an expression that calls into Python (a library function, or the
reader of ``variables``) runs with a cost budget and its activation; the rest runs in cel-cpp alone."""

from __future__ import annotations

from typing import cast

import pytest

from webhook.cel import Environment, Values
from webhook.cel.celexpr.activations import _CACHED_ACTIVATIONS
from webhook.cel.celexpr.backend import CelExprBackend
from webhook.cel.celexpr.executable import CelExprExecutable
from webhook.cel.environment import backend_named
from webhook.errors import CostLimitExceeded
from webhook.settings import CEL_ENGINES

VARIABLES = ("object", "oldObject", "request", "params", "variables")


@pytest.mark.parametrize(
    ("expression", "calls_python"),
    [
        pytest.param("object.spec.version == '1.2.0' && has(object.spec.approved)", False, id="fields and operators"),
        pytest.param("object.metadata.name.startsWith('a-') && size(object.spec) > 1", False, id="cel-cpp functions"),
        pytest.param("object.spec.items.all(i, i.name != '')", False, id="a macro"),
        pytest.param("'variables.x' != ''", False, id="a string that reads like a variable"),
        pytest.param("isSemver(object.spec.version)", True, id="a library function"),
        pytest.param("object.spec.tags.isSorted()", True, id="a library function as a member"),
        pytest.param("cluster.list('v1', 'ConfigMap').size() > 0", True, id="a namespace function"),
        pytest.param("variables.version != ''", True, id="a composited variable"),
    ],
)
def test_an_expression_calls_python_only_for_library_functions_and_variables(
    expression: str, calls_python: bool
) -> None:
    program = Environment(VARIABLES, backend=backend_named("cel-expr")).compile(expression)
    assert cast(CelExprExecutable, program._executable).calls_python is calls_python


def test_a_library_call_is_still_charged_to_the_evaluation() -> None:
    program = Environment(["xs"], cost_limit=1000, backend=backend_named("cel-expr")).compile(
        "xs.all(x, isSemver('1.0.0'))"
    )
    backend = backend_named("cel-expr")
    with pytest.raises(CostLimitExceeded):
        program.evaluate({"xs": backend.to_cel(list(range(2000)))})


@pytest.mark.parametrize("engine", CEL_ENGINES)
def test_an_activation_evaluated_again_sees_its_changed_values(engine: str) -> None:
    backend = backend_named(engine)
    program = Environment(["object", "variables"], backend=backend).compile("object.spec.version")
    values = Values({"object": backend.to_cel({"spec": {"version": "1.0.0"}}), "variables": {}})
    assert backend.to_python(program.evaluate(values)) == "1.0.0"
    values["variables"] = {}
    assert values.prepared is not None or engine == "cel-python"
    values["object"] = backend.to_cel({"spec": {"version": "2.0.0"}})
    assert values.prepared is None
    assert backend.to_python(program.evaluate(values)) == "2.0.0"


def test_a_policy_without_params_shares_the_activation_of_one_with_params_and_a_null_param_does_not() -> None:
    backend = backend_named("cel-expr")
    request = {"object": backend.to_cel({"spec": {"version": "1.0.0"}})}
    settings = backend.to_cel({"data": {"soak": "1h"}})
    with_params = Environment(["object", "params"], backend=backend).compile("params == null ? 'none' : 'some'")
    without = Environment(["object"], backend=backend).compile("object.spec.version")
    first, second, null = Values({**request, "params": settings}), Values(request), Values({**request, "params": None})
    assert [with_params.evaluate(first), without.evaluate(second), with_params.evaluate(null)] == [
        "some",
        "1.0.0",
        "none",
    ]
    assert second.prepared is first.prepared  # ``object`` converted for cel-cpp once
    assert null.prepared is not first.prepared


def test_the_activations_kept_for_reuse_stay_bounded_with_and_without_params() -> None:
    backend = backend_named("cel-expr")
    program = Environment(["object", "params"], backend=backend).compile("params == null")
    for index in range(3 * _CACHED_ACTIVATIONS):
        program.evaluate(Values({"object": backend.to_cel({"n": index}), "params": backend.to_cel({"p": index})}))
    assert len(cast(CelExprBackend, backend)._activations.entries) <= _CACHED_ACTIVATIONS
