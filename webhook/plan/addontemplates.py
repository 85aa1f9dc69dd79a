"""The pure core of add-on proposals on an upstream Open Cluster Management hub: AddOnTemplate reference bumps,
canary placement first, with the rollout plan. No I/O.

An upstream hub carries an add-on's version in the AddOnTemplate its ClusterManagementAddOn references
(``webhook.ocm.templates``). For one add-on whose manifests in Git reference AddOnTemplates, ``plan_template_bump``
decides:

* **target**: the add-on's AddOnTemplate (``spec.addonName``) with the highest version, among those the cluster
  serves (``installed: cluster``) or, offline, the repository holds. A template without a version is never one.
* **what moves**: every template reference whose template has a lower version: a placement's ``configs[]``
  entry, the ``spec.supportedConfigs[].defaultConfig`` of AddOnTemplates (which every placement and cluster
  without a template of its own runs), and a ManagedClusterAddOn's ``spec.configs[]`` entry. Only the
  reference's ``name`` is edited; a reference to an unversioned template, or at or past the target, is left to
  its owner (a rollback needs an acknowledgement).
* **canary first**: when the add-on lists a configured canary placement, that placement and the clusters it
  decides move at once; everything else moves once ``webhook.ocm.hub_canary_gate`` opens for the target (the
  canary placement names it, its install progression has not failed, every canary cluster has applied it with
  its ManifestWorks healthy for the soak), else it is **held** with the gate's message. A canary placement
  without a template reference of its own runs the default config and could never go first: the add-on is held,
  saying so.

The change carries the rollout plan (``RolloutRow``): the canary placement first, then every other placement
in spec order and the clusters with configs of their own, each with its decision groups, its
``rolloutStrategy`` and what moves or holds it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from webhook.errors import InputError
from webhook.ocm import (
    TEMPLATES,
    VERSION_LABEL,
    CanaryGate,
    VersionChange,
    addon_templates,
    classify,
    hub_canary_gate,
    is_template_ref,
    parse_addon_version,
    template_version,
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
from webhook.plan.extensions import Outcome, Planned
from webhook.plan.manifests import AddOnManifests, Document
from webhook.plan.yamledit import Path

DEFAULT_CONFIG = "default config"
"""Where a ``spec.supportedConfigs[].defaultConfig`` reference is, in sentences and the rollout plan."""
_SUPPORTED: Path = ("spec", "supportedConfigs")


def plan_template_bump(
    addon: AddOnManifests, texts: Mapping[str, str], state: AddOnState, context: AddOnContext
) -> Planned | None:
    """The next AddOnTemplate step for one add-on (module docstring); ``None`` when its manifests reference no
    AddOnTemplate. ``texts`` holds the text of every file in ``addon.files``.

    Returns a ``Change`` (kind ``addon-version``, branch ``<prefix>addon/<name>``) or an ``Outcome``:
    ``unchanged`` (no versioned template, every reference at or past the target), ``held`` (only references
    that wait for the canaries; ``ready_at`` when the soak ends), ``invalid`` (a manifest field of the wrong
    shape, with ``file:line``; a canary status that cannot be read), ``unresolved`` (a canary placement but no
    ClusterManagementAddOn to read its progress from).
    """
    subject = addon_subject(addon.name)
    known = addon_templates(state.templates, addon.name)
    try:
        pins = _references(addon, known)
    except AddOnFieldError as error:
        return error.outcome(subject, texts)
    if not pins:
        return None
    if not known:
        reason = (
            f"no AddOnTemplate of add-on {addon.name} in {state.status_from} carries a version (the label "
            f"{VERSION_LABEL}, or a -v<version> name suffix)"
        )
        return Outcome(subject, Action.UNCHANGED, reason)
    target = max(known, key=lambda name: (parse_addon_version(known[name]), name))
    behind = [pin for pin in pins if pin.version and classify(pin.version, known[target]) is VersionChange.UPGRADING]
    if not behind:
        reason = f"every AddOnTemplate reference is at or past {target} ({known[target]}), the newest"
        return Outcome(subject, Action.UNCHANGED, reason)
    return _stage(addon, texts, state, context, pins=pins, behind=behind, target=target, known=known)


def _stage(
    addon: AddOnManifests,
    texts: Mapping[str, str],
    state: AddOnState,
    context: AddOnContext,
    *,
    pins: Sequence[Pin],
    behind: Sequence[Pin],
    target: str,
    known: Mapping[str, str],
) -> Planned:
    """The canary stage: canaries (and, once the gate opens, the others) move; the rest are held."""
    subject, version = addon_subject(addon.name), known[target]
    canaries = listed_canaries(addon, state.management, context.canary_placements)
    if canaries and not any(pin.placement == canaries[0] for pin in pins):
        reason = (
            f"the canary placement {canaries[0]} names no AddOnTemplate of its own (it runs the default config), so "
            f"it cannot run {target} first: name the add-on's template in its configs"
        )
        return Outcome(subject, Action.HELD, reason)
    gate = None
    if canaries:
        if state.management is None:
            reason = (
                f"ClusterManagementAddOn {addon.name} is not in {state.status_from}: its canaries' progress is unknown"
            )
            return Outcome(subject, Action.UNRESOLVED, reason, addon.files[0])
        try:
            gate = _gate(state, canaries[0], target, context)
        except InputError as error:
            return Outcome(subject, Action.INVALID, f"the canaries in {state.status_from}: {error}")
    newest = f"{target} ({version}) is the add-on's newest AddOnTemplate in {state.status_from}"
    offered = tuple(f"{name} ({known[name]})" for name in sorted(known, key=lambda n: parse_addon_version(known[n])))
    return stage(
        addon,
        texts,
        state,
        context,
        pins=(pins, behind),
        target=Target(target, version, newest, offered, template=target),
        canary=CanaryStage(canaries, gate),
        unpinned=[pin for pin in pins if pin.where == DEFAULT_CONFIG] or "names no versioned AddOnTemplate",
        objects=state.objects,
    )


def _gate(state: AddOnState, placement: str, target: str, context: AddOnContext) -> CanaryGate:
    """``hub_canary_gate`` for the target template on ``placement``, over the canary clusters' add-ons and works."""
    assert state.management is not None
    wanted = [{"group": TEMPLATES[0], "resource": TEMPLATES[1], "name": target}]
    canaries = [(mca, state.works.get(str(mca["metadata"]["namespace"]), ())) for mca in state.canaries]
    return hub_canary_gate(wanted, canaries, state.management, placement, soak=context.soak, now=context.now)


def _references(addon: AddOnManifests, known: Mapping[str, str]) -> list[Pin]:
    """Every AddOnTemplate reference of the add-on's manifests (``version`` empty when its template has none):
    placements in spec order, the default config, then clusters. Raises ``AddOnFieldError`` for a field of the
    wrong shape."""
    pins: list[Pin] = []
    if addon.management is not None:
        doc = addon.management
        for path, key in placements_of(doc):
            pins += _listed(doc, (*path, "configs"), known, f"placement {key}", placement=key)
        for index, supported in enumerate(typed(doc, _SUPPORTED, list) or ()):
            config = supported.get("defaultConfig") if isinstance(supported, Mapping) else None
            if isinstance(config, Mapping) and is_template_ref({**supported, **config}):
                pins.append(
                    _pin(doc, (*_SUPPORTED, index, "defaultConfig", "name"), config["name"], known, DEFAULT_CONFIG)
                )
    for doc in addon.managed:
        cluster = doc.manifest["metadata"]["namespace"]
        pins += _listed(doc, ("spec", "configs"), known, f"cluster {cluster}", cluster=cluster)
    return pins


def _listed(
    doc: Document,
    path: Path,
    known: Mapping[str, str],
    where: str,
    *,
    placement: str | None = None,
    cluster: str | None = None,
) -> list[Pin]:
    """The template references of the ``configs`` list at ``path``."""
    return [
        _pin(doc, (*path, index, "name"), config["name"], known, where, placement=placement, cluster=cluster)
        for index, config in enumerate(typed(doc, path, list) or ())
        if is_template_ref(config)
    ]


def _pin(
    doc: Document,
    path: Path,
    name: str,
    known: Mapping[str, str],
    where: str,
    *,
    placement: str | None = None,
    cluster: str | None = None,
) -> Pin:
    """The reference ``name`` at ``path``, its version from ``known`` (the templates read), else its name."""
    version = known.get(name) or template_version(name) or ""
    return Pin(where, doc, path, name, version, placement, cluster)
