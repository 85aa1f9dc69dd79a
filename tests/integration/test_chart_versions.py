"""Every object of every chart variant is accepted, with strict field validation, by a real kube-apiserver of each
supported version: 1.32 (the oldest this project tests) and 1.36 (the newest). A server-side dry run admits,
defaults and validates the object as an install would, and stores nothing."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import helm_python as helm
import pytest
from kubernetes.dynamic import DynamicClient
from kubernetes.dynamic.exceptions import ResourceNotFoundError

from tests import apiserver as harness
from tests.apiserver import ApiServer
from tests.oracle.apiserver import Apiserver
from tests.test_chart import CHART, NAMESPACE, THIRD_PARTY_KINDS, VARIANTS, render


@pytest.fixture(scope="module")
def apiserver_1_36(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ApiServer]:
    """A real kube-apiserver 1.36 for this module (the session's is 1.32)."""
    with harness.running(tmp_path_factory.mktemp("kube-1.36"), "1.36") as server:
        yield server


@pytest.fixture(params=["1.32", "1.36"], ids=lambda v: f"kube-apiserver {v}")
def server(request: pytest.FixtureRequest) -> ApiServer:
    name = "apiserver" if request.param == "1.32" else "apiserver_1_36"
    found: ApiServer = request.getfixturevalue(name)
    return found


def _dry_run_create(server: ApiServer, dynamic: DynamicClient, manifest: dict[str, Any]) -> str | None:
    """Create ``manifest`` with ``dryRun=All&fieldValidation=Strict``; the refusal, or ``None`` when admitted."""
    resource = dynamic.resources.get(api_version=manifest["apiVersion"], kind=manifest["kind"])
    namespace = manifest["metadata"].get("namespace", NAMESPACE) if resource.namespaced else None
    path = resource.path(namespace=namespace) + "?fieldValidation=Strict"
    status, answer = Apiserver(Path(server.kubeconfig)).call("POST", path, manifest, dry_run=True)
    if status == 201:
        return None
    return f"{manifest['kind']}/{manifest['metadata']['name']}: {status} {answer.get('message', answer)}"


@pytest.mark.parametrize("variant", VARIANTS, ids=lambda v: f"{v} installs")
def test_every_object_of_the_chart_is_accepted(server: ApiServer, variant: str) -> None:
    with helm.Chart.load(CHART) as chart:
        objects = render(chart, VARIANTS[variant]["values"])
    server.apply([{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}}])
    dynamic = DynamicClient(server.client())  # type: ignore[no-untyped-call]
    refused, checked = [], 0
    for manifest in objects:
        if (manifest["apiVersion"], manifest["kind"]) in THIRD_PARTY_KINDS:
            continue  # their CRDs are not installed here; tests/test_chart.py checks them against their schemas
        try:
            message = _dry_run_create(server, dynamic, manifest)
        except ResourceNotFoundError:
            refused.append(f"{manifest['kind']}: {manifest['apiVersion']} is not served by {server.version}")
            continue
        checked += 1
        if message:
            refused.append(message)
    assert checked >= 10, f"only {checked} objects were checked"
    assert refused == [], f"{server.version} refused:\n" + "\n".join(refused)


def test_the_dry_run_refuses_what_an_install_would(server: ApiServer) -> None:
    """The check above can fail: an unknown field is refused under strict field validation on both versions."""
    dynamic = DynamicClient(server.client())  # type: ignore[no-untyped-call]
    server.apply([{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}}])
    broken = {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": {"name": "broken", "namespace": NAMESPACE},
        "automountServiceAccountTokens": False,  # the field is automountServiceAccountToken
    }
    message = _dry_run_create(server, dynamic, broken)
    assert message is not None
    assert 'unknown field "automountServiceAccountTokens"' in message


def test_the_servers_are_the_versions_named(apiserver: ApiServer, apiserver_1_36: ApiServer) -> None:
    assert apiserver.version.startswith("v1.32.")
    assert apiserver_1_36.version.startswith("v1.36.")
    assert apiserver.mutating_admission_policy_api == "admissionregistration.k8s.io/v1alpha1"
    assert apiserver_1_36.mutating_admission_policy_api == "admissionregistration.k8s.io/v1"
