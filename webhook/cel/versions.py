"""The CEL environment of each Kubernetes version: which libraries an expression of a new policy may use there.

The kube-apiserver builds its CEL environments from one table (``baseOpts`` in kubernetes/kubernetes
``staging/src/k8s.io/apiserver/pkg/cel/environment/base.go``, as of v1.36.2): each library or option has the
version it was introduced in (``IntroducedVersion``). A stored expression may use it from that version; a *new* one
(a policy being created or updated, which is what loading a policy is) only from the compatibility version on, one
minor release later (``DefaultCompatibilityVersion``: the apiserver's ``MinCompatibilityVersion``, n-1). What 1.32
to 1.36 add (the rest of the table predates 1.31, the oldest compatibility version here):

=================================  ==========  ================================================================
``baseOpts`` entry                 introduced  functions and macros (new expressions from one release later)
=================================  ==========  ================================================================
``ext.TwoVarComprehensions()``     1.32        ``all``/``exists``/``existsOne``/``exists_one`` with two variables,
                                               ``transformList``, ``transformMap``, ``transformMapEntry``
``library.SemverLib(Version(1))``  1.33        ``semver``, ``isSemver`` (and the methods of their values)
``ext.Lists(ext.ListsVersion(3))`` 1.34        ``slice``, ``flatten``, ``distinct``, ``sort``, ``sortBy``,
                                               ``reverse``, ``lists.range``
=================================  ==========  ================================================================

``refusal(source, version)`` is the error the apiserver of ``version`` gives a new expression that uses a later one
(cel-go's checker: ``undeclared reference to '<name>' (in container '')``), ``since(source)`` the first version
that accepts it. Versions are ``<major>.<minor>`` text, one of ``webhook.settings.KUBERNETES_VERSIONS``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from webhook.cel.frontend.parser import parse
from webhook.cel.frontend.tree import Node, call_arguments, identifier
from webhook.errors import CelCompileError
from webhook.settings import KUBERNETES_VERSIONS


@dataclass(frozen=True)
class Library:
    """One entry of ``baseOpts``: its name there, the version it was introduced in, its global (or namespaced,
    ``lists.range``) functions, its member functions and its receiver macros (name -> argument counts)."""

    name: str
    introduced: str
    functions: frozenset[str] = frozenset()
    members: frozenset[str] = frozenset()
    macros: Mapping[str, frozenset[int]] | None = None

    @property
    def since(self) -> str:
        """The first version whose new expressions may use it: one minor release after ``introduced``."""
        major, minor = self.introduced.split(".")
        return f"{major}.{int(minor) + 1}"

    def uses(self, node: Node) -> tuple[str, int, int] | None:
        """What cel-go's checker would call undeclared where ``node`` (a call) uses this library, and where: the
        name and the position of the call's ``(``, or for a namespaced function (``lists.range``) the namespace
        identifier and its own position; None for a call of something else."""
        if node.data == "ident_arg":
            token = node.children[0]
            return _at(str(token), token, end=True) if str(token) in self.functions else None
        if node.data != "member_dot_arg":
            return None
        token = node.children[1]
        name = str(token)
        namespace = identifier(node.children[0])
        if namespace is not None and f"{namespace}.{name}" in self.functions:
            return _at(namespace, node.children[0], end=False)
        arguments = len(call_arguments(node, 2))
        if name in self.members or (self.macros is not None and arguments in self.macros.get(name, ())):
            return _at(name, token, end=True)
        return None


def _at(name: str, place: object, *, end: bool) -> tuple[str, int, int]:
    """``name`` with the line and column of ``place`` (a token or a tree): where it ends (a call's ``(``) or starts."""
    meta = getattr(place, "meta", place)
    column = getattr(meta, "end_column" if end else "column", 1)
    return name, getattr(meta, "line", 1), column


#: The ``baseOpts`` entries introduced from 1.32 on (``pkg/cel/environment/base.go`` of k8s.io/apiserver v0.36).
LIBRARIES = (
    Library(
        "ext.TwoVarComprehensions",
        "1.32",
        macros={
            "all": frozenset({3}),
            "exists": frozenset({3}),
            "existsOne": frozenset({3}),
            "exists_one": frozenset({3}),
            "transformList": frozenset({3, 4}),
            "transformMap": frozenset({3, 4}),
            "transformMapEntry": frozenset({3, 4}),
        },
    ),
    Library("library.SemverLib", "1.33", functions=frozenset({"semver", "isSemver"})),
    Library(
        "ext.Lists",
        "1.34",
        functions=frozenset({"lists.range"}),
        members=frozenset({"slice", "flatten", "distinct", "sort", "reverse"}),
        macros={"sortBy": frozenset({2})},
    ),
)
OLDEST = KUBERNETES_VERSIONS[0]


def version_key(version: str) -> tuple[int, int]:
    """``(major, minor)`` of ``1.34``, for ordering."""
    major, minor = version.split(".")
    return int(major), int(minor)


def _uses(tree: Node) -> list[tuple[Library, tuple[str, int, int]]]:
    """The calls of ``tree`` to a library of ``LIBRARIES`` (``Library.uses``), in source order."""
    found = [
        (library, use)
        for node in tree.iter_subtrees()
        for library in LIBRARIES
        if (use := library.uses(node)) is not None
    ]
    return sorted(found, key=lambda item: item[1][1:])


def refusal(source: str, version: str) -> CelCompileError | None:
    """The compile error the apiserver of ``version`` gives ``source`` in a new policy where it calls a function a
    library brings later (``<line>:<column>: undeclared reference to '<name>' (in container '')``, the position of
    the call; for a namespaced function, ``'lists'`` at the namespace), else None (also for a syntax error, which
    the front end reports)."""
    if version_key(version) >= version_key(LIBRARIES[-1].since):
        return None
    try:
        tree = parse(source)
    except CelCompileError:
        return None
    for library, (name, line, column) in _uses(tree):
        if version_key(library.since) > version_key(version):
            return CelCompileError(
                f"{line}:{column}: undeclared reference to '{name}' (in container ''): {library.name} is usable "
                f"in new expressions from Kubernetes {library.since}, not {version}"
            )
    return None


def since(source: str) -> str:
    """The first Kubernetes version (of ``KUBERNETES_VERSIONS``) whose apiserver accepts ``source`` in a new policy
    as far as its libraries go; ``OLDEST`` for text that does not parse."""
    try:
        tree = parse(source)
    except CelCompileError:
        return OLDEST
    return max((library.since for library, _ in _uses(tree)), key=version_key, default=OLDEST)
