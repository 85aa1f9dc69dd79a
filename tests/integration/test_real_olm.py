"""The gate on the real OLM v1: operator-controller (Helm applier) installs and upgrades extensions by itself, and
the chart's webhooks in front of the API server hold each upgrade until its ClusterExtensionRevision is approved.

One OLM per session (``olm``, on an API server of its own), one ``upgrade-gate serve`` for this module; each test
uses its own package and ClusterExtension names.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.apiserver import wait_for
from tests.integration.conftest import Webhook, install_gate, serving
from tests.integration.olm import APPROVER_GROUP, HELM_GATE, POLICY, approve, propose
from tests.olm_harness import Olm

EXTENSIONS = "olm.operatorframework.io/v1"


@pytest.fixture(scope="module")
def gate(olm: Olm, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Webhook]:
    """The chart's CRD and webhooks on OLM's API server, served by a local ``upgrade-gate serve``."""
    install_gate(olm.server)
    olm.server.apply([_cluster_admin("gate-approvers", {"kind": "Group", "name": APPROVER_GROUP})])
    with serving(olm.server, tmp_path_factory.mktemp("gate")) as served:
        yield served


@pytest.fixture(scope="module")
def controller(olm: Olm, gate: Webhook, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """``upgrade-gate controller`` (gitops mode) on OLM's API server; its log file."""
    log_path = tmp_path_factory.mktemp("controller") / "controller.log"
    env = {
        **os.environ,
        "KUBECONFIG": olm.server.kubeconfig,
        "POD_NAMESPACE": "upgrade-gate",
        "POD_NAME": "controller-0",
        "UPGRADE_GATE_HEALTH_PORT": "0",
    }
    with log_path.open("ab") as log:
        process = subprocess.Popen(
            [str(Path(sys.executable).parent / "upgrade-gate"), "controller"],
            env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=log,
        )  # fmt: skip
        try:
            yield log_path
        finally:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def _cluster_admin(name: str, subject: dict[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", **subject}]
        if subject["kind"] != "ServiceAccount"
        else [subject],
    }


def install(olm: Olm, package: str) -> None:
    """Create ``package``'s namespace, installer ServiceAccount and ClusterExtension (any 1.x from channel
    ``stable`` of the ClusterCatalog ``harness``)."""
    namespace = f"{package}-system"
    kube = olm.kube()
    kube.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
    kube.apply(
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "installer", "namespace": namespace}}
    )
    kube.apply(
        _cluster_admin(f"{package}-installer", {"kind": "ServiceAccount", "name": "installer", "namespace": namespace})
    )
    kube.apply({
        "apiVersion": EXTENSIONS,
        "kind": "ClusterExtension",
        "metadata": {"name": package},
        "spec": {
            "namespace": namespace,
            "serviceAccount": {"name": "installer"},
            "source": {
                "sourceType": "Catalog",
                "catalog": {
                    "packageName": package,
                    "channels": ["stable"],
                    "version": ">=1.0.0 <2.0.0",
                    "selector": {"matchLabels": {"olm.operatorframework.io/metadata.name": "harness"}},
                },
            },
        },
    })  # fmt: skip


def extension(olm: Olm, name: str) -> dict[str, Any]:
    found: dict[str, Any] = olm.kube().get(EXTENSIONS, "ClusterExtension", name) or {}
    return found


def installed(olm: Olm, name: str) -> str | None:
    """The bundle version operator-controller reports installed, once ``Installed`` is True."""
    status = extension(olm, name).get("status", {})
    ok = any(c["type"] == "Installed" and c["status"] == "True" for c in status.get("conditions", []))
    version: str | None = status.get("install", {}).get("bundle", {}).get("version")
    return version if ok else None


def progressing(olm: Olm, name: str) -> dict[str, Any]:
    conditions = extension(olm, name).get("status", {}).get("conditions", [])
    return next((c for c in conditions if c["type"] == "Progressing"), {})


def touch(olm: Olm, name: str) -> None:
    """An annotation write to the ClusterExtension: operator-controller reconciles it at once."""
    olm.kube().patch(
        EXTENSIONS, "ClusterExtension", name, {"metadata": {"annotations": {"test/touched": str(time.time())}}}
    )


def test_operator_controller_installs_then_upgrades_with_its_own_release_writes(olm: Olm) -> None:
    """Without the gate's webhooks (no ``gate`` fixture yet in this session's first test), the harness's OLM upgrades
    by itself: what the gate must hold."""
    olm.publish({"smoke": ["1.0.0"]})
    install(olm, "smoke")
    wait_for(lambda: installed(olm, "smoke") == "1.0.0", "smoke installed at 1.0.0", timeout=60)
    olm.publish({"smoke": ["1.0.0", "1.1.0"]})
    wait_for(lambda: installed(olm, "smoke") == "1.1.0", "smoke upgraded to 1.1.0", timeout=60)
    namespace = olm.info["system_namespace"]
    releases = {
        secret["metadata"]["name"]: secret["metadata"]["labels"]["status"]
        for secret in olm.kube().list("v1", "Secret", namespace=namespace)
        if secret["metadata"]["name"].startswith("sh.helm.release.v1.smoke.")
    }
    assert releases == {"sh.helm.release.v1.smoke.v1": "superseded", "sh.helm.release.v1.smoke.v2": "deployed"}


def test_an_upgrade_is_held_with_the_policys_message_until_approved(olm: Olm, gate: Webhook) -> None:
    olm.publish({"smoke": ["1.0.0", "1.1.0"], "demo": ["1.0.0"]})
    install(olm, "demo")
    wait_for(lambda: installed(olm, "demo") == "1.0.0", "a first install, never held", timeout=60)

    olm.publish({"smoke": ["1.0.0", "1.1.0"], "demo": ["1.0.0", "1.1.0"]})
    held = POLICY + (
        "upgrade of demo from 1.0.0 to 1.1.0 is waiting for approval: no ClusterExtensionRevision proposes 1.1.0; "
        "create demo-1.1.0 and approve it"
    )
    message = f'admission webhook "{HELM_GATE}" denied the request: {held}'
    wait_for(lambda: message in progressing(olm, "demo").get("message", ""), "the hold in Progressing", timeout=60)
    assert progressing(olm, "demo")["reason"] == "Retrying"
    assert installed(olm, "demo") == "1.0.0"

    propose(olm.server, "demo", "1.1.0")
    approve(olm.server, "demo-1.1.0")
    touch(olm, "demo")
    wait_for(lambda: installed(olm, "demo") == "1.1.0", "the approved upgrade applied", timeout=30)


def test_an_approval_is_applied_at_once_however_long_the_hold(olm: Olm, gate: Webhook, controller: Path) -> None:
    """operator-controller's backoff has grown past the test's patience (it doubles from 5 ms: 8 s, 16 s, ... after
    a dozen denials); the controller's retry request makes the approval take effect in seconds."""
    olm.publish({"smoke": ["1.0.0", "1.1.0"], "demo": ["1.0.0", "1.1.0"], "prompt": ["1.0.0"]})
    install(olm, "prompt")
    wait_for(lambda: installed(olm, "prompt") == "1.0.0", "prompt installed", timeout=60)
    olm.publish({"smoke": ["1.0.0", "1.1.0"], "demo": ["1.0.0", "1.1.0"], "prompt": ["1.0.0", "1.1.0"]})
    wait_for(lambda: "waiting for approval" in progressing(olm, "prompt").get("message", ""), "the hold", timeout=60)
    propose(olm.server, "prompt", "1.1.0")
    time.sleep(30)  # about 13 denials: operator-controller's next retry is now 20-40 s away
    approved = time.monotonic()
    approve(olm.server, "prompt-1.1.0")
    wait_for(lambda: installed(olm, "prompt") == "1.1.0", "the approved upgrade applied", timeout=10)
    assert time.monotonic() - approved < 10
    annotations = extension(olm, "prompt")["metadata"]["annotations"]
    assert annotations["upgrade-gate.io/retry-for"].startswith("prompt-1.1.0@")


def test_an_upgrade_the_gate_never_saw_is_reported_as_unapproved(olm: Olm, gate: Webhook, controller: Path) -> None:
    """The gate's webhook configurations removed (a gate down or bypassed): operator-controller upgrades freely, and
    the controller reports the change no approved revision covered."""
    packages = {"smoke": ["1.0.0", "1.1.0"], "demo": ["1.0.0", "1.1.0"], "prompt": ["1.0.0", "1.1.0"]}
    olm.publish({**packages, "breach": ["1.0.0"]})
    install(olm, "breach")
    wait_for(lambda: installed(olm, "breach") == "1.0.0", "breach installed", timeout=60)
    kube = olm.kube()
    admission = "admissionregistration.k8s.io/v1"
    configurations = [
        (kind, item)
        for kind in ("ValidatingWebhookConfiguration", "MutatingWebhookConfiguration")
        for item in kube.list(admission, kind)
        if any(hook["name"].endswith(".upgrade-gate.dev") for hook in item.get("webhooks", []))
    ]
    assert configurations
    for kind, item in configurations:
        kube.delete(admission, kind, item["metadata"]["name"])
    try:
        olm.publish({**packages, "breach": ["1.0.0", "1.1.0"]})
        wait_for(lambda: installed(olm, "breach") == "1.1.0", "the ungated upgrade", timeout=60)

        def reported() -> list[dict[str, Any]]:
            events = kube.list("events.k8s.io/v1", "Event", namespace="default")
            return [e for e in events if e["reason"] == "UnapprovedUpgrade" and e["regarding"]["name"] == "breach"]

        (event,) = wait_for(reported, "the UnapprovedUpgrade Event", timeout=20)
        assert event["type"] == "Warning"
        assert event["note"].startswith("ClusterExtension breach changed from 1.0.0 to 1.1.0 without an approved")
    finally:
        for kind, item in configurations:  # listed items carry no apiVersion and kind
            metadata = {k: v for k, v in item["metadata"].items() if k in ("name", "labels", "annotations")}
            kube.apply({**item, "apiVersion": admission, "kind": kind, "metadata": metadata})
