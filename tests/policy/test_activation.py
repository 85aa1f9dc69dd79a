"""Param objects are converted to CEL once per stored object, across requests (``ParamValues``); an activation
lives as long as its evaluations."""

from __future__ import annotations

import gc
import weakref
from typing import Any

import pytest

from webhook.cel import Environment, backend_named
from webhook.policy.admitting.activation import Activation, ParamValues, bind_variables
from webhook.policy.model import Expression, Variable
from webhook.settings import CEL_ENGINES, DEFAULT_CEL_ENGINE


class Counting:
    """The default backend, counting its conversions."""

    def __init__(self) -> None:
        self.backend = backend_named(DEFAULT_CEL_ENGINE)
        self.converted: list[Any] = []

    def to_cel(self, value: object) -> object:
        self.converted.append(value)
        return self.backend.to_cel(value)


def test_a_stored_param_is_converted_once_and_an_updated_one_again() -> None:
    backend = Counting()
    params = ParamValues(backend)  # type: ignore[arg-type]  # only to_cel is called
    stored = {"data": {"soakPeriod": "24h"}}
    assert params.get(stored) == params.get(stored) == {"data": {"soakPeriod": "24h"}}
    updated = {"data": {"soakPeriod": "48h"}}  # a store replaces the object it updates
    assert params.get(updated) == {"data": {"soakPeriod": "48h"}}
    assert backend.converted == [stored, updated]


def test_the_cache_starts_over_when_full() -> None:
    backend = Counting()
    params = ParamValues(backend)  # type: ignore[arg-type]
    stored = [{"n": index} for index in range(ParamValues.MAX_PARAMS + 1)]
    for param in stored:
        params.get(param)
    params.get(stored[0])
    assert len(backend.converted) == ParamValues.MAX_PARAMS + 2


@pytest.mark.parametrize("engine", CEL_ENGINES)
def test_an_activation_is_freed_when_its_evaluations_end_not_at_the_next_collection(engine: str) -> None:
    backend = backend_named(engine)
    names = ("object", "variables")
    environment = Environment(names, backend=backend)
    variables = (Variable("name", Expression("object.metadata.name", environment.compile("object.metadata.name"))),)
    check = environment.compile("variables.name == 'a'")
    values = Activation({"object": backend.to_cel({"metadata": {"name": "a"}})}, backend)
    bind_variables(values, variables)
    assert backend.to_python(check.evaluate(values)) is True
    freed = weakref.ref(values)
    gc.disable()
    try:
        del values
        assert freed() is None
    finally:
        gc.enable()


def test_the_variables_of_an_evaluation_are_freed_with_it() -> None:
    backend = backend_named("cel-expr")
    environment = Environment(("object", "variables"), backend=backend)
    parts = environment.compile("object.metadata.name.split('-')")  # a library call: read back through Python
    values = Activation({"object": backend.to_cel({"metadata": {"name": "a-b"}})}, backend)
    bind_variables(values, (Variable("parts", Expression("object.metadata.name.split('-')", parts)),))
    assert backend.to_python(environment.compile("variables.parts[1] == 'b'").evaluate(values)) is True
    freed = weakref.ref(values["variables"])
    gc.disable()
    try:
        del values
        assert freed() is None  # no cache of the backend keeps a request's variables
    finally:
        gc.enable()
