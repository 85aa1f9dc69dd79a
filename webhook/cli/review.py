"""``upgrade-gate review``: the CI check of a pull request on a GitOps repository.

The table prints one row per request: the verdict, the operation, the object and who sends it (``applier``: the
GitOps applier the summary line names), then, indented under it, the file and line that decide, the reason
(``[<policy>] <message>``) and who may approve; every line fits ``WIDTH`` columns, but for a longer file path.
JSON and JUnit carry the full text. The Markdown of ``webhook.sync.summary`` is appended to
``$GITHUB_STEP_SUMMARY`` when it is set, and written as the pull request's comment with ``--comment``; a failure
there is one warning line on stderr, and the exit code still follows the verdicts.
"""

from __future__ import annotations

import datetime
import os
import textwrap
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import click

from webhook.cli.common import (
    EXIT_BAD_INPUT,
    EXIT_NEGATIVE,
    Case,
    Output,
    cel_engine_option,
    exit_code,
    fail,
    junit_suite,
    kubernetes_version_option,
    now_option,
    output_options,
    rendered,
    warn,
)
from webhook.cli.policy import junit_suites
from webhook.errors import InputError, UpgradeGateError
from webhook.plan import Result, UserInfo
from webhook.settings import SyncSettings
from webhook.sync import (
    COMMENT_LIMIT,
    COMMENT_MARKER,
    SUMMARY_LIMIT,
    CiLinks,
    ReviewOptions,
    ReviewReport,
    ci_links,
    post_comment,
    render_markdown,
    run_review,
)

WIDTH = 100
"""The columns the table fits."""
_HEADER = ("VERDICT", "OPERATION", "OBJECT", "AS")
_LEAST = 20
"""The least width of the OBJECT and AS columns, which wrap."""


@click.command()
@click.option(
    "--repo",
    type=click.Path(file_okay=False, path_type=Path),
    default=".",
    show_default=True,
    help="A working tree of the GitOps repository (with upgrade-gate.yaml).",
)
@click.option("--base", metavar="REF", help="The branch or commit the change goes into (with --head).")
@click.option("--head", metavar="REF", help="The branch or commit of the change (with --base).")
@click.option(
    "--pull", type=int, metavar="N", help="Review pull (merge) request N: commits and reviewers from the forge."
)
@click.option(
    "--comment",
    is_flag=True,
    help="With --pull: write the review as one comment of the pull request, updated in place on every run.",
)
@click.option("--as", "as_user", metavar="USER", help="With --base/--head: the approving reviewer's user name.")
@click.option("--as-group", multiple=True, metavar="GROUP", help="With --as: a group of the reviewer (repeatable).")
@output_options()
@now_option()
@cel_engine_option()
@kubernetes_version_option()
def review(
    *,
    repo: Path,
    base: str | None,
    head: str | None,
    pull: int | None,
    comment: bool,
    as_user: str | None,
    as_group: tuple[str, ...],
    output: Output,
    now: datetime.datetime,
    cel_engine: str,
    kubernetes_version: str,
) -> None:
    """Check a change of a GitOps repository against the policies, as the cluster will see it once merged.

    Builds the admission requests applying the change makes (CREATE, UPDATE with the base object as
    oldObject, DELETE) for every changed ClusterExtensionRevision, ClusterExtension, ClusterCatalog,
    ManagedClusterAddOn and ClusterManagementAddOn under the paths of upgrade-gate.yaml, and evaluates them
    with the head's policies (policyCheck.policies) as policyCheck.applier (Argo CD's or Flux's service account)
    sends them: applies first, then the prune of deleted objects. An approval (spec.approved becomes true) must
    also be admitted for an approving reviewer: from the forge's reviews with --pull (groups: the teams
    policyCheck.teams maps), or --as/--as-group. When the change touches the policies, the policy test suites
    beside them run and the manifests the new policies decide differently are listed.

    \b
    Examples:
      upgrade-gate review --base origin/main --head HEAD --as alice --as-group platform-admins
      upgrade-gate review --pull 42 -o junit --output-file review.xml
      upgrade-gate review --pull 42 --comment
    \b
    Environment: UPGRADE_GATE_FORGE_TOKEN (GitHub: read access to pull requests, and read:org for teams;
    --comment: write access to pull requests). GITHUB_STEP_SUMMARY, when set, gets the review as Markdown.
    \b
    Exit codes: 0 every request admitted; 1 a request denied, a changed manifest invalid, a policy test failing;
    2 the review could not run (unknown ref, no such pull request, invalid upgrade-gate.yaml, policies that do
    not load); 3 the forge was unavailable (no answer, HTTP 5xx, rate limited): retry.
    """
    if (pull is None) == (base is None or head is None) or (pull is not None and (base or head)):
        fail("give --base REF and --head REF, or --pull N", EXIT_BAD_INPUT)
    if as_group and not as_user:
        fail("--as-group needs --as", EXIT_BAD_INPUT)
    if comment and pull is None:
        fail("--comment needs --pull N", EXIT_BAD_INPUT)
    options = ReviewOptions(
        repo=repo,
        base=base,
        head=head,
        pull=pull,
        reviewer=UserInfo(as_user, as_group) if as_user else None,
        forge_token=SyncSettings.from_env().forge_token,
        now=now,
        engine=cel_engine,
        kubernetes_version=kubernetes_version,
    )
    try:
        report = run_review(options)
    except UpgradeGateError as error:  # nothing reviewed: bad input (2, as any other failure here) or an outage (3)
        fail(str(error), exit_code(error, EXIT_BAD_INPUT))
    links = ci_links(os.environ)
    report = replace(report, blob_url=report.blob_url or links.blob_url)
    unwritten = ""
    try:
        output.emit(
            lambda form: rendered(
                form, table=lambda: _table(report), document=lambda: to_json(report), junit=lambda: junit(report)
            )
        )
    except InputError as error:
        unwritten = str(error)
    _publish(options, report, links, comment=comment)
    if unwritten:
        fail(unwritten, EXIT_BAD_INPUT)
    if not report.passed:
        failing = sum(1 for r in report.results if r.failing)
        fail(f"{failing} of {len(report.results)} review results fail", EXIT_NEGATIVE)


def _publish(options: ReviewOptions, report: ReviewReport, links: CiLinks, *, comment: bool) -> None:
    """Append the Markdown to ``$GITHUB_STEP_SUMMARY`` when set, post it as the review comment with ``comment``;
    a failure of either is a warning on stderr."""
    summary = os.environ.get("GITHUB_STEP_SUMMARY")
    if summary:
        try:
            with Path(summary).open("a", encoding="utf-8") as stream:
                stream.write(render_markdown(report, limit=SUMMARY_LIMIT) + "\n")
        except OSError as error:
            warn(f"GITHUB_STEP_SUMMARY {summary}: cannot write: {error.strerror or error}")
    if comment:
        body = render_markdown(report, limit=COMMENT_LIMIT, marker=COMMENT_MARKER, details_url=links.details_url)
        try:
            post_comment(options, body)
        except UpgradeGateError as error:
            warn(f"{error} (the verdicts stand; the next review --comment writes it)")


def _table(report: ReviewReport) -> str:
    """The rows as a table ``WIDTH`` columns wide (see the module docstring), and a summary line."""
    firsts = [(r.verdict, r.operation, r.object, _who(report, r)) for r in report.results]
    widths = [max(len(row[i]) for row in [_HEADER, *firsts]) for i in range(len(_HEADER))]
    room = WIDTH - 2 * (len(widths) - 1) - widths[0] - widths[1]
    widths[2] = min(widths[2], max(room - _LEAST, _LEAST))
    widths[3] = max(room - widths[2], _LEAST)
    indent = " " * (widths[0] + 2)
    lines = []
    for row, result in zip([_HEADER, *firsts], [None, *report.results], strict=True):
        lines += _wrapped_row(row, widths)
        if result is not None:
            lines.append(indent + (f"{result.file}:{result.line}" if result.line else result.file))
            for detail in (_reason(result), _approvers(result)):
                lines += textwrap.wrap(detail, WIDTH, initial_indent=indent, subsequent_indent=indent)
    if not report.results:
        lines = ["no governed object changes"]
    counts: dict[str, int] = {}
    for result in report.results:
        counts[result.verdict] = counts.get(result.verdict, 0) + 1
    summary = ", ".join(f"{n} {verdict}" for verdict, n in sorted(counts.items())) or "nothing to review"
    where = f"pull request {report.pull}, " if report.pull is not None else ""
    tests = sum(len(s.cases) for s in report.suites)
    suites = f"; {tests} policy test cases run" if report.suites else ""
    footer = (
        f"{summary} ({where}merge base {report.merge_base[:12]} to head {report.head[:12]}, "
        f"applied by {report.applier.username}{suites})"
    )
    lines += textwrap.wrap(footer, WIDTH, subsequent_indent="  ", break_long_words=False)
    return "\n".join(lines) + "\n"


def _wrapped_row(cells: Sequence[str], widths: Sequence[int]) -> list[str]:
    """The lines of one table row, each cell wrapped at blanks to its column's width (a longer word overflows)."""
    wrapped = [
        textwrap.wrap(cell, width, break_long_words=False, break_on_hyphens=False) or [""]
        for cell, width in zip(cells, widths, strict=True)
    ]
    height = max(len(cell) for cell in wrapped)
    return [
        "  ".join(
            (cell[i] if i < len(cell) else "").ljust(width) for cell, width in zip(wrapped, widths, strict=True)
        ).rstrip()
        for i in range(height)
    ]


def _who(report: ReviewReport, result: Result) -> str:
    return "applier" if result.user == report.applier.username else result.user


def _reason(result: Result) -> str:
    """``[<policy>] <message>``, or the message of a row no policy decided."""
    return f"[{result.policy}] {result.message}" if result.policy else result.message


def _approvers(result: Result) -> str:
    return f"who may approve: {result.approvers}" if result.approvers is not None else ""


def to_json(report: ReviewReport) -> dict[str, Any]:
    """The review as JSON (documented in docs/cli.md, ``upgrade-gate review``)."""
    reviewers = None
    if report.reviewers is not None:
        reviewers = [
            {"username": r.identity.username, "groups": list(r.identity.groups), "note": r.note}
            for r in report.reviewers
        ]
    return {
        "base": report.base,
        "head": report.head,
        "mergeBase": report.merge_base,
        "pullRequest": report.pull,
        "applier": {"username": report.applier.username, "groups": list(report.applier.groups)},
        "reviewers": reviewers,
        "results": [_result(r) for r in report.results],
        "policyTests": {
            "cases": sum(len(s.cases) for s in report.suites),
            "failed": sum(1 for s in report.suites for c in s.cases if not c.passed)
            + sum(1 for s in report.suites if s.error),
        },
        "passed": report.passed,
    }


def _result(result: Result) -> dict[str, Any]:
    approvers = result.approvers
    return {
        "file": result.file,
        "line": result.line,
        "object": result.object,
        "operation": result.operation,
        "as": result.user,
        "role": result.role,
        "verdict": result.verdict,
        "message": result.message,
        "policy": result.policy,
        "binding": result.binding,
        "approvers": None if approvers is None else {"groups": list(approvers.groups), "teams": list(approvers.teams)},
    }


def junit(report: ReviewReport) -> ET.Element:
    """JUnit XML: a test suite of the review's rows (one test case each; a failing row is a ``failure`` with
    its file and line, reason and who may approve) and, when policy tests ran, one of their cases."""
    root = ET.Element("testsuites", name="upgrade-gate review")
    cases = []
    for row in (r for r in report.results if r.role != "policy test"):
        where = f"{row.file}:{row.line}" if row.line else row.file
        name = f"{row.operation} {row.object} as {row.user}" if row.operation != "-" else where
        text = "; ".join(t for t in (f"{where}: {_reason(row)}", _approvers(row)) if t)
        failure = text if row.failing else None
        output = f"{row.verdict}: {text}" if not row.failing and row.message else ""
        cases.append(Case(name, row.file, failure, row.verdict if row.failing else "", output))
    junit_suite(root, "admission requests", cases)
    junit_suites(root, report.suites)
    return root
