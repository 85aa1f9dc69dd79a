"""The result of admitting one request: ``Decision``, shaped for an AdmissionReview response; ``Denial``, one
policy's denial as the API server words and codes it; ``PolicyWarning``, one ``Warn`` binding's warning as the API
server words it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

#: The HTTP status of a denial by its ``metav1.StatusReason`` (``policy_decision.go`` ``reasonToCode``; 422 else).
_CODES = {"Unauthorized": 401, "Forbidden": 403, "RequestEntityTooLarge": 413, "Invalid": 422}


@dataclass(frozen=True, slots=True)
class Denial:
    """One policy's denial of a request.

    ``policy`` and ``binding`` (``None``: a configuration error found before any binding); ``message``, the
    policy's own text; ``reason``: the failed validation's ``metav1.StatusReason`` (``""``: ``Invalid``);
    ``errored``: the denial comes from an error (an expression that failed, a binding that could not be
    configured) under ``failurePolicy: Fail``, not from a validation that evaluated to false; ``mutating``: a
    MutatingAdmissionPolicy's (which denies only on errors).
    """

    policy: str
    binding: str | None
    message: str
    reason: str = ""
    errored: bool = False
    mutating: bool = False

    @property
    def status_reason(self) -> str:
        """The ``metav1.StatusReason`` answered: ``reason``, else ``Invalid`` (``Forbidden`` for a mutating one)."""
        return self.reason or ("Forbidden" if self.mutating else "Invalid")

    @property
    def code(self) -> int:
        """The HTTP status the denial answers with: 401, 403, 413 or 422; 403 for a mutating one, whose errors the
        apiserver answers as Forbidden whatever their reason."""
        return 403 if self.mutating else _CODES.get(self.status_reason, 422)

    def text(self) -> str:
        """The denial as the API server words it: ``ValidatingAdmissionPolicy '<p>' with binding '<b>' denied
        request: <message>`` (``validating/dispatcher.go``), for a MutatingAdmissionPolicy ``policy '<p>' with
        binding '<b>' denied request: <message>`` (``generic.PolicyError``); without a binding, the name only."""
        if self.mutating:
            if self.binding is None:
                return f'policy "{self.policy}" denied request: {self.message}'
            return f"policy '{self.policy}' with binding '{self.binding}' denied request: {self.message}"
        if self.binding is None:
            return f"ValidatingAdmissionPolicy '{self.policy}' denied request: {self.message}"
        return f"ValidatingAdmissionPolicy '{self.policy}' with binding '{self.binding}' denied request: {self.message}"


@dataclass(frozen=True, slots=True)
class PolicyWarning:
    """A validation that failed under a binding whose ``validationActions`` include ``Warn``: ``policy``,
    ``binding`` and ``message`` (the policy's own text, as a ``Denial``'s)."""

    policy: str
    binding: str
    message: str

    def text(self) -> str:
        """The warning as the API server words it (``validating/dispatcher.go``), the one place this text is
        built: ``Validation failed for ValidatingAdmissionPolicy '<p>' with binding '<b>': <message>``."""
        named = f"ValidatingAdmissionPolicy '{self.policy}' with binding '{self.binding}'"
        return f"Validation failed for {named}: {self.message}"


@dataclass(frozen=True, slots=True)
class Decision:
    """The outcome of one admission request.

    ``allowed``; ``code`` (200, or the HTTP status of a denial: 401/403/404/413/422, or of a refusal);
    ``reason`` (``""`` or the ``metav1.StatusReason``); ``message`` (``""`` or the first denial's text);
    ``causes`` (every denial's text); ``policy_warnings`` (the ``Warn`` bindings' warnings, in order, whose texts
    are ``warnings``, the HTTP 299 warnings); ``audit_annotations`` (key → value); ``patch`` (RFC 6902 operations
    from mutating policies, empty if the object is unchanged); ``denials`` (the policies' denials, in order, whose
    texts are ``message`` and ``causes``); ``refused``: decided by the webhook itself, not by a policy
    (``refusal``).
    """

    allowed: bool = True
    code: int = 200
    reason: str = ""
    message: str = ""
    causes: tuple[str, ...] = ()
    policy_warnings: tuple[PolicyWarning, ...] = ()
    audit_annotations: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    patch: tuple[Mapping[str, Any], ...] = ()
    denials: tuple[Denial, ...] = ()
    refused: bool = False

    @classmethod
    def denied(
        cls,
        denials: Sequence[Denial],
        *,
        policy_warnings: Sequence[PolicyWarning] = (),
        audit_annotations: Mapping[str, str] | None = None,
    ) -> Decision:
        """A denial by ``denials`` (at least one): the first one's code, reason and text, every one's text as a
        cause, as the API server answers."""
        first = denials[0]
        return cls(
            allowed=False,
            code=first.code,
            reason=first.status_reason,
            message=first.text(),
            causes=tuple(denial.text() for denial in denials),
            policy_warnings=tuple(policy_warnings),
            audit_annotations=audit_annotations if audit_annotations is not None else MappingProxyType({}),
            denials=tuple(denials),
        )

    @classmethod
    def refusal(cls, message: str, *, code: int = 500, reason: str = "InternalError") -> Decision:
        """A decision made by the webhook itself, not by a policy: ``allowed: false`` with ``code``/``reason``
        (an internal error, the request deadline, no policy set loaded): the webhook fails closed, as a
        ``failurePolicy: Fail`` webhook that errors does in the apiserver."""
        return cls(allowed=False, code=code, reason=reason, message=message, refused=True)

    @classmethod
    def namespace_not_found(cls, name: str) -> Decision:
        """The apiserver's answer when a namespaced request's Namespace does not exist (HTTP 404)."""
        message = f'namespaces "{name}" not found'
        return cls(allowed=False, code=404, reason="NotFound", message=message, causes=(message,))

    @property
    def warnings(self) -> tuple[str, ...]:
        """The warnings' texts (``PolicyWarning.text``), as an AdmissionReview response carries them."""
        return tuple(warning.text() for warning in self.policy_warnings)

    @property
    def policy(self) -> str:
        """The name of the policy whose denial is the message; ``""`` when allowed, refused or none named."""
        return self.denials[0].policy if self.denials and not self.allowed else ""

    @property
    def failed_closed(self) -> bool:
        """True when a policy's error under ``failurePolicy: Fail`` denies the request."""
        return not self.allowed and any(denial.errored for denial in self.denials)
