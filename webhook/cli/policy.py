"""``upgrade-gate policy test|lint``: policies as code, reviewed like code."""

from __future__ import annotations

import sys
import xml.etree.ElementTree as ET
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import click

from webhook.cli.common import (
    EXIT_NEGATIVE,
    Case,
    Output,
    cel_engine_option,
    fail,
    handle_errors,
    junit_cases,
    junit_text,
    kubernetes_version_option,
    output_options,
    rendered,
    table,
    write_atomically,
)
from webhook.errors import InputError
from webhook.policy import FileReport, SuiteResult, lint, load_suites, run_suites

PATHS = click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))


@click.group()
def policy() -> None:
    """Test and lint CEL admission policies (ValidatingAdmissionPolicy, MutatingAdmissionPolicy)."""


@policy.command("test")
@PATHS
@output_options()
@click.option("--junit", type=click.Path(dir_okay=False, path_type=Path), hidden=True)  # deprecated alias
@cel_engine_option()
@kubernetes_version_option()
@handle_errors
def test(paths: tuple[Path, ...], output: Output, junit: Path | None, cel_engine: str, kubernetes_version: str) -> None:
    """Run PolicyTest suites (files or directories).

    Each case is admitted as the kube-apiserver would: mutating policies, their patch, then validating
    policies on the patched object; its expectations are checked. Exit 1 if any case fails. -o junit: a test
    suite per PolicyTest suite, a test case per case.

    \b
    Example:
      upgrade-gate policy test policies/tests
      upgrade-gate policy test policies/tests --cel-engine cel-expr -o junit --output-file policy-tests.xml
    """
    suites = load_suites(paths)
    if not suites:
        raise InputError(f"no PolicyTest suite (kind: PolicyTest) found in {', '.join(map(str, paths))}")
    results: list[SuiteResult] = []
    for index, result in enumerate(run_suites(suites, engine=cel_engine, version=kubernetes_version), start=1):
        results.append(result)
        if sys.stderr.isatty():
            click.echo(f"\r[{index}/{len(suites)}] {result.name}".ljust(60), err=True, nl=False)
    if sys.stderr.isatty() and suites:
        click.echo("\r".ljust(61) + "\r", err=True, nl=False)
    if junit is not None:  # the deprecated --junit FILE: -o junit --output-file FILE, beside the -o output
        write_atomically(junit, junit_text(_suites_junit(results)))
    output.emit(lambda form: _render_suites(form, results))
    if not all(r.passed for r in results):
        failed = sum(1 for r in results for c in r.cases if not c.passed) + sum(1 for r in results if r.error)
        fail(f"{failed} of {sum(len(r.cases) for r in results)} cases failed", EXIT_NEGATIVE)


@policy.command("lint")
@PATHS
@output_options()
@kubernetes_version_option()
@handle_errors
def lint_command(paths: tuple[Path, ...], output: Output, kubernetes_version: str) -> None:
    """Validate policy files as the kube-apiserver does on create, and say which are portable.

    A policy that calls an upgrade-gate extension function (clock.now, cluster.get/list, olm.*) runs only in
    the upgrade-gate webhook; the others run unchanged as in-tree admission policies. A deciding expression that
    a request can push past the apiserver's per-expression cost limit (1,000,000) fails its policy: it would be
    cancelled at run time, and the failurePolicy would decide instead. Each is listed after the table, and
    --output json gives their estimates, and what a request does not choose (params, the user, lookups) but could
    still grow past the limit ("unbounded", information only). Every broken file is reported with its file, line,
    column and field; the others are still listed. A binding whose policyName names no policy in the files linted
    is reported too. SINCE: the first Kubernetes version whose apiserver creates the policy (its API version served,
    the CEL libraries of its expressions given to new policies); with --kubernetes-version, a policy needing a
    later one is broken. -o junit: a test case per file, failing when it is broken. Exit 1 if any file is broken or
    any policy fails, 2 if none is found.
    """
    reports = lint(paths, kubernetes_version)
    if not reports:
        raise InputError(f"no policy file (*.yaml, *.yml, *.json) found in {', '.join(map(str, paths))}")
    output.emit(lambda form: _render_lint(form, reports))
    for report in reports:
        for error in report.errors:
            click.echo(error, err=True)
    if any(r.failed for r in reports):
        raise SystemExit(EXIT_NEGATIVE)


def _render_suites(form: str, results: list[SuiteResult]) -> str:
    return rendered(
        form,
        table=lambda: _suite_table(results) + "\n",
        document=lambda: [_suite_document(r) for r in results],
        junit=lambda: _suites_junit(results),
    )


def _suites_junit(results: list[SuiteResult]) -> ET.Element:
    root = ET.Element("testsuites", name="upgrade-gate policy test")
    junit_suites(root, results)
    return root


def _render_lint(form: str, reports: list[FileReport]) -> str:
    findings = "".join(f"{line}\n" for line in _expensive_lines(reports))
    return rendered(
        form,
        table=lambda: _lint_table(reports) + "\n" + (f"\n{findings}" if findings else ""),
        document=lambda: [_file_document(r) for r in reports],
        junit=lambda: junit_cases(
            "policy lint", [Case(str(r.file), "policy lint", "; ".join(r.errors) or None, "broken") for r in reports]
        ),
    )


def _suite_table(results: list[SuiteResult]) -> str:
    rows: list[tuple[str, ...]] = []
    for result in results:
        if result.error is not None:
            rows.append((result.name, "-", "ERROR", result.error.splitlines()[0]))
        for case in result.cases:
            rows.append((result.name, case.case, case.outcome, case.summary))
    cases = [c for r in results for c in r.cases]
    failed = sum(1 for c in cases if not c.passed) + sum(1 for r in results if r.error)
    summary = f"{len(cases) - sum(1 for c in cases if not c.passed)} passed, {failed} failed"
    return "\n".join(table(("SUITE", "CASE", "RESULT", "DETAIL"), rows)) + f"\n\n{summary}"


def _suite_document(result: SuiteResult) -> dict[str, Any]:
    return {
        "suite": result.name,
        "file": str(result.file),
        "error": result.error,
        "cases": [
            {
                "case": c.case,
                "passed": c.passed,
                "skipped": c.skipped,
                "failures": list(c.failures),
                "seconds": round(c.seconds, 6),
            }
            for c in result.cases
        ],
    }


def junit_suites(root: ET.Element, results: Iterable[SuiteResult]) -> None:
    """Append a JUnit ``testsuite`` per suite result to ``root``: a ``testcase`` per case with a ``failure`` per
    unmet expectation, or one ``error`` when the suite's policies do not load."""
    for result in results:
        failures = sum(1 for c in result.cases if not c.passed)
        suite = ET.SubElement(
            root,
            "testsuite",
            name=result.name,
            file=str(result.file),
            tests=str(len(result.cases) or 1),
            failures=str(failures),
            errors="1" if result.error else "0",
        )
        if result.error is not None:
            ET.SubElement(ET.SubElement(suite, "testcase", name="load policies"), "error", message=result.error)
        for case in result.cases:
            element = ET.SubElement(
                suite, "testcase", name=case.case, classname=result.name, time=f"{case.seconds:.6f}"
            )
            for failure in case.failures:
                ET.SubElement(element, "failure", message=failure)


def _lint_table(reports: list[FileReport]) -> str:
    rows: list[tuple[str, ...]] = []
    for report in reports:
        if report.errors:
            rows.append((str(report.file), "-", "-", "BROKEN", "-", f"{len(report.errors)} error(s), see below"))
        for item in report.policies:
            portable = "yes" if item.portable else "no"
            notes = ", ".join(item.extensions)
            if item.fallbacks:
                notes += f"{'; ' if notes else ''}{len(item.fallbacks)} expression(s) evaluated by cel-python"
            if item.expensive:
                cancelled = f"{len(item.expensive)} expression(s) may be cancelled at run time"
                notes += f"{'; ' if notes else ''}{cancelled}{' (FAILED)' if item.failed else ''}"
            rows.append((str(report.file), item.kind, item.name, portable, item.since, notes))
    return "\n".join(table(("FILE", "KIND", "NAME", "PORTABLE", "SINCE", "EXTENSIONS"), rows))


#: Characters of an expression quoted in a text report line (the JSON report has it whole).
_QUOTED = 60
#: What the apiserver does with a request whose evaluation is cancelled, by failurePolicy.
_CANCELLED = {
    "Fail": "failurePolicy Fail: such a request is denied",
    "Ignore": "failurePolicy Ignore: such a request is admitted unchecked, so the policy fails lint",
}


def _expensive_lines(reports: list[FileReport]) -> Iterator[str]:
    """``<file>: <kind> <name>: <expression>: <why it may be cancelled> (<what the failurePolicy then does>)`` per
    expression a request can push past the cost limit."""
    for report in reports:
        for item in report.policies:
            then = _CANCELLED.get(item.failure_policy, "")
            for found in item.expensive:
                text = " ".join(found.expression.split())
                quoted = text if len(text) <= _QUOTED else text[: _QUOTED - 3] + "..."
                yield f"{report.file}: {item.kind} {item.name}: {quoted}: {found.message} ({then})"


def _file_document(report: FileReport) -> dict[str, Any]:
    return {
        "file": str(report.file),
        "errors": list(report.errors),
        "policies": [
            {
                "kind": p.kind,
                "name": p.name,
                "portable": p.portable,
                "since": p.since,
                "failed": p.failed,
                "failurePolicy": p.failure_policy,
                "unbounded": list(p.unbounded),
                "extensions": list(p.extensions),
                "fallbacks": list(p.fallbacks),
                "expensive": [
                    {"expression": e.expression, "estimatedCost": e.estimated_cost, "message": e.message}
                    for e in p.expensive
                ],
            }
            for p in report.policies
        ],
    }
