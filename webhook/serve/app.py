"""The webhook's ASGI application: ``create_app(settings, runtime, metrics)``, a new one per server or test.

gunicorn's asyncio worker (``webhook.serve.worker``) serves it. The two admission endpoints, the hot path, are
answered by ``AdmissionApp`` itself, on the event loop: the body is read, the review parsed, decided and rendered
in place, where a review costs no hand-off between threads. An evaluation that outlives its time slice
(``SLICE_S``, checked by the request deadline's checks) is abandoned and done again in one of the worker's
``threads`` evaluation threads, so that an expensive evaluation never holds the loop that reads, answers and
accepts for every other connection. Every other path goes to a Flask application (the probes and the metrics)
through a2wsgi's WSGI adapter: Flask's per-request machinery costs more per review than everything else the HTTP
layer does in Python (docs/performance.md), and only the hot path avoids it.

Routes:

- ``POST /validate``, ``POST /mutate``: an AdmissionReview in, an AdmissionReview out (HTTP 200, see
  ``webhook.serve.admissionreview``). A bad request is HTTP 400 (405 for another method, 413 above ``max_body_bytes``)
  with a ``metav1.Status`` JSON body; a body that stops arriving for ``io_timeout_s`` is 408 (and the connection
  closed). An evaluation that raises or outlives ``request_timeout_s`` is refused (``allowed: false``, code 500
  ``InternalError`` or 504 ``Timeout``): the webhook fails closed.
- ``GET /healthz``: 200 while the process serves. ``GET /readyz``: 200 when a policy set is loaded and the
  cluster cache (if any) is synced, else 503; the body says which, and the last load error.
- ``GET /metrics``: Prometheus text (``webhook.serve.metrics``).

Every answered review is logged once (``webhook.logs`` keys): uid, kind, name, namespace, operation, user,
dry run, allowed, code, the denying policy, warnings and patch sizes, latency. Never the objects.
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
import time
from collections.abc import Awaitable, Callable, Mapping, MutableMapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from a2wsgi import WSGIMiddleware
from flask import Flask, Response, current_app, jsonify
from werkzeug.exceptions import HTTPException, MethodNotAllowed

from webhook import logs
from webhook.cel import deadline
from webhook.errors import DeadlineExceeded, Preempted, ReviewError
from webhook.policy import Decision
from webhook.serve.admissionreview import AdmissionReview, parse_review, render_error, render_response
from webhook.serve.metrics import CONTENT_TYPE, Metrics
from webhook.serve.runtime import PolicyRuntime, Snapshot
from webhook.settings import ServeSettings

log = logging.getLogger(__name__)

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]

EXTENSION = "upgrade_gate"
VALIDATE, MUTATE = "validate", "mutate"
# Denial texts of a policy that errored rather than found a violation (apiserver wording, kept by
# webhook.policy): "expression '...' resulted in error", "failed to configure binding: ...", "... unsupported
# return type ...". Every mutating denial is an error: mutating policies have no validations.


@dataclass(frozen=True, slots=True)
class State:
    """What the views need, kept in ``app.extensions["upgrade_gate"]``."""

    settings: ServeSettings
    runtime: PolicyRuntime
    metrics: Metrics


def create_app(settings: ServeSettings, runtime: PolicyRuntime, metrics: Metrics) -> AdmissionApp:
    """The ASGI application serving ``runtime``'s policy set with ``settings``' body limit, I/O timeout, deadline
    and evaluation threads: the admission endpoints in ``AdmissionApp``, the probes and metrics as Flask views."""
    flask = Flask(__name__)
    flask.config["MAX_CONTENT_LENGTH"] = settings.max_body_bytes
    flask.json.sort_keys = False  # type: ignore[attr-defined]  # DefaultJSONProvider has it; the base type not
    flask.extensions[EXTENSION] = state = State(settings, runtime, metrics)
    flask.add_url_rule("/healthz", "healthz", _healthz, methods=["GET"])
    flask.add_url_rule("/readyz", "readyz", _readyz, methods=["GET"])
    flask.add_url_rule("/metrics", "metrics", _metrics, methods=["GET"])
    flask.register_error_handler(HTTPException, _http_error)
    return AdmissionApp(state, flask)


#: How much of its thread's CPU time a review may take on the event loop, where it costs no hand-off between threads
#: (about 0.1 ms of CPU and as much latency per review, docs/performance.md); past it the evaluation is abandoned
#: (``Preempted``) and done again in an evaluation thread, with the whole request deadline, so that the loop serves
#: the other connections. CPU time, not wall-clock time: waiting for the interpreter lock that evaluation threads
#: hold must not push a cheap review off the loop, behind them.
SLICE_S = 0.002
#: A body larger than this is read and decided in an evaluation thread: reading it alone would hold the event loop
#: for milliseconds (Python reads JSON at a few hundred MB/s; the apiserver sends up to 3 MiB).
INLINE_BODY_BYTES = 256 * 1024
#: How long reviews of a kind that was preempted go straight to an evaluation thread (``AdmissionApp.offloaded``).
OFFLOAD_S = 10.0
_MAX_OFFLOADED = 1024

_Answered = tuple[int, bytes, Sequence[tuple[str, str]]]
"""An HTTP status code, the JSON body, and headers beyond the content's."""


class AdmissionApp:
    """ASGI: ``POST /validate`` and ``POST /mutate`` answered here (see the module docstring), every other path
    passed to ``flask``. An exception escaping a review is logged and answered with a 500 Status, as Flask
    answers it.

    ``offloaded`` maps the kinds of review (endpoint, kind, operation) preempted in the last ``OFFLOAD_S``, and
    over their slice again in the thread, to when that ends: they go straight to a thread meanwhile. A preempted
    evaluation may first have to run to its end in cel-cpp, its library calls failing at once (milliseconds for a
    comprehension that calls them in each of thousands of iterations), and the loop should pay that once, not for
    every such review. A review preempted once only (a worker's first of its kind, which imports and fills caches)
    leaves its kind on the loop.
    """

    def __init__(self, state: State, flask: Flask) -> None:
        self.state = state
        self.fallback = WSGIMiddleware(flask, workers=2)  # type: ignore[arg-type]  # a2wsgi's narrower WSGI type
        self.offloaded: dict[tuple[str, str, str], float] = {}
        self._executor: ThreadPoolExecutor | None = None  # made at first use: in the worker, after the fork

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        endpoint = _ENDPOINTS.get(scope.get("path", "")) if scope["type"] == "http" else None
        if endpoint is None:
            await self.fallback(scope, receive, send)  # type: ignore[arg-type]  # a2wsgi's narrower ASGI types
            return
        started = time.monotonic()
        code, body, headers = await self._admission(scope, receive, endpoint, started)
        await send(
            {
                "type": "http.response.start",
                "status": code,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode()),
                    *((name.encode(), value.encode()) for name, value in headers),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})

    async def _admission(self, scope: Scope, receive: Receive, endpoint: str, started: float) -> _Answered:
        if scope["method"] != "POST":
            refused = MethodNotAllowed(valid_methods=["POST"])
            return self._refuse(endpoint, started, 405, str(refused.description), [("Allow", "POST")])
        limit = self.state.settings.max_body_bytes
        content_type = _header(scope, b"content-type")
        try:
            body = await _body(receive, limit, self.state.settings.io_timeout_s, _header(scope, b"content-length"))
        except _TooLarge:
            return self._refuse(endpoint, started, 413, f"the request body is larger than {limit} bytes")
        except (TimeoutError, _Gone) as error:  # stalled past the I/O timeout, or the client went away
            if isinstance(error, TimeoutError):
                self.state.metrics.connection_timeouts.inc()
            message = "the request body did not arrive in full"
            return self._refuse(endpoint, started, 408, message, [("Connection", "close")])
        loop = asyncio.get_running_loop()
        if len(body) > INLINE_BODY_BYTES:
            return await loop.run_in_executor(self._pool(), self._answered, endpoint, body, content_type, started)
        review = self._parsed(endpoint, body, content_type, started)
        if not isinstance(review, AdmissionReview):
            return review
        kind = (endpoint, review.kind, review.operation)
        if self.offloaded.get(kind, 0.0) <= time.monotonic():
            try:
                return self._decided(endpoint, review, started, SLICE_S)
            except Preempted:
                self.state.metrics.preemptions.labels(endpoint).inc()
        answered, spent = await loop.run_in_executor(self._pool(), self._decided_in_thread, endpoint, review, started)
        if spent >= SLICE_S:  # expensive again, not only once (a first call's imports and caches): keep it off the loop
            if len(self.offloaded) >= _MAX_OFFLOADED:
                self.offloaded.clear()
            self.offloaded[kind] = time.monotonic() + OFFLOAD_S
        return answered

    def _pool(self) -> ThreadPoolExecutor:
        if self._executor is None:
            self._executor = ThreadPoolExecutor(self.state.settings.threads, thread_name_prefix="admission")
        return self._executor

    def _parsed(
        self, endpoint: str, body: bytes, content_type: str | None, started: float
    ) -> AdmissionReview | _Answered:
        """``body`` read as an AdmissionReview, or the answer to a body that is not one (400, or 500 for a bug)."""
        try:
            return parse_review(body, content_type)
        except ReviewError as error:
            return self._refuse(endpoint, started, 400, str(error))
        except Exception as error:
            return _internal_error(endpoint, error)

    def _answered(self, endpoint: str, body: bytes, content_type: str | None, started: float) -> _Answered:
        """In an evaluation thread: the answer to a large ``body``, read and decided there."""
        review = self._parsed(endpoint, body, content_type, started)
        return self._decided(endpoint, review, started, math.inf) if isinstance(review, AdmissionReview) else review

    def _decided_in_thread(self, endpoint: str, review: AdmissionReview, started: float) -> tuple[_Answered, float]:
        """In an evaluation thread: the answer to ``review`` (no slice) and the thread's CPU time it took."""
        began = time.thread_time()
        answered = self._decided(endpoint, review, started, math.inf)
        return answered, time.thread_time() - began

    def _decided(self, endpoint: str, review: AdmissionReview, started: float, slice_s: float) -> _Answered:
        """The answer to ``review``: decided within ``slice_s`` (else ``Preempted`` propagates), recorded, rendered."""
        state = self.state
        try:
            try:
                decision = _decide(state, review, endpoint, slice_s=slice_s, started=started)
            except ReviewError as error:
                return self._refuse(endpoint, started, 400, str(error))
            _record(state.metrics, endpoint, review, decision, time.monotonic() - started)
            return 200, _json(render_response(review, decision, mutating=endpoint == MUTATE)), ()
        except Exception as error:  # a bug here must not reach the server's plain-text 500
            return _internal_error(endpoint, error)

    def _refuse(
        self, endpoint: str, started: float, code: int, message: str, headers: Sequence[tuple[str, str]] = ()
    ) -> _Answered:
        """Count, time and log a request that cannot be read; its answer: a ``metav1.Status`` of ``code``."""
        metrics = self.state.metrics
        metrics.requests.labels(endpoint, "", "", "invalid").inc()
        metrics.latency.labels(endpoint).observe(time.monotonic() - started)
        log.info("bad admission request", extra=logs.fields({logs.ENDPOINT: endpoint, logs.ERROR: message}))
        return code, _json(render_error(code, _REASONS[code], message)), headers


_ENDPOINTS: Mapping[str, str] = {f"/{VALIDATE}": VALIDATE, f"/{MUTATE}": MUTATE}


class _TooLarge(Exception):
    """The body is longer than the limit (drained up to ``_DRAIN_LIMIT``)."""


class _Gone(Exception):
    """The client closed the connection before the body was complete."""


async def _body(receive: Receive, limit: int, timeout_s: float, length: str | None) -> bytes:
    """The request body from ``receive``, each message awaited at most ``timeout_s`` (``TimeoutError``). Raises
    ``_TooLarge`` past ``limit`` bytes (announced or sent; a body still arriving is read and dropped up to
    ``_DRAIN_LIMIT``, so that its client receives the answer instead of a reset connection), ``_Gone`` if the
    client disconnects first."""
    too_large = length is not None and length.isdigit() and int(length) > limit
    chunks: list[bytes] = []
    size, more = 0, True
    while more:
        async with asyncio.timeout(timeout_s):  # a timer, where wait_for would make a task per message
            message = await receive()
        if message["type"] == "http.disconnect":
            raise _Gone
        chunk = message.get("body", b"")
        more = message.get("more_body", False)
        size += len(chunk)
        too_large = too_large or size > limit
        if too_large:
            if size > _DRAIN_LIMIT:
                break
            continue
        chunks.append(chunk)
    if too_large:
        raise _TooLarge
    return b"".join(chunks)


def _header(scope: Scope, name: bytes) -> str | None:
    """The first value of request header ``name`` (lower case), decoded as Latin-1."""
    for key, value in scope["headers"]:
        if key == name:
            return bytes(value).decode("latin-1")
    return None


def _json(document: Mapping[str, Any]) -> bytes:
    """``document`` as compact JSON, keys in order (what ``flask.jsonify`` sends)."""
    return json.dumps(document, separators=(",", ":")).encode()


def _internal_error(endpoint: str, error: Exception) -> _Answered:
    """Log ``error``, raised while answering a review outside its evaluation; answer a 500 Status."""
    log.exception("admission request failed", extra=logs.fields({logs.ENDPOINT: endpoint}))
    message = f"upgrade-gate: internal error while answering the review: {type(error).__name__}"
    return 500, _json(render_error(500, "InternalError", message)), ()


def _state() -> State:
    state: State = current_app.extensions[EXTENSION]
    return state


def _decide(state: State, review: AdmissionReview, endpoint: str, *, slice_s: float, started: float) -> Decision:
    """The decision for ``review``, which arrived at ``started`` (``time.monotonic``), within the request deadline
    from then and a time slice of ``slice_s`` (``Preempted`` past it); ``ReviewError`` propagates, any other failure
    is a refusal (``Decision.refusal``).

    Decided with the runtime's current set; if a reload published a newer set meanwhile, decided again with
    it, so that no answer leaves from a set older than the last one published."""
    decided: tuple[Snapshot, Decision] | None = None
    while True:
        try:
            snapshot = state.runtime.current()
        except Exception as error:  # adopting the published set failed: deny, as for a failed evaluation
            return _failed(state, review, endpoint, error)
        if snapshot is None:
            return Decision.refusal("upgrade-gate: no policy set is loaded", code=503, reason="ServiceUnavailable")
        if decided is not None and decided[0] is snapshot:
            return decided[1]
        decided = snapshot, _evaluate(state, snapshot, review, endpoint, slice_s=slice_s, started=started)


def _evaluate(
    state: State, snapshot: Snapshot, review: AdmissionReview, endpoint: str, *, slice_s: float, started: float
) -> Decision:
    admit = snapshot.admitter.mutate if endpoint == MUTATE else snapshot.admitter.validate
    try:
        with deadline(state.settings.request_timeout_s, slice_s, started):
            return admit(review.request)
    except (ReviewError, Preempted):
        raise
    except DeadlineExceeded as error:
        state.metrics.evaluation_errors.labels(endpoint).inc()
        log.error("evaluation stopped", extra=logs.fields({logs.UID: review.uid, logs.ERROR: str(error)}))
        return Decision.refusal(f"upgrade-gate: {error}", code=504, reason="Timeout")
    except Exception as error:  # a bug in evaluation must deny one request, not kill the worker
        return _failed(state, review, endpoint, error)


def _failed(state: State, review: AdmissionReview, endpoint: str, error: Exception) -> Decision:
    state.metrics.evaluation_errors.labels(endpoint).inc()
    log.exception("evaluation failed", extra=logs.fields({logs.UID: review.uid}))
    return Decision.refusal(f"upgrade-gate: internal error while evaluating policies: {type(error).__name__}")


def _record(metrics: Metrics, endpoint: str, review: AdmissionReview, decision: Decision, elapsed: float) -> None:
    """Count, time and log one answered review."""
    outcome = "allowed" if decision.allowed else "refused" if decision.refused else "denied"
    policy = decision.policy
    metrics.requests.labels(endpoint, review.kind, review.operation, outcome).inc()
    metrics.latency.labels(endpoint).observe(elapsed)
    if policy and decision.failed_closed:
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
                logs.WARNINGS: len(decision.policy_warnings),
                logs.PATCH_OPERATIONS: len(decision.patch),
                logs.LATENCY_MS: round(elapsed * 1000, 3),
            }
        ),
    )


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


_DRAIN_LIMIT = 16 * 1024 * 1024
_REASONS: Mapping[int, str] = {
    400: "BadRequest",
    404: "NotFound",
    405: "MethodNotAllowed",
    408: "RequestTimeout",
    413: "RequestEntityTooLarge",
    415: "UnsupportedMediaType",
}
