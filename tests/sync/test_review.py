"""``upgrade-gate review`` on real git repositories with the fake GitHub (and the fake GitLab where the forge's
answers decide): the admission requests a pull request
makes once Argo CD applies it, evaluated with the bundled policies as the applier and the approving reviewers;
policy changes; bad input with one line and the documented exit code; JUnit output against a real schema; the
rows at the line that decides, with the policy's own message and who may approve; the job summary and the pull
request comment (the Markdown itself: tests/sync/test_review_markdown.py)."""

from __future__ import annotations

import datetime
import json
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
import xmlschema
import yaml
from click.testing import CliRunner

from tests.sync.conftest import NOW, ROOT, World, git
from webhook.cli import main
from webhook.io.forges.fake import FakeGitHub
from webhook.plan.requests import DEFAULT_APPLIER as ARGOCD

BRANCH = "upgrade-gate/cloudnative-pg"
ADDON_BRANCH = "bump-helloworld"
ADDONS = ROOT / "tests" / "data" / "gitops" / "addons"
MANAGEMENT = "clusters/hub/addons/helloworld.yaml"
MANAGED = "clusters/hub/addons/managed.yaml"
REVISION = "clusters/prod/revisions/cloudnative-pg-1.30.0.yaml"
EXTENSION = "clusters/prod/extensions/cloudnative-pg.yaml"
TEAM = "example-org/platform-admins"
LATER = (NOW + datetime.timedelta(days=2)).strftime("%Y-%m-%dT%H:%M:%SZ")
APPROVAL = "upgrade-gate-revision-approval"
APPROVERS = {"groups": ["upgrade-approvers", "platform-admins"], "teams": [TEAM]}
"""The bundled settings' approverGroups, and the team ``gate`` maps to one of them."""
CI_ENV = (
    "GITHUB_STEP_SUMMARY",
    "GITHUB_SERVER_URL",
    "GITHUB_REPOSITORY",
    "GITHUB_RUN_ID",
    "CI_PROJECT_URL",
    "CI_JOB_URL",
)
JUNIT_XSD = ROOT / "tests" / "data" / "junit" / "junit-10.xsd"
LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
"""The parser the review reads manifests with (libyaml's when PyYAML has it)."""
BROKEN_POLICY = "apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingAdmissionPolicy\n"  # no name, no spec


def gate(world: World, *, trusted: bool = True, tests: bool = False) -> None:
    """The bundled policies in the repository (Argo CD a trusted applier or not), checked by ``review``."""
    target = world.human / "policies"
    target.mkdir(exist_ok=True)
    for policy in (ROOT / "policies").glob("*.yaml"):
        shutil.copy(policy, target / policy.name)
    if tests:
        shutil.copytree(ROOT / "policies" / "tests", target / "tests", dirs_exist_ok=True)
    settings = target / "settings.yaml"
    appliers = f'gitopsAppliers: "{ARGOCD}"' if trusted else 'gitopsAppliers: ""'
    settings.write_text(settings.read_text().replace('gitopsAppliers: ""', appliers))
    check = {"policies": "policies", "teams": {TEAM: "platform-admins"}}
    world.set_config(lambda text: text + "policyCheck: " + json.dumps(check) + "\n")
    world.push("the policies and their check")


def head(world: World, message: str) -> int:
    """Commit the human's work on the proposal branch, push it and point pull request 1 at it."""
    git(world.human, "add", "--all")
    git(world.human, "commit", "--quiet", "-m", message)
    git(world.human, "push", "--quiet", "origin", f"HEAD:{BRANCH}")
    world.forge.set_commits(
        1, git(world.human, "rev-parse", "HEAD").strip(), git(world.human, "rev-parse", "origin/main").strip()
    )
    return 1


def approve(world: World, annotation: str | None = None) -> int:
    """The sync loop proposes cloudnative-pg 1.30.0 (pull request 1); a person approves it on the branch."""
    world.sync()
    git(world.human, "fetch", "--quiet", "origin")
    git(world.human, "checkout", "--quiet", "-B", BRANCH, f"origin/{BRANCH}")
    text = (world.human / REVISION).read_text().replace("approved: false", "approved: true")
    if annotation is not None:
        text = text.replace(
            "metadata:\n", f"metadata:\n  annotations:\n    upgrade-gate.io/reviewed-by: {annotation}\n"
        )
    world.write(REVISION, text)
    return head(world, "approve cloudnative-pg 1.30.0")


def reviewed(world: World, *logins: str, annotation: str | None = None, trusted: bool = True) -> int:
    """The policies in the repository, the proposal approved on its branch and reviewed by ``logins`` (APPROVED),
    alice a member of the approver team; the pull request's number."""
    gate(world, trusted=trusted)
    number = approve(world, annotation)
    for login in logins:
        world.forge.approve(number, login)
    world.forge.add_team_member(TEAM, "alice")
    return number


def review(world: World, *args: str, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    """Run ``upgrade-gate review`` outside any CI (but for ``env``): exit code, stdout, stderr."""
    argv = ["review", "--repo", str(world.human), "--now", LATER, *args]
    environment: dict[str, str | None] = dict.fromkeys(CI_ENV)
    environment.update({"UPGRADE_GATE_FORGE_TOKEN": "t0ken", **(env or {})})
    result = CliRunner().invoke(main, argv, env=environment)
    return result.exit_code, result.stdout, result.stderr


def results(
    world: World, *args: str, keys: tuple[str, ...] = ("file", "operation", "as", "verdict", "message")
) -> tuple[int, list[dict[str, Any]]]:
    code, out, err = review(world, *args, "-o", "json")
    assert out, err
    return code, [{k: r[k] for k in keys} for r in json.loads(out)["results"]]


def line_of(world: World, path: str, text: str) -> int:
    """The 1-based line of ``path`` (in the human's working tree) that starts, after indentation, with ``text``."""
    lines = (world.human / path).read_text().splitlines()
    [found] = [n for n, line in enumerate(lines, 1) if line.strip().startswith(text)]
    return found


def test_an_approval_by_a_member_of_an_approver_team_passes(forge_world: World) -> None:
    world = forge_world
    number = reviewed(world, "alice")
    code, rows = results(world, "--pull", str(number))
    assert code == 0
    note = (
        f"spec.approvedBy will record {ARGOCD}; the annotation upgrade-gate.io/reviewed-by: <login> records "
        "the reviewer"
    )
    assert rows == [
        {"file": REVISION, "operation": "CREATE", "as": ARGOCD, "verdict": "admitted", "message": note},
        {
            "file": REVISION,
            "operation": "CREATE (approval)",
            "as": "alice (platform-admins, system:authenticated)",
            "verdict": "admitted",
            "message": "",
        },
    ]


def test_an_approval_by_anyone_else_fails_with_the_policys_message(forge_world: World) -> None:
    world = forge_world
    number = reviewed(world, "bob")
    keys = ("file", "line", "operation", "as", "verdict", "policy", "binding", "message", "approvers")
    code, rows = results(world, "--pull", str(number), keys=keys)
    assert code == 1
    assert rows[1] == {
        "file": REVISION,
        "line": line_of(world, REVISION, "approved: true"),
        "operation": "CREATE (approval)",
        "as": "bob (system:authenticated)",
        "verdict": "denied",
        "policy": APPROVAL,
        "binding": APPROVAL,
        "message": 'user "bob" may not approve cloudnative-pg-1.30.0: approvers are members '
        f"of [upgrade-approvers, platform-admins], or the GitOps appliers [{ARGOCD}] applying an approval reviewed "
        "in Git; bob is in none of the teams policyCheck.teams maps",
        "approvers": APPROVERS,
    }
    assert (rows[0]["line"], rows[0]["approvers"]) == (rows[1]["line"], None)  # the applier's write is admitted


def test_the_table_fits_100_columns_and_says_each_thing_once(world: World) -> None:
    number = reviewed(world, "bob")
    code, out, err = review(world, "--pull", str(number))
    assert (code, err) == (1, "upgrade-gate: 1 of 2 review results fail\n")
    assert max(len(line) for line in out.splitlines()) <= 100
    text = " ".join(out.split())
    assert text.count(APPROVAL) == 1
    assert "ValidatingAdmissionPolicy" not in text and "denied request" not in text
    assert f"{REVISION}:{line_of(world, REVISION, 'approved: true')}" in text
    assert "who may approve: members of upgrade-approvers, platform-admins, or of the forge team " + TEAM in text


def test_a_reviewer_who_cannot_approve_is_not_counted_beside_one_who_can(forge_world: World) -> None:
    world = forge_world
    number = reviewed(world, "alice", "bob")
    code, rows = results(world, "--pull", str(number))
    assert code == 0
    assert [r["verdict"] for r in rows] == ["admitted", "admitted", "not counted"]


def test_a_pull_request_without_an_approving_review_is_denied(world: World) -> None:
    number = reviewed(world)
    world.github.review(number, "alice", "COMMENTED")
    code, rows = results(world, "--pull", str(number), keys=("verdict", "message", "approvers"))
    assert code == 1
    assert (rows[1]["verdict"], rows[1]["approvers"]) == ("denied", APPROVERS)
    assert (
        rows[1]["message"]
        == "approving cloudnative-pg-1.30.0 needs an approving review in the pull request, and it has none"
    )


def test_a_reviewed_by_annotation_naming_a_non_approver_fails(world: World) -> None:
    number = reviewed(world, "alice", annotation="carol")
    code, rows = results(world, "--pull", str(number))
    assert code == 1
    assert rows[-1] == {
        "file": REVISION,
        "operation": "CREATE (approval)",
        "as": "carol",
        "verdict": "denied",
        "message": "the annotation upgrade-gate.io/reviewed-by names carol, who has not approved this change "
        "(approving: alice)",
    }


def test_a_reviewed_by_annotation_naming_the_approving_member_passes(world: World) -> None:
    number = reviewed(world, "alice", annotation="alice")
    code, rows = results(world, "--pull", str(number))
    assert code == 0
    assert rows[0]["message"] == ""  # the annotation records the reviewer: no note


def test_an_untrusted_applier_is_denied_whoever_reviewed(world: World) -> None:
    number = reviewed(world, "alice", trusted=False)
    code, rows = results(world, "--pull", str(number), keys=("verdict", "policy", "message"))
    assert code == 1
    assert rows[0] == {
        "verdict": "denied",
        "policy": APPROVAL,
        "message": f'user "{ARGOCD}" may not approve cloudnative-pg-1.30.0: approvers are members of '
        "[upgrade-approvers, platform-admins]",
    }


def test_refs_with_as_name_the_reviewer(world: World) -> None:
    gate(world)
    approve(world)
    args = ("--base", "origin/main", "--head", "HEAD")
    assert results(world, *args, "--as", "alice", "--as-group", "upgrade-approvers")[0] == 0
    code, rows = results(world, *args)
    assert code == 1
    assert rows[1]["message"] == (
        "approving cloudnative-pg-1.30.0 needs an approving reviewer: review a pull request (--pull) or name one (--as)"
    )


def test_the_sync_loops_in_place_replacement_of_a_proposal_is_an_admitted_update(world: World) -> None:
    gate(world)
    world.copy_catalog({"cloudnative-pg": "1.29.2"})
    text = (world.human / EXTENSION).read_text()
    selfcertified = "channels: [stable-v1]\n      upgradeConstraintPolicy: SelfCertified"
    world.write(
        EXTENSION,
        text.replace("cloudnative-pg.v1.29.2", "cloudnative-pg.v1.29.1")
        .replace("version: 1.29.2", "version: 1.29.1")
        .replace("channels: [stable-v1]", selfcertified),
    )
    world.push("cloudnative-pg 1.29.1 installed, the catalog up to 1.29.2")
    world.sync()
    world.merge(BRANCH)
    world.copy_catalog()
    world.push("the catalog now has 1.30.0")
    world.now += datetime.timedelta(days=2)
    world.sync()
    git(world.human, "fetch", "--quiet", "origin")
    code, rows = results(world, "--base", "origin/main", "--head", f"origin/{BRANCH}")
    assert code == 0
    assert rows == [
        {
            "file": "clusters/prod/revisions/cloudnative-pg-1.29.2.yaml",
            "operation": "UPDATE",
            "as": ARGOCD,
            "verdict": "admitted",
            "message": "",
        }
    ]


def test_a_deleted_revision_is_pruned_and_a_renamed_file_is_no_change(world: World) -> None:
    gate(world)
    world.sync()
    world.merge(BRANCH)
    world.write("clusters/prod/extensions/all.yaml", (world.human / EXTENSION).read_text())
    (world.human / EXTENSION).unlink()
    (world.human / REVISION).unlink()
    git(world.human, "checkout", "--quiet", "-b", "cleanup")
    git(world.human, "add", "--all")
    git(world.human, "commit", "--quiet", "-m", "remove the revision, move the extension")
    code, out, err = review(world, "--base", "origin/main", "--head", "HEAD")
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert lines[0].split() == ["VERDICT", "OPERATION", "OBJECT", "AS"]
    assert lines[1].split() == ["moved", "-", "ClusterExtension", "cloudnative-pg", "-"]
    assert lines[2].strip() == "clusters/prod/extensions/all.yaml:7"  # the document, after the Namespace
    assert " ".join(" ".join(lines[3:5]).split()) == (
        f"moved from {EXTENSION}; the object is unchanged, so applying it makes no request"
    )
    assert lines[5].split() == ["admitted", "DELETE", "ClusterExtensionRevision", "cloudnative-pg-1.30.0", "applier"]
    assert lines[6].strip() == f"{REVISION}:1"
    assert lines[-2].startswith("1 admitted, 1 moved (merge base ")
    assert lines[-1].strip().startswith(f"{ARGOCD})")


def test_invalid_yaml_is_its_own_row_and_the_rest_is_still_reviewed(world: World) -> None:
    number = reviewed(world, "alice")
    world.write("clusters/prod/extensions/broken.yaml", "apiVersion: v1\nkind: [\n")
    world.write("clusters/prod/extensions/notes.yaml", "just: notes\n")
    head(world, "a broken manifest")
    code, out, err = review(world, "--pull", str(number))
    assert code == 1
    assert err == "upgrade-gate: 2 of 4 review results fail\n"
    lines = out.splitlines()
    assert [line.split() for line in lines[1:3]] == [
        ["invalid", "-", "-", "-"],
        ["clusters/prod/extensions/broken.yaml:3"],
    ]
    assert lines[3].strip().startswith("invalid YAML: ")
    assert [line.strip() for line in lines[5:7]] == [
        "clusters/prod/extensions/notes.yaml:1",
        "not a Kubernetes object (apiVersion, kind, metadata.name)",
    ]
    assert [line.split()[:6] for line in lines if line.startswith(("admitted", "denied"))] == [
        ["admitted", "CREATE", "ClusterExtensionRevision", "cloudnative-pg-1.30.0", "applier"],
        ["admitted", "CREATE", "(approval)", "ClusterExtensionRevision", "cloudnative-pg-1.30.0", "alice"],
    ]


def edited(world: World, old: str, new: str) -> tuple[str, ...]:
    """The policies on main, then a branch replacing ``old`` with ``new`` in the cloudnative-pg ClusterExtension;
    the arguments that review it."""
    gate(world)
    git(world.human, "checkout", "--quiet", "-b", "edit")
    world.write(EXTENSION, (world.human / EXTENSION).read_text().replace(old, new))
    git(world.human, "commit", "--quiet", "-am", f"{old} -> {new}")
    return ("--base", "origin/main", "--head", "HEAD")


def test_a_manifest_that_no_longer_parses_is_invalid_not_a_prune(world: World) -> None:
    # Argo CD and Flux fail the sync of a manifest that does not parse: nothing of it is pruned.
    args = edited(world, "channels: [stable-v1]", "channels: [stable")
    code, rows = results(world, *args, keys=("file", "operation", "verdict"))
    assert code == 1
    assert rows == [{"file": EXTENSION, "operation": "-", "verdict": "invalid"}]
    _, out, _ = review(world, *args, "-o", "json")
    [row] = json.loads(out)["results"]
    with pytest.raises(yaml.MarkedYAMLError) as parsed:
        list(yaml.load_all((world.human / EXTENSION).read_text(), Loader=LOADER))
    assert parsed.value.problem_mark is not None
    assert (row["line"], row["message"]) == (
        parsed.value.problem_mark.line + 1,
        f"invalid YAML: {parsed.value.problem} ({parsed.value.context} started on line "
        f"{parsed.value.context_mark.line + 1})",  # type: ignore[union-attr]
    )


def test_a_version_change_points_at_its_version_line(world: World) -> None:
    code, rows = results(world, *edited(world, '<2.0.0"', '<1.31.0"'), keys=("file", "line", "operation"))
    assert code == 0
    assert rows == [{"file": EXTENSION, "line": line_of(world, EXTENSION, 'version: ">='), "operation": "UPDATE"}]


def test_a_policy_change_shows_the_manifests_it_would_deny_and_runs_the_suites(world: World) -> None:
    # The base has no guards policy; the change adds it and requires catalog selectors, and the existing
    # ClusterExtensions, which name none, break its rules.
    gate(world, tests=True)
    guards = world.human / "policies" / "clusterextension-guards.yaml"
    text = guards.read_text()
    guards.unlink()
    world.push("no guards")
    git(world.human, "checkout", "--quiet", "-b", "guards")
    guards.write_text(text)
    settings = world.human / "policies" / "settings.yaml"
    settings.write_text(
        settings.read_text().replace('requireCatalogSelector: "false"', 'requireCatalogSelector: "true"')
    )
    git(world.human, "add", "--all")
    git(world.human, "commit", "--quiet", "-m", "the guards policy")
    code, rows = results(world, "--base", "origin/main", "--head", "HEAD")
    denied = [r for r in rows if r["verdict"] == "denied"]
    assert code == 1
    assert [r["file"] for r in denied] == [EXTENSION, "clusters/prod/extensions/crunchy-postgres-operator.yaml"]
    assert all(r["message"].startswith("admitted → denied: ") for r in denied)
    _, policies = results(world, "--base", "origin/main", "--head", "HEAD", keys=("verdict", "policy", "message"))
    assert {r["policy"] for r in policies if r["verdict"] == "denied"} == {"upgrade-gate-clusterextension-guards"}
    assert not any("ValidatingAdmissionPolicy" in r["message"] for r in policies)
    _, out, _ = review(world, "--base", "origin/main", "--head", "HEAD", "-o", "json")
    assert json.loads(out)["policyTests"]["cases"] > 50


def test_junit_output_validates_against_the_junit_schema(world: World, tmp_path: Path) -> None:
    gate(world)
    number = approve(world)
    world.github.review(number, "bob", "APPROVED")
    report = tmp_path / "review.xml"
    code, out, _ = review(world, "--pull", str(number), "-o", "junit", "--output-file", str(report))
    assert code == 1
    assert out.splitlines()[0].split() == ["VERDICT", "OPERATION", "OBJECT", "AS"]
    xmlschema.XMLSchema(JUNIT_XSD).validate(report)
    [suite] = ET.parse(report).getroot()
    assert (suite.get("tests"), suite.get("failures")) == ("2", "1")
    [failing] = [case for case in suite if case.find("failure") is not None]
    assert failing.get("name") == (
        "CREATE (approval) ClusterExtensionRevision cloudnative-pg-1.30.0 as bob (system:authenticated)"
    )
    message = failing.find("failure").get("message", "")  # type: ignore[union-attr]
    approved = line_of(world, REVISION, "approved: true")
    assert message.startswith(f'{REVISION}:{approved}: [{APPROVAL}] user "bob" may not approve')
    assert message.endswith(
        f"who may approve: members of upgrade-approvers, platform-admins, or of the forge team {TEAM}"
    )


@pytest.mark.parametrize(
    ("args", "error"),
    [
        pytest.param(("--base", "nope", "--head", "HEAD"), "unknown ref 'nope'", id="an unknown ref"),
        pytest.param(
            ("--repo", "/", "--base", "a", "--head", "b"), "--repo /: not a git repository", id="no repository"
        ),
        pytest.param(
            ("--base", "origin/main"), "give --base REF and --head REF, or --pull N", id="a base without head"
        ),
        pytest.param(
            ("--pull", "1", "--as", "alice"),
            "--as names the reviewer of --base/--head; with --pull the forge names the reviewers",
            id="--as with a pull request",
        ),
        pytest.param(
            ("--pull", "7"),
            "github: no pull request #7 in example-org/clusters (HTTP 404: it does not exist, or the token cannot "
            "read it)",
            id="an unknown pull request",
        ),
        pytest.param(
            ("--base", "origin/main", "--head", "HEAD", "--now", "soon"),
            "--now 'soon': expected an RFC 3339 time such as 2026-06-01T12:00:00Z",
            id="a bad time",
        ),
    ],
)
def test_bad_input_is_one_line_and_exit_2(world: World, args: tuple[str, ...], error: str) -> None:
    gate(world)
    code, out, err = review(world, *args)
    assert (code, out) == (2, "")
    assert err.startswith(f"upgrade-gate: {error}")
    assert err.count("\n") == 1


def test_an_unavailable_forge_is_one_line_and_exit_3(world: World) -> None:
    gate(world)
    number = approve(world)
    world.github.fail_with = 503
    assert review(world, "--pull", str(number)) == (
        3,
        "",
        'upgrade-gate: github: GET /repos/example-org/clusters/pulls/1: HTTP 503 {"message": "Service Unavailable"}\n',
    )
    world.github.rate_limit(only="/reviews$")  # the pull request is read, its reviews are refused
    assert review(world, "--pull", str(number)) == (
        3,
        "",
        "upgrade-gate: github: GET /repos/example-org/clusters/pulls/1/reviews: rate limited (HTTP 403, the limit "
        "resets at 2026-03-01T13:00:00Z)\n",
    )
    world.github.__exit__(None, None, None)
    code, out, err = review(world, "--pull", str(number))
    assert (code, out) == (3, "")
    assert err.startswith(
        "upgrade-gate: github: GET /repos/example-org/clusters/pulls/1: [Errno 111] Connection refused"
    )
    assert err.count("\n") == 1


def test_a_config_without_policy_check_and_policies_that_do_not_load_are_exit_2(world: World) -> None:
    args = ("--base", "HEAD", "--head", "HEAD")
    assert review(world, *args)[::2] == (
        2,
        "upgrade-gate: upgrade-gate.yaml: policyCheck: is required by upgrade-gate review "
        "(the policies to check against)\n",
    )
    gate(world)
    world.write("policies/broken.yaml", BROKEN_POLICY)
    world.push("a broken policy")
    code, _, err = review(world, *args)
    assert code == 2
    assert err.startswith(
        "upgrade-gate: the policy set does not load (4 problems): HEAD:policies/broken.yaml:1:1: document 1 "
        "(ValidatingAdmissionPolicy/<unnamed>): "
    )
    assert err.endswith(" (and 3 more)\n")


def test_a_change_that_repairs_broken_base_policies_is_compared_with_nothing(world: World) -> None:
    gate(world)
    world.write("policies/broken.yaml", BROKEN_POLICY)
    world.push("a broken policy")
    git(world.human, "checkout", "--quiet", "-b", "repair")
    (world.human / "policies" / "broken.yaml").unlink()
    git(world.human, "commit", "--quiet", "-am", "repair the policies")
    code, rows = results(world, "--base", "origin/main", "--head", "HEAD")
    assert code == 0
    assert [(r["verdict"], r["message"].split(": ")[0]) for r in rows] == [
        ("skipped", "no comparison with the base policies, which do not load")
    ]


def addons(world: World, *, cluster3: str = "v1") -> None:
    """The helloworld add-on (tests/data/gitops/addons, cluster3 at ``cluster3``) and the bundled policies in the
    repository; then a branch."""
    shutil.copytree(ADDONS / "clusters", world.human / "clusters", dirs_exist_ok=True)
    edit_cluster3(world, "installVersion: v1", f"installVersion: {cluster3}")
    world.set_config(lambda text: text + "addons:\n  manifests: clusters/hub/addons\n  installed: status\n")
    gate(world)
    git(world.human, "checkout", "--quiet", "-b", ADDON_BRANCH)


def edit_cluster3(world: World, old: str, new: str) -> None:
    """Replace ``old`` by ``new`` in cluster3's ManagedClusterAddOn (the second document of its file)."""
    first, second = (world.human / MANAGED).read_text().split("---\n")
    (world.human / MANAGED).write_text(first + "---\n" + second.replace(old, new))


def commit(world: World, message: str) -> None:
    git(world.human, "commit", "--quiet", "-am", message)


def addon_pull(world: World, old: str, new: str) -> int:
    """A person's pull request replacing ``old`` by ``new`` in helloworld's ClusterManagementAddOn; its number."""
    addons(world)
    world.write(MANAGEMENT, (world.human / MANAGEMENT).read_text().replace(old, new))
    commit(world, "edit helloworld")
    git(world.human, "push", "--quiet", "origin", f"HEAD:{ADDON_BRANCH}")
    shas = [git(world.human, "rev-parse", ref).strip() for ref in ("HEAD", "origin/main")]
    number = world.github.open_pull(ADDON_BRANCH, "main", head_sha=shas[0], base_sha=shas[1])
    world.forge.add_team_member(TEAM, "alice")
    return number


def test_a_managed_cluster_add_on_update_is_reviewed_in_its_cluster_namespace(world: World) -> None:
    addons(world)
    edit_cluster3(world, "installVersion: v1", "installVersion: v3")
    commit(world, "pin cluster3 to v3")
    keys = ("file", "line", "operation", "verdict", "policy", "binding", "message")
    code, rows = results(world, "--base", "origin/main", "--head", "HEAD", keys=keys)
    assert code == 1
    line = line_of(world, MANAGED, "installVersion: v3")
    assert rows == [
        {
            "file": MANAGED,
            "line": line,
            "operation": "UPDATE",
            "verdict": "denied",
            "policy": "upgrade-gate-addon-install-version",
            "binding": "upgrade-gate-addon-install-version",
            "message": 'add-on helloworld on cluster cluster3: installVersion "v3" is not a supported version; '
            "supported versions: v1, v2",
        },
        {
            "file": MANAGED,
            "line": line,
            "operation": "UPDATE (approval)",
            "verdict": "denied",
            "policy": "",
            "binding": "",
            "message": "upgrading or rolling back add-on helloworld on cluster cluster3 needs an approving reviewer: "
            "review a pull request (--pull) or name one (--as)",
        },
    ]


def test_a_placement_upgrade_approved_by_a_member_of_an_approver_team_passes(world: World) -> None:
    number = addon_pull(world, 'installVersion: "v1"', 'installVersion: "v2"')
    world.forge.approve(number, "alice")
    code, rows = results(world, "--pull", str(number))
    assert code == 0
    assert rows == [
        {"file": MANAGEMENT, "operation": "UPDATE", "as": ARGOCD, "verdict": "admitted", "message": ""},
        {
            "file": MANAGEMENT,
            "operation": "UPDATE (approval)",
            "as": "alice (platform-admins, system:authenticated)",
            "verdict": "admitted",
            "message": "",
        },
    ]


def test_a_placement_upgrade_without_an_approver_among_its_reviewers_is_denied(world: World) -> None:
    """The trusted applier is admitted, on the strength of a review that no approver gave."""
    number = addon_pull(world, 'installVersion: "v1"', 'installVersion: "v2"')
    world.forge.approve(number, "bob")
    keys = ("as", "verdict", "policy", "message", "approvers")
    code, rows = results(world, "--pull", str(number), keys=keys)
    assert code == 1
    assert [(r["as"], r["verdict"]) for r in rows] == [(ARGOCD, "admitted"), ("bob (system:authenticated)", "denied")]
    assert rows[1]["policy"] == "upgrade-gate-addon-placements"
    assert rows[1]["message"].startswith(
        'user "bob" may not upgrade add-on helloworld on placement default/canary-placement: approvers are members '
        f"of [upgrade-approvers, platform-admins], or the GitOps appliers [{ARGOCD}] applying a change reviewed in Git"
    )
    assert rows[1]["approvers"] == APPROVERS


def test_a_placement_upgrade_without_an_approving_review_is_denied(world: World) -> None:
    number = addon_pull(world, 'installVersion: "v1"', 'installVersion: "v2"')
    code, rows = results(world, "--pull", str(number), keys=("verdict", "message", "approvers"))
    assert code == 1
    assert rows[1] == {
        "verdict": "denied",
        "message": "upgrading or rolling back add-on helloworld needs an approving review in the pull request, "
        "and it has none",
        "approvers": APPROVERS,
    }


def test_an_add_on_change_that_moves_no_version_needs_no_reviewer(world: World) -> None:
    number = addon_pull(world, "  name: helloworld\n", "  name: helloworld\n  labels: {team: apps}\n")
    code, rows = results(world, "--pull", str(number), keys=("operation", "verdict"))
    assert (code, rows) == (0, [{"operation": "UPDATE", "verdict": "admitted"}])


@pytest.mark.parametrize(
    ("reviewer", "verdict", "message"),
    [
        (("--as", "alice", "--as-group", "upgrade-approvers"), "admitted", ""),
        (
            ("--as", "bob"),
            "denied",
            'user "bob" may not roll back add-on helloworld on cluster cluster3: approvers are members of '
            f"[upgrade-approvers, platform-admins], or the GitOps appliers [{ARGOCD}] applying a change "
            "reviewed in Git",
        ),
    ],
    ids=["an approver", "anyone else"],
)
def test_a_cluster_rollback_in_refs_is_reviewed_as_the_reviewer_named(
    world: World, reviewer: tuple[str, ...], verdict: str, message: str
) -> None:
    addons(world, cluster3="v2")
    edit_cluster3(world, "installVersion: v2", "installVersion: v1")
    edit_cluster3(
        world,
        "  namespace: cluster3\n",
        "  namespace: cluster3\n  annotations: {upgrade-gate.io/acknowledge-rollback: v1}\n",
    )
    commit(world, "roll cluster3 back to v1")
    code, rows = results(world, "--base", "origin/main", "--head", "HEAD", *reviewer)
    assert [(r["operation"], r["verdict"]) for r in rows] == [("UPDATE", "admitted"), ("UPDATE (approval)", verdict)]
    assert rows[1]["message"] == message
    assert code == (0 if verdict == "admitted" else 1)


def comments(world: World, number: int) -> list[str]:
    """The bodies of pull request ``number``'s comments (GitHub issue comments, GitLab notes), oldest first."""
    forge = world.forge
    listed = forge.comments if isinstance(forge, FakeGitHub) else forge.notes  # type: ignore[attr-defined]
    return [str(c["body"]) for c in listed.get(number, [])]


def test_the_job_summary_gets_the_review_in_markdown_linked_to_the_deciding_line(world: World, tmp_path: Path) -> None:
    number = reviewed(world, "bob")
    summary = tmp_path / "step-summary.md"
    summary.write_text("an earlier step's summary\n")
    code, out, _ = review(world, "--pull", str(number), "-o", "json", env={"GITHUB_STEP_SUMMARY": str(summary)})
    assert code == 1 and json.loads(out)["passed"] is False  # -o json as asked; the summary in addition
    text = summary.read_text()
    assert text.startswith("an earlier step's summary\n### ")
    head_sha = git(world.human, "rev-parse", "HEAD").strip()
    # GitHub's blob URL of a line: https://github.com/OWNER/REPO/blob/SHA/PATH#LN, from the pull request's html_url
    link = f"https://github.invalid/example-org/clusters/blob/{head_sha}/{REVISION}#L"
    assert f"{link}{line_of(world, REVISION, 'approved: true')})" in text
    assert f'**{APPROVAL}**: user "bob" may not approve' in text


def test_comment_posts_one_comment_updated_in_place(forge_world: World) -> None:
    world = forge_world
    number = reviewed(world, "bob")
    world.forge.comment(number, "carol", "looks fine to me")
    code, out, err = review(world, "--pull", str(number), "--comment")
    assert (code, err) == (1, "upgrade-gate: 1 of 2 review results fail\n")
    assert out.startswith("VERDICT")
    first = comments(world, number)
    assert len(first) == 2 and first[0] == "looks fine to me"
    assert first[1].startswith("<!-- upgrade-gate:review -->\n### ❌ upgrade-gate review: 1 of 2 results fail")
    # a line's web URL: GitHub https://HOST/OWNER/REPO/blob/SHA/PATH#LN, GitLab https://HOST/GROUP/PROJECT/-/blob/...
    web = "https://github.invalid/example-org/clusters/blob/"
    if not isinstance(world.forge, FakeGitHub):
        web = "https://gitlab.invalid/example-org/clusters/-/blob/"
    head_sha = git(world.human, "rev-parse", "HEAD").strip()
    assert f"]({web}{head_sha}/{REVISION}#L{line_of(world, REVISION, 'approved: true')})" in first[1]
    world.forge.approve(number, "alice")
    assert review(world, "--pull", str(number), "--comment")[0] == 0
    second = comments(world, number)
    assert len(second) == 2 and second[0] == "looks fine to me"
    assert "passed" in second[1].splitlines()[1]


def test_a_comment_a_person_edited_is_repaired_by_the_next_run(world: World) -> None:
    number = reviewed(world, "alice")
    review(world, "--pull", str(number), "--comment")
    [posted] = world.github.comments[number]
    written = posted["body"]
    posted["body"] = written.replace("passed", "failed, trust me")
    assert review(world, "--pull", str(number), "--comment")[0] == 0
    assert comments(world, number) == [written]


@pytest.mark.parametrize("outage", ["rate limit", "down"])
def test_a_forge_failing_while_commenting_is_one_warning_and_the_next_run_writes_it(world: World, outage: str) -> None:
    number = reviewed(world, "bob")
    if outage == "rate limit":
        world.github.rate_limit(only="comments")
    else:
        world.github.outage(503, only="comments")
    code, out, err = review(world, "--pull", str(number), "--comment")
    assert code == 1  # the verdicts decide, not the comment
    assert out.startswith("VERDICT") and out.rstrip().splitlines()[-1].strip().endswith(f"{ARGOCD})")
    warning, verdicts = err.splitlines()
    assert warning.startswith(
        "upgrade-gate: warning: github: cannot write the comment <!-- upgrade-gate:review --> on "
    )
    assert warning.endswith(" (the verdicts stand; the next review --comment writes it)")
    assert ("rate limited" if outage == "rate limit" else "HTTP 503") in warning
    assert verdicts == "upgrade-gate: 1 of 2 review results fail"
    assert comments(world, number) == []
    world.github.fail_with = None
    assert review(world, "--pull", str(number), "--comment")[::2] == (1, "upgrade-gate: 1 of 2 review results fail\n")
    assert len(comments(world, number)) == 1


def test_comment_needs_a_pull_request(world: World) -> None:
    gate(world)
    assert review(world, "--base", "origin/main", "--head", "HEAD", "--comment")[::2] == (
        2,
        "upgrade-gate: --comment needs --pull N\n",
    )
