"""Kubernetes' format library (``pkg/cel/library/format.go``, "kubernetes.format", 1.31)::

    format.named(string) -> optional<Format>          none for an unknown name
    format.dns1123Label() format.dns1123Subdomain() format.dns1035Label() format.qualifiedName()
    format.dns1123LabelPrefix() format.dns1123SubdomainPrefix() format.dns1035LabelPrefix()
    format.labelValue() format.uri() format.uuid() format.byte() format.date() format.datetime() -> Format
    <Format>.validate(string) -> optional<list<string>>   none when valid, else the validation messages

Optionals are CEL optionals (``optional_type``: ``hasValue() value() orValue() or()``, ``== optional.none()``), so
Kubernetes' idioms work:
``!format.dns1123Label().validate(name).hasValue()``, ``....validate(name).value().join('; ')``,
``format.named('uuid').value().validate(x).orValue([])``.

The messages are apimachinery's (``pkg/util/validation``): ``NameIsDNSLabel``/``NameIsDNSSubdomain``/
``NameIsDNS1035Label`` (the ``Prefix`` formats first replace a trailing ``-`` as ``maskTrailingDash`` does:
the last two characters become ``a``), ``IsQualifiedName``, ``IsValidLabelValue``; the subdomain,
DNS-1035 and qualified-name checks are ``webhook.apivalidation``'s. ``uri`` is ``url.ParseRequestURI``'s
error; ``uuid``, ``byte``, ``date`` and ``datetime`` are kube-openapi strfmt's checks with Kubernetes'
messages (``does not match the UUID format``, ``invalid base64``, ``invalid date``, ``invalid datetime``).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from webhook.apivalidation import (  # the private patterns are apimachinery's, shared not copied
    _DNS1123_LABEL,
    _DNS1123_SUBDOMAIN,
    _QUALIFIED_NAME,
    is_dns1035_label,
    is_dns1123_subdomain,
    is_qualified_name,
)
from webhook.cel.libraries.optional import Optional
from webhook.cel.libraries.registry import Implementation, Namespace, Overload, member, namespaced
from webhook.cel.libraries.urls import parse_request_uri
from webhook.errors import URLError

NAMESPACE = Namespace("format")
Validator = Callable[[str], list[str]]

_LABEL_VALUE = f"({_QUALIFIED_NAME})?"
_UUID = re.compile(r"[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}", re.IGNORECASE)
_BASE64 = re.compile(r"(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=|[A-Za-z0-9+/]{4})")
_DATE = re.compile(r"([0-9]{4})-([0-9]{2})-([0-9]{2})")
_TIME = re.compile(r"([0-9]{2}):([0-9]{2}):([0-9]{2})(.[0-9]+)?(z|([+-][0-9]{2}:[0-9]{2}))")


@dataclass(frozen=True)
class Format:
    """A named string format (CEL type ``kubernetes.NamedFormat``)."""

    name: str
    check: Validator
    cel_type_name = "kubernetes.NamedFormat"

    @classmethod
    def from_text(cls, name: str) -> Format:
        """The format called ``name`` (its ``str``); ``KeyError`` for an unknown name. The library has no
        one-string constructor function (``format.named`` returns an optional), so a backend that carries
        library values as text rebuilds them with this."""
        return FORMATS[name]

    def __str__(self) -> str:
        return self.name


def _regex_error(message: str, pattern: str, *examples: str) -> str:
    """apimachinery's ``RegexError`` text."""
    shown = " or ".join(f"'{example}', " for example in examples)
    return f"{message} (e.g. {shown}regex used for validation is '{pattern}')"


def _max_length(value: str, limit: int) -> list[str]:
    return [f"must be no more than {limit} characters"] if len(value.encode()) > limit else []


def is_dns1123_label(value: str) -> list[str]:
    """apimachinery ``IsDNS1123Label``."""
    problems = _max_length(value, 63)
    if not re.fullmatch(_DNS1123_LABEL, value):
        if re.fullmatch(_DNS1123_SUBDOMAIN, value):
            problems.append("must not contain dots")
        else:
            problems.append(
                _regex_error(
                    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must "
                    "start and end with an alphanumeric character",
                    _DNS1123_LABEL,
                    "my-name",
                    "123-abc",
                )
            )
    return problems


def is_label_value(value: str) -> list[str]:
    """apimachinery ``IsValidLabelValue``."""
    problems = _max_length(value, 63)
    if not re.fullmatch(_LABEL_VALUE, value):
        problems.append(
            _regex_error(
                "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and "
                "must start and end with an alphanumeric character",
                _LABEL_VALUE,
                "MyValue",
                "my_value",
                "12345",
            )
        )
    return problems


def _prefix(check: Validator) -> Validator:
    """A ``NameIs...(name, prefix=true)`` check: apimachinery's ``maskTrailingDash`` first."""

    def check_prefix(value: str) -> list[str]:
        masked = value[:-2] + "a" if len(value) > 1 and value.endswith("-") else value
        return check(masked)

    return check_prefix


def _uri(value: str) -> list[str]:
    try:
        parse_request_uri(value)
    except URLError as error:
        return [f'parse "{value}": {error}']
    return []


def _matches(pattern: re.Pattern[str], message: str) -> Validator:
    def check(value: str) -> list[str]:
        return [] if pattern.fullmatch(value) else [message]

    return check


def _is_date(value: str) -> bool:
    """Go ``time.Parse("2006-01-02", value)`` succeeds: two-digit month and day, the day within the month."""
    parts = _DATE.fullmatch(value)
    if parts is None:
        return False
    year, month, day = (int(part) for part in parts.groups())
    leap = year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)
    days = [31, 29 if leap else 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]
    return 1 <= month <= 12 and 1 <= day <= days[month - 1]


def _date(value: str) -> list[str]:
    return [] if _is_date(value) else ["invalid date"]


def _datetime(value: str) -> list[str]:
    """strfmt ``IsDateTime``: ``<date>t<hh:mm:ss[.frac](z|±hh:mm)>`` compared case-insensitively; the part
    after the first ``t`` up to the next one is the time (strfmt splits on every ``t``)."""
    parts = value.lower().split("t")
    time = _TIME.fullmatch(parts[1]) if len(value) >= 4 and len(parts) >= 2 and _is_date(parts[0]) else None
    if time is None or not (time[1] <= "23" and time[2] <= "59" and time[3] <= "59"):
        return ["invalid datetime"]
    return []


FORMATS: dict[str, Format] = {
    format.name: format
    for format in (
        Format("dns1123Label", is_dns1123_label),
        Format("dns1123Subdomain", is_dns1123_subdomain),
        Format("dns1035Label", is_dns1035_label),
        Format("qualifiedName", is_qualified_name),
        Format("dns1123LabelPrefix", _prefix(is_dns1123_label)),
        Format("dns1123SubdomainPrefix", _prefix(is_dns1123_subdomain)),
        Format("dns1035LabelPrefix", _prefix(is_dns1035_label)),
        Format("labelValue", is_label_value),
        Format("uri", _uri),
        Format("uuid", _matches(_UUID, "does not match the UUID format")),
        Format("byte", _matches(_BASE64, "invalid base64")),
        Format("date", _date),
        Format("datetime", _datetime),
    )
}


def named(_namespace: Namespace, name: str) -> Optional[Format]:
    """``format.named(name)``: the format, or an empty optional for an unknown name."""
    found = FORMATS.get(name)
    return Optional.none() if found is None else Optional.of(found)


def validate(format: Format, value: str) -> Optional[list[str]]:
    """``<Format>.validate(value)``: empty when valid, else the list of messages."""
    problems = format.check(value)
    return Optional.of(problems) if problems else Optional.none()


def _constant(format: Format) -> Implementation:
    def constant(_namespace: Namespace) -> Format:
        return format

    return constant


OVERLOADS: tuple[Overload, ...] = (
    namespaced("format", "named", named, "string"),
    *(namespaced("format", name, _constant(format)) for name, format in FORMATS.items()),
    member("validate", validate, Format.cel_type_name, "string"),
)
