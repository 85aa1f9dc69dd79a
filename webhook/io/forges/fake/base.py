"""What every fake forge shares: the in-memory transport, the loopback server, the request log and outages.

A fake answers ``answer(method, path, query, body) -> (status, JSON)`` for paths below its API root; ``transport``
is a ``webhook.io.forges.base.Transport`` calling it in process (the real client over it, as httpx's
``MockTransport``), and the context manager serves the same answers on ``url`` (a loopback port) for a client
that only takes a URL (``upgrade-gate sync`` and ``review`` read theirs from ``upgrade-gate.yaml``).
"""

from __future__ import annotations

import abc
import json
import re
import threading
import urllib.parse
from collections.abc import Callable
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, ClassVar, Self

from webhook.io.forges.base import Forge, HttpRequest, HttpResponse

#: Where a fake transport's client points (no host is contacted).
OFFLINE_URL = "https://forge.invalid"


class FakeForge(abc.ABC):
    """A forge's REST API for one repository, in memory. Subclasses set ``root`` (the API's path prefix) and
    implement ``respond``, ``client`` and what a person does on the forge (approve, close, merge...);
    ``requests`` logs ``"METHOD path"`` (below ``root``) of every call, and ``fail_with`` makes every request
    answer that HTTP status (an outage) with ``fail_headers``, or only the requests whose ``"METHOD path"``
    matches the regular expression ``fail_only`` (searched; ``""`` matches all). A merge through the API is
    refused for the numbers in ``unmergeable`` (conflicts, failing required checks) and calls ``on_merge`` with
    the number once merged: the Git side of a merge is the caller's business."""

    root = ""
    not_found: ClassVar[dict[str, str]]
    """The JSON body of the forge's HTTP 404 (GitHub ``{"message": "Not Found"}``, GitLab
    ``{"message": "404 Not found"}``)."""
    issues: dict[int, dict[str, Any]]
    """The issues, by number (GitLab ``iid``), in the forge's shape."""

    def __init__(self, repository: str) -> None:
        self.repository = repository
        self.requests: list[str] = []
        self.fail_with: int | None = None
        self.fail_headers: dict[str, str] = {}
        self.fail_only = ""
        self.unmergeable: set[int] = set()
        self.on_merge: Callable[[int], None] | None = None
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        """The API base URL served while the context is open (``http://127.0.0.1:<port><root>``)."""
        if self._server is None:
            raise RuntimeError("the fake forge serves on a port only inside its context (with ...)")
        return f"http://127.0.0.1:{self._server.server_address[1]}{self.root}"

    @property
    def offline_url(self) -> str:
        """The API base URL for a client over ``transport``."""
        return OFFLINE_URL + self.root

    @property
    def api_url(self) -> str:
        """``url`` while serving, else ``offline_url``: where the API's own links point."""
        return self.url if self._server is not None else self.offline_url

    def __enter__(self) -> Self:
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        if self._server is not None and self._thread is not None:
            self._server.shutdown()
            self._server.server_close()
            self._thread.join()

    def transport(self, request: HttpRequest, timeout_s: float) -> HttpResponse:
        """A ``Transport`` answering in process, whatever the URL's host."""
        return self.handle(request.method, request.url, request.body)

    def handle(self, method: str, target: str, body: bytes | None) -> HttpResponse:
        """The answer to ``METHOD target`` (a URL or a path, with its query)."""
        parsed = urllib.parse.urlsplit(target)
        if not parsed.path.startswith(self.root):
            return HttpResponse(404, json.dumps(self.not_found).encode())
        query = dict(urllib.parse.parse_qsl(parsed.query))
        with self._lock:
            path = parsed.path[len(self.root) :]
            self.requests.append(f"{method} {path}")
            if self.fail_with is not None and re.search(self.fail_only, f"{method} {path}"):
                answer = {"message": HTTPStatus(self.fail_with).phrase}
                return HttpResponse(self.fail_with, json.dumps(answer).encode(), dict(self.fail_headers))
            status, answer = self.respond(method, path, query, json.loads(body) if body else None)
        return HttpResponse(status, json.dumps(answer).encode())

    def outage(self, status: int, only: str = "", headers: dict[str, str] | None = None) -> None:
        """Answer HTTP ``status`` with ``headers`` to every request, or to those matching ``only`` (sets
        ``fail_with``, ``fail_only`` and ``fail_headers``; ``fail_with = None`` ends the outage)."""
        self.fail_with, self.fail_only, self.fail_headers = status, only, dict(headers or {})

    def merge_refusal(self, number: int, is_open: bool, head_sha: str, body: Any) -> int | None:
        """The status a merge through the API is refused with, as both forges document it: 405 when the pull
        request is not open or not mergeable (``unmergeable``), 409 when the request names a ``sha`` other than
        the head's; ``None`` when it merges (``merge``, then ``on_merge``)."""
        if not is_open or number in self.unmergeable:
            return 405
        wanted = body.get("sha") if isinstance(body, dict) else None
        if wanted and wanted != head_sha:
            return 409
        self.merge(number)
        if self.on_merge is not None:
            self.on_merge(number)
        return None

    @abc.abstractmethod
    def comment(self, number: int, login: str, body: str) -> dict[str, Any]:
        """``login`` comments on pull request ``number`` (as a person would); the comment."""

    @abc.abstractmethod
    def rate_limit(self, only: str = "") -> None:
        """Refuse every request (or those matching ``only``) as the forge does when its rate limit is spent."""

    @abc.abstractmethod
    def respond(self, method: str, path: str, query: dict[str, str], body: Any) -> tuple[int, Any]:
        """The status and JSON the forge would answer (``path`` below ``root``, still percent-encoded)."""

    @abc.abstractmethod
    def client(self, token: str = "token") -> Forge:
        """The real client of this repository over ``transport``."""

    @abc.abstractmethod
    def open_pulls(self) -> list[dict[str, Any]]:
        """The open pull (merge) requests as the forge holds them, by number."""

    @abc.abstractmethod
    def close(self, number: int) -> None:
        """Close a pull request without merging it (as a person would)."""

    @abc.abstractmethod
    def merge(self, number: int) -> None:
        """Mark a pull request merged (the Git side is the caller's business)."""

    @abc.abstractmethod
    def set_commits(self, number: int, head_sha: str, base_sha: str) -> None:
        """Point a pull request at these head and base commits (after a push to its branch)."""

    @abc.abstractmethod
    def pushed(self, branch: str, head_sha: str, base_sha: str) -> None:
        """A push to ``branch``: its open pull requests now point at these commits, as the forge updates them."""

    @abc.abstractmethod
    def approve(self, number: int, login: str) -> None:
        """``login`` approves pull request ``number``."""

    @abc.abstractmethod
    def add_team_member(self, team: str, login: str) -> None:
        """Make ``login`` a member of ``team`` (``Forge.is_team_member``'s team)."""


def page(items: list[dict[str, Any]], query: dict[str, str], default_size: int) -> list[dict[str, Any]]:
    """One page of ``items`` (``per_page``, default ``default_size``, and ``page``, from 1), as both forges
    paginate."""
    per_page = int(query.get("per_page", str(default_size)))
    number = int(query.get("page", "1"))
    return items[(number - 1) * per_page : number * per_page]


def _handler(fake: FakeForge) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def _serve(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            answer = fake.handle(self.command, self.path, self.rfile.read(length) if length else None)
            self.send_response(answer.status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(answer.body)))
            for name, value in answer.headers.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(answer.body)

        do_GET = do_POST = do_PATCH = do_PUT = _serve

        def log_message(self, format: str, *args: Any) -> None:
            """Silence the default stderr access log."""

    return Handler
