"""``upgrade-gate resolve``: which bundle OLM v1 would install, and whether a revision is due."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from webhook.catalog import Catalog, VersionRelease, load_catalog
from webhook.cli.common import EXIT_NEGATIVE, echo_json, fail, handle_errors
from webhook.errors import InputError, InvalidVersion
from webhook.manifests import load_manifest
from webhook.resolve.extension import ClusterExtension, InstalledBundle
from webhook.resolve.revision import UpgradeCheck, check_extension


@click.command()
@click.option(
    "-f",
    "--filename",
    "manifest",
    required=True,
    type=click.Path(dir_okay=False, path_type=Path),
    help="ClusterExtension manifest (olm.operatorframework.io/v1).",
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
    """Resolve a ClusterExtension against catalogs exactly as OLM v1 does.

    Applies the channel filter, the spec.version range (Masterminds), upgrade edges from the installed
    bundle (replaces, skips, skipRange; one hop), deprecations, catalog selector and priority, and says
    whether a ClusterExtensionRevision is due (none for a pinned version, none without an upgrade).

    A directory may hold a clustercatalog.yaml (ClusterCatalog manifest) giving the catalog's name,
    labels, spec.priority, spec.availabilityMode and Serving condition.

    \b
    Exit codes: 0 resolved, 1 resolution error (upstream's message on stderr), 2 bad input.
    \b
    Example (what OLM v1 would upgrade cloudnative-pg 1.27.0 to):
      upgrade-gate resolve -f examples/clusterextension.yaml \\
          --catalog catalogs/certified-operators-v4.22 --installed cloudnative-pg.v1.27.0@1.27.0
    """
    extension = ClusterExtension.from_manifest(load_manifest(manifest, "ClusterExtension"), str(manifest))
    loaded = [load_catalog(location) for location in catalogs]
    if installed is not None:
        bundle = _installed(installed, extension.source.package, loaded)
        extension = ClusterExtension(extension.name, extension.source, bundle)
    for catalog in loaded:
        for problem in catalog.unattributed:
            click.echo(f"upgrade-gate: warning: {problem}", err=True)
    check = check_extension(extension, loaded)
    if output == "json":
        echo_json(_document(check))
    else:
        click.echo(_text(check, loaded))
    if check.error is not None:
        fail(f"{check.error}; {check.unavailable}" if check.unavailable else check.error, EXIT_NEGATIVE)


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
