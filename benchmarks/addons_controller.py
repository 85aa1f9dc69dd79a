"""Add-on lifecycle benchmark: the controller writing the installVersion lifecycle's status of N ManagedClusterAddOns.

Usage: python benchmarks/addons_controller.py [--addons 1000] [--resync 30] [--json]

Needs the kube-apiserver harness and binaries of the integration tests (``tests/apiserver.py``). Installs the
lifecycle's CRD variant (``tests/data/ocm/lifecycle``), upstream's ManifestWork CRD and, as on a hub that also runs
OLM v1, upstream's ClusterExtension and ClusterCatalog CRDs and the chart's ClusterExtensionRevision CRD (empty);
creates one add-on (its ClusterManagementAddOn, supportedVersions v1 and v2) installed at v1 on N managed clusters
(a namespace each, holding its ManagedClusterAddOn and a ManifestWork applied and available at v1, as the work agent
reports it), then runs ``upgrade-gate controller`` as its own process (``--resync`` seconds) and reads its
``/metrics``:

1. **first pass**: from the controller's start, every add-on gets its status (``Succeed``, currentVersion v1) from
   its work;
2. **upgrade**: installVersion v2 on every add-on (N merge patches by this script), then each work moved to v2 and
   reported available at its new generation (2N more): time until every add-on says ``Succeed`` at v2, lastVersion
   v1 (the controller's writes: ``Upgrading``, then ``Succeed``);
3. **one resync**: a window of ``--resync`` seconds with nothing changing, in which every cache relists once and
   every add-on is reconciled again: the API requests that costs (a LIST per kind, a GET of the CRD, no writes).

Reported per phase: seconds, reconciles, API requests (by verb), writes per reconcile and the controller's CPU
time; its resident memory at the end and its peak (``VmHWM``). Goals: one status write per add-on per change,
no request per add-on on a resync, under 200 MB for 1,000 add-ons.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from controller import free_port, metrics, phase, reconciles, wait  # noqa: E402 - benchmarks/controller.py
from kubernetes import client  # noqa: E402 - after the repository root is importable

from tests.apiserver import ApiServer, start, stop, unavailable, upstream_crds  # noqa: E402
from tests.integration.conftest import install_gate  # noqa: E402

OCM = ROOT / "tests" / "data" / "ocm"
GROUP, ADDON = "addon.open-cluster-management.io", "hello"
MCAS = (GROUP, "v1alpha1", "managedclusteraddons")
WORKS = ("work.open-cluster-management.io", "v1", "manifestworks")
WORK = f"addon-{ADDON}-deploy-0"


def cluster_name(index: int) -> str:
    return f"cluster-{index:04d}"


def now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def deploy(custom: client.CustomObjectsApi, cluster: str, version: str) -> None:
    """The addon manager's work for ``version`` (created, or updated: a new generation), and the work agent's report
    that it is applied and available at that generation."""
    labels = {"open-cluster-management.io/addon-name": ADDON, "open-cluster-management.io/addon-version": version}
    manifest = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": ADDON, "namespace": "default"},
                "data": {"version": version}}  # fmt: skip
    spec = {"workload": {"manifests": [manifest]}}
    try:
        found: Any = custom.create_namespaced_custom_object(
            WORKS[0], WORKS[1], cluster, WORKS[2],
            {"apiVersion": "work.open-cluster-management.io/v1", "kind": "ManifestWork",
             "metadata": {"name": WORK, "namespace": cluster, "labels": labels}, "spec": spec},
        )  # fmt: skip
    except client.ApiException as error:
        if error.status != 409:
            raise
        found = custom.patch_namespaced_custom_object(
            WORKS[0], WORKS[1], cluster, WORKS[2], WORK, {"metadata": {"labels": labels}, "spec": spec}
        )
    generation, stamp = found["metadata"]["generation"], now()
    conditions = [
        {"type": kind, "status": "True", "observedGeneration": generation, "lastTransitionTime": stamp,
         "reason": reason, "message": message}
        for kind, reason, message in (("Applied", "AppliedManifestWorkComplete", "Apply manifest work complete"),
                                      ("Available", "ResourcesAvailable", "All resources are available"))
    ]  # fmt: skip
    custom.patch_namespaced_custom_object_status(
        WORKS[0], WORKS[1], cluster, WORKS[2], WORK, {"status": {"conditions": conditions}}
    )


def setup(cluster: ApiServer, count: int) -> None:
    cluster.install_crds([upstream_crds() / "olm.operatorframework.io_clusterextensions.yaml",
                          upstream_crds() / "olm.operatorframework.io_clustercatalogs.yaml",
                          *sorted((OCM / "lifecycle").glob("*.yaml")),
                          OCM / "crds" / "0000_00_work.open-cluster-management.io_manifestworks.crd.yaml"])  # fmt: skip
    install_gate(cluster)
    custom = client.CustomObjectsApi(cluster.client())
    custom.create_cluster_custom_object(
        GROUP, "v1alpha1", "clustermanagementaddons",
        {"apiVersion": f"{GROUP}/v1alpha1", "kind": "ClusterManagementAddOn", "metadata": {"name": ADDON}, "spec": {}},
    )  # fmt: skip
    versions = {"status": {"supportedVersions": ["v1", "v2"], "defaultVersion": "v2"}}
    custom.patch_cluster_custom_object_status(GROUP, "v1alpha1", "clustermanagementaddons", ADDON, versions)
    core = client.CoreV1Api(cluster.client())

    def managed_cluster(index: int) -> None:
        name = cluster_name(index)
        core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=name)))
        custom.create_namespaced_custom_object(
            MCAS[0], MCAS[1], name, MCAS[2],
            {"apiVersion": f"{GROUP}/v1alpha1", "kind": "ManagedClusterAddOn",
             "metadata": {"name": ADDON, "namespace": name}, "spec": {"installVersion": "v1"}},
        )  # fmt: skip
        deploy(custom, name, "v1")

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(managed_cluster, range(count)))


def addons(cluster: ApiServer) -> list[dict[str, Any]]:
    custom = client.CustomObjectsApi(cluster.client())
    answer: Any = custom.list_cluster_custom_object(*MCAS, _preload_content=False)
    return list(json.loads(answer.data)["items"])


def settled(cluster: ApiServer, count: int, last: str, version: str) -> Callable[[], bool]:
    """Every one of ``count`` add-ons says ``Succeed`` at ``version`` after ``last``."""

    def check() -> bool:
        done = 0
        for item in addons(cluster):
            status = item.get("status") or {}
            reasons = [c["reason"] for c in status.get("conditions") or () if c["type"] == "Progressing"]
            done += (status.get("currentVersion"), status.get("lastVersion"), reasons) == (version, last, ["Succeed"])
        return done == count

    return check


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--addons", type=int, default=1000)
    parser.add_argument("--resync", type=int, default=30, help="the controller's resync period, seconds")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    reason = unavailable()
    if reason is not None:
        raise SystemExit(reason)
    count = args.addons
    with tempfile.TemporaryDirectory() as work:
        run = Path(work) / "kube"
        run.mkdir()
        cluster = start(run)
        process = None
        try:
            began = time.monotonic()
            setup(cluster, count)
            print(f"setup: {count} managed clusters in {time.monotonic() - began:.1f} s", file=sys.stderr)
            port = free_port()
            env = {**os.environ, "KUBECONFIG": cluster.kubeconfig, "UPGRADE_GATE_LEADER_ELECTION": "false",
                   "UPGRADE_GATE_HEALTH_PORT": str(port), "UPGRADE_GATE_RESYNC": str(args.resync),
                   "UPGRADE_GATE_GATE_CHECK_INTERVAL": "0", "UPGRADE_GATE_LOG_LEVEL": "WARNING"}  # fmt: skip
            command = [str(Path(sys.executable).parent / "upgrade-gate"), "controller"]
            log = (Path(work) / "controller.log").open("wb")
            process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=log)
            started = wait(lambda: _serves_metrics(port), 60)  # the process starts: its imports, the first LISTs
            first = phase(port, {"reconciles": 0.0}, started + wait(settled(cluster, count, "", "v1"), 600))
            print(f"first pass: {first['seconds']} s", file=sys.stderr)

            before = metrics(port)
            custom = client.CustomObjectsApi(cluster.client())
            began = time.monotonic()
            with ThreadPoolExecutor(8) as pool:
                list(pool.map(lambda i: custom.patch_namespaced_custom_object(
                    MCAS[0], MCAS[1], cluster_name(i), MCAS[2], ADDON, {"spec": {"installVersion": "v2"}}),
                    range(count)))  # fmt: skip
                list(pool.map(lambda i: deploy(custom, cluster_name(i), "v2"), range(count)))
            wait(settled(cluster, count, "v1", "v2"), 600)
            upgrade = phase(port, before, time.monotonic() - began)
            print(f"upgrade: {upgrade['seconds']} s", file=sys.stderr)

            time.sleep(2)  # the last Events and watch echoes settle
            before = metrics(port)
            target = reconciles(before) + count
            time.sleep(args.resync + 1)
            wait(lambda: reconciles(metrics(port)) >= target, 120)
            resync = phase(port, before, float(args.resync))
            status = Path(f"/proc/{process.pid}/status").read_text()
            peak = next(int(line.split()[1]) for line in status.splitlines() if line.startswith("VmHWM")) / 1024
            rss = resync["_after"]["process_resident_memory_bytes"] / 2**20
        finally:
            if process is not None:
                process.terminate()
                process.wait(timeout=20)
            stop(run)
    report = {"addons": count, "first_pass": first, "upgrade": upgrade, "resync": resync, "rss_mb": round(rss, 1),
              "peak_rss_mb": round(peak, 1)}  # fmt: skip
    for key in ("first_pass", "upgrade", "resync"):
        report[key].pop("_after")
    if args.json:
        print(json.dumps(report, indent=2))
        return
    print(f"{count} ManagedClusterAddOns (one add-on on {count} clusters), real kube-apiserver 1.32, "
          f"resync {args.resync} s")  # fmt: skip
    print(f"  {'phase':34} {'seconds':>8} {'reconciles':>10} {'writes/rec':>10} {'CPU s':>6}  requests")
    for key, title in [("first_pass", "first pass (status from the works)"), ("upgrade", "upgrade v1 -> v2"),
                       ("resync", "one resync, nothing changed")]:  # fmt: skip
        p = report[key]
        print(f"  {title:34} {p['seconds']:8.2f} {p['reconciles']:10d} {p['writes_per_reconcile']:10.2f} "
              f"{p['controller_cpu_s']:6.2f}  {p['requests']}")  # fmt: skip
    print(f"  memory: {report['rss_mb']} MB resident, {report['peak_rss_mb']} MB peak")


def _serves_metrics(port: int) -> bool:
    try:
        metrics(port)
    except OSError:
        return False
    return True


if __name__ == "__main__":
    main()
