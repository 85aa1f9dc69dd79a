"""Lexical facts of CEL source that rewrites and checks share: string literals and ``variables.<name>``.

Positions are kept: ``blank_strings`` blanks the inside of string literals so that a regular expression over
the result finds only code, at the offsets it has in the source.
"""

from __future__ import annotations

import re

STRING_LITERAL = re.compile(
    r"""[rRbB]{0,2}("{3}(?:[^\\]|\\.)*?"{3}|'{3}(?:[^\\]|\\.)*?'{3}|"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*')""",
    re.DOTALL,
)
#: ``variables.<name>`` as a reference to a composited variable (not a member ``x.variables``); group 1 is the name.
VARIABLE_REFERENCE = re.compile(r"(?<![\w.])variables\s*\.\s*([_a-zA-Z][_a-zA-Z0-9]*)")


def blank_strings(text: str) -> str:
    """``text`` with the inside of every CEL string literal replaced by spaces (positions are kept)."""
    return STRING_LITERAL.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), text)


def read_names(text: str) -> list[str]:
    """The names of the composited variables ``text`` reads (``variables.<name>``), in order of appearance, with
    repeats."""
    return [found.group(1) for found in VARIABLE_REFERENCE.finditer(blank_strings(text))]
