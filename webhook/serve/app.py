"""The webhook's WSGI application: ``create_app(settings, runtime, metrics)``, a new one per server or test.

A Flask application serves the probes and the metrics. The two admission endpoints, the hot path, are served in
front of it by ``AdmissionEndpoints``, a plain WSGI handler wrapped around Flask's ``wsgi_app`` (the hook Flask
gives middlewares): Flask's per-request machinery (contexts, routing, request and response objects) costs more
per review than everything else the HTTP layer does in Python (README, "Performance").

Routes:

- ``POST /validate``, ``POST /mutate``: an AdmissionReview in, an AdmissionReview out (HTTP 200, see
  ``webhook.serve.review``). A bad request is HTTP 400 (405 for another method, 413 above ``max_body_bytes``)
  with a ``metav1.Status`` JSON body; a body that stops arriving for the I/O timeout is 408 (and the connection
  closed). An evaluation that raises or outlives ``request_timeout_s`` is refused (``allowed: false``, code 500
  ``InternalError`` or 504 ``Timeout``): the webhook fails closed.
- ``GET /healthz``: 200 while the process serves. ``GET /readyz``: 200 when a policy set is loaded and the
  cluster cache (if any) is synced, else 503; the body says which, and the last load error.
- ``GET /metrics``: Prometheus text (``webhook.serve.metrics``).

Every answered review is logged once (``webhook.logs`` keys): uid, kind, name, namespace, operation, user,
dry run, allowed, code, the denying policy, warnings and patch sizes, latency. Never the objects.
"""

from __future__ import annotations

import json
import logging
import re
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from flask import Flask, Response, current_app, jsonify
from werkzeug.exceptions import ClientDisconnected, HTTPException, MethodNotAllowed, RequestEntityTooLarge
from werkzeug.http import HTTP_STATUS_CODES
from werkzeug.wsgi import get_input_stream

from webhook import logs
from webhook.errors import DeadlineExceeded, ReviewError
from webhook.policy.cel import deadline
from webhook.serve.metrics import CONTENT_TYPE, Metrics
from webhook.serve.review import Answer, Refusal, Review, parse_review, render_error, render_response
from webhook.serve.runtime import PolicyRuntime, Snapshot
from webhook.settings import ServeSettings

if TYPE_CHECKING:
    from _typeshed.wsgi import StartResponse, WSGIApplication, WSGIEnvironment

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
    """A Flask application serving ``runtime``'s policy set with ``settings``' body limit and deadline: the
    probes and metrics as its views, the admission endpoints by ``AdmissionEndpoints`` around its ``wsgi_app``."""
    app = Flask(__name__)
    app.config["MAX_CONTENT_LENGTH"] = settings.max_body_bytes
    app.json.sort_keys = False  # type: ignore[attr-defined]  # DefaultJSONProvider has it; the base type not
    app.extensions[EXTENSION] = state = State(settings, runtime, metrics)
    app.add_url_rule("/healthz", "healthz", _healthz, methods=["GET"])
    app.add_url_rule("/readyz", "readyz", _readyz, methods=["GET"])
    app.add_url_rule("/metrics", "metrics", _metrics, methods=["GET"])
    app.register_error_handler(HTTPException, _http_error)
    app.wsgi_app = AdmissionEndpoints(state, app.wsgi_app)  # type: ignore[method-assign]  # Flask's middleware hook
    return app


_Answered = tuple[int, Mapping[str, Any], Sequence[tuple[str, str]]]
"""An HTTP status code, the JSON document of the body, and headers beyond the content's."""


class AdmissionEndpoints:
    """WSGI: ``POST /validate`` and ``POST /mutate`` answered here, every other path passed to ``fallback`` (the
    Flask application). Reads the body as Flask does (``werkzeug.wsgi.get_input_stream`` with ``max_body_bytes``),
    answers JSON as ``flask.jsonify`` does (compact, keys in order). An exception escaping a review is logged and
    answered with a 500 Status, as Flask answers it."""

    def __init__(self, state: State, fallback: WSGIApplication) -> None:
        self.state, self.fallback = state, fallback

    def __call__(self, environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        endpoint = _ENDPOINTS.get(environ.get("PATH_INFO", ""))
        if endpoint is None:
            return self.fallback(environ, start_response)
        started = time.perf_counter()
        try:
            code, document, headers = self._answer(environ, endpoint, started)
        except Exception as error:  # a bug here must not reach gunicorn's plain-text 500
            log.exception("admission request failed", extra=logs.fields({logs.ENDPOINT: endpoint}))
            message = f"upgrade-gate: internal error while answering the review: {type(error).__name__}"
            code, document, headers = 500, render_error(500, "InternalError", message), ()
        body = json.dumps(document, separators=(",", ":")).encode()
        start_response(
            f"{code} {HTTP_STATUS_CODES[code]}",
            [("Content-Type", "application/json"), ("Content-Length", str(len(body))), *headers],
        )
        return [body]

    def _answer(self, environ: WSGIEnvironment, endpoint: str, started: float) -> _Answered:
        state = self.state
        if environ.get("REQUEST_METHOD") != "POST":
            refused = MethodNotAllowed(valid_methods=["POST"])
            return self._refuse(endpoint, started, 405, str(refused.description), [("Allow", "POST")])
        try:
            body = get_input_stream(environ, max_content_length=state.settings.max_body_bytes).read()
        except RequestEntityTooLarge:
            _drain(environ["wsgi.input"], _DRAIN_LIMIT)
            return self._refuse(
                endpoint, started, 413, f"the request body is larger than {state.settings.max_body_bytes} bytes"
            )
        except (OSError, ClientDisconnected):  # the client stalled mid-body past the I/O timeout, or went away
            message = "the request body did not arrive in full"
            return self._refuse(endpoint, started, 408, message, [("Connection", "close")])
        try:
            review = parse_review(body, environ.get("CONTENT_TYPE"))
            decision = _decide(state, review, endpoint)
        except ReviewError as error:
            return self._refuse(endpoint, started, 400, str(error))
        _record(state.metrics, endpoint, review, decision, time.perf_counter() - started)
        return 200, render_response(review, decision, mutating=endpoint == MUTATE), ()

    def _refuse(
        self, endpoint: str, started: float, code: int, message: str, headers: Sequence[tuple[str, str]] = ()
    ) -> _Answered:
        """Count, time and log a request that cannot be read; its answer: a ``metav1.Status`` of ``code``."""
        metrics = self.state.metrics
        metrics.requests.labels(endpoint, "", "", "invalid").inc()
        metrics.latency.labels(endpoint).observe(time.perf_counter() - started)
        log.info("bad admission request", extra=logs.fields({logs.ENDPOINT: endpoint, logs.ERROR: message}))
        return code, render_error(code, _REASONS[code], message), headers


_ENDPOINTS: Mapping[str, str] = {f"/{VALIDATE}": VALIDATE, f"/{MUTATE}": MUTATE}


def _state() -> State:
    state: State = current_app.extensions[EXTENSION]
    return state


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
    if not log.isEnabledFor(logging.INFO):  # the line's fields cost more than the rest of the record
        return
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
    """Any HTTP error of the Flask views (404, 405, ...) as a ``metav1.Status`` JSON body."""
    code = error.code or 500
    reason = _REASONS.get(code, (error.name or "Error").replace(" ", ""))
    return jsonify(render_error(code, reason, error.description or error.name)), code


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
    408: "RequestTimeout",
    413: "RequestEntityTooLarge",
    415: "UnsupportedMediaType",
}
