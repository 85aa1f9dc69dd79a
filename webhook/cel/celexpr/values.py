"""The CEL values of the cel-expr backend: plain Python that cel-expr-python takes as activation data.

A CEL value of this backend is ``None bool int float str bytes list dict datetime timedelta``, a library value
message (``types.LibraryTypes``), a ``TypeValue`` or an ``Optional`` (an optional result, ``optionals.py``).
cel-expr-python converts activation data itself (lazily, once per activation and variable); ``to_expr`` only
validates and copies (ints must fit int64, as in cel-go), encodes library values as their messages and ``Optional``
values as lists of zero or one element (``optionals.py``), and datetimes (naive ones read as UTC) and timedeltas as
``google.protobuf.Timestamp``/``Duration`` messages, the only form its activations take. ``from_expr`` turns
an evaluation result back (``bytearray`` to ``bytes``, ``cel.Type`` to ``TypeValue``); ``decoded`` turns messages into
library values for ``to_python``, the plain, JSON-able rendering of a value. A ``uint`` result becomes a plain ``int``
(cel-expr-python's ``plain_value`` does not keep the distinction).
"""

from __future__ import annotations

import datetime
import itertools
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, cast

from cel_expr_python import cel
from google.protobuf import duration_pb2, timestamp_pb2
from google.protobuf.message import Message

from webhook.cel import values as shared_values
from webhook.cel.libraries.optional import Optional
from webhook.errors import CelEvaluationError

if TYPE_CHECKING:
    from webhook.cel.celexpr.types import LibraryTypes

_INT64 = range(-(2**63), 2**63)
_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)
_PASSED = (str, float, bool, type(None), bytes, Message)
_TYPE_NAMES = {
    "INT": "int",
    "UINT": "uint",
    "DOUBLE": "double",
    "STRING": "string",
    "BOOL": "bool",
    "BYTES": "bytes",
    "NULL": "null_type",
    "TIMESTAMP": "google.protobuf.Timestamp",
    "DURATION": "google.protobuf.Duration",
    "TYPE": "type",
}


class TypeValue:
    """A CEL type as a value (``type(1)``); ``str`` is its CEL name (``int``, ``list``, ``kubernetes.Semver``)."""

    cel_type_name = "type"
    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TypeValue) and other.name == self.name

    def __hash__(self) -> int:
        return hash(self.name)

    def __str__(self) -> str:
        return self.name


def to_expr(value: object, types: LibraryTypes) -> object:
    """``value`` as cel-expr-python activation data or function result. Plain JSON comes back as the same
    objects (nothing to convert, nothing copied); a container with something to convert is copied.

    Raises ``CelEvaluationError`` for an int outside int64 or a value that is no CEL value (its path is named).
    """
    if plain_json(value):  # most objects: one quick look
        return value
    try:
        return _expr(value, types)
    except _BadValue as bad:
        raise CelEvaluationError(f"${''.join(reversed(bad.path))}: {bad.message}") from None


#: The types of the values taken as they are, without a look (``plain_json``).
_LEAVES = frozenset({str, float, bool, type(None)})
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


def plain_json(value: object) -> bool:
    """Whether ``value`` is a dict or a list made of dicts with string keys, lists, strings, floats, booleans,
    ``None`` and ints within int64 only: what ``_expr`` would give back unchanged, found in a loop of a few type tests
    per member."""
    if type(value) is not dict and type(value) is not list:
        return False
    pending: list[Any] = [value]
    while pending:
        container = pending.pop()
        if type(container) is dict:
            for key in container:
                if type(key) is not str:
                    return False
            container = container.values()
        for item in container:
            kind = type(item)
            if kind in _LEAVES:
                continue
            if kind is dict or kind is list:
                pending.append(item)
            elif kind is not int or not _INT64_MIN <= item <= _INT64_MAX:
                return False
    return True


class _BadValue(Exception):
    """Raised inside ``_expr``, gathering its path on the way out, so paths cost nothing when all is well."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message, self.path = message, [""]


def _expr(value: object, types: LibraryTypes) -> object:
    kind = type(value)
    if kind is str or kind is bool or kind is float or value is None:
        return value
    if kind is int or (isinstance(value, int) and not isinstance(value, bool)):
        if value not in _INT64:
            raise _BadValue(f"integer overflow: {value} is outside the int64 range")
        return value
    if isinstance(value, dict | list | tuple):
        return _mapping(value, types) if isinstance(value, dict) else _list(value, types)
    if isinstance(value, Mapping):
        return _mapping(value, types)
    if isinstance(value, _PASSED):
        return value
    if isinstance(value, bytearray):
        return bytes(value)
    if isinstance(value, datetime.datetime):  # cel-expr-python takes timestamps and durations as messages only
        # what Timestamp.FromDatetime gives (a naive time read as UTC), in a third of its time
        since = (value if value.tzinfo else value.replace(tzinfo=datetime.UTC)) - _EPOCH
        return timestamp_pb2.Timestamp(seconds=since.days * 86_400 + since.seconds, nanos=since.microseconds * 1_000)
    if isinstance(value, datetime.timedelta):
        duration = duration_pb2.Duration()
        duration.FromTimedelta(value)
        return duration
    if types.is_library_value(value):
        return types.encode(value)
    if isinstance(value, Optional):  # a list of zero or one element, made an optional again in cel-cpp (optionals.py)
        return [_expr(value.value, types)] if value.present else []
    raise _BadValue(f"a {type(value).__name__} is not a JSON value")


def _list(value: list[object] | tuple[object, ...], types: LibraryTypes) -> object:
    converted: list[object] | None = None if type(value) is list else []
    for index, item in enumerate(value):
        try:
            found = _expr(item, types)
        except _BadValue as bad:
            bad.path.append(f"[{index}]")
            raise
        if converted is None and found is not item:
            converted = list(value[:index])
        if converted is not None:
            converted.append(found)
    return value if converted is None else converted


def _mapping(value: Mapping[object, object], types: LibraryTypes) -> object:
    converted: dict[object, object] | None = None if type(value) is dict else {}
    for index, (key, item) in enumerate(value.items()):
        try:
            found_key, found = _expr(key, types), _expr(item, types)
        except _BadValue as bad:
            bad.path.append(f".{key}")
            raise
        if converted is None and (found is not item or found_key is not key):
            converted = dict(itertools.islice(value.items(), index))
        if converted is not None:
            converted[found_key] = found
    return value if converted is None else converted


_PLAIN = (str, int, float, type(None))


def from_expr(value: Any) -> object:
    """A plain value from cel-expr-python (``Value.plain_value()``) as a CEL value of this backend; plain JSON (most
    results) as it is, since ``plain_value`` builds it anew for each result."""
    if isinstance(value, _PLAIN) or plain_json(value):
        return value
    if isinstance(value, list):
        return [from_expr(item) for item in value]
    if isinstance(value, dict):
        return {from_expr(key): from_expr(item) for key, item in value.items()}
    if isinstance(value, bytearray):
        return bytes(value)
    if isinstance(value, cel.Type):
        return TypeValue(_type_name(value.name()))
    return value


def decoded(value: object, types: LibraryTypes) -> object:
    """``value`` with every library value message (also inside lists, maps and optionals) as its library value."""
    if isinstance(value, Optional):
        return Optional.of(decoded(value.value, types)) if value.present else value
    if isinstance(value, list):
        return [decoded(item, types) for item in value]
    if isinstance(value, dict):
        return {decoded(key, types): decoded(item, types) for key, item in value.items()}
    return types.decode(value)


def to_python(value: object, types: LibraryTypes) -> object:
    """See ``webhook.cel.values.to_python``: the same plain, JSON-able rendering, library values decoded; plain
    JSON (``plain_json``: an evaluation's result, which no one else holds) is not copied."""
    if value is True or value is False or value is None:  # most results: nothing to walk
        return value
    if plain_json(value):
        return value
    return _json(value, types)


def _json(value: object, types: LibraryTypes) -> object:
    """``to_python`` in one walk: plain JSON values (``from_expr`` gives builtin types) are rebuilt as they are,
    anything else (bytes, timestamps, library values...) rendered by ``webhook.cel.values.to_python``."""
    kind = type(value)
    if kind is str or kind is int or kind is bool or kind is float or value is None:
        return value
    if kind is list:
        return [_json(item, types) for item in cast(list[object], value)]
    if kind is dict:
        return {_json(key, types): _json(item, types) for key, item in cast(dict[object, object], value).items()}
    return shared_values.to_python(decoded(value, types))


def _type_name(name: str) -> str:
    """The CEL name of a cel-cpp type name: ``INT`` -> ``int``, ``LIST<DYN>`` -> ``list``, messages as they are."""
    if name in _TYPE_NAMES:
        return _TYPE_NAMES[name]
    return name.partition("<")[0].lower() if "<" in name else name
