"""The installVersion lifecycle's status of one ManagedClusterAddOn, derived from what a hub shows: its
``spec.installVersion`` (else the ClusterManagementAddOn's ``defaultVersion``), the status written before, and its
ManifestWorks as the work agent reports them (the observations the canary gate reads, ``webhook.ocm.canary``).
Pure: no I/O, the clock passed in.

The rules (the add-on installVersion lifecycle, "Workflow" and "The installVersion, lastVersion and
currentVersion"):

* ``lastVersion`` is the previous installVersion: when the installVersion moves, the one the status described
  before becomes ``lastVersion`` (``unknown`` when it was invalid, empty when there was none). The installVersion
  a status describes is kept in the status itself, in the condition ``upgrade-gate.io/InstallVersion`` (reason
  ``Recorded``, message the version), so that a restarted controller, or another replica, knows what moved.
* ``currentVersion`` is ``unknown`` until the install finishes: every ManifestWork of the add-on (label
  ``open-cluster-management.io/addon-name``, its pre-delete hook work aside) carries the version label
  ``open-cluster-management.io/addon-version`` at the installVersion and is ``Applied`` and ``Available`` at its
  ``metadata.generation``. Once finished it stays (a later unhealthy work is the canary gate's business, not a new
  install); an invalid installVersion (malformed, or not in a published ``supportedVersions``) is ``unknown``.
* ``Progressing``: ``webhook.ocm.addons.progressing_condition`` over the three versions, with the first failing
  work at the installVersion (``Degraded``, not ``Available``, ``Progressing`` ``Failed``) as the failure. Its
  ``lastTransitionTime`` moves whenever its status, reason or message does ("lastTransitionTime record the finish
  time"): to the moment the works became ready for ``Succeed``, else to ``now``. With neither an installVersion
  nor a ``defaultVersion``, ``Failed`` with ``AddOnVersions.validate``'s message.

A ClusterManagementAddOn that has published no ``supportedVersions`` leaves membership unchecked (its addon
manager has not said yet), instead of failing every version.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping, Sequence
from typing import Any

from webhook.conditions import Condition, find_condition, format_time, validate_condition
from webhook.ocm.addons import PROGRESSING, UNKNOWN, AddOnVersions, Reason, is_addon_version, progressing_condition
from webhook.ocm.canary import counted_works, work_failure, work_ready, work_ready_since

ADDON_LABEL = "open-cluster-management.io/addon-name"
"""The label naming the add-on a ManifestWork belongs to (upstream's ``AddonLabelKey``)."""
VERSION_LABEL = "open-cluster-management.io/addon-version"
"""The label carrying the add-on version a ManifestWork installs (the installVersion lifecycle, "Workflow")."""
RECORD = "upgrade-gate.io/InstallVersion"
"""The condition type whose message is the installVersion the status describes."""
RECORDED = "Recorded"


def lifecycle_status(
    addon: Mapping[str, Any],
    works: Sequence[Mapping[str, Any]],
    versions: AddOnVersions,
    *,
    now: datetime.datetime,
) -> dict[str, Any]:
    """The ``status`` ManagedClusterAddOn ``addon`` should have (see the module docstring): its status with
    ``lastVersion``, ``currentVersion`` and the ``Progressing`` and ``upgrade-gate.io/InstallVersion`` conditions
    set; every other field and condition kept as it is, in its place. ``works`` are the ManifestWorks labelled
    with the add-on's name in its namespace; ``versions`` what its ClusterManagementAddOn publishes. Compare the
    result with ``addon["status"]`` to know whether a write is due. ``now`` is the caller's clock (naive = UTC).
    """
    status = dict(addon.get("status") or {})
    conditions = status.get("conditions") or []
    supported = versions.supported or None
    target = versions.resolve((addon.get("spec") or {}).get("installVersion") or None)
    record = find_condition(conditions, RECORD)
    described = None if record is None else str(record.get("message") or "")
    last = str(status.get("lastVersion") or "")
    if described is not None and described != (target or ""):
        last = "" if not described else described if _valid(described, supported) else UNKNOWN
    current, failure, finished_at = UNKNOWN, None, None
    counted = [w for w in counted_works(addon, works) if _labels(w).get(ADDON_LABEL) == _name(addon)]
    if target is not None and _valid(target, supported):
        if described == target and status.get("currentVersion") == target:
            current = target
        elif counted and all(_labels(w).get(VERSION_LABEL) == target and work_ready(w) for w in counted):
            current = target
            finished_at = max((t for t in map(work_ready_since, counted) if t is not None), default=None)
        else:
            at_target = (w for w in counted if _labels(w).get(VERSION_LABEL) == target)
            failure = next((found for found in map(work_failure, at_target) if found), None)
    if target is None:
        message = versions.validate(None) or ""
        progressing: Condition = {"type": PROGRESSING, "status": "False", "reason": Reason.FAILED.value}
        progressing["message"] = message
    else:
        progressing = progressing_condition(target, current, last or None, failure, supported_versions=supported)
    generation = (addon.get("metadata") or {}).get("generation")
    if isinstance(generation, int):
        progressing["observedGeneration"] = generation
    moved_at = finished_at if progressing["reason"] == Reason.SUCCEED.value and finished_at else now
    conditions = _put(conditions, progressing, moved_at)
    conditions = _put(conditions, {"type": RECORD, "status": "True", "reason": RECORDED, "message": target or ""}, now)
    return {**status, "lastVersion": last, "currentVersion": current, "conditions": conditions}


def _valid(version: str, supported: Sequence[str] | None) -> bool:
    return is_addon_version(version) and (supported is None or version in supported)


def _labels(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return (obj.get("metadata") or {}).get("labels") or {}


def _name(obj: Mapping[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("name") or "")


def _put(conditions: Sequence[Mapping[str, Any]], condition: Condition, moved_at: datetime.datetime) -> list[Condition]:
    """``conditions`` with ``condition`` in its type's place (appended when new); its ``lastTransitionTime`` is
    ``moved_at`` when its status, reason or message changed, else kept. Others are untouched."""
    validate_condition(condition)
    result = [dict(entry) for entry in conditions]
    before = find_condition(result, condition["type"])
    same = before is not None and all(before.get(k) == condition.get(k) for k in ("status", "reason", "message"))
    since = before.get("lastTransitionTime") if same and before is not None else format_time(moved_at)
    entry = {
        "type": condition["type"],
        "status": condition["status"],
        **({"observedGeneration": condition["observedGeneration"]} if "observedGeneration" in condition else {}),
        "lastTransitionTime": since,
        "reason": condition["reason"],
        "message": condition.get("message", ""),
    }
    for index, found in enumerate(result):
        if found.get("type") == condition["type"]:
            result[index] = entry
            return result
    return [*result, entry]
