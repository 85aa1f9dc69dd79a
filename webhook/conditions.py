"""``metav1.Condition`` lists as plain JSON-shaped dicts: find, set, remove; pure, the time passed in.

Follows the condition conventions ("Transition History": ``status.conditions`` holds the last observed condition of each
type, one entry per type; own only your condition types, never reorder the others) and apimachinery
``k8s.io/apimachinery/pkg/api/meta`` ``SetStatusCondition`` / ``FindStatusCondition`` /
``RemoveStatusCondition``:

* setting a type that is absent appends it at the end; setting a present type updates that entry in
  place, so every other entry keeps its content and its position;
* ``lastTransitionTime`` changes only when ``status`` changes (to the new condition's own
  ``lastTransitionTime`` when it carries one, else to ``now``); ``reason``, ``message`` and
  ``observedGeneration`` are always taken from the new condition;
* the new condition is validated as the apiserver validates a ``metav1.Condition`` (the kubebuilder
  markers of ``k8s.io/apimachinery/pkg/apis/meta/v1/types.go``); entries of other types are never
  validated or touched, because they belong to other controllers.

No function mutates its arguments or reads a clock: each returns a new list of new dicts. A condition dict
has the keys of ``metav1.Condition`` in its JSON order: ``type``, ``status``, ``observedGeneration``
(omitted when absent, like ``omitempty``), ``lastTransitionTime`` (RFC 3339, seconds, UTC ``Z``),
``reason``, ``message``.
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Mapping, Sequence
from typing import Any

from webhook.errors import InputError

__all__ = ["find_condition", "format_time", "parse_time", "remove_condition", "set_condition", "validate_condition"]

Condition = dict[str, Any]

# metav1.Condition kubebuilder validation markers (apimachinery pkg/apis/meta/v1/types.go).
_TYPE_RE = re.compile(
    r"([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])"
)
_REASON_RE = re.compile(r"[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?")
_STATUSES = ("True", "False", "Unknown")
_MAX_TYPE, _MAX_REASON, _MAX_MESSAGE = 316, 1024, 32768
_KEYS = ("type", "status", "observedGeneration", "lastTransitionTime", "reason", "message")


def format_time(moment: datetime.datetime) -> str:
    """``moment`` as ``metav1.Time`` serialises it: RFC 3339 in UTC with whole seconds, e.g.
    ``2022-11-02T05:48:12Z``. A naive ``moment`` is read as UTC; fractions of a second are dropped."""
    aware = moment if moment.tzinfo else moment.replace(tzinfo=datetime.UTC)
    return aware.astimezone(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def format_duration(duration: datetime.timedelta) -> str:
    """``duration`` as a Go duration in its shortest form, which ``time.ParseDuration`` reads back: ``1h``,
    ``24h``, ``1h30m``, ``10m``, ``45s``, ``1.5s``, ``0s`` (hours are the largest unit, as in Go)."""
    micros = (duration.days * 86_400 + duration.seconds) * 1_000_000 + duration.microseconds
    sign, micros = ("-", -micros) if micros < 0 else ("", micros)
    hours, micros = divmod(micros, 3_600_000_000)
    minutes, micros = divmod(micros, 60_000_000)
    seconds = f"{micros / 1_000_000:f}".rstrip("0").rstrip(".") + "s" if micros else ""
    text = (f"{hours}h" if hours else "") + (f"{minutes}m" if minutes else "") + seconds
    return sign + (text or "0s")


def parse_time(text: str) -> datetime.datetime:
    """An RFC 3339 ``metav1.Time`` string (``Z`` or an offset) as an aware UTC datetime.

    Raises ``InputError`` (``invalid lastTransitionTime "...": ...``) when it is not RFC 3339 with a zone.
    """
    try:
        parsed = datetime.datetime.fromisoformat(text) if isinstance(text, str) else None
    except ValueError as error:
        raise InputError(f"invalid lastTransitionTime {text!r}: {error}") from None
    if parsed is None or parsed.tzinfo is None or "T" not in text:
        raise InputError(f"invalid lastTransitionTime {text!r}: want RFC 3339 with a time zone")
    return parsed.astimezone(datetime.UTC)


def validate_condition(condition: Mapping[str, Any]) -> None:
    """Check one condition as the apiserver checks a ``metav1.Condition`` (its OpenAPI markers).

    ``type``: a qualified name, at most 316 characters; ``status``: ``True``, ``False`` or ``Unknown``;
    ``reason``: one CamelCase word, 1 to 1024 characters matching ``^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$``;
    ``message``: a string of at most 32768 characters (may be empty); ``observedGeneration``, when
    present, an integer >= 0; ``lastTransitionTime``, when present, RFC 3339. Raises ``InputError``
    naming the field, e.g. ``condition "Progressing": reason "Not ok" is not CamelCase``.
    """
    kind = condition.get("type")
    if not isinstance(kind, str) or len(kind) > _MAX_TYPE or not _TYPE_RE.fullmatch(kind):
        raise InputError(f"condition type {kind!r} is not a qualified name of at most {_MAX_TYPE} characters")
    where = f'condition "{kind}"'
    if condition.get("status") not in _STATUSES:
        raise InputError(f"{where}: status {condition.get('status')!r} is not one of True, False, Unknown")
    reason = condition.get("reason")
    if not isinstance(reason, str) or len(reason) > _MAX_REASON or not _REASON_RE.fullmatch(reason):
        raise InputError(f"{where}: reason {reason!r} is not CamelCase (^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$)")
    message = condition.get("message", "")
    if not isinstance(message, str) or len(message) > _MAX_MESSAGE:
        raise InputError(f"{where}: message is not a string of at most {_MAX_MESSAGE} characters")
    generation = condition.get("observedGeneration")
    if generation is not None and (isinstance(generation, bool) or not isinstance(generation, int) or generation < 0):
        raise InputError(f"{where}: observedGeneration {generation!r} is not an integer >= 0")
    if condition.get("lastTransitionTime") is not None:
        parse_time(condition["lastTransitionTime"])


def find_condition(conditions: Sequence[Mapping[str, Any]] | None, kind: str) -> Condition | None:
    """A copy of the condition of type ``kind`` in ``conditions`` (``status.conditions``), or ``None``.

    Follows ``meta.FindStatusCondition``: the first entry of that type wins.
    """
    for entry in conditions or ():
        if entry.get("type") == kind:
            return dict(entry)
    return None


def set_condition(
    conditions: Sequence[Mapping[str, Any]] | None, condition: Mapping[str, Any], *, now: datetime.datetime
) -> list[Condition]:
    """``conditions`` with ``condition`` set, as ``meta.SetStatusCondition`` does, plus validation.

    ``condition`` carries ``type``, ``status``, ``reason``, ``message`` and optionally
    ``observedGeneration`` and ``lastTransitionTime``. An absent type is appended at the end with
    ``lastTransitionTime`` = its own or ``now``. A present type is updated in place: ``status``,
    ``reason``, ``message`` and ``observedGeneration`` come from ``condition``; ``lastTransitionTime`` is
    kept unless ``status`` changed. Every other entry is returned unchanged and in its position.
    ``now`` is the caller's clock (a naive datetime is UTC). Callers detect a change by comparing the
    result with the input. Raises ``InputError`` (see ``validate_condition``) for an invalid condition.
    """
    validate_condition(condition)
    kind = condition["type"]
    result = [dict(entry) for entry in conditions or ()]
    for index, entry in enumerate(result):
        if entry.get("type") == kind:
            changed = entry.get("status") != condition["status"]
            since = (
                (condition.get("lastTransitionTime") or format_time(now))
                if changed
                else entry.get("lastTransitionTime")
            )
            result[index] = _ordered(condition, since)
            return result
    result.append(_ordered(condition, condition.get("lastTransitionTime") or format_time(now)))
    return result


def remove_condition(conditions: Sequence[Mapping[str, Any]] | None, kind: str) -> list[Condition]:
    """``conditions`` without the entries of type ``kind`` (``meta.RemoveStatusCondition``); the others keep
    their content and order."""
    return [dict(entry) for entry in conditions or () if entry.get("type") != kind]


def _ordered(condition: Mapping[str, Any], since: str | None) -> Condition:
    """``condition`` with ``lastTransitionTime`` = ``since`` and its keys in ``metav1.Condition`` JSON order."""
    values = {**condition, "lastTransitionTime": since, "message": condition.get("message", "")}
    return {key: values[key] for key in _KEYS if values.get(key) is not None}
