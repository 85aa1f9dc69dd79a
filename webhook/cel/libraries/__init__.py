"""The CEL function libraries: Kubernetes' and cel-go's extension libraries and upgrade-gate's extensions.

Each module declares ``OVERLOADS`` (``registry.Overload``) over pure Python functions of CEL values, and a
``NAMESPACE`` object where its names are dotted (``sets.contains``). ``LIBRARY`` is their union in dispatch
order; ``NAMESPACES`` the namespace objects bound in every evaluation; ``EXTENSION_FUNCTIONS`` the names
that the kube-apiserver does not have (a policy using one is not portable to in-tree admission policies).
"""

from __future__ import annotations

from webhook.cel.libraries import (
    addons,
    extensions,
    format,
    jsonpatch,
    lists,
    net,
    quantity,
    regex,
    semver,
    sets,
    strings,
    urls,
)
from webhook.cel.libraries.registry import Namespace, Overload

LIBRARY: tuple[Overload, ...] = (
    *strings.OVERLOADS,
    *lists.OVERLOADS,
    *sets.OVERLOADS,
    *regex.OVERLOADS,
    *semver.OVERLOADS,
    *quantity.OVERLOADS,
    *net.OVERLOADS,
    *urls.OVERLOADS,
    *format.OVERLOADS,
    *jsonpatch.OVERLOADS,
    *extensions.OVERLOADS,
    *addons.OVERLOADS,
)

NAMESPACES: tuple[Namespace, ...] = (
    strings.NAMESPACE,
    lists.NAMESPACE,
    sets.NAMESPACE,
    net.NAMESPACE,
    format.NAMESPACE,
    jsonpatch.NAMESPACE,
    *extensions.UNBOUND,
    addons.NAMESPACE,
)

EXTENSION_FUNCTIONS: frozenset[str] = frozenset(
    overload.name
    if not overload.params[0].startswith("namespace:")
    else f"{overload.params[0].removeprefix('namespace:')}.{overload.name}"
    for overload in LIBRARY
    if not overload.portable
)
