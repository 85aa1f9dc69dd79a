"""One cycle of ``upgrade-gate sync``, as a pipeline over immutable values: read, plan, act, report.

A cycle, in order (``run_cycle``):

1. lock the working clone (a second run on the same ``workdir`` fails at once instead of racing);
2. **read** (``webhook.sync.inputs``): fetch the remote and check out the base branch (``baseBranch`` of
   ``upgrade-gate.yaml``, read first from the remote's default branch); list the forge's open pull requests, so
   an unreachable remote or forge fails the cycle before anything is written; load the catalogs once, learn
   installed versions (manifests' status or the cluster), load the policies; then, per push attempt, the bot's
   branches, the base branch's manifests and what the cluster says about the add-ons;
3. **plan** (pure, ``webhook.sync.planning``): every extension, templated ClusterCatalog and add-on, grouped
   onto branches (``grouping``); the pull requests closed unmerged of the branches the plan would write are read
   (once per cycle), and whether a bot branch to withdraw landed; then (pure, ``webhook.sync.deciding``) per
   branch: leave it alone if a human committed to it; skip a change a person declined by closing its pull
   request unmerged; keep a branch that already carries the change; outside the ``schedule`` windows report a
   change to push as ``waiting``; otherwise push it; withdraw a bot branch whose proposal is over; render each
   pull request body with the policy check's forecast;
4. **act** (``webhook.sync.acting``): commit every change as one commit on the base branch and push every
   branch at once, each with a lease (the base branch is never pushed); open, update or close the pull
   requests, merge what automerge approved; then delete (one more push) the other grouping scheme's bot
   branches whose changes now stand on their new branch;
5. push rejections (someone pushed in between) are retried from a freshly fetched base, for the rejected
   subjects only, up to ``max_push_attempts`` times in all, then reported as failed;
6. **report** (pure, ``webhook.sync.reporting``): the entries from the plan and what the writes did; with
   ``dashboard.enabled``, the dashboard issue is created or rewritten (``webhook.sync.dashboard``; a forge
   failure there is a warning of the report, not a failed cycle, and the next cycle writes it again).

A second cycle with nothing new makes no commit, no push and no forge write. ``GitError`` (remote or forge
unreachable), ``FetchError`` (a catalogd URL), ``CatalogError`` and ``InputError`` (``upgrade-gate.yaml``,
a ``baseBranch`` the remote lacks) abort the cycle; a bad manifest only skips itself, reported ``invalid`` with
its file and reason; an upgrade that cannot be worked out is ``unresolved`` (``PROBLEMS``).
"""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
from collections.abc import Iterator, Mapping
from pathlib import Path

from webhook.errors import GitError
from webhook.io import Repo
from webhook.io.forges import PullRequest
from webhook.sync.acting import act, replace_branches, write_dashboard
from webhook.sync.dashboard import Dashboard, Facts, rows
from webhook.sync.deciding import decide
from webhook.sync.groups import members_of
from webhook.sync.history import read_history
from webhook.sync.inputs import CycleInputs, SyncOptions, read_inputs, read_snapshot
from webhook.sync.planning import propose, wanted_history
from webhook.sync.report import Entry, Report
from webhook.sync.reporting import entries, failed, noted, standing
from webhook.sync.timings import Timings

__all__ = ["SyncOptions", "run_cycle", "workdir_lock"]


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


class _Cycle:
    """The pipeline's driver: what one step hands the next across push attempts (the entries so far, the
    closed pull requests asked once, the warnings)."""

    def __init__(self, options: SyncOptions) -> None:
        self.options = options
        self.timings = Timings()
        self.entries: dict[str, Entry] = {}
        self.closed: dict[str, tuple[PullRequest, ...]] = {}
        self.warnings: list[str] = []

    def run(self) -> Report:
        repo, base_sha, inputs = read_inputs(self.options, self.timings)
        attempts = self.options.max_push_attempts
        scope: set[str] | None = None
        facts: Mapping[str, Facts] = {}
        for attempt in range(1, attempts + 1):
            if attempt > 1:
                with self.timings.timed("fetch"):
                    repo.fetch()
                    base_sha = repo.checkout(inputs.config.base_branch)
            inputs, rejected, facts = self._attempt(repo, inputs, base_sha, scope)
            if not rejected:
                break
            scope = set(rejected)
            if attempt == attempts:
                self.entries.update(failed(rejected, attempt))
        found = tuple(self.entries[s] for s in sorted(self.entries))
        dashboard = None
        if inputs.config.dashboard.enabled:
            dashboard, warning = write_dashboard(inputs, Dashboard(rows(found, facts)), base_sha, self.timings)
            self.warnings += [warning] if warning else []
        config = inputs.config
        seconds = dict(self.timings.seconds)
        warnings = tuple(self.warnings)
        return Report(config.base_branch, base_sha, found, seconds, inputs.dry_run, dashboard, warnings)

    def _attempt(
        self, repo: Repo, inputs: CycleInputs, base_sha: str, scope: set[str] | None
    ) -> tuple[CycleInputs, dict[str, tuple[str, str]], Mapping[str, Facts]]:
        """One push attempt over the subjects in ``scope`` (``None``: all): the inputs with the forge's pull
        requests as the attempt left them, the rejected subjects (branch and git's reason), the dashboard's
        facts."""
        timings = self.timings
        snapshot = read_snapshot(repo, inputs, base_sha, scope, timings)
        proposed = propose(inputs, snapshot, scope, timings, self.options.progress)
        wanted = wanted_history(inputs, snapshot, proposed)
        history = read_history(repo, inputs, snapshot, wanted, closed=self.closed, timings=timings)
        plan = decide(inputs, snapshot, proposed, history)
        acted = act(repo, inputs, plan, timings)
        self.warnings += acted.warnings
        self.entries.update(entries(plan, acted.written, dry_run=inputs.dry_run))
        pulls = acted.open_pulls(inputs.open_pulls)
        inputs = dataclasses.replace(inputs, open_pulls=pulls)
        gone = standing(plan.replaced, self.entries)
        deleted = replace_branches(repo, inputs, gone, snapshot.states, timings)
        self.entries = noted(self.entries, plan.replaced, deleted, dry_run=inputs.dry_run)
        inputs = dataclasses.replace(inputs, open_pulls={b: p for b, p in pulls.items() if b not in deleted})
        by_branch = {p.branch: p for p in plan.proposals}
        rejected = {
            name: (branch, why) for branch, why in acted.rejected.items() for name in members_of(by_branch[branch].item)
        }
        return inputs, rejected, plan.facts
