"""The ASGI application in process (through a2wsgi and werkzeug's test client): decisions, bad input, readiness,
metrics and decision logs."""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any, cast

import pytest
from a2wsgi import ASGIMiddleware
from werkzeug.test import Client, TestResponse

from tests.serve.conftest import BAD_REQUESTS, CASES, OBJECTS, POLICIES, bad_body, expected, summary
from webhook.cel.cost import check_deadline
from webhook.logs import JsonFormatter
from webhook.objects import ObjectStore
from webhook.policy.admitting.decision import Decision as Allowed
from webhook.policy.model import PolicySet
from webhook.serve.admissionreview import parse_review
from webhook.serve.app import create_app
from webhook.serve.metrics import Metrics
from webhook.serve.runtime import PolicyRuntime
from webhook.settings import DEFAULT_CEL_ENGINE, ServeSettings


class BufferedClient(Client):
    """werkzeug's test client reading every answer whole, so that a2wsgi's adapter lets the application finish."""

    def open(self, *args: Any, **kwargs: Any) -> TestResponse:
        return super().open(*args, buffered=True, **kwargs)


def make_client(runtime: PolicyRuntime, **settings: Any) -> Client:
    app = create_app(ServeSettings(**settings), runtime, runtime.metrics or Metrics())
    return BufferedClient(ASGIMiddleware(app), TestResponse)  # type: ignore[arg-type]  # a2wsgi's narrower type


@pytest.fixture(scope="module")
def loaded() -> PolicyRuntime:
    runtime = PolicyRuntime(POLICIES, OBJECTS, metrics=Metrics())
    assert runtime.load(), runtime.error
    return runtime


@pytest.fixture
def client(loaded: PolicyRuntime) -> Client:
    return make_client(loaded)


def post(client: Client, endpoint: str, review: Any) -> Any:
    return client.post(f"/{endpoint}", data=json.dumps(review), content_type="application/json")


@pytest.mark.parametrize("case", CASES, ids=[case["id"] for case in CASES])
def test_a_review_gets_the_policies_decision(client: Client, case: dict[str, Any]) -> None:
    answer = post(client, case["endpoint"], case["review"])
    assert answer.status_code == 200
    assert answer.json["response"]["uid"] == case["review"]["request"]["uid"]
    assert summary(answer.json, case["want"]) == expected(case)


def send_bad(client: Client, case: dict[str, Any]) -> Any:
    content_type = case.get("content_type", "application/json")
    headers = {"Content-Type": content_type} if content_type else {}
    method, path = case.get("method", "POST"), case.get("path", "/validate")
    return client.open(path, method=method, data=bad_body(case), headers=headers)


@pytest.mark.parametrize("case", BAD_REQUESTS, ids=[case["id"] for case in BAD_REQUESTS])
def test_a_bad_request_gets_a_json_status(client: Client, case: dict[str, Any]) -> None:
    answer = send_bad(client, case)
    assert answer.status_code == case["code"]
    assert answer.json["kind"] == "Status"
    assert (answer.json["code"], answer.json["message"]) == (case["code"], case["message"])


def _review_text(object_text: str) -> bytes:
    request = '"uid": "u", "kind": {"group": "", "version": "v1", "kind": "ConfigMap"}, "operation": "CREATE"'
    review = '{"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {%s, "object": %s}}'
    return (review % (request, object_text)).encode()


@pytest.mark.parametrize(
    ("object_text", "message"),
    [
        pytest.param(
            '{"n": ' + "9" * 5000 + "}",
            "the body has an integer of 5000 digits, beyond any int64 or float64 number",
            id="an integer longer than Python converts by default is a bad request",
        ),
        pytest.param(
            '{"n": -' + "1" * 310 + "}",
            "the body has an integer of 310 digits, beyond any int64 or float64 number",
            id="an integer beyond float64 is a bad request",
        ),
        pytest.param(
            '{"a": ' * 50_000 + "1" + "}" * 50_000,
            "the body is nested too deeply to read",
            id="nesting past the recursion limit is a bad request",
        ),
    ],
)
def test_json_that_python_cannot_read_as_is_gets_a_400_not_a_500(client: Client, object_text: str, message: str):
    answer = client.post("/validate", data=_review_text(object_text), headers={"Content-Type": "application/json"})
    assert answer.status_code == 400
    assert answer.get_json()["message"] == message


def test_an_integer_within_float64_is_read(client: Client) -> None:
    answer = client.post("/validate", data=_review_text('{"n": ' + "9" * 300 + "}"), content_type="application/json")
    assert answer.status_code == 200
    assert answer.get_json()["response"]["allowed"] is True


class Stub:
    """An admitter that works ``sleep`` seconds (sleeping, or ``busy`` on the CPU) in its first ``slow`` evaluations
    (``None``: all), checking the request deadline as evaluations do, then raises ``error`` (if any) or allows;
    ``threads`` names the thread of each evaluation begun."""

    def __init__(
        self,
        policies: PolicySet,
        store: ObjectStore,
        *,
        sleep: float = 0,
        busy: bool = False,
        slow: int | None = None,
        error: Exception | None = None,
    ):
        self.sleep, self.busy, self.slow, self.error = sleep, busy, slow, error
        self.threads: list[str] = []

    def decide(self, request: Mapping[str, Any]) -> Allowed:
        self.threads.append(threading.current_thread().name)
        slow = self.slow is None or len(self.threads) <= self.slow
        end = time.monotonic() + (self.sleep if slow else 0.0)
        while time.monotonic() < end:
            check_deadline()
            if not self.busy:
                time.sleep(0.01)
        if self.error:
            raise self.error
        return Allowed()

    validate = mutate = decide


def stub_runtime(**stub: Any) -> PolicyRuntime:
    runtime = PolicyRuntime(POLICIES, metrics=Metrics(), make_admitter=lambda p, s: Stub(p, s, **stub))
    assert runtime.load()
    return runtime


def test_an_evaluation_past_the_deadline_is_refused_with_a_timeout() -> None:
    runtime = stub_runtime(sleep=2)
    started = time.monotonic()
    answer = post(make_client(runtime, request_timeout_s=0.2), "validate", CASES[2]["review"])
    assert time.monotonic() - started < 1.5
    assert answer.status_code == 200
    assert answer.json["response"]["allowed"] is False
    assert answer.json["response"]["status"] == {
        "code": 504,
        "reason": "Timeout",
        "message": "upgrade-gate: no decision within 0.2s",
    }
    assert b"upgrade_gate_evaluation_errors_total" in runtime.metrics.exposition()  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("sleep", "busy", "preempted"),
    [(0.0, True, 0), (0.05, True, 1), (0.05, False, 0)],
    ids=["cheap", "past the slice", "waiting, not working"],
)
def test_a_review_is_decided_on_the_event_loop_unless_it_works_past_its_slice(
    sleep: float, busy: bool, preempted: int
) -> None:
    runtime = stub_runtime(sleep=sleep, busy=busy)
    answer = post(make_client(runtime), "validate", CASES[2]["review"])
    assert answer.json["response"]["allowed"] is True
    assert runtime.snapshot is not None
    threads = cast(Stub, runtime.snapshot.admitter).threads
    assert [name.startswith("admission") for name in threads] == [False] + [True] * preempted
    exposition = runtime.metrics.exposition()  # type: ignore[union-attr]
    assert f'upgrade_gate_evaluation_preemptions_total{{endpoint="validate"}} {preempted}.0'.encode() in exposition


def test_reviews_of_a_preempted_kind_go_straight_to_a_thread_and_other_kinds_stay_on_the_loop() -> None:
    runtime = stub_runtime(sleep=0.02, busy=True)
    client = make_client(runtime)
    for _ in range(2):
        assert post(client, "validate", CASES[2]["review"]).json["response"]["allowed"] is True
    assert post(client, "mutate", CASES[2]["review"]).json["response"]["allowed"] is True
    assert runtime.snapshot is not None
    threads = cast(Stub, runtime.snapshot.admitter).threads
    # validate: on the loop, preempted, in a thread; then straight to a thread. mutate: on the loop first.
    assert [name.startswith("admission") for name in threads] == [False, True, True, False, True]


def test_a_kind_preempted_once_only_stays_on_the_loop() -> None:
    runtime = stub_runtime(sleep=0.02, busy=True, slow=1)  # the first evaluation pays for imports and caches
    client = make_client(runtime)
    for _ in range(2):
        assert post(client, "validate", CASES[2]["review"]).json["response"]["allowed"] is True
    assert runtime.snapshot is not None
    threads = cast(Stub, runtime.snapshot.admitter).threads
    # on the loop, preempted, cheap in the thread; then on the loop again
    assert [name.startswith("admission") for name in threads] == [False, True, False]


def test_a_large_review_is_read_and_decided_in_a_thread() -> None:
    runtime = stub_runtime()
    review = json.loads(json.dumps(CASES[2]["review"]))
    review["request"]["object"]["metadata"]["annotations"] = {"padding": "x" * (300 * 1024)}
    assert post(make_client(runtime), "validate", review).json["response"]["allowed"] is True
    bad = b"{" + b" " * (300 * 1024)
    answer = make_client(runtime).post("/validate", data=bad, content_type="application/json")
    assert (answer.status_code, answer.get_json()["reason"]) == (400, "BadRequest")
    assert runtime.snapshot is not None
    assert [name.startswith("admission") for name in cast(Stub, runtime.snapshot.admitter).threads] == [True]


def test_an_internal_error_denies_the_request_without_an_http_error() -> None:
    runtime = stub_runtime(error=RuntimeError("boom"))
    answer = post(make_client(runtime), "mutate", CASES[0]["review"])
    assert answer.status_code == 200
    assert answer.json["response"]["status"] == {
        "code": 500,
        "reason": "InternalError",
        "message": "upgrade-gate: internal error while evaluating policies: RuntimeError",
    }


def test_a_failure_outside_the_evaluation_is_a_json_status_not_a_bare_500(
    client: Client, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("boom")

    monkeypatch.setattr("webhook.serve.app.render_response", broken)
    with caplog.at_level(logging.ERROR, logger="webhook.serve.app"):
        answer = post(client, "validate", CASES[2]["review"])
    assert (answer.status_code, answer.content_type) == (500, "application/json")
    assert answer.json == {
        "apiVersion": "v1",
        "kind": "Status",
        "status": "Failure",
        "code": 500,
        "reason": "InternalError",
        "message": "upgrade-gate: internal error while answering the review: RuntimeError",
    }
    assert [r.getMessage() for r in caplog.records] == ["admission request failed"]


def test_another_method_on_an_admission_endpoint_names_the_one_allowed(client: Client) -> None:
    answer = client.put("/mutate", data="{}", content_type="application/json")
    assert (answer.status_code, answer.headers["Allow"], answer.get_json()["reason"]) == (
        405,
        "POST",
        "MethodNotAllowed",
    )


def test_healthz_answers_ok(client: Client) -> None:
    assert client.get("/healthz").json == {"status": "ok"}


def test_readyz_is_ready_with_a_loaded_set_and_names_it(client: Client) -> None:
    answer = client.get("/readyz")
    body: Any = answer.json
    assert (answer.status_code, body["ready"], body["loadError"]) == (200, True, None)
    assert body["policies"] == {
        "generation": 1,
        "celEngine": DEFAULT_CEL_ENGINE,
        "validatingPolicies": 4,
        "validatingBindings": 4,
        "mutatingPolicies": 1,
        "mutatingBindings": 1,
        "params": 2,
        "objects": 3,
    }


def test_readyz_is_unready_before_a_set_is_loaded_and_validate_refuses(tmp_path: Path) -> None:
    broken = tmp_path / "broken.yaml"
    broken.write_text("kind: [")
    runtime = PolicyRuntime(broken, metrics=Metrics())
    assert not runtime.load()
    client = make_client(runtime)
    answer = client.get("/readyz")
    body: Any = answer.json
    assert (answer.status_code, body["ready"]) == (503, False)
    assert body["loadError"].startswith(f"{broken}:")
    refused = post(client, "validate", CASES[2]["review"]).json["response"]
    assert refused["status"]["code"] == 503


@pytest.mark.parametrize(
    "series",
    [
        'upgrade_gate_evaluation_errors_total{endpoint="validate"} 0.0',
        'upgrade_gate_evaluation_errors_total{endpoint="mutate"} 0.0',
        'upgrade_gate_admission_duration_seconds_count{endpoint="mutate"} 0.0',
        'upgrade_gate_connections{state="idle"} 0.0',
        "upgrade_gate_connection_timeouts_total 0.0",
    ],
)
def test_labelled_series_with_known_labels_are_exposed_at_zero_before_any_event(series: str) -> None:
    fresh = PolicyRuntime(POLICIES, metrics=Metrics())
    assert fresh.load()
    text = make_client(fresh).get("/metrics").data.decode()
    assert series in text.splitlines()


def test_metrics_count_requests_by_kind_operation_and_decision(loaded: PolicyRuntime) -> None:
    client = make_client(loaded, max_body_bytes=1024 * 1024)
    for case in CASES:
        post(client, case["endpoint"], case["review"])
    post(client, "validate", {"kind": "nothing"})
    text = client.get("/metrics").data.decode()
    assert (
        'upgrade_gate_admission_requests_total{decision="denied",endpoint="validate",'
        'kind="ClusterExtensionRevision",operation="UPDATE"}' in text
    )
    assert 'upgrade_gate_admission_requests_total{decision="invalid",endpoint="validate",kind="",operation=""}' in text
    assert 'upgrade_gate_fail_closed_total{endpoint="validate",policy="addon-install-version"}' in text
    assert 'upgrade_gate_admission_duration_seconds_bucket{endpoint="mutate",le="0.01"}' in text
    assert "upgrade_gate_policy_generation 1.0" in text
    assert "upgrade_gate_policy_load_errors_total 0.0" in text


def test_one_json_log_line_per_decision_names_the_denying_policy_and_never_the_object(
    client: Client, caplog: pytest.LogCaptureFixture
) -> None:
    case = next(case for case in CASES if case["want"].get("code") == 403)
    with caplog.at_level(logging.INFO, logger="webhook.serve.app"):
        post(client, case["endpoint"], case["review"])
    [record] = [r for r in caplog.records if r.getMessage() == "admission decision"]
    line = json.loads(JsonFormatter().format(record))
    assert line["latency_ms"] > 0
    del line["time"], line["latency_ms"]
    assert line == {
        "level": "INFO",
        "logger": "webhook.serve.app",
        "message": "admission decision",
        "endpoint": "validate",
        "uid": case["review"]["request"]["uid"],
        "kind": "ClusterExtensionRevision",
        "name": "cloudnative-pg-1.28.0",
        "namespace": "",
        "operation": "UPDATE",
        "user": "mallory",
        "dry_run": False,
        "allowed": False,
        "code": 403,
        "policy": "revision-approval",
        "warnings": 0,
        "patch_operations": 0,
    }


def test_an_integer_beyond_int64_reaches_policies_as_a_double_as_the_apiserver_decodes_it() -> None:
    review = parse_review(_review_text('{"n": 9223372036854775808, "m": 9223372036854775807}'), "application/json")
    assert review.request["object"] == {"n": 9.223372036854775808e18, "m": 2**63 - 1}
    assert [type(value) for value in review.request["object"].values()] == [float, int]
