"""The pure core of add-on proposals: installVersion upgrades, canary placements first. No I/O.

For one add-on (its ClusterManagementAddOn and ManagedClusterAddOns in Git, ``AddOnManifests``) and what the
cluster, or offline the manifests' status, says about it (``AddOnState``), ``plan_addon`` decides:

* **target** — the newest of the ClusterManagementAddOn's ``status.supportedVersions`` that
  ``webhook.ocm.addons.AddOnVersions.validate`` accepts (a listed string that parses as an add-on version), by
  ``parse_addon_version`` precedence. An add-on that publishes no supportedVersions (upstream OCM) gets nothing.
* **what moves** — only an installVersion a human pinned: a placement's ``addonTemplate.installVersion`` and a
  ManagedClusterAddOn's ``spec.installVersion``, and only forward (``classify`` says Upgrading). An unset
  installVersion follows ``defaultVersion`` ("Auto upgrade": the addon manager moves it) and is never
  added; a pin at the target, above it, or that is not a version is left to its owner (a rollback needs an
  acknowledgement, the add-on installVersion lifecycle, "Rollback"); configs and every other field are never touched.
* **canary first** — when the add-on lists one of the configured canary placements (``NAMESPACE/NAME``) in
  ``spec.installStrategy.placements``, that placement and the ManagedClusterAddOns on the clusters its
  PlacementDecisions decide are canaries and move at once; every other pin moves only when
  ``webhook.ocm.addons.canary_gate`` allows the target (every canary ManagedClusterAddOn runs it, ``Progressing``
  reason ``Succeed``, for the soak), else it is **held** and the outcome says the gate's message and when the
  soak ends. An add-on without a canary placement is not gated (as the bundled policies decide).

One ``Change`` (kind ``addon-version``) per add-on on branch ``<branchPrefix>addon/<name>``, editing only the
pinned scalars (``webhook.plan.yamledit``); titles say the stage (``... on its canaries``), so a pull request
closed unmerged blocks that stage only. A manifest that cannot be read or edited skips its add-on, naming file
and line.
"""

from __future__ import annotations

import copy
import datetime
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from webhook.conditions import format_duration, format_time
from webhook.errors import InputError, ManifestError
from webhook.ocm import (
    AddOnVersions,
    CanaryVerdict,
    Observation,
    VersionChange,
    canary_gate,
    classify,
    parse_addon_version,
)
from webhook.plan.actions import Action, Kind
from webhook.plan.extensions import (
    AddOnFacts,
    AddOnMove,
    AddOnUpdate,
    Change,
    FileChange,
    Outcome,
    Planned,
    branch_name,
)
from webhook.plan.manifests import MANAGED_ADDON_KIND, MANAGEMENT_ADDON_KIND, AddOnManifests, Document
from webhook.plan.yamledit import Path, ScalarEdit, line_of, render_path, set_scalars

SUBJECT_PREFIX = "addon/"
PLACEMENT_LABEL = "cluster.open-cluster-management.io/placement"
"""The label a PlacementDecision carries with its Placement's name (cluster.open-cluster-management.io/v1beta1)."""
_PLACEMENTS: Path = ("spec", "installStrategy", "placements")


@dataclass(frozen=True, slots=True)
class AddOnState:
    """What the cluster (``source`` ``cluster``) or, offline, the repository's manifests (``status``) say about
    one add-on: its ClusterManagementAddOn (``None`` when absent; ``status.supportedVersions`` and
    ``defaultVersion`` are read from it), the PlacementDecisions of its canary placements, and its
    ManagedClusterAddOns on the clusters they decide. Objects are shaped as OCM's API returns them."""

    management: Mapping[str, Any] | None
    decisions: tuple[Mapping[str, Any], ...]
    canaries: tuple[Mapping[str, Any], ...]
    source: str

    @property
    def canary_clusters(self) -> tuple[str, ...]:
        """``status.decisions[].clusterName`` of the PlacementDecisions, sorted, without duplicates."""
        return decided_clusters(self.decisions)

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
class _Pin:
    """One pinned installVersion in a manifest: where (``placement ns/name`` or ``cluster c``), its document and
    path, the version, and its placement (``ns/name``) or cluster."""

    where: str
    doc: Document
    path: Path
    version: str
    placement: str | None = None
    cluster: str | None = None


class _Invalid(Exception):
    def __init__(self, doc: Document, path: Path, problem: str) -> None:
        super().__init__(problem)
        self.doc, self.path, self.problem = doc, path, problem


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


def listed_canaries(
    addon: AddOnManifests, management: Mapping[str, Any] | None, configured: Sequence[str]
) -> tuple[str, ...]:
    """The ``configured`` canary placements (``NAMESPACE/NAME``) the add-on lists in
    ``spec.installStrategy.placements``: those of its manifest in Git, else of the cluster's object."""
    source = addon.management.manifest if addon.management is not None else management or {}
    listed = set()
    placements = _get(source, _PLACEMENTS)
    for entry in placements if isinstance(placements, list) else ():
        if isinstance(entry, Mapping):
            listed.add(f"{entry.get('namespace') or ''}/{entry.get('name') or ''}")
    return tuple(c for c in configured if c in listed)


def plan_addon(addon: AddOnManifests, texts: Mapping[str, str], state: AddOnState, context: AddOnContext) -> Planned:
    """The next installVersion step of the add-on installVersion lifecycle for one add-on (see the module docstring).

    ``texts`` holds the text of every file in ``addon.files``. Returns a ``Change``, or an ``Outcome``:
    ``unchanged`` (nothing pinned, no supportedVersions, every pin at the target), ``held`` (only pins that wait
    for the canaries; ``ready_at`` when the soak ends), ``invalid`` (a manifest or status that cannot be used,
    with ``file:line``), ``unresolved`` (its ClusterManagementAddOn is missing).
    """
    subject = addon_subject(addon.name)
    try:
        pins = _pins(addon)
    except _Invalid as invalid:
        doc = invalid.doc
        line = line_of(texts[doc.file], doc.file, doc.line, invalid.path)
        reason = f"{doc.file}:{line}: {render_path(invalid.path)} {invalid.problem}"
        return Outcome(subject, Action.INVALID, reason, doc.file)
    if not pins:
        return Outcome(subject, Action.UNCHANGED, "no installVersion is pinned: the add-on follows its defaultVersion")
    if state.management is None:
        where = "in the cluster" if state.source == "cluster" else "in the repository"
        reason = f"ClusterManagementAddOn {addon.name} is not {where}: its supported versions are unknown"
        return Outcome(subject, Action.UNRESOLVED, reason, addon.files[0])
    try:
        versions = AddOnVersions.from_status(state.management.get("status"))
    except InputError as error:
        reason = f"ClusterManagementAddOn {addon.name} status in {state.status_from}: {error}"
        return Outcome(subject, Action.INVALID, reason, addon.files[0])
    valid = [v for v in versions.supported if versions.validate(v) is None]
    if not valid:
        listed = ", ".join(versions.supported) or "none"
        reason = f"ClusterManagementAddOn {addon.name} supports no version to upgrade to (supportedVersions: {listed})"
        return Outcome(subject, Action.UNCHANGED, reason)
    target = max(valid, key=parse_addon_version)
    behind = [pin for pin in pins if pin.version != target and _moves_forward(pin.version, target)]
    if not behind:
        return Outcome(
            subject, Action.UNCHANGED, f"every pinned installVersion is at or past {target}, the newest supported"
        )
    return _stage(addon, texts, state, context, versions=versions, target=target, behind=behind)


def _stage(
    addon: AddOnManifests,
    texts: Mapping[str, str],
    state: AddOnState,
    context: AddOnContext,
    *,
    versions: AddOnVersions,
    target: str,
    behind: Sequence[_Pin],
) -> Planned:
    """The canary stage: canaries (and, once the gate allows, the others) move; the rest are held."""
    subject = addon_subject(addon.name)
    canaries = listed_canaries(addon, state.management, context.canary_placements)
    clusters = set(state.canary_clusters)
    verdict: CanaryVerdict | None = None
    if canaries:
        try:
            observed = [Observation.of_install_version(item) for item in state.canaries]
        except InputError as error:
            return Outcome(subject, Action.INVALID, f"a canary ManagedClusterAddOn in {state.status_from}: {error}")
        verdict = canary_gate(target, observed, soak=context.soak, now=context.now)
    canary = {id(pin) for pin in behind if pin.placement in canaries or pin.cluster in clusters}
    free = verdict is None or verdict.allowed  # no canary stage, or the canaries have soaked
    moving = [pin for pin in behind if free or id(pin) in canary]
    held = [pin for pin in behind if not (free or id(pin) in canary)]
    waits = ""
    if verdict is not None:
        verb = "waits" if len(held) == 1 else "wait"
        placements = ", ".join(canaries)
        waits = f"{', '.join(p.where for p in held)} {verb} for the canary placement {placements}: {verdict.message}"
    ready_at = format_time(verdict.ready_at) if verdict is not None and verdict.ready_at else None
    if not moving:
        return Outcome(subject, Action.HELD, waits, ready_at=ready_at)
    files: dict[str, str] = {}
    for file, edits in _edits(moving, target).items():
        try:
            files[file] = set_scalars(texts[file], file, edits)
        except ManifestError as error:
            return Outcome(subject, Action.INVALID, str(error), file)
    moves = tuple(AddOnMove(p.where, p.doc.file, p.version, id(p) in canary) for p in moving)
    sentence = "; ".join(
        [
            f"{target} is the newest supported version ({', '.join(versions.supported)}, from {state.status_from})",
            "moves " + ", ".join(f"{m.where}{' (canary)' if m.canary else ''} from {m.from_version}" for m in moves),
            *([waits] if held else []),
        ]
    )
    facts = AddOnFacts(
        addon=addon.name,
        version=target,
        supported=versions.supported,
        default=versions.default,
        status_from=state.status_from,
        moves=moves,
        held=tuple(AddOnMove(p.where, p.doc.file, p.version, False) for p in held),
        canary=_gate(canaries, target, context.soak, verdict) if verdict else _ungated(context.canary_placements),
        ready_at=ready_at,
        updates=_updates(addon, state, moving, target),
        objects=tuple(o for o in (state.management, *state.decisions, *state.canaries) if o is not None),
    )
    stage = " on its canaries" if all(m.canary for m in moves) else ""
    return Change(
        subject=subject,
        kind=Kind.ADDON_VERSION,
        branch=branch_name(context.branch_prefix, subject),
        title=f"Upgrade add-on {addon.name} to {target}{stage}",
        files=tuple(FileChange(path, text) for path, text in sorted(files.items())),
        from_version=", ".join(sorted({m.from_version for m in moves}, key=parse_addon_version)),
        to_version=target,
        reason=sentence + ".",
        addon=facts,
    )


def _moves_forward(pinned: str, target: str) -> bool:
    """True when ``pinned`` is a version below ``target`` (a malformed pin is left to its owner)."""
    try:
        parse_addon_version(pinned)
    except InputError:
        return False
    return classify(pinned, target) is VersionChange.UPGRADING


def _gate(canaries: Sequence[str], target: str, soak: datetime.timedelta, verdict: CanaryVerdict) -> str:
    soaked = f"the others once every canary has run {target} for {format_duration(soak)}"
    first = f"placement {', '.join(canaries)} first, {soaked}"
    return f"{first}; now: {verdict.message}"


def _ungated(configured: Sequence[str]) -> str:
    if not configured:
        return "no canary placement is configured: not gated"
    return f"the add-on lists no canary placement ({', '.join(configured)}): not gated"


def _pins(addon: AddOnManifests) -> list[_Pin]:
    """Every pinned installVersion of the add-on's manifests, placements in spec order, then clusters.
    Raises ``_Invalid`` for a field of the wrong shape."""
    pins: list[_Pin] = []
    if addon.management is not None:
        doc = addon.management
        placements = _typed(doc, _PLACEMENTS, list)
        for index, entry in enumerate(placements or ()):
            path = (*_PLACEMENTS, index)
            if not isinstance(entry, Mapping) or not isinstance(entry.get("name"), str) or not entry["name"]:
                raise _Invalid(doc, path, "must be a mapping with a name")
            template = _typed(doc, (*path, "addonTemplate"), Mapping)
            version = _typed(doc, (*path, "addonTemplate", "installVersion"), str) if template else None
            if version:
                key = f"{entry.get('namespace') or ''}/{entry['name']}"
                pins.append(_Pin(f"placement {key}", doc, (*path, "addonTemplate", "installVersion"), version, key))
    for doc in addon.managed:
        version = _typed(doc, ("spec", "installVersion"), str)
        if version:
            cluster = doc.manifest["metadata"]["namespace"]
            pins.append(_Pin(f"cluster {cluster}", doc, ("spec", "installVersion"), version, cluster=cluster))
    return pins


def _typed(doc: Document, path: Path, kind: type) -> Any:
    """The value at ``path`` (``None`` when absent or null); raises ``_Invalid`` when a part on the way is not a
    mapping or the value is not ``kind``."""
    value: Any = doc.manifest
    for depth, part in enumerate(path):
        if isinstance(part, int):
            value = value[part]
            continue
        if not isinstance(value, Mapping):
            raise _Invalid(doc, path[:depth], "must be a mapping")
        value = value.get(part)
        if value is None:
            return None
    if not isinstance(value, kind):
        names: dict[object, str] = {list: "a list", Mapping: "a mapping", str: "a string"}
        raise _Invalid(doc, path, f"must be {names.get(kind, kind.__name__)}")
    return value


def _edits(moving: Sequence[_Pin], target: str) -> dict[str, list[ScalarEdit]]:
    """The scalar edits of every file with a moving pin."""
    per_file: dict[str, list[ScalarEdit]] = {}
    for pin in moving:
        per_file.setdefault(pin.doc.file, []).append(ScalarEdit(pin.doc.line, pin.path, target))
    return per_file


def _updates(addon: AddOnManifests, state: AddOnState, moving: Sequence[_Pin], target: str) -> tuple[AddOnUpdate, ...]:
    """The UPDATE requests the change makes once applied: the ClusterManagementAddOn (with the status the
    addon manager wrote, which an UPDATE keeps) if a placement moves, and each moving ManagedClusterAddOn."""
    updates = []
    for doc in (*([addon.management] if addon.management else []), *addon.managed):
        paths = [pin.path for pin in moving if pin.doc is doc]
        if not paths:
            continue
        old = dict(doc.manifest)
        if doc.manifest["kind"] == MANAGEMENT_ADDON_KIND and state.management and "status" in state.management:
            old["status"] = state.management["status"]
        new = copy.deepcopy(old)
        for path in paths:
            _get(new, path[:-1])[path[-1]] = target
        metadata = doc.manifest["metadata"]
        namespace = (metadata.get("namespace") or "") if doc.manifest["kind"] == MANAGED_ADDON_KIND else ""
        updates.append(AddOnUpdate(doc.manifest["kind"], metadata["name"], namespace, old, new))
    return tuple(updates)


def _get(data: Any, path: Path) -> Any:
    for part in path:
        if isinstance(part, int):
            data = data[part] if isinstance(data, list) and part < len(data) else None
        else:
            data = data.get(part) if isinstance(data, Mapping) else None
    return data
