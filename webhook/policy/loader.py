"""Load a policy set: admission policies, their bindings and param objects, validated and compiled.

Input: multi-document YAML/JSON files or directories (``load_policy_set``) or text (``load_policy_text``).
Documents of the kinds ``ValidatingAdmissionPolicy``/``...Binding`` (``admissionregistration.k8s.io/v1``,
``v1beta1``) and ``MutatingAdmissionPolicy``/``...Binding`` (``v1``, ``v1beta1``, ``v1alpha1``) become the
model of ``webhook.policy.model``; any other object (ConfigMap, custom resource) is a param object.

Validation is the apiserver's on create (kubernetes ``pkg/apis/admissionregistration/validation/
validation.go``) after its defaulting (``pkg/apis/admissionregistration/v1/defaults.go``), with the same
``field.Error`` wording, plus strict decoding (unknown or repeated fields) and every CEL expression compiled
in the environment its field gets at run time. Deliberate differences, all stricter:
``reason: Unauthorized`` is refused as upstream's validation does (the API docs list it);
``auditAnnotations`` may not use ``authorizer`` (the apiserver accepts it, then fails at run time).

All problems of the whole set are collected, then one ``PolicyLoadError`` lists them, one per line:
``<file>:<line>:<column>: document <n> (<Kind>/<name>): <field path>: <detail>``. A set loads whole or not.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from webhook.errors import InputError, PolicyLoadError
from webhook.objects import LabelSelector
from webhook.policy import apivalidation as api
from webhook.policy import model
from webhook.policy.documents import (
    Document,
    MarkedList,
    MarkedMap,
    Position,
    Source,
    plain,
    read_documents,
    read_paths,
    read_text,
)
from webhook.policy.fields import At, Compiler, FieldReader
from webhook.policy.initializers import rewrite_initializers
from webhook.settings import DEFAULT_CEL_ENGINE

GROUP = "admissionregistration.k8s.io"
VAP, VAPB = "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"
MAP, MAPB = "MutatingAdmissionPolicy", "MutatingAdmissionPolicyBinding"
_VERSIONS = {
    VAP: ("v1", "v1beta1"),
    VAPB: ("v1", "v1beta1"),
    MAP: ("v1", "v1beta1", "v1alpha1"),
    MAPB: ("v1", "v1beta1", "v1alpha1"),
}
_OPERATIONS = ("*", "CONNECT", "CREATE", "DELETE", "UPDATE")
_MUTATING_OPERATIONS = ("*", "CONNECT", "CREATE", "UPDATE")
_REASONS = ("Forbidden", "Invalid", "RequestEntityTooLarge")
_MAX_MATCH_CONDITIONS = 64
_MAX_AUDIT_ANNOTATIONS = 20
_MAX_VALUE_EXPRESSION_LENGTH = 5 * 1024

#: Top-level CEL names per field (``k8s.io/apiserver/pkg/admission/plugin/cel/compile.go``); ``params`` is
#: added when the policy has a paramKind.
_REQUEST_VARIABLES = frozenset({"object", "oldObject", "request", "namespaceObject"})
MATCH_CONDITION_VARIABLES = _REQUEST_VARIABLES | {"authorizer"}
EXPRESSION_VARIABLES = MATCH_CONDITION_VARIABLES | {"variables"}
MESSAGE_VARIABLES = _REQUEST_VARIABLES | {"variables"}

_TOP = frozenset({"apiVersion", "kind", "metadata", "spec", "status"})
_MATCH_RESOURCES = frozenset(
    {"namespaceSelector", "objectSelector", "resourceRules", "excludeResourceRules", "matchPolicy"}
)
_RULE = frozenset({"operations", "apiGroups", "apiVersions", "resources", "scope", "resourceNames"})
_SELECTOR = frozenset({"matchLabels", "matchExpressions"})


#: Result types the apiserver requires (``validation.go``: validations and matchConditions bool,
#: messageExpression string, auditAnnotations valueExpression string or null).
_BOOL = ("bool",)
_STRING = ("string",)


@functools.cache
def _compiler(engine: str) -> Compiler:
    """The CEL compiler of ``webhook.policy.cel`` on the backend ``engine``, one per process (environments built on
    demand, programs kept for the next load)."""
    from webhook.policy.compiling import CelCompiler  # noqa: PLC0415 - keeps the CEL engines out of import time

    try:
        return CelCompiler(engine)
    except ValueError as err:
        raise InputError(str(err)) from None


def load_policy_set(paths: Iterable[str | Path], *, engine: str = DEFAULT_CEL_ENGINE) -> model.PolicySet:
    """Load every document of the files and directories ``paths`` as one set, compiled for the CEL backend
    ``engine`` (``webhook.settings.CEL_ENGINES``). Raises ``PolicyLoadError``; ``InputError`` for an unknown engine."""
    return _build(read_paths(paths), engine)


def load_policy_text(text: str, *, file: str = "<string>", engine: str = DEFAULT_CEL_ENGINE) -> model.PolicySet:
    """Load the documents of ``text`` (named ``file`` in messages) as one set, as ``load_policy_set``."""
    return _build(read_text(text, file), engine)


def load_policy_sources(sources: Iterable[Source], *, engine: str = DEFAULT_CEL_ENGINE) -> model.PolicySet:
    """Load the documents of ``sources`` (file name, text) as one set, as ``load_policy_set`` loads the files."""
    return _build(read_documents(sources), engine)


def _build(documents: list[Document], engine: str) -> model.PolicySet:
    compiler = _compiler(engine)
    problems: list[str] = []
    found: dict[str, list[Any]] = {VAP: [], VAPB: [], MAP: [], MAPB: [], "": []}
    seen: dict[tuple[str, ...], Document] = {}
    for document in documents:
        reader = FieldReader(document, compiler)
        read = _read_document(reader)
        if read is not None:
            kind, identity, value = read
            if identity in seen:
                place = At("metadata.name", document.content["metadata"].at("name"))
                reader.fail(place, api.duplicate(identity[-1]) + f" (also in {_where(seen[identity])})")
            seen[identity] = document
            found[kind].append(value)
        problems.extend(reader.report())
    if problems:
        count = f"{len(problems)} problem{'s' if len(problems) > 1 else ''}"
        raise PolicyLoadError(f"the policy set does not load ({count}):\n" + "\n".join(problems), tuple(problems))
    return model.PolicySet(
        validating_policies=tuple(found[VAP]),
        validating_bindings=tuple(found[VAPB]),
        mutating_policies=tuple(found[MAP]),
        mutating_bindings=tuple(found[MAPB]),
        params=tuple(found[""]),
        engine=engine,
    )


def _where(document: Document) -> str:
    return f"{document.file} document {document.index}"


_Read = tuple[str, tuple[str, ...], Any]


def _read_document(reader: FieldReader) -> _Read | None:
    """``(kind, identity, value)``; ``kind`` is ``""`` for a param object, whose value is the plain object.
    ``None`` after a problem. Two documents with one identity are the same object, given twice."""
    content = reader.document.content
    if not isinstance(content, MarkedMap):
        where = content.start if isinstance(content, MarkedList) else Position(1, 1)
        reader.fail(At("(document)", where), "must be a Kubernetes object (a mapping)")
        return None
    top = At("", content.start)
    kind = reader.string(content, top, "kind") or ""
    api_version = reader.string(content, top, "apiVersion") or ""
    metadata = reader.mapping(content.get("metadata"), reader.child(content, top, "metadata"), None)
    reader.name_object(kind or "<no kind>", metadata.get("name") if metadata else None)
    for key, given in (("apiVersion", api_version), ("kind", kind)):
        if not given:
            reader.fail(reader.child(content, top, key), api.required())
    if not kind or not api_version:
        return None
    group, _, version = api_version.rpartition("/")
    if kind not in _VERSIONS or group != GROUP:
        return _read_param(reader, content, top, api_version, kind)
    if version not in _VERSIONS[kind]:
        place = reader.child(content, top, "apiVersion")
        reader.fail(place, api.not_supported(api_version, [f"{GROUP}/{v}" for v in _VERSIONS[kind]]))
        return None
    reader.mapping(content, top, _TOP)
    before = len(reader.problems)
    name = _object_name(reader, content, top)
    spec_at = reader.child(content, top, "spec")
    spec = reader.mapping(content.get("spec"), spec_at, None) or _empty(spec_at)
    value = _READERS[kind](reader, name, spec, spec_at)
    return None if len(reader.problems) > before else (kind, (kind, name), value)


def _empty(at: At) -> MarkedMap:
    empty = MarkedMap()
    empty.start, empty.positions, empty.styles, empty.duplicates = at.position, {}, {}, []
    return empty


def _read_param(reader: FieldReader, content: MarkedMap, top: At, api_version: str, kind: str) -> _Read | None:
    metadata = content.get("metadata")
    name = metadata.get("name") if isinstance(metadata, MarkedMap) else None
    if not isinstance(name, str) or not name:
        where = metadata.at("name") if isinstance(metadata, MarkedMap) else content.at("metadata")
        reader.fail(At("metadata.name", where), api.required())
        return None
    namespace = metadata.get("namespace") if isinstance(metadata, MarkedMap) else None
    return "", (api_version, kind, str(namespace or ""), name), plain(content)


def _object_name(reader: FieldReader, content: MarkedMap, top: At) -> str:
    metadata = content.get("metadata")
    if not isinstance(metadata, MarkedMap):
        reader.fail(At("metadata.name", top.position), api.required("name or generateName is required"))
        return ""
    return reader.name(metadata, At("metadata", metadata.start), "name", api.is_dns1123_subdomain)


# --- shared pieces -----------------------------------------------------------------------------------------


def _selector(reader: FieldReader, mapping: MarkedMap, at: At, key: str) -> LabelSelector:
    place = reader.child(mapping, at, key)
    value = reader.mapping(mapping.get(key), place, _SELECTOR)
    try:
        return LabelSelector.from_dict(plain(value))
    except InputError as err:
        reader.fail(place, api.invalid(plain(value), str(err)))
        return LabelSelector()


def _one_of(reader: FieldReader, values: tuple[str, ...], at: At, what: str) -> None:
    if not values:
        reader.fail(at, api.required())
    elif len(values) > 1 and "*" in values:
        reader.fail(at, api.invalid(list(values), f"if '*' is present, must not specify other {what}"))


def _resources(reader: FieldReader, items: list[tuple[str, At]], at: At) -> None:
    """``validateResources``: wildcard resources and subresources must not overlap."""
    resources = [entry for entry, _ in items]
    if not resources:
        reader.fail(at, api.required())
    with_any_sub: set[str] = set()
    any_with_sub: set[str] = set()
    for entry, place in items:
        if not entry:
            reader.fail(place, api.required())
            continue
        resource, slash, sub = entry.partition("/")
        if not slash:
            continue
        if resource in with_any_sub:
            reader.fail(place, api.invalid(entry, f"if '{resource}/*' is present, must not specify {entry}"))
        if sub in any_with_sub:
            reader.fail(place, api.invalid(entry, f"if '*/{sub}' is present, must not specify {entry}"))
        if sub == "*":
            with_any_sub.add(resource)
        if resource == "*":
            any_with_sub.add(sub)
    if len(resources) > 1 and "*/*" in resources:
        reader.fail(at, api.invalid(resources, "if '*/*' is present, must not specify other resources"))
    if "*" in resources and any(r != "*" and "/" not in r for r in resources):
        reader.fail(
            at, api.invalid(resources, "if '*' is present, must not specify other resources without subresources")
        )


def _rule(reader: FieldReader, value: Any, at: At, operations: tuple[str, ...]) -> model.Rule | None:
    rule = reader.mapping(value, at, _RULE)
    if rule is None:
        reader.fail(at, api.required())
        return None
    names = reader.string_items(rule, at, "resourceNames")
    for index, (name, place) in enumerate(names):
        for problem in api.is_path_segment_name(name):
            reader.fail(place, api.invalid(name, problem))
        if name in [seen for seen, _ in names[:index]]:
            reader.fail(place, api.duplicate(name))
    op_items = reader.string_items(rule, at, "operations")
    ops = tuple(op for op, _ in op_items)
    _one_of(reader, ops, reader.child(rule, at, "operations"), "operations")
    for op, place in op_items:
        if op not in operations:
            reader.fail(place, api.not_supported(op, operations))
    groups = reader.strings(rule, at, "apiGroups")
    _one_of(reader, groups, reader.child(rule, at, "apiGroups"), "API groups")
    version_items = reader.string_items(rule, at, "apiVersions")
    versions = tuple(version for version, _ in version_items)
    _one_of(reader, versions, reader.child(rule, at, "apiVersions"), "API versions")
    for version, place in version_items:
        if not version:
            reader.fail(place, api.required())
    resources = reader.string_items(rule, at, "resources")
    _resources(reader, resources, reader.child(rule, at, "resources"))
    scope = reader.enum(rule, at, "scope", ("*", "Cluster", "Namespaced"), "*")
    return model.Rule(
        ops, groups, versions, tuple(resource for resource, _ in resources), scope or "*", tuple(n for n, _ in names)
    )


def _match_resources(
    reader: FieldReader, value: Any, at: At, operations: tuple[str, ...]
) -> model.MatchResources | None:
    mapping = reader.mapping(value, at, _MATCH_RESOURCES)
    if mapping is None:
        return None
    rules = {
        key: tuple(
            rule for item, place in reader.items(mapping, at, key) if (rule := _rule(reader, item, place, operations))
        )
        for key in ("resourceRules", "excludeResourceRules")
    }
    return model.MatchResources(
        resource_rules=rules["resourceRules"],
        exclude_resource_rules=rules["excludeResourceRules"],
        namespace_selector=_selector(reader, mapping, at, "namespaceSelector"),
        object_selector=_selector(reader, mapping, at, "objectSelector"),
        match_policy=reader.enum(mapping, at, "matchPolicy", (model.EQUIVALENT, model.EXACT), model.EQUIVALENT),
    )


def _match_constraints(
    reader: FieldReader, spec: MarkedMap, at: At, operations: tuple[str, ...]
) -> model.MatchResources:
    place = reader.child(spec, at, "matchConstraints")
    constraints = _match_resources(reader, spec.get("matchConstraints"), place, operations)
    if constraints is None:
        reader.fail(place, api.required())
        return model.MatchResources()
    if not constraints.resource_rules:
        reader.fail(At(f"{place.path}.resourceRules", place.position), api.required())
    return constraints


def _param_kind(reader: FieldReader, spec: MarkedMap, at: At) -> model.ParamKind | None:
    place = reader.child(spec, at, "paramKind")
    mapping = reader.mapping(spec.get("paramKind"), place, frozenset({"apiVersion", "kind"}))
    if mapping is None:
        return None
    api_version = reader.string(mapping, place, "apiVersion") or ""
    version_at = reader.child(mapping, place, "apiVersion")
    if not api_version:
        reader.fail(version_at, api.required())
    elif api_version.count("/") > 1:
        reader.fail(version_at, api.invalid(api_version, f"unexpected GroupVersion string: {api_version}"))
    else:
        group, _, version = api_version.rpartition("/")
        if group:
            for problem in api.is_dns1123_subdomain(group):
                reader.fail(version_at, api.invalid(group, problem))
        if not version:
            reader.fail(version_at, api.invalid(api_version, "version must be specified"))
        for problem in api.is_dns1035_label(version) if version else ():
            reader.fail(version_at, api.invalid(version, problem))
    kind = reader.name(
        mapping,
        place,
        "kind",
        lambda k: (
            ["may have mixed case, but should otherwise match: " + ",".join(p)]
            if (p := api.is_dns1035_label(k.lower()))
            else []
        ),
    )
    return model.ParamKind(api_version, kind)


def _param_ref(reader: FieldReader, spec: MarkedMap, at: At) -> model.ParamRef | None:
    """``validateParamRef``: name XOR selector, parameterNotFoundAction Allow|Deny (default Deny)."""
    place = reader.child(spec, at, "paramRef")
    fields = frozenset({"name", "namespace", "selector", "parameterNotFoundAction"})
    mapping = reader.mapping(spec.get("paramRef"), place, fields)
    if mapping is None:
        return None
    name = reader.string(mapping, place, "name")
    for problem in api.is_path_segment_name(name) if name else ():
        reader.fail(reader.child(mapping, place, "name"), api.invalid(name, problem))
    selector = _selector(reader, mapping, place, "selector") if mapping.get("selector") is not None else None
    if name and selector is not None:
        for key in ("name", "selector"):
            reader.fail(reader.child(mapping, place, key), api.forbidden("name and selector are mutually exclusive"))
    if not name and selector is None:
        reader.fail(place, api.required("one of name or selector must be specified"))
    action = reader.enum(mapping, place, "parameterNotFoundAction", (model.DENY, model.ALLOW), model.DENY)
    return model.ParamRef(name or None, selector, reader.string(mapping, place, "namespace") or None, action)


def _match_conditions(reader: FieldReader, spec: MarkedMap, at: At, variables: frozenset[str]) -> tuple[Any, ...]:
    place = reader.child(spec, at, "matchConditions")
    conditions, seen = [], set()
    for item, item_at in reader.items(spec, at, "matchConditions"):
        mapping = reader.mapping(item, item_at, frozenset({"name", "expression"}))
        if mapping is None:
            continue
        name = reader.name(mapping, item_at, "name", api.is_qualified_name)
        if name in seen:
            reader.fail(reader.child(mapping, item_at, "name"), api.duplicate(name))
        seen.add(name)
        expression = reader.expression(mapping, item_at, "expression", variables, result=_BOOL)
        if expression is not None:
            conditions.append(model.MatchCondition(name, expression))
    if len(seen) > _MAX_MATCH_CONDITIONS or len(conditions) > _MAX_MATCH_CONDITIONS:
        reader.fail(place, api.too_many(len(spec["matchConditions"]), _MAX_MATCH_CONDITIONS))
    return tuple(conditions)


def _variables(reader: FieldReader, spec: MarkedMap, at: At, variables: frozenset[str]) -> tuple[model.Variable, ...]:
    found: list[model.Variable] = []
    names: list[str] = []
    for item, item_at in reader.items(spec, at, "variables"):
        mapping = reader.mapping(item, item_at, frozenset({"name", "expression"}))
        if mapping is None:
            continue
        name = reader.string(mapping, item_at, "name") or ""
        name_at = reader.child(mapping, item_at, "name")
        if not name.strip():
            reader.fail(name_at, api.required("name is not specified"))
        elif not api.is_cel_identifier(name):
            reader.fail(name_at, api.invalid(name, "name is not a valid CEL identifier"))
        elif name in names:
            reader.fail(name_at, api.duplicate(name))
        expression = reader.expression(
            mapping, item_at, "expression", variables, names, missing="expression is not specified"
        )
        names.append(name)
        if expression is not None:
            found.append(model.Variable(name, expression))
    return tuple(found)


def _policy_variables(param_kind: model.ParamKind | None, names: frozenset[str]) -> frozenset[str]:
    return names | {"params"} if param_kind is not None else names


# --- ValidatingAdmissionPolicy and binding --------------------------------------------------------------


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


def _validating_policy(reader: FieldReader, name: str, spec: MarkedMap, at: At) -> model.ValidatingPolicy:
    reader.mapping(spec, at, _VAP_SPEC)
    param_kind = _param_kind(reader, spec, at)
    variables = tuple(_variables(reader, spec, at, _policy_variables(param_kind, EXPRESSION_VARIABLES)))
    defined = [v.name for v in variables]
    validations = []
    for item, item_at in reader.items(spec, at, "validations"):
        validation = _validation(reader, item, item_at, param_kind, defined)
        if validation is not None:
            validations.append(validation)
    annotations = _audit_annotations(reader, policy=name, spec=spec, at=at, param_kind=param_kind, defined=defined)
    if not spec.get("validations") and not spec.get("auditAnnotations"):
        for key in ("validations", "auditAnnotations"):
            reader.fail(
                reader.child(spec, at, key),
                api.required("validations or auditAnnotations must contain at least one item"),
            )
    return model.ValidatingPolicy(
        name=name,
        match_constraints=_match_constraints(reader, spec, at, _OPERATIONS),
        validations=tuple(validations),
        audit_annotations=annotations,
        match_conditions=_match_conditions(reader, spec, at, _policy_variables(param_kind, MATCH_CONDITION_VARIABLES)),
        variables=variables,
        param_kind=param_kind,
        failure_policy=reader.enum(spec, at, "failurePolicy", (model.FAIL, model.IGNORE), model.FAIL),
    )


def _validation(
    reader: FieldReader, item: Any, at: At, param_kind: model.ParamKind | None, defined: list[str]
) -> model.Validation | None:
    mapping = reader.mapping(item, at, frozenset({"expression", "message", "messageExpression", "reason"}))
    if mapping is None:
        return None
    expression = reader.expression(
        mapping,
        at,
        "expression",
        _policy_variables(param_kind, EXPRESSION_VARIABLES),
        defined,
        missing="expression is not specified",
        result=_BOOL,
    )
    message_expression = None
    raw = reader.string(mapping, at, "messageExpression")
    if raw is not None and not raw.strip():
        reader.fail(reader.child(mapping, at, "messageExpression"), api.invalid(raw, "must be non-empty if specified"))
    elif raw is not None:
        variables = _policy_variables(param_kind, MESSAGE_VARIABLES)
        message_expression = reader.expression(mapping, at, "messageExpression", variables, defined, result=_STRING)
    message = reader.string(mapping, at, "message")
    if message is not None and not message.strip():
        reader.fail(
            reader.child(mapping, at, "message"), api.invalid(message, "message must be non-empty if specified")
        )
    elif message is not None and ("\n" in message.strip() or "\r" in message.strip()):
        reader.fail(reader.child(mapping, at, "message"), api.invalid(message, "message must not contain line breaks"))
    reason = reader.enum(mapping, at, "reason", _REASONS, "Invalid")
    if expression is None:
        return None
    return model.Validation(expression, message or None, message_expression, reason or "Invalid")


def _audit_annotations(
    reader: FieldReader,
    *,
    policy: str,
    spec: MarkedMap,
    at: At,
    param_kind: model.ParamKind | None,
    defined: list[str],
) -> tuple[model.AuditAnnotation, ...]:
    found, keys = [], set()
    items = list(reader.items(spec, at, "auditAnnotations"))
    if len(items) > _MAX_AUDIT_ANNOTATIONS:
        reader.fail(
            reader.child(spec, at, "auditAnnotations"),
            api.invalid(len(items), f"must not have more than {_MAX_AUDIT_ANNOTATIONS} auditAnnotations"),
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
        if len(text.strip()) > _MAX_VALUE_EXPRESSION_LENGTH:
            reader.fail(
                reader.child(mapping, item_at, "valueExpression"),
                api.required(f"must not exceed {_MAX_VALUE_EXPRESSION_LENGTH} bytes in length"),
            )
            continue
        variables = _policy_variables(param_kind, MESSAGE_VARIABLES)
        value = reader.expression(
            mapping,
            item_at,
            "valueExpression",
            variables,
            defined,
            missing="valueExpression is not specified",
            result=(*_STRING, "null_type"),
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


def _binding_common(
    reader: FieldReader, spec: MarkedMap, at: At, operations: tuple[str, ...]
) -> tuple[str, model.ParamRef | None, model.MatchResources | None]:
    policy_name = reader.name(spec, at, "policyName", api.is_dns1123_subdomain)
    param_ref = _param_ref(reader, spec, at)
    match = _match_resources(reader, spec.get("matchResources"), reader.child(spec, at, "matchResources"), operations)
    return policy_name, param_ref, match


def _validating_binding(reader: FieldReader, name: str, spec: MarkedMap, at: At) -> model.ValidatingBinding:
    reader.mapping(spec, at, frozenset({"policyName", "paramRef", "matchResources", "validationActions"}))
    policy_name, param_ref, match = _binding_common(reader, spec, at, _OPERATIONS)
    actions = _validation_actions(reader, spec, at)
    return model.ValidatingBinding(name, policy_name, actions, param_ref, match)


# --- MutatingAdmissionPolicy and binding ---------------------------------------------------------------


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


def _mutating_policy(reader: FieldReader, name: str, spec: MarkedMap, at: At) -> model.MutatingPolicy:
    reader.mapping(spec, at, _MAP_SPEC)
    param_kind = _param_kind(reader, spec, at)
    variables = _variables(reader, spec, at, _policy_variables(param_kind, EXPRESSION_VARIABLES))
    defined = [v.name for v in variables]
    mutations = []
    for item, item_at in reader.items(spec, at, "mutations"):
        mutation = _mutation(reader, item, item_at, _policy_variables(param_kind, EXPRESSION_VARIABLES), defined)
        if mutation is not None:
            mutations.append(mutation)
    if not spec.get("mutations"):
        reader.fail(reader.child(spec, at, "mutations"), api.required("mutations must contain at least one item"))
    return model.MutatingPolicy(
        name=name,
        match_constraints=_match_constraints(reader, spec, at, _MUTATING_OPERATIONS),
        mutations=tuple(mutations),
        reinvocation_policy=reader.enum(spec, at, "reinvocationPolicy", ("IfNeeded", "Never"), None),
        match_conditions=_match_conditions(reader, spec, at, _policy_variables(param_kind, MATCH_CONDITION_VARIABLES)),
        variables=variables,
        param_kind=param_kind,
        failure_policy=reader.enum(spec, at, "failurePolicy", (model.FAIL, model.IGNORE), model.FAIL),
    )


def _mutation(
    reader: FieldReader, item: Any, at: At, variables: frozenset[str], defined: list[str]
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
    expression = reader.expression(body, field_at, "expression", variables, defined, rewrite=rewrite_initializers)
    return model.Mutation(patch_type, expression) if expression is not None else None


def _mutating_binding(reader: FieldReader, name: str, spec: MarkedMap, at: At) -> model.MutatingBinding:
    reader.mapping(spec, at, frozenset({"policyName", "paramRef", "matchResources"}))
    policy_name, param_ref, match = _binding_common(reader, spec, at, _MUTATING_OPERATIONS)
    return model.MutatingBinding(name, policy_name, param_ref, match)


_READERS: dict[str, Callable[[FieldReader, str, MarkedMap, At], object]] = {
    VAP: _validating_policy,
    VAPB: _validating_binding,
    MAP: _mutating_policy,
    MAPB: _mutating_binding,
}
