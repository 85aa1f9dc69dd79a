"""What the forge clients share: the ``Forge`` protocol the sync loop asks of a forge, its ``ForgeConfig``, the
``PullRequest`` it returns, and JSON over an injectable HTTP ``Transport`` with one error shape.

A pull request is found by its head branch (one per branch, as Renovate does); "closed" means closed without
being merged. When the sync loop withdraws its own pull request it closes it with ``AUTOCLOSED`` appended to
the title, as Renovate does: only a pull request closed under the proposal's own title (closed by a person)
declines that proposal. Every failure (unreachable, HTTP error, unexpected JSON) raises ``GitError``
``<forge>: <METHOD> <path>: <problem>``, one line; the token never appears in messages. An outage, a failure that
says nothing about the request (no answer: refused, timed out; HTTP 5xx; a rate limit), raises its subclass
``ForgeUnavailable`` (also an ``Unavailable``: retry later). A rate limit (GitHub's 403 or 429 with
``x-ratelimit-remaining: 0`` or ``retry-after``, GitLab's 429) reads ``rate limited (HTTP 429, retry after 60 s)``;
a write the sync loop repeats each run (``upsert_comment``, ``upsert_issue``) names what was being written:
``<forge>: cannot write <what>: <METHOD> <path>: <problem>``. A pull request asked for by number that the forge
does not show (HTTP 404: none of that number, or a repository the token cannot read, which both forges answer
alike) raises ``InputError`` ``<forge>: no pull request #<n> in <repository> (...)`` (GitLab: merge request
``!<n>``): whoever gave the number gave a wrong one.

HTTP goes through a ``Transport`` (default ``urllib_transport``); ``webhook.io.forges.fake`` has a fake GitHub
and a fake GitLab serving the clients' subsets (``github``, ``gitlab``) in memory, as a transport or on a
loopback port.
"""

from __future__ import annotations

import contextlib
import datetime
import json
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from webhook.errors import ForgeUnavailable, GitError, InputError, outage

PAGE_SIZE = 100
AUTOCLOSED = " - autoclosed"
"""Appended to the title of a pull request the sync loop closes itself (Renovate's marker)."""
_RAISE = object()
_MISSING = object()


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

    def merge_pull_request(self, pull: PullRequest) -> None:
        """Merge an open pull request at its ``head_sha`` (when known: the forge refuses once the head moved). Raises
        ``GitError`` ``<forge>: cannot write the merge of pull request #<n>: ...`` (GitLab: merge request ``!<n>``);
        a pull request the forge will not merge (closed, conflicting, checks failing, head moved) answers HTTP 405,
        409 or 422 (GitLab also 406), which the message gives."""

    def pull_request(self, number: int) -> PullRequest:
        """Pull request ``number`` with its head and base commits. Raises ``InputError`` when the forge does not
        show it (HTTP 404), ``ForgeUnavailable`` when the forge is unavailable, ``GitError`` else."""

    def approving_reviewers(self, number: int) -> list[str]:
        """The logins whose review approves pull request ``number`` now, sorted."""

    def is_team_member(self, team: str, login: str) -> bool:
        """Whether ``login`` is a member of ``team`` (GitHub ``ORG/TEAM-SLUG``, GitLab group path)."""

    def upsert_comment(self, number: int, marker: str, body: str) -> str:
        """Create, or update in place, the one comment of pull request ``number`` whose body contains ``marker``
        (a hidden HTML comment such as ``<!-- upgrade-gate:review -->``); its web URL.

        ``body`` is written as given when it contains ``marker``, else under a first line holding ``marker``.
        The oldest comment carrying the marker is the one updated, and only when its body differs. A person's
        edit of the rest of that comment is overwritten; a comment whose marker a person edited away is no
        longer found, so a new one is created. Raises ``GitError`` ``<forge>: cannot write ...``."""

    def upsert_issue(self, title: str, marker: str, body: str) -> str:
        """Create, or update in place (title and body), the one open issue whose body contains ``marker``; its
        web URL. Pull requests are not issues here; ``body`` and a person's edits are treated as
        ``upsert_comment`` treats them; a closed issue is left closed and a new one is opened. Raises
        ``GitError`` ``<forge>: cannot write ...``."""


@dataclass(frozen=True, slots=True)
class HttpRequest:
    """One request to a forge: ``method``, absolute ``url`` (query included), ``headers``, JSON ``body`` bytes."""

    method: str
    url: str
    headers: Mapping[str, str]
    body: bytes | None = None


@dataclass(frozen=True, slots=True)
class HttpResponse:
    """A forge's answer: HTTP ``status``, ``body`` bytes (any status: the client reads 4xx and 5xx) and
    ``headers`` (names lower-cased)."""

    status: int
    body: bytes
    headers: Mapping[str, str] = field(default_factory=dict)


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
            return HttpResponse(response.status, response.read(), _lower(response.headers.items()))
    except urllib.error.HTTPError as error:
        with error:
            return HttpResponse(error.code, error.read(), _lower(error.headers.items()))


def _lower(headers: Iterable[tuple[str, str]]) -> dict[str, str]:
    return {name.lower(): value for name, value in headers}


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
        answer is HTTP 404. Raises ``ForgeUnavailable`` for no answer (``OSError``), an HTTP 5xx or a rate limit,
        ``GitError`` for another failure."""
        url = f"{self._url}{path}"
        if query:
            url += "?" + urllib.parse.urlencode(query)
        data = None if body is None else json.dumps(body).encode()
        headers = {**self._headers, **({"Content-Type": "application/json"} if data is not None else {})}
        try:
            response = self._transport(HttpRequest(method, url, headers, data), self._timeout_s)
        except OSError as error:
            reason = getattr(error, "reason", error)
            raise ForgeUnavailable(f"{self.name}: {method} {path}: {reason}") from None
        if response.status == 404 and absent is not _RAISE:
            return absent
        limited = rate_limit(response)
        if limited:
            raise ForgeUnavailable(f"{self.name}: {method} {path}: {limited}")
        if response.status >= 400:
            detail = " ".join(response.body.decode("utf-8", "replace")[:200].split())
            kind = ForgeUnavailable if outage(response.status) else GitError
            raise kind(f"{self.name}: {method} {path}: HTTP {response.status} {detail}".rstrip())
        try:
            return json.loads(response.body) if response.body else None
        except (json.JSONDecodeError, UnicodeDecodeError):
            raise GitError(f"{self.name}: {method} {path}: the answer is not JSON") from None

    def found(self, path: str, what: str) -> Any:
        """``GET path``: the decoded JSON of ``what`` (``pull request #7 in owner/repo``); raises ``InputError``
        ``<forge>: no <what> (HTTP 404: ...)`` when the forge answers 404, else as ``call``."""
        answer = self.call("GET", path, absent=_MISSING)
        if answer is _MISSING:
            raise InputError(f"{self.name}: no {what} (HTTP 404: it does not exist, or the token cannot read it)")
        return answer

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

    def upsert_marked(
        self,
        listed: Iterable[Any],
        marker: str,
        create: str,
        update: tuple[str, str],
        payload: Mapping[str, str],
        *,
        text: str = "body",
    ) -> Mapping[str, Any]:
        """The first of ``listed`` (JSON objects) whose field ``text`` holds ``marker``: unchanged when its fields
        already equal ``payload`` (its ``text`` under ``marker``, ``marked``), else updated by ``update`` (method
        and path, with ``{id}``/``{number}``/``{iid}`` filled from the item); ``POST create`` with ``payload``
        when none holds it. The written object."""
        payload = {**payload, text: marked(marker, payload[text])}
        found = next((i for i in listed if isinstance(i, Mapping) and marker in str(i.get(text) or "")), None)
        if found is None:
            answer = self.call("POST", create, body=dict(payload))
        elif all(found.get(key) == value for key, value in payload.items()):
            answer = found
        else:
            answer = self.call(update[0], update[1].format(**found), body=dict(payload))
        if not isinstance(answer, Mapping):
            raise GitError(f"{self.name}: {create}: expected a JSON object")
        return answer

    @contextlib.contextmanager
    def writing(self, what: str) -> Iterator[None]:
        """Re-raise a ``GitError`` of the calls inside as ``<forge>: cannot write <what>: <problem>``, of the same
        class (an outage stays a ``ForgeUnavailable``)."""
        try:
            yield
        except GitError as error:
            problem = str(error).removeprefix(f"{self.name}: ")
            raise type(error)(f"{self.name}: cannot write {what}: {problem}") from None


def rate_limit(response: HttpResponse) -> str:
    """``rate limited (HTTP <status>, <when to retry>)`` when ``response`` refuses for a rate limit, else ``""``.

    GitHub (https://docs.github.com/en/rest/using-the-rest-api/rate-limits-for-the-rest-api) answers 403 or 429
    with ``x-ratelimit-remaining: 0`` and ``x-ratelimit-reset`` (UTC epoch seconds) for its primary limit and
    ``retry-after`` (seconds) for a secondary one; GitLab answers 429 with ``Retry-After``."""
    headers = response.headers
    exhausted = headers.get("x-ratelimit-remaining") == "0"
    if not (response.status == 429 or (response.status == 403 and (exhausted or "retry-after" in headers))):
        return ""
    if headers.get("retry-after", "").isdigit():
        return f"rate limited (HTTP {response.status}, retry after {headers['retry-after']} s)"
    if exhausted and headers.get("x-ratelimit-reset", "").isdigit():
        reset = datetime.datetime.fromtimestamp(int(headers["x-ratelimit-reset"]), datetime.UTC)
        return f"rate limited (HTTP {response.status}, the limit resets at {reset:%Y-%m-%dT%H:%M:%SZ})"
    return f"rate limited (HTTP {response.status})"


def marked(marker: str, body: str) -> str:
    """``body`` as written under ``marker``: unchanged when it contains ``marker``, else below it."""
    return body if marker in body else f"{marker}\n{body}"


def quote_segment(segment: str) -> str:
    """A path segment (a GitLab group path becomes one segment, as its API wants)."""
    return urllib.parse.quote(segment, safe="")
