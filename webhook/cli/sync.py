"""``upgrade-gate sync``: propose upgrades as ClusterExtensionRevision manifests and add-on installVersion edits on
branches and pull requests."""

from __future__ import annotations

import hashlib
import socket
import time
from pathlib import Path
from typing import Any

import click

from webhook.cli.common import EXIT_NEGATIVE, Output, fail, handle_errors, output_options, rendered, table, warn
from webhook.errors import ClusterError, InputError
from webhook.io import Credentials
from webhook.io.kube import Cluster, LeaseElector, connect
from webhook.settings import SyncSettings
from webhook.sync import ACTIONS, PROBLEMS, ClusterView, Report, SyncOptions, run_cycle, run_loop
from webhook.sync import parse_duration as config_duration

_COLUMNS = ("SUBJECT", "ACTION", "FROM", "TO", "BRANCH", "PULL REQUEST", "REASON")


def parse_duration(text: str) -> float:
    """A Go ``time.ParseDuration`` string (``10m``, ``1h30m``; ``webhook.sync.config.parse_duration``) in
    seconds; raises ``InputError`` for another shape or a zero duration."""
    duration = config_duration(text)
    if duration is None:
        raise InputError(f"--interval {text!r}: expected a duration such as 30s, 10m or 1h30m")
    seconds = duration.total_seconds()
    if seconds <= 0:
        raise InputError(f"--interval {text!r}: must be positive")
    return seconds


@click.command()
@click.option("--repo", required=True, metavar="URL|PATH", help="The GitOps repository (with upgrade-gate.yaml).")
@click.option("--once", is_flag=True, help="Run one cycle and exit (the default without --interval).")
@click.option("--interval", metavar="DURATION", help="Run a cycle every DURATION (10m, 1h30m) until stopped.")
@click.option(
    "--workdir",
    type=click.Path(file_okay=False, path_type=Path),
    help="The sync loop's working clone [default: ~/.cache/upgrade-gate/<hash of the repository>].",
)
@output_options(("table", "json"), aliases={"text": "table"})
@click.option("--progress/--no-progress", default=True, show_default=True, help="Report progress on stderr.")
@click.option(
    "--dry-run",
    is_flag=True,
    help="Show the plan and the diff of every change; push nothing and write nothing to the forge.",
)
@handle_errors
def sync(
    *, repo: str, once: bool, interval: str | None, workdir: Path | None, output: Output, progress: bool, dry_run: bool
) -> None:
    """Propose operator upgrades (ClusterExtensionRevisions) and add-on installVersion upgrades on a GitOps repository.

    Each cycle reads upgrade-gate.yaml at the repository root, resolves every ClusterExtension against the
    catalogs exactly as OLM v1 does, and on branch <branchPrefix><extension> creates, updates (approved reset
    to false) or removes its one ClusterExtensionRevision, then opens or updates the pull request. With
    `addons`, pinned add-on installVersions move to the newest supported version on <branchPrefix>addon/<name>,
    canary placement first; the others are held until the canaries have run it for the soak. Branches a
    human committed to, and changes whose pull request a person closed unmerged, are left alone.

    With --dry-run, the cycle reads the remote and the forge, then prints what it would do and the diff of
    each change, and pushes and writes nothing. With --interval, each cycle prints its time and only the
    entries that changed since the cycle before (--output-file: each cycle replaces the file). No -o junit:
    a cycle's entries are actions taken, not test cases.

    \b
    Environment: UPGRADE_GATE_GIT_USERNAME/_PASSWORD (HTTPS), GIT_SSH_COMMAND (SSH), UPGRADE_GATE_FORGE_TOKEN,
    UPGRADE_GATE_CLUSTER (auto|on|off), KUBECONFIG, UPGRADE_GATE_LEADER_ELECTION, UPGRADE_GATE_LEASE_NAME,
    POD_NAMESPACE, POD_NAME, UPGRADE_GATE_SYNC_WORKDIR.
    \b
    Exit codes: 0 done; 1 something needs attention (an invalid manifest, an upgrade that does not resolve, a
    change that could not be pushed) or the remote, forge, catalog or cluster refused; 2 bad input; 3 the forge,
    catalogd or the API server was unavailable (no answer, HTTP 5xx, rate limited): retry.
    """
    if once and interval:
        raise InputError("--once and --interval exclude each other")
    period = parse_duration(interval) if interval else None
    settings = SyncSettings.from_env()
    api_client = _api_client(settings)
    cluster: ClusterView | None = Cluster(api_client) if api_client is not None else None
    options = SyncOptions(
        repo=repo,
        workdir=workdir or settings.workdir or _default_workdir(repo),
        credentials=Credentials(settings.git_username, settings.git_password),
        forge_token=settings.forge_token,
        cluster=cluster,
        progress=_Progress() if progress else None,
        dry_run=dry_run,
    )
    if period is None:
        report = run_cycle(options)
        _render(report, output.format, file=output.file)
        if report.problems:
            counts = ", ".join(f"{report.count(a)} {a}" for a in PROBLEMS if report.count(a))
            fail(f"{report.problems} need attention ({counts})", EXIT_NEGATIVE)
        return
    elector = None
    if settings.leader_election:
        if api_client is None:
            raise InputError("UPGRADE_GATE_LEADER_ELECTION needs a cluster (in-cluster or a kubeconfig)")
        identity = settings.identity or socket.gethostname()
        elector = LeaseElector(
            api_client, settings.namespace, settings.lease_name, identity, duration_s=settings.lease_duration_s
        )
    run_loop(
        options,
        period,
        elector,
        on_report=lambda report, stamp, previous: _render(
            report, output.format, stamp=stamp, previous=previous, file=output.file
        ),
        on_error=lambda stamp, error: click.echo(f"upgrade-gate: {stamp}: {error}", err=True),
    )


def _api_client(settings: SyncSettings) -> Any:
    if settings.cluster == "off":
        return None
    try:
        return connect(settings.kubeconfig)
    except ClusterError as error:  # no configuration loads: bad input when a cluster is required
        if settings.cluster == "on":
            raise InputError(str(error)) from None
        return None


def _default_workdir(repo: str) -> Path:
    digest = hashlib.sha256(repo.encode()).hexdigest()[:16]
    return Path.home() / ".cache" / "upgrade-gate" / digest


class _Progress:
    """Progress on stderr, at most every two seconds: ``resolving 300/1000 (cloudnative-pg)``."""

    def __init__(self) -> None:
        self._last = time.monotonic()

    def __call__(self, subject: str, done: int, total: int) -> None:
        now = time.monotonic()
        if now - self._last >= 2.0 or (done == total and total >= 100):
            self._last = now
            click.echo(f"upgrade-gate: resolving {done}/{total} ({subject})", err=True)


def _render(
    report: Report,
    output: str,
    *,
    stamp: str | None = None,
    previous: Report | None = None,
    file: Path | None = None,
) -> None:
    """The report in the format ``output`` (``json``, else the table) on stdout or in ``file`` (``Output``)."""
    for warning in report.warnings:  # a write that failed without failing the cycle (the dashboard)
        warn(warning)
    Output(output, file).emit(lambda form: _text(report, form, stamp=stamp, previous=previous))


def _text(report: Report, output: str, *, stamp: str | None, previous: Report | None) -> str:
    return rendered(
        output,
        table=lambda: _table(report, stamp=stamp, previous=previous),
        document=lambda: {**report.to_json(), **({"time": stamp} if stamp else {})},
    )


def _table(report: Report, *, stamp: str | None, previous: Report | None) -> str:
    """The report as a table; with ``stamp`` (a cycle of ``--interval``) the time first, and only the entries
    that differ from the ``previous`` cycle's. A dry run's diffs follow the table."""
    seen = set(previous.entries) if previous is not None else set()
    changed = [e for e in report.entries if e.action != "unchanged" and e not in seen]
    lines = [f"{stamp} cycle"] if stamp is not None else []
    rows = [
        (
            e.subject,
            e.action,
            e.from_version or "-",
            e.to_version or "-",
            e.branch or "-",
            e.pull_request or "-",
            e.reason,
        )
        for e in changed
    ]
    if rows:
        lines += table(_COLUMNS, rows)
    text = "".join(line + "\n" for line in lines)
    for entry in changed:
        if entry.diff:
            text += f"\n{entry.subject} on {entry.branch}:\n{entry.diff}"
    counts = ", ".join(f"{report.count(a)} {a}" for a in ACTIONS if report.count(a)) or "nothing to sync"
    dry_run = "; dry run: nothing pushed, nothing written to the forge" if report.dry_run else ""
    return text + f"{counts} (base {report.base} at {report.commit[:12]}{dry_run})\n"
