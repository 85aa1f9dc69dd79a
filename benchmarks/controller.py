"""Controller benchmark: N ClusterExtensions on a real kube-apiserver, `upgrade-gate controller --mode cluster`.

Usage: python benchmarks/controller.py [--extensions 1000] [--json]

Needs the kube-apiserver harness and binaries of the integration tests (``tests/apiserver.py``). Installs
upstream's ClusterExtension and ClusterCatalog CRDs and the chart's ClusterExtensionRevision CRD (no admission
webhook: the controller alone is measured), serves the real cloudnative-pg package from a local catalogd
stand-in, creates N ClusterExtensions installed at 1.27.1 (status as operator-controller writes it), then runs
the controller as its own process and reads its ``/metrics``:

1. **first pass**: every extension gets its revision (1.28.0) and the revision its status;
2. **catalog change**: 1.28.1 is published with a skipRange from 1.27.1; time until every revision was updated
   in place and its status is current again (``observedGeneration`` = ``generation``);
3. **no-op resync**: the ClusterCatalog is touched (a label), which queues every extension; time until all were
   reconciled, and the API requests that cost (none are expected: everything comes from the watch cache).

Reported per phase: seconds, reconciles, API requests (by verb), writes per reconcile and the controller's CPU
time; its resident memory at the end and its peak (``VmHWM``). Goals: convergence after a catalog change under
30 s for 1,000 extensions, no request per object on a no-op resync, under 200 MB.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from kubernetes import client  # noqa: E402 - after the repository root is importable

from tests.apiserver import ApiServer, start, stop, unavailable, upstream_crds  # noqa: E402
from tests.integration.conftest import _chart_objects  # noqa: E402
from tests.integration.test_controller import Catalogd, cnpg_catalog  # noqa: E402

OLM = ("olm.operatorframework.io", "v1")
CATALOG = "bench"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def setup(cluster: ApiServer, catalogd: Catalogd, count: int) -> None:
    (crd,) = [o for o in _chart_objects({}) if o["kind"] == "CustomResourceDefinition"]
    cluster.install_crds([upstream_crds() / "olm.operatorframework.io_clusterextensions.yaml",
                          upstream_crds() / "olm.operatorframework.io_clustercatalogs.yaml", crd])  # fmt: skip
    catalogd.content[CATALOG] = cnpg_catalog("1.28.0")
    publish(cluster, catalogd, "1")
    custom = client.CustomObjectsApi(cluster.client())

    def extension(index: int) -> None:
        name = f"ext-{index:04d}"
        body = {
            "apiVersion": "olm.operatorframework.io/v1", "kind": "ClusterExtension", "metadata": {"name": name},
            "spec": {"namespace": name, "serviceAccount": {"name": "installer"},
                     "source": {"sourceType": "Catalog", "catalog": {
                         "packageName": "cloudnative-pg", "version": ">=1.27.0 <2.0.0", "channels": ["stable-v1"]}}},
        }  # fmt: skip
        custom.create_cluster_custom_object(*OLM, "clusterextensions", body)
        condition = {"type": "Installed", "status": "True", "reason": "Succeeded", "message": "Installed bundle",
                     "observedGeneration": 1, "lastTransitionTime": now()}  # fmt: skip
        status = {"install": {"bundle": {"name": "cloudnative-pg.v1.27.1", "version": "1.27.1"}},
                  "conditions": [condition]}  # fmt: skip
        custom.patch_cluster_custom_object_status(*OLM, "clusterextensions", name, {"status": status})

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(extension, range(count)))


def publish(cluster: ApiServer, catalogd: Catalogd, generation: str) -> None:
    """Create or update the ClusterCatalog with status as catalogd writes it after unpacking ``generation``."""
    custom = client.CustomObjectsApi(cluster.client())
    body = {"apiVersion": "olm.operatorframework.io/v1", "kind": "ClusterCatalog", "metadata": {"name": CATALOG},
            "spec": {"source": {"type": "Image", "image": {"ref": "quay.io/example/bench:latest"}}}}  # fmt: skip
    try:
        custom.create_cluster_custom_object(*OLM, "clustercatalogs", body)
    except client.ApiException as error:
        if error.status != 409:
            raise
    digest = hashlib.sha256(generation.encode()).hexdigest()
    status = {
        "conditions": [{"type": "Serving", "status": "True", "reason": "Available", "message": "Serving",
                        "observedGeneration": 1, "lastTransitionTime": now()}],
        "resolvedSource": {"type": "Image", "image": {"ref": f"quay.io/example/bench@sha256:{digest}"}},
        "urls": {"base": catalogd.base(CATALOG)},
        "lastUnpacked": now(),
    }  # fmt: skip
    custom.patch_cluster_custom_object_status(*OLM, "clustercatalogs", CATALOG, {"status": status})


def revisions(cluster: ApiServer) -> list[dict[str, Any]]:
    custom = client.CustomObjectsApi(cluster.client())
    answer: Any = custom.list_cluster_custom_object(*OLM, "clusterextensionrevisions", _preload_content=False)
    return list(json.loads(answer.data)["items"])


def current(count: int, version: str) -> Callable[[list[dict[str, Any]]], bool]:
    """Every one of ``count`` revisions proposes ``version`` and has the status of its generation."""

    def check(items: list[dict[str, Any]]) -> bool:
        done = [r for r in items if r["spec"]["version"] == version
                and (r.get("status") or {}).get("observedGeneration") == r["metadata"]["generation"]
                and (r.get("status") or {}).get("state") == "PendingApproval"]  # fmt: skip
        return len(done) == count

    return check


def metrics(port: int) -> dict[str, float]:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as answer:
        text = answer.read().decode()
    found: dict[str, float] = {}
    for line in text.splitlines():
        if line.startswith(("upgrade_gate_controller_", "process_resident_memory_bytes", "process_cpu_seconds")):
            name, _, value = line.rpartition(" ")
            found[name] = float(value)
    return found


def requests(snapshot: dict[str, float]) -> dict[str, float]:
    prefix = 'upgrade_gate_controller_api_requests_total{verb="'
    return {k.removeprefix(prefix).removesuffix('"}'): v for k, v in snapshot.items() if k.startswith(prefix)}


def reconciles(snapshot: dict[str, float]) -> float:
    return sum(v for k, v in snapshot.items() if k.startswith("upgrade_gate_controller_reconciles_total"))


def phase(port: int, before: dict[str, float], seconds: float) -> dict[str, Any]:
    after = metrics(port)
    asked = {verb: after_n - requests(before).get(verb, 0) for verb, after_n in requests(after).items()}
    done = reconciles(after) - reconciles(before)
    writes = sum(n for verb, n in asked.items() if verb not in ("list", "watch"))
    return {
        "seconds": round(seconds, 2),
        "reconciles": int(done),
        "requests": {verb: int(n) for verb, n in sorted(asked.items()) if n},
        "writes_per_reconcile": round(writes / done, 2) if done else 0.0,
        "controller_cpu_s": round(after["process_cpu_seconds_total"] - before.get("process_cpu_seconds_total", 0), 2),
        "_after": after,
    }


def wait(what: Callable[[], bool], timeout: float) -> float:
    began = time.monotonic()
    while not what():
        if time.monotonic() - began > timeout:
            raise SystemExit(f"timed out after {timeout:g} s")
        time.sleep(0.25)
    return time.monotonic() - began


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--extensions", type=int, default=1000)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    reason = unavailable()
    if reason is not None:
        raise SystemExit(reason)
    count = args.extensions
    with tempfile.TemporaryDirectory() as work:
        run = Path(work) / "kube"
        run.mkdir()
        cluster = start(run)
        catalogd = Catalogd()
        process = None
        try:
            began = time.monotonic()
            setup(cluster, catalogd, count)
            print(f"setup: {count} ClusterExtensions in {time.monotonic() - began:.1f} s", file=sys.stderr)
            port = free_port()
            env = {**os.environ, "KUBECONFIG": cluster.kubeconfig, "UPGRADE_GATE_CONTROLLER_MODE": "cluster",
                   "UPGRADE_GATE_LEADER_ELECTION": "false", "UPGRADE_GATE_HEALTH_PORT": str(port),
                   "UPGRADE_GATE_LOG_LEVEL": "WARNING"}  # fmt: skip
            command = [str(Path(sys.executable).parent / "upgrade-gate"), "controller"]
            log = (Path(work) / "controller.log").open("wb")
            process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=log)
            zero = {"reconciles": 0.0}
            wait(lambda: _up(port), 30)
            began = time.monotonic()
            first = phase(port, zero, wait(lambda: current(count, "1.28.0")(revisions(cluster)), 600))
            print(f"first pass: {first['seconds']} s", file=sys.stderr)

            catalogd.content[CATALOG] = cnpg_catalog("1.28.1", {"cloudnative-pg.v1.28.1": ">=1.27.0 <1.28.1"})
            before = metrics(port)
            publish(cluster, catalogd, "2")
            change = phase(port, before, wait(lambda: current(count, "1.28.1")(revisions(cluster)), 600))
            print(f"catalog change: {change['seconds']} s", file=sys.stderr)

            time.sleep(2)  # the last Events and watch echoes settle
            before = metrics(port)
            target = reconciles(before) + count
            client.CustomObjectsApi(cluster.client()).patch_cluster_custom_object(
                *OLM, "clustercatalogs", CATALOG, {"metadata": {"labels": {"touched": str(time.time_ns())}}}
            )
            noop = phase(port, before, wait(lambda: reconciles(metrics(port)) >= target, 300))
            status = Path(f"/proc/{process.pid}/status").read_text()
            peak = next(int(line.split()[1]) for line in status.splitlines() if line.startswith("VmHWM")) / 1024
            rss = noop["_after"]["process_resident_memory_bytes"] / 2**20
        finally:
            if process is not None:
                process.terminate()
                process.wait(timeout=20)
            catalogd.server.shutdown()
            catalogd.server.server_close()
            stop(run)
    report = {
        "extensions": count,
        "first_pass": first,
        "catalog_change": change,
        "noop_resync": noop,
        "rss_mb": round(rss, 1),
        "peak_rss_mb": round(peak, 1),
    }
    for key in ("first_pass", "catalog_change", "noop_resync"):
        report[key].pop("_after")
    if args.json:
        print(json.dumps(report, indent=2))
        return
    print(f"{count} ClusterExtensions, cluster mode, real kube-apiserver 1.32")
    for key, title in [("first_pass", "first pass (create + status)"), ("catalog_change", "catalog change (update)"),
                       ("noop_resync", "no-op resync")]:  # fmt: skip
        p = report[key]
        print(f"  {title:32} {p['seconds']:7.2f} s  {p['reconciles']:5d} reconciles  "
              f"{p['writes_per_reconcile']:.2f} writes/reconcile  {p['controller_cpu_s']:5.2f} s CPU  "
              f"requests {p['requests']}")  # fmt: skip
    print(f"  memory: {report['rss_mb']} MB resident, {report['peak_rss_mb']} MB peak")


def _up(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=2) as answer:
            return bool(answer.status == 200)
    except OSError:
        return False


if __name__ == "__main__":
    main()
