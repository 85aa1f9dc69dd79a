"""Certificates: generation (CA kept, names, key modes), the certs command, contexts that follow their files."""

from __future__ import annotations

import ipaddress
import ssl
from pathlib import Path

import pytest
from click.testing import CliRunner
from cryptography import x509

from webhook.cli import main
from webhook.errors import InputError
from webhook.serve.tls import ReloadingContext, generate_certificates


def names(path: Path) -> list[str]:
    cert = x509.load_pem_x509_certificate(path.read_bytes())
    san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    return [str(name.value) for name in san]


def test_generation_writes_a_ca_and_a_serving_certificate_it_signed(tmp_path: Path) -> None:
    files = generate_certificates(tmp_path, ["webhook.ns.svc"], ["10.0.0.5"])
    assert names(files.cert) == ["webhook.ns.svc", str(ipaddress.ip_address("10.0.0.5"))]
    ca = x509.load_pem_x509_certificate(files.ca_cert.read_bytes())
    x509.load_pem_x509_certificate(files.cert.read_bytes()).verify_directly_issued_by(ca)
    assert (files.key.stat().st_mode & 0o777, files.ca_key.stat().st_mode & 0o777) == (0o600, 0o600)


def test_a_second_generation_keeps_the_ca(tmp_path: Path) -> None:
    first = generate_certificates(tmp_path, ["a"]).ca_cert.read_bytes()
    files = generate_certificates(tmp_path, ["b"])
    assert files.ca_cert.read_bytes() == first
    assert names(files.cert) == ["b"]


@pytest.mark.parametrize(
    ("dns", "ips", "message"),
    [
        pytest.param([], [], "a serving certificate needs at least one DNS name or IP address", id="no name"),
        pytest.param([], ["10.0.0.256"], "'10.0.0.256' does not appear to be an IPv4 or IPv6 address", id="a bad IP"),
    ],
)
def test_generation_refuses_bad_names(tmp_path: Path, dns: list[str], ips: list[str], message: str) -> None:
    with pytest.raises(InputError) as raised:
        generate_certificates(tmp_path, dns, ips)
    assert str(raised.value) == message


def test_the_certs_command_prints_the_files_it_wrote(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["certs", "generate", "--dns", "localhost", "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert result.output.split() == [str(tmp_path / name) for name in ("ca.crt", "ca.key", "tls.crt", "tls.key")]
    bad = CliRunner().invoke(main, ["certs", "generate", "--out", str(tmp_path)])
    assert (bad.exit_code, bad.output) == (
        2,
        "upgrade-gate: a serving certificate needs at least one DNS name or IP address\n",
    )


def test_a_context_follows_its_files_and_keeps_the_last_good_one(tmp_path: Path) -> None:
    files = generate_certificates(tmp_path, ["localhost"])
    contexts = ReloadingContext(files.cert, files.key)
    first = contexts.current()
    assert contexts.current() is first
    assert first.minimum_version == ssl.TLSVersion.TLSv1_2
    files.key.write_text("not a key")
    assert contexts.current() is first
    generate_certificates(tmp_path, ["localhost"])
    assert contexts.current() is not first


def test_a_context_without_loadable_files_is_an_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="cannot load the TLS certificate"):
        ReloadingContext(tmp_path / "tls.crt", tmp_path / "tls.key").current()
