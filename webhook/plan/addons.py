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

from collections.abc import Mapping, Sequence

from webhook.errors import InputError
from webhook.ocm import (
    AddOnVersions,
    Observation,
    VersionChange,
    canary_gate,
    classify,
    parse_addon_version,
)
from webhook.plan.actions import Action
from webhook.plan.addonstage import CanaryStage, Target, stage
from webhook.plan.addonstate import (
    AddOnContext,
    AddOnFieldError,
    AddOnState,
    Pin,
    addon_subject,
    listed_canaries,
    placements_of,
    typed,
)
from webhook.plan.addontemplates import plan_template_bump
from webhook.plan.extensions import Outcome, Planned
from webhook.plan.manifests import AddOnManifests


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
    except AddOnFieldError as error:
        return error.outcome(subject, texts)
    if not pins:
        bump = plan_template_bump(addon, texts, state, context)
        reason = "no installVersion is pinned: the add-on follows its defaultVersion"
        return bump if bump is not None else Outcome(subject, Action.UNCHANGED, reason)
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
    return _stage(addon, texts, state, context, versions=versions, target=target, pins=(pins, behind))


def _stage(
    addon: AddOnManifests,
    texts: Mapping[str, str],
    state: AddOnState,
    context: AddOnContext,
    *,
    versions: AddOnVersions,
    target: str,
    pins: tuple[Sequence[Pin], Sequence[Pin]],
) -> Planned:
    """The canary gate over the canaries' installVersion status, then ``stage``. ``pins`` are (every pin, those
    behind the target)."""
    canaries = listed_canaries(addon, state.management, context.canary_placements)
    gate = None
    if canaries:
        try:
            observed = [Observation.of_install_version(item) for item in state.canaries]
        except InputError as error:
            reason = f"a canary ManagedClusterAddOn in {state.status_from}: {error}"
            return Outcome(addon_subject(addon.name), Action.INVALID, reason)
        gate = canary_gate(target, observed, soak=context.soak, now=context.now)
    newest = f"{target} is the newest supported version ({', '.join(versions.supported)}, from {state.status_from})"
    return stage(
        addon,
        texts,
        state,
        context,
        pins=pins,
        target=Target(target, target, newest, versions.supported, versions.default),
        canary=CanaryStage(canaries, gate),
        unpinned="follows the defaultVersion (the addon manager moves it)",
        objects=state.objects,
    )


def _moves_forward(pinned: str, target: str) -> bool:
    """True when ``pinned`` is a version below ``target`` (a malformed pin is left to its owner)."""
    try:
        parse_addon_version(pinned)
    except InputError:
        return False
    return classify(pinned, target) is VersionChange.UPGRADING


def _pins(addon: AddOnManifests) -> list[Pin]:
    """Every pinned installVersion of the add-on's manifests, placements in spec order, then clusters.
    Raises ``AddOnFieldError`` for a field of the wrong shape."""
    pins: list[Pin] = []
    if addon.management is not None:
        doc = addon.management
        for path, key in placements_of(doc):
            template = typed(doc, (*path, "addonTemplate"), Mapping)
            version = typed(doc, (*path, "addonTemplate", "installVersion"), str) if template else None
            if version:
                pins.append(
                    Pin(f"placement {key}", doc, (*path, "addonTemplate", "installVersion"), version, version, key)
                )
    for doc in addon.managed:
        version = typed(doc, ("spec", "installVersion"), str)
        if version:
            cluster = doc.manifest["metadata"]["namespace"]
            where = f"cluster {cluster}"
            pins.append(Pin(where, doc, ("spec", "installVersion"), version, version, cluster=cluster))
    return pins
