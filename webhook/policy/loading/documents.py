"""Multi-document YAML (or JSON) files read into mappings that remember where each value was written.

PyYAML's ``SafeLoader`` with two changes: mappings and sequences are built as ``MarkedMap`` / ``MarkedList``,
which keep the 1-based line and column of every value (and note duplicate keys, which
``sigs.k8s.io/yaml`` strict decoding rejects), and timestamps stay strings (Kubernetes decodes YAML through
JSON, where ``2024-01-01T00:00:00Z`` is a string). ``plain`` turns the result back into JSON values.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from webhook.errors import PolicyLoadError
from webhook.manifests import manifest_files


@dataclass(frozen=True, slots=True)
class Position:
    """A 1-based line and column in a file."""

    line: int
    column: int


class MarkedMap(dict[Any, Any]):
    """A YAML mapping that knows where it starts, where each value starts, and which keys were repeated."""

    start: Position
    positions: dict[Any, Position]
    styles: dict[Any, str | None]
    duplicates: list[tuple[Any, Position]]

    def at(self, key: Any) -> Position:
        """Where the value of ``key`` was written, or where this mapping starts if ``key`` is absent."""
        return self.positions.get(key, self.start)


class MarkedList(list[Any]):
    """A YAML sequence that knows where it starts and where each item starts."""

    start: Position
    positions: list[Position]

    def at(self, index: int) -> Position:
        """Where item ``index`` was written."""
        return self.positions[index]


@dataclass(frozen=True, slots=True)
class Document:
    """One YAML document: its file, its 1-based index in the file, its content and the file's lines."""

    file: str
    index: int
    content: Any
    lines: tuple[str, ...]


def _position(mark: yaml.Mark) -> Position:
    return Position(mark.line + 1, mark.column + 1)


class _Loader(yaml.SafeLoader):
    """SafeLoader building ``MarkedMap``/``MarkedList`` and leaving timestamps as strings."""


def _construct_map(loader: yaml.SafeLoader, node: yaml.MappingNode) -> MarkedMap:
    loader.flatten_mapping(node)
    result = MarkedMap()
    result.start, result.positions, result.styles, result.duplicates = _position(node.start_mark), {}, {}, []
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        if not isinstance(key, str | int | float | bool) and key is not None:
            raise yaml.constructor.ConstructorError(
                "while constructing a mapping", node.start_mark, "found an unhashable key", key_node.start_mark
            )
        if key in result:
            result.duplicates.append((key, _position(key_node.start_mark)))
        result[key] = loader.construct_object(value_node, deep=True)
        result.positions[key] = _position(value_node.start_mark)
        result.styles[key] = getattr(value_node, "style", None)
    return result


def _construct_list(loader: yaml.SafeLoader, node: yaml.SequenceNode) -> MarkedList:
    result = MarkedList(loader.construct_object(child, deep=True) for child in node.value)
    result.start = _position(node.start_mark)
    result.positions = [_position(child.start_mark) for child in node.value]
    return result


_Loader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
_Loader.add_constructor("tag:yaml.org,2002:map", _construct_map)
_Loader.add_constructor("tag:yaml.org,2002:seq", _construct_list)


def parse_documents(text: str, file: str) -> list[Document]:
    """The documents of ``text`` (named ``file`` in messages); empty documents are skipped.

    Raises ``PolicyLoadError`` (``<file>:<line>:<column>: <problem>``) on a YAML syntax error.
    """
    lines = tuple(text.splitlines())
    try:
        contents = list(yaml.load_all(text, Loader=_Loader))
    except yaml.MarkedYAMLError as err:
        mark = err.problem_mark or err.context_mark
        where = f"{file}:{mark.line + 1}:{mark.column + 1}" if mark else file
        context = ""
        if err.context and err.context_mark and err.problem:
            context = f" ({err.context} at {err.context_mark.line + 1}:{err.context_mark.column + 1})"
        raise PolicyLoadError(f"{where}: {err.problem or err.context}{context}") from None
    except yaml.YAMLError as err:
        raise PolicyLoadError(f"{file}: {err}") from None
    return [Document(file, i, c, lines) for i, c in enumerate(contents, start=1) if c is not None]


def policy_files(paths: Iterable[str | Path]) -> Iterator[Path]:
    """The files named by ``paths``: files as given, directories as their ``*.yaml|*.yml|*.json`` files
    (sorted, not recursive, like ``kubectl apply -f DIR``). Raises ``PolicyLoadError`` for a missing path."""
    for path in map(Path, paths):
        if path.is_dir():
            yield from manifest_files(path, recursive=False)
        elif path.is_file():
            yield path
        else:
            raise PolicyLoadError(f"{path}: no such file or directory")


#: A policy file's name (as messages give it) and its text.
Source = tuple[str, str]


def read_sources(paths: Iterable[str | Path]) -> list[Source]:
    """The ``Source`` of every file of ``policy_files(paths)``, in order. Raises one ``PolicyLoadError`` naming
    every file that cannot be read."""
    sources: list[Source] = []
    problems: list[str] = []
    for file in policy_files(paths):
        try:
            sources.append((str(file), file.read_text(encoding="utf-8")))
        except (OSError, UnicodeDecodeError) as err:
            problems.append(f"{file}: cannot read: {err}")
    if problems:
        raise PolicyLoadError("\n".join(problems))
    return sources


def read_documents(sources: Iterable[Source]) -> list[Document]:
    """The documents of every source, in order. Raises one ``PolicyLoadError`` naming every source that cannot
    be parsed."""
    documents: list[Document] = []
    problems: list[str] = []
    for file, text in sources:
        try:
            documents.extend(parse_documents(text, file))
        except PolicyLoadError as err:
            problems.append(str(err))
    if problems:
        raise PolicyLoadError("\n".join(problems))
    return documents


def read_paths(paths: Iterable[str | Path]) -> list[Document]:
    """The documents of every file of ``policy_files(paths)``, in order (``read_sources``, then
    ``read_documents``)."""
    return read_documents(read_sources(paths))


def plain(value: Any) -> Any:
    """``value`` with every ``MarkedMap``/``MarkedList`` replaced by a plain ``dict``/``list`` (deeply)."""
    if isinstance(value, dict):
        return {key: plain(item) for key, item in value.items()}
    if isinstance(value, list):
        return [plain(item) for item in value]
    return value


_CEL_POSITION = re.compile(r"(?:^|:)(\d+):(\d+):")


def position_in_scalar(document: Document, start: Position, style: str | None, message: str) -> Position | None:
    """Where in the file the CEL ``line:column`` quoted in ``message`` lies, for a scalar written at ``start``.

    Exact for block scalars (``|``, ``|-``) and single-line plain or quoted scalars; ``None`` when the
    message has no position or the scalar's layout does not allow an exact answer (folded, multi-line flow).
    """
    found = _CEL_POSITION.search(message)
    if found is None:
        return None
    cel_line, cel_column = int(found.group(1)), int(found.group(2))
    if style == "|":
        first = start.line  # the content starts on the line after the indicator (0-based index here)
        content = [text for text in document.lines[first:] if text.strip()]
        line = start.line + cel_line
        if not content or line > len(document.lines):
            return None
        indent = len(content[0]) - len(content[0].lstrip(" "))
        return Position(line, indent + cel_column)
    if style in (None, "'", '"') and cel_line == 1:
        quote_width = 0 if style is None else 1
        return Position(start.line, start.column + quote_width + cel_column - 1)
    return None
