"""A small JSON client of the kube-apiserver that ``../shared/kube/harness.py`` starts, for the recorder.

Requests use the kubeconfig's client certificate and CA (written beside it) over ``urllib``; every answer is
``(status, body)`` with the JSON body as a dict, so denials and refused creates are data, not exceptions.
"""

from __future__ import annotations

import base64
import json
import os
import ssl
import subprocess
import sys
import tempfile
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
HARNESS_VARIABLE = "UPGRADE_GATE_KUBE_HARNESS"
_KUBECONFIG_FILES = {"ca": "certificate-authority-data", "crt": "client-certificate-data", "key": "client-key-data"}


def harness_path() -> Path | None:
    """``$UPGRADE_GATE_KUBE_HARNESS`` or ``../shared/kube/harness.py`` beside the project, if it exists."""
    candidate = Path(os.environ.get(HARNESS_VARIABLE) or ROOT.parent / "shared" / "kube" / "harness.py")
    return candidate if candidate.is_file() else None


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

    def call(self, method: str, path: str, body: Any = None, *, dry_run: bool = False) -> tuple[int, dict[str, Any]]:
        """The HTTP status and JSON body of ``method path``; ``dry_run`` adds ``dryRun=All``."""
        status, answer, _ = self._send(method, path, body, dry_run=dry_run)
        return status, answer

    def call_with_warnings(self, method: str, path: str, body: Any = None) -> tuple[int, dict[str, Any], list[str]]:
        """A dry run of ``method path``: status, JSON body and the ``Warning`` headers."""
        return self._send(method, path, body, dry_run=True)

    def _send(self, method: str, path: str, body: Any, *, dry_run: bool) -> tuple[int, dict[str, Any], list[str]]:
        url = self.server + path + ("?dryRun=All" if dry_run else "")
        data = json.dumps(body).encode() if body is not None else None
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
def started(rundir: Path) -> Iterator[Apiserver]:
    """Start the harness apiserver in ``rundir``, yield a client, stop it. ``SystemExit`` without a harness."""
    harness = harness_path()
    if harness is None:
        raise SystemExit(f"no kube-apiserver harness: set {HARNESS_VARIABLE} or put ../shared/kube beside the project")
    done = subprocess.run(
        [sys.executable, str(harness), "start", str(rundir)], check=True, capture_output=True, text=True
    )
    try:
        yield Apiserver(Path(json.loads(done.stdout.strip().splitlines()[-1])["kubeconfig"]))
    finally:
        subprocess.run([sys.executable, str(harness), "stop", str(rundir)], check=False, capture_output=True)


def run_recorder(record: Callable[[Apiserver], None]) -> None:
    """``record`` with the apiserver of ``--kubeconfig FILE`` on the command line, else one started for the run."""
    if sys.argv[1:2] == ["--kubeconfig"]:
        record(Apiserver(Path(sys.argv[2])))
        return
    with tempfile.TemporaryDirectory(prefix="oracle-") as rundir, started(Path(rundir)) as api:
        record(api)
