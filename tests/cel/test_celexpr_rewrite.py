"""Text rewrites for cel-cpp around spans of the parse tree (celexpr/rewrite.py)."""

from __future__ import annotations

from webhook.cel.celexpr.rewrite import Wrap, wrapped


def test_nested_wraps_apply_outermost_first_whatever_their_order() -> None:
    source = "f(x) < g(y)"
    wraps = [
        Wrap(7, 9, 10, 11, "C[", "]"),  # replaces "g(" and ")" around y
        Wrap.around(0, 4, "B[", "]"),  # starts where the outer one starts
        Wrap.around(0, 11, "A[", "]"),
    ]
    assert wrapped(source, wraps) == "A[B[f(x)] < C[y]]"


def test_no_wraps_leave_the_source_as_it_is() -> None:
    assert wrapped("a.b", []) == "a.b"
