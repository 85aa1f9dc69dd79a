"""A real ``upgrade-gate serve`` (gunicorn, TLS) on a free loopback port, and an HTTPS client for it."""

from __future__ import annotations

import datetime
import http.client
import json
import os
import signal
import socket
import ssl
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from webhook.serve.tls import generate_certificates

SCRIPT = Path(sys.executable).parent / "upgrade-gate"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def client_certificate(ca_dir: Path, out: Path) -> tuple[Path, Path]:
    """A client certificate (clientAuth) signed by the CA in ``ca_dir``."""
    ca_cert = x509.load_pem_x509_certificate((ca_dir / "ca.crt").read_bytes())
    ca_key: Any = serialization.load_pem_private_key((ca_dir / "ca.key").read_bytes(), password=None)
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "kube-apiserver")]))
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    out.mkdir(parents=True, exist_ok=True)
    (out / "client.crt").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    (out / "client.key").write_bytes(pem)
    return out / "client.crt", out / "client.key"


@dataclass
class Server:
    """A running server: its port, CA, TLS file paths, process and log file."""

    port: int
    certs: Path
    process: subprocess.Popen[bytes]
    log: Path
    client_cert: tuple[Path, Path] | None = None

    def context(self, *, with_client_cert: bool = True) -> ssl.SSLContext:
        context = ssl.create_default_context(cafile=str(self.certs / "ca.crt"))
        if with_client_cert and self.client_cert:
            context.load_cert_chain(*map(str, self.client_cert))
        return context

    def request(
        self,
        method: str,
        path: str,
        body: bytes | None = None,
        content_type: str | None = "application/json",
        context: ssl.SSLContext | None = None,
    ) -> tuple[int, Any]:
        """(status, decoded JSON or text body)."""
        connection = http.client.HTTPSConnection("127.0.0.1", self.port, context=context or self.context(), timeout=10)
        try:
            headers = {"Content-Type": content_type} if content_type else {}
            connection.request(method, path, body=body, headers=headers)
            answer = connection.getresponse()
            data = answer.read()
        finally:
            connection.close()
        kind = answer.headers.get("Content-Type", "")
        return answer.status, json.loads(data) if kind.startswith("application/json") else data.decode()

    def review(self, endpoint: str, review: Any) -> Any:
        status, answer = self.request("POST", f"/{endpoint}", json.dumps(review).encode())
        assert status == 200, answer
        return answer

    def peer_certificate(self) -> x509.Certificate:
        with (
            socket.create_connection(("127.0.0.1", self.port), timeout=5) as raw,
            self.context().wrap_socket(raw, server_hostname="127.0.0.1") as tls,
        ):
            der = tls.getpeercert(binary_form=True)
        assert der is not None
        return x509.load_der_x509_certificate(der)

    def wait_ready(self, timeout: float = 30) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise AssertionError(f"server exited {self.process.returncode}:\n{self.log.read_text()}")
            try:
                status, _ = self.request("GET", "/readyz")
            except OSError:
                status = 0
            if status == 200:
                return
            time.sleep(0.1)
        raise AssertionError(f"server not ready in {timeout}s:\n{self.log.read_text()}")


@contextmanager
def serving(
    tmp: Path,
    policies: Path,
    *args: str,
    client_ca: bool = False,
    dev_certs: bool = False,
    env: dict[str, str] | None = None,
    metrics_dir: bool = True,
) -> Iterator[Server]:
    """Run ``upgrade-gate serve`` over ``policies`` in ``tmp`` with fresh certificates (made here, or with
    ``dev_certs`` by the server itself in ``tmp/certs``) and metrics in ``tmp/metrics`` (with ``metrics_dir``; else
    where the server chooses); stop it on exit."""
    certs = tmp / "certs"
    port = free_port()
    argv = [str(SCRIPT), "serve", "--policies", str(policies), "--port", str(port), "--cluster", "off", *args]
    if not dev_certs:
        generate_certificates(certs, ["localhost"], ["127.0.0.1"])
        argv += ["--cert", str(certs / "tls.crt"), "--key", str(certs / "tls.key")]
    client = None
    if client_ca:
        client = client_certificate(certs, tmp / "client")
        argv += ["--client-ca", str(certs / "ca.crt")]
    unset = {"KUBECONFIG", "PROMETHEUS_MULTIPROC_DIR"}
    environment = {key: value for key, value in os.environ.items() if key not in unset}
    if metrics_dir:
        environment["PROMETHEUS_MULTIPROC_DIR"] = str(tmp / "metrics")
    environment.update(env or {})
    log = tmp / "server.log"
    with log.open("wb") as sink:
        process = subprocess.Popen(argv, stdout=sink, stderr=subprocess.STDOUT, env=environment, cwd=tmp)
    server = Server(port, certs, process, log, client)
    try:
        server.wait_ready()
        yield server
    finally:
        terminate(process)


def terminate(process: subprocess.Popen[bytes], timeout: float = 15) -> None:
    """SIGTERM, then SIGKILL after ``timeout`` seconds, and reap the process."""
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
