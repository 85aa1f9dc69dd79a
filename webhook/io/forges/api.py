"""Pull requests on a Git forge, through its REST API (``urllib``, no SDK): GitHub and GitLab.

The subset used, per forge (``repository`` is ``owner/name`` or ``group/project``)::

    GitHub (https://docs.github.com/en/rest/pulls/pulls, X-GitHub-Api-Version 2022-11-28, Bearer token)
      GET   /repos/{owner}/{repo}/pulls?state=open&base=B&per_page=100&page=N     list open pull requests
      GET   /repos/{owner}/{repo}/pulls?state=closed&head=OWNER:H&base=B          closed ones of a branch
      POST  /repos/{owner}/{repo}/pulls                {title, head, base, body}  create
      PATCH /repos/{owner}/{repo}/pulls/{number}       {title, body} | {state, title}  update, close
      POST  /repos/{owner}/{repo}/issues/{number}/labels              {labels}    add labels
      POST  /repos/{owner}/{repo}/pulls/{number}/requested_reviewers  {reviewers} request reviews
      GET   /repos/{owner}/{repo}/pulls/{number}          one pull request (head/base ref and sha)
    (https://docs.github.com/en/rest/pulls/reviews)
      GET   /repos/{owner}/{repo}/pulls/{number}/reviews?per_page=100&page=N   reviews, oldest first
    (https://docs.github.com/en/rest/teams/members)
      GET   /orgs/{org}/teams/{team_slug}/memberships/{username}   200 {state: active|pending, role}; 404
    GitLab (https://docs.gitlab.com/api/merge_requests/, PRIVATE-TOKEN header)
      GET   /projects/{id}/merge_requests?state=opened|closed&target_branch=B[&source_branch=H]
      POST  /projects/{id}/merge_requests   {source_branch, target_branch, title, description, labels,
                                             reviewer_ids}  (user ids from GET /users?username=U)
      PUT   /projects/{id}/merge_requests/{iid}   {title, description} | {state_event: close, title}
      GET   /projects/{id}/merge_requests/{iid}   one merge request (sha, diff_refs.base_sha)
    (https://docs.gitlab.com/api/merge_request_approvals/)
      GET   /projects/{id}/merge_requests/{iid}/approvals   {approved_by: [{user: {username}}]}
    (https://docs.gitlab.com/api/members/)
      GET   /groups/{id}/members/all/{user_id}   200 a member (direct or inherited); 404 not a member

Approving reviewers: on GitHub, each user's latest review that is not ``COMMENTED`` (nor a ``PENDING``
draft) decides: ``APPROVED`` counts, ``CHANGES_REQUESTED`` or ``DISMISSED`` cancels an earlier approval; on
GitLab, the users the merge request's approvals list. A team is ``ORG/TEAM-SLUG`` on GitHub (an active
membership counts, a pending invitation does not) and a group's full path on GitLab.

A pull request is found by its head branch (one per branch, as Renovate does); "closed" means closed without
being merged. When the sync loop withdraws its own pull request it closes it with ``AUTOCLOSED`` appended to
the title, as Renovate does: only a pull request closed under the proposal's own title (closed by a person)
declines that proposal. Every failure (unreachable, HTTP error, unexpected JSON) raises ``GitError``
``<forge>: <METHOD> <path>: <problem>``; the token never appears in messages.

HTTP goes through a ``Transport`` (default ``urllib_transport``); ``webhook.io.forges.fake`` has a fake GitHub
and a fake GitLab serving these subsets in memory, as a transport or on a loopback port.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from webhook.errors import GitError

PAGE_SIZE = 100
AUTOCLOSED = " - autoclosed"
"""Appended to the title of a pull request the sync loop closes itself (Renovate's marker)."""
_RAISE = object()


@dataclass(frozen=True, slots=True)
class ForgeConfig:
    """Where pull requests are opened: ``type`` github/gitlab/none, ``repository``, API ``url``."""

    type: str = "none"
    repository: str = ""
    url: str = ""
    labels: tuple[str, ...] = ()
    reviewers: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class PullRequest:
    """A pull (merge) request: its number (GitLab ``iid``), branches, text, and web URL."""

    number: int
    head: str
    base: str
    title: str
    body: str
    url: str
    head_sha: str = ""
    base_sha: str = ""


class Forge(Protocol):
    """What the sync loop asks of a forge."""

    name: str

    def open_pull_requests(self, base: str) -> dict[str, PullRequest]:
        """Open pull requests into ``base``, by head branch."""

    def closed_pull_requests(self, head: str, base: str) -> list[PullRequest]:
        """Pull requests from ``head`` into ``base`` closed without being merged."""

    def create_pull_request(
        self, head: str, base: str, title: str, body: str, *, labels: Sequence[str], reviewers: Sequence[str]
    ) -> PullRequest:
        """Open a pull request, add ``labels`` and request ``reviewers``."""

    def update_pull_request(self, pull: PullRequest, title: str, body: str) -> PullRequest:
        """Set a pull request's title and body."""

    def close_pull_request(self, pull: PullRequest) -> None:
        """Close a pull request without merging it, ``AUTOCLOSED`` appended to its title."""

    def pull_request(self, number: int) -> PullRequest:
        """Pull request ``number`` with its head and base commits."""

    def approving_reviewers(self, number: int) -> list[str]:
        """The logins whose review approves pull request ``number`` now, sorted."""

    def is_team_member(self, team: str, login: str) -> bool:
        """Whether ``login`` is a member of ``team`` (GitHub ``ORG/TEAM-SLUG``, GitLab group path)."""


def make_forge(
    config: ForgeConfig, token: str, *, timeout_s: float = 30.0, transport: Transport | None = None
) -> Forge | None:
    """The forge ``config`` names, or ``None`` for ``type: none`` (branches are pushed, no pull request);
    ``transport`` replaces the HTTP transport (``urllib_transport``), e.g. with a fake forge's."""
    if config.type == "github":
        return GitHub(config.url, config.repository, token, timeout_s, transport or urllib_transport)
    if config.type == "gitlab":
        return GitLab(config.url, config.repository, token, timeout_s, transport or urllib_transport)
    return None


@dataclass(frozen=True, slots=True)
class HttpRequest:
    """One request to a forge: ``method``, absolute ``url`` (query included), ``headers``, JSON ``body`` bytes."""

    method: str
    url: str
    headers: Mapping[str, str]
    body: bytes | None = None


@dataclass(frozen=True, slots=True)
class HttpResponse:
    """A forge's answer: HTTP ``status`` and ``body`` bytes (any status: the client reads 4xx and 5xx)."""

    status: int
    body: bytes


class Transport(Protocol):
    """Sends one request and returns the answer, whatever its status, within ``timeout_s`` seconds; raises
    ``OSError`` when no answer comes (unreachable, refused, timed out). The seam a fake forge plugs into
    (``webhook.io.forges.fake``), as httpx's ``MockTransport`` does."""

    def __call__(self, request: HttpRequest, timeout_s: float) -> HttpResponse: ...


def urllib_transport(request: HttpRequest, timeout_s: float) -> HttpResponse:
    """The real ``Transport``: ``urllib.request`` (``URLError`` is an ``OSError``)."""
    sent = urllib.request.Request(request.url, data=request.body, method=request.method, headers=dict(request.headers))
    try:
        with urllib.request.urlopen(sent, timeout=timeout_s) as response:
            return HttpResponse(response.status, response.read())
    except urllib.error.HTTPError as error:
        with error:
            return HttpResponse(error.code, error.read())


class _Http:
    """JSON over HTTP with one error shape."""

    name = "forge"

    def __init__(
        self, url: str, headers: Mapping[str, str], timeout_s: float, transport: Transport = urllib_transport
    ) -> None:
        self._url = url.rstrip("/")
        self._headers = {"Accept": "application/json", "User-Agent": "upgrade-gate", **headers}
        self._timeout_s = timeout_s
        self._transport = transport

    def call(
        self,
        method: str,
        path: str,
        query: Mapping[str, str] | None = None,
        body: Any = None,
        *,
        absent: Any = _RAISE,
    ) -> Any:
        """``METHOD path?query`` with a JSON body; the decoded JSON answer, or ``absent`` when given and the
        answer is HTTP 404. Raises ``GitError``."""
        url = f"{self._url}{path}"
        if query:
            url += "?" + urllib.parse.urlencode(query)
        data = None if body is None else json.dumps(body).encode()
        headers = {**self._headers, **({"Content-Type": "application/json"} if data is not None else {})}
        try:
            response = self._transport(HttpRequest(method, url, headers, data), self._timeout_s)
        except OSError as error:
            reason = getattr(error, "reason", error)
            raise GitError(f"{self.name}: {method} {path}: {reason}") from None
        if response.status == 404 and absent is not _RAISE:
            return absent
        if response.status >= 400:
            detail = response.body.decode("utf-8", "replace")[:200]
            raise GitError(f"{self.name}: {method} {path}: HTTP {response.status} {detail}".rstrip())
        try:
            return json.loads(response.body) if response.body else None
        except (json.JSONDecodeError, UnicodeDecodeError):
            raise GitError(f"{self.name}: {method} {path}: the answer is not JSON") from None

    def pages(self, path: str, query: Mapping[str, str]) -> list[Any]:
        """Every item of a paginated list (``per_page``/``page``, until a short page)."""
        items: list[Any] = []
        page = 1
        while True:
            answer = self.call("GET", path, {**query, "per_page": str(PAGE_SIZE), "page": str(page)})
            if not isinstance(answer, list):
                raise GitError(f"{self.name}: GET {path}: expected a JSON list")
            items.extend(answer)
            if len(answer) < PAGE_SIZE:
                return items
            page += 1


class GitHub(_Http):
    """The GitHub REST API (github.com or GitHub Enterprise Server at ``<host>/api/v3``)."""

    name = "github"

    def __init__(
        self, url: str, repository: str, token: str, timeout_s: float = 30.0, transport: Transport = urllib_transport
    ) -> None:
        headers = {"Accept": "application/vnd.github+json", "X-GitHub-Api-Version": "2022-11-28"}
        if token:
            headers["Authorization"] = f"Bearer {token}"
        super().__init__(url, headers, timeout_s, transport)
        self._repo = repository
        self._owner = repository.split("/", 1)[0]

    def open_pull_requests(self, base: str) -> dict[str, PullRequest]:
        """Open pull requests into ``base``, by head branch (forks' pull requests are ignored)."""
        pulls = [self._pull(p) for p in self.pages(f"/repos/{self._repo}/pulls", {"state": "open", "base": base})]
        return {p.head: p for p in sorted(pulls, key=lambda p: p.number)}

    def closed_pull_requests(self, head: str, base: str) -> list[PullRequest]:
        """Pull requests from ``head`` closed with ``merged_at`` null."""
        query = {"state": "closed", "head": f"{self._owner}:{head}", "base": base}
        found = self.pages(f"/repos/{self._repo}/pulls", query)
        return [self._pull(p) for p in found if p.get("merged_at") is None and _head(p) == head]

    def create_pull_request(
        self, head: str, base: str, title: str, body: str, *, labels: Sequence[str], reviewers: Sequence[str]
    ) -> PullRequest:
        """``POST /pulls``, then labels and review requests when given."""
        pull = self._pull(
            self.call(
                "POST", f"/repos/{self._repo}/pulls", body={"title": title, "head": head, "base": base, "body": body}
            )
        )
        if labels:
            self.call("POST", f"/repos/{self._repo}/issues/{pull.number}/labels", body={"labels": list(labels)})
        if reviewers:
            self.call(
                "POST",
                f"/repos/{self._repo}/pulls/{pull.number}/requested_reviewers",
                body={"reviewers": list(reviewers)},
            )
        return pull

    def update_pull_request(self, pull: PullRequest, title: str, body: str) -> PullRequest:
        """``PATCH /pulls/{number}`` with the title and body."""
        return self._pull(
            self.call("PATCH", f"/repos/{self._repo}/pulls/{pull.number}", body={"title": title, "body": body})
        )

    def close_pull_request(self, pull: PullRequest) -> None:
        """``PATCH /pulls/{number}`` with ``state: closed`` and the title marked ``AUTOCLOSED``."""
        body = {"state": "closed", "title": pull.title + AUTOCLOSED}
        self.call("PATCH", f"/repos/{self._repo}/pulls/{pull.number}", body=body)

    def pull_request(self, number: int) -> PullRequest:
        """``GET /pulls/{number}``."""
        return self._pull(self.call("GET", f"/repos/{self._repo}/pulls/{number}"))

    def approving_reviewers(self, number: int) -> list[str]:
        """``GET /pulls/{number}/reviews`` (every page): each user's latest review other than ``COMMENTED``
        and ``PENDING`` decides, and only ``APPROVED`` approves."""
        latest: dict[str, str] = {}
        for review in self.pages(f"/repos/{self._repo}/pulls/{number}/reviews", {}):
            try:
                login, state = str(review["user"]["login"]), str(review["state"])
            except (KeyError, TypeError):
                raise GitError(f"{self.name}: unexpected review JSON") from None
            if state not in ("COMMENTED", "PENDING"):
                latest[login] = state
        return sorted(login for login, state in latest.items() if state == "APPROVED")

    def is_team_member(self, team: str, login: str) -> bool:
        """``GET /orgs/{org}/teams/{team_slug}/memberships/{username}``: an ``active`` membership."""
        org, _, slug = team.partition("/")
        path = f"/orgs/{_quote(org)}/teams/{_quote(slug)}/memberships/{_quote(login)}"
        membership = self.call("GET", path, absent=None)
        return isinstance(membership, Mapping) and membership.get("state") == "active"

    def _pull(self, data: Any) -> PullRequest:
        try:
            return PullRequest(
                number=int(data["number"]),
                head=_head(data),
                base=str(data["base"]["ref"]),
                title=str(data["title"]),
                body=str(data.get("body") or ""),
                url=str(data.get("html_url") or ""),
                head_sha=str(data["head"].get("sha") or ""),
                base_sha=str(data["base"].get("sha") or ""),
            )
        except (KeyError, TypeError, ValueError):
            raise GitError(f"{self.name}: unexpected pull request JSON") from None


class GitLab(_Http):
    """The GitLab REST API v4 (gitlab.com or a self-managed ``<host>/api/v4``)."""

    name = "gitlab"

    def __init__(
        self, url: str, repository: str, token: str, timeout_s: float = 30.0, transport: Transport = urllib_transport
    ) -> None:
        super().__init__(url, {"PRIVATE-TOKEN": token} if token else {}, timeout_s, transport)
        self._project = f"/projects/{_quote(repository)}/merge_requests"

    def open_pull_requests(self, base: str) -> dict[str, PullRequest]:
        """Opened merge requests into ``base``, by source branch."""
        found = [self._pull(m) for m in self.pages(self._project, {"state": "opened", "target_branch": base})]
        return {p.head: p for p in sorted(found, key=lambda p: p.number)}

    def closed_pull_requests(self, head: str, base: str) -> list[PullRequest]:
        """Merge requests in state ``closed`` (GitLab keeps merged ones in ``merged``)."""
        query = {"state": "closed", "source_branch": head, "target_branch": base}
        return [self._pull(m) for m in self.pages(self._project, query)]

    def create_pull_request(
        self, head: str, base: str, title: str, body: str, *, labels: Sequence[str], reviewers: Sequence[str]
    ) -> PullRequest:
        """``POST /merge_requests`` with labels and reviewer ids looked up by user name."""
        ids = []
        for username in reviewers:
            users = self.call("GET", "/users", {"username": username})
            if not isinstance(users, list) or not users:
                raise GitError(f"{self.name}: no user named {username} (forge.reviewers)")
            ids.append(users[0]["id"])
        payload = {"source_branch": head, "target_branch": base, "title": title, "description": body}
        if labels:
            payload["labels"] = ",".join(labels)
        return self._pull(self.call("POST", self._project, body={**payload, **({"reviewer_ids": ids} if ids else {})}))

    def update_pull_request(self, pull: PullRequest, title: str, body: str) -> PullRequest:
        """``PUT /merge_requests/{iid}`` with the title and description."""
        return self._pull(
            self.call("PUT", f"{self._project}/{pull.number}", body={"title": title, "description": body})
        )

    def close_pull_request(self, pull: PullRequest) -> None:
        """``PUT /merge_requests/{iid}`` with ``state_event: close`` and the title marked ``AUTOCLOSED``."""
        body = {"state_event": "close", "title": pull.title + AUTOCLOSED}
        self.call("PUT", f"{self._project}/{pull.number}", body=body)

    def pull_request(self, number: int) -> PullRequest:
        """``GET /merge_requests/{iid}``."""
        return self._pull(self.call("GET", f"{self._project}/{number}"))

    def approving_reviewers(self, number: int) -> list[str]:
        """``GET /merge_requests/{iid}/approvals``: ``approved_by[].user.username``."""
        answer = self.call("GET", f"{self._project}/{number}/approvals")
        try:
            return sorted(str(item["user"]["username"]) for item in answer.get("approved_by") or [])
        except (AttributeError, KeyError, TypeError):
            raise GitError(f"{self.name}: unexpected approvals JSON") from None

    def is_team_member(self, team: str, login: str) -> bool:
        """``GET /groups/{path}/members/all/{user_id}`` (the user id from ``GET /users?username=``); a user
        GitLab does not know is no member."""
        users = self.call("GET", "/users", {"username": login})
        if not isinstance(users, list) or not users:
            return False
        member = self.call("GET", f"/groups/{_quote(team)}/members/all/{users[0]['id']}", absent=None)
        return isinstance(member, Mapping)

    def _pull(self, data: Any) -> PullRequest:
        try:
            return PullRequest(
                number=int(data["iid"]),
                head=str(data["source_branch"]),
                base=str(data["target_branch"]),
                title=str(data["title"]),
                body=str(data.get("description") or ""),
                url=str(data.get("web_url") or ""),
                head_sha=str(data.get("sha") or ""),
                base_sha=str((data.get("diff_refs") or {}).get("base_sha") or ""),
            )
        except (KeyError, TypeError, ValueError):
            raise GitError(f"{self.name}: unexpected merge request JSON") from None


def _quote(segment: str) -> str:
    """A path segment (a GitLab group path becomes one segment, as its API wants)."""
    return urllib.parse.quote(segment, safe="")


def _head(data: Any) -> str:
    try:
        return str(data["head"]["ref"])
    except (KeyError, TypeError):
        raise GitError("github: unexpected pull request JSON") from None
