"""Record what a real kube-apiserver does with expressions whose *estimated* cost is high, for test_estimate.

    .venv/bin/python -m tests.oracle.costs                       # starts ../shared/kube's 1.32, records, stops it
    .venv/bin/python -m tests.oracle.costs --kube-version 1.36   # the same against 1.36: tests/data/oracle/v1.36/
    .venv/bin/python -m tests.oracle.costs --kubeconfig FILE     # records with a running apiserver

It writes two files under ``tests/data/oracle/`` (``v<minor>/`` for another version than 1.32):

- ``policy_costs.yaml``: a ValidatingAdmissionPolicy and a MutatingAdmissionPolicy (v1alpha1) whose every expression is
  the triple nested comprehension ``object.spec.a.all(x, object.spec.b.all(y, object.spec.c.all(z, ...)))``,
  created for real: the create's status and message, and the policy's ``status`` ten seconds later (the
  ``typeChecking`` the ValidatingAdmissionPolicy status controller would write);
- ``crd_costs.yaml``: each rule of ``cost_cases.yaml`` as the ``x-kubernetes-validations`` rule of ``spec`` in a dry-run
  CustomResourceDefinition create: status and message (a refused rule's message prints its estimated cost as a
  factor of the per-rule limit, which ``tests/cel/test_estimate.py`` reads back).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

import yaml

from tests.oracle.apiserver import ROOT, Apiserver, run_recorder
from tests.oracle.record import write

CASES = ROOT / "tests" / "data" / "oracle" / "cost_cases.yaml"
NESTED = "object.spec.a.all(x, object.spec.b.all(y, object.spec.c.all(z, x + y + z > 0)))"
_CONFIGMAPS = {"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["configmaps"]}
_TEST_PATCH = 'JSONPatch{op: "test", path: "/metadata/name", value: "%s"}'
ADMISSION_POLICIES: tuple[tuple[str, dict[str, Any]], ...] = (
    (
        "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies",
        {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingAdmissionPolicy",
            "metadata": {"name": "estimated-cost"},
            "spec": {
                "failurePolicy": "Fail",
                "matchConstraints": {"resourceRules": [_CONFIGMAPS]},
                "matchConditions": [{"name": "nested", "expression": NESTED}],
                "variables": [{"name": "nested", "expression": NESTED}],
                "validations": [{"expression": NESTED, "messageExpression": f"{NESTED} ? 'a' : 'b'"}],
                "auditAnnotations": [{"key": "nested", "valueExpression": f"{NESTED} ? 'a' : 'b'"}],
            },
        },
    ),
    (
        "/apis/admissionregistration.k8s.io/v1alpha1/mutatingadmissionpolicies",
        {
            "apiVersion": "admissionregistration.k8s.io/v1alpha1",
            "kind": "MutatingAdmissionPolicy",
            "metadata": {"name": "estimated-cost"},
            "spec": {
                "failurePolicy": "Fail",
                "reinvocationPolicy": "Never",
                "matchConstraints": {"resourceRules": [_CONFIGMAPS]},
                "matchConditions": [{"name": "nested", "expression": NESTED}],
                "variables": [{"name": "nested", "expression": NESTED}],
                "mutations": [
                    {
                        "patchType": "JSONPatch",
                        "jsonPatch": {"expression": f"{NESTED} ? [{_TEST_PATCH % 'a'}] : [{_TEST_PATCH % 'b'}]"},
                    }
                ],
            },
        },
    ),
)


def crd(rule: str, properties: Mapping[str, Any]) -> dict[str, Any]:
    """A cluster-scoped CustomResourceDefinition whose ``spec`` has ``properties`` and the validation ``rule``."""
    spec = {"type": "object", "properties": dict(properties), "x-kubernetes-validations": [{"rule": rule}]}
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "costprobes.oracle.example.com"},
        "spec": {
            "group": "oracle.example.com",
            "scope": "Cluster",
            "names": {
                "plural": "costprobes",
                "singular": "costprobe",
                "kind": "CostProbe",
                "listKind": "CostProbeList",
            },
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": spec}}},
                }
            ],
        },
    }


def record_crd_rules(api: Apiserver) -> list[dict[str, Any]]:
    """Each case of ``cost_cases.yaml`` with the status and message of its dry-run CRD create."""
    records = []
    for case in yaml.safe_load(CASES.read_text("utf-8")):
        status, answer = api.call(
            "POST",
            "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
            crd(case["rule"], case["properties"]),
            dry_run=True,
        )
        records.append({"id": case["id"], "status": status, "message": answer.get("message", "")})
    return records


def record_admission(api: Apiserver) -> list[dict[str, Any]]:
    """Create each admission policy, wait ten seconds, read its status, delete it."""
    created = []
    for path, policy in ADMISSION_POLICIES:
        status, answer = api.call("POST", path, policy)
        created.append((path, policy, status, answer.get("message", "")))
    time.sleep(10)
    records = []
    for path, policy, status, message in created:
        name = policy["metadata"]["name"]
        _, current = api.call("GET", f"{path}/{name}")
        api.call("DELETE", f"{path}/{name}")
        records.append(
            {
                "kind": policy["kind"],
                "apiVersion": policy["apiVersion"],
                "expression": NESTED,
                "status": status,
                "message": message,
                "policyStatusAfter10s": current.get("status", {}),
            }
        )
    return records


RECORDER = "tests/oracle/costs.py"


def record(api: Apiserver) -> None:
    """Write both files with ``api``."""
    policies, rules = record_admission(api), record_crd_rules(api)
    write(api, RECORDER, "policy_costs.yaml", policies)
    write(api, RECORDER, "crd_costs.yaml", rules)
    print(f"recorded {len(rules)} CRD rules and {len(policies)} admission policies")


def main() -> None:
    """Start an apiserver (or use ``--kubeconfig FILE``'s) and record."""
    run_recorder(record, __doc__)


if __name__ == "__main__":
    main()
