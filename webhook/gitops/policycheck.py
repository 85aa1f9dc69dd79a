"""Would the policies admit approving a proposal today? The answer a pull request body gives.

The check builds the UPDATE AdmissionRequest the approval would make (``oldObject``: the proposed revision,
``approved: false``; ``object``: the same with ``approved: true``; ``userInfo``: ``policyCheck.username`` and
``groups``) and runs it through the policy engine as the webhook would (mutation, then validation of the
patched object; ``webhook.policy.suites.admit``), with ``clock.now()`` at the cycle's time and a
``cluster.get()`` that sees the policies' param objects and the ClusterExtension with its installed bundle.
"""

from __future__ import annotations

import datetime
from pathlib import Path

import yaml

from webhook.gitops.config import PolicyCheckConfig
from webhook.gitops.proposals import Change, UpgradeFacts
from webhook.policy.engine import PolicyEngine
from webhook.policy.loader import load_policy_set
from webhook.policy.store import InMemoryObjectStore
from webhook.policy.suites import admit
from webhook.resolve.extension import API_VERSION

RESOURCE = {"group": "olm.operatorframework.io", "version": "v1", "resource": "clusterextensionrevisions"}
KIND = {"group": "olm.operatorframework.io", "version": "v1", "kind": "ClusterExtensionRevision"}


class ApprovalCheck:
    """The policy set of ``config`` loaded once per cycle; ``verdict(change)`` evaluates one proposal.

    Raises ``PolicyLoadError`` when the policies do not load (relative paths are read from ``root``).
    """

    def __init__(self, config: PolicyCheckConfig, root: Path, now: datetime.datetime) -> None:
        self.config = config
        self.now = now
        self.policies = load_policy_set([root / p for p in config.policies])

    def verdict(self, change: Change) -> str | None:
        """``would admit approving it today`` or ``would deny approving it today: <message>``; ``None`` for
        a change that proposes no revision (removals, catalog images)."""
        facts, files = change.facts, [f for f in change.files if f.content is not None]
        if facts is None or change.revision is None or not files:
            return None
        proposed = yaml.safe_load(files[-1].content or "")
        approved = {**proposed, "spec": {**proposed["spec"], "approved": True}}
        store = InMemoryObjectStore([*self.policies.params, _extension(change.subject, facts)])
        engine = PolicyEngine(self.policies, store)
        request = {
            "uid": f"upgrade-gate-sync-{change.revision.name}",
            "kind": KIND,
            "resource": RESOURCE,
            "requestKind": KIND,
            "requestResource": RESOURCE,
            "name": change.revision.name,
            "operation": "UPDATE",
            "userInfo": {"username": self.config.username, "groups": list(self.config.groups)},
            "object": approved,
            "oldObject": proposed,
            "dryRun": True,
            "options": {"apiVersion": "meta.k8s.io/v1", "kind": "UpdateOptions"},
        }
        decision = admit(engine, request, None, self.now).validated
        if decision.allowed:
            return f"would admit approving it today (as {self.config.username})"
        return f"would deny approving it today (as {self.config.username}): {decision.message}"


def _extension(name: str, facts: UpgradeFacts) -> dict[str, object]:
    return {
        "apiVersion": API_VERSION,
        "kind": "ClusterExtension",
        "metadata": {"name": name},
        "spec": {"source": {"sourceType": "Catalog", "catalog": {"packageName": facts.package}}},
        "status": {"install": {"bundle": {"name": facts.installed_bundle, "version": facts.installed_version}}},
    }
