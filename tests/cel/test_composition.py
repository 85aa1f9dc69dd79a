"""Composited variables bound in cel-cpp (``celexpr.composition``): the text written, and evaluations that read
as the apiserver's composited activation does (``composition.go``) whether a variable is bound or read through
Python."""

from __future__ import annotations

from typing import cast

import pytest

from webhook.cel import Environment, Program
from webhook.cel.celexpr.composition import BOUND, VARIABLE_READER, bound_variables, read_variables
from webhook.cel.environment import backend_named
from webhook.cel.libraries.optional import Optional
from webhook.errors import CelCompileError, CelEvaluationError
from webhook.policy.admitting.activation import Activation, LazyVariables
from webhook.policy.model import Expression, Variable
from webhook.settings import CEL_ENGINES

READ = f'{VARIABLE_READER}("{{}}")'


def test_reads_become_reader_calls_or_bound_names_outside_string_literals() -> None:
    text = read_variables("variables.a + variables.b + 'variables.a'", bound={"b"})
    assert text == f"{READ.format('a')} + {BOUND}b + 'variables.a'"


def test_bound_variables_are_bound_in_declaration_order_with_what_they_read() -> None:
    bindable = {"a": "object.x", "b": "variables.a + 1", "c": "variables.b * 2", "unread": "1"}
    text = bound_variables("variables.c > variables.slow", bindable)
    assert text == (
        f"cel.bind({BOUND}a, dyn(object.x), cel.bind({BOUND}b, dyn({BOUND}a + 1), "
        f"cel.bind({BOUND}c, dyn({BOUND}b * 2), {BOUND}c > {READ.format('slow')})))"
    )


def test_a_variable_read_from_python_more_than_once_is_read_once() -> None:
    text = bound_variables("variables.slow.a + variables.slow.b + variables.other", {})
    reader = READ.format("slow")
    assert text == f"cel.bind({BOUND}slow, {reader}, {BOUND}slow.a + {BOUND}slow.b + {READ.format('other')})"


@pytest.mark.parametrize(
    "source",
    [
        pytest.param("variables.slow == 1", id="reads only variables read from Python, once"),
        pytest.param("object.x == 1", id="reads no variable"),
        pytest.param(f"[1].all({BOUND}a, variables.a == 1)", id="writes a bound name itself"),
    ],
)
def test_nothing_is_bound_where_nothing_can_be(source: str) -> None:
    assert bound_variables(source, {"a": "object.x"}) is None


def compiled(
    engine: str,
    source: str,
    variables: dict[str, str],
    *,
    bind: bool,
    lazy: type[LazyVariables] = LazyVariables,
    exclusive: frozenset[str] = frozenset(),
) -> tuple[Program, Activation]:
    """``source`` compiled for ``engine`` with the composited ``variables`` (bound where the engine can, if
    ``bind``; ``exclusive`` ones among them), and an activation of ``object = {spec: {version: 1.0}}`` with those
    variables."""
    backend = backend_named(engine)
    environment = Environment(["object", "variables"], backend=backend)
    definitions: dict[str, Program] = {}
    for name, text in variables.items():
        definitions[name] = environment.compile(text, dict(definitions))
    program = environment.compile(source, definitions if bind else None, exclusive)
    values = Activation({"object": backend.to_cel({"spec": {"version": "1.0"}})}, backend)
    values["variables"] = lazy(
        tuple(Variable(name, Expression(variables[name], p)) for name, p in definitions.items()), values
    )
    return program, values


VARIABLES = {
    "version": "object.spec.version",
    "tagged": "variables.version + '-tag'",
    "u": "1u",
    "bad": "object.missing",
    "slow": "isSemver(variables.version) ? 'semver' : 'loose'",  # a library call: read from Python
}


@pytest.mark.parametrize(
    ("bind", "exclusive"),
    [(True, frozenset()), (True, frozenset({"slow"})), (False, frozenset())],
    ids=["bound", "bound with the library call", "read"],
)
@pytest.mark.parametrize("engine", CEL_ENGINES)
@pytest.mark.parametrize(
    ("source", "expected"),
    [
        pytest.param("variables.tagged + '/' + variables.slow", "1.0-tag/loose", id="bound and read together"),
        pytest.param("true || variables.bad == 1", True, id="a failing variable nobody needs"),
    ],
)
def test_an_expression_reads_its_variables_as_the_apiserver_does(
    engine: str, bind: bool, exclusive: frozenset[str], source: str, expected: object
) -> None:
    program, values = compiled(engine, source, VARIABLES, bind=bind, exclusive=exclusive)
    assert backend_named(engine).to_python(program.evaluate(values)) == expected


@pytest.mark.parametrize("engine", CEL_ENGINES)
def test_a_failing_bound_variable_reads_as_the_composited_error(engine: str) -> None:
    program, values = compiled(engine, "variables.bad == 1", VARIABLES, bind=True)
    with pytest.raises(CelEvaluationError) as error:
        program.evaluate(values)
    assert str(error.value) == 'composited variable "bad" fails to evaluate: no such key: missing'


@pytest.mark.parametrize("engine", CEL_ENGINES)
@pytest.mark.parametrize("source", ["variables.u + 1u == 2u", "type(variables.u) == uint"])
def test_a_bound_uint_stays_a_uint(engine: str, source: str) -> None:
    # (read through Python, cel-cpp gets the int the plain value gives: ``no matching overload for _+_(int64, uint64)``)
    program, values = compiled(engine, source, VARIABLES, bind=True)
    assert backend_named(engine).to_python(program.evaluate(values)) is True


class Reads(LazyVariables):
    """``LazyVariables`` that remember the names read through Python."""

    def __init__(self, variables: tuple[Variable, ...], activation: Activation) -> None:
        super().__init__(variables, activation)
        self.read: list[str] = []

    def __getitem__(self, name: str) -> object:
        self.read.append(name)
        return super().__getitem__(name)


def test_cel_expr_reads_from_python_only_the_variables_that_call_python() -> None:
    program, values = compiled("cel-expr", "variables.tagged + '/' + variables.slow", VARIABLES, bind=True, lazy=Reads)
    assert program.evaluate(values) == "1.0-tag/loose"
    assert cast(Reads, values["variables"]).read == ["slow"]  # ``version`` is bound in ``tagged`` and in ``slow``


@pytest.mark.parametrize("engine", CEL_ENGINES)
def test_a_variable_without_optionals_is_bound_in_an_expression_with_them(engine: str) -> None:
    source = "object.?spec.version.orValue('') + '/' + variables.tagged + '/' + object.?nothing.orValue('none')"
    program, values = compiled(engine, source, VARIABLES, bind=True, lazy=Reads)
    assert program.evaluate(values) == "1.0/1.0-tag/none"
    assert cast(Reads, values["variables"]).read == ([] if engine == "cel-expr" else ["tagged", "version"])


def test_cel_expr_reads_a_variable_from_python_once_per_evaluation() -> None:
    source = "variables.slow + '/' + variables.slow + '/' + variables.tagged"
    program, values = compiled("cel-expr", source, VARIABLES, bind=True, lazy=Reads)
    assert program.evaluate(values) == "loose/loose/1.0-tag"
    assert cast(Reads, values["variables"]).read == ["slow"]


def test_cel_expr_reads_a_variable_once_where_no_variable_can_be_bound() -> None:
    only_python = {  # each calls a library function: nothing is bindable
        "version": "object.spec.version.lowerAscii()",
        "slow": "isSemver(variables.version) ? 'semver' : 'loose'",
    }
    program, values = compiled("cel-expr", "variables.slow + '/' + variables.slow", only_python, bind=True, lazy=Reads)
    assert program.evaluate(values) == "loose/loose"
    assert cast(Reads, values["variables"]).read == ["slow", "version"]  # ``slow`` once, and ``version`` for it


def test_cel_expr_evaluates_an_exclusive_variable_that_calls_python_where_it_is_read() -> None:
    source = "variables.slow + '/' + variables.slow + '/' + variables.tagged"
    program, values = compiled("cel-expr", source, VARIABLES, bind=True, lazy=Reads, exclusive=frozenset({"slow"}))
    assert program.evaluate(values) == "loose/loose/1.0-tag"
    assert cast(Reads, values["variables"]).read == []


def test_cel_expr_reads_an_exclusive_variable_from_python_when_it_fails_in_place() -> None:
    failing = {**VARIABLES, "slow": "isSemver(object.missing) ? 'semver' : 'loose'"}
    program, values = compiled("cel-expr", "variables.slow", failing, bind=True, exclusive=frozenset({"slow"}))
    with pytest.raises(CelEvaluationError) as error:
        program.evaluate(values)
    assert str(error.value) == 'composited variable "slow" fails to evaluate: no such key: missing'


def test_has_on_a_variable_reads_it_and_has_on_its_field_tests_the_field() -> None:
    text = read_variables("has(variables.a) || has( variables . b ) || has(variables.c.d)", bound={"b"})
    assert text == f"([{READ.format('a')}].size() == 1) || ([{BOUND}b].size() == 1) || has({READ.format('c')}.d)"


#: Variables of every kind of outcome for has(): a map, null, a failing one, and typed ones.
PRESENCE = {
    "spec": "object.spec",
    "nothing": "null",
    "bad": "object.missing",
    "labels": "{'tier': 'gold'}",
    "text": "'text'",
    "numbers": "[1, 2]",
}


@pytest.mark.parametrize("bind", [True, False], ids=["bound", "read"])
@pytest.mark.parametrize("engine", CEL_ENGINES)
@pytest.mark.parametrize(
    ("source", "expected"),
    [
        pytest.param("has(variables.spec) && has(variables.nothing)", True, id="a variable that evaluates, null too"),
        pytest.param("has(variables.labels.tier) && !has(variables.labels.other)", True, id="a field of a variable"),
        pytest.param("true || has(variables.bad)", True, id="a failing variable's error is absorbed"),
    ],
)
def test_has_on_a_variable_is_true_once_it_evaluates(engine: str, bind: bool, source: str, expected: bool) -> None:
    # composition.go's lazy.MapValue.Find evaluates the variable for cel-go's presence test (kube-apiserver 1.32
    # decides so: tests/data/oracle/decision_cases.yaml, "has() on a composited variable ...")
    program, values = compiled(engine, source, PRESENCE, bind=bind)
    assert backend_named(engine).to_python(program.evaluate(values)) is expected


@pytest.mark.parametrize("bind", [True, False], ids=["bound", "read"])
@pytest.mark.parametrize("engine", CEL_ENGINES)
def test_has_on_a_failing_variable_is_its_error(engine: str, bind: bool) -> None:
    program, values = compiled(engine, "has(variables.bad)", PRESENCE, bind=bind)
    with pytest.raises(CelEvaluationError) as error:
        program.evaluate(values)
    assert str(error.value) == 'composited variable "bad" fails to evaluate: no such key: missing'


@pytest.mark.parametrize("engine", CEL_ENGINES)
@pytest.mark.parametrize(
    ("source", "message"),
    [
        pytest.param("has(variables.text.x)", "1:4: type 'string' does not support field selection", id="has"),
        pytest.param(
            "variables.numbers.x == 1", "1:18: type 'list(int)' does not support field selection", id="select"
        ),
    ],
)
def test_a_field_of_a_variable_is_typed_by_the_variable(engine: str, source: str, message: str) -> None:
    # kube-apiserver 1.32's messages for such policies (tests/data/oracle/decisions.yaml, "has() on a composited
    # variable is typed by the variable's expression"): has() is reported at its "(", a selection at its "."
    with pytest.raises(CelCompileError) as error:
        compiled(engine, source, PRESENCE, bind=True)
    assert str(error.value) == message


#: Variables whose values are optionals, read by several expressions (so cel-expr reads them through Python).
OPTIONALS = {
    "problems": "format.dns1123Label().validate(object.spec.version)",
    "valid": "format.uuid().validate('123e4567-e89b-12d3-a456-426614174000')",
    "version": "object.?spec.?version",
    "uuid": "format.named('uuid')",
}


@pytest.mark.parametrize("engine", CEL_ENGINES)
@pytest.mark.parametrize(
    ("source", "expected"),
    [
        pytest.param(
            "variables.problems.value()[0] + '/' + variables.problems.value()[0]",
            "must not contain dots/must not contain dots",
            id="a library optional",
        ),
        pytest.param(
            "variables.problems != optional.none() && variables.valid == optional.none()",
            True,
            id="compared with optional.none",
        ),
        pytest.param(
            "variables.version.orValue('') + '/' + variables.version.value()", "1.0/1.0", id="an optional selection"
        ),
        pytest.param("variables.uuid.value().validate('x').hasValue()", True, id="an optional library value"),
    ],
)
def test_a_variable_holding_an_optional_is_read_as_an_optional(engine: str, source: str, expected: object) -> None:
    program, values = compiled(engine, source, OPTIONALS, bind=True)
    assert backend_named(engine).to_python(program.evaluate(values)) == expected


@pytest.mark.parametrize("engine", CEL_ENGINES)
def test_a_variable_holding_an_optional_evaluates_to_one(engine: str) -> None:
    program, values = compiled(engine, "variables.version", OPTIONALS, bind=True)
    assert isinstance(program.evaluate(values), Optional)
