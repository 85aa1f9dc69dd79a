"""Which (policy, binding, param) tuples a request invokes, and which configuration errors it meets.

Follows ``k8s.io/apiserver/pkg/admission/plugin/policy/generic/policy_dispatcher.go`` (``Dispatch``,
``CollectParams``): a policy whose ``matchConstraints`` match, each of its bindings whose ``matchResources``
match, and for each binding its params: none for a policy without ``paramKind`` or a binding without
``paramRef`` (``params`` is then null), the named object, or every object the selector selects (one
invocation each, ANDed by the caller). Problems are ``ConfigError``s (``failed to configure policy|binding:
...``), which the caller routes through the policy's failurePolicy.

Param scope without discovery (the apiserver asks its REST mapper): a kind is cluster-scoped when it is one of
``CLUSTER_SCOPED_KINDS`` (Kubernetes, OLM and Open Cluster Management kinds, extendable), namespaced when it is one
of ``NAMESPACED_KINDS`` (ConfigMap, Secret, ...) and, for any other kind
(a custom param kind), cluster-scoped when the store holds objects of it and none has a namespace: the param objects
themselves say their scope. A kind the store holds no object of counts as namespaced (its params are then not
found either way).
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from webhook.errors import MatchError, ParamError
from webhook.objects import ObjectStore
from webhook.policy.admitting.activation import RequestInputs
from webhook.policy.admitting.matching import Attributes, matches, may_match, resource_key
from webhook.policy.model import DENY, Binding, ParamKind, ParamRef, Policy

#: (API group, kind) of well-known cluster-scoped kinds that may serve as params.
CLUSTER_SCOPED_KINDS: frozenset[tuple[str, str]] = frozenset(
    {
        ("", "Namespace"),
        ("", "Node"),
        ("", "PersistentVolume"),
        ("rbac.authorization.k8s.io", "ClusterRole"),
        ("rbac.authorization.k8s.io", "ClusterRoleBinding"),
        ("storage.k8s.io", "StorageClass"),
        ("scheduling.k8s.io", "PriorityClass"),
        ("apiextensions.k8s.io", "CustomResourceDefinition"),
        ("olm.operatorframework.io", "ClusterExtension"),
        ("olm.operatorframework.io", "ClusterCatalog"),
        ("olm.operatorframework.io", "ClusterExtensionRevision"),
        ("cluster.open-cluster-management.io", "ManagedCluster"),
        ("addon.open-cluster-management.io", "ClusterManagementAddOn"),
    }
)
#: (API group, kind) of well-known namespaced kinds that may serve as params: their scope needs no look at the store.
NAMESPACED_KINDS: frozenset[tuple[str, str]] = frozenset(
    {
        ("", "ConfigMap"),
        ("", "Secret"),
        ("", "ServiceAccount"),
        ("addon.open-cluster-management.io", "AddOnDeploymentConfig"),
        ("addon.open-cluster-management.io", "ManagedClusterAddOn"),
        ("cluster.open-cluster-management.io", "Placement"),
        ("cluster.open-cluster-management.io", "PlacementDecision"),
    }
)


PolicyBindings = tuple[Policy, tuple[Binding, ...]]
#: Distinct request kinds remembered per ``Dispatcher`` (operation, resource, subresource, scope); then it starts over.
_MAX_KINDS = 1024


class Dispatcher:
    """The policies of one kind (validating or mutating), each with its bindings, in order; ``candidates`` are
    those whose resource rules can match a request, worked out once per kind of request (``resource_key``: its
    operation, resource, subresource and scope), so each request matches only those policies in full."""

    def __init__(self, policies: tuple[Policy, ...], bindings: tuple[Binding, ...]) -> None:
        self.policies: tuple[PolicyBindings, ...] = tuple(
            (policy, tuple(b for b in bindings if b.policy_name == policy.name)) for policy in policies
        )
        self._candidates: dict[tuple[object, ...], tuple[PolicyBindings, ...]] = {}

    def candidates(self, attributes: Attributes) -> tuple[PolicyBindings, ...]:
        """The policies (with bindings) that may match a request with ``attributes``, in order."""
        key = resource_key(attributes)
        found = self._candidates.get(key)
        if found is None:
            if len(self._candidates) >= _MAX_KINDS:
                self._candidates.clear()
            found = tuple(item for item in self.policies if may_match(item[0].match_constraints, attributes))
            self._candidates[key] = found
        return found


@dataclass(frozen=True, slots=True)
class Invocation:
    """One evaluation to run: ``param`` is the param object, or ``None`` (``params`` is null)."""

    policy: Policy
    binding: Binding
    param: Mapping[str, Any] | None


@dataclass(frozen=True, slots=True)
class ConfigError:
    """A misconfiguration met while dispatching; ``binding`` is ``None`` for a policy-level one."""

    policy: Policy
    binding: Binding | None
    message: str


def invocations(
    policies: Collection[tuple[Policy, tuple[Binding, ...]]],
    inputs: RequestInputs,
    store: ObjectStore,
    cluster_scoped: Collection[tuple[str, str]] = CLUSTER_SCOPED_KINDS,
) -> Iterator[Invocation | ConfigError]:
    """The invocations and configuration errors of a request, in policy then binding then param order."""
    attributes = inputs.attributes
    for policy, bindings in policies:
        try:
            if not matches(policy.match_constraints, attributes, inputs.namespace):
                continue
        except MatchError as err:
            yield ConfigError(policy, None, f"failed to configure policy: {err}")
            continue
        for binding in bindings:
            try:
                if binding.match_resources is not None and not matches(
                    binding.match_resources, attributes, inputs.namespace
                ):
                    continue
                params = collect_params(
                    policy.param_kind, binding.param_ref, attributes.namespace, store, cluster_scoped
                )
            except (MatchError, ParamError) as err:
                yield ConfigError(policy, binding, f"failed to configure binding: {err}")
                continue
            for param in params:
                yield Invocation(policy, binding, param)


def collect_params(
    param_kind: ParamKind | None,
    param_ref: ParamRef | None,
    namespace: str,
    store: ObjectStore,
    cluster_scoped: Collection[tuple[str, str]],
) -> list[Mapping[str, Any] | None]:
    """``CollectParams``: ``[None]`` without paramKind or paramRef, else the referenced objects (possibly
    none: parameterNotFoundAction Allow). ``namespace`` is the request's. Raises ``ParamError``."""
    if param_kind is None or param_ref is None:
        return [None]
    lookup_namespace: str | None = None
    if not is_cluster_scoped(param_kind, store, cluster_scoped):
        lookup_namespace = param_ref.namespace or namespace
        if not lookup_namespace:
            raise ParamError("cannot use namespaced paramRef in policy binding that matches cluster-scoped resources")
    elif param_ref.namespace:
        raise ParamError("paramRef.namespace must not be provided for a cluster-scoped `paramKind`")
    found: list[Mapping[str, Any] | None]
    if param_ref.name is not None:
        param = store.get(param_kind.api_version, param_kind.kind, param_ref.name, lookup_namespace)
        found = [param] if param is not None else []
    else:
        found = list(store.list(param_kind.api_version, param_kind.kind, lookup_namespace, param_ref.selector))
    if not found and param_ref.parameter_not_found_action == DENY:
        raise ParamError("no params found for policy binding with `Deny` parameterNotFoundAction")
    return found


def is_cluster_scoped(param_kind: ParamKind, store: ObjectStore, cluster_scoped: Collection[tuple[str, str]]) -> bool:
    """Whether ``param_kind`` is cluster-scoped: listed in ``cluster_scoped`` (group, kind), or not one of the
    ``NAMESPACED_KINDS`` and held by ``store`` only as objects without a namespace."""
    kind = (param_kind.api_version.rpartition("/")[0], param_kind.kind)
    if kind in cluster_scoped:
        return True
    if kind in NAMESPACED_KINDS:
        return False
    objects = store.list(param_kind.api_version, param_kind.kind)
    return bool(objects) and not any((obj.get("metadata") or {}).get("namespace") for obj in objects)
