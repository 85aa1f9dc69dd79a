"""The rollout plan of an add-on proposal: which placement or cluster moves in which step, over which clusters and
decision groups, by which ``rolloutStrategy``, and what moves it or holds it. Pure: no I/O.

Step 1 is the canary placement and the canary clusters' own pins; step 2 everything else, which the canary gate
releases once every canary has run the target for the soak. Placements come in spec order after the canary;
upstream rolls each placement out by its own ``rolloutStrategy`` (``webhook.ocm.rolloutplan``).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass

from webhook.ocm import CanaryGate, placement_step
from webhook.plan.addonstate import AddOnState, Pin, placement_entries, placement_key
from webhook.plan.extensions import RolloutRow
from webhook.plan.manifests import AddOnManifests


@dataclass(frozen=True)
class Staged:
    """One add-on's pins split for a proposal: ``pins`` (all), ``moving`` (in this pull request), ``held`` (by the
    canary ``gate``, ``None`` when not gated), the listed ``canaries`` placements, and ``target`` (the
    value the moving pins get)."""

    pins: Sequence[Pin]
    moving: Sequence[Pin]
    held: Sequence[Pin]
    canaries: Sequence[str]
    gate: CanaryGate | None
    target: str

    @functools.cached_property
    def _moving(self) -> frozenset[int]:
        return frozenset(map(id, self.moving))

    @functools.cached_property
    def _held(self) -> frozenset[int]:
        return frozenset(map(id, self.held))

    def status(self, mine: Sequence[Pin]) -> str:
        """What becomes of these pins (``pins`` themselves, by identity): ``moves to <target> in this pull
        request``, ``held by the canary gate: <why>``, or ``at <value>``."""
        if any(id(pin) in self._moving for pin in mine):
            return f"moves to {self.target} in this pull request"
        if any(id(pin) in self._held for pin in mine) and self.gate is not None:
            return f"held by the canary gate: {self.gate.message}"
        return f"at {mine[0].value}"


def rollout_rows(
    addon: AddOnManifests, state: AddOnState, staged: Staged, *, unpinned: Sequence[Pin] | str
) -> tuple[RolloutRow, ...]:
    """The rollout plan (module docstring). A placement without a pin of its own shows ``unpinned``: the pins it
    takes instead (the default config: ``takes the default config: <their status>``), or a sentence."""
    canaries = staged.canaries
    entries = sorted(placement_entries(addon, state.management), key=lambda e: placement_key(e) not in canaries)
    fallback = unpinned if isinstance(unpinned, str) else f"takes the default config: {staged.status(unpinned)}"
    rows = []
    for entry in entries:
        key = placement_key(entry)
        step = placement_step(entry, state.placements.get(key, ()))
        own = [pin for pin in staged.pins if pin.placement == key]
        groups = ", ".join(map(str, step.groups))
        rows.append(
            RolloutRow(
                1 if key in canaries else 2,
                f"placement {key}" + (" (canary)" if key in canaries else ""),
                f"{len(step.clusters)}" + (f": {groups}" if len(step.groups) > 1 else ""),
                step.strategy,
                staged.status(own) if own else fallback,
            )
        )
    clusters = set(state.canary_clusters)
    for pin in staged.pins:
        if pin.cluster is not None:
            order = 1 if pin.cluster in clusters else 2
            rows.append(RolloutRow(order, f"{pin.where} (its own spec)", "1", "-", staged.status([pin])))
    return tuple(sorted(rows, key=lambda row: row.order))
