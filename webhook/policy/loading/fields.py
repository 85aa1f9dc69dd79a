"""Reading one YAML document field by field, collecting every problem with its place.

A ``FieldReader`` walks a ``MarkedMap`` with field paths (``spec.validations[2].expression``) and records
``field.Error``-worded problems (``webhook.apivalidation``) as lines
``<file>:<line>:<column>: document <n> (<Kind>/<name>): <field path>: <detail>``. It never raises; the
loader raises one ``PolicyLoadError`` with every line once the whole set has been read.
Unknown fields and repeated keys are problems, as with ``kubectl apply`` (strict field validation).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from webhook import apivalidation as api
from webhook.cel import VARIABLE_REFERENCE, Program, blank_strings
from webhook.errors import CelCompileError
from webhook.policy.loading.documents import Document, MarkedList, MarkedMap, Position, position_in_scalar
from webhook.policy.loading.initializers import Rewritten
from webhook.policy.model import Expression


class Compiler(Protocol):
    """Compiles CEL ``text`` for an environment declaring exactly ``variables`` (top-level names).

    Raises ``webhook.errors.CelCompileError`` whose message quotes the ``line:column`` of the problem.
    """

    def __call__(
        self,
        text: str,
        variables: frozenset[str],
        definitions: Mapping[str, Program] | None = None,
        exclusive: frozenset[str] = frozenset(),
    ) -> Program:
        """Compile ``text``; ``definitions``: the programs of the composited variables it may read, by name in
        declaration order; ``exclusive``: those whose value no other expression of the policy needs on a request it
        admits (``webhook.policy.loading.specs.exclusive_variables``)."""
        ...


@dataclass(frozen=True, slots=True)
class At:
    """A place in a document: the field path and where its value (or nearest parent) was written."""

    path: str
    position: Position
    style: str | None = None

    def __str__(self) -> str:
        return self.path


def undefined_variable(text: str, defined: Sequence[str]) -> str | None:
    """A cel-go style error for the first ``variables.<name>`` in ``text`` that is not in ``defined``.

    The composited compiler (``k8s.io/apiserver/pkg/admission/plugin/cel/composition.go``) declares only
    the variables compiled before, so a forward or unknown reference fails to compile: ``undefined field``.
    """
    for found in VARIABLE_REFERENCE.finditer(blank_strings(text)):
        if found.group(1) not in defined:
            before = text[: found.start(1)]
            line = before.count("\n") + 1
            column = len(before) - (before.rfind("\n") + 1) + 1
            return f"{line}:{column}: undefined field '{found.group(1)}'"
    return None


class FieldReader:
    """Reads the fields of one document and collects problems in ``problems`` (rendered lines)."""

    def __init__(self, document: Document, compiler: Compiler) -> None:
        self.document = document
        self.compiler = compiler
        self.problems: list[tuple[Position, str]] = []
        self.label = f"document {document.index}"

    def name_object(self, kind: str, name: object) -> None:
        """Say which object the document holds (``Kind/name``) in every later problem."""
        shown = name if isinstance(name, str) and name else "<unnamed>"
        self.label = f"document {self.document.index} ({kind}/{shown})"

    def fail(self, at: At, detail: str, position: Position | None = None) -> None:
        """Record a problem at ``at`` (or at the more precise ``position``)."""
        where = position or at.position
        line = f"{self.document.file}:{where.line}:{where.column}: {self.label}: {at}: {detail}"
        self.problems.append((where, line))

    def report(self) -> list[str]:
        """The problems found, ordered by where they are in the file."""
        return [line for _, line in sorted(self.problems, key=lambda problem: (problem[0].line, problem[0].column))]

    # --- navigation ------------------------------------------------------------------------------------

    @staticmethod
    def child(mapping: MarkedMap, at: At, key: str) -> At:
        """The place of ``mapping[key]`` below ``at``."""
        path = f"{at.path}.{key}" if at.path else key
        return At(path, mapping.at(key), mapping.styles.get(key))

    def mapping(self, value: Any, at: At, fields: frozenset[str] | None) -> MarkedMap | None:
        """``value`` as a mapping (``None`` if absent or not a mapping: then a problem is recorded unless
        absent); unknown keys (not in ``fields``; ``None`` allows any) and repeated keys are problems."""
        if value is None:
            return None
        if not isinstance(value, MarkedMap):
            self.fail(at, api.invalid(value, "must be an object"))
            return None
        for key, position in value.duplicates:
            self.fail(self.child(value, at, str(key)), f'duplicate field "{key}"', position)
        if fields is not None:
            for key in value:
                if key not in fields:
                    self.fail(self.child(value, at, str(key)), "unknown field")
        return value

    def items(self, mapping: MarkedMap, at: At, key: str) -> Iterator[tuple[Any, At]]:
        """The items of the list ``mapping[key]`` with their places; a non-list is a problem."""
        value, place = mapping.get(key), self.child(mapping, at, key)
        if value is None:
            return
        if not isinstance(value, MarkedList):
            self.fail(place, api.invalid(value, "must be a list"))
            return
        for index, item in enumerate(value):
            yield item, At(f"{place.path}[{index}]", value.at(index))

    # --- scalars ---------------------------------------------------------------------------------------

    def string(self, mapping: MarkedMap, at: At, key: str) -> str | None:
        """``mapping[key]`` as a string, ``None`` if absent; a non-string is a problem (and ``None``)."""
        value = mapping.get(key)
        if value is None or isinstance(value, str):
            return value
        self.fail(self.child(mapping, at, key), api.invalid(value, "must be a string"))
        return None

    def string_items(self, mapping: MarkedMap, at: At, key: str) -> list[tuple[str, At]]:
        """``mapping[key]`` as a list of strings with their places (absent = empty); non-strings are problems
        and dropped."""
        found = []
        for item, place in self.items(mapping, at, key):
            if isinstance(item, str):
                found.append((item, place))
            else:
                self.fail(place, api.invalid(item, "must be a string"))
        return found

    def strings(self, mapping: MarkedMap, at: At, key: str) -> tuple[str, ...]:
        """``mapping[key]`` as a tuple of strings, as ``string_items`` reads it."""
        return tuple(item for item, _ in self.string_items(mapping, at, key))

    def enum(self, mapping: MarkedMap, at: At, key: str, allowed: Sequence[str], default: str | None) -> str:
        """``mapping[key]``, which must be one of ``allowed``; absent gives ``default`` or, when that is
        ``None``, a ``Required value`` problem. Returns ``""`` after a problem."""
        value = self.string(mapping, at, key)
        if value is None and key not in mapping and default is not None:
            return default
        if not value:
            self.fail(self.child(mapping, at, key), api.required())
            return ""
        if value not in allowed:
            self.fail(self.child(mapping, at, key), api.not_supported(value, allowed))
            return ""
        return value

    def name(self, mapping: MarkedMap, at: At, key: str, check: Any) -> str:
        """``mapping[key]``, required, every problem ``check(value)`` reports recorded as ``Invalid value``."""
        value = self.string(mapping, at, key)
        place = self.child(mapping, at, key)
        if not value:
            self.fail(place, api.required())
            return ""
        for problem in check(value):
            self.fail(place, api.invalid(value, problem))
        return value

    # --- CEL -------------------------------------------------------------------------------------------

    def expression(
        self,
        mapping: MarkedMap,
        at: At,
        key: str,
        variables: frozenset[str],
        defined: Mapping[str, Program | None] | None = None,
        *,
        exclusive: frozenset[str] = frozenset(),
        missing: str = "",
        rewrite: Callable[[str], Rewritten] | None = None,
        result: tuple[str, ...] = (),
    ) -> Expression | None:
        """Compile the CEL expression ``mapping[key]`` for ``variables``; ``defined`` are the names
        ``variables.<name>`` may use, in declaration order, with their programs (``None`` for one that failed), and
        ``exclusive`` those of them whose value no other expression of the policy needs on a request it admits.
        Empty → ``Required value: <missing>``; a compile error →
        ``Invalid value: <expr>: compilation failed: <error>`` placed at the error's column in the file.
        ``rewrite`` turns the written text into the text compiled; error positions are mapped back.
        ``result``: the types the checked result must have (the apiserver's ``must evaluate to bool but got
        dyn``); a ``dyn`` result that may come from ``variables``, ``request``, ``namespaceObject`` or
        ``authorizer`` passes: the apiserver types them (``kubernetes.AdmissionRequest``, ...), they are
        ``dyn`` here."""
        text = self.string(mapping, at, key)
        place = self.child(mapping, at, key)
        if text is None or not text.strip():
            self.fail(place, api.required(missing))
            return None
        rewritten = rewrite(text) if rewrite else None
        try:
            defined = defined or {}
            error = undefined_variable(text, list(defined)) if "variables" in variables else None
            if error is None:
                definitions = {name: program for name, program in defined.items() if program is not None}
                program = self.compiler(rewritten.text if rewritten else text, variables, definitions, exclusive)
                wrong = _wrong_result(text, program.result_type, result)
                if wrong is None:
                    return Expression(text, program)
                self.fail(place, api.invalid(text, wrong))
                return None
        except CelCompileError as err:
            error = _written_position(str(err), rewritten)
        position = position_in_scalar(self.document, place.position, place.style, error)
        self.fail(place, api.invalid(text, f"compilation failed: {error}"), position)
        return None


_TYPED_HERE_AS_DYN = re.compile(r"(?<![\w.])(variables|request|namespaceObject|authorizer)\b")


def _wrong_result(text: str, found: str | None, wanted: tuple[str, ...]) -> str | None:
    """The apiserver's complaint about a result of type ``found`` where ``wanted`` ones are required, or None."""
    if not wanted or found is None or found in wanted:
        return None
    if found == "dyn" and _TYPED_HERE_AS_DYN.search(blank_strings(text)):
        return None
    expected = wanted[0] if len(wanted) == 1 else f"one of [{' '.join(wanted)}]"
    return f"must evaluate to {expected} but got {found}"


def _written_position(message: str, rewritten: Rewritten | None) -> str:
    """``message`` with its leading ``line:column`` moved from the rewritten text to the written one."""
    found = re.match(r"(\d+):(\d+):", message)
    if rewritten is None or found is None:
        return message
    line, column = rewritten.original(int(found.group(1)), int(found.group(2)))
    return f"{line}:{column}:{message[found.end() :]}"
