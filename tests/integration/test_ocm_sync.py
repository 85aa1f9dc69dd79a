"""The sync loop reads a real hub: the upstream OCM CRDs in a real kube-apiserver, read through the cluster adapter
(``installed: cluster``), and proposes an add-on's AddOnTemplate bump, the canary placement first, then the rest
once the canary cluster has applied it and stayed healthy for the soak.

The hub: Placement ``sync-hub/canary`` deciding ``sync-canary``, Placement ``sync-hub/fleet`` deciding three clusters
in two decision groups (PlacementDecisions labelled as upstream's placement controller writes them). No OCM
controller runs: status is written through the status subresource as the addon manager and the work agent would
(see test_ocm_hub). Writes go through the gate's webhook, as an approver.
"""

from __future__ import annotations

import datetime
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import pytest
from kubernetes import client
from kubernetes.dynamic.exceptions import DynamicApiError

from tests.apiserver import ROOT, ApiServer, wait_for
from tests.integration.conftest import Webhook
from tests.integration.olm import APPROVER, APPROVER_GROUP
from tests.sync.conftest import World, gitops_world, govern_addons
from webhook.io.kube.cluster import Cluster
from webhook.plan.requests import DEFAULT_APPLIER as ARGOCD

CRDS = ROOT / "tests" / "data" / "ocm" / "crds"
HUB, CANARY, FLEET = "sync-hub", "sync-canary", ["sync-c1", "sync-c2", "sync-c3"]
ADDON = "hellosync"
GROUP = "addon.open-cluster-management.io"
CMA_FILE = "clusters/hub/addons/hellosync.yaml"
BRANCH = "upgrade-gate/addon/hellosync"


def _ref(version: str) -> dict[str, str]:
    return {"group": GROUP, "resource": "addontemplates", "name": f"{ADDON}-{version}"}


def _cma(canary: str) -> dict[str, Any]:
    placements = [
        {"namespace": HUB, "name": "fleet", "configs": [_ref("v1")],
         "rolloutStrategy": {"type": "ProgressivePerGroup", "progressivePerGroup": {"maxFailures": 0}}},
        {"namespace": HUB, "name": "canary", "configs": [_ref(canary)]},
    ]  # fmt: skip
    return {
        "apiVersion": f"{GROUP}/v1alpha1",
        "kind": "ClusterManagementAddOn",
        "metadata": {"name": ADDON},
        "spec": {
            "supportedConfigs": [{"group": GROUP, "resource": "addontemplates"}],
            "installStrategy": {"type": "Placements", "placements": placements},
        },
    }


@pytest.fixture(scope="module")
def served(cluster: ApiServer) -> ApiServer:
    """The CRDs, namespaces, placements with their decisions, the templates v1 and v2: what the gate's webhook, started
    after them, reads."""
    cluster.install_crds(sorted(CRDS.glob("*.yaml")))
    placement = {"apiVersion": "cluster.open-cluster-management.io/v1beta1", "kind": "Placement"}
    decision = {"apiVersion": "cluster.open-cluster-management.io/v1beta1", "kind": "PlacementDecision"}
    templates = [
        {"apiVersion": f"{GROUP}/v1alpha1", "kind": "AddOnTemplate", "metadata": {"name": f"{ADDON}-{version}"},
         "spec": {"addonName": ADDON, "agentSpec": {"workload": {"manifests": []}}}}
        for version in ("v1", "v2")
    ]  # fmt: skip
    decisions = {("canary", 0): [CANARY], ("fleet", 0): FLEET[:1], ("fleet", 1): FLEET[1:]}
    cluster.apply(
        [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}} for name in [HUB, CANARY, *FLEET]]
        + [{**placement, "metadata": {"name": name, "namespace": HUB}, "spec": {}} for name in ("canary", "fleet")]
        + [{**decision, "metadata": {"name": f"{name}-decision-{index}", "namespace": HUB, "labels": {
            "cluster.open-cluster-management.io/placement": name,
            "cluster.open-cluster-management.io/decision-group-index": str(index)}}}
           for name, index in decisions]
        + templates
    )  # fmt: skip
    api = client.CustomObjectsApi(cluster.client())
    for (name, index), clusters in decisions.items():
        body = {"status": {"decisions": [{"clusterName": c, "reason": ""} for c in clusters]}}
        api.patch_namespaced_custom_object_status(
            "cluster.open-cluster-management.io", "v1beta1", HUB, "placementdecisions", f"{name}-decision-{index}", body
        )
    return cluster


@pytest.fixture(scope="module")
def hub(served: ApiServer, webhook: Webhook) -> ApiServer:
    """The ClusterManagementAddOn (every placement on v1) and the canary's ManagedClusterAddOn, completed on v1,
    written through the gate."""
    cluster = served
    mca = {"apiVersion": f"{GROUP}/v1alpha1", "kind": "ManagedClusterAddOn",
           "metadata": {"name": ADDON, "namespace": CANARY}, "spec": {"installNamespace": "default"}}  # fmt: skip
    # admitted once the gate's cache has seen the templates
    wait_for(lambda: _created(cluster, _cma("v1")), f"the creation of ClusterManagementAddOn {ADDON}")
    cluster.apply([mca])
    _applied(cluster, "v1", datetime.datetime(2026, 2, 1, tzinfo=datetime.UTC))
    return cluster


def _created(server: ApiServer, body: dict[str, Any]) -> bool:
    try:
        server.apply([body])
    except DynamicApiError as error:
        if error.status != 422:
            raise
        return False
    return True


def _applied(server: ApiServer, version: str, since: datetime.datetime) -> None:
    """The canary's add-on has applied the template ``version`` since ``since`` (the addon manager's status)."""
    stamp = since.strftime("%Y-%m-%dT%H:%M:%SZ")
    reference = {**_ref(version), "desiredConfig": {"name": f"{ADDON}-{version}"},
                 "lastAppliedConfig": {"name": f"{ADDON}-{version}"}}  # fmt: skip
    condition = {"type": "Progressing", "status": "False", "reason": "Completed", "message": "completed",
                 "lastTransitionTime": stamp}  # fmt: skip
    body = {"status": {"configReferences": [reference], "conditions": [condition]}}
    client.CustomObjectsApi(server.client()).patch_namespaced_custom_object_status(
        GROUP, "v1alpha1", CANARY, "managedclusteraddons", ADDON, body
    )


@pytest.fixture
def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, hub: ApiServer) -> Iterator[World]:
    """The repository: the ClusterManagementAddOn as on the hub, the gate's settings trusting Argo CD."""
    with gitops_world(tmp_path, monkeypatch) as built:
        built.write(CMA_FILE, json.dumps(_cma("v1"), indent=2) + "\n")
        addons = (
            "addons:\n  manifests: clusters/hub/addons\n  installed: cluster\n  canaryPlacements: [sync-hub/canary]\n"
        )
        govern_addons(built, addons, applier=ARGOCD)
        built.push("govern the hellosync add-on")
        yield built


def _proposal(world: World) -> tuple[str, str]:
    [pull] = [p for p in world.github.open_pulls() if p["head"]["ref"] == BRANCH]
    return pull["title"], pull["body"]


def test_the_sync_loop_proposes_the_canary_first_then_the_fleet_from_a_real_hub(hub: ApiServer, world: World) -> None:
    cluster = Cluster.from_kubeconfig(Path(hub.kubeconfig))
    report = world.sync(cluster=cluster)
    [entry] = [e for e in report.entries if e.subject == f"addon/{ADDON}"]
    assert entry.action == "proposed", entry.reason
    title, body = _proposal(world)
    assert title == f"Upgrade add-on {ADDON} to {ADDON}-v2 (v2) on its canaries"
    assert "| 1 | placement sync-hub/canary (canary) | 1 | All: every cluster at once | moves to hellosync-v2" in body
    assert "| 2 | placement sync-hub/fleet | 3: group 0 (1 cluster), group 1 (2 clusters) | ProgressivePerGroup" in body

    # merged, applied by Argo CD (an approver writes it here), and the canary applies it: held for the soak
    world.merge(BRANCH)
    approver = client.CustomObjectsApi(hub.client(APPROVER, APPROVER_GROUP))
    current = cast(
        dict[str, Any], approver.get_cluster_custom_object(GROUP, "v1alpha1", "clustermanagementaddons", ADDON)
    )
    approver.replace_cluster_custom_object(
        GROUP, "v1alpha1", "clustermanagementaddons", ADDON, {**_cma("v2"), "metadata": current["metadata"]}
    )
    _applied(hub, "v2", world.now - datetime.timedelta(minutes=20))
    report = world.sync(cluster=cluster)
    [entry] = [e for e in report.entries if e.subject == f"addon/{ADDON}"]
    assert (entry.action, entry.ready_at) == ("held", "2026-03-01T12:40:00Z"), entry.reason

    # after the soak the fleet's reference moves, and the bundled policies would admit it
    world.now += datetime.timedelta(hours=1)
    report = world.sync(cluster=cluster)
    [entry] = [e for e in report.entries if e.subject == f"addon/{ADDON}"]
    assert entry.action == "proposed", entry.reason
    title, body = _proposal(world)
    assert title == f"Upgrade add-on {ADDON} to {ADDON}-v2 (v2)"
    assert f"| Policies | would admit applying it today when applied by {ARGOCD} |" in body
    assert json.loads(world.show(BRANCH, CMA_FILE) or "")["spec"]["installStrategy"]["placements"][0]["configs"] == [
        _ref("v2")
    ]
