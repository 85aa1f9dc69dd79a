"""``upgrade-gate review``: the CI check of a pull request on a GitOps repository."""

from __future__ import annotations

import datetime
import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import click

from webhook.cli.common import EXIT_BAD_INPUT, EXIT_NEGATIVE, cel_engine_option, fail
from webhook.cli.policy import junit_suites
from webhook.errors import UpgradeGateError
from webhook.plan import Identity, Result
from webhook.settings import SyncSettings
from webhook.sync import ReviewOptions, ReviewReport, run_review

_COLUMNS = ("FILE", "OBJECT", "OPERATION", "AS", "VERDICT", "MESSAGE")


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
@click.option("--as", "as_user", metavar="USER", help="With --base/--head: the approving reviewer's user name.")
@click.option("--as-group", multiple=True, metavar="GROUP", help="With --as: a group of the reviewer (repeatable).")
@click.option("-o", "--output", type=click.Choice(["table", "json", "junit"]), default="table", show_default=True)
@click.option("--output-file", type=click.Path(dir_okay=False, path_type=Path), help="Write the output here.")
@click.option("--now", metavar="TIME", help="Evaluate at this RFC 3339 time (clock.now()) [default: now].")
@cel_engine_option()
def review(
    *,
    repo: Path,
    base: str | None,
    head: str | None,
    pull: int | None,
    as_user: str | None,
    as_group: tuple[str, ...],
    output: str,
    output_file: Path | None,
    now: str | None,
    cel_engine: str,
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
    \b
    Environment: UPGRADE_GATE_FORGE_TOKEN (GitHub: read access to pull requests, and read:org for teams).
    \b
    Exit codes: 0 every request admitted; 1 a request denied, a changed manifest invalid, a policy test failing;
    2 the review could not run (unknown ref, forge unreachable, invalid upgrade-gate.yaml, policies that do not
    load).
    """
    if (pull is None) == (base is None or head is None) or (pull is not None and (base or head)):
        fail("give --base REF and --head REF, or --pull N", EXIT_BAD_INPUT)
    if as_group and not as_user:
        fail("--as-group needs --as", EXIT_BAD_INPUT)
    options = ReviewOptions(
        repo=repo,
        base=base,
        head=head,
        pull=pull,
        reviewer=Identity(as_user, as_group) if as_user else None,
        forge_token=SyncSettings.from_env().forge_token,
        now=_time(now),
        engine=cel_engine,
    )
    try:
        report = run_review(options)
    except UpgradeGateError as error:
        fail(_one_line(str(error)), EXIT_BAD_INPUT)
    text = _render(report, output)
    if output_file is not None:
        output_file.write_text(text, encoding="utf-8")
        if output != "table":
            click.echo(_table(report))
    else:
        click.echo(text, nl=False)
    if not report.passed:
        failing = sum(1 for r in report.results if r.failing)
        fail(f"{failing} of {len(report.results)} review results fail", EXIT_NEGATIVE)


def _one_line(message: str) -> str:
    """A multi-line error (a policy set's problems) as its first line and first problem."""
    lines = message.splitlines()
    if len(lines) <= 2:
        return " ".join(lines)
    return f"{lines[0]} {lines[1]} (and {len(lines) - 2} more)"


def _time(text: str | None) -> datetime.datetime:
    """``--now``: an RFC 3339 time (UTC when it names no offset); the current time when not given."""
    if text is None:
        return datetime.datetime.now(datetime.UTC)
    try:
        moment = datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        fail(f"--now {text!r}: expected an RFC 3339 time such as 2026-06-01T12:00:00Z", EXIT_BAD_INPUT)
    return moment if moment.tzinfo else moment.replace(tzinfo=datetime.UTC)


def _render(report: ReviewReport, output: str) -> str:
    if output == "json":
        return json.dumps(to_json(report), indent=2, sort_keys=True) + "\n"
    if output == "junit":
        root = junit(report)
        ET.indent(root)
        return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
    return _table(report)


def _table(report: ReviewReport) -> str:
    rows = [
        (
            f"{r.file}:{r.line}" if r.line and r.failing else r.file,
            r.object,
            r.operation,
            r.user,
            r.verdict,
            r.message,
        )
        for r in report.results
    ]
    lines = []
    if rows:
        widths = [max(len(row[i]) for row in [_COLUMNS, *rows]) for i in range(len(_COLUMNS) - 1)]
        for row in [_COLUMNS, *rows]:
            lines.append(("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=False)) + "  " + row[-1]).rstrip())
    else:
        lines.append("no governed object changes")
    counts: dict[str, int] = {}
    for result in report.results:
        counts[result.verdict] = counts.get(result.verdict, 0) + 1
    summary = ", ".join(f"{n} {verdict}" for verdict, n in sorted(counts.items())) or "nothing to review"
    where = f"pull request {report.pull}, " if report.pull is not None else ""
    tests = sum(len(s.cases) for s in report.suites)
    suites = f"; {tests} policy test cases run" if report.suites else ""
    lines.append(
        f"{summary} ({where}merge base {report.merge_base[:12]} to head {report.head[:12]}, "
        f"applied by {report.applier.username}{suites})"
    )
    return "\n".join(lines) + "\n"


def to_json(report: ReviewReport) -> dict[str, Any]:
    """The review as JSON (documented in README.md, ``upgrade-gate review``)."""
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
    return {
        "file": result.file,
        "line": result.line,
        "object": result.object,
        "operation": result.operation,
        "as": result.user,
        "role": result.role,
        "verdict": result.verdict,
        "message": result.message,
    }


def junit(report: ReviewReport) -> ET.Element:
    """JUnit XML: a test suite of the review's rows (one test case each; a failing row is a ``failure`` with
    its message) and, when policy tests ran, one of their cases."""
    root = ET.Element("testsuites", name="upgrade-gate review")
    failing = [r for r in report.results if r.failing and r.role != "policy test"]
    rows = [r for r in report.results if r.role != "policy test"]
    suite = ET.SubElement(
        root, "testsuite", name="admission requests", tests=str(len(rows)), failures=str(len(failing)), errors="0"
    )
    for row in rows:
        name = f"{row.operation} {row.object} as {row.user}" if row.operation != "-" else f"{row.file}:{row.line}"
        case = ET.SubElement(suite, "testcase", name=name, classname=row.file)
        if row.failing:
            ET.SubElement(case, "failure", message=row.message, type=row.verdict).text = row.message
        elif row.message:
            ET.SubElement(case, "system-out").text = f"{row.verdict}: {row.message}"
    junit_suites(root, report.suites)
    return root
