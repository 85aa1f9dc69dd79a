"""Upstream Open Cluster Management (its addon-manager and the ``addon.open-cluster-management.io/v1alpha1`` API) has
no ``installVersion``: a rollout is a
change of the **config set** (``ManagedClusterAddOn.spec.configs``, a placement's ``configs``), tracked in
status as ``desiredConfig`` / ``lastAppliedConfig`` / ``lastKnownGoodConfig`` with ``Progressing`` reason
``Completed`` on success. What maps onto the installVersion lifecycle, and what does not:

============================  =======================================================================
installVersion lifecycle      config-based rollout (``classify_configs``, ``Observation.of_configs``)
============================  =======================================================================
Installing (no lastVersion)   no previous object, hence no previous config set
Unchanged                     the same set of config references (order-insensitive)
Rollingback (last > install)  the desired set equals the placement's ``lastKnownGoodConfig`` set
Upgrading (last < install)    any other change: configs are names, not ordered, so "forward" is
                              "not back to the last known good"
Succeed                       ``Progressing`` False with reason ``Completed``
currentVersion                the ``lastAppliedConfig`` set of ``status.configReferences``
supportedVersions / default   *no equivalent*: configs are validated by the addon manager
                              (``ConfigurationUnsupported``), not listed in advance
(not visible here)            an in-place edit of a config object (same name, new ``specHash``) rolls
                              out too, but it is a change of that object, not of these specs
============================  =======================================================================

Placements (``spec.installStrategy.placements[]``) carry both a version and a config set: ``Placement``,
``placement_changes``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from webhook.errors import InputError, InvalidVersion
from webhook.ocm.addons import AddOnVersions, VersionChange, classify


@dataclass(frozen=True, order=True)
class ConfigRef:
    """One add-on config reference (upstream ``AddOnConfig``: ``group``, ``resource``, ``namespace``,
    ``name``); ``str`` renders ``group/resource/namespace/name`` (namespace empty when cluster-scoped)."""

    group: str
    resource: str
    namespace: str
    name: str

    @classmethod
    def from_dict(cls, config: Mapping[str, Any]) -> ConfigRef:
        """Read an ``AddOnConfig`` mapping; raises ``InputError`` when ``resource`` or ``name`` is missing."""
        if not config.get("resource") or not config.get("name"):
            raise InputError(
                f"an add-on config needs a resource and a name: {json.dumps(dict(config), sort_keys=True)}"
            )
        return cls(config.get("group") or "", config["resource"], config.get("namespace") or "", config["name"])

    def __str__(self) -> str:
        return f"{self.group}/{self.resource}/{self.namespace}/{self.name}"


def config_set(configs: Iterable[Mapping[str, Any]] | None) -> frozenset[ConfigRef]:
    """The set of config references of a ``configs`` list (order and duplicates do not matter upstream)."""
    return frozenset(ConfigRef.from_dict(config) for config in configs or ())


def classify_configs(
    previous: Iterable[Mapping[str, Any]] | None,
    desired: Iterable[Mapping[str, Any]] | None,
    last_known_good: Iterable[Mapping[str, Any]] | None = None,
) -> VersionChange:
    """Classify a change of a config list the way ``classify`` classifies a version change (module table).

    ``previous`` is the old object's ``configs`` (``None`` when there is no old object: CREATE),
    ``desired`` the new one's, ``last_known_good`` the placement's ``lastKnownGoodConfig`` references
    (see ``last_known_good_configs``). No previous object → ``INSTALLING``; the same set → ``UNCHANGED``;
    back to a non-empty last-known-good set → ``ROLLINGBACK``; any other change → ``UPGRADING``.
    Raises ``InputError`` for a malformed config entry.
    """
    if previous is None:
        return VersionChange.INSTALLING
    after = config_set(desired)
    if config_set(previous) == after:
        return VersionChange.UNCHANGED
    good = config_set(last_known_good)
    return VersionChange.ROLLINGBACK if good and after == good else VersionChange.UPGRADING


def last_known_good_configs(cma: Mapping[str, Any], namespace: str, name: str) -> list[dict[str, str]]:
    """The ``lastKnownGoodConfig`` references of placement ``namespace/name`` in a ClusterManagementAddOn's
    ``status.installProgressions[].configReferences[]`` (upstream OCM's
    ``addon.open-cluster-management.io/v1alpha1`` API), as ``AddOnConfig`` dicts; empty when the placement has no
    progression or no last known good config yet."""
    for progression in (cma.get("status") or {}).get("installProgressions") or ():
        if progression.get("namespace") == namespace and progression.get("name") == name:
            return [
                {
                    "group": reference.get("group") or "",
                    "resource": reference.get("resource") or "",
                    "namespace": (reference.get("lastKnownGoodConfig") or {}).get("namespace") or "",
                    "name": (reference.get("lastKnownGoodConfig") or {}).get("name") or "",
                }
                for reference in progression.get("configReferences") or ()
                if (reference.get("lastKnownGoodConfig") or {}).get("name")
            ]
    return []


@dataclass(frozen=True)
class Placement:
    """One ``spec.installStrategy.placements[]`` entry: the lifecycle's ``addonTemplate.installVersion`` and the
    configs (upstream ``configs``, else the lifecycle's ``addonTemplate.configs``)."""

    namespace: str
    name: str
    install_version: str
    configs: tuple[Mapping[str, Any], ...]

    @classmethod
    def from_dict(cls, placement: Mapping[str, Any]) -> Placement:
        """Read a placement entry; raises ``InputError`` when ``name`` is missing."""
        if not placement.get("name"):
            raise InputError("a placement needs a name")
        template = placement.get("addonTemplate") or {}
        configs = placement["configs"] if "configs" in placement else template.get("configs")
        return cls(
            placement.get("namespace") or "",
            placement["name"],
            template.get("installVersion") or "",
            tuple(configs or ()),
        )

    @classmethod
    def all_of(cls, cma: Mapping[str, Any] | None) -> dict[tuple[str, str], Placement]:
        """The placements of a ClusterManagementAddOn keyed by ``(namespace, name)``, in spec order."""
        entries = (((cma or {}).get("spec") or {}).get("installStrategy") or {}).get("placements") or ()
        return {(p.namespace, p.name): p for p in map(cls.from_dict, entries)}


@dataclass(frozen=True)
class PlacementChange:
    """How one placement of a ClusterManagementAddOn UPDATE (or CREATE) moves: its effective versions
    before and after (``AddOnVersions.resolve``; ``None`` = none known), the version ``change``, and the
    ``config_change`` of its configs (``classify_configs``)."""

    namespace: str
    name: str
    last_version: str | None
    install_version: str | None
    change: VersionChange | None
    """``None`` when no version is known after the change, or it is malformed (``validate`` reports it)."""
    config_change: VersionChange


def placement_changes(old: Mapping[str, Any] | None, new: Mapping[str, Any]) -> tuple[PlacementChange, ...]:
    """Every placement of ``new`` (a ClusterManagementAddOn) with how it moved from ``old`` (``None`` on
    CREATE), in ``new``'s spec order. A placement without ``installVersion`` runs its CMA's defaultVersion
    ("Fresh install"), so a new default moves it ("Auto upgrade"). A placement new in
    ``new`` is Installing (its clusters may still move from another placement's version; their
    ManagedClusterAddOns show that). The last-known-good configs come from ``new``'s status.
    """
    before, after = Placement.all_of(old), Placement.all_of(new)
    old_versions = AddOnVersions.from_status((old or {}).get("status")) if old is not None else None
    new_versions = AddOnVersions.from_status(new.get("status"))
    changes = []
    for key, placement in after.items():
        previous = before.get(key)
        last = old_versions.resolve(previous.install_version) if previous and old_versions else None
        install = new_versions.resolve(placement.install_version)
        try:
            change = classify(last, install) if install else None
        except InvalidVersion:
            change = None
        good = last_known_good_configs(new, *key)
        config_change = classify_configs(previous.configs if previous else None, placement.configs, good)
        changes.append(PlacementChange(key[0], key[1], last, install, change, config_change))
    return tuple(changes)


def render_configs(configs: Iterable[Mapping[str, Any]] | None) -> str:
    """A config set as one comparable string: its ``ConfigRef`` renderings sorted and joined by ``, ``."""
    return ", ".join(map(str, sorted(config_set(configs))))
