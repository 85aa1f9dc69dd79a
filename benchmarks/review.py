"""``upgrade-gate review`` benchmark: a pull request approving revisions on generated GitOps repositories.

Usage: python benchmarks/review.py [--sizes 100,1000] [--approvals 10] [--json]

Each repository holds N ClusterExtensions with a proposed ClusterExtensionRevision each (``approved: false``),
the bundled policies (Argo CD's controller a trusted applier) and ``policyCheck``; the change approves
``--approvals`` revisions, reviewed as one approver (``--as``). Reported per size: seconds for the whole review
(git reads, the stored form of every base object, the requests), the requests made, the time per base object
(ClusterExtension or revision), and the peak RSS of this process.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from resolve import peak_rss_mb

from webhook.plan.requests import DEFAULT_APPLIER, UserInfo
from webhook.sync.pullrequest import ReviewOptions, run_review

ROOT = Path(__file__).resolve().parent.parent
NOW = datetime.datetime(2026, 3, 5, 12, 0, 0, tzinfo=datetime.UTC)


def git(cwd: Path, *args: str) -> None:
    env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull}
    identity = {f"GIT_{r}_{k}": v for r in ("AUTHOR", "COMMITTER") for k, v in (("NAME", "b"), ("EMAIL", "b@x.io"))}
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, env={**env, **identity})


def extension(index: int) -> str:
    return (
        f"apiVersion: olm.operatorframework.io/v1\nkind: ClusterExtension\nmetadata:\n  name: ext-{index}\n"
        f"spec:\n  namespace: ns-{index}\n  serviceAccount:\n    name: installer\n  source:\n    sourceType: Catalog\n"
        f"    catalog:\n      packageName: pkg-{index}\n      selector: {{matchLabels: {{tier: prod}}}}\n"
        f'status:\n  install:\n    bundle:\n      name: pkg-{index}.v1.0.0\n      version: "1.0.0"\n'
    )


def revision(index: int, approved: bool) -> str:
    return (
        "apiVersion: olm.operatorframework.io/v1\nkind: ClusterExtensionRevision\n"
        f"metadata:\n  name: ext-{index}-1.1.0\n  labels:\n    clusterextension: ext-{index}\n"
        f"spec:\n  clusterExtensionRef:\n    name: ext-{index}\n"
        f'  version: "1.1.0"\n  availableSince: "2026-03-01T12:00:00Z"\n  approved: {str(approved).lower()}\n'
    )


def repository(root: Path, size: int, approvals: int) -> None:
    git(root.parent, "init", "--quiet", "-b", "main", str(root))
    shutil.copytree(ROOT / "policies", root / "policies", ignore=shutil.ignore_patterns("tests"))
    settings = root / "policies" / "settings.yaml"
    settings.write_text(settings.read_text().replace('gitopsAppliers: ""', f'gitopsAppliers: "{DEFAULT_APPLIER}"'))
    (root / "upgrade-gate.yaml").write_text(
        "extensions: extensions\nrevisions: revisions\ncatalogs: catalogs\npolicyCheck:\n  policies: policies\n"
    )
    for directory in ("extensions", "revisions", "catalogs"):
        (root / directory).mkdir()
    for index in range(size):
        (root / "extensions" / f"ext-{index}.yaml").write_text(extension(index))
        (root / "revisions" / f"ext-{index}.yaml").write_text(revision(index, approved=False))
    git(root, "add", "--all")
    git(root, "commit", "--quiet", "-m", "base")
    git(root, "checkout", "--quiet", "-b", "approve")
    for index in range(approvals):
        (root / "revisions" / f"ext-{index}.yaml").write_text(revision(index, approved=True))
    git(root, "commit", "--quiet", "-am", "approve")


def measure(size: int, approvals: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch) / "repo"
        repository(root, size, approvals)
        reviewer = UserInfo("alice", ("upgrade-approvers",))
        options = ReviewOptions(repo=root, base="main", head="approve", reviewer=reviewer, now=NOW)
        start = time.perf_counter()
        report = run_review(options)
        seconds = time.perf_counter() - start
        assert report.passed, [r for r in report.results if r.failing][:3]
        return {
            "size": size,
            "seconds": round(seconds, 3),
            "requests": len(report.results),
            "ms_per_base_object": round(1000 * seconds / (2 * size), 3),
            "peak_rss_mb": round(peak_rss_mb(), 1),
        }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100,1000")
    parser.add_argument("--approvals", type=int, default=10)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    rows = [measure(int(size), args.approvals) for size in args.sizes.split(",")]
    if args.json:
        print(json.dumps(rows, indent=2))
        return
    print(f"{'extensions':>10} {'review s':>9} {'requests':>9} {'ms/base object':>15} {'RSS MB':>7}")
    for row in rows:
        print(
            f"{row['size']:>10} {row['seconds']:>9} {row['requests']:>9} {row['ms_per_base_object']:>15} "
            f"{row['peak_rss_mb']:>7}"
        )
    if len(rows) > 1:
        ratio = rows[-1]["seconds"] / rows[0]["seconds"]
        print(f"{rows[-1]['size']} extensions take {ratio:.1f}x the time of {rows[0]['size']}")


if __name__ == "__main__":
    main()
