"""The canary gate ("Canary upgrade" of the add-on installVersion lifecycle): a version, or a config set, reaches the
placements other than the canary placement only after every canary ManagedClusterAddOn has run it successfully
for a soak period. ``Observation`` reads what one canary runs (``of_install_version``, or upstream's
``of_configs``); ``canary_gate`` decides.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from webhook.conditions import find_condition, format_duration, format_time, parse_time
from webhook.ocm.addons import PROGRESSING, UPSTREAM_SUCCESS, Reason
from webhook.ocm.rollout import render_configs


@dataclass(frozen=True)
class Observation:
    """What one canary ManagedClusterAddOn runs: ``cluster`` (its namespace), ``running`` (the version, or
    the rendered config set, it runs successfully; ``None`` when it does not), and ``since`` (when its
    ``Progressing`` condition turned to success: "lastTransitionTime record the finish time")."""

    cluster: str
    running: str | None
    since: datetime.datetime | None
    state: str
    """The ``Progressing`` reason, or ``no Progressing condition``; used in messages."""

    @classmethod
    def of_install_version(cls, addon: Mapping[str, Any]) -> Observation:
        """Runs ``status.currentVersion`` when ``Progressing`` is False with reason ``Succeed``."""
        status = addon.get("status") or {}
        return cls._observe(addon, status.get("currentVersion") or None, Reason.SUCCEED)

    @classmethod
    def of_configs(cls, addon: Mapping[str, Any]) -> Observation:
        """Upstream OCM: runs the ``lastAppliedConfig`` set of ``status.configReferences`` (rendered as
        ``render_configs`` does) when ``Progressing`` is False with reason ``Completed``."""
        references = (addon.get("status") or {}).get("configReferences") or ()
        applied = [
            {**(ref.get("lastAppliedConfig") or {}), "group": ref.get("group"), "resource": ref.get("resource")}
            for ref in references
            if (ref.get("lastAppliedConfig") or {}).get("name")
        ]
        return cls._observe(addon, render_configs(applied), UPSTREAM_SUCCESS)

    @classmethod
    def _observe(cls, addon: Mapping[str, Any], running: str | None, success: str) -> Observation:
        cluster = (addon.get("metadata") or {}).get("namespace") or ""
        condition = find_condition((addon.get("status") or {}).get("conditions"), PROGRESSING)
        if condition is None:
            return cls(cluster, None, None, "no Progressing condition")
        state = str(condition.get("reason") or "")
        if condition.get("status") != "False" or state != success or not condition.get("lastTransitionTime"):
            return cls(cluster, None, None, state)
        return cls(cluster, running, parse_time(condition["lastTransitionTime"]), state)


@dataclass(frozen=True)
class CanaryVerdict:
    """The answer of ``canary_gate``: ``allowed``, a deterministic ``message``, and ``ready_at`` (when the
    soak ends or ended; ``None`` while some canary does not run the target)."""

    allowed: bool
    message: str
    ready_at: datetime.datetime | None


def canary_gate(
    target: str, canaries: Sequence[Observation], *, soak: datetime.timedelta, now: datetime.datetime
) -> CanaryVerdict:
    """May ``target`` (a version, or ``render_configs`` of a config set) reach a non-canary placement?

    "Canary upgrade": a version reaches the other placements after the canary placement runs it
    successfully; here, when every ``canaries`` observation (the canary placement's ManagedClusterAddOns)
    runs ``target`` with a success ``since`` at least ``soak`` before ``now`` (upstream's ``minSuccessTime``).
    No canary → not allowed. ``now`` is the caller's clock (naive = UTC). Messages (clusters sorted)::

        no canary runs v2
        canary cluster1 does not run v2 successfully (Upgrading), canary cluster2 runs v1
        canaries run v2 successfully; the soak of 1h ends at 2022-11-02T06:48:12Z
        canaries cluster1, cluster2 have run v2 successfully since 2022-11-02T05:48:12Z, soak 1:00:00 passed
    """
    now = now if now.tzinfo else now.replace(tzinfo=datetime.UTC)
    if not canaries:
        return CanaryVerdict(False, f"no canary runs {target}", None)
    ordered = sorted(canaries, key=lambda seen: seen.cluster)
    behind = [seen for seen in ordered if seen.running != target or seen.since is None]
    if behind:
        reasons = [
            f"canary {seen.cluster} runs {seen.running}"
            if seen.running is not None
            else f"canary {seen.cluster} does not run {target} successfully ({seen.state})"
            for seen in behind
        ]
        return CanaryVerdict(False, ", ".join(reasons), None)
    latest = max(seen.since for seen in ordered if seen.since is not None)
    ready_at = latest + soak
    if ready_at > now:
        return CanaryVerdict(
            False,
            f"canaries run {target} successfully; the soak of {format_duration(soak)} ends at {format_time(ready_at)}",
            ready_at,
        )
    names = ", ".join(seen.cluster for seen in ordered)
    since = format_time(latest)
    message = f"canaries {names} have run {target} successfully since {since}, soak {format_duration(soak)} passed"
    return CanaryVerdict(True, message, ready_at)
