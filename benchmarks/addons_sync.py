"""The sync loop's add-on proposal on a hub of 1,000 managed clusters: what reading the hub and planning cost.

Usage: python benchmarks/addons_sync.py [--clusters 1000] [--seconds 1.0]

The hub of ``benchmarks/addons_hub.py`` (the canary applied hello-v2 and soaked; the fleet placement, 3 decision
groups, still names hello-v1), read through ``webhook.sync.views.observe`` (counting its lookups: the API requests a
cluster adapter sends, two per canary cluster and none per other cluster) and planned by ``plan_addon``, on two
repositories:

* ``placements``: the ClusterManagementAddOn alone in Git (the fleet placement's reference moves);
* ``clusters' own configs``: also every cluster's ManagedClusterAddOn in Git with its own ``spec.configs`` (1,000
  references edited in one file).

Each is compared with the same hub carrying the version as ``installVersion`` pins, the add-on installVersion
lifecycle's shape, in the same run (the ratio column), since the machine is shared.
"""

from __future__ import annotations

import argparse
import datetime
import os
import statistics
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml
from addons_hub import ADDON, SUCCESS, cma, decisions, mca, template, work

from webhook.plan import AddOnContext, plan_addon, read_addons
from webhook.sync.views import ObjectsView, observe

CANARY = ("default/canary-placement",)


class CountingView(ObjectsView):
    """An ``ObjectsView`` that counts its lookups: the API requests a cluster adapter sends for them."""

    calls = 0

    def __getattribute__(self, name: str) -> Any:
        found = super().__getattribute__(name)
        if name in ("cluster_management_addon", "placement_decisions", "managed_cluster_addon", "manifest_works",
                    "addon_templates"):  # fmt: skip
            type(self).calls += 1
        return found


def pinned(objects: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The same hub as the installVersion lifecycle carries it: versions pinned, status.supportedVersions."""
    found = []
    for original in objects:
        item = dict(original)
        if item["kind"] == "ClusterManagementAddOn":
            placements = [
                {**{k: v for k, v in p.items() if k != "configs"}, "addonTemplate": {"installVersion": version}}
                for p, version in zip(item["spec"]["installStrategy"]["placements"], ("v1", "v2"), strict=True)
            ]
            item["spec"] = {"installStrategy": {"type": "Placements", "placements": placements}}
            item["status"] = {"supportedVersions": ["v1", "v2"], "defaultVersion": "v2"}
        if item["kind"] == "ManagedClusterAddOn":
            version = "v2" if item["metadata"]["namespace"].endswith("0000") else "v1"
            condition = {"type": "Progressing", "status": "False", "reason": "Succeed", "message": "done",
                         "lastTransitionTime": "2026-06-10T10:00:00Z"}  # fmt: skip
            item["spec"] = {"installVersion": version}
            item["status"] = {"currentVersion": version, "lastVersion": version, "conditions": [condition]}
        found.append(item)
    return found


def timed(run: Callable[[], object], seconds: float) -> float:
    """The median time of one call in ms over ``seconds`` (at least 3 calls)."""
    times: list[float] = []
    run()
    start = time.perf_counter()
    while time.perf_counter() - start < seconds or len(times) < 3:
        began = time.perf_counter()
        run()
        times.append(time.perf_counter() - began)
    return statistics.median(times) * 1e3


def case(root: Path, hub: list[dict[str, Any]], git: list[dict[str, Any]], seconds: float) -> tuple[float, int, str]:
    """(ms to plan, lookups, the plan's title or outcome) for ``git`` in a repository at ``root``."""
    root.mkdir(parents=True)
    (root / "addons.yaml").write_text(yaml.safe_dump_all(git, sort_keys=False))
    [addon] = read_addons(root, ["."]).addons
    texts = {file: (root / file).read_text() for file in addon.files}
    context = AddOnContext(CANARY, datetime.timedelta(hours=1), "upgrade-gate/", SUCCESS + datetime.timedelta(hours=2))
    view = CountingView(hub)
    CountingView.calls = 0
    state = observe(view, addon, CANARY, "cluster")
    lookups = CountingView.calls
    plan = plan_addon(addon, texts, state, context)
    planning = timed(lambda: plan_addon(addon, texts, state, context), seconds)
    said = plan.change.title if plan.change is not None else f"{plan.outcome.action}: {plan.outcome.reason}"
    return planning, lookups, said


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clusters", type=int, default=1000, help="managed clusters, the canary included")
    parser.add_argument("--seconds", type=float, default=1.0, help="time per measurement")
    args = parser.parse_args()
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    names = [f"cluster-{index:04d}" for index in range(args.clusters)]
    canary, fleet = names[0], names[1:]
    hub = [
        template("v1"), template("v2"), cma("v1"), *decisions("canary-placement", [canary], 1),
        *decisions("fleet", fleet, 3), mca(canary, "v2"), *(mca(name, "v1") for name in fleet),
        *(work(name) for name in names),
    ]  # fmt: skip
    own = [{**mca(name, "v1"), "status": {}} for name in fleet]
    for item in own:
        item["spec"] = {**item["spec"], "configs": [{"group": "addon.open-cluster-management.io",
                                                     "resource": "addontemplates", "name": f"{ADDON}-v1"}]}  # fmt: skip
    print(f"{args.clusters} managed clusters; the canary soaked, the fleet placement proposed")
    print(f"{'repository':24} {'shape':15} {'lookups':>7} {'plan ms':>9} {'ratio':>6}  proposal")
    with tempfile.TemporaryDirectory() as tmp:
        for label, git in (("placements", [cma("v1")]), ("clusters' own configs", [cma("v1"), *own])):
            templates = case(Path(tmp) / label / "templates", hub, git, args.seconds)
            versions = case(Path(tmp) / label / "versions", pinned(hub), pinned(git), args.seconds)
            shapes = (("AddOnTemplate", templates), ("installVersion", versions))
            for shape, (planning, lookups, said) in shapes:
                ratio = planning / versions[0]
                print(f"{label:24} {shape:15} {lookups:7d} {planning:9.2f} {ratio:6.2f}  {said[:70]}")


if __name__ == "__main__":
    main()
