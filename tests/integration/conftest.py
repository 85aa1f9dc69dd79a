"""Integration fixtures: the chart's CRD and webhook configurations in a real kube-apiserver, and a local
``upgrade-gate serve --cluster on`` over TLS that the API server calls.

``cluster`` (once per session) installs upstream OLM v1's CRDs for ClusterExtension and ClusterObjectSet and the
chart's ClusterExtensionRevision CRD, the namespaces, and cluster-admin for operator-controller and the approver
group (operator-controller is bound to cluster-admin upstream). ``webhook`` (once per module: a module may stop it)
serves a copy of the bundled policies whose settings a test may change.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import shutil
import socket
import ssl
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import helm_python as helm
import pytest
import yaml

from tests.apiserver import ROOT, ApiServer, cluster_admin, upstream_crds, wait_for
from tests.integration.olm import APPROVER_GROUP, OLM_NAMESPACE, OPERATOR_CONTROLLER
from tests.serve.process import terminate


@dataclass
class Webhook:
    """The local ``upgrade-gate serve`` the API server calls, and its policy directory (settings reloadable)."""

    process: subprocess.Popen[bytes]
    url: str
    ca: Path
    policies: Path

    def generation(self) -> int:
        context = ssl.create_default_context(cafile=str(self.ca))
        try:
            with urllib.request.urlopen(f"{self.url}/readyz", context=context, timeout=2) as answer:
                return int(json.load(answer)["policies"]["generation"])
        except OSError:
            return 0

    @contextlib.contextmanager
    def settings(self, **data: str) -> Iterator[None]:
        """The policy settings with ``data`` changed while the context is open, each change served (reloaded)
        before it is entered or left."""
        path = self.policies / "settings.yaml"
        original = path.read_text()
        changed = yaml.safe_load(original)
        changed["data"].update(data)
        try:
            self._reload(path, yaml.safe_dump(changed))
            yield
        finally:
            self._reload(path, original)

    def _reload(self, path: Path, text: str) -> None:
        before = self.generation()
        path.write_text(text)
        wait_for(lambda: self.generation() > before, "the webhook to reload its policy settings", timeout=90)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _chart_objects(values: dict[str, Any]) -> list[dict[str, Any]]:
    with helm.Chart.load(ROOT / "charts" / "upgrade-gate") as chart:
        rendered = chart.render(values, name="gate", namespace="upgrade-gate", is_install=True)
    return [
        doc
        for path, text in sorted(rendered.items())
        if path.endswith(".yaml")
        for doc in yaml.safe_load_all(text)
        if doc
    ]


@pytest.fixture(scope="session")
def cluster(apiserver: ApiServer) -> ApiServer:
    apiserver.install_crds(
        [
            upstream_crds() / "olm.operatorframework.io_clusterextensions.yaml",
            upstream_crds() / "olm.operatorframework.io_clusterobjectsets.yaml",
        ]
    )
    install_gate(apiserver)
    namespaces = [OLM_NAMESPACE, "elsewhere"]
    bindings = [  # operator-controller is bound to cluster-admin upstream; approvers may write revisions
        ("gate-operator-controller", {"kind": "User", "name": OPERATOR_CONTROLLER}),
        ("gate-approvers", {"kind": "Group", "name": APPROVER_GROUP}),
    ]
    apiserver.apply(
        [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}} for name in namespaces]
        + [cluster_admin(name, subject) for name, subject in bindings]
    )
    return apiserver


@pytest.fixture(scope="module")
def webhook(cluster: ApiServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Webhook]:
    with serving(cluster, tmp_path_factory.mktemp("gate")) as served:
        yield served


def install_gate(server: ApiServer) -> None:
    """The chart's ClusterExtensionRevision CRD and the namespaces the gate uses."""
    (crd,) = [o for o in _chart_objects({}) if o["kind"] == "CustomResourceDefinition"]
    server.install_crds([crd])
    namespaces = ["upgrade-gate", "upgrade-gate-system"]
    server.apply([{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}} for name in namespaces])


@contextlib.contextmanager
def serving(server: ApiServer, work: Path) -> Iterator[Webhook]:
    """A local ``upgrade-gate serve --cluster on`` for ``server`` over TLS, with a copy of the bundled policies, and
    the chart's webhook configurations pointing at it; stopped (configurations left) when the context ends."""
    policies = work / "policies"
    shutil.copytree(ROOT / "policies", policies, ignore=shutil.ignore_patterns("tests"))
    certs = work / "certs"
    command = [str(Path(sys.executable).parent / "upgrade-gate")]
    subprocess.run(
        [*command, "certs", "generate", "--out", str(certs), "--ip", "127.0.0.1"], check=True, capture_output=True
    )
    port = _free_port()
    env = {
        **os.environ,
        "KUBECONFIG": server.kubeconfig,
        "POD_NAMESPACE": "upgrade-gate",
        "UPGRADE_GATE_RELOAD_INTERVAL": "0.5",
    }
    log = (work / "serve.log").open("wb")
    process = subprocess.Popen(
        [*command, "serve", "--cluster", "on", "--port", str(port), "--workers", "1", "--policies", str(policies),
         "--cert", str(certs / "tls.crt"), "--key", str(certs / "tls.key"), "--log-level", "WARNING"],
        env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=log, cwd=work,
    )  # fmt: skip
    served = Webhook(process, f"https://127.0.0.1:{port}", certs / "ca.crt", policies)
    try:
        wait_for(served.generation, "upgrade-gate serve to be ready", timeout=60)
        ca_bundle = base64.b64encode((certs / "ca.crt").read_bytes()).decode()
        configurations = [o for o in _chart_objects({}) if o["kind"].endswith("WebhookConfiguration")]
        for configuration in configurations:
            for hook in configuration["webhooks"]:
                path = hook["clientConfig"]["service"]["path"]
                hook["clientConfig"] = {"url": f"{served.url}{path}", "caBundle": ca_bundle}
        server.apply(configurations)
        yield served
    finally:
        process.terminate()
        process.wait(timeout=20)
        log.close()


@contextlib.contextmanager
def controlling(server: ApiServer, log_path: Path, *, mode: str = "gitops") -> Iterator[subprocess.Popen[bytes]]:
    """``upgrade-gate controller`` (leader election on, one replica) on ``server``, logging to ``log_path``;
    stopped with SIGTERM when the context ends."""
    env = {
        **os.environ,
        "KUBECONFIG": server.kubeconfig,
        "POD_NAMESPACE": "upgrade-gate",
        "POD_NAME": "controller-0",
        "UPGRADE_GATE_CONTROLLER_MODE": mode,
        "UPGRADE_GATE_HEALTH_PORT": "0",
        "UPGRADE_GATE_GATE_CHECK_INTERVAL": "1",
    }
    with log_path.open("ab") as log:
        process = subprocess.Popen(
            [str(Path(sys.executable).parent / "upgrade-gate"), "controller"],
            env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=log,
        )  # fmt: skip
        try:
            yield process
        finally:
            terminate(process)
