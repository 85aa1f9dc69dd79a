"""The second half of a sync cycle's plan, pure: from the grouped plan items (``webhook.sync.planning``) and
the branches' history (``webhook.sync.inputs.History``) to a ``Plan``: per subject what the report says when
nothing is written (``Step``), and per branch what is written (``Proposal``). No I/O.

Per branch, in subject order: a member of a group that a person declined is skipped (a group pull request
closed unmerged under the group's title that listed it), and so is a change whose own pull request (same
branch, same title) a person closed unmerged, unless an open pull request proposes it; automerge approves a
change the policies admit approving without a person; a branch with a person's commit is left alone
(``skipped``); a change to push outside the ``schedule`` windows is ``waiting``; a branch that already carries
its change is kept, one that must be rewritten is pushed, and a bot branch with nothing to propose any more is
withdrawn (``merged`` when its change landed in the base branch). The pull request body, with the policy
check's forecast, is rendered here when the cycle writes pull requests.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from webhook.io.forges import PullRequest
from webhook.plan import (
    Action,
    BranchAction,
    BranchState,
    Change,
    Kind,
    Outcome,
    Planned,
    Problem,
    branch_action,
    proposed_titles,
    render_body,
    render_group_body,
)
from webhook.sync.dashboard import Facts
from webhook.sync.groups import group_change, members_of
from webhook.sync.history import History
from webhook.sync.inputs import CycleInputs, Snapshot
from webhook.sync.planning import STAYING, Proposed, branch_of


@dataclass(frozen=True, slots=True)
class Step:
    """A subject the cycle reports without writing anything for it: its ``action`` and why, with its
    ``branch``, the ``change`` whose versions it shows, its manifest's ``file`` and ``ready_at`` (RFC 3339)
    when there are some."""

    subject: str
    action: Action
    reason: str
    branch: str | None = None
    change: Change | None = None
    file: str | None = None
    ready_at: str | None = None


@dataclass(frozen=True, slots=True)
class Proposal:
    """A branch the cycle writes: ``write`` is ``push`` (commit ``item``'s change on the base and push it),
    ``keep`` (it carries the change) or ``withdraw`` (delete it, ``item`` an outcome saying why; ``landed``
    when its change is in the base branch). ``before`` is the branch on the remote; ``pull`` its open pull
    request (``opened``: none, one is opened); ``fresh`` the subjects whose files the push writes anew;
    ``body`` the pull request body to write (``None`` when the cycle writes no pull request); ``merge``
    whether automerge merges the pull request (at ``before.head``, the commit found approved)."""

    subject: str
    branch: str
    item: Planned
    write: BranchAction
    before: BranchState | None
    pull: PullRequest | None = None
    opened: bool = False
    landed: bool = False
    fresh: tuple[str, ...] = ()
    body: str | None = None
    merge: bool = False


@dataclass(frozen=True, slots=True)
class Plan:
    """What a push attempt does: ``steps`` (subjects without a write), ``proposals`` (branches written, sorted
    by branch), ``replaced`` (the other grouping scheme's bot branches, each with the subjects whose new
    branch replaces it) and the dashboard's ``facts``."""

    base_sha: str
    steps: tuple[Step, ...]
    proposals: tuple[Proposal, ...]
    replaced: Mapping[str, tuple[str, ...]]
    facts: Mapping[str, Facts]


def decide(inputs: CycleInputs, snapshot: Snapshot, proposed: Proposed, history: History) -> Plan:
    """The plan of a push attempt (see the module docstring)."""
    steps = [_invalid(problem) for problem in proposed.problems]
    proposals: list[Proposal] = []
    for subject, planned in sorted(proposed.grouped.plan.items()):
        state = snapshot.states.get(branch_of(inputs, subject, planned))
        declined, item = _undeclined(planned, inputs, history, state)
        steps += declined
        if item is None:
            continue
        change, outcome = item.change, item.outcome
        if change is not None and inputs.automerge is not None:
            item = change = inputs.automerge.approve(change) or change
        if outcome is not None and outcome.action in STAYING:
            steps.append(Step(subject, outcome.action, outcome.reason, file=outcome.file))
            continue
        branch = branch_of(inputs, subject, item)
        action = branch_action(change, state)
        if action == BranchAction.HUMAN and state is not None:
            why = f"branch {branch} has commits by {', '.join(state.foreign_authors)}: left alone"
            steps += [Step(name, Action.SKIPPED, why, branch) for name in members_of(item)]
        elif outcome is not None and state is None:
            steps.append(Step(subject, outcome.action, outcome.reason, ready_at=outcome.ready_at))
        elif change is None:
            pull = inputs.open_pulls.get(branch)
            withdraw = BranchAction.WITHDRAW
            proposals.append(Proposal(subject, branch, item, withdraw, state, pull, landed=branch in history.landed))
        else:
            more, proposal = _change(inputs, history, subject, change, action=action, state=state)
            steps += more
            proposals += proposal
    ordered = tuple(sorted(proposals, key=lambda p: p.branch))
    return Plan(snapshot.base_sha, tuple(steps), ordered, proposed.grouped.replaced, proposed.facts)


def _change(
    inputs: CycleInputs,
    history: History,
    subject: str,
    change: Change,
    *,
    action: BranchAction,
    state: BranchState | None,
) -> tuple[list[Step], list[Proposal]]:
    """A change to push or keep: skipped when a person declined it, waiting outside the schedule's windows
    (each member of a group), else its branch's proposal."""
    declined = _declined(change, inputs, history) if change.kind != Kind.GROUP else None
    if declined is not None:
        return [Step(subject, Action.SKIPPED, declined, change.branch, change)], []
    if action == BranchAction.PUSH and inputs.waiting is not None:
        why = f"waiting for schedule ({', '.join(w.text for w in inputs.config.schedule)})"
        steps = [
            Step(m.subject, Action.WAITING, f"{why}: {m.reason}", change.branch, m, ready_at=inputs.waiting)
            for m in change.proposals
        ]
        return steps, []
    return [], [_proposal(inputs, subject, change, action, state)]


def _proposal(
    inputs: CycleInputs, subject: str, change: Change, action: BranchAction, before: BranchState | None
) -> Proposal:
    """Push or keep ``change``'s branch, with the pull request body when the cycle writes pull requests."""
    pull = inputs.open_pulls.get(change.branch)
    opened = inputs.forge is not None and pull is None
    carried = set(before.changes or ()) if before is not None else set()
    fresh = tuple(
        member.subject
        for member in change.proposals
        if action == BranchAction.PUSH and not (change.members and set(member.files) <= carried)
    )
    body = _body(inputs, change) if inputs.writes_pulls else None
    approved = all(member.approved for member in change.proposals)
    merge = inputs.writes_pulls and action == BranchAction.KEEP and not opened and approved
    return Proposal(subject, change.branch, change, action, before, pull, opened, False, fresh, body, merge)


def _body(inputs: CycleInputs, change: Change) -> str:
    """The pull request body of ``change``, with the policy check's forecast on each change it proposes."""
    approval = inputs.approval
    forecasts = {m.subject: approval.forecast(m) if approval is not None else None for m in change.proposals}
    if change.kind == Kind.GROUP:
        return render_group_body(change, forecasts)
    return render_body(change, forecasts[change.subject])


def _undeclined(
    item: Planned, inputs: CycleInputs, history: History, state: BranchState | None
) -> tuple[list[Step], Planned | None]:
    """A group without the members a person declined (each a skipped step); an outcome when none is left and
    its branch exists, ``None`` when none is left and there is no branch. Any other item as it is."""
    group = item.change
    if group is None or group.kind != Kind.GROUP:
        return [], item
    kept, steps = [], []
    for member in group.members:
        declined = _declined(member, inputs, history, group)
        if declined is None:
            kept.append(member)
        else:
            steps.append(Step(member.subject, Action.SKIPPED, declined, group.branch, member))
    if kept:
        return steps, group_change(group.subject, group.branch, kept) if len(kept) < len(group.members) else group
    none_left = Outcome(group.subject, Action.UNCHANGED, "every change it would propose was declined")
    return steps, none_left if state is not None else None


def _declined(change: Change, inputs: CycleInputs, history: History, group: Change | None = None) -> str | None:
    """Why ``change`` is not proposed again: a pull request a person closed unmerged under its title on its
    own branch, or, for a member of ``group``, a group pull request closed under the group's title whose body
    proposed it. Nothing is declined while an open pull request proposes the change."""
    pull = inputs.open_pulls.get(group.branch) if group is not None else None
    if inputs.forge is None or (pull is not None and change.title in proposed_titles(pull.body)):
        return None
    if group is not None:
        for closed in reversed(history.closed.get(group.branch, ())):
            if closed.title == group.title and change.title in proposed_titles(closed.body):
                return (
                    f"pull request #{closed.number} ({closed.title}) was closed without merging: "
                    f"{change.title} is not proposed again"
                )
    if change.branch in inputs.open_pulls:
        return None
    mine = [p for p in history.closed.get(change.branch, ()) if p.title == change.title]
    if not mine:
        return None
    return f"pull request #{mine[-1].number} ({change.title}) was closed without merging: not proposed again"


def _invalid(problem: Problem) -> Step:
    """A manifest that cannot be used: its file (and line) as the subject, the reason beside it."""
    subject = f"{problem.file}:{problem.line}" if problem.line else problem.file
    return Step(subject, Action.INVALID, problem.reason, file=problem.file)
