"""Regular expressions with RE2 syntax (google-re2, as cel-go): the standard ``matches`` and Kubernetes'
regex library (``pkg/cel/library/regex.go``)::

    <string>.matches(string) -> bool, matches(string, string) -> bool
    <string>.find(string) -> string                 the first match, '' if none
    <string>.findAll(string[, int]) -> list<string> all (or at most N; N < 0 all) matches

Compiled patterns are cached. An invalid pattern is the error ``error parsing regexp: ...`` (a constant
pattern is already rejected at compile time by the checker).
"""

from __future__ import annotations

import functools
from typing import Any

import re2  # type: ignore[import-untyped]

from webhook.errors import CelEvaluationError
from webhook.policy.cel.libraries.registry import Overload, function, member

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
    """All matches (at most ``limit`` when it is not negative)."""
    if limit == 0:
        return []
    found = [str(match.group(0)) for match in compile_pattern(pattern).finditer(text)]
    return found if limit < 0 else found[:limit]


OVERLOADS: tuple[Overload, ...] = (
    member("matches", matches, "string", "string"),
    function("matches", matches, "string", "string"),
    member("find", find, "string", "string"),
    member("findAll", find_all, "string", "string"),
    member("findAll", find_all, "string", "string", "int"),
)
