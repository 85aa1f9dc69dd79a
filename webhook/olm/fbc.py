"""File-Based Catalogs from files and streams: catalogd's JSON streams, multi-document YAML, catalog directories
and their ClusterCatalog manifests.

``load_catalog(path)`` reads a directory tree (``*.json`` JSON streams, ``*.yaml``/``*.yml`` multi-document YAML,
nested folders, hidden entries skipped; a ``clustercatalog.yaml`` beside them is the ClusterCatalog manifest) or
one file; ``catalog_from_stream`` a JSON stream read elsewhere (catalogd, ``webhook.io.catalogd``);
``catalog_from_cluster_catalog`` the name, labels, priority, availability mode and Serving condition of a
ClusterCatalog. Blobs go to ``webhook.olm.catalog.Catalog``, which builds each package when first asked.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from webhook.errors import CatalogError, ManifestError
from webhook.manifests import MANIFEST_SUFFIXES, iter_yaml_documents, load_manifest
from webhook.olm.catalog import Catalog, Location

CLUSTER_CATALOG_FILE = "clustercatalog.yaml"
_WHITESPACE = re.compile(r"\s*")


def iter_json_stream(text: str, source: str) -> Iterator[tuple[Any, Location, str]]:
    """Decode a stream of concatenated JSON values (one per line or pretty-printed).

    Yields ``(value, location, text of the value)``; raises ``CatalogError`` at the first malformed value,
    naming its line.
    """
    decoder = json.JSONDecoder()
    position, line, length = 0, 1, len(text)
    while True:
        skip = _WHITESPACE.match(text, position)
        end = skip.end() if skip else position
        line += text.count("\n", position, end)
        position = end
        if position >= length:
            return
        try:
            value, stop = decoder.raw_decode(text, position)
        except json.JSONDecodeError as error:
            raise CatalogError(f"{source}:{error.lineno}: invalid JSON: {error.msg}") from None
        yield value, Location(source, line), text[position:stop]
        line += text.count("\n", position, stop)
        position = stop


def iter_yaml_stream(text: str, source: str) -> Iterator[tuple[Any, Location]]:
    """Decode multi-document YAML; yields ``(document, location)``; raises ``CatalogError`` with the line."""
    try:
        for document, line in iter_yaml_documents(text, source):
            yield document, Location(source, line)
    except ManifestError as error:
        raise CatalogError(str(error)) from None


def _blobs_of_file(path: Path, source: str) -> Iterator[tuple[Any, Location, str | None]]:
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".json":
        yield from iter_json_stream(text, source)
    else:
        for document, where in iter_yaml_stream(text, source):
            yield document, where, None


def _catalog_files(root: Path) -> list[Path]:
    """FBC files below ``root`` in a stable order, skipping hidden entries and the ClusterCatalog file."""
    files = [
        p
        for p in root.rglob("*")
        if p.suffix in MANIFEST_SUFFIXES
        and p.name != CLUSTER_CATALOG_FILE
        and not any(part.startswith(".") for part in p.relative_to(root).parts)
        and p.is_file()
    ]
    return sorted(files)


def load_catalog(location: str | Path) -> Catalog:
    """Load a catalog from a directory or a single FBC file (``webhook.io.catalogd`` reads a catalogd URL).

    The catalog is named after the directory or file base name (a file's suffix dropped). A directory's
    ``clustercatalog.yaml`` (ClusterCatalog manifest) sets the name, labels, ``spec.priority``,
    ``spec.availabilityMode`` and ``Serving``. Raises ``CatalogError`` when the path cannot be read or holds no
    FBC blob at all (a file that is no catalog: its first problem, or a directory without FBC files), and
    ``ManifestError`` for a malformed ``clustercatalog.yaml``; malformed blobs are recorded per package.
    """
    path = Path(location)
    if path.is_dir():
        catalog = _catalog_from_manifest(path)
        files = _catalog_files(path)
        if not files:
            raise CatalogError(f"{path}: not a File-Based Catalog: no .json or .yaml file in it")
        for file in files:
            relative = file.relative_to(path)
            folder = relative.parts[0] if len(relative.parts) > 1 else None
            _add_blobs(catalog, file, str(file), folder)
        return catalog
    if path.is_file():
        catalog = Catalog(path.stem if path.suffix in MANIFEST_SUFFIXES else path.name)
        _add_blobs(catalog, path, str(path), None)
        if not catalog.blobs:  # a single file's read errors are unattributed (no package folder)
            why = str(catalog.unattributed[0]) if catalog.unattributed else f"{path}: no blob"
            raise CatalogError(f"not a File-Based Catalog: {why}")
        return catalog
    raise CatalogError(f"{path}: no such catalog file or directory")


def _add_blobs(catalog: Catalog, file: Path, source: str, folder: str | None) -> None:
    try:
        for blob, where, raw in _blobs_of_file(file, source):
            catalog.add(blob, where, folder, raw)
    except CatalogError as error:
        catalog.record_error(error, folder)
    except (OSError, UnicodeDecodeError) as error:
        catalog.record_error(CatalogError(f"{source}: cannot read: {error}"), folder)


def catalog_from_stream(name: str, text: str, source: str) -> Catalog:
    """The catalog ``name`` from a JSON stream of FBC blobs (catalogd's ``/api/v1/all``); ``source`` names it in
    errors. A malformed stream is recorded on the catalog (``unattributed``), never raised."""
    catalog = Catalog(name)
    try:
        for blob, where, raw in iter_json_stream(text, source):
            catalog.add(blob, where, None, raw)
    except CatalogError as error:
        catalog.unattributed.append(error)
    return catalog


def _catalog_from_manifest(directory: Path) -> Catalog:
    manifest_path = directory / CLUSTER_CATALOG_FILE
    if not manifest_path.is_file():
        return Catalog(directory.resolve().name)
    return catalog_from_cluster_catalog(load_manifest(manifest_path, "ClusterCatalog"), str(manifest_path))


def catalog_from_cluster_catalog(manifest: Mapping[str, Any], source: str) -> Catalog:
    """An empty ``Catalog`` carrying a ClusterCatalog manifest's name, labels, priority, mode and Serving.

    A manifest without ``status`` is read as serving (its content is at hand, as in a GitOps repository);
    one whose ``status.conditions`` lack ``Serving=True`` is not being served. Raises ``ManifestError``.
    """
    metadata = manifest.get("metadata") or {}
    spec = manifest.get("spec") or {}
    name = metadata.get("name")
    if not isinstance(name, str) or not name:
        raise ManifestError(f"{source}: ClusterCatalog needs metadata.name")
    priority = spec.get("priority", 0)
    if isinstance(priority, bool) or not isinstance(priority, int) or not -(2**31) <= priority < 2**31:
        raise ManifestError(f"{source}: spec.priority must be an int32, not {priority!r}")
    mode = spec.get("availabilityMode", "Available")
    if mode not in ("Available", "Unavailable"):
        raise ManifestError(f"{source}: spec.availabilityMode must be Available or Unavailable, not {mode!r}")
    status = manifest.get("status")
    serving = True
    if isinstance(status, Mapping):
        conditions = status.get("conditions") or []
        serving = any(
            isinstance(c, Mapping) and c.get("type") == "Serving" and c.get("status") == "True" for c in conditions
        )
    labels = metadata.get("labels") or {}
    return Catalog(
        name,
        labels={str(k): str(v) for k, v in labels.items()},
        priority=priority,
        availability_mode=mode,
        serving=serving,
    )
