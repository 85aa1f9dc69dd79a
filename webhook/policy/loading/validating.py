"""ValidatingAdmissionPolicy and ValidatingAdmissionPolicyBinding, read and validated as the apiserver does."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from webhook import apivalidation as api
from webhook.cel import Program
from webhook.policy import model
from webhook.policy.loading.documents import MarkedMap
from webhook.policy.loading.fields import At, FieldReader
from webhook.policy.loading.specs import (
    BOOL,
    EXPRESSION_VARIABLES,
    MATCH_CONDITION_VARIABLES,
    MAX_AUDIT_ANNOTATIONS,
    MAX_VALUE_EXPRESSION_LENGTH,
    MESSAGE_VARIABLES,
    OPERATIONS,
    REASONS,
    STRING,
    all_of,
    exclusive_variables,
    policy_variables,
    read_binding_common,
    read_match_conditions,
    read_match_constraints,
    read_param_kind,
    read_variables,
    texts,
)

_VAP_SPEC = frozenset(
    {
        "paramKind",
        "matchConstraints",
        "validations",
        "failurePolicy",
        "auditAnnotations",
        "matchConditions",
        "variables",
    }
)


def validating_policy(reader: FieldReader, name: str, spec: MarkedMap, at: At) -> model.ValidatingPolicy:
    reader.mapping(spec, at, _VAP_SPEC)
    param_kind = read_param_kind(reader, spec, at)
    variables = tuple(read_variables(reader, spec, at, policy_variables(param_kind, EXPRESSION_VARIABLES)))
    defined = {v.name: v.expression.program for v in variables}
    admitting = [*texts(spec.get("validations"), "expression"), *texts(spec.get("auditAnnotations"), "valueExpression")]
    scope = _Scope(param_kind, defined, exclusive_variables(variables, admitting))
    validations = []
    for item, item_at in reader.items(spec, at, "validations"):
        validation = _validation(reader, item, item_at, scope)
        if validation is not None:
            validations.append(validation)
    annotations = _audit_annotations(reader, policy=name, spec=spec, at=at, scope=scope)
    if not spec.get("validations") and not spec.get("auditAnnotations"):
        for key in ("validations", "auditAnnotations"):
            reader.fail(
                reader.child(spec, at, key),
                api.required("validations or auditAnnotations must contain at least one item"),
            )
    return model.ValidatingPolicy(
        name=name,
        match_constraints=read_match_constraints(reader, spec, at, OPERATIONS),
        validations=tuple(validations),
        audit_annotations=annotations,
        match_conditions=read_match_conditions(
            reader, spec, at, policy_variables(param_kind, MATCH_CONDITION_VARIABLES)
        ),
        variables=variables,
        param_kind=param_kind,
        failure_policy=reader.enum(spec, at, "failurePolicy", (model.FAIL, model.IGNORE), model.FAIL),
        all_validations=all_of(
            reader.compiler,
            [validation.expression for validation in validations],
            policy_variables(param_kind, EXPRESSION_VARIABLES),
            scope.defined,
        ),
    )


@dataclass(frozen=True, slots=True)
class _Scope:
    """What a policy's expressions are compiled with: its paramKind, its variables' programs (by name, in
    declaration order; ``None`` for one that failed), the ``exclusive`` ones among them (for messages and audit
    annotations) and those ``bound`` in validations: all of them, so that a validation evaluated on its own sees the
    same values as in the policy's program of all its validations (``specs.all_of``)."""

    param_kind: model.ParamKind | None
    defined: Mapping[str, Program | None]
    exclusive: frozenset[str]

    @property
    def bound(self) -> frozenset[str]:
        return frozenset(self.defined)


def _validation(reader: FieldReader, item: Any, at: At, scope: _Scope) -> model.Validation | None:
    mapping = reader.mapping(item, at, frozenset({"expression", "message", "messageExpression", "reason"}))
    if mapping is None:
        return None
    expression = reader.expression(
        mapping,
        at,
        "expression",
        policy_variables(scope.param_kind, EXPRESSION_VARIABLES),
        scope.defined,
        exclusive=scope.bound,
        missing="expression is not specified",
        result=BOOL,
    )
    message_expression = None
    raw = reader.string(mapping, at, "messageExpression")
    if raw is not None and not raw.strip():
        reader.fail(reader.child(mapping, at, "messageExpression"), api.invalid(raw, "must be non-empty if specified"))
    elif raw is not None:
        variables = policy_variables(scope.param_kind, MESSAGE_VARIABLES)
        message_expression = reader.expression(
            mapping, at, "messageExpression", variables, scope.defined, exclusive=scope.exclusive, result=STRING
        )
    message = reader.string(mapping, at, "message")
    if message is not None and not message.strip():
        reader.fail(
            reader.child(mapping, at, "message"), api.invalid(message, "message must be non-empty if specified")
        )
    elif message is not None and ("\n" in message.strip() or "\r" in message.strip()):
        reader.fail(reader.child(mapping, at, "message"), api.invalid(message, "message must not contain line breaks"))
    reason = reader.enum(mapping, at, "reason", REASONS, "Invalid")
    if expression is None:
        return None
    return model.Validation(expression, message or None, message_expression, reason or "Invalid")


def _audit_annotations(
    reader: FieldReader,
    *,
    policy: str,
    spec: MarkedMap,
    at: At,
    scope: _Scope,
) -> tuple[model.AuditAnnotation, ...]:
    found, keys = [], set()
    items = list(reader.items(spec, at, "auditAnnotations"))
    if len(items) > MAX_AUDIT_ANNOTATIONS:
        reader.fail(
            reader.child(spec, at, "auditAnnotations"),
            api.invalid(len(items), f"must not have more than {MAX_AUDIT_ANNOTATIONS} auditAnnotations"),
        )
    for item, item_at in items:
        mapping = reader.mapping(item, item_at, frozenset({"key", "valueExpression"}))
        if mapping is None:
            continue
        key = reader.string(mapping, item_at, "key") or ""
        key_at = reader.child(mapping, item_at, "key")
        for problem in api.is_qualified_name(f"{policy}/{key}") if policy else ():
            reader.fail(key_at, api.invalid(f"{policy}/{key}", problem))
        if key in keys:
            reader.fail(key_at, api.duplicate(key))
        keys.add(key)
        text = reader.string(mapping, item_at, "valueExpression") or ""
        if len(text.strip()) > MAX_VALUE_EXPRESSION_LENGTH:
            reader.fail(
                reader.child(mapping, item_at, "valueExpression"),
                api.required(f"must not exceed {MAX_VALUE_EXPRESSION_LENGTH} bytes in length"),
            )
            continue
        variables = policy_variables(scope.param_kind, MESSAGE_VARIABLES)
        value = reader.expression(
            mapping,
            item_at,
            "valueExpression",
            variables,
            scope.defined,
            exclusive=scope.exclusive,
            missing="valueExpression is not specified",
            result=(*STRING, "null_type"),
        )
        if value is not None:
            found.append(model.AuditAnnotation(key, value))
    return tuple(found)


def _validation_actions(reader: FieldReader, spec: MarkedMap, at: At) -> tuple[str, ...]:
    """``validateValidationActions``: a non-empty set of Deny|Warn|Audit, not both Deny and Warn."""
    place = reader.child(spec, at, "validationActions")
    items = reader.string_items(spec, at, "validationActions")
    actions = tuple(action for action, _ in items)
    supported = (model.AUDIT, model.DENY, model.WARN)
    for index, (action, item_at) in enumerate(items):
        if action not in supported:
            reader.fail(item_at, api.not_supported(action, supported))
        if action in actions[:index]:
            reader.fail(item_at, api.duplicate(action))
    if model.DENY in actions and model.WARN in actions:
        reader.fail(
            place,
            api.invalid(
                list(actions),
                "must not contain both Deny and Warn (repeating the same validation failure information in the "
                "API response and headers serves no purpose)",
            ),
        )
    if not actions:
        reader.fail(place, api.required("at least one validation action is required"))
    return actions


def validating_binding(reader: FieldReader, name: str, spec: MarkedMap, at: At) -> model.ValidatingBinding:
    reader.mapping(spec, at, frozenset({"policyName", "paramRef", "matchResources", "validationActions"}))
    policy_name, param_ref, match = read_binding_common(reader, spec, at, OPERATIONS)
    actions = _validation_actions(reader, spec, at)
    return model.ValidatingBinding(name, policy_name, actions, param_ref, match)
