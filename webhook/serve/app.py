"""The Flask application: ``create_app(settings, runtime, metrics)``, a new one per server or test.

Routes:

- ``POST /validate``, ``POST /mutate``: an AdmissionReview in, an AdmissionReview out (HTTP 200, see
  ``webhook.serve.review``). A bad request is HTTP 400 (413 above ``max_body_bytes``) with a
  ``metav1.Status`` JSON body; a body that stops arriving for the I/O timeout is 408 (and the connection closed).
  An evaluation that raises or outlives ``request_timeout_s`` is refused
  (``allowed: false``, code 500 ``InternalError`` or 504 ``Timeout``): the webhook fails closed.
- ``GET /healthz``: 200 while the process serves. ``GET /readyz``: 200 when a policy set is loaded and the
  cluster cache (if any) is synced, else 503; the body says which, and the last load error.
- ``GET /metrics``: Prometheus text (``webhook.serve.metrics``).

Every answered review is logged once (``webhook.logs`` keys): uid, kind, name, namespace, operation, user,
dry run, allowed, code, the denying policy, warnings and patch sizes, latency. Never the objects.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from flask import Flask, Response, current_app, jsonify, request
from werkzeug.exceptions import ClientDisconnected, HTTPException

from webhook import logs
from webhook.errors import DeadlineExceeded, ReviewError
from webhook.policy.cel import deadline
from webhook.serve.metrics import CONTENT_TYPE, Metrics
from webhook.serve.review import Answer, Refusal, Review, parse_review, render_error, render_response
from webhook.serve.runtime import PolicyRuntime, Snapshot
from webhook.settings import ServeSettings

log = logging.getLogger(__name__)

EXTENSION = "upgrade_gate"
VALIDATE, MUTATE = "validate", "mutate"
# Denial texts of a policy that errored rather than found a violation (apiserver wording, kept by
# webhook.policy): "expression '...' resulted in error", "failed to configure binding: ...", "... unsupported
# return type ...". Every mutating denial is an error: mutating policies have no validations.
_ERRORED = re.compile(r"resulted in error|failed to configure|unsupported return type")
_POLICY = re.compile(r"^(?:ValidatingAdmissionPolicy|policy) ['\"](?P<policy>[^'\"]+)['\"]")


@dataclass(frozen=True, slots=True)
class State:
    """What the views need, kept in ``app.extensions["upgrade_gate"]``."""

    settings: ServeSettings
    runtime: PolicyRuntime
    metrics: Metrics


def create_app(settings: ServeSettings, runtime: PolicyRuntime, metrics: Metrics) -> Flask:
    """A Flask application serving ``runtime``'s policy set with ``settings``' body limit and deadline."""
    app = Flask(__name__)
    app.config["MAX_CONTENT_LENGTH"] = settings.max_body_bytes
    app.json.sort_keys = False  # type: ignore[attr-defined]  # DefaultJSONProvider has it; the base type not
    app.extensions[EXTENSION] = State(settings, runtime, metrics)
    app.add_url_rule("/validate", VALIDATE, lambda: _admit(VALIDATE), methods=["POST"])
    app.add_url_rule("/mutate", MUTATE, lambda: _admit(MUTATE), methods=["POST"])
    app.add_url_rule("/healthz", "healthz", _healthz, methods=["GET"])
    app.add_url_rule("/readyz", "readyz", _readyz, methods=["GET"])
    app.add_url_rule("/metrics", "metrics", _metrics, methods=["GET"])
    app.register_error_handler(HTTPException, _http_error)
    return app


def _state() -> State:
    state: State = current_app.extensions[EXTENSION]
    return state


def _admit(endpoint: str) -> tuple[Response, int]:
    started = time.perf_counter()
    state = _state()
    try:
        body = request.get_data(cache=False)
    except (OSError, ClientDisconnected):  # the client stalled mid-body past the I/O timeout, or went away
        return _refuse(
            state,
            endpoint,
            started,
            code=408,
            reason="RequestTimeout",
            message="the request body did not arrive in full",
        )
    try:
        review = parse_review(body, request.content_type)
        decision = _decide(state, review, endpoint)
    except ReviewError as error:
        return _refuse(state, endpoint, started, code=400, reason="BadRequest", message=str(error))
    elapsed = time.perf_counter() - started
    _record(state.metrics, endpoint, review, decision, elapsed)
    return jsonify(render_response(review, decision, mutating=endpoint == MUTATE)), 200


def _refuse(
    state: State, endpoint: str, started: float, *, code: int, reason: str, message: str
) -> tuple[Response, int]:
    """Count, time and log a request that cannot be read; answer it with a ``metav1.Status`` of ``code``."""
    state.metrics.requests.labels(endpoint, "", "", "invalid").inc()
    state.metrics.latency.labels(endpoint).observe(time.perf_counter() - started)
    log.info("bad admission request", extra=logs.fields({logs.ENDPOINT: endpoint, logs.ERROR: message}))
    answer = jsonify(render_error(code, reason, message))
    if code == 408:
        answer.headers["Connection"] = "close"
    return answer, code


def _decide(state: State, review: Review, endpoint: str) -> Answer:
    """The decision for ``review``; ``ReviewError`` propagates, any other failure is a ``Refusal``.

    Decided with the runtime's current set; if a reload published a newer set meanwhile, decided again with
    it, so that no answer leaves from a set older than the last one published."""
    decided: tuple[Snapshot, Answer] | None = None
    while True:
        try:
            snapshot = state.runtime.current()
        except Exception as error:  # adopting the published set failed: deny, as for a failed evaluation
            return _failed(state, review, endpoint, error)
        if snapshot is None:
            return Refusal("upgrade-gate: no policy set is loaded", code=503, reason="ServiceUnavailable")
        if decided is not None and decided[0] is snapshot:
            return decided[1]
        decided = snapshot, _evaluate(state, snapshot, review, endpoint)


def _evaluate(state: State, snapshot: Snapshot, review: Review, endpoint: str) -> Answer:
    admit = snapshot.admitter.mutate if endpoint == MUTATE else snapshot.admitter.validate
    try:
        with deadline(state.settings.request_timeout_s):
            return admit(review.request)
    except ReviewError:
        raise
    except DeadlineExceeded as error:
        state.metrics.evaluation_errors.labels(endpoint).inc()
        log.error("evaluation stopped", extra=logs.fields({logs.UID: review.uid, logs.ERROR: str(error)}))
        return Refusal(f"upgrade-gate: {error}", code=504, reason="Timeout")
    except Exception as error:  # a bug in evaluation must deny one request, not kill the worker
        return _failed(state, review, endpoint, error)


def _failed(state: State, review: Review, endpoint: str, error: Exception) -> Refusal:
    state.metrics.evaluation_errors.labels(endpoint).inc()
    log.exception("evaluation failed", extra=logs.fields({logs.UID: review.uid}))
    return Refusal(f"upgrade-gate: internal error while evaluating policies: {type(error).__name__}")


def _record(metrics: Metrics, endpoint: str, review: Review, decision: Answer, elapsed: float) -> None:
    """Count, time and log one answered review."""
    outcome = "allowed" if decision.allowed else "refused" if isinstance(decision, Refusal) else "denied"
    policy = denying_policy(decision)
    metrics.requests.labels(endpoint, review.kind, review.operation, outcome).inc()
    metrics.latency.labels(endpoint).observe(elapsed)
    if policy and failed_closed(decision, mutating=endpoint == MUTATE):
        metrics.fail_closed.labels(endpoint, policy).inc()
    log.info(
        "admission decision",
        extra=logs.fields(
            {
                logs.ENDPOINT: endpoint,
                logs.UID: review.uid,
                logs.KIND: review.kind,
                logs.NAME: review.name,
                logs.NAMESPACE: review.namespace,
                logs.OPERATION: review.operation,
                logs.USER: review.username,
                logs.DRY_RUN: review.dry_run,
                logs.ALLOWED: decision.allowed,
                logs.CODE: decision.code if not decision.allowed else 200,
                logs.POLICY: policy,
                logs.WARNINGS: len(decision.warnings),
                logs.PATCH_OPERATIONS: len(decision.patch),
                logs.LATENCY_MS: round(elapsed * 1000, 3),
            }
        ),
    )


def denying_policy(decision: Answer) -> str:
    """The name of the policy whose denial is the response's message; ``""`` if allowed or none named."""
    found = _POLICY.match(decision.message) if not decision.allowed else None
    return found.group("policy") if found else ""


def failed_closed(decision: Answer, *, mutating: bool) -> bool:
    """True if ``decision`` denies because a ``failurePolicy: Fail`` policy errored (see ``_ERRORED``)."""
    if decision.allowed or isinstance(decision, Refusal):
        return False
    return mutating or any(_ERRORED.search(cause) for cause in decision.causes or (decision.message,))


def _healthz() -> tuple[Response, int]:
    return jsonify({"status": "ok"}), 200


def _readyz() -> tuple[Response, int]:
    ready, detail = _state().runtime.readiness()
    return jsonify({"ready": ready, **detail}), 200 if ready else 503


def _metrics() -> Response:
    return Response(_state().metrics.exposition(), mimetype=None, content_type=CONTENT_TYPE)


def _http_error(error: HTTPException) -> tuple[Response, int]:
    """Any HTTP error (404, 405, 413, ...) as a ``metav1.Status`` JSON body."""
    code = error.code or 500
    reason = _REASONS.get(code, (error.name or "Error").replace(" ", ""))
    message = error.description or error.name
    if code == 413:
        message = f"the request body is larger than {_state().settings.max_body_bytes} bytes"
        _drain(request.environ.get("wsgi.input"), _DRAIN_LIMIT)
    if request.endpoint in (VALIDATE, MUTATE):
        _state().metrics.requests.labels(request.endpoint, "", "", "invalid").inc()
    return jsonify(render_error(code, reason, message)), code


def _drain(stream: Any, limit: int) -> None:
    """Read and drop up to ``limit`` bytes of a refused body, so that a client still sending it receives
    the answer instead of a reset connection."""
    while stream is not None and limit > 0:
        chunk = stream.read(min(limit, 65536))
        if not chunk:
            return
        limit -= len(chunk)


_DRAIN_LIMIT = 16 * 1024 * 1024
_REASONS: Mapping[int, str] = {
    400: "BadRequest",
    404: "NotFound",
    405: "MethodNotAllowed",
    413: "RequestEntityTooLarge",
    415: "UnsupportedMediaType",
}
