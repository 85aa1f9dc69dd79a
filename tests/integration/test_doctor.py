"""``upgrade-gate doctor`` against a real kube-apiserver: the chart's webhook configurations, Service and CRD
(rendered by Helm as release ``doctor`` in ``upgrade-gate-doctor``), the bundled policy settings, and
operator-controller's Deployment as OLM v1's manifests write it, first in ``olmv1-system``, then in OpenShift's
``openshift-operator-controller``.

The webhook's Service gets an Endpoints object, as the endpoints controller would write it for a ready pod,
pointing at a local HTTPS stub answering ``/readyz`` on this machine's address: the API server's service proxy
really reaches it. Everything created here is deleted at the end (the namespaces stay: no namespace controller
runs to finalize them), so the shared API server holds no webhook configuration that calls a stopped server.
"""

from __future__ import annotations

import contextlib
import json
import socket
import ssl
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from tests.apiserver import ApiServer
from tests.controller.test_doctor import (
    OLM_NAMESPACE,
    OPENSHIFT_NAMESPACE,
    USER,
    olm_deployment,
    render_chart,
    settings_config_map,
)
from webhook.cli import main
from webhook.controller.doctor import CHECKS, WEBHOOK_NAMES

RELEASE, RELEASE_NAMESPACE = "doctor", "upgrade-gate-doctor"
SERVICE = f"{RELEASE}-upgrade-gate-webhook"
CONFIGURATION = f"{RELEASE}-upgrade-gate"


def _address() -> str | None:
    """This machine's non-loopback IPv4 address (an Endpoints address may not be loopback), or ``None``."""
    with contextlib.suppress(OSError), socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        probe.connect(("192.0.2.1", 9))  # routing only: nothing is sent
        address = str(probe.getsockname()[0])
        if not address.startswith("127."):
            return address
    return None


class _Readyz(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = json.dumps({"ready": self.path == "/readyz"}).encode()
        self.send_response(200 if self.path == "/readyz" else 404)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


@contextlib.contextmanager
def _https_stub(address: str, work: Path) -> Iterator[int]:
    """An HTTPS server on ``address`` answering GET /readyz 200, as the webhook's pod does; yields its port."""
    certs = work / "certs"
    generated = CliRunner().invoke(main, ["certs", "generate", "--out", str(certs), "--ip", address])
    assert generated.exit_code == 0, generated.output
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(certs / "tls.crt", certs / "tls.key")
    server = ThreadingHTTPServer((address, 0), _Readyz)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield int(server.server_address[1])
    finally:
        server.shutdown()
        server.server_close()


def _delete(call: Any, *args: Any) -> None:
    with contextlib.suppress(ApiException):
        call(*args)


@pytest.fixture(scope="module")
def gate(cluster: ApiServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ApiServer]:
    """The chart's webhook configurations and webhook Service (release ``doctor``), its settings in
    ``upgrade-gate-doctor`` and the webhook answering /readyz behind the Service; all removed afterwards."""
    objects = render_chart(name=RELEASE, namespace=RELEASE_NAMESPACE)
    wanted = {"ValidatingWebhookConfiguration", "MutatingWebhookConfiguration", "Service", "ServiceAccount"}
    chart = [o for o in objects if o["kind"] in wanted and o["metadata"]["name"] in (CONFIGURATION, SERVICE)]
    (deployment,) = [o for o in objects if o["kind"] == "Deployment" and o["metadata"]["name"] == SERVICE]
    pod = {  # one replica of the webhook's Deployment; no scheduler or kubelet runs, its status is written below
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"{SERVICE}-0",
            "namespace": RELEASE_NAMESPACE,
            **deployment["spec"]["template"]["metadata"],
        },
        "spec": deployment["spec"]["template"]["spec"],
    }
    namespaces = [RELEASE_NAMESPACE, OPENSHIFT_NAMESPACE]
    cluster.apply([{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}} for name in namespaces])
    address = _address()
    if address is None:
        pytest.skip("no non-loopback IPv4 address here for the webhook Service's endpoint")
    with _https_stub(address, tmp_path_factory.mktemp("doctor")) as port:
        # as the kubelet reports a running, ready pod, and the endpoints controller lists it (the API server's proxy
        # goes only to an address whose targetRef is a pod with that IP)
        status = {"phase": "Running", "podIP": address, "podIPs": [{"ip": address}],
                  "conditions": [{"type": "Ready", "status": "True"}]}  # fmt: skip
        target = {"kind": "Pod", "name": pod["metadata"]["name"], "namespace": RELEASE_NAMESPACE}
        endpoints = {
            "apiVersion": "v1",
            "kind": "Endpoints",
            "metadata": {"name": SERVICE, "namespace": RELEASE_NAMESPACE},
            "subsets": [
                {"addresses": [{"ip": address, "targetRef": target}], "ports": [{"name": "https", "port": port}]}
            ],
        }
        api = cluster.client()
        core = client.CoreV1Api(api)
        try:
            cluster.apply([*chart, pod, settings_config_map(USER, namespace=RELEASE_NAMESPACE)])
            core.patch_namespaced_pod_status(pod["metadata"]["name"], RELEASE_NAMESPACE, {"status": status})
            cluster.apply([endpoints])
            yield cluster
        finally:
            admission = client.AdmissionregistrationV1Api(api)
            _delete(admission.delete_validating_webhook_configuration, CONFIGURATION)
            _delete(admission.delete_mutating_webhook_configuration, CONFIGURATION)
            _delete(core.delete_namespaced_endpoints, SERVICE, RELEASE_NAMESPACE)
            _delete(core.delete_namespaced_service, SERVICE, RELEASE_NAMESPACE)
            _delete(core.delete_namespaced_pod, pod["metadata"]["name"], RELEASE_NAMESPACE)
            _delete(core.delete_namespaced_service_account, SERVICE, RELEASE_NAMESPACE)
            _delete(core.delete_namespaced_config_map, "upgrade-gate-settings", RELEASE_NAMESPACE)


@contextlib.contextmanager
def operator_controller(cluster: ApiServer, namespace: str) -> Iterator[None]:
    """operator-controller's Deployment in ``namespace`` while the context is open."""
    cluster.apply([olm_deployment(namespace)])
    try:
        yield
    finally:
        _delete(client.AppsV1Api(cluster.client()).delete_namespaced_deployment, olm_deployment()["metadata"]["name"],
                namespace)  # fmt: skip


def doctor(cluster: ApiServer, *args: str) -> tuple[int, str, str, float]:
    """``upgrade-gate doctor`` on ``cluster`` with this release's settings namespace: exit code, stdout, stderr and
    the seconds it took."""
    argv = ["doctor", "--kubeconfig", cluster.kubeconfig, "--settings-namespace", RELEASE_NAMESPACE, *args]
    started = time.perf_counter()
    result = CliRunner().invoke(main, argv, env={"KUBERNETES_SERVICE_HOST": ""})
    return result.exit_code, result.stdout, result.stderr, time.perf_counter() - started


def _others(cluster: ApiServer) -> tuple[bool, bool]:
    """(another configuration holds gate webhooks, ClusterObjectSets owned by ClusterExtensions exist): what other
    tests sharing the API server may have left, which the doctor rightly sees."""
    configurations = client.AdmissionregistrationV1Api(cluster.client()).list_validating_webhook_configuration()
    others = any(
        hook.name in WEBHOOK_NAMES.values()
        for configuration in configurations.items
        if configuration.metadata is None or configuration.metadata.name != CONFIGURATION
        for hook in configuration.webhooks or []
    )
    listed: Any = client.CustomObjectsApi(cluster.client()).list_cluster_custom_object(
        "olm.operatorframework.io", "v1", "clusterobjectsets", label_selector="olm.operatorframework.io/owner-kind"
    )
    return others, bool(listed["items"])


def test_the_default_layout_holds_upgrades(gate):
    with operator_controller(gate, OLM_NAMESPACE):
        code, out, err, seconds = doctor(gate, "-o", "json")
        text = doctor(gate)[1]
    print(f"\n{text}({seconds:.2f} s)")
    document = json.loads(out)
    checks = {c["id"]: c for c in document["checks"]}
    other_configurations, object_sets = _others(gate)
    assert (code, err) == (0, "")
    assert {name: c["result"] for name, c in checks.items() if name != "webhook-ready"} == {
        name: "ok" for name in CHECKS if name != "webhook-ready"
    }, checks
    assert (
        f"GET /readyz of Service {RELEASE_NAMESPACE}/{SERVICE} through the API server's proxy: 200"
        in checks["webhook-ready"]["message"]
    )
    assert checks["webhook-ready"]["result"] == ("warn" if other_configurations else "ok")
    facts = document["facts"]
    assert (facts["namespace"], facts["user"], facts["applier"]) == (
        OLM_NAMESPACE,
        USER,
        "boxcutter" if object_sets else "helm",
    )
    assert f"{CONFIGURATION}/upgrades-helm.upgrade-gate.dev" in facts["webhooks"]
    assert f"{RELEASE_NAMESPACE}/{SERVICE}:443" in facts["webhookServices"]
    assert seconds < 10


def test_operator_controller_on_openshift_fails_naming_its_namespace(gate):
    with operator_controller(gate, OPENSHIFT_NAMESPACE):
        code, out, err, seconds = doctor(gate)
    print(f"\n{out}{err}({seconds:.2f} s)")
    assert code == 1
    assert err == "upgrade-gate: 2 of 7 checks fail\n"
    rows = {line.split()[0]: line.split()[1] for line in out.splitlines()[1:-1] if not line.startswith(" ")}
    assert (rows["gate-webhooks"], rows["settings"]) == ("fail", "fail")
    (gate_row,) = [line for line in out.splitlines() if line.startswith("gate-webhooks")]
    assert "operator-controller writes its releases in openshift-operator-controller" in gate_row
    assert "fix: set webhook.gate.olmNamespace=openshift-operator-controller" in out
