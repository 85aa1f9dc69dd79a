"""A fake GitHub: the REST v3 subset ``webhook.io.forges.github.GitHub`` uses, in memory.

Shipped so that users test their sync configuration without a forge (as httpx ships ``MockTransport``)::

    github = FakeGitHub("example-org/clusters")
    client = github.client()                        # the real client over github.transport
    with github:
        ...  # forge: {type: github, repository: example-org/clusters, url: github.url}
        github.pulls[1]["state"]                    # inspect
        github.close(1)                             # a human closes pull request #1 without merging
        github.review(1, "alice", "APPROVED")       # alice approves it
        github.add_team_member("example-org/platform-admins", "alice")

Pull requests have GitHub's documented shape (``number``, ``state``, ``title``, ``body``, ``head.ref``,
``head.label``, ``head.sha``, ``base.ref``, ``base.sha``, ``merged_at``, ``html_url``, ``labels[].name``,
``requested_reviewers[].login``). ``PUT /pulls/{n}/merge`` answers ``{sha, merged, message}``, or 405 (not open, or
``unmergeable``) and 409 (a ``sha`` other than the head's), as GitHub documents. Filters ``state``
(open/closed/all), ``head`` (``owner:branch``) and ``base`` and ``per_page``/``page`` pagination are honoured;
creating a second open pull request for a head answers 422, as GitHub does. Reviews (``GET /pulls/{n}/reviews``,
oldest first, paginated) have the documented shape (``id``, ``user.login``, ``state``
APPROVED/CHANGES_REQUESTED/COMMENTED/DISMISSED/PENDING, ``commit_id``, ``submitted_at``, ``html_url``,
``author_association``), and team memberships (``GET /orgs/{org}/teams/{team_slug}/memberships/{username}``) answer
``{url, role, state}`` or 404.
Issues (https://docs.github.com/en/rest/issues/issues: ``id``, ``number``, ``title``, ``body``, ``state``,
``html_url``, ``user``, ``labels``, ``comments``, ``created_at``; ``GET /issues`` lists pull requests too, each with
a ``pull_request`` key, filtered on ``state`` and sorted by ``sort=created`` and ``direction``) share their
numbers with pull requests, as on GitHub; issue comments (https://docs.github.com/en/rest/issues/comments: ``id``,
``body``, ``user``, ``html_url``, ``issue_url``, ``created_at``, ``updated_at``, ``author_association``) are
listed oldest first and paginated, created by ``POST /issues/{n}/comments`` and edited by
``PATCH /issues/comments/{id}``. ``fail_with`` makes every request answer that HTTP status (an outage);
``rate_limit`` answers as GitHub does when the primary rate limit is spent (403, ``x-ratelimit-remaining: 0``).
``requests`` logs ``"METHOD path"`` of every call (``base.FakeForge``).
"""

from __future__ import annotations

import re
import urllib.parse
from typing import Any

from webhook.io.forges.fake.base import FakeForge, page
from webhook.io.forges.github import GitHub

#: GitHub's default page size.
PER_PAGE = 30
#: GitHub's HTTP 404 body (https://docs.github.com/en/rest/using-the-rest-api/troubleshooting-the-rest-api).
NOT_FOUND = {"message": "Not Found"}


class FakeGitHub(FakeForge):
    """An in-memory GitHub pull request API for one repository."""

    not_found = NOT_FOUND

    def __init__(self, repository: str) -> None:
        super().__init__(repository)
        self.owner = repository.split("/", 1)[0]
        self.pulls: dict[int, dict[str, Any]] = {}
        self.reviews: dict[int, list[dict[str, Any]]] = {}
        self.teams: dict[str, dict[str, dict[str, str]]] = {}
        self.issues: dict[int, dict[str, Any]] = {}
        self.comments: dict[int, list[dict[str, Any]]] = {}

    def client(self, token: str = "token") -> GitHub:
        """The real client of this repository over ``transport``."""
        return GitHub(self.offline_url, self.repository, token, transport=self.transport)

    def open_pulls(self) -> list[dict[str, Any]]:
        """The open pull requests, by number."""
        return [p for _, p in sorted(self.pulls.items()) if p["state"] == "open"]

    def close(self, number: int) -> None:
        """Close a pull request without merging it (as a human would)."""
        self.pulls[number]["state"] = "closed"

    def merge(self, number: int) -> None:
        """Mark a pull request merged and closed (the Git side is the caller's business)."""
        self.pulls[number].update(state="closed", merged_at="2026-01-01T00:00:00Z")

    def open_pull(self, head: str, base: str, *, head_sha: str = "", base_sha: str = "", title: str = "") -> int:
        """Open a pull request from ``head`` into ``base`` at the given commits (as a person would); its number."""
        status, pull = self._create({"title": title or f"Merge {head}", "head": head, "base": base})
        if status != 201:
            raise ValueError(f"cannot open a pull request from {head}: {pull['message']}")
        pull["head"]["sha"], pull["base"]["sha"] = head_sha, base_sha
        return int(pull["number"])

    def review(self, number: int, login: str, state: str, *, commit_id: str = "") -> None:
        """``login`` submits a review of pull request ``number`` in ``state`` (APPROVED, CHANGES_REQUESTED,
        COMMENTED, DISMISSED or PENDING), on ``commit_id`` (default: the pull request's head)."""
        reviews = self.reviews.setdefault(number, [])
        review_id = sum(len(r) for r in self.reviews.values())
        reviews.append(
            {
                "id": review_id,
                "node_id": f"PRR_{review_id}",
                "user": {"login": login, "id": 1000 + len(login), "type": "User"},
                "body": "",
                "state": state,
                "html_url": f"{self.pulls[number]['html_url']}#pullrequestreview-{review_id}",
                "pull_request_url": f"{self.api_url}/repos/{self.repository}/pulls/{number}",
                "submitted_at": f"2026-01-01T00:00:{review_id % 60:02d}Z",
                "commit_id": commit_id or self.pulls[number]["head"]["sha"],
                "author_association": "MEMBER",
            }
        )

    def approve(self, number: int, login: str) -> None:
        """``login`` approves pull request ``number`` (an ``APPROVED`` review of its head)."""
        self.review(number, login, "APPROVED")

    def add_team_member(self, team: str, login: str, *, state: str = "active", role: str = "member") -> None:
        """Make ``login`` a member of ``team`` (``ORG/TEAM-SLUG``); ``state`` ``pending`` is an invitation."""
        self.teams.setdefault(team, {})[login] = {"role": role, "state": state}

    def set_commits(self, number: int, head_sha: str, base_sha: str) -> None:
        """Point pull request ``number`` at these head and base commits (after a push to its branch)."""
        self.pulls[number]["head"]["sha"], self.pulls[number]["base"]["sha"] = head_sha, base_sha

    def pushed(self, branch: str, head_sha: str, base_sha: str) -> None:
        """A push to ``branch``: its open pull requests now point at these commits (``head.sha``, ``base.sha``)."""
        for pull in self.open_pulls():
            if pull["head"]["ref"] == branch:
                self.set_commits(int(pull["number"]), head_sha, base_sha)

    def rate_limit(self, only: str = "") -> None:
        """Refuse as GitHub does once the primary rate limit is spent: 403, ``x-ratelimit-remaining: 0`` and
        ``x-ratelimit-reset`` (2026-03-01T13:00:00Z as UTC epoch seconds)."""
        headers = {"x-ratelimit-limit": "5000", "x-ratelimit-remaining": "0", "x-ratelimit-reset": "1772370000"}
        self.outage(403, only, headers)

    def comment(self, number: int, login: str, body: str) -> dict[str, Any]:
        """``login`` comments on issue or pull request ``number``; the comment."""
        kind = "pull" if number in self.pulls else "issues"
        comment_id = 1 + sum(len(c) for c in self.comments.values())
        comment = {
            "id": comment_id,
            "node_id": f"IC_{comment_id}",
            "url": f"{self.api_url}/repos/{self.repository}/issues/comments/{comment_id}",
            "html_url": f"https://github.invalid/{self.repository}/{kind}/{number}#issuecomment-{comment_id}",
            "issue_url": f"{self.api_url}/repos/{self.repository}/issues/{number}",
            "body": body,
            "user": {"login": login, "id": 1000 + len(login), "type": "User"},
            "created_at": f"2026-01-01T00:{comment_id // 60 % 60:02d}:{comment_id % 60:02d}Z",
            "updated_at": f"2026-01-01T00:{comment_id // 60 % 60:02d}:{comment_id % 60:02d}Z",
            "author_association": "MEMBER",
        }
        self.comments.setdefault(number, []).append(comment)
        return comment

    def respond(self, method: str, path: str, query: dict[str, str], body: Any) -> tuple[int, Any]:
        """The status and JSON GitHub would answer."""
        membership = re.fullmatch(r"/orgs/([^/]+)/teams/([^/]+)/memberships/([^/]+)", path)
        if membership is not None and method == "GET":
            return self._membership(*(urllib.parse.unquote(g) for g in membership.groups()))
        prefix = f"/repos/{self.repository}"
        if not path.startswith(prefix):
            return 404, NOT_FOUND
        rest = path[len(prefix) :]
        if rest == "/pulls" and method == "GET":
            return 200, self._list(query)
        if rest == "/pulls" and method == "POST":
            return self._create(body)
        if rest == "/issues" or rest.endswith("/comments") or rest.startswith("/issues/comments/"):
            return self._issues(method, rest, query, body)
        issue = re.fullmatch(r"/issues/(\d+)", rest)
        if issue is not None and int(issue.group(1)) in self.issues:
            return self._issue(method, self.issues[int(issue.group(1))], body)
        match = re.fullmatch(r"/(pulls|issues)/(\d+)(/labels|/requested_reviewers|/reviews|/merge)?", rest)
        if match is None or int(match.group(2)) not in self.pulls:
            return 404, NOT_FOUND
        pull = self.pulls[int(match.group(2))]
        if match.group(1) == "pulls" and match.group(3) == "/merge" and method == "PUT":
            return self._merge(pull, body)
        if match.group(3) == "/labels" and method == "POST":
            pull["labels"].extend({"name": n} for n in body["labels"])
            return 200, pull["labels"]
        if match.group(1) == "pulls" and match.group(3) == "/reviews" and method == "GET":
            return 200, page(self.reviews.get(int(match.group(2)), []), query, PER_PAGE)
        if match.group(3) == "/requested_reviewers" and method == "POST":
            pull["requested_reviewers"].extend({"login": n} for n in body["reviewers"])
            return 201, pull
        if match.group(1) == "pulls" and match.group(3) is None and method == "PATCH":
            pull.update({k: v for k, v in body.items() if k in ("title", "body", "state")})
            return 200, pull
        if match.group(1) == "pulls" and match.group(3) is None and method == "GET":
            return 200, pull
        return 404, NOT_FOUND

    def _merge(self, pull: dict[str, Any], body: Any) -> tuple[int, Any]:
        head = str(pull["head"]["sha"])
        refused = self.merge_refusal(int(pull["number"]), pull["state"] == "open", head, body)
        if refused == 405:
            return 405, {"message": "Pull Request is not mergeable"}
        if refused == 409:
            return 409, {"message": "Head branch was modified. Review and try the merge again."}
        return 200, {"sha": head, "merged": True, "message": "Pull Request successfully merged"}

    def _list(self, query: dict[str, str]) -> list[dict[str, Any]]:
        state = query.get("state", "open")
        found = [
            p
            for _, p in sorted(self.pulls.items())
            if (state == "all" or p["state"] == state)
            and ("head" not in query or p["head"]["label"] == query["head"])
            and ("base" not in query or p["base"]["ref"] == query["base"])
        ]
        return page(found, query, PER_PAGE)

    def _issues(self, method: str, rest: str, query: dict[str, str], body: Any) -> tuple[int, Any]:
        if rest == "/issues" and method == "GET":
            return 200, self._list_issues(query)
        if rest == "/issues" and method == "POST":
            if not isinstance(body, dict) or not isinstance(body.get("title"), str):
                return 422, {"message": "Validation Failed"}
            return 201, self._open_issue(body["title"], str(body.get("body") or ""))
        edited = re.fullmatch(r"/issues/comments/(\d+)", rest)
        if edited is not None and method == "PATCH":
            for comment in (c for comments in self.comments.values() for c in comments):
                if comment["id"] == int(edited.group(1)) and isinstance(body, dict) and "body" in body:
                    comment["body"] = body["body"]
                    return 200, comment
            return 404, NOT_FOUND
        listed = re.fullmatch(r"/issues/(\d+)/comments", rest)
        number = int(listed.group(1)) if listed is not None else 0
        if number not in self.pulls and number not in self.issues:
            return 404, NOT_FOUND
        if method == "GET":
            return 200, page(self.comments.get(number, []), query, PER_PAGE)
        if method == "POST" and isinstance(body, dict) and isinstance(body.get("body"), str):
            return 201, self.comment(number, "upgrade-gate[bot]", body["body"])
        return 422, {"message": "Validation Failed"}

    def _issue(self, method: str, issue: dict[str, Any], body: Any) -> tuple[int, Any]:
        if method == "GET":
            return 200, issue
        if method == "PATCH" and isinstance(body, dict):
            issue.update({k: v for k, v in body.items() if k in ("title", "body", "state")})
            return 200, issue
        return 404, NOT_FOUND

    def _list_issues(self, query: dict[str, str]) -> list[dict[str, Any]]:
        state = query.get("state", "open")
        pulls = [{**p, "pull_request": {"html_url": p["html_url"]}} for p in self.pulls.values()]
        found = sorted([*self.issues.values(), *pulls], key=lambda i: int(i["number"]))
        found = [i for i in found if state == "all" or i["state"] == state]
        if query.get("direction", "desc") == "desc":
            found.reverse()
        return page(found, query, PER_PAGE)

    def _open_issue(self, title: str, body: str) -> dict[str, Any]:
        number = self._next_number()
        self.issues[number] = {
            "id": 5000 + number,
            "node_id": f"I_{number}",
            "number": number,
            "title": title,
            "body": body,
            "state": "open",
            "html_url": f"https://github.invalid/{self.repository}/issues/{number}",
            "user": {"login": "upgrade-gate[bot]", "id": 1, "type": "Bot"},
            "labels": [],
            "comments": 0,
            "created_at": "2026-01-01T00:00:00Z",
        }
        return self.issues[number]

    def _next_number(self) -> int:
        return max([*self.pulls, *self.issues], default=0) + 1

    def _membership(self, org: str, slug: str, login: str) -> tuple[int, Any]:
        member = self.teams.get(f"{org}/{slug}", {}).get(login)
        if member is None:
            return 404, NOT_FOUND
        return 200, {"url": f"{self.api_url}/teams/{org}-{slug}/memberships/{login}", **member}

    def _create(self, body: Any) -> tuple[int, Any]:
        if not isinstance(body, dict) or not all(isinstance(body.get(k), str) for k in ("title", "head", "base")):
            return 422, {"message": "Validation Failed"}
        if any(p["state"] == "open" and p["head"]["ref"] == body["head"] for p in self.pulls.values()):
            return 422, {"message": "Validation Failed", "errors": [{"message": "A pull request already exists"}]}
        number = self._next_number()
        self.pulls[number] = {
            "number": number,
            "state": "open",
            "title": body["title"],
            "body": body.get("body") or "",
            "head": {"ref": body["head"], "label": f"{self.owner}:{body['head']}", "sha": ""},
            "base": {"ref": body["base"], "sha": ""},
            "merged_at": None,
            "html_url": f"https://github.invalid/{self.repository}/pull/{number}",
            "labels": [],
            "requested_reviewers": [],
        }
        return 201, self.pulls[number]
