"""Merge requests on GitLab, through its REST API v4 (``urllib``, no SDK; ``repository`` is ``group/project``)::

    GitLab (https://docs.gitlab.com/api/merge_requests/, PRIVATE-TOKEN header)
      GET   /projects/{id}/merge_requests?state=opened|closed&target_branch=B[&source_branch=H]
      POST  /projects/{id}/merge_requests   {source_branch, target_branch, title, description, labels,
                                             reviewer_ids}  (user ids from GET /users?username=U)
      PUT   /projects/{id}/merge_requests/{iid}   {title, description} | {state_event: close, title}
      GET   /projects/{id}/merge_requests/{iid}   one merge request (sha, diff_refs.base_sha)
      PUT   /projects/{id}/merge_requests/{iid}/merge   {sha}   merge (405 not mergeable: draft, closed,
                                          pipeline; 406 conflicts; 409 the head moved; 422 failed to merge)
    (https://docs.gitlab.com/api/merge_request_approvals/)
      GET   /projects/{id}/merge_requests/{iid}/approvals   {approved_by: [{user: {username}}]}
    (https://docs.gitlab.com/api/notes/, https://docs.gitlab.com/api/issues/)
      GET   /projects/{id}/merge_requests/{iid}/notes?sort=asc&order_by=created_at   notes, oldest first
      POST  /projects/{id}/merge_requests/{iid}/notes             {body}                 comment
      PUT   /projects/{id}/merge_requests/{iid}/notes/{note_id}   {body}                 edit a comment
      GET   /projects/{id}/issues?state=opened&sort=asc&order_by=created_at              open issues
      POST  /projects/{id}/issues                                 {title, description}   open an issue
      PUT   /projects/{id}/issues/{iid}                           {title, description}   edit an issue
    (https://docs.gitlab.com/api/members/)
      GET   /groups/{id}/members/all/{user_id}   200 a member (direct or inherited); 404 not a member

Approving reviewers: the users the merge request's approvals list. A team is a group's full path. A note has no
URL of its own: its web URL is the merge request's ``web_url`` with ``#note_{id}``; system notes (GitLab's own,
``system: true``) are never taken for a comment.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from webhook.errors import GitError
from webhook.io.forges.base import AUTOCLOSED, JsonApi, PullRequest, Transport, quote_segment, urllib_transport


class GitLab(JsonApi):
    """The GitLab REST API v4 (gitlab.com or a self-managed ``<host>/api/v4``)."""

    name = "gitlab"

    def __init__(
        self, url: str, repository: str, token: str, timeout_s: float = 30.0, transport: Transport = urllib_transport
    ) -> None:
        super().__init__(url, {"PRIVATE-TOKEN": token} if token else {}, timeout_s, transport)
        self._repository = repository
        self._issues = f"/projects/{quote_segment(repository)}/issues"
        self._project = f"/projects/{quote_segment(repository)}/merge_requests"

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

    def merge_pull_request(self, pull: PullRequest) -> None:
        """``PUT /merge_requests/{iid}/merge``, at ``sha`` when known (``Forge``)."""
        body = {"sha": pull.head_sha} if pull.head_sha else {}
        with self.writing(f"the merge of merge request !{pull.number}"):
            self.call("PUT", f"{self._project}/{pull.number}/merge", body=body)

    def pull_request(self, number: int) -> PullRequest:
        """``GET /merge_requests/{iid}`` (``Forge``)."""
        return self._pull(self.found(f"{self._project}/{number}", f"merge request !{number} in {self._repository}"))

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
        member = self.call("GET", f"/groups/{quote_segment(team)}/members/all/{users[0]['id']}", absent=None)
        return isinstance(member, Mapping)

    def upsert_comment(self, number: int, marker: str, body: str) -> str:
        """The note of merge request ``number`` holding ``marker``, created or edited (``Forge``); its web URL."""
        with self.writing(f"the comment {marker} on merge request !{number}"):
            pull = self.pull_request(number)
            path = f"{self._project}/{number}/notes"
            notes = self.pages(path, {"sort": "asc", "order_by": "created_at"})
            people = [note for note in notes if isinstance(note, Mapping) and not note.get("system")]
            note = self.upsert_marked(people, marker, path, ("PUT", f"{path}/{{id}}"), {"body": body})
            return f"{pull.url}#note_{note.get('id')}"

    def upsert_issue(self, title: str, marker: str, body: str) -> str:
        """The opened issue holding ``marker``, created or edited (``Forge``); its ``web_url``."""
        with self.writing(f"the issue {marker} ({title})"):
            issues = self.pages(self._issues, {"state": "opened", "sort": "asc", "order_by": "created_at"})
            payload = {"title": title, "description": body}
            update = ("PUT", f"{self._issues}/{{iid}}")
            issue = self.upsert_marked(issues, marker, self._issues, update, payload, text="description")
            return str(issue.get("web_url") or "")

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
