"""What the forge clients share: the ``Forge`` protocol the sync loop asks of a forge, its ``ForgeConfig``, the
``PullRequest`` it returns, and JSON over an injectable HTTP ``Transport`` with one error shape.

A pull request is found by its head branch (one per branch, as Renovate does); "closed" means closed without
being merged. When the sync loop withdraws its own pull request it closes it with ``AUTOCLOSED`` appended to
the title, as Renovate does: only a pull request closed under the proposal's own title (closed by a person)
declines that proposal. Every failure (unreachable, HTTP error, unexpected JSON) raises ``GitError``
``<forge>: <METHOD> <path>: <problem>``; the token never appears in messages.

HTTP goes through a ``Transport`` (default ``urllib_transport``); ``webhook.io.forges.fake`` has a fake GitHub
and a fake GitLab serving the clients' subsets (``github``, ``gitlab``) in memory, as a transport or on a
loopback port.
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


class JsonApi:
    """JSON over HTTP with one error shape, under each forge's client (``name`` starts its error messages)."""

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


def quote_segment(segment: str) -> str:
    """A path segment (a GitLab group path becomes one segment, as its API wants)."""
    return urllib.parse.quote(segment, safe="")
