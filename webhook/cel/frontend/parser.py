"""Parsing CEL source into cel-python's lark tree, with errors as ``CelCompileError`` (``line:column``).

Uses cel-python's own grammar (``celpy/cel.lark``) in a parser instance of ours, so the class-level parser
singleton of ``celpy.celparser.CELParser`` (and its tree-class trap) does not matter here, extended with the
syntax cel-go's parser has and cel-python's lacks (``_EXTENSIONS``): optional field selection ``a.?b``
(``member_dot_opt``), optional indexing ``a[?k]`` (``member_index_opt``), optional list elements ``[?x]`` and
map entries ``{?k: v}`` (``opt_elem``; the checker refuses it anywhere else), and trailing commas in list and
map literals (and, more lenient than cel-go, in argument lists).
"""

from __future__ import annotations

import functools
import re
from importlib import resources

import lark
from celpy.celparser import CELParser
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken

from webhook.cel.frontend.tree import Node
from webhook.errors import CelCompileError

#: (rule as cel-python writes it, as extended here).
_EXTENSIONS = (
    (
        "member         : member_dot | member_dot_arg | member_index | member_object | primary",
        "member         : member_dot | member_dot_arg | member_index | member_object | primary\n"
        "               | member_dot_opt | member_index_opt\n"
        'member_dot_opt : member "." "?" IDENT\n'
        'member_index_opt : member "[" "?" expr "]"',
    ),
    (
        'exprlist       : expr ("," expr)*',
        'exprlist       : elem ("," elem)* [","]\n?elem          : expr | opt_elem\nopt_elem       : "?" expr',
    ),
    (
        'mapinits       : expr ":" expr ("," expr ":" expr)*',
        'mapinits       : elem ":" expr ("," elem ":" expr)* [","]',
    ),
)


def grammar() -> str:
    """cel-python's grammar with ``_EXTENSIONS`` applied; ``LookupError`` if a rule changed upstream."""
    text = resources.files("celpy").joinpath("cel.lark").read_text(encoding="utf-8")
    for rule, extended in _EXTENSIONS:
        if rule not in text:
            raise LookupError(f"cel-python's grammar has no rule {rule!r}")
        text = text.replace(rule, extended)
    return text


@functools.cache
def _parser() -> lark.Lark:
    return lark.Lark(
        grammar(),
        parser="lalr",
        start="expr",
        g_regex_flags=re.M,
        lexer_callbacks={"IDENT": CELParser.ambiguous_literals},
        propagate_positions=True,
        maybe_placeholders=False,
        priority="invert",
    )


def parse(source: str) -> Node:
    """The lark parse tree of ``source``; raises ``CelCompileError`` ``<line>:<column>: syntax error: ..``."""
    try:
        return _parser().parse(source)
    except UnexpectedInput as error:
        raise CelCompileError(_describe(source, error)) from None


def _describe(source: str, error: UnexpectedInput) -> str:
    if isinstance(error, UnexpectedToken):
        token = error.token
        found = "end of input" if token.type == "$END" else repr(str(token))
        detail = f"unexpected {found}"
    elif isinstance(error, UnexpectedCharacters):
        detail = f"unexpected character {source[error.pos_in_stream or 0]!r}"
    elif isinstance(error, UnexpectedEOF):
        detail = "unexpected end of input"
    else:  # pragma: no cover - lark has no other UnexpectedInput subclass
        detail = "invalid input"
    line = getattr(error, "line", -1)
    column = getattr(error, "column", -1)
    if line is None or line < 1:
        line, column = _end_position(source)
    return f"{line}:{column}: syntax error: {detail}"


def _end_position(source: str) -> tuple[int, int]:
    lines = source.split("\n")
    return len(lines), len(lines[-1]) + 1
