"""The canary gate as a real Open Cluster Management hub carries an add-on upgrade, and the placement mistakes that
would leave it stuck.

On a hub an add-on upgrade is a change of a placement's version-bearing config (upstream api
``addon/v1alpha1/types_clustermanagementaddon.go``: ``spec.installStrategy.placements[].configs``, usually an
AddOnTemplate) rolled out by the placement's ``rolloutStrategy`` (``type`` All, Progressive or ProgressivePerGroup,
each with a ``progressDeadline``: ``2h``, ``90m``, ``360s`` or ``None``, the default, for no deadline). The addon
manager reports each placement in ``status.installProgressions[]`` (``configReferences``, a ``Progressing``
condition) and each cluster in its ManagedClusterAddOn (``webhook.ocm.canary.Observation.of_configs``).

``hub_canary_gate`` opens a target config set for the non-canary placements when the canary placement names it,
its install progression has not failed, and every canary cluster has applied it and stayed healthy for the soak;
``placement_conflicts`` reports clusters for which two placements name different AddOnTemplates.
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Mapping, Sequence
from typing import Any

from webhook.conditions import find_condition
from webhook.errors import InputError
from webhook.ocm.addons import PROGRESSING
from webhook.ocm.canary import UPSTREAM_FAILED, CanaryGate, Observation, canary_gate
from webhook.ocm.rollout import config_set, render_configs

TEMPLATES = ("addon.open-cluster-management.io", "addontemplates")
"""The group and resource of AddOnTemplate, the config that carries an add-on's version."""
_DEADLINE = re.compile(r"([0-9]+)([hms])")
_UNITS = {"h": "hours", "m": "minutes", "s": "seconds"}
_STRATEGIES = {"All": "all", "Progressive": "progressive", "ProgressivePerGroup": "progressivePerGroup"}


def progress_deadline(placement: Mapping[str, Any]) -> datetime.timedelta | None:
    """The ``progressDeadline`` of a placement entry's ``rolloutStrategy`` (of the member its ``type`` names,
    ``All`` by default); ``None`` when it is absent or ``None``. Raises ``InputError`` for another value."""
    strategy = placement.get("rolloutStrategy") or {}
    member = _STRATEGIES.get(strategy.get("type") or "All")
    if member is None:
        raise InputError(
            f"unknown rolloutStrategy type {strategy.get('type')!r}: want All, Progressive or ProgressivePerGroup"
        )
    text = (strategy.get(member) or {}).get("progressDeadline") or "None"
    if text == "None":
        return None
    matched = _DEADLINE.fullmatch(text)
    if matched is None:
        raise InputError(f"invalid progressDeadline {text!r}: want a number and h, m or s (2h, 90m, 360s) or None")
    return datetime.timedelta(**{_UNITS[matched.group(2)]: int(matched.group(1))})


def _entry(cma: Mapping[str, Any], namespace: str, name: str) -> Mapping[str, Any] | None:
    placements = ((cma.get("spec") or {}).get("installStrategy") or {}).get("placements") or ()
    return next((p for p in placements if (p.get("namespace") or "", p.get("name")) == (namespace, name)), None)


def _progression_failure(cma: Mapping[str, Any], namespace: str, name: str) -> str | None:
    for progression in (cma.get("status") or {}).get("installProgressions") or ():
        if (progression.get("namespace") or "", progression.get("name")) == (namespace, name):
            condition = find_condition(progression.get("conditions"), PROGRESSING) or {}
            if condition.get("reason") in UPSTREAM_FAILED:
                return f"{condition['reason']}: {condition.get('message') or 'no message'}"
    return None


def hub_canary_gate(
    target: Sequence[Mapping[str, Any]],
    canaries: Sequence[tuple[Mapping[str, Any], Sequence[Mapping[str, Any]]]],
    cma: Mapping[str, Any],
    canary_placement: str,
    *,
    soak: datetime.timedelta,
    now: datetime.datetime,
    override: bool = False,
) -> CanaryGate:
    """May config set ``target`` (``AddOnConfig`` dicts) reach a placement other than ``canary_placement``
    (``NAMESPACE/NAME``) of ClusterManagementAddOn ``cma`` (or, with ``override``, a cluster outside it, as its
    ManagedClusterAddOn's own ``spec.configs``, which the canary placement need not name)?

    ``canaries`` pairs each canary cluster's ManagedClusterAddOn with its ManifestWorks (clusters whose add-on is
    gone are left out by the caller: a cluster that left the hub holds nothing). Closed, in this order, when: the
    canary placement does not name the target (``the canary placement default/canary names <configs>, not
    <target>: move it first``), its install progression failed (``the install progression of the canary placement
    default/canary failed: <reason>: <message>``), it selects no cluster with the add-on, or ``canary_gate`` (with
    the placement's ``progress_deadline``) says so. Raises ``InputError`` for a malformed config, time or deadline.
    """
    namespace, _, name = canary_placement.partition("/")
    wanted = render_configs(target)
    entry = _entry(cma, namespace, name)
    if entry is None:
        return CanaryGate(False, f"the add-on has no canary placement {canary_placement}", None)
    kinds = {(ref.group, ref.resource) for ref in config_set(target)}
    named = render_configs(
        [
            config
            for config in entry.get("configs") or ()
            if (config.get("group") or "", config.get("resource")) in kinds
        ]
    )
    if named != wanted and not override:
        message = (
            f"the canary placement {canary_placement} names {named or 'no such config'}, not {wanted}: move it first"
        )
        return CanaryGate(False, message, None)
    failure = _progression_failure(cma, namespace, name)
    if failure is not None:
        return CanaryGate(
            False, f"the install progression of the canary placement {canary_placement} failed: {failure}", None
        )
    if not canaries:
        return CanaryGate(False, f"the canary placement {canary_placement} selects no cluster with this add-on", None)
    observed = [Observation.of_configs(addon, works, target=target) for addon, works in canaries]
    return canary_gate(wanted, observed, soak=soak, now=now, deadline=progress_deadline(entry))


def placement_conflicts(placements: Sequence[Mapping[str, Any]], *, canary: str = "", shown: int = 3) -> list[str]:
    """Clusters that two placements name different AddOnTemplates for, one message per such pair.

    ``placements`` are ``{namespace, name, configs, clusters}`` maps in spec order (``clusters``: the names the
    placement's PlacementDecisions decide). Upstream (the CRD's ``installStrategy.placements``): "If one cluster
    belongs to multiple placements, it will only apply the strategy defined later in the order", so such a
    cluster runs the later placement's template, whatever the earlier one says. That is the canary pattern when
    the later placement is the ``canary`` placement (``NAMESPACE/NAME``), and is left alone then; any other pair
    is refused, since the earlier placement's version silently does not reach those clusters (an earlier canary
    placement would wait for ever for a version its clusters never get). Message::

        placements default/a (addon.open-cluster-management.io/addontemplates//hello-v1) and default/b
        (addon.open-cluster-management.io/addontemplates//hello-v2) both select cluster1, cluster2 and 3 more,
        which run default/b's template (the later placement wins): make the placements disjoint or name one template
    """
    templated = []
    for placement in placements:
        templates = [
            c for c in placement.get("configs") or () if (c.get("group") or "", c.get("resource")) == TEMPLATES
        ]
        if templates:
            key = f"{placement.get('namespace') or ''}/{placement.get('name')}"
            templated.append((key, render_configs(templates), set(placement.get("clusters") or ())))
    messages = []
    for index, (key, template, clusters) in enumerate(templated):
        for later, later_template, later_clusters in templated[index + 1 :]:
            both = sorted(clusters & later_clusters)
            if template != later_template and both and later != canary:
                more = f" and {len(both) - shown} more" if len(both) > shown else ""
                messages.append(
                    f"placements {key} ({template}) and {later} ({later_template}) both select "
                    f"{', '.join(both[:shown])}{more}, which run {later}'s template (the later placement wins): make "
                    "the placements disjoint or name one template"
                )
    return messages
