"""The upgrade gate against a real kube-apiserver: operator-controller's upgrade writes are held until approved.

The chart's CRD and webhook configurations are installed into the API server (rendered by Helm, pointed at a
local ``upgrade-gate serve --cluster on`` over TLS), with upstream OLM v1's CRDs for ClusterExtension and
ClusterObjectSet. Nothing runs operator-controller here: the tests write its status and create its release
index Secrets and ClusterObjectSets exactly as it does at an install and an upgrade, under its own identity.
"""

from __future__ import annotations

import base64
import datetime

import yaml
from kubernetes import client

from tests.apiserver import wait_for
from tests.integration.olm import (
    APPROVER,
    BOXCUTTER_GATE,
    HELM_GATE,
    OLM_NAMESPACE,
    POLICY,
    admitted,
    approve,
    as_operator_controller,
    create,
    denied,
    extension,
    index_secret,
    object_set,
    propose,
)

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


# --- the settings ConfigMap in the cluster is the authority ----------------------------------------------------------


def test_the_settings_configmap_in_the_cluster_wins_over_the_one_beside_the_policies(cluster, webhook):
    """The bindings' paramRef names upgrade-gate-system/upgrade-gate-settings: a ConfigMap there decides (as it
    would for the API server's own admission), the file beside the policies only while the cluster has none."""
    operator_controller = as_operator_controller(cluster)
    core = client.CoreV1Api(cluster.client())
    extension(cluster.client(), "nginx", "1.0.0")
    propose(cluster, "nginx", "1.1.0")
    approve(cluster, "nginx-1.1.0")
    upgrade = index_secret("nginx", 2, "1.1.0", "pending-upgrade")
    settings = yaml.safe_load((webhook.policies / "settings.yaml").read_text())
    now = datetime.datetime.now(datetime.UTC)
    hour = datetime.timedelta(hours=1)
    window = f"{now - hour:%Y-%m-%dT%H:%M:%SZ}/{now + hour:%Y-%m-%dT%H:%M:%SZ}"
    settings["data"]["freezeWindows"] = window
    core.create_namespaced_config_map("upgrade-gate-system", settings)
    try:
        held = POLICY + f"upgrade of nginx from 1.0.0 to 1.1.0 is approved but held by the freeze window {window}"
        wait_for(lambda: create(operator_controller, upgrade, dry_run=True) is not None, "the cluster's settings")
        denied(operator_controller, upgrade, HELM_GATE, held)
    finally:
        core.delete_namespaced_config_map("upgrade-gate-settings", "upgrade-gate-system")
    wait_for(lambda: create(operator_controller, upgrade, dry_run=True) is None, "the file's settings again")
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
