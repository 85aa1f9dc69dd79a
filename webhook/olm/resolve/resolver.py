"""OLM v1 resolution: which bundle a ClusterExtension gets from a set of catalogs.

Follows operator-controller ``resolve.CatalogResolver.Resolve`` (HEAD df2c201d,
``internal/operator-controller/resolve/catalog.go``), step by step:

1. drop ``Unavailable`` catalogs and those the label selector rejects; a selected catalog that is not
   serving aborts the whole resolution;
2. in each catalog: channel filter (requested channels also limit the upgrade edges), ``spec.version``
   range (Masterminds), upgrade edges from the installed bundle unless ``SelfCertified``;
3. in each catalog, one winner: non-deprecated bundles (bundle-scoped ``olm.deprecations``) first, then
   version and release descending, unparsable versions last;
4. across catalogs: a non-deprecated winner supersedes deprecated ones; then the highest
   ``spec.priority`` wins if strictly higher than the runner-up, else ambiguity (versions never compared);
5. the winner must declare no dependency property (no fallback to the next candidate).

Deterministic where upstream is not: bundles of equal version and release are ordered by bundle name
(ascending), so the lexically first name wins; catalogs are walked in name order.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from webhook.errors import InputError, InvalidConstraint, InvalidVersion, ResolutionError
from webhook.golang import quote as go_quote
from webhook.objects import LabelSelector
from webhook.olm.catalog import Bundle, Catalog, Deprecation, Package, VersionRelease
from webhook.olm.resolve.extension import CatalogSource, InstalledBundle
from webhook.olm.resolve.predicates import InAnyChannel, InVersionRange, Predicate, SuccessorOf, channel_list
from webhook.olm.resolve.successors import Edge, Successors
from webhook.versions import parse_constraint


@dataclass(frozen=True, slots=True)
class Dropped:
    """A bundle that did not win, and why (a sentence)."""

    bundle: str
    catalog: str
    version: str | None
    reason: str


@dataclass(frozen=True, slots=True)
class Resolution:
    """The one bundle OLM v1 would install, with its explanation.

    ``version`` is the bundle's parsed version and release; ``edge`` says how it was reached from the
    installed bundle; ``dropped`` lists every other bundle of the package and why it lost, in catalog
    then bundle order; ``deprecation`` is what upstream reports alongside (``resolve.isDeprecated``);
    ``between`` are the versions the winning catalog offers, in the channels considered, strictly between
    the installed version and the resolved one (what the upgrade skips), ascending.
    """

    package: str
    installed: InstalledBundle | None
    bundle: Bundle
    version: VersionRelease
    catalog: str
    edge: Edge
    deprecation: Deprecation | None
    dropped: tuple[Dropped, ...]
    between: tuple[str, ...] = ()

    @property
    def is_upgrade(self) -> bool:
        """True when the resolved bundle differs from the installed one."""
        return self.installed is not None and self.edge.kind != "installed"


@dataclass(frozen=True, slots=True)
class _Query:
    """What is asked of every catalog: the source, its parsed range, and the installed bundle."""

    source: CatalogSource
    range_predicate: InVersionRange | None
    installed: InstalledBundle | None
    installed_version: VersionRelease | None


@dataclass(frozen=True, slots=True)
class _Winner:
    bundle: Bundle
    catalog: Catalog
    deprecated: bool
    deprecation: Deprecation | None
    edge: Edge


def resolve(source: CatalogSource, catalogs: Sequence[Catalog], installed: InstalledBundle | None = None) -> Resolution:
    """Resolve ``source`` (a ClusterExtension's ``spec.source.catalog``) against ``catalogs``.

    ``installed`` is the installed bundle, or ``None`` for a first install.
    Raises ``InvalidConstraint`` (``desired version range "..." is invalid: ...``) and ``InputError``
    (``desired catalog selector is invalid: ...``) for bad input; ``ResolutionError`` with upstream's
    message when no single bundle resolves; ``CatalogError`` when the package's blobs are malformed.
    """
    try:
        selector = LabelSelector.from_dict(source.selector)
    except InputError as error:
        raise InputError(f"desired catalog selector is invalid: {error}") from None
    range_predicate = None
    if source.version:
        try:
            range_predicate = InVersionRange(parse_constraint(source.version), source.version)
        except InvalidConstraint as error:
            raise InvalidConstraint(f"desired version range {go_quote(source.version)} is invalid: {error}") from None
    query = _Query(source, range_predicate, installed, _installed_version(installed))

    dropped: list[Dropped] = []
    found: list[_Winner] = []
    prior_deprecated = False
    prior_deprecation: Deprecation | None = None
    for catalog in sorted(catalogs, key=lambda c: c.name):
        if catalog.availability_mode == "Unavailable" or not selector.matches(catalog.labels):
            continue
        if not catalog.serving:
            raise ResolutionError(
                f"error walking catalogs: error getting package {go_quote(source.package)} from catalog "
                f"{go_quote(catalog.name)}: catalog {go_quote(catalog.name)} is not being served"
            )
        package = catalog.package(source.package)
        if package.is_empty:
            continue
        winner = _best_in_catalog(package, catalog, query, dropped)
        if winner is None:
            continue
        if found and winner.deprecated and not prior_deprecated:
            dropped.append(_lost(winner, "deprecated, and another catalog offers a non-deprecated bundle"))
            continue
        if found and not winner.deprecated and prior_deprecated:
            dropped.extend(_lost(w, "deprecated, and another catalog offers a non-deprecated bundle") for w in found)
            found = []
        found.append(winner)
        prior_deprecated = winner.deprecated
        prior_deprecation = winner.deprecation

    if len(found) > 1:
        found.sort(key=lambda w: -w.catalog.priority)
        if found[0].catalog.priority != found[1].catalog.priority:
            dropped.extend(_lost(w, f"catalog {found[0].catalog.name} has a higher priority") for w in found[1:])
            found = found[:1]
    if len(found) != 1:
        raise ResolutionError(_resolution_error(source, installed, sorted(w.catalog.name for w in found)))

    best = found[0]
    if best.bundle.version_release is None:
        raise ResolutionError(
            f"error getting resolved bundle version for bundle {go_quote(best.bundle.name)}: "
            f"{best.bundle.version_error}"
        )
    dependency = best.bundle.dependency_property()
    if dependency is not None:
        name = go_quote(best.bundle.name)
        raise ResolutionError(
            f"validating bundle {name}: bundle {name} has a dependency declared via property "
            f"{go_quote(dependency)} which is currently not supported"
        )
    return Resolution(
        package=source.package,
        installed=installed,
        bundle=best.bundle,
        version=best.bundle.version_release,
        catalog=best.catalog.name,
        edge=best.edge,
        deprecation=prior_deprecation,
        dropped=tuple(dropped),
        between=_between(best.catalog.package(source.package), source, query.installed_version, best.bundle),
    )


def _between(
    package: Package, source: CatalogSource, installed: VersionRelease | None, target: Bundle
) -> tuple[str, ...]:
    """Versions of ``package`` in the requested channels (all, with none requested) strictly between
    ``installed`` and ``target``, ascending and distinct."""
    if installed is None or target.version_release is None:
        return ()
    channels = [c for c in package.channels if not source.channels or c.name in source.channels]
    names = {entry.name for channel in channels for entry in channel.entries}
    low, high = installed.sort_key(), target.version_release.sort_key()
    found = {
        b.version_release.sort_key(): str(b.version_release)
        for b in package.bundles
        if b.name in names and b.version_release is not None and low < b.version_release.sort_key() < high
    }
    return tuple(found[key] for key in sorted(found))


def explain_no_bundles(source: CatalogSource, catalogs: Sequence[Catalog]) -> str | None:
    """Why ``source`` found nothing at all, beyond upstream's "no bundles found" text: a sentence when the
    catalog selector selects none of ``catalogs`` (or they are all ``Unavailable``), or when no selected
    catalog has the package; ``None`` when some selected catalog has it (the range, channels or edges
    decided). Raises ``InputError`` for an invalid selector.
    """
    if not catalogs:
        return "no catalog was given"
    selector = LabelSelector.from_dict(source.selector)
    names = ", ".join(sorted(c.name for c in catalogs))
    selected = [c for c in catalogs if c.availability_mode != "Unavailable" and selector.matches(c.labels)]
    if not selected:
        if all(selector.matches(c.labels) for c in catalogs):
            return f"every catalog is Unavailable ({names})"
        return f"the catalog selector {selector} selects none of the catalogs ({names})"
    if all(c.package(source.package).is_empty for c in selected):
        found = ", ".join(sorted(c.name for c in selected))
        return f"package {source.package} is in none of the selected catalogs ({found})"
    return None


def _installed_version(installed: InstalledBundle | None) -> VersionRelease | None:
    if installed is None:
        return None
    try:
        return VersionRelease.parse(installed.version)
    except InvalidVersion as error:
        raise ResolutionError(
            "error walking catalogs: error finding upgrade edges: "
            f"failed to get version and release of installed bundle: {error}"
        ) from None


def _best_in_catalog(package: Package, catalog: Catalog, query: _Query, dropped: list[Dropped]) -> _Winner | None:
    """One catalog's candidate list, filtered and ordered as upstream; its first element wins."""
    source, installed, installed_version = query.source, query.installed, query.installed_version
    channels = package.channels
    predicates: list[Predicate] = []
    if source.channels:
        channels = tuple(c for c in package.channels if c.name in source.channels)
        predicates.append(InAnyChannel.of(channels, source.channels))
    if query.range_predicate is not None:
        predicates.append(query.range_predicate)
    successors = None
    if installed is not None and installed_version is not None:
        successors = Successors.of(installed, installed_version, channels)
        if source.upgrade_constraint_policy != "SelfCertified":
            predicates.append(SuccessorOf(successors))

    candidates: list[Bundle] = []
    for bundle in package.bundles:
        failed = next((p for p in predicates if not p(bundle)), None)
        if failed is None:
            candidates.append(bundle)
        else:
            dropped.append(Dropped(bundle.name, catalog.name, _version_text(bundle), failed.reason(bundle)))
    if not candidates:
        return None

    deprecated = package.deprecations[0].bundles if package.deprecations else {}
    candidates.sort(key=lambda b: b.name)
    candidates.sort(key=_version_key, reverse=True)
    candidates.sort(key=lambda b: (b.name in deprecated, b.version_release is None))
    best = candidates[0]
    for other in candidates[1:]:
        dropped.append(Dropped(other.name, catalog.name, _version_text(other), _why_lower(other, best, deprecated)))
    return _Winner(
        bundle=best,
        catalog=catalog,
        deprecated=best.name in deprecated,
        deprecation=package.deprecations[0] if package.deprecations else None,
        edge=_edge_to(best, successors),
    )


def _version_key(bundle: Bundle) -> tuple[int, object]:
    vr = bundle.version_release
    return (0, ()) if vr is None else (1, vr.sort_key())


def _version_text(bundle: Bundle) -> str | None:
    return str(bundle.version_release) if bundle.version_release else bundle.version_text


def _why_lower(bundle: Bundle, best: Bundle, deprecated: Mapping[str, str]) -> str:
    if bundle.name in deprecated and best.name not in deprecated:
        return f"deprecated ({deprecated[bundle.name]})" if deprecated[bundle.name] else "deprecated"
    if bundle.version_release is None:
        return f"version {bundle.version_text!r} does not parse, so it sorts last"
    return f"{best.name} ({best.version_release}) is newer"


def _edge_to(bundle: Bundle, successors: Successors | None) -> Edge:
    if successors is None:
        return Edge("none")
    edge = successors.edge(bundle)
    if edge is not None:
        return edge
    if bundle.version_release is not None and bundle.version_release.same_as(successors.installed_version):
        return Edge("installed")
    return Edge("none")


def _lost(winner: _Winner, reason: str) -> Dropped:
    return Dropped(winner.bundle.name, winner.catalog.name, _version_text(winner.bundle), reason)


def _resolution_error(source: CatalogSource, installed: InstalledBundle | None, catalogs: list[str]) -> str:
    """Upstream ``resolutionError.Error()``: the pieces, each followed by a space, then trimmed."""
    parts = []
    if installed is not None:
        parts.append(f"error upgrading from currently installed version {go_quote(installed.version)}:")
    quoted = go_quote(source.package)
    parts.append(f"found bundles for package {quoted}" if catalogs else f"no bundles found for package {quoted}")
    if source.version:
        parts.append(f"matching version {go_quote(source.version)}")
    if source.channels:
        parts.append(f"in channels {channel_list(source.channels)}")
    if catalogs:
        parts.append(f"in multiple catalogs with the same priority {channel_list(catalogs)}")
    return " ".join(parts)
