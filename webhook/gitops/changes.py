"""What a change does to the governed objects of a GitOps repository: the objects two file trees hold and the
CREATE, UPDATE and DELETE requests applying one over the other makes.

An object is keyed by apiVersion, kind, namespace and name, never by its file: moving an object to another file
changes nothing in the cluster. Governed kinds are the ones upgrade-gate's policies decide:
ClusterExtensionRevision, ClusterExtension, ClusterCatalog, ManagedClusterAddOn and ClusterManagementAddOn.
Pure: file texts in, objects and changes out.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from webhook.errors import ManifestError
from webhook.gitops.manifests import Problem
from webhook.gitops.requests import storable
from webhook.manifests import MANIFEST_SUFFIXES, iter_yaml_documents

GOVERNED_KINDS = (
    "ClusterExtensionRevision",
    "ClusterExtension",
    "ClusterCatalog",
    "ManagedClusterAddOn",
    "ClusterManagementAddOn",
)

Key = tuple[str, str, str, str]
"""apiVersion, kind, namespace (empty when cluster-scoped), name."""


@dataclass(frozen=True, slots=True)
class Manifest:
    """One Kubernetes object of a file tree: its repository-relative file, start line and content."""

    file: str
    line: int
    object: Mapping[str, Any]

    @property
    def key(self) -> Key:
        """apiVersion, kind, namespace, name."""
        metadata = self.object["metadata"]
        return (
            str(self.object["apiVersion"]),
            str(self.object["kind"]),
            str(metadata.get("namespace") or ""),
            str(metadata["name"]),
        )

    @property
    def where(self) -> str:
        """``file:line``."""
        return f"{self.file}:{self.line}"


@dataclass(frozen=True, slots=True)
class Manifests:
    """The objects of some files, and the documents that are not Kubernetes objects (or not YAML)."""

    objects: tuple[Manifest, ...]
    problems: tuple[Problem, ...]


@dataclass(frozen=True, slots=True)
class ObjectChange:
    """A request applying the change makes: ``CREATE`` (``new`` only), ``UPDATE`` or ``DELETE`` (``old`` only);
    ``MOVE`` is an unchanged object in another file (no request)."""

    operation: str
    old: Manifest | None
    new: Manifest | None

    @property
    def subject(self) -> Manifest:
        """The manifest the change is reported at: the new one, else the old."""
        found = self.new or self.old
        assert found is not None  # every change has one side
        return found


def describe(key: Key) -> str:
    """``Kind namespace/name`` or ``Kind name``."""
    _, kind, namespace, name = key
    return f"{kind} {namespace}/{name}" if namespace else f"{kind} {name}"


def matching(paths: Iterable[str], patterns: Iterable[str]) -> list[str]:
    """The paths of a tree that ``patterns`` name, as ``webhook.gitops.manifests.matching_files`` reads a
    working tree: a directory gives every manifest file below it, a glob (``*``, ``?``, ``[...]``, ``**``) its
    matches, a file itself. Sorted."""
    paths = list(paths)
    found: set[str] = set()
    for pattern in (p.strip("/") for p in patterns):
        if any(c in pattern for c in "*?["):
            regex = _glob(pattern)
            found.update(p for p in paths if regex.fullmatch(p))
            continue
        found.update(
            p for p in paths if p == pattern or (p.startswith(f"{pattern}/") and p.endswith(MANIFEST_SUFFIXES))
        )
    return sorted(found)


def read_manifests(texts: Mapping[str, str]) -> Manifests:
    """Every Kubernetes object (a mapping with apiVersion, kind and metadata.name) in ``texts``
    (``{file: text}``); an invalid file, a document without apiVersion or kind, or a governed object without a
    name is a problem, the rest still read. Other documents without a name (a kustomization) are left out."""
    objects: list[Manifest] = []
    problems: list[Problem] = []
    for file, text in sorted(texts.items()):
        try:
            for document, line in iter_yaml_documents(text, file):
                if isinstance(document, Mapping) and storable(document):
                    objects.append(Manifest(file, line, document))
                elif not isinstance(document, Mapping) or not document.get("apiVersion") or not document.get("kind"):
                    problems.append(Problem(file, line, "not a Kubernetes object (apiVersion, kind, metadata.name)"))
                elif document.get("kind") in GOVERNED_KINDS:
                    problems.append(Problem(file, line, f"a {document['kind']} without metadata.name"))
        except ManifestError as error:
            located = re.match(rf"{re.escape(file)}:(\d+): (.*)", str(error), re.DOTALL)
            line, reason = (int(located.group(1)), located.group(2)) if located else (0, str(error))
            problems.append(Problem(file, line, reason))
    return Manifests(tuple(objects), tuple(problems))


def object_changes(base: Iterable[Manifest], head: Iterable[Manifest]) -> tuple[list[ObjectChange], list[Problem]]:
    """The requests that applying ``head`` over ``base`` makes for governed objects, in the order Argo CD and
    Flux apply them: creates and updates (by file and line), then the prune of deleted objects (by their base
    file and line); unchanged objects in another file are ``MOVE``. An object given twice at head is a problem."""
    old = {m.key: m for m in base if m.object.get("kind") in GOVERNED_KINDS}
    new: dict[Key, Manifest] = {}
    problems = []
    for manifest in head:
        if manifest.object.get("kind") not in GOVERNED_KINDS:
            continue
        if manifest.key in new:
            first = new[manifest.key].where
            problems.append(Problem(manifest.file, manifest.line, f"{describe(manifest.key)} is also in {first}"))
            continue
        new[manifest.key] = manifest
    applied = []
    for key, manifest in new.items():
        before = old.get(key)
        if before is None:
            applied.append(ObjectChange("CREATE", None, manifest))
        elif before.object != manifest.object:
            applied.append(ObjectChange("UPDATE", before, manifest))
        elif before.file != manifest.file:
            applied.append(ObjectChange("MOVE", before, manifest))
    pruned = [ObjectChange("DELETE", manifest, None) for key, manifest in old.items() if key not in new]
    applied.sort(key=lambda c: (c.subject.file, c.subject.line))
    pruned.sort(key=lambda c: (c.subject.file, c.subject.line))
    return [*applied, *pruned], problems


def _glob(pattern: str) -> re.Pattern[str]:
    """A path glob as ``pathlib.Path.glob`` reads it: ``**/`` any directories, ``*`` and ``?`` within one."""
    out = ""
    index = 0
    while index < len(pattern):
        if pattern.startswith("**/", index):
            out, index = out + "(?:[^/]+/)*", index + 3
        elif pattern.startswith("**", index):
            out, index = out + ".*", index + 2
        elif pattern[index] == "*":
            out, index = out + "[^/]*", index + 1
        elif pattern[index] == "?":
            out, index = out + "[^/]", index + 1
        elif pattern[index] == "[" and "]" in pattern[index + 1 :]:
            end = pattern.index("]", index + 1)
            out, index = out + "[" + pattern[index + 1 : end].replace("!", "^", 1) + "]", end + 1
        else:
            out, index = out + re.escape(pattern[index]), index + 1
    return re.compile(out)
