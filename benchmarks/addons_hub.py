"""Add-on canary gate on a hub of 1,000 managed clusters: what one admission decision costs once the canary succeeded.

Usage: python benchmarks/addons_hub.py [--clusters 1000] [--seconds 1.0] [--cel-engine cel-python|cel-expr]

Offline, through the policy engine as the webhook calls it (``PolicyEngine.validate``), with the bundled policies
and settings (canary placement ``default/canary-placement``, soak 1h) over an in-memory store holding what a hub
holds for one add-on: a ManagedCluster's ManagedClusterAddOn and ManifestWork per cluster, the canary placement's
PlacementDecision (one cluster) and the fleet placement's (the others, 100 decisions per PlacementDecision as
upstream's placement controller splits them, in 3 decision groups), the AddOnTemplates v1 and v2 and the
ClusterManagementAddOn. The canary completed v2 at ``SUCCESS``; the gate opens by itself when the soak ends, so
the time from the canary's success to every cluster's gate opening is the soak plus the cost of the decisions
that let the rest through, which this measures:

* the fleet placement's move to v2 (ClusterManagementAddOn UPDATE), during the soak (held) and after it
  (admitted): one decision opens the gate for every cluster the placement selects;
* a cluster's own ``spec.configs`` moved to v2 (ManagedClusterAddOn UPDATE) after the soak, and that decision
  for every non-canary cluster in a row (a hub whose clusters each name their configs).
"""

from __future__ import annotations

import argparse
import datetime
import functools
import os
import statistics
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from webhook.objects import InMemoryObjectStore
from webhook.policy.admitting.engine import PolicyEngine
from webhook.policy.loading.loader import load_policy_set
from webhook.settings import CEL_ENGINES

ROOT = Path(__file__).resolve().parent.parent
ADDON, GROUP = "hello", "addon.open-cluster-management.io"
SUCCESS = datetime.datetime(2026, 6, 10, 12, tzinfo=datetime.UTC)
STAMP = SUCCESS.strftime("%Y-%m-%dT%H:%M:%SZ")
PER_DECISION = 100  # decisions per PlacementDecision, as upstream's placement controller splits them


def template(version: str) -> dict[str, Any]:
    return {"apiVersion": f"{GROUP}/v1alpha1", "kind": "AddOnTemplate", "metadata": {"name": f"{ADDON}-{version}"},
            "spec": {"addonName": ADDON, "agentSpec": {"workload": {"manifests": []}}}}  # fmt: skip


def ref(version: str) -> dict[str, str]:
    return {"group": GROUP, "resource": "addontemplates", "name": f"{ADDON}-{version}"}


def mca(cluster: str, version: str, configs: list[dict[str, str]] | None = None) -> dict[str, Any]:
    name = f"{ADDON}-{version}"
    applied = {"name": name, "specHash": version}
    reference = {"group": GROUP, "resource": "addontemplates", "name": name, "desiredConfig": applied,
                 "lastAppliedConfig": applied}  # fmt: skip
    completed = {"type": "Progressing", "status": "False", "reason": "Completed",
                 "message": "completed with no errors.", "lastTransitionTime": STAMP}  # fmt: skip
    return {
        "apiVersion": f"{GROUP}/v1alpha1",
        "kind": "ManagedClusterAddOn",
        "metadata": {"name": ADDON, "namespace": cluster},
        "spec": {
            "installNamespace": "open-cluster-management-agent-addon",
            **({"configs": configs} if configs else {}),
        },
        "status": {"configReferences": [reference], "conditions": [completed]},
    }


def work(cluster: str) -> dict[str, Any]:
    conditions = [
        {"type": kind, "status": "True", "reason": "Done", "message": "done", "observedGeneration": 2,
         "lastTransitionTime": STAMP} for kind in ("Applied", "Available")
    ]  # fmt: skip
    return {"apiVersion": "work.open-cluster-management.io/v1", "kind": "ManifestWork",
            "metadata": {"name": f"addon-{ADDON}-deploy-0", "namespace": cluster, "generation": 2,
                         "labels": {"open-cluster-management.io/addon-name": ADDON}},
            "status": {"conditions": conditions}}  # fmt: skip


def decisions(placement: str, clusters: list[str], groups: int) -> list[dict[str, Any]]:
    per_group = -(-len(clusters) // groups)
    found: list[dict[str, Any]] = []
    for group in range(groups):
        members = clusters[group * per_group : (group + 1) * per_group]
        for chunk in range(0, len(members), PER_DECISION):
            labels = {"cluster.open-cluster-management.io/placement": placement,
                      "cluster.open-cluster-management.io/decision-group-index": str(group),
                      "cluster.open-cluster-management.io/decision-group-name": f"group-{group}"}  # fmt: skip
            chosen = [{"clusterName": name, "reason": ""} for name in members[chunk : chunk + PER_DECISION]]
            metadata = {"name": f"{placement}-decision-{len(found) + 1}", "namespace": "default", "labels": labels}
            found.append({"apiVersion": "cluster.open-cluster-management.io/v1beta1", "kind": "PlacementDecision",
                          "metadata": metadata, "status": {"decisions": chosen}})  # fmt: skip
    return found


def cma(fleet: str) -> dict[str, Any]:
    placements = [
        {"namespace": "default", "name": "fleet", "configs": [ref(fleet)],
         "rolloutStrategy": {"type": "ProgressivePerGroup", "progressivePerGroup": {"progressDeadline": "2h"}}},
        {"namespace": "default", "name": "canary-placement", "configs": [ref("v2")],
         "rolloutStrategy": {"type": "All", "all": {"progressDeadline": "30m"}}},
    ]  # fmt: skip
    return {"apiVersion": f"{GROUP}/v1alpha1", "kind": "ClusterManagementAddOn", "metadata": {"name": ADDON},
            "spec": {"supportedConfigs": [{"group": GROUP, "resource": "addontemplates"}],
                     "installStrategy": {"type": "Placements", "placements": placements}}}  # fmt: skip


def request(obj: Mapping[str, Any], old: Mapping[str, Any], resource: str) -> dict[str, Any]:
    gvk = {"group": GROUP, "version": "v1alpha1", "kind": obj["kind"]}
    gvr = {"group": GROUP, "version": "v1alpha1", "resource": resource}
    found: dict[str, Any] = {"uid": "705ab4f5-6393-11e8-b7cc-42010a800002", "kind": gvk, "resource": gvr,
                             "requestKind": gvk, "requestResource": gvr, "name": obj["metadata"]["name"],
                             "operation": "UPDATE", "userInfo": {"username": "alice", "groups": ["platform-admins"]},
                             "object": obj, "oldObject": old, "dryRun": False}  # fmt: skip
    if obj["metadata"].get("namespace"):
        found["namespace"] = obj["metadata"]["namespace"]
    return found


def timed(run: Callable[[], object], seconds: float) -> tuple[float, object]:
    """The median time of one call in ms over ``seconds`` (at least 3 calls), and the last result."""
    times: list[float] = []
    result, start = run(), time.perf_counter()
    while time.perf_counter() - start < seconds or len(times) < 3:
        began = time.perf_counter()
        result = run()
        times.append(time.perf_counter() - began)
    return statistics.median(times) * 1e3, result


def measure(engine_name: str, clusters: int, seconds: float) -> list[tuple[str, bool, float, str]]:
    """(scenario, allowed, ms per decision, the message or a total) for the policies compiled for ``engine_name``."""
    policies = load_policy_set([ROOT / "policies"], engine=engine_name)
    names = [f"cluster-{index:04d}" for index in range(clusters)]
    canary, fleet = names[0], names[1:]
    store = InMemoryObjectStore([
        *policies.params, template("v1"), template("v2"), cma("v1"),
        *decisions("canary-placement", [canary], 1), *decisions("fleet", fleet, 3),
        mca(canary, "v2"), *(mca(name, "v1") for name in fleet), *(work(name) for name in names),
    ])  # fmt: skip
    engine = PolicyEngine(policies, store)
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": fleet[0]}}
    placement = request(cma("v2"), cma("v1"), "clustermanagementaddons")
    rows = []
    for label, now in (("held in the soak", SUCCESS + datetime.timedelta(minutes=30)),
                       ("after the soak", SUCCESS + datetime.timedelta(hours=1))):  # fmt: skip
        took, decision = timed(functools.partial(engine.validate, placement, None, now=now, from_json=True), seconds)
        allowed = bool(getattr(decision, "allowed", False))
        rows.append((f"fleet placement -> v2, {label}", allowed, took, str(getattr(decision, "message", "") or "")))
    after = SUCCESS + datetime.timedelta(hours=1)
    one = request(mca(fleet[0], "v1", [ref("v2")]), mca(fleet[0], "v1"), "managedclusteraddons")
    took, decision = timed(functools.partial(engine.validate, one, namespace, now=after, from_json=True), seconds)
    rows.append(("one cluster's spec.configs -> v2", bool(getattr(decision, "allowed", False)), took, ""))
    began = time.perf_counter()
    opened = 0
    for name in fleet:
        each = request(mca(name, "v1", [ref("v2")]), mca(name, "v1"), "managedclusteraddons")
        home = {**namespace, "metadata": {"name": name}}
        opened += bool(getattr(engine.validate(each, home, now=after, from_json=True), "allowed", False))
    total = time.perf_counter() - began
    rows.append((f"every cluster's spec.configs -> v2 ({opened}/{len(fleet)} admitted)", opened == len(fleet),
                 total / len(fleet) * 1e3, f"{total:.2f} s in all"))  # fmt: skip
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clusters", type=int, default=1000, help="managed clusters, the canary included")
    parser.add_argument("--seconds", type=float, default=1.0, help="time per measurement")
    parser.add_argument("--cel-engine", choices=CEL_ENGINES, help="measure one backend only (default: both)")
    args = parser.parse_args()
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    for engine in [args.cel_engine] if args.cel_engine else list(CEL_ENGINES):
        print(f"{engine}, {args.clusters} managed clusters")
        print(f"{'decision':58} {'allowed':>7} {'ms':>9}  note")
        for name, allowed, took, note in measure(engine, args.clusters, args.seconds):
            print(f"{name:58} {allowed!s:>7} {took:9.2f}  {note.rpartition(': ')[2][:110]}")


if __name__ == "__main__":
    main()
