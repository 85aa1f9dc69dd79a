"""CEL optional values (cel-go ``optional_type``) as far as library functions return them::

    <optional>.hasValue() -> bool      <optional>.value() -> T      <optional>.orValue(T) -> T

cel-python has no optional syntax (``a.?b``, ``[?x]``, ``optional.of``); Kubernetes' ``format.named`` and
``<Format>.validate`` return optionals, so they return ``Optional`` values with these three members.
``value()`` on an empty optional is cel-go's error ``optional.none() dereference``. Two optionals are equal
when both are empty or both hold equal values. As a final result an optional converts to
``optional.none()`` or ``optional.of(<value>)`` text.
"""

from __future__ import annotations

from typing import Any

from webhook.errors import CelEvaluationError
from webhook.policy.cel import semantics
from webhook.policy.cel.libraries.registry import Overload, member
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
    member("orValue", or_value, _T, "dyn"),
)
