"""Reloads under load: policies (file change, broken set, SIGHUP) and certificates, with no failed request."""

from __future__ import annotations

import http.client
import json
import shutil
import signal
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tests.serve.conftest import CASES, OBJECTS, POLICIES
from tests.serve.process import Server, serving
from webhook.serve.tls import generate_certificates

UNAPPROVED = next(case for case in CASES if case["id"].startswith("an extension may not move"))["review"]
FAST = {"UPGRADE_GATE_RELOAD_INTERVAL": "0.2"}


@contextmanager
def load(server: Server) -> Iterator[list[Any]]:
    """Send the unapproved-version review in a loop; yields the outcomes (allowed flags, or exceptions)."""
    outcomes: list[Any] = []
    stop = threading.Event()

    def run() -> None:
        while not stop.is_set():
            try:
                outcomes.append(server.review("validate", UNAPPROVED)["response"]["allowed"])
            except Exception as error:  # every failure is an outcome the test reports
                outcomes.append(error)

    thread = threading.Thread(target=run)
    thread.start()
    try:
        yield outcomes
    finally:
        stop.set()
        thread.join(timeout=15)


class KeptAlive:
    """One kept-alive connection to ``server``, as the apiserver keeps to a webhook."""

    def __init__(self, server: Server) -> None:
        self.connection = http.client.HTTPSConnection("127.0.0.1", server.port, context=server.context(), timeout=10)
        self.body = json.dumps(UNAPPROVED).encode()

    def allowed(self) -> bool:
        """Send the unapproved-version review; whether it is allowed. Raises if the connection fails."""
        self.connection.request("POST", "/validate", body=self.body, headers={"Content-Type": "application/json"})
        answer = self.connection.getresponse()
        assert answer.getheader("Connection") != "close"
        allowed: bool = json.loads(answer.read())["response"]["allowed"]
        return allowed

    def close(self) -> None:
        self.connection.close()


def workers(server: Server) -> set[int]:
    """The process ids of the server's workers (the children of its master)."""
    tasks = Path(f"/proc/{server.process.pid}/task")
    return {int(pid) for task in tasks.iterdir() for pid in (task / "children").read_text().split()}


def eventually(check: Callable[[], bool], timeout: float = 10) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "condition not reached in time"
        time.sleep(0.05)


def replace(path: Path, text: str) -> None:
    """Write ``path`` at once, as a ConfigMap volume swaps its files: the server's file watcher never sees it half
    written (a truncated file would load as a valid, smaller set)."""
    staging = path.with_name(f".{path.name}.tmp")
    staging.write_text(text)
    staging.replace(path)


def readyz(server: Server) -> Any:
    return server.request("GET", "/readyz")[1]


def test_policies_reload_atomically_and_a_broken_set_keeps_the_previous_one(tmp_path: Path) -> None:
    policies = tmp_path / "policies"
    shutil.copytree(POLICIES, policies)
    with (
        serving(tmp_path, policies, "--objects", str(OBJECTS), "--workers", "2", env=FAST) as server,
        load(server) as outcomes,
    ):
        eventually(lambda: len(outcomes) > 5)
        extensions = policies / "extensions.yaml"
        replace(extensions, extensions.read_text().replace("validationActions: [Deny]", "validationActions: [Warn]"))
        eventually(lambda: readyz(server)["policies"]["generation"] == 2)
        eventually(lambda: outcomes[-1] is True)

        replace(
            policies / "zz-broken.yaml",
            "apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingAdmissionPolicy\nmetadata: {name: x}\n"
            "spec:\n  matchConstraints: {resourceRules: [{apiGroups: ['*'], apiVersions: ['*'], "
            "operations: ['*'], resources: ['*']}]}\n  validations: [{expression: 'object.'}]\n",
        )
        eventually(lambda: readyz(server)["loadError"] is not None)
        detail = readyz(server)
        assert detail["ready"] is True
        assert detail["policies"]["generation"] == 2
        assert "zz-broken.yaml" in detail["loadError"]
        seen = len(outcomes)
        eventually(lambda: len(outcomes) > seen + 5)
        assert outcomes[-1] is True

        (policies / "zz-broken.yaml").unlink()
        replace(extensions, (POLICIES / "extensions.yaml").read_text())
        server.process.send_signal(signal.SIGHUP)
        eventually(lambda: readyz(server)["loadError"] is None and readyz(server)["policies"]["generation"] >= 3)
        eventually(lambda: outcomes[-1] is False)
        metrics = server.request("GET", "/metrics")[1]
    failures = [outcome for outcome in outcomes if not isinstance(outcome, bool)]
    assert failures == []
    assert "upgrade_gate_policy_load_errors_total 1.0" in metrics


def test_a_rotated_certificate_is_served_without_a_restart_or_a_failed_handshake(tmp_path: Path) -> None:
    with serving(tmp_path, POLICIES, "--objects", str(OBJECTS), "--workers", "2") as server, load(server) as outcomes:
        before = server.peer_certificate().serial_number
        pid = server.process.pid
        eventually(lambda: len(outcomes) > 5)
        generate_certificates(server.certs, ["localhost"], ["127.0.0.1"])
        eventually(lambda: server.peer_certificate().serial_number != before)
        seen = len(outcomes)
        eventually(lambda: len(outcomes) > seen + 5)
        assert server.process.pid == pid and server.process.poll() is None
    failures = [outcome for outcome in outcomes if not isinstance(outcome, bool)]
    assert failures == []


def test_once_a_reload_is_reported_no_answer_comes_from_the_previous_set_and_no_connection_drops(
    tmp_path: Path,
) -> None:
    policies = tmp_path / "policies"
    shutil.copytree(POLICIES, policies)
    with (
        serving(tmp_path, policies, "--objects", str(OBJECTS), "--workers", "2", env=FAST) as server,
        load(server) as outcomes,
    ):
        idle = [KeptAlive(server) for _ in range(8)]  # across both workers, idle while the set reloads
        try:
            assert [connection.allowed() for connection in idle] == [False] * len(idle)
            eventually(lambda: len(workers(server)) == 2)  # gunicorn forks them one after the other
            before = workers(server)
            extensions = policies / "extensions.yaml"
            replace(
                extensions, extensions.read_text().replace("validationActions: [Deny]", "validationActions: [Warn]")
            )
            eventually(lambda: readyz(server)["policies"]["generation"] == 2)
            assert [connection.allowed() for connection in idle] == [True] * len(idle)
            assert workers(server) == before
        finally:
            for connection in idle:
                connection.close()
    failures = [outcome for outcome in outcomes if not isinstance(outcome, bool)]
    assert failures == []
