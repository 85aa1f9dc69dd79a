"""``run_cycle`` proposing on GitLab (the fake GitLab, REST v4 shapes): merge requests with their labels and
reviewers, a merge request a human closed declines its version, and one the loop withdraws is closed marked
autoclosed."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.sync.conftest import World, git, gitops_world
from tests.sync.test_sync import BRANCH, entry, withdraw_and_propose_again
from webhook.io.forges.fake import FakeGitLab


@pytest.fixture
def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[World]:
    with gitops_world(tmp_path, monkeypatch, FakeGitLab) as built:
        yield built


def gitlab(world: World) -> FakeGitLab:
    assert isinstance(world.forge, FakeGitLab)
    return world.forge


def test_an_upgrade_is_proposed_in_a_merge_request_with_its_labels_and_reviewers(world: World) -> None:
    assert entry(world.sync(), "cloudnative-pg")[0] == "proposed"
    [request] = gitlab(world).open_pulls()
    assert (request["title"], request["source_branch"], request["target_branch"]) == (
        "Upgrade cloudnative-pg to 1.30.0",
        BRANCH,
        "main",
    )
    assert request["labels"] == ["upgrade-gate"]
    assert [reviewer["username"] for reviewer in request["reviewers"]] == ["platform-team"]
    assert "| To | cloudnative-pg.v1.30.0 (1.30.0) |" in request["description"]


def test_a_version_whose_merge_request_was_closed_unmerged_is_not_proposed_again(world: World) -> None:
    world.sync()
    gitlab(world).close(1)
    git(world.remote, "branch", "-D", BRANCH)
    assert entry(world.sync(), "cloudnative-pg") == (
        "skipped",
        "pull request #1 (Upgrade cloudnative-pg to 1.30.0) was closed without merging: not proposed again",
    )
    assert gitlab(world).open_pulls() == []


def test_a_withdrawn_proposal_closes_its_merge_request_marked_autoclosed_and_is_proposed_again(world: World) -> None:
    withdraw_and_propose_again(world)
    assert gitlab(world).merge_requests[1]["state"] == "closed"
    assert gitlab(world).merge_requests[1]["title"] == "Upgrade cloudnative-pg to 1.30.0 - autoclosed"
    assert [request["iid"] for request in gitlab(world).open_pulls()] == [2]
