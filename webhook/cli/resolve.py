"""``upgrade-gate resolve``: which bundle OLM v1 would install, and whether a revision is due."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import click

from webhook.cli.common import (
    EXIT_NEGATIVE,
    Case,
    Output,
    fail,
    handle_errors,
    junit_cases,
    output_options,
    rendered,
    table,
    warn,
)
from webhook.errors import CatalogError, InputError, InvalidVersion, ManifestError
from webhook.io import open_catalog
from webhook.manifests import MANIFEST_SUFFIXES, iter_yaml_documents, load_manifests
from webhook.olm import Catalog, ClusterExtension, InstalledBundle, UpgradeCheck, VersionRelease, check_extension


@click.command()
@click.option(
    "-f",
    "--filename",
    "manifest",
    required=True,
    type=click.Path(exists=True, path_type=Path),
    help="ClusterExtension manifests (olm.operatorframework.io/v1): a file (several documents) or a directory.",
)
@click.option(
    "--catalog",
    "catalogs",
    multiple=True,
    required=True,
    metavar="PATH|URL",
    help="FBC directory or file, or a catalogd base URL; repeat for several catalogs.",
)
@click.option(
    "--installed",
    metavar="NAME@VERSION",
    help="Installed bundle; overrides the manifest's status.install.bundle.",
)
@output_options(aliases={"text": "table"})
@handle_errors
def resolve(manifest: Path, catalogs: tuple[str, ...], installed: str | None, output: Output) -> None:
    """Resolve ClusterExtensions against catalogs exactly as OLM v1 does.

    Applies the channel filter, the spec.version range (Masterminds), upgrade edges from the installed
    bundle (replaces, skips, skipRange; one hop), deprecations, catalog selector and priority, and says
    whether a ClusterExtensionRevision is due (none for a pinned version, none without an upgrade).

    A catalog directory may hold a clustercatalog.yaml (ClusterCatalog manifest) giving the catalog's name,
    labels, spec.priority, spec.availabilityMode and Serving condition. A catalog directory holds its FBC
    documents directly or in package directories one level down (<package>/catalog.json, as catalogd and opm
    lay them out); a directory with none there is bad input, and nothing deeper is searched.

    One ClusterExtension is explained in full; several (a directory, or a file of several documents) give
    a table with one row each, and -o json a list of the same documents. -o junit: one test case per
    ClusterExtension, failing when it does not resolve.

    \b
    Exit codes: 0 resolved, 1 a resolution error (upstream's message on stderr) or a catalog that cannot be
    fetched (404), 2 bad input, 3 catalogd does not answer, fails (5xx) or throttles (429): retry.
    \b
    Example (what OLM v1 would upgrade cloudnative-pg 1.27.0 to):
      upgrade-gate resolve -f examples/clusterextension.yaml \\
          --catalog catalogs/certified-operators-v4.22 --installed cloudnative-pg.v1.27.0@1.27.0
    """
    extensions = _extensions(manifest)
    loaded = [_open(location) for location in catalogs]
    if installed is not None:
        if len(extensions) > 1:
            raise InputError(f"--installed needs one ClusterExtension; {manifest} has {len(extensions)}")
        extension = extensions[0]
        bundle = _installed(installed, extension.source.package, loaded)
        extensions = [ClusterExtension(extension.name, extension.source, bundle)]
    for catalog in loaded:
        for problem in catalog.unattributed:
            warn(str(problem))
    checks = [check_extension(extension, loaded) for extension in extensions]
    output.emit(lambda form: _render(form, checks, loaded))
    failed = [c for c in checks if c.error is not None]
    if len(checks) > 1 and failed:
        names = ", ".join(c.extension.name for c in failed)
        fail(f"{len(failed)} of {len(checks)} ClusterExtensions do not resolve: {names}", EXIT_NEGATIVE)
    if failed:
        fail(_error(failed[0]), EXIT_NEGATIVE)


def _open(location: str) -> Catalog:
    """``open_catalog``, after the bounded check of a directory (``_has_blob``): a directory that is no catalog
    (``--catalog /tmp``) is bad input before any walk below it."""
    path = Path(location)
    if path.is_dir() and not _has_blob(path):
        raise CatalogError(
            f"{path}: not a File-Based Catalog: no FBC document (a .json or .yaml file with a schema) in it or in "
            "its package directories"
        )
    return open_catalog(location)


def _has_blob(directory: Path) -> bool:
    """Whether a file directly in ``directory`` or in one of its subdirectories (a package directory), hidden
    entries aside, starts with an FBC blob (a mapping with a string ``schema``; a ClusterCatalog manifest has
    none). Reads two levels of the tree at most, and files only until one qualifies."""
    return any(_starts_with_blob(file) for file in _candidates(directory))


def _candidates(directory: Path) -> Iterator[Path]:
    entries = sorted(p for p in directory.iterdir() if not p.name.startswith("."))
    yield from (p for p in entries if p.is_file() and p.suffix in MANIFEST_SUFFIXES)
    for folder in (p for p in entries if p.is_dir()):
        yield from sorted(
            p for p in folder.iterdir() if p.suffix in MANIFEST_SUFFIXES and not p.name.startswith(".") and p.is_file()
        )


def _starts_with_blob(file: Path) -> bool:
    """Whether the first value of ``file`` (a JSON stream, or multi-document YAML) is an FBC blob; only that
    value is decoded."""
    try:
        text = file.read_text(encoding="utf-8")
        if file.suffix == ".json":
            first, _ = json.JSONDecoder().raw_decode(text.lstrip())
        else:
            first = next((document for document, _ in iter_yaml_documents(text, str(file))), None)
    except (OSError, ValueError, ManifestError):  # ValueError: JSONDecodeError, UnicodeDecodeError
        return False
    return isinstance(first, Mapping) and isinstance(first.get("schema"), str)


def _error(check: UpgradeCheck) -> str:
    return f"{check.error}; {check.unavailable}" if check.unavailable else str(check.error)


def _render(form: str, checks: list[UpgradeCheck], catalogs: list[Catalog]) -> str:
    """The checks in the output format ``form``: one ClusterExtension's JSON document or explanation, several
    as a list or a table; JUnit: a test case per ClusterExtension, failing (with the resolution error) when it
    does not resolve, else the resolved bundle and the revision due as system-out."""
    return rendered(
        form,
        table=lambda: (_text(checks[0], catalogs) if len(checks) == 1 else _table(checks)) + "\n",
        document=lambda: _document(checks[0]) if len(checks) == 1 else [_document(c) for c in checks],
        junit=lambda: junit_cases("resolve", [_case(c) for c in checks]),
    )


def _case(check: UpgradeCheck) -> Case:
    if check.error is not None or check.resolution is None:
        return Case(check.extension.name, check.extension.source.package, _error(check), "unresolved")
    due = f"revision {check.revision.name} due" if check.revision else "no revision due"
    resolved = f"resolves to {check.resolution.bundle.name} ({check.resolution.version}); {due}"
    return Case(check.extension.name, check.extension.source.package, output=resolved)


def _extensions(path: Path) -> list[ClusterExtension]:
    """The ClusterExtensions in ``path`` (a file or a directory); names must be unique."""
    extensions: dict[str, ClusterExtension] = {}
    for manifest, origin in load_manifests(path, "ClusterExtension"):
        extension = ClusterExtension.from_manifest(manifest, origin)
        if extension.name in extensions:
            raise ManifestError(f"{origin}: ClusterExtension {extension.name} is defined twice")
        extensions[extension.name] = extension
    return list(extensions.values())


def _table(checks: list[UpgradeCheck]) -> str:
    """One row per extension: what is installed, what OLM v1 would resolve, and the revision due or the error."""
    header = ("EXTENSION", "PACKAGE", "INSTALLED", "RESOLVED", "CATALOG", "REVISION")
    rows = []
    for check in checks:
        installed = check.extension.installed
        resolution = check.resolution
        outcome = check.revision.name if check.revision else "-"
        if check.error is not None:
            outcome = f"error: {_error(check)}"
        rows.append(
            (
                check.extension.name,
                check.extension.source.package,
                installed.version if installed else "-",
                str(resolution.version) if resolution else "-",
                resolution.catalog if resolution else "-",
                outcome,
            )
        )
    return "\n".join(table(header, rows))


def _installed(text: str, package: str, catalogs: list[Catalog]) -> InstalledBundle:
    """``--installed NAME@VERSION``, checked: the version parses, and the bundle is not another package's."""
    bundle = InstalledBundle.parse(text)
    try:
        VersionRelease.parse(bundle.version)
    except InvalidVersion as error:
        raise InputError(f"--installed {text!r}: {error}") from None
    if any(c.package(package).bundle(bundle.name) for c in catalogs):
        return bundle
    owner = next((p for p in (c.package_of_bundle(bundle.name) for c in catalogs) if p), None)
    if owner is not None:
        raise InputError(f"--installed {text!r}: bundle {bundle.name} belongs to package {owner}, not {package}")
    warn(f"--installed bundle {bundle.name} is in no catalog's package {package}")
    return bundle


def _document(check: UpgradeCheck) -> dict[str, Any]:
    installed = check.extension.installed
    resolution = check.resolution
    edge = resolution.edge if resolution else None
    return {
        "extension": check.extension.name,
        "package": check.extension.source.package,
        "installed": {"name": installed.name, "version": installed.version} if installed else None,
        "resolved": {
            "name": resolution.bundle.name,
            "version": str(resolution.version),
            "catalog": resolution.catalog,
        }
        if resolution
        else None,
        "revision": {"name": check.revision.name, "version": check.revision.version} if check.revision else None,
        "edge": {"kind": edge.kind, "channel": edge.channel, "entry": edge.entry, "value": edge.value}
        if edge
        else None,
        "dropped": [
            {"bundle": d.bundle, "catalog": d.catalog, "version": d.version, "reason": d.reason}
            for d in (resolution.dropped if resolution else ())
        ],
        "error": check.error,
        "unavailable": check.unavailable,
    }


def _text(check: UpgradeCheck, catalogs: list[Catalog]) -> str:
    source = check.extension.source
    installed = check.extension.installed
    lines = [
        f"extension  {check.extension.name}",
        f"package    {source.package}",
        f"installed  {f'{installed.name} ({installed.version})' if installed else '-'}",
        f"catalogs   {', '.join(c.name for c in catalogs)}",
    ]
    if check.resolution is None:
        lines.append(f"error      {check.error}")
        if check.unavailable:
            lines.append(f"because    {check.unavailable}")
        return "\n".join(lines)
    resolution = check.resolution
    lines += [
        f"resolved   {resolution.bundle.name} ({resolution.version}) from catalog {resolution.catalog}",
        f"edge       {resolution.edge.describe()}",
        f"revision   {check.revision.name if check.revision else '- (none due)'}",
    ]
    if resolution.dropped:
        lines.append(f"dropped    {len(resolution.dropped)} other bundles (-o json lists each with its reason)")
    return "\n".join(lines)
