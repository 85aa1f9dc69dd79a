"""Object stores the webhook composes: manifests read from files, and layers of stores read as one.

A policy's params and lookups are served, in order, from the param objects given beside the policies, the
``--objects`` manifests, then the cluster cache; the first layer that has an object wins.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path

from webhook.errors import ManifestError
from webhook.manifests import iter_yaml_documents, read_text
from webhook.objects import KubeObject, LabelSelector, ObjectStore
from webhook.policy.documents import policy_files


def read_objects(path: Path) -> list[KubeObject]:
    """The manifests of a file, or of a directory's ``*.yaml|*.yml|*.json`` files (sorted, not recursive).

    Each document must be an object with ``apiVersion``, ``kind`` and ``metadata.name``; raises
    ``ManifestError`` ``<file>:<line>: ...`` otherwise, and ``PolicyLoadError`` for a missing path.
    """
    objects: list[KubeObject] = []
    for file in policy_files([path]):
        for document, line in iter_yaml_documents(read_text(file), str(file)):
            metadata = document.get("metadata") if isinstance(document, Mapping) else None
            if not (
                isinstance(document, Mapping)
                and isinstance(document.get("apiVersion"), str)
                and isinstance(document.get("kind"), str)
                and isinstance(metadata, Mapping)
                and isinstance(metadata.get("name"), str)
            ):
                raise ManifestError(f"{file}:{line}: an object needs apiVersion, kind and metadata.name")
            objects.append(document)
    return objects


class LayeredObjectStore:
    """An ``ObjectStore`` reading ``layers`` in order: ``get`` returns the first layer's object, ``list``
    merges every layer, the first layer winning for an object (namespace, name) found in several."""

    def __init__(self, layers: Iterable[ObjectStore]) -> None:
        self.layers = tuple(layers)

    def get(self, api_version: str, kind: str, name: str, namespace: str | None = None) -> KubeObject | None:
        """See ``ObjectStore.get``."""
        for layer in self.layers:
            found = layer.get(api_version, kind, name, namespace)
            if found is not None:
                return found
        return None

    def list(
        self,
        api_version: str,
        kind: str,
        namespace: str | None = None,
        selector: LabelSelector | None = None,
    ) -> list[KubeObject]:
        """See ``ObjectStore.list``."""
        merged: dict[tuple[str, str], KubeObject] = {}
        for layer in self.layers:
            for obj in layer.list(api_version, kind, namespace, selector):
                metadata = obj.get("metadata") or {}
                merged.setdefault((metadata.get("namespace") or "", metadata.get("name") or ""), obj)
        return [merged[key] for key in sorted(merged)]
