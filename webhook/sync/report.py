"""What a sync cycle reports: one ``Entry`` per subject (extension, catalog, add-on or file) and the ``Report``
of a cycle with its counts and timings (``webhook.sync.reporting`` derives them from the plan and the writes)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from webhook.plan import PROBLEMS, Action

if TYPE_CHECKING:
    from webhook.sync.dashboard import Dashboard

ACTIONS = tuple(Action)
"""Every action an entry may have (``webhook.plan.Action``), in the order ``-o json`` counts them."""
STANDING = (Action.PROPOSED, Action.UPDATED, Action.REMOVED, Action.OPENED, Action.UNCHANGED)
"""What an entry with a branch says when its proposal stands on that branch after the cycle's push."""


@dataclass(frozen=True, slots=True)
class Entry:
    """One line of the report: a subject (extension, ``clustercatalog/<name>``, ``addon/<name>`` or a file), what
    happened (an ``Action``) and why, with its branch, versions and pull request when there are some, for
    a ``held`` add-on when its canaries' soak ends (``ready_at``, RFC 3339) if known (for ``waiting``, when the
    schedule's next window opens), and in a dry run the
    unified diff the change would push (``diff``)."""

    subject: str
    action: Action
    reason: str
    branch: str | None = None
    from_version: str | None = None
    to_version: str | None = None
    file: str | None = None
    pull_request: str | None = None
    ready_at: str | None = None
    diff: str | None = None


@dataclass(frozen=True, slots=True)
class Report:
    """What a cycle did: the base branch and commit it read, every entry (sorted by subject), and the seconds
    spent per phase (``fetch``, ``read``, ``catalogs``, ``resolve``, ``cluster`` (add-on lookups), ``plan`` (add-on
    planning), ``git``, ``forge``); the ``dashboard`` when configured, and ``warnings``: one line per write that
    failed without failing the cycle (the dashboard issue, an automerge the forge refused), which the next cycle
    tries again."""

    base: str
    commit: str
    entries: tuple[Entry, ...]
    timings: Mapping[str, float] = field(default_factory=dict)
    dry_run: bool = False
    dashboard: Dashboard | None = None
    warnings: tuple[str, ...] = ()

    def count(self, action: Action) -> int:
        """How many entries have ``action``."""
        return sum(1 for e in self.entries if e.action == action)

    @property
    def problems(self) -> int:
        """How many entries need a person (``PROBLEMS``: an invalid manifest, an unresolved upgrade, a failed
        push)."""
        return sum(1 for e in self.entries if e.action in PROBLEMS)

    def to_json(self) -> dict[str, Any]:
        """The report as JSON-ready data (``-o json``)."""
        return {
            "base": self.base,
            "commit": self.commit,
            "dry_run": self.dry_run,
            "counts": {a: self.count(a) for a in ACTIONS},
            "entries": [asdict(e) for e in self.entries],
            "timings": {k: round(v, 3) for k, v in self.timings.items()},
            "warnings": list(self.warnings),
            **({"dashboard": self.dashboard.to_json()} if self.dashboard is not None else {}),
        }
