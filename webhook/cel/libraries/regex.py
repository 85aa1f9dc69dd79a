"""Regular expressions with RE2 syntax (google-re2, as cel-go): the standard ``matches`` and Kubernetes'
regex library (``pkg/cel/library/regex.go``)::

    <string>.matches(string) -> bool, matches(string, string) -> bool
    <string>.find(string) -> string                 the first match, '' if none
    <string>.findAll(string[, int]) -> list<string> all (or at most N; N < 0 all) matches

``findAll`` is Go's ``regexp.FindAllString``: successive non-overlapping matches, where an empty match right
after the previous match is not reported (``'12 ab'.findAll('[0-9]*')`` is ``['12', '', '', '']``: none at the
space), and the limit counts reported matches; after an empty match the search resumes one character further
on. ``find`` is ``FindString`` (the leftmost match, empty or not) and ``matches`` ``MatchString``.

Compiled patterns are cached. An invalid pattern is the error ``error parsing regexp: ...`` (a constant
pattern is already rejected at compile time by the checker).
"""

from __future__ import annotations

import functools
from typing import Any

import re2  # type: ignore[import-untyped]

from webhook.cel.libraries.registry import Overload, function, member
from webhook.errors import CelEvaluationError

_OPTIONS = re2.Options()
_OPTIONS.log_errors = False  # report errors to the caller, not to stderr


@functools.lru_cache(maxsize=512)
def compile_pattern(pattern: str) -> Any:
    """The compiled RE2 pattern; raises ``CelEvaluationError`` ``error parsing regexp: <reason>``."""
    try:
        return re2.compile(pattern, _OPTIONS)
    except re2.error as error:
        reason = error.args[0] if error.args else "invalid pattern"
        text = reason.decode("utf-8", "replace") if isinstance(reason, bytes) else str(reason)
        raise CelEvaluationError(f"error parsing regexp: {text}") from None


def matches(text: str, pattern: str) -> bool:
    """True if ``pattern`` matches anywhere in ``text`` (not anchored, as in cel-go)."""
    return compile_pattern(pattern).search(text) is not None


def find(text: str, pattern: str) -> str:
    """The first match of ``pattern`` in ``text``, or ''."""
    found = compile_pattern(pattern).search(text)
    return "" if found is None else str(found.group(0))


def find_all(text: str, pattern: str, limit: int = -1) -> list[str]:
    """All matches (at most ``limit`` when it is not negative), as Go's ``FindAllString`` reports them."""
    compiled = compile_pattern(pattern)
    found: list[str] = []
    position, previous_end = 0, -1
    while position <= len(text) and (limit < 0 or len(found) < limit):
        match = compiled.search(text, position)
        if match is None:
            break
        start, end = match.span()
        if end == position:  # an empty match: reported unless it abuts the previous match; step one character
            if start != previous_end:
                found.append("")
            position += 1
        else:
            found.append(str(match.group(0)))
            position = end
        previous_end = end
    return found


OVERLOADS: tuple[Overload, ...] = (
    member("matches", matches, "string", "string"),
    function("matches", matches, "string", "string"),
    member("find", find, "string", "string"),
    member("findAll", find_all, "string", "string"),
    member("findAll", find_all, "string", "string", "int"),
)
