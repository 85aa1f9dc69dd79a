"""Param objects are converted to CEL once per stored object, across requests (``ParamValues``)."""

from __future__ import annotations

from typing import Any

from webhook.policy.activation import ParamValues
from webhook.policy.cel import backend_named
from webhook.settings import DEFAULT_CEL_ENGINE


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
