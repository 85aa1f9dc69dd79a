"""``run_cycle`` on real git repositories (a bare remote and clones), the real catalog and a fake GitHub.

Expectations come from the ClusterExtensionRevision lifecycle (create / update with reset / cleanup, pinned
versions), catalog image templates and the sync loop's rules (one branch per extension, idempotency, human commits,
closed pull requests, push races, bad input), read off the real catalog: in channel stable-v1 cloudnative-pg.v1.30.0
replaces cloudnative-pg.v1.29.2; in channel v5 postgresoperator.v5.8.8 replaces postgresoperator.v5.8.7.
"""

from __future__ import annotations

import datetime
import json

import pytest
import yaml

from tests.sync.conftest import BOT, HUMAN, ROOT, World, git
from webhook.errors import GitError, InputError
from webhook.io.git import Repo
from webhook.sync.cycle import workdir_lock
from webhook.sync.report import Report

BRANCH = "upgrade-gate/cloudnative-pg"
REVISION = "clusters/prod/revisions/cloudnative-pg-1.30.0.yaml"
EXTENSION = "clusters/prod/extensions/cloudnative-pg.yaml"


def entry(report: Report, subject: str) -> tuple[str, str]:
    found = [e for e in report.entries if e.subject == subject]
    assert len(found) == 1, report.entries
    return found[0].action, found[0].reason


def spec(text: str | None) -> dict[str, object]:
    assert text is not None
    return yaml.safe_load(text)["spec"]  # type: ignore[no-any-return]


def set_status(world: World, version: str) -> None:
    path = world.human / EXTENSION
    text = path.read_text()
    text = text.replace("cloudnative-pg.v1.29.2", f"cloudnative-pg.v{version}").replace(
        "version: 1.29.2", f"version: {version}"
    )
    path.write_text(text)


def test_an_upgrade_in_range_is_proposed_on_its_own_branch_with_a_pull_request(world: World) -> None:
    report = world.sync()
    assert entry(report, "cloudnative-pg") == (
        "proposed",
        "Upgrade available: cloudnative-pg.v1.30.0 replaces cloudnative-pg.v1.29.2 in channel stable-v1.",
    )
    assert world.show(BRANCH, REVISION) == (
        "apiVersion: olm.operatorframework.io/v1\n"
        "kind: ClusterExtensionRevision\n"
        "metadata:\n"
        '  name: "cloudnative-pg-1.30.0"\n'
        "  labels:\n"
        '    clusterextension: "cloudnative-pg"\n'
        "spec:\n"
        "  clusterExtensionRef:\n"
        '    name: "cloudnative-pg"\n'
        '  version: "1.30.0"\n'
        "  bundleMetadata:\n"
        '    name: "cloudnative-pg.v1.30.0"\n'
        '    version: "1.30.0"\n'
        '  availableSince: "2026-03-01T12:00:00Z"\n'
        "  approved: false\n"
    )
    assert world.show(BRANCH, EXTENSION) == world.show("main", EXTENSION), "the constraint is never rewritten"
    assert git(world.remote, "rev-parse", f"{BRANCH}^") == git(world.remote, "rev-parse", "main")
    [pull] = world.github.open_pulls()
    assert (pull["title"], pull["head"]["ref"], pull["base"]["ref"]) == (
        "Upgrade cloudnative-pg to 1.30.0",
        BRANCH,
        "main",
    )
    assert [label["name"] for label in pull["labels"]] == ["upgrade-gate"]
    assert [r["login"] for r in pull["requested_reviewers"]] == ["platform-team"]
    for line in (
        "| From | cloudnative-pg.v1.29.2 (1.29.2) |",
        "| To | cloudnative-pg.v1.30.0 (1.30.0) |",
        "| Upgrade edge | replaces: cloudnative-pg.v1.30.0 replaces cloudnative-pg.v1.29.2 in channel stable-v1 |",
        "| Channel | stable-v1 |",
        "| Catalog | certified-operators |",
        "| Available since | 2026-03-01T12:00:00Z |",
    ):
        assert line in pull["body"]


def test_a_pinned_version_gets_no_revision_and_no_branch(world: World) -> None:
    report = world.sync()
    assert entry(report, "crunchy-postgres-operator") == (
        "unchanged",
        "version pinned to 5.8.7 (no revision for a pinned version)",
    )
    assert "upgrade-gate/crunchy-postgres-operator" not in world.branches()


def test_a_second_run_with_nothing_new_changes_nothing(world: World) -> None:
    world.sync()
    branches = world.branches()
    requests = len(world.github.requests)
    world.now += datetime.timedelta(hours=5)
    report = world.sync()
    assert world.branches() == branches
    assert all(r.startswith("GET ") for r in world.github.requests[requests:])
    assert entry(report, "cloudnative-pg") == ("unchanged", f"branch {BRANCH} already proposes this")
    assert spec(world.show(BRANCH, REVISION))["availableSince"] == "2026-03-01T12:00:00Z"


def test_a_newer_upgrade_updates_the_approved_revision_in_place_and_resets_approval(world: World) -> None:
    # SelfCertified: any version in range, no upgrade edge needed; 1.29.1 installed, the catalog stops at 1.29.2.
    path = world.human / EXTENSION
    path.write_text(
        path.read_text().replace(
            "channels: [stable-v1]", "channels: [stable-v1]\n      upgradeConstraintPolicy: SelfCertified"
        )
    )
    set_status(world, "1.29.1")
    world.copy_catalog({"cloudnative-pg": "1.29.2"})
    world.push("cloudnative-pg 1.29.1, catalog up to 1.29.2")
    assert entry(world.sync(), "cloudnative-pg")[0] == "proposed"
    world.merge(BRANCH)
    old = "clusters/prod/revisions/cloudnative-pg-1.29.2.yaml"
    world.write(old, (world.human / old).read_text().replace("approved: false", "approved: true"))
    world.copy_catalog()
    world.push("approve 1.29.2; the catalog now has 1.30.0")
    world.now += datetime.timedelta(days=2)
    report = world.sync()
    assert entry(report, "cloudnative-pg")[0] == "updated"
    # The same object, updated: applied by Argo CD or Flux, an UPDATE the one-revision rule admits.
    assert world.files(BRANCH) == [".gitkeep", "cloudnative-pg-1.29.2.yaml"]
    assert yaml.safe_load(world.show(BRANCH, old) or "")["metadata"]["name"] == "cloudnative-pg-1.29.2"
    assert spec(world.show(BRANCH, old)) | {} == {
        "clusterExtensionRef": {"name": "cloudnative-pg"},
        "version": "1.30.0",
        "bundleMetadata": {"name": "cloudnative-pg.v1.30.0", "version": "1.30.0"},
        "availableSince": "2026-03-03T12:00:00Z",
        "approved": False,
    }
    assert world.show(BRANCH, EXTENSION) == world.show("main", EXTENSION)
    [pull] = world.github.open_pulls()
    assert pull["title"] == "Upgrade cloudnative-pg to 1.30.0"


def test_a_completed_upgrade_removes_its_revision(world: World) -> None:
    world.sync()
    world.merge(BRANCH)
    set_status(world, "1.30.0")
    world.push("cloudnative-pg upgraded to 1.30.0")
    report = world.sync()
    assert entry(report, "cloudnative-pg") == ("removed", "the upgrade to 1.30.0 has completed")
    assert world.show(BRANCH, REVISION) is None
    assert world.show("main", REVISION) is not None, "the base branch is only changed by merging"
    assert world.github.open_pulls()[-1]["title"] == "Remove ClusterExtensionRevision cloudnative-pg-1.30.0"


def test_a_revision_of_a_pinned_extension_is_removed(world: World) -> None:
    world.write(
        "clusters/prod/revisions/crunchy-postgres-operator-5.8.8.yaml",
        (world.human / EXTENSION).read_text()
        and _revision("crunchy-postgres-operator", "5.8.8", "postgresoperator.v5.8.8"),
    )
    world.push("an old proposal")
    report = world.sync()
    assert entry(report, "crunchy-postgres-operator") == (
        "removed",
        "version pinned to 5.8.7 (no revision for a pinned version)",
    )
    assert world.files("upgrade-gate/crunchy-postgres-operator") == [".gitkeep"]


def test_a_branch_a_human_committed_to_is_left_alone_and_reported(world: World) -> None:
    world.sync()
    world.approve_on(BRANCH, REVISION)
    head = world.branches()[BRANCH]
    world.now += datetime.timedelta(days=1)
    report = world.sync()
    assert entry(report, "cloudnative-pg") == ("skipped", f"branch {BRANCH} has commits by {HUMAN}: left alone")
    assert world.branches()[BRANCH] == head


def test_a_version_whose_pull_request_was_closed_unmerged_is_not_proposed_again(world: World) -> None:
    world.sync()
    world.github.close(1)
    git(world.remote, "branch", "-D", BRANCH)
    report = world.sync()
    assert entry(report, "cloudnative-pg") == (
        "skipped",
        "pull request #1 (Upgrade cloudnative-pg to 1.30.0) was closed without merging: not proposed again",
    )
    assert BRANCH not in world.branches()
    assert world.github.open_pulls() == []


def test_an_obsolete_proposal_is_withdrawn_and_its_pull_request_closed(world: World) -> None:
    world.sync()
    path = world.human / EXTENSION
    path.write_text(path.read_text().replace('version: ">=1.29.0, <2.0.0"', 'version: "1.29.2"'))
    world.push("pin cloudnative-pg")
    report = world.sync()
    action, reason = entry(report, "cloudnative-pg")
    assert action == "withdrawn"
    assert reason.endswith(f"branch {BRANCH} deleted")
    assert BRANCH not in world.branches()
    assert world.github.pulls[1]["state"] == "closed"


def test_a_merged_proposal_is_reported_merged_not_withdrawn(world: World) -> None:
    world.sync()
    world.merge(BRANCH)
    world.github.merge(1)
    report = world.sync()
    assert entry(report, "cloudnative-pg") == (
        "merged",
        f"revision cloudnative-pg-1.30.0 is in the base branch: branch {BRANCH} deleted",
    )
    assert BRANCH not in world.branches()
    assert world.github.pulls[1]["title"] == "Upgrade cloudnative-pg to 1.30.0", "a merged pull request is left be"


def test_a_squash_merged_proposal_is_reported_merged(world: World) -> None:
    world.sync()
    world.pull()
    git(world.human, "merge", "--quiet", "--squash", f"origin/{BRANCH}")
    git(world.human, "commit", "--quiet", "-m", "Upgrade cloudnative-pg to 1.30.0 (#1)")
    git(world.human, "push", "--quiet", "origin", "HEAD:main")
    world.github.merge(1)
    assert entry(world.sync(), "cloudnative-pg")[0] == "merged"
    assert BRANCH not in world.branches()


def withdraw_and_propose_again(world: World) -> None:
    """The loop proposes cloudnative-pg 1.30.0, withdraws it once a human pins the extension, and proposes it
    again once unpinned."""
    world.sync()
    path = world.human / EXTENSION
    ranged = path.read_text()
    path.write_text(ranged.replace('version: ">=1.29.0, <2.0.0"', 'version: "1.29.2"'))
    world.push("pin cloudnative-pg")
    assert entry(world.sync(), "cloudnative-pg")[0] == "withdrawn"
    path.write_text(ranged)
    world.push("unpin cloudnative-pg")
    report = world.sync()
    assert entry(report, "cloudnative-pg")[0] == "proposed", "only a pull request a human closed is declined"


def test_a_proposal_the_bot_withdrew_is_proposed_again_when_it_is_due_again(world: World) -> None:
    withdraw_and_propose_again(world)
    assert [p["number"] for p in world.github.open_pulls()] == [2]
    assert world.github.pulls[1]["title"] == "Upgrade cloudnative-pg to 1.30.0 - autoclosed"


def test_a_dry_run_reports_the_plan_with_its_diff_and_pushes_and_writes_nothing(world: World) -> None:
    report = world.sync(dry_run=True)
    [proposed] = [e for e in report.entries if e.subject == "cloudnative-pg"]
    assert (proposed.action, report.dry_run) == ("proposed", True)
    assert proposed.diff is not None
    assert proposed.diff.startswith(f"--- /dev/null\n+++ b/{REVISION}\n@@ -0,0 +1,15 @@\n")
    assert '+  version: "1.30.0"\n' in proposed.diff
    assert list(world.branches()) == ["main"]
    assert all(r.startswith("GET ") for r in world.github.requests)
    assert entry(world.sync(), "cloudnative-pg")[0] == "proposed", "the dry run left nothing behind"


def test_a_dry_run_says_which_branch_it_would_withdraw_and_keeps_it(world: World) -> None:
    world.sync()
    path = world.human / EXTENSION
    path.write_text(path.read_text().replace('version: ">=1.29.0, <2.0.0"', 'version: "1.29.2"'))
    world.push("pin cloudnative-pg")
    action, reason = entry(world.sync(dry_run=True), "cloudnative-pg")
    assert (action, reason.endswith(f"branch {BRANCH} would be deleted (dry run)")) == ("withdrawn", True)
    assert BRANCH in world.branches()
    assert world.github.pulls[1]["state"] == "open"


def test_a_rejected_push_is_retried_from_a_fresh_base(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    original = Repo.push
    calls: list[int] = []

    def racing_push(self: Repo, *args: object, **kwargs: object) -> object:
        if not calls:  # between our fetch and our push, someone pushes to main and creates the proposal branch
            world.write("README.md", "raced\n")
            world.push("a concurrent change")
            git(world.human, "push", "--quiet", "origin", "HEAD:refs/heads/" + BRANCH)
        calls.append(1)
        return original(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(Repo, "push", racing_push)
    report = world.sync()
    assert len(calls) == 2, "the lease rejected the first push; the second, from a fresh fetch, went through"
    assert entry(report, "cloudnative-pg")[0] == "proposed"
    assert git(world.remote, "rev-parse", f"{BRANCH}^") == git(world.remote, "rev-parse", "main")
    assert world.show(BRANCH, "README.md") == "raced\n"


def test_a_push_rejected_every_time_fails_after_three_attempts(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    original = Repo.push
    calls: list[int] = []

    def always_racing(self: Repo, updates: object, prefix: str, base: str) -> object:
        calls.append(1)
        tree = "main^{tree}"
        # another replica of the bot
        sha = git(world.remote, "commit-tree", tree, "-p", "main", "-m", f"race {len(calls)}", env=BOT).strip()
        git(world.remote, "update-ref", f"refs/heads/{BRANCH}", sha)
        return original(self, updates, prefix, base)  # type: ignore[arg-type]

    monkeypatch.setattr(Repo, "push", always_racing)
    report = world.sync()
    action, reason = entry(report, "cloudnative-pg")
    assert (action, reason.split(",")[0]) == ("failed", "push rejected 3 times")
    assert report.problems == 1
    assert len(calls) == 3


def test_a_changed_catalog_image_template_is_proposed_like_an_upgrade(world: World) -> None:
    world.set_config(lambda text: text.replace('kubeVersion: "1.31.4"', 'kubeVersion: "1.32.0"'))
    world.push("the cluster moves to Kubernetes 1.32")
    report = world.sync()
    assert entry(report, "clustercatalog/certified-operators")[0] == "proposed"
    text = world.show(
        "upgrade-gate/clustercatalog/certified-operators", "clusters/prod/catalogs/certified-operators.yaml"
    )
    assert text is not None
    assert "ref: registry.redhat.io/redhat/certified-operator-index:v4.32\n" in text
    assert text.startswith("# Served from fbc/certified-operators"), "comments and layout are kept"


def test_an_unresolvable_template_changes_nothing_and_says_why(world: World) -> None:
    path = world.human / "clusters/prod/catalogs/certified-operators.yaml"
    template = (
        "registry.example.com/catalog:{group:config.openshift.io,version:v1,kind:ClusterVersion,"
        "name:version,namespace:,jsonpath:{.status.desired.version}}"
    )
    path.write_text(
        path.read_text().replace(
            '"registry.redhat.io/redhat/certified-operator-index:v4.{kube_minor_version}"', f'"{template}"'
        )
    )
    world.push("a GVK template")
    report = world.sync()
    assert entry(report, "clustercatalog/certified-operators") == (
        "unresolved",
        "Cannot construct catalog image reference, variable(s) "
        '"{group:config.openshift.io,version:v1,kind:ClusterVersion,name:version,namespace:,jsonpath:'
        "{.status.desired.version}}\" couldn't be resolved",
    )
    assert "upgrade-gate/clustercatalog/certified-operators" not in world.branches()


def test_invalid_manifests_are_reported_by_file_and_line_with_the_reason_while_others_are_processed(
    world: World,
) -> None:
    world.write("clusters/prod/extensions/broken.yaml", "kind: ClusterExtension\nmetadata: {name: [\n")
    world.write(
        "clusters/prod/extensions/no-package.yaml",
        "apiVersion: olm.operatorframework.io/v1\nkind: ClusterExtension\n"
        "metadata:\n  name: x\nspec:\n  source:\n    sourceType: Catalog\n",
    )
    world.push("bad files")
    report = world.sync()
    assert {(e.subject, e.file, e.reason) for e in report.entries if e.action == "invalid"} == {
        (
            "clusters/prod/extensions/broken.yaml:3",
            "clusters/prod/extensions/broken.yaml",
            "invalid YAML: did not find expected node content",
        ),
        (
            "clusters/prod/extensions/no-package.yaml:1",
            "clusters/prod/extensions/no-package.yaml",
            "spec.source.catalog.packageName is required",
        ),
    }
    assert entry(report, "cloudnative-pg")[0] == "proposed"
    assert report.problems == 2


def test_an_extension_whose_package_no_catalog_offers_is_unresolved(world: World) -> None:
    path = world.human / "clusters/prod/extensions/crunchy-postgres-operator.yaml"
    path.write_text(path.read_text().replace("packageName: crunchy-postgres-operator", "packageName: nope"))
    world.push("a package no catalog has")
    report = world.sync()
    assert entry(report, "crunchy-postgres-operator") == (
        "unresolved",
        "package nope is in none of the selected catalogs (certified-operators): error upgrading from currently "
        'installed version "5.8.7": no bundles found for package "nope" matching version "5.8.7" in channels [v5]',
    )
    assert report.problems == 1


def test_a_pull_request_opened_for_a_branch_that_already_proposes_the_change_is_reported(world: World) -> None:
    world.sync()
    world.github.pulls.clear()  # the forge lost it, or opening it failed after the push
    report = world.sync()
    assert entry(report, "cloudnative-pg") == (
        "opened",
        f"pull request opened: branch {BRANCH} already proposes this",
    )
    assert [p["head"]["ref"] for p in world.github.open_pulls()] == [BRANCH]


def test_an_unreachable_forge_fails_before_anything_is_pushed_and_the_next_run_recovers(world: World) -> None:
    world.github.fail_with = 503
    with pytest.raises(GitError, match=r"^github: GET /repos/example-org/clusters/pulls: HTTP 503"):
        world.sync()
    assert list(world.branches()) == ["main"]
    world.github.fail_with = None
    assert entry(world.sync(), "cloudnative-pg")[0] == "proposed"


def test_an_unreachable_remote_fails_and_the_next_run_recovers(world: World) -> None:
    with pytest.raises(GitError, match=r"^git clone: "):
        world.sync(repo=str(world.tmp / "nowhere.git"), workdir=world.tmp / "other")
    assert entry(world.sync(), "cloudnative-pg")[0] == "proposed"


def test_a_missing_config_is_one_clear_error(world: World) -> None:
    git(world.human, "rm", "--quiet", "upgrade-gate.yaml")
    world.push("no config")
    with pytest.raises(InputError, match=r"^upgrade-gate.yaml: not found at the repository root$"):
        world.sync()


def test_two_runs_on_one_workdir_never_race(world: World) -> None:
    with workdir_lock(world.workdir), pytest.raises(GitError, match="another upgrade-gate sync is running"):
        world.sync()


def test_the_none_forge_pushes_branches_only(world: World) -> None:
    world.set_config(lambda text: text.split("forge:")[0] + "forge:\n  type: none\n")
    world.push("no forge")
    report = world.sync()
    assert entry(report, "cloudnative-pg")[0] == "proposed"
    assert BRANCH in world.branches()
    assert world.github.requests == []


def _revision(extension: str, version: str, bundle: str) -> str:
    return (
        "apiVersion: olm.operatorframework.io/v1\nkind: ClusterExtensionRevision\n"
        f"metadata:\n  name: {extension}-{version}\n  labels:\n    clusterextension: {extension}\n"
        f'spec:\n  clusterExtensionRef:\n    name: {extension}\n  version: "{version}"\n'
        f'  bundleMetadata:\n    name: {bundle}\n    version: "{version}"\n'
        '  availableSince: "2026-01-01T00:00:00Z"\n  approved: false\n'
    )


ARGOCD = "system:serviceaccount:argocd:argocd-application-controller"
APPROVERS = (
    "Approvers: members of the groups upgrade-approvers, platform-admins, or of the forge teams example-org/sre."
)


def test_the_pull_request_says_whether_the_bundled_policies_would_admit_the_approval_applied_by_argo_cd(
    world: World,
) -> None:
    settings = (ROOT / "policies" / "settings.yaml").read_text()
    world.write("gate/settings.yaml", settings.replace('gitopsAppliers: ""', f'gitopsAppliers: "{ARGOCD}"'))
    policies = [str(ROOT / "policies" / "revision-approval.yaml"), "gate/settings.yaml"]
    check = {"policies": policies, "teams": {"example-org/sre": "platform-admins", "example-org/web": "web"}}
    world.set_config(lambda text: text + "policyCheck: " + json.dumps(check) + "\n")
    world.push("check approvals against the bundled policies, Argo CD trusted")
    world.sync()
    [pull] = world.github.open_pulls()
    assert (
        f"| Policies | would deny approving it today when applied by {ARGOCD}: ValidatingAdmissionPolicy "
        "'upgrade-gate-revision-approval' with binding 'upgrade-gate-revision-approval' denied request: "
        "cloudnative-pg-1.30.0 became available at 2026-03-01T12:00:00Z; it may be approved after the 24h soak "
        f"period, from 2026-03-02T12:00:00Z. {APPROVERS} |"
    ) in pull["body"]
    world.now += datetime.timedelta(days=2)
    world.sync()
    [pull] = world.github.open_pulls()
    assert f"| Policies | would admit approving it today when applied by {ARGOCD}. {APPROVERS} |" in pull["body"]


def test_the_pull_request_says_the_policies_would_deny_an_approval_applied_by_an_untrusted_applier(
    world: World,
) -> None:
    policies = [str(ROOT / "policies" / "revision-approval.yaml"), str(ROOT / "policies" / "settings.yaml")]
    flux = "system:serviceaccount:flux-system:kustomize-controller"
    check = {"policies": policies, "applier": {"username": flux, "groups": ["system:serviceaccounts"]}}
    world.set_config(lambda text: text + "policyCheck: " + json.dumps(check) + "\n")
    world.push("check approvals against the bundled policies, no trusted applier")
    world.now += datetime.timedelta(days=2)
    world.sync()
    [pull] = world.github.open_pulls()
    assert (
        f"| Policies | would deny approving it today when applied by {flux}: ValidatingAdmissionPolicy "
        "'upgrade-gate-revision-approval' with binding 'upgrade-gate-revision-approval' denied request: "
        f'user "{flux}" may not approve cloudnative-pg-1.30.0: approvers are members of [upgrade-approvers, '
        "platform-admins]. Approvers: members of the groups upgrade-approvers, platform-admins. |"
    ) in pull["body"]


def test_outside_the_schedule_a_due_upgrade_waits_for_the_next_window(world: World) -> None:
    world.set_config(lambda text: text + 'schedule: ["Sat 02:00-06:00"]\n')
    world.push("schedule")
    report = world.sync()  # 2026-03-01 is a Sunday
    [waiting] = [e for e in report.entries if e.subject == "cloudnative-pg"]
    assert (waiting.action, waiting.ready_at) == ("waiting", "2026-03-07T02:00:00Z")
    assert waiting.reason == (
        "waiting for schedule (Sat 02:00-06:00): "
        "Upgrade available: cloudnative-pg.v1.30.0 replaces cloudnative-pg.v1.29.2 in channel stable-v1."
    )
    assert list(world.branches()) == ["main"]
    assert world.github.open_pulls() == []
    world.now = datetime.datetime(2026, 3, 7, 5, 59, tzinfo=datetime.UTC)
    assert entry(world.sync(), "cloudnative-pg")[0] == "proposed"
    world.now = datetime.datetime(2026, 3, 7, 6, 0, tzinfo=datetime.UTC)
    assert entry(world.sync(), "cloudnative-pg") == ("unchanged", f"branch {BRANCH} already proposes this")
