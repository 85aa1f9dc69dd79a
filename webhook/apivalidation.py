"""Kubernetes API validation texts: name formats and ``field.Error`` details, verbatim.

Follows apimachinery ``pkg/util/validation/validation.go`` (``IsDNS1123Subdomain``, ``IsDNS1035Label``,
``IsQualifiedName``), ``pkg/api/validation/path/name.go`` (``ValidatePathSegmentName``) and
``pkg/util/validation/field/errors.go`` (the ``Required value`` / ``Invalid value: ...`` wording), so a load
error reads as ``kubectl apply`` would print it. Each ``is_*`` function returns the list of problems
(empty when the value is valid).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable

from webhook.golang import quote as go_quote

_DNS1123_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_SUBDOMAIN = _DNS1123_LABEL + r"(\." + _DNS1123_LABEL + r")*"
_DNS1035_LABEL = r"[a-z]([-a-z0-9]*[a-z0-9])?"
_QUALIFIED_NAME = r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_CEL_IDENTIFIER = re.compile(r"[_a-zA-Z][_a-zA-Z0-9]*")
_CEL_RESERVED = frozenset(
    {"true", "false", "null", "in", "as", "break", "const", "continue", "else", "for", "function", "if"}
    | {"import", "let", "loop", "package", "namespace", "return", "var", "void", "while"}
)

_DNS1123_SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must "
    "start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is "
    f"'{_DNS1123_SUBDOMAIN}')"
)
_DNS1035_LABEL_MSG = (
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic "
    "character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for "
    f"validation is '{_DNS1035_LABEL}')"
)
_QUALIFIED_NAME_MSG = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric "
    "character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
    f"'{_QUALIFIED_NAME}')"
)


def is_dns1123_subdomain(value: str) -> list[str]:
    """Problems of ``value`` as an RFC 1123 subdomain (object names, API groups), at most 253 characters."""
    problems = []
    if len(value) > 253:
        problems.append("must be no more than 253 characters")
    if not re.fullmatch(_DNS1123_SUBDOMAIN, value):
        problems.append(_DNS1123_SUBDOMAIN_MSG)
    return problems


def is_dns1035_label(value: str) -> list[str]:
    """Problems of ``value`` as an RFC 1035 label (API versions, kinds in lower case), at most 63 characters."""
    problems = []
    if len(value) > 63:
        problems.append("must be no more than 63 characters")
    if not re.fullmatch(_DNS1035_LABEL, value):
        problems.append(_DNS1035_LABEL_MSG)
    return problems


def is_qualified_name(value: str) -> list[str]:
    """Problems of ``value`` as a qualified name: ``[prefix/]name``, DNS-subdomain prefix, name ≤ 63."""
    parts = value.split("/")
    if len(parts) > 2:
        return [
            "a qualified name "
            + _QUALIFIED_NAME_MSG
            + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
        ]
    problems = []
    if len(parts) == 2:
        prefix, name = parts
        if not prefix:
            problems.append("prefix part must be non-empty")
        else:
            problems.extend("prefix part " + msg for msg in is_dns1123_subdomain(prefix))
    else:
        name = parts[0]
    if not name:
        problems.append("name part must be non-empty")
    elif len(name) > 63:
        problems.append("name part must be no more than 63 characters")
    if name and not re.fullmatch(_QUALIFIED_NAME, name):
        problems.append("name part " + _QUALIFIED_NAME_MSG)
    return problems


def is_path_segment_name(value: str) -> list[str]:
    """Problems of ``value`` as a name that becomes one URL path segment (resourceNames, paramRef.name)."""
    if value in (".", ".."):
        return [f"may not be '{value}'"]
    return [f"may not contain '{c}'" for c in "/%" if c in value]


def is_cel_identifier(value: str) -> bool:
    """True if ``value`` is a CEL identifier that is not a reserved word (variable names)."""
    return bool(_CEL_IDENTIFIER.fullmatch(value)) and value not in _CEL_RESERVED


def quote(value: object) -> str:
    """``value`` the way ``field.Error`` prints it: strings in Go ``%q`` style, the rest as JSON."""
    return go_quote(value) if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)


def required(detail: str = "") -> str:
    """The detail of a ``field.Required`` error."""
    return "Required value" + (f": {detail}" if detail else "")


def invalid(value: object, detail: str) -> str:
    """The detail of a ``field.Invalid`` error."""
    return f"Invalid value: {quote(value)}: {detail}"


def not_supported(value: object, supported: Iterable[str]) -> str:
    """The detail of a ``field.NotSupported`` error; ``supported`` is listed sorted, as upstream does."""
    return f"Unsupported value: {quote(value)}: supported values: " + ", ".join(quote(s) for s in sorted(supported))


def duplicate(value: object) -> str:
    """The detail of a ``field.Duplicate`` error."""
    return f"Duplicate value: {quote(value)}"


def forbidden(detail: str) -> str:
    """The detail of a ``field.Forbidden`` error."""
    return f"Forbidden: {detail}"


def too_many(actual: int, limit: int) -> str:
    """The detail of a ``field.TooMany`` error."""
    return f"Too many: {actual}: must have at most {limit} items"
