"""The gate on the real OLM v1: operator-controller (Helm applier) installs and upgrades extensions by itself, and
the chart's webhooks in front of the API server hold each upgrade until its ClusterExtensionRevision is approved.

One OLM per session (``olm``, on an API server of its own), one ``upgrade-gate serve`` for this module; each test
uses its own package and ClusterExtension names, and publishes a catalog of its own packages only (the extensions
of earlier tests then no longer resolve, which holds nothing).
"""

from __future__ import annotations

import datetime
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.apiserver import cluster_admin, wait_for
from tests.integration.conftest import Webhook, controlling, install_gate, serving
from tests.integration.olm import APPROVER_GROUP, HELM_GATE, POLICY, approve, propose
from tests.olm_harness import EXTENSIONS, Olm

ADMISSION = "admissionregistration.k8s.io/v1"


@pytest.fixture(scope="module")
def gate(olm: Olm, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Webhook]:
    """The chart's CRD and webhooks on OLM's API server, served by a local ``upgrade-gate serve``."""
    install_gate(olm.server)
    olm.server.apply([cluster_admin("gate-approvers", {"kind": "Group", "name": APPROVER_GROUP})])
    with serving(olm.server, tmp_path_factory.mktemp("gate")) as served:
        yield served


@pytest.fixture(scope="module")
def controller(olm: Olm, gate: Webhook, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """``upgrade-gate controller`` (gitops mode) on OLM's API server; its log file."""
    log_path = tmp_path_factory.mktemp("controller") / "controller.log"
    with controlling(olm.server, log_path):
        yield log_path


def held_at_1_0_0(olm: Olm, package: str) -> None:
    """``package`` installed at 1.0.0 (a first install, never held), then 1.1.0 published and its upgrade held by
    the gate, waiting for approval."""
    olm.publish({package: ["1.0.0"]})
    olm.install(package)
    wait_for(lambda: olm.installed(package) == "1.0.0", f"{package} installed at 1.0.0", timeout=60)
    olm.publish({package: ["1.0.0", "1.1.0"]})
    waiting = f"upgrade of {package} from 1.0.0 to 1.1.0 is waiting for approval"
    wait_for(lambda: waiting in olm.progressing(package).get("message", ""), f"{package}'s hold", timeout=60)


def touch(olm: Olm, name: str) -> None:
    """An annotation write to the ClusterExtension: operator-controller reconciles it at once."""
    olm.kube().patch(
        EXTENSIONS, "ClusterExtension", name, {"metadata": {"annotations": {"test/touched": str(time.time())}}}
    )


def test_operator_controller_installs_then_upgrades_with_its_own_release_writes(olm: Olm) -> None:
    """Without the gate's webhooks (no ``gate`` fixture yet in this session's first test), the harness's OLM upgrades
    by itself: what the gate must hold."""
    olm.publish({"smoke": ["1.0.0"]})
    olm.install("smoke")
    wait_for(lambda: olm.installed("smoke") == "1.0.0", "smoke installed at 1.0.0", timeout=60)
    olm.publish({"smoke": ["1.0.0", "1.1.0"]})
    wait_for(lambda: olm.installed("smoke") == "1.1.0", "smoke upgraded to 1.1.0", timeout=60)
    namespace = olm.info["system_namespace"]
    releases = {
        secret["metadata"]["name"]: secret["metadata"]["labels"]["status"]
        for secret in olm.kube().list("v1", "Secret", namespace=namespace)
        if secret["metadata"]["name"].startswith("sh.helm.release.v1.smoke.")
    }
    assert releases == {"sh.helm.release.v1.smoke.v1": "superseded", "sh.helm.release.v1.smoke.v2": "deployed"}


def test_an_upgrade_is_held_with_the_policys_message_until_approved(olm: Olm, gate: Webhook) -> None:
    olm.publish({"demo": ["1.0.0"]})
    olm.install("demo")
    wait_for(lambda: olm.installed("demo") == "1.0.0", "a first install, never held", timeout=60)

    olm.publish({"demo": ["1.0.0", "1.1.0"]})
    held = POLICY + (
        "upgrade of demo from 1.0.0 to 1.1.0 is waiting for approval: no ClusterExtensionRevision proposes 1.1.0; "
        "create demo-1.1.0 and approve it"
    )
    message = f'admission webhook "{HELM_GATE}" denied the request: {held}'
    wait_for(lambda: message in olm.progressing("demo").get("message", ""), "the hold in Progressing", timeout=60)
    assert olm.progressing("demo")["reason"] == "Retrying"
    assert olm.installed("demo") == "1.0.0"

    propose(olm.server, "demo", "1.1.0")
    approve(olm.server, "demo-1.1.0")
    touch(olm, "demo")
    wait_for(lambda: olm.installed("demo") == "1.1.0", "the approved upgrade applied", timeout=30)


def test_an_approval_is_applied_at_once_however_long_the_hold(olm: Olm, gate: Webhook, controller: Path) -> None:
    """operator-controller's backoff has grown past the test's patience (it doubles from 5 ms: 8 s, 16 s, ... after
    a dozen denials); the controller's retry request makes the approval take effect in seconds."""
    held_at_1_0_0(olm, "prompt")
    propose(olm.server, "prompt", "1.1.0")
    time.sleep(30)  # about 13 denials: operator-controller's next retry is now 20-40 s away
    approved = time.monotonic()
    approve(olm.server, "prompt-1.1.0")
    wait_for(lambda: olm.installed("prompt") == "1.1.0", "the approved upgrade applied", timeout=10)
    assert time.monotonic() - approved < 10
    annotations = olm.extension("prompt")["metadata"]["annotations"]
    assert annotations["upgrade-gate.io/retry-for"].startswith("prompt-1.1.0@")


def test_an_upgrade_the_gate_never_saw_is_reported_as_unapproved(olm: Olm, gate: Webhook, controller: Path) -> None:
    """The gate's webhook configurations removed (a gate down or bypassed): operator-controller upgrades freely, and
    the controller reports the change no approved revision covered."""
    olm.publish({"breach": ["1.0.0"]})
    olm.install("breach")
    wait_for(lambda: olm.installed("breach") == "1.0.0", "breach installed", timeout=60)
    kube = olm.kube()
    configurations = gate_configurations(olm)
    assert configurations
    for kind, item in configurations:
        kube.delete(ADMISSION, kind, item["metadata"]["name"])
    try:
        olm.publish({"breach": ["1.0.0", "1.1.0"]})
        wait_for(lambda: olm.installed("breach") == "1.1.0", "the ungated upgrade", timeout=60)

        def reported() -> list[dict[str, Any]]:
            events = kube.list("events.k8s.io/v1", "Event", namespace="default")
            return [e for e in events if e["reason"] == "UnapprovedUpgrade" and e["regarding"]["name"] == "breach"]

        (event,) = wait_for(reported, "the UnapprovedUpgrade Event", timeout=20)
        assert event["type"] == "Warning"
        assert event["note"].startswith("ClusterExtension breach changed from 1.0.0 to 1.1.0 without an approved")

        def gap() -> list[dict[str, Any]]:  # the controller's own doctor round saw the gate gone
            events = kube.list("events.k8s.io/v1", "Event", namespace="default")
            return [e for e in events if e["reason"] == "GateNotEnforced" and "upgrades-helm" in e["note"]]

        (gone,) = wait_for(gap, "the GateNotEnforced Event", timeout=20)
        assert gone["type"] == "Warning"
        assert gone["regarding"]["name"] == "clusterextensionrevisions.olm.operatorframework.io"
    finally:
        reapply(olm, configurations)


def gate_configurations(olm: Olm) -> list[tuple[str, dict[str, Any]]]:
    """The webhook configurations the chart installed, as ``(kind, object)``."""
    kinds = ("ValidatingWebhookConfiguration", "MutatingWebhookConfiguration")
    return [
        (kind, item)
        for kind in kinds
        for item in olm.kube().list(ADMISSION, kind)
        if any(hook["name"].endswith(".upgrade-gate.dev") for hook in item.get("webhooks", []))
    ]


def reapply(olm: Olm, configurations: list[tuple[str, dict[str, Any]]]) -> None:
    for kind, item in configurations:  # listed items carry no apiVersion and kind
        metadata = {k: v for k, v in item["metadata"].items() if k in ("name", "labels", "annotations")}
        olm.kube().apply({**item, "apiVersion": ADMISSION, "kind": kind, "metadata": metadata})


def test_while_the_webhook_is_down_upgrades_wait_and_first_installs_go_on(olm: Olm, gate: Webhook) -> None:
    """Every webhook of the gate unreachable (failurePolicy Fail): an upgrade waits with the API server's failure
    in Progressing; a first install of an extension created before the outage is never sent to the gate."""
    olm.publish({"downa": ["1.0.0"]})
    olm.install("downa")
    wait_for(lambda: olm.installed("downa") == "1.0.0", "downa installed", timeout=60)
    olm.install("downb")  # not in the catalog yet: operator-controller takes it in (finalizer) and waits
    wait_for(lambda: olm.extension("downb").get("metadata", {}).get("finalizers"), "downb taken in", timeout=30)
    configurations = gate_configurations(olm)
    down = [
        (kind, {**item, "webhooks": [
            {**hook, "clientConfig": {**hook["clientConfig"], "url": "https://127.0.0.1:9/unreachable"}}
            for hook in item["webhooks"]
        ]})
        for kind, item in configurations
    ]  # fmt: skip
    reapply(olm, down)
    try:
        olm.publish({"downa": ["1.0.0", "1.1.0"], "downb": ["1.0.0"]})
        wait_for(lambda: olm.installed("downb") == "1.0.0", "a first install during the outage", timeout=60)
        failed = f'failed calling webhook "{HELM_GATE}"'
        wait_for(lambda: failed in olm.progressing("downa").get("message", ""), "the upgrade waiting", timeout=60)
        assert olm.installed("downa") == "1.0.0"
    finally:
        reapply(olm, configurations)


def test_an_approved_upgrade_waits_out_a_freeze_window(olm: Olm, gate: Webhook, controller: Path) -> None:
    """Approved before a freeze, the upgrade that becomes available inside it is held at apply time with the
    window in the message, on the ClusterExtension and on the revision; when the freeze closes, the controller makes
    operator-controller retry, and the upgrade is applied within seconds, not at the end of its backoff."""
    olm.publish({"freeze": ["1.0.0"]})
    olm.install("freeze")
    wait_for(lambda: olm.installed("freeze") == "1.0.0", "freeze installed", timeout=60)
    propose(olm.server, "freeze", "1.1.0")
    approve(olm.server, "freeze-1.1.0")
    now = datetime.datetime.now(datetime.UTC).replace(microsecond=0)
    closes = now + datetime.timedelta(seconds=30)
    window = f"{(now - datetime.timedelta(minutes=1)).isoformat()}/{closes.isoformat()}".replace("+00:00", "Z")
    with gate.settings(freezeWindows=window):
        olm.publish({"freeze": ["1.0.0", "1.1.0"]})
        held = f"upgrade of freeze from 1.0.0 to 1.1.0 is approved but held by the freeze window {window}"
        wait_for(lambda: held in olm.progressing("freeze").get("message", ""), "the freeze's hold", timeout=20)

        def revision_held() -> bool:
            found = olm.kube().get(EXTENSIONS, "ClusterExtensionRevision", "freeze-1.1.0") or {}
            conditions = {c["type"]: c for c in found.get("status", {}).get("conditions", [])}
            progressing = conditions.get("Progressing", {})
            said_once = progressing.get("message") == held  # the policy's sentence, not the admission chain
            state: str = found.get("status", {}).get("state", "")
            return state == "Held" and progressing.get("reason") == "Held" and said_once

        wait_for(revision_held, "the hold on the revision's status", timeout=20)
        assert olm.installed("freeze") == "1.0.0"
        wait_for(lambda: olm.installed("freeze") == "1.1.0", "the upgrade after the freeze", timeout=45)
    upgraded = datetime.datetime.now(datetime.UTC)
    assert closes <= upgraded < closes + datetime.timedelta(seconds=10), "within seconds of the freeze's end"
    annotations = olm.extension("freeze")["metadata"]["annotations"]
    assert annotations["upgrade-gate.io/retry-for"].endswith(f"@{window}")


def test_a_clusterextension_deleted_while_held_is_removed_and_its_revision_says_so(
    olm: Olm, gate: Webhook, controller: Path
) -> None:
    """Nothing stuck: operator-controller's finalizers run (none of its writes then is sent to the gate) and the
    controller reports the revision failed, its ClusterExtension gone. (The release Secrets stay here: they are
    owned by the ClusterExtension, and this API server runs no garbage collector.)"""
    held_at_1_0_0(olm, "gone")
    propose(olm.server, "gone", "1.1.0")
    olm.kube().delete(EXTENSIONS, "ClusterExtension", "gone")
    wait_for(lambda: not olm.extension("gone"), "the ClusterExtension deleted, finalizers and all", timeout=60)

    def failed() -> dict[str, Any] | None:
        found = olm.kube().get(EXTENSIONS, "ClusterExtensionRevision", "gone-1.1.0") or {}
        return found if found.get("status", {}).get("state") == "Failed" else None

    revision = wait_for(failed, "the revision failed", timeout=30)
    conditions = {c["type"]: c for c in revision["status"]["conditions"]}
    assert conditions["Stalled"]["message"] == "ClusterExtension gone not found"


def test_a_rollback_is_applied_with_its_own_acknowledged_approval(olm: Olm, gate: Webhook, controller: Path) -> None:
    """Back from 1.1.0 to 1.0.0: OLM v1 downgrades only with upgradeConstraintPolicy SelfCertified and the version
    pinned, which the guards admit for the pinned version the extension names as its rollback; the gate then holds
    operator-controller's downgrade until a revision for 1.0.0 is approved with the rollback acknowledged."""
    held_at_1_0_0(olm, "rollback")
    propose(olm.server, "rollback", "1.1.0")
    approve(olm.server, "rollback-1.1.0")
    wait_for(lambda: olm.installed("rollback") == "1.1.0", "the approved upgrade applied", timeout=30)
    kube = olm.kube()
    kube.delete(EXTENSIONS, "ClusterExtensionRevision", "rollback-1.1.0")  # completed: one revision per extension
    wait_for(lambda: not kube.get(EXTENSIONS, "ClusterExtensionRevision", "rollback-1.1.0"), "the revision deleted")

    catalog = {"version": "1.0.0", "upgradeConstraintPolicy": "SelfCertified"}
    unannounced = {"spec": {"source": {"catalog": catalog}}}
    with pytest.raises(Exception, match=re.escape("for a rollback pin spec.source.catalog.version")):
        kube.patch(EXTENSIONS, "ClusterExtension", "rollback", unannounced)
    announced = {"metadata": {"annotations": {"upgrade-gate.io/rollback-to": "1.0.0"}}, **unannounced}
    with pytest.raises(Exception, match="approve a ClusterExtensionRevision for a version in that range first"):
        kube.patch(EXTENSIONS, "ClusterExtension", "rollback", announced)

    propose(olm.server, "rollback", "1.0.0")
    with pytest.raises(Exception, match=re.escape("rolling rollback back from 1.1.0 to 1.0.0 needs the annotation")):
        approve(olm.server, "rollback-1.0.0")
    acknowledged = {"metadata": {"annotations": {"upgrade-gate.io/acknowledge-rollback": "1.0.0"}}}
    kube.patch(EXTENSIONS, "ClusterExtensionRevision", "rollback-1.0.0", acknowledged)
    approve(olm.server, "rollback-1.0.0")
    kube.patch(EXTENSIONS, "ClusterExtension", "rollback", announced)
    wait_for(lambda: olm.installed("rollback") == "1.0.0", "the approved rollback applied", timeout=30)

    def succeeded() -> dict[str, Any] | None:
        found = kube.get(EXTENSIONS, "ClusterExtensionRevision", "rollback-1.0.0") or {}
        return found if found.get("status", {}).get("state") == "Succeeded" else None

    revision = wait_for(succeeded, "the rollback's revision succeeded", timeout=30)
    conditions = {c["type"]: c for c in revision["status"]["conditions"]}
    assert conditions["Ready"]["message"] == "rollback rolled back to 1.0.0"
    assert revision["status"]["fromVersion"] == "1.1.0"


def test_an_approved_version_the_catalog_withdrew_is_held_saying_so_and_applied_once_offered_again(
    olm: Olm, gate: Webhook, controller: Path
) -> None:
    """Nothing stuck in Progressing: approved for 1.1.0, which the catalog no longer offers, the revision says
    operator-controller has settled on 1.0.0 and why; once the catalog offers 1.1.0 again, it is applied."""
    olm.publish({"withdrawn": ["1.0.0"]})
    olm.install("withdrawn")
    wait_for(lambda: olm.installed("withdrawn") == "1.0.0", "withdrawn installed at 1.0.0", timeout=60)
    propose(olm.server, "withdrawn", "1.1.0")
    approve(olm.server, "withdrawn-1.1.0")

    def state() -> tuple[str, str]:
        found = olm.kube().get(EXTENSIONS, "ClusterExtensionRevision", "withdrawn-1.1.0") or {}
        conditions = {c["type"]: c for c in found.get("status", {}).get("conditions", [])}
        return found.get("status", {}).get("state", ""), conditions.get("Progressing", {}).get("message", "")

    settled = "upgrade of withdrawn from 1.0.0 to 1.1.0 is approved, but operator-controller has settled on 1.0.0"
    wait_for(lambda: state()[0] == "Held" and state()[1].startswith(settled), "the revision held, saying why")
    olm.publish({"withdrawn": ["1.0.0", "1.1.0"]})
    wait_for(lambda: olm.installed("withdrawn") == "1.1.0", "the approved upgrade applied once offered", timeout=60)
    wait_for(lambda: state()[0] == "Succeeded", "the revision succeeded")
