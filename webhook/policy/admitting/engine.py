"""The policy engine: one admission request in, one ``Decision`` out. Pure: no HTTP, no cluster, no files.

``PolicyEngine(policy_set, store).validate(request, namespace)`` runs the ValidatingAdmissionPolicies,
``.mutate(request, namespace)`` the MutatingAdmissionPolicies (``webhook.policy.admitting.mutation``), and ``.admit``
both as the kube-apiserver chains them (mutation, then validation of the patched object). ``request`` is
the ``request`` of an ``admission.k8s.io/v1`` AdmissionReview as a dict; ``namespace`` is the request's
Namespace object (``None`` for cluster-scoped requests, or when unknown: a namespaced request then fails
as upstream does, ``namespaces "<name>" not found``).

Validation follows ``k8s.io/apiserver/pkg/admission/plugin/policy/validating/dispatcher.go`` and
``validator.go``: per (policy, binding, param) tuple, matchConditions (a false one skips the tuple, errors go
to the failurePolicy), validations (``false`` is a violation; an error follows the failurePolicy) with
message / messageExpression fallbacks, then auditAnnotations. Violations (and, with ``failurePolicy: Fail``,
errors) go through the binding's ``validationActions``: Deny rejects, Warn adds a warning, Audit adds a
``validation.policy.admission.k8s.io/validation_failure`` audit annotation. The first denial gives the
response's message and HTTP code (``reason``: 401/403/413/422); every denial is a cause.

Not modelled: the per-(policy, binding, param) cost budget of 10,000,000 (each expression has the
per-expression limit of its ``Environment``), ``authorizer`` (bound to ``null``: using it is a run-time
error), and object conversion for ``matchPolicy: Equivalent`` (see ``webhook.policy.admitting.matching``).
"""

from __future__ import annotations

import copy
import datetime
import json
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, cast

import jsonpatch

from webhook.cel import backend_named, extension_bindings
from webhook.objects import ObjectStore
from webhook.policy.admitting import mutation
from webhook.policy.admitting.activation import (
    Activation,
    ParamValues,
    RequestInputs,
    activation,
    bind_variables,
    evaluate,
    evaluate_together,
    match_conditions,
)
from webhook.policy.admitting.decision import Decision, Denial, PolicyWarning
from webhook.policy.admitting.dispatch import CLUSTER_SCOPED_KINDS, ConfigError, Dispatcher, invocations
from webhook.policy.model import (
    AUDIT,
    DENY,
    FAIL,
    WARN,
    Binding,
    PolicySet,
    ValidatingBinding,
    ValidatingPolicy,
    Validation,
)

VALIDATION_FAILURE_ANNOTATION = "validation.policy.admission.k8s.io/validation_failure"
MAX_MESSAGE_BYTES = 5 * 1024
MAX_AUDIT_VALUE_BYTES = 10 * 1024


@dataclass(frozen=True, slots=True)
class _Failure:
    """A validation decision with action Deny: a violation, or (``errored``) an error under failurePolicy Fail."""

    index: int
    message: str
    reason: str = ""
    errored: bool = False


@dataclass(slots=True)
class _Outcome:
    """What one request's validating tuples produced, gathered as the dispatcher gathers them."""

    denials: list[Denial] = field(default_factory=list)
    warnings: list[PolicyWarning] = field(default_factory=list)
    annotations: dict[str, str] = field(default_factory=dict)

    def decision(self) -> Decision:
        annotations = MappingProxyType(dict(self.annotations))
        if not self.denials:
            return Decision(policy_warnings=tuple(self.warnings), audit_annotations=annotations)
        return Decision.denied(self.denials, policy_warnings=self.warnings, audit_annotations=annotations)


@dataclass(frozen=True, slots=True)
class Admission:
    """What the request pipeline produced for one request: the mutating decision, the validating decision on the
    patched object, and that object."""

    mutated: Decision
    validated: Decision
    patched: Any = field(default=None)


class PolicyEngine:
    """A loaded ``PolicySet`` ready to admit requests; params and ``cluster.get/list`` lookups read ``store``.

    ``cluster_scoped_kinds``: (group, kind) of param kinds that are cluster-scoped. Build it once per policy set:
    the request time (``clock.now()``) is given per call. Thread-safe: a request's state lives in the call.
    Requests are converted to CEL values of the backend the set was compiled for (``PolicySet.engine``).
    """

    def __init__(
        self,
        policies: PolicySet,
        store: ObjectStore,
        *,
        cluster_scoped_kinds: Collection[tuple[str, str]] = CLUSTER_SCOPED_KINDS,
    ) -> None:
        self.policies = policies
        self.store = store
        self.cluster_scoped_kinds = frozenset(cluster_scoped_kinds)
        self.backend = backend_named(policies.engine)
        self._params = ParamValues(self.backend)
        self._validating = Dispatcher(policies.validating_policies, policies.validating_bindings)
        self._mutating = Dispatcher(policies.mutating_policies, policies.mutating_bindings)

    def inputs(
        self,
        request: Mapping[str, Any],
        namespace: Mapping[str, Any] | None,
        now: datetime.datetime | None,
        *,
        from_json: bool = False,
    ) -> RequestInputs:
        """The request's inputs (converted to CEL on first use), with the extension libraries bound: ``cluster``
        over the store, ``clock`` at ``now`` (default: the current time, UTC). ``from_json``: the request was
        decoded from JSON with its integers within int64 (``RequestInputs``)."""
        moment = now or datetime.datetime.now(datetime.UTC)
        bindings = extension_bindings(self.store, moment)
        return RequestInputs.build(self.backend, request, namespace, bindings, params=self._params, from_json=from_json)

    def validate(
        self,
        request: Mapping[str, Any],
        namespace: Mapping[str, Any] | None = None,
        *,
        now: datetime.datetime | None = None,
        from_json: bool = False,
    ) -> Decision:
        """Run every ValidatingAdmissionPolicy on ``request`` at the request time ``now`` (default: now, UTC).
        ``from_json``: ``request`` was decoded from JSON with its integers within int64 (as
        ``webhook.serve.admissionreview.parse_review`` reads it), so it is converted to CEL without checks.

        Raises ``ReviewError`` for an unreadable request."""
        inputs = self.inputs(request, namespace, now, from_json=from_json)
        outcome = _Outcome()
        collected: dict[str, dict[str, list[str]]] = {}  # policy -> audit annotation key -> values
        candidates = self._validating.candidates(inputs.attributes)
        for item in invocations(candidates, inputs, self.store, self.cluster_scoped_kinds):
            policy = cast(ValidatingPolicy, item.policy)
            if isinstance(item, ConfigError):
                if policy.failure_policy == FAIL:
                    outcome.denials.append(Denial(policy.name, _name(item.binding), item.message, errored=True))
                continue
            if inputs.namespace_name and inputs.namespace is None:
                return Decision.namespace_not_found(inputs.namespace_name)
            binding = cast(ValidatingBinding, item.binding)
            values = activation(inputs, inputs.param(item.param), param_kind=policy.param_kind is not None)
            _validate_one(policy, binding, values, outcome, collected.setdefault(policy.name, {}))
        for policy_name, keys in collected.items():
            for key, values_of_key in keys.items():
                outcome.annotations[f"{policy_name}/{key}"] = ", ".join(values_of_key)
        return outcome.decision()

    def mutate(
        self,
        request: Mapping[str, Any],
        namespace: Mapping[str, Any] | None = None,
        *,
        now: datetime.datetime | None = None,
        from_json: bool = False,
    ) -> Decision:
        """Run every MutatingAdmissionPolicy on ``request`` at ``now``; the decision carries the JSON patch.
        ``from_json``: as for ``validate``."""
        inputs = self.inputs(request, namespace, now, from_json=from_json)
        candidates = self._mutating.candidates(inputs.attributes)
        found = invocations(candidates, inputs, self.store, self.cluster_scoped_kinds)
        return mutation.mutate(request, inputs, found)

    def admit(
        self,
        request: Mapping[str, Any],
        namespace: Mapping[str, Any] | None = None,
        *,
        now: datetime.datetime | None = None,
    ) -> Admission:
        """Run ``request`` through mutation, then validation of the patched object, as the apiserver does, at the
        request time ``now`` (default: the current time).

        A denial by a mutating policy ends the request there (the validating policies do not run).
        """
        mutated = self.mutate(request, namespace, now=now)
        if not mutated.allowed:
            return Admission(mutated, mutated, request.get("object"))
        patched = request.get("object")
        if mutated.patch:
            patched = jsonpatch.apply_patch(copy.deepcopy(patched), list(mutated.patch))
        validated = self.validate({**request, "object": patched}, namespace, now=now)
        return Admission(mutated, validated, patched)


def _name(binding: Binding | None) -> str | None:
    return binding.name if binding is not None else None


def _validate_one(
    policy: ValidatingPolicy,
    binding: ValidatingBinding,
    values: Activation,
    outcome: _Outcome,
    collected: dict[str, list[str]],
) -> None:
    """One (policy, binding, param) tuple, ``validator.Validate`` then the dispatcher's actions."""
    fail = policy.failure_policy == FAIL
    matched = match_conditions(policy.match_conditions, values)
    if matched is False:
        return
    if isinstance(matched, str):
        if fail:
            _apply_actions(policy, binding, _Failure(0, matched, errored=True), outcome)
        return
    bind_variables(values, policy.variables)
    known = _known_results(policy, values)
    for index, validation in enumerate(policy.validations):
        failure = _validation_failure(index, validation, values, known[index], fail=fail)
        if failure is not None:
            _apply_actions(policy, binding, failure, outcome)
    _audit_annotations(policy, binding, values, outcome, collected, fail=fail)


def _known_results(policy: ValidatingPolicy, values: Activation) -> Sequence[bool | None]:
    """Each validation's boolean result from one evaluation of ``policy.all_validations``; ``None`` for one to
    evaluate on its own: a result that is no boolean, or every one if the list ended in an error (which the
    validations' own evaluations word and attribute as the apiserver does)."""
    found = evaluate_together(policy.all_validations, values)
    if found is None:
        return (None,) * len(policy.validations)
    return [result if type(result) is bool else None for result in found]


def _validation_failure(
    index: int, validation: Validation, values: Activation, known: bool | None, *, fail: bool
) -> _Failure | None:
    """The failure of validation ``index``, if it fails: evaluated here unless its result is ``known``."""
    if known is not None:
        return None if known else _Failure(index, _message(validation, values), validation.reason)
    value, error = evaluate(validation.expression, values)
    if error is not None:
        text = f"expression '{validation.expression.text}' resulted in error: {error}"
        return _Failure(index, text, errored=True) if fail else None
    if values.backend.to_python(value) is True:
        return None
    return _Failure(index, _message(validation, values), validation.reason)


def _message(validation: Validation, values: Activation) -> str:
    """The violation message: messageExpression (a non-empty single-line string ≤ 5 KiB, trimmed), else
    ``message``, else ``failed expression: <expression>`` (``validator.go``)."""
    message = ""
    if validation.message_expression is not None:
        value, error = evaluate(validation.message_expression, values)
        result = values.backend.to_python(value) if error is None else None
        if isinstance(result, str):
            message = result.strip()
            if len(message.encode()) > MAX_MESSAGE_BYTES or "\n" in message:
                message = ""
    if not message and validation.message:
        message = validation.message.strip()
    return message or f"failed expression: {validation.expression.text.strip()}"


def _apply_actions(policy: ValidatingPolicy, binding: ValidatingBinding, failure: _Failure, outcome: _Outcome) -> None:
    for action in binding.validation_actions:
        if action == DENY:
            outcome.denials.append(Denial(policy.name, binding.name, failure.message, failure.reason, failure.errored))
        elif action == WARN:
            outcome.warnings.append(PolicyWarning(policy.name, binding.name, failure.message))
        elif action == AUDIT:
            # Attributes.AddAnnotation keeps the first value of a key: the first Audit failure is published.
            outcome.annotations.setdefault(
                VALIDATION_FAILURE_ANNOTATION,
                json.dumps(
                    [
                        {
                            "message": failure.message,
                            "policy": binding.policy_name,
                            "binding": binding.name,
                            "expressionIndex": failure.index,
                            "validationActions": list(binding.validation_actions),
                        }
                    ],
                    separators=(",", ":"),
                ),
            )


def _audit_annotations(
    policy: ValidatingPolicy,
    binding: ValidatingBinding,
    values: Activation,
    outcome: _Outcome,
    collected: dict[str, list[str]],
    *,
    fail: bool,
) -> None:
    """Evaluate the auditAnnotations: a non-empty string is published (trimmed, cut at 10 KiB; equal values
    of several bindings once, different ones joined with ``", "``), null or blank is omitted, any other
    result or an error denies under failurePolicy Fail and is dropped under Ignore."""
    for annotation in policy.audit_annotations:
        text = annotation.value_expression.text
        value, error = evaluate(annotation.value_expression, values)
        result = values.backend.to_python(value) if error is None else None
        if error is None and result is not None and not isinstance(result, str):
            error = (
                f"valueExpression '{text}' resulted in unsupported return type: {_cel_type(result)}. "
                "Return type must be either string or null."
            )
        elif error is not None:
            error = f"expression '{text}' resulted in error: {error}"
        if error is not None:
            if fail:  # the apiserver's text, recorded: no further wrapping (tests/data/oracle/decisions.yaml)
                outcome.denials.append(Denial(policy.name, binding.name, error, errored=True))
            continue
        published = result.strip() if isinstance(result, str) else ""
        if published:
            published = published.encode()[:MAX_AUDIT_VALUE_BYTES].decode(errors="ignore")
            values_of_key = collected.setdefault(annotation.key, [])
            if published not in values_of_key:
                values_of_key.append(published)


def _cel_type(value: object) -> str:
    """The CEL type name of a plain Python result."""
    names = {bool: "bool", int: "int", float: "double", list: "list", dict: "map", bytes: "bytes"}
    return names.get(type(value), type(value).__name__)
