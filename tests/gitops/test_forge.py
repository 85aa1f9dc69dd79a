"""Forge reads for ``upgrade-gate review``: a pull request's commits, its approving reviewers and team
membership, on GitHub (the fake GitHub, in GitHub's documented shapes) and GitLab (a stub serving GitLab's
documented answers)."""

from __future__ import annotations

import json
import threading
import urllib.parse
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar

import pytest

from tests import tables
from webhook.errors import GitError
from webhook.gitops.fakeforge import FakeGitHub
from webhook.gitops.forge import GitHub, GitLab

REVIEWS = tables.load("gitops/reviews.yaml")
HEAD, BASE = "a" * 40, "b" * 40


@pytest.fixture
def github() -> Iterator[FakeGitHub]:
    with FakeGitHub("example-org/clusters") as fake:
        yield fake


def _client(fake: FakeGitHub) -> GitHub:
    return GitHub(fake.url, fake.repository, "token")


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


class _GitLabStub:
    """GitLab's documented answers for one project: merge request 3, its approvals, users and a group."""

    project = "/projects/example-org%2Fclusters/merge_requests"
    answers: ClassVar[dict[str, Any]] = {
        f"{project}/3": {
            "iid": 3,
            "source_branch": "upgrade-gate/cloudnative-pg",
            "target_branch": "main",
            "title": "Upgrade cloudnative-pg",
            "description": "",
            "web_url": "https://gitlab.invalid/example-org/clusters/-/merge_requests/3",
            "sha": HEAD,
            "diff_refs": {"base_sha": BASE, "head_sha": HEAD, "start_sha": BASE},
        },
        f"{project}/3/approvals": {
            "approved": True,
            "approved_by": [{"user": {"id": 2, "username": "carol", "name": "Carol"}}, {"user": {"username": "alice"}}],
        },
        "/users?username=alice": [{"id": 1, "username": "alice"}],
        "/users?username=carol": [{"id": 2, "username": "carol"}],
        "/users?username=ghost": [],
        "/groups/example-org%2Fplatform-admins/members/all/1": {"id": 1, "username": "alice", "access_level": 30},
    }

    def __init__(self) -> None:
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        answers = self.answers

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                parsed = urllib.parse.urlsplit(self.path)
                key = parsed.path + (f"?{parsed.query}" if parsed.query else "")
                found = key in answers
                data = json.dumps(answers[key] if found else {"message": "404 Not Found"}).encode()
                self.send_response(200 if found else 404)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:
                """Silent."""

        return Handler


@pytest.fixture
def gitlab() -> Iterator[GitLab]:
    stub = _GitLabStub()
    yield GitLab(stub.url, "example-org/clusters", "token")
    stub.server.shutdown()
    stub.server.server_close()


def test_gitlab_merge_request_reads(gitlab: GitLab) -> None:
    pull = gitlab.pull_request(3)
    assert (pull.head, pull.head_sha, pull.base, pull.base_sha) == ("upgrade-gate/cloudnative-pg", HEAD, "main", BASE)
    assert gitlab.approving_reviewers(3) == ["alice", "carol"]
    assert gitlab.is_team_member("example-org/platform-admins", "alice")
    assert not gitlab.is_team_member("example-org/platform-admins", "carol")
    assert not gitlab.is_team_member("example-org/platform-admins", "ghost")
