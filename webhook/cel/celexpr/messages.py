"""cel-cpp's texts in cel-go's wording (compile and evaluation errors, type names), and the compile errors of
cel-cpp that cel-go does not have, which the backend works around."""

from __future__ import annotations

import re

_STATUS = re.compile(r"^[A-Z_]+: ")
_COMPILE_ERROR = re.compile(r"ERROR: <input>:(-?\d+):(-?\d+): ([^\n]*)")
#: cel-cpp's error for its fixed 10,000 comprehension iterations per evaluation.
ITERATION_BUDGET = "Iteration budget exceeded"
# cel-cpp's texts for errors cel-go words differently (cel-go's wording; the cel-python backend's too).
_MESSAGES: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r'^Key not found in map : "?(.*?)"?$', re.DOTALL), r"no such key: \1"),
    (re.compile(r"^Index error: index=(-?\d+) size=\d+$"), r"index out of bounds: \1"),
    (re.compile(r"^divide by zero$"), "division by zero"),
    (re.compile(r"^No matching overloads found : (.*)$", re.DOTALL), r"found no matching overload for \1"),
    (re.compile(r"^invalid regular expression: (.*)$", re.DOTALL), r"error parsing regexp: \1"),
)
#: cel-cpp's parser's recursion limit (32; cel-go's is 250), a compile error cel-go does not have.
PARSER_LIMIT = re.compile(r"recursion (limit|depth)")
#: What cel-cpp's type checker refuses and cel-go's accepts: ordering between int, uint and double operands
#: (Kubernetes enables cel-go's CrossTypeNumericComparisons), and ``string(cidr)`` (cel-cpp cannot declare a second
#: library type's conversion, ``functions.declarations``).
CHECKER_ONLY = (
    re.compile(r"no matching overload for 'string' applied to '\(net\.CIDR\)'"),
    re.compile(r"no matching overload for '_(<|<=|>|>=)_' applied to '\((int|uint|double), (int|uint|double)\)'"),
)
#: The cel-cpp compile errors that cel-go does not have.
CEL_CPP_ONLY = (PARSER_LIMIT, *CHECKER_ONLY)
_COMPILE_MESSAGES = (
    (
        re.compile(r"^expression of type '(.*)' cannot be the operand of a select operation$"),
        r"type '\1' does not support field selection",
    ),
)
_CEL_CPP_TYPE_NAMES = {"NULL": "null_type", "NULL_TYPE": "null_type"}


def evaluation_message(text: str) -> str:
    """cel-cpp's error text without its status code, in cel-go's wording where ``_MESSAGES`` knows one."""
    message = _STATUS.sub("", text.strip(), count=1).removesuffix(" [UNKNOWN]").strip()
    for pattern, replacement in _MESSAGES:
        if pattern.match(message):
            return pattern.sub(replacement, message)
    return message


def compile_message(text: str) -> str:
    """``<line>:<column>: <message>`` of cel-cpp's first compile error (``1:1:`` when it has no position), in
    cel-go's wording where ``_COMPILE_MESSAGES`` knows one."""
    found = _COMPILE_ERROR.search(text)
    if found is None:
        return f"1:1: {_STATUS.sub('', text.strip(), count=1)}"
    line, column, message = found.groups()
    if int(line) < 1:
        line, column = "1", "1"
    message = message.strip()
    for pattern, replacement in _COMPILE_MESSAGES:
        message = pattern.sub(replacement, message)
    return f"{line}:{column}: {message}"


def type_text(name: str) -> str:
    """cel-go's text of a cel-cpp type name: ``BOOL`` -> ``bool``, ``LIST<DYN>`` -> ``list(dyn)``, ``NULL`` ->
    ``null_type``; message names as they are."""
    parts = re.split(r"([<>,]\s*)", name)
    words = [_CEL_CPP_TYPE_NAMES.get(part, part.lower() if part.isupper() else part) for part in parts]
    return "".join(words).replace("<", "(").replace(">", ")")
