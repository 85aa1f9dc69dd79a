"""Loading policy sets: apiserver validation and defaulting, CEL compilation, error places.

Broken files and their whole error text are in tests/data/policy/loader.yaml (files in loader/broken/).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests import tables
from webhook.errors import PolicyLoadError
from webhook.policy import model
from webhook.policy.loader import load_policy_set, load_policy_text

DATA = Path(__file__).parents[1] / "data" / "policy"
CASES: dict[str, list[dict[str, Any]]] = tables.load("policy/loader.yaml")
BROKEN = DATA / "loader" / "broken"


@pytest.mark.parametrize("case", CASES["broken"], ids=[c["why"] for c in CASES["broken"]])
def test_broken_policy_files_fail_with_every_problem_placed(case: dict[str, Any]) -> None:
    with pytest.raises(PolicyLoadError) as raised:
        load_policy_set([BROKEN / name for name in case["files"]])
    assert str(raised.value).replace(f"{BROKEN}/", "") == case["error"]


def test_a_valid_set_loads_with_the_apiservers_defaults() -> None:
    policies = load_policy_set([DATA / "loader" / "valid"])

    (approval,) = policies.validating_policies
    assert approval.failure_policy == model.FAIL
    assert approval.match_constraints.match_policy == model.EQUIVALENT
    assert approval.match_constraints.namespace_selector.is_empty
    assert approval.match_constraints.resource_rules[0].scope == "*"
    assert approval.param_kind == model.ParamKind("v1", "ConfigMap")
    assert [v.name for v in approval.variables] == ["approvers", "isApprover"]
    assert approval.validations[0].reason == "Forbidden"
    assert approval.audit_annotations[0].key == "approved-by"

    (binding,) = policies.validating_bindings
    assert binding.validation_actions == (model.DENY, model.AUDIT)
    assert binding.match_resources is None
    assert binding.param_ref is not None
    assert binding.param_ref.parameter_not_found_action == model.DENY
    assert binding.param_ref.namespace == "upgrade-gate"

    (stamp,) = policies.mutating_policies
    assert [m.patch_type for m in stamp.mutations] == [model.JSON_PATCH, model.APPLY_CONFIGURATION]
    assert stamp.mutations[1].expression.text.startswith("Object{")
    assert [b.policy_name for b in policies.mutating_bindings] == ["stamp-revision"]


def test_param_objects_are_plain_json_and_keep_timestamps_as_strings() -> None:
    (config_map,) = load_policy_set([DATA / "loader" / "valid" / "revisions.yaml"]).params
    assert type(config_map) is dict
    assert type(config_map["metadata"]["labels"]) is dict
    assert config_map["metadata"]["creationTimestamp"] == "2026-01-05T10:00:00Z"


def test_text_loads_under_the_given_name() -> None:
    with pytest.raises(PolicyLoadError) as raised:
        load_policy_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {}\n", file="stdin")
    assert str(raised.value) == (
        "the policy set does not load (1 problem):\n"
        "stdin:3:11: document 1 (ConfigMap/<unnamed>): metadata.name: Required value"
    )


def test_a_missing_path_is_a_load_error() -> None:
    with pytest.raises(PolicyLoadError, match=r"nowhere\.yaml: no such file or directory"):
        load_policy_set([DATA / "nowhere.yaml"])
