"""The sync loop's inputs besides the repository's files: catalogs, installed versions, the cluster.

Catalogs come from ``upgrade-gate.yaml``'s ``catalogs`` (FBC paths, catalogd URLs, or ClusterCatalog
manifests whose content is served at ``content`` with ``{name}`` replaced). A catalog that cannot be loaded
aborts the cycle (``CatalogError``, ``FetchError``): resolving without it could remove proposals it still justifies.
Installed versions come from the manifests' ``status.install.bundle`` or from the cluster (``ClusterView``, which
also answers the add-on lookups of ``webhook.sync.views.AddOnView``).

A ``CatalogCache`` kept across cycles (``upgrade-gate sync --interval``) reuses a loaded path catalog, and the
package models already decoded from it, while no file under it changed (same names, sizes and modification
times); catalogd URLs are fetched every cycle.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Protocol

from webhook.errors import ManifestError
from webhook.io import open_catalog
from webhook.olm import Catalog, InstalledBundle, catalog_from_cluster_catalog
from webhook.plan import Document, ExtensionEntry, Problem, matching_files, read_documents
from webhook.sync.config import CatalogConfig
from webhook.sync.views import AddOnView


class ClusterView(AddOnView, Protocol):
    """What the sync loop reads from a cluster (``webhook.io.kube.cluster.Cluster`` implements it): installed
    bundles, the server version, one object for image templates, and the add-on lookups of ``AddOnView``."""

    def installed_bundles(self) -> Mapping[str, tuple[str, str]]:
        """``{ClusterExtension name: (bundle name, bundle version)}`` from ``status.install.bundle``."""

    def server_version(self) -> str:
        """The API server's ``/version`` ``gitVersion`` (``v1.31.2+k3s1``)."""

    def get_object(self, api_version: str, kind: str, name: str, namespace: str) -> Mapping[str, Any] | None:
        """One object by group/version, kind, name and namespace (empty: cluster-scoped); ``None`` if absent."""


class CatalogCache:
    """Loaded path catalogs by location, with the fingerprint of their files when loaded."""

    def __init__(self) -> None:
        self._loaded: dict[str, tuple[tuple[tuple[str, int, int], ...], Catalog]] = {}

    def load(self, location: str | Path, timeout_s: float) -> Catalog:
        """``open_catalog(location)``, or the catalog loaded before if its files are unchanged."""
        if isinstance(location, str) and "://" in location:
            return open_catalog(location, timeout=timeout_s)
        key = str(location)
        fingerprint = _fingerprint(Path(location))
        cached = self._loaded.get(key)
        if cached is not None and cached[0] == fingerprint:
            return cached[1]
        catalog = open_catalog(location, timeout=timeout_s)
        self._loaded[key] = (fingerprint, catalog)
        return catalog


@dataclass(frozen=True, slots=True)
class Catalogs:
    """The loaded catalogs, the ClusterCatalog manifests read (for image templates), and the problems."""

    catalogs: tuple[Catalog, ...]
    manifests: tuple[Document, ...]
    problems: tuple[Problem, ...]


def load_catalogs(
    root: Path, sources: Sequence[CatalogConfig], cache: CatalogCache, *, timeout_s: float = 30.0
) -> Catalogs:
    """Load every configured catalog through ``cache``; an invalid ClusterCatalog manifest is a problem, not
    an abort. Raises ``CatalogError`` when a catalog's content cannot be read, ``FetchError`` when a URL
    cannot be fetched.
    """
    catalogs: list[Catalog] = []
    manifests: list[Document] = []
    problems: list[Problem] = []
    for source in sources:
        if source.kind == "url":
            catalogs.append(cache.load(source.location, timeout_s))
            continue
        if source.kind == "path":
            catalogs.append(cache.load(root / source.location, timeout_s))
            continue
        found = read_documents(root, matching_files(root, [source.location]), "ClusterCatalog")
        problems.extend(found.problems)
        for doc in found.documents:
            try:
                meta = catalog_from_cluster_catalog(doc.manifest, f"{doc.file}:{doc.line}")
            except ManifestError as error:
                problems.append(Problem(doc.file, doc.line, str(error).removeprefix(f"{doc.file}:{doc.line}: ")))
                continue
            manifests.append(doc)
            where = source.content.replace("{name}", meta.name)
            content = cache.load(where if "://" in where else root / where, timeout_s)
            catalogs.append(content.with_metadata(meta))
    return Catalogs(tuple(catalogs), tuple(manifests), tuple(problems))


def with_installed(entries: Sequence[ExtensionEntry], installed: Mapping[str, tuple[str, str]]) -> list[ExtensionEntry]:
    """``entries`` with the installed bundle taken from ``installed`` (the cluster); an extension the cluster
    does not report as installed has none (no revision before the first install)."""
    result = []
    for entry in entries:
        bundle = installed.get(entry.extension.name)
        extension = replace(entry.extension, installed=InstalledBundle(*bundle) if bundle else None)
        result.append(replace(entry, extension=extension))
    return result


def _fingerprint(path: Path) -> tuple[tuple[str, int, int], ...]:
    """Every file under ``path`` (or ``path`` itself) with its size and modification time, sorted."""
    found = []
    if path.is_file():
        stat = path.stat()
        return ((path.name, stat.st_size, stat.st_mtime_ns),)
    for directory, _, files in os.walk(path):
        for name in files:
            stat = os.stat(os.path.join(directory, name))  # noqa: PTH116, PTH118 - os.walk's strings, 2,000 files
            found.append((os.path.join(directory, name), stat.st_size, stat.st_mtime_ns))  # noqa: PTH118
    return tuple(sorted(found))
