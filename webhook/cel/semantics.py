"""CEL value semantics shared by the operators and the libraries: kinds, equality, ordering.

Follows the cel-spec (``doc/langdef.md`` "Equality" and "Ordering") as Kubernetes configures cel-go:
runtime *heterogeneous* equality (values of different kinds are unequal, never an error; numbers compare by
mathematical value across ``int``, ``uint`` and ``double``, also inside lists and maps) and
``CrossTypeNumericComparisons`` (``1 < 1.5``). Values are cel-python's ``celtypes`` or the plain Python
types they subclass; library types (Semver, Quantity, IP, ...) are "opaque": equal by their own ``__eq__``,
unordered (as in Kubernetes, where only the comparable kinds have ``<``).
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any

from celpy import celtypes

NUMERIC_KINDS = frozenset({"int", "uint", "double"})
ORDERED_KINDS = frozenset({"string", "bytes", "bool", "timestamp", "duration"})

_KIND_BY_TYPE: dict[type, str] = {
    celtypes.BoolType: "bool",
    bool: "bool",
    celtypes.IntType: "int",
    int: "int",
    celtypes.UintType: "uint",
    celtypes.DoubleType: "double",
    float: "double",
    celtypes.StringType: "string",
    str: "string",
    celtypes.BytesType: "bytes",
    bytes: "bytes",
    type(None): "null",
    celtypes.ListType: "list",
    list: "list",
    celtypes.MapType: "map",
    dict: "map",
    celtypes.TimestampType: "timestamp",
    datetime.datetime: "timestamp",
    celtypes.DurationType: "duration",
    datetime.timedelta: "duration",
}
# Subclasses first: BoolType is an int, TimestampType a datetime, MessageType a MapType.
_KIND_BY_BASE: tuple[tuple[type, str], ...] = (
    (celtypes.BoolType, "bool"),
    (bool, "bool"),
    (celtypes.UintType, "uint"),
    (int, "int"),
    (float, "double"),
    (str, "string"),
    (bytes, "bytes"),
    (list, "list"),
    (Mapping, "map"),
    (datetime.datetime, "timestamp"),
    (datetime.timedelta, "duration"),
)


BUILTIN_KINDS = frozenset({*_KIND_BY_TYPE.values(), "type"})


def kind(value: object) -> str:
    """The CEL kind of ``value``: ``bool int uint double string bytes null list map timestamp duration``,
    ``type`` for a type value, and for a library value its ``cel_type_name`` (``kubernetes.Semver``,
    ``net.IP``, ...; ``opaque`` if it has none)."""
    found = _KIND_BY_TYPE.get(type(value))
    if found is not None:
        return found
    if isinstance(value, type):
        return "type"
    for base, name in _KIND_BY_BASE:
        if isinstance(value, base):
            return name
    return str(getattr(value, "cel_type_name", "opaque"))


def is_number(value: object) -> bool:
    """True for ``int``, ``uint`` and ``double`` values (never for ``bool``)."""
    return kind(value) in NUMERIC_KINDS


def _plain_number(value: Any) -> int | float:
    return float(value) if isinstance(value, float) else int(value)


def cel_equals(left: object, right: object) -> bool:
    """CEL ``==`` with heterogeneous equality: different kinds are unequal, numbers compare by value.

    Lists are equal when they have the same length and pairwise-equal elements; maps when they have the
    same keys (numeric keys match across kinds) and equal values. NaN equals nothing.
    """
    left_kind, right_kind = kind(left), kind(right)
    if left_kind in NUMERIC_KINDS and right_kind in NUMERIC_KINDS:
        return _plain_number(left) == _plain_number(right)
    if left_kind != right_kind:
        return False
    if left_kind == "list":
        assert isinstance(left, list) and isinstance(right, list)
        return len(left) == len(right) and all(cel_equals(a, b) for a, b in zip(left, right, strict=True))
    if left_kind == "map":
        assert isinstance(left, Mapping) and isinstance(right, Mapping)
        if len(left) != len(right):
            return False
        for key, value in left.items():
            other_key = find_key(right, key)
            if other_key is _MISSING or not cel_equals(value, right[other_key]):
                return False
        return True
    if left_kind == "bool":
        return bool(left) == bool(right)
    if left_kind not in BUILTIN_KINDS:
        return bool(left == right)
    return bool(left == right)


class _Missing:
    __slots__ = ()


_MISSING: Any = _Missing()


def find_key(mapping: Mapping[Any, Any], key: object) -> Any:
    """The key of ``mapping`` equal to ``key`` in CEL terms (numeric keys match across kinds, ``true`` never
    matches ``1``), or a marker that ``is_missing`` recognises."""
    if kind(key) == "string":
        return key if key in mapping else _MISSING
    for candidate in mapping:  # bool and numeric keys: rare and in small maps
        if cel_equals(candidate, key):
            return candidate
    return _MISSING


def is_missing(value: object) -> bool:
    """True for the marker ``find_key`` returns when the key is absent."""
    return value is _MISSING


def cel_compare(left: object, right: object) -> int | None:
    """-1, 0 or 1 as CEL orders ``left`` and ``right``; ``None`` when unordered (NaN).

    Numbers order across kinds; strings, bytes, bools, timestamps and durations within their kind.
    Anything else raises ``TypeError`` (no such overload).
    """
    left_kind, right_kind = kind(left), kind(right)
    if left_kind in NUMERIC_KINDS and right_kind in NUMERIC_KINDS:
        a, b = _plain_number(left), _plain_number(right)
    elif left_kind == right_kind and left_kind in ORDERED_KINDS:
        a, b = left, right  # type: ignore[assignment]
    else:
        raise TypeError(f"no such overload: {left_kind} < {right_kind}")
    if a < b:
        return -1
    if a > b:
        return 1
    if a == b:
        return 0
    return None
