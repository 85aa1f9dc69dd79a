"""The review as Markdown, for a GitHub job summary and the pull request's review comment. Pure: a
``ReviewReport`` in, text out.

One table row per review row: the verdict, the object (linked to its line at the head commit on the forge, or at
the merge base for a prune, when the forge's web URL is known) with the request and the user it is sent as, who
may approve (for an approval that is not admitted) and the reason in plain words (the deciding policy's name in
bold, then its message). Cells are escaped for GitHub Flavored Markdown tables: ``|`` as ``\\|``, ``<``, ``>``
and ``&`` as HTML entities (a ``<login>`` would otherwise be read as an HTML tag), line breaks as ``<br>``.

A text longer than ``limit`` characters (``COMMENT_LIMIT``: GitHub's 65,536 for an issue comment) is
summarised: the counts, every failing row, then ``and N more rows (...)`` linking to ``details_url`` (the job
that has the full report), and as many failing rows as fit when even they do not.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from urllib.parse import quote

from webhook.plan import Result
from webhook.sync.pullrequest import ReviewReport

COMMENT_LIMIT = 65_536
"""The longest body GitHub takes for an issue or pull request comment, in characters (GitLab's is 1,000,000)."""
SUMMARY_LIMIT = 1_048_576
"""The largest job summary GitHub Actions takes from one step (1 MiB; counted here in characters, which for the
ASCII-mostly text of a review is close)."""
_HEADER = ("| Verdict | Object | Who may approve | Reason |", "| --- | --- | --- | --- |")
_MARKS = {"admitted": "✅", "denied": "❌", "invalid": "❌", "failed": "❌"}


@dataclass(frozen=True, slots=True)
class CiLinks:
    """What a CI run knows about where it runs: ``blob_url`` (``<repository web URL>/blob/`` on GitHub,
    ``/-/blob/`` on GitLab; ``""`` unknown) and ``details_url`` (the run's page, which shows the job summary)."""

    blob_url: str = ""
    details_url: str = ""


def ci_links(env: Mapping[str, str]) -> CiLinks:
    """The links of the CI run ``env`` describes: GitHub Actions (``GITHUB_SERVER_URL``, ``GITHUB_REPOSITORY``,
    ``GITHUB_RUN_ID``: ``<server>/<repository>/actions/runs/<id>``) or GitLab CI (``CI_PROJECT_URL``,
    ``CI_JOB_URL``); empty links elsewhere."""
    server, repository, run = (env.get(k, "") for k in ("GITHUB_SERVER_URL", "GITHUB_REPOSITORY", "GITHUB_RUN_ID"))
    if server and repository:
        web = f"{server.rstrip('/')}/{repository}"
        return CiLinks(f"{web}/blob/", f"{web}/actions/runs/{run}" if run else "")
    project = env.get("CI_PROJECT_URL", "").rstrip("/")
    return CiLinks(f"{project}/-/blob/" if project else "", env.get("CI_JOB_URL", ""))


def render_markdown(report: ReviewReport, *, limit: int, marker: str = "", details_url: str = "") -> str:
    """The review as Markdown of at most ``limit`` characters, ``marker`` (a hidden HTML comment) first when
    given; ``details_url`` is where a summarised text sends the reader for the rows it leaves out."""
    head = [*([marker] if marker else []), _title(report), "", _context(report), ""]
    rows = [_row(report, r) for r in report.results]
    full = "\n".join([*head, *(_HEADER if rows else ()), *rows]) + "\n"
    if len(full) <= limit:
        return full
    failing = [row for row, result in zip(rows, report.results, strict=True) if result.failing]
    return _summarised(head, failing, report.results, limit, details_url)


def _summarised(head: list[str], failing: list[str], results: Sequence[Result], limit: int, details_url: str) -> str:
    """``head``, then as many of the ``failing`` rows as fit, then a line counting the rows left out."""
    kept: list[str] = []
    size = sum(len(line) + 1 for line in [*head, *_HEADER])
    for row in failing:
        if size + len(row) + 1 + len(_left_out(results, len(kept) + 1, details_url)) + 2 > limit:
            break
        kept.append(row)
        size += len(row) + 1
    return "\n".join([*head, *(_HEADER if kept else ()), *kept, "", _left_out(results, len(kept), details_url)]) + "\n"


def _left_out(results: Sequence[Result], shown: int, details_url: str) -> str:
    """``… and N more rows (x admitted, y denied): see the full report.``, linked when ``details_url`` is known;
    the first ``shown`` failing rows are not counted."""
    failing = [r for r in results if r.failing]
    counts = _counts([r for r in results if not r.failing] + failing[shown:])
    where = f"[the full report]({details_url})" if details_url else "the full report in the CI job"
    return f"… and {len(results) - shown} more rows ({counts}): see {where}."


def _title(report: ReviewReport) -> str:
    failing = sum(1 for r in report.results if r.failing)
    if failing:
        return f"### ❌ upgrade-gate review: {failing} of {len(report.results)} results fail"
    return f"### ✅ upgrade-gate review passed ({len(report.results)} results)"


def _context(report: ReviewReport) -> str:
    where = f"Pull request {report.pull}: merge" if report.pull is not None else "Merge"
    tests = sum(len(s.cases) for s in report.suites)
    suites = f"; {tests} policy test cases run" if report.suites else ""
    counts = _counts(report.results) or "no governed object changes"
    return (
        f"{where} base `{report.merge_base[:12]}` to head `{report.head[:12]}`, applied by "
        f"`{report.applier.username}`: {counts}{suites}."
    )


def _counts(results: Sequence[Result]) -> str:
    counts: dict[str, int] = {}
    for result in results:
        counts[result.verdict] = counts.get(result.verdict, 0) + 1
    return ", ".join(f"{n} {verdict}" for verdict, n in sorted(counts.items()))


def _row(report: ReviewReport, result: Result) -> str:
    verdict = f"{_MARKS.get(result.verdict, '⚪')} {result.verdict}"
    what = result.object if result.object != "-" else f"{result.file}:{result.line}" if result.line else result.file
    link = _link(report, result)
    subject = f"[{_cell(what)}]({link})" if link else _cell(what)
    if result.operation != "-":
        subject += f"<br>{_cell(result.operation)} as {_cell(_who(report, result))}"
    reason = _cell(result.message)
    if result.policy:
        reason = f"**{_cell(result.policy)}**: {reason}"
    approvers = _cell(str(result.approvers)) if result.approvers is not None else ""
    return f"| {verdict} | {subject} | {approvers} | {reason} |"


def _who(report: ReviewReport, result: Result) -> str:
    return "the applier" if result.user == report.applier.username else result.user


def _link(report: ReviewReport, result: Result) -> str:
    """The row's file on the forge: at the merge base for a prune (the file may be gone), else at the head."""
    if not report.blob_url or not result.file:
        return ""
    commit = report.merge_base if result.operation == "DELETE" else report.head
    anchor = f"#L{result.line}" if result.line else ""
    return f"{report.blob_url}{commit}/{quote(result.file)}{anchor}"


def _cell(text: str) -> str:
    """``text`` safe in a GitHub Flavored Markdown table cell (see the module docstring)."""
    escaped = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace("|", "\\|")
    return "<br>".join(escaped.splitlines())
