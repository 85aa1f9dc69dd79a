"""``upgrade-gate review``: the admission requests a change makes once merged, evaluated as the cluster will.

Every request comes from the GitOps applier (``policyCheck.applier``), in Argo CD's and Flux's order: creates
and updates first, against a store holding the base objects as the cluster stores them (each base manifest
after the mutating policies of its CREATE) and the policies' params, then the prune of deleted objects. An
UPDATE's ``oldObject`` and a DELETE's are the stored base object.

An approval must in addition be admitted for an approving reviewer of the pull request (user name: the forge
login; groups: the Kubernetes groups ``policyCheck.teams`` maps the reviewer's teams to, and
``system:authenticated``), because a trusted applier (the settings' ``gitopsAppliers``) is admitted on the strength
of that review. An approval is a revision approval (``spec.approved`` becomes true) or an add-on upgrade or
rollback, which the bundled add-on policies let only an approver write: a ClusterManagementAddOn UPDATE that moves
a placement's version or configs (``webhook.ocm.placement_changes``: Upgrading or Rollingback), or a
ManagedClusterAddOn UPDATE that moves its effective version (``installVersion``, else the ClusterManagementAddOn's
``defaultVersion``, both as the store holds them) or its non-empty ``spec.configs`` to another set. When the
manifest names its reviewer in the annotation ``upgrade-gate.io/reviewed-by``, that reviewer must have approved
and be admitted. Without any approving reviewer the approval is denied.

Each evaluation is a ``Result`` row: ``admitted``, ``denied`` (the change fails), ``not counted`` (a reviewer
denied while another reviewer's approval stands), ``invalid`` (a changed file that is not YAML or not a
Kubernetes object), ``moved`` (an unchanged object in another file: no request) or, for a policy change,
``changed`` (a manifest the new policies admit and the old ones denied), ``skipped`` (no comparison: the base
policies do not load) and ``failed`` (a policy test case).

A row points at the line that decides it: the ``approved:`` line of an approval, the version of a version change (a
revision's ``spec.version``, a ClusterExtension's ``spec.source.catalog.version``, an add-on's ``installVersion``),
else the document's first line. A denial's message is the policy's own, its policy and binding beside it
(``webhook.policy.Denial``), not the API server's wording of the three in one text. The rows of an approval that is
not admitted name who may approve: the ``approverGroups`` of the policies' settings and the forge teams
``policyCheck.teams`` maps to them (``None`` when the settings name no approver group).

A malformed add-on (a placement without a name, a malformed ``defaultVersion``) makes no approval here: the
policies' own evaluation of the write denies it.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from webhook.errors import InputError
from webhook.ocm import (
    AddOnVersions,
    VersionChange,
    classify,
    classify_configs,
    is_addon_version,
    placement_changes,
)
from webhook.plan.changes import GOVERNED_KINDS, Key, Manifest, ObjectChange, describe
from webhook.plan.manifests import MANAGED_ADDON_KIND, MANAGEMENT_ADDON_KIND, REVISION_KIND, Problem
from webhook.plan.policycheck import approver_groups
from webhook.plan.requests import Evaluator, UserInfo, admission_request
from webhook.plan.yamledit import Path, line_of
from webhook.policy import Decision, PolicySet, SuiteResult

REVIEWED_BY = "upgrade-gate.io/reviewed-by"
AUTHENTICATED = "system:authenticated"
FAILING = ("denied", "invalid", "failed")
APPROVED: Path = ("spec", "approved")
_VERSIONS: Mapping[str, Path] = {
    REVISION_KIND: ("spec", "version"),
    "ClusterExtension": ("spec", "source", "catalog", "version"),
    MANAGED_ADDON_KIND: ("spec", "installVersion"),
}
_PLACEMENTS: Path = ("spec", "installStrategy", "placements")
_MOVES = (VersionChange.UPGRADING, VersionChange.ROLLINGBACK)


@dataclass(frozen=True, slots=True)
class Approvers:
    """Who may approve a revision: members of ``groups`` (the settings' ``approverGroups``), or of the forge
    ``teams`` ``policyCheck.teams`` maps to them."""

    groups: tuple[str, ...]
    teams: tuple[str, ...] = ()

    def __str__(self) -> str:
        """``members of a, b, or of the forge team org/t``."""
        teams = f", or of the forge team{'s' if len(self.teams) > 1 else ''} {', '.join(self.teams)}"
        return f"members of {', '.join(self.groups)}{teams if self.teams else ''}"


def approvers_of(policies: PolicySet, teams: Mapping[str, str]) -> Approvers | None:
    """The ``Approvers`` the policies' settings name, ``None`` when they name no approver group."""
    groups = approver_groups(policies)
    if not groups:
        return None
    return Approvers(tuple(groups), tuple(sorted(team for team, group in teams.items() if group in groups)))


@dataclass(frozen=True, slots=True)
class Reviewer:
    """An approving reviewer as the API server would see them, with a note for the report (no team...)."""

    identity: UserInfo
    note: str = ""


@dataclass(frozen=True, slots=True)
class Result:
    """One row of the review: where (``line`` 1-based, 0 when none), what, which request, as whom, the verdict,
    its message in plain words, the ``policy`` and ``binding`` that decided a denial (empty otherwise) and, for an
    approval not admitted, who may approve."""

    file: str
    line: int
    object: str
    operation: str
    user: str
    verdict: str
    message: str = ""
    role: str = "applier"
    policy: str = ""
    binding: str = ""
    approvers: Approvers | None = None

    @property
    def failing(self) -> bool:
        """Whether this row makes the review fail (exit 1)."""
        return self.verdict in FAILING


@dataclass(frozen=True, slots=True)
class Review:
    """The inputs one review evaluates."""

    changes: Sequence[ObjectChange]
    base: Sequence[Manifest]
    policies: PolicySet
    applier: UserInfo
    reviewers: Sequence[Reviewer] | None
    """``None``: no reviewer source (a review of refs without ``--as``)."""
    now: datetime.datetime
    problems: Sequence[Problem] = field(default_factory=tuple)
    texts: Mapping[str, str] = field(default_factory=dict)
    """The head's files (``{file: text}``), where the rows' lines are looked up."""
    teams: Mapping[str, str] = field(default_factory=dict)
    """``policyCheck.teams``: forge team to Kubernetes group."""


def review(inputs: Review) -> list[Result]:
    """Every row of the review: the invalid changed files, then each request in apply order."""
    results = [Result(p.file, p.line, "-", "-", "-", "invalid", p.reason, role="-") for p in inputs.problems]
    stored = _stored(inputs.base, inputs.policies, inputs.applier, inputs.now)
    apply = Evaluator(inputs.policies, stored.values(), inputs.now)
    approvers = approvers_of(inputs.policies, inputs.teams)
    after = dict(stored)
    for change in inputs.changes:
        subject = change.subject
        if change.operation == "MOVE":
            assert change.old is not None  # a move has both sides
            message = f"moved from {change.old.file}; the object is unchanged, so applying it makes no request"
            results.append(_row(subject, "-", "-", "moved", message, role="-"))
            continue
        if change.operation == "DELETE":
            continue
        old = stored.get(subject.key) if change.old is not None else None
        approval = _approval(subject.object, old, stored)
        rows, applied = _apply(apply, change, old, inputs, approval)
        if approval:
            rows = [r if r.verdict == "admitted" else replace(r, approvers=approvers) for r in rows]
        results += rows
        if applied is not None:
            after[subject.key] = applied
    prune = Evaluator(inputs.policies, after.values(), inputs.now)
    for change in inputs.changes:
        if change.operation == "DELETE":
            old = stored[change.subject.key]
            request = admission_request("DELETE", new=None, old=old, user=inputs.applier, uid=_uid(change))
            decision = prune.admit(request).validated
            results.append(_decided(change.subject, "DELETE", inputs.applier.username, decision))
    return results


def _deciding_path(new: Mapping[str, Any], old: Mapping[str, Any] | None) -> Path:
    """The field that decides a write of ``new`` over ``old`` (``None``: a create): ``spec.approved`` for an
    approval, else the version field of the kind when it is set and changes, else ``()`` (the whole object)."""
    if _approves(new, old):
        return APPROVED
    for path in _version_paths(new):
        value = _value(new, path)
        if value is not None and (old is None or _value(old, path) != value):
            return path
    return ()


def policy_differences(
    manifests: Iterable[Manifest], before: PolicySet, after: PolicySet, applier: UserInfo, now: datetime.datetime
) -> list[Result]:
    """The governed ``manifests`` (the repository at head) that ``after`` decides differently from ``before``,
    each as a CREATE by ``applier`` against a store of all of them: ``denied`` when ``after`` denies what
    ``before`` admitted, ``changed`` when it admits what ``before`` denied."""
    manifests = list(manifests)
    objects = [m.object for m in manifests]
    old, new = Evaluator(before, objects, now), Evaluator(after, objects, now)
    results = []
    for manifest in manifests:
        if manifest.object.get("kind") not in GOVERNED_KINDS:
            continue
        request = admission_request(
            "CREATE", new=manifest.object, old=None, user=applier, uid=f"policies-{manifest.where}"
        )
        was, now_is = old.admit(request).validated, new.admit(request).validated
        if was.allowed == now_is.allowed:
            continue
        if now_is.allowed:
            row = _decided(manifest, "CREATE", applier.username, was, role="policies")
            results.append(replace(row, verdict="changed", message=f"denied → admitted (was denied: {row.message})"))
        else:
            row = _decided(manifest, "CREATE", applier.username, now_is, role="policies")
            results.append(replace(row, message=f"admitted → denied: {row.message}"))
    return results


def suite_failures(results: Iterable[SuiteResult]) -> list[Result]:
    """A ``failed`` row per policy test case that fails (or suite that does not load)."""
    rows = []
    for suite in results:
        file = str(suite.file)
        if suite.error is not None:
            rows.append(
                Result(file, 0, suite.name, "-", "-", "failed", suite.error.splitlines()[0], role="policy test")
            )
        for case in suite.cases:
            if not case.passed:
                message = case.summary
                rows.append(
                    Result(file, 0, f"{suite.name}: {case.case}", "-", "-", "failed", message, role="policy test")
                )
    return rows


def _stored(
    base: Iterable[Manifest], policies: PolicySet, applier: UserInfo, now: datetime.datetime
) -> dict[tuple[str, str, str, str], Mapping[str, Any]]:
    """The base objects as the cluster stores them: a governed manifest after the mutating policies of its
    CREATE by the applier (as given when a mutating policy denies it), any other object as given."""
    manifests = {m.key: m for m in base}
    evaluator = Evaluator(policies, [m.object for m in manifests.values()], now)
    stored: dict[tuple[str, str, str, str], Mapping[str, Any]] = {}
    for key, manifest in manifests.items():
        stored[key] = manifest.object
        if manifest.object.get("kind") in GOVERNED_KINDS:
            uid = f"stored-{manifest.where}"
            request = admission_request("CREATE", new=manifest.object, old=None, user=applier, uid=uid)
            stored[key] = evaluator.mutated(request) or manifest.object
    return stored


def _apply(
    evaluator: Evaluator, change: ObjectChange, old: Mapping[str, Any] | None, inputs: Review, approval: str
) -> tuple[list[Result], Mapping[str, Any] | None]:
    """The applier's CREATE or UPDATE, and for an approval (``approval``, see ``_approval``) the reviewers' rows,
    at the line that decides; with the object the cluster then stores (``None`` when denied)."""
    assert change.new is not None  # creates and updates have a new side
    new = change.new.object
    operation = change.operation
    line = _line(change.new, _deciding_path(new, old), inputs.texts)
    request = admission_request(operation, new=new, old=old, user=inputs.applier, uid=_uid(change))
    admission = evaluator.admit(request)
    decision = admission.validated
    rows = [_decided(change.new, operation, inputs.applier.username, decision)]
    applied = admission.patched if decision.allowed else None
    if approval:
        annotation = str((new.get("metadata", {}).get("annotations") or {}).get(REVIEWED_BY, "")).strip()
        if decision.allowed and not annotation and _approves(new, old):
            note = (
                f"spec.approvedBy will record {inputs.applier.username}; the annotation {REVIEWED_BY}: <login> "
                "records the reviewer"
            )
            rows[0] = replace(rows[0], message=note)
        rows += _reviewers(evaluator, change.new, request, annotation, inputs, approval=approval)
    return [replace(r, line=line) for r in rows], applied


def _reviewers(
    evaluator: Evaluator,
    manifest: Manifest,
    request: Mapping[str, Any],
    annotation: str,
    inputs: Review,
    *,
    approval: str,
) -> list[Result]:
    """Rows for the approving reviewers of ``approval``: at least one (the annotated one, when named) must be
    admitted."""
    operation = f"{request['operation']} (approval)"
    if inputs.reviewers is None:
        message = f"{approval} needs an approving reviewer: review a pull request (--pull) or name one (--as)"
        return [_row(manifest, operation, "-", "denied", message, role="reviewer")]
    if not inputs.reviewers:
        message = f"{approval} needs an approving review in the pull request, and it has none"
        return [_row(manifest, operation, "-", "denied", message, role="reviewer")]
    logins = [r.identity.username for r in inputs.reviewers]
    decisions = {}
    for reviewer in inputs.reviewers:
        as_reviewer = {**request, "userInfo": reviewer.identity.user_info()}
        decisions[reviewer.identity.username] = evaluator.admit(as_reviewer).validated
    if annotation:
        satisfied = annotation in decisions and decisions[annotation].allowed
    else:
        satisfied = any(d.allowed for d in decisions.values())
    rows = []
    for reviewer in inputs.reviewers:
        login = reviewer.identity.username
        decision = decisions[login]
        user = f"{login} ({', '.join(reviewer.identity.groups)})"
        row = _decided(manifest, operation, user, decision, role="reviewer", note=reviewer.note)
        rows.append(row if decision.allowed or not satisfied else replace(row, verdict="not counted"))
    if annotation and annotation not in decisions:
        message = (
            f"the annotation {REVIEWED_BY} names {annotation}, who has not approved this change "
            f"(approving: {', '.join(logins)})"
        )
        rows.append(_row(manifest, operation, annotation, "denied", message, role="reviewer"))
    return rows


def _approval(new: Mapping[str, Any], old: Mapping[str, Any] | None, stored: Mapping[Key, Mapping[str, Any]]) -> str:
    """What a write of ``new`` over ``old`` (``None``: a create) approves, as the reviewers' rows name it
    (``approving NAME``, ``upgrading or rolling back add-on NAME[ on cluster NS]``); ``''`` when it is no
    approval (module docstring). ``stored`` holds the ClusterManagementAddOn a ManagedClusterAddOn follows."""
    name, kind = str(new["metadata"]["name"]), new.get("kind")
    if _approves(new, old):
        return f"approving {name}"
    try:
        if old is not None and kind == MANAGEMENT_ADDON_KIND and _moves_placements(new, old):
            return f"upgrading or rolling back add-on {name}"
        if old is not None and kind == MANAGED_ADDON_KIND and _moves_managed_addon(new, old, stored):
            return f"upgrading or rolling back add-on {name} on cluster {new['metadata'].get('namespace', '')}"
    except InputError:
        pass  # malformed: the policies' evaluation denies it
    return ""


def _approves(new: Mapping[str, Any], old: Mapping[str, Any] | None) -> bool:
    """A ClusterExtensionRevision write that sets ``spec.approved`` true on an unapproved (or new) revision."""
    if new.get("kind") != REVISION_KIND or (new.get("spec") or {}).get("approved") is not True:
        return False
    return old is None or (old.get("spec") or {}).get("approved") is not True


def _moves_placements(new: Mapping[str, Any], old: Mapping[str, Any]) -> bool:
    """A ClusterManagementAddOn UPDATE that upgrades or rolls back a placement's version or configs
    (``placement_changes``). Raises ``InputError`` for a malformed placement or config."""
    return any(c.change in _MOVES or c.config_change in _MOVES for c in placement_changes(old, new))


def _moves_managed_addon(
    new: Mapping[str, Any], old: Mapping[str, Any], stored: Mapping[Key, Mapping[str, Any]]
) -> bool:
    """A ManagedClusterAddOn UPDATE that upgrades or rolls back its effective version (``AddOnVersions.resolve``
    with the status of the stored ClusterManagementAddOn of its name, ``classify``; a version that does not parse
    moves nothing, as the policy's ``addon.isVersion`` guard has it) or moves its non-empty ``spec.configs``
    (``classify_configs``). Raises ``InputError`` for a malformed ``defaultVersion`` or config."""
    manager = stored.get((str(new["apiVersion"]), MANAGEMENT_ADDON_KIND, "", str(new["metadata"]["name"]))) or {}
    versions = AddOnVersions.from_status(manager.get("status"))
    spec, previous = new.get("spec") or {}, old.get("spec") or {}
    version, last = versions.resolve(spec.get("installVersion")), versions.resolve(previous.get("installVersion"))
    configs = spec.get("configs") or []
    if configs and classify_configs(previous.get("configs") or [], configs) in _MOVES:
        return True
    return bool(version and is_addon_version(version) and classify(last, version) in _MOVES)


def _version_paths(manifest: Mapping[str, Any]) -> list[Path]:
    """Where the kind of ``manifest`` names the version it installs (a ClusterManagementAddOn: per placement)."""
    kind = str(manifest.get("kind"))
    if kind in _VERSIONS:
        return [_VERSIONS[kind]]
    placements = _value(manifest, _PLACEMENTS) if kind == MANAGEMENT_ADDON_KIND else None
    count = len(placements) if isinstance(placements, list) else 0
    return [(*_PLACEMENTS, index, "addonTemplate", "installVersion") for index in range(count)]


def _value(manifest: Mapping[str, Any], path: Path) -> object:
    """The value at ``path`` (mapping keys and list indexes), ``None`` when any part is missing."""
    value: object = manifest
    for part in path:
        if isinstance(part, int) and isinstance(value, list) and part < len(value):
            value = value[part]
        elif isinstance(part, str) and isinstance(value, Mapping):
            value = value.get(part)
        else:
            return None
    return value


def _line(manifest: Manifest, path: Path, texts: Mapping[str, str]) -> int:
    """The line of ``path`` in ``manifest``'s document (``webhook.plan.yamledit.line_of``); the document's first
    line when ``path`` is empty or the file's text is not given."""
    text = texts.get(manifest.file)
    return line_of(text, manifest.file, manifest.line, path) if path and text is not None else manifest.line


def _decided(
    manifest: Manifest, operation: str, user: str, decision: Decision, *, role: str = "applier", note: str = ""
) -> Result:
    """The row of one evaluated request: ``admitted`` or ``denied``, a denial split into its policy, binding and
    plain message, ``note`` appended to the message."""
    denial = decision.denials[0] if decision.denials and not decision.allowed else None
    if denial is not None:
        policy, binding, message = denial.policy, denial.binding or "", denial.message
    else:
        policy, binding, message = "", "", "" if decision.allowed else decision.message
    message = "; ".join(m for m in (message, note) if m)
    verdict = "admitted" if decision.allowed else "denied"
    return replace(_row(manifest, operation, user, verdict, message, role=role), policy=policy, binding=binding)


def _row(manifest: Manifest, operation: str, user: str, verdict: str, message: str, *, role: str = "applier") -> Result:
    return Result(manifest.file, manifest.line, describe(manifest.key), operation, user, verdict, message, role)


def _uid(change: ObjectChange) -> str:
    return f"review-{change.operation.lower()}-{change.subject.where}"
