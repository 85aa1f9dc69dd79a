"""The act step of a sync cycle, the only one that writes: commits and pushes the plan's branches (each with a
lease, the base branch never), opens, updates and closes pull requests, merges what automerge approved,
deletes replaced branches and writes the dashboard issue. Each write's result is recorded (``Written``,
``Acted``) for the report; nothing else is decided here.

A push the remote rejects (someone pushed in between) is recorded with git's reason, and the cycle retries it
from a freshly fetched base; a merge or dashboard write the forge refuses is a warning line, and the next cycle
tries again. Any other ``GitError`` (remote or forge unreachable) aborts the cycle: what was written stays, and
the next cycle repairs the rest (a branch pushed without its pull request is ``opened`` then). A dry run writes
nothing and records the diff each fresh change would push.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from webhook.errors import GitError
from webhook.io import NewCommit, RefUpdate, Repo
from webhook.io.forges import Forge, PullRequest
from webhook.manifests import read_text
from webhook.plan import BranchAction, BranchState, Change, FileChange
from webhook.sync.dashboard import MARKER, Dashboard, render
from webhook.sync.deciding import Plan, Proposal
from webhook.sync.inputs import CycleInputs
from webhook.sync.timings import Timings


@dataclass(frozen=True, slots=True)
class Written:
    """What became of a proposal whose push went through: its pull request after the cycle's writes (the open
    one in a dry run), whether automerge ``merged`` it (``None``: not tried), and in a dry run the ``diffs``
    its fresh subjects would push."""

    pull: PullRequest | None
    merged: bool | None = None
    diffs: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Acted:
    """A push attempt's writes: the branches the remote ``rejected`` (git's reason), what became of the others
    (``written``, by branch), and ``warnings`` (writes refused without failing the cycle)."""

    rejected: Mapping[str, str]
    written: Mapping[str, Written]
    warnings: tuple[str, ...] = ()

    def open_pulls(self, before: Mapping[str, PullRequest]) -> dict[str, PullRequest]:
        """The open pull requests by head branch after these writes, from those ``before`` them (a merged one
        is gone; a closed one is left, as no later write reads it)."""
        pulls = dict(before)
        for branch, written in self.written.items():
            if written.merged:
                pulls.pop(branch, None)
            elif written.pull is not None:
                pulls[branch] = written.pull
        return pulls


def act(repo: Repo, inputs: CycleInputs, plan: Plan, timings: Timings) -> Acted:
    """Commit and push every proposal at once, then write the pull requests of those not rejected."""
    config = inputs.config
    commits = [
        NewCommit(p.branch, plan.base_sha, change.commit_message, change.files)
        for p in plan.proposals
        if p.write == BranchAction.PUSH and (change := p.item.change) is not None
    ]
    updates = [
        RefUpdate(p.branch, None, p.before.head)
        for p in plan.proposals
        if p.write == BranchAction.WITHDRAW and p.before is not None
    ]
    rejected: Mapping[str, str] = {}
    if not inputs.dry_run:
        with timings.timed("git"):
            shas = repo.commit(commits, inputs.bot, inputs.now)
            heads = {p.branch: p.before.head for p in plan.proposals if p.before is not None}
            updates += [RefUpdate(branch, sha, heads.get(branch)) for branch, sha in shas.items()]
            rejected = repo.push(updates, config.branch_prefix, config.base_branch).rejected
    written: dict[str, Written] = {}
    warnings: list[str] = []
    forge = inputs.forge if inputs.writes_pulls else None
    with timings.timed("forge"):
        for proposal in (p for p in plan.proposals if p.branch not in rejected):
            written[proposal.branch] = _write(forge, inputs, proposal, warnings)
    return Acted(rejected, written, tuple(warnings))


def replace_branches(
    repo: Repo, inputs: CycleInputs, gone: Sequence[str], states: Mapping[str, BranchState], timings: Timings
) -> dict[str, PullRequest | None]:
    """Delete the replaced bot branches ``gone`` (one more push, with a lease) and close their open pull
    requests; the branches deleted, each with the pull request closed (``None``: it had none). A branch the
    remote rejects stays, and a later cycle replaces it."""
    rejected: Mapping[str, str] = {}
    if gone and not inputs.dry_run:
        with timings.timed("git"):
            deletions = [RefUpdate(b, None, states[b].head) for b in gone]
            rejected = repo.push(deletions, inputs.config.branch_prefix, inputs.config.base_branch).rejected
    closed = {}
    for branch in (b for b in gone if b not in rejected):
        pull = closed[branch] = inputs.open_pulls.get(branch)
        if pull is not None and inputs.forge is not None and inputs.writes_pulls:
            with timings.timed("forge"):
                inputs.forge.close_pull_request(pull)
    return closed


def write_dashboard(inputs: CycleInputs, board: Dashboard, commit: str, timings: Timings) -> tuple[Dashboard, str]:
    """Write ``board`` to the forge's dashboard issue unless a dry run: the board with the issue's URL, or as it
    is with the forge's error line (a warning; the next cycle rewrites the issue whole)."""
    if inputs.forge is None or inputs.dry_run:
        return board, ""
    body = render(board, inputs.config.base_branch, commit)
    try:
        with timings.timed("forge"):
            url = inputs.forge.upsert_issue(inputs.config.dashboard.title, MARKER, body)
    except GitError as error:
        return board, str(error)
    return replace(board, url=url), ""


def file_diff(root: Path, files: Sequence[FileChange]) -> str:
    """The unified diff (``git diff`` style headers) that writing ``files`` makes to the tree at ``root``."""
    chunks: list[str] = []
    for change in files:
        path = root / change.path
        old = read_text(path) if path.is_file() else None
        chunks.extend(
            difflib.unified_diff(
                (old or "").splitlines(keepends=True),
                (change.content or "").splitlines(keepends=True),
                "/dev/null" if old is None else f"a/{change.path}",
                "/dev/null" if change.content is None else f"b/{change.path}",
            )
        )
    return "".join(chunks)


def _write(forge: Forge | None, inputs: CycleInputs, proposal: Proposal, warnings: list[str]) -> Written:
    """The forge writes of a pushed (or kept, or deleted) branch: close the pull request of a deleted one;
    open or update a change's, then merge it when automerge approved it."""
    pull, change = proposal.pull, proposal.item.change
    if change is None:
        if forge is not None and pull is not None:
            forge.close_pull_request(pull)
        return Written(pull)
    if forge is None or proposal.body is None:
        diffs = {m.subject: file_diff(inputs.root, m.files) for m in change.proposals if m.subject in proposal.fresh}
        return Written(pull, diffs=diffs if inputs.dry_run else {})
    pull = _ensure_pull(forge, pull, change, proposal.body, inputs)
    if not proposal.merge or proposal.before is None:
        return Written(pull)
    try:
        forge.merge_pull_request(replace(pull, head_sha=proposal.before.head))  # the commit found approved
    except GitError as error:
        warnings.append(str(error))
        return Written(pull, merged=False)
    return Written(pull, merged=True)


def _ensure_pull(forge: Forge, pull: PullRequest | None, change: Change, body: str, inputs: CycleInputs) -> PullRequest:
    config = inputs.config
    if pull is None:
        labels, reviewers = config.forge.labels, config.forge.reviewers
        return forge.create_pull_request(
            change.branch, config.base_branch, change.title, body, labels=labels, reviewers=reviewers
        )
    if pull.title != change.title or pull.body != body:
        return forge.update_pull_request(pull, change.title, body)
    return pull
