"""The report step of a sync cycle, pure: from the plan (``webhook.sync.deciding``) and what its writes did
(``webhook.sync.acting``) to the report's entries, the one place entries are made.

A step becomes its entry as it is. A pushed or kept branch reports each change it proposes: ``proposed``,
``updated`` or ``removed`` when the push wrote it anew, else ``unchanged`` (``opened`` when its pull request
was opened only now), or ``merged`` when automerge merged it; a deleted branch reports ``held`` (an add-on
waiting for its canaries), ``merged`` (its change landed) or ``withdrawn``. A push rejected on every attempt
is ``failed``; a branch that replaces one of the other grouping scheme says so in its reason.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

from webhook.io.forges import PullRequest
from webhook.plan import Action, Kind
from webhook.sync.acting import Written
from webhook.sync.deciding import Plan, Proposal, Step
from webhook.sync.report import STANDING, Entry

_DONE = {
    Kind.PROPOSE: Action.PROPOSED,
    Kind.UPDATE: Action.UPDATED,
    Kind.REMOVE: Action.REMOVED,
    Kind.CATALOG_IMAGE: Action.PROPOSED,
    Kind.ADDON_VERSION: Action.PROPOSED,
}
"""What a change's entry says when the push wrote it anew, by the change's kind."""


def entries(plan: Plan, written: Mapping[str, Written], *, dry_run: bool) -> dict[str, Entry]:
    """The entries of a push attempt by subject: every step's, and those of every proposal ``written`` (a
    rejected one has none: it is retried)."""
    found = {step.subject: _entry(step) for step in plan.steps}
    for proposal in plan.proposals:
        if proposal.branch in written:
            made = _proposal_entries(proposal, written[proposal.branch], dry_run)
            found.update((entry.subject, entry) for entry in made)
    return found


def failed(rejected: Mapping[str, tuple[str, str]], attempts: int) -> dict[str, Entry]:
    """The entries of the subjects whose push was rejected on every one of ``attempts`` (subject to branch and
    git's last reason)."""
    return {
        subject: Entry(subject, Action.FAILED, f"push rejected {attempts} times, last: {why}", branch)
        for subject, (branch, why) in rejected.items()
    }


def standing(replaced: Mapping[str, tuple[str, ...]], found: Mapping[str, Entry]) -> list[str]:
    """The replaced branches (sorted) whose every subject's proposal stands on a branch other than it after this
    cycle's push; the others stay until their replacement is pushed (waiting, rejected, declined)."""
    return [
        branch
        for branch, subjects in sorted(replaced.items())
        if all(_stands(found.get(name), branch) for name in subjects)
    ]


def noted(
    found: Mapping[str, Entry],
    replaced: Mapping[str, tuple[str, ...]],
    deleted: Mapping[str, PullRequest | None],
    *,
    dry_run: bool,
) -> dict[str, Entry]:
    """``found`` with the reason of each subject whose new branch replaced a ``deleted`` one saying so (and which
    pull request was closed)."""
    result = dict(found)
    for branch, pull in deleted.items():
        closed = f" (pull request {pull.url} closed)" if pull is not None else ""
        note = f"; replaces branch {branch}{closed}{' (dry run)' if dry_run else ''}"
        for name in replaced[branch]:
            result[name] = replace(result[name], reason=result[name].reason + note)
    return result


def _stands(entry: Entry | None, old: str) -> bool:
    return entry is not None and entry.branch != old and entry.action in STANDING


def _entry(step: Step) -> Entry:
    change = step.change
    versions = (change.from_version, change.to_version) if change is not None else (None, None)
    return Entry(step.subject, step.action, step.reason, step.branch, *versions, step.file, ready_at=step.ready_at)


def _proposal_entries(proposal: Proposal, written: Written, dry_run: bool) -> Sequence[Entry]:
    branch, url = proposal.branch, written.pull.url if written.pull is not None else None
    outcome, change = proposal.item.outcome, proposal.item.change
    if outcome is not None:
        deleted = "would be deleted (dry run)" if dry_run else "deleted"
        if outcome.action == Action.HELD:  # still waiting is the news; the branch proposed nothing new
            why = f"{outcome.reason}; branch {branch} {deleted} until then"
            return [Entry(proposal.subject, Action.HELD, why, branch, pull_request=url, ready_at=outcome.ready_at)]
        if proposal.landed:
            why = f"{outcome.reason}: branch {branch} {deleted}"
            return [Entry(proposal.subject, Action.MERGED, why, branch, pull_request=url)]
        why = f"nothing to propose any more ({outcome.reason}): branch {branch} {deleted}"
        return [Entry(proposal.subject, Action.WITHDRAWN, why, branch, pull_request=url)]
    assert change is not None  # a plan item is a change or an outcome
    if written.merged is not None:
        why = "automerged: the policies admit approving it without a reviewer"
        if not written.merged:
            why = f"branch {branch} already proposes this; automerge: the forge did not merge it yet"
        action = Action.MERGED if written.merged else Action.UNCHANGED
        return [
            Entry(m.subject, action, why, branch, m.from_version, m.to_version, pull_request=url)
            for m in change.proposals
        ]
    found = []
    for member in change.proposals:
        fresh = member.subject in proposal.fresh
        action = _DONE[member.kind] if fresh else Action.OPENED if proposal.opened else Action.UNCHANGED
        reason = member.reason if fresh else f"branch {branch} already proposes this"
        if action == Action.OPENED:
            reason = f"pull request opened: {reason}"
        diff = written.diffs.get(member.subject)
        found.append(
            Entry(
                member.subject,
                action,
                reason,
                branch,
                member.from_version,
                member.to_version,
                pull_request=url,
                diff=diff,
            )
        )
    return found
