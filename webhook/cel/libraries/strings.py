"""cel-go's strings extension, version 2 as Kubernetes enables it (``ext/strings.go``), and ``strings.quote``.

Member functions on ``string`` (``list`` for ``join``)::

    charAt(int) -> string            indexOf(string[, int]) -> int      lastIndexOf(string[, int]) -> int
    lowerAscii() -> string           upperAscii() -> string             replace(string, string[, int]) -> string
    split(string[, int]) -> list     substring(int[, int]) -> string    trim() -> string
    <list<string>>.join([string])    format(list) -> string             strings.quote(string) -> string

Indices count code points; an index outside the string is the error ``index out of range: N``. ``format``
supports ``%s %d %f %e %b %o %x %X %%`` with an optional precision (``%.2f``).
"""

from __future__ import annotations

import math
from typing import Any

from webhook.cel import semantics
from webhook.cel.libraries.registry import Namespace, Overload, member, namespaced
from webhook.errors import CelEvaluationError

NAMESPACE = Namespace("strings")


def _out_of_range(position: int) -> CelEvaluationError:
    return CelEvaluationError(f"index out of range: {position}")


def char_at(text: str, position: int) -> str:
    """The code point at ``position`` as a string; ``''`` at the end; error beyond."""
    if not 0 <= position <= len(text):
        raise _out_of_range(position)
    return text[position : position + 1]


def index_of(text: str, sub: str, offset: int = 0) -> int:
    """First code-point index of ``sub`` at or after ``offset``, or -1 (also for an offset at or past the end,
    as cel-go does since v0.22); a negative offset is out of range."""
    if sub == "":
        return offset
    if offset < 0:
        raise _out_of_range(offset)
    return text.find(sub, offset) if offset < len(text) else -1


def last_index_of(text: str, sub: str, offset: int | None = None) -> int:
    """Last code-point index of ``sub`` starting at or before ``offset`` (default: the end), or -1 (also for an
    offset at or past the end, as cel-go does since v0.22); a negative offset is out of range."""
    if sub == "":
        return len(text) if offset is None else offset
    if offset is None:
        return text.rfind(sub)
    if offset < 0:
        raise _out_of_range(offset)
    return text.rfind(sub, 0, offset + len(sub)) if offset < len(text) else -1


def _map_ascii(text: str, upper: bool) -> str:
    source, target = ("abcdefghijklmnopqrstuvwxyz", "ABCDEFGHIJKLMNOPQRSTUVWXYZ")
    table = str.maketrans(source, target) if upper else str.maketrans(target, source)
    return text.translate(table)


def lower_ascii(text: str) -> str:
    """``text`` with ASCII letters lowered; other characters unchanged."""
    return _map_ascii(text, upper=False)


def upper_ascii(text: str) -> str:
    """``text`` with ASCII letters raised; other characters unchanged."""
    return _map_ascii(text, upper=True)


def replace(text: str, old: str, new: str, limit: int = -1) -> str:
    """``text`` with the first ``limit`` (all when negative) occurrences of ``old`` replaced by ``new``."""
    return text.replace(old, new, limit if limit >= 0 else -1)


def split(text: str, separator: str, limit: int = -1) -> list[str]:
    """Go's ``strings.SplitN``: at most ``limit`` parts (all when negative, none when 0)."""
    if limit == 0:
        return []
    if separator == "":
        parts = list(text)
        if 0 < limit < len(parts):
            parts = [*parts[: limit - 1], "".join(parts[limit - 1 :])]
        return parts
    return text.split(separator, limit - 1 if limit > 0 else -1)


def substring(text: str, start: int, end: int | None = None) -> str:
    """Code points ``[start, end)``; errors for indices outside ``[0, len]`` or ``start > end``."""
    stop = len(text) if end is None else end
    if not 0 <= start <= len(text):
        raise _out_of_range(start)
    if not 0 <= stop <= len(text):
        raise _out_of_range(stop)
    if start > stop:
        raise CelEvaluationError(f"invalid substring range. start: {start}, end: {stop}")
    return text[start:stop]


#: Go's ``unicode.IsSpace`` (Unicode's White_Space property), which cel-go's ``trim`` strips: Python's ``str.strip``
#: also strips the separator controls U+001C-U+001F.
_WHITE_SPACE = "\t\n\v\f\r \x85\xa0\u1680" + "".join(map(chr, range(0x2000, 0x200B))) + "\u2028\u2029\u202f\u205f\u3000"


def trim(text: str) -> str:
    """``text`` without leading and trailing Unicode white space (``_WHITE_SPACE``)."""
    return text.strip(_WHITE_SPACE)


def join(items: list[Any], separator: str = "") -> str:
    """The strings of ``items`` joined with ``separator``; a non-string element is no such overload."""
    if not all(isinstance(item, str) for item in items):
        raise TypeError("join")
    return separator.join(items)


_QUOTE_ESCAPES = {"\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\v": "\\v"}


def quote(_namespace: Namespace, text: str) -> str:
    """``strings.quote``: ``text`` in double quotes with backslash, quote and control characters escaped."""
    escaped = text.replace("\\", "\\\\").replace('"', '\\"')
    return '"' + "".join(_QUOTE_ESCAPES.get(char, char) for char in escaped) + '"'


def format_string(template: str, arguments: list[Any]) -> str:
    """``template.format(arguments)``: printf-style verbs ``%s %d %f %e %b %o %x %X %%`` (``%.Nf``)."""
    out: list[str] = []
    position, used = 0, 0
    while position < len(template):
        char = template[position]
        position += 1
        if char != "%":
            out.append(char)
            continue
        precision: int | None = None
        if position < len(template) and template[position] == ".":
            digits_end = position + 1
            while digits_end < len(template) and template[digits_end].isdigit():
                digits_end += 1
            precision = int(template[position + 1 : digits_end] or "0")
            position = digits_end
        if position >= len(template):
            raise CelEvaluationError("format: unterminated format verb")
        verb = template[position]
        position += 1
        if verb == "%":
            out.append("%")
            continue
        if used >= len(arguments):
            raise CelEvaluationError(f"index {used} out of range")
        out.append(_format_one(verb, arguments[used], precision))
        used += 1
    return "".join(out)


def _format_one(verb: str, value: Any, precision: int | None) -> str:
    value_kind = semantics.kind(value)
    if verb == "s":
        return display(value)
    if verb == "d" and value_kind in ("int", "uint"):
        return str(int(value))
    if verb in "fe" and value_kind in semantics.NUMERIC_KINDS:
        number = float(value)
        if math.isnan(number) or math.isinf(number):
            return {"nan": "NaN", "inf": "Infinity", "-inf": "-Infinity"}[str(number)]
        return f"{number:.{6 if precision is None else precision}{verb}}"
    if verb in "boxX" and value_kind in ("int", "uint"):
        number = int(value)
        digits = format(abs(number), verb)
        return ("-" if number < 0 else "") + digits
    if verb in "xX" and value_kind in ("string", "bytes"):
        data = value.encode() if isinstance(value, str) else bytes(value)
        return data.hex() if verb == "x" else data.hex().upper()
    raise CelEvaluationError(f"error during formatting: unrecognized formatting clause or type for %{verb}")


def display(value: Any) -> str:
    """How ``%s`` shows a value: strings as they are, lists and maps in CEL literal-like form."""
    value_kind = semantics.kind(value)
    if value_kind == "string":
        return str(value)
    if value_kind == "bool":
        return "true" if value else "false"
    if value_kind == "null":
        return "null"
    if value_kind == "list":
        return "[" + ", ".join(display(item) for item in value) + "]"
    if value_kind == "map":
        entries = sorted((display(key), display(item)) for key, item in value.items())
        return "{" + ", ".join(f"{key}: {item}" for key, item in entries) + "}"
    if value_kind == "double":
        return repr(float(value)) if not float(value).is_integer() else str(int(value))
    return str(value)


OVERLOADS: tuple[Overload, ...] = (
    member("charAt", char_at, "string", "int"),
    member("indexOf", index_of, "string", "string"),
    member("indexOf", index_of, "string", "string", "int"),
    member("lastIndexOf", last_index_of, "string", "string"),
    member("lastIndexOf", last_index_of, "string", "string", "int"),
    member("lowerAscii", lower_ascii, "string"),
    member("upperAscii", upper_ascii, "string"),
    member("replace", replace, "string", "string", "string"),
    member("replace", replace, "string", "string", "string", "int"),
    member("split", split, "string", "string"),
    member("split", split, "string", "string", "int"),
    member("substring", substring, "string", "int"),
    member("substring", substring, "string", "int", "int"),
    member("trim", trim, "string"),
    member("join", join, "list"),
    member("join", join, "list", "string"),
    member("format", format_string, "string", "list"),
    namespaced("strings", "quote", quote, "string"),
)
