"""Conversion between JSON-shaped Python values and cel-python's CEL values (``celpy.celtypes``).

``to_cel`` is applied once per request to the admission objects; ``to_python`` turns a result back into plain
JSON-able Python; ``normalise`` turns what a library function returns (plain ``str``, ``int``, ``list``, ...)
into CEL values, leaving library values (Semver, Quantity, IP, ...) as they are.
"""

from __future__ import annotations

import base64
import datetime
from collections.abc import Callable, Mapping
from typing import Any

from celpy import celtypes

from webhook.errors import CelEvaluationError

_INT64 = range(-(2**63), 2**63)
_CEL_SCALARS = (
    celtypes.BoolType,
    celtypes.IntType,
    celtypes.UintType,
    celtypes.DoubleType,
    celtypes.StringType,
    celtypes.BytesType,
    celtypes.TimestampType,
    celtypes.DurationType,
)


def to_cel(value: object) -> object:
    """A JSON-shaped value (dict/list/str/int/float/bool/None; also datetime/timedelta) as a CEL value.

    Raises ``CelEvaluationError`` for an int outside int64 or a value of another type (its path is named).
    """
    return _convert(value, strict=True, path="$")


def normalise(value: object) -> object:
    """Like ``to_cel`` but lets library values through and leaves values that already are CEL values alone."""
    return _convert(value, strict=False, path="$")


class _BadValue(Exception):
    """Raised inside ``_convert`` and given its path on the way out, so paths cost nothing when all is well."""

    def __init__(self, message: str, path: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.message, self.path = message, path


def _convert(value: object, *, strict: bool, path: str) -> object:
    try:
        return _node(value, strict)
    except _BadValue as bad:
        raise CelEvaluationError(f"{path}{''.join(reversed(bad.path))}: {bad.message}") from None


def _node(value: object, strict: bool) -> object:
    # Exact JSON types first (the common case), by identity of their type; CEL values and subclasses after.
    kind = type(value)
    if kind is str:
        return str.__new__(celtypes.StringType, value)
    if kind is dict:
        return _map(value, strict)  # type: ignore[arg-type]
    if kind is list:
        return _list(value, strict)  # type: ignore[arg-type]
    if kind is bool:
        return celtypes.BoolType(value)
    if kind is int:
        return _int(value)  # type: ignore[arg-type]
    if kind is float:
        return float.__new__(celtypes.DoubleType, value)  # type: ignore[arg-type]
    if value is None or isinstance(value, _CEL_SCALARS):
        return value
    if isinstance(value, bool):
        return celtypes.BoolType(value)
    if isinstance(value, int):
        return _int(value)
    if isinstance(value, float):
        return float.__new__(celtypes.DoubleType, value)
    if isinstance(value, str):
        return str.__new__(celtypes.StringType, value)
    if isinstance(value, bytes):
        return celtypes.BytesType(value)
    if isinstance(value, list | tuple):
        if isinstance(value, celtypes.ListType) and not strict:
            return value
        return _list(value, strict)
    if isinstance(value, Mapping):
        if isinstance(value, celtypes.MapType) and not strict:
            return value
        return _map(value, strict)
    if isinstance(value, datetime.datetime):
        aware = value if value.tzinfo else value.replace(tzinfo=datetime.UTC)
        return celtypes.TimestampType(aware)
    if isinstance(value, datetime.timedelta):
        return celtypes.DurationType(value)
    if strict:
        raise _BadValue(f"a {type(value).__name__} is not a JSON value")
    return value


def _int(value: int) -> celtypes.IntType:
    if value not in _INT64:
        raise _BadValue(f"integer overflow: {value} is outside the int64 range")
    return int.__new__(celtypes.IntType, value)


def _list(value: list[Any] | tuple[Any, ...], strict: bool) -> celtypes.ListType:
    items: list[Any] = []
    for index, item in enumerate(value):
        try:
            items.append(_node(item, strict))
        except _BadValue as bad:
            bad.path += (f"[{index}]",)
            raise
    return celtypes.ListType(items)


def _map(value: Mapping[Any, Any], strict: bool) -> celtypes.MapType:
    converted = celtypes.MapType()
    for key, item in value.items():
        try:
            # dict.__setitem__: MapType's own __init__ re-checks every pair; JSON keys are unique already.
            dict.__setitem__(converted, _node(key, strict), _node(item, strict))  # type: ignore[misc]
        except _BadValue as bad:
            bad.path += (f".{key}",)
            raise
    return converted


def cel_int(value: int, path: str = "$") -> celtypes.IntType:
    """``value`` as a CEL int; ``CelEvaluationError`` ``integer overflow`` outside int64."""
    if value not in _INT64:
        raise CelEvaluationError(f"{path}: integer overflow: {value} is outside the int64 range")
    return int.__new__(celtypes.IntType, value)


def untyped(value: object, leaf: Callable[[object], object]) -> object:
    """``value`` with the ``celtypes`` subclasses of bool, int, double, string, list and map stripped to their
    Python base types (recursively, map keys too); anything else is handed to ``leaf``."""
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, celtypes.BoolType):
        return bool(value)
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    if isinstance(value, str):
        return str(value)
    if isinstance(value, list):
        return [untyped(item, leaf) for item in value]
    if isinstance(value, Mapping):
        return {untyped(key, leaf): untyped(item, leaf) for key, item in value.items()}
    return leaf(value)


def to_python(value: object) -> Any:
    """A CEL value as plain JSON-able Python.

    bool/int/uint/double/string/null/list/map map to their Python twins (map keys stay as they are);
    bytes become base64 text (as cel-go's JSON conversion does); timestamps RFC 3339 text
    (``2024-01-02T03:04:05Z``); durations seconds text (``3600s``, ``1.5s``); type values their CEL name;
    library values (semver, quantity, IP, CIDR, URL, ...) their canonical string form (``str``).
    """
    return untyped(value, _json_leaf)


def _json_leaf(value: object) -> str:
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    if isinstance(value, datetime.datetime):
        return format_timestamp(value)
    if isinstance(value, datetime.timedelta):
        return format_duration(value)
    if isinstance(value, type):
        return type_name(value)
    return str(value)


def format_timestamp(value: datetime.datetime) -> str:
    """RFC 3339 in UTC with ``Z`` and only as many fractional digits as needed (as cel-go prints)."""
    return timestamp_string(value.astimezone(datetime.UTC))


def timestamp_string(value: datetime.datetime) -> str:
    """``string(timestamp)`` as cel-go gives it (Go's RFC 3339 with nanoseconds, recorded from kube-apiserver 1.32):
    in the timestamp's own offset (``Z`` for UTC, ``+02:00``...) with only as many fractional digits as needed."""
    text = f"{value.year:04d}-{value:%m-%dT%H:%M:%S}"  # strftime's %Y does not pad years before 1000
    if value.microsecond:
        text += f".{value.microsecond:06d}".rstrip("0")
    offset = value.utcoffset()
    if not offset:
        return text + "Z"
    minutes = int(abs(offset).total_seconds()) // 60
    return f"{text}{'-' if offset < datetime.timedelta(0) else '+'}{minutes // 60:02d}:{minutes % 60:02d}"


def format_duration(value: datetime.timedelta) -> str:
    """Seconds with a trailing ``s`` and fractional digits needed: ``3600s``, ``1.5s``, ``-1.25s`` (cel-go's
    ``string(duration)`` too)."""
    micros = (value.days * 86_400 + value.seconds) * 1_000_000 + value.microseconds
    sign = "-" if micros < 0 else ""
    seconds, fraction = divmod(abs(micros), 1_000_000)
    text = f"{sign}{seconds}"
    if fraction:
        text += f".{fraction:06d}".rstrip("0")
    return text + "s"


_TYPE_NAMES: dict[type, str] = {
    celtypes.BoolType: "bool",
    celtypes.IntType: "int",
    celtypes.UintType: "uint",
    celtypes.DoubleType: "double",
    celtypes.StringType: "string",
    celtypes.BytesType: "bytes",
    celtypes.ListType: "list",
    celtypes.MapType: "map",
    celtypes.TimestampType: "google.protobuf.Timestamp",
    celtypes.DurationType: "google.protobuf.Duration",
    type(None): "null_type",
}


def type_name(value: type) -> str:
    """The CEL name of a type value (``int``, ``list``, ...); library types by their class name."""
    return _TYPE_NAMES.get(value, getattr(value, "cel_type_name", value.__name__))
