"""What operator-controller writes at an install and an upgrade, and how a test sees the API server's answer."""

from __future__ import annotations

import base64
import datetime
import gzip
import json
from typing import Any

from kubernetes import client
from kubernetes.client.exceptions import ApiException

from tests.apiserver import ApiServer, wait_for

OLM_NAMESPACE = "olmv1-system"
OPERATOR_CONTROLLER = f"system:serviceaccount:{OLM_NAMESPACE}:operator-controller-controller-manager"
APPROVER, APPROVER_GROUP = "alice", "upgrade-approvers"
REVISIONS = ("olm.operatorframework.io", "v1", "clusterextensionrevisions")
EXTENSIONS = ("olm.operatorframework.io", "v1", "clusterextensions")
OBJECT_SETS = ("olm.operatorframework.io", "v1", "clusterobjectsets")


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
