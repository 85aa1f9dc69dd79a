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
``state_event`` close/reopen. Approvals (https://docs.gitlab.com/api/merge_request_approvals/) answer
``{id, iid, project_id, approved, approved_by: [{user}]}``; users (https://docs.gitlab.com/api/users/,
``GET /users?username=``) a list of ``{id, username, name, state, web_url}``; a group's members
(https://docs.gitlab.com/api/members/, ``GET /groups/{path}/members/all/{user_id}``) the user with its
``access_level``, or 404.
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

    def __init__(self, repository: str, project_id: int = 1) -> None:
        super().__init__(repository)
        self.project_id = project_id
        self.merge_requests: dict[int, dict[str, Any]] = {}
        self.approvals: dict[int, list[str]] = {}
        self.users: dict[str, dict[str, Any]] = {}
        self.groups: dict[str, dict[str, int]] = {}

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

    def respond(self, method: str, path: str, query: dict[str, str], body: Any) -> tuple[int, Any]:
        """The status and JSON GitLab would answer."""
        if path == "/users" and method == "GET":
            user = self.users.get(query.get("username", ""))
            return 200, [user] if user else []
        member = re.fullmatch(r"/groups/([^/]+)/members/all/(\d+)", path)
        if member is not None and method == "GET":
            return self._member(urllib.parse.unquote(member.group(1)), int(member.group(2)))
        project = re.fullmatch(r"/projects/([^/]+)/merge_requests(?:/(\d+)(/approvals)?)?", path)
        if project is None or urllib.parse.unquote(project.group(1)) not in (self.repository, str(self.project_id)):
            return 404, NOT_FOUND
        if project.group(2) is None:
            if method == "GET":
                return 200, self._list(query)
            return self._create(body) if method == "POST" else (405, {"message": "405 Method Not Allowed"})
        request = self.merge_requests.get(int(project.group(2)))
        if request is None:
            return 404, NOT_FOUND
        if project.group(3) and method == "GET":
            return 200, self._approvals(request)
        if not project.group(3) and method == "GET":
            return 200, request
        if not project.group(3) and method == "PUT":
            return self._update(request, body)
        return 404, NOT_FOUND

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
