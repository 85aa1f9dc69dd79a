"""The ClusterExtensionRevision lifecycle's decision: is a revision due for this extension, and for what?

Rules (the ClusterExtensionRevision lifecycle, "Version Constraint Handling" and "ClusterExtensionRevision
Management"):

* no installed bundle: no revision (initial installs need no approval);
* a pinned constraint (no operator among ``> < = ~ ^ |`` and, trimmed, equal to the installed version):
  no revision, without resolving;
* otherwise resolve (a range, or no constraint = any upgrade); a revision is due when the resolved bundle
  differs from the installed one; none when the installed bundle is the newest or nothing is in range.

The revision is named ``<extension>-<version>``. A version with build metadata (``1.0.0+2``, a legacy
release) cannot appear in a Kubernetes name, so ``+`` becomes ``-`` in the name only (``ext-1.0.0-2``);
``spec.version`` keeps the exact version string, as ``status.install.bundle.version`` will show it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from webhook.catalog import Catalog
from webhook.errors import ResolutionError
from webhook.resolve.extension import ClusterExtension
from webhook.resolve.resolver import Resolution, explain_no_bundles, resolve

PIN_OPERATORS = "><=~^|"


@dataclass(frozen=True, slots=True)
class RevisionProposal:
    """The ClusterExtensionRevision the lifecycle asks for: name, extension, version and bundle."""

    name: str
    extension: str
    version: str
    bundle_name: str

    @classmethod
    def for_resolution(cls, extension: str, resolution: Resolution) -> RevisionProposal:
        """The revision proposing ``resolution``'s bundle for ``extension``."""
        version = str(resolution.version)
        return cls(f"{extension}-{version.replace('+', '-')}", extension, version, resolution.bundle.name)


def is_pinned(constraint: str, installed_version: str) -> bool:
    """The lifecycle's ``isPinnedVersion``: no range operator, and equal (trimmed) to the installed version."""
    if any(op in constraint for op in PIN_OPERATORS):
        return False
    return constraint.strip() == installed_version.strip()


def needs_resolution(extension: ClusterExtension) -> bool:
    """False when the lifecycle forbids a revision before resolving: nothing installed, or a pinned version."""
    installed = extension.installed
    if installed is None:
        return False
    return not (extension.source.version and is_pinned(extension.source.version, installed.version))


def revision_for(extension: ClusterExtension, resolution: Resolution | None) -> RevisionProposal | None:
    """The revision due for ``extension`` given its resolution (``None`` when resolution failed)."""
    if resolution is None or not needs_resolution(extension) or not resolution.is_upgrade:
        return None
    return RevisionProposal.for_resolution(extension.name, resolution)


@dataclass(frozen=True, slots=True)
class UpgradeCheck:
    """One extension checked against its catalogs: the resolution or upstream's error, and the revision due.

    ``unavailable`` explains an error whose cause is that no catalog offers the package at all (the selector
    selects no catalog, or none of the selected ones has the package; ``explain_no_bundles``).
    """

    extension: ClusterExtension
    resolution: Resolution | None
    error: str | None
    revision: RevisionProposal | None
    unavailable: str | None = None


def check_extension(extension: ClusterExtension, catalogs: Sequence[Catalog]) -> UpgradeCheck:
    """Resolve ``extension`` as OLM v1 would and apply the ClusterExtensionRevision lifecycle's revision rules.

    A ``ResolutionError`` becomes ``error`` (a negative answer, not an exception); ``InvalidConstraint``,
    ``InputError`` and ``CatalogError`` propagate (bad input).
    """
    try:
        resolution = resolve(extension.source, catalogs, extension.installed)
    except ResolutionError as error:
        return UpgradeCheck(extension, None, str(error), None, explain_no_bundles(extension.source, catalogs))
    return UpgradeCheck(extension, resolution, None, revision_for(extension, resolution))
