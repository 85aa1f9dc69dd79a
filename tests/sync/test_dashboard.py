"""The dashboard's pure parts: the status of each subject from its report entry and the base branch's facts, and
the issue's Markdown, read back as GitHub Flavored Markdown reads a table (``\\|`` is a pipe inside a cell)."""

from __future__ import annotations

import re

import pytest

from tests.sync.conftest import World
from tests.sync.test_sync import BRANCH, entry
from webhook.plan import Action
from webhook.sync.dashboard import MARKER, STATUSES, Dashboard, Facts, Row, render, rows
from webhook.sync.report import Entry, Report

PULL = "https://github.invalid/example-org/clusters/pull/1"


def _entry(action: str, reason: str = "why", **fields: str) -> Entry:
    return Entry("cloudnative-pg", Action(action), reason, **fields)


@pytest.mark.parametrize(
    ("entry", "facts", "status", "target"),
    [
        pytest.param(
            _entry("proposed", branch="b", from_version="1.29.2", to_version="1.30.0", pull_request=PULL),
            Facts("1.29.2"),
            "proposed",
            "1.30.0",
            id="a new proposal",
        ),
        pytest.param(
            _entry("unchanged", branch="b", from_version="1.29.2", to_version="1.30.0"),
            Facts("1.29.2"),
            "proposed",
            "1.30.0",
            id="a proposal kept from an earlier cycle",
        ),
        pytest.param(
            _entry("unchanged", branch="b", from_version="1.30.0"),
            Facts("1.30.0", approved=("1.30.0",)),
            "completed",
            None,
            id="an installed upgrade whose revision's clean-up is proposed",
        ),
        pytest.param(
            _entry("unchanged", "revision cloudnative-pg-1.30.0 is in the base branch"),
            Facts("1.29.2", pending=("1.30.0",)),
            "awaiting approval",
            "1.30.0",
            id="a merged revision not approved yet",
        ),
        pytest.param(
            _entry("unchanged"),
            Facts("1.29.2", approved=("1.30.0",)),
            "approved",
            "1.30.0",
            id="an approved revision not installed yet",
        ),
        pytest.param(_entry("unchanged"), Facts("1.30.0", approved=("1.30.0",)), "up to date", None, id="installed"),
        pytest.param(_entry("held", ready_at="2026-03-01T13:00:00Z"), Facts(), "held", None, id="a canary soak"),
        pytest.param(_entry("merged", branch="b"), Facts(), "merged", None, id="merged this cycle"),
        pytest.param(_entry("withdrawn", branch="b"), Facts(), "withdrawn", None, id="withdrawn this cycle"),
        pytest.param(_entry("skipped", branch="b"), Facts(), "skipped", None, id="a person's branch"),
        pytest.param(_entry("unresolved"), Facts(), "needs attention", None, id="a problem"),
    ],
)
def test_a_subjects_status(entry: Entry, facts: Facts, status: str, target: str | None) -> None:
    [row] = rows([entry], {entry.subject: facts})
    assert (row.status, row.target, row.installed) == (status, target, facts.installed or entry.from_version)


def test_a_held_row_says_until_when() -> None:
    [row] = rows([_entry("held", "canaries soak", ready_at="2026-03-01T13:00:00Z")], {})
    assert row.detail == "canaries soak (until 2026-03-01T13:00:00Z)"


def test_rows_are_ordered_by_status_then_subject() -> None:
    entries = [
        Entry("b", Action.UNCHANGED, "x"),
        Entry("a", Action.UNCHANGED, "x"),
        Entry("c", Action.INVALID, "x"),
        Entry("d", Action.PROPOSED, "x", "branch", "1", "2"),
    ]
    assert [(r.subject, r.status) for r in rows(entries, {})] == [
        ("c", "needs attention"),
        ("d", "proposed"),
        ("a", "up to date"),
        ("b", "up to date"),
    ]


def _cells(line: str) -> list[str]:
    """A GFM table row's cells: split on pipes not escaped, ``\\|`` read as ``|``, cells trimmed."""
    inner = line.strip()[1:-1]
    return [c.strip().replace("\\|", "|") for c in re.split(r"(?<!\\)\|", inner)]


def test_the_issue_is_a_markdown_table_whose_cells_read_back_with_pipes_escaped() -> None:
    tricky = Row("addon/a|b", "held", None, "2.0.0", None, "policy says: no | never\non <b>Fridays</b>")
    plain = Row("cloudnative-pg", "proposed", "1.29.2", "1.30.0", PULL, "Upgrade available.")
    text = render(Dashboard((tricky, plain)), "main", "0123456789abcdef")
    lines = text.splitlines()
    assert lines[0] == MARKER
    assert lines[1] == "upgrade-gate governs 2 subjects on main (at 0123456789ab): 1 held, 1 proposed."
    header = lines.index("| Subject | Status | Installed | Target | Pull request | Detail |")
    assert set(_cells(lines[header + 1])) == {"---"}
    table = [_cells(line) for line in lines[header + 2 :] if line.startswith("|")]
    assert table == [
        ["addon/a|b", "held", "-", "2.0.0", "-", "policy says: no | never on &lt;b>Fridays&lt;/b>"],
        ["cloudnative-pg", "proposed", "1.29.2", "1.30.0", PULL, "Upgrade available."],
    ]
    assert text.count(MARKER) == 1


def test_the_json_counts_every_status() -> None:
    data = Dashboard((Row("a", "held", None, None, None, "x"),), url="u").to_json()
    assert (data["issue"], list(data["counts"]), data["counts"]["held"]) == ("u", list(STATUSES), 1)
    assert data["rows"] == [
        {"subject": "a", "status": "held", "installed": None, "target": None, "pull_request": None, "detail": "x"}
    ]


def _dashboard_on(world: World) -> None:
    world.set_config(lambda text: text + "dashboard:\n  enabled: true\n")
    world.push("dashboard on")


def _rows(report: Report) -> dict[str, tuple[str, str | None, str | None]]:
    assert report.dashboard is not None
    return {r.subject: (r.status, r.installed, r.target) for r in report.dashboard.rows}


def test_the_dashboard_is_off_by_default(world: World) -> None:
    report = world.sync()
    assert report.dashboard is None
    assert "dashboard" not in report.to_json()
    assert not [r for r in world.github.requests if "/issues" in r and "/labels" not in r]


def test_the_dashboard_issue_follows_a_proposal_through_its_life_in_place(forge_world: World) -> None:
    world = forge_world
    _dashboard_on(world)
    report = world.sync()
    pull = report.entries[0].pull_request
    assert _rows(report) == {
        "cloudnative-pg": ("proposed", "1.29.2", "1.30.0"),
        "clustercatalog/certified-operators": ("up to date", None, None),
        "crunchy-postgres-operator": ("up to date", "5.8.7", None),
    }
    [issue] = world.forge.issues.values()
    body = issue["body" if "body" in issue else "description"]
    assert issue["title"] == "upgrade-gate dashboard"
    assert f"| cloudnative-pg | proposed | 1.29.2 | 1.30.0 | {pull} |" in body
    assert report.to_json()["dashboard"]["issue"] == issue.get("html_url", issue.get("web_url"))
    world.merge(BRANCH)
    world.forge.merge(1)
    assert _rows(world.sync())["cloudnative-pg"] == ("merged", "1.29.2", None)
    assert _rows(world.sync())["cloudnative-pg"] == ("awaiting approval", "1.29.2", "1.30.0")
    assert len(world.forge.issues) == 1
    assert (
        "| cloudnative-pg | awaiting approval | 1.29.2 | 1.30.0 | - |"
        in issue["body" if "body" in issue else "description"]
    )


def test_a_dashboard_the_forge_cannot_take_is_a_warning_and_the_next_cycle_writes_it(world: World) -> None:
    _dashboard_on(world)
    world.github.outage(502, only="/issues$")
    report = world.sync()
    assert entry(report, "cloudnative-pg")[0] == "proposed", "the cycle's other work stands"
    assert report.warnings == (
        "github: cannot write the issue <!-- upgrade-gate:dashboard --> (upgrade-gate dashboard): "
        'GET /repos/example-org/clusters/issues: HTTP 502 {"message": "Bad Gateway"}',
    )
    assert report.dashboard is not None and report.dashboard.url is None
    assert world.github.issues == {}
    world.github.fail_with = None
    report = world.sync()
    assert report.warnings == ()
    assert [i["html_url"] for i in world.github.issues.values()] == [report.dashboard and report.dashboard.url]


def test_a_dry_run_writes_no_dashboard_but_reports_it(world: World) -> None:
    _dashboard_on(world)
    report = world.sync(dry_run=True)
    assert _rows(report)["cloudnative-pg"] == ("proposed", "1.29.2", "1.30.0")
    assert world.github.issues == {}
