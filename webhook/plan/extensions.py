"""The pure core of the sync loop: from upgrade checks and the repository's files to a plan. No I/O.

The ClusterExtensionRevision lifecycle, applied to Git (one ClusterExtensionRevision per ClusterExtension):

* **propose** — an upgrade is due and no revision exists: write ``<revisions>/<ext>-<version>.yaml`` with
  ``approved: false`` and ``availableSince`` now;
* **update** — an upgrade to another version is due while a revision (in the base branch, or proposed on the
  branch) names an older one: the revision is updated in place; new version, new ``availableSince``,
  ``approved`` reset to false. A revision of the base branch keeps its file and ``metadata.name`` (the version
  it first proposed), so applying the change is an UPDATE of the existing object: Argo CD and Flux apply
  before they prune, and a new object beside the old one would be refused by the one-revision-per-extension
  rule. Any other revision of the extension in the base branch is removed. A revision only proposed on the
  branch was never applied: it is replaced by ``<ext>-<version>``;
* **remove** — a revision exists in the base branch but none is due: the upgrade completed (installed version
  reached), the version is pinned, the installed bundle is the newest, nothing is in range, nothing is
  installed, or the ClusterExtension is gone from the repository;
* otherwise nothing changes. A revision for the due version already in the base branch is left exactly as it
  is (it may be approved); ``availableSince`` of a proposal already on its branch is kept, so a second run
  writes the same bytes. The ClusterExtension (and its version constraint) is never written.

Every change goes on branch ``<branchPrefix><extension>`` as one commit on the base branch (with ``grouping:
per-cluster`` the sync loop proposes them together as one ``group`` change, ``webhook.sync.groups``). Whether
that branch must be pushed, kept, left alone (a human committed to it) or withdrawn is ``branch_action``'s
decision.
Catalog image switches (``webhook.plan.templates``) and add-on installVersion upgrades
(``webhook.plan.addons``, kind ``addon-version``) are ``Change`` values too and take the same road.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from webhook.olm import Edge, Resolution, RevisionProposal, UpgradeCheck, is_pinned
from webhook.plan.actions import Action, BranchAction, Kind
from webhook.plan.manifests import ExtensionEntry, RevisionFile, render_revision, revision_path

NOTHING_IN_RANGE = "no bundles found for package"


@dataclass(frozen=True, slots=True)
class FileChange:
    """One file of a change: its repository-relative path and new text (``None`` = delete)."""

    path: str
    content: str | None


@dataclass(frozen=True, slots=True)
class UpgradeFacts:
    """What a pull request body says about an upgrade: from, to, how, where from, since when; the versions
    the upgrade skips, the bundle image, the bundle's ClusterServiceVersion metadata (``olm.csv.metadata``:
    description, links, maintainers, provider; empty when the catalog carries none) and the deprecation
    notices of the package, the channel and the bundle."""

    package: str
    installed_bundle: str
    installed_version: str
    bundle: str
    version: str
    catalog: str
    edge: Edge
    available_since: str
    skipped: tuple[str, ...] = ()
    image: str = ""
    metadata: Mapping[str, Any] = field(default_factory=dict)
    deprecations: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class AddOnMove:
    """One pinned ``installVersion`` of an add-on: ``where`` it is (``placement default/canary-placement`` or
    ``cluster cluster1``), its file, the version it pins now, and whether it is a canary."""

    where: str
    file: str
    from_version: str
    canary: bool


@dataclass(frozen=True, slots=True)
class AddOnUpdate:
    """An object an add-on change updates, before and after, as the API server would see the UPDATE:
    ``kind`` ClusterManagementAddOn (cluster-scoped, ``namespace`` empty) or ManagedClusterAddOn."""

    kind: str
    name: str
    namespace: str
    old: Mapping[str, Any]
    new: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class RolloutRow:
    """One line of an add-on's rollout plan: its ``order`` (1 the canaries, 2 the rest, once the canaries have
    soaked), ``what`` rolls (``placement ns/name``, ``cluster c``), its ``clusters`` (count and decision groups),
    its ``strategy`` (the placement's ``rolloutStrategy`` in words) and ``status`` (what moves, what holds it)."""

    order: int
    what: str
    clusters: str
    strategy: str
    status: str


@dataclass(frozen=True, slots=True)
class AddOnFacts:
    """What a pull request body says about an add-on upgrade (the add-on installVersion lifecycle).

    ``version`` is the target, ``supported``/``default`` the ClusterManagementAddOn's status as read from
    ``status_from`` (``the cluster`` or ``the manifests' status``); ``moves`` are the installVersions the change
    edits, ``held`` those that wait for the canaries; ``canary`` says how the canary gate stands and
    ``ready_at`` (RFC 3339) when its soak ends. ``updates`` and ``objects`` (the ClusterManagementAddOn, the
    canary PlacementDecisions and ManagedClusterAddOns) let the policy check replay the change. ``template`` is
    the target AddOnTemplate when the change moves template references (``supported`` then lists the add-on's
    templates as ``name (version)``), and ``rollout`` the rollout plan, canaries first.
    """

    addon: str
    version: str
    supported: tuple[str, ...]
    default: str | None
    status_from: str
    moves: tuple[AddOnMove, ...]
    held: tuple[AddOnMove, ...]
    canary: str
    ready_at: str | None
    updates: tuple[AddOnUpdate, ...]
    objects: tuple[Mapping[str, Any], ...]
    template: str | None = None
    rollout: tuple[RolloutRow, ...] = ()


@dataclass(frozen=True, slots=True)
class Change:
    """A change to propose on one branch.

    ``subject`` is the extension name (or ``clustercatalog/<name>`` for a catalog image, ``addon/<name>`` for
    an add-on, ``cluster/<revisions>`` for a group), ``kind`` what it proposes (``Kind``), ``files`` sorted by
    path, ``reason`` one sentence (why a removal, how an upgrade is reached), ``facts`` the upgrade's facts for
    propose/update, ``addon`` an add-on upgrade's facts, for a
    group its ``members``: the extensions' own changes, by subject, whose files it writes together, and
    ``approved`` when the revision is proposed ``approved: true`` (the sync loop's automerge).
    """

    subject: str
    kind: Kind
    branch: str
    title: str
    files: tuple[FileChange, ...]
    from_version: str | None
    to_version: str | None
    reason: str
    facts: UpgradeFacts | None = None
    revision: RevisionProposal | None = None
    addon: AddOnFacts | None = None
    members: tuple[Change, ...] = ()
    approved: bool = False

    @property
    def commit_message(self) -> str:
        """The commit message: the title, a blank line, the reason (deterministic)."""
        return f"{self.title}\n\n{self.reason}\n"

    @property
    def change(self) -> Change:
        """The change a plan item proposes: this one (an ``Outcome`` proposes none)."""
        return self

    @property
    def outcome(self) -> None:
        """The outcome of a plan item without a change: none."""
        return None

    @property
    def proposals(self) -> tuple[Change, ...]:
        """The changes the report speaks of one by one: a group's members, else this change."""
        return self.members or (self,)


@dataclass(frozen=True, slots=True)
class Outcome:
    """A subject with nothing to propose this cycle: ``action`` unchanged, skipped, held (an upgrade waiting for
    the add-on's canaries), invalid (a manifest that cannot be used) or unresolved (an upgrade that cannot be
    worked out), and why; ``ready_at`` (RFC 3339) when a held upgrade's canary soak ends, if known."""

    subject: str
    action: Action
    reason: str
    file: str | None = None
    ready_at: str | None = None

    @property
    def change(self) -> None:
        """The change a plan item proposes: none."""
        return None

    @property
    def outcome(self) -> Outcome:
        """The outcome of a plan item without a change: this one."""
        return self


Planned = Change | Outcome
"""A subject's plan item: a change to propose, or an outcome without one; ``item.change`` and ``item.outcome``
tell them apart (one is ``None``)."""


@dataclass(frozen=True, slots=True)
class BranchState:
    """A proposal branch on the remote: its head, the authors of commits not by the bot (since the base
    branch), and the bot's change (``None`` unless the branch is exactly one bot commit)."""

    head: str
    foreign_authors: tuple[str, ...]
    changes: tuple[FileChange, ...] | None


@dataclass(frozen=True, slots=True)
class PlanContext:
    """What planning needs besides the checks: revisions directory, branch prefix, and now (RFC 3339)."""

    revisions: str
    branch_prefix: str
    now: str


def plan_extension(
    entry: ExtensionEntry,
    check: UpgradeCheck,
    base: Sequence[RevisionFile],
    branch: Sequence[RevisionFile],
    context: PlanContext,
) -> Planned:
    """The ClusterExtensionRevision lifecycle's decision for one extension.

    ``base`` are its revisions in the base branch, ``branch`` those its proposal branch writes (to keep
    ``availableSince``). A resolution error other than "nothing in range", or one because no
    catalog offers the package, changes nothing (unresolved).
    """
    extension = entry.extension
    if check.unavailable is not None:
        return Outcome(extension.name, Action.UNRESOLVED, f"{check.unavailable}: {check.error}", entry.file)
    if check.error is not None and NOTHING_IN_RANGE not in check.error:
        return Outcome(extension.name, Action.UNRESOLVED, f"resolution failed: {check.error}", entry.file)
    proposal = check.revision
    if proposal is None:
        if not base:
            return Outcome(extension.name, Action.UNCHANGED, _why_none(check))
        installed = extension.installed
        reason = _why_none(check)
        if installed is not None and any(r.version == installed.version for r in base):
            reason = f"the upgrade to {installed.version} has completed"
        return _removal(extension.name, base, reason, context)
    if any(r.version == proposal.version for r in base) and len(base) == 1:
        return Outcome(extension.name, Action.UNCHANGED, f"revision {base[0].name} is in the base branch")
    resolution = check.resolution
    installed = extension.installed
    assert resolution is not None and installed is not None  # a revision is only due for an upgrade
    since = next((r.available_since for r in (*branch, *base) if r.version == proposal.version), context.now)
    if base:
        kept = min(base, key=lambda r: r.file)
        proposal = replace(proposal, name=kept.name)
        path = kept.file
    else:
        path = revision_path(context.revisions, proposal.name)
    files = [FileChange(r.file, None) for r in base if r.file != path]
    files.append(FileChange(path, render_revision(proposal, since)))
    older = [r.version for r in (*base, *branch) if r.version != proposal.version]
    facts = UpgradeFacts(
        package=extension.source.package,
        installed_bundle=installed.name,
        installed_version=installed.version,
        bundle=proposal.bundle_name,
        version=proposal.version,
        catalog=resolution.catalog,
        edge=resolution.edge,
        available_since=since,
        skipped=resolution.between,
        image=resolution.bundle.image,
        metadata=resolution.bundle.csv_metadata(),
        deprecations=_deprecations(resolution),
    )
    return Change(
        subject=extension.name,
        kind=Kind.UPDATE if older else Kind.PROPOSE,
        branch=branch_name(context.branch_prefix, extension.name),
        title=f"Upgrade {extension.name} to {proposal.version}",
        files=tuple(sorted(files, key=lambda f: f.path)),
        from_version=installed.version,
        to_version=proposal.version,
        reason=_upgrade_reason(resolution.edge, older, proposal.name if base else None),
        facts=facts,
        revision=proposal,
    )


def plan_orphans(orphans: Sequence[RevisionFile], context: PlanContext) -> list[Change]:
    """Removals of revisions whose ClusterExtension is no longer in the repository (the lifecycle: extension
    deleted, its revisions are cleaned up), one change per extension."""
    per_extension: dict[str, list[RevisionFile]] = {}
    for revision in orphans:
        per_extension.setdefault(revision.extension, []).append(revision)
    return [
        _removal(name, revisions, f"ClusterExtension {name} is not in the repository any more", context)
        for name, revisions in sorted(per_extension.items())
    ]


def branch_name(prefix: str, subject: str) -> str:
    """The one branch of a subject: ``<prefix><subject>``."""
    return f"{prefix}{subject}"


def branch_action(change: Change | None, branch: BranchState | None) -> BranchAction:
    """What to do with a subject's branch.

    ``human`` when anyone but the bot committed to it (it is left alone, as Renovate does); otherwise
    ``keep`` when it already carries exactly this change, ``push`` when it must be (re)written as one commit
    on the current base, ``withdraw`` when nothing is to be proposed but a bot branch still proposes
    something, ``none`` when there is neither a change nor a branch.
    """
    if branch is not None and branch.foreign_authors:
        return BranchAction.HUMAN
    if change is None:
        return BranchAction.WITHDRAW if branch is not None else BranchAction.NONE
    if branch is not None and branch.changes == change.files:
        return BranchAction.KEEP
    return BranchAction.PUSH


def _removal(subject: str, revisions: Sequence[RevisionFile], reason: str, context: PlanContext) -> Change:
    names = ", ".join(r.name for r in revisions)
    return Change(
        subject=subject,
        kind=Kind.REMOVE,
        branch=branch_name(context.branch_prefix, subject),
        title=f"Remove ClusterExtensionRevision {names}",
        files=tuple(FileChange(r.file, None) for r in sorted(revisions, key=lambda r: r.file)),
        from_version=", ".join(r.version for r in revisions),
        to_version=None,
        reason=reason,
    )


def _deprecations(resolution: Resolution) -> tuple[str, ...]:
    """The catalog's deprecation notices for the package, the upgrade's channel and the resolved bundle."""
    deprecation = resolution.deprecation
    if deprecation is None:
        return ()
    notices = [
        (f"package {resolution.package}", deprecation.package_message),
        (f"channel {resolution.edge.channel}", deprecation.channels.get(resolution.edge.channel or "")),
        (f"bundle {resolution.bundle.name}", deprecation.bundles.get(resolution.bundle.name)),
    ]
    return tuple(
        f"{what} is deprecated{': ' + message if message else ''}" for what, message in notices if message is not None
    )


def _why_none(check: UpgradeCheck) -> str:
    extension = check.extension
    installed = extension.installed
    if installed is None:
        return "nothing is installed (initial installs need no approval)"
    constraint = extension.source.version
    if constraint and is_pinned(constraint, installed.version):
        return f"version pinned to {constraint} (no revision for a pinned version)"
    if check.error is not None:
        return f"no upgrade in range: {check.error}"
    return f"the installed version {installed.version} is the newest candidate"


def _upgrade_reason(edge: Edge, older: Sequence[str], updated: str | None) -> str:
    how = edge.describe()
    if not older:
        return f"Upgrade available: {how}."
    versions = ", ".join(sorted(set(older)))
    if updated is None:
        return f"Newer upgrade available: {how}; replaces the proposal for {versions}."
    return (
        f"Newer upgrade available: {how}; updates the ClusterExtensionRevision {updated}, which proposed {versions} "
        "(its approval is reset)."
    )
