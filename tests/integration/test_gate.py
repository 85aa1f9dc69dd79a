"""The upgrade gate against a real kube-apiserver: operator-controller's upgrade writes are held until approved.

The chart's CRD and webhook configurations are installed into the API server (rendered by Helm, pointed at a
local ``upgrade-gate serve --cluster on`` over TLS), with upstream OLM v1's CRDs for ClusterExtension and
ClusterObjectSet. Nothing runs operator-controller here: the tests write its status and create its release
index Secrets and ClusterObjectSets exactly as it does at an install and an upgrade, under its own identity.
"""

from __future__ import annotations

import base64
import datetime
import gzip
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
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from tests.apiserver import ROOT, ApiServer, upstream_crds, wait_for

OLM_NAMESPACE = "olmv1-system"
OPERATOR_CONTROLLER = f"system:serviceaccount:{OLM_NAMESPACE}:operator-controller-controller-manager"
APPROVER, APPROVER_GROUP = "alice", "upgrade-approvers"
REVISIONS = ("olm.operatorframework.io", "v1", "clusterextensionrevisions")
EXTENSIONS = ("olm.operatorframework.io", "v1", "clusterextensions")
OBJECT_SETS = ("olm.operatorframework.io", "v1", "clusterobjectsets")


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


@pytest.fixture(scope="module")
def cluster(apiserver: ApiServer) -> ApiServer:
    chart = _chart_objects({})
    (crd,) = [o for o in chart if o["kind"] == "CustomResourceDefinition"]
    apiserver.install_crds(
        [
            upstream_crds() / "olm.operatorframework.io_clusterextensions.yaml",
            upstream_crds() / "olm.operatorframework.io_clusterobjectsets.yaml",
            crd,
        ]
    )
    namespaces = [OLM_NAMESPACE, "upgrade-gate", "upgrade-gate-system", "elsewhere"]
    bindings = [  # operator-controller is bound to cluster-admin upstream; approvers may write revisions
        ("gate-operator-controller", {"kind": "User", "name": OPERATOR_CONTROLLER}),
        ("gate-approvers", {"kind": "Group", "name": APPROVER_GROUP}),
    ]
    apiserver.apply(
        [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}} for name in namespaces]
        + [
            {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "ClusterRoleBinding",
                "metadata": {"name": name},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
                "subjects": [{"apiGroup": "rbac.authorization.k8s.io", **subject}],
            }
            for name, subject in bindings
        ]
    )
    return apiserver


@pytest.fixture(scope="module")
def webhook(cluster: ApiServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Webhook]:
    work = tmp_path_factory.mktemp("gate")
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
        "KUBECONFIG": cluster.kubeconfig,
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
        cluster.apply(configurations)
        yield served
    finally:
        process.terminate()
        process.wait(timeout=20)
        log.close()


# --- what operator-controller writes ---------------------------------------------------------------------------


def extension(api: client.ApiClient, name: str, installed: str) -> None:
    """A ClusterExtension with a version range, installed at ``installed`` (status as operator-controller writes)."""
    custom = client.CustomObjectsApi(api)
    body = {
        "apiVersion": "olm.operatorframework.io/v1",
        "kind": "ClusterExtension",
        "metadata": {"name": name},
        "spec": {
            "namespace": f"{name}-system",
            "serviceAccount": {"name": "installer"},
            "source": {
                "sourceType": "Catalog",
                "catalog": {
                    "packageName": name,
                    "version": ">=0.1.0 <9.0.0",
                    "selector": {"matchLabels": {"olm.operatorframework.io/metadata.name": "certified-operators"}},
                },
            },
        },
    }
    custom.create_cluster_custom_object(*EXTENSIONS, body)
    now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    condition = {"lastTransitionTime": now, "observedGeneration": 1, "message": "Installed bundle", "status": "True"}
    status = {
        "install": {"bundle": {"name": f"{name}.v{installed}", "version": installed}},
        "conditions": [{**condition, "type": "Installed", "reason": "Succeeded"}],
    }
    custom.patch_cluster_custom_object_status(*EXTENSIONS, name, {"status": status})


def index_secret(name: str, revision: int, version: str, status: str, namespace: str = OLM_NAMESPACE) -> dict[str, Any]:
    """The release index Secret helm-operator-plugins' chunked driver creates for operator-controller."""
    key = f"sh.helm.release.v1.{name}.v{revision}"
    release = {
        "name": name,
        "namespace": f"{name}-system",
        "version": revision,
        "info": {"status": status},
        "manifest": "---\napiVersion: v1\nkind: ServiceAccount\n",
        "labels": {
            "olm.operatorframework.io/bundle-name": f"{name}.v{version}",
            "olm.operatorframework.io/bundle-version": version,
            "olm.operatorframework.io/package-name": name,
            "olm.operatorframework.io/bundle-reference": f"quay.io/example/{name}-bundle@sha256:0a1b",
        },
    }
    chunk = gzip.compress(json.dumps(release).encode(), compresslevel=9)
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": "operatorframework.io/index.v1",
        "immutable": False,
        "metadata": {
            "name": key,
            "namespace": namespace,
            "labels": {
                "name": name,
                "owner": "operator-controller",
                "status": status,
                "version": str(revision),
                "key": key,
                "type": "index",
                "createdAt": "1781092800",
            },
        },
        "data": {"chunk": base64.b64encode(chunk).decode(), "extraChunks": base64.b64encode(b"[]").decode()},
    }


def object_set(name: str, revision: int, version: str, *, migrated: bool = False) -> dict[str, Any]:
    """The ClusterObjectSet operator-controller's Boxcutter applier creates for a new revision."""
    labels = {"olm.operatorframework.io/owner-kind": "ClusterExtension", "olm.operatorframework.io/owner-name": name}
    if migrated:
        labels["olm.operatorframework.io/migrated-from-helm"] = "true"
    return {
        "apiVersion": "olm.operatorframework.io/v1",
        "kind": "ClusterObjectSet",
        "metadata": {
            "name": f"{name}-{revision}",
            "labels": labels,
            "annotations": {
                "olm.operatorframework.io/bundle-name": f"{name}.v{version}",
                "olm.operatorframework.io/bundle-version": version,
                "olm.operatorframework.io/package-name": name,
                "olm.operatorframework.io/bundle-reference": f"quay.io/example/{name}-bundle@sha256:0a1b",
            },
        },
        "spec": {"revision": revision, "lifecycleState": "Active", "collisionProtection": "Prevent"},
    }


def as_operator_controller(cluster: ApiServer) -> client.ApiClient:
    return cluster.client(OPERATOR_CONTROLLER)


def create(api: client.ApiClient, obj: dict[str, Any], *, dry_run: bool = False) -> str | None:
    """Create ``obj`` (server-side dry run: admitted, not stored); None when admitted, else the API server's
    message."""
    dry = "All" if dry_run else None
    try:
        if obj["kind"] == "Secret":
            # the client takes a plain dict as the body, as its own docs show; its stubs say V1Secret only
            core = client.CoreV1Api(api)
            core.create_namespaced_secret(obj["metadata"]["namespace"], obj, dry_run=dry)  # type: ignore[arg-type]
        else:
            client.CustomObjectsApi(api).create_cluster_custom_object(*OBJECT_SETS, obj, dry_run=dry)
    except ApiException as error:
        return str(json.loads(error.body or "{}").get("message"))
    return None


def propose(cluster: ApiServer, name: str, version: str) -> None:
    """A ClusterExtensionRevision proposing ``version``, available for three days (past the soak period)."""
    since = datetime.datetime.now(datetime.UTC) - datetime.timedelta(days=3)
    body = {
        "apiVersion": "olm.operatorframework.io/v1",
        "kind": "ClusterExtensionRevision",
        "metadata": {"name": f"{name}-{version}"},
        "spec": {
            "clusterExtensionRef": {"name": name},
            "version": version,
            "bundleMetadata": {"name": f"{name}.v{version}", "version": version},
            "availableSince": since.strftime("%Y-%m-%dT%H:%M:%SZ"),
        },
    }
    client.CustomObjectsApi(cluster.client()).create_cluster_custom_object(*REVISIONS, body)


def approve(cluster: ApiServer, revision: str) -> dict[str, Any]:
    approver = cluster.client(APPROVER, APPROVER_GROUP)
    patched = client.CustomObjectsApi(approver).patch_cluster_custom_object(
        *REVISIONS, revision, {"spec": {"approved": True}}
    )
    assert isinstance(patched, dict)
    return patched


def denied(api: client.ApiClient, obj: dict[str, Any], webhook: str, message: str) -> None:
    """``obj``'s CREATE is denied by ``webhook`` with the policy's ``message``: probed with dry runs (admitted like
    real writes, never stored) until the webhook's caches have caught up, then created for real."""
    expected = f'admission webhook "{webhook}" denied the request: {message}'
    answers: list[str | None] = []

    def probe() -> bool:
        answers.append(create(api, obj, dry_run=True))
        return answers[-1] == expected

    try:
        wait_for(probe, f"the denial of {obj['metadata']['name']}")
    except AssertionError as error:
        raise AssertionError(f"{error}; last answer: {answers[-1]}") from None
    assert create(api, obj) == expected


def admitted(api: client.ApiClient, obj: dict[str, Any]) -> None:
    """``obj``'s CREATE is admitted (retried while the webhook's caches catch up with an approval)."""
    last: list[str | None] = []

    def admit() -> bool:
        last.append(create(api, obj))
        return last[-1] is None

    try:
        wait_for(admit, f"the admission of {obj['metadata']['name']}")
    except AssertionError as error:
        raise AssertionError(f"{error}; answers: {last[:3]} ... {last[-1]}") from None


POLICY = (
    "ValidatingAdmissionPolicy 'upgrade-gate-upgrade-approval' with binding 'upgrade-gate-upgrade-approval' "
    "denied request: "
)
HELM_GATE, BOXCUTTER_GATE = "upgrades-helm.upgrade-gate.dev", "upgrades-boxcutter.upgrade-gate.dev"


# --- the Helm applier ---------------------------------------------------------------------------------------------


def test_a_helm_upgrade_waits_for_its_revision_and_is_applied_once_approved(cluster, webhook):
    operator_controller = as_operator_controller(cluster)
    extension(cluster.client(), "cnpg", "1.27.1")
    assert create(operator_controller, index_secret("cnpg", 1, "1.27.1", "pending-install")) is None

    upgrade = index_secret("cnpg", 2, "1.28.0", "pending-upgrade")
    denied(operator_controller, upgrade, HELM_GATE, POLICY + (
        "upgrade of cnpg from 1.27.1 to 1.28.0 is waiting for approval: no ClusterExtensionRevision proposes 1.28.0; "
        "create cnpg-1.28.0 and approve it"
    ))  # fmt: skip
    propose(cluster, "cnpg", "1.28.0")
    denied(operator_controller, upgrade, HELM_GATE, POLICY + (
        "upgrade of cnpg from 1.27.1 to 1.28.0 is waiting for approval: approve ClusterExtensionRevision cnpg-1.28.0 "
        "(spec.approved: true)"
    ))  # fmt: skip
    revision = approve(cluster, "cnpg-1.28.0")
    assert revision["spec"]["approvedBy"] == APPROVER  # stamped by the mutating policy
    admitted(operator_controller, upgrade)

    # What follows a successful upgrade is never held: the release status updates and a chunk Secret.
    core = client.CoreV1Api(operator_controller)
    for key, status in [("sh.helm.release.v1.cnpg.v1", "superseded"), ("sh.helm.release.v1.cnpg.v2", "deployed")]:
        core.patch_namespaced_secret(key, OLM_NAMESPACE, {"metadata": {"labels": {"status": status}}})
    chunk = {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": "operatorframework.io/chunk.v1",
        "immutable": True,
        "metadata": {"name": "sh.helm.release.v1.cnpg.v2-mfrggzdf", "namespace": OLM_NAMESPACE,
                     "labels": {"owner": "operator-controller", "key": "sh.helm.release.v1.cnpg.v2", "type": "chunk"}},
        "data": {"chunk": base64.b64encode(b"more").decode()},
    }  # fmt: skip
    assert create(operator_controller, chunk) is None


def test_a_re_apply_and_writes_that_are_not_upgrades_are_never_held(cluster, webhook):
    operator_controller = as_operator_controller(cluster)
    extension(cluster.client(), "argo", "0.9.0")
    denied(operator_controller, index_secret("argo", 2, "0.9.1", "pending-upgrade"), HELM_GATE, POLICY + (
        "upgrade of argo from 0.9.0 to 0.9.1 is waiting for approval: no ClusterExtensionRevision proposes 0.9.1; "
        "create argo-0.9.1 and approve it"
    ))  # fmt: skip
    assert create(operator_controller, index_secret("argo", 3, "0.9.0", "pending-upgrade")) is None  # a re-apply
    elsewhere = index_secret("argo", 4, "0.9.1", "pending-upgrade", namespace="elsewhere")
    assert create(operator_controller, elsewhere) is None  # not in the OLM system namespace
    assert (
        create(cluster.client(), index_secret("argo", 5, "0.9.1", "pending-upgrade")) is None
    )  # not operator-controller


# --- the Boxcutter applier ----------------------------------------------------------------------------------------


def test_a_boxcutter_upgrade_waits_for_its_revision_and_a_migration_is_never_held(cluster, webhook):
    operator_controller = as_operator_controller(cluster)
    extension(cluster.client(), "kafka", "3.1.0")
    assert create(operator_controller, object_set("kafka", 1, "3.1.0", migrated=True)) is None
    upgrade = object_set("kafka", 2, "3.2.0")
    denied(operator_controller, upgrade, BOXCUTTER_GATE, POLICY + (
        "upgrade of kafka from 3.1.0 to 3.2.0 is waiting for approval: no ClusterExtensionRevision proposes 3.2.0; "
        "create kafka-3.2.0 and approve it"
    ))  # fmt: skip
    propose(cluster, "kafka", "3.2.0")
    approve(cluster, "kafka-3.2.0")
    admitted(operator_controller, upgrade)


# --- when: freeze windows at the moment of the upgrade --------------------------------------------------------------


def test_a_freeze_window_holds_an_approved_upgrade(cluster, webhook):
    operator_controller = as_operator_controller(cluster)
    extension(cluster.client(), "vault", "1.0.0")
    propose(cluster, "vault", "1.1.0")
    approve(cluster, "vault-1.1.0")  # approved before the freeze
    now = datetime.datetime.now(datetime.UTC)
    hour = datetime.timedelta(hours=1)
    window = f"{now - hour:%Y-%m-%dT%H:%M:%SZ}/{now + hour:%Y-%m-%dT%H:%M:%SZ}"
    settings_file = webhook.policies / "settings.yaml"
    original = settings_file.read_text()
    upgrade = index_secret("vault", 2, "1.1.0", "pending-upgrade")
    held = POLICY + f"upgrade of vault from 1.0.0 to 1.1.0 is approved but held by the freeze window {window}"
    settings_file.write_text(original.replace('freezeWindows: ""', f'freezeWindows: "{window}"'))
    try:
        denied(operator_controller, upgrade, HELM_GATE, held)
    finally:
        settings_file.write_text(original)
    wait_for(lambda: create(operator_controller, upgrade, dry_run=True) is None, "the freeze to end", timeout=30)
    core = client.CoreV1Api(cluster.client())
    names = [
        s.metadata and s.metadata.name
        for s in core.list_namespaced_secret(OLM_NAMESPACE, label_selector="name=vault").items
    ]
    assert names == [], "a denied release was stored"
    admitted(operator_controller, upgrade)


# --- the webhook down: only upgrades wait (keep this test last: it stops the webhook) -------------------------------


def test_with_the_webhook_down_only_upgrades_wait(cluster, webhook):
    operator_controller = as_operator_controller(cluster)
    extension(cluster.client(), "redis", "7.0.0")
    webhook.process.terminate()
    webhook.process.wait(timeout=20)
    message = create(operator_controller, index_secret("redis", 2, "7.2.0", "pending-upgrade"))
    assert message is not None
    assert message.startswith(f'Internal error occurred: failed calling webhook "{HELM_GATE}"'), message
    assert create(operator_controller, index_secret("redis", 1, "7.0.0", "pending-install")) is None
    plain = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "redis-auth", "namespace": OLM_NAMESPACE}}
    assert create(operator_controller, plain) is None
