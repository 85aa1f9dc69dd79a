"""The cluster's catalogs (``cluster`` mode): each ClusterCatalog's File-Based Catalog as catalogd serves it.

A ClusterCatalog (``olm.operatorframework.io/v1``) that catalogd serves says where in ``status.urls.base``;
its content is ``<base>/api/v1/all`` (``webhook.io.catalogd.fetch_catalog``, verified with catalogd's CA). The
content is downloaded again only when the catalog was unpacked anew (``status.resolvedSource.image.ref`` or
``status.lastUnpacked`` changed) or its URL moved. Name, labels, ``spec.priority``, ``spec.availabilityMode``
and the ``Serving`` condition come from the ClusterCatalog itself (``catalog_from_cluster_catalog``), so the
resolver skips an ``Unavailable`` catalog and fails on a selected one that is not serving, as operator-controller
does. A catalog that cannot be read is reported in ``problems`` and counts as not serving: an extension that selects
it does not resolve, the others do.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from webhook.errors import InputError, UpgradeGateError
from webhook.io import fetch_catalog
from webhook.objects import KubeObject
from webhook.olm import Catalog, catalog_from_cluster_catalog

Fetch = Callable[[str], Catalog]


@dataclass(frozen=True, slots=True)
class LoadedCatalogs:
    """The catalogs to resolve against, and ``{ClusterCatalog name: why it could not be read}``."""

    catalogs: tuple[Catalog, ...]
    problems: Mapping[str, str]


class CatalogLoader:
    """Loads ClusterCatalogs' content through ``fetch`` (a catalogd base URL -> ``Catalog``), keeping each until
    the catalog changes."""

    def __init__(self, fetch: Fetch) -> None:
        self.fetch = fetch
        self._loaded: dict[str, tuple[tuple[str, ...], Catalog]] = {}

    @classmethod
    def over_http(cls, *, cafile: Path | None, timeout_s: float) -> CatalogLoader:
        """A loader that downloads from catalogd (``cafile``: its CA bundle)."""
        return cls(lambda base: fetch_catalog(base, timeout_s, cafile=cafile))

    def load(self, cluster_catalogs: Sequence[KubeObject]) -> LoadedCatalogs:
        """The content of every ClusterCatalog in ``cluster_catalogs`` (one download per changed catalog)."""
        catalogs: list[Catalog] = []
        problems: dict[str, str] = {}
        names = set()
        for manifest in cluster_catalogs:
            name = str((manifest.get("metadata") or {}).get("name") or "")
            names.add(name)
            try:
                meta = catalog_from_cluster_catalog(manifest, f"ClusterCatalog {name}")
            except UpgradeGateError as error:
                problems[name] = str(error)
                continue
            try:
                content = self._content(meta, manifest)
            except (UpgradeGateError, OSError) as error:
                problems[name] = str(error)
                content, meta = meta, replace(meta, serving=False)
            catalogs.append(content.with_metadata(meta))
        for gone in set(self._loaded) - names:
            del self._loaded[gone]
        return LoadedCatalogs(tuple(sorted(catalogs, key=lambda c: c.name)), problems)

    def _content(self, meta: Catalog, manifest: Mapping[str, Any]) -> Catalog:
        status = manifest.get("status") if isinstance(manifest.get("status"), Mapping) else {}
        base = str(((status or {}).get("urls") or {}).get("base") or "")
        if not meta.serving or not base:
            return Catalog(meta.name)  # not served: the resolver reports it when an extension selects it
        image = (((status or {}).get("resolvedSource") or {}).get("image") or {}).get("ref") or ""
        version = (base, str(image), str((status or {}).get("lastUnpacked") or ""))
        kept = self._loaded.get(meta.name)
        if kept is not None and kept[0] == version:
            return kept[1]
        content = self.fetch(base)
        if content.unattributed:
            raise InputError(f"ClusterCatalog {meta.name}: {content.unattributed[0]}")
        self._loaded[meta.name] = (version, content)
        return content
