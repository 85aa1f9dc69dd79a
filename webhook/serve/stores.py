"""The objects the webhook composes its store from: manifests read from files (``webhook.objects`` layers them).

A policy's params and lookups are served, in order, from the cluster cache (when a cluster is watched: the
cluster's objects, the settings ConfigMap included, are authoritative, as they are to the API server), the param
objects given beside the policies, then the ``--objects`` manifests; the first layer that has an object wins.
Without a cluster, or for an object the cluster lacks, the files beside the policies are the defaults.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from webhook.errors import ManifestError
from webhook.manifests import iter_yaml_documents, read_text
from webhook.objects import KubeObject
from webhook.policy import policy_files


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
