"""Run-time bounds of the real server: the comprehension cap and the request deadline on both CEL engines,
cheap requests answered beside expensive ones, idle and stalled clients bounded. Each test is bounded in time."""

from __future__ import annotations

import http.client
import json
import socket
import ssl
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.serve.conftest import DATA
from tests.serve.process import Server, serving
from webhook.settings import CEL_ENGINES

LIMITS = DATA / "limits" / "policies.yaml"
TIMEOUT_S = 1.5
IO_TIMEOUT_S = 1.0


def review(resource: str, kind: str, obj: dict[str, Any], uid: str = "u") -> bytes:
    group = "limits.example.com" if resource != "configmaps" else ""
    request = {
        "uid": uid,
        "kind": {"group": group, "version": "v1", "kind": kind},
        "resource": {"group": group, "version": "v1", "resource": resource},
        "operation": "CREATE",
        "name": "x",
        "object": obj,
    }
    return json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request}).encode()


RUNAWAY = review("runaways", "Runaway", {"items": list(range(60))})
SLOW = review("slows", "Slow", {"small": list(range(21))})
CHEAP = review("configmaps", "ConfigMap", {"data": {"a": "b"}})


@pytest.fixture(scope="module", params=CEL_ENGINES)
def server(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    tmp = tmp_path_factory.mktemp("limits")
    args = ("--workers", "2", "--request-timeout", str(TIMEOUT_S), "--cel-engine", request.param)
    with serving(tmp, LIMITS, *args, env={"UPGRADE_GATE_IO_TIMEOUT": str(IO_TIMEOUT_S)}) as running:
        yield running


def keep_alive(server: Server) -> http.client.HTTPSConnection:
    return http.client.HTTPSConnection("127.0.0.1", server.port, context=server.context(), timeout=30)


def tls(server: Server) -> ssl.SSLSocket:
    """A TLS connection to ``server``, handshaken, nothing sent."""
    return server.context().wrap_socket(
        socket.create_connection(("127.0.0.1", server.port)), server_hostname="localhost"
    )


def timed_post(server: Server, body: bytes, connection: http.client.HTTPSConnection | None = None) -> tuple[Any, float]:
    """(the AdmissionReview response, seconds) of one POST /validate, on ``connection`` if given (kept alive)."""
    own = connection is None
    connection = connection or http.client.HTTPSConnection(
        "127.0.0.1", server.port, context=server.context(), timeout=30
    )
    started = time.monotonic()
    try:
        connection.request("POST", "/validate", body=body, headers={"Content-Type": "application/json"})
        answer = connection.getresponse()
        data = answer.read()
    finally:
        if own:
            connection.close()
    assert answer.status == 200, data
    return json.loads(data)["response"], time.monotonic() - started


def test_a_runaway_comprehension_is_stopped_by_the_iteration_cap_in_well_under_a_second(server: Server) -> None:
    response, elapsed = timed_post(server, RUNAWAY)
    assert response["allowed"] is False
    assert "operation cancelled: actual cost limit exceeded" in response["status"]["message"]
    assert len(response["status"]["details"]["causes"]) == 3
    assert elapsed < TIMEOUT_S


def test_the_deadline_ends_every_evaluation_of_concurrent_requests_and_the_answer_says_so(server: Server) -> None:
    results: list[tuple[Any, float]] = []

    def client() -> None:
        for _ in range(3):
            results.append(timed_post(server, SLOW))

    threads = [threading.Thread(target=client) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert [response["status"] for response, _ in results] == [
        {"code": 504, "reason": "Timeout", "message": f"upgrade-gate: no decision within {TIMEOUT_S:g}s"}
    ] * 6
    assert max(elapsed for _, elapsed in results) < TIMEOUT_S + 1.0


def test_cheap_requests_are_answered_while_expensive_ones_hold_threads(server: Server) -> None:
    slow_answered: list[float] = []

    def slow() -> None:
        timed_post(server, SLOW)
        slow_answered.append(time.monotonic())

    busy = [threading.Thread(target=slow) for _ in range(4)]
    for thread in busy:
        thread.start()
    time.sleep(0.2)
    connection = keep_alive(server)
    try:
        for _ in range(10):
            timed_post(server, CHEAP, connection)
        cheap_answered = time.monotonic()
    finally:
        connection.close()
    for thread in busy:
        thread.join()
    # Every cheap answer arrived while the expensive requests were still held (they end at the deadline):
    # no cheap request queued behind an expensive one. Ordered in time, not timed, so a loaded machine cannot fail it.
    assert cheap_answered < min(slow_answered)


@pytest.fixture(scope="module")
def transport(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    tmp = tmp_path_factory.mktemp("transport")
    with serving(tmp, LIMITS, "--workers", "2", env={"UPGRADE_GATE_IO_TIMEOUT": str(IO_TIMEOUT_S)}) as running:
        yield running


def metric(server: Server, line_prefix: str) -> float:
    _, text = server.request("GET", "/metrics")
    found = [line for line in text.splitlines() if line.startswith(line_prefix + " ")]
    return float(found[0].split()[-1]) if found else 0.0


def test_idle_connections_hold_no_thread_and_are_counted(transport: Server) -> None:
    # Handshaken and silent: they wait for a first request up to the keep-alive timeout (a connection silent inside
    # its handshake is closed after the I/O timeout, below).
    handshaken = [
        transport.context().wrap_socket(
            socket.create_connection(("127.0.0.1", transport.port)), server_hostname="localhost"
        )
        for _ in range(40)
    ]
    try:
        latencies = [timed_post(transport, CHEAP)[1] for _ in range(5)]
        assert max(latencies) < 1.0
        time.sleep(1.5)  # the workers refresh the connection gauges every second
        assert metric(transport, 'upgrade_gate_connections{state="idle"}') >= 40
    finally:
        for connection in handshaken:
            connection.close()


def _answer_then_close(connection: socket.socket, seconds: float) -> bytes | None:
    """What the server sent before closing ``connection`` within ``seconds``; ``None`` if it did not close."""
    connection.settimeout(seconds)
    received = b""
    try:
        while chunk := connection.recv(65536):
            received += chunk
    except (ConnectionResetError, ssl.SSLError):
        pass
    except TimeoutError:
        return None
    return received


def test_clients_stalled_inside_a_handshake_or_a_body_are_closed_after_the_io_timeout(transport: Server) -> None:
    before = metric(transport, "upgrade_gate_connection_timeouts_total")
    handshake = socket.create_connection(("127.0.0.1", transport.port))
    handshake.sendall(b"\x16\x03\x01")  # the first bytes of a TLS ClientHello, then nothing
    body = transport.context().wrap_socket(
        socket.create_connection(("127.0.0.1", transport.port)), server_hostname="localhost"
    )
    body.sendall(
        b"POST /validate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"
    )
    try:
        answer = _answer_then_close(body, IO_TIMEOUT_S + 3)
        assert answer is not None
        assert answer.startswith(b"HTTP/1.1 408 ")
        assert b'"reason":"RequestTimeout"' in answer
        assert _answer_then_close(handshake, IO_TIMEOUT_S + 3) == b""
    finally:
        handshake.close()
        body.close()
    time.sleep(0.2)
    assert metric(transport, "upgrade_gate_connection_timeouts_total") - before >= 2
    assert timed_post(transport, CHEAP)[0]["allowed"] is True


def test_a_worker_at_its_connection_cap_stops_accepting_until_one_closes(tmp_path: Path) -> None:
    env = {"UPGRADE_GATE_MAX_CONNECTIONS": "3"}
    with serving(tmp_path, LIMITS, "--workers", "1", env=env) as running:
        held = [tls(running) for _ in range(3)]
        answered: list[int] = []
        waiting = threading.Thread(target=lambda: answered.append(running.request("GET", "/healthz")[0]))
        try:
            waiting.start()
            waiting.join(1.0)
            assert waiting.is_alive() and not answered  # queued in the listen backlog, not accepted
            held.pop().close()
            waiting.join(10)
            assert answered == [200]
        finally:
            for connection in held:
                connection.close()
            waiting.join(10)


def test_the_deadline_counts_from_arrival_for_a_review_that_waits_for_an_evaluation_thread(tmp_path: Path) -> None:
    args = ("--workers", "1", "--threads", "1", "--request-timeout", str(TIMEOUT_S))
    with serving(tmp_path, LIMITS, *args) as running:
        results: list[tuple[Any, float]] = []
        waiting = [threading.Thread(target=lambda: results.append(timed_post(running, SLOW))) for _ in range(3)]
        for thread in waiting:
            thread.start()
        for thread in waiting:
            thread.join()
    # One evaluation thread: the second and third wait for the first; each is still answered at its own deadline.
    assert [response["status"]["code"] for response, _ in results] == [504] * 3
    assert max(elapsed for _, elapsed in results) < TIMEOUT_S + 1.0
