"""What an expression reads from the cluster, found in its parse tree without evaluating it.

``lookups(expression)`` gives the kinds its ``cluster.get``/``cluster.list`` calls look up. A call's kind is known
when its first two arguments (apiVersion, kind) are string literals, as in every bundled policy; a call that
computes either (``cluster.list(params.data.apiVersion, 'X')``) is counted in ``computed``, since no reading of
the text can say which kind it will ask for.
"""

from __future__ import annotations

from dataclasses import dataclass

from webhook.cel.frontend.parser import parse
from webhook.cel.frontend.tree import call_arguments, identifier, string_literal

#: The ``cluster`` namespace's lookup functions (``libraries.extensions``).
_LOOKUPS = frozenset({"get", "list"})


@dataclass(frozen=True, slots=True)
class Lookups:
    """``kinds``: the (apiVersion, kind) of each ``cluster.get/list`` call naming both literally, sorted, without
    repeats; ``computed``: how many such calls compute their apiVersion or kind."""

    kinds: tuple[tuple[str, str], ...]
    computed: int


def lookups(expression: str) -> Lookups:
    """What ``expression`` reads. Raises ``CelCompileError`` for a syntax error (an expression of a loaded
    policy has none)."""
    kinds: set[tuple[str, str]] = set()
    computed = 0
    for node in parse(expression).iter_subtrees():
        if (
            node.data == "member_dot_arg"
            and str(node.children[1]) in _LOOKUPS
            and identifier(node.children[0]) == "cluster"
        ):
            literals = [string_literal(argument) for argument in call_arguments(node, 2)[:2]]
            api_version, kind = [*literals, None, None][:2]
            if api_version is None or kind is None:
                computed += 1
            else:
                kinds.add((api_version, kind))
    return Lookups(tuple(sorted(kinds)), computed)
