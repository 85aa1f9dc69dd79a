"""A real kube-apiserver for integration tests: the harness of ``../shared/kube`` (envtest-style).

The harness is looked for at ``$UPGRADE_GATE_KUBE_HARNESS`` or ``<repository>/../shared/kube/apiserver.py``; it
runs the binaries of ``$KUBE_HARNESS_BIN``, by default the bin directory of the build cache that
``python -m tests.tools.build`` fills (``~/.cache/upgrade-gate/test-bin/bin``). Tests that need it are skipped,
with the reason, when the harness or a binary is absent (a fresh clone), and run in CI, which builds the binaries
and sets ``UPGRADE_GATE_REQUIRE=kube`` so that such a skip fails the run instead. One API server serves the whole
test session (``tests/conftest.py``'s ``apiserver`` fixture); tests isolate themselves by object names and
namespaces.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client, config
from kubernetes.client.exceptions import ApiException
from kubernetes.dynamic import DynamicClient

from tests.tools import build

ROOT = Path(__file__).resolve().parent.parent


#: kube-apiserver minor version -> the binary the harness runs for it.
BINARIES = {"1.32": "kube-apiserver", "1.36": "kube-apiserver-1.36"}
DEFAULT_VERSION = "1.32"


def harness_path() -> Path:
    """Where the harness should be (it may not exist)."""
    configured = os.environ.get("UPGRADE_GATE_KUBE_HARNESS")
    return Path(configured) if configured else ROOT.parent / "shared" / "kube" / "apiserver.py"


def binaries() -> Path:
    """The directory of binaries the harness runs: ``$KUBE_HARNESS_BIN``, else the build cache's."""
    return Path(os.environ.get("KUBE_HARNESS_BIN") or build.bin_dir())


def unavailable(version: str = DEFAULT_VERSION) -> str | None:
    """Why a real API server of ``version`` cannot start here (one line), or ``None`` when it can."""
    if not harness_path().is_file():
        return (
            f"no kube-apiserver harness at {harness_path()} (put ../shared/kube beside the checkout, or set "
            "UPGRADE_GATE_KUBE_HARNESS)"
        )
    name = BINARIES[version]
    return None if (binaries() / name).is_file() else build.why_missing(name, binaries())


def skip_unless_available(component: str, reason: str | None) -> None:
    """Skip the test with ``reason``; fail it instead where ``$UPGRADE_GATE_REQUIRE`` (comma-separated, as CI
    sets it) names ``component`` (``kube``, ``olm``), so that a run meant to test a real cluster cannot pass
    without one."""
    if reason is None:
        return
    required = {name.strip() for name in os.environ.get("UPGRADE_GATE_REQUIRE", "").split(",")}
    if component in required:
        pytest.fail(f"{reason} (UPGRADE_GATE_REQUIRE names {component})", pytrace=False)
    pytest.skip(reason)


def cluster_admin(name: str, subject: dict[str, str]) -> dict[str, Any]:
    """A ClusterRoleBinding ``name`` of cluster-admin to ``subject`` (a User, Group or ServiceAccount)."""
    api_group = {} if subject["kind"] == "ServiceAccount" else {"apiGroup": "rbac.authorization.k8s.io"}
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
        "subjects": [{**api_group, **subject}],
    }


def upstream_crds() -> Path:
    """Upstream OLM v1's CRDs (ClusterExtension, ClusterObjectSet, ClusterCatalog) beside the harness."""
    return harness_path().parent / "crds"


@dataclass(frozen=True)
class ApiServer:
    """A running API server: its kubeconfig (an admin in ``system:masters``), URL and CA files."""

    run: Path
    kubeconfig: str
    server: str
    ca_crt: str
    ca_key: str
    version: str  # what GET /version answered, e.g. "v1.32.13"
    mutating_admission_policy_api: str  # the group/version of MutatingAdmissionPolicy it serves

    def client(self, user: str | None = None, group: str | None = None) -> client.ApiClient:
        """An API client as the admin, or impersonating ``user`` (in ``group`` too) as the admin may."""
        api: client.ApiClient = config.new_client_from_config(config_file=self.kubeconfig)  # type: ignore[no-untyped-call]
        headers = {"Impersonate-User": user, "Impersonate-Group": group}
        api.default_headers.update({key: value for key, value in headers.items() if value is not None})
        return api

    def apply(self, documents: Iterable[Mapping[str, Any]]) -> None:
        """Create (or replace) each object as the admin, with the dynamic client."""
        dynamic = DynamicClient(self.client())  # type: ignore[no-untyped-call]
        for document in documents:
            resource = dynamic.resources.get(api_version=document["apiVersion"], kind=document["kind"])
            namespace = document["metadata"].get("namespace")
            try:
                resource.create(body=dict(document), namespace=namespace)
            except ApiException as error:
                if error.status != 409:
                    raise
                current = resource.get(name=document["metadata"]["name"], namespace=namespace)
                body = {
                    **document,
                    "metadata": {**document["metadata"], "resourceVersion": current.metadata.resourceVersion},
                }
                resource.replace(body=body, namespace=namespace)

    def install_crds(self, files: Iterable[Path | Mapping[str, Any]]) -> None:
        """Create CustomResourceDefinitions (files or documents) and wait until each is Established."""
        documents = [
            doc
            for item in files
            for doc in ([item] if isinstance(item, Mapping) else yaml.safe_load_all(Path(item).read_text()))
            if doc
        ]
        extensions = client.ApiextensionsV1Api(self.client())
        for document in documents:  # one an earlier module deleted may still be terminating: wait until it is gone
            name = document["metadata"]["name"]
            wait_for(functools.partial(_not_terminating, extensions, name), f"CRD {name} deleted before", timeout=60)
        self.apply(documents)
        for document in documents:
            name = document["metadata"]["name"]
            wait_for(functools.partial(_established, extensions, name), f"CRD {name} established")


def _not_terminating(extensions: client.ApiextensionsV1Api, name: str) -> bool:
    try:
        found = extensions.read_custom_resource_definition(name)
    except ApiException as error:
        if error.status == 404:
            return True
        raise
    return found.metadata is None or found.metadata.deletion_timestamp is None


def _established(extensions: client.ApiextensionsV1Api, name: str) -> bool:
    status = extensions.read_custom_resource_definition(name).status
    conditions = (status.conditions if status else None) or []
    return any(c.type == "Established" and c.status == "True" for c in conditions)


def wait_for(check: Callable[[], object], what: str, timeout: float = 20.0, interval: float = 0.1) -> Any:
    """Poll ``check`` until it returns something truthy; ``AssertionError`` naming ``what`` after ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while True:
        found = check()
        if found:
            return found
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(interval)


def harness_environment() -> dict[str, str]:
    """This process's environment with ``KUBE_HARNESS_BIN`` set to :func:`binaries`."""
    return {**os.environ, "KUBE_HARNESS_BIN": str(binaries())}


def start(run: Path, version: str = DEFAULT_VERSION) -> ApiServer:
    """Start the harness's API server of ``version`` (``1.32``, ``1.36``) in ``run``; ``RuntimeError`` with its
    output if it does not come up."""
    done = subprocess.run(
        [sys.executable, str(harness_path()), "start", str(run), "--version", version],
        capture_output=True,
        text=True,
        check=False,
        env=harness_environment(),
    )
    if done.returncode != 0:
        raise RuntimeError(f"the kube-apiserver harness did not start:\n{done.stdout}{done.stderr}")
    info = json.loads(done.stdout.strip().splitlines()[-1])
    return ApiServer(
        run,
        info["kubeconfig"],
        info["server"],
        info["ca_crt"],
        info["ca_key"],
        info["version"],
        info["mutating_admission_policy_api"],
    )


@contextlib.contextmanager
def running(run: Path, version: str = DEFAULT_VERSION) -> Iterator[ApiServer]:
    """A server of ``version`` started in ``run`` for the context (skipped, or failed where required, when it
    cannot run here), stopped after."""
    skip_unless_available("kube", unavailable(version))
    server = start(run, version)
    try:
        yield server
    finally:
        stop(run)


def stop(run: Path) -> None:
    """Stop the harness's processes in ``run``."""
    subprocess.run([sys.executable, str(harness_path()), "stop", str(run)], capture_output=True, check=False)
