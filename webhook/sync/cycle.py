"""One cycle of ``upgrade-gate sync``: fetch, read, resolve, plan, commit, push, open pull requests, report.

A cycle, in order (``run_cycle``):

1. lock the working clone (a second run on the same ``workdir`` fails at once instead of racing);
2. fetch the remote and check out the base branch (``baseBranch`` of ``upgrade-gate.yaml``, read first from
   the remote's default branch); list the forge's open pull requests, so an unreachable remote or forge fails
   the cycle before anything is written;
3. load the catalogs once, learn installed versions (manifests' status or the cluster), and plan every
   extension (``webhook.plan.extensions``), every templated ClusterCatalog (``webhook.plan.templates``) and,
   with ``addons`` configured, every add-on's next installVersion step (``webhook.plan.addons``, its
   facts from ``webhook.sync.views``; an add-on waiting for its canaries is reported ``held``);
4. group the plan (``grouping``, ``webhook.sync.groups``: with ``per-cluster`` every ClusterExtensionRevision
   change on one branch), then per branch: leave it alone if a human committed to it; skip a change whose pull
   request (same branch, same title; for a group's member, a group pull request closed under the group's title
   that listed it) was closed without merging; keep a branch that already carries the change; outside the
   ``schedule`` windows report a change to push as ``waiting`` (when the next window opens); otherwise commit
   the change as one commit on the base branch and push every branch at once, each with a lease; then delete
   (one more push) the other grouping scheme's bot branches whose changes now stand on their new branch;
5. push rejections (someone pushed in between) are retried from a freshly fetched base, up to
   ``max_push_attempts`` times in all, then reported as failed; the base branch is never pushed;
6. open or update one pull request per pushed or kept branch, delete bot branches whose proposal is over:
   ``merged`` when its change is in the base branch (the branch merged, or every file it writes reads the same
   there after a squash or rebase merge), else ``withdrawn`` (its open pull request closed);
7. with ``dashboard.enabled``, create or rewrite the dashboard issue (``webhook.sync.dashboard``); a forge
   failure there is a warning of the report, not a failed cycle, and the next cycle writes it again.

A second cycle with nothing new makes no commit, no push and no forge write. ``GitError`` (remote or forge
unreachable), ``FetchError`` (a catalogd URL), ``CatalogError`` and ``InputError`` (``upgrade-gate.yaml``,
a ``baseBranch`` the remote lacks) abort the cycle; a bad manifest
only skips itself, reported ``invalid`` with its file and reason; an upgrade that cannot be worked out is
``unresolved`` (``PROBLEMS``).
"""

from __future__ import annotations

import contextlib
import datetime
import fcntl
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

from webhook.errors import CatalogError, GitError, InputError
from webhook.io import Credentials, Identity, NewCommit, RefUpdate, Repo
from webhook.io.forges import Forge, PullRequest, make_forge
from webhook.manifests import read_text
from webhook.olm import check_extension
from webhook.plan import (
    SUBJECT_PREFIX,
    Action,
    AddOnContext,
    ApprovalCheck,
    BranchAction,
    BranchState,
    Change,
    Kind,
    Outcome,
    PlanContext,
    Problem,
    RevisionFile,
    addon_subject,
    branch_action,
    branch_name,
    matching_files,
    plan_addon,
    plan_catalog_image,
    plan_extension,
    plan_orphans,
    read_addons,
    read_extensions,
    read_manifests,
    read_revisions,
    render_body,
    rfc3339,
)
from webhook.plan.body import proposed_titles, render_group_body
from webhook.sync.automerge import Automerge
from webhook.sync.config import SyncConfig, load_config
from webhook.sync.dashboard import MARKER, Dashboard, Facts, render, rows
from webhook.sync.groups import (
    branch_revisions,
    carried_subjects,
    cluster_subject,
    group_change,
    group_plan,
    members_of,
)
from webhook.sync.report import STANDING, Entry, Report, file_diff
from webhook.sync.sources import CatalogCache, Catalogs, ClusterView, load_catalogs, with_installed
from webhook.sync.views import AddOnView, ObjectsView, observe
from webhook.windows import Window

_DONE = {
    Kind.PROPOSE: Action.PROPOSED,
    Kind.UPDATE: Action.UPDATED,
    Kind.REMOVE: Action.REMOVED,
    Kind.CATALOG_IMAGE: Action.PROPOSED,
    Kind.ADDON_VERSION: Action.PROPOSED,
}

Progress = Callable[[str, int, int], None]
Verdict = Callable[[Change], str | None]


@dataclass(frozen=True, slots=True)
class SyncOptions:
    """Everything a cycle needs besides the repository's own ``upgrade-gate.yaml``.

    ``repo`` is a Git URL or local path; ``workdir`` the sync loop's working clone (created on first use);
    ``cluster`` is required for ``installed: cluster``, ``addons.installed: cluster`` and GVK image templates;
    ``catalog_cache`` carries loaded catalogs from one cycle to the next (reuse the options across cycles);
    ``clock`` returns the current UTC time. ``dry_run`` plans and reports (with each change's diff) but
    commits, pushes and writes to the forge nothing (it still reads the remote and the forge).
    """

    repo: str
    workdir: Path
    credentials: Credentials = field(default_factory=Credentials)
    forge_token: str = ""
    cluster: ClusterView | None = None
    max_push_attempts: int = 3
    catalog_cache: CatalogCache = field(default_factory=CatalogCache)
    progress: Progress | None = None
    clock: Callable[[], datetime.datetime] = lambda: datetime.datetime.now(datetime.UTC)
    dry_run: bool = False


def run_cycle(options: SyncOptions) -> Report:
    """Run one cycle (see the module docstring); raises ``GitError``, ``CatalogError`` or ``InputError``."""
    with workdir_lock(options.workdir):
        return _Cycle(options).run()


@contextlib.contextmanager
def workdir_lock(workdir: Path) -> Iterator[None]:
    """Hold ``<workdir>.lock`` (``flock``, exclusive, not waiting); raises ``GitError`` if another run holds it."""
    path = workdir.with_name(workdir.name + ".lock")
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise GitError(f"{workdir}: another upgrade-gate sync is running (lock {path})") from None
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


@dataclass
class _Inputs:
    config: SyncConfig
    catalogs: Catalogs
    installed: Mapping[str, tuple[str, str]] | None
    kube_version: str | None
    verdict: Verdict | None
    addon_view: AddOnView | None
    automerge: Automerge | None


class _Cycle:
    def __init__(self, options: SyncOptions) -> None:
        self.options = options
        self.now = options.clock()
        self.timings: dict[str, float] = {}
        self.entries: dict[str, Entry] = {}
        self.forge: Forge | None = None
        self.open_pulls: dict[str, PullRequest] = {}
        self.closed_pulls: dict[str, list[PullRequest]] = {}
        self.base_revisions: list[RevisionFile] = []
        self.facts: dict[str, Facts] = {}
        self.warnings: list[str] = []
        self.waiting: str | None = None

    @contextlib.contextmanager
    def timed(self, phase: str) -> Iterator[None]:
        start = time.perf_counter()
        try:
            yield
        finally:
            self.timings[phase] = self.timings.get(phase, 0.0) + time.perf_counter() - start

    def run(self) -> Report:
        options = self.options
        with self.timed("fetch"):
            repo = Repo.open(options.repo, options.workdir, options.credentials)
            repo.fetch()
            base_sha = repo.checkout(repo.default_branch())
            config = load_config(repo.path)
            if repo.resolve(f"refs/remotes/origin/{config.base_branch}") is None:
                raise InputError(f"upgrade-gate.yaml: baseBranch: the remote has no branch {config.base_branch}")
            base_sha = repo.checkout(config.base_branch)
            config = load_config(repo.path)
        self.forge = make_forge(config.forge, options.forge_token)
        self.waiting = _next_window(config.schedule, self.now)
        with self.timed("forge"):
            self.open_pulls = self.forge.open_pull_requests(config.base_branch) if self.forge else {}
        inputs = self._inputs(repo.path, config)
        scope: set[str] | None = None
        for attempt in range(1, options.max_push_attempts + 1):
            if attempt > 1:
                with self.timed("fetch"):
                    repo.fetch()
                    base_sha = repo.checkout(config.base_branch)
            rejected = self._attempt(repo, base_sha, inputs, scope)
            if not rejected:
                break
            scope = set(rejected)
            if attempt == options.max_push_attempts:
                for subject, (branch, why) in rejected.items():
                    reason = f"push rejected {attempt} times, last: {why}"
                    self.entries[subject] = Entry(subject, Action.FAILED, reason, branch)
        entries = tuple(self.entries[s] for s in sorted(self.entries))
        dashboard = self._dashboard(config, entries, base_sha) if config.dashboard.enabled else None
        return Report(
            config.base_branch,
            base_sha,
            entries,
            dict(self.timings),
            options.dry_run,
            dashboard=dashboard,
            warnings=tuple(self.warnings),
        )

    def _dashboard(self, config: SyncConfig, entries: tuple[Entry, ...], commit: str) -> Dashboard:
        """The dashboard's rows, written to the forge's dashboard issue unless a dry run; a forge failure is a
        warning (the next cycle rewrites the issue whole)."""
        board = Dashboard(rows(entries, self.facts))
        if self.forge is None or self.options.dry_run:
            return board
        body = render(board, config.base_branch, commit)
        try:
            with self.timed("forge"):
                url = self.forge.upsert_issue(config.dashboard.title, MARKER, body)
        except GitError as error:
            self.warnings.append(str(error))
            return board
        return replace(board, url=url)

    def _inputs(self, root: Path, config: SyncConfig) -> _Inputs:
        cluster = self.options.cluster
        from_cluster = config.installed == "cluster" and bool(config.extensions)
        for key, wanted in (("installed", from_cluster), ("addons.installed", _addons_from_cluster(config))):
            if wanted and cluster is None:
                raise InputError(f"upgrade-gate.yaml: {key}: cluster needs a cluster (in-cluster or a kubeconfig)")
        with self.timed("catalogs"):
            catalogs = load_catalogs(root, config.catalogs, self.options.catalog_cache)
            installed = cluster.installed_bundles() if cluster is not None and from_cluster else None
            templated = bool(config.catalogs)
            kube_version = config.kube_version or (
                cluster.server_version() if cluster is not None and templated else None
            )
        for problem in catalogs.problems:
            self._invalid(problem)
        check = config.policy_check
        approval = ApprovalCheck(check, root, self.now) if check is not None and self.forge else None
        addon_view = cluster if _addons_from_cluster(config) else None
        verdict = approval.verdict if approval is not None else None
        automerge = _automerge(root, config, approval, self.now) if approval is not None else None
        return _Inputs(config, catalogs, installed, kube_version, verdict, addon_view, automerge)

    def _attempt(
        self,
        repo: Repo,
        base_sha: str,
        inputs: _Inputs,
        scope: set[str] | None,
    ) -> dict[str, tuple[str, str]]:
        config = inputs.config
        bot = Identity(config.author_name, config.author_email)
        with self.timed("git"):
            heads = repo.remote_branches(config.branch_prefix)
            states = repo.branch_states(base_sha, heads, bot)
        group = self._group(config)
        plan = self._plan(repo.path, inputs, states, scope)
        carried = carried_subjects(states.get(group[1]), self.base_revisions)
        grouped = group_plan(plan, states, config.grouping, group, carried=carried, scope=scope)
        commits: list[NewCommit] = []
        updates: list[RefUpdate] = []
        pending: dict[str, tuple[str, Change | Outcome, BranchAction | Action]] = {}
        for subject, planned in sorted(grouped.plan.items()):
            state = states.get(
                planned.branch if isinstance(planned, Change) else branch_name(config.branch_prefix, subject)
            )
            item = self._ready(planned, inputs, state)
            if item is None:
                continue
            change = item if isinstance(item, Change) else None
            if isinstance(item, Outcome) and item.action in (Action.SKIPPED, Action.INVALID, Action.UNRESOLVED):
                self.entries[subject] = Entry(subject, item.action, item.reason, file=item.file)
                continue
            branch = change.branch if change else branch_name(config.branch_prefix, subject)
            action = branch_action(change, state)
            if action == BranchAction.HUMAN and state is not None:
                why = f"branch {branch} has commits by {', '.join(state.foreign_authors)}: left alone"
                for name in members_of(item):
                    self.entries[name] = Entry(name, Action.SKIPPED, why, branch)
            elif action == BranchAction.NONE and isinstance(item, Outcome):
                self.entries[subject] = Entry(subject, item.action, item.reason, ready_at=item.ready_at)
            elif action == BranchAction.WITHDRAW and state is not None:
                updates.append(RefUpdate(branch, None, state.head))
                pending[branch] = (subject, item, Action.MERGED if _landed(repo, base_sha, state) else action)
            elif change is not None:
                declined = self._declined(change, config.base_branch) if change.kind != Kind.GROUP else None
                if declined is not None:
                    self.entries[subject] = Entry(
                        subject, Action.SKIPPED, declined, branch, change.from_version, change.to_version
                    )
                    continue
                if action == BranchAction.PUSH and self.waiting is not None:
                    self._wait(change, config.schedule)
                    continue
                if action == BranchAction.PUSH:
                    commits.append(NewCommit(branch, base_sha, change.commit_message, change.files))
                pending[branch] = (subject, change, action)
        rejected: Mapping[str, str] = {}
        if not self.options.dry_run:
            with self.timed("git"):
                shas = repo.commit(commits, bot, self.now)
                updates += [RefUpdate(b, sha, states[b].head if b in states else None) for b, sha in shas.items()]
                rejected = repo.push(updates, config.branch_prefix, config.base_branch).rejected
        for branch, (subject, item, what) in sorted(pending.items()):
            if branch not in rejected:
                self._done(inputs, subject, item, what, branch, root=repo.path, before=states.get(branch))
        self._replace(repo, config, grouped.replaced, states)
        return {name: (b, why) for b, why in rejected.items() for name in members_of(pending[b][1])}

    def _wait(self, change: Change, schedule: tuple[Window, ...]) -> None:
        """Report a change due outside the schedule's windows (each member of a group) as waiting."""
        why = f"waiting for schedule ({', '.join(w.text for w in schedule)})"
        for member in change.members or (change,):
            self.entries[member.subject] = Entry(
                member.subject,
                Action.WAITING,
                f"{why}: {member.reason}",
                change.branch,
                member.from_version,
                member.to_version,
                ready_at=self.waiting,
            )

    def _group(self, config: SyncConfig) -> tuple[str, str]:
        """The subject and branch of the cluster's group (``grouping: per-cluster``)."""
        subject = cluster_subject(config.revisions)
        return subject, branch_name(config.branch_prefix, subject)

    def _replace(
        self, repo: Repo, config: SyncConfig, replaced: Mapping[str, tuple[str, ...]], states: Mapping[str, BranchState]
    ) -> None:
        """Delete each bot branch of the other grouping scheme whose subjects are all proposed on their new
        branch now (closing its pull request); one more push, with a lease. A branch whose replacement is not
        pushed yet (waiting, rejected, declined) stays, and a later cycle replaces it."""
        gone = [
            branch
            for branch, subjects in sorted(replaced.items())
            if all(self._stands(name, branch) for name in subjects)
        ]
        dry_run = self.options.dry_run
        rejected: Mapping[str, str] = {}
        if gone and not dry_run:
            with self.timed("git"):
                deletions = [RefUpdate(b, None, states[b].head) for b in gone]
                rejected = repo.push(deletions, config.branch_prefix, config.base_branch).rejected
        for branch in (b for b in gone if b not in rejected):
            pull = self.open_pulls.pop(branch, None)
            if pull is not None and self.forge is not None and not dry_run:
                with self.timed("forge"):
                    self.forge.close_pull_request(pull)
            closed = f" (pull request {pull.url} closed)" if pull is not None else ""
            note = f"; replaces branch {branch}{closed}{' (dry run)' if dry_run else ''}"
            for name in replaced[branch]:
                entry = self.entries[name]
                self.entries[name] = replace(entry, reason=entry.reason + note)

    def _stands(self, subject: str, old: str) -> bool:
        """Whether ``subject``'s proposal stands on a branch other than ``old`` after this cycle's push."""
        entry = self.entries.get(subject)
        return entry is not None and entry.branch != old and entry.action in STANDING

    def _plan(
        self, root: Path, inputs: _Inputs, states: Mapping[str, BranchState], scope: set[str] | None
    ) -> dict[str, Change | Outcome]:
        plan = self._extensions(root, inputs, states, scope) if inputs.config.extensions else {}
        plan.update(self._templates(root, inputs, scope))
        plan.update(self._addons(root, inputs, states, scope))
        return plan

    def _extensions(
        self, root: Path, inputs: _Inputs, states: Mapping[str, BranchState], scope: set[str] | None
    ) -> dict[str, Change | Outcome]:
        config = inputs.config
        context = PlanContext(config.revisions, config.branch_prefix, rfc3339(self.now))
        with self.timed("read"):
            extensions, problems = read_extensions(root, config.extensions)
            revisions, revision_problems = read_revisions(root, config.revisions)
        self.base_revisions = revisions
        if inputs.installed is not None:
            extensions = with_installed(extensions, inputs.installed)
        for problem in (*problems, *revision_problems):
            if scope is None:
                self._invalid(problem)
        per_extension: dict[str, list[RevisionFile]] = {}
        for revision in revisions:
            per_extension.setdefault(revision.extension, []).append(revision)
        for entry in extensions:
            name, installed = entry.extension.name, entry.extension.installed
            base = sorted(per_extension.get(name, []), key=lambda r: r.file)
            self.facts[name] = Facts(
                installed.version if installed is not None else None,
                approved=tuple(r.version for r in base if r.approved),
                pending=tuple(r.version for r in base if not r.approved),
            )
        plan: dict[str, Change | Outcome] = {}
        wanted = [e for e in extensions if scope is None or e.extension.name in scope]
        catalogs = inputs.catalogs.catalogs
        with self.timed("catalogs"):  # decode the packages resolution will read (catalogs keep blobs as text)
            for catalog in catalogs:
                for package in sorted({e.extension.source.package for e in wanted}):
                    with contextlib.suppress(CatalogError):  # reported by the resolution that reads it
                        catalog.package(package)
        with self.timed("read"):
            prefix, group = config.branch_prefix, states.get(self._group(config)[1])
            proposed = {  # on its own branch or the group's, whichever the grouping was when it was proposed
                name: [*branch_revisions(states.get(branch_name(prefix, name)), name), *branch_revisions(group, name)]
                for name in (e.extension.name for e in wanted)
            }
        with self.timed("resolve"):
            for index, entry in enumerate(wanted, start=1):
                name = entry.extension.name
                check = check_extension(entry.extension, catalogs)
                plan[name] = plan_extension(entry, check, per_extension.get(name, []), proposed[name], context)
                if self.options.progress is not None:
                    self.options.progress(name, index, len(wanted))
        known = {e.extension.name for e in extensions}
        orphans = [r for r in revisions if r.extension not in known and (scope is None or r.extension in scope)]
        if problems and orphans:
            for name in sorted({r.extension for r in orphans}):
                plan[name] = Outcome(name, Action.SKIPPED, "not removed while ClusterExtension manifests have errors")
        else:
            plan.update((c.subject, c) for c in plan_orphans(orphans, context))
        return plan

    def _addons(
        self, root: Path, inputs: _Inputs, states: Mapping[str, BranchState], scope: set[str] | None
    ) -> dict[str, Change | Outcome]:
        config = inputs.config.addons
        if config is None:
            return {}
        with self.timed("read"):
            found = read_addons(root, config.manifests)
            texts = {file: read_text(root / file) for addon in found.addons for file in addon.files}
        for problem in found.problems if scope is None else ():
            self._invalid(problem)
        view = inputs.addon_view or ObjectsView.of_documents(found)
        prefix = inputs.config.branch_prefix
        context = AddOnContext(config.canary_placements, config.canary_soak, prefix, self.now)
        plan: dict[str, Change | Outcome] = {}
        for addon in found.addons:
            subject = addon_subject(addon.name)
            if scope is None or subject in scope:
                with self.timed("cluster"):
                    state = observe(view, addon, config.canary_placements, config.installed)
                with self.timed("plan"):
                    plan[subject] = plan_addon(addon, texts, state, context)
        known = {addon_subject(addon.name) for addon in found.addons}
        for branch in sorted(states):
            subject = branch.removeprefix(prefix)
            if not subject.startswith(SUBJECT_PREFIX) or subject in known or (scope and subject not in scope):
                continue
            if found.problems:
                plan[subject] = Outcome(subject, Action.SKIPPED, "not withdrawn while add-on manifests have errors")
            else:
                gone = f"add-on {subject.removeprefix(SUBJECT_PREFIX)} is not in the repository any more"
                plan[subject] = Outcome(subject, Action.UNCHANGED, gone)
        return plan

    def _templates(self, root: Path, inputs: _Inputs, scope: set[str] | None) -> dict[str, Change | Outcome]:
        cluster = self.options.cluster
        lookup = cluster.get_object if cluster is not None else None
        found: dict[str, Change | Outcome] = {}
        for doc in inputs.catalogs.manifests:
            text = read_text(root / doc.file)
            item = plan_catalog_image(doc, text, inputs.kube_version, lookup, inputs.config.branch_prefix)
            if item is not None and (scope is None or item.subject in scope):
                found[item.subject] = item
        return found

    def _ready(self, item: Change | Outcome, inputs: _Inputs, state: BranchState | None) -> Change | Outcome | None:
        """A plan item as it goes to its branch: a group without the members a person declined
        (``_undeclined``), a change approved when automerge qualifies it."""
        ready = self._undeclined(item, inputs.config.base_branch, state)
        if isinstance(ready, Change) and inputs.automerge is not None:
            return inputs.automerge.approve(ready) or ready
        return ready

    def _undeclined(self, item: Change | Outcome, base: str, state: BranchState | None) -> Change | Outcome | None:
        """A group without the members a person declined (each reported skipped); an outcome when none is left
        and its branch exists, ``None`` when none is left and there is no branch. Any other item as it is."""
        if not isinstance(item, Change) or item.kind != Kind.GROUP:
            return item
        kept = []
        for member in item.members:
            declined = self._declined(member, base, item)
            if declined is None:
                kept.append(member)
                continue
            self.entries[member.subject] = Entry(
                member.subject, Action.SKIPPED, declined, item.branch, member.from_version, member.to_version
            )
        if kept:
            return group_change(item.subject, item.branch, kept) if len(kept) < len(item.members) else item
        return Outcome(item.subject, Action.UNCHANGED, "every change it would propose was declined") if state else None

    def _declined(self, change: Change, base: str, group: Change | None = None) -> str | None:
        """Why ``change`` is not proposed again: a pull request a person closed unmerged under its title on its
        own branch, or, for a member of ``group``, a group pull request closed under the group's title whose body
        proposed it. Nothing is declined while an open pull request proposes the change."""
        pull = self.open_pulls.get(group.branch) if group is not None else None
        if self.forge is None or (pull is not None and change.title in proposed_titles(pull.body)):
            return None
        if group is not None:
            for closed in reversed(self._closed(group.branch, base)):
                if closed.title == group.title and change.title in proposed_titles(closed.body):
                    return (
                        f"pull request #{closed.number} ({closed.title}) was closed without merging: "
                        f"{change.title} is not proposed again"
                    )
        if change.branch in self.open_pulls:
            return None
        mine = [p for p in self._closed(change.branch, base) if p.title == change.title]
        if not mine:
            return None
        return f"pull request #{mine[-1].number} ({change.title}) was closed without merging: not proposed again"

    def _closed(self, branch: str, base: str) -> list[PullRequest]:
        """The pull requests of ``branch`` closed unmerged (asked of the forge once per cycle)."""
        if branch not in self.closed_pulls:
            assert self.forge is not None  # only asked with a forge
            with self.timed("forge"):
                self.closed_pulls[branch] = self.forge.closed_pull_requests(branch, base)
        return self.closed_pulls[branch]

    def _done(
        self,
        inputs: _Inputs,
        subject: str,
        item: Change | Outcome,
        action: BranchAction | Action,
        branch: str,
        *,
        root: Path,
        before: BranchState | None,
    ) -> None:
        """Report what became of a pending branch (each member of a group), opening or updating its pull request;
        ``before`` is the branch as it was on the remote (a group member it already proposed is unchanged)."""
        dry_run = self.options.dry_run
        forge = None if dry_run else self.forge
        pull = self.open_pulls.get(branch)
        if isinstance(item, Outcome):
            if forge is not None and pull is not None:
                with self.timed("forge"):
                    forge.close_pull_request(pull)
            url = pull.url if pull else None
            deleted = "would be deleted (dry run)" if dry_run else "deleted"
            if item.action == Action.HELD:  # still waiting is the news; the branch proposed nothing new
                why = f"{item.reason}; branch {branch} {deleted} until then"
                self.entries[subject] = Entry(
                    subject, Action.HELD, why, branch, pull_request=url, ready_at=item.ready_at
                )
                return
            if action == Action.MERGED:
                why = f"{item.reason}: branch {branch} {deleted}"
                self.entries[subject] = Entry(subject, Action.MERGED, why, branch, pull_request=url)
                return
            why = f"nothing to propose any more ({item.reason}): branch {branch} {deleted}"
            self.entries[subject] = Entry(subject, Action.WITHDRAWN, why, branch, pull_request=url)
            return
        opened = self.forge is not None and pull is None
        if forge is not None:
            with self.timed("forge"):
                pull = self._ensure_pull(forge, pull, item, inputs)
            self.open_pulls[branch] = pull
        kept = before is not None and action != BranchAction.PUSH and not opened
        if forge is not None and pull is not None and before is not None and kept and _approved(item):
            self._merge(forge, replace(pull, head_sha=before.head), item)  # the commit this cycle found approved
            return
        proposed = set(before.changes or ()) if before is not None else set()
        for member in item.members or (item,):
            fresh = action == BranchAction.PUSH and not (item.members and set(member.files) <= proposed)
            done = _DONE[member.kind] if fresh else Action.OPENED if opened else Action.UNCHANGED
            reason = member.reason if fresh else f"branch {branch} already proposes this"
            if done == Action.OPENED:
                reason = f"pull request opened: {reason}"
            diff = file_diff(root, member.files) if dry_run and fresh else None
            self.entries[member.subject] = Entry(
                member.subject,
                done,
                reason,
                branch,
                member.from_version,
                member.to_version,
                pull_request=pull.url if pull else None,
                diff=diff,
            )

    def _merge(self, forge: Forge, pull: PullRequest, change: Change) -> None:
        """Merge the pull request of a change automerge approved, and report each member merged; a refusal is a
        warning of the report (the members stay as they are), and the next cycle tries again."""
        try:
            with self.timed("forge"):
                forge.merge_pull_request(pull)
        except GitError as error:
            self.warnings.append(str(error))
            why = f"branch {change.branch} already proposes this; automerge: the forge did not merge it yet"
            merged = False
        else:
            self.open_pulls.pop(change.branch, None)
            why = "automerged: the policies admit approving it without a reviewer"
            merged = True
        for member in change.members or (change,):
            self.entries[member.subject] = Entry(
                member.subject,
                Action.MERGED if merged else Action.UNCHANGED,
                why,
                change.branch,
                member.from_version,
                member.to_version,
                pull_request=pull.url,
            )

    def _invalid(self, problem: Problem) -> None:
        """Report a manifest that cannot be used: its file (and line) as the subject, the reason beside it."""
        subject = f"{problem.file}:{problem.line}" if problem.line else problem.file
        self.entries[subject] = Entry(subject, Action.INVALID, problem.reason, file=problem.file)

    def _ensure_pull(self, forge: Forge, pull: PullRequest | None, change: Change, inputs: _Inputs) -> PullRequest:
        verdict = inputs.verdict or (lambda _: None)
        if change.kind == Kind.GROUP:
            body = render_group_body(change, {m.subject: verdict(m) for m in change.members})
        else:
            body = render_body(change, verdict(change))
        config = inputs.config
        if pull is None:
            labels, reviewers = config.forge.labels, config.forge.reviewers
            return forge.create_pull_request(
                change.branch, config.base_branch, change.title, body, labels=labels, reviewers=reviewers
            )
        if pull.title != change.title or pull.body != body:
            return forge.update_pull_request(pull, change.title, body)
        return pull


def _automerge(root: Path, config: SyncConfig, approval: ApprovalCheck, now: datetime.datetime) -> Automerge | None:
    """The automerge decision of the cycle when ``automerge.enabled``: the policies the policy check loaded, and
    the base branch's ClusterExtensions and revisions as read from the checked-out tree."""
    if not config.automerge.enabled:
        return None
    files = matching_files(root, (*config.extensions, config.revisions))
    base = read_manifests({file: read_text(root / file) for file in files})
    applier = approval.config.applier
    return Automerge(approval.policies, applier, config.author_name, config.automerge.change, now, base)


def _approved(change: Change) -> bool:
    """Whether automerge approved ``change`` (every member of a group)."""
    return all(member.approved for member in change.members or (change,))


def _addons_from_cluster(config: SyncConfig) -> bool:
    return config.addons is not None and config.addons.installed == "cluster"


def _next_window(schedule: tuple[Window, ...], now: datetime.datetime) -> str | None:
    """``None`` when branches may be pushed now (no ``schedule``, or inside one of its windows); else when the
    next window opens (RFC 3339; ``""`` when none ever will: every interval has ended)."""
    if not schedule or any(window.contains(now) for window in schedule):
        return None
    opening = [at for at in (window.opens_at(now) for window in schedule) if at is not None]
    return rfc3339(min(opening)) if opening else ""


def _landed(repo: Repo, base_sha: str, state: BranchState) -> bool:
    """Whether a bot branch's change is in the base branch: its head is (a merge or a fast-forward), or every
    file its one commit writes reads the same there (a squash or rebase merge)."""
    if repo.merge_base(base_sha, state.head) == state.head:
        return True
    return bool(state.changes) and all(_reads(repo.path / c.path, c.content) for c in state.changes or ())


def _reads(path: Path, content: str | None) -> bool:
    """Whether the checked-out file at ``path`` has ``content`` (``None``: the file is absent)."""
    if content is None:
        return not path.exists()
    return path.is_file() and read_text(path) == content
