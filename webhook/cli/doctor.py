"""``upgrade-gate doctor``: check a cluster against the installed gate, one row per check: are OLM v1 upgrades
really held?"""

from __future__ import annotations

from pathlib import Path

import click

from webhook.cli.common import EXIT_NEGATIVE, Case, Output, fail, handle_errors, junit_cases, output_options, rendered
from webhook.controller import DEFAULT_SETTINGS_NAMESPACE, Report, diagnose
from webhook.io.kube import Cluster

_COLUMNS = ("CHECK", "RESULT", "MESSAGE")


@click.command()
@click.option(
    "--kubeconfig",
    type=click.Path(path_type=Path),
    help="kubeconfig file (else in-cluster, then $KUBECONFIG, then ~/.kube/config).",
)
@click.option(
    "--settings-namespace",
    default=DEFAULT_SETTINGS_NAMESPACE,
    show_default=True,
    help="Namespace of the policy settings ConfigMap upgrade-gate-settings.",
)
@click.option("--strict", is_flag=True, help="Exit 1 on a warning too.")
@output_options(aliases={"text": "table"})
@handle_errors
def doctor(kubeconfig: Path | None, settings_namespace: str, strict: bool, output: Output) -> None:
    """Check that the installed upgrade gate really holds OLM v1 upgrades on this cluster.

    The gate holds an upgrade by denying operator-controller's CREATE of the new release: a Helm release index
    Secret in operator-controller's namespace, or a ClusterObjectSet with the Boxcutter applier. When
    operator-controller runs in another namespace (OpenShift: openshift-operator-controller) or as another user
    than the chart's webhook configurations name, no request reaches the gate and upgrades go through silently.
    doctor finds operator-controller and checks, one row each (ok, warn or fail, and what to do):

    \b
      operator-controller      where it runs and as whom (its Deployment, else its Secrets)
      applier                  Helm, or Boxcutter (BoxcutterRuntime=true in --feature-gates, ClusterObjectSets)
      gate-webhooks            the applier's gate webhook is sent its upgrade writes: rules, namespace and object
                               selectors, match conditions (the user), failurePolicy Fail
      settings                 ConfigMap upgrade-gate-settings names its user in operatorControllerUsers
      revision-crd             the ClusterExtensionRevision CRD is upgrade-gate's, not an older OLM's
      webhook-ready            the webhook's Service answers GET /readyz through the API server's proxy
      one-operator-controller  a single operator-controller runs

    -o junit: a test case per check; fail fails it, and warn too with --strict.

    \b
    Examples:
      upgrade-gate doctor
      upgrade-gate doctor --kubeconfig ~/.kube/prod -o json --strict

    \b
    Exit codes: 0 every check ok (warnings too, unless --strict); 1 a check fails (or warns, with --strict), or
    the API server refuses a read (403); 2 no cluster configuration (no kubeconfig, or one that does not load);
    3 the API server does not answer, fails (5xx) or throttles (429): retry.
    Reads (get, list): Deployments, Namespaces, Secrets (metadata only), ClusterObjectSets,
    ValidatingWebhookConfigurations, CustomResourceDefinitions, the settings ConfigMap; get services/proxy for
    webhook-ready. Writes nothing.
    """
    report = diagnose(Cluster.from_kubeconfig(kubeconfig), settings_namespace=settings_namespace)
    output.emit(lambda form: _render(form, report, strict=strict))
    if report.exit_code(strict=strict):
        failing = report.count("fail") or report.count("warn")
        word = "fail" if report.count("fail") else "warn (--strict)"
        fail(f"{failing} of {len(report.checks)} checks {word}", EXIT_NEGATIVE)


def _render(form: str, report: Report, *, strict: bool) -> str:
    """The report in the output format ``form``; JUnit: a test case per check, a ``fail`` (and, ``strict``, a
    ``warn``) a failure with its message and what to do, the other results system-out."""
    failing = ("fail", "warn") if strict else ("fail",)
    cases = []
    for check in report.checks:
        text = f"{check.message} (fix: {check.action})" if check.action else check.message
        failure = text if check.result in failing else None
        cases.append(Case(check.id, "doctor", failure, check.result, "" if failure else f"{check.result}: {text}"))
    return rendered(
        form, table=lambda: table(report), document=report.to_dict, junit=lambda: junit_cases("doctor", cases)
    )


def table(report: Report) -> str:
    """The checks as a table (CHECK, RESULT, MESSAGE; what to do on the line below a message that calls for it)
    and a summary line."""
    rows = [(check.id, check.result, check.message) for check in report.checks]
    widths = [max(len(row[i]) for row in [_COLUMNS, *rows]) for i in range(2)]
    indent = " " * (sum(widths) + 4)
    lines = []
    for row, check in zip([_COLUMNS, *rows], [None, *report.checks], strict=True):
        lines.append(f"{row[0].ljust(widths[0])}  {row[1].ljust(widths[1])}  {row[2]}".rstrip())
        if check is not None and check.action:
            lines.append(f"{indent}fix: {check.action}")
    counts = ", ".join(f"{report.count(r)} {r}" for r in ("fail", "warn", "ok") if report.count(r))
    total = len(report.checks)
    if report.result == "ok":
        lines.append(f"upgrades are held: {total} of {total} checks ok")
    elif report.result == "warn":
        lines.append(f"upgrades are held, with warnings: {counts} of {total} checks")
    else:
        lines.append(f"upgrades may go through unchecked: {counts} of {total} checks")
    return "\n".join(lines) + "\n"
