"""What resolution reads from a ClusterExtension (``olm.operatorframework.io/v1``).

Follows operator-controller ``api/v1/clusterextension_types.go``: ``spec.source.catalog.{packageName,
version, channels, selector, upgradeConstraintPolicy}`` and ``status.install.bundle.{name, version}``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from webhook.errors import ManifestError

API_VERSION = "olm.operatorframework.io/v1"
POLICIES = ("CatalogProvided", "SelfCertified")


@dataclass(frozen=True, slots=True)
class InstalledBundle:
    """The installed bundle: its name and version string as ``status.install.bundle`` shows them."""

    name: str
    version: str

    @classmethod
    def parse(cls, text: str) -> InstalledBundle:
        """Read ``NAME@VERSION`` (the CLI's ``--installed``); raises ``ManifestError`` on another shape."""
        name, sep, version = text.rpartition("@")
        if not sep or not name or not version:
            raise ManifestError(f"--installed {text!r}: expected NAME@VERSION, e.g. my-operator.v1.2.3@1.2.3")
        return cls(name, version)


@dataclass(frozen=True, slots=True)
class CatalogSource:
    """``spec.source.catalog``: which package, which versions, which channels, which catalogs."""

    package: str
    version: str = ""
    channels: tuple[str, ...] = ()
    selector: Mapping[str, Any] | None = None
    upgrade_constraint_policy: str = "CatalogProvided"


@dataclass(frozen=True, slots=True)
class ClusterExtension:
    """The parts of a ClusterExtension that resolution and the revision flow read."""

    name: str
    source: CatalogSource
    installed: InstalledBundle | None

    @classmethod
    def from_manifest(cls, manifest: Mapping[str, Any], origin: str) -> ClusterExtension:
        """Read a ClusterExtension manifest; raises ``ManifestError`` naming ``origin`` and the field."""
        if manifest.get("kind") != "ClusterExtension":
            raise ManifestError(f"{origin}: expected kind ClusterExtension, found {manifest.get('kind')!r}")
        name = _get(manifest, "metadata.name", str, origin)
        source_type = _get(manifest, "spec.source.sourceType", str, origin, "Catalog")
        if source_type != "Catalog":
            raise ManifestError(f"{origin}: spec.source.sourceType must be Catalog, not {source_type!r}")
        package = _get(manifest, "spec.source.catalog.packageName", str, origin)
        channels = _get(manifest, "spec.source.catalog.channels", list, origin, [])
        if not all(isinstance(c, str) for c in channels):
            raise ManifestError(f"{origin}: spec.source.catalog.channels must be a list of channel names")
        policy = _get(manifest, "spec.source.catalog.upgradeConstraintPolicy", str, origin, "CatalogProvided")
        if policy not in POLICIES:
            raise ManifestError(
                f"{origin}: spec.source.catalog.upgradeConstraintPolicy must be one of "
                f"{', '.join(POLICIES)}, not {policy!r}"
            )
        source = CatalogSource(
            package=package,
            version=_get(manifest, "spec.source.catalog.version", str, origin, ""),
            channels=tuple(channels),
            selector=_get(manifest, "spec.source.catalog.selector", dict, origin, None),
            upgrade_constraint_policy=policy,
        )
        bundle = _get(manifest, "status.install.bundle", dict, origin, None)
        installed = None
        if bundle:
            installed = InstalledBundle(
                _get(bundle, "name", str, f"{origin}: status.install.bundle"),
                _get(bundle, "version", str, f"{origin}: status.install.bundle"),
            )
        return cls(name, source, installed)


_MISSING = object()


def _get(data: Mapping[str, Any], path: str, kind: type, origin: str, default: Any = _MISSING) -> Any:
    value: Any = data
    for key in path.split("."):
        value = value.get(key) if isinstance(value, Mapping) else None
    if value is None:
        if default is _MISSING:
            raise ManifestError(f"{origin}: {path} is required")
        return default
    if not isinstance(value, kind) or (kind is str and not value and default is _MISSING):
        raise ManifestError(f"{origin}: {path} must be a non-empty {_KIND_NAMES[kind]}")
    return value


_KIND_NAMES: dict[type, str] = {str: "string", list: "list", dict: "mapping"}
