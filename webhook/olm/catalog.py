"""File-Based Catalogs (FBC): the model OLM v1 resolves against, and its loaders.

Follows operator-registry ``alpha/declcfg`` (schemas ``olm.package``, ``olm.channel``, ``olm.bundle``,
``olm.deprecations``; other schemas are kept and ignored) and catalogd's layout (one folder per package,
``catalog.json`` as a JSON stream; ``<base>/api/v1/all`` over HTTP, read by ``webhook.io.catalogd``).

Loading is cheap: blobs are parsed and grouped by package, and a package's model is built (and its blobs
validated) the first time it is asked for. So one malformed package never hides the others: asking for it
raises ``CatalogError`` naming the file and line, every other package resolves. ``Catalog.problems()``
builds every package and lists all errors.

Reading catalogs from files and streams is ``webhook.olm.fbc``'s; over HTTP, ``webhook.io.catalogd``'s.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import semver

from webhook.errors import CatalogError, InvalidVersion
from webhook.versions import parse_version

PACKAGE, CHANNEL, BUNDLE, DEPRECATIONS = "olm.package", "olm.channel", "olm.bundle", "olm.deprecations"
NAME_LABEL = "olm.operatorframework.io/metadata.name"
CSV_METADATA = "olm.csv.metadata"
DEPENDENCY_PROPERTIES = frozenset({"olm.package.required", "olm.gvk.required", "olm.constraint"})

_RELEASE_ID = re.compile(r"^(?:0|[1-9][0-9]*|[0-9]*[A-Za-z-][0-9A-Za-z-]*)$")
_MAX_RELEASE_LENGTH = 20


@dataclass(frozen=True, slots=True)
class Location:
    """Where a blob came from: a file (or URL) and its 1-based line."""

    source: str
    line: int

    def __str__(self) -> str:
        return f"{self.source}:{self.line}"


@dataclass(frozen=True, slots=True)
class VersionRelease:
    """A bundle's version and optional release (operator-controller ``bundleutil.GetVersionAndRelease``).

    Legacy registry+v1 rule (``BundleReleaseSupport`` gate off, upstream's default): build metadata that
    reads as a release (dot-separated prerelease-style identifiers, no leading zeros, at most 20 chars)
    becomes ``release`` and is dropped from ``version``: ``1.0.0+2`` is version 1.0.0, release (2,).
    ``1.0.0+001`` keeps its build metadata and has no release.
    """

    version: semver.Version
    release: tuple[int | str, ...] | None = None

    @classmethod
    def parse(cls, text: str) -> VersionRelease:
        """Parse a bundle or installed version string; raises ``InvalidVersion`` (blang ``Parse`` rules)."""
        version = parse_version(text)
        build = version.build
        if build and len(build) <= _MAX_RELEASE_LENGTH:
            ids = build.split(".")
            if all(_RELEASE_ID.match(i) for i in ids):
                release = tuple(int(i) if i.isdigit() else i for i in ids)
                return cls(version.replace(build=None), release)
        return cls(version)

    def sort_key(self) -> tuple[semver.Version, tuple[int, tuple[tuple[int, int | str], ...]]]:
        """Ascending order key: SemVer precedence, then release (unset < any; ids as prerelease ids)."""
        if self.release is None:
            return (self.version, (0, ()))
        return (self.version, (1, tuple((0, i) if isinstance(i, int) else (1, i) for i in self.release)))

    def same_as(self, other: VersionRelease) -> bool:
        """Equal version (build ignored) and equal release: upstream ``ExactVersionRelease``."""
        return self.version.compare(other.version) == 0 and self.release == other.release

    def __str__(self) -> str:
        """The legacy status form: the release re-embedded as build metadata (``1.0.0+2``)."""
        if self.release is None:
            return str(self.version)
        return str(self.version.replace(build=".".join(str(i) for i in self.release)))


@dataclass(frozen=True, slots=True)
class ChannelEntry:
    """One ``olm.channel`` entry: a bundle name and the upgrade edges that lead to it."""

    name: str
    replaces: str = ""
    skips: tuple[str, ...] = ()
    skip_range: str = ""


@dataclass(frozen=True, slots=True)
class Channel:
    """An ``olm.channel`` blob: a named stream of entries of one package."""

    name: str
    package: str
    entries: tuple[ChannelEntry, ...]
    location: Location

    def entry(self, name: str) -> ChannelEntry | None:
        """The entry for bundle ``name``, if this channel has one."""
        for entry in self.entries:
            if entry.name == name:
                return entry
        return None


@dataclass(frozen=True, slots=True)
class Property:
    """A bundle property: ``type`` and its raw JSON ``value``."""

    type: str
    value: Any


@dataclass(frozen=True, slots=True)
class Bundle:
    """An ``olm.bundle`` blob. ``version_text`` is the ``olm.package`` property's version (or ``None``)."""

    name: str
    package: str
    image: str
    properties: tuple[Property, ...]
    location: Location
    version_text: str | None
    version_release: VersionRelease | None
    version_error: str | None = None

    def csv_metadata(self) -> Mapping[str, Any]:
        """The ``olm.csv.metadata`` property's value (the ClusterServiceVersion's description, displayName,
        links, maintainers, provider, ...), or an empty mapping when the bundle carries none."""
        for prop in self.properties:
            if prop.type == CSV_METADATA and isinstance(prop.value, Mapping):
                return prop.value
        return {}

    def dependency_property(self) -> str | None:
        """The first property type that declares a dependency OLM v1 does not support, if any."""
        for prop in self.properties:
            if prop.type in DEPENDENCY_PROPERTIES:
                return prop.type
        return None


@dataclass(frozen=True, slots=True)
class Deprecation:
    """An ``olm.deprecations`` blob; only bundle-scoped entries affect resolution."""

    package: str
    bundles: Mapping[str, str]  # bundle name -> message
    channels: Mapping[str, str]  # channel name -> message
    package_message: str | None
    location: Location


@dataclass(frozen=True, slots=True)
class Package:
    """Everything a catalog holds for one package: what ``GetPackage`` returns upstream."""

    name: str
    default_channel: str
    channels: tuple[Channel, ...]
    bundles: tuple[Bundle, ...]
    deprecations: tuple[Deprecation, ...]
    other_blobs: int

    @property
    def is_empty(self) -> bool:
        """True when the catalog has no blob at all for this package (upstream ``isFBCEmpty``)."""
        return not (self.channels or self.bundles or self.deprecations or self.other_blobs)

    def bundle(self, name: str) -> Bundle | None:
        """The bundle called ``name``, if any."""
        for bundle in self.bundles:
            if bundle.name == name:
                return bundle
        return None


@dataclass(frozen=True, slots=True)
class Blob:
    """An FBC blob kept as read: its schema, where it was read, and its JSON text (or decoded YAML).

    JSON blobs keep their text, a compact string, and are decoded again only when their package is
    built: retaining decoded dicts for a 100,000-bundle catalog costs ~10x the memory and most of the
    load time.
    """

    schema: str
    location: Location
    raw: str | Mapping[str, Any]

    @property
    def data(self) -> Mapping[str, Any]:
        """The decoded blob."""
        decoded: Mapping[str, Any] = json.loads(self.raw) if isinstance(self.raw, str) else self.raw
        return decoded


@dataclass
class Catalog:
    """A catalog: its ClusterCatalog metadata and its blobs grouped by package.

    ``priority`` (int32, default 0), ``availability_mode`` (``Available``/``Unavailable``) and ``serving``
    (the ``Serving`` condition) follow ClusterCatalog ``olm.operatorframework.io/v1``. ``labels`` always
    carry ``olm.operatorframework.io/metadata.name: <name>``, as catalogd sets it.
    """

    name: str
    blobs: dict[str, list[Blob]] = field(default_factory=dict)
    labels: dict[str, str] = field(default_factory=dict)
    priority: int = 0
    availability_mode: str = "Available"
    serving: bool = True
    unattributed: list[CatalogError] = field(default_factory=list)
    _packages: dict[str, Package | CatalogError] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        self.labels = {**self.labels, NAME_LABEL: self.name}

    def with_metadata(self, meta: Catalog) -> Catalog:
        """This catalog's content under ``meta``'s ClusterCatalog name, labels, priority, availability mode and
        Serving (``catalog_from_cluster_catalog``); the parsed packages are shared, not copied."""
        return replace(
            self,
            name=meta.name,
            labels=meta.labels,
            priority=meta.priority,
            availability_mode=meta.availability_mode,
            serving=meta.serving,
        )

    def package_names(self) -> list[str]:
        """Sorted names of every package with at least one blob."""
        return sorted(self.blobs)

    def package(self, name: str) -> Package:
        """The package model (empty if the catalog has nothing for it); raises ``CatalogError``.

        Built once and cached; a malformed blob of this package raises with its file and line.
        """
        built = self._packages.get(name)
        if built is None:
            try:
                built = _build_package(name, self.blobs.get(name, ()))
            except CatalogError as error:
                built = error
            self._packages[name] = built
        if isinstance(built, CatalogError):
            raise built
        return built

    def problems(self) -> list[CatalogError]:
        """Every error in the catalog (blobs that could not be read, then per package, sorted)."""
        found = list(self.unattributed)
        for name in self.package_names():
            try:
                self.package(name)
            except CatalogError as error:
                found.append(error)
        return found

    def package_of_bundle(self, name: str) -> str | None:
        """The package whose ``olm.bundle`` blob is called ``name``, if any (decodes every bundle blob)."""
        for package, blobs in sorted(self.blobs.items()):
            if any(b.schema == BUNDLE and b.data.get("name") == name for b in blobs):
                return package
        return None

    def bundle_count(self) -> int:
        """How many ``olm.bundle`` blobs the catalog holds (validated or not)."""
        return sum(1 for blobs in self.blobs.values() for b in blobs if b.schema == BUNDLE)

    def add(self, blob: object, location: Location, folder_package: str | None, raw: str | None = None) -> None:
        """Index one decoded blob under its package (``name`` for olm.package, else ``package``).

        ``raw`` is the blob's JSON text, kept instead of the decoded value when given.
        """
        if not isinstance(blob, dict):
            self.record_error(CatalogError(f"{location}: a catalog blob must be a JSON object"), folder_package)
            return
        schema = blob.get("schema")
        package = blob.get("name") if schema == PACKAGE else blob.get("package")
        if not isinstance(package, str) or not package:
            key = "name" if schema == PACKAGE else "package"
            what = f"{schema} blob" if isinstance(schema, str) and schema else "blob without a schema"
            self.record_error(CatalogError(f"{location}: {what} has no {key}"), folder_package)
            return
        self.blobs.setdefault(package, []).append(Blob(str(schema), location, blob if raw is None else raw))

    def record_error(self, error: CatalogError, folder_package: str | None) -> None:
        """Keep a read error: against the package whose folder it came from, else against the catalog."""
        if folder_package is None:
            self.unattributed.append(error)
        else:
            self._packages[folder_package] = error
            self.blobs.setdefault(folder_package, [])


# -- building a package from its blobs -------------------------------------------------------------------


def _build_package(name: str, blobs: Sequence[Blob]) -> Package:
    default_channel = ""
    channels: list[Channel] = []
    bundles: list[Bundle] = []
    deprecations: list[Deprecation] = []
    others = 0
    for blob in blobs:
        data, where = blob.data, blob.location
        schema = data.get("schema")
        if schema == PACKAGE:
            default_channel = _optional_str(data, "defaultChannel", where)
        elif schema == CHANNEL:
            channels.append(_channel(data, where))
        elif schema == BUNDLE:
            bundles.append(_bundle(data, where))
        elif schema == DEPRECATIONS:
            deprecations.append(_deprecation(data, where))
        elif isinstance(schema, str) and schema:
            others += 1
        else:
            raise CatalogError(f"{where}: blob has no schema")
    _check_unique([c.name for c in channels], f"channel of package {name!r}", blobs)
    _check_unique([b.name for b in bundles], f"bundle of package {name!r}", blobs)
    return Package(name, default_channel, tuple(channels), tuple(bundles), tuple(deprecations), others)


def _check_unique(names: list[str], what: str, blobs: Sequence[Blob]) -> None:
    seen: set[str] = set()
    for item in names:
        if item in seen:
            where = blobs[0].location.source if blobs else "catalog"
            raise CatalogError(f"{where}: duplicate {what}: {item!r}")
        seen.add(item)


def _required_str(data: Mapping[str, Any], key: str, where: Location) -> str:
    value = data.get(key)
    if not isinstance(value, str) or not value:
        raise CatalogError(f"{where}: {data.get('schema')} blob needs a non-empty string {key!r}")
    return value


def _optional_str(data: Mapping[str, Any], key: str, where: Location) -> str:
    value = data.get(key, "")
    if value is None:
        return ""
    if not isinstance(value, str):
        raise CatalogError(f"{where}: {data.get('schema')} field {key!r} must be a string")
    return value


def _list(data: Mapping[str, Any], key: str, where: Location, what: str) -> list[Any]:
    value = data.get(key)
    if value is None:
        return []
    if not isinstance(value, list):
        raise CatalogError(f"{where}: {what} must be a list")
    return value


def _channel(data: Mapping[str, Any], where: Location) -> Channel:
    name = _required_str(data, "name", where)
    raw_entries = _list(data, "entries", where, f"olm.channel {name!r} entries")
    entries: list[ChannelEntry] = []
    for index, raw in enumerate(raw_entries):
        if not isinstance(raw, Mapping):
            raise CatalogError(f"{where}: olm.channel {name!r} entries[{index}] must be an object")
        skips = raw.get("skips")
        skips = [] if skips is None else skips
        if not isinstance(skips, list) or not all(isinstance(s, str) for s in skips):
            raise CatalogError(f"{where}: olm.channel {name!r} entries[{index}].skips must be a list of names")
        entries.append(
            ChannelEntry(
                name=_required_str(raw, "name", where),
                replaces=_optional_str(raw, "replaces", where),
                skips=tuple(skips),
                skip_range=_optional_str(raw, "skipRange", where),
            )
        )
    return Channel(name, _required_str(data, "package", where), tuple(entries), where)


def _bundle(data: Mapping[str, Any], where: Location) -> Bundle:
    name = _required_str(data, "name", where)
    raw_properties = _list(data, "properties", where, f"olm.bundle {name!r} properties")
    properties: list[Property] = []
    for index, raw in enumerate(raw_properties):
        if not isinstance(raw, Mapping) or not isinstance(raw.get("type"), str):
            raise CatalogError(f"{where}: olm.bundle {name!r} properties[{index}] needs a string type")
        properties.append(Property(raw["type"], raw.get("value")))
    version_text, version_release, error = _bundle_version(name, properties)
    return Bundle(
        name=name,
        package=_required_str(data, "package", where),
        image=_optional_str(data, "image", where),
        properties=tuple(properties),
        location=where,
        version_text=version_text,
        version_release=version_release,
        version_error=error,
    )


def _bundle_version(name: str, properties: list[Property]) -> tuple[str | None, VersionRelease | None, str | None]:
    """Upstream ``GetVersionAndRelease``: the first ``olm.package`` property decides."""
    for prop in properties:
        if prop.type == PACKAGE:
            value = prop.value if isinstance(prop.value, Mapping) else {}
            text = value.get("version")
            if not isinstance(text, str):
                return None, None, "error unmarshalling package property: version is not a string"
            try:
                return text, VersionRelease.parse(text), None
            except InvalidVersion as error:
                return text, None, str(error)
    return None, None, f'no package property found in bundle "{name}"'


def _deprecation(data: Mapping[str, Any], where: Location) -> Deprecation:
    package = _required_str(data, "package", where)
    raw_entries = _list(data, "entries", where, "olm.deprecations entries")
    bundles: dict[str, str] = {}
    channels: dict[str, str] = {}
    package_message: str | None = None
    for index, raw in enumerate(raw_entries):
        reference = raw.get("reference") if isinstance(raw, Mapping) else None
        if not isinstance(reference, Mapping):
            raise CatalogError(f"{where}: olm.deprecations entries[{index}] needs a reference")
        message = _optional_str(raw, "message", where)
        scope = reference.get("schema")
        if scope == PACKAGE:
            package_message = message
        elif scope in (BUNDLE, CHANNEL):
            target = _required_str(reference, "name", where)
            (bundles if scope == BUNDLE else channels)[target] = message
        else:
            raise CatalogError(f"{where}: olm.deprecations entries[{index}] has unknown schema {scope!r}")
    return Deprecation(package, bundles, channels, package_message, where)
