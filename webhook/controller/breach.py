"""An installed version that changed without an approval: the gate was down, bypassed, or not yet installed when
operator-controller applied it. Pure: decides from the version seen before and the revisions; no I/O.

The controller remembers each ClusterExtension's installed bundle version (``status.install.bundle.version``, as
operator-controller reports it) from its watch, and on every change asks :func:`unapproved_change`. A first
install (no version before) is no breach, nor is a change to a version that an approved ClusterExtensionRevision of
the extension proposes (``spec.version``, ``spec.approved: true``), which is how every upgrade the gate admits
looks. Versions seen before the controller started are not known: a change made while no replica ran is not
reported.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from webhook.controller.status import extension_of, installed_version


def unapproved_change(
    before: str | None, extension: Mapping[str, Any], revisions: Iterable[Mapping[str, Any]]
) -> str | None:
    """The Warning's note when ``extension``'s installed version moved from ``before`` to a version no approved
    revision of it proposes, else ``None``."""
    name = str((extension.get("metadata") or {}).get("name") or "")
    now = installed_version(extension)
    if not before or not now or now == before:
        return None
    for revision in revisions:
        spec = revision.get("spec") or {}
        if extension_of(revision) == name and spec.get("approved") is True and str(spec.get("version")) == now:
            return None
    return (
        f"ClusterExtension {name} changed from {before} to {now} without an approved ClusterExtensionRevision: "
        "the gate was down, bypassed or not installed when operator-controller applied it"
    )
