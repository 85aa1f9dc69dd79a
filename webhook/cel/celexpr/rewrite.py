"""Text rewrites of an expression for cel-cpp, around spans of its parse tree (positions in the source).

A ``Wrap`` puts text around one span, ``opening`` in place of ``source[start:inner_start]`` and ``closing`` in
place of ``source[inner_end:end]`` (empty ranges insert): ``dyn(<operand>)`` keeps the operand,
``cel.bind(n, <argument>, ...)`` replaces the call around an argument. ``wrapped`` applies any number of them at
once; spans nest or are disjoint, as the parse tree's are. ``dyn_wraps`` and ``exists_one_renames`` are the
wraps that make cel-cpp take what cel-go takes (``optionals.optional_wraps`` those of optionals).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, NamedTuple

from lark import Token

from webhook.cel.frontend.tree import Node, call_arguments

_ORDERING = frozenset({"relation_lt", "relation_le", "relation_gt", "relation_ge"})


class Wrap(NamedTuple):
    """Text around ``source[inner_start:inner_end]``, replacing what lies between it and ``start``/``end``."""

    start: int
    inner_start: int
    inner_end: int
    end: int
    opening: str
    closing: str

    @classmethod
    def around(cls, start: int, end: int, opening: str, closing: str) -> Wrap:
        """``opening`` inserted before ``source[start:end]`` and ``closing`` after it."""
        return cls(start, start, end, end, opening, closing)


def wrapped(source: str, wraps: Iterable[Wrap]) -> str:
    """``source`` with every wrap applied; where spans start or end at the same place, the larger one is
    outside."""
    ordered = sorted(wraps, key=lambda wrap: (wrap.start, -wrap.end))
    edits: list[tuple[int, int, int, int, str]] = []  # (from, closing first, nesting order, to, text)
    for order, wrap in enumerate(ordered):
        edits.append((wrap.start, 1, order, wrap.inner_start, wrap.opening))
        edits.append((wrap.inner_end, 0, -order, wrap.end, wrap.closing))
    parts, position = [], 0
    for start, _, _, end, text in sorted(edits):
        parts += [source[position:start], text]
        position = end
    return "".join(parts) + source[position:]


def dyn_wraps(tree: Node) -> list[Wrap]:
    """``dyn()`` around the right operand of every ``<``, ``<=``, ``>``, ``>=`` and the argument of every one-argument
    ``string()`` (``wrapped``): what cel-go type-checks (cross-type numeric ordering, ``string(cidr)``) and
    cel-cpp's checker refuses (``messages.CHECKER_ONLY``); cel-cpp's runtime then evaluates them as cel-go does."""
    spans: list[Any] = []
    for node in tree.iter_subtrees():
        if node.data == "relation" and len(node.children) == 2 and node.children[0].data in _ORDERING:
            spans.append(node.children[1].meta)
        elif node.data == "ident_arg" and str(node.children[0]) == "string" and len(node.children) == 2:
            arguments = node.children[1]
            if len(arguments.children) == 1:
                spans.append(arguments.meta)
    # (a literal keyword has no position: nothing to wrap there)
    return [Wrap.around(span.start_pos, span.end_pos, "dyn(", ")") for span in spans if span.start_pos is not None]


def exists_one_renames(tree: Node) -> list[Wrap]:
    """``exists_one`` with two variables renamed ``existsOne``: cel-go takes both names for it, cel-cpp the latter
    only."""
    tokens = [
        node.children[1]
        for node in tree.iter_subtrees()
        if node.data == "member_dot_arg" and str(node.children[1]) == "exists_one" and len(call_arguments(node, 2)) == 3
    ]
    return [
        Wrap(token.start_pos, token.end_pos, token.end_pos, token.end_pos, "existsOne", "")
        for token in tokens
        if isinstance(token, Token) and token.start_pos is not None and token.end_pos is not None
    ]
