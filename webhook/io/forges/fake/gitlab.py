"""A fake GitLab: the REST v4 subset ``webhook.io.forges.gitlab.GitLab`` uses, in memory, below ``/api/v4``.

::

    gitlab = FakeGitLab("example-org/clusters")
    client = gitlab.client()                        # the real client over gitlab.transport
    with gitlab:
        ...  # forge: {type: gitlab, repository: example-org/clusters, url: gitlab.url}
        gitlab.close(1)                             # a human closes merge request !1 without merging
        gitlab.add_user("alice"); gitlab.approve(1, "alice")
        gitlab.add_team_member("example-org/platform-admins", "alice")

The project is addressed by its URL-encoded path (``/projects/example-org%2Fclusters``) or its ``id``. Merge
requests have GitLab's documented shape (https://docs.gitlab.com/api/merge_requests/: ``id``, ``iid``,
``project_id``, ``title``, ``description``, ``state`` opened/closed/merged, ``source_branch``, ``target_branch``,
``sha``, ``diff_refs.{base_sha,head_sha,start_sha}``, ``labels`` (names), ``reviewers[]`` (users),
``merged_at``, ``closed_at``, ``web_url``, ``references.{short,full}``). Listing filters on ``state``
(opened/closed/merged/all), ``source_branch`` and ``target_branch``, paginated by ``per_page`` (default 20) and
``page``; creating takes ``labels`` as comma-separated names and ``reviewer_ids``, and a second open merge
request for a source branch answers 409, as GitLab does; updating takes ``title``, ``description`` and
``state_event`` close/reopen; ``PUT /merge_requests/{iid}/merge`` answers the merged merge request, or 405 (not
opened, or ``unmergeable``) and 409 (a ``sha`` other than the head's), as GitLab documents. Approvals
(https://docs.gitlab.com/api/merge_request_approvals/) answer
``{id, iid, project_id, approved, approved_by: [{user}]}``; users (https://docs.gitlab.com/api/users/,
``GET /users?username=``) a list of ``{id, username, name, state, web_url}``; a group's members
(https://docs.gitlab.com/api/members/, ``GET /groups/{path}/members/all/{user_id}``) the user with its
``access_level``, or 404. Notes of a merge request (https://docs.gitlab.com/api/notes/: ``id``, ``type``,
``body``, ``author``, ``created_at``, ``updated_at``, ``system``, ``noteable_id``, ``noteable_iid``,
``noteable_type``) are listed newest first unless ``sort=asc``, created by ``POST .../notes`` and edited by
``PUT .../notes/{id}``; issues (https://docs.gitlab.com/api/issues/: ``id``, ``iid`` numbered apart from merge
requests, ``title``, ``description``, ``state`` opened/closed, ``web_url``, ``author``, ``labels``) are listed on
``state`` newest first unless ``sort=asc``, created by ``POST /issues`` and edited by ``PUT /issues/{iid}``.
``rate_limit`` answers 429 with ``Retry-After``, as GitLab does.
"""

from __future__ import annotations

import re
import urllib.parse
from typing import Any

from webhook.io.forges.fake.base import FakeForge, page
from webhook.io.forges.gitlab import GitLab

#: GitLab's default page size.
PER_PAGE = 20
#: The Developer role (``access_level`` 30).
DEVELOPER = 30
NOT_FOUND = {"message": "404 Not found"}


class FakeGitLab(FakeForge):
    """An in-memory GitLab merge request API for one project."""

    root = "/api/v4"
    not_found = NOT_FOUND

    def __init__(self, repository: str, project_id: int = 1) -> None:
        super().__init__(repository)
        self.project_id = project_id
        self.merge_requests: dict[int, dict[str, Any]] = {}
        self.approvals: dict[int, list[str]] = {}
        self.users: dict[str, dict[str, Any]] = {}
        self.groups: dict[str, dict[str, int]] = {}
        self.notes: dict[int, list[dict[str, Any]]] = {}
        self.issues: dict[int, dict[str, Any]] = {}

    def client(self, token: str = "token") -> GitLab:
        """The real client of this project over ``transport``."""
        return GitLab(self.offline_url, self.repository, token, transport=self.transport)

    def add_user(self, username: str) -> dict[str, Any]:
        """A user GitLab knows (created on first use)."""
        if username not in self.users:
            user_id = 100 + len(self.users)
            self.users[username] = {
                "id": user_id,
                "username": username,
                "name": username.title(),
                "state": "active",
                "web_url": f"https://gitlab.invalid/{username}",
            }
        return self.users[username]

    def add_team_member(self, group: str, username: str, *, access_level: int = DEVELOPER) -> None:
        """Make ``username`` a member of ``group`` (its full path: a team, as ``Forge.is_team_member`` says)."""
        self.add_user(username)
        self.groups.setdefault(group, {})[username] = access_level

    def approve(self, iid: int, username: str) -> None:
        """``username`` approves merge request ``iid``."""
        self.add_user(username)
        self.approvals.setdefault(iid, []).append(username)

    def open_pulls(self) -> list[dict[str, Any]]:
        """The opened merge requests, by iid."""
        return [m for _, m in sorted(self.merge_requests.items()) if m["state"] == "opened"]

    def close(self, iid: int) -> None:
        """Close a merge request without merging it (as a human would)."""
        self.merge_requests[iid].update(state="closed", closed_at="2026-01-01T00:00:00Z")

    def merge(self, iid: int) -> None:
        """Mark a merge request merged (the Git side is the caller's business)."""
        self.merge_requests[iid].update(state="merged", merged_at="2026-01-01T00:00:00Z")

    def set_commits(self, iid: int, head_sha: str, base_sha: str) -> None:
        """Point merge request ``iid`` at these head and base commits (after a push to its branch)."""
        self.merge_requests[iid].update(
            sha=head_sha, diff_refs={"base_sha": base_sha, "head_sha": head_sha, "start_sha": base_sha}
        )

    def pushed(self, branch: str, head_sha: str, base_sha: str) -> None:
        """A push to ``branch``: its opened merge requests now point at these commits (``sha``, ``diff_refs``)."""
        for request in self.open_pulls():
            if request["source_branch"] == branch:
                self.set_commits(int(request["iid"]), head_sha, base_sha)

    def rate_limit(self, only: str = "") -> None:
        """Refuse as GitLab does once a rate limit is spent: 429 with ``Retry-After: 60`` and ``RateLimit-*``."""
        headers = {"retry-after": "60", "ratelimit-limit": "2000", "ratelimit-remaining": "0"}
        self.outage(429, only, headers)

    def comment(self, iid: int, username: str, body: str, *, system: bool = False) -> dict[str, Any]:
        """``username`` comments on merge request ``iid`` (``system``: a note GitLab writes itself); the note."""
        note_id = 300 + sum(len(n) for n in self.notes.values())
        note = {
            "id": note_id,
            "type": None,
            "body": body,
            "attachment": None,
            "author": self.add_user(username),
            "created_at": f"2026-01-01T00:{note_id // 60 % 60:02d}:{note_id % 60:02d}Z",
            "updated_at": f"2026-01-01T00:{note_id // 60 % 60:02d}:{note_id % 60:02d}Z",
            "system": system,
            "noteable_id": self.merge_requests[iid]["id"],
            "noteable_type": "MergeRequest",
            "noteable_iid": iid,
            "project_id": self.project_id,
            "resolvable": False,
            "confidential": False,
            "internal": False,
        }
        self.notes.setdefault(iid, []).append(note)
        return note

    def respond(self, method: str, path: str, query: dict[str, str], body: Any) -> tuple[int, Any]:
        """The status and JSON GitLab would answer."""
        if path == "/users" and method == "GET":
            user = self.users.get(query.get("username", ""))
            return 200, [user] if user else []
        member = re.fullmatch(r"/groups/([^/]+)/members/all/(\d+)", path)
        if member is not None and method == "GET":
            return self._member(urllib.parse.unquote(member.group(1)), int(member.group(2)))
        project = re.fullmatch(r"/projects/([^/]+)(/.*)", path)
        if project is None or urllib.parse.unquote(project.group(1)) not in (self.repository, str(self.project_id)):
            return 404, NOT_FOUND
        rest = project.group(2)
        if (issue := re.fullmatch(r"/issues(?:/(\d+))?", rest)) is not None:
            return self._issue(method, issue.group(1), query, body)
        note = re.fullmatch(r"/merge_requests/(\d+)/notes(?:/(\d+))?", rest)
        if note is not None and int(note.group(1)) in self.merge_requests:
            return self._note(method, int(note.group(1)), note.group(2), query, body)
        merge = re.fullmatch(r"/merge_requests(?:/(\d+)(/approvals|/merge)?)?", rest)
        if merge is None:
            return 404, NOT_FOUND
        if merge.group(1) is None:
            if method == "GET":
                return 200, self._list(query)
            return self._create(body) if method == "POST" else (405, {"message": "405 Method Not Allowed"})
        request = self.merge_requests.get(int(merge.group(1)))
        if request is None:
            return 404, NOT_FOUND
        if merge.group(2) == "/merge" and method == "PUT":
            return self._merge(request, body)
        if merge.group(2) == "/approvals" and method == "GET":
            return 200, self._approvals(request)
        if not merge.group(2) and method == "GET":
            return 200, request
        if not merge.group(2) and method == "PUT":
            return self._update(request, body)
        return 404, NOT_FOUND

    def _merge(self, request: dict[str, Any], body: Any) -> tuple[int, Any]:
        head = str(request.get("sha") or "")
        refused = self.merge_refusal(int(request["iid"]), request["state"] == "opened", head, body)
        if refused == 405:
            return 405, {"message": "405 Method Not Allowed"}
        if refused == 409:
            return 409, {"message": f"SHA does not match HEAD of source branch: {head}"}
        return 200, request

    def _list(self, query: dict[str, str]) -> list[dict[str, Any]]:
        state = query.get("state", "all")
        found = [
            m
            for _, m in sorted(self.merge_requests.items())
            if (state == "all" or m["state"] == state)
            and query.get("source_branch", m["source_branch"]) == m["source_branch"]
            and query.get("target_branch", m["target_branch"]) == m["target_branch"]
        ]
        return page(found, query, PER_PAGE)

    def _create(self, body: Any) -> tuple[int, Any]:
        fields = ("source_branch", "target_branch", "title")
        if not isinstance(body, dict) or not all(isinstance(body.get(k), str) and body[k] for k in fields):
            return 400, {"message": "400 Bad request - source_branch, target_branch, title are missing"}
        for other in self.open_pulls():
            if other["source_branch"] == body["source_branch"]:
                message = f"Another open merge request already exists for this source branch: !{other['iid']}"
                return 409, {"message": [message]}
        iid = max(self.merge_requests, default=0) + 1
        reviewers = [user for user in self.users.values() if user["id"] in (body.get("reviewer_ids") or [])]
        web_url = f"https://gitlab.invalid/{self.repository}/-/merge_requests/{iid}"
        self.merge_requests[iid] = {
            "id": 1000 + iid,
            "iid": iid,
            "project_id": self.project_id,
            "title": body["title"],
            "description": body.get("description") or "",
            "state": "opened",
            "source_branch": body["source_branch"],
            "target_branch": body["target_branch"],
            "source_project_id": self.project_id,
            "target_project_id": self.project_id,
            "sha": "",
            "diff_refs": {"base_sha": "", "head_sha": "", "start_sha": ""},
            "labels": [name for name in str(body.get("labels") or "").split(",") if name],
            "reviewers": reviewers,
            "merged_at": None,
            "closed_at": None,
            "web_url": web_url,
            "references": {"short": f"!{iid}", "full": f"{self.repository}!{iid}"},
        }
        return 201, self.merge_requests[iid]

    def _update(self, request: dict[str, Any], body: Any) -> tuple[int, Any]:
        if not isinstance(body, dict):
            return 400, {"message": "400 Bad request"}
        request.update({k: v for k, v in body.items() if k in ("title", "description")})
        if body.get("state_event") == "close":
            request.update(state="closed", closed_at="2026-01-01T00:00:00Z")
        elif body.get("state_event") == "reopen":
            request.update(state="opened", closed_at=None)
        return 200, request

    def _note(self, method: str, iid: int, note_id: str | None, query: dict[str, str], body: Any) -> tuple[int, Any]:
        notes = self.notes.get(iid, [])
        if note_id is None and method == "GET":
            return 200, page(notes if query.get("sort") == "asc" else notes[::-1], query, PER_PAGE)
        if not isinstance(body, dict) or not isinstance(body.get("body"), str):
            return 400, {"message": "400 Bad request - body is missing"}
        if note_id is None and method == "POST":
            return 201, self.comment(iid, "upgrade-gate-bot", body["body"])
        for note in notes:
            if str(note["id"]) == note_id and method == "PUT":
                note["body"] = body["body"]
                return 200, note
        return 404, NOT_FOUND

    def _issue(self, method: str, iid: str | None, query: dict[str, str], body: Any) -> tuple[int, Any]:
        if iid is None and method == "GET":
            state = query.get("state", "all")
            found = [i for _, i in sorted(self.issues.items()) if state == "all" or i["state"] == state]
            return 200, page(found if query.get("sort") == "asc" else found[::-1], query, PER_PAGE)
        if iid is None and method == "POST":
            if not isinstance(body, dict) or not isinstance(body.get("title"), str) or not body["title"]:
                return 400, {"message": "400 Bad request - title is missing"}
            return 201, self._open_issue(body["title"], str(body.get("description") or ""))
        issue = self.issues.get(int(iid or 0))
        if issue is None or method not in ("GET", "PUT"):
            return 404, NOT_FOUND
        if method == "PUT" and isinstance(body, dict):
            issue.update({k: v for k, v in body.items() if k in ("title", "description")})
            if body.get("state_event") == "close":
                issue.update(state="closed", closed_at="2026-01-01T00:00:00Z")
        return 200, issue

    def _open_issue(self, title: str, description: str) -> dict[str, Any]:
        iid = max(self.issues, default=0) + 1
        self.issues[iid] = {
            "id": 2000 + iid,
            "iid": iid,
            "project_id": self.project_id,
            "title": title,
            "description": description,
            "state": "opened",
            "labels": [],
            "author": self.add_user("upgrade-gate-bot"),
            "created_at": "2026-01-01T00:00:00Z",
            "closed_at": None,
            "web_url": f"https://gitlab.invalid/{self.repository}/-/issues/{iid}",
            "references": {"short": f"#{iid}", "full": f"{self.repository}#{iid}"},
        }
        return self.issues[iid]

    def _approvals(self, request: dict[str, Any]) -> dict[str, Any]:
        approved_by = [{"user": self.users[name]} for name in self.approvals.get(request["iid"], [])]
        return {
            "id": request["id"],
            "iid": request["iid"],
            "project_id": self.project_id,
            "approved": bool(approved_by),
            "approved_by": approved_by,
        }

    def _member(self, group: str, user_id: int) -> tuple[int, Any]:
        for username, access_level in self.groups.get(group, {}).items():
            user = self.users.get(username)
            if user is not None and user["id"] == user_id:
                return 200, {**user, "access_level": access_level}
        return 404, NOT_FOUND
