"""MutatingAdmissionPolicy: apply each invocation's mutations in order and answer with one JSON patch.

Follows ``k8s.io/apiserver/pkg/admission/plugin/policy/mutating/dispatcher.go`` and ``patch/{json_patch,
smd}.go``. The invocations are chosen up front (matching sees the object as sent); then for each
(policy, binding, param): matchConditions (false skips, an error is a policy error), then every mutation in
order on the object as the previous mutations left it (``object`` is re-read after each change):

- ``JSONPatch``: the expression returns a list of ``JSONPatch{op, path, from, value}``; it is applied as RFC
  6902. A failed ``test`` operation leaves the object unchanged without error; any other failure is an error.
- ``ApplyConfiguration``: the expression returns an ``Object{...}``; it is merged into the object the way
  server-side apply merges an apply configuration: maps merge key by key, lists whose items are maps with a
  known merge key (``MERGE_KEYS``: containers and volumes by ``name``, conditions by ``type``, ...) merge item
  by item, every other list and scalar is replaced. (Without the OpenAPI schema, ``x-kubernetes-list-type``
  and atomic-field errors of structured-merge-diff are approximated by that table.)

Typed initializers (``Object{}``, ``JSONPatch{}``) are compiled as map literals
(``webhook.policy.loading.initializers``).
An error is recorded and the next mutation still runs; errors of ``failurePolicy: Fail`` policies reject the
request (HTTP 403, ``policy '<p>' with binding '<b>' denied request: <error>``, reason ``Invalid``), those of
``Ignore`` policies are dropped. The whole request answers with one RFC 6902 patch from the object as sent to
the final object (``jsonpatch.make_patch``, given only the members that differ: ``json_patch``).

Reinvocation: a webhook is re-called by the apiserver per its own ``reinvocationPolicy``; within one call,
``IfNeeded`` policies that ran before a later invocation changed the object run once more, as the
apiserver's single policy reinvocation does.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterable, Mapping, MutableMapping, MutableSequence
from typing import Any, cast

import jsonpatch

from webhook.errors import MutationError
from webhook.policy.admitting.activation import (
    Activation,
    RequestInputs,
    activation,
    bind_variables,
    evaluate,
    evaluate_together,
    match_conditions,
)
from webhook.policy.admitting.decision import Decision, Denial
from webhook.policy.admitting.dispatch import ConfigError, Invocation
from webhook.policy.model import APPLY_CONFIGURATION, FAIL, TYPE_KEY, MutatingPolicy, Mutation, Policy

#: Merge keys of well-known list fields (``patchMergeKey`` / ``x-kubernetes-list-map-keys``), by field name.
MERGE_KEYS: Mapping[str, tuple[str, ...]] = {
    "containers": ("name",),
    "initContainers": ("name",),
    "ephemeralContainers": ("name",),
    "env": ("name",),
    "volumes": ("name",),
    "volumeMounts": ("mountPath",),
    "ports": ("containerPort", "protocol"),
    "imagePullSecrets": ("name",),
    "conditions": ("type",),
    "hostAliases": ("ip",),
    "topologySpreadConstraints": ("topologyKey", "whenUnsatisfiable"),
}


def mutate(request: Mapping[str, Any], inputs: RequestInputs, found: Iterable[Invocation | ConfigError]) -> Decision:
    """The ``Decision`` of the mutating policies for ``request`` (see the module docstring)."""
    selected = list(found)
    original = request.get("object")
    state = _State(original, inputs)  # never changed in place: merges copy what they change, patches copy all
    ran_if_needed: list[int] = []
    last_change = -1
    for position, item in enumerate(selected):
        if isinstance(item, ConfigError):
            state.error(item.policy, item.binding.name if item.binding else None, item.message, "")
            continue
        if inputs.namespace_name and inputs.namespace is None:
            return Decision.namespace_not_found(inputs.namespace_name)
        if state.run(item):
            last_change = position
        if cast(MutatingPolicy, item.policy).reinvocation_policy == "IfNeeded":
            ran_if_needed.append(position)
    for position in ran_if_needed:
        if position < last_change:
            state.run(cast(Invocation, selected[position]))
    if state.errors:
        return Decision.denied(state.errors)
    if original is None or state.object == original:
        return Decision()
    return Decision(patch=tuple(json_patch(original, state.object)))


def json_patch(source: Any, target: Any) -> list[dict[str, Any]]:
    """``jsonpatch.make_patch(source, target).patch``, the same operations in the same order, without walking the
    object members the two have in common (``managedFields``, most of ``metadata`` and ``spec``): jsonpatch
    compares every member in Python, where equal members need one comparison in C. Where only object members
    differ (no list compared, no member both removed and added: the usual patch of a mutation) the operations are
    written here (``_member_operations``); jsonpatch makes the others."""
    operations: list[dict[str, Any]] = []
    if type(source) is dict and type(target) is dict and _member_operations(source, target, "", operations):
        kinds = {operation["op"] for operation in operations}
        if not {"add", "remove"} <= kinds:
            return operations
    return list(jsonpatch.make_patch(*_differing(source, target)).patch)


def _member_operations(source: dict[Any, Any], target: dict[Any, Any], path: str, found: list[dict[str, Any]]) -> bool:
    """Append to ``found`` jsonpatch's operations from the object ``source`` to ``target`` at ``path``, in its order
    (``DiffBuilder._compare_dicts``: the removed members, the added ones, then the differing members in the
    source's order, object within object; other values replaced); False, with ``found`` unfinished, where jsonpatch
    must decide: two lists to compare, or a member name that is not a string. Values are copied, as jsonpatch's.
    Without both a ``remove`` and an ``add`` these are the operations jsonpatch gives: it turns only a removed and
    an added member of equal values into a ``move``, and only a ``remove`` and an ``add`` into a ``replace``."""
    if not all(type(key) is str for key in source) or not all(type(key) is str for key in target):
        return False
    for key in source:
        if key not in target:
            found.append({"op": "remove", "path": _pointer(path, key)})
    for key, value in target.items():
        if key not in source:
            found.append({"op": "add", "path": _pointer(path, key), "value": _json_copy(value)})
    for key, value in source.items():
        if key not in target or _same_json(value, other := target[key]):
            continue
        if isinstance(value, MutableMapping) and isinstance(other, MutableMapping):
            if not (type(value) is dict and type(other) is dict):
                return False
            if not _member_operations(value, other, _pointer(path, key), found):
                return False
        elif isinstance(value, MutableSequence) and isinstance(other, MutableSequence):
            return False
        else:
            found.append({"op": "replace", "path": _pointer(path, key), "value": _json_copy(other)})
    return True


def _pointer(path: str, key: str) -> str:
    """``path`` (a JSON pointer) to its member ``key`` (RFC 6901 escapes)."""
    return f"{path}/{key.replace('~', '~0').replace('/', '~1')}"


def _json_copy(value: Any) -> Any:
    """``value`` deeply copied, as jsonpatch copies the values of its operations (strings and numbers need not)."""
    return value if value is None or type(value) in (str, int, float, bool) else copy.deepcopy(value)


def _differing(source: Any, target: Any) -> tuple[Any, Any]:
    """``source`` and ``target`` without the object members they share unchanged, object within object. jsonpatch
    finds no operation for such a member and pairs a move only between a removed and an added member, so its
    patch of the two is the patch of the whole. List items are kept (their indices are part of the patch)."""
    if not (isinstance(source, dict) and isinstance(target, dict)):
        return source, target
    kept_source, kept_target = {}, {}
    for key, value in source.items():
        if key not in target:
            kept_source[key] = value
        elif not _same_json(value, target[key]):
            kept_source[key], kept_target[key] = _differing(value, target[key])
    for key, value in target.items():
        if key not in source:
            kept_target[key] = value
    ordered = {key: kept_target[key] for key in target if key in kept_target}  # the target's member order
    return kept_source, ordered


def _same_json(first: Any, second: Any) -> bool:
    """Equal as JSON: Python's ``==`` takes ``1``, ``1.0`` and ``true`` for one another, JSON (and jsonpatch) not."""
    return first is second or (first == second and json.dumps(first) == json.dumps(second))


class _State:
    """The object as mutated so far (and its CEL value for the next activation), and the errors kept."""

    def __init__(self, obj: Any, inputs: RequestInputs) -> None:
        self.object = obj
        self.inputs = inputs
        self.errors: list[Denial] = []  # a rejected invocation: ``generic.PolicyError``

    def error(self, policy: Policy, binding: str | None, message: str, reason: str) -> None:
        """Keep an error of a ``failurePolicy: Fail`` policy; drop one of an ``Ignore`` policy."""
        if policy.failure_policy == FAIL:
            self.errors.append(Denial(policy.name, binding, message, reason, errored=True, mutating=True))

    def run(self, invocation: Invocation) -> bool:
        """Run one invocation's mutations; True if the object changed."""
        policy = cast(MutatingPolicy, invocation.policy)
        binding = invocation.binding.name
        param_kind = policy.param_kind is not None
        values = activation(self.inputs, self.inputs.param(invocation.param), param_kind=param_kind)
        matched = match_conditions(policy.match_conditions, values)
        if matched is False:
            return False
        if isinstance(matched, str):
            self.error(policy, binding, matched, "Invalid")
            return False
        before = self.object
        bind_variables(values, policy.variables)
        known = evaluate_together(policy.all_mutations, values) if self.object is not None else None
        for index, mutation in enumerate(policy.mutations):
            if self.object is None:  # nothing to patch (the apiserver skips patchers then)
                continue
            try:
                changed = _apply(mutation, self.object, values, known[index] if known is not None else _UNKNOWN)
            except MutationError as err:
                self.error(policy, binding, str(err), "Invalid")
                continue
            if changed != self.object:
                self.object = changed
                # JSON values (the request's, merged with or patched by plain results): nothing to check
                self.inputs.cel["object"] = values["object"] = values.backend.from_json(changed)
                bind_variables(values, policy.variables)  # each patcher composes variables anew
                known = None  # the results evaluated together were of the object before this change
        return bool(self.object != before)


_UNKNOWN = object()


def _apply(mutation: Mutation, obj: Any, values: Activation, known: object = _UNKNOWN) -> Any:
    """The object after one mutation, whose result is ``known`` (plain Python) or evaluated here. Raises
    ``MutationError``."""
    if known is _UNKNOWN:
        result, error = evaluate(mutation.expression, values)
        if error is not None:
            raise MutationError(f"expression '{mutation.expression.text}' resulted in error: {error}")
        value = values.backend.to_python(result)
    else:
        value = known
    if mutation.patch_type == APPLY_CONFIGURATION:
        if not isinstance(value, dict):
            raise MutationError("ApplyConfiguration expression must evaluate to an Object")
        return merge(obj, typed(value, "Object"))
    return apply_json_patch(obj, typed(value, None))


def typed(value: Any, expected: str | None) -> Any:
    """``value`` without the initializers' type names (``model.TYPE_KEY``), each checked against the field
    path from the root ``Object`` (``expected``; ``None``: not checked, as in a JSON patch value). Raises
    ``MutationError`` with the apiserver's text for a name that is not its field's."""
    if isinstance(value, list):
        return [typed(item, expected) for item in value]
    if not isinstance(value, dict):
        return value
    name = value.get(TYPE_KEY)
    if name is not None and expected is not None and name != expected:
        raise MutationError(
            f'type mismatch: unexpected type name "{name}", expected "{expected}", which matches field name path '
            "from root Object type"
        )
    return {
        key: typed(item, f"{expected}.{key}" if expected is not None else None)
        for key, item in value.items()
        if key != TYPE_KEY
    }


def apply_json_patch(obj: Any, operations: Any) -> Any:
    """``obj`` after the RFC 6902 ``operations`` (a list of op objects); unchanged if a ``test`` fails.
    Raises ``MutationError`` for a malformed patch or an operation that does not apply.

    ``obj`` is never changed: each operation is applied in place to a document whose containers on the
    operation's paths are fresh copies (``_copy_path``), so what no operation touches stays shared with ``obj``
    (and is found unchanged by identity when the final patch is made)."""
    if not isinstance(operations, list) or not all(isinstance(op, dict) for op in operations):
        raise MutationError("JSONPatch expression must evaluate to a list of JSONPatch")
    if not operations:  # the usual answer of a conditional mutation
        return obj
    document = _shallow_copy(obj)
    try:
        for operation in operations:
            if _member_change(document, operation):
                continue
            step = _operation(operation)
            document = _copy_path(document, step.pointer.parts)
            if isinstance(operation.get("from"), str):
                document = _copy_path(document, jsonpatch.JsonPointer(operation["from"]).parts)
            document = step.apply(document)
    except jsonpatch.JsonPatchTestFailed:
        return obj
    except (jsonpatch.JsonPatchException, jsonpatch.JsonPointerException) as err:
        raise MutationError(f"JSON patch could not be applied: {err}") from None
    return document


def _member_change(document: Any, operation: dict[str, Any]) -> bool:
    """Apply ``operation`` to ``document`` here, as jsonpatch would, if it adds, replaces or removes a member of an
    object that exists, on a path of object members without escapes (what mutations mostly do); the containers
    on its path are copied first (``_copy_path``). False, with ``document`` unchanged, for any other operation
    (a list item, a missing member, something malformed): jsonpatch applies it, or words its error."""
    name, path = operation.get("op"), operation.get("path")
    if name not in _MEMBER_CHANGES or type(path) is not str or path[:1] != "/" or "~" in path:
        return False
    if name != "remove" and "value" not in operation:
        return False
    *parents, key = path[1:].split("/")
    parent = document
    for part in parents:
        parent = parent.get(part) if type(parent) is dict else None
    if type(parent) is not dict or (name != "add" and key not in parent):
        return False
    _copy_path(document, [*parents, key])
    parent = document
    for part in parents:
        parent = parent[part]
    if name == "remove":
        del parent[key]
    else:
        parent[key] = _json_copy(operation["value"])  # jsonpatch inserts a copy
    return True


_MEMBER_CHANGES = frozenset({"add", "replace", "remove"})


def _operation(operation: dict[str, Any]) -> jsonpatch.PatchOperation:
    """The jsonpatch operation of ``operation`` (what ``JsonPatch`` builds of each, with its checks and texts).
    Raises ``jsonpatch.InvalidJsonPatch``."""
    if "op" not in operation:
        raise jsonpatch.InvalidJsonPatch("Operation does not contain 'op' member")
    name = operation["op"]
    if not isinstance(name, str | bytes):
        raise jsonpatch.InvalidJsonPatch("Operation's op must be a string")
    kind = jsonpatch.JsonPatch.operations.get(name) if isinstance(name, str) else None
    if kind is None:
        raise jsonpatch.InvalidJsonPatch(f"Unknown operation {name!r}")
    return kind(operation)


def _shallow_copy(value: Any) -> Any:
    if isinstance(value, dict):
        return dict(value)
    return list(value) if isinstance(value, list) else value


def _copy_path(document: Any, parts: list[str]) -> Any:
    """``document`` (already a copy) with each container from it down to the parent of ``parts`` replaced by a
    shallow copy, as far as the path exists (an operation on a missing path fails in jsonpatch)."""
    container = document
    for part in parts[:-1]:
        key: str | int = part
        if isinstance(container, list):
            if not part.isdigit() or int(part) >= len(container):
                break
            key = int(part)
        elif not isinstance(container, dict) or part not in container:
            break
        copied = _shallow_copy(container[key])
        container[key] = copied
        container = copied
    return document


def merge(current: Any, applied: Any, field_name: str | None = None) -> Any:
    """``applied`` (an apply configuration) merged into ``current``, as the module docstring describes."""
    if isinstance(current, dict) and isinstance(applied, dict):
        merged = dict(current)
        for key, value in applied.items():
            merged[key] = merge(current[key], value, key) if key in current else value
        return merged
    keys = MERGE_KEYS.get(field_name or "")
    if keys and isinstance(current, list) and isinstance(applied, list) and _keyed(current + applied, keys):
        merged_list = list(current)
        for item in applied:
            key = tuple(item.get(k) for k in keys)
            index = next((i for i, old in enumerate(merged_list) if tuple(old.get(k) for k in keys) == key), None)
            if index is None:
                merged_list.append(item)
            else:
                merged_list[index] = merge(merged_list[index], item)
        return merged_list
    return applied


def _keyed(items: list[Any], keys: tuple[str, ...]) -> bool:
    return all(isinstance(item, dict) and keys[0] in item for item in items)
