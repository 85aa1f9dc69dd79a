"""The CEL standard functions, declared as ``Overload``s over cel-python's implementations.

Follows the cel-spec standard definitions (``doc/langdef.md``): ``size`` (global and member), the string
tests ``contains startsWith endsWith`` (member), conversions ``int uint double string bytes bool duration
timestamp type`` (global; ``string`` only of the kinds cel-go converts, libraries adding their types) and the
timestamp/duration accessors (member, optional time zone). ``matches`` is declared by the regex library
(``libraries/regex.py``) so that all regular expressions share one cache.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from celpy import celtypes
from celpy import evaluation as celpy_evaluation

from webhook.cel.libraries.registry import Overload, function, member
from webhook.cel.values import format_duration, timestamp_string


def size(value: Any) -> int:
    """Code points of a string, bytes of bytes, entries of a list or map; ``TypeError`` otherwise."""
    if isinstance(value, str | bytes | list | Mapping):
        return len(value)
    raise TypeError("size")


def _accessors() -> list[Overload]:
    overloads: list[Overload] = []
    for name in ("getFullYear", "getMonth", "getDate", "getDayOfMonth", "getDayOfWeek", "getDayOfYear"):
        implementation = getattr(celpy_evaluation, f"function_{name}")
        overloads += [
            member(name, implementation, "timestamp"),
            member(name, implementation, "timestamp", "string"),
        ]
    for name in ("getHours", "getMinutes", "getSeconds", "getMilliseconds"):
        implementation = getattr(celpy_evaluation, f"function_{name}")
        overloads += [
            member(name, implementation, "timestamp"),
            member(name, implementation, "timestamp", "string"),
            member(name, implementation, "duration"),
        ]
    return overloads


#: The kinds ``string()`` converts with cel-python's conversion (cel-go's ``string`` overloads; ``bool``,
#: ``timestamp`` and ``duration`` apart); libraries add their own types.
_STRING_KINDS = ("int", "uint", "double", "string", "bytes")


def bool_to_string(value: Any) -> str:
    """``string(true)`` is ``true`` (cel-python's conversion says ``True``)."""
    return "true" if value else "false"


_CONVERSIONS: dict[str, Any] = {
    "int": celtypes.IntType,
    "uint": celtypes.UintType,
    "double": celtypes.DoubleType,
    "string": celtypes.StringType,
    "bytes": celtypes.BytesType,
    "bool": celtypes.BoolType,
    "duration": celtypes.DurationType,
    "timestamp": celtypes.TimestampType,
    "type": celtypes.TypeType,
}

STANDARD: tuple[Overload, ...] = (
    function("size", size, "dyn"),
    member("size", size, "dyn"),
    member("contains", celpy_evaluation.function_contains, "string", "string"),
    member("startsWith", celpy_evaluation.function_startsWith, "string", "string"),
    member("endsWith", celpy_evaluation.function_endsWith, "string", "string"),
    *(function(name, convert, "dyn") for name, convert in _CONVERSIONS.items() if name != "string"),
    *(function("string", celtypes.StringType, kind) for kind in _STRING_KINDS),
    function("string", bool_to_string, "bool"),
    # cel-python drops fractional seconds (``string(duration('100ms'))`` is ``0s``): cel-go's text instead
    function("string", timestamp_string, "timestamp"),
    function("string", format_duration, "duration"),
    *_accessors(),
)

#: Type names usable as values (``type(x) == int``).
TYPE_VALUES: dict[str, Any] = {
    **{name: convert for name, convert in _CONVERSIONS.items() if name != "type"},
    "list": celtypes.ListType,
    "map": celtypes.MapType,
    "null_type": type(None),
    "type": celtypes.TypeType,
}
