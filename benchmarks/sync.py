"""Sync loop benchmark: a full first cycle and a no-op second cycle on a generated GitOps repository.

Usage: python benchmarks/sync.py [--extensions 1000] [--bundles 100000] [--packages 2000] [--addons 200] [--json]

The repository holds N ClusterExtensions (half over the real catalog catalogs/certified-operators-v4.22, each
installed at a bundle that has a successor in its channel; half over a generated catalog of B bundles made by
``benchmarks/resolve.py``'s ``generate``), A add-ons (the add-on lifecycle's example: a ClusterManagementAddOn with
a pinned global-placement and canary-placement, supportedVersions v1 and v2 in its status, the canary's
PlacementDecision beside it, read offline), a local bare remote, and forge ``none`` (branches only). Both
cycles run in one process, as ``upgrade-gate sync --interval`` does; each add-on's canary stage is proposed.
Reported: seconds per cycle and per phase, resolution's share of the first cycle, proposals made, peak RSS of
this process (git's child processes are reported apart).
Goals (issue 6): no-op cycle < 2 s; resolution < 10% of the first cycle; memory < 500 MB.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from resolve import generate, pairs, peak_rss_mb

from webhook.olm.fbc import load_catalog
from webhook.plan import Action
from webhook.sync.cycle import SyncOptions, run_cycle
from webhook.sync.report import Report

ROOT = Path(__file__).resolve().parent.parent
REAL = ROOT / "catalogs" / "certified-operators-v4.22"
NOW = datetime.datetime(2026, 3, 1, 12, 0, 0, tzinfo=datetime.UTC)


def extension(name: str, package: str, bundle: str, version: str) -> str:
    return (
        "apiVersion: olm.operatorframework.io/v1\nkind: ClusterExtension\n"
        f"metadata:\n  name: {name}\nspec:\n  namespace: {name}\n  serviceAccount:\n    name: installer\n"
        f"  source:\n    sourceType: Catalog\n    catalog:\n      packageName: {package}\n"
        f"status:\n  install:\n    bundle:\n      name: {bundle}\n      version: {json.dumps(version)}\n"
    )


def addon(name: str) -> str:
    """A ClusterManagementAddOn with both placements pinned to v1, and the canary placement's decision."""
    placements = "".join(
        f"    - {{name: {p}, namespace: default, addonTemplate: {{installVersion: v1}}}}\n"
        for p in ("global-placement", "canary-placement")
    )
    return (
        f"apiVersion: addon.open-cluster-management.io/v1alpha1\nkind: ClusterManagementAddOn\nmetadata:\n"
        f"  name: {name}\nspec:\n  installStrategy:\n    type: Placements\n    placements:\n{placements}"
        "status:\n  supportedVersions: [v1, v2]\n  defaultVersion: v2\n"
    )


def build_repository(root: Path, generated: Path, count: int, addons: int) -> None:
    """Write the working tree: upgrade-gate.yaml, ``count`` ClusterExtensions and ``addons`` add-ons."""
    (root / "extensions").mkdir(parents=True)
    (root / "revisions").mkdir()
    (root / "revisions" / ".gitkeep").write_text("")
    (root / "addons").mkdir()
    (root / "upgrade-gate.yaml").write_text(
        "extensions: extensions\nrevisions: revisions\n"
        f"catalogs:\n  - path: {REAL}\n  - path: {generated}\nforge:\n  type: none\n"
        "addons:\n  manifests: addons\n  installed: status\n"
    )
    (root / "addons" / "decision.yaml").write_text(
        "apiVersion: cluster.open-cluster-management.io/v1beta1\nkind: PlacementDecision\nmetadata:\n"
        "  name: canary-placement-decision-1\n  namespace: default\n"
        "  labels: {cluster.open-cluster-management.io/placement: canary-placement}\n"
        "status: {decisions: [{clusterName: cluster1, reason: ''}]}\n"
    )
    for index in range(addons):
        (root / "addons" / f"addon-{index:05d}.yaml").write_text(addon(f"addon-{index:05d}"))
    real = pairs(load_catalog(REAL))
    generated_packages = sorted(p.name for p in generated.iterdir())
    for index in range(count):
        if index % 2 == 0:
            package, installed = real[(index // 2 * 7) % len(real)]
            bundle, version = installed.name, installed.version
        else:
            package = generated_packages[(index // 2) % len(generated_packages)]
            version = f"{index % 4}.{index % 7}.0"
            bundle = f"{package}.v{version}"
        name = f"ext-{index:05d}"
        (root / "extensions" / f"{name}.yaml").write_text(extension(name, package, bundle, version))


def git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


def cycle(options: SyncOptions) -> tuple[Report, float]:
    start = time.perf_counter()
    report = run_cycle(options)
    return report, time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--extensions", type=int, default=1_000)
    parser.add_argument("--bundles", type=int, default=100_000)
    parser.add_argument("--packages", type=int, default=2_000)
    parser.add_argument("--addons", type=int, default=200)
    parser.add_argument("--json", action="store_true", help="print one JSON document")
    args = parser.parse_args()
    identity = {"GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@example.com"}
    os.environ.update({**identity, "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "bench@example.com"})
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        print(f"generating {args.bundles:,} bundles and {args.extensions:,} extensions ...", file=sys.stderr)
        generated = base / "generated"
        generated.mkdir()
        generate(generated, args.bundles, args.packages)
        initial = base / "initial"
        build_repository(initial, generated, args.extensions, args.addons)
        git(base, "init", "--quiet", "--bare", "-b", "main", str(base / "remote.git"))
        git(initial, "init", "--quiet", "-b", "main")
        git(initial, "add", ".")
        git(initial, "commit", "--quiet", "-m", "desired state")
        git(initial, "push", "--quiet", str(base / "remote.git"), "main")
        options = SyncOptions(repo=str(base / "remote.git"), workdir=base / "work", clock=lambda: NOW)
        print("first cycle ...", file=sys.stderr)
        first, first_s = cycle(options)
        print("no-op cycle ...", file=sys.stderr)
        second, second_s = cycle(options)
    children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    result = {
        "extensions": args.extensions,
        "bundles": args.bundles,
        "addons": args.addons,
        "first_cycle_s": first_s,
        "first_timings_s": dict(first.timings),
        "resolution_share": first.timings.get("resolve", 0.0) / first_s,
        "proposed": first.count(Action.PROPOSED),
        "addons_proposed": sum(1 for e in first.entries if e.subject.startswith("addon/") and e.action == "proposed"),
        "first_unchanged": first.count(Action.UNCHANGED),
        "first_skipped": first.count(Action.SKIPPED),
        "noop_cycle_s": second_s,
        "noop_timings_s": dict(second.timings),
        "noop_changes": sum(second.count(Action(a)) for a in ("proposed", "updated", "removed", "withdrawn", "failed")),
        "peak_rss_mb": peak_rss_mb(),
        "git_children_peak_rss_mb": children,
    }
    if args.json:
        print(json.dumps(result, indent=2))
        return
    phases = ", ".join(f"{k} {v:.2f}" for k, v in sorted(first.timings.items()))
    print(f"first cycle   {first_s:7.2f} s   ({phases})")
    print(f"  resolution  {result['resolution_share']:7.1%}       (goal < 10%)")
    print(
        f"  proposed {first.count(Action.PROPOSED)} (add-ons {result['addons_proposed']} of {args.addons}), "
        f"unchanged {first.count(Action.UNCHANGED)}, skipped {first.count(Action.SKIPPED)}"
    )
    phases = ", ".join(f"{k} {v:.2f}" for k, v in sorted(second.timings.items()))
    print(f"no-op cycle   {second_s:7.2f} s   (goal < 2 s; {phases}); changes: {result['noop_changes']}")
    print(f"peak RSS      {result['peak_rss_mb']:7.1f} MB  (goal < 500 MB; git children {children:.1f} MB)")


if __name__ == "__main__":
    main()
