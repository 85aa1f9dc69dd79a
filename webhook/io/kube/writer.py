"""Writes to the Kubernetes API as plain JSON through the official ``kubernetes`` client: create, JSON merge patch
(of an object or of its ``status`` subresource), delete with a uid precondition.

A patch that carries ``metadata.resourceVersion`` is applied only to that version of the object: the API server
answers 409 Conflict when the object changed since, as for an update (optimistic concurrency). Every failure
raises ``WriteError`` with the HTTP status, so a caller tells a conflict (409), a refusal (403, or an admission
webhook's denial) and a missing object (404) apart. ``on_request`` hears the verb of every call made (metrics).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from webhook.errors import ClusterError
from webhook.io.kube.cache import Resource

MERGE_PATCH = "application/merge-patch+json"


class WriteError(ClusterError):
    """A write the API server refused or could not take: ``status`` is the HTTP status (0: no answer), the
    message the API server's own (``metav1.Status.message``) when it gave one."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status


class ApiWriter:
    """Creates, patches and deletes objects of any ``Resource`` through a ``kubernetes.client.ApiClient``."""

    def __init__(
        self, api_client: Any, *, timeout_s: float = 30.0, on_request: Callable[[str], None] | None = None
    ) -> None:
        self.api = api_client
        self.timeout_s = timeout_s
        self.on_request = on_request

    def create(self, resource: Resource, body: Mapping[str, Any]) -> dict[str, Any]:
        """POST ``body`` to ``resource``'s collection; the created object."""
        return self._call("POST", resource.path(), body, "application/json", f"create {resource.kind}")

    def patch(self, resource: Resource, name: str, patch: Mapping[str, Any], *, status: bool = False) -> dict[str, Any]:
        """JSON merge patch of the object ``name`` (its ``status`` subresource with ``status``); the result."""
        path = f"{resource.path()}/{name}" + ("/status" if status else "")
        what = f"patch {resource.kind} {name}" + (" status" if status else "")
        return self._call("PATCH", path, patch, MERGE_PATCH, what)

    def delete(self, resource: Resource, name: str, uid: str = "") -> None:
        """DELETE the object ``name``; with ``uid``, only that object (a precondition: 409 when it was replaced).
        An object already gone is not an error."""
        body = {"kind": "DeleteOptions", "apiVersion": "v1", **({"preconditions": {"uid": uid}} if uid else {})}
        try:
            self._call(
                "DELETE", f"{resource.path()}/{name}", body, "application/json", f"delete {resource.kind} {name}"
            )
        except WriteError as error:
            if error.status != 404:
                raise

    def _call(self, method: str, path: str, body: Mapping[str, Any], content_type: str, what: str) -> dict[str, Any]:
        if self.on_request is not None:
            self.on_request(method.lower())
        method, url, headers, data, _ = self.api.param_serialize(
            method,
            path,
            header_params={"Accept": "application/json", "Content-Type": content_type},
            body=dict(body),
            auth_settings=["BearerToken"],
        )
        try:
            answer = self.api.call_api(method, url, header_params=headers, body=data, _request_timeout=self.timeout_s)
            answer.read()
        except Exception as error:  # urllib3 and ssl errors: the cluster is unreachable
            raise WriteError(f"{what}: {type(error).__name__}: {error}", 0) from None
        text = answer.data.decode("utf-8", "replace") if answer.data else ""
        if answer.status >= 400:
            raise WriteError(f"{what}: {answer.status} {_message(text) or answer.reason}", answer.status)
        found = json.loads(text) if text else {}
        return found if isinstance(found, dict) else {}


def _message(text: str) -> str:
    """``metav1.Status.message`` of an error answer, or empty."""
    try:
        status = json.loads(text)
    except ValueError:
        return ""
    return str(status.get("message") or "") if isinstance(status, dict) else ""
