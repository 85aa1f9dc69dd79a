"""Resolver benchmark: catalog load cost and resolutions per second, on the real and a generated catalog.

Usage: python benchmarks/resolve.py [--bundles 100000] [--packages 2000] [--json]

Pinned to one core. Phases (the generated catalog runs in a child process so its peak RSS is its own):
1. real catalog (catalogs/certified-operators-v4.22): cold load vs a plain ``json`` parse of the same bytes;
   every (package, bundle) pair as the installed bundle, resolved with no constraint and with
   ``>=MAJOR.0.0 <MAJOR+1.0.0``; resolutions per second.
2. generated catalog: N bundles over P packages written as catalogd lays them out; load time, peak RSS,
   and resolutions per second on a sample of packages (should match phase 1: cost per resolution does not
   grow with catalog size).
Goals (issue 2): load <= 2x plain json; >= 5,000 resolutions/s; 100k bundles load < 5 s and < 500 MB.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from webhook.errors import ResolutionError
from webhook.olm.catalog import Catalog
from webhook.olm.fbc import load_catalog
from webhook.olm.resolve.extension import CatalogSource, InstalledBundle
from webhook.olm.resolve.resolver import resolve

ROOT = Path(__file__).resolve().parent.parent
REAL = ROOT / "catalogs" / "certified-operators-v4.22"


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def plain_json_seconds(root: Path) -> float:
    start = time.perf_counter()
    for path in sorted(root.rglob("*.json")):
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                json.loads(line)
    return time.perf_counter() - start


def pairs(catalog: Catalog, limit_packages: int | None = None) -> list[tuple[str, InstalledBundle]]:
    found = []
    for name in catalog.package_names()[:limit_packages]:
        for bundle in catalog.package(name).bundles:
            if bundle.version_text and bundle.version_release:
                found.append((name, InstalledBundle(bundle.name, bundle.version_text)))
    return found


def resolutions_per_second(catalog: Catalog, work: list[tuple[str, InstalledBundle]], ranged: bool) -> float:
    start = time.perf_counter()
    for package, installed in work:
        version = ""
        if ranged:
            major = int(installed.version.split(".")[0])
            version = f">={major}.0.0 <{major + 1}.0.0"
        with contextlib.suppress(ResolutionError):
            resolve(CatalogSource(package, version=version), [catalog], installed)
    return len(work) / (time.perf_counter() - start)


def generate(root: Path, bundles: int, packages: int) -> None:
    per_package = bundles // packages
    for p in range(packages):
        name = f"generated-operator-{p:05d}"
        lines = [json.dumps({"schema": "olm.package", "name": name, "defaultChannel": "stable"})]
        entries = []
        for i in range(per_package):
            version = f"{i // 10}.{i % 10}.0"
            entry: dict[str, object] = {"name": f"{name}.v{version}"}
            if i:
                entry["replaces"] = f"{name}.v{(i - 1) // 10}.{(i - 1) % 10}.0"
            if i % 10 == 9:
                entry["skipRange"] = f">={i // 10}.0.0 <{version}"
            entries.append(entry)
            properties = [
                {"type": "olm.package", "value": {"packageName": name, "version": version}},
                {"type": "olm.gvk", "value": {"group": "example.com", "kind": "Widget", "version": "v1"}},
            ]
            lines.append(
                json.dumps(
                    {
                        "schema": "olm.bundle",
                        "package": name,
                        "name": f"{name}.v{version}",
                        "image": f"quay.io/example/{name}-bundle@sha256:{i:064x}",
                        "properties": properties,
                    }
                )
            )
        lines.append(json.dumps({"schema": "olm.channel", "package": name, "name": "stable", "entries": entries}))
        (root / name).mkdir()
        (root / name / "catalog.json").write_text("\n".join(lines) + "\n", encoding="utf-8")


def real_phase() -> dict[str, float]:
    json_s = plain_json_seconds(REAL)
    start = time.perf_counter()
    catalog = load_catalog(REAL)
    load_s = time.perf_counter() - start
    start = time.perf_counter()
    problems = catalog.problems()
    build_s = time.perf_counter() - start
    work = pairs(catalog)
    resolutions_per_second(catalog, work[:50], ranged=False)  # warm the range and skipRange caches
    return {
        "plain_json_ms": json_s * 1000,
        "load_ms": load_s * 1000,
        "load_vs_json": load_s / json_s,
        "load_and_validate_ms": (load_s + build_s) * 1000,
        "problems": len(problems),
        "pairs": len(work),
        "no_constraint_per_s": resolutions_per_second(catalog, work, ranged=False),
        "ranged_per_s": resolutions_per_second(catalog, work, ranged=True),
        "peak_rss_mb": peak_rss_mb(),
    }


def generated_phase(bundles: int, packages: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        generate(root, bundles, packages)
        json_s = plain_json_seconds(root)
        start = time.perf_counter()
        catalog = load_catalog(root)
        load_s = time.perf_counter() - start
        work = pairs(catalog, limit_packages=20)
        per_second_big = resolutions_per_second(catalog, work, ranged=False)
    with tempfile.TemporaryDirectory() as tmp:
        small_root = Path(tmp)
        generate(small_root, bundles * 20 // packages, 20)
        small = load_catalog(small_root)
        per_second_small = resolutions_per_second(small, pairs(small), ranged=False)
        return {
            "bundles": catalog.bundle_count(),
            "packages": len(catalog.package_names()),
            "plain_json_s": json_s,
            "load_s": load_s,
            "load_vs_json": load_s / json_s,
            "no_constraint_per_s": per_second_big,
            "ranged_per_s": resolutions_per_second(catalog, work, ranged=True),
            "same_packages_in_20_package_catalog_per_s": per_second_small,
            "peak_rss_mb": peak_rss_mb(),
        }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bundles", type=int, default=100_000)
    parser.add_argument("--packages", type=int, default=2_000)
    parser.add_argument("--json", action="store_true", help="print one JSON document")
    parser.add_argument("--generated-only", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    if args.generated_only:
        print(json.dumps(generated_phase(args.bundles, args.packages)))
        return
    print("phase 1: real catalog ...", file=sys.stderr, flush=True)
    real = real_phase()
    print(f"phase 2: generating and loading {args.bundles:,} bundles ...", file=sys.stderr, flush=True)
    child = subprocess.run(
        [
            sys.executable,
            __file__,
            "--generated-only",
            "--bundles",
            str(args.bundles),
            "--packages",
            str(args.packages),
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    generated = json.loads(child.stdout)
    if args.json:
        print(json.dumps({"real": real, "generated": generated}, indent=2))
        return
    print(f"real catalog ({real['pairs']} installed bundles)")
    print(f"  plain json parse         {real['plain_json_ms']:8.1f} ms")
    print(f"  load (cold)              {real['load_ms']:8.1f} ms   {real['load_vs_json']:.2f}x json   (goal <= 2x)")
    print(f"  load + validate all      {real['load_and_validate_ms']:8.1f} ms   problems: {real['problems']:.0f}")
    print(f"  resolutions, no range    {real['no_constraint_per_s']:8.0f} /s   (goal >= 5,000)")
    print(f"  resolutions, ranged      {real['ranged_per_s']:8.0f} /s")
    print(f"  peak RSS                 {real['peak_rss_mb']:8.1f} MB")
    print(f"generated catalog ({generated['bundles']:,} bundles, {generated['packages']:,} packages)")
    print(f"  plain json parse         {generated['plain_json_s']:8.2f} s")
    ratio = generated["load_vs_json"]
    print(f"  load (cold)              {generated['load_s']:8.2f} s    {ratio:.2f}x json   (goal < 5 s)")
    print(f"  resolutions, no range    {generated['no_constraint_per_s']:8.0f} /s   (50-bundle packages)")
    print(f"  resolutions, ranged      {generated['ranged_per_s']:8.0f} /s")
    small = generated["same_packages_in_20_package_catalog_per_s"]
    print(f"  same packages, 20-package catalog {small:8.0f} /s   (cost does not grow with catalog size)")
    print(f"  peak RSS                 {generated['peak_rss_mb']:8.1f} MB   (goal < 500 MB)")


if __name__ == "__main__":
    main()
