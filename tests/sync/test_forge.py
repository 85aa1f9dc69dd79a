"""The forge clients over the fake forges (in GitHub's and GitLab's documented shapes): a pull request's commits,
its approving reviewers and team membership for ``upgrade-gate review``, and the proposal lifecycle the sync loop
drives, the same on both forges."""

from __future__ import annotations

from typing import Any

import pytest

from tests import tables
from webhook.errors import GitError
from webhook.io.forges.fake import FakeForge, FakeGitHub, FakeGitLab
from webhook.io.forges.github import GitHub
from webhook.io.forges.gitlab import GitLab

REVIEWS = tables.load("gitops/reviews.yaml")
HEAD, BASE = "a" * 40, "b" * 40


@pytest.fixture
def github() -> FakeGitHub:
    return FakeGitHub("example-org/clusters")


def _client(fake: FakeGitHub) -> GitHub:
    return fake.client()


@pytest.mark.parametrize("case", tables.params(REVIEWS))
def test_github_approving_reviewers(github: FakeGitHub, case: dict[str, Any]) -> None:
    number = github.open_pull("upgrade-gate/cloudnative-pg", "main", head_sha=HEAD, base_sha=BASE)
    for login, state in case["reviews"]:
        github.review(number, login, state)
    assert _client(github).approving_reviewers(number) == case["approvers"]


def test_github_reviews_are_read_on_every_page(github: FakeGitHub) -> None:
    number = github.open_pull("feature", "main")
    for index in range(150):
        github.review(number, f"user{index:03d}", "COMMENTED")
    github.review(number, "user000", "APPROVED")
    assert _client(github).approving_reviewers(number) == ["user000"]
    assert github.requests[-2:] == [f"GET /repos/example-org/clusters/pulls/{number}/reviews"] * 2


def test_github_pull_request_carries_its_head_and_base_commits(github: FakeGitHub) -> None:
    number = github.open_pull("feature", "main", head_sha=HEAD, base_sha=BASE)
    pull = _client(github).pull_request(number)
    assert (pull.number, pull.head, pull.head_sha, pull.base, pull.base_sha) == (number, "feature", HEAD, "main", BASE)


def test_github_team_membership_is_an_active_membership(github: FakeGitHub) -> None:
    github.add_team_member("example-org/platform-admins", "alice")
    github.add_team_member("example-org/platform-admins", "bob", state="pending")
    client = _client(github)
    assert client.is_team_member("example-org/platform-admins", "alice")
    assert not client.is_team_member("example-org/platform-admins", "bob")
    assert not client.is_team_member("example-org/platform-admins", "mallory")
    assert not client.is_team_member("example-org/nobody", "alice")


def test_github_an_unknown_pull_request_is_one_error(github: FakeGitHub) -> None:
    with pytest.raises(GitError, match=r"^github: GET /repos/example-org/clusters/pulls/7: HTTP 404 "):
        _client(github).pull_request(7)


def test_github_an_unreachable_forge_is_one_error(github: FakeGitHub) -> None:
    github.fail_with = 503
    with pytest.raises(GitError, match=r"^github: GET /repos/example-org/clusters/pulls/1/reviews: HTTP 503 "):
        _client(github).approving_reviewers(1)


@pytest.fixture
def gitlab() -> FakeGitLab:
    fake = FakeGitLab("example-org/clusters")
    fake.add_user("platform-team")
    return fake


def test_gitlab_merge_request_reads(gitlab: FakeGitLab) -> None:
    client = gitlab.client()
    number = client.create_pull_request("upgrade-gate/cloudnative-pg", "main", "Upgrade", "", labels=(), reviewers=())
    gitlab.set_commits(number.number, HEAD, BASE)
    pull = client.pull_request(number.number)
    assert (pull.head, pull.head_sha, pull.base, pull.base_sha) == ("upgrade-gate/cloudnative-pg", HEAD, "main", BASE)
    gitlab.approve(number.number, "carol")
    gitlab.approve(number.number, "alice")
    assert client.approving_reviewers(number.number) == ["alice", "carol"]
    gitlab.add_team_member("example-org/platform-admins", "alice")
    assert client.is_team_member("example-org/platform-admins", "alice")
    assert not client.is_team_member("example-org/platform-admins", "carol")
    assert not client.is_team_member("example-org/platform-admins", "ghost")
    assert "GET /groups/example-org%2Fplatform-admins/members/all/102" in gitlab.requests


def test_gitlab_a_merge_request_gets_its_labels_and_reviewers_by_id(gitlab: FakeGitLab) -> None:
    gitlab.client().create_pull_request(
        "b", "main", "T", "body", labels=("upgrade-gate", "olm"), reviewers=("platform-team",)
    )
    (request,) = gitlab.open_pulls()
    assert (request["labels"], [r["username"] for r in request["reviewers"]]) == (
        ["upgrade-gate", "olm"],
        ["platform-team"],
    )
    assert request["description"] == "body"


def test_gitlab_an_unknown_reviewer_is_one_error(gitlab: FakeGitLab) -> None:
    with pytest.raises(GitError, match=r"^gitlab: no user named nobody \(forge.reviewers\)$"):
        gitlab.client().create_pull_request("b", "main", "T", "", labels=(), reviewers=("nobody",))


def test_gitlab_a_second_open_merge_request_of_a_branch_is_refused(gitlab: FakeGitLab) -> None:
    client = gitlab.client()
    client.create_pull_request("b", "main", "T", "", labels=(), reviewers=())
    with pytest.raises(GitError, match=r"HTTP 409 .*Another open merge request already exists for this source branch"):
        client.create_pull_request("b", "main", "T", "", labels=(), reviewers=())


@pytest.mark.parametrize("fake", [FakeGitHub, FakeGitLab], ids=["on GitHub", "on GitLab"])
def test_a_proposal_is_opened_updated_listed_closed_by_the_loop_and_declined_by_a_human(fake: type[FakeForge]) -> None:
    forge = fake("example-org/clusters")
    client = forge.client()
    first = client.create_pull_request("upgrade-gate/a", "main", "Upgrade a", "one", labels=(), reviewers=())
    second = client.create_pull_request("upgrade-gate/b", "main", "Upgrade b", "two", labels=(), reviewers=())
    client.create_pull_request("upgrade-gate/c", "release", "Upgrade c", "", labels=(), reviewers=())
    updated = client.update_pull_request(first, "Upgrade a to 2", "three")
    assert (updated.title, updated.body) == ("Upgrade a to 2", "three")
    assert sorted(client.open_pull_requests("main")) == ["upgrade-gate/a", "upgrade-gate/b"]
    client.close_pull_request(updated)
    forge.close(second.number)
    assert client.open_pull_requests("main") == {}
    assert [p.title for p in client.closed_pull_requests("upgrade-gate/a", "main")] == ["Upgrade a to 2 - autoclosed"]
    assert [p.title for p in client.closed_pull_requests("upgrade-gate/b", "main")] == ["Upgrade b"]
    forge.merge(second.number)
    assert client.closed_pull_requests("upgrade-gate/b", "main") == []


@pytest.mark.parametrize("fake", [FakeGitHub, FakeGitLab], ids=["on GitHub", "on GitLab"])
def test_open_proposals_are_read_on_every_page(fake: type[FakeForge]) -> None:
    forge = fake("example-org/clusters")
    client = forge.client()
    for index in range(101):
        client.create_pull_request(f"upgrade-gate/{index:03d}", "main", "T", "", labels=(), reviewers=())
    assert len(client.open_pull_requests("main")) == 101


@pytest.mark.parametrize("fake", [FakeGitHub, FakeGitLab], ids=["on GitHub", "on GitLab"])
def test_the_loopback_server_answers_as_the_transport_does(fake: type[FakeForge]) -> None:
    with fake("example-org/clusters") as forge:
        make = GitHub if isinstance(forge, FakeGitHub) else GitLab
        client = make(forge.url, forge.repository, "token")  # the real urllib transport
        pull = client.create_pull_request("upgrade-gate/a", "main", "Upgrade a", "", labels=("x",), reviewers=())
        assert client.pull_request(pull.number) == pull
        with pytest.raises(GitError, match=f"^{make.name}: GET .*/{pull.number + 1}: HTTP 404 "):
            client.pull_request(pull.number + 1)
