"""Estimates of expressions given as text, with every library namespace known (``policy lint`` re-estimates a
loaded policy's expressions with the shapes it chooses: its composited variables', the request's)."""

from __future__ import annotations

import functools
from collections.abc import Mapping

from webhook.cel.estimate.shapes import Shape
from webhook.cel.estimate.walk import estimate_shape
from webhook.cel.frontend.parser import parse
from webhook.cel.frontend.tree import Node, collapse
from webhook.cel.libraries import LIBRARY

#: The names that qualify library functions (``sets``, ``strings``, ``cluster``, ``olm``, ...), as the checker
#: declares them.
NAMESPACES = frozenset(
    overload.params[0].removeprefix("namespace:")
    for overload in LIBRARY
    if overload.member and overload.params and overload.params[0].startswith("namespace:")
)


def estimate_text(
    source: str, variables: Mapping[str, Shape], results: Mapping[str, Shape] | None = None
) -> tuple[int, Shape]:
    """``walk.estimate_shape`` of the CEL expression ``source`` (which the loader accepted): its worst-case cost
    with ``variables``' shapes and ``results`` for the functions named, and the shape of its value. Raises
    ``CelCompileError`` for a text that does not parse."""
    return estimate_shape(_tree(source), variables, NAMESPACES, results)


@functools.lru_cache(maxsize=1024)
def _tree(source: str) -> Node:
    """The collapsed parse tree of ``source`` (the estimator only reads it), kept for the next estimate."""
    return collapse(parse(source))
