"""The first half of a sync cycle's plan, pure: from the inputs (``webhook.sync.inputs``) to a plan item per
subject, grouped onto branches (``Proposed``), and the branches whose history the second half
(``webhook.sync.deciding``) needs (``wanted_history``). No I/O: the catalogs, manifests, cluster observations and
branch states are read before; ``timings`` and ``progress`` only watch.

Every extension is planned by the ClusterExtensionRevision lifecycle (``webhook.plan.plan_extension``, its
revisions proposed on its own branch or the group's kept), every revision whose ClusterExtension is gone is
removed (not while ClusterExtension manifests have errors), every templated ClusterCatalog gets its image
(``webhook.plan.plan_catalog_image``), every add-on its next installVersion step (``webhook.plan.plan_addon``)
and a bot branch of an add-on no longer in the repository is withdrawn (not while add-on manifests have
errors); then ``grouping`` regroups the plan (``webhook.sync.groups``).
"""

from __future__ import annotations

import contextlib
from collections.abc import Collection, Mapping
from dataclasses import dataclass

from webhook.errors import CatalogError
from webhook.olm import check_extension
from webhook.plan import (
    SUBJECT_PREFIX,
    Action,
    AddOnContext,
    BranchAction,
    Kind,
    Outcome,
    PlanContext,
    Planned,
    Problem,
    RevisionFile,
    addon_subject,
    branch_action,
    branch_name,
    plan_addon,
    plan_catalog_image,
    plan_extension,
    plan_orphans,
    proposed_titles,
    rfc3339,
)
from webhook.sync.dashboard import Facts
from webhook.sync.groups import Grouped, branch_revisions, carried_subjects, cluster_subject, group_plan
from webhook.sync.inputs import CycleInputs, Progress, Snapshot
from webhook.sync.timings import Timings

STAYING = (Action.SKIPPED, Action.INVALID, Action.UNRESOLVED)
"""The actions of an outcome that leave its subject's branch as it is."""


@dataclass(frozen=True, slots=True)
class Proposed:
    """A push attempt's plan items: ``grouped`` (by subject, as the branches see them, with the other grouping
    scheme's branches to replace), the manifests' ``problems`` to report (catalogs, extensions, revisions and
    add-ons, on the first attempt) and the
    dashboard's ``facts`` by extension."""

    grouped: Grouped
    problems: tuple[Problem, ...]
    facts: Mapping[str, Facts]


def group_of(inputs: CycleInputs) -> tuple[str, str]:
    """The subject and branch of the cluster's group (``grouping: per-cluster``)."""
    subject = cluster_subject(inputs.config.revisions)
    return subject, branch_name(inputs.config.branch_prefix, subject)


def branch_of(inputs: CycleInputs, subject: str, item: Planned) -> str:
    """The branch of a plan item: its change's, else the subject's own."""
    change = item.change
    return change.branch if change is not None else branch_name(inputs.config.branch_prefix, subject)


def propose(
    inputs: CycleInputs,
    snapshot: Snapshot,
    scope: Collection[str] | None,
    timings: Timings,
    progress: Progress | None = None,
) -> Proposed:
    """Plan every subject in ``scope`` (``None``: all, and the manifests' problems are reported) and group the
    plan; ``progress(extension, done, total)`` follows the resolution."""
    plan = _extensions(inputs, snapshot, scope, timings, progress) if inputs.config.extensions else {}
    for templated in snapshot.templated:
        prefix = inputs.config.branch_prefix
        item = plan_catalog_image(templated.doc, templated.text, templated.result, prefix)
        if scope is None or item.subject in scope:
            plan[item.subject] = item
    plan.update(_addons(inputs, snapshot, scope, timings))
    group = group_of(inputs)
    states = snapshot.states
    carried = carried_subjects(states.get(group[1]), snapshot.revisions)
    grouped = group_plan(plan, states, inputs.config.grouping, group, carried=carried, scope=scope)
    addons = snapshot.addons
    found = (
        *inputs.catalogs.problems,
        *snapshot.problems,
        *snapshot.revision_problems,
        *(addons.problems if addons is not None else ()),
    )
    problems = found if scope is None else ()
    return Proposed(grouped, problems, _facts(snapshot))


def wanted_history(inputs: CycleInputs, snapshot: Snapshot, proposed: Proposed) -> tuple[set[str], set[str]]:
    """The branches whose pull requests closed unmerged the decisions read (a change not proposed by an open
    pull request; each member of a group), and the bot branches that may be withdrawn, whose change may have
    landed in the base branch."""
    closed: set[str] = set()
    landed: set[str] = set()
    open_pulls = inputs.open_pulls
    for subject, item in proposed.grouped.plan.items():
        branch = branch_of(inputs, subject, item)
        state = snapshot.states.get(branch)
        change, outcome = item.change, item.outcome
        withdrawable = (outcome is not None and outcome.action not in STAYING) or (
            change is not None and change.kind == Kind.GROUP  # a group whose every member was declined
        )
        if state is not None and not state.foreign_authors and withdrawable:
            landed.add(branch)
        if inputs.forge is None or change is None:
            continue
        if change.kind == Kind.GROUP:
            pull = open_pulls.get(change.branch)
            for member in change.members:
                if pull is None or member.title not in proposed_titles(pull.body):
                    closed.add(change.branch)
                    closed.update(() if member.branch in open_pulls else (member.branch,))
        elif branch_action(change, state) != BranchAction.HUMAN and change.branch not in open_pulls:
            closed.add(change.branch)
    return closed, landed


def _extensions(
    inputs: CycleInputs,
    snapshot: Snapshot,
    scope: Collection[str] | None,
    timings: Timings,
    progress: Progress | None,
) -> dict[str, Planned]:
    config = inputs.config
    context = PlanContext(config.revisions, config.branch_prefix, rfc3339(inputs.now))
    per_extension = _per_extension(snapshot.revisions)
    plan: dict[str, Planned] = {}
    wanted = [e for e in snapshot.extensions if scope is None or e.extension.name in scope]
    catalogs = inputs.catalogs.catalogs
    with timings.timed("catalogs"):  # decode the packages resolution will read (catalogs keep blobs as text)
        for catalog in catalogs:
            for package in sorted({e.extension.source.package for e in wanted}):
                with contextlib.suppress(CatalogError):  # reported by the resolution that reads it
                    catalog.package(package)
    with timings.timed("read"):
        prefix, group = config.branch_prefix, snapshot.states.get(group_of(inputs)[1])
        proposed = {  # on its own branch or the group's, whichever the grouping was when it was proposed
            name: [
                *branch_revisions(snapshot.states.get(branch_name(prefix, name)), name),
                *branch_revisions(group, name),
            ]
            for name in (e.extension.name for e in wanted)
        }
    with timings.timed("resolve"):
        for index, entry in enumerate(wanted, start=1):
            name = entry.extension.name
            check = check_extension(entry.extension, catalogs)
            plan[name] = plan_extension(entry, check, per_extension.get(name, []), proposed[name], context)
            if progress is not None:
                progress(name, index, len(wanted))
    known = {e.extension.name for e in snapshot.extensions}
    orphans = [r for r in snapshot.revisions if r.extension not in known and (scope is None or r.extension in scope)]
    if snapshot.problems and orphans:
        why = "not removed while ClusterExtension manifests have errors"
        for name in sorted({r.extension for r in orphans}):
            plan[name] = Outcome(name, Action.SKIPPED, why)
    else:
        plan.update((c.subject, c) for c in plan_orphans(orphans, context))
    return plan


def _addons(
    inputs: CycleInputs, snapshot: Snapshot, scope: Collection[str] | None, timings: Timings
) -> dict[str, Planned]:
    config, found = inputs.config.addons, snapshot.addons
    if config is None or found is None:
        return {}
    prefix = inputs.config.branch_prefix
    context = AddOnContext(config.canary_placements, config.canary_soak, prefix, inputs.now)
    plan: dict[str, Planned] = {}
    for addon in found.addons:
        subject = addon_subject(addon.name)
        if scope is None or subject in scope:
            with timings.timed("plan"):
                plan[subject] = plan_addon(addon, snapshot.texts, snapshot.observed[subject], context)
    known = {addon_subject(addon.name) for addon in found.addons}
    for branch in sorted(snapshot.states):
        subject = branch.removeprefix(prefix)
        if not subject.startswith(SUBJECT_PREFIX) or subject in known or (scope and subject not in scope):
            continue
        if found.problems:
            plan[subject] = Outcome(subject, Action.SKIPPED, "not withdrawn while add-on manifests have errors")
        else:
            gone = f"add-on {subject.removeprefix(SUBJECT_PREFIX)} is not in the repository any more"
            plan[subject] = Outcome(subject, Action.UNCHANGED, gone)
    return plan


def _per_extension(revisions: Collection[RevisionFile]) -> dict[str, list[RevisionFile]]:
    per_extension: dict[str, list[RevisionFile]] = {}
    for revision in revisions:
        per_extension.setdefault(revision.extension, []).append(revision)
    return per_extension


def _facts(snapshot: Snapshot) -> dict[str, Facts]:
    """What the base branch says about each extension: its installed version and its revisions' versions,
    approved or not (the dashboard's rows)."""
    per_extension = _per_extension(snapshot.revisions)
    facts = {}
    for entry in snapshot.extensions:
        name, installed = entry.extension.name, entry.extension.installed
        base = sorted(per_extension.get(name, []), key=lambda r: r.file)
        facts[name] = Facts(
            installed.version if installed is not None else None,
            approved=tuple(r.version for r in base if r.approved),
            pending=tuple(r.version for r in base if not r.approved),
        )
    return facts
