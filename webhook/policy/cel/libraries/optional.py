"""CEL optional values (cel-go ``optional_type``, ``cel.OptionalTypes()``, on in Kubernetes since 1.28)::

    <optional>.hasValue() -> bool      <optional>.value() -> T      <optional>.orValue(T) -> T
    <optional>.or(optional) -> optional
    optional.of(T)   optional.none()   optional.ofNonZeroValue(T)     (``SYNTAX_OVERLOADS``)

Kubernetes' ``format.named`` and ``<Format>.validate`` return ``Optional`` values (``OVERLOADS``, both engines).
cel-cpp implements the optional library and syntax itself, so ``SYNTAX_OVERLOADS`` (and the syntax:
``a.?b``, ``m[?k]``, ``[?x]``, ``{?k: x}``, the ``optMap``/``optFlatMap`` macros, in
``celpython/optionals.py``) are the cel-python engine's. ``value()`` on an empty optional is cel-go's error
``optional.none() dereference``. Two optionals are equal when both are empty or both hold equal values. As a
final result an optional converts to ``optional.none()`` or ``optional.of(<value>)`` text.
"""

from __future__ import annotations

from typing import Any

from webhook.errors import CelEvaluationError
from webhook.policy.cel import semantics
from webhook.policy.cel.libraries.registry import Namespace, Overload, member, namespaced
from webhook.policy.cel.libraries.strings import display


class Optional:
    """An optional value: ``Optional.of(value)`` or ``Optional.none()``."""

    cel_type_name = "optional_type"
    __slots__ = ("present", "value")

    def __init__(self, value: Any, *, present: bool) -> None:
        self.value = value
        self.present = present

    @classmethod
    def of(cls, value: Any) -> Optional:
        """An optional holding ``value``."""
        return cls(value, present=True)

    @classmethod
    def none(cls) -> Optional:
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


def has_value(optional: Optional) -> bool:
    """``opt.hasValue()``."""
    return optional.present


def value(optional: Optional) -> Any:
    """``opt.value()``; error ``optional.none() dereference`` when empty."""
    if not optional.present:
        raise CelEvaluationError("optional.none() dereference")
    return optional.value


def or_value(optional: Optional, default: Any) -> Any:
    """``opt.orValue(default)``: the value, or ``default`` when empty."""
    return optional.value if optional.present else default


_T = Optional.cel_type_name
OVERLOADS: tuple[Overload, ...] = (
    member("hasValue", has_value, _T),
    member("value", value, _T),
    # One overload per kind a library optional holds (format.named, <Format>.validate): cel-cpp never matches a
    # dyn parameter here once its own optional library is registered.
    member("orValue", or_value, _T, "list"),
    member("orValue", or_value, _T, "kubernetes.NamedFormat"),
)


def or_optional(optional: Optional, other: Optional) -> Optional:
    """``opt.or(other)``: ``opt`` when it holds a value, else ``other``."""
    if not isinstance(other, Optional):
        raise TypeError("or")
    return optional if optional.present else other


def of(_: Namespace, value: Any) -> Optional:
    """``optional.of(value)``."""
    return Optional.of(value)


def none(_: Namespace) -> Optional:
    """``optional.none()``."""
    return Optional.none()


def of_non_zero_value(_: Namespace, value: Any) -> Optional:
    """``optional.ofNonZeroValue(value)``: empty for the zero value of its type (``0``, ``0u``, ``0.0``,
    ``false``, ``''``, ``b''``, ``[]``, ``{}``, ``null``, a zero duration), else ``of``."""
    if value is None or (semantics.kind(value) in _ZERO_KINDS and not value):
        return Optional.none()
    return Optional.of(value)


_ZERO_KINDS = frozenset({"bool", "int", "uint", "double", "string", "bytes", "list", "map", "duration"})
NAMESPACE = Namespace("optional")
SYNTAX_OVERLOADS: tuple[Overload, ...] = (
    namespaced("optional", "of", of, "dyn"),
    namespaced("optional", "none", none),
    namespaced("optional", "ofNonZeroValue", of_non_zero_value, "dyn"),
    member("or", or_optional, _T, _T),
    member("orValue", or_value, _T, "dyn"),
)
