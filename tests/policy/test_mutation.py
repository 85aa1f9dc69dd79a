"""MutatingAdmissionPolicy decisions and patches, data-driven (cases in tests/data/policy/mutation.yaml), on both
CEL backends."""

from __future__ import annotations

import copy
import random
import re
from typing import Any

import jsonpatch
import pytest

from tests import tables
from tests.policy.test_engine import engine_for
from webhook.errors import MutationError
from webhook.policy.admitting.mutation import apply_json_patch, json_patch, merge, typed
from webhook.policy.loading.initializers import rewrite_initializers
from webhook.settings import CEL_ENGINES

DATA = tables.load("policy/mutation.yaml")


@pytest.mark.parametrize("cel_engine", CEL_ENGINES)
@pytest.mark.parametrize("case", DATA["cases"], ids=[c["why"] for c in DATA["cases"]])
def test_mutating_decision(case: dict[str, Any], cel_engine: str) -> None:
    decision = engine_for(case, cel_engine).mutate(case["request"], case.get("namespace"))
    want = case["want"]
    if want["allowed"]:
        assert (decision.allowed, decision.message) == (True, "")
        patch = [dict(op) for op in decision.patch]
        assert sorted(patch, key=lambda op: op["path"]) == sorted(want["patch"], key=lambda op: op["path"])
        patched = jsonpatch.apply_patch(case["request"]["object"], patch)
        assert patched != case["request"]["object"] or not patch
    else:
        assert (decision.allowed, decision.code, decision.reason, decision.message) == (
            False,
            want["code"],
            want["reason"],
            want["message"],
        )
        assert decision.patch == ()


@pytest.mark.parametrize("cel_engine", CEL_ENGINES)
@pytest.mark.parametrize("case", DATA["cases"], ids=[c["why"] for c in DATA["cases"]])
def test_mutating_leaves_the_request_as_it_was(case: dict[str, Any], cel_engine: str) -> None:
    request = copy.deepcopy(case["request"])
    engine_for(case, cel_engine).mutate(request, case.get("namespace"))
    assert request == case["request"]


@pytest.mark.parametrize(
    ("written", "compiled"),
    [
        pytest.param(
            "Object{spec: Object.spec{replicas: 1}}",
            '{"@type": dyn("Object"), "spec": dyn( {"@type": dyn("Object.spec"), "replicas": dyn( 1)})}',
            id="nested Object initializers become map literals carrying their type names",
        ),
        pytest.param(
            '[JSONPatch{op: "add", path: "/a", value: {"k": x ? [1, 2] : y}}]',
            '[{"op": dyn( "add"), "path": dyn( "/a"), "value": dyn( {"k": x ? [1, 2] : y})}]',
            id="only the initializer's own fields are quoted and wrapped in dyn",
        ),
        pytest.param(
            "x.Object{a: 1} + 'Object{b: 2}'",
            "x.Object{a: 1} + 'Object{b: 2}'",
            id="member selections and string literals are left alone",
        ),
    ],
)
def test_typed_initializers_are_rewritten_to_map_literals(written: str, compiled: str) -> None:
    assert rewrite_initializers(written).text == compiled


def test_a_rewrite_maps_positions_back_to_what_was_written() -> None:
    rewritten = rewrite_initializers('[JSONPatch{op: "add", path: "/x", value: }]')
    assert rewritten.original(1, rewritten.text.index("}") + 1) == (1, 42)


def test_merge_without_merge_key_replaces_lists_and_merges_maps() -> None:
    current = {"spec": {"args": ["a"], "conditions": [{"type": "Ready", "status": "False", "reason": "x"}]}}
    applied = {"spec": {"args": ["b"], "conditions": [{"type": "Ready", "status": "True"}]}}
    assert merge(current, applied) == {
        "spec": {"args": ["b"], "conditions": [{"type": "Ready", "status": "True", "reason": "x"}]}
    }


def test_an_initializer_of_another_field_path_is_a_type_mismatch() -> None:
    applied = {"@type": "Object", "spec": {"@type": "Object.spec.containers.item", "x": 1}}
    with pytest.raises(
        MutationError, match=re.escape('unexpected type name "Object.spec.containers.item", expected "Object.spec"')
    ):
        typed(applied, "Object")


def test_type_names_are_dropped_once_checked() -> None:
    applied = {"@type": "Object", "spec": {"@type": "Object.spec", "items": [{"@type": "Object.spec.items", "a": 1}]}}
    assert typed(applied, "Object") == {"spec": {"items": [{"a": 1}]}}


MANAGED = {"managedFields": [{"manager": "kubectl", "fieldsV1": {"f:spec": {"f:replicas": {}}}}], "uid": "u"}


@pytest.mark.parametrize(
    ("source", "target"),
    [
        pytest.param({"metadata": MANAGED, "spec": {"a": 1}}, {"metadata": MANAGED, "spec": {"a": 2}}, id="a change"),
        pytest.param({"spec": {"a": 1}}, {"spec": {"a": True}}, id="1 becoming true, equal to Python's =="),
        pytest.param({"spec": {"a": 1.0}}, {"spec": {"a": 1}}, id="1.0 becoming 1"),
        pytest.param({"spec": {"x": {"k": 1}}}, {"spec": {"y": {"k": 1}}}, id="a member moved under another name"),
        pytest.param(
            {"metadata": {**MANAGED, "labels": {"a": "1"}}, "spec": {"l": [1, 2, 3]}},
            {"metadata": {**MANAGED, "labels": {"b": "1", "a": "2"}}, "spec": {"l": [0, 1, 3, 4]}},
            id="labels added and changed, list items inserted and removed",
        ),
        pytest.param({"a": {"b": {"c": [{"d": 1}]}}}, {"a": {"b": {"c": [{"d": 1, "e": 2}]}}}, id="inside a list item"),
        pytest.param({"a": 1}, {"a": 1}, id="no change"),
        pytest.param({"a": 1, "b": 2}, {"b": 3}, id="a member removed beside a change"),
        pytest.param({"s": {}}, {"s": {"a/b": 1, "c~d": {"e": [1]}}}, id="members added, names escaped"),
        pytest.param({"s": {"a": 1, "b": {"c": 2}}}, {"s": {}}, id="members removed"),
        pytest.param({"s": {"a": {"b": 1}, "c": [1]}}, {"s": {"a": 2, "c": {"d": 1}}}, id="containers replaced"),
        pytest.param({"s": {"a": 1}, "t": {"x": 2}}, {"s": {}, "t": {"x": 2, "y": 1}}, id="moved to another object"),
        pytest.param({"s": {"a": 1}, "t": {}}, {"s": {}, "t": {"y": 2}}, id="removed and added, not equal"),
        pytest.param({"s": {"a": [1, 2]}}, {"s": {"a": [2], "b": 1}}, id="a list compared beside an add"),
        pytest.param({"s": {1: "a"}}, {"s": {1: "a", "b": 2}}, id="a member name that is not a string"),
    ],
)
def test_json_patch_is_jsonpatch_make_patch(source: dict[str, Any], target: dict[str, Any]) -> None:
    assert json_patch(source, target) == jsonpatch.make_patch(source, target).patch


def test_json_patch_copies_the_values_it_adds() -> None:
    added = {"b": {"c": 1}}
    patch = json_patch({"a": 1}, {"a": 1, **added})
    assert patch == [{"op": "add", "path": "/b", "value": {"c": 1}}]
    assert patch[0]["value"] is not added["b"]


def _random_json(rng: random.Random, depth: int) -> Any:
    kind = rng.choice(["scalar", "scalar", "object", "object", "list"] if depth > 0 else ["scalar"])
    if kind == "object":
        return {rng.choice("abcde/~"): _random_json(rng, depth - 1) for _ in range(rng.randint(0, 4))}
    if kind == "list":
        return [_random_json(rng, depth - 1) for _ in range(rng.randint(0, 3))]
    return rng.choice([0, 1, 1.0, True, False, None, "x", "y"])


def _changed(rng: random.Random, value: Any, depth: int) -> Any:
    if not isinstance(value, dict) or rng.random() < 0.15:
        return _random_json(rng, depth)
    changed = {key: _changed(rng, item, depth - 1) if rng.random() < 0.4 else item for key, item in value.items()}
    for key in rng.sample(sorted(changed), k=min(len(changed), rng.randint(0, 1))):
        del changed[key]
    for _ in range(rng.randint(0, 2)):
        changed[rng.choice("abcdef")] = _random_json(rng, depth - 1)
    return changed


def test_json_patch_is_jsonpatch_make_patch_on_random_objects() -> None:
    rng = random.Random(7)
    for _ in range(2000):
        source = {"s": _random_json(rng, 3), "t": _random_json(rng, 2)}
        target = _changed(rng, source, 3)
        try:
            expected = jsonpatch.make_patch(source, target).patch
        except TypeError:  # pragma: no cover - only string member names are generated
            continue
        assert json_patch(source, target) == expected, (source, target)


PATCHED: dict[str, Any] = {
    "metadata": {**MANAGED, "labels": {"a": "1"}},
    "spec": {"l": [1, {"k": [2]}], "m": {"n": {"o": 1}}},
}


@pytest.mark.parametrize(
    "operations",
    [
        pytest.param([{"op": "add", "path": "/spec/approved", "value": False}], id="a member added"),
        pytest.param([{"op": "replace", "path": "/spec/l/1/k/0", "value": 3}], id="inside a list item"),
        pytest.param([{"op": "remove", "path": "/metadata/labels/a"}], id="a member removed"),
        pytest.param([{"op": "add", "path": "/spec/l/-", "value": 4}], id="appended to a list"),
        pytest.param(
            [{"op": "move", "from": "/spec/m", "path": "/spec/x"}, {"op": "add", "path": "/spec/x/n/p", "value": 2}],
            id="a move, then a change inside what moved",
        ),
        pytest.param(
            [
                {"op": "copy", "from": "/spec/m", "path": "/spec/y"},
                {"op": "replace", "path": "/spec/y/n/o", "value": 5},
            ],
            id="a copy, then a change inside the copy",
        ),
        pytest.param([{"op": "replace", "path": "", "value": {"a": 1}}], id="the whole document replaced"),
        pytest.param([{"op": "add", "path": "/metadata/labels/~1b~0", "value": "x"}], id="an escaped member name"),
        pytest.param([{"op": "replace", "path": "/spec/m/n", "value": {"p": [1]}}], id="a member replaced"),
        pytest.param([{"op": "add", "path": "/spec/m/n", "value": 2}], id="a member added over one"),
        pytest.param([{"op": "add", "path": "/spec/", "value": 2}], id="the member named ''"),
        pytest.param(
            [{"op": "add", "path": "/spec/z", "value": {"a": 1}}, {"op": "add", "path": "/spec/z/b", "value": 2}],
            id="a member added inside one just added",
        ),
        pytest.param(
            [{"op": "remove", "path": "/spec/m/n"}, {"op": "add", "path": "/spec/m/q", "value": None}],
            id="removed and added in one object",
        ),
    ],
)
def test_apply_json_patch_is_jsonpatch_and_leaves_the_object(operations: list[dict[str, Any]]) -> None:
    source = copy.deepcopy(PATCHED)
    patched = apply_json_patch(source, copy.deepcopy(operations))
    assert patched == jsonpatch.apply_patch(PATCHED, operations)
    assert source == PATCHED


def test_apply_json_patch_copies_the_values_it_adds() -> None:
    value = {"p": [1]}
    operations = [
        {"op": "add", "path": "/spec/z", "value": value},
        {"op": "replace", "path": "/spec/m", "value": value},
    ]
    patched = apply_json_patch(PATCHED, operations)
    assert patched["spec"]["z"] == patched["spec"]["m"] == value
    assert patched["spec"]["z"] is not value
    assert patched["spec"]["m"] is not value


def test_apply_json_patch_keeps_what_it_does_not_touch() -> None:
    patched = apply_json_patch(PATCHED, [{"op": "add", "path": "/spec/approved", "value": False}])
    assert patched["metadata"] is PATCHED["metadata"]
    assert patched["spec"]["m"] is PATCHED["spec"]["m"]


@pytest.mark.parametrize(
    ("operations", "error"),
    [
        pytest.param([{"op": "test", "path": "/spec/m/n/o", "value": 2}], None, id="a failed test: unchanged"),
        pytest.param(
            [{"op": "add", "path": "/spec/z", "value": 1}, {"op": "test", "path": "/spec/z", "value": 2}],
            None,
            id="a failed test after a change: unchanged",
        ),
        pytest.param(
            [{"op": "add", "path": "/spec/z", "value": 1}, {"op": "remove", "path": "/nothing/here"}],
            "JSON patch could not be applied: ",
            id="an operation that does not apply",
        ),
    ],
)
def test_apply_json_patch_is_all_or_nothing(operations: list[dict[str, Any]], error: str | None) -> None:
    source = copy.deepcopy(PATCHED)
    if error is None:
        assert apply_json_patch(source, operations) is source
    else:
        with pytest.raises(MutationError, match=error):
            apply_json_patch(source, operations)
    assert source == PATCHED


@pytest.mark.parametrize(
    "operation",
    [
        pytest.param({"path": "/spec/z"}, id="no op"),
        pytest.param({"op": 1, "path": "/spec/z"}, id="an op that is no string"),
        pytest.param({"op": "frob", "path": "/spec/z"}, id="an unknown op"),
        pytest.param({"op": "add", "value": 1}, id="no path"),
        pytest.param({"op": "add", "path": "spec/z", "value": 1}, id="a path that is no JSON pointer"),
        pytest.param({"op": "add", "path": "/spec/z"}, id="no value"),
        pytest.param({"op": "replace", "path": "/spec/z", "value": 1}, id="a missing member replaced"),
        pytest.param({"op": "remove", "path": "/spec/z"}, id="a missing member removed"),
        pytest.param({"op": "add", "path": "/spec/z/y", "value": 1}, id="added under a missing member"),
        pytest.param({"op": "add", "path": "/spec/m/n/o/p", "value": 1}, id="added under a number"),
        pytest.param({"op": "remove", "path": "/spec/m/n/~2"}, id="a bad escape"),
    ],
)
def test_a_malformed_operation_is_refused_with_jsonpatch_s_words(operation: dict[str, Any]) -> None:
    with pytest.raises((jsonpatch.JsonPatchException, jsonpatch.JsonPointerException)) as upstream:
        jsonpatch.apply_patch(PATCHED, [operation])
    with pytest.raises(MutationError) as refused:
        apply_json_patch(PATCHED, [operation])
    assert str(refused.value) == f"JSON patch could not be applied: {upstream.value}"
