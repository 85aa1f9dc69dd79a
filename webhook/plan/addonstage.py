"""The canary stage both add-on planners share: once a planner knows the target, the pins behind it and how the
canary gate stands, ``stage`` splits the pins into those that move now (the canaries, and everyone once the gate is
open) and those held, edits the moving pins' scalars in their files, and builds the ``Change`` with its facts and
rollout plan, or the ``held`` / ``invalid`` outcome. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from webhook.conditions import format_duration, format_time
from webhook.errors import ManifestError
from webhook.ocm import CanaryGate, parse_addon_version
from webhook.plan.actions import Action, Kind
from webhook.plan.addonrollout import Staged, rollout_rows
from webhook.plan.addonstate import AddOnContext, AddOnState, Pin, addon_subject, edits, updates
from webhook.plan.extensions import AddOnFacts, AddOnMove, Change, FileChange, Outcome, Planned, branch_name
from webhook.plan.manifests import AddOnManifests
from webhook.plan.yamledit import set_scalars


@dataclass(frozen=True)
class Target:
    """What the pins move to: ``value`` (written at each pin: a version, or an AddOnTemplate's name) and its add-on
    ``version``; ``newest``, the sentence saying why it is the target; ``offered`` and ``default``, what the add-on
    offers (supported versions, or templates as ``name (version)``); ``template`` when the value is a template."""

    value: str
    version: str
    newest: str
    offered: tuple[str, ...]
    default: str | None = None
    template: str | None = None

    @property
    def label(self) -> str:
        """``v2``, or ``hello-v2 (v2)`` for a template."""
        return self.version if self.template is None else f"{self.template} ({self.version})"


@dataclass(frozen=True)
class CanaryStage:
    """The canary stage of a proposal: the canary ``placements`` the add-on lists (empty: not gated) and how the
    canary ``gate`` stands for the target (``None`` when not gated)."""

    placements: tuple[str, ...]
    gate: CanaryGate | None


def stage(
    addon: AddOnManifests,
    texts: Mapping[str, str],
    state: AddOnState,
    context: AddOnContext,
    *,
    pins: tuple[Sequence[Pin], Sequence[Pin]],
    target: Target,
    canary: CanaryStage,
    unpinned: Sequence[Pin] | str,
    objects: Sequence[Mapping[str, Any]],
) -> Planned:
    """The proposal for ``pins`` (every pin, those behind ``target``): canary pins (on a listed canary placement
    or a canary cluster) move at once, the others once canary ``gate`` is open, else they are held with the gate's
    message. Returns the ``Change``, or ``held`` (nothing may move; ``ready_at`` when the soak ends) or
    ``invalid`` (a scalar that cannot be edited). ``unpinned`` and ``objects`` go to the rollout plan and the
    facts (see ``rollout_rows``, ``AddOnFacts``)."""
    every, behind = pins
    subject, gate = addon_subject(addon.name), canary.gate
    clusters = set(state.canary_clusters)
    first = {id(pin) for pin in behind if pin.placement in canary.placements or pin.cluster in clusters}
    free = gate is None or gate.allowed  # no canary stage, or the canaries have soaked
    moving = [pin for pin in behind if free or id(pin) in first]
    held = [pin for pin in behind if not (free or id(pin) in first)]
    waits = ""
    if gate is not None:
        verb = "waits" if len(held) == 1 else "wait"
        placements = ", ".join(canary.placements)
        waits = f"{', '.join(p.where for p in held)} {verb} for the canary placement {placements}: {gate.message}"
    ready_at = format_time(gate.ready_at) if gate is not None and gate.ready_at else None
    if not moving:
        return Outcome(subject, Action.HELD, waits, ready_at=ready_at)
    files: dict[str, str] = {}
    for file, found in edits(moving, target.value).items():
        try:
            files[file] = set_scalars(texts[file], file, found)
        except ManifestError as error:
            return Outcome(subject, Action.INVALID, str(error), file)
    moves = tuple(AddOnMove(p.where, p.doc.file, _label(p), id(p) in first) for p in moving)
    facts = AddOnFacts(
        addon=addon.name,
        version=target.version,
        supported=target.offered,
        default=target.default,
        status_from=state.status_from,
        moves=moves,
        held=tuple(AddOnMove(p.where, p.doc.file, _label(p), False) for p in held),
        canary=_canary(canary, target, context),
        ready_at=ready_at,
        updates=updates(addon, state, moving, target.value),
        objects=tuple(objects),
        template=target.template,
        rollout=rollout_rows(
            addon, state, Staged(every, moving, held, canary.placements, gate, target.value), unpinned=unpinned
        ),
    )
    sentence = "; ".join(
        [
            target.newest,
            "moves " + ", ".join(f"{m.where}{' (canary)' if m.canary else ''} from {m.from_version}" for m in moves),
            *([waits] if held else []),
        ]
    )
    on_canaries = " on its canaries" if all(m.canary for m in moves) else ""
    return Change(
        subject=subject,
        kind=Kind.ADDON_VERSION,
        branch=branch_name(context.branch_prefix, subject),
        title=f"Upgrade add-on {addon.name} to {target.label}{on_canaries}",
        files=tuple(FileChange(path, text) for path, text in sorted(files.items())),
        from_version=", ".join(sorted({p.version for p in moving}, key=parse_addon_version)),
        to_version=target.version,
        reason=sentence + ".",
        addon=facts,
    )


def _label(pin: Pin) -> str:
    """``v1``, or ``hello-v1 (v1)`` for a template reference (``no version`` when its template has none)."""
    return pin.value if pin.value == pin.version else f"{pin.value} ({pin.version or 'no version'})"


def _canary(canary: CanaryStage, target: Target, context: AddOnContext) -> str:
    """How the canary gate stands, in a sentence."""
    if canary.gate is not None:
        soaked = f"the others once every canary has run {target.label} for {format_duration(context.soak)}"
        return f"placement {', '.join(canary.placements)} first, {soaked}; now: {canary.gate.message}"
    if not context.canary_placements:
        return "no canary placement is configured: not gated"
    return f"the add-on lists no canary placement ({', '.join(context.canary_placements)}): not gated"
