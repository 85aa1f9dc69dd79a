"""Text rewrites of an expression for cel-cpp, around spans of its parse tree (positions in the source).

A ``Wrap`` puts text around one span, ``opening`` in place of ``source[start:inner_start]`` and ``closing`` in
place of ``source[inner_end:end]`` (empty ranges insert): ``dyn(<operand>)`` keeps the operand,
``cel.bind(n, <argument>, ...)`` replaces the call around an argument. ``wrapped`` applies any number of them at
once; spans nest or are disjoint, as the parse tree's are.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import NamedTuple


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
