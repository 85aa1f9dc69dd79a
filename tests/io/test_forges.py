"""The forge clients tell bad input from an outage: a pull request the forge does not show (HTTP 404) is an
``InputError`` naming it, while no answer (refused, timed out), an HTTP 5xx or a rate limit (GitHub 403/429 with
its documented headers, GitLab 429) is a ``ForgeUnavailable``; any other refusal stays a plain ``GitError``. The
fakes answer 404 with each forge's documented body."""

from __future__ import annotations

import json
import re
import urllib.error

import pytest

from webhook.errors import ForgeUnavailable, GitError, InputError, Unavailable
from webhook.io.forges.base import HttpRequest, HttpResponse
from webhook.io.forges.fake import FakeForge, FakeGitHub, FakeGitLab
from webhook.io.forges.github import GitHub
from webhook.io.forges.gitlab import GitLab

REPOSITORY = "example-org/clusters"
FAKES = pytest.mark.parametrize("fake", [FakeGitHub, FakeGitLab], ids=["GitHub", "GitLab"])
PULL = {FakeGitHub: f"/repos/{REPOSITORY}/pulls/1", FakeGitLab: "/projects/example-org%2Fclusters/merge_requests/1"}
"""Where each client reads pull (merge) request 1, below the API root."""


def _opened(fake: type[FakeForge]) -> FakeForge:
    """A fake forge holding one open pull request, number 1."""
    forge = fake(REPOSITORY)
    forge.client().create_pull_request("feature", "main", "T", "", labels=(), reviewers=())
    return forge


@pytest.mark.parametrize(
    ("fake", "body"),
    [
        # https://docs.github.com/en/rest/using-the-rest-api/troubleshooting-the-rest-api: 404 {"message": "Not Found"}
        (FakeGitHub, {"message": "Not Found"}),
        # GitLab's REST API (https://docs.gitlab.com/ee/api/rest/troubleshooting.html): 404 {"message": "404 Not found"}
        (FakeGitLab, {"message": "404 Not found"}),
    ],
    ids=["GitHub", "GitLab"],
)
def test_the_fakes_answer_a_missing_pull_request_with_the_forges_documented_404(
    fake: type[FakeForge], body: dict[str, str]
) -> None:
    forge = fake(REPOSITORY)
    answer = forge.handle("GET", forge.offline_url + PULL[fake].replace("/1", "/7"), None)
    assert (answer.status, json.loads(answer.body)) == (404, body)
    outside = forge.handle("GET", "/elsewhere", None)
    assert (outside.status, json.loads(outside.body)) == (404, body)


@pytest.mark.parametrize(
    ("fake", "message"),
    [
        (FakeGitHub, "github: no pull request #7 in example-org/clusters"),
        (FakeGitLab, "gitlab: no merge request !7 in example-org/clusters"),
    ],
    ids=["GitHub", "GitLab"],
)
def test_a_pull_request_the_forge_does_not_show_is_bad_input_naming_it(fake: type[FakeForge], message: str) -> None:
    forge = _opened(fake)
    with pytest.raises(InputError) as raised:
        forge.client().pull_request(7)
    assert str(raised.value) == f"{message} (HTTP 404: it does not exist, or the token cannot read it)"
    assert not isinstance(raised.value, Unavailable)
    assert forge.client().pull_request(1).number == 1


@FAKES
@pytest.mark.parametrize("status", [500, 502, 503, 504])
def test_a_server_error_is_an_outage(fake: type[FakeForge], status: int) -> None:
    forge = _opened(fake)
    forge.outage(status)
    with pytest.raises(ForgeUnavailable) as raised:
        forge.client().pull_request(1)
    assert str(raised.value).startswith(f"{fake.__name__[4:].lower()}: GET {PULL[fake]}: HTTP {status} ")
    assert isinstance(raised.value, GitError), "the sync loop treats it as every forge failure"


@pytest.mark.parametrize(
    "error",
    [
        ConnectionRefusedError(111, "Connection refused"),
        TimeoutError("timed out"),
        urllib.error.URLError(ConnectionRefusedError(111, "Connection refused")),
    ],
    ids=["refused", "timed out", "urllib"],
)
def test_no_answer_is_an_outage(error: OSError) -> None:
    def transport(request: HttpRequest, timeout_s: float) -> HttpResponse:
        raise error

    client = GitHub("https://forge.invalid", REPOSITORY, "t0ken", transport=transport)
    with pytest.raises(ForgeUnavailable, match=f"^github: GET /repos/{REPOSITORY}/pulls/1: "):
        client.pull_request(1)


@FAKES
def test_a_forge_that_is_gone_refuses_the_connection_over_http(fake: type[FakeForge]) -> None:
    with fake(REPOSITORY) as forge:
        url = forge.url
    make = GitHub if fake is FakeGitHub else GitLab
    with pytest.raises(ForgeUnavailable, match=r"Connection refused"):
        make(url, REPOSITORY, "t0ken").pull_request(1)


@pytest.mark.parametrize(
    ("fake", "status", "headers", "limited"),
    [
        # https://docs.github.com/en/rest/using-the-rest-api/rate-limits-for-the-rest-api: the primary limit
        (FakeGitHub, 403, {"x-ratelimit-remaining": "0", "x-ratelimit-reset": "1772370000"}, "HTTP 403, the limit"),
        (FakeGitHub, 429, {"x-ratelimit-remaining": "0", "x-ratelimit-reset": "1772370000"}, "HTTP 429, the limit"),
        # a secondary limit: retry-after seconds
        (FakeGitHub, 403, {"retry-after": "30"}, "HTTP 403, retry after 30 s"),
        # GitLab: 429 with Retry-After and RateLimit-*, or (as gitlab.com has answered) without any header
        (FakeGitLab, 429, {"retry-after": "60", "ratelimit-remaining": "0"}, "HTTP 429, retry after 60 s"),
        (FakeGitLab, 429, {}, "HTTP 429)"),
    ],
    ids=["GitHub primary 403", "GitHub primary 429", "GitHub secondary", "GitLab", "GitLab without headers"],
)
def test_a_rate_limit_is_an_outage(fake: type[FakeForge], status: int, headers: dict[str, str], limited: str) -> None:
    forge = _opened(fake)
    forge.outage(status, headers=headers)
    with pytest.raises(ForgeUnavailable, match=f": rate limited \\({re.escape(limited)}"):
        forge.client().approving_reviewers(1)


@pytest.mark.parametrize(
    ("status", "headers"),
    [(403, {"x-ratelimit-remaining": "4999"}), (401, {}), (422, {})],
    ids=["403 with requests left", "401", "422"],
)
def test_a_refusal_is_no_outage(status: int, headers: dict[str, str]) -> None:
    forge = _opened(FakeGitHub)
    forge.outage(status, headers=headers)
    with pytest.raises(GitError) as raised:
        forge.client().pull_request(1)
    assert not isinstance(raised.value, Unavailable)
    assert str(raised.value).startswith(f"github: GET {PULL[FakeGitHub]}: HTTP {status} ")


@FAKES
def test_a_write_that_meets_an_outage_names_what_it_wrote_and_stays_an_outage(fake: type[FakeForge]) -> None:
    forge = _opened(fake)
    forge.outage(503)
    with pytest.raises(ForgeUnavailable, match=r"^\w+: cannot write the comment <!-- m --> on "):
        forge.client().upsert_comment(1, "<!-- m -->", "body")
