"""Approval benchmark: how long an approved upgrade takes to start after holds of different lengths, on the real
OLM v1 (operator-controller v1.11.0 with the Helm applier, catalogd, a local registry) behind the gate.

Usage: sudo python benchmarks/approval.py [--holds 10,300,900] [--baseline 10,300] [--json]

Needs root and the binaries and harnesses of the integration tests (``tests/olm_harness.py``). Starts a
kube-apiserver with OLM on it, the chart's CRD and webhooks served by a local ``upgrade-gate serve``, and
``upgrade-gate controller``. For each hold (seconds), one package of its own:

1. ``publish 1.0.0`` and a ClusterExtension: time until Installed (a first install, never held);
2. ``publish 1.0.0,1.1.0``: time until operator-controller reports the gate's denial in ``Progressing``
   (``held_s``), then until the ClusterExtensionRevision, proposed at once, shows the hold in its status
   (``status_s``: the controller writes it, state PendingApproval);
3. after the hold, the revision is approved: time until 1.1.0 is Installed (``approval_to_installed_s``). Without
   the controller's retry request this waits for operator-controller's next retry, whose backoff doubles up to
   about 1,000 s; the goal is 10 s whatever the hold. ``--baseline`` holds run the same way in the same run after
   the controller is stopped, for the side-by-side figure: what the wait is without it.

The Boxcutter applier is not measured: the operator-controller built here has it disabled (its boxcutter
dependency is not served by the Go module proxy; see docs/testing.md).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.apiserver import cluster_admin, wait_for  # noqa: E402 - after the repository root is importable
from tests.integration.conftest import controlling, install_gate, serving  # noqa: E402
from tests.integration.olm import APPROVER_GROUP, approve, propose  # noqa: E402
from tests.olm_harness import Olm, running, unavailable  # noqa: E402

REVISIONS = ("olm.operatorframework.io/v1", "ClusterExtensionRevision")


def _held(olm: Olm, name: str) -> bool:
    return "waiting for approval" in olm.progressing(name).get("message", "")


def _status_shows_hold(olm: Olm, revision: str) -> bool:
    """The controller has written the revision's status: waiting for approval (or, approved, held)."""
    found: dict[str, Any] = olm.kube().get(*REVISIONS, revision) or {}
    return found.get("status", {}).get("state") in ("PendingApproval", "Held")


def one_hold(olm: Olm, published: dict[str, list[str]], hold_s: float, *, controller: bool) -> dict[str, Any]:
    """The figures of one hold of ``hold_s`` seconds, for a package of its own (added to ``published``), with or
    without the controller running."""
    name = f"hold{int(hold_s)}{'' if controller else 'bare'}"
    published[name] = ["1.0.0"]
    olm.publish(published)
    started = time.monotonic()
    olm.install(name)
    wait_for(lambda: olm.installed(name) == "1.0.0", f"{name} installed", timeout=120)
    installed_s = time.monotonic() - started
    published[name] = ["1.0.0", "1.1.0"]
    started = time.monotonic()
    olm.publish(published)
    wait_for(lambda: _held(olm, name), f"{name} held", timeout=120, interval=0.05)
    held_s = time.monotonic() - started
    propose(olm.server, name, "1.1.0")
    if controller:
        wait_for(lambda: _status_shows_hold(olm, f"{name}-1.1.0"), "the hold in the revision's status", timeout=60)
    status_s = time.monotonic() - started
    time.sleep(max(0.0, hold_s - (time.monotonic() - started)))
    approved = time.monotonic()
    approve(olm.server, f"{name}-1.1.0")
    wait_for(lambda: olm.installed(name) == "1.1.0", f"{name} upgraded", timeout=hold_s + 1200, interval=0.05)
    return {
        "controller": controller,
        "hold_s": hold_s,
        "first_install_s": round(installed_s, 2),
        "publish_to_held_s": round(held_s, 2),
        "publish_to_revision_status_s": round(status_s, 2) if controller else None,
        "approval_to_installed_s": round(time.monotonic() - approved, 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--holds", default="10,300,900", help="hold lengths in seconds, comma-separated")
    parser.add_argument("--baseline", default="", help="hold lengths to measure again without the controller")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    reason = unavailable()
    if reason is not None:
        raise SystemExit(reason)
    holds = [float(h) for h in args.holds.split(",") if h.strip()]
    baseline = [float(h) for h in args.baseline.split(",") if h.strip()]
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as work, running(Path(work) / "olm") as olm:
        install_gate(olm.server)
        olm.server.apply([cluster_admin("gate-approvers", {"kind": "Group", "name": APPROVER_GROUP})])
        published: dict[str, list[str]] = {}
        with serving(olm.server, Path(work)):
            with controlling(olm.server, Path(work) / "controller.log"):
                for hold in holds:
                    rows.append(one_hold(olm, published, hold, controller=True))
                    if not args.json:
                        print(json.dumps(rows[-1]), flush=True)
            for hold in baseline:
                rows.append(one_hold(olm, published, hold, controller=False))
                if not args.json:
                    print(json.dumps(rows[-1]), flush=True)
    if args.json:
        print(json.dumps({"applier": "helm", "holds": rows}, indent=2))
        return
    print(f"\n{'controller':>10} {'hold':>8} {'install':>8} {'held':>8} {'status':>8} {'approval->installed':>20}")
    for row in rows:
        status = row["publish_to_revision_status_s"]
        print(f"{'yes' if row['controller'] else 'no':>10} {row['hold_s']:>7.0f}s {row['first_install_s']:>7.2f}s "
              f"{row['publish_to_held_s']:>7.2f}s {f'{status:.2f}s' if status is not None else '-':>8} "
              f"{row['approval_to_installed_s']:>19.2f}s")  # fmt: skip


if __name__ == "__main__":
    main()
