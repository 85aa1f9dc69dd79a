"""The fallback backend (cel-python) for the expressions cel-cpp cannot compile or run: their executables, with
the values of a cel-expr activation as the fallback's values and its results back as cel-expr values."""

from __future__ import annotations

import datetime
from collections.abc import Collection, Iterator, Mapping

from google.protobuf import duration_pb2, timestamp_pb2

from webhook.cel import values as shared_values
from webhook.cel.backend import Backend, Executable, Limits
from webhook.cel.celexpr.types import LibraryTypes
from webhook.cel.celexpr.values import to_expr
from webhook.cel.libraries.registry import Namespace


class Fallback:
    """The fallback backend ``backend``, called ``name`` (its engine, for ``policy lint``), for the cel-expr backend
    whose library values are ``types``."""

    __slots__ = ("backend", "name", "types")

    def __init__(self, name: str, backend: Backend, types: LibraryTypes) -> None:
        self.name, self.backend, self.types = name, backend, types

    def compile(self, source: str, variables: Collection[str], limits: Limits) -> FallbackExecutable:
        """``source`` compiled by the fallback backend (``backend.Backend.compile``, its ``CelCompileError``)."""
        return FallbackExecutable(self, self.backend.compile(source, variables, limits))

    def value(self, value: object) -> object:
        """A value of a cel-expr activation as the fallback backend's value (namespace objects unchanged)."""
        if isinstance(value, Namespace):
            return value
        if isinstance(value, BaseException):  # a variable's error
            return self.backend.error_value(str(value))
        if isinstance(value, Mapping) and not isinstance(value, dict):  # the lazy composited variables
            return _FallbackVariables(self, value)
        return shared_values.normalise(_from_messages(value, self.types))


class FallbackExecutable:
    """An expression cel-cpp cannot parse, compiled by the fallback backend (cel-python): cel-cpp's parser nests
    at most 32 levels (``Exceeded max recursion depth of 32``) where cel-go's, and the apiserver's, allows 250.
    Each evaluation converts the activation to the fallback's values and the result back; ``fallback`` names
    the engine, for ``policy lint``."""

    __slots__ = ("_executable", "_fallback", "estimated_cost", "extensions", "fallback", "result_type")

    def __init__(self, fallback: Fallback, executable: Executable) -> None:
        self._fallback = fallback
        self._executable = executable
        self.extensions = executable.extensions
        self.estimated_cost = executable.estimated_cost
        self.result_type = executable.result_type
        self.fallback = fallback.name

    def evaluate(self, activation: Mapping[str, object]) -> object:
        """See ``backend.Executable.evaluate``."""
        fallback = self._fallback
        converted = {name: fallback.value(value) for name, value in activation.items()}
        return to_expr(_plain(self._executable.evaluate(converted)), fallback.types)


class _FallbackVariables(Mapping[str, object]):
    """The composited ``variables`` of a cel-expr activation, read lazily as fallback values."""

    def __init__(self, fallback: Fallback, variables: Mapping[str, object]) -> None:
        self._fallback, self._variables = fallback, variables

    def __getitem__(self, name: str) -> object:
        value = self._variables[name]
        return self._fallback.value(value)

    def __iter__(self) -> Iterator[str]:
        return iter(self._variables)

    def __len__(self) -> int:
        return len(self._variables)


def _plain(value: object) -> object:
    """A cel-python result as plain Python (``celtypes`` subclasses as their base types), library values kept."""
    return shared_values.untyped(value, lambda leaf: bytes(leaf) if isinstance(leaf, bytes) else leaf)


def _from_messages(value: object, types: LibraryTypes) -> object:
    """A cel-expr value as plain Python: library messages as library values, Timestamp and Duration messages
    as ``datetime``/``timedelta``."""
    if isinstance(value, list):
        return [_from_messages(item, types) for item in value]
    if isinstance(value, dict):
        return {_from_messages(key, types): _from_messages(item, types) for key, item in value.items()}
    if isinstance(value, timestamp_pb2.Timestamp):
        return value.ToDatetime(tzinfo=datetime.UTC)
    if isinstance(value, duration_pb2.Duration):
        return value.ToTimedelta()
    return types.decode(value)
