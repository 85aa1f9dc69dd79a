"""Label selectors against apimachinery's semantics (cases in tests/data/labels.yaml); default resource names."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from webhook.errors import InputError
from webhook.objects import LabelSelector, plural_of

CASES: dict[str, list[dict[str, Any]]] = yaml.safe_load(
    (Path(__file__).parent / "data" / "labels.yaml").read_text(encoding="utf-8")
)


@pytest.mark.parametrize("case", CASES["matches"], ids=[c["why"] for c in CASES["matches"]])
def test_selector_matches(case: dict[str, Any]) -> None:
    assert LabelSelector.from_dict(case["selector"]).matches(case["labels"]) is case["want"]


@pytest.mark.parametrize("case", CASES["errors"], ids=[c["why"] for c in CASES["errors"]])
def test_selector_errors(case: dict[str, Any]) -> None:
    with pytest.raises(InputError) as raised:
        LabelSelector.from_dict(case["selector"])
    assert str(raised.value) == case["error"]


def test_absent_selector_matches_everything() -> None:
    assert LabelSelector.from_dict(None).matches({"any": "thing"})


@pytest.mark.parametrize(
    ("kind", "resource"),
    [
        ("ClusterExtensionRevision", "clusterextensionrevisions"),
        ("ManagedClusterAddOn", "managedclusteraddons"),
        ("NetworkPolicy", "networkpolicies"),
        ("Ingress", "ingresses"),
        ("Gateway", "gateways"),
    ],
)
def test_default_resource_names(kind: str, resource: str) -> None:
    assert plural_of(kind) == resource
