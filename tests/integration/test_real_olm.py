"""The real OLM v1 installs and upgrades an extension by itself: what every gate test against operator-controller
builds on (the harness, the binaries built from source, the writes the gate sees)."""

from __future__ import annotations

from typing import Any

from tests.apiserver import wait_for
from tests.olm_harness import Olm

NAMESPACE = "smoke-system"
SETUP = [
    {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}},
    {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "installer", "namespace": NAMESPACE}},
    {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": "smoke-installer"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
        "subjects": [{"kind": "ServiceAccount", "name": "installer", "namespace": NAMESPACE}],
    },
]
EXTENSION = {
    "apiVersion": "olm.operatorframework.io/v1",
    "kind": "ClusterExtension",
    "metadata": {"name": "smoke"},
    "spec": {
        "namespace": NAMESPACE,
        "serviceAccount": {"name": "installer"},
        "source": {"sourceType": "Catalog", "catalog": {"packageName": "smoke", "channels": ["stable"]}},
    },
}


def _installed(olm: Olm, version: str) -> dict[str, Any] | None:
    extension: dict[str, Any] = olm.kube().get("olm.operatorframework.io/v1", "ClusterExtension", "smoke") or {}
    status = extension.get("status", {})
    bundle = status.get("install", {}).get("bundle", {})
    installed = any(c["type"] == "Installed" and c["status"] == "True" for c in status.get("conditions", []))
    return extension if installed and bundle.get("version") == version else None


def test_operator_controller_installs_then_upgrades_with_its_own_release_writes(olm: Olm) -> None:
    kube = olm.kube()
    olm.publish({"smoke": ["1.0.0"]})
    for document in [*SETUP, EXTENSION]:
        kube.apply(document)
    wait_for(lambda: _installed(olm, "1.0.0"), "smoke installed at 1.0.0", timeout=60)

    olm.publish({"smoke": ["1.0.0", "1.1.0"]})
    upgraded = wait_for(lambda: _installed(olm, "1.1.0"), "smoke upgraded to 1.1.0", timeout=60)

    assert upgraded["status"]["install"]["bundle"]["name"] == "smoke.v1.1.0"
    namespace = olm.info["system_namespace"]
    releases = {
        secret["metadata"]["name"]: secret["metadata"]["labels"]
        for secret in kube.list("v1", "Secret", namespace=namespace)
        if secret["metadata"]["name"].startswith("sh.helm.release.v1.smoke.")
    }
    assert releases["sh.helm.release.v1.smoke.v1"]["status"] == "superseded"
    assert releases["sh.helm.release.v1.smoke.v2"]["status"] == "deployed"
