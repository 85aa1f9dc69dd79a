"""What a policy set reads from the cluster: the kinds a watch cache must hold (cases in
tests/data/policy/lookups.yaml)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.tables import load, params
from webhook.cel import lookups
from webhook.policy.admitting.lookups import NAMESPACE, ClusterReads, cluster_reads
from webhook.policy.loading.loader import load_policy_set, load_policy_text

ROOT = Path(__file__).resolve().parents[2]
TABLE = load("policy/lookups.yaml")
CONFIGMAPS = {
    "resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["configmaps"]}]
}


@pytest.mark.parametrize("case", params(TABLE["expressions"]))
def test_an_expression_reads(case: dict[str, Any]) -> None:
    found = lookups(case["expression"])
    assert found.kinds == tuple(tuple(kind) for kind in case["kinds"])
    assert found.computed == case["computed"]


def _documents(case: dict[str, Any]) -> list[dict[str, Any]]:
    policy = {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy"}
    binding = {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding"}
    return [
        {**policy, "metadata": {"name": "subject"}, "spec": {"matchConstraints": CONFIGMAPS, **case["policy"]}},
        {
            **binding,
            "metadata": {"name": "subject"},
            "spec": {"policyName": "subject", "validationActions": ["Deny"], **case.get("binding", {})},
        },
    ]


@pytest.mark.parametrize("case", params(TABLE["policies"]))
def test_a_policy_set_reads(case: dict[str, Any]) -> None:
    found = cluster_reads(load_policy_text(yaml.safe_dump_all(_documents(case))))
    assert found == ClusterReads(
        everywhere=tuple(sorted([NAMESPACE, *(tuple(kind) for kind in case["everywhere"])])),
        params=tuple(tuple(kind) for kind in case["params"]),
        computed=tuple(case["computed"]),
    )


def test_the_bundled_policies_read_the_olm_and_add_on_kinds_and_their_settings_configmap() -> None:
    found = cluster_reads(load_policy_set([ROOT / "policies"]))
    assert found == ClusterReads(
        everywhere=(
            ("addon.open-cluster-management.io/v1alpha1", "AddOnTemplate"),
            ("addon.open-cluster-management.io/v1alpha1", "ClusterManagementAddOn"),
            ("addon.open-cluster-management.io/v1alpha1", "ManagedClusterAddOn"),
            ("cluster.open-cluster-management.io/v1beta1", "PlacementDecision"),
            ("olm.operatorframework.io/v1", "ClusterExtension"),
            ("olm.operatorframework.io/v1", "ClusterExtensionRevision"),
            ("v1", "Namespace"),
            ("work.open-cluster-management.io/v1", "ManifestWork"),
        ),
        params=(("v1", "ConfigMap", "upgrade-gate-system"),),
        computed=(),
    )
