"""``automerge`` on real git repositories and the fake GitHub: a proposal merges without a person only when the
policies admit its approval with no one in particular approving, as ``upgrade-gate review`` evaluates it.

Read off the real catalog: postgresoperator.v5.8.8 replaces 5.8.7 (a patch upgrade), cloudnative-pg.v1.30.0
replaces 1.29.2 (a minor one). The bundled policies need a member of ``approverGroups`` (or a trusted applier
applying what a person reviewed in Git), so with them nothing merges; a policy set that admits any patch upgrade
after a 24h soak lets the patch merge once the soak is over, and the minor upgrade stays a proposal.
"""

from __future__ import annotations

import datetime
import json

import pytest
import yaml

from tests.sync.conftest import ROOT, World
from tests.sync.test_grouping import CRUNCHY, GROUP, entries, grouping, unpin_crunchy
from webhook.errors import InputError
from webhook.sync.automerge import change_level
from webhook.sync.config import AutomergeConfig, parse_config

CRUNCHY_REVISION = "clusters/prod/revisions/crunchy-postgres-operator-5.8.8.yaml"
ARGOCD = "system:serviceaccount:argocd:argocd-application-controller"
PATCH_AFTER_SOAK = """\
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: patch-after-soak
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules:
      - apiGroups: [olm.operatorframework.io]
        apiVersions: [v1]
        operations: [CREATE, UPDATE]
        resources: [clusterextensionrevisions]
  matchConditions:
    - name: approving
      expression: has(object.spec.approved) && object.spec.approved == true
  variables:
    - name: extension
      expression: cluster.get('olm.operatorframework.io/v1', 'ClusterExtension', object.spec.clusterExtensionRef.name)
    - name: installed
      expression: >-
        variables.extension != null && has(variables.extension.status) && has(variables.extension.status.install)
        ? variables.extension.status.install.bundle.version : ''
  validations:
    - expression: olm.changeLevel(variables.installed, object.spec.version) == 'patch'
      message: only a patch upgrade is approved without a person
    - expression: timestamp(object.spec.availableSince) + duration('24h') <= clock.now()
      message: a patch upgrade is approved after its 24h soak
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata:
  name: patch-after-soak
spec:
  policyName: patch-after-soak
  validationActions: [Deny]
"""


def automerging(world: World, policies: list[str], merging: str = CRUNCHY, **automerge: object) -> None:
    """Two upgrades due (a patch and a minor one), checked against ``policies``, automerge on; a merge through
    the forge merges ``merging`` in Git."""
    unpin_crunchy(world)
    settings = {"enabled": True, **automerge}
    world.set_config(lambda text: f"{text}policyCheck: {json.dumps({'policies': policies})}\n")
    world.set_config(lambda text: f"{text}automerge: {json.dumps(settings)}\n")
    world.push("automerge")
    world.forge.on_merge = lambda _: world.merge(merging)


def past_the_soak(world: World) -> None:
    """A cycle proposes what is due; two days later, past a 24h soak, the next pushes what qualifies approved."""
    world.sync()
    world.now += datetime.timedelta(days=2)
    world.sync()


def approved(world: World, branch: str, path: str) -> object:
    text = world.show(branch, path)
    assert text is not None, f"{path} is not on {branch}"
    return yaml.safe_load(text)["spec"]["approved"]


def merges(world: World) -> list[str]:
    return [r for r in world.github.requests if r.startswith("PUT ") and r.endswith("/merge")]


def test_a_patch_upgrade_the_policies_admit_without_a_person_is_approved_then_merged(world: World) -> None:
    world.write("gate/patch-after-soak.yaml", PATCH_AFTER_SOAK)
    automerging(world, ["gate/patch-after-soak.yaml"])
    world.sync()
    assert approved(world, CRUNCHY, CRUNCHY_REVISION) is False, "in its soak, a proposal like any other"
    world.now += datetime.timedelta(days=2)
    world.sync()
    assert approved(world, CRUNCHY, CRUNCHY_REVISION) is True
    since = yaml.safe_load(world.show(CRUNCHY, CRUNCHY_REVISION) or "")["spec"]["availableSince"]
    assert since == "2026-03-01T12:00:00Z"
    [pull] = [p for p in world.github.open_pulls() if p["head"]["ref"] == CRUNCHY]
    assert "upgrade-gate approves the ClusterExtensionRevision `crunchy-postgres-operator-5.8.8`" in pull["body"]
    assert merges(world) == [], "the approval is pushed first; the merge waits for the next cycle"
    found = entries(world.sync())
    assert (found["crunchy-postgres-operator"].action, found["crunchy-postgres-operator"].reason) == (
        "merged",
        "automerged: the policies admit approving it without a reviewer",
    )
    assert merges(world) == [f"PUT /repos/example-org/clusters/pulls/{pull['number']}/merge"]
    world.pull()
    assert approved(world, "main", CRUNCHY_REVISION) is True
    assert approved(world, "upgrade-gate/cloudnative-pg", "clusters/prod/revisions/cloudnative-pg-1.30.0.yaml") is (
        False
    ), "a minor upgrade is not automerged"
    found = entries(world.sync())
    assert found["crunchy-postgres-operator"].action == "merged"
    assert CRUNCHY not in world.branches()


def test_with_the_bundled_policies_automerge_never_merges_even_for_a_trusted_applier(world: World) -> None:
    settings = (ROOT / "policies" / "settings.yaml").read_text()
    world.write("gate/settings.yaml", settings.replace('gitopsAppliers: ""', f'gitopsAppliers: "{ARGOCD}"'))
    automerging(world, [str(ROOT / "policies" / "revision-approval.yaml"), "gate/settings.yaml"])
    for _ in range(3):
        world.sync()
        world.now += datetime.timedelta(days=2)
    found = entries(world.sync())
    assert merges(world) == []
    assert approved(world, CRUNCHY, CRUNCHY_REVISION) is False
    assert found["crunchy-postgres-operator"].action == "unchanged"
    [pull] = [p for p in world.github.open_pulls() if p["head"]["ref"] == CRUNCHY]
    assert f"| Policies | would admit approving it today when applied by {ARGOCD}." in pull["body"], (
        "the applier alone would be admitted: only a person's approval is missing"
    )


def test_a_merge_the_forge_refuses_is_one_warning_and_the_next_cycle_merges(world: World) -> None:
    world.write("gate/patch-after-soak.yaml", PATCH_AFTER_SOAK)
    automerging(world, ["gate/patch-after-soak.yaml"])
    past_the_soak(world)
    [pull] = [p for p in world.github.open_pulls() if p["head"]["ref"] == CRUNCHY]
    world.github.unmergeable.add(pull["number"])  # a required check fails, or the branch conflicts
    report = world.sync()
    number = pull["number"]
    assert list(report.warnings) == [
        f"github: cannot write the merge of pull request #{number}: PUT /repos/example-org/clusters/pulls/"
        f'{number}/merge: HTTP 405 {{"message": "Pull Request is not mergeable"}}'
    ]
    assert entries(report)["crunchy-postgres-operator"].action == "unchanged"
    world.github.unmergeable.clear()
    assert entries(world.sync())["crunchy-postgres-operator"].action == "merged"


def test_change_limits_which_levels_merge(world: World) -> None:
    world.write("gate/patch-after-soak.yaml", PATCH_AFTER_SOAK.replace("== 'patch'", "in ['patch', 'minor']"))
    automerging(world, ["gate/patch-after-soak.yaml"], change=["minor"])
    past_the_soak(world)
    cnpg = ("upgrade-gate/cloudnative-pg", "clusters/prod/revisions/cloudnative-pg-1.30.0.yaml")
    assert (approved(world, *cnpg), approved(world, CRUNCHY, CRUNCHY_REVISION)) == (True, False)


def test_a_group_merges_when_every_member_qualifies(world: World) -> None:
    world.write("gate/patch-after-soak.yaml", PATCH_AFTER_SOAK)
    path = world.human / "clusters/prod/extensions/cloudnative-pg.yaml"
    path.write_text(path.read_text().replace('version: ">=1.29.0, <2.0.0"', 'version: "1.29.2"'))
    grouping(world, "per-cluster")
    automerging(world, ["gate/patch-after-soak.yaml"], GROUP)
    past_the_soak(world)
    found = entries(world.sync())
    assert found["crunchy-postgres-operator"].action == "merged"
    world.pull()
    assert approved(world, "main", CRUNCHY_REVISION) is True


def test_automerge_is_off_by_default_and_needs_the_policy_check() -> None:
    base = {"extensions": "e", "revisions": "r", "catalogs": "c"}
    assert parse_config(base).automerge == AutomergeConfig(enabled=False, change=("patch",))
    with pytest.raises(InputError, match=r"^upgrade-gate.yaml: automerge.enabled: needs policyCheck: "):
        parse_config({**base, "automerge": {"enabled": True}})
    with pytest.raises(InputError, match=r"^upgrade-gate.yaml: automerge.change: must list patch, minor, major, "):
        parse_config({**base, "automerge": {"change": ["prerelease"]}})


@pytest.mark.parametrize(
    ("installed", "target", "level"),
    [
        ("5.8.7", "5.8.8", "patch"),
        ("1.29.2", "1.30.0", "minor"),
        ("1.29.2", "2.0.0", "major"),
        ("1.0.0", "1.0.0-rc1", "none"),
    ],
)
def test_the_change_level_is_the_first_semver_part_that_differs(installed: str, target: str, level: str) -> None:
    assert change_level(installed, target) == level


def test_only_the_commit_the_cycle_verified_is_merged(world: World) -> None:
    world.write("gate/patch-after-soak.yaml", PATCH_AFTER_SOAK)
    automerging(world, ["gate/patch-after-soak.yaml"])
    past_the_soak(world)
    verified = world.branches()[CRUNCHY]
    world.github.pushed(CRUNCHY, "f" * 40, world.branches()["main"])  # the forge already has a newer head
    report = world.sync()
    assert entries(report)["crunchy-postgres-operator"].action == "unchanged"
    [warning] = report.warnings
    assert ": HTTP 409 " in warning
    assert world.branches()[CRUNCHY] == verified


def test_automerge_merges_on_both_forges(forge_world: World) -> None:
    world = forge_world
    world.write("gate/patch-after-soak.yaml", PATCH_AFTER_SOAK)
    automerging(world, ["gate/patch-after-soak.yaml"])
    past_the_soak(world)
    assert entries(world.sync())["crunchy-postgres-operator"].action == "merged"
    world.pull()
    assert approved(world, "main", CRUNCHY_REVISION) is True
    assert len([r for r in world.forge.requests if r.startswith("PUT ") and r.endswith("/merge")]) == 1
