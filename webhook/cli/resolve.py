"""``upgrade-gate resolve``: which bundle OLM v1 would install, and whether a revision is due."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from webhook.cli.common import EXIT_NEGATIVE, echo_json, fail, handle_errors
from webhook.errors import InputError, InvalidVersion, ManifestError
from webhook.io import open_catalog
from webhook.manifests import load_manifests
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
@click.option("-o", "--output", type=click.Choice(["text", "json"]), default="text", show_default=True)
@handle_errors
def resolve(manifest: Path, catalogs: tuple[str, ...], installed: str | None, output: str) -> None:
    """Resolve ClusterExtensions against catalogs exactly as OLM v1 does.

    Applies the channel filter, the spec.version range (Masterminds), upgrade edges from the installed
    bundle (replaces, skips, skipRange; one hop), deprecations, catalog selector and priority, and says
    whether a ClusterExtensionRevision is due (none for a pinned version, none without an upgrade).

    A catalog directory may hold a clustercatalog.yaml (ClusterCatalog manifest) giving the catalog's name,
    labels, spec.priority, spec.availabilityMode and Serving condition.

    One ClusterExtension is explained in full; several (a directory, or a file of several documents) give
    a table with one row each, and -o json a list of the same documents.

    \b
    Exit codes: 0 resolved, 1 a resolution error (upstream's message on stderr), 2 bad input.
    \b
    Example (what OLM v1 would upgrade cloudnative-pg 1.27.0 to):
      upgrade-gate resolve -f examples/clusterextension.yaml \\
          --catalog catalogs/certified-operators-v4.22 --installed cloudnative-pg.v1.27.0@1.27.0
    """
    extensions = _extensions(manifest)
    loaded = [open_catalog(location) for location in catalogs]
    if installed is not None:
        if len(extensions) > 1:
            raise InputError(f"--installed needs one ClusterExtension; {manifest} has {len(extensions)}")
        extension = extensions[0]
        bundle = _installed(installed, extension.source.package, loaded)
        extensions = [ClusterExtension(extension.name, extension.source, bundle)]
    for catalog in loaded:
        for problem in catalog.unattributed:
            click.echo(f"upgrade-gate: warning: {problem}", err=True)
    checks = [check_extension(extension, loaded) for extension in extensions]
    if len(checks) > 1:
        if output == "json":
            echo_json([_document(c) for c in checks])
        else:
            click.echo(_table(checks))
        failed = [c.extension.name for c in checks if c.error is not None]
        if failed:
            fail(f"{len(failed)} of {len(checks)} ClusterExtensions do not resolve: {', '.join(failed)}", EXIT_NEGATIVE)
        return
    [check] = checks
    if output == "json":
        echo_json(_document(check))
    else:
        click.echo(_text(check, loaded))
    if check.error is not None:
        fail(f"{check.error}; {check.unavailable}" if check.unavailable else check.error, EXIT_NEGATIVE)


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
    rows = [header]
    for check in checks:
        installed = check.extension.installed
        resolution = check.resolution
        outcome = check.revision.name if check.revision else "-"
        if check.error is not None:
            outcome = f"error: {check.error}" + (f"; {check.unavailable}" if check.unavailable else "")
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
    widths = [max(len(row[i]) for row in rows) for i in range(len(header) - 1)]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=False)) + "  " + row[-1] for row in rows)


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
    warning = f"--installed bundle {bundle.name} is in no catalog's package {package}"
    click.echo(f"upgrade-gate: warning: {warning}", err=True)
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
