"""``upgrade-gate doctor`` against a real kube-apiserver: the chart's webhook configurations, Service and CRD
(rendered by Helm as release ``doctor`` in ``upgrade-gate-doctor``), the bundled policy settings, and
operator-controller's Deployment as OLM v1's manifests write it, first in ``olmv1-system``, then in OpenShift's
``openshift-operator-controller``.

No pod backs the webhook's Service here (the API server's service proxy goes only to a pod's non-loopback address,
and the tests send nothing off loopback), so ``webhook-ready`` is the real proxy's answer for a Service without
Endpoints (no endpoints controller runs here): a warning. Everything created here is deleted at the end (the
namespaces stay: no namespace controller runs to finalize them), so the shared API server holds no webhook
configuration that calls nothing.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Iterator
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
from webhook.controller.doctor.model import CHECKS, WEBHOOK_NAMES

RELEASE, RELEASE_NAMESPACE = "doctor", "upgrade-gate-doctor"
SERVICE = f"{RELEASE}-upgrade-gate-webhook"
CONFIGURATION = f"{RELEASE}-upgrade-gate"


def _delete(call: Any, *args: Any) -> None:
    with contextlib.suppress(ApiException):
        call(*args)


@pytest.fixture(scope="module")
def gate(cluster: ApiServer) -> Iterator[ApiServer]:
    """The chart's webhook configurations and webhook Service (release ``doctor``) and its settings in
    ``upgrade-gate-doctor``; all removed afterwards."""
    objects = render_chart(name=RELEASE, namespace=RELEASE_NAMESPACE)
    wanted = {"ValidatingWebhookConfiguration", "MutatingWebhookConfiguration", "Service", "ServiceAccount"}
    chart = [o for o in objects if o["kind"] in wanted and o["metadata"]["name"] in (CONFIGURATION, SERVICE)]
    namespaces = [RELEASE_NAMESPACE, OPENSHIFT_NAMESPACE]
    cluster.apply([{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}} for name in namespaces])
    api = cluster.client()
    core = client.CoreV1Api(api)
    try:
        cluster.apply([*chart, settings_config_map(USER, namespace=RELEASE_NAMESPACE)])
        yield cluster
    finally:
        admission = client.AdmissionregistrationV1Api(api)
        _delete(admission.delete_validating_webhook_configuration, CONFIGURATION)
        _delete(admission.delete_mutating_webhook_configuration, CONFIGURATION)
        _delete(core.delete_namespaced_service, SERVICE, RELEASE_NAMESPACE)
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
    ready = checks["webhook-ready"]
    assert ready["result"] == "warn"
    # no endpoints controller runs here, so the Service has no Endpoints object: the proxy answers 404 (and another
    # test's configuration calling a local URL, where one was left, is named first)
    assert (
        f"GET /readyz of Service {RELEASE_NAMESPACE}/{SERVICE} through the API server's proxy: 404" in ready["message"]
    ), ready
    assert other_configurations in (True, False)
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
