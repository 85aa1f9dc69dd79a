"""A ClusterExtensionRevision's state and the status conditions that report it. Pure: no I/O, the time passed in.

The revision status contract (README, "Revision status"): four states, six condition types owned by the
controller; every other condition type belongs to someone else and is kept in its place (``webhook.conditions``).

* pending approval: Approved False ``PendingApproval`` (``ApprovalReset`` once an approval was withdrawn),
  Progressing, Succeeded and Ready False ``PendingApproval``;
* progressing: Approved True ``Approved``, Progressing True ``Upgrading``, Succeeded False ``Upgrading``,
  Reconciling True ``Upgrading``, Ready False ``Upgrading``;
* held: Approved True ``Approved``, Progressing True ``Held``, Succeeded False ``Held``, Ready False ``Held``; no
  ``Reconciling``: like a pending approval, a hold waits on people or a window, so kstatus reads it Current and a
  Flux Kustomization that waits for health is not held up for the days a freeze may last;
* succeeded: Approved True ``Approved``, Progressing False ``Succeeded``, Succeeded True ``Succeeded``,
  Reconciling False ``Succeeded``, Ready True ``Succeeded``;
* failed: Approved True ``Approved``, Progressing, Succeeded and Ready False ``Failed``, Stalled True ``Failed``.

(A condition not named is absent; kstatus reads ``Reconciling`` and ``Stalled`` as "abnormal when True".)
``Approved`` always says whether ``spec.approved`` is true, whatever the state.

Which state, read from the revision and its ClusterExtension (``olm.operatorframework.io/v1``, as
operator-controller writes its status in ``controllers/clusterextension_reconcile_steps.go``):

* **succeeded** when the ClusterExtension's installed bundle (``status.install.bundle.version``) reached
  ``spec.version`` (equal, or past it: the upgrade is behind it); for a rollback only when it equals
  ``spec.version``. A revision is a rollback when it carries the annotation ``upgrade-gate.io/acknowledge-rollback``
  (which the approval policy requires of a version below the installed one), or when ``spec.version`` is below the
  version it started from (``status.fromVersion``);
* **failed** when the ClusterExtension does not exist, or operator-controller reports a terminal error
  (``Progressing`` reason ``Blocked``) for an approved revision;
* **pending approval** while ``spec.approved`` is not true;
* **held** while operator-controller retries the approved upgrade (``Progressing`` reason ``Retrying``: the gate
  denied its upgrade write, say for a freeze window, or anything else went wrong): the message is the reason, once
  (the gate's own sentence where the denial carries one, not the admission chain around it), so
  ``kubectl get clusterextensionrevisions`` shows why the upgrade waits; held too when operator-controller has
  settled on another version (``Progressing`` reason ``Succeeded`` with the revision's version not installed: the
  catalogs no longer, or not yet, offer it), which the message says;
* **progressing** otherwise.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from webhook.conditions import find_condition, remove_condition, set_condition
from webhook.errors import InvalidVersion
from webhook.objects import KubeObject
from webhook.olm import VersionRelease

PENDING, PROGRESSING, HELD = "pending approval", "progressing", "held"
SUCCEEDED, FAILED = "succeeded", "failed"
APPROVED, PENDING_APPROVAL, APPROVAL_RESET = "Approved", "PendingApproval", "ApprovalReset"
UPGRADING, HELD_REASON, SUCCEEDED_REASON, FAILED_REASON = "Upgrading", "Held", "Succeeded", "Failed"
MAX_MESSAGE = 32768
#: operator-controller's ``Progressing`` reason once a reconcile reached the version it resolves (``api/v1``
#: ``ReasonSucceeded``).
SETTLED = "Succeeded"
#: operator-controller's ``Progressing`` reason while it retries a reconcile that failed (a denied upgrade write).
RETRYING = "Retrying"
#: The acknowledgement a rollback revision carries (``policies/revision-approval.yaml``).
ROLLBACK_ANNOTATION = "upgrade-gate.io/acknowledge-rollback"
OWNED = ("Approved", "Progressing", "Succeeded", "Reconciling", "Stalled", "Ready")

_STATE_NAMES = {
    PENDING: "PendingApproval",
    PROGRESSING: "Progressing",
    HELD: "Held",
    SUCCEEDED: "Succeeded",
    FAILED: "Failed",
}
#: What precedes the reason in a denial: a ValidatingAdmissionPolicy's own (``... with binding 'b' denied request:
#: <message>``), then an admission webhook's (``admission webhook "w" denied the request: <message>``).
_DENIALS = ("denied request: ", "denied the request: ")
# state -> (status, reason) of Progressing, Succeeded, Reconciling, Stalled, Ready; None = absent.
_CONTRACT: dict[str, tuple[tuple[str, str] | None, ...]] = {
    PENDING: (("False", PENDING_APPROVAL), ("False", PENDING_APPROVAL), None, None, ("False", PENDING_APPROVAL)),
    PROGRESSING: (("True", UPGRADING), ("False", UPGRADING), ("True", UPGRADING), None, ("False", UPGRADING)),
    HELD: (("True", HELD_REASON), ("False", HELD_REASON), None, None, ("False", HELD_REASON)),
    SUCCEEDED: (
        ("False", SUCCEEDED_REASON),
        ("True", SUCCEEDED_REASON),
        ("False", SUCCEEDED_REASON),
        None,
        ("True", SUCCEEDED_REASON),
    ),
    FAILED: (
        ("False", FAILED_REASON),
        ("False", FAILED_REASON),
        None,
        ("True", FAILED_REASON),
        ("False", FAILED_REASON),
    ),
}


@dataclass(frozen=True, slots=True)
class Assessment:
    """What a revision's state is and why: ``state`` (one of the four), ``message`` (the state's message on
    Progressing, Succeeded, Reconciling, Stalled and Ready), ``approved`` and ``approval`` (the reason and message
    of ``Approved``), and ``held``: why operator-controller's retries of the approved upgrade are refused (the
    gate's own message), else ``None``; ``installed``: the ClusterExtension's installed version."""

    state: str
    message: str
    approved: bool
    approval: tuple[str, str]
    held: str | None = None
    installed: str | None = None


def _spec(revision: Mapping[str, Any]) -> Mapping[str, Any]:
    spec = revision.get("spec")
    return spec if isinstance(spec, Mapping) else {}


def extension_of(revision: Mapping[str, Any]) -> str:
    """The revision's ``spec.clusterExtensionRef.name`` (empty when absent)."""
    ref = _spec(revision).get("clusterExtensionRef")
    return str(ref.get("name") or "") if isinstance(ref, Mapping) else ""


def installed_version(extension: Mapping[str, Any]) -> str | None:
    """A ClusterExtension's ``status.install.bundle.version``, or ``None`` before the first install."""
    status = extension.get("status") if isinstance(extension.get("status"), Mapping) else {}
    bundle = ((status or {}).get("install") or {}).get("bundle") or {}
    version = bundle.get("version") if isinstance(bundle, Mapping) else None
    return str(version) if version else None


def operator_progressing(extension: Mapping[str, Any]) -> Mapping[str, Any]:
    """The ``Progressing`` condition operator-controller writes on a ClusterExtension (empty before one is)."""
    status = extension.get("status") if isinstance(extension.get("status"), Mapping) else {}
    return find_condition((status or {}).get("conditions"), "Progressing") or {}


def reached(installed: str, version: str, *, rollback: bool = False) -> bool:
    """True when ``installed`` is ``version`` or past it (SemVer precedence, then release, as OLM v1 orders
    bundles), or, for a ``rollback``, is ``version``; versions that do not parse are compared as text."""
    try:
        order = _compare(installed, version)
    except InvalidVersion:
        return installed.strip() == version.strip()
    return order == 0 if rollback else order >= 0


def is_rollback(version: str, start: object) -> bool:
    """True when ``version`` is below ``start``, the installed version the revision started from (if a string)."""
    try:
        return isinstance(start, str) and bool(start) and _compare(version, start) < 0
    except InvalidVersion:
        return False


def _compare(left: str, right: str) -> int:
    """-1, 0 or 1 as ``left`` orders before, with or after ``right`` (raises ``InvalidVersion``)."""
    a, b = VersionRelease.parse(left).sort_key(), VersionRelease.parse(right).sort_key()
    return (a > b) - (a < b)


def assess(revision: Mapping[str, Any], extension: Mapping[str, Any] | None) -> Assessment:
    """The state of ``revision`` given its ClusterExtension (``None``: it does not exist), see the module doc."""
    spec = _spec(revision)
    name = str((revision.get("metadata") or {}).get("name") or "")
    owner, version = extension_of(revision), str(spec.get("version") or "")
    approved = spec.get("approved") is True
    approval = _approval(revision, approved)
    if extension is None:
        return Assessment(FAILED, f"ClusterExtension {owner} not found", approved, approval)
    installed = installed_version(extension)
    progressing = operator_progressing(extension)
    reason, report = str(progressing.get("reason") or ""), str(progressing.get("message") or "")
    own = revision.get("status") if isinstance(revision.get("status"), Mapping) else {}
    annotations = (revision.get("metadata") or {}).get("annotations") or {}
    rollback = ROLLBACK_ANNOTATION in annotations or is_rollback(version, (own or {}).get("fromVersion"))
    kind = "rollback" if rollback else "upgrade"
    if installed is not None and reached(installed, version, rollback=rollback):
        past = "" if installed.strip() == version.strip() else f" (installed {installed})"
        done = "rolled back" if rollback else "upgraded"
        return Assessment(SUCCEEDED, f"{owner} {done} to {version}{past}", approved, approval, None, installed)
    retrying = reason == RETRYING and report
    moving = f"{owner} from {installed or 'nothing installed'} to {version}"
    if not approved:
        message = f"{kind} of {moving} is waiting for approval: approve ClusterExtensionRevision {name}"
        return Assessment(PENDING, message, approved, approval, None, installed)
    if reason == "Blocked":
        message = f"{kind} of {moving} failed: ClusterExtension {owner}: {report}"
        return Assessment(FAILED, message, approved, approval, None, installed)
    if retrying:
        held = held_reason(report)
        message = held if held.startswith(f"{kind} of {owner} ") else f"{kind} of {moving} is held: {held}"
        return Assessment(HELD, message, approved, approval, held, installed)
    if reason == SETTLED and installed is not None:
        settled = (
            f"{kind} of {moving} is approved, but operator-controller has settled on {installed}: {version} is not (or "
            "not yet) offered by the catalogs and channels it resolves from (withdrawn, or outside the version range)"
        )
        return Assessment(HELD, settled, approved, approval, settled, installed)
    return Assessment(
        PROGRESSING, f"{'rolling back' if rollback else 'upgrading'} {moving}", approved, approval, None, installed
    )


def held_reason(report: str) -> str:
    """Why operator-controller's retry was refused, said once: the policy's own message after the last
    ``denied request:`` (else after an admission webhook's ``denied the request:``), or the whole report when it is
    no admission denial."""
    for marker in _DENIALS:
        if marker in report:
            return report.rsplit(marker, 1)[1].strip()
    return report


def _approval(revision: Mapping[str, Any], approved: bool) -> tuple[str, str]:
    """Reason and message of ``Approved``: ``Approved`` (by whom, when stamped), else ``ApprovalReset`` when the
    status last said approved (or already said reset), else ``PendingApproval``."""
    spec = _spec(revision)
    if approved:
        who, when = spec.get("approvedBy"), spec.get("approvedAt")
        return APPROVED, "approved" + (f" by {who}" if who else "") + (f" at {when}" if when else "")
    status = revision.get("status") if isinstance(revision.get("status"), Mapping) else {}
    before = find_condition((status or {}).get("conditions"), "Approved") or {}
    if before.get("status") == "True" or before.get("reason") == APPROVAL_RESET:
        return APPROVAL_RESET, f"the approval was reset: approve version {spec.get('version')} again"
    return PENDING_APPROVAL, f"waiting for approval of version {spec.get('version')}"


def revision_status(revision: KubeObject, assessment: Assessment, *, now: datetime.datetime) -> dict[str, Any]:
    """The ``status`` the revision should have: its conditions with the controller's six set per the contract
    (others kept in place), ``observedGeneration`` = ``metadata.generation``, ``state`` (``PendingApproval``,
    ``Progressing``, ``Succeeded`` or ``Failed``, for ``kubectl get``) and ``fromVersion``: the installed version
    the upgrade starts from (kept as it was once the upgrade succeeded or the ClusterExtension is gone).
    Compare with the current status to know whether a write is due."""
    generation = int((revision.get("metadata") or {}).get("generation") or 0)
    status = revision.get("status") if isinstance(revision.get("status"), Mapping) else {}
    conditions: list[dict[str, Any]] = [dict(c) for c in (status or {}).get("conditions") or ()]
    reason, message = assessment.approval
    approved = {
        "status": "True" if assessment.approved else "False",
        "reason": reason,
        "message": message[:MAX_MESSAGE],
    }
    wanted = (approved, *(_entry(row, assessment.message) for row in _CONTRACT[assessment.state]))
    for kind, entry in zip(OWNED, wanted, strict=True):
        if entry is None:
            conditions = remove_condition(conditions, kind)
        else:
            conditions = set_condition(conditions, {"type": kind, **entry, "observedGeneration": generation}, now=now)
    started = (status or {}).get("fromVersion")
    start = started if assessment.state == SUCCEEDED and started else assessment.installed or started
    written = {**(status or {}), "observedGeneration": generation, "state": _STATE_NAMES[assessment.state]}
    written.update({"fromVersion": start} if start else {})
    return {**written, "conditions": conditions}


def _entry(row: tuple[str, str] | None, message: str) -> dict[str, str] | None:
    """A condition of the contract; the message cut to metav1.Condition's 32768 characters (operator-controller's
    own message may already be that long)."""
    return None if row is None else {"status": row[0], "reason": row[1], "message": message[:MAX_MESSAGE]}


def state_of(conditions: Sequence[Mapping[str, Any]] | None) -> str | None:
    """The state a written status reports (``None`` before the controller wrote one), read back from its
    conditions by the contract."""
    found = {
        kind: (find_condition(conditions, kind) or {}).get("status") for kind in ("Succeeded", "Stalled", "Progressing")
    }
    if found["Succeeded"] == "True":
        return SUCCEEDED
    if found["Stalled"] == "True":
        return FAILED
    if found["Progressing"] is None:
        return None
    if found["Progressing"] != "True":
        return PENDING
    held = (find_condition(conditions, "Progressing") or {}).get("reason") == HELD_REASON
    return HELD if held else PROGRESSING
