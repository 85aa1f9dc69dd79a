"""The add-on installVersion lifecycle in the controller, pure: whether a hub serves it, which work queue key an
add-on object concerns, which Event a ``Progressing`` change calls for, and the state an add-on is counted in.

The hub serves the lifecycle when its ManagedClusterAddOn CRD declares ``status.currentVersion`` in the schema of a
served version (upstream OCM does not: its structural schema would prune the field). Keys are
``managedclusteraddon/<namespace>/<name>``; a ManifestWork queues the add-on its label
``open-cluster-management.io/addon-name`` names in its namespace, a ClusterManagementAddOn every add-on of its name.

Events, on the ManagedClusterAddOn (in its namespace), when its ``Progressing`` condition's status, reason or message
moves:

================  =======  ====================================================================
reason            type     when ``Progressing`` turns
================  =======  ====================================================================
AddOnUpgrading    Normal   True, reason ``Installing`` or ``Upgrading``
AddOnRollingBack  Normal   True, reason ``Rollingback``
AddOnUpgraded     Normal   False, reason ``Succeed``: the add-on runs its installVersion
AddOnFailed       Warning  False, reason ``Failed``
================  =======  ====================================================================
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from webhook.conditions import find_condition
from webhook.controller.events import NORMAL, WARNING, Notice
from webhook.io.kube import Resource
from webhook.objects import KubeObject
from webhook.ocm import ADDON_LABEL, PROGRESSING, Reason

ADDON_API = "addon.open-cluster-management.io/v1alpha1"
ADDONS = Resource(ADDON_API, "ManagedClusterAddOn", "managedclusteraddons")
MANAGERS = Resource(ADDON_API, "ClusterManagementAddOn", "clustermanagementaddons")
WORKS = Resource("work.open-cluster-management.io/v1", "ManifestWork", "manifestworks")
ADDON_CRD = "managedclusteraddons.addon.open-cluster-management.io"
ADDON_KEY = "managedclusteraddon/"

STATES = ("installing", "upgrading", "rolling back", "succeeded", "failed", "unknown")
"""The ``state`` values of ``upgrade_gate_controller_addons``: the ``Progressing`` reason, ``unknown`` without one
of the lifecycle's reasons (no condition yet, or upstream's own)."""
_STATE = {
    Reason.INSTALLING.value: "installing",
    Reason.UPGRADING.value: "upgrading",
    Reason.ROLLINGBACK.value: "rolling back",
    Reason.SUCCEED.value: "succeeded",
    Reason.FAILED.value: "failed",
}
_NOTICES = {
    Reason.INSTALLING.value: (NORMAL, "AddOnUpgrading", "Install"),
    Reason.UPGRADING.value: (NORMAL, "AddOnUpgrading", "Upgrade"),
    Reason.ROLLINGBACK.value: (NORMAL, "AddOnRollingBack", "Rollback"),
    Reason.SUCCEED.value: (NORMAL, "AddOnUpgraded", "Complete"),
    Reason.FAILED.value: (WARNING, "AddOnFailed", "Fail"),
}


def serves_lifecycle(crd: Mapping[str, Any] | None) -> bool:
    """True when the ManagedClusterAddOn CRD ``crd`` (``None``: absent) declares ``status.currentVersion`` in the
    ``openAPIV3Schema`` of a served version."""
    for version in ((crd or {}).get("spec") or {}).get("versions") or ():
        schema = (version.get("schema") or {}).get("openAPIV3Schema") or {}
        status = (schema.get("properties") or {}).get("status") or {}
        if version.get("served") and "currentVersion" in (status.get("properties") or {}):
            return True
    return False


def addon_key(namespace: str, name: str) -> str:
    """The work queue key of the ManagedClusterAddOn ``namespace/name``."""
    return f"{ADDON_KEY}{namespace}/{name}"


def split_key(key: str) -> tuple[str, str]:
    """``(namespace, name)`` of an ``addon_key``."""
    namespace, _, name = key.removeprefix(ADDON_KEY).partition("/")
    return namespace, name


def keys_of(resource: Resource, obj: KubeObject, addons: Sequence[KubeObject]) -> list[str]:
    """The keys a watch event of ``obj`` (of ``resource``) queues; ``addons`` are the ManagedClusterAddOns known,
    read for a ClusterManagementAddOn only."""
    metadata = obj.get("metadata") or {}
    namespace, name = str(metadata.get("namespace") or ""), str(metadata.get("name") or "")
    if resource == ADDONS:
        return [addon_key(namespace, name)]
    if resource == WORKS:
        addon = str((metadata.get("labels") or {}).get(ADDON_LABEL) or "")
        return [addon_key(namespace, addon)] if addon else []
    return [addon_key(str(a["metadata"].get("namespace")), name) for a in addons if a["metadata"].get("name") == name]


def addon_notice(addon: KubeObject, before: Any, after: Mapping[str, Any]) -> Notice | None:
    """The Event for ManagedClusterAddOn ``addon`` whose conditions were ``before`` and whose status is now
    ``after`` (see the module doc), or ``None`` when ``Progressing`` did not move."""
    old = find_condition(before, PROGRESSING) or {}
    new = find_condition(after.get("conditions"), PROGRESSING) or {}
    if all(old.get(k) == new.get(k) for k in ("status", "reason", "message")) or new.get("reason") not in _NOTICES:
        return None
    kind, reason, action = _NOTICES[new["reason"]]
    metadata = addon.get("metadata") or {}
    where = f"add-on {metadata.get('name')} on cluster {metadata.get('namespace')}"
    runs = f" runs {after.get('currentVersion')}" if new["reason"] == Reason.SUCCEED.value else ""
    return Notice(kind, reason, action, f"{where}{runs}: {new.get('message') or ''}")


def addon_state(addon: KubeObject) -> str:
    """The ``STATES`` value ManagedClusterAddOn ``addon`` is counted in."""
    condition = find_condition((addon.get("status") or {}).get("conditions"), PROGRESSING) or {}
    return _STATE.get(str(condition.get("reason") or ""), "unknown")
