"""How a ClusterManagementAddOn placement rolls a new config set or version out, in words a hub admin reads.

Upstream OCM (api ``cluster/v1alpha1`` ``RolloutStrategy``, ``cluster/v1beta1`` PlacementDecision): each
``spec.installStrategy.placements[]`` entry has a ``rolloutStrategy`` of ``type`` ``All`` (every cluster at once),
``Progressive`` (``maxConcurrency`` clusters at a time, ``mandatoryDecisionGroups`` first) or
``ProgressivePerGroup`` (decision group by decision group, ``mandatoryDecisionGroups`` first), each with
``minSuccessTime``, ``progressDeadline`` and ``maxFailures``. A placement's clusters come in decision groups: its
PlacementDecisions carry the labels ``cluster.open-cluster-management.io/decision-group-index`` and
``.../decision-group-name``. ``placement_step`` reads one placement; the sync loop orders the steps (the canary
placement first) and says what holds each.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

GROUP_INDEX = "cluster.open-cluster-management.io/decision-group-index"
GROUP_NAME = "cluster.open-cluster-management.io/decision-group-name"
_MEMBERS = {"All": "all", "Progressive": "progressive", "ProgressivePerGroup": "progressivePerGroup"}
_SETTINGS = ("minSuccessTime", "progressDeadline", "maxFailures")


@dataclass(frozen=True)
class DecisionGroup:
    """One decision group of a placement: its index, its name (``""`` when unnamed), and its clusters."""

    index: int
    name: str
    clusters: tuple[str, ...]

    def __str__(self) -> str:
        label = f"{self.index} {self.name}" if self.name else str(self.index)
        return f"group {label} ({len(self.clusters)} {'cluster' if len(self.clusters) == 1 else 'clusters'})"


@dataclass(frozen=True)
class PlacementStep:
    """One placement of a rollout: ``placement`` (``NAMESPACE/NAME``), its decision ``groups`` in index order,
    and ``strategy``, its ``rolloutStrategy`` in words."""

    placement: str
    groups: tuple[DecisionGroup, ...]
    strategy: str

    @property
    def clusters(self) -> tuple[str, ...]:
        """Every cluster the placement decides, sorted."""
        return tuple(sorted({c for group in self.groups for c in group.clusters}))


def placement_step(entry: Mapping[str, Any], decisions: Sequence[Mapping[str, Any]]) -> PlacementStep:
    """The rollout of placement ``entry`` (a ``spec.installStrategy.placements[]`` mapping) over its
    PlacementDecisions ``decisions`` (label ``cluster.open-cluster-management.io/placement: <name>``). A decision
    without a group index is in group 0 (a placement without ``decisionStrategy`` has one group)."""
    grouped: dict[int, tuple[str, set[str]]] = {}
    for decision in decisions:
        labels = (decision.get("metadata") or {}).get("labels") or {}
        index = str(labels.get(GROUP_INDEX) or "0")
        key = int(index) if index.isdigit() else 0
        _, clusters = grouped.setdefault(key, (str(labels.get(GROUP_NAME) or ""), set()))
        clusters.update(
            item["clusterName"]
            for item in (decision.get("status") or {}).get("decisions") or ()
            if isinstance(item, Mapping) and isinstance(item.get("clusterName"), str)
        )
    groups = tuple(DecisionGroup(i, grouped[i][0], tuple(sorted(grouped[i][1]))) for i in sorted(grouped))
    placement = f"{entry.get('namespace') or ''}/{entry.get('name') or ''}"
    return PlacementStep(placement, groups, describe_strategy(entry.get("rolloutStrategy") or {}))


def describe_strategy(strategy: Mapping[str, Any]) -> str:
    """A ``rolloutStrategy`` in words: ``All: every cluster at once``, ``Progressive: 25% of the clusters at a
    time, mandatory groups canary first``, ``ProgressivePerGroup: group by group, mandatory groups 0 first``,
    followed by its set ``minSuccessTime``, ``progressDeadline`` and ``maxFailures``. An unknown type is named."""
    kind = str(strategy.get("type") or "All")
    member = strategy.get(_MEMBERS.get(kind, "")) or {}
    parts = {
        "All": "every cluster at once",
        "Progressive": f"{member.get('maxConcurrency') or 'all'} of the clusters at a time",
        "ProgressivePerGroup": "group by group",
    }
    words = [parts.get(kind, "an unknown strategy")]
    mandatory = [
        str(group.get("groupName") or group.get("groupIndex"))
        for group in member.get("mandatoryDecisionGroups") or ()
        if isinstance(group, Mapping)
    ]
    if mandatory and kind != "All":
        words.append(f"mandatory groups {', '.join(mandatory)} first")
    settings = [f"{key} {member[key]}" for key in _SETTINGS if member.get(key) not in (None, "")]
    return f"{kind}: {', '.join(words)}" + (f"; {', '.join(settings)}" if settings else "")
