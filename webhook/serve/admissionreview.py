"""AdmissionReview in, AdmissionReview out: parsing, checking and rendering, with no I/O.

Follows ``k8s.io/api/admission/v1`` (``AdmissionReview``, ``AdmissionRequest``, ``AdmissionResponse``) and
the kube-apiserver's webhook client (``k8s.io/apiserver/pkg/admission/plugin/webhook/request``): a review
is answered in the version it was sent in (``admission.k8s.io/v1`` or ``v1beta1``, same shape), the
response echoes the request ``uid``, a denial carries a ``metav1.Status`` (code, reason, message, causes),
and a mutation carries ``patchType: JSONPatch`` with the RFC 6902 patch, base64-encoded.
"""

from __future__ import annotations

import base64
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from webhook.errors import ReviewError
from webhook.policy import Decision

GROUP = "admission.k8s.io"
VERSIONS = (f"{GROUP}/v1", f"{GROUP}/v1beta1")
KIND = "AdmissionReview"
OPERATIONS = ("CREATE", "UPDATE", "DELETE", "CONNECT")
JSON_CONTENT_TYPE = "application/json"
#: Digits of the largest float64 (about 1.8e308): no Kubernetes number has more.
MAX_INTEGER_DIGITS = 309


@dataclass(frozen=True, slots=True)
class AdmissionReview:
    """A checked AdmissionReview: its ``api_version`` (answered in kind), the ``request`` as sent, and the
    request's ``uid``, ``kind`` (``request.kind.kind``), ``operation``, ``name``, ``namespace`` and
    ``username`` for logs and metrics."""

    api_version: str
    request: Mapping[str, Any]

    @property
    def uid(self) -> str:
        """``request.uid``."""
        return str(self.request["uid"])

    @property
    def kind(self) -> str:
        """``request.kind.kind``, e.g. ``ClusterExtensionRevision``."""
        return str(self.request["kind"]["kind"])

    @property
    def operation(self) -> str:
        """``request.operation``: CREATE, UPDATE, DELETE or CONNECT."""
        return str(self.request["operation"])

    @property
    def name(self) -> str:
        """``request.name`` (may be empty on CREATE with ``generateName``)."""
        return str(self.request.get("name") or "")

    @property
    def namespace(self) -> str:
        """``request.namespace``; empty for cluster-scoped objects."""
        return str(self.request.get("namespace") or "")

    @property
    def username(self) -> str:
        """``request.userInfo.username``; empty if not sent."""
        user = self.request.get("userInfo")
        return str(user.get("username") or "") if isinstance(user, Mapping) else ""

    @property
    def dry_run(self) -> bool:
        """``request.dryRun``."""
        return self.request.get("dryRun") is True


def parse_review(body: bytes, content_type: str | None) -> AdmissionReview:
    """Read an HTTP request body as an AdmissionReview.

    ``content_type`` must be ``application/json`` (parameters such as ``charset`` allowed). Checked: the
    body is a JSON object, ``kind: AdmissionReview``, ``apiVersion`` ``admission.k8s.io/v1|v1beta1``, a
    ``request`` object with a non-empty string ``uid``, ``kind`` ``{group, version, kind}`` strings, an
    ``operation`` of CREATE/UPDATE/DELETE/CONNECT, and ``object``/``oldObject`` objects or null. Integers beyond
    int64 are read as float64, as the apiserver's decoder reads them, so the request holds only JSON values that
    CEL takes as they are (``PolicyEngine.validate``'s ``from_json``).
    Raises ``ReviewError`` with one deterministic sentence (HTTP 400), also for what Python's decoder accepts but
    JSON and the apiserver do not (``NaN``, ``Infinity``), integers beyond any int64 or float64, and nesting deeper
    than the interpreter's recursion limit (the server raises it above the 10,000 levels the apiserver's decoder
    accepts: ``webhook.serve.server``).
    """
    media_type = (content_type or "").split(";", 1)[0].strip().lower()
    if media_type != JSON_CONTENT_TYPE:
        raise ReviewError(f"content type must be {JSON_CONTENT_TYPE}, not {media_type or 'missing'!r}")
    try:
        document = json.loads(body.decode("utf-8"), parse_constant=_not_json, parse_int=_integer)
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ReviewError(f"the body is not JSON: {error}") from None
    except RecursionError:
        raise ReviewError("the body is nested too deeply to read") from None
    if not isinstance(document, dict):
        raise ReviewError("the body is not a JSON object")
    if document.get("kind") != KIND:
        raise ReviewError(f"kind must be {KIND}, not {document.get('kind')!r}")
    api_version = document.get("apiVersion")
    if api_version not in VERSIONS:
        raise ReviewError(f"apiVersion must be one of {', '.join(VERSIONS)}, not {api_version!r}")
    request = document.get("request")
    if not isinstance(request, dict):
        raise ReviewError("the AdmissionReview has no request object")
    _check_request(request)
    return AdmissionReview(api_version, request)


def _not_json(name: str) -> Any:
    """``NaN``, ``Infinity`` and ``-Infinity``, which Python's decoder accepts: not JSON (RFC 8259), and refused
    by the apiserver's decoder."""
    raise ReviewError(f"the body is not JSON: {name} is not a JSON value")


def _integer(text: str) -> int | float:
    """A JSON integer as the apiserver decodes it (``k8s.io/apimachinery/pkg/util/json``: int64 if it fits, else
    float64), so that a request holds no integer beyond int64. One beyond float64, or of more than
    ``MAX_INTEGER_DIGITS`` digits, is refused: the apiserver never sends one."""
    digits = len(text.lstrip("-"))
    if digits <= _INT64_DIGITS and -(2**63) <= (value := int(text)) < 2**63:
        return value
    if digits > MAX_INTEGER_DIGITS or math.isinf(number := float(text)):
        raise ReviewError(f"the body has an integer of {digits} digits, beyond any int64 or float64 number")
    return number


#: Digits of the largest int64 (9223372036854775807).
_INT64_DIGITS = 19


def _check_request(request: Mapping[str, Any]) -> None:
    uid = request.get("uid")
    if not isinstance(uid, str) or not uid:
        raise ReviewError("request.uid must be a non-empty string")
    kind = request.get("kind")
    if not isinstance(kind, dict) or not all(isinstance(kind.get(key), str) for key in ("group", "version", "kind")):
        raise ReviewError("request.kind must be an object with string group, version and kind")
    if request.get("operation") not in OPERATIONS:
        raise ReviewError(f"request.operation must be one of {', '.join(OPERATIONS)}, not {request.get('operation')!r}")
    for key in ("object", "oldObject", "userInfo"):
        if request.get(key) is not None and not isinstance(request[key], dict):
            raise ReviewError(f"request.{key} must be an object or null")


def render_response(review: AdmissionReview, decision: Decision, *, mutating: bool) -> dict[str, Any]:
    """The AdmissionReview answering ``review`` with ``decision``, in ``review``'s apiVersion.

    ``response``: ``uid``, ``allowed``; ``status`` (``{code, reason, message, details.causes}``) when denied;
    ``warnings`` (each ``PolicyWarning``'s text, in the API server's wording) and ``auditAnnotations`` when there
    are any; when ``mutating`` and allowed with a non-empty patch, ``patchType: JSONPatch`` and ``patch`` (base64
    of the JSON operations). A denial never patches.
    """
    response: dict[str, Any] = {"uid": review.uid, "allowed": decision.allowed}
    if not decision.allowed:
        status: dict[str, Any] = {"code": decision.code, "reason": decision.reason, "message": decision.message}
        if decision.causes:
            status["details"] = {"causes": [{"message": cause} for cause in decision.causes]}
        response["status"] = status
    if decision.policy_warnings:
        response["warnings"] = list(decision.warnings)
    if decision.audit_annotations:
        response["auditAnnotations"] = dict(decision.audit_annotations)
    if mutating and decision.allowed and decision.patch:
        patch = json.dumps(list(decision.patch), separators=(",", ":")).encode()
        response["patchType"] = "JSONPatch"
        response["patch"] = base64.b64encode(patch).decode("ascii")
    return {"apiVersion": review.api_version, "kind": KIND, "response": response}


def render_error(code: int, reason: str, message: str) -> dict[str, Any]:
    """A ``metav1.Status`` failure document: the JSON body of an HTTP 4xx answer to a bad request."""
    return {
        "apiVersion": "v1",
        "kind": "Status",
        "status": "Failure",
        "code": code,
        "reason": reason,
        "message": message,
    }
