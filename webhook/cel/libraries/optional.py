"""CEL optional values (cel-go ``optional_type``, ``cel.OptionalTypes()``, on in Kubernetes since 1.28)::

    <optional>.hasValue() -> bool      <optional>.value() -> T      <optional>.orValue(T) -> T
    <optional>.or(optional) -> optional
    optional.of(T)   optional.none()   optional.ofNonZeroValue(T)     (``SYNTAX_OVERLOADS``)

Kubernetes' ``format.named`` and ``<Format>.validate`` return ``Optional`` values: on the cel-python engine
these, and the optional syntax's (``a.?b``, ``m[?k]``, ``[?x]``, ``{?k: x}``, the ``optMap``/``optFlatMap``
macros, in ``celpython/optionals.py``), are what ``SYNTAX_OVERLOADS`` serves; cel-cpp implements the optional
library and syntax itself, and the cel-expr engine makes library ``Optional`` values cel-cpp optionals
(``celexpr/optionals.py``). ``value()`` on an empty optional is cel-go's error
``optional.none() dereference``. Two optionals are equal when both are empty or both hold equal values. As a
final result an optional converts to ``optional.none()`` or ``optional.of(<value>)`` text.
"""

from __future__ import annotations

import datetime
from typing import Any, Generic, TypeVar

from webhook.cel import semantics
from webhook.cel.libraries.registry import Namespace, Overload, member, namespaced
from webhook.cel.libraries.strings import display
from webhook.errors import CelEvaluationError

T = TypeVar("T")


class Optional(Generic[T]):
    """An optional value: ``Optional.of(value)`` or ``Optional.none()``. ``Optional[T]`` in a library function's
    return annotation says what it holds (the cel-expr engine declares its result type from it)."""

    cel_type_name = "optional_type"
    __slots__ = ("present", "value")

    def __init__(self, value: Any, *, present: bool) -> None:
        self.value = value
        self.present = present

    @classmethod
    def of(cls, value: Any) -> Optional[Any]:
        """An optional holding ``value``."""
        return cls(value, present=True)

    @classmethod
    def none(cls) -> Optional[Any]:
        """The empty optional."""
        return cls(None, present=False)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Optional) or self.present != other.present:
            return False
        return not self.present or semantics.cel_equals(self.value, other.value)

    def __hash__(self) -> int:
        return hash(self.present)

    def __str__(self) -> str:
        return f"optional.of({display(self.value)})" if self.present else "optional.none()"


def has_value(optional: Optional[Any]) -> bool:
    """``opt.hasValue()``."""
    return optional.present


def value(optional: Optional[Any]) -> Any:
    """``opt.value()``; error ``optional.none() dereference`` when empty."""
    if not optional.present:
        raise CelEvaluationError("optional.none() dereference")
    return optional.value


def or_value(optional: Optional[Any], default: Any) -> Any:
    """``opt.orValue(default)``: the value, or ``default`` when empty."""
    return optional.value if optional.present else default


_T = Optional.cel_type_name


def or_optional(optional: Optional[Any], other: Optional[Any]) -> Optional[Any]:
    """``opt.or(other)``: ``opt`` when it holds a value, else ``other``."""
    if not isinstance(other, Optional):
        raise TypeError("or")
    return optional if optional.present else other


def of(_: Namespace, value: Any) -> Optional[Any]:
    """``optional.of(value)``."""
    return Optional.of(value)


def none(_: Namespace) -> Optional[Any]:
    """``optional.none()``."""
    return Optional.none()


def of_non_zero_value(_: Namespace, value: Any) -> Optional[Any]:
    """``optional.ofNonZeroValue(value)``: empty for the zero value of its type (cel-go's ``IsZeroValue``: ``0``,
    ``0u``, ``0.0``, ``false``, ``''``, ``b''``, ``[]``, ``{}``, ``null``, a zero duration, and Go's zero time
    ``0001-01-01T00:00:00Z`` in any offset, not the Unix epoch), else ``of``."""
    found = semantics.kind(value)
    zero = value == ZERO_TIME if found == "timestamp" else value is None or (found in _ZERO_KINDS and not value)
    return Optional.none() if zero else Optional.of(value)


#: Go's zero ``time.Time``, the zero timestamp of cel-go (``IsZero``).
ZERO_TIME = datetime.datetime(1, 1, 1, tzinfo=datetime.UTC)
_ZERO_KINDS = frozenset({"bool", "int", "uint", "double", "string", "bytes", "list", "map", "duration"})
NAMESPACE = Namespace("optional")
SYNTAX_OVERLOADS: tuple[Overload, ...] = (
    member("hasValue", has_value, _T),
    member("value", value, _T),
    namespaced("optional", "of", of, "dyn"),
    namespaced("optional", "none", none),
    namespaced("optional", "ofNonZeroValue", of_non_zero_value, "dyn"),
    member("or", or_optional, _T, _T),
    member("orValue", or_value, _T, "dyn"),
)
