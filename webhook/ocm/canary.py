"""The canary gate ("Canary upgrade" of the add-on installVersion lifecycle): a version, or a config set, reaches the
placements other than the canary placement only after every canary ManagedClusterAddOn has run it successfully
for a soak period. ``Observation`` reads what one canary runs (``of_install_version``, or upstream's
``of_configs`` with the cluster's ManifestWorks); ``canary_gate`` decides. What a real hub adds around it (the
canary placement, its rolloutStrategy's progressDeadline, its install progression) is ``webhook.ocm.hub``.

Upstream OCM semantics followed (open-cluster-management-io/ocm ``pkg/addon/controllers/addonprogressing``, api
``addon/v1alpha1/types_managedclusteraddon.go``, ``work/v1/types.go``): the addon manager sets a
ManagedClusterAddOn's ``Progressing`` condition True (reason ``Progressing``) while its ManifestWorks do not match
its desired configs or are not ready, and False with reason ``Completed`` once every work is ready, copying each
``desiredConfig`` to ``lastAppliedConfig`` then; ``Failed`` and ``ConfigurationUnsupported`` are False too (older
releases wrote ``InstallSucceed`` / ``UpgradeSucceed`` and ``InstallFailed`` / ``UpgradeFailed``). A work is
ready when its ``Applied`` and ``Available`` conditions are True for its current ``metadata.generation``
(``observedGeneration``); the work agent also reports ``Degraded`` and ``Progressing``. ``lastAppliedConfig``
does not move back when a cluster turns unhealthy after completing, so the works' conditions are read as well.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from webhook.conditions import Condition, find_condition, format_duration, format_time, parse_time
from webhook.ocm.addons import PROGRESSING, UPSTREAM_SUCCESS, Reason
from webhook.ocm.rollout import config_set, render_configs

UPSTREAM_SUCCEEDED = frozenset({UPSTREAM_SUCCESS, "InstallSucceed", "UpgradeSucceed"})
"""``Progressing`` reasons of a ManagedClusterAddOn that completed its configs (current and older releases)."""
UPSTREAM_FAILED = frozenset({"Failed", "ConfigurationUnsupported", "InstallFailed", "UpgradeFailed"})
"""``Progressing`` reasons of a ManagedClusterAddOn, or of an install progression, that failed."""
PRE_DELETE_WORK = "addon-{name}-pre-delete"
"""The name prefix of an add-on's pre-delete hook work, which the addon manager does not count as progress."""


@dataclass(frozen=True)
class Observation:
    """What one canary ManagedClusterAddOn runs: ``cluster`` (its namespace), ``running`` (the version, or
    the rendered config set, it runs successfully; ``None`` when it does not), and ``since`` (when its
    ``Progressing`` condition turned to success: "lastTransitionTime record the finish time")."""

    cluster: str
    running: str | None
    since: datetime.datetime | None
    state: str
    """The ``Progressing`` reason, or ``no Progressing condition``, or which work is not ready; used in messages."""
    failure: str | None = None
    """Why the canary failed (its ``Progressing`` reason, a ManifestWork's conditions); a failure holds everything."""
    started: datetime.datetime | None = None
    """When its ``Progressing`` condition turned True (the rollout to it began): the progressDeadline counts from it."""

    @classmethod
    def of_install_version(cls, addon: Mapping[str, Any]) -> Observation:
        """Runs ``status.currentVersion`` when ``Progressing`` is False with reason ``Succeed``."""
        status = addon.get("status") or {}
        return cls._observe(addon, status.get("currentVersion") or None, frozenset({Reason.SUCCEED.value}))

    @classmethod
    def of_configs(
        cls,
        addon: Mapping[str, Any],
        works: Sequence[Mapping[str, Any]] = (),
        *,
        target: Sequence[Mapping[str, Any]] | None = None,
    ) -> Observation:
        """Upstream OCM (module docstring): what ManagedClusterAddOn ``addon`` runs, with ``works`` its
        ManifestWorks (label ``open-cluster-management.io/addon-name``, in the cluster's namespace).

        Runs the ``lastAppliedConfig`` set of ``status.configReferences`` (as ``render_configs`` renders it) when
        ``Progressing`` is False with a success reason and every work (its pre-delete hook work aside) is ready;
        ``since`` is the latest of that condition's and the works' ``Applied`` / ``Available`` transition times.
        With ``target`` (an ``AddOnConfig`` list) only the references of the target's group/resources count, so
        that a default AddOnDeploymentConfig beside the target AddOnTemplate does not hide it. Fails (``failure``)
        on a failed ``Progressing`` reason, a work ``Degraded`` True, ``Available`` False, or ``Progressing`` with
        reason ``Failed``. Raises ``InputError`` for a malformed config reference or transition time.
        """
        status = addon.get("status") or {}
        kinds = None if target is None else {(ref.group, ref.resource) for ref in config_set(target)}
        applied = [
            {**(ref.get("lastAppliedConfig") or {}), "group": ref.get("group"), "resource": ref.get("resource")}
            for ref in status.get("configReferences") or ()
            if (ref.get("lastAppliedConfig") or {}).get("name")
            and (kinds is None or (ref.get("group") or "", ref.get("resource")) in kinds)
        ]
        seen = cls._observe(addon, render_configs(applied), UPSTREAM_SUCCEEDED)
        counted = counted_works(addon, works)
        failures = [failure for failure in map(work_failure, counted) if failure]
        if seen.state in UPSTREAM_FAILED:
            condition = find_condition(status.get("conditions"), PROGRESSING) or {}
            failures.insert(0, f"Progressing {seen.state}: {condition.get('message') or 'no message'}")
        started = _progressing_since(status.get("conditions"))
        if failures:
            return cls(seen.cluster, None, None, "Failed", "; ".join(failures), started)
        waiting = next((work for work in counted if not work_ready(work)), None)
        if seen.since is None:
            return cls(seen.cluster, None, None, seen.state, None, started)
        if waiting is not None:
            state = f"ManifestWork {_name(waiting)} is not Applied and Available at generation {_generation(waiting)}"
            return cls(seen.cluster, None, None, state, None, started)
        since = max([seen.since, *(stamp for stamp in map(work_ready_since, counted) if stamp is not None)])
        return cls(seen.cluster, seen.running, since, seen.state)

    @classmethod
    def _observe(cls, addon: Mapping[str, Any], running: str | None, success: frozenset[str]) -> Observation:
        cluster = (addon.get("metadata") or {}).get("namespace") or ""
        condition = find_condition((addon.get("status") or {}).get("conditions"), PROGRESSING)
        if condition is None:
            return cls(cluster, None, None, "no Progressing condition")
        state = str(condition.get("reason") or "")
        if condition.get("status") != "False" or state not in success or not condition.get("lastTransitionTime"):
            return cls(cluster, None, None, state)
        return cls(cluster, running, parse_time(condition["lastTransitionTime"]), state)


def counted_works(addon: Mapping[str, Any], works: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """``works`` of ManagedClusterAddOn ``addon`` that count as its progress, sorted by name: all but its
    pre-delete hook work (``addon-<name>-pre-delete``), which the addon manager does not count either."""
    name = (addon.get("metadata") or {}).get("name") or ""
    return sorted((work for work in works if not _name(work).startswith(PRE_DELETE_WORK.format(name=name))), key=_name)


def _name(work: Mapping[str, Any]) -> str:
    return str((work.get("metadata") or {}).get("name") or "")


def _generation(work: Mapping[str, Any]) -> int:
    return int((work.get("metadata") or {}).get("generation") or 0)


def _work_conditions(work: Mapping[str, Any]) -> list[Condition]:
    return list((work.get("status") or {}).get("conditions") or ())


def work_ready(work: Mapping[str, Any]) -> bool:
    """A ManifestWork is ready, as upstream's ``workIsReady`` says: ``Available`` and ``Applied`` True, each observed
    at the work's ``metadata.generation``."""
    return all(
        (found := find_condition(_work_conditions(work), kind)) is not None
        and found.get("status") == "True"
        and int(found.get("observedGeneration") or 0) == _generation(work)
        for kind in ("Available", "Applied")
    )


def work_ready_since(work: Mapping[str, Any]) -> datetime.datetime | None:
    """When a ready work last turned ``Applied`` or ``Available`` (the later of the two; ``None``: not stamped)."""
    conditions = _work_conditions(work)
    stamps = [(find_condition(conditions, kind) or {}).get("lastTransitionTime") for kind in ("Applied", "Available")]
    return max((parse_time(stamp) for stamp in stamps if stamp), default=None)


def work_failure(work: Mapping[str, Any]) -> str | None:
    """Why a ManifestWork is failing, from the work agent's conditions, or ``None``: ``ManifestWork <name>
    Degraded (<reason>: <message>)``, ``not Available (...)``, ``Progressing Failed (...)``, joined by commas."""
    conditions = _work_conditions(work)
    failing = [
        (kind, condition)
        for kind, bad in (("Degraded", "True"), ("Available", "False"))
        if (condition := find_condition(conditions, kind)) is not None and condition.get("status") == bad
    ]
    progressing = find_condition(conditions, "Progressing")
    if progressing is not None and progressing.get("reason") == "Failed":
        failing.append(("Progressing Failed", progressing))
    if not failing:
        return None
    said = ", ".join(
        f"{'not Available' if kind == 'Available' else kind} ({condition.get('reason') or 'no reason'}: "
        f"{condition.get('message') or 'no message'})"
        for kind, condition in failing
    )
    return f"ManifestWork {_name(work)} {said}"


def _progressing_since(conditions: Any) -> datetime.datetime | None:
    condition = find_condition(conditions, PROGRESSING)
    if condition is None or condition.get("status") != "True" or not condition.get("lastTransitionTime"):
        return None
    return parse_time(condition["lastTransitionTime"])


@dataclass(frozen=True)
class CanaryGate:
    """The answer of ``canary_gate``: ``allowed``, a deterministic ``message``, and ``ready_at`` (when the
    soak ends or ended; ``None`` while some canary does not run the target)."""

    allowed: bool
    message: str
    ready_at: datetime.datetime | None


def canary_gate(
    target: str,
    canaries: Sequence[Observation],
    *,
    soak: datetime.timedelta,
    now: datetime.datetime,
    deadline: datetime.timedelta | None = None,
) -> CanaryGate:
    """May ``target`` (a version, or ``render_configs`` of a config set) reach a non-canary placement?

    "Canary upgrade": a version reaches the other placements after the canary placement runs it
    successfully; here, when every ``canaries`` observation (the canary placement's ManagedClusterAddOns)
    runs ``target`` with a success ``since`` at least ``soak`` before ``now`` (upstream's ``minSuccessTime``).
    No canary → not allowed. A failed canary holds the target whatever the others do; so does one still
    progressing ``deadline`` (upstream's ``progressDeadline``; ``None``: no deadline) after it ``started``.
    ``now`` is the caller's clock (naive = UTC). Messages (clusters sorted)::

        no canary runs v2
        canary cluster1 failed: ManifestWork addon-hello-deploy-0 Degraded (CrashLoop: agent restarts)
        canary cluster1 timed out: progressing since 2022-11-02T05:48:12Z, past the progressDeadline 10m (Progressing)
        canary cluster1 does not run v2 successfully (Upgrading), canary cluster2 runs v1
        canaries run v2 successfully; the soak of 1h ends at 2022-11-02T06:48:12Z
        canaries cluster1, cluster2 have run v2 successfully since 2022-11-02T05:48:12Z, soak 1:00:00 passed
    """
    now = now if now.tzinfo else now.replace(tzinfo=datetime.UTC)
    if not canaries:
        return CanaryGate(False, f"no canary runs {target}", None)
    ordered = sorted(canaries, key=lambda seen: seen.cluster)
    failed = [f"canary {seen.cluster} failed: {seen.failure}" for seen in ordered if seen.failure]
    if failed:
        return CanaryGate(False, ", ".join(failed), None)
    behind = [seen for seen in ordered if seen.running != target or seen.since is None]
    if behind:
        return CanaryGate(False, ", ".join(_behind(seen, target, now, deadline) for seen in behind), None)
    latest = max(seen.since for seen in ordered if seen.since is not None)
    ready_at = latest + soak
    if ready_at > now:
        return CanaryGate(
            False,
            f"canaries run {target} successfully; the soak of {format_duration(soak)} ends at {format_time(ready_at)}",
            ready_at,
        )
    names = ", ".join(seen.cluster for seen in ordered)
    since = format_time(latest)
    message = f"canaries {names} have run {target} successfully since {since}, soak {format_duration(soak)} passed"
    return CanaryGate(True, message, ready_at)


def _behind(seen: Observation, target: str, now: datetime.datetime, deadline: datetime.timedelta | None) -> str:
    """Why one canary does not (yet) let ``target`` through."""
    if deadline is not None and seen.started is not None and now - seen.started > deadline:
        return (
            f"canary {seen.cluster} timed out: progressing since {format_time(seen.started)}, past the "
            f"progressDeadline {format_duration(deadline)} ({seen.state})"
        )
    if seen.running is not None:
        return f"canary {seen.cluster} runs {seen.running}"
    return f"canary {seen.cluster} does not run {target} successfully ({seen.state})"
