"""The admission requests applying a manifest makes, and their evaluation as the webhook would.

``admission_request`` builds the ``admission.k8s.io/v1`` AdmissionRequest the kube-apiserver sends for a
CREATE, UPDATE or DELETE of a manifest (kind and resource from its apiVersion and kind, the resource being the
kind's lower-case plural; ``oldObject`` on UPDATE and DELETE; the operation's options; ``dryRun`` true, since
nothing is written). ``Evaluator`` runs requests through the policy engine as the webhook does (mutation, then
validation of the patched object; ``PolicyEngine.admit``) against a store of cluster objects and the
policies' params, with ``clock.now()`` at a fixed time.
"""

from __future__ import annotations

import copy
import datetime
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import jsonpatch

from webhook.objects import InMemoryObjectStore, plural_of
from webhook.policy import Admission, PolicyEngine, PolicySet

_OPTIONS = {"CREATE": "CreateOptions", "UPDATE": "UpdateOptions", "DELETE": "DeleteOptions"}


DEFAULT_APPLIER = "system:serviceaccount:argocd:argocd-application-controller"
"""Argo CD's application controller, the user its applies reach the API server as."""
DEFAULT_APPLIER_GROUPS = ("system:serviceaccounts", "system:serviceaccounts:argocd", "system:authenticated")
"""The groups the API server gives that service account (``system:serviceaccounts[:<namespace>]``)."""


@dataclass(frozen=True, slots=True)
class UserInfo:
    """A Kubernetes user as an AdmissionRequest's ``userInfo`` carries it: ``username`` and ``groups``."""

    username: str
    groups: tuple[str, ...] = ()

    def user_info(self) -> dict[str, object]:
        """The ``userInfo`` of a request sent by this user."""
        return {"username": self.username, "groups": list(self.groups)}


def storable(item: Mapping[str, Any]) -> bool:
    """Objects a store can key: an apiVersion, a kind and a name (a manifest in Git may lack one)."""
    metadata = item.get("metadata")
    name = metadata.get("name") if isinstance(metadata, Mapping) else None
    return all(isinstance(v, str) and v for v in (item.get("apiVersion"), item.get("kind"), name))


def admission_request(
    operation: str,
    *,
    new: Mapping[str, Any] | None,
    old: Mapping[str, Any] | None,
    user: UserInfo,
    uid: str,
) -> dict[str, Any]:
    """The AdmissionRequest of ``operation`` (CREATE: ``new``; UPDATE: ``old`` to ``new``; DELETE: ``old``)
    sent by ``user``. ``new`` or ``old`` must be ``storable``."""
    subject = new if new is not None else old
    if subject is None:
        raise ValueError("an admission request needs an object or an oldObject")
    group, _, version = str(subject["apiVersion"]).rpartition("/")
    kind = str(subject["kind"])
    metadata = subject.get("metadata") or {}
    gvk = {"group": group, "version": version, "kind": kind}
    gvr = {"group": group, "version": version, "resource": plural_of(kind)}
    request: dict[str, Any] = {
        "uid": uid,
        "kind": gvk,
        "resource": gvr,
        "requestKind": gvk,
        "requestResource": gvr,
        "name": metadata.get("name", ""),
        "operation": operation,
        "userInfo": user.user_info(),
        "object": new,
        "oldObject": old,
        "dryRun": True,
        "options": {"apiVersion": "meta.k8s.io/v1", "kind": _OPTIONS[operation]},
    }
    if metadata.get("namespace"):
        request["namespace"] = metadata["namespace"]
    return request


class Evaluator:
    """One policy set, the cluster objects ``cluster.get()``/``list()`` see (with the policies' params) and
    the request time."""

    def __init__(self, policies: PolicySet, objects: Iterable[Mapping[str, Any]], now: datetime.datetime) -> None:
        self.policies = policies
        self.now = now
        store = InMemoryObjectStore([*policies.params, *(o for o in objects if storable(o))])
        self.engine = PolicyEngine(policies, store)

    def admit(self, request: Mapping[str, Any]) -> Admission:
        """Mutation, then validation of the patched object; a namespaced request's Namespace is taken to
        exist (``metadata.name`` only)."""
        return self.engine.admit(request, _namespace(request), now=self.now)

    def mutated(self, request: Mapping[str, Any]) -> Mapping[str, Any] | None:
        """The object the mutating policies make of the request's, or ``None`` when one denies it."""
        decision = self.engine.mutate(request, _namespace(request), now=self.now)
        if not decision.allowed:
            return None
        subject: Mapping[str, Any] = request["object"]
        if not decision.patch:
            return subject
        patched: Mapping[str, Any] = jsonpatch.apply_patch(copy.deepcopy(subject), list(decision.patch))
        return patched


def _namespace(request: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The Namespace object of a namespaced request, taken to exist (``metadata.name`` only)."""
    namespace = request.get("namespace")
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}} if namespace else None
