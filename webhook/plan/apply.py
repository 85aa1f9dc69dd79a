"""``upgrade-gate apply``: plain manifests admitted against the policies, offline, as the kube-apiserver would.

Every Kubernetes object of the manifests (``webhook.plan.changes.read_manifests``: file order, then document
order) becomes the AdmissionRequest applying it sends (``webhook.plan.requests.admission_request``): a CREATE, or
an UPDATE when the cluster already holds an object of the same API group, kind, namespace and name, which is then
its ``oldObject``. The request runs through the mutating policies, then the validating policies on the patched
object (``Evaluator.admit``, ``PolicyEngine.admit``). ``cluster.get()``/``cluster.list()`` and the policies' params
read the cluster objects, the policies' param objects (their settings ConfigMap; a cluster object of the same
identity wins), and every object admitted before in this run, as stored after its mutation: ``kubectl apply -f
DIR`` writes them one after the other, so a later manifest sees an earlier one (an object given twice is
created, then updated). A denied object is not stored.

Each object is one ``ApplyRow``: ``admitted``, ``warned`` (admitted with warnings of ``Warn`` bindings), ``denied``
(by the first denying policy, with its message, as the API server answers) or ``invalid`` (a document that is not
YAML or not a Kubernetes object, with the parser's line; an UPDATE asked for an object the cluster does not hold).
Pure: objects in, rows out.
"""

from __future__ import annotations

import datetime
import functools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from webhook.plan.changes import Manifest, Manifests, describe
from webhook.plan.requests import Evaluator, UserInfo, admission_request, storable
from webhook.policy import Admission, PolicySet

ADMITTED, WARNED, DENIED, INVALID = "admitted", "warned", "denied", "invalid"
APPLY_OPERATIONS = ("CREATE", "UPDATE")

ObjectId = tuple[str, str, str, str]
"""API group, kind, namespace (empty when cluster-scoped), name: one object whatever its version."""


@dataclass(frozen=True, slots=True)
class ApplyRow:
    """One object of the manifests and its verdict.

    ``file`` and ``line``: where its document starts; ``object``: ``Kind namespace/name`` (``-`` for an invalid
    document); ``operation``: ``CREATE``, ``UPDATE`` or ``-``; ``verdict``: ``admitted``, ``warned``, ``denied``
    or ``invalid``; ``policy``: the policy that denied it, or the policies that warned (comma-separated), else
    ``""``; ``message``: the denial, the warnings (``; ``-separated) or why it is invalid; ``patch``: the RFC 6902
    operations of the mutating policies (on an admitted object).
    """

    file: str
    line: int
    object: str
    operation: str
    verdict: str
    policy: str = ""
    message: str = ""
    patch: tuple[Mapping[str, Any], ...] = ()

    @property
    def failing(self) -> bool:
        """Whether this row makes the run fail (exit 1): denied or invalid."""
        return self.verdict in (DENIED, INVALID)


@dataclass(frozen=True, slots=True)
class Apply:
    """What one run admits: the ``manifests`` (with their invalid documents), the ``cluster`` objects, the
    ``policies``, the requesting ``user``, the request time ``now`` and ``operation`` (``CREATE`` or ``UPDATE``
    for every object; ``None``: UPDATE when the cluster holds the object, else CREATE)."""

    manifests: Manifests
    cluster: Sequence[Mapping[str, Any]]
    policies: PolicySet
    user: UserInfo
    now: datetime.datetime
    operation: str | None = None


def apply(inputs: Apply) -> list[ApplyRow]:
    """A row per object and per invalid document, by file and line (see the module docstring)."""
    stored = _Store(inputs.policies, inputs.cluster, inputs.now)
    rows = [ApplyRow(p.file, p.line, "-", "-", INVALID, message=p.reason) for p in inputs.manifests.problems]
    for manifest in inputs.manifests.objects:
        rows.append(_admit(manifest, stored, inputs))
    return sorted(rows, key=lambda row: (row.file, row.line))


def _admit(manifest: Manifest, stored: _Store, inputs: Apply) -> ApplyRow:
    old = stored.get(manifest.object)
    operation = inputs.operation or ("UPDATE" if old is not None else "CREATE")
    what = describe(manifest.key)
    if operation == "UPDATE" and old is None:
        message = f"no {what} among the cluster objects to update (the API server answers NotFound)"
        return ApplyRow(manifest.file, manifest.line, what, operation, INVALID, message=message)
    request = admission_request(
        operation,
        new=manifest.object,
        old=old if operation == "UPDATE" else None,
        user=inputs.user,
        uid=f"apply-{manifest.where}",
    )
    admission = stored.admit(request)
    row = _row(manifest, what, operation, admission)
    if not row.failing:
        stored.put(admission.patched)
    return row


def _row(manifest: Manifest, what: str, operation: str, admission: Admission) -> ApplyRow:
    """The row of an admitted or denied request: the verdict, the policy and message, the patch."""
    row = functools.partial(ApplyRow, manifest.file, manifest.line, what, operation)
    decision = admission.validated
    if not decision.allowed:
        denial = decision.denials[0] if decision.denials else None
        return row(DENIED, denial.policy if denial else "", denial.message if denial else decision.message)
    patch = tuple(admission.mutated.patch)
    warnings = (*admission.mutated.policy_warnings, *decision.policy_warnings)
    if warnings:
        policies = ", ".join(dict.fromkeys(warning.policy for warning in warnings))
        return row(WARNED, policies, "; ".join(warning.text() for warning in warnings), patch)
    return row(ADMITTED, patch=patch)


def _identity(item: Mapping[str, Any]) -> ObjectId:
    metadata = item["metadata"]
    group = str(item["apiVersion"]).rpartition("/")[0]
    return (group, str(item["kind"]), str(metadata.get("namespace") or ""), str(metadata["name"]))


class _Store:
    """The objects the cluster holds as the run goes on, and an ``Evaluator`` over them, built anew after a
    write (``InMemoryObjectStore`` is fixed once an engine reads it)."""

    def __init__(self, policies: PolicySet, cluster: Iterable[Mapping[str, Any]], now: datetime.datetime) -> None:
        self.policies = policies
        self.now = now
        self.objects = {_identity(o): o for o in cluster if storable(o)}
        self.evaluator: Evaluator | None = None

    def get(self, item: Mapping[str, Any]) -> Mapping[str, Any] | None:
        return self.objects.get(_identity(item))

    def put(self, item: Mapping[str, Any]) -> None:
        self.objects[_identity(item)] = item
        self.evaluator = None

    def admit(self, request: Mapping[str, Any]) -> Admission:
        if self.evaluator is None:
            self.evaluator = Evaluator(self.policies, self.objects.values(), self.now)
        return self.evaluator.admit(request)
