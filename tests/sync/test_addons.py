"""Add-on installVersion proposals through ``run_cycle``: real git remotes, the fake GitHub, a fake hub cluster.

Expectations come from the add-on installVersion lifecycle ("Canary upgrade": the canary placement gets the new
version first, the other placements after it ran successfully; "Valid installVersion are listed in
ClusterManagementAddOn status.supportedVersion"; a rollback is a human's call) and the issue's sync rules (one
branch and pull request per add-on, idempotent runs, human commits respected, closed pull requests not proposed
again, withdrawal). The hub (tests/data/gitops/addons/cluster.yaml) holds objects shaped as Open Cluster Management
serves them: canary-placement decides cluster1, global-placement decides cluster1..3, helloworld supports v1 and v2.
"""

from __future__ import annotations

import datetime
import json
import shutil
from collections.abc import Mapping
from typing import Any

import pytest
import yaml

from tests.sync.conftest import HUMAN, ROOT, World, git
from webhook.errors import InputError
from webhook.plan.requests import DEFAULT_APPLIER as ARGOCD
from webhook.sync.report import Report
from webhook.sync.views import ObjectsView

ADDONS = ROOT / "tests" / "data" / "gitops" / "addons"
CMA = "clusters/hub/addons/helloworld.yaml"
MCAS = "clusters/hub/addons/managed.yaml"
SUBJECT = "addon/helloworld"
BRANCH = "upgrade-gate/addon/helloworld"
CANARY_TITLE = "Upgrade add-on helloworld to v2 on its canaries"


class FakeHub(ObjectsView):
    """A hub cluster in memory: the add-on lookups of ``ObjectsView`` and the sync loop's other reads."""

    def installed_bundles(self) -> Mapping[str, tuple[str, str]]:
        return {}

    def server_version(self) -> str:
        return "v1.31.4"

    def get_object(self, api_version: str, kind: str, name: str, namespace: str) -> Mapping[str, Any] | None:
        return None


def hub_objects(
    *, canary: tuple[str, str, str] | None = None, supported: list[str] | None = None
) -> list[dict[str, Any]]:
    """The hub's objects; ``canary`` = (currentVersion, Progressing reason, lastTransitionTime) of cluster1's
    add-on, ``supported`` replaces the ClusterManagementAddOn's supportedVersions."""
    objects: list[dict[str, Any]] = yaml.safe_load((ADDONS / "cluster.yaml").read_text())
    if supported is not None:
        objects[0]["status"]["supportedVersions"] = supported
    if canary is not None:
        version, reason, since = canary
        status = objects[-1]["status"]
        status["currentVersion"] = version if reason == "Succeed" else "unknown"
        status["conditions"][0].update(reason=reason, lastTransitionTime=since, status="False")
    return objects


@pytest.fixture
def hub(world: World) -> World:
    shutil.copytree(ADDONS / "clusters", world.human / "clusters", dirs_exist_ok=True)
    world.set_config(lambda text: text + "addons:\n  manifests: clusters/hub/addons\n  installed: cluster\n")
    world.push("govern the helloworld add-on")
    return world


def sync(world: World, **hub: Any) -> Report:
    return world.sync(cluster=FakeHub(hub_objects(**hub)))


def entry(report: Report, subject: str = SUBJECT) -> tuple[str, str]:
    found = [e for e in report.entries if e.subject == subject]
    assert len(found) == 1, report.entries
    return found[0].action, found[0].reason


def original(path: str) -> str:
    return (ADDONS / path).read_text()


def test_the_canary_placement_and_canary_clusters_are_proposed_first_and_the_others_held(hub: World) -> None:
    report = sync(hub)
    assert entry(report) == (
        "proposed",
        "v2 is the newest supported version (v1, v2, from the cluster); moves placement default/canary-placement "
        "(canary) from v1, cluster cluster1 (canary) from v1; placement default/global-placement, cluster cluster3 "
        "wait for the canary placement default/canary-placement: canary cluster1 runs v1.",
    )
    # only the canaries' scalars change; the comment and the quoting stay
    assert hub.show(BRANCH, CMA) == original(CMA).replace('installVersion: "v1"', 'installVersion: "v2"')
    assert hub.show(BRANCH, MCAS) == original(MCAS).replace("installVersion: v1", "installVersion: v2", 1)
    assert git(hub.remote, "rev-parse", f"{BRANCH}^") == git(hub.remote, "rev-parse", "main")
    pull = next(p for p in hub.github.open_pulls() if p["head"]["ref"] == BRANCH)
    assert pull["title"] == CANARY_TITLE
    for row in (
        "| Supported versions | v1, v2 (default v2), from the cluster |",
        "| placement default/canary-placement (canary) | from v1 to v2 |",
        "| cluster cluster1 (canary) | from v1 to v2 |",
        "| placement default/global-placement (held) | stays at v1 until the canaries have run v2 |",
        "| cluster cluster3 (held) | stays at v1 until the canaries have run v2 |",
        "| Canary | placement default/canary-placement first, the others once every canary has run v2 for 1h; "
        "now: canary cluster1 runs v1 |",
    ):
        assert row in pull["body"]
    assert entry(report, "cloudnative-pg")[0] == "proposed", "extensions are proposed beside add-ons"


def test_the_others_are_held_while_the_canary_soaks_and_proposed_after_the_soak(hub: World) -> None:
    sync(hub)
    hub.merge(BRANCH)
    running = ("v2", "Succeed", "2026-03-01T11:30:00Z")
    report = sync(hub, canary=running)
    held = [e for e in report.entries if e.subject == SUBJECT]
    assert [(e.action, e.reason, e.ready_at) for e in held] == [
        (
            "held",
            "placement default/global-placement, cluster cluster3 wait for the canary placement "
            "default/canary-placement: canaries run v2 successfully; the soak of 1h ends at 2026-03-01T12:30:00Z; "
            f"branch {BRANCH} deleted until then",
            "2026-03-01T12:30:00Z",
        )
    ]
    assert BRANCH not in hub.branches(), "the merged branch proposed nothing new"
    hub.now += datetime.timedelta(minutes=20)
    assert entry(sync(hub, canary=running))[0] == "held"
    hub.now += datetime.timedelta(minutes=15)
    report = sync(hub, canary=running)
    assert entry(report) == (
        "proposed",
        "v2 is the newest supported version (v1, v2, from the cluster); moves placement default/global-placement from "
        "v1, cluster cluster3 from v1.",
    )
    hub.pull()
    assert hub.show(BRANCH, CMA) == (hub.human / CMA).read_text().replace(
        "installVersion: v1  # pinned", "installVersion: v2  # pinned"
    )
    assert hub.show(BRANCH, MCAS) == original(MCAS).replace("installVersion: v1", "installVersion: v2")
    assert [p["title"] for p in hub.github.open_pulls() if p["head"]["ref"] == BRANCH] == [
        "Upgrade add-on helloworld to v2"
    ]


def test_a_failed_canary_holds_the_others_with_the_gate_message_and_no_ready_time(hub: World) -> None:
    sync(hub)
    hub.merge(BRANCH)
    sync(hub, canary=("v2", "Failed", "2026-03-01T11:00:00Z"))
    hub.now += datetime.timedelta(days=3)
    report = sync(hub, canary=("v2", "Failed", "2026-03-01T11:00:00Z"))
    [held] = [e for e in report.entries if e.subject == SUBJECT]
    assert (held.action, held.reason, held.ready_at) == (
        "held",
        "placement default/global-placement, cluster cluster3 wait for the canary placement default/canary-placement: "
        "canary cluster1 does not run v2 successfully (Failed)",
        None,
    )


def test_a_version_that_is_not_supported_or_not_a_version_is_never_proposed(hub: World) -> None:
    first, second = original(MCAS).split("---\n")
    hub.write(MCAS, first + "---\n" + second.replace("installVersion: v1", "installVersion: v3"))
    hub.push("cluster3 tries v3, which the add-on does not list")
    report = sync(hub, supported=["v1", "v2", "latest", "v10-"])
    assert entry(report) == (
        "proposed",
        "v2 is the newest supported version (v1, v2, latest, v10-, from the cluster); moves placement "
        "default/canary-placement (canary) from v1, cluster cluster1 (canary) from v1; placement "
        "default/global-placement waits for the canary placement default/canary-placement: canary cluster1 runs v1.",
    )
    branch = (hub.show(BRANCH, CMA) or "") + (hub.show(BRANCH, MCAS) or "")
    assert "latest" not in branch
    assert "v10-" not in branch
    assert "installVersion: v3" in branch, "a pin past the target is its owner's (no rollback is proposed)"


def test_nothing_is_proposed_when_no_newer_version_is_supported(hub: World) -> None:
    report = sync(hub, supported=["v1"])
    assert entry(report) == ("unchanged", "every pinned installVersion is at or past v1, the newest supported")
    assert BRANCH not in hub.branches()


def test_a_second_run_with_nothing_new_changes_nothing(hub: World) -> None:
    sync(hub)
    branches, requests = hub.branches(), len(hub.github.requests)
    hub.now += datetime.timedelta(hours=5)
    report = sync(hub)
    assert hub.branches() == branches
    assert all(r.startswith("GET ") for r in hub.github.requests[requests:])
    assert entry(report) == ("unchanged", f"branch {BRANCH} already proposes this")


def test_a_newer_supported_version_replaces_the_open_proposal(hub: World) -> None:
    sync(hub)
    report = sync(hub, supported=["v1", "v2", "v3"])
    assert entry(report)[0] == "proposed"
    assert 'installVersion: "v3"' in (hub.show(BRANCH, CMA) or "")
    [pull] = [p for p in hub.github.open_pulls() if p["head"]["ref"] == BRANCH]
    assert pull["title"] == "Upgrade add-on helloworld to v3 on its canaries"


def test_a_branch_a_human_committed_to_is_left_alone(hub: World) -> None:
    sync(hub)
    git(hub.human, "fetch", "--quiet")
    git(hub.human, "checkout", "--quiet", "-B", "review", f"origin/{BRANCH}")
    hub.write(MCAS, (hub.human / MCAS).read_text() + "# reviewed\n")
    git(hub.human, "commit", "--quiet", "-am", "review")
    git(hub.human, "push", "--quiet", "origin", f"HEAD:{BRANCH}")
    head = hub.branches()[BRANCH]
    report = sync(hub, supported=["v1", "v2", "v3"])
    assert entry(report) == ("skipped", f"branch {BRANCH} has commits by {HUMAN}: left alone")
    assert hub.branches()[BRANCH] == head


def test_a_stage_whose_pull_request_was_closed_unmerged_is_not_proposed_again(hub: World) -> None:
    sync(hub)
    number = next(n for n, p in hub.github.pulls.items() if p["head"]["ref"] == BRANCH)
    hub.github.close(number)
    git(hub.remote, "branch", "-D", BRANCH)
    assert entry(sync(hub)) == (
        "skipped",
        f"pull request #{number} ({CANARY_TITLE}) was closed without merging: not proposed again",
    )
    assert BRANCH not in hub.branches()


def test_an_obsolete_proposal_is_withdrawn(hub: World) -> None:
    sync(hub)
    git(hub.human, "rm", "--quiet", "-r", "clusters/hub/addons")
    hub.push("the helloworld add-on leaves this hub")
    report = sync(hub)
    action, reason = entry(report)
    assert (action, reason) == (
        "withdrawn",
        f"nothing to propose any more (add-on helloworld is not in the repository any more): branch {BRANCH} deleted",
    )
    assert BRANCH not in hub.branches()
    assert all(p["head"]["ref"] != BRANCH for p in hub.github.open_pulls())


def test_an_upgrade_done_by_hand_withdraws_the_proposal(hub: World) -> None:
    sync(hub)
    for path in (CMA, MCAS):
        text = (hub.human / path).read_text()
        hub.write(path, text.replace("installVersion: v1", "installVersion: v2").replace('"v1"', '"v2"'))
    hub.push("everything to v2 by hand")
    assert entry(sync(hub)) == (
        "withdrawn",
        "nothing to propose any more (every pinned installVersion is at or past v2, the newest supported): "
        f"branch {BRANCH} deleted",
    )


def test_an_invalid_manifest_is_reported_with_file_and_line_while_the_rest_proceed(hub: World) -> None:
    broken = original(CMA).replace("name: helloworld", "name: broken")
    broken = broken.replace('installVersion: "v1"', "installVersion: 2")
    hub.write("clusters/hub/addons/broken.yaml", broken)
    hub.write("clusters/hub/addons/unreadable.yaml", "kind: ManagedClusterAddOn\nmetadata: {name: [\n")
    hub.write("clusters/hub/addons/nameless.yaml", "kind: ManagedClusterAddOn\nmetadata: {name: x}\n")
    decision = "kind: PlacementDecision\nmetadata: {name: d, namespace: default}\nstatus: {decisions: cluster1}\n"
    hub.write("clusters/hub/addons/decision.yaml", "# decided by hand\n---\n" + decision)
    hub.push("bad add-on files")
    report = sync(hub)
    invalid = {(e.subject, e.reason, e.file) for e in report.entries if e.action == "invalid"}
    assert invalid == {
        (
            "addon/broken",
            "clusters/hub/addons/broken.yaml:24: spec.installStrategy.placements[1].addonTemplate.installVersion "
            "must be a string",
            "clusters/hub/addons/broken.yaml",
        ),
        (
            "clusters/hub/addons/unreadable.yaml:3",
            "invalid YAML: did not find expected node content",
            "clusters/hub/addons/unreadable.yaml",
        ),
        (
            "clusters/hub/addons/decision.yaml:3",
            "status.decisions must be a list of mappings",
            "clusters/hub/addons/decision.yaml",
        ),
        (
            "clusters/hub/addons/nameless.yaml:1",
            "a ManagedClusterAddOn needs metadata.name and metadata.namespace",
            "clusters/hub/addons/nameless.yaml",
        ),
    }
    assert entry(report)[0] == "proposed"
    assert entry(report, "cloudnative-pg")[0] == "proposed"


def test_a_hub_without_the_add_on_skips_it_and_a_missing_cluster_is_one_error(hub: World) -> None:
    objects = [o for o in hub_objects() if o["kind"] != "ClusterManagementAddOn"]
    report = hub.sync(cluster=FakeHub(objects))
    assert entry(report) == (
        "unresolved",
        "ClusterManagementAddOn helloworld is not in the cluster: its supported versions are unknown",
    )
    with pytest.raises(InputError, match=r"^upgrade-gate.yaml: addons.installed: cluster needs a cluster"):
        hub.sync()


def test_offline_the_manifests_status_and_placement_decisions_decide(world: World) -> None:
    """An add-on-only repository read offline: the canary stage is merged and soaked (status in Git)."""
    shutil.copytree(ADDONS / "clusters", world.human / "clusters", dirs_exist_ok=True)
    world.write(CMA, original(CMA).replace('installVersion: "v1"', 'installVersion: "v2"'))
    observed = hub_objects(canary=("v2", "Succeed", "2026-02-28T00:00:00Z"))
    decisions = [o for o in observed if o["kind"] == "PlacementDecision"]
    world.write("clusters/hub/addons/decisions.yaml", yaml.safe_dump_all(decisions))
    first, second = original(MCAS).split("---\n")
    status = yaml.safe_dump({"status": observed[-1]["status"]})
    world.write(MCAS, first.replace("installVersion: v1", "installVersion: v2") + status + "---\n" + second)
    forge = (world.human / "upgrade-gate.yaml").read_text().split("forge:", 1)[1]
    world.write("upgrade-gate.yaml", "addons:\n  manifests: [clusters/hub/addons]\n  canarySoak: 24h\nforge:" + forge)
    world.push("an add-on-only repository")
    report = world.sync()
    assert [e.subject for e in report.entries] == [SUBJECT]
    assert entry(report) == (
        "proposed",
        "v2 is the newest supported version (v1, v2, from the manifests' status); moves placement "
        "default/global-placement from v1, cluster cluster3 from v1.",
    )


def test_the_pull_request_says_whether_the_bundled_policies_would_admit_applying_it(hub: World) -> None:
    # Argo CD applies what was reviewed in Git: one of the settings' gitopsAppliers, so it may upgrade add-ons
    settings = (ROOT / "policies" / "settings.yaml").read_text()
    hub.write("gate/settings.yaml", settings.replace('gitopsAppliers: ""', f'gitopsAppliers: "{ARGOCD}"'))
    names = ("addon-install-version.yaml", "addon-placements.yaml")
    check = {"policies": [*(str(ROOT / "policies" / name) for name in names), "gate/settings.yaml"]}
    soak = "installed: cluster\n  canarySoak: 0s\n"
    hub.set_config(lambda text: text.replace("installed: cluster\n", soak) + f"policyCheck: {json.dumps(check)}\n")
    hub.push("check add-on updates against the bundled policies; no soak in the sync loop")
    sync(hub)
    [pull] = [p for p in hub.github.open_pulls() if p["head"]["ref"] == BRANCH]
    assert f"| Policies | would admit applying it today when applied by {ARGOCD} |" in pull["body"]
    hub.merge(BRANCH)
    sync(hub, canary=("v2", "Succeed", "2026-03-01T11:30:00Z"))
    [pull] = [p for p in hub.github.open_pulls() if p["head"]["ref"] == BRANCH]
    assert pull["title"] == "Upgrade add-on helloworld to v2"
    assert (
        f"| Policies | would deny applying it today when applied by {ARGOCD}: ClusterManagementAddOn helloworld: "
        "ValidatingAdmissionPolicy 'upgrade-gate-addon-placements' with binding 'upgrade-gate-addon-placements' "
        "denied request: add-on helloworld waits for the canary placement default/canary-placement to run its target "
        "for 1h: placement default/global-placement may not upgrade to v2: canaries run v2 successfully; the soak of "
        "1h ends at 2026-03-01T12:30:00Z; ManagedClusterAddOn cluster3/helloworld: ValidatingAdmissionPolicy "
        "'upgrade-gate-addon-install-version' with binding 'upgrade-gate-addon-install-version' denied request: "
        "add-on helloworld on cluster cluster3 may not upgrade to v2 before the canary placement "
        "default/canary-placement has run it for 1h: canaries run v2 successfully; the soak of 1h ends at "
        "2026-03-01T12:30:00Z |"
    ) in pull["body"]
