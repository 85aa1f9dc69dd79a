"""Doctor benchmark: the cost of ``upgrade-gate doctor``'s checks on a real kube-apiserver holding N ClusterExtensions.

Usage: python benchmarks/doctor.py [--extensions 1000] [--runs 20] [--json]

Needs the kube-apiserver harness and binaries of the integration tests (``tests/apiserver.py``). Installs upstream's
ClusterExtension CRD, the chart's CRD, webhook configurations and Service, the bundled settings and
operator-controller's Deployment in ``olmv1-system``, creates N ClusterExtensions, then times:

1. ``diagnose`` in process (the reads and the checks, what the controller would run): median and worst of ``--runs``;
2. the ``upgrade-gate doctor`` command as a user runs it (a new process: Python's start and imports included).

The checks read no ClusterExtension, so their cost should not depend on N; the figure says whether it does.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from kubernetes import client  # noqa: E402 - after the repository root is importable

from tests.apiserver import start, stop, unavailable, upstream_crds  # noqa: E402
from tests.controller.test_doctor import olm_deployment, render_chart, settings_config_map  # noqa: E402
from tests.integration.conftest import install_gate  # noqa: E402
from webhook.controller import diagnose  # noqa: E402
from webhook.io.kube import Cluster  # noqa: E402


def extension(number: int) -> dict[str, object]:
    return {
        "apiVersion": "olm.operatorframework.io/v1",
        "kind": "ClusterExtension",
        "metadata": {"name": f"bench-{number:04d}"},
        "spec": {
            "namespace": "bench-system",
            "serviceAccount": {"name": "installer"},
            "source": {"sourceType": "Catalog", "catalog": {"packageName": f"bench-{number:04d}"}},
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--extensions", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    reason = unavailable()
    if reason is not None:
        raise SystemExit(reason)
    with tempfile.TemporaryDirectory() as work:
        run = Path(work) / "kube"
        server = start(run)
        try:
            server.install_crds([upstream_crds() / "olm.operatorframework.io_clusterextensions.yaml"])
            install_gate(server)
            namespaces = ["olmv1-system", "bench-system"]
            server.apply([{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": n}} for n in namespaces])
            custom = client.CustomObjectsApi(server.client())
            for number in range(args.extensions):
                custom.create_cluster_custom_object("olm.operatorframework.io", "v1", "clusterextensions",
                                                    extension(number))  # fmt: skip
            # The webhook configurations last, and no governed write after them: their Service has no pod here, and
            # the API server would call its ClusterIP, off this machine.
            chart = [o for o in render_chart() if o["kind"].endswith("WebhookConfiguration") or o["kind"] == "Service"]
            server.apply([settings_config_map(), olm_deployment(), *chart])
            cluster = Cluster.from_kubeconfig(Path(server.kubeconfig))
            timings, report = [], None
            for _ in range(args.runs):
                began = time.perf_counter()
                report = diagnose(cluster)
                timings.append((time.perf_counter() - began) * 1000)
            command = [str(Path(sys.executable).parent / "upgrade-gate"), "doctor", "--kubeconfig", server.kubeconfig]
            began = time.perf_counter()
            done = subprocess.run(command, capture_output=True, text=True, check=False)
            process_s = time.perf_counter() - began
        finally:
            stop(run)
    assert report is not None
    figures = {
        "extensions": args.extensions,
        "diagnose_ms_median": round(statistics.median(timings), 1),
        "diagnose_ms_max": round(max(timings), 1),
        "command_s": round(process_s, 2),
        "command_exit": done.returncode,
        "results": {check.id: check.result for check in report.checks},
    }
    if args.json:
        print(json.dumps(figures, indent=2))
        return
    print(f"{args.extensions} ClusterExtensions: diagnose {figures['diagnose_ms_median']} ms median, "
          f"{figures['diagnose_ms_max']} ms worst of {args.runs}; upgrade-gate doctor {process_s:.2f} s "
          f"(exit {done.returncode})")  # fmt: skip
    print("checks: " + ", ".join(f"{name} {result}" for name, result in figures["results"].items()))


if __name__ == "__main__":
    main()
