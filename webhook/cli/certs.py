"""``upgrade-gate certs generate``: a CA and a serving certificate for the webhook."""

from __future__ import annotations

import re
from pathlib import Path

import click

from webhook.cli.common import handle_errors
from webhook.errors import InputError

_DNS_NAME = re.compile(
    r"(\*\.)?[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?(\.[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?)*", re.IGNORECASE
)
"""A DNS subject alternative name: RFC 1123 host name labels (letters, digits, inner '-'; at most 63 each),
optionally a ``*.`` wildcard as its first label."""


@click.group()
def certs() -> None:
    """Certificates for the webhook's HTTPS endpoint."""


@certs.command()
@click.option("--dns", "dns_names", multiple=True, metavar="NAME", help="DNS name of the server; repeatable.")
@click.option("--ip", "ip_addresses", multiple=True, metavar="ADDR", help="IP address of the server; repeatable.")
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("certs"),
    show_default=True,
    help="Directory to write ca.crt, ca.key, tls.crt and tls.key to.",
)
@click.option("--days", type=click.IntRange(1), default=365, show_default=True, help="Validity of tls.crt.")
@handle_errors
def generate(dns_names: tuple[str, ...], ip_addresses: tuple[str, ...], out: Path, days: int) -> None:
    """Write a CA (kept if one exists in --out) and a serving certificate it signs (ECDSA P-256).

    Keys are written with mode 0600; never commit them. Give the CA (ca.crt) to the apiserver as the
    webhook configurations' caBundle.

    \b
    Example (the Service of the Helm chart in namespace upgrade-gate):
      upgrade-gate certs generate --dns upgrade-gate-webhook.upgrade-gate.svc --out certs/
    """
    for name in dns_names:
        if len(name) > 253 or not _DNS_NAME.fullmatch(name):
            raise InputError(
                f"--dns {name!r}: not a DNS name (letters, digits, '-' and '.', e.g. "
                "upgrade-gate-webhook.upgrade-gate.svc)"
            )
    from webhook.serve import generate_certificates  # noqa: PLC0415 - webhook.serve loads Flask and gunicorn

    try:
        files = generate_certificates(out, dns_names, ip_addresses, days=days)
    except OSError as error:
        raise InputError(f"--out {out}: cannot write there: {error.strerror or error}") from None
    for path in (files.ca_cert, files.ca_key, files.cert, files.key):
        click.echo(str(path))
