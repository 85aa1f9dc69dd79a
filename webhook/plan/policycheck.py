"""Would the policies admit a proposal today? The answer a pull request body gives.

For a ClusterExtensionRevision the check builds the UPDATE AdmissionRequest the approval would make
(``oldObject``: the proposed revision, ``approved: false``; ``object``: the same with ``approved: true``); its
``cluster.get()`` sees the policies' param objects and the ClusterExtension with its installed bundle.

For an add-on (``Change.addon``) it builds the UPDATE requests applying the change would make once merged: the
ClusterManagementAddOn (cluster-scoped, with the status the addon manager wrote, as an UPDATE keeps it) when a
placement's ``addonTemplate.installVersion`` or AddOnTemplate reference (or its default config) moves, and each
ManagedClusterAddOn (in its cluster's namespace) whose ``spec.installVersion`` or template reference moves;
``cluster.get()``/``cluster.list()`` see the param objects, the ClusterManagementAddOn, the canary
PlacementDecisions, ManagedClusterAddOns and ManifestWorks, and the AddOnTemplates the plan read.

Every request comes from the GitOps applier (``policyCheck.applier``: the Argo CD or Flux service account that
applies the change once merged, so the forecast is what the cluster will answer) and runs through the policy
engine as the webhook would (mutation, then validation of the patched object; ``PolicyEngine.admit``),
with ``clock.now()`` at the cycle's time. The sentence also names who may approve: the approver groups of the
policies' settings (``approverGroups`` of their param ConfigMap) and the forge teams ``policyCheck.teams`` maps
to them.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from webhook.olm import API_VERSION
from webhook.plan.extensions import AddOnFacts, AddOnUpdate, Change, UpgradeFacts
from webhook.plan.requests import DEFAULT_APPLIER, DEFAULT_APPLIER_GROUPS, Evaluator, UserInfo, admission_request
from webhook.policy import PolicySet, load_policy_set


@dataclass(frozen=True, slots=True)
class PolicyCheckConfig:
    """The policies changes are checked against, the GitOps ``applier`` whose requests they become once
    merged, and ``teams``: forge team (GitHub ``ORG/TEAM-SLUG``, GitLab group path) to Kubernetes group."""

    policies: tuple[str, ...]
    applier: UserInfo = field(default_factory=lambda: UserInfo(DEFAULT_APPLIER, DEFAULT_APPLIER_GROUPS))
    teams: Mapping[str, str] = field(default_factory=dict)


class ApprovalCheck:
    """The policy set of ``config`` loaded once per cycle; ``forecast(change)`` says what the policies would
    answer to one proposal.
    to one proposal.

    Raises ``PolicyLoadError`` when the policies do not load (relative paths are read from ``root``).
    """

    def __init__(self, config: PolicyCheckConfig, root: Path, now: datetime.datetime) -> None:
        self.config = config
        self.now = now
        self.policies = load_policy_set([root / p for p in config.policies])
        self.applied_by = f"when applied by {config.applier.username}"
        self.approvers = who_may_approve(self.policies, config.teams)

    def forecast(self, change: Change) -> str | None:
        """``would admit approving it today when applied by <applier>`` or ``would deny approving it today
        when applied by <applier>: <message>``, then who may approve (for an add-on, ``applying it``, with
        the object each denial is about); ``None`` for a change that proposes neither a revision nor an
        add-on version (removals, catalog images)."""
        if change.addon is not None:
            return self._addon_forecast(change.addon)
        facts, files = change.facts, [f for f in change.files if f.content is not None]
        if facts is None or change.revision is None or not files:
            return None
        proposed = yaml.safe_load(files[-1].content or "")
        approved = {**proposed, "spec": {**proposed["spec"], "approved": True}}
        denial = self._denial([_extension(change.subject, facts)], proposed, approved)
        verdict = f"would admit approving it today {self.applied_by}"
        if denial is not None:
            verdict = f"would deny approving it today {self.applied_by}: {denial}"
        return f"{verdict}. {self.approvers}" if self.approvers else verdict

    def _addon_forecast(self, facts: AddOnFacts) -> str:
        denials = []
        for update in facts.updates:
            denial = self._denial(facts.objects, update.old, update.new)
            if denial is not None:
                denials.append(f"{_where(update)}: {denial}")
        if not denials:
            return f"would admit applying it today {self.applied_by}"
        return f"would deny applying it today {self.applied_by}: {'; '.join(denials)}"

    def _denial(
        self, objects: Iterable[Mapping[str, Any]], old: Mapping[str, Any], new: Mapping[str, Any]
    ) -> str | None:
        """Run the UPDATE from ``old`` to ``new`` by the applier with ``objects`` in the store; ``None`` when
        admitted, else the denial message."""
        metadata = new.get("metadata") or {}
        where = "-".join(str(metadata.get(k)) for k in ("namespace", "name") if metadata.get(k))
        request = admission_request(
            "UPDATE", new=new, old=old, user=self.config.applier, uid=f"upgrade-gate-sync-{where}"
        )
        decision = Evaluator(self.policies, objects, self.now).admit(request).validated
        return None if decision.allowed else decision.message


def approver_groups(policies: PolicySet) -> list[str]:
    """The groups whose members may approve: the comma-separated ``approverGroups`` of the policies' param
    ConfigMaps, in order, without duplicates; empty when no param names any."""
    groups: list[str] = []
    for param in policies.params:
        data = param.get("data") if param.get("kind") == "ConfigMap" else None
        value = data.get("approverGroups") if isinstance(data, Mapping) else None
        if isinstance(value, str):
            groups += [g.strip() for g in value.split(",") if g.strip() and g.strip() not in groups]
    return groups


def who_may_approve(policies: PolicySet, teams: Mapping[str, str]) -> str:
    """``Approvers: members of the groups a, b, or of the teams org/t.`` from the ``approverGroups`` of the
    policies' param ConfigMaps and the forge teams mapped to those groups; empty when no param names any."""
    groups = approver_groups(policies)
    if not groups:
        return ""
    mapped = sorted(team for team, group in teams.items() if group in groups)
    via = f", or of the forge teams {', '.join(mapped)}" if mapped else ""
    return f"Approvers: members of the groups {', '.join(groups)}{via}."


def _where(update: AddOnUpdate) -> str:
    return f"{update.kind} {update.namespace}/{update.name}" if update.namespace else f"{update.kind} {update.name}"


def _extension(name: str, facts: UpgradeFacts) -> dict[str, object]:
    return {
        "apiVersion": API_VERSION,
        "kind": "ClusterExtension",
        "metadata": {"name": name},
        "spec": {"source": {"sourceType": "Catalog", "catalog": {"packageName": facts.package}}},
        "status": {"install": {"bundle": {"name": facts.installed_bundle, "version": facts.installed_version}}},
    }
