"""Would the policies admit a proposal today? The answer a pull request body gives.

For a ClusterExtensionRevision the check builds the UPDATE AdmissionRequest the approval would make
(``oldObject``: the proposed revision, ``approved: false``; ``object``: the same with ``approved: true``); its
``cluster.get()`` sees the policies' param objects and the ClusterExtension with its installed bundle.

For an add-on (``Change.addon``) it builds the UPDATE requests applying the change would make once merged: the
ClusterManagementAddOn (cluster-scoped, with the status the addon manager wrote, as an UPDATE keeps it) when a
placement's ``addonTemplate.installVersion`` moves, and each ManagedClusterAddOn (in its cluster's namespace)
whose ``spec.installVersion`` moves; ``cluster.get()``/``cluster.list()`` see the param objects, the
ClusterManagementAddOn, the canary PlacementDecisions and the canary ManagedClusterAddOns the plan read.

Every request comes from ``policyCheck.username`` and ``groups`` and runs through the policy engine as the
webhook would (mutation, then validation of the patched object; ``webhook.policy.suites.admit``), with
``clock.now()`` at the cycle's time.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import yaml

from webhook.gitops.config import PolicyCheckConfig
from webhook.gitops.proposals import AddOnFacts, Change, UpgradeFacts
from webhook.objects import InMemoryObjectStore
from webhook.policy.engine import PolicyEngine
from webhook.policy.loader import load_policy_set
from webhook.policy.suites import admit
from webhook.resolve.extension import API_VERSION

RESOURCE = {"group": "olm.operatorframework.io", "version": "v1", "resource": "clusterextensionrevisions"}
KIND = {"group": "olm.operatorframework.io", "version": "v1", "kind": "ClusterExtensionRevision"}
ADDON_GROUP, ADDON_VERSION = "addon.open-cluster-management.io", "v1alpha1"
ADDON_RESOURCES = {"ClusterManagementAddOn": "clustermanagementaddons", "ManagedClusterAddOn": "managedclusteraddons"}


class ApprovalCheck:
    """The policy set of ``config`` loaded once per cycle; ``verdict(change)`` evaluates one proposal.

    Raises ``PolicyLoadError`` when the policies do not load (relative paths are read from ``root``).
    """

    def __init__(self, config: PolicyCheckConfig, root: Path, now: datetime.datetime) -> None:
        self.config = config
        self.now = now
        self.policies = load_policy_set([root / p for p in config.policies])

    def verdict(self, change: Change) -> str | None:
        """``would admit approving it today`` or ``would deny approving it today: <message>`` (for an add-on,
        ``applying it``, with the object each denial is about); ``None`` for a change that proposes neither a
        revision nor an add-on version (removals, catalog images)."""
        if change.addon is not None:
            return self._addon_verdict(change.addon)
        facts, files = change.facts, [f for f in change.files if f.content is not None]
        if facts is None or change.revision is None or not files:
            return None
        proposed = yaml.safe_load(files[-1].content or "")
        approved = {**proposed, "spec": {**proposed["spec"], "approved": True}}
        kinds = (KIND, RESOURCE)
        objects = [_extension(change.subject, facts)]
        name = change.revision.name
        decision = self._admit(objects, kinds, name=name, namespace="", old=proposed, new=approved)
        if decision is None:
            return f"would admit approving it today (as {self.config.username})"
        return f"would deny approving it today (as {self.config.username}): {decision}"

    def _addon_verdict(self, facts: AddOnFacts) -> str:
        denials = []
        for update in facts.updates:
            kinds = (
                {"group": ADDON_GROUP, "version": ADDON_VERSION, "kind": update.kind},
                {"group": ADDON_GROUP, "version": ADDON_VERSION, "resource": ADDON_RESOURCES[update.kind]},
            )
            denial = self._admit(
                facts.objects, kinds, name=update.name, namespace=update.namespace, old=update.old, new=update.new
            )
            if denial is not None:
                where = f"{update.namespace}/{update.name}" if update.namespace else update.name
                denials.append(f"{update.kind} {where}: {denial}")
        if not denials:
            return f"would admit applying it today (as {self.config.username})"
        return f"would deny applying it today (as {self.config.username}): {'; '.join(denials)}"

    def _admit(
        self,
        objects: Iterable[Mapping[str, Any]],
        kinds: tuple[Mapping[str, str], Mapping[str, str]],
        *,
        name: str,
        namespace: str,
        old: Mapping[str, Any],
        new: Mapping[str, Any],
    ) -> str | None:
        """Run the UPDATE of ``name`` (in ``namespace``, empty when cluster-scoped) from ``old`` to ``new`` with
        ``objects`` in the store; ``None`` when admitted, else the denial message."""
        store = InMemoryObjectStore([*self.policies.params, *(o for o in objects if _storable(o))])
        engine = PolicyEngine(self.policies, store)
        kind, resource = kinds
        request = {
            "uid": f"upgrade-gate-sync-{namespace}-{name}" if namespace else f"upgrade-gate-sync-{name}",
            "kind": kind,
            "resource": resource,
            "requestKind": kind,
            "requestResource": resource,
            "name": name,
            **({"namespace": namespace} if namespace else {}),
            "operation": "UPDATE",
            "userInfo": {"username": self.config.username, "groups": list(self.config.groups)},
            "object": new,
            "oldObject": old,
            "dryRun": True,
            "options": {"apiVersion": "meta.k8s.io/v1", "kind": "UpdateOptions"},
        }
        namespace_object = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}
        decision = admit(engine, request, namespace_object if namespace else None, self.now).validated
        return None if decision.allowed else decision.message


def _storable(item: Mapping[str, Any]) -> bool:
    """Objects the store can key: an apiVersion, a kind and a name (a manifest in Git may lack one)."""
    metadata = item.get("metadata") or {}
    return all(isinstance(v, str) for v in (item.get("apiVersion"), item.get("kind"), metadata.get("name")))


def _extension(name: str, facts: UpgradeFacts) -> dict[str, object]:
    return {
        "apiVersion": API_VERSION,
        "kind": "ClusterExtension",
        "metadata": {"name": name},
        "spec": {"source": {"sourceType": "Catalog", "catalog": {"packageName": facts.package}}},
        "status": {"install": {"bundle": {"name": facts.installed_bundle, "version": facts.installed_version}}},
    }
