"""Source rewrite of MutatingAdmissionPolicy typed initializers into CEL map literals.

Kubernetes declares the types ``Object``, ``Object.<field>...`` and ``JSONPatch`` for mutation expressions
(``k8s.io/apiserver/pkg/admission/plugin/cel/compile.go``, ``HasPatchTypes``), built with CEL message
construction: ``Object{spec: Object.spec{replicas: 1}}``, ``JSONPatch{op: "add", path: "/x", value: 1}``.
cel-python parses message construction but has no such types, so before compiling we rewrite each
``<TypeName>{field: value, ...}`` whose type is one of those into the map literal
``{"field": value, ...}``. The result is the same JSON-shaped value the apiserver derives from the typed
object (an apply configuration, or a JSON Patch operation), which is all the patchers need.

The rewrite is lexical but exact for CEL's grammar: string literals are copied untouched, brackets are
tracked so only the field names directly inside an initializer are quoted, and a name is a type name only
when it is not a member access (``x.Object``) and is followed by ``{``. Every other character is kept, so
positions in compile errors shift only by the quotes added.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

STRING_LITERAL = re.compile(
    r"""[rRbB]{0,2}("{3}(?:[^\\]|\\.)*?"{3}|'{3}(?:[^\\]|\\.)*?'{3}|"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*')""",
    re.DOTALL,
)
_NAME = re.compile(r"[A-Za-z_]\w*(?:\s*\.\s*[A-Za-z_]\w*)*")
_TYPE = re.compile(r"Object(?:\.[A-Za-z_]\w*)*|JSONPatch")
_INITIALIZER = "initializer"


@dataclass(frozen=True, slots=True)
class Rewritten:
    """The written ``source``, its rewrite ``text`` and, per character of ``text``, the index in ``source`` it
    came from (so compile errors can point into what was written)."""

    source: str
    text: str
    origins: tuple[int, ...]

    def original(self, line: int, column: int) -> tuple[int, int]:
        """The 1-based ``(line, column)`` in ``source`` of a 1-based position in ``text``."""
        index = sum(len(text) + 1 for text in self.text.split("\n")[: line - 1]) + column - 1
        origin = self.origins[index] if 0 <= index < len(self.origins) else len(self.source)
        before = self.source[:origin]
        return before.count("\n") + 1, origin - (before.rfind("\n") + 1) + 1


def rewrite_initializers(text: str) -> Rewritten:
    """``text`` with every ``Object...{}`` / ``JSONPatch{}`` initializer turned into a map literal."""
    out: list[str] = []
    origins: list[int] = []
    stack: list[str] = []
    field_expected = False  # directly after the "{" or "," of an initializer
    typed_brace_next = False
    i = 0

    def emit(piece: str, origin: int | None = None) -> None:
        out.append(piece)
        origins.extend([origin] * len(piece) if origin is not None else range(i, i + len(piece)))

    while i < len(text):
        char = text[i]
        after_word = i > 0 and (text[i - 1].isalnum() or text[i - 1] in "_.")
        string = None if after_word else STRING_LITERAL.match(text, i)
        name = None if after_word or string else _NAME.match(text, i)
        if string:
            emit(string.group(0))
            i, field_expected = string.end(), False
            continue
        if name:
            rest = text[name.end() :].lstrip()
            word = re.sub(r"\s+", "", name.group(0))
            if field_expected and rest.startswith(":") and "." not in word:
                emit(f'"{word}"', i)
            elif _TYPE.fullmatch(word) and rest.startswith("{"):
                typed_brace_next = True
            else:
                emit(name.group(0))
            i, field_expected = name.end(), False
            continue
        if char in "([{":
            stack.append(_INITIALIZER if char == "{" and typed_brace_next else char)
            field_expected = stack[-1] == _INITIALIZER
            typed_brace_next = False
        elif char in ")]}":
            if stack:
                stack.pop()
            field_expected = False
        elif char == ",":
            field_expected = bool(stack) and stack[-1] == _INITIALIZER
        elif not char.isspace():
            field_expected = False
        emit(char)
        i += 1
    return Rewritten(text, "".join(out), tuple(origins))
