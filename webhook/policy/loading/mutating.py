"""MutatingAdmissionPolicy and MutatingAdmissionPolicyBinding, read and validated as the apiserver does."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from webhook import apivalidation as api
from webhook.cel import Program
from webhook.policy import model
from webhook.policy.loading.documents import MarkedMap
from webhook.policy.loading.fields import At, FieldReader
from webhook.policy.loading.initializers import rewrite_initializers
from webhook.policy.loading.specs import (
    EXPRESSION_VARIABLES,
    MATCH_CONDITION_VARIABLES,
    MUTATING_OPERATIONS,
    all_of,
    policy_variables,
    read_binding_common,
    read_match_conditions,
    read_match_constraints,
    read_param_kind,
    read_variables,
)

_MAP_SPEC = frozenset(
    {
        "paramKind",
        "matchConstraints",
        "variables",
        "mutations",
        "failurePolicy",
        "matchConditions",
        "reinvocationPolicy",
    }
)
_PATCH_FIELDS = {model.APPLY_CONFIGURATION: "applyConfiguration", model.JSON_PATCH: "jsonPatch"}


def mutating_policy(reader: FieldReader, name: str, spec: MarkedMap, at: At) -> model.MutatingPolicy:
    reader.mapping(spec, at, _MAP_SPEC)
    param_kind = read_param_kind(reader, spec, at)
    variables = read_variables(reader, spec, at, policy_variables(param_kind, EXPRESSION_VARIABLES))
    defined = {v.name: v.expression.program for v in variables}
    # every variable bound where read, so that a mutation evaluated on its own sees the same values as in the
    # policy's program of all its mutations (``specs.all_of``)
    exclusive = frozenset(defined)
    mutations = []
    for item, item_at in reader.items(spec, at, "mutations"):
        names = policy_variables(param_kind, EXPRESSION_VARIABLES)
        mutation = _mutation(reader, item, item_at, names, defined=defined, exclusive=exclusive)
        if mutation is not None:
            mutations.append(mutation)
    if not spec.get("mutations"):
        reader.fail(reader.child(spec, at, "mutations"), api.required("mutations must contain at least one item"))
    return model.MutatingPolicy(
        name=name,
        match_constraints=read_match_constraints(reader, spec, at, MUTATING_OPERATIONS),
        mutations=tuple(mutations),
        reinvocation_policy=reader.enum(spec, at, "reinvocationPolicy", ("IfNeeded", "Never"), None),
        match_conditions=read_match_conditions(
            reader, spec, at, policy_variables(param_kind, MATCH_CONDITION_VARIABLES)
        ),
        variables=variables,
        param_kind=param_kind,
        failure_policy=reader.enum(spec, at, "failurePolicy", (model.FAIL, model.IGNORE), model.FAIL),
        all_mutations=all_of(
            reader.compiler,
            [mutation.expression for mutation in mutations],
            policy_variables(param_kind, EXPRESSION_VARIABLES),
            defined,
        ),
    )


def _mutation(
    reader: FieldReader,
    item: Any,
    at: At,
    variables: frozenset[str],
    *,
    defined: Mapping[str, Program | None],
    exclusive: frozenset[str],
) -> model.Mutation | None:
    mapping = reader.mapping(item, at, frozenset({"patchType", *_PATCH_FIELDS.values()}))
    if mapping is None:
        return None
    patch_type = reader.enum(mapping, at, "patchType", tuple(_PATCH_FIELDS), None)
    for other_type, other_field in _PATCH_FIELDS.items():
        if other_type != patch_type and mapping.get(other_field) is not None:
            reader.fail(
                reader.child(mapping, at, other_field),
                api.forbidden(f"must not be specified when patchType is {patch_type or 'unset'}"),
            )
    if not patch_type:
        return None
    field_at = reader.child(mapping, at, _PATCH_FIELDS[patch_type])
    body = reader.mapping(mapping.get(_PATCH_FIELDS[patch_type]), field_at, frozenset({"expression"}))
    if body is None:
        reader.fail(field_at, api.required(f"must be specified when patchType is {patch_type}"))
        return None
    expression = reader.expression(
        body, field_at, "expression", variables, defined, exclusive=exclusive, rewrite=rewrite_initializers
    )
    return model.Mutation(patch_type, expression) if expression is not None else None


def mutating_binding(reader: FieldReader, name: str, spec: MarkedMap, at: At) -> model.MutatingBinding:
    reader.mapping(spec, at, frozenset({"policyName", "paramRef", "matchResources"}))
    policy_name, param_ref, match = read_binding_common(reader, spec, at, MUTATING_OPERATIONS)
    return model.MutatingBinding(name, policy_name, param_ref, match)
