"""``grouping: per-cluster`` on real git repositories and the fake forges: one branch and pull request for every
ClusterExtensionRevision change of the cluster, as Renovate's ``groupName`` gives one branch per group.

The expectations are the rules the grouping promises, read off the real catalog (in channel stable-v1
cloudnative-pg.v1.30.0 replaces cloudnative-pg.v1.29.2; in channel v5 postgresoperator.v5.8.7 replaces 5.8.6 and
5.8.8 replaces 5.8.7): a revision reads exactly as its own branch would write it; switching the setting replaces
the other scheme's bot branches (their pull requests closed with Renovate's ``- autoclosed``) and keeps every
``availableSince``; a person's commit freezes the group's branch; members come, update in place and leave; an
empty group is withdrawn; a group a person closed declines exactly the versions it listed.
"""

from __future__ import annotations

import datetime

import pytest
import yaml

from tests.sync.conftest import BOT, HUMAN, World, git
from webhook.io.git import PushResult, RefUpdate, Repo
from webhook.plan import Action
from webhook.plan.body import proposed_titles
from webhook.sync.report import Entry, Report

GROUP = "upgrade-gate/cluster/clusters/prod/revisions"
TITLE = "Upgrade ClusterExtensions of clusters/prod/revisions"
CNPG = "upgrade-gate/cloudnative-pg"
CRUNCHY = "upgrade-gate/crunchy-postgres-operator"
CNPG_REVISION = "clusters/prod/revisions/cloudnative-pg-1.30.0.yaml"
CNPG_MANIFEST = "clusters/prod/extensions/cloudnative-pg.yaml"
CRUNCHY_MANIFEST = "clusters/prod/extensions/crunchy-postgres-operator.yaml"
START = datetime.datetime(2026, 3, 1, 12, 0, 0, tzinfo=datetime.UTC)


def entries(report: Report) -> dict[str, Entry]:
    return {e.subject: e for e in report.entries}


def grouping(world: World, value: str) -> None:
    world.set_config(lambda text: text.split("grouping:")[0].rstrip("\n") + f"\ngrouping: {value}\n")


def unpin_crunchy(world: World, installed: str = "5.8.7", *, self_certified: bool = False) -> None:
    """crunchy-postgres-operator in range 5.x with ``installed`` installed (and any version in range allowed)."""
    path = world.human / CRUNCHY_MANIFEST
    text = path.read_text().replace('version: "5.8.7"', 'version: ">=5.8.0, <6.0.0"')
    if self_certified:
        text = text.replace("channels: [v5]", "channels: [v5]\n      upgradeConstraintPolicy: SelfCertified")
    path.write_text(
        text.replace("postgresoperator.v5.8.7", f"postgresoperator.v{installed}").replace(
            "version: 5.8.7", f"version: {installed}"
        )
    )


def pin(world: World, manifest: str, old: str, new: str) -> None:
    path = world.human / manifest
    path.write_text(path.read_text().replace(old, new))


def spec(world: World, ref: str, path: str) -> dict[str, object]:
    text = world.show(ref, path)
    assert text is not None, f"{path} is not on {ref}"
    return yaml.safe_load(text)["spec"]  # type: ignore[no-any-return]


def test_every_due_upgrade_of_the_cluster_is_proposed_on_one_branch_with_one_pull_request(forge_world: World) -> None:
    world = forge_world
    unpin_crunchy(world)
    grouping(world, "per-cluster")
    world.push("group the cluster's upgrades")
    found = entries(world.sync())
    [pull] = world.forge.open_pulls()
    url = pull.get("html_url") or pull.get("web_url")
    for subject, to in (("cloudnative-pg", "1.30.0"), ("crunchy-postgres-operator", "5.8.8")):
        assert (found[subject].action, found[subject].branch, found[subject].to_version) == ("proposed", GROUP, to)
        assert found[subject].pull_request == url
    assert sorted(world.branches()) == ["main", GROUP]
    assert world.files(GROUP) == [".gitkeep", "cloudnative-pg-1.30.0.yaml", "crunchy-postgres-operator-5.8.8.yaml"]
    assert git(world.remote, "rev-parse", f"{GROUP}^") == git(world.remote, "rev-parse", "main"), "one commit"
    assert spec(world, GROUP, CNPG_REVISION)["availableSince"] == "2026-03-01T12:00:00Z"
    assert world.show(GROUP, CNPG_MANIFEST) == world.show("main", CNPG_MANIFEST), "the constraint is never rewritten"
    body = pull.get("body") or pull.get("description") or ""
    assert pull["title"] == TITLE
    for line in (
        "### Upgrade cloudnative-pg to 1.30.0",
        "| From | cloudnative-pg.v1.29.2 (1.29.2) |",
        "| To | cloudnative-pg.v1.30.0 (1.30.0) |",
        "### Upgrade crunchy-postgres-operator to 5.8.8",
        "| From | postgresoperator.v5.8.7 (5.8.7) |",
        "| To | postgresoperator.v5.8.8 (5.8.8) |",
    ):
        assert line in body.splitlines()
    assert proposed_titles(body) == (
        "Upgrade cloudnative-pg to 1.30.0",
        "Upgrade crunchy-postgres-operator to 5.8.8",
    )


def test_a_group_reads_as_each_extension_s_own_branch_would_and_a_second_run_writes_nothing(world: World) -> None:
    unpin_crunchy(world)
    world.push("two upgrades due")
    world.sync()
    own = {path: world.show(branch, path) for branch, path in ((CNPG, CNPG_REVISION),)}
    git(world.remote, "branch", "-D", CNPG, CRUNCHY)
    world.github.pulls.clear()
    grouping(world, "per-cluster")
    world.push("group")
    world.sync()
    assert {path: world.show(GROUP, path) for path in own} == own
    head, requests = world.branches()[GROUP], len(world.github.requests)
    world.now += datetime.timedelta(hours=5)
    found = entries(world.sync())
    assert world.branches()[GROUP] == head
    assert all(r.startswith("GET ") for r in world.github.requests[requests:])
    assert (found["cloudnative-pg"].action, found["cloudnative-pg"].reason) == (
        "unchanged",
        f"branch {GROUP} already proposes this",
    )


def test_switching_to_per_cluster_replaces_the_extension_branches_and_keeps_available_since(world: World) -> None:
    world.sync()
    assert list(world.github.open_pulls()) == [world.github.pulls[1]]
    proposed = world.show(CNPG, CNPG_REVISION)
    world.now += datetime.timedelta(days=1)
    unpin_crunchy(world)
    grouping(world, "per-cluster")
    world.push("group, and crunchy in range")
    found = entries(world.sync())
    assert world.show(GROUP, CNPG_REVISION) == proposed, "availableSince and every other byte kept"
    assert spec(world, GROUP, "clusters/prod/revisions/crunchy-postgres-operator-5.8.8.yaml")["availableSince"] == (
        "2026-03-02T12:00:00Z"
    )
    assert sorted(world.branches()) == ["main", GROUP]
    assert world.github.pulls[1]["state"] == "closed"
    assert world.github.pulls[1]["title"] == "Upgrade cloudnative-pg to 1.30.0 - autoclosed"
    assert [p["title"] for p in world.github.open_pulls()] == [TITLE]
    assert found["cloudnative-pg"].reason.endswith(
        f"; replaces branch {CNPG} (pull request {world.github.pulls[1]['html_url']} closed)"
    )


def test_switching_back_to_per_extension_replaces_the_group_and_keeps_available_since(world: World) -> None:
    unpin_crunchy(world)
    grouping(world, "per-cluster")
    world.push("group")
    world.sync()
    grouped = world.show(GROUP, CNPG_REVISION)
    world.now += datetime.timedelta(days=1)
    grouping(world, "per-extension")
    world.push("one pull request per extension again")
    found = entries(world.sync())
    assert sorted(world.branches()) == sorted(["main", CNPG, CRUNCHY])
    assert world.show(CNPG, CNPG_REVISION) == grouped
    assert spec(world, CRUNCHY, "clusters/prod/revisions/crunchy-postgres-operator-5.8.8.yaml")["availableSince"] == (
        "2026-03-01T12:00:00Z"
    )
    assert world.github.pulls[1]["title"] == f"{TITLE} - autoclosed"
    assert sorted(p["title"] for p in world.github.open_pulls()) == [
        "Upgrade cloudnative-pg to 1.30.0",
        "Upgrade crunchy-postgres-operator to 5.8.8",
    ]
    assert found["crunchy-postgres-operator"].action == "proposed"
    assert found["crunchy-postgres-operator"].reason.endswith(
        f"; replaces branch {GROUP} (pull request {world.github.pulls[1]['html_url']} closed)"
    )


def test_an_extension_branch_a_person_committed_to_stays_out_of_the_group_and_is_left_alone(world: World) -> None:
    world.sync()
    world.approve_on(CNPG, CNPG_REVISION)
    head = world.branches()[CNPG]
    unpin_crunchy(world)
    grouping(world, "per-cluster")
    world.push("group")
    found = entries(world.sync())
    assert found["cloudnative-pg"].action == "skipped"
    assert found["cloudnative-pg"].reason == f"branch {CNPG} has commits by {HUMAN}: left alone"
    assert world.branches()[CNPG] == head
    assert world.github.pulls[1]["state"] == "open"
    assert world.files(GROUP) == [".gitkeep", "crunchy-postgres-operator-5.8.8.yaml"]


def test_a_group_branch_a_person_committed_to_is_left_alone(world: World) -> None:
    unpin_crunchy(world)
    grouping(world, "per-cluster")
    world.push("group")
    world.sync()
    world.approve_on(GROUP, CNPG_REVISION)
    head = world.branches()[GROUP]
    world.now += datetime.timedelta(days=1)
    pin(world, CNPG_MANIFEST, 'version: ">=1.29.0, <2.0.0"', 'version: "1.29.2"')
    world.push("pin cloudnative-pg: the group would change, but a person owns the branch now")
    found = entries(world.sync())
    assert found["crunchy-postgres-operator"] == Entry(
        "crunchy-postgres-operator", Action.SKIPPED, f"branch {GROUP} has commits by {HUMAN}: left alone", GROUP
    )
    assert world.branches()[GROUP] == head
    assert [p["number"] for p in world.github.open_pulls()] == [1]


def test_a_newer_version_of_one_member_updates_the_group_in_place(world: World) -> None:
    unpin_crunchy(world, "5.8.6", self_certified=True)
    world.copy_catalog({"crunchy-postgres-operator": "5.8.7"})
    grouping(world, "per-cluster")
    world.push("crunchy 5.8.6 installed, the catalog up to 5.8.7")
    world.sync()
    assert world.files(GROUP) == [".gitkeep", "cloudnative-pg-1.30.0.yaml", "crunchy-postgres-operator-5.8.7.yaml"]
    proposed = world.show(GROUP, CNPG_REVISION)
    world.now += datetime.timedelta(days=1)
    world.copy_catalog()
    world.push("the catalog now has 5.8.8")
    found = entries(world.sync())
    assert world.files(GROUP) == [".gitkeep", "cloudnative-pg-1.30.0.yaml", "crunchy-postgres-operator-5.8.8.yaml"]
    assert world.show(GROUP, CNPG_REVISION) == proposed
    assert spec(world, GROUP, "clusters/prod/revisions/crunchy-postgres-operator-5.8.8.yaml")["availableSince"] == (
        "2026-03-02T12:00:00Z"
    )
    assert git(world.remote, "rev-parse", f"{GROUP}^") == git(world.remote, "rev-parse", "main")
    assert (found["crunchy-postgres-operator"].action, found["cloudnative-pg"].action) == ("updated", "unchanged")
    [pull] = world.github.open_pulls()
    assert pull["number"] == 1
    assert "| To | postgresoperator.v5.8.8 (5.8.8) |" in pull["body"].splitlines()
    assert "Upgrade crunchy-postgres-operator to 5.8.7" not in pull["body"]


def test_a_member_no_longer_due_leaves_the_group_and_an_empty_group_is_withdrawn(world: World) -> None:
    unpin_crunchy(world)
    grouping(world, "per-cluster")
    world.push("group")
    world.sync()
    pin(world, CNPG_MANIFEST, 'version: ">=1.29.0, <2.0.0"', 'version: "1.29.2"')
    world.push("pin cloudnative-pg")
    found = entries(world.sync())
    assert world.files(GROUP) == [".gitkeep", "crunchy-postgres-operator-5.8.8.yaml"]
    assert found["cloudnative-pg"].action == "unchanged"
    [pull] = world.github.open_pulls()
    assert (pull["number"], proposed_titles(pull["body"])) == (1, ("Upgrade crunchy-postgres-operator to 5.8.8",))
    pin(world, CRUNCHY_MANIFEST, 'version: ">=5.8.0, <6.0.0"', 'version: "5.8.7"')
    world.push("pin crunchy-postgres-operator")
    found = entries(world.sync())
    assert found["cluster/clusters/prod/revisions"].action == "withdrawn"
    assert found["cluster/clusters/prod/revisions"].reason == (
        f"nothing to propose any more (no ClusterExtensionRevision change is due): branch {GROUP} deleted"
    )
    assert list(world.branches()) == ["main"]
    assert world.github.pulls[1]["title"] == f"{TITLE} - autoclosed"


def test_a_merged_group_is_reported_merged_and_its_branch_deleted(world: World) -> None:
    unpin_crunchy(world)
    grouping(world, "per-cluster")
    world.push("group")
    world.sync()
    world.merge(GROUP)
    world.github.merge(1)
    found = entries(world.sync())
    assert found["cluster/clusters/prod/revisions"].action == "merged"
    assert list(world.branches()) == ["main"]
    assert world.github.pulls[1]["title"] == TITLE


def test_a_group_a_person_closed_declines_exactly_the_versions_it_listed(world: World) -> None:
    world.copy_catalog({"crunchy-postgres-operator": "5.8.7"})
    unpin_crunchy(world, "5.8.6", self_certified=True)
    grouping(world, "per-cluster")
    world.push("group")
    world.sync()
    world.github.close(1)
    found = entries(world.sync())
    declined = (
        f"pull request #1 ({TITLE}) was closed without merging: Upgrade cloudnative-pg to 1.30.0 is not proposed again"
    )
    assert (found["cloudnative-pg"].action, found["cloudnative-pg"].reason) == ("skipped", declined)
    assert found["crunchy-postgres-operator"].action == "skipped"
    assert list(world.branches()) == ["main"], "the declined group's branch is withdrawn"
    world.copy_catalog()
    world.push("the catalog now has crunchy-postgres-operator 5.8.8")
    found = entries(world.sync())
    assert found["cloudnative-pg"].action == "skipped"
    assert found["crunchy-postgres-operator"].action == "proposed"
    assert world.files(GROUP) == [".gitkeep", "crunchy-postgres-operator-5.8.8.yaml"]
    [pull] = world.github.open_pulls()
    assert (pull["number"], pull["title"]) == (2, TITLE)


def test_a_version_declined_on_its_own_branch_stays_declined_in_the_group(world: World) -> None:
    world.sync()
    world.github.close(1)
    git(world.remote, "branch", "-D", CNPG)
    unpin_crunchy(world)
    grouping(world, "per-cluster")
    world.push("group")
    found = entries(world.sync())
    assert found["cloudnative-pg"].reason == (
        "pull request #1 (Upgrade cloudnative-pg to 1.30.0) was closed without merging: not proposed again"
    )
    assert world.files(GROUP) == [".gitkeep", "crunchy-postgres-operator-5.8.8.yaml"]


def test_a_dry_run_of_a_group_shows_each_member_s_diff_and_writes_nothing(world: World) -> None:
    unpin_crunchy(world)
    grouping(world, "per-cluster")
    world.push("group")
    found = entries(world.sync(dry_run=True))
    diff = found["cloudnative-pg"].diff
    assert diff is not None and diff.startswith(f"--- /dev/null\n+++ b/{CNPG_REVISION}\n")
    assert "crunchy" not in diff
    assert list(world.branches()) == ["main"]
    assert all(r.startswith("GET ") for r in world.github.requests)


def test_outside_the_schedule_every_member_waits(world: World) -> None:
    unpin_crunchy(world)
    grouping(world, "per-cluster")
    world.set_config(lambda text: text + 'schedule: ["Sat 02:00-06:00"]\n')
    world.push("group on Saturdays")
    found = entries(world.sync())
    assert {(s, e.action, e.ready_at) for s, e in found.items() if e.branch == GROUP} == {
        ("cloudnative-pg", "waiting", "2026-03-07T02:00:00Z"),
        ("crunchy-postgres-operator", "waiting", "2026-03-07T02:00:00Z"),
    }
    assert list(world.branches()) == ["main"]


@pytest.mark.parametrize("value", ["per-extension", None])
def test_per_extension_is_the_default_and_today_s_branch_naming(world: World, value: str | None) -> None:
    if value is not None:
        grouping(world, value)
        world.push("explicit default")
    world.sync()
    assert sorted(world.branches()) == ["main", CNPG]


def test_an_extension_branch_stays_until_the_group_replacing_it_is_pushed(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    world.sync()
    proposed = world.show(CNPG, CNPG_REVISION)
    grouping(world, "per-cluster")
    world.push("group")
    original = Repo.push
    races: list[str] = []

    def racing(self: Repo, updates: list[RefUpdate], prefix: str, base: str) -> PushResult:
        if any(u.branch == GROUP for u in updates):  # another replica of the bot pushes the group first
            races.append(f"race {len(races)}")
            sha = git(world.remote, "commit-tree", "main^{tree}", "-p", "main", "-m", races[-1], env=BOT).strip()
            git(world.remote, "update-ref", f"refs/heads/{GROUP}", sha)
        return original(self, updates, prefix, base)

    monkeypatch.setattr(Repo, "push", racing)
    found = entries(world.sync())
    assert (found["cloudnative-pg"].action, found["cloudnative-pg"].reason.split(",")[0]) == (
        "failed",
        "push rejected 3 times",
    )
    assert world.show(CNPG, CNPG_REVISION) == proposed, "the proposal it would replace is still there"
    assert world.github.pulls[1]["state"] == "open"
    monkeypatch.setattr(Repo, "push", original)
    world.now += datetime.timedelta(days=1)
    assert entries(world.sync())["cloudnative-pg"].action == "proposed"
    assert sorted(world.branches()) == ["main", GROUP]
    assert world.show(GROUP, CNPG_REVISION) == proposed
