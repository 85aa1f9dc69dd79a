"""``upgrade-gate serve`` for real: gunicorn, TLS with client certificates, AdmissionReviews as the
kube-apiserver sends them, malformed bodies, multiprocess metrics."""

from __future__ import annotations

import copy
import json
import os
import ssl
import subprocess
import sys
import time
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.serve.conftest import BAD_REQUESTS, CASES, OBJECTS, POLICIES, bad_body, expected, summary
from tests.serve.process import Server, serving
from webhook.serve.worker import replacement_turn
from webhook.settings import CEL_ENGINES


@pytest.fixture(scope="module", params=CEL_ENGINES)
def server(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """The webhook on each CEL engine: every test below runs against both."""
    tmp = tmp_path_factory.mktemp("serve")
    args = ("--objects", str(OBJECTS), "--workers", "2", "--cel-engine", request.param)
    with serving(tmp, POLICIES, *args, client_ca=True) as running:
        yield running


@pytest.mark.parametrize("case", CASES, ids=[case["id"] for case in CASES])
def test_a_review_over_tls_gets_the_policies_decision(server: Server, case: dict[str, Any]) -> None:
    answer = server.review(case["endpoint"], case["review"])
    assert answer["response"]["uid"] == case["review"]["request"]["uid"]
    assert summary(answer, case["want"]) == expected(case)


@pytest.mark.parametrize("case", BAD_REQUESTS, ids=[case["id"] for case in BAD_REQUESTS])
def test_a_malformed_request_gets_a_json_status_and_the_worker_lives(server: Server, case: dict[str, Any]) -> None:
    content_type = case.get("content_type", "application/json")
    method, path = case.get("method", "POST"), case.get("path", "/validate")
    status, answer = server.request(method, path, bad_body(case), content_type)
    assert (status, answer["code"], answer["message"]) == (case["code"], case["code"], case["message"])
    assert server.request("GET", "/healthz")[0] == 200


@pytest.mark.parametrize("index", [0, 3, 6], ids=["a mutation", "a denial", "a denial by a lookup"])
def test_an_object_nested_as_deep_as_the_apiserver_accepts_is_decided_as_usual(server: Server, index: int) -> None:
    """The apiserver decodes, and sends to webhooks, JSON nested up to 10,000 levels (Go's encoding/json limit)."""
    case = copy.deepcopy(CASES[index])
    case["review"]["request"]["object"]["status"] = {"nested": "DEEP"}
    depth = 9_990
    body = json.dumps(case["review"]).replace('"DEEP"', '{"a": ' * depth + "1" + "}" * depth)
    status, answer = server.request("POST", f"/{case['endpoint']}", body.encode())
    assert status == 200, answer
    assert summary(answer, case["want"]) == expected(case)


def test_a_client_without_a_certificate_is_refused(server: Server) -> None:
    with pytest.raises((ssl.SSLError, ConnectionError)):
        server.request("GET", "/healthz", context=server.context(with_client_cert=False))


def _pinned(server: Server, version: ssl.TLSVersion) -> ssl.SSLContext:
    context = server.context()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        context.minimum_version = context.maximum_version = version
    context.set_ciphers("ALL:@SECLEVEL=0")
    return context


def test_tls_below_1_2_is_refused_by_the_server(server: Server) -> None:
    # The event loop's TLS closes a failed handshake without sending its alert: the client reads an EOF, not
    # PROTOCOL_VERSION. The same client pinned to TLS 1.2 is served, so the version is what is refused.
    assert server.request("GET", "/healthz", context=_pinned(server, ssl.TLSVersion.TLSv1_2))[0] == 200
    with pytest.raises(ssl.SSLError):
        server.request("GET", "/healthz", context=_pinned(server, ssl.TLSVersion.TLSv1_1))


def test_readyz_names_the_cel_engine_the_flag_chose(server: Server, request: pytest.FixtureRequest) -> None:
    engine = request.node.callspec.params["server"]
    assert server.request("GET", "/readyz")[1]["policies"]["celEngine"] == engine


def test_metrics_sum_every_worker(server: Server) -> None:
    review = CASES[2]["review"]
    before = _count(server, 'decision="allowed",endpoint="validate",kind="ClusterExtensionRevision",operation="UPDATE"')
    for _ in range(20):
        server.review("validate", review)
    after = _count(server, 'decision="allowed",endpoint="validate",kind="ClusterExtensionRevision",operation="UPDATE"')
    assert after - before == 20
    assert _count(server, "", "upgrade_gate_policy_generation") == 1


def _count(server: Server, labels: str, name: str = "upgrade_gate_admission_requests_total") -> float:
    status, text = server.request("GET", "/metrics")
    assert status == 200
    prefix = f"{name}{{{labels}}} " if labels else f"{name} "
    found = [line for line in text.splitlines() if line.startswith(prefix)]
    return float(found[0].split()[-1]) if found else 0.0


def test_metrics_are_served_without_a_configured_directory(tmp_path: Path) -> None:
    with serving(tmp_path, POLICIES, "--workers", "1", metrics_dir=False) as running:
        running.review("validate", CASES[2]["review"])
        assert _count(running, "", "upgrade_gate_policy_generation") == 1
        assert (
            _count(running, 'decision="allowed",endpoint="validate",kind="ClusterExtensionRevision",operation="UPDATE"')
            == 1
        )


def test_every_decision_is_one_json_log_line(server: Server) -> None:
    decisions = [json.loads(line) for line in server.log.read_text().splitlines() if '"admission decision"' in line]
    uids = {d["uid"] for d in decisions}
    assert {case["review"]["request"]["uid"] for case in CASES} <= uids
    assert not any("spec" in line or "object" in line for line in map(json.dumps, decisions))


ROOT_POLICIES = Path(__file__).parents[2] / "policies"


@pytest.mark.skipif(not any(ROOT_POLICIES.glob("*.yaml")), reason="the bundled policies/ has no policy yet")
def test_the_bundled_policies_serve_with_certificates_generated_on_first_run(tmp_path: Path) -> None:
    review = next(case for case in CASES if case["endpoint"] == "mutate")["review"]
    with serving(tmp_path, ROOT_POLICIES, "--workers", "1", dev_certs=True) as running:
        answer = running.review("mutate", review)
        ready = running.request("GET", "/readyz")[1]
    assert answer["response"]["uid"] == review["request"]["uid"]
    assert ready["policies"]["validatingPolicies"] > 0
    assert sorted(path.name for path in (tmp_path / "certs").iterdir()) == ["ca.crt", "ca.key", "tls.crt", "tls.key"]


def _workers(server: Server) -> set[str]:
    """The pids of the server's workers, once it has one."""
    master, deadline = server.process.pid, time.monotonic() + 10
    while not (found := set(Path(f"/proc/{master}/task/{master}/children").read_text().split())):
        assert time.monotonic() < deadline, "no worker"
        time.sleep(0.05)
    return found


@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="reads worker pids from /proc")
def test_a_worker_is_replaced_after_max_requests_without_a_failed_request(tmp_path: Path) -> None:
    review = next(case for case in CASES if case["endpoint"] == "validate")["review"]
    env = {"UPGRADE_GATE_MAX_REQUESTS": "40"}
    with serving(tmp_path, POLICIES, "--objects", str(OBJECTS), "--workers", "1", env=env) as running:
        first = _workers(running)
        answers = [running.review("validate", review)["response"]["allowed"] for _ in range(120)]
        replaced = _workers(running)
    assert answers == [answers[0]] * 120  # every request answered (``review`` asserts HTTP 200), and alike
    assert len(first) == 1 and first.isdisjoint(replaced)


@pytest.mark.skipif(not Path("/proc/self/statm").exists(), reason="reads resident memory from /proc")
def test_a_worker_past_its_memory_limit_is_replaced_without_a_failed_request(tmp_path: Path) -> None:
    """With a limit below any worker's size, each worker is replaced at its first memory check (every second)."""
    review = next(case for case in CASES if case["endpoint"] == "validate")["review"]
    env = {"UPGRADE_GATE_MAX_WORKER_MEMORY": "1"}
    with serving(tmp_path, POLICIES, "--objects", str(OBJECTS), "--workers", "1", env=env) as running:
        seen, answers, ends = [_workers(running)], [], time.monotonic() + 3.5
        while time.monotonic() < ends:
            answers.append(running.review("validate", review)["response"]["allowed"])
            if (found := _workers(running)) != seen[-1]:
                seen.append(found)
    assert answers == [answers[0]] * len(answers)  # every request answered (``review`` asserts HTTP 200), and alike
    assert len(seen) >= 3  # replaced again and again


def test_workers_are_replaced_for_their_memory_one_at_a_time(tmp_path: Path) -> None:
    """A worker's turn (the lock file's lock) is refused to every other process until it exits."""
    lock = tmp_path / "worker-replacement.lock"
    probe = f"from webhook.serve.worker import replacement_turn; print(replacement_turn({str(lock)!r}) is not None)"
    held = replacement_turn(lock)
    assert held is not None
    other = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert other.stdout.strip() == "False"
    os.close(held)  # as at the worker's exit
    other = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert other.stdout.strip() == "True"
    with pytest.raises(FileNotFoundError):  # not "held": the worker is then replaced without waiting its turn
        replacement_turn(tmp_path / "gone" / "worker-replacement.lock")
