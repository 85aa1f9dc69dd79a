"""Request matching against matchConstraints / matchResources (cases in tests/data/policy/matching.yaml)."""

from __future__ import annotations

from typing import Any

import pytest

from tests import tables
from webhook.errors import MatchError
from webhook.objects import LabelSelector
from webhook.policy.matching import Attributes, matches
from webhook.policy.model import MatchResources, Rule

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
