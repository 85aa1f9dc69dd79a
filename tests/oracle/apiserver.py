"""A small JSON client of the kube-apiserver that ``../shared/kube/apiserver.py`` starts, for the recorders.

Requests use the kubeconfig's client certificate and CA (written beside it) over ``urllib``; every answer is
``(status, body)`` with the JSON body as a dict, so denials and refused creates are data, not exceptions. The
recorders write MutatingAdmissionPolicies as ``admissionregistration.k8s.io/v1alpha1`` (1.32's); the client sends
them as the group/version the server serves (``v1`` on 1.36), so one recorder runs against either version.
"""

from __future__ import annotations

import argparse
import base64
import json
import ssl
import tempfile
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import yaml

from tests import apiserver as harness

ROOT = Path(__file__).resolve().parents[2]
#: The MutatingAdmissionPolicy group/version the recorders write.
RECORDED_MAP_API = "admissionregistration.k8s.io/v1alpha1"
_KUBECONFIG_FILES = {"ca": "certificate-authority-data", "crt": "client-certificate-data", "key": "client-key-data"}


class Apiserver:
    """JSON requests to one apiserver: ``call(method, path, body, dry_run)`` -> ``(status, body)``."""

    def __init__(self, kubeconfig: Path) -> None:
        document = yaml.safe_load(kubeconfig.read_text("utf-8"))
        cluster, user = document["clusters"][0]["cluster"], document["users"][0]["user"]
        files = {}
        for key, field in _KUBECONFIG_FILES.items():
            files[key] = kubeconfig.with_name(f"recorder.{key}")
            files[key].write_bytes(base64.b64decode((cluster if key == "ca" else user)[field]))
        self.server = str(cluster["server"])
        self.context = ssl.create_default_context(cafile=str(files["ca"]))
        self.context.load_cert_chain(str(files["crt"]), str(files["key"]))
        self.map_api = RECORDED_MAP_API  # until discovery says what the server serves
        self.map_api = self._served_map_api()
        self.version = str(self.call("GET", "/version")[1].get("gitVersion", "unknown"))

    def _served_map_api(self) -> str:
        """The group/version of MutatingAdmissionPolicy this server serves, newest first."""
        for version in ("v1", "v1beta1", "v1alpha1"):
            status, answer = self.call("GET", f"/apis/admissionregistration.k8s.io/{version}")
            if status == 200 and any(r["name"] == "mutatingadmissionpolicies" for r in answer.get("resources", [])):
                return f"admissionregistration.k8s.io/{version}"
        return RECORDED_MAP_API

    def call(self, method: str, path: str, body: Any = None, *, dry_run: bool = False) -> tuple[int, dict[str, Any]]:
        """The HTTP status and JSON body of ``method path``; ``dry_run`` adds ``dryRun=All``."""
        status, answer, _ = self._send(method, path, body, dry_run=dry_run)
        return status, answer

    def call_with_warnings(self, method: str, path: str, body: Any = None) -> tuple[int, dict[str, Any], list[str]]:
        """A dry run of ``method path``: status, JSON body and the ``Warning`` headers."""
        return self._send(method, path, body, dry_run=True)

    def _send(self, method: str, path: str, body: Any, *, dry_run: bool) -> tuple[int, dict[str, Any], list[str]]:
        url = self.server + path.replace(f"/apis/{RECORDED_MAP_API}/", f"/apis/{self.map_api}/")
        url += ("&" if "?" in url else "?") + "dryRun=All" if dry_run else ""
        data = json.dumps(body).encode() if body is not None else None
        if data is not None and self.map_api != RECORDED_MAP_API:
            data = data.replace(json.dumps(RECORDED_MAP_API).encode(), json.dumps(self.map_api).encode())
        request = urllib.request.Request(url, data=data, method=method, headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, context=self.context, timeout=30) as response:
                warnings = response.headers.get_all("Warning") or []
                return int(response.status), json.loads(response.read() or b"{}"), warnings
        except urllib.error.HTTPError as error:
            warnings = error.headers.get_all("Warning") or []
            return int(error.code), json.loads(error.read() or b"{}"), warnings

    def apply(self, path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        """Create ``body`` under the collection ``path``; replace it if it exists."""
        status, answer = self.call("POST", path, body)
        if status == 409:
            name = body["metadata"]["name"]
            _, current = self.call("GET", f"{path}/{name}")
            version = current["metadata"]["resourceVersion"]
            status, answer = self.call(
                "PUT", f"{path}/{name}", {**body, "metadata": {**body["metadata"], "resourceVersion": version}}
            )
        return status, answer


@contextmanager
def started(rundir: Path, version: str) -> Iterator[Apiserver]:
    """Start the harness's apiserver of ``version`` in ``rundir``, yield a client, stop it; ``SystemExit`` with the
    reason when it cannot start here."""
    reason = harness.unavailable(version)
    if reason is not None:
        raise SystemExit(reason)
    server = harness.start(rundir, version)
    try:
        yield Apiserver(Path(server.kubeconfig))
    finally:
        harness.stop(rundir)


def run_recorder(record: Callable[[Apiserver], None], description: str | None) -> None:
    """``record`` with the apiserver of ``--kubeconfig FILE``, else one of ``--kube-version`` started for the run;
    ``description`` (the recorder's docstring) is its ``--help``."""
    parser = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kubeconfig", type=Path, help="record with this (fresh) apiserver instead of starting one")
    parser.add_argument("--kube-version", choices=sorted(harness.BINARIES), default=harness.DEFAULT_VERSION)
    arguments = parser.parse_args()
    if arguments.kubeconfig:
        record(Apiserver(arguments.kubeconfig))
        return
    with tempfile.TemporaryDirectory(prefix="oracle-") as rundir, started(Path(rundir), arguments.kube_version) as api:
        record(api)


def out_directory(api: Apiserver) -> Path:
    """Where the records of ``api``'s version go: ``tests/data/oracle`` for 1.32, ``.../v1.36`` for 1.36."""
    minor = ".".join(api.version.lstrip("v").split(".")[:2])
    base = ROOT / "tests" / "data" / "oracle"
    return base if minor == harness.DEFAULT_VERSION else base / f"v{minor}"
