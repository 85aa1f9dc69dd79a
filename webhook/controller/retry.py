"""When to make operator-controller retry a held upgrade at once. Pure: reads a ClusterExtension, its revisions and
their assessments; no I/O.

operator-controller retries a release write the gate refused with controller-runtime's per-item exponential
backoff (5 ms doubling up to 1000 s), and an approval triggers nothing by itself: without help, an approved upgrade
starts at the next retry, up to about 17 minutes later. Any write to the ClusterExtension makes operator-controller
reconcile it at once. So once a revision whose upgrade operator-controller reports as held (``Progressing`` reason
``Retrying``) is approved, the controller writes one annotation on the ClusterExtension:

    upgrade-gate.io/retry-for: <revision name>@<spec.approvedAt, else metadata.generation>

It is written once per approval (the value names the approval, so a later reconcile finds it written), is metadata
only (the ClusterExtension's generation and spec do not change), and is not in Git: Argo CD's diff and Flux's
server-side apply leave fields they do not manage alone, so neither reports drift nor removes it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from webhook.controller.status import HELD, Assessment

RETRY_ANNOTATION = "upgrade-gate.io/retry-for"


def approval_token(revision: Mapping[str, Any]) -> str:
    """``<name>@<spec.approvedAt>`` (``@<metadata.generation>`` where no approval time was stamped)."""
    metadata = revision.get("metadata") or {}
    spec = revision.get("spec") or {}
    return f"{metadata.get('name')}@{spec.get('approvedAt') or metadata.get('generation') or 0}"


def retry_due(
    extension: Mapping[str, Any] | None, assessed: Iterable[tuple[Mapping[str, Any], Assessment]]
) -> tuple[Mapping[str, Any], str] | None:
    """The approved, held revision to retry for and the annotation value to write, or ``None`` when nothing is due
    (no such revision, or the ClusterExtension already carries that value). Revisions are taken in name order."""
    if extension is None:
        return None
    annotations = (extension.get("metadata") or {}).get("annotations") or {}
    for revision, assessment in sorted(assessed, key=lambda pair: str((pair[0].get("metadata") or {}).get("name"))):
        if assessment.state == HELD:
            token = approval_token(revision)
            return None if annotations.get(RETRY_ANNOTATION) == token else (revision, token)
    return None
