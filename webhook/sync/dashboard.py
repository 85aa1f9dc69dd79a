"""The fleet dashboard: every subject the sync loop governs (extensions, add-ons, catalogs) in one table, as
Renovate's Dependency Dashboard lists pending, held and approved updates in one issue.

``rows`` derives one ``Row`` per report entry from the entry and what the base branch holds (``Facts``); it is a
pure function, as is ``render`` (the issue's Markdown) and ``Dashboard.to_json`` (``sync -o json``'s
``dashboard`` key). A row's status is one of ``STATUSES``, in that order in the table:

* ``needs attention`` — an invalid manifest, an upgrade that does not resolve, a push that failed;
* ``held`` — waiting (an add-on's canary soak, a schedule): the detail says why and, if known, until when;
* ``proposed`` — a pull request (or branch) proposes an upgrade and waits for review;
* ``awaiting approval`` — the upgrade's revision is in the base branch with ``approved: false``;
* ``approved`` — the upgrade's revision is in the base branch, approved, not installed yet;
* ``completed`` — the upgrade is installed and its revision's clean-up is proposed;
* ``merged``, ``withdrawn``, ``skipped`` — this cycle's news about a proposal (``skipped``: a person's commits
  or a pull request closed unmerged keep the loop off it);
* ``up to date`` — nothing to do.

The issue is found again by ``MARKER`` (a hidden HTML comment), so a person may retitle it; the loop rewrites its
body every cycle (a person's edits of the body are overwritten).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from webhook.plan import PROBLEMS, Action
from webhook.sync.report import STANDING, Entry

MARKER = "<!-- upgrade-gate:dashboard -->"
ATTENTION = "needs attention"
PROPOSED = "proposed"
AWAITING = "awaiting approval"
APPROVED = "approved"
COMPLETED = "completed"
UP_TO_DATE = "up to date"
STATUSES = (
    ATTENTION,
    Action.HELD,
    PROPOSED,
    AWAITING,
    APPROVED,
    COMPLETED,
    Action.MERGED,
    Action.WITHDRAWN,
    Action.SKIPPED,
    UP_TO_DATE,
)


@dataclass(frozen=True, slots=True)
class Facts:
    """What the base branch says about a subject: the ``installed`` version (``None`` unknown or not
    installed) and the versions of its ClusterExtensionRevisions there, ``approved`` or not (``pending``)."""

    installed: str | None = None
    approved: tuple[str, ...] = ()
    pending: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Row:
    """One subject on the dashboard: its ``status`` (``STATUSES``), versions, pull request URL and why."""

    subject: str
    status: str
    installed: str | None
    target: str | None
    pull_request: str | None
    detail: str


@dataclass(frozen=True, slots=True)
class Dashboard:
    """The rows of a cycle and the issue they were written to (``url``, ``None`` when not written)."""

    rows: tuple[Row, ...]
    url: str | None = None

    def to_json(self) -> dict[str, Any]:
        """``{"issue": url, "counts": {status: n}, "rows": [row...]}``."""
        counts = {s: sum(1 for r in self.rows if r.status == s) for s in STATUSES}
        return {"issue": self.url, "counts": counts, "rows": [asdict(r) for r in self.rows]}


def rows(entries: Sequence[Entry], facts: Mapping[str, Facts]) -> tuple[Row, ...]:
    """One row per entry, ordered by status (``STATUSES``) then subject."""
    found = [_row(entry, facts.get(entry.subject, Facts())) for entry in entries]
    return tuple(sorted(found, key=lambda r: (STATUSES.index(r.status), r.subject)))


def _row(entry: Entry, facts: Facts) -> Row:
    installed = facts.installed or (entry.from_version if entry.to_version else None)
    status, target, detail = _status(entry), entry.to_version, entry.reason
    waiting = _waiting(facts) if status == UP_TO_DATE else None
    if waiting is not None:
        status, target = waiting
    if status == Action.HELD and entry.ready_at:
        detail = f"{detail} (until {entry.ready_at})"
    return Row(entry.subject, status, installed, target, entry.pull_request, detail)


def _status(entry: Entry) -> str:
    if entry.action in PROBLEMS:
        return ATTENTION
    if entry.action not in STANDING:
        return entry.action if entry.action in STATUSES else Action.HELD
    if entry.branch is not None:
        return PROPOSED if entry.to_version else COMPLETED
    return UP_TO_DATE


def _waiting(facts: Facts) -> tuple[str, str] | None:
    """``(status, version)`` of the first revision in the base branch whose version is not installed."""
    for status, versions in ((AWAITING, facts.pending), (APPROVED, facts.approved)):
        for version in versions:
            if version != facts.installed:
                return status, version
    return None


def render(dashboard: Dashboard, base: str, commit: str) -> str:
    """The issue body: ``MARKER``, a summary line of the counts, and the Markdown table (cells escaped)."""
    counts = dashboard.to_json()["counts"]
    summary = ", ".join(f"{counts[s]} {s}" for s in STATUSES if counts[s]) or "nothing governed"
    lines = [
        MARKER,
        f"upgrade-gate governs {len(dashboard.rows)} subjects on {base} (at {commit[:12]}): {summary}.",
        "",
        "| Subject | Status | Installed | Target | Pull request | Detail |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for row in dashboard.rows:
        cells = (row.subject, row.status, row.installed, row.target, row.pull_request, row.detail)
        lines.append("| " + " | ".join(cell(c) for c in cells) + " |")
    lines += ["", "This issue is rewritten by every sync cycle: edits to it are overwritten."]
    return "\n".join(lines) + "\n"


def cell(text: str | None) -> str:
    """``text`` as one Markdown table cell: ``-`` for none, ``|`` escaped, ``<`` as ``&lt;`` (no HTML, no
    marker), line breaks as spaces."""
    if not text:
        return "-"
    return " ".join(text.split()).replace("|", "\\|").replace("<", "&lt;")
