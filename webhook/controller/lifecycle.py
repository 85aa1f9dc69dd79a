"""The ClusterExtensionRevision lifecycle in the cluster (``cluster`` mode): which revision to create, update
or delete for one ClusterExtension. Pure: the upgrade check, the revisions and the time are passed in.

The same rules as the sync loop applies to Git (``webhook.plan.extensions``), on objects instead of files:

* **create** ``<extension>-<version>`` (``approved: false``, ``availableSince`` now, the label
  ``clusterextension``, a controller ownerReference to the ClusterExtension, so that deleting the
  ClusterExtension deletes it) when an upgrade is due and the extension has no revision;
* **delete** a revision whose version is installed: its upgrade completed;
* **update** in place when a newer upgrade is due while a revision names another version: the revision keeps
  its name (the version it first proposed) and gets the new ``spec.version``, ``bundleMetadata``,
  ``availableSince`` and ``approved: false`` (the approval belonged to the old version); any other revision of
  the extension is deleted;
* **delete** every revision of the extension when none is due: the upgrade completed, the version is pinned,
  the installed bundle is the newest, nothing is in range, nothing is installed, or the ClusterExtension is gone;
* nothing when the one revision already names the due version, or when the upgrade cannot be worked out
  (a resolution error other than "nothing in range", no catalog offers the package): a revision is never
  deleted because a catalog could not be read.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from webhook.objects import KubeObject
from webhook.olm import RevisionProposal, UpgradeCheck, is_pinned

CREATE, UPDATE, DELETE = "create", "update", "delete"
API_VERSION, KIND, EXTENSION_LABEL = "olm.operatorframework.io/v1", "ClusterExtensionRevision", "clusterextension"
NOTHING_IN_RANGE = "no bundles found for package"


@dataclass(frozen=True, slots=True)
class Action:
    """One write: ``kind`` create | update | delete of the revision ``name``, ``body`` (the object to create,
    or the JSON merge patch of an update; empty for a delete), ``uid`` (the object's uid, a precondition of a
    delete), and ``reason`` (why, one sentence)."""

    kind: str
    name: str
    reason: str
    body: Mapping[str, Any] = field(default_factory=dict)
    uid: str = ""


def plan_revisions(
    extension: KubeObject | None, check: UpgradeCheck | None, revisions: Sequence[KubeObject], *, now: str
) -> list[Action]:
    """The writes that bring ``revisions`` (those naming the extension) in line with ``check``.

    ``extension`` is the ClusterExtension object (``None``: it does not exist); ``check`` its upgrade check
    (``None``: it could not be made, so nothing changes unless the extension is gone); ``now`` is RFC 3339.
    """
    ordered = sorted(revisions, key=_name)
    if extension is None:
        return [_delete(r, "its ClusterExtension does not exist") for r in ordered]
    if check is None or check.unavailable is not None:
        return []
    if check.error is not None and NOTHING_IN_RANGE not in check.error:
        return []
    installed = check.extension.installed
    done = [r for r in ordered if installed is not None and _version(r) == installed.version]
    live = [r for r in ordered if r not in done]
    actions = [_delete(r, f"the upgrade to {_version(r)} has completed") for r in done]
    proposal = check.revision
    if proposal is None:
        return actions + [_delete(r, _why_none(check)) for r in live]
    matching = [r for r in live if _version(r) == proposal.version]
    if matching and len(live) == 1:
        return actions
    if not live:
        body = _new(extension, proposal, now)
        return [*actions, Action(CREATE, proposal.name, f"upgrade to {proposal.version} available", body)]
    kept = matching[0] if matching else live[0]
    actions += [
        _delete(r, f"{_name(kept)} proposes the upgrade of {proposal.extension}") for r in live if r is not kept
    ]
    if not matching:
        reason = f"newer upgrade available: {_version(kept)} -> {proposal.version} (approval reset)"
        actions.append(Action(UPDATE, _name(kept), reason, {"spec": _spec(proposal, now)}))
    return actions


def _new(extension: KubeObject, proposal: RevisionProposal, now: str) -> dict[str, Any]:
    metadata = extension.get("metadata") or {}
    owner = {
        "apiVersion": str(extension.get("apiVersion") or API_VERSION),
        "kind": "ClusterExtension",
        "name": str(metadata.get("name")),
        "uid": str(metadata.get("uid") or ""),
        "controller": True,
    }
    return {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "metadata": {
            "name": proposal.name,
            "labels": {EXTENSION_LABEL: proposal.extension},
            "ownerReferences": [owner],
        },
        "spec": {"clusterExtensionRef": {"name": proposal.extension}, **_spec(proposal, now)},
    }


def _spec(proposal: RevisionProposal, now: str) -> dict[str, Any]:
    return {
        "version": proposal.version,
        "bundleMetadata": {"name": proposal.bundle_name, "version": proposal.version},
        "availableSince": now,
        "approved": False,
    }


def _delete(revision: KubeObject, reason: str) -> Action:
    return Action(DELETE, _name(revision), reason, uid=str((revision.get("metadata") or {}).get("uid") or ""))


def _why_none(check: UpgradeCheck) -> str:
    installed = check.extension.installed
    constraint = check.extension.source.version
    if installed is None:
        return "nothing is installed"
    if constraint and is_pinned(constraint, installed.version):
        return f"the version is pinned to {constraint}"
    if check.error is not None:
        return f"no upgrade in range: {check.error}"
    return f"the installed version {installed.version} is the newest candidate"


def _name(revision: KubeObject) -> str:
    return str((revision.get("metadata") or {}).get("name") or "")


def _version(revision: KubeObject) -> str:
    spec = revision.get("spec") or {}
    return str(spec.get("version") or "") if isinstance(spec, Mapping) else ""
