"""AddOnTemplate proposals through ``run_cycle``: real git remotes, the fake GitHub, a fake hub cluster.

On an upstream Open Cluster Management hub an add-on's version is the AddOnTemplate its ClusterManagementAddOn
references; the sync loop proposes the reference bump, the canary placement first (its clusters apply it and stay
healthy for the soak), then the others, and its pull request shows the rollout plan. The hub holds objects shaped
as OCM serves them: canary-placement decides cluster1; global-placement decides cluster1..3 in two decision groups.
"""

from __future__ import annotations

import datetime
from typing import Any

import pytest
import yaml

from tests.sync.conftest import World, govern_addons
from tests.sync.test_addons import FakeHub
from webhook.plan.requests import DEFAULT_APPLIER as ARGOCD

CMA = "clusters/hub/addons/helloworld.yaml"
BRANCH = "upgrade-gate/addon/helloworld"
TEMPLATES = "addon.open-cluster-management.io"
REF = "{group: addon.open-cluster-management.io, resource: addontemplates, name: %s}"
MANIFEST = f"""\
# The helloworld add-on: its version is the AddOnTemplate each placement names.
apiVersion: addon.open-cluster-management.io/v1alpha1
kind: ClusterManagementAddOn
metadata:
  name: helloworld
spec:
  installStrategy:
    type: Placements
    placements:
    - name: global-placement
      namespace: default
      configs: [{REF % "hello-v1"}]
      rolloutStrategy:
        type: ProgressivePerGroup
        progressivePerGroup: {{maxFailures: 0, progressDeadline: 2h}}
    - name: canary-placement
      namespace: default
      configs: [{REF % "hello-v1"}]   # the canary
"""


def template(name: str) -> dict[str, Any]:
    return {
        "apiVersion": f"{TEMPLATES}/v1alpha1",
        "kind": "AddOnTemplate",
        "metadata": {"name": name},
        "spec": {"addonName": "helloworld"},
    }


def decision(placement: str, index: int, clusters: list[str]) -> dict[str, Any]:
    labels = {
        "cluster.open-cluster-management.io/placement": placement,
        "cluster.open-cluster-management.io/decision-group-index": str(index),
    }
    return {
        "apiVersion": "cluster.open-cluster-management.io/v1beta1",
        "kind": "PlacementDecision",
        "metadata": {"name": f"{placement}-decision-{index}", "namespace": "default", "labels": labels},
        "status": {"decisions": [{"clusterName": c} for c in clusters]},
    }


def hub_objects(canary: str, applied: str, since: str) -> list[dict[str, Any]]:
    """The hub: its ClusterManagementAddOn with the canary placement naming ``canary``; cluster1's add-on has
    applied ``applied`` (Progressing Completed since ``since``) with a healthy ManifestWork."""
    ref = {"group": TEMPLATES, "resource": "addontemplates"}
    placements = [
        {"name": "global-placement", "namespace": "default", "configs": [{**ref, "name": "hello-v1"}]},
        {"name": "canary-placement", "namespace": "default", "configs": [{**ref, "name": canary}]},
    ]
    completed = {"type": "Progressing", "status": "False", "reason": "Completed", "lastTransitionTime": since}
    ready = [
        {"type": t, "status": "True", "observedGeneration": 1, "lastTransitionTime": since}
        for t in ("Applied", "Available")
    ]
    return [
        {
            "apiVersion": f"{TEMPLATES}/v1alpha1",
            "kind": "ClusterManagementAddOn",
            "metadata": {"name": "helloworld"},
            "spec": {"installStrategy": {"type": "Placements", "placements": placements}},
        },
        template("hello-v1"),
        template("hello-v2"),
        decision("canary-placement", 0, ["cluster1"]),
        decision("global-placement", 0, ["cluster1"]),
        decision("global-placement", 1, ["cluster2", "cluster3"]),
        {
            "apiVersion": f"{TEMPLATES}/v1alpha1",
            "kind": "ManagedClusterAddOn",
            "metadata": {"name": "helloworld", "namespace": "cluster1"},
            "status": {
                "configReferences": [
                    {**ref, "desiredConfig": {"name": applied}, "lastAppliedConfig": {"name": applied}}
                ],
                "conditions": [completed],
            },
        },
        {
            "apiVersion": "work.open-cluster-management.io/v1",
            "kind": "ManifestWork",
            "metadata": {
                "name": "addon-helloworld-deploy-0",
                "namespace": "cluster1",
                "generation": 1,
                "labels": {"open-cluster-management.io/addon-name": "helloworld"},
            },
            "status": {"conditions": ready},
        },
    ]


@pytest.fixture
def hub(world: World) -> World:
    world.write(CMA, MANIFEST)
    govern_addons(
        world, "addons:\n  manifests: clusters/hub/addons\n  installed: cluster\n  canarySoak: 1h\n", applier=ARGOCD
    )
    world.push("govern the helloworld add-on by its AddOnTemplate")
    return world


def pull_body(world: World) -> tuple[str, str]:
    [pull] = [p for p in world.github.open_pulls() if p["head"]["ref"] == BRANCH]
    return pull["title"], pull["body"]


def test_the_canary_placement_moves_first_and_the_pull_request_shows_the_rollout_plan(hub: World) -> None:
    report = hub.sync(cluster=FakeHub(hub_objects("hello-v1", "hello-v1", "2026-02-01T00:00:00Z")))
    [entry] = [e for e in report.entries if e.subject == "addon/helloworld"]
    assert entry.action == "proposed"
    # only the canary's reference changes; the comment stays
    assert hub.show(BRANCH, CMA) == MANIFEST.replace(
        f"[{REF % 'hello-v1'}]   # the canary", f"[{REF % 'hello-v2'}]   # the canary"
    )
    title, body = pull_body(hub)
    assert title == "Upgrade add-on helloworld to hello-v2 (v2) on its canaries"
    for row in (
        "| AddOnTemplates | hello-v1 (v1), hello-v2 (v2), from the cluster |",
        "| placement default/canary-placement (canary) | from hello-v1 (v1) to hello-v2 (v2) |",
        "| placement default/global-placement (held) | stays at hello-v1 (v1) until the canaries have run hello-v2 "
        "(v2) |",
        "### Rollout plan",
        "| 1 | placement default/canary-placement (canary) | 1 | All: every cluster at once | moves to hello-v2 in "
        "this pull request |",
        "| 2 | placement default/global-placement | 3: group 0 (1 cluster), group 1 (2 clusters) | "
        "ProgressivePerGroup: group by group; progressDeadline 2h, maxFailures 0 | held by the canary gate: the "
        "canary placement default/canary-placement names addon.open-cluster-management.io/addontemplates//hello-v1, "
        "not addon.open-cluster-management.io/addontemplates//hello-v2: move it first |",
    ):
        assert row in body
    # the bundled policies admit the canary's bump when the GitOps applier is an approver
    assert f"| Policies | would admit applying it today when applied by {ARGOCD} |" in body


def test_after_the_canary_soaked_the_others_are_proposed_and_the_policies_agree(hub: World) -> None:
    hub.sync(cluster=FakeHub(hub_objects("hello-v1", "hello-v1", "2026-02-01T00:00:00Z")))
    hub.merge(BRANCH)
    # the canary applied hello-v2 30 minutes ago: held, until the soak ends
    soaking = FakeHub(hub_objects("hello-v2", "hello-v2", "2026-03-01T11:30:00Z"))
    report = hub.sync(cluster=soaking)
    [entry] = [e for e in report.entries if e.subject == "addon/helloworld"]
    assert (entry.action, entry.ready_at) == ("held", "2026-03-01T12:30:00Z")
    hub.now += datetime.timedelta(hours=1)
    report = hub.sync(cluster=soaking)
    [entry] = [e for e in report.entries if e.subject == "addon/helloworld"]
    assert entry.action == "proposed"
    title, body = pull_body(hub)
    assert title == "Upgrade add-on helloworld to hello-v2 (v2)"
    assert "| 1 | placement default/canary-placement (canary) | 1 | All: every cluster at once | at hello-v2 |" in body
    assert f"| Policies | would admit applying it today when applied by {ARGOCD} |" in body
    assert hub.show(BRANCH, CMA) == MANIFEST.replace(REF % "hello-v1", REF % "hello-v2")


def test_offline_the_repository_templates_and_status_decide(world: World) -> None:
    """An add-on-only repository read offline: the templates, decisions and the canary's status are in Git."""
    canary_done = MANIFEST.replace(f"[{REF % 'hello-v1'}]   # the canary", f"[{REF % 'hello-v2'}]   # the canary")
    world.write(CMA, canary_done)
    observed = [
        o for o in hub_objects("hello-v2", "hello-v2", "2026-02-28T00:00:00Z") if o["kind"] != "ClusterManagementAddOn"
    ]
    world.write("clusters/hub/addons/observed.yaml", yaml.safe_dump_all(observed))
    forge = (world.human / "upgrade-gate.yaml").read_text().split("forge:", 1)[1]
    world.write("upgrade-gate.yaml", "addons:\n  manifests: [clusters/hub/addons]\n  canarySoak: 24h\nforge:" + forge)
    world.push("an add-on-only repository with its templates")
    report = world.sync()
    [entry] = report.entries
    assert (entry.subject, entry.action) == ("addon/helloworld", "proposed")
    assert entry.reason == (
        "hello-v2 (v2) is the add-on's newest AddOnTemplate in the manifests' status; moves placement "
        "default/global-placement from hello-v1 (v1)."
    )
    assert world.show(BRANCH, CMA) == canary_done.replace(REF % "hello-v1", REF % "hello-v2")
