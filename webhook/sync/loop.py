"""The sync daemon: one cycle every period while this replica leads, each error reported and recovered from.

``run_loop`` is what ``upgrade-gate sync --interval`` runs: with a ``LeaseElector`` only the replica that holds
the Lease runs cycles (the others wait, checking every second); without one, every cycle runs. A cycle that
fails (``UpgradeGateError``: the remote, the forge, a catalog or the cluster) is handed to ``on_error`` and
the next cycle starts on time. Rendering is the caller's: ``on_report`` gets each report with its start time
(RFC 3339) and the report before it, so a front end can print only what changed.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from webhook.conditions import format_time
from webhook.errors import UpgradeGateError
from webhook.io.kube import LeaseElector
from webhook.sync.cycle import SyncOptions, run_cycle
from webhook.sync.report import Report


def run_loop(
    options: SyncOptions,
    period_s: float,
    elector: LeaseElector | None,
    *,
    on_report: Callable[[Report, str, Report | None], None],
    on_error: Callable[[str, UpgradeGateError], None],
    stop: threading.Event | None = None,
) -> None:
    """Run a cycle every ``period_s`` seconds while leader, until ``stop`` is set (or KeyboardInterrupt)."""
    stop = stop or threading.Event()
    if elector is not None:
        threading.Thread(target=elector.keep, args=(stop,), daemon=True, name="lease").start()
    previous: Report | None = None
    try:
        next_run = time.monotonic()
        while not stop.is_set():
            if elector is not None and not elector.is_leader:
                stop.wait(1.0)
                continue
            if time.monotonic() >= next_run:
                next_run = time.monotonic() + period_s
                stamp = format_time(options.clock())
                try:
                    report = run_cycle(options)
                except UpgradeGateError as error:
                    on_error(stamp, error)
                else:
                    on_report(report, stamp, previous)
                    previous = report
            stop.wait(min(1.0, max(0.0, next_run - time.monotonic())))
    except KeyboardInterrupt:
        pass
    finally:
        stop.set()
