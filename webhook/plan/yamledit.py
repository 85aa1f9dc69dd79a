"""Minimal edits of YAML (or JSON) manifests: replace one scalar value in place, keep every other byte.

A value is found by its document (the line the document starts on, as ``webhook.manifests.iter_yaml_documents``
reports it) and its path of mapping keys and sequence indexes (``("spec", "installVersion")``). Only the
scalar's own characters change: comments, key order, indentation, flow or block style and the other documents
of the file stay as they are. The new value keeps the old one's quoting (plain, ``'single'`` or ``"double"``);
a plain value that YAML would read as something other than that string (``1.10``, ``true``) is double-quoted.

A value that is not written at its path (a YAML alias or merge key), a path that does not exist or ends in a
mapping or sequence raises ``ManifestError`` ``<source>:<line>: cannot edit <path>: <why>``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import yaml

from webhook.errors import ManifestError

Path = tuple[str | int, ...]
_PLAIN_SAFE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]*")
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # both count mark indexes in characters, not bytes


@dataclass(frozen=True, slots=True)
class ScalarEdit:
    """Set the scalar at ``path`` of the document starting on ``line`` (1-based) to the string ``value``."""

    line: int
    path: Path
    value: str


def render_path(path: Path) -> str:
    """``spec.installStrategy.placements[1].addonTemplate.installVersion``."""
    return "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in path).lstrip(".")


def set_scalars(text: str, source: str, edits: Sequence[ScalarEdit]) -> str:
    """``text`` with every edit applied (the spans are found in ``text`` first, then replaced from the end, so
    edits never move each other). Raises ``ManifestError`` for invalid YAML or an edit that cannot be made."""
    documents = _documents(text, source)
    spans = sorted((_span(text, documents, source, edit) for edit in edits), reverse=True)
    for start, end, replacement in spans:
        text = text[:start] + replacement + text[end:]
    return text


def line_of(text: str, source: str, line: int, path: Path) -> int:
    """The line (1-based) where ``path`` of the document starting on ``line`` is written: the deepest existing
    part of it, the document's own line when nothing is found. For error messages; never raises."""
    try:
        node = _document(_documents(text, source), source, line)
    except ManifestError:
        return line
    found = line
    for part in path:
        child = _child(node, part)
        if child is None:
            break
        node = child
        found = node.start_mark.line + 1
    return found


def _span(text: str, documents: Mapping[int, yaml.Node], source: str, edit: ScalarEdit) -> tuple[int, int, str]:
    node = _document(documents, source, edit.line)

    def error(why: str) -> ManifestError:
        return ManifestError(f"{source}:{node.start_mark.line + 1}: cannot edit {render_path(edit.path)}: {why}")

    for part in edit.path:
        child = _child(node, part)
        if child is None:
            raise error("it is not written there")
        if not node.start_mark.index <= child.start_mark.index <= node.end_mark.index:
            raise error("it is a YAML anchor or alias")
        node = child
    if not isinstance(node, yaml.ScalarNode):
        raise error("it is not a scalar")
    if text[node.start_mark.index] == "&":
        raise error("it is a YAML anchor or alias")
    return node.start_mark.index, node.end_mark.index, _render(node.style, edit.value)


def _documents(text: str, source: str) -> dict[int, yaml.Node]:
    """The documents of ``text`` by the line (1-based) they start on, composed once for all the edits of a file."""
    try:
        return {node.start_mark.line + 1: node for node in yaml.compose_all(text, Loader=_LOADER) if node is not None}
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark
        raise ManifestError(f"{source}:{mark.line + 1 if mark else 0}: invalid YAML: {error.problem}") from None


def _document(documents: Mapping[int, yaml.Node], source: str, line: int) -> yaml.Node:
    if line not in documents:
        raise ManifestError(f"{source}:{line}: no YAML document starts on this line")
    return documents[line]


def _child(node: yaml.Node, part: str | int) -> yaml.Node | None:
    if isinstance(node, yaml.MappingNode) and isinstance(part, str):
        return next((v for k, v in node.value if isinstance(k, yaml.ScalarNode) and k.value == part), None)
    if isinstance(node, yaml.SequenceNode) and isinstance(part, int) and 0 <= part < len(node.value):
        child: yaml.Node = node.value[part]
        return child
    return None


def _render(style: str | None, value: str) -> str:
    if style == "'":
        return "'" + value.replace("'", "''") + "'"
    if not style and _PLAIN_SAFE.fullmatch(value) and yaml.safe_load(value) == value:
        return value
    return json.dumps(value)
