"""Which Events a revision's status change calls for. Pure: decided from the status written before and the new
assessment, so a restarted controller never repeats an Event for a change it already reported.

Each ``Notice`` is recorded on the revision and on its ClusterExtension (``webhook.controller.recorder``):

=================  =======  =========================================================================
reason             type     when
=================  =======  =========================================================================
UpgradeAvailable   Normal   the first status of a revision that waits for approval or is progressing
Approved           Normal   ``Approved`` becomes True
ApprovalReset      Normal   ``Approved`` was True and is not any more (a newer version reset it)
UpgradeHeld        Warning  operator-controller reports a (new) refusal of the approved upgrade: the gate's message
Succeeded          Normal   the installed bundle reached the revision's version
Failed             Warning  the revision failed (its ClusterExtension is gone, or the upgrade is blocked)
=================  =======  =========================================================================
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from webhook.conditions import find_condition
from webhook.controller.status import FAILED, HELD, PENDING, PROGRESSING, SUCCEEDED, Assessment, state_of

NORMAL, WARNING = "Normal", "Warning"


@dataclass(frozen=True, slots=True)
class Notice:
    """One Event to record: ``type`` (Normal or Warning), ``reason`` (CamelCase), ``action`` (what the controller
    did or saw, CamelCase, as ``events.k8s.io/v1`` asks) and ``note`` (the human message, at most 1 kB)."""

    type: str
    reason: str
    action: str
    note: str


def notices(name: str, before: Sequence[Mapping[str, Any]] | None, assessment: Assessment) -> list[Notice]:
    """The Events for revision ``name`` whose conditions were ``before`` and whose state is now ``assessment``,
    in the order they happened (see the module doc)."""
    old_state = state_of(before)
    was_approved = (find_condition(before, "Approved") or {}).get("status") == "True"
    found: list[Notice] = []
    if old_state is None and assessment.state in (PENDING, PROGRESSING, HELD):
        note = assessment.message if name in assessment.message else f"{assessment.message} ({name})"
        found.append(Notice(NORMAL, "UpgradeAvailable", "Propose", note))
    if assessment.approved and not was_approved:
        found.append(Notice(NORMAL, "Approved", "Approve", f"ClusterExtensionRevision {name} {assessment.approval[1]}"))
    if not assessment.approved and was_approved:
        found.append(
            Notice(
                NORMAL, "ApprovalReset", "ResetApproval", f"ClusterExtensionRevision {name}: {assessment.approval[1]}"
            )
        )
    held_before = str((find_condition(before, "Progressing") or {}).get("message") or "")
    if assessment.held and assessment.held not in held_before:
        found.append(Notice(WARNING, "UpgradeHeld", "Hold", assessment.message))
    if assessment.state == SUCCEEDED and old_state != SUCCEEDED:
        found.append(Notice(NORMAL, "Succeeded", "Complete", assessment.message))
    if assessment.state == FAILED and old_state != FAILED:
        found.append(Notice(WARNING, "Failed", "Fail", assessment.message))
    return found
