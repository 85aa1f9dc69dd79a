"""Small helpers over cel-python's lark parse tree, shared by the checker and the evaluator."""

from __future__ import annotations

from typing import Any, TypeAlias

import lark
from celpy.evaluation import celstr

#: A node of cel-python's parse tree.
Node: TypeAlias = "lark.Tree[Any]"


def unwrap(tree: Node) -> Node:
    """The first node below ``tree`` that is not a single-child pass-through (``expr -> ... -> primary``)."""
    while len(tree.children) == 1 and isinstance(tree.children[0], lark.Tree):
        tree = tree.children[0]
    return tree


def identifier(tree: Node) -> str | None:
    """The name if ``tree`` is a bare identifier, else None."""
    node = unwrap(tree)
    return str(node.children[0]) if node.data == "ident" else None


def string_literal(tree: Node) -> str | None:
    """The value of ``tree`` if it is a string literal (escapes decoded), else None."""
    node = unwrap(tree)
    if node.data == "literal" and node.children[0].type in ("STRING_LIT", "MLSTRING_LIT"):  # type: ignore[union-attr]
        return str(celstr(node.children[0]))  # type: ignore[arg-type]
    return None


def call_arguments(call: Node, position: int) -> list[Node]:
    """The argument expressions of a call node whose ``exprlist`` (if any) is child ``position``."""
    if len(call.children) <= position:
        return []
    return [child for child in call.children[position].children if isinstance(child, lark.Tree)]


_PASS_THROUGH = frozenset(
    {"expr", "conditionalor", "conditionaland", "relation", "addition", "multiplication", "unary", "member"}
)


def collapse(tree: Node) -> Node:
    """``tree`` with single-child pass-through nodes (``expr -> conditionalor -> ... -> member``) removed.

    The evaluator then walks about a fifth of the nodes and recurses far less deeply; nodes with operators
    keep their shape, and ``primary`` nodes stay (the evaluator dispatches identifiers and literals there).
    Iterative, so a deep tree never raises ``RecursionError``.
    """
    stack = [tree]
    while stack:
        node = stack.pop()
        children = node.children
        for position, child in enumerate(children):
            if isinstance(child, lark.Tree):
                kept = _skip_pass_through(child)
                children[position] = kept
                stack.append(kept)
    return _skip_pass_through(tree)


def _skip_pass_through(node: Node) -> Node:
    while node.data in _PASS_THROUGH and len(node.children) == 1 and isinstance(node.children[0], lark.Tree):
        node = node.children[0]
    return node
