"""``run_loop``: cycles while leader, each error reported and the next cycle run, stopped on request."""

from __future__ import annotations

import threading

from tests.sync.conftest import World
from webhook.errors import UpgradeGateError
from webhook.sync.loop import run_loop
from webhook.sync.report import Report


class Follower:
    """A LeaseElector that never leads."""

    is_leader = False

    def __init__(self) -> None:
        self.kept = threading.Event()

    def keep(self, stop: threading.Event) -> None:
        self.kept.set()
        stop.wait()


def test_a_leader_runs_cycles_and_hands_each_report_with_the_one_before(world: World) -> None:
    stop = threading.Event()
    seen: list[tuple[Report, str, Report | None]] = []

    def on_report(report: Report, stamp: str, previous: Report | None) -> None:
        seen.append((report, stamp, previous))
        if len(seen) == 2:
            stop.set()

    run_loop(world.options(), 0.0, None, on_report=on_report, on_error=lambda *_: stop.set(), stop=stop)
    assert [stamp for _, stamp, _ in seen] == ["2026-03-01T12:00:00Z"] * 2
    assert seen[0][2] is None and seen[1][2] is seen[0][0]


def test_a_failed_cycle_is_reported_and_the_next_one_runs(world: World) -> None:
    stop = threading.Event()
    errors: list[str] = []

    def on_error(stamp: str, error: UpgradeGateError) -> None:
        errors.append(f"{stamp}: {error}")
        if len(errors) == 2:
            stop.set()

    options = world.options(repo=str(world.tmp / "missing.git"))
    run_loop(options, 0.0, None, on_report=lambda *_: stop.set(), on_error=on_error, stop=stop)
    assert len(errors) == 2 and errors[0] == errors[1] and "missing.git" in errors[0]


def test_a_replica_that_does_not_lead_runs_no_cycle(world: World) -> None:
    stop = threading.Event()
    follower = Follower()
    threading.Timer(1.5, stop.set).start()
    ran: list[Report] = []
    run_loop(world.options(), 0.0, follower, on_report=lambda r, *_: ran.append(r), on_error=lambda *_: None, stop=stop)  # type: ignore[arg-type]
    assert follower.kept.is_set() and ran == []
