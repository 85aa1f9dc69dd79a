"""CEL optionals in and out of cel-cpp, and cel-go's ``optional.ofNonZeroValue``, written as cel-cpp expressions.

cel-expr-python 0.1.3 carries no optional across Python: a function declared to return ``optional_type(T)`` is
``UNIMPLEMENTED``, and a result holding one cannot be read (``Value.plain_value``). So a library ``Optional``
crosses as a list of zero or one element (``values.to_expr``), and expressions turn it into a cel-cpp optional
where it arrives, so that it is cel-go's ``optional_type(T)`` (``== optional.none()``, ``or``, ``optMap``...):

- a call of a library function that returns an ``Optional`` (``format.named``, ``<Format>.validate``, declared to
  cel-cpp as returning ``list(T)``) is written ``from_list(<call>)`` (``optional_wraps``);
- a read of a composited variable whose value is an optional likewise (``composition.read_variables``);
- an expression whose result is an optional is evaluated as ``to_list(<expression>)``, and the list read back as
  an ``Optional`` (``executable.CelExprExecutable``).

cel-cpp's ``optional.ofNonZeroValue`` takes the Unix epoch for the zero timestamp; cel-go's zero timestamp is Go's
zero time (``0001-01-01T00:00:00Z``, ``traits.Zeroer``), so each call is written to decide timestamps itself.
Every name these forms bind starts with ``upgrade_gate_optional_`` and the source position (no expression can
declare it).
"""

from __future__ import annotations

from collections.abc import Collection
from typing import cast

import lark

from webhook.cel.celexpr.rewrite import Wrap
from webhook.cel.frontend.tree import Node, call_arguments, identifier

#: The prefix of the names the optional forms bind.
NAME = "upgrade_gate_optional_"
#: How the text of an optional type begins (``messages.type_text``: ``optional_type(list(string))``).
OPTIONAL_TYPE = "optional_type("
_ZERO_TIME = "timestamp('0001-01-01T00:00:00Z')"
_EPOCH = "timestamp('1970-01-01T00:00:00Z')"


def from_list(name: str, expression: str) -> str:
    """``expression`` (a list of zero or one element) as a cel-cpp optional, through the bound ``name``."""
    return f"cel.bind({name}, {expression}, {_optional_of(name)})"


def _optional_of(name: str) -> str:
    return f"{name}.size() == 0 ? optional.none() : optional.of({name}[0])"


def to_list(expression: str) -> str:
    """An optional-valued ``expression`` as a list of zero or one element (what Python can read)."""
    name = f"{NAME}result"
    return f"cel.bind({name}, {expression}, {name}.hasValue() ? [{name}.value()] : [])"


def optional_wraps(tree: Node, returning: Collection[str]) -> list[Wrap]:
    """The wraps (``rewrite.wrapped``) that make the calls in ``tree`` of the library functions ``returning``
    optionals (method names) cel-cpp optionals, and each ``optional.ofNonZeroValue(x)`` cel-go's."""
    wraps = []
    for node in tree.iter_subtrees():
        if node.data != "member_dot_arg":
            continue
        method, meta = str(node.children[1]), node.meta
        arguments = call_arguments(node, 2)
        if method in returning:
            name = f"{NAME}{meta.start_pos}"
            wraps.append(Wrap.around(meta.start_pos, meta.end_pos, f"cel.bind({name}, ", f", {_optional_of(name)})"))
        elif method == "ofNonZeroValue" and identifier(node.children[0]) == "optional" and len(arguments) == 1:
            # ``optional.ofNonZeroValue`` becomes ``cel.bind(<name>, `` and the parenthesised argument stays
            name, after_method = f"{NAME}{meta.start_pos}", cast(lark.Token, node.children[1]).end_pos or 0
            tail = (
                f"dyn({name}) == {_ZERO_TIME} ? optional.none() : dyn({name}) == {_EPOCH} ? optional.of({name})"
                f" : optional.ofNonZeroValue({name}))"
            )
            opening = f"cel.bind({name}, "
            wraps.append(Wrap(meta.start_pos, after_method, meta.end_pos, meta.end_pos, opening, f", {tail}"))
    return wraps
