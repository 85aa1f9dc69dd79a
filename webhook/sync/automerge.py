"""Automerge (``automerge`` in ``upgrade-gate.yaml``, off by default): which proposals merge without a person,
decided as ``upgrade-gate review`` decides a pull request (``webhook.plan.review``).

A proposal qualifies when it proposes a ClusterExtensionRevision (propose or update) whose upgrade is of one of
the ``automerge.change`` levels (the most significant semver part that differs between the installed and the
target version: ``patch`` by default), and when the policies admit its approval with no person involved: the
revision is proposed ``approved: true`` and every request applying the change makes (against the base branch's
ClusterExtensions and revisions, as the cluster stores them) is admitted for the GitOps applier
(``policyCheck.applier``) and for the approving "reviewer" being the bot itself (its git author name, group
``system:authenticated``: no one in particular). The bundled policies admit an approval only for a member of
``approverGroups``, or for a trusted applier on the strength of a person's review in Git, so with them nothing
ever qualifies. A group (``grouping: per-cluster``) qualifies when every member does. Pure: texts in, a change
out.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass, replace

from webhook.errors import InputError
from webhook.plan import (
    AUTHENTICATED,
    Change,
    FileChange,
    Kind,
    Manifests,
    Review,
    Reviewer,
    UserInfo,
    object_changes,
    read_manifests,
    render_revision,
    review,
)
from webhook.policy import PolicySet
from webhook.sync.groups import group_change
from webhook.versions import parse_version

_PARTS = ("major", "minor", "patch")


@dataclass(frozen=True, slots=True)
class Automerge:
    """The automerge decision of one cycle: the policy set, the GitOps ``applier``, the bot's user name, the
    change ``levels`` that may merge, the cycle's time, and ``base``: the base branch's ClusterExtensions and
    revisions (``webhook.plan.read_manifests``)."""

    policies: PolicySet
    applier: UserInfo
    bot: str
    levels: tuple[str, ...]
    now: datetime.datetime
    base: Manifests

    def approve(self, change: Change) -> Change | None:
        """``change`` with its revision (each member's, for a group) written ``approved: true`` when it qualifies
        (see the module docstring), else ``None``."""
        members = [self._approved(member) for member in change.proposals]
        kept = [member for member in members if member is not None]
        if len(kept) != len(members):
            return None
        return group_change(change.subject, change.branch, kept) if change.kind == Kind.GROUP else kept[0]

    def _approved(self, change: Change) -> Change | None:
        facts, revision = change.facts, change.revision
        if change.kind not in (Kind.PROPOSE, Kind.UPDATE) or facts is None or revision is None:
            return None
        if change_level(facts.installed_version, facts.version) not in self.levels:
            return None
        text = render_revision(revision, facts.available_since, approved=True)
        files = tuple(f if f.content is None else FileChange(f.path, text) for f in change.files)
        return replace(change, files=files, approved=True) if self._admitted(files) else None

    def _admitted(self, files: tuple[FileChange, ...]) -> bool:
        """Whether every request applying ``files`` over the base makes is admitted, an approval among them, for
        the applier and for the bot as the only reviewer."""
        written = {change.path: change.content for change in files if change.content is not None}
        added = read_manifests(written)
        paths = {change.path for change in files}
        head = [*(m for m in self.base.objects if m.file not in paths), *added.objects]
        changes, problems = object_changes(self.base.objects, head)
        if problems or added.problems:
            return False
        reviewer = Reviewer(UserInfo(self.bot, (AUTHENTICATED,)), note="automerge")
        inputs = Review(changes, self.base.objects, self.policies, self.applier, (reviewer,), self.now, texts=written)
        rows = review(inputs)
        approved = any(row.role == "reviewer" and row.verdict == "admitted" for row in rows)
        return approved and not any(row.failing for row in rows)


def change_level(installed: str, target: str) -> str:
    """The most significant of major, minor and patch that differs between two semver versions; ``none`` when
    they agree on all three (or either is not semver)."""
    try:
        before, after = parse_version(installed), parse_version(target)
    except InputError:
        return "none"
    return next((part for part in _PARTS if getattr(before, part) != getattr(after, part)), "none")
