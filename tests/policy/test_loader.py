"""Loading policy sets: apiserver validation and defaulting, CEL compilation, error places.

Broken files and their whole error text are in tests/data/policy/loader.yaml (files in loader/broken/).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests import tables
from webhook.errors import InputError, PolicyLoadError
from webhook.policy import model
from webhook.policy.loading.loader import load_policy_set, load_policy_text

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


def _policy(api_version: str, kind: str, expression: str = "true") -> str:
    """A minimal valid policy of ``kind`` in ``admissionregistration.k8s.io/<api_version>`` using ``expression``."""
    match = "{resourceRules: [{apiGroups: [''], apiVersions: [v1], operations: [CREATE], resources: [configmaps]}]}"
    if kind == "ValidatingAdmissionPolicy":
        body = f"  validations: [{{expression: {expression!r}}}]\n"
    else:
        body = "  reinvocationPolicy: Never\n  mutations: [{patchType: JSONPatch, jsonPatch: {expression: '[]'}}]\n"
        body += f"  matchConditions: [{{name: c, expression: {expression!r}}}]\n"
    return (
        f"apiVersion: admissionregistration.k8s.io/{api_version}\nkind: {kind}\nmetadata: {{name: p}}\n"
        f"spec:\n  matchConstraints: {match}\n{body}"
    )


# (kind, API version, first Kubernetes version serving it, last one of 1.32-1.36 serving it): the prerelease
# lifecycle tags of k8s.io/api admissionregistration/<version>/types.go (MutatingAdmissionPolicy v1alpha1
# introduced 1.32, removed 1.38; v1beta1 introduced 1.34; v1 1.36; ValidatingAdmissionPolicy v1beta1 removed 1.34).
SERVING = [
    ("MutatingAdmissionPolicy", "v1alpha1", "1.32", "1.36"),
    ("MutatingAdmissionPolicy", "v1beta1", "1.34", "1.36"),
    ("MutatingAdmissionPolicy", "v1", "1.36", "1.36"),
    ("ValidatingAdmissionPolicy", "v1", "1.32", "1.36"),
    ("ValidatingAdmissionPolicy", "v1beta1", "1.32", "1.33"),
]


@pytest.mark.parametrize(("kind", "api_version", "first", "last"), SERVING, ids=[f"{k} {v}" for k, v, _, _ in SERVING])
@pytest.mark.parametrize("version", ["1.32", "1.33", "1.34", "1.35", "1.36"])
def test_an_api_version_loads_only_where_kubernetes_serves_it(
    kind: str, api_version: str, first: str, last: str, version: str
) -> None:
    text = _policy(api_version, kind)
    minor = int(version.split(".")[1])
    if int(first.split(".")[1]) <= minor <= int(last.split(".")[1]):
        loaded = load_policy_text(text, version=version)
        versions = [p.api_version for p in loaded.validating_policies] + [
            p.api_version for p in loaded.mutating_policies
        ]
        assert versions == [api_version]
        return
    with pytest.raises(PolicyLoadError) as raised:
        load_policy_text(text, version=version)
    (problem,) = raised.value.problems
    assert (
        f"({kind}/p): apiVersion: admissionregistration.k8s.io/{api_version} is not served by Kubernetes {version}"
        in problem
    )


@pytest.mark.parametrize(
    ("expression", "name", "since"),
    [
        ("object.data.all(k, v, v != '')", "all", "1.33"),
        ("object.data.transformMap(k, v, v + 'x').size() > 0", "transformMap", "1.33"),
        ("isSemver(object.data.v, true)", "isSemver", "1.34"),
        ("object.data.keys.sortBy(k, k).size() > 0", "sortBy", "1.35"),
        ("lists.range(2).size() == 2", "lists", "1.35"),  # cel-go names the namespace
    ],
)
def test_an_expression_using_a_later_library_is_refused_naming_policy_field_and_version(
    expression: str, name: str, since: str
) -> None:
    text = _policy("v1", "ValidatingAdmissionPolicy", expression)
    earlier = f"1.{int(since.split('.')[1]) - 1}"
    with pytest.raises(PolicyLoadError) as raised:
        load_policy_text(text, version=earlier)
    (problem,) = raised.value.problems
    assert "(ValidatingAdmissionPolicy/p): spec.validations[0].expression: Invalid value" in problem
    assert f"undeclared reference to '{name}' (in container '')" in problem
    assert f"from Kubernetes {since}, not {earlier}" in problem
    load_policy_text(text, version=since)


def test_an_unknown_kubernetes_version_is_bad_input() -> None:
    with pytest.raises(InputError, match=r"'1\.31': not a supported Kubernetes version"):
        load_policy_text(_policy("v1", "ValidatingAdmissionPolicy"), version="1.31")


@pytest.mark.parametrize(
    ("kind", "api_version", "defaulted"),
    [
        ("MutatingAdmissionPolicyBinding", "v1alpha1", True),
        ("MutatingAdmissionPolicyBinding", "v1beta1", False),
        ("MutatingAdmissionPolicyBinding", "v1", False),
        ("ValidatingAdmissionPolicyBinding", "v1", False),
    ],
)
def test_only_v1alpha1_defaults_a_paramrefs_parameter_not_found_action(
    kind: str, api_version: str, defaulted: bool
) -> None:
    # kubernetes pkg/apis/admissionregistration/v1alpha1/defaults.go has SetDefaults_ParamRef (Deny); v1beta1 and v1
    # have none, and validateParamRef requires the field (recorded in tests/data/oracle/decisions.yaml too)
    actions = "validationActions: [Deny], " if kind.startswith("Validating") else ""
    text = (
        f"apiVersion: admissionregistration.k8s.io/{api_version}\nkind: {kind}\nmetadata: {{name: b}}\n"
        f"spec: {{policyName: p, {actions}paramRef: {{name: limits}}}}\n"
    )
    if defaulted:
        (binding,) = load_policy_text(text, version="1.36").mutating_bindings
        assert binding.param_ref is not None and binding.param_ref.parameter_not_found_action == model.DENY
        return
    with pytest.raises(PolicyLoadError) as raised:
        load_policy_text(text, version="1.36")
    (problem,) = raised.value.problems
    assert problem.endswith(f"({kind}/b): spec.paramRef.parameterNotFoundAction: Required value")
