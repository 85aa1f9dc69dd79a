"""The sync cycle's steps one by one (read, plan, act, report) on a real git remote and the fake GitHub: the plan
steps do no I/O, the pull request body with the policy verdict is decided by the plan and written as it is,
``upgrade-gate.yaml`` is read once per branch it is read from."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.sync.conftest import ROOT, World, git
from webhook.plan import Action, BranchAction
from webhook.sync import inputs as inputs_module
from webhook.sync.acting import act
from webhook.sync.config import SyncConfig, load_config
from webhook.sync.deciding import decide
from webhook.sync.history import read_history
from webhook.sync.inputs import read_inputs, read_snapshot
from webhook.sync.planning import propose, wanted_history
from webhook.sync.reporting import entries
from webhook.sync.timings import Timings

BRANCH = "upgrade-gate/cloudnative-pg"
FLUX = "system:serviceaccount:flux-system:kustomize-controller"


def test_the_plan_renders_the_pull_request_with_the_verdict_and_act_writes_it_as_planned(world: World) -> None:
    policies = [str(ROOT / "policies" / "revision-approval.yaml"), str(ROOT / "policies" / "settings.yaml")]
    check = {"policies": policies, "applier": {"username": FLUX, "groups": ["system:serviceaccounts"]}}
    world.set_config(lambda text: text + "policyCheck: " + json.dumps(check) + "\n")
    world.push("check approvals against the bundled policies")
    timings = Timings()
    repo, base_sha, inputs = read_inputs(world.options(), timings)
    snapshot = read_snapshot(repo, inputs, base_sha, None, timings)
    proposed = propose(inputs, snapshot, None, timings)
    history = read_history(
        repo, inputs, snapshot, wanted_history(inputs, snapshot, proposed), closed={}, timings=timings
    )
    asked = list(world.forge.requests)
    plan = decide(inputs, snapshot, proposed, history)
    assert world.forge.requests == asked, "planning asks nothing of the forge"
    [proposal] = [p for p in plan.proposals if p.branch == BRANCH]
    assert proposal.write == BranchAction.PUSH
    assert proposal.body is not None
    assert f"would deny approving it today when applied by {FLUX}" in proposal.body
    assert world.branches().get(BRANCH) is None, "planning pushes nothing"
    acted = act(repo, inputs, plan, timings)
    [pull] = world.github.open_pulls()
    assert pull["head"]["ref"] == BRANCH
    assert pull["body"] == proposal.body
    found = entries(plan, acted.written, dry_run=False)
    assert found["cloudnative-pg"].action == Action.PROPOSED
    assert found["cloudnative-pg"].pull_request == pull["html_url"]


def _counting(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    read: list[Path] = []

    def load(root: Path) -> SyncConfig:
        read.append(root)
        return load_config(root)

    monkeypatch.setattr(inputs_module, "load_config", load)
    return read


def test_upgrade_gate_yaml_is_read_once_when_the_base_branch_is_the_default_branch(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    read = _counting(monkeypatch)
    world.sync()
    assert len(read) == 1


def test_a_base_branch_other_than_the_default_branch_is_governed_by_its_own_upgrade_gate_yaml(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    world.set_config(lambda text: text.replace("baseBranch: main", "baseBranch: production"))
    world.push("govern the production branch")
    git(world.human, "push", "--quiet", "origin", "HEAD:production")
    world.set_config(lambda text: text.replace("branchPrefix: upgrade-gate/", "branchPrefix: on-main/"))
    world.push("main's own prefix, which production's upgrade-gate.yaml does not have")
    read = _counting(monkeypatch)
    report = world.sync()
    assert len(read) == 2, "read from the default branch for baseBranch, then from the base branch"
    assert report.base == "production"
    assert {e.branch for e in report.entries if e.branch} == {BRANCH}
