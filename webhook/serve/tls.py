"""TLS for the webhook: development certificates, and server contexts that follow their files.

``generate_certificates`` writes a CA and a serving certificate signed by it (ECDSA P-256, as Kubewarden's
controller generates them) with the ``cryptography`` library. ``ReloadingContext`` is gunicorn's
``ssl_context`` hook: it hands out one ``ssl.SSLContext`` (TLS 1.2+, optional client certificate check)
and builds a new one when the certificate, key or client CA files change. Connections already open keep
their context; a file set that does not load (a half-written rotation, a key that does not match) is logged
and the previous context keeps serving, so a rotation never fails a handshake.
"""

from __future__ import annotations

import datetime
import ipaddress
import logging
import ssl
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from webhook import logs
from webhook.errors import InputError

log = logging.getLogger(__name__)

CA_CERT, CA_KEY, CERT, KEY = "ca.crt", "ca.key", "tls.crt", "tls.key"
DEV_DNS_NAMES = ("localhost",)
DEV_IP_ADDRESSES = ("127.0.0.1", "::1")


@dataclass(frozen=True, slots=True)
class CertificateFiles:
    """Paths of a generated set: ``ca_cert``/``ca_key`` and the serving ``cert``/``key`` (PEM)."""

    ca_cert: Path
    ca_key: Path
    cert: Path
    key: Path


def generate_certificates(
    out: Path,
    dns_names: Sequence[str],
    ip_addresses: Sequence[str] = (),
    *,
    days: int = 365,
    ca_days: int = 3650,
    now: datetime.datetime | None = None,
) -> CertificateFiles:
    """Write ``ca.crt``/``ca.key`` (kept if both exist, so a CA bundle already configured stays valid) and a
    new ``tls.crt``/``tls.key`` for ``dns_names`` and ``ip_addresses`` into ``out`` (created; keys mode 0600).

    The serving certificate is valid ``days`` days from ``now`` (UTC), for server authentication; its
    subject CN is the first DNS name. Raises ``InputError`` for no names, a bad IP address or an existing
    CA that does not load.
    """
    if not dns_names and not ip_addresses:
        raise InputError("a serving certificate needs at least one DNS name or IP address")
    try:
        ips = [ipaddress.ip_address(address) for address in ip_addresses]
    except ValueError as error:
        raise InputError(str(error)) from None
    now = now or datetime.datetime.now(datetime.UTC)
    out.mkdir(parents=True, exist_ok=True)
    files = CertificateFiles(out / CA_CERT, out / CA_KEY, out / CERT, out / KEY)
    ca_cert, ca_key = _certificate_authority(files, now, ca_days)
    key = ec.generate_private_key(ec.SECP256R1())
    names: list[x509.GeneralName] = [x509.DNSName(name) for name in dns_names]
    names += [x509.IPAddress(ip) for ip in ips]
    common_name = dns_names[0] if dns_names else str(ips[0])
    cert = (
        _builder(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)]), ca_cert.subject, key, now, days)
        .add_extension(x509.SubjectAlternativeName(names), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    _write_key(files.key, key)
    files.cert.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return files


def _builder(
    subject: x509.Name, issuer: x509.Name, key: ec.EllipticCurvePrivateKey, now: datetime.datetime, days: int
) -> x509.CertificateBuilder:
    return (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=days))
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
    )


def _certificate_authority(
    files: CertificateFiles, now: datetime.datetime, days: int
) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    if files.ca_cert.exists() and files.ca_key.exists():
        try:
            ca_cert = x509.load_pem_x509_certificate(files.ca_cert.read_bytes())
            ca_key = serialization.load_pem_private_key(files.ca_key.read_bytes(), password=None)
        except ValueError as error:
            raise InputError(f"{files.ca_cert}: cannot load the existing CA: {error}") from None
        if not isinstance(ca_key, ec.EllipticCurvePrivateKey):
            raise InputError(f"{files.ca_key}: the existing CA key is not an ECDSA key")
        return ca_cert, ca_key
    ca_key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "upgrade-gate development CA")])
    ca_cert = (
        _builder(name, name, ca_key, now, days)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .sign(ca_key, hashes.SHA256())
    )
    _write_key(files.ca_key, ca_key)
    files.ca_cert.write_bytes(ca_cert.public_bytes(serialization.Encoding.PEM))
    return ca_cert, ca_key


def _write_key(path: Path, key: ec.EllipticCurvePrivateKey) -> None:
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    path.touch(mode=0o600, exist_ok=True)
    path.chmod(0o600)
    path.write_bytes(pem)


def development_certificates(directory: Path) -> tuple[Path, Path]:
    """(cert, key) in ``directory``, generated for localhost/127.0.0.1/::1 if either file is missing."""
    cert, key = directory / CERT, directory / KEY
    if not (cert.exists() and key.exists()):
        generate_certificates(directory, DEV_DNS_NAMES, DEV_IP_ADDRESSES)
        log.info("development certificates generated", extra=logs.fields({logs.PATH: str(directory)}))
    return cert, key


def server_context(cert: Path, key: Path, client_ca: Path | None = None) -> ssl.SSLContext:
    """A server ``SSLContext``: TLS 1.2 or newer, ``cert``/``key`` loaded, and when ``client_ca`` is given,
    client certificates required and verified against it. Raises ``ssl.SSLError`` or ``OSError``."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.load_cert_chain(certfile=cert, keyfile=key)
    if client_ca is not None:
        context.verify_mode = ssl.CERT_REQUIRED
        context.load_verify_locations(cafile=client_ca)
    return context


class ReloadingContext:
    """gunicorn's ``ssl_context(config, default_factory)`` hook: the current ``server_context`` of the files,
    rebuilt when one of them changes (size, mtime or inode; checked at every call, i.e. every connection).

    The first build raises ``InputError`` if the files do not load; later failures keep the last good
    context and are logged once per change.
    """

    def __init__(self, cert: Path, key: Path, client_ca: Path | None = None) -> None:
        self.files = tuple(path for path in (cert, key, client_ca) if path is not None)
        self.cert, self.key, self.client_ca = cert, key, client_ca
        self._stamp: tuple[tuple[int, int, int], ...] | None = None
        self._context: ssl.SSLContext | None = None

    def _files_stamp(self) -> tuple[tuple[int, int, int], ...]:
        stamps = []
        for path in self.files:
            try:
                stat = path.stat()
            except OSError:
                stamps.append((0, 0, 0))
            else:
                stamps.append((stat.st_ino, stat.st_size, stat.st_mtime_ns))
        return tuple(stamps)

    def current(self) -> ssl.SSLContext:
        """The context for a new connection (see the class docstring)."""
        stamp = self._files_stamp()
        if stamp == self._stamp and self._context is not None:
            return self._context
        self._stamp = stamp
        try:
            context = server_context(self.cert, self.key, self.client_ca)
        except (OSError, ssl.SSLError) as error:
            if self._context is None:
                raise InputError(f"{self.cert}, {self.key}: cannot load the TLS certificate: {error}") from None
            log.warning(
                "TLS certificate not reloaded; the previous one keeps serving",
                extra=logs.fields({logs.PATH: str(self.cert), logs.ERROR: str(error)}),
            )
            return self._context
        if self._context is not None:
            log.info("TLS certificate reloaded", extra=logs.fields({logs.PATH: str(self.cert)}))
        self._context = context
        return context

    def __call__(self, config: Any, default_factory: Callable[[], ssl.SSLContext]) -> ssl.SSLContext:
        """gunicorn's hook (its arguments are not used): a context for a server that takes it once, as an event
        loop's server does, whose every handshake is switched to the ``current`` context (``sni_callback``, which
        OpenSSL calls for every ClientHello, with or without a server name)."""
        context = server_context(self.cert, self.key, self.client_ca)
        context.sni_callback = self._switch
        return context

    def _switch(self, connection: ssl.SSLObject | ssl.SSLSocket, server_name: str | None, base: ssl.SSLContext) -> None:
        connection.context = self.current()
