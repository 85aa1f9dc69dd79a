"""The CEL function libraries: Kubernetes' and cel-go's extension libraries and upgrade-gate's extensions.

Each module declares ``OVERLOADS`` (``registry.Overload``) over pure Python functions of CEL values, and
namespace objects where its names are dotted (``sets.contains``). ``LIBRARY`` is their union in dispatch
order; ``NAMESPACES`` the namespace objects bound in every evaluation; ``EXTENSION_FUNCTIONS`` the names
that the kube-apiserver does not have (a policy using one is not portable to in-tree admission policies).
"""

from __future__ import annotations

from webhook.policy.cel.libraries.registry import Namespace, Overload

LIBRARY: tuple[Overload, ...] = ()

NAMESPACES: tuple[Namespace, ...] = ()

EXTENSION_FUNCTIONS: frozenset[str] = frozenset()
