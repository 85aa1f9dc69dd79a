"""Prometheus metrics of the webhook, exposed on ``/metrics``.

Names follow the apiserver's admission metrics and Gatekeeper's (``gatekeeper_validation_request_count``,
``..._duration_seconds``), prefixed ``upgrade_gate_``:

- ``upgrade_gate_admission_requests_total{endpoint, kind, operation, decision}``: answered requests;
  ``endpoint`` is ``validate``|``mutate``, ``decision`` ``allowed``|``denied``|``refused`` (the webhook itself
  failed closed: internal error or deadline)|``invalid`` (HTTP 4xx; kind and operation then ``""``).
- ``upgrade_gate_admission_duration_seconds{endpoint}``: latency histogram, from body read to response.
- ``upgrade_gate_evaluation_errors_total{endpoint}``: evaluations that raised or ran past the deadline.
- ``upgrade_gate_evaluation_preemptions_total{endpoint}``: evaluations that outlived their time slice on a worker's
  event loop and were done again in an evaluation thread (``webhook.serve.app``).
- ``upgrade_gate_fail_closed_total{endpoint, policy}``: requests denied because a ``failurePolicy: Fail``
  policy errored (rather than because a validation was false).
- ``upgrade_gate_policy_generation``: generation of the policy set being served (1 = first load).
- ``upgrade_gate_policy_load_errors_total``: policy set loads that failed (the previous set kept serving).
- ``upgrade_gate_policy_load_failed``: 1 while the last load failed, else 0.
- ``upgrade_gate_connections{state}``: connections of the workers, ``open`` (all) and ``idle`` (in their TLS
  handshake, or waiting for a request), refreshed every second (``webhook.serve.worker``).
- ``upgrade_gate_connection_timeouts_total``: connections closed because their TLS handshake or a request body
  made no progress within the I/O timeout (slow or stalled clients).

Labelled series whose label values are known in advance (``endpoint``, ``state``) are created at zero, as
Prometheus' instrumentation practices ask, so a query or an alert finds them before the first event.

Under gunicorn every worker is a process: with a multiprocess directory (``prometheus_client`` multiprocess
mode, which ``multiprocess_directory`` enables) ``/metrics`` sums all workers' values.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest, multiprocess, values

#: Latency buckets in seconds: dense below 25 ms, where a webhook should answer.
LATENCY_BUCKETS = (0.001, 0.002, 0.003, 0.005, 0.0075, 0.01, 0.015, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
ENDPOINTS = ("validate", "mutate")
CONNECTION_STATES = ("open", "idle")


class Metrics:
    """The webhook's metrics, registered in their own ``CollectorRegistry`` (one per application, so tests
    can build many). ``multiprocess_dir``: the directory gunicorn workers write to; ``None`` when the
    process is alone (tests, development)."""

    def __init__(self, multiprocess_dir: Path | None = None) -> None:
        self.multiprocess_dir = multiprocess_dir
        self.registry = CollectorRegistry()
        self.requests = Counter(
            "upgrade_gate_admission_requests",
            "Admission requests answered, by endpoint, kind, operation and decision.",
            ["endpoint", "kind", "operation", "decision"],
            registry=self.registry,
        )
        self.latency = Histogram(
            "upgrade_gate_admission_duration_seconds",
            "Time to answer an admission request, in seconds.",
            ["endpoint"],
            buckets=LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.preemptions = Counter(
            "upgrade_gate_evaluation_preemptions",
            "Evaluations that outlived their time slice on the event loop and were done again in a thread.",
            ["endpoint"],
            registry=self.registry,
        )
        self.evaluation_errors = Counter(
            "upgrade_gate_evaluation_errors",
            "Evaluations that raised an internal error or ran past the request deadline.",
            ["endpoint"],
            registry=self.registry,
        )
        self.fail_closed = Counter(
            "upgrade_gate_fail_closed",
            "Requests denied because a failurePolicy Fail policy errored.",
            ["endpoint", "policy"],
            registry=self.registry,
        )
        self.generation = Gauge(
            "upgrade_gate_policy_generation",
            "Generation of the policy set being served (1 = first load).",
            registry=self.registry,
            multiprocess_mode="mostrecent",
        )
        self.load_errors = Counter(
            "upgrade_gate_policy_load_errors",
            "Policy set loads that failed; the previous set kept serving.",
            registry=self.registry,
        )
        self.connections = Gauge(
            "upgrade_gate_connections",
            "Open connections of the workers (open: all, idle: in their TLS handshake or waiting for a request).",
            ["state"],
            registry=self.registry,
            multiprocess_mode="livesum",
        )
        self.connection_timeouts = Counter(
            "upgrade_gate_connection_timeouts",
            "Connections closed because their TLS handshake or a request body made no progress in time.",
            registry=self.registry,
        )
        self.load_failed = Gauge(
            "upgrade_gate_policy_load_failed",
            "1 while the last policy set load failed, else 0.",
            registry=self.registry,
            multiprocess_mode="mostrecent",
        )

        for endpoint in ENDPOINTS:
            self.latency.labels(endpoint)
            self.evaluation_errors.labels(endpoint)
            self.preemptions.labels(endpoint)
        for state in CONNECTION_STATES:
            self.connections.labels(state)

    def exposition(self) -> bytes:
        """The Prometheus text exposition: this process's registry, or every worker's files summed."""
        if self.multiprocess_dir is None:
            return generate_latest(self.registry)
        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry, path=str(self.multiprocess_dir))  # type: ignore[no-untyped-call]
        return generate_latest(registry)


def forget_process(multiprocess_dir: Path, pid: int) -> None:
    """Drop the live gauges of an exited worker (gunicorn's ``child_exit`` hook)."""
    multiprocess.mark_process_dead(pid, str(multiprocess_dir))  # type: ignore[no-untyped-call]


def multiprocess_directory(configured: Path | None) -> Path:
    """Enable ``prometheus_client``'s multiprocess mode in ``configured`` (a new temporary directory if ``None``),
    emptied of a previous run's files, for the metrics made from now on; returns the directory.

    prometheus_client reads ``PROMETHEUS_MULTIPROC_DIR`` once, when first imported, which other commands' modules
    may have done already: its value class is chosen again here."""
    directory = configured or Path(tempfile.mkdtemp(prefix="upgrade-gate-metrics-"))
    directory.mkdir(parents=True, exist_ok=True)
    for stale in directory.glob("*.db"):
        stale.unlink()
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = str(directory)
    values.ValueClass = values.get_value_class()  # type: ignore[no-untyped-call]
    return directory
