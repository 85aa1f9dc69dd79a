"""What the add-on planners share: the state of one add-on (``AddOnState``), the planning settings
(``AddOnContext``), a pinned field in a manifest (``Pin``), and how pins become edits and UPDATE requests.

The two planners are ``webhook.plan.addons`` (``installVersion``, the add-on installVersion lifecycle) and
``webhook.plan.addontemplates`` (AddOnTemplate references, as an upstream Open Cluster Management hub carries a
version). Pure: no I/O.
"""

from __future__ import annotations

import copy
import datetime
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from webhook.errors import ManifestError
from webhook.plan.actions import Action
from webhook.plan.extensions import AddOnUpdate, Outcome
from webhook.plan.manifests import MANAGED_ADDON_KIND, MANAGEMENT_ADDON_KIND, AddOnManifests, Document
from webhook.plan.yamledit import Path, ScalarEdit, line_of, render_path

SUBJECT_PREFIX = "addon/"
PLACEMENT_LABEL = "cluster.open-cluster-management.io/placement"
"""The label a PlacementDecision carries with its Placement's name (cluster.open-cluster-management.io/v1beta1)."""
PLACEMENTS: Path = ("spec", "installStrategy", "placements")


@dataclass(frozen=True, slots=True)
class AddOnState:
    """What the cluster (``source`` ``cluster``) or, offline, the repository's manifests (``status``) say about
    one add-on, objects shaped as OCM's API returns them:

    * ``management``: its ClusterManagementAddOn (``None`` when absent; ``status.supportedVersions``,
      ``defaultVersion`` and ``installProgressions`` are read from it);
    * ``decisions``: the PlacementDecisions of its canary placements; ``canaries``: its ManagedClusterAddOns on
      the clusters they decide, and ``works`` their ManifestWorks (label ``open-cluster-management.io/addon-name``),
      by cluster;
    * ``placements``: the PlacementDecisions of each of its placements, by ``NAMESPACE/NAME`` (the rollout plan);
    * ``templates``: the AddOnTemplates of this add-on (``spec.addonName``).
    """

    management: Mapping[str, Any] | None
    decisions: tuple[Mapping[str, Any], ...]
    canaries: tuple[Mapping[str, Any], ...]
    source: str
    works: Mapping[str, tuple[Mapping[str, Any], ...]] = field(default_factory=dict)
    placements: Mapping[str, tuple[Mapping[str, Any], ...]] = field(default_factory=dict)
    templates: tuple[Mapping[str, Any], ...] = ()

    @property
    def canary_clusters(self) -> tuple[str, ...]:
        """``status.decisions[].clusterName`` of the PlacementDecisions, sorted, without duplicates."""
        return decided_clusters(self.decisions)

    @property
    def objects(self) -> tuple[Mapping[str, Any], ...]:
        """Every object read, for the policy check's store: the ClusterManagementAddOn, the canary PlacementDecisions,
        ManagedClusterAddOns and ManifestWorks, and the AddOnTemplates."""
        found = (self.management, *self.decisions, *self.canaries)
        works = (work for items in self.works.values() for work in items)
        return (*(o for o in found if o is not None), *works, *self.templates)

    @property
    def status_from(self) -> str:
        """Where the status was read, for sentences: ``the cluster`` or ``the manifests' status``."""
        return "the cluster" if self.source == "cluster" else "the manifests' status"


@dataclass(frozen=True, slots=True)
class AddOnContext:
    """Planning settings: canary placements (``NAMESPACE/NAME``), soak, branch prefix, and now (aware UTC)."""

    canary_placements: tuple[str, ...]
    soak: datetime.timedelta
    branch_prefix: str
    now: datetime.datetime


@dataclass(frozen=True, slots=True)
class Pin:
    """One pinned field in a manifest: where (``placement ns/name``, ``cluster c``, ``default config``), its
    document and path, the ``value`` written there (an installVersion, or an AddOnTemplate's name) and the add-on
    ``version`` it stands for, and its placement (``ns/name``) or cluster."""

    where: str
    doc: Document
    path: Path
    value: str
    version: str
    placement: str | None = None
    cluster: str | None = None


class AddOnFieldError(ManifestError):
    """A field of an add-on manifest has the wrong shape: ``doc``, ``path`` (to the field) and the ``problem``
    (``must be a list``); ``outcome`` turns it into the add-on's ``invalid`` row with file and line."""

    def __init__(self, doc: Document, path: Path, problem: str) -> None:
        super().__init__(problem)
        self.doc, self.path, self.problem = doc, path, problem

    def outcome(self, subject: str, texts: Mapping[str, str]) -> Outcome:
        """The ``invalid`` outcome of ``subject``: ``<file>:<line>: <path> <problem>``."""
        line = line_of(texts[self.doc.file], self.doc.file, self.doc.line, self.path)
        reason = f"{self.doc.file}:{line}: {render_path(self.path)} {self.problem}"
        return Outcome(subject, Action.INVALID, reason, self.doc.file)


def addon_subject(name: str) -> str:
    """The report subject and branch suffix of an add-on: ``addon/<name>``."""
    return f"{SUBJECT_PREFIX}{name}"


def decided_clusters(decisions: Iterable[Mapping[str, Any]]) -> tuple[str, ...]:
    """The clusters PlacementDecisions decide (``status.decisions[].clusterName``), sorted, no duplicates."""
    found = {
        decision.get("clusterName")
        for item in decisions
        for decision in ((item.get("status") or {}).get("decisions") or ())
        if isinstance(decision, Mapping)
    }
    return tuple(sorted(c for c in found if isinstance(c, str) and c))


def placement_entries(addon: AddOnManifests, management: Mapping[str, Any] | None) -> list[Mapping[str, Any]]:
    """The ``spec.installStrategy.placements`` entries (mappings) of the add-on's manifest in Git, else of the
    cluster's object."""
    source = addon.management.manifest if addon.management is not None else management or {}
    placements = get(source, PLACEMENTS)
    return [entry for entry in placements if isinstance(entry, Mapping)] if isinstance(placements, list) else []


def placement_key(entry: Mapping[str, Any]) -> str:
    """``NAMESPACE/NAME`` of a placement entry."""
    return f"{entry.get('namespace') or ''}/{entry.get('name') or ''}"


def listed_canaries(
    addon: AddOnManifests, management: Mapping[str, Any] | None, configured: Sequence[str]
) -> tuple[str, ...]:
    """The ``configured`` canary placements (``NAMESPACE/NAME``) the add-on lists in
    ``spec.installStrategy.placements``: those of its manifest in Git, else of the cluster's object."""
    listed = {placement_key(entry) for entry in placement_entries(addon, management)}
    return tuple(c for c in configured if c in listed)


def placements_of(doc: Document) -> Iterator[tuple[Path, str]]:
    """The path and ``NAMESPACE/NAME`` of each ``spec.installStrategy.placements`` entry of the ClusterManagementAddOn
    manifest ``doc``, in spec order. Raises ``AddOnFieldError`` for a list or an entry of the wrong shape."""
    for index, entry in enumerate(typed(doc, PLACEMENTS, list) or ()):
        path = (*PLACEMENTS, index)
        if not isinstance(entry, Mapping) or not isinstance(entry.get("name"), str) or not entry["name"]:
            raise AddOnFieldError(doc, path, "must be a mapping with a name")
        yield path, placement_key(entry)


def typed(doc: Document, path: Path, kind: type) -> Any:
    """The value at ``path`` (``None`` when absent or null); raises ``AddOnFieldError`` when a part on the way is
    not a mapping or the value is not ``kind``."""
    value: Any = doc.manifest
    for depth, part in enumerate(path):
        if isinstance(part, int):
            value = value[part]
            continue
        if not isinstance(value, Mapping):
            raise AddOnFieldError(doc, path[:depth], "must be a mapping")
        value = value.get(part)
        if value is None:
            return None
    if not isinstance(value, kind):
        names: dict[object, str] = {list: "a list", Mapping: "a mapping", str: "a string"}
        raise AddOnFieldError(doc, path, f"must be {names.get(kind, kind.__name__)}")
    return value


def edits(moving: Sequence[Pin], value: str) -> dict[str, list[ScalarEdit]]:
    """The scalar edits, by file, that set every ``moving`` pin to ``value``."""
    per_file: dict[str, list[ScalarEdit]] = {}
    for pin in moving:
        per_file.setdefault(pin.doc.file, []).append(ScalarEdit(pin.doc.line, pin.path, value))
    return per_file


def updates(addon: AddOnManifests, state: AddOnState, moving: Sequence[Pin], value: str) -> tuple[AddOnUpdate, ...]:
    """The UPDATE requests the change makes once applied: the ClusterManagementAddOn (with the status the
    addon manager wrote, which an UPDATE keeps) if a placement or its default config moves, and each moving
    ManagedClusterAddOn, every ``moving`` pin set to ``value``."""
    found = []
    paths_of: dict[int, list[Path]] = {}
    for pin in moving:
        paths_of.setdefault(id(pin.doc), []).append(pin.path)
    for doc in (*([addon.management] if addon.management else []), *addon.managed):
        paths = paths_of.get(id(doc))
        if not paths:
            continue
        old = dict(doc.manifest)
        if doc.manifest["kind"] == MANAGEMENT_ADDON_KIND and state.management and "status" in state.management:
            old["status"] = state.management["status"]
        new = copy.deepcopy(old)
        for path in paths:
            get(new, path[:-1])[path[-1]] = value
        metadata = doc.manifest["metadata"]
        namespace = (metadata.get("namespace") or "") if doc.manifest["kind"] == MANAGED_ADDON_KIND else ""
        found.append(AddOnUpdate(doc.manifest["kind"], metadata["name"], namespace, old, new))
    return tuple(found)


def get(data: Any, path: Path) -> Any:
    """The value at ``path`` in JSON-shaped ``data``, ``None`` where the path does not lead."""
    for part in path:
        if isinstance(part, int):
            data = data[part] if isinstance(data, list) and part < len(data) else None
        else:
            data = data.get(part) if isinstance(data, Mapping) else None
    return data
