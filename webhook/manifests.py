"""Reading Kubernetes manifests from YAML (or JSON) files, with the line each document starts on."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import yaml

from webhook.errors import ManifestError


def iter_yaml_documents(text: str, source: str) -> Iterator[tuple[Any, int]]:
    """Decode multi-document YAML (JSON is YAML too); yields ``(document, 1-based line)``.

    Empty documents are skipped. Raises ``ManifestError`` ``<source>:<line>: invalid YAML: <problem>``,
    naming also the line where the unfinished construct started when that differs.
    """
    loader: yaml.SafeLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)(text)
    try:
        while loader.check_node():
            node = loader.get_node()
            if node is None:
                continue
            value = loader.construct_document(node)
            if value is not None:
                yield value, node.start_mark.line + 1
    except yaml.MarkedYAMLError as error:
        line = error.problem_mark.line + 1 if error.problem_mark else 0
        context = ""
        if error.context and error.context_mark and error.context_mark.line + 1 != line:
            context = f" ({error.context} started on line {error.context_mark.line + 1})"
        raise ManifestError(f"{source}:{line}: invalid YAML: {error.problem}{context}") from None
    finally:
        loader.dispose()


def read_text(path: Path) -> str:
    """A file's UTF-8 text; raises ``ManifestError`` ``<path>: cannot read: <reason>``."""
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        reason = error.strerror if isinstance(error, OSError) and error.strerror else str(error)
        raise ManifestError(f"{path}: cannot read: {reason}") from None


def load_manifest(path: Path, kind: str) -> dict[str, Any]:
    """The single manifest of ``kind`` in a YAML or JSON file; raises ``ManifestError`` naming the file."""
    documents = list(iter_yaml_documents(read_text(path), str(path)))
    found = [doc for doc, _ in documents if isinstance(doc, Mapping) and doc.get("kind") == kind]
    if len(found) != 1:
        kinds = sorted({str(doc.get("kind")) for doc, _ in documents if isinstance(doc, Mapping)})
        seen = f" (found kinds: {', '.join(kinds)})" if kinds and not found else ""
        what = "no" if not found else "more than one"
        raise ManifestError(f"{path}: {what} {kind} manifest found{seen}")
    return dict(found[0])


MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")


def load_manifests(path: Path, kind: str) -> list[tuple[dict[str, Any], str]]:
    """Every manifest of ``kind`` in a file or under a directory (``*.yaml``, ``*.yml``, ``*.json``, recursively,
    in path order), each with its origin ``<file>:<line>``. Raises ``ManifestError`` naming the file when one
    cannot be read or parsed, or when there is none."""
    files = (
        sorted(p for p in path.rglob("*") if p.suffix in MANIFEST_SUFFIXES and p.is_file()) if path.is_dir() else [path]
    )
    found = [
        (dict(document), f"{file}:{line}")
        for file in files
        for document, line in iter_yaml_documents(read_text(file), str(file))
        if isinstance(document, Mapping) and document.get("kind") == kind
    ]
    if not found:
        raise ManifestError(f"{path}: no {kind} manifest found")
    return found
