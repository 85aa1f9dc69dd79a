"""The repository's manifests: ClusterExtensions, ClusterCatalogs and add-ons (ClusterManagementAddOn,
ManagedClusterAddOn, PlacementDecision) read, ClusterExtensionRevisions read and written.

Reading never stops at a bad file: each invalid file or document becomes a ``Problem`` (file, line, reason)
and the others are read. Revision manifests are written in one deterministic shape (the lifecycle's fields, this
key order, every string double-quoted) so that the same proposal always gives the same bytes. Owner
references to the ClusterExtension are not written: Git has no uid for them (see README, ``sync``).
"""

from __future__ import annotations

import datetime
import json
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from webhook.errors import ManifestError
from webhook.manifests import iter_yaml_documents, manifest_files, read_text
from webhook.ocm import TEMPLATE_KIND
from webhook.olm import API_VERSION, ClusterExtension, RevisionProposal

REVISION_KIND = "ClusterExtensionRevision"
EXTENSION_LABEL = "clusterextension"
MANAGEMENT_ADDON_KIND = "ClusterManagementAddOn"
MANAGED_ADDON_KIND = "ManagedClusterAddOn"
PLACEMENT_DECISION_KIND = "PlacementDecision"


@dataclass(frozen=True, slots=True)
class Problem:
    """A file (repository-relative) that could not be used, and why; ``line`` is 0 when unknown."""

    file: str
    line: int
    reason: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.reason}" if self.line else f"{self.file}: {self.reason}"


@dataclass(frozen=True, slots=True)
class Document:
    """One manifest of the kind asked for: its repository-relative file, start line and content."""

    file: str
    line: int
    manifest: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class Documents:
    """Every manifest of one kind found under some patterns, and the problems met on the way."""

    documents: tuple[Document, ...]
    problems: tuple[Problem, ...]


@dataclass(frozen=True, slots=True)
class ExtensionEntry:
    """A ClusterExtension read from the repository, with where it was found."""

    extension: ClusterExtension
    file: str


@dataclass(frozen=True, slots=True)
class AddOnManifests:
    """One add-on's manifests in the repository: its ClusterManagementAddOn (``None`` when only
    ManagedClusterAddOns name it) and its ManagedClusterAddOns, sorted by namespace (the cluster)."""

    name: str
    management: Document | None
    managed: tuple[Document, ...]

    @property
    def files(self) -> tuple[str, ...]:
        """The files its manifests are in, sorted."""
        docs = (*([self.management] if self.management else []), *self.managed)
        return tuple(sorted({doc.file for doc in docs}))


@dataclass(frozen=True, slots=True)
class AddOnDocuments:
    """The add-ons under some patterns (sorted by name), the PlacementDecision and AddOnTemplate manifests found
    beside them, and the problems met on the way."""

    addons: tuple[AddOnManifests, ...]
    decisions: tuple[Document, ...]
    problems: tuple[Problem, ...]
    templates: tuple[Document, ...] = ()


@dataclass(frozen=True, slots=True)
class RevisionFile:
    """A ClusterExtensionRevision manifest in the repository (one per file, as the sync loop writes them)."""

    file: str
    name: str
    extension: str
    version: str
    available_since: str
    approved: bool


def matching_files(root: Path, patterns: Iterable[str]) -> list[str]:
    """Repository-relative files for ``patterns``: a directory gives every manifest file below it, a glob
    its matches, a file itself. Sorted, without duplicates; a pattern matching nothing gives nothing."""
    found: set[Path] = set()
    for pattern in patterns:
        if any(c in pattern for c in "*?["):
            found.update(p for p in root.glob(pattern) if p.is_file())
            continue
        path = root / pattern
        if path.is_dir():
            found.update(manifest_files(path))
        elif path.is_file():
            found.add(path)
    return sorted(_relative(p, root) for p in found)


def read_documents(root: Path, files: Iterable[str], kind: str | Collection[str]) -> Documents:
    """Every manifest of ``kind`` (one, or a collection of kinds) in ``files``; other kinds are ignored,
    unreadable files are problems."""
    kinds = {kind} if isinstance(kind, str) else set(kind)
    documents: list[Document] = []
    problems: list[Problem] = []
    for file in files:
        try:
            for document, line in iter_yaml_documents(read_text(root / file), file):
                if isinstance(document, Mapping) and document.get("kind") in kinds:
                    documents.append(Document(file, line, document))
        except ManifestError as error:
            line, reason = _located(_strip_file(str(error), file))
            problems.append(Problem(file, line, reason))
    return Documents(tuple(documents), tuple(problems))


def read_extensions(root: Path, patterns: Iterable[str]) -> tuple[list[ExtensionEntry], list[Problem]]:
    """The ClusterExtensions under ``patterns``; invalid ones and duplicate names are problems."""
    found = read_documents(root, matching_files(root, patterns), "ClusterExtension")
    problems = list(found.problems)
    entries: dict[str, ExtensionEntry] = {}
    for doc in found.documents:
        try:
            extension = ClusterExtension.from_manifest(doc.manifest, f"{doc.file}:{doc.line}")
        except ManifestError as error:
            problems.append(Problem(doc.file, doc.line, _strip_file(str(error), f"{doc.file}:{doc.line}")))
            continue
        if extension.name in entries:
            problems.append(
                Problem(
                    doc.file, doc.line, f"ClusterExtension {extension.name} is also in {entries[extension.name].file}"
                )
            )
            continue
        entries[extension.name] = ExtensionEntry(extension, doc.file)
    return [entries[name] for name in sorted(entries)], problems


def read_addons(root: Path, patterns: Iterable[str]) -> AddOnDocuments:
    """The ClusterManagementAddOns, ManagedClusterAddOns, PlacementDecisions and AddOnTemplates under
    ``patterns``, grouped by add-on (a ManagedClusterAddOn is named after its ClusterManagementAddOn, as in OCM).
    A manifest without ``metadata.name`` (and, but for the cluster-scoped ClusterManagementAddOn and
    AddOnTemplate, ``metadata.namespace``) and a second manifest of the same object are problems."""
    kinds = (MANAGEMENT_ADDON_KIND, MANAGED_ADDON_KIND, PLACEMENT_DECISION_KIND, TEMPLATE_KIND)
    found = read_documents(root, matching_files(root, patterns), kinds)
    problems = list(found.problems)
    seen: dict[tuple[str, str, str], Document] = {}
    for doc in found.documents:
        metadata = doc.manifest.get("metadata")
        metadata = metadata if isinstance(metadata, Mapping) else {}
        kind, name, namespace = doc.manifest["kind"], metadata.get("name"), metadata.get("namespace")
        namespaced = kind not in (MANAGEMENT_ADDON_KIND, TEMPLATE_KIND)
        if not isinstance(name, str) or not name or (namespaced and (not isinstance(namespace, str) or not namespace)):
            needs = "metadata.name and metadata.namespace" if namespaced else "metadata.name"
            problems.append(Problem(doc.file, doc.line, f"a {kind} needs {needs}"))
            continue
        shape = _addon_shape(doc.manifest)
        if shape is not None:
            problems.append(Problem(doc.file, doc.line, shape))
            continue
        key = (str(kind), str(namespace) if namespaced else "", name)
        if key in seen:
            where = f"{namespace}/{name}" if namespaced else name
            problems.append(Problem(doc.file, doc.line, f"{kind} {where} is also in {seen[key].file}"))
            continue
        seen[key] = doc
    managed: dict[str, list[Document]] = {}
    decisions, templates = [], []
    for (kind, _, name), doc in sorted(seen.items()):
        if kind == MANAGED_ADDON_KIND:
            managed.setdefault(name, []).append(doc)
        elif kind == PLACEMENT_DECISION_KIND:
            decisions.append(doc)
        elif kind == TEMPLATE_KIND:
            templates.append(doc)
    names = sorted({name for kind, _, name in seen if kind in (MANAGEMENT_ADDON_KIND, MANAGED_ADDON_KIND)})
    addons = tuple(
        AddOnManifests(name, seen.get((MANAGEMENT_ADDON_KIND, "", name)), tuple(managed.get(name, ())))
        for name in names
    )
    return AddOnDocuments(addons, tuple(decisions), tuple(problems), tuple(templates))


_LISTS = {MANAGED_ADDON_KIND: "conditions", PLACEMENT_DECISION_KIND: "decisions"}


def _addon_shape(manifest: Mapping[str, Any]) -> str | None:
    """What is of the wrong shape in an add-on object for the lookups made on it (labels, status, and the status
    list of its kind: a ManagedClusterAddOn's conditions, a PlacementDecision's decisions), or ``None``."""
    labels = manifest["metadata"].get("labels")
    if labels is not None and not isinstance(labels, Mapping):
        return "metadata.labels must be a mapping"
    status = manifest.get("status")
    if status is None:
        return None
    if not isinstance(status, Mapping):
        return "status must be a mapping"
    field = _LISTS.get(str(manifest["kind"]))
    items = status.get(field) if field else None
    if items is not None and (not isinstance(items, list) or not all(isinstance(i, Mapping) for i in items)):
        return f"status.{field} must be a list of mappings"
    for key in ("supportedVersions", "defaultVersion") if manifest["kind"] == MANAGEMENT_ADDON_KIND else ():
        value = status.get(key)
        strings = value if isinstance(value, list) else [value] if key == "defaultVersion" else None
        if value is not None and (strings is None or not all(isinstance(v, str) for v in strings)):
            return f"status.{key} must be {'a string or ' if key == 'defaultVersion' else ''}a list of strings"
    return None


def read_revisions(root: Path, directory: str) -> tuple[list[RevisionFile], list[Problem]]:
    """The ClusterExtensionRevisions under ``directory``; a file must hold exactly one."""
    found = read_documents(root, matching_files(root, [directory]), REVISION_KIND)
    problems = list(found.problems)
    per_file: dict[str, list[Document]] = {}
    for doc in found.documents:
        per_file.setdefault(doc.file, []).append(doc)
    revisions = []
    for file, docs in sorted(per_file.items()):
        if len(docs) > 1:
            problems.append(Problem(file, docs[1].line, f"more than one {REVISION_KIND} in one file"))
            continue
        try:
            revisions.append(parse_revision(file, docs[0].manifest))
        except ManifestError as error:
            problems.append(Problem(file, docs[0].line, str(error)))
    return revisions, problems


def parse_revision(file: str, manifest: Mapping[str, Any]) -> RevisionFile:
    """A ClusterExtensionRevision's identity and state; raises ``ManifestError`` naming the missing field."""
    metadata = manifest.get("metadata") or {}
    spec = manifest.get("spec") or {}
    ref = spec.get("clusterExtensionRef") or {}
    labels = metadata.get("labels") or {}
    extension = ref.get("name") or labels.get(EXTENSION_LABEL)
    values = {
        "metadata.name": metadata.get("name"),
        "spec.clusterExtensionRef.name": extension,
        "spec.version": spec.get("version"),
    }
    for key, value in values.items():
        if not isinstance(value, str) or not value:
            raise ManifestError(f"{key} must be a non-empty string")
    since = spec.get("availableSince", "")
    return RevisionFile(
        file=file,
        name=str(values["metadata.name"]),
        extension=str(extension),
        version=str(values["spec.version"]),
        available_since=since if isinstance(since, str) else str(since),
        approved=spec.get("approved") is True,
    )


def rfc3339(moment: datetime.datetime) -> str:
    """``moment`` in UTC as RFC 3339 with seconds and ``Z`` (``metav1.Time``'s format)."""
    return moment.astimezone(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def render_revision(proposal: RevisionProposal, available_since: str, *, approved: bool = False) -> str:
    """The ClusterExtensionRevision manifest proposing ``proposal``, ``approved: false`` (``true`` when the sync
    loop's automerge approves it).

    ``available_since`` is RFC 3339 UTC. The same arguments always give the same text.
    """
    q = json.dumps
    return (
        f"apiVersion: {API_VERSION}\n"
        f"kind: {REVISION_KIND}\n"
        "metadata:\n"
        f"  name: {q(proposal.name)}\n"
        "  labels:\n"
        f"    {EXTENSION_LABEL}: {q(proposal.extension)}\n"
        "spec:\n"
        "  clusterExtensionRef:\n"
        f"    name: {q(proposal.extension)}\n"
        f"  version: {q(proposal.version)}\n"
        "  bundleMetadata:\n"
        f"    name: {q(proposal.bundle_name)}\n"
        f"    version: {q(proposal.version)}\n"
        f"  availableSince: {q(available_since)}\n"
        f"  approved: {'true' if approved else 'false'}\n"
    )


def revision_path(directory: str, name: str) -> str:
    """Where the revision ``name`` is written: ``<directory>/<name>.yaml`` (repository-relative, POSIX)."""
    return f"{directory.strip('/')}/{name}.yaml"


def _relative(path: Path, root: Path) -> str:
    return path.relative_to(root).as_posix()


def _located(message: str) -> tuple[int, str]:
    """``"<line>: <reason>"`` split into its line and reason (line 0 when the message has none)."""
    line, sep, reason = message.partition(": ")
    return (int(line), reason) if sep and line.isdigit() else (0, message)


def _strip_file(message: str, prefix: str) -> str:
    return message.removeprefix(f"{prefix}:").strip()
