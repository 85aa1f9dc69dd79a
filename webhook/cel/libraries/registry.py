"""Declarations of CEL functions: name, call form, parameter kinds, implementation, portability.

An ``Overload`` says: the function ``name`` called as a member (``receiver.name(args)``) or globally
(``name(args)``), with parameters of these kinds (the receiver first), is implemented by this pure Python
function. Kinds are those of ``semantics.kind`` (``string``, ``list``, ``int``, ..., a library type's
``cel_type_name``, a namespace's ``namespace:<name>``) or ``dyn`` for any. The backend dispatches a call to
the first overload whose kinds match; the checker uses the declarations for undeclared names and arity.
Implementations raise ``webhook.errors.CelEvaluationError`` with cel-go's message for a CEL error and
``TypeError`` when they do not apply; they may return plain Python values (the backend converts them).

A library value class (``Semver``, ``IP``, ``Format``, ...) names its CEL type in ``cel_type_name`` and must
survive a round trip through text, because the cel-expr backend carries library values as messages holding
it: the text is ``str(value)``, or ``value.equality_text()`` where ``==`` ignores part of it, and is turned
back by the library's global one-string function returning the class, or the class's ``from_text`` where the
library has no such function (``celexpr/types.py``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

Implementation = Callable[..., Any]


@dataclass(frozen=True)
class Overload:
    """One signature of a CEL function. ``portable`` is False for extensions the apiserver lacks; ``snapshot``: it
    returns objects of the cluster snapshot (a map, or a list of maps), which are never changed once stored, so a
    backend may keep its conversion of each by identity."""

    name: str
    params: tuple[str, ...]
    implementation: Implementation
    member: bool
    portable: bool = True
    snapshot: bool = False

    @property
    def arity(self) -> int:
        """Number of arguments inside the parentheses (the receiver of a member call excluded)."""
        return len(self.params) - 1 if self.member else len(self.params)

    def accepts(self, kinds: Sequence[str]) -> bool:
        """True if arguments of ``kinds`` (``semantics.kind``, the receiver first) fit the parameters."""
        return len(kinds) == len(self.params) and all(
            param in ("dyn", found) for param, found in zip(self.params, kinds, strict=True)
        )


def member(name: str, implementation: Implementation, *params: str, portable: bool = True) -> Overload:
    """A member overload ``params[0].name(params[1:])``."""
    return Overload(name, params, implementation, member=True, portable=portable)


def function(name: str, implementation: Implementation, *params: str, portable: bool = True) -> Overload:
    """A global overload ``name(params)``."""
    return Overload(name, params, implementation, member=False, portable=portable)


def namespaced(
    namespace: str,
    name: str,
    implementation: Implementation,
    *params: str,
    portable: bool = True,
    snapshot: bool = False,
) -> Overload:
    """A namespaced overload ``namespace.name(params)`` (a member call on the namespace object)."""
    return Overload(
        name, (f"namespace:{namespace}", *params), implementation, member=True, portable=portable, snapshot=snapshot
    )


class Namespace:
    """The value bound to a namespace name (``sets``, ``strings``, ``ip``, ...) so that
    ``sets.contains(a, b)`` is a member call on it; its kind is ``namespace:<name>``. Subclasses carry
    per-request data."""

    __slots__ = ("cel_type_name", "name")

    def __init__(self, name: str) -> None:
        self.name = name
        self.cel_type_name = f"namespace:{name}"

    def __str__(self) -> str:
        return self.name


def plain(value: Any) -> Any:
    """``value`` with CEL maps, lists and strings as plain ``dict``, ``list`` and ``str``, for implementations
    over JSON-shaped Python (cel-python's map type raises on ``get`` of a missing key)."""
    kind = type(value)
    if kind is str or kind is bool or kind is int or value is None:  # the common leaves, without an ABC check
        return value
    if kind is dict or isinstance(value, Mapping):
        return {str(key): plain(item) for key, item in value.items()}
    if isinstance(value, list):
        return [plain(item) for item in value]
    return str(value) if isinstance(value, str) else value
