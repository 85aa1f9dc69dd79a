"""Pull requests on GitHub, through its REST API (``urllib``, no SDK; ``repository`` is ``owner/name``)::

    GitHub (https://docs.github.com/en/rest/pulls/pulls, X-GitHub-Api-Version 2022-11-28, Bearer token)
      GET   /repos/{owner}/{repo}/pulls?state=open&base=B&per_page=100&page=N     list open pull requests
      GET   /repos/{owner}/{repo}/pulls?state=closed&head=OWNER:H&base=B          closed ones of a branch
      POST  /repos/{owner}/{repo}/pulls                {title, head, base, body}  create
      PATCH /repos/{owner}/{repo}/pulls/{number}       {title, body} | {state, title}  update, close
      POST  /repos/{owner}/{repo}/issues/{number}/labels              {labels}    add labels
      POST  /repos/{owner}/{repo}/pulls/{number}/requested_reviewers  {reviewers} request reviews
      GET   /repos/{owner}/{repo}/pulls/{number}          one pull request (head/base ref and sha)
      PUT   /repos/{owner}/{repo}/pulls/{number}/merge    {sha, merge_method: merge}  merge (405 not
                                                       mergeable, 409 the head moved, 422 validation failed)
    (https://docs.github.com/en/rest/pulls/reviews)
      GET   /repos/{owner}/{repo}/pulls/{number}/reviews?per_page=100&page=N   reviews, oldest first
    (https://docs.github.com/en/rest/issues/comments, https://docs.github.com/en/rest/issues/issues)
      GET   /repos/{owner}/{repo}/issues/{number}/comments?per_page=100&page=N   comments, oldest first
      POST  /repos/{owner}/{repo}/issues/{number}/comments     {body}            comment
      PATCH /repos/{owner}/{repo}/issues/comments/{id}         {body}            edit a comment
      GET   /repos/{owner}/{repo}/issues?state=open&sort=created&direction=asc   open issues and pull requests
      POST  /repos/{owner}/{repo}/issues                       {title, body}     open an issue
      PATCH /repos/{owner}/{repo}/issues/{number}              {title, body}     edit an issue
    (https://docs.github.com/en/rest/teams/members)
      GET   /orgs/{org}/teams/{team_slug}/memberships/{username}   200 {state: active|pending, role}; 404

Approving reviewers: each user's latest review that is not ``COMMENTED`` (nor a ``PENDING`` draft) decides:
``APPROVED`` counts, ``CHANGES_REQUESTED`` or ``DISMISSED`` cancels an earlier approval. A team is
``ORG/TEAM-SLUG`` (an active membership counts, a pending invitation does not). The issues list holds pull
requests too (those with a ``pull_request`` key): ``upsert_issue`` skips them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from webhook.errors import GitError
from webhook.io.forges.base import AUTOCLOSED, JsonApi, PullRequest, Transport, quote_segment, urllib_transport


class GitHub(JsonApi):
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

    def merge_pull_request(self, pull: PullRequest) -> None:
        """``PUT /pulls/{number}/merge`` with a merge commit, at ``head_sha`` when known (``Forge``)."""
        body = {"merge_method": "merge", **({"sha": pull.head_sha} if pull.head_sha else {})}
        with self.writing(f"the merge of pull request #{pull.number}"):
            self.call("PUT", f"/repos/{self._repo}/pulls/{pull.number}/merge", body=body)

    def pull_request(self, number: int) -> PullRequest:
        """``GET /pulls/{number}`` (``Forge``)."""
        return self._pull(self.found(f"/repos/{self._repo}/pulls/{number}", f"pull request #{number} in {self._repo}"))

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
        path = f"/orgs/{quote_segment(org)}/teams/{quote_segment(slug)}/memberships/{quote_segment(login)}"
        membership = self.call("GET", path, absent=None)
        return isinstance(membership, Mapping) and membership.get("state") == "active"

    def upsert_comment(self, number: int, marker: str, body: str) -> str:
        """The issue comment of pull request ``number`` holding ``marker``, created or edited (``Forge``); its
        ``html_url``."""
        with self.writing(f"the comment {marker} on pull request #{number}"):
            path = f"/repos/{self._repo}/issues/{number}/comments"
            update = ("PATCH", f"/repos/{self._repo}/issues/comments/{{id}}")
            comment = self.upsert_marked(self.pages(path, {}), marker, path, update, {"body": body})
            return str(comment.get("html_url") or "")

    def upsert_issue(self, title: str, marker: str, body: str) -> str:
        """The open issue holding ``marker`` (pull requests skipped), created or edited (``Forge``); its
        ``html_url``."""
        with self.writing(f"the issue {marker} ({title})"):
            path = f"/repos/{self._repo}/issues"
            query = {"state": "open", "sort": "created", "direction": "asc"}
            issues = [i for i in self.pages(path, query) if isinstance(i, Mapping) and "pull_request" not in i]
            payload = {"title": title, "body": body}
            issue = self.upsert_marked(issues, marker, path, ("PATCH", f"{path}/{{number}}"), payload)
            return str(issue.get("html_url") or "")

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


def _head(data: Any) -> str:
    try:
        return str(data["head"]["ref"])
    except (KeyError, TypeError):
        raise GitError("github: unexpected pull request JSON") from None
