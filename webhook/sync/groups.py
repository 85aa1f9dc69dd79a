"""Grouping of proposals (``grouping`` in ``upgrade-gate.yaml``), pure: which branch proposes which change.

``per-extension`` (the default) keeps one branch per extension, ``<branchPrefix><extension>``. ``per-cluster``
puts every ClusterExtensionRevision change of the cluster (proposals, updates and removals of the revisions
directory ``revisions``: the cluster target the GitOps applier syncs) on one branch,
``<branchPrefix>cluster/<revisions>``, as one commit on the base branch with one pull request (Renovate's
``groupName``). Catalog image switches and add-ons keep their own branches either way.

Switching the setting replaces the other scheme's bot branches: a branch whose changes the new scheme proposes
elsewhere is deleted (its pull request closed) only once the branch replacing it is pushed, so nothing is lost;
a branch with a commit by anyone but the bot is left alone, and so is every change it proposes. The
``availableSince`` of a revision proposed on either branch is kept (``branch_revisions``).
"""

from __future__ import annotations

import contextlib
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

from webhook.errors import ManifestError
from webhook.manifests import iter_yaml_documents
from webhook.plan import (
    REVISION_KIND,
    Action,
    BranchState,
    Change,
    Kind,
    Outcome,
    Planned,
    RevisionFile,
    parse_revision,
)

PER_EXTENSION = "per-extension"
PER_CLUSTER = "per-cluster"
CLUSTER_PREFIX = "cluster/"
"""The subject (and branch name below ``branchPrefix``) of a cluster's group starts with this."""
_GROUPED = (Kind.PROPOSE, Kind.UPDATE, Kind.REMOVE)


@dataclass(frozen=True, slots=True)
class Grouped:
    """A plan as the branches see it: ``plan`` by subject (a group's members replaced by the group, under
    ``cluster/<revisions>``), and ``replaced``: bot branches of the other scheme, each with the subjects whose
    new branch replaces it (delete it once they are all pushed)."""

    plan: dict[str, Planned]
    replaced: dict[str, tuple[str, ...]]


def cluster_subject(revisions: str) -> str:
    """The subject of the group of the cluster whose revisions directory is ``revisions``."""
    return f"{CLUSTER_PREFIX}{revisions.strip('/')}"


def group_change(subject: str, branch: str, members: Sequence[Change]) -> Change:
    """One change proposing ``members`` (extension changes, in order) together on ``branch``: their files, the
    title ``Upgrade ClusterExtensions of <revisions>`` (it stays when members come and go, so the pull request
    is updated, not replaced) and a reason listing each member's title and reason."""
    files = sorted((f for member in members for f in member.files), key=lambda f: f.path)
    return Change(
        subject=subject,
        kind=Kind.GROUP,
        branch=branch,
        title=f"Upgrade ClusterExtensions of {subject.removeprefix(CLUSTER_PREFIX)}",
        files=tuple(files),
        from_version=None,
        to_version=None,
        reason="\n".join(f"- {member.title}: {member.reason}" for member in members),
        members=tuple(members),
    )


def group_plan(
    plan: Mapping[str, Planned],
    states: Mapping[str, BranchState],
    grouping: str,
    group: tuple[str, str],
    *,
    carried: Collection[str],
    scope: Collection[str] | None,
) -> Grouped:
    """Regroup ``plan`` (by subject) for ``grouping``; ``group`` is the cluster's subject and branch,
    ``carried`` the subjects its bot branch proposes now, ``states`` the bot's branches on the remote, and
    ``scope`` the subjects a retry plans (``None``: all).

    ``per-cluster``: every extension change joins the group, unless its own branch has a person's commit (it
    stays on that branch, which is left alone); its own bot branch is replaced by the group's. An empty group
    whose branch exists is an ``unchanged`` outcome (withdrawn). ``per-extension``: a bot group branch is
    replaced by the branches of the changes it carries, or withdrawn when it carries none due any more; a group
    branch with a person's commit is left alone (an outcome its ``branch_action`` reports)."""
    subject, branch = group
    state = states.get(branch)
    in_scope = scope is None or subject in scope
    if grouping == PER_EXTENSION:
        due = tuple(s for s in sorted(carried) if s in plan and plan[s].change is not None)
        if state is None or (due and not state.foreign_authors):
            return Grouped(dict(plan), {branch: due} if state is not None else {})
        gone = Outcome(subject, Action.UNCHANGED, f"grouping is {PER_EXTENSION}")
        return Grouped({**plan, **({subject: gone} if in_scope else {})}, {})
    members: list[Change] = []
    found: dict[str, Planned] = {}
    replaced: dict[str, tuple[str, ...]] = {}
    for name, item in plan.items():
        change = item.change
        own = states.get(change.branch) if change is not None else None
        if change is None or change.kind not in _GROUPED or (own is not None and own.foreign_authors):
            found[name] = item
            continue
        members.append(change)
        if own is not None:
            replaced[change.branch] = (name,)
    if members:
        found[subject] = group_change(subject, branch, sorted(members, key=lambda m: m.subject))
    elif state is not None and in_scope:
        found[subject] = Outcome(subject, Action.UNCHANGED, "no ClusterExtensionRevision change is due")
    return Grouped(found, replaced)


def branch_revisions(state: BranchState | None, extension: str | None = None) -> list[RevisionFile]:
    """The revisions a bot branch writes (of ``extension`` when given), to keep their ``availableSince``;
    unreadable ones are ignored."""
    if state is None or state.changes is None:
        return []
    found = []
    for change in state.changes:
        if change.content is None:
            continue
        with contextlib.suppress(ManifestError):
            for document, _ in iter_yaml_documents(change.content, change.path):
                if isinstance(document, dict) and document.get("kind") == REVISION_KIND:
                    found.append(parse_revision(change.path, document))
    return [r for r in found if extension is None or r.extension == extension]


def carried_subjects(state: BranchState | None, base: Sequence[RevisionFile]) -> set[str]:
    """The extensions a bot branch proposes changes for: those whose revisions it writes, and those of the base
    branch's revisions (``base``) it deletes."""
    deleted = {c.path for c in (state.changes or ()) if c.content is None} if state is not None else set()
    return {r.extension for r in branch_revisions(state)} | {r.extension for r in base if r.file in deleted}


def members_of(item: Planned) -> tuple[str, ...]:
    """The subjects a plan item reports on: a group's members, else its own subject."""
    change = item.change
    return tuple(member.subject for member in change.proposals) if change is not None else (item.subject,)
