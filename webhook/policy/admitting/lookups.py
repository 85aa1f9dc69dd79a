"""The kinds of cluster object a policy set reads, so that a cluster cache holds exactly those.

A policy set reads from the cluster (through the ``ObjectStore`` the engine is given):

- its **param kinds** (``paramKind`` of each policy that a binding gives a ``paramRef``), a namespaced kind in
  the namespace the ``paramRef`` names (without one: the deployment's own namespace);
- the kinds its **``cluster.get/list``** calls name (``webhook.cel.reads``), in every namespace;
- **Namespaces**, always: the engine is given each namespaced request's Namespace and refuses a request whose
  Namespace it does not know, as the apiserver does (``namespaces "<name>" not found``); ``namespaceSelector``
  matching and ``namespaceObject`` read it too.

A lookup whose apiVersion or kind is computed cannot be read off the text: such a policy is named in
``ClusterReads.computed`` and reads only the kinds the set needs for other reasons. Write the apiVersion and
kind of a ``cluster.get/list`` call as string literals (every bundled policy does).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from webhook.cel import lookups
from webhook.policy.admitting.dispatch import CLUSTER_SCOPED_KINDS
from webhook.policy.model import Binding, Policy, PolicySet, expressions

#: (apiVersion, kind).
Kind = tuple[str, str]
#: (apiVersion, kind, namespace) of a namespaced param kind; namespace "": the deployment's own.
ParamRead = tuple[str, str, str]
NAMESPACE: Kind = ("v1", "Namespace")
_LOOKUP_FUNCTIONS = frozenset({"cluster.get", "cluster.list"})


@dataclass(frozen=True, slots=True)
class ClusterReads:
    """What a policy set reads from the cluster, each tuple sorted.

    ``everywhere``: kinds read in every namespace (cluster lookups, Namespaces, cluster-scoped param kinds,
    ``dispatch.CLUSTER_SCOPED_KINDS``); ``params``: the other param kinds, each as ``(apiVersion, kind,
    namespace)`` with the namespace its bindings' ``paramRef`` names (``""``: none named, the deployment's own
    namespace); ``computed``: the names of the policies with a ``cluster.get`` or ``cluster.list`` call whose
    apiVersion or kind is not a string literal.
    """

    everywhere: tuple[Kind, ...]
    params: tuple[ParamRead, ...]
    computed: tuple[str, ...]


def cluster_reads(policies: PolicySet) -> ClusterReads:
    """The kinds ``policies`` read from the cluster (see the module docstring)."""
    everywhere: set[Kind] = {NAMESPACE}
    params: set[ParamRead] = set()
    computed: set[str] = set()
    kinds: list[tuple[Sequence[Policy], Sequence[Binding]]] = [
        (policies.validating_policies, policies.validating_bindings),
        (policies.mutating_policies, policies.mutating_bindings),
    ]
    for policies_of_kind, bindings in kinds:
        bound: dict[str, set[str]] = {}
        for binding in bindings:
            if binding.param_ref is not None:
                bound.setdefault(binding.policy_name, set()).add(binding.param_ref.namespace or "")
        for policy in policies_of_kind:
            if policy.param_kind is not None and policy.name in bound:
                kind = (policy.param_kind.api_version, policy.param_kind.kind)
                if _cluster_scoped(kind):
                    everywhere.add(kind)
                else:
                    params.update((*kind, namespace) for namespace in bound[policy.name])
            for expression in expressions(policy):
                if not _LOOKUP_FUNCTIONS & expression.program.extensions:
                    continue  # calls neither: not parsed again
                found = lookups(expression.text)
                everywhere.update(found.kinds)
                if found.computed:
                    computed.add(policy.name)
    namespaced = {read for read in params if read[:2] not in everywhere}
    return ClusterReads(tuple(sorted(everywhere)), tuple(sorted(namespaced)), tuple(sorted(computed)))


def _cluster_scoped(kind: Kind) -> bool:
    api_version, name = kind
    group = api_version.rpartition("/")[0]
    return (group, name) in CLUSTER_SCOPED_KINDS
