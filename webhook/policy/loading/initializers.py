"""Source rewrite of MutatingAdmissionPolicy typed initializers into CEL map literals.

Kubernetes declares the types ``Object``, ``Object.<field>...`` and ``JSONPatch`` for mutation expressions
(``k8s.io/apiserver/pkg/admission/plugin/cel/compile.go``, ``HasPatchTypes``), built with CEL message
construction: ``Object{spec: Object.spec{replicas: 1}}``, ``JSONPatch{op: "add", path: "/x", value: 1}``.
cel-python parses message construction but has no such types, so before compiling we rewrite each
``<TypeName>{field: value, ...}`` whose type is one of those into the map literal
``{"field": dyn(value), ...}`` (``dyn`` because the fields of one message have different types, which a
map literal may not: Kubernetes rejects heterogeneous literals). The result is the same JSON-shaped value
the apiserver derives from the typed object (an apply configuration, or a JSON Patch operation), which
is all the patchers need. An ``Object...`` initializer also records its type name under ``TYPE_KEY``, so that
the ApplyConfiguration patcher can check it against the field path as the apiserver does
(``Object.spec.template{...}`` only as the value of ``spec.template``) and then drop it.

The rewrite is lexical but exact for CEL's grammar: string literals are copied untouched, brackets are
tracked so only the field names directly inside an initializer are quoted, and a name is a type name only
when it is not a member access (``x.Object``) and is followed by ``{``. Every other character is kept, and
``Rewritten.original`` maps positions in compile errors back to what was written.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from webhook.cel import STRING_LITERAL
from webhook.policy.model import TYPE_KEY

_NAME = re.compile(r"[A-Za-z_]\w*(?:\s*\.\s*[A-Za-z_]\w*)*")
_TYPE = re.compile(r"Object(?:\.[A-Za-z_]\w*)*|JSONPatch")
_INITIALIZER = "initializer"
_VALUE = "value"


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
    """``text`` with every ``Object...{}`` / ``JSONPatch{}`` initializer turned into a map literal whose values
    are wrapped in ``dyn()`` (fields of one message have different types; a map literal must not)."""
    return _Rewriter(text).run()


class _Rewriter:
    """One pass over the text; ``stack`` holds the open brackets (``_INITIALIZER`` for an initializer's
    brace) and ``_VALUE`` above an initializer while one of its field values is being wrapped."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.out: list[str] = []
        self.origins: list[int] = []
        self.stack: list[str] = []
        self.field_expected = False  # directly after the "{" or "," of an initializer
        self.typed_brace_next = False
        self.typed_name = ""
        self.i = 0

    def emit(self, piece: str, origin: int | None = None) -> None:
        self.out.append(piece)
        self.origins.extend([origin] * len(piece) if origin is not None else range(self.i, self.i + len(piece)))

    def run(self) -> Rewritten:
        text = self.text
        while self.i < len(text):
            after_word = self.i > 0 and (text[self.i - 1].isalnum() or text[self.i - 1] in "_.")
            string = None if after_word else STRING_LITERAL.match(text, self.i)
            name = None if after_word or string else _NAME.match(text, self.i)
            if string:
                self.emit(string.group(0))
                self.i, self.field_expected = string.end(), False
            elif name:
                self.name(name)
            else:
                self.punctuation(text[self.i])
        return Rewritten(text, "".join(self.out), tuple(self.origins))

    def name(self, name: re.Match[str]) -> None:
        rest = self.text[name.end() :].lstrip()
        word = re.sub(r"\s+", "", name.group(0))
        if self.field_expected and rest.startswith(":") and "." not in word:
            colon = self.text.index(":", name.end())
            self.emit(f'"{word}"', self.i)
            self.i = name.end()
            self.emit(self.text[name.end() : colon + 1])
            if self.text[colon + 1 :].lstrip()[:1] not in (",", "}", ""):  # an empty value stays a syntax error
                self.emit(" dyn(", colon)
                self.stack.append(_VALUE)
            self.i, self.field_expected = colon + 1, False
            return
        if _TYPE.fullmatch(word) and rest.startswith("{"):
            self.typed_brace_next = True
            self.typed_name = word
        else:
            self.emit(name.group(0))
        self.i, self.field_expected = name.end(), False

    def punctuation(self, char: str) -> None:
        stack = self.stack
        if char in ",}" and stack and stack[-1] == _VALUE:
            stack.pop()
            self.emit(")", self.i)
        if char in "([{":
            stack.append(_INITIALIZER if char == "{" and self.typed_brace_next else char)
            self.field_expected = stack[-1] == _INITIALIZER
            self.typed_brace_next = False
        elif char in ")]}":
            if stack:
                stack.pop()
            self.field_expected = False
        elif char == ",":
            self.field_expected = bool(stack) and stack[-1] == _INITIALIZER
        elif not char.isspace():
            self.field_expected = False
        self.emit(char)
        self.i += 1
        if char == "{" and self.field_expected and self.typed_name.startswith("Object"):
            following = "" if self.text[self.i :].lstrip().startswith("}") else ", "
            self.emit(f'"{TYPE_KEY}": dyn("{self.typed_name}"){following}', self.i - 1)
