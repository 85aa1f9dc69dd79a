"""The object store policies look cluster objects up in, injected into the engine (never imported by it).

``ObjectStore`` is the protocol; ``webhook.kube`` implements it over a watch cache of a real cluster, and
``InMemoryObjectStore`` implements it over manifests (tests, ``policy test``, ``serve --objects DIR``).
Objects are plain JSON-shaped mappings as the Kubernetes API returns them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Protocol

from webhook.labels import LabelSelector

KubeObject = Mapping[str, Any]
_Key = tuple[str, str, str, str]  # (apiVersion, kind, namespace or "", name)


class ObjectStore(Protocol):
    """Read-only lookups of cluster objects by apiVersion and kind (``v1``, ``group/version``)."""

    def get(self, api_version: str, kind: str, name: str, namespace: str | None = None) -> KubeObject | None:
        """The object, or ``None`` if there is none. ``namespace=None`` means a cluster-scoped object."""
        ...

    def list(
        self,
        api_version: str,
        kind: str,
        namespace: str | None = None,
        selector: LabelSelector | None = None,
    ) -> list[KubeObject]:
        """Objects of the kind, in one namespace (or all when ``None``), matching ``selector``.

        Sorted by (namespace, name) so callers are deterministic.
        """
        ...


class InMemoryObjectStore:
    """An ``ObjectStore`` over a fixed set of manifests (dicts with apiVersion, kind, metadata.name)."""

    def __init__(self, objects: Iterable[KubeObject] = ()) -> None:
        self._objects: dict[_Key, KubeObject] = {}
        for obj in objects:
            self.add(obj)

    def add(self, obj: KubeObject) -> None:
        """Insert or replace ``obj``; raises ``ValueError`` if it lacks apiVersion, kind or metadata.name."""
        metadata = obj.get("metadata") or {}
        api_version, kind, name = obj.get("apiVersion"), obj.get("kind"), metadata.get("name")
        if not (isinstance(api_version, str) and isinstance(kind, str) and isinstance(name, str)):
            raise ValueError("an object needs apiVersion, kind and metadata.name")
        self._objects[(api_version, kind, metadata.get("namespace") or "", name)] = obj

    def get(self, api_version: str, kind: str, name: str, namespace: str | None = None) -> KubeObject | None:
        """See ``ObjectStore.get``."""
        return self._objects.get((api_version, kind, namespace or "", name))

    def list(
        self,
        api_version: str,
        kind: str,
        namespace: str | None = None,
        selector: LabelSelector | None = None,
    ) -> list[KubeObject]:
        """See ``ObjectStore.list``."""
        found = [
            (key, obj)
            for key, obj in self._objects.items()
            if key[0] == api_version
            and key[1] == kind
            and (namespace is None or key[2] == namespace)
            and (selector is None or selector.matches((obj.get("metadata") or {}).get("labels")))
        ]
        return [obj for _, obj in sorted(found, key=lambda item: (item[0][2], item[0][3]))]

    def __len__(self) -> int:
        return len(self._objects)
