"""The forge clients over the fake forges (in GitHub's and GitLab's documented shapes): a pull request's commits,
its approving reviewers and team membership for ``upgrade-gate review``, and the proposal lifecycle the sync loop
drives, the same on both forges."""

from __future__ import annotations

import re
from typing import Any

import pytest

from tests import tables
from webhook.errors import GitError, InputError
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
    with pytest.raises(InputError, match=r"^github: no pull request #7 in example-org/clusters \(HTTP 404: "):
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
        with pytest.raises(InputError, match=f"^{make.name}: no .*{pull.number + 1} in example-org/clusters .HTTP 404"):
            client.pull_request(pull.number + 1)


MARKER = "<!-- upgrade-gate:review -->"
COMMENT_URL = {
    FakeGitHub: r"https://github\.invalid/example-org/clusters/pull/1#issuecomment-(\d+)",
    FakeGitLab: r"https://gitlab\.invalid/example-org/clusters/-/merge_requests/1#note_(\d+)",
}


def _comments(forge: FakeForge, number: int) -> list[dict[str, Any]]:
    """The comments of pull request ``number`` as the forge holds them, oldest first."""
    if isinstance(forge, FakeGitLab):
        return forge.notes.get(number, [])
    assert isinstance(forge, FakeGitHub)
    return forge.comments.get(number, [])


def _opened(fake: type[FakeForge]) -> tuple[FakeForge, int]:
    forge = fake("example-org/clusters")
    return forge, forge.client().create_pull_request("upgrade-gate/a", "main", "T", "", labels=(), reviewers=()).number


@pytest.mark.parametrize("fake", [FakeGitHub, FakeGitLab], ids=["on GitHub", "on GitLab"])
def test_a_marked_comment_is_created_once_then_edited_in_place(fake: type[FakeForge]) -> None:
    forge, number = _opened(fake)
    client = forge.client()
    forge.comment(number, "alice", "looks fine")
    first = client.upsert_comment(number, MARKER, "verdict: allowed")
    second = client.upsert_comment(number, MARKER, f"{MARKER}\nverdict: denied")
    assert re.fullmatch(COMMENT_URL[fake], first) and first == second
    assert [c["body"] for c in _comments(forge, number)] == ["looks fine", f"{MARKER}\nverdict: denied"]
    written = len(forge.requests)
    assert client.upsert_comment(number, MARKER, "verdict: denied") == first
    assert not [r for r in forge.requests[written:] if not r.startswith("GET ")]  # unchanged: nothing written


@pytest.mark.parametrize("fake", [FakeGitHub, FakeGitLab], ids=["on GitHub", "on GitLab"])
def test_a_persons_edit_is_overwritten_and_a_comment_whose_marker_was_removed_is_left_alone(
    fake: type[FakeForge],
) -> None:
    forge, number = _opened(fake)
    client = forge.client()
    client.upsert_comment(number, MARKER, "one")
    _comments(forge, number)[0]["body"] = f"{MARKER}\none, and a person's note"
    client.upsert_comment(number, MARKER, "two")
    assert [c["body"] for c in _comments(forge, number)] == [f"{MARKER}\ntwo"]
    _comments(forge, number)[0]["body"] = "two, marker deleted"
    client.upsert_comment(number, MARKER, "three")
    assert [c["body"] for c in _comments(forge, number)] == ["two, marker deleted", f"{MARKER}\nthree"]


@pytest.mark.parametrize("fake", [FakeGitHub, FakeGitLab], ids=["on GitHub", "on GitLab"])
def test_the_marked_comment_is_found_past_the_first_page(fake: type[FakeForge]) -> None:
    forge, number = _opened(fake)
    forge.comment(number, "bot", f"{MARKER}\nold")
    for index in range(120):
        forge.comment(number, "alice", f"comment {index}")
    forge.client().upsert_comment(number, MARKER, "new")
    assert len(_comments(forge, number)) == 121
    assert _comments(forge, number)[0]["body"] == f"{MARKER}\nnew"


def test_gitlab_a_system_note_carrying_the_marker_is_not_the_comment() -> None:
    forge, number = _opened(FakeGitLab)
    assert isinstance(forge, FakeGitLab)
    forge.comment(number, "ghost", f"changed the description {MARKER}", system=True)
    forge.client().upsert_comment(number, MARKER, "verdict")
    assert [n["body"] for n in forge.notes[number]] == [f"changed the description {MARKER}", f"{MARKER}\nverdict"]


DASHBOARD = "<!-- upgrade-gate:dashboard -->"


def _issues(forge: FakeForge) -> list[tuple[str, str, str]]:
    """``(title, body, state)`` of every issue, by number."""
    text = "body" if isinstance(forge, FakeGitHub) else "description"
    return [(i["title"], i[text], i["state"]) for _, i in sorted(forge.issues.items())]


@pytest.mark.parametrize("fake", [FakeGitHub, FakeGitLab], ids=["on GitHub", "on GitLab"])
def test_the_marked_issue_is_created_once_then_edited_and_a_closed_one_is_replaced(fake: type[FakeForge]) -> None:
    forge = fake("example-org/clusters")
    client = forge.client()
    first = client.upsert_issue("Dashboard", DASHBOARD, "one")
    assert re.fullmatch(r"https://git(hub|lab)\.invalid/example-org/clusters(/-)?/issues/1", first)
    assert client.upsert_issue("Dashboard (2)", DASHBOARD, "two") == first
    assert _issues(forge) == [("Dashboard (2)", f"{DASHBOARD}\ntwo", "open" if fake is FakeGitHub else "opened")]
    forge.issues[1]["state"] = "closed"
    assert client.upsert_issue("Dashboard", DASHBOARD, "three") != first
    assert [state for _, _, state in _issues(forge)] == ["closed", "open" if fake is FakeGitHub else "opened"]


def test_github_a_pull_request_carrying_the_marker_is_not_the_issue(github: FakeGitHub) -> None:
    client = _client(github)
    client.create_pull_request("b", "main", "T", f"quoting {DASHBOARD}", labels=(), reviewers=())
    url = client.upsert_issue("Dashboard", DASHBOARD, "table")
    assert url == "https://github.invalid/example-org/clusters/issues/2"  # numbered after the pull request
    assert github.pulls[1]["body"] == f"quoting {DASHBOARD}"


@pytest.mark.parametrize(
    ("fake", "message"),
    [
        (
            FakeGitHub,
            "github: cannot write the comment <!-- upgrade-gate:review --> on pull request #1: "
            "GET /repos/example-org/clusters/issues/1/comments: "
            "rate limited (HTTP 403, the limit resets at 2026-03-01T13:00:00Z)",
        ),
        (
            FakeGitLab,
            "gitlab: cannot write the comment <!-- upgrade-gate:review --> on merge request !1: "
            "POST /projects/example-org%2Fclusters/merge_requests/1/notes: rate limited (HTTP 429, retry after 60 s)",
        ),
    ],
    ids=["on GitHub", "on GitLab"],
)
def test_a_rate_limited_write_is_one_line_naming_the_forge_and_what_was_written(
    fake: type[FakeForge], message: str
) -> None:
    forge, number = _opened(fake)
    forge.rate_limit(only="comments$|notes$" if fake is FakeGitHub else "POST .*/notes$")
    with pytest.raises(GitError) as raised:
        forge.client().upsert_comment(number, MARKER, "verdict")
    assert str(raised.value) == message


@pytest.mark.parametrize("fake", [FakeGitHub, FakeGitLab], ids=["on GitHub", "on GitLab"])
def test_a_forge_down_while_the_issue_is_written_is_one_line(fake: type[FakeForge]) -> None:
    forge = fake("example-org/clusters")
    forge.outage(502, headers={"retry-after": "5"})  # a 5xx is no rate limit, whatever its headers
    with pytest.raises(
        GitError,
        match=f"^{fake.__name__[4:].lower()}: cannot write the issue {DASHBOARD} "
        r"\(Dashboard\): GET /\S+/issues: HTTP 502 \{\"message\": \"Bad Gateway\"\}$",
    ):
        forge.client().upsert_issue("Dashboard", DASHBOARD, "table")


def test_github_a_403_without_rate_limit_headers_is_a_refusal(github: FakeGitHub) -> None:
    github.outage(403, headers={"x-ratelimit-remaining": "4999"})
    with pytest.raises(GitError, match=r"^github: cannot write .*: HTTP 403 \{\"message\": \"Forbidden\"\}$"):
        _client(github).upsert_issue("Dashboard", DASHBOARD, "table")


@pytest.mark.parametrize("fake", [FakeGitHub, FakeGitLab], ids=["on GitHub", "on GitLab"])
def test_a_rate_limit_is_read_from_the_headers_over_http(fake: type[FakeForge]) -> None:
    with fake("example-org/clusters") as forge:
        make = GitHub if isinstance(forge, FakeGitHub) else GitLab
        forge.rate_limit()
        with pytest.raises(GitError, match=r": rate limited \(HTTP 4\d\d, "):
            make(forge.url, forge.repository, "token").upsert_issue("Dashboard", DASHBOARD, "table")


@pytest.mark.parametrize("fake", [FakeGitHub, FakeGitLab], ids=["on GitHub", "on GitLab"])
def test_a_pull_request_is_merged_at_its_head_and_the_forge_lists_it_neither_open_nor_closed(
    fake: type[FakeForge],
) -> None:
    forge = fake("example-org/clusters")
    client = forge.client()
    merged: list[int] = []
    forge.on_merge = merged.append
    pull = client.create_pull_request("upgrade-gate/a", "main", "Upgrade a", "", labels=(), reviewers=())
    forge.set_commits(pull.number, HEAD, BASE)
    client.merge_pull_request(client.pull_request(pull.number))
    assert merged == [pull.number]
    assert client.open_pull_requests("main") == {}
    assert client.closed_pull_requests("upgrade-gate/a", "main") == [], "merged is not closed unmerged"
    merge = (
        "PUT /repos/example-org/clusters/pulls/1/merge"
        if fake is FakeGitHub
        else ("PUT /projects/example-org%2Fclusters/merge_requests/1/merge")
    )
    assert forge.requests[-3] == merge


@pytest.mark.parametrize(
    ("fake", "where"),
    [(FakeGitHub, "pull request #1"), (FakeGitLab, "merge request !1")],
    ids=["on GitHub", "on GitLab"],
)
@pytest.mark.parametrize(
    ("refuse", "status"),
    [("unmergeable", 405), ("closed", 405), ("head moved", 409)],
)
def test_a_merge_the_forge_refuses_is_one_line_with_its_status(
    fake: type[FakeForge], where: str, refuse: str, status: int
) -> None:
    forge = fake("example-org/clusters")
    client = forge.client()
    pull = client.create_pull_request("upgrade-gate/a", "main", "Upgrade a", "", labels=(), reviewers=())
    forge.set_commits(pull.number, HEAD, BASE)
    read = client.pull_request(pull.number)
    if refuse == "unmergeable":
        forge.unmergeable.add(pull.number)
    elif refuse == "closed":
        forge.close(pull.number)
    else:
        forge.set_commits(pull.number, "c" * 40, BASE)  # someone pushed after the loop read the head
    with pytest.raises(GitError) as raised:
        client.merge_pull_request(read)
    message = str(raised.value)
    assert message.startswith(f"{forge.client().name}: cannot write the merge of {where}: PUT ")
    assert f": HTTP {status} " in message
    assert "\n" not in message
    assert list(client.open_pull_requests("main")) == ([] if refuse == "closed" else ["upgrade-gate/a"])
