"""``addon``: the add-on ``installVersion`` lifecycle in CEL, over ``webhook.ocm.addons`` (no rule here).

NOT in the kube-apiserver: a policy using one of these is not portable. Static namespace::

    addon.isVersion(string) -> bool                         parse_addon_version: optional v, 1-3 numbers
    addon.changeType(last string|null, install string) -> string
                                                            classify: Installing | Upgrading | Rollingback |
                                                            Unchanged (last null, '', unknown or malformed:
                                                            Installing)
    addon.resolveVersion(versions map|null, install string|null) -> string|null
                                                            AddOnVersions.resolve: install, else defaultVersion
    addon.versionError(versions map|null, install string|null) -> string
    addon.versionError(versions map|null, install string|null, field string) -> string
                                                            AddOnVersions.validate: the denial message ending
                                                            '; supported versions: v1, v2', '' when valid
    addon.placementChanges(oldObject map|null, object map) -> list<map>
                                                            placement_changes of a ClusterManagementAddOn:
                                                            {namespace, name, lastVersion, installVersion,
                                                            change, configChange, configs} per placement
    addon.configChange(previous list|null, desired list|null, lastKnownGood list|null) -> string
                                                            classify_configs, the same four values
    addon.lastKnownGoodConfigs(cma map, namespace string, name string) -> list<map>
    addon.renderConfigs(configs list|null) -> string        render_configs: 'group/resource/namespace/name, ...'
    addon.canaryGate(version string, canaries list<map>, soak duration, now timestamp) -> map
    addon.configCanaryGate(configs list|null, canaries list<map>, soak duration, now timestamp) -> map
                                                            canary_gate over the canary ManagedClusterAddOns
                                                            (Observation.of_install_version / of_configs):
                                                            {allowed bool, message string, readyAt string|null}
                                                            (readyAt: RFC 3339, when the soak ends or ended;
                                                            a string because cel-expr cannot return a
                                                            timestamp inside a map)
    addon.hubCanaryGate(configs list, canary map, soak duration, now timestamp) -> map
                                                            hub_canary_gate on a real hub: canary is {placement:
                                                            'NAMESPACE/NAME', managementAddOn: the CMA, clusters:
                                                            [{addon: ManagedClusterAddOn, works: [ManifestWork]}],
                                                            override: true for a cluster's own spec.configs};
                                                            the canary placement's configs, install progression
                                                            and progressDeadline count; the same map
    addon.placementConflicts(placements list<map>, canaryPlacement string) -> list<string>
                                                            placement_conflicts: {namespace, name, configs,
                                                            clusters} per placement in spec order; one message
                                                            per pair naming two AddOnTemplates for a cluster,
                                                            unless the later one is the canary placement

``versions`` is a ClusterManagementAddOn ``status`` (``supportedVersions``, ``defaultVersion``). Errors: a
malformed version where one must be ordered (``changeType``'s ``install``), a malformed status or config entry
(``webhook.errors.InputError`` of the core) is an evaluation error with the core's message; an argument of
the wrong shape (a string where a map is wanted) is no matching overload.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar

from webhook.cel.libraries.registry import Namespace, Overload, namespaced, plain
from webhook.conditions import format_time
from webhook.errors import CelEvaluationError, InputError
from webhook.ocm import (
    AddOnVersions,
    CanaryGate,
    Observation,
    Placement,
    canary_gate,
    classify,
    classify_configs,
    hub_canary_gate,
    is_addon_version,
    last_known_good_configs,
    placement_changes,
    placement_conflicts,
    render_configs,
)

NAMESPACE = Namespace("addon")
_T = TypeVar("_T")


def _map(value: Any) -> dict[str, Any] | None:
    if value is None or isinstance(value, Mapping):
        return plain(value)  # type: ignore[no-any-return]
    raise TypeError("a map or null is wanted")


def _configs(value: Any) -> list[dict[str, Any]] | None:
    if value is None:
        return None
    if isinstance(value, list) and all(isinstance(item, Mapping) for item in value):
        return plain(value)  # type: ignore[no-any-return]
    raise TypeError("a list of maps or null is wanted")


def _text(value: Any) -> str | None:
    if value is None or isinstance(value, str):
        return None if value is None else str(value)
    raise TypeError("a string or null is wanted")


def _core(call: Callable[[], _T]) -> _T:
    """``call()``, its ``InputError`` (``InvalidVersion`` included) as the evaluation error of the same text."""
    try:
        return call()
    except InputError as error:
        raise CelEvaluationError(str(error)) from None


def is_version(_addon: Namespace, text: str) -> bool:
    """``addon.isVersion(text)``: ``parse_addon_version`` accepts ``text``."""
    return is_addon_version(text)


def change_type(_addon: Namespace, last: Any, install: str) -> str:
    """``addon.changeType(last, install)``: ``classify(last, install)`` ("Condition")."""
    return _core(lambda: classify(_text(last), install).value)


def resolve_version(_addon: Namespace, versions: Any, install: Any) -> str | None:
    """``addon.resolveVersion(versions, install)``: ``install`` when non-empty, else ``defaultVersion``."""
    return _core(lambda: AddOnVersions.from_status(_map(versions)).resolve(_text(install)))


def version_error(_addon: Namespace, versions: Any, install: Any, field: str = "installVersion") -> str:
    """``addon.versionError(versions, install[, field])``: ``AddOnVersions.validate``, ``''`` when valid."""
    return _core(lambda: AddOnVersions.from_status(_map(versions)).validate(_text(install), field=field) or "")


def _placement_changes(old: Any, new: Any) -> list[dict[str, Any]]:
    new = _map(new)
    if new is None:
        raise TypeError("object is null")
    placements = Placement.all_of(new)
    return [
        {
            "namespace": moved.namespace,
            "name": moved.name,
            "lastVersion": moved.last_version,
            "installVersion": moved.install_version,
            "change": None if moved.change is None else moved.change.value,
            "configChange": moved.config_change.value,
            "configs": list(placements[moved.namespace, moved.name].configs),
        }
        for moved in placement_changes(_map(old), new)
    ]


def changes_of_placements(_addon: Namespace, old: Any, new: Any) -> list[dict[str, Any]]:
    """``addon.placementChanges(oldObject, object)``: ``placement_changes`` as maps, with each placement's
    ``configs`` (upstream ``configs``, else the lifecycle's ``addonTemplate.configs``)."""
    return _core(lambda: _placement_changes(old, new))


def config_change(_addon: Namespace, previous: Any, desired: Any, last_known_good: Any) -> str:
    """``addon.configChange(previous, desired, lastKnownGood)``: ``classify_configs``."""
    return _core(lambda: classify_configs(_configs(previous), _configs(desired), _configs(last_known_good)).value)


def known_good_configs(_addon: Namespace, cma: Any, namespace: str, name: str) -> list[dict[str, str]]:
    """``addon.lastKnownGoodConfigs(cma, namespace, name)``: ``last_known_good_configs``."""
    found = _map(cma)
    return [] if found is None else last_known_good_configs(found, namespace, name)


def configs_text(_addon: Namespace, configs: Any) -> str:
    """``addon.renderConfigs(configs)``: ``render_configs``."""
    return _core(lambda: render_configs(_configs(configs)))


def _maps(canaries: Any) -> list[dict[str, Any]]:
    if not isinstance(canaries, list) or not all(isinstance(canary, Mapping) for canary in canaries):
        raise TypeError("canaries must be a list of maps")
    return [plain(canary) for canary in canaries]


def _plain_duration(soak: datetime.timedelta) -> datetime.timedelta:
    return datetime.timedelta(soak.days, soak.seconds, soak.microseconds)  # a plain timedelta, whatever came in


def _as_map(gate: CanaryGate) -> dict[str, Any]:
    ready_at = None if gate.ready_at is None else format_time(gate.ready_at)
    return {"allowed": gate.allowed, "message": gate.message, "readyAt": ready_at}


def _gate(
    target: str,
    canaries: Iterable[Any],
    observe: Callable[[Mapping[str, Any]], Observation],
    soak: datetime.timedelta,
    now: datetime.datetime,
) -> dict[str, Any]:
    observed = [observe(canary) for canary in _maps(canaries)]
    return _as_map(canary_gate(target, observed, soak=_plain_duration(soak), now=now))


def version_canary_gate(
    _addon: Namespace, version: str, canaries: Any, soak: datetime.timedelta, now: datetime.datetime
) -> dict[str, Any]:
    """``addon.canaryGate(version, canaries, soak, now)``: ``canary_gate`` over ``Observation.of_install_version``
    of each canary ManagedClusterAddOn (the add-on installVersion lifecycle, "Canary upgrade")."""
    return _core(lambda: _gate(version, canaries, Observation.of_install_version, soak, now))


def config_canary_gate(
    _addon: Namespace, configs: Any, canaries: Any, soak: datetime.timedelta, now: datetime.datetime
) -> dict[str, Any]:
    """``addon.configCanaryGate(configs, canaries, soak, now)``: ``canary_gate`` of ``render_configs(configs)``
    over ``Observation.of_configs`` of each canary ManagedClusterAddOn (upstream config-based rollout)."""
    return _core(lambda: _gate(render_configs(_configs(configs)), canaries, Observation.of_configs, soak, now))


def _hub_gate(configs: Any, canary: Any, soak: datetime.timedelta, now: datetime.datetime) -> dict[str, Any]:
    found = _map(canary) or {}
    pairs = [(each.get("addon") or {}, each.get("works") or []) for each in _maps(found.get("clusters") or [])]
    cma, placement = found.get("managementAddOn") or {}, str(found.get("placement") or "")
    override = bool(found.get("override"))
    gate = hub_canary_gate(
        _configs(configs) or [], pairs, cma, placement, soak=_plain_duration(soak), now=now, override=override
    )
    return _as_map(gate)


def hub_gate(
    _addon: Namespace, configs: Any, canary: Any, soak: datetime.timedelta, now: datetime.datetime
) -> dict[str, Any]:
    """``addon.hubCanaryGate(configs, canary, soak, now)``: ``hub_canary_gate`` of ``canary`` =
    ``{placement: 'NAMESPACE/NAME', managementAddOn: <ClusterManagementAddOn>, clusters: [{addon, works}]}`` (upstream
    config rollout on a real hub); ``override: true`` in ``canary`` for a cluster's own ``spec.configs``."""
    return _core(lambda: _hub_gate(configs, canary, soak, now))


def conflicts(_addon: Namespace, placements: Any, canary: str) -> list[str]:
    """``addon.placementConflicts(placements, canaryPlacement)``: ``placement_conflicts``."""
    return placement_conflicts(_configs(placements) or [], canary=canary)


OVERLOADS: tuple[Overload, ...] = (
    namespaced("addon", "isVersion", is_version, "string", portable=False),
    namespaced("addon", "changeType", change_type, "dyn", "string", portable=False),
    namespaced("addon", "resolveVersion", resolve_version, "dyn", "dyn", portable=False),
    namespaced("addon", "versionError", version_error, "dyn", "dyn", portable=False),
    namespaced("addon", "versionError", version_error, "dyn", "dyn", "string", portable=False),
    namespaced("addon", "placementChanges", changes_of_placements, "dyn", "dyn", portable=False),
    namespaced("addon", "configChange", config_change, "dyn", "dyn", "dyn", portable=False),
    namespaced("addon", "lastKnownGoodConfigs", known_good_configs, "dyn", "string", "string", portable=False),
    namespaced("addon", "renderConfigs", configs_text, "dyn", portable=False),
    namespaced("addon", "canaryGate", version_canary_gate, "string", "list", "duration", "timestamp", portable=False),
    namespaced("addon", "configCanaryGate", config_canary_gate, "dyn", "list", "duration", "timestamp", portable=False),
    namespaced("addon", "hubCanaryGate", hub_gate, "dyn", "dyn", "duration", "timestamp", portable=False),
    namespaced("addon", "placementConflicts", conflicts, "list", "string", portable=False),
)
