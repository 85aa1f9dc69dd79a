"""The doctor's checks run by the leading controller (``webhook.controller.gatecheck``): a gap is a Warning Event,
a log line and a gauge, each failure reported once until it changes or ends."""

from __future__ import annotations

from typing import Any

import pytest
from prometheus_client import generate_latest

from tests.controller.test_runtime import Sink
from webhook.controller.doctor import Check, Report
from webhook.controller.gatecheck import GateCheck
from webhook.controller.health import Metrics
from webhook.controller.recorder import EventRecorder
from webhook.errors import ClusterError

GAP = Check("gate-webhooks", "fail", "operator-controller writes as X: its upgrades go through unchecked", "set Y")
OTHER = Check("gate-webhooks", "fail", "a different gap", "")
OK = Check("gate-webhooks", "ok", "held")


def gate_check(*outcomes: Check | Exception) -> tuple[GateCheck, Sink, Metrics]:
    sink, metrics = Sink(), Metrics()
    sequence = iter(outcomes)

    def check(reads: Any, *, settings_namespace: str) -> Report:
        assert settings_namespace == "gate-settings"
        outcome = next(sequence)
        if isinstance(outcome, Exception):
            raise outcome
        return Report((outcome, Check("settings", "ok", "fine")), {})

    made = GateCheck(None, EventRecorder(sink, "pod-a"), metrics, settings_namespace="gate-settings", check=check)  # type: ignore[arg-type]
    return made, sink, metrics


def gauge(metrics: Metrics, check: str, result: str) -> float:
    value = metrics.registry.get_sample_value("upgrade_gate_controller_gate_check", {"check": check, "result": result})
    assert value is not None
    return value


def test_a_gap_is_one_event_and_a_gauge_until_it_changes_or_ends(caplog: pytest.LogCaptureFixture) -> None:
    made, sink, metrics = gate_check(GAP, GAP, OTHER, OK, GAP)
    with caplog.at_level("INFO", logger="webhook.controller.gatecheck"):
        for _ in range(5):
            assert made.run() is not None
    notes = [body["note"] for _, body in sink.created]
    assert notes == [f"{GAP.message}; fix: set Y", OTHER.message]
    assert len(sink.patched) == 1, "the gap back again within minutes counts on its Event, as client-go does"
    (_, event) = sink.created[0]
    assert (event["type"], event["reason"], event["action"]) == ("Warning", "GateNotEnforced", "Check")
    assert event["regarding"]["name"] == "clusterextensionrevisions.olm.operatorframework.io"
    assert [r.getMessage() for r in caplog.records].count("gate check passes again") == 1
    assert (gauge(metrics, "gate-webhooks", "fail"), gauge(metrics, "gate-webhooks", "ok")) == (1, 0)
    assert gauge(metrics, "settings", "ok") == 1
    assert b'upgrade_gate_controller_gate_check{check="gate-webhooks",result="fail"} 1.0' in generate_latest(
        metrics.registry
    )


def test_a_cluster_it_cannot_read_is_one_warning_and_keeps_the_last_results(caplog: pytest.LogCaptureFixture) -> None:
    refused = ClusterError("list deployments: 403 Forbidden")
    made, sink, metrics = gate_check(OK, refused, refused, OK)
    with caplog.at_level("WARNING", logger="webhook.controller.gatecheck"):
        results = [made.run() for _ in range(4)]
    assert [r is None for r in results] == [False, True, True, False]
    assert [r.getMessage() for r in caplog.records] == ["cannot check the gate"]
    assert gauge(metrics, "gate-webhooks", "ok") == 1
    assert sink.created == []
