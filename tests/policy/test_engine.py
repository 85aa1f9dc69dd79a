"""ValidatingAdmissionPolicy decisions, data-driven (cases in tests/data/policy/engine.yaml), on both CEL backends:
the decisions are the apiserver's, whichever engine evaluates the expressions."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests import tables
from webhook.cel import Program
from webhook.objects import InMemoryObjectStore
from webhook.policy.admitting.decision import Decision, PolicyWarning
from webhook.policy.admitting.engine import PolicyEngine
from webhook.policy.loading.loader import load_policy_set, load_policy_text
from webhook.policy.suites import load_suites
from webhook.settings import CEL_ENGINES, DEFAULT_CEL_ENGINE

DATA = tables.load("policy/engine.yaml")
ROOT = Path(__file__).parents[2]


def engine_for(case: dict[str, Any], cel_engine: str = DEFAULT_CEL_ENGINE) -> PolicyEngine:
    """The engine of a case: its policy documents loaded as one set for ``cel_engine``, its params in the store."""
    policies = load_policy_text(yaml.safe_dump_all(case["policies"]), file=case["why"], engine=cel_engine)
    return PolicyEngine(policies, InMemoryObjectStore([*case.get("params", ()), *policies.params]))


def summary(decision: Decision, want: dict[str, Any]) -> dict[str, Any]:
    """The decision in the fixture's terms; ``causes`` only when the case lists them."""
    found: dict[str, Any] = {"allowed": decision.allowed}
    if not decision.allowed:
        found.update(code=decision.code, reason=decision.reason, message=decision.message)
    if decision.warnings:
        found["warnings"] = list(decision.warnings)
    if decision.audit_annotations:
        found["auditAnnotations"] = dict(decision.audit_annotations)
    if "causes" in want:
        found["causes"] = list(decision.causes)
    return found


@pytest.mark.parametrize("cel_engine", CEL_ENGINES)
@pytest.mark.parametrize("case", DATA["cases"], ids=[c["why"] for c in DATA["cases"]])
def test_validating_decision(case: dict[str, Any], cel_engine: str) -> None:
    decision = engine_for(case, cel_engine).validate(case["request"], case.get("namespace"))
    assert summary(decision, case["want"]) == case["want"]


def test_a_denial_without_causes_listed_has_its_message_as_only_cause() -> None:
    case = DATA["cases"][0]
    decision = engine_for(case).validate(case["request"])
    assert decision.causes == (decision.message,)


_DENIALS = """
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: labels}
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules: [{apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [configmaps]}]
  validations:
    - {expression: "has(object.metadata.labels)", message: label it, reason: Forbidden}
    - {expression: "object.data.size == 'x'"}
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: labels-everywhere}
spec: {policyName: labels, validationActions: [Deny]}
"""
_CONFIGMAP = {
    "uid": "1",
    "kind": {"group": "", "version": "v1", "kind": "ConfigMap"},
    "resource": {"group": "", "version": "v1", "resource": "configmaps"},
    "operation": "CREATE",
    "name": "c",
    "object": {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {}},
    "userInfo": {"username": "u"},
}
"""A CREATE of a ConfigMap without labels, whose ``data.size`` is an error: both validations of ``_DENIALS`` fail."""


@pytest.mark.parametrize("cel_engine", CEL_ENGINES)
def test_a_denial_carries_its_policy_binding_message_and_whether_it_errored(cel_engine: str) -> None:
    """The fields the server counts and logs by (the denying policy, a failurePolicy Fail error), beside the texts
    the API server answers with, which are made from them."""
    engine = PolicyEngine(load_policy_text(_DENIALS, engine=cel_engine), InMemoryObjectStore([]))
    decision = engine.validate(_CONFIGMAP)
    violated, errored = decision.denials
    assert (violated.policy, violated.binding, violated.message) == ("labels", "labels-everywhere", "label it")
    assert (violated.errored, errored.errored) == (False, True)
    assert decision.causes == (violated.text(), errored.text())
    assert (decision.code, decision.reason, decision.policy, decision.failed_closed) == (
        403,
        "Forbidden",
        "labels",
        True,
    )
    assert errored.message.startswith("expression 'object.data.size == 'x'' resulted in error: ")


@pytest.mark.parametrize("cel_engine", CEL_ENGINES)
def test_a_warning_carries_its_policy_binding_and_message(cel_engine: str) -> None:
    """A Warn binding's failures are warnings with the fields ``apply`` reads, whose texts are the API server's
    (``validating/dispatcher.go``: ``Validation failed for ValidatingAdmissionPolicy '%s' with binding '%s': %s``)."""
    policies = load_policy_text(_DENIALS.replace("[Deny]", "[Warn]"), engine=cel_engine)
    decision = PolicyEngine(policies, InMemoryObjectStore([])).validate(_CONFIGMAP)
    violated, errored = decision.policy_warnings
    assert (decision.allowed, decision.denials) == (True, ())
    assert violated == PolicyWarning("labels", "labels-everywhere", "label it")
    assert (errored.policy, errored.binding) == ("labels", "labels-everywhere")
    assert decision.warnings == (
        "Validation failed for ValidatingAdmissionPolicy 'labels' with binding 'labels-everywhere': label it",
        f"Validation failed for ValidatingAdmissionPolicy 'labels' with binding 'labels-everywhere': {errored.message}",
    )


@pytest.mark.parametrize("cel_engine", CEL_ENGINES)
def test_expressions_evaluated_together_decide_as_one_by_one(cel_engine: str) -> None:
    """The bundled policies with several validations or mutations each have the one program of them all (the fast
    path is live), and with the programs every request of the bundled policy tests is decided, and patched, exactly
    as with the expressions one by one."""
    policies = load_policy_set([ROOT / "policies"], engine=cel_engine)
    several = [p for p in policies.validating_policies if len(p.validations) > 1]
    several_mutations = [p for p in policies.mutating_policies if len(p.mutations) > 1]
    assert several and all(policy.all_validations is not None for policy in several)
    assert several_mutations and all(policy.all_mutations is not None for policy in several_mutations)
    one_by_one = dataclasses.replace(
        policies,
        validating_policies=tuple(dataclasses.replace(p, all_validations=None) for p in policies.validating_policies),
        mutating_policies=tuple(dataclasses.replace(p, all_mutations=None) for p in policies.mutating_policies),
    )
    outcomes, patched = set(), 0
    for suite in load_suites([ROOT / "policies" / "tests"]):
        for case in suite.cases:
            store = InMemoryObjectStore([*policies.params, *suite.objects, *case.objects])
            together, alone = PolicyEngine(policies, store), PolicyEngine(one_by_one, store)
            now, named = case.now or suite.now, f"{suite.name}: {case.name}"
            decision = together.validate(case.request, case.namespace, now=now)
            assert decision == alone.validate(case.request, case.namespace, now=now), named
            mutated = together.mutate(case.request, case.namespace, now=now)
            assert mutated == alone.mutate(case.request, case.namespace, now=now), named
            outcomes.add(decision.allowed)
            patched += bool(mutated.patch)
    assert outcomes == {True, False} and patched  # the corpus admits, denies and patches


@pytest.mark.parametrize("cel_engine", CEL_ENGINES)
def test_validations_that_all_pass_take_one_evaluation(cel_engine: str, monkeypatch: pytest.MonkeyPatch) -> None:
    case = {
        "why": "three validations",
        "policies": [
            {
                "apiVersion": "admissionregistration.k8s.io/v1",
                "kind": "ValidatingAdmissionPolicy",
                "metadata": {"name": "check"},
                "spec": {
                    "matchConstraints": DATA["rules"]["revisions"],
                    "validations": [{"expression": f"object.spec.version != '{n}'"} for n in range(3)],
                },
            },
            DATA["bindings"]["deny"],
        ],
    }
    engine = engine_for(case, cel_engine)
    evaluated: list[str] = []
    evaluate = Program.evaluate

    def recorded(self: Program, values: Any) -> object:
        evaluated.append(self.expression)
        return evaluate(self, values)

    monkeypatch.setattr(Program, "evaluate", recorded)
    assert engine.validate(DATA["requests"]["approve-by-alice"]).allowed
    assert len(evaluated) == 1 and evaluated[0].startswith("[")  # the list, not each validation
