"""Request matching against matchConstraints / matchResources (cases in tests/data/policy/matching.yaml)."""

from __future__ import annotations

from typing import Any

import pytest

from tests import tables
from webhook.errors import MatchError
from webhook.objects import LabelSelector
from webhook.policy.admitting.dispatch import Dispatcher
from webhook.policy.admitting.matching import Attributes, matches, may_match
from webhook.policy.model import MatchResources, Rule, ValidatingBinding, ValidatingPolicy

DATA = tables.load("policy/matching.yaml")


def _rule(rule: dict[str, Any]) -> Rule:
    return Rule(
        operations=tuple(rule["operations"]),
        api_groups=tuple(rule["apiGroups"]),
        api_versions=tuple(rule["apiVersions"]),
        resources=tuple(rule["resources"]),
        scope=rule.get("scope", "*"),
        resource_names=tuple(rule.get("resourceNames", ())),
    )


def _constraints(spec: dict[str, Any]) -> MatchResources:
    return MatchResources(
        resource_rules=tuple(_rule(r) for r in spec.get("resourceRules", ())),
        exclude_resource_rules=tuple(_rule(r) for r in spec.get("excludeResourceRules", ())),
        namespace_selector=LabelSelector.from_dict(spec.get("namespaceSelector")),
        object_selector=LabelSelector.from_dict(spec.get("objectSelector")),
        match_policy=spec.get("matchPolicy", "Equivalent"),
    )


@pytest.mark.parametrize("case", DATA["cases"], ids=[c["why"] for c in DATA["cases"]])
def test_matching(case: dict[str, Any]) -> None:
    constraints = _constraints(case["constraints"])
    attributes = Attributes.from_request(case["request"])
    if isinstance(case["want"], str):
        with pytest.raises(MatchError) as raised:
            matches(constraints, attributes, case.get("namespace"))
        assert str(raised.value) == case["want"]
    else:
        assert matches(constraints, attributes, case.get("namespace")) is case["want"]


@pytest.mark.parametrize("case", DATA["cases"], ids=[c["why"] for c in DATA["cases"]])
def test_may_match_is_false_only_where_matching_is(case: dict[str, Any]) -> None:
    """The compiled dispatch's pre-filter drops a policy only where full matching would not match it."""
    constraints = _constraints(case["constraints"])
    attributes = Attributes.from_request(case["request"])
    if case["want"] is not False:
        assert may_match(constraints, attributes)


def test_the_dispatcher_keeps_policy_order_and_answers_each_kind_of_request_once() -> None:
    rule = {"operations": ["CREATE"], "apiGroups": ["apps"], "apiVersions": ["v1"], "resources": ["deployments"]}
    any_rule = {"operations": ["*"], "apiGroups": ["*"], "apiVersions": ["*"], "resources": ["*"]}
    policies = tuple(
        ValidatingPolicy(name, _constraints({"resourceRules": [spec]}), validations=())
        for name, spec in (("all", any_rule), ("deployments", rule), ("all-again", any_rule))
    )
    bindings = (ValidatingBinding("b", "deployments", ("Deny",)),)
    dispatcher = Dispatcher(policies, bindings)
    deployment = {"operation": "CREATE", "resource": {"group": "apps", "version": "v1", "resource": "deployments"}}
    pod = {"operation": "CREATE", "resource": {"group": "", "version": "v1", "resource": "pods"}, "namespace": "a"}
    found = dispatcher.candidates(Attributes.from_request(deployment))
    assert [(policy.name, [b.name for b in bindings]) for policy, bindings in found] == [
        ("all", []),
        ("deployments", ["b"]),
        ("all-again", []),
    ]
    assert [policy.name for policy, _ in dispatcher.candidates(Attributes.from_request(pod))] == ["all", "all-again"]
    assert dispatcher.candidates(Attributes.from_request({**deployment, "name": "other"})) is found
