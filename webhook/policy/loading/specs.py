"""The pieces ValidatingAdmissionPolicies, MutatingAdmissionPolicies and their bindings share, read and
validated as the apiserver does (``pkg/apis/admissionregistration/validation/validation.go``): match constraints
and resource rules, label selectors, paramKind and paramRef, matchConditions, variables, and the binding's
common fields. Each reader records problems on its ``FieldReader`` and returns what it could read.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from webhook import apivalidation as api
from webhook.cel import Program, read_names
from webhook.errors import CelCompileError, InputError
from webhook.objects import LabelSelector
from webhook.policy import model
from webhook.policy.loading.documents import MarkedMap, plain
from webhook.policy.loading.fields import At, Compiler, FieldReader

OPERATIONS = ("*", "CONNECT", "CREATE", "DELETE", "UPDATE")
MUTATING_OPERATIONS = ("*", "CONNECT", "CREATE", "UPDATE")
REASONS = ("Forbidden", "Invalid", "RequestEntityTooLarge")
MAX_MATCH_CONDITIONS = 64
MAX_AUDIT_ANNOTATIONS = 20
MAX_VALUE_EXPRESSION_LENGTH = 5 * 1024

#: Top-level CEL names per field (``k8s.io/apiserver/pkg/admission/plugin/cel/compile.go``); ``params`` is
#: added when the policy has a paramKind.
REQUEST_VARIABLES = frozenset({"object", "oldObject", "request", "namespaceObject"})
MATCH_CONDITION_VARIABLES = REQUEST_VARIABLES | {"authorizer"}
EXPRESSION_VARIABLES = MATCH_CONDITION_VARIABLES | {"variables"}
MESSAGE_VARIABLES = REQUEST_VARIABLES | {"variables"}


MATCH_RESOURCES = frozenset(
    {"namespaceSelector", "objectSelector", "resourceRules", "excludeResourceRules", "matchPolicy"}
)
RULE = frozenset({"operations", "apiGroups", "apiVersions", "resources", "scope", "resourceNames"})
SELECTOR = frozenset({"matchLabels", "matchExpressions"})


#: Result types the apiserver requires (``validation.go``: validations and matchConditions bool,
#: messageExpression string, auditAnnotations valueExpression string or null).
BOOL = ("bool",)
STRING = ("string",)


# --- shared pieces -----------------------------------------------------------------------------------------


def read_selector(reader: FieldReader, mapping: MarkedMap, at: At, key: str) -> LabelSelector:
    place = reader.child(mapping, at, key)
    value = reader.mapping(mapping.get(key), place, SELECTOR)
    try:
        return LabelSelector.from_dict(plain(value))
    except InputError as err:
        reader.fail(place, api.invalid(plain(value), str(err)))
        return LabelSelector()


def check_one_of(reader: FieldReader, values: tuple[str, ...], at: At, what: str) -> None:
    if not values:
        reader.fail(at, api.required())
    elif len(values) > 1 and "*" in values:
        reader.fail(at, api.invalid(list(values), f"if '*' is present, must not specify other {what}"))


def read_resources(reader: FieldReader, items: list[tuple[str, At]], at: At) -> None:
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


def read_rule(reader: FieldReader, value: Any, at: At, operations: tuple[str, ...]) -> model.Rule | None:
    rule = reader.mapping(value, at, RULE)
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
    check_one_of(reader, ops, reader.child(rule, at, "operations"), "operations")
    for op, place in op_items:
        if op not in operations:
            reader.fail(place, api.not_supported(op, operations))
    groups = reader.strings(rule, at, "apiGroups")
    check_one_of(reader, groups, reader.child(rule, at, "apiGroups"), "API groups")
    version_items = reader.string_items(rule, at, "apiVersions")
    versions = tuple(version for version, _ in version_items)
    check_one_of(reader, versions, reader.child(rule, at, "apiVersions"), "API versions")
    for version, place in version_items:
        if not version:
            reader.fail(place, api.required())
    resources = reader.string_items(rule, at, "resources")
    read_resources(reader, resources, reader.child(rule, at, "resources"))
    scope = reader.enum(rule, at, "scope", ("*", "Cluster", "Namespaced"), "*")
    return model.Rule(
        ops, groups, versions, tuple(resource for resource, _ in resources), scope or "*", tuple(n for n, _ in names)
    )


def read_match_resources(
    reader: FieldReader, value: Any, at: At, operations: tuple[str, ...]
) -> model.MatchResources | None:
    mapping = reader.mapping(value, at, MATCH_RESOURCES)
    if mapping is None:
        return None
    rules = {
        key: tuple(
            rule
            for item, place in reader.items(mapping, at, key)
            if (rule := read_rule(reader, item, place, operations))
        )
        for key in ("resourceRules", "excludeResourceRules")
    }
    return model.MatchResources(
        resource_rules=rules["resourceRules"],
        exclude_resource_rules=rules["excludeResourceRules"],
        namespace_selector=read_selector(reader, mapping, at, "namespaceSelector"),
        object_selector=read_selector(reader, mapping, at, "objectSelector"),
        match_policy=reader.enum(mapping, at, "matchPolicy", (model.EQUIVALENT, model.EXACT), model.EQUIVALENT),
    )


def read_match_constraints(
    reader: FieldReader, spec: MarkedMap, at: At, operations: tuple[str, ...]
) -> model.MatchResources:
    place = reader.child(spec, at, "matchConstraints")
    constraints = read_match_resources(reader, spec.get("matchConstraints"), place, operations)
    if constraints is None:
        reader.fail(place, api.required())
        return model.MatchResources()
    if not constraints.resource_rules:
        reader.fail(At(f"{place.path}.resourceRules", place.position), api.required())
    return constraints


def read_param_kind(reader: FieldReader, spec: MarkedMap, at: At) -> model.ParamKind | None:
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


def read_param_ref(reader: FieldReader, spec: MarkedMap, at: At) -> model.ParamRef | None:
    """``validateParamRef``: name XOR selector, parameterNotFoundAction Allow|Deny (default Deny)."""
    place = reader.child(spec, at, "paramRef")
    fields = frozenset({"name", "namespace", "selector", "parameterNotFoundAction"})
    mapping = reader.mapping(spec.get("paramRef"), place, fields)
    if mapping is None:
        return None
    name = reader.string(mapping, place, "name")
    for problem in api.is_path_segment_name(name) if name else ():
        reader.fail(reader.child(mapping, place, "name"), api.invalid(name, problem))
    selector = read_selector(reader, mapping, place, "selector") if mapping.get("selector") is not None else None
    if name and selector is not None:
        for key in ("name", "selector"):
            reader.fail(reader.child(mapping, place, key), api.forbidden("name and selector are mutually exclusive"))
    if not name and selector is None:
        reader.fail(place, api.required("one of name or selector must be specified"))
    action = reader.enum(mapping, place, "parameterNotFoundAction", (model.DENY, model.ALLOW), model.DENY)
    return model.ParamRef(name or None, selector, reader.string(mapping, place, "namespace") or None, action)


def read_match_conditions(reader: FieldReader, spec: MarkedMap, at: At, variables: frozenset[str]) -> tuple[Any, ...]:
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
        expression = reader.expression(mapping, item_at, "expression", variables, result=BOOL)
        if expression is not None:
            conditions.append(model.MatchCondition(name, expression))
    if len(seen) > MAX_MATCH_CONDITIONS or len(conditions) > MAX_MATCH_CONDITIONS:
        reader.fail(place, api.too_many(len(spec["matchConditions"]), MAX_MATCH_CONDITIONS))
    return tuple(conditions)


def read_variables(
    reader: FieldReader, spec: MarkedMap, at: At, variables: frozenset[str]
) -> tuple[model.Variable, ...]:
    found: list[model.Variable] = []
    names: dict[str, Program | None] = {}
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
        names[name] = expression.program if expression is not None else None
        if expression is not None:
            found.append(model.Variable(name, expression))
    return tuple(found)


def exclusive_variables(variables: Sequence[model.Variable], expressions: Iterable[str]) -> frozenset[str]:
    """The variables whose value only one of ``expressions`` needs, read there or by variables that only it needs.

    ``expressions`` are the texts a policy evaluates on every request it admits (validations, audit annotations,
    mutations; not messages, evaluated only after their validation failed). Evaluating such a variable where it is
    read, instead of once for the whole request, costs no more on an admitted request (a denial evaluates it again
    for the message); the results agree, since lookups and the clock are fixed for a request
    (``libraries.extensions``). A backend may use that (``Backend.compile``)."""
    readers: dict[str, set[int | str]] = {variable.name: set() for variable in variables}
    for index, text in enumerate(expressions):
        for name in read_names(text):
            readers.get(name, set()).add(index)
    for variable in variables:
        for name in read_names(variable.expression.text):
            readers.get(name, set()).add(variable.name)
    exclusive: set[str] = set()
    for variable in reversed(variables):  # a variable is read only by the ones declared after it
        found = readers[variable.name]
        if len(found) == 1:
            (reader,) = found
            if isinstance(reader, int) or reader in exclusive:
                exclusive.add(variable.name)
    return frozenset(exclusive)


def all_of(
    compile_cel: Compiler,
    expressions: Sequence[model.Expression],
    variables: frozenset[str],
    defined: Mapping[str, Program | None],
) -> Program | None:
    """One program of ``expressions`` (a policy's validations, or its mutations), ``[dyn(<expression>), ...]`` of
    the texts they were compiled from, in order, with the ``defined`` variables, every one of them bound where read
    (``exclusive``), as each of these expressions was compiled (``validating``, ``mutating``); ``None`` for fewer
    than two, where the list does not compile on its own (over the length or nesting limits), or only on another
    engine than the policy's (``Program.fallback``), or where the expressions were not all compiled alike (some with
    cel-cpp's optional types, some without).

    The engine uses its results in place of the expressions' own (``engine``, ``mutation``). They are the same: CEL
    is free of side effects, a request's lookups and clock are fixed, and the list binds or reads each variable as
    each expression alone does (a variable read back through Python loses what plain values cannot hold: a uint
    becomes an int). An evaluation of the list that ends in an error, the cost limit or the comprehension cap
    (which then count the whole list) says nothing, and the expressions are evaluated one by one."""
    if len(expressions) < 2 or len({expression.program.optionals for expression in expressions}) > 1:
        return None
    text = "[" + ", ".join(f"dyn({expression.program.expression}\n)" for expression in expressions) + "]"
    definitions = {name: program for name, program in defined.items() if program is not None}
    try:
        program = compile_cel(text, variables, definitions, frozenset(definitions))
    except CelCompileError:
        return None
    return program if program.fallback is None else None


def texts(items: object, *path: str) -> list[str]:
    """The strings at ``path`` (keys) in each mapping of the list ``items``, as written in a spec (anything else
    skipped: the readers report it)."""
    found: list[str] = []
    for item in items if isinstance(items, list) else ():
        value = item
        for key in path:
            value = value.get(key) if isinstance(value, dict) else None
        if isinstance(value, str):
            found.append(value)
    return found


def policy_variables(param_kind: model.ParamKind | None, names: frozenset[str]) -> frozenset[str]:
    return names | {"params"} if param_kind is not None else names


def read_binding_common(
    reader: FieldReader, spec: MarkedMap, at: At, operations: tuple[str, ...]
) -> tuple[str, model.ParamRef | None, model.MatchResources | None]:
    policy_name = reader.name(spec, at, "policyName", api.is_dns1123_subdomain)
    param_ref = read_param_ref(reader, spec, at)
    match = read_match_resources(
        reader, spec.get("matchResources"), reader.child(spec, at, "matchResources"), operations
    )
    return policy_name, param_ref, match
