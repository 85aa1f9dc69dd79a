"""The result of admitting one request: ``Decision``, shaped for an AdmissionReview response."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any


@dataclass(frozen=True, slots=True)
class Decision:
    """The outcome of one admission request.

    ``allowed``; ``code`` (200, or the HTTP status of a denial: 401/403/404/413/422); ``reason`` (``""`` or
    the ``metav1.StatusReason``); ``message`` (``""`` or the first denial's text); ``causes`` (every denial's
    text); ``warnings`` (HTTP 299 warnings); ``audit_annotations`` (key → value); ``patch`` (RFC 6902
    operations from mutating policies, empty if the object is unchanged).
    """

    allowed: bool = True
    code: int = 200
    reason: str = ""
    message: str = ""
    causes: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()
    audit_annotations: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    patch: tuple[Mapping[str, Any], ...] = ()

    @classmethod
    def namespace_not_found(cls, name: str) -> Decision:
        """The apiserver's answer when a namespaced request's Namespace does not exist (HTTP 404)."""
        message = f'namespaces "{name}" not found'
        return cls(allowed=False, code=404, reason="NotFound", message=message, causes=(message,))
