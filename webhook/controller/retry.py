"""When to make operator-controller retry a held upgrade at once. Pure: reads a ClusterExtension, its revisions,
their assessments and the time; no I/O.

operator-controller retries a release write the gate refused with controller-runtime's per-item exponential
backoff (5 ms doubling up to 1000 s), and neither an approval nor a window that opens triggers anything by itself:
without help, an approved upgrade starts at the next retry, up to about 17 minutes later. Any write to the
ClusterExtension makes operator-controller reconcile it at once. So for a revision in state ``held`` (approved,
operator-controller's retries refused) the controller writes one annotation on the ClusterExtension,

    upgrade-gate.io/retry-for: <revision name>@<spec.approvedAt, else metadata.generation>[@<windows>]

- at once, when the hold is not a window's (the retry after the approval: the hold was the gate's "waiting for
  approval");
- when the windows that hold it let it go, when the gate's message says a freeze window holds the upgrade
  (``... is approved but held by the freeze window W1, W2``: when the last of them closes) or that it waits for a
  maintenance window (``... waits for a maintenance window: W1, W2 (UTC)``: when the first of them opens). Until
  then the reconcile asks to run again at that time. These are the bundled policy's messages; another policy's
  hold falls back to operator-controller's backoff.

Each value is written once (a later reconcile finds it written). It is metadata only (the ClusterExtension's
generation and spec do not change) and not in Git: Argo CD's diff and Flux's server-side apply leave fields they
do not manage alone, so neither reports drift nor removes it.
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from webhook.controller.status import HELD, RETRYING, Assessment, operator_progressing
from webhook.errors import InputError
from webhook.windows import parse_window

RETRY_ANNOTATION = "upgrade-gate.io/retry-for"
_FREEZE = re.compile(r" is approved but held by the freeze window (?P<windows>.+)$")
_MAINTENANCE = re.compile(r" is approved and waits for a maintenance window: (?P<windows>.+) \(UTC\)$")


@dataclass(frozen=True)
class RetryPlan:
    """What the reconcile does for retries: ``write`` is ``(revision, annotation value)`` to write now, else
    ``None``; ``again_at`` is when to reconcile again (a window that holds the upgrade changes then), else
    ``None``."""

    write: tuple[Mapping[str, Any], str] | None = None
    again_at: datetime.datetime | None = None


def approval_token(revision: Mapping[str, Any]) -> str:
    """``<name>@<spec.approvedAt>`` (``@<metadata.generation>`` where no approval time was stamped)."""
    metadata = revision.get("metadata") or {}
    spec = revision.get("spec") or {}
    return f"{metadata.get('name')}@{spec.get('approvedAt') or metadata.get('generation') or 0}"


def window_hold(held: str, now: datetime.datetime) -> tuple[str, datetime.datetime] | None:
    """``(windows, when they let the upgrade go)`` when ``held`` is the gate's freeze or maintenance window hold,
    else ``None`` (also for windows that do not parse). The time is ``now`` or earlier when they already do."""
    for pattern, last in ((_FREEZE, True), (_MAINTENANCE, False)):
        found = pattern.search(held)
        if found is None:
            continue
        try:
            windows = [parse_window(text) for text in found["windows"].split(", ")]
        except InputError:
            return None
        if last:  # a freeze holds while any of its windows does
            closes = [at for window in windows if (at := window.closes_at(now)) is not None]
            return found["windows"], max(closes, default=now)
        opens = [at for window in windows if (at := window.opens_at(now)) is not None]
        return (found["windows"], min(opens)) if opens else None
    return None


def retry_plan(
    extension: Mapping[str, Any] | None,
    assessed: Iterable[tuple[Mapping[str, Any], Assessment]],
    now: datetime.datetime,
) -> RetryPlan:
    """The retry annotation to write and when to look again, for the first held revision in name order (see the
    module doc)."""
    if extension is None:
        return RetryPlan()
    if operator_progressing(extension).get("reason") != RETRYING:
        return RetryPlan()  # operator-controller is not backing off: it reconciles again on its own
    annotations = (extension.get("metadata") or {}).get("annotations") or {}
    for revision, assessment in sorted(assessed, key=lambda pair: str((pair[0].get("metadata") or {}).get("name"))):
        if assessment.state != HELD or not assessment.held:
            continue
        token = approval_token(revision)
        hold = window_hold(assessment.held, now)
        if hold is not None:
            windows, free_at = hold
            if free_at > now:
                return RetryPlan(again_at=free_at)
            token = f"{token}@{windows}"
        return RetryPlan() if annotations.get(RETRY_ANNOTATION) == token else RetryPlan(write=(revision, token))
    return RetryPlan()
