"""The controller's metrics and its HTTP endpoints: ``/healthz``, ``/readyz`` and ``/metrics`` (plain HTTP).

Metrics, on the webhook's conventions (``webhook.serve.metrics``: ``upgrade_gate_`` prefix, base units, one
registry per instance):

- ``upgrade_gate_controller_reconciles_total{result}``: reconciles of a ClusterExtension (or ManagedClusterAddOn),
  ``result`` ``ok`` or ``retry`` (it failed and was queued again with backoff);
- ``upgrade_gate_controller_queue_depth``: ClusterExtensions waiting to be reconciled;
- ``upgrade_gate_controller_revisions{state}``: ClusterExtensionRevisions by the state their status reports
  (``pending approval``, ``progressing``, ``succeeded``, ``failed``, ``unknown`` before a first status);
- ``upgrade_gate_controller_addons{state}``: ManagedClusterAddOns by their ``Progressing`` condition (``installing``,
  ``upgrading``, ``rolling back``, ``succeeded``, ``failed``, ``unknown``), only where the hub serves the add-on
  installVersion lifecycle (``webhook.controller.addonwatch``);
- ``upgrade_gate_controller_leader``: 1 while this replica holds the Lease;
- ``upgrade_gate_controller_api_requests_total{verb}``: requests to the Kubernetes API (``list`` and ``watch`` of
  the watch caches; ``get`` of the ManagedClusterAddOn CRD; ``post``, ``patch``, ``delete`` of the writes; the
  Lease's own calls are not counted);
- ``upgrade_gate_controller_unapproved_upgrades_total``: installed versions that changed with no approved revision
  (``webhook.controller.breach``), counted by the leader;
- ``upgrade_gate_controller_gate_check{check,result}``: the doctor's checks as the leader last ran them, 1 for each
  check's current result (``webhook.controller.gatecheck``);
- ``process_resident_memory_bytes`` and the other ``process_*`` metrics of ``prometheus_client``.

``/readyz`` is 200 once every watch cache has listed its kind, else 503 naming those that have not.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from prometheus_client import CollectorRegistry, Counter, Gauge, ProcessCollector, generate_latest

from webhook.errors import InputError

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


class Metrics:
    """The controller's metrics in their own ``CollectorRegistry``."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.reconciles = Counter(
            "upgrade_gate_controller_reconciles",
            "Reconciles of a ClusterExtension and its revisions, by result (ok, retry).",
            ["result"],
            registry=self.registry,
        )
        self.queue_depth = Gauge(
            "upgrade_gate_controller_queue_depth", "ClusterExtensions waiting to be reconciled.", registry=self.registry
        )
        self.revisions = Gauge(
            "upgrade_gate_controller_revisions",
            "ClusterExtensionRevisions by the state their status reports.",
            ["state"],
            registry=self.registry,
        )
        self.addons = Gauge(
            "upgrade_gate_controller_addons",
            "ManagedClusterAddOns by the state of their Progressing condition (the add-on installVersion lifecycle).",
            ["state"],
            registry=self.registry,
        )
        self.leader = Gauge(
            "upgrade_gate_controller_leader", "1 while this replica holds the Lease, else 0.", registry=self.registry
        )
        self.gate_checks = Gauge(
            "upgrade_gate_controller_gate_check",
            "1 for the current result (ok, warn, fail) of each of the doctor's checks the leader runs, else 0.",
            ["check", "result"],
            registry=self.registry,
        )
        self.unapproved_upgrades = Counter(
            "upgrade_gate_controller_unapproved_upgrades",
            "ClusterExtensions whose installed version changed with no approved ClusterExtensionRevision.",
            registry=self.registry,
        )
        self.api_requests = Counter(
            "upgrade_gate_controller_api_requests",
            "Requests to the Kubernetes API by verb (watch caches and writes; not the Lease).",
            ["verb"],
            registry=self.registry,
        )
        ProcessCollector(registry=self.registry)

    def count_request(self, verb: str) -> None:
        """Count one API request of ``verb`` (``list``, ``watch``, ``get``, ``post``, ``patch``, ``delete``)."""
        self.api_requests.labels(verb).inc()


def serve_health(host: str, port: int, metrics: Metrics, not_ready: Callable[[], list[str]]) -> ThreadingHTTPServer:
    """Start the endpoints on ``host``:``port`` (0 = any free port) in a daemon thread; returns the server
    (``server_address`` says the port; ``shutdown()`` stops it). ``/readyz`` answers 503 listing what
    ``not_ready()`` returns (``not synced: <kind>``, ``leader election: <why>``), else 200. Raises ``InputError``
    when the address cannot be bound (a port taken, an address not on this host)."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            path = self.path.split("?", 1)[0]
            if path == "/healthz":
                self._answer(200, b"ok\n", "text/plain")
            elif path == "/readyz":
                waiting = not_ready()
                body = ("; ".join(waiting) if waiting else "ok") + "\n"
                self._answer(503 if waiting else 200, body.encode(), "text/plain")
            elif path == "/metrics":
                self._answer(200, generate_latest(metrics.registry), CONTENT_TYPE)
            else:
                self._answer(404, b"not found\n", "text/plain")

        def _answer(self, code: int, body: bytes, content_type: str) -> None:
            self.send_response(code)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            """Probes are not logged."""

    try:
        server = ThreadingHTTPServer((host, port), Handler)
    except OSError as error:
        raise InputError(f"cannot serve /healthz on {host}:{port}: {error.strerror or error}") from None
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, name="health", daemon=True).start()
    return server
