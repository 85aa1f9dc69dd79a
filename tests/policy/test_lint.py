"""``policy lint`` on policies the apiserver accepts but that cel-cpp cannot nest or that may run out of cost."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests import tables
from webhook.cel.estimate import PER_CALL_LIMIT, SATURATED
from webhook.policy.lint import ExpensiveExpression, PolicyReport, lint
from webhook.policy.loading.loader import load_policy_set

ROOT = Path(__file__).resolve().parents[2]


def _policy(expression: str, failure_policy: str = "Fail") -> dict[str, object]:
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": "deep"},
        "spec": {
            "matchConstraints": {
                "resourceRules": [
                    {"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["configmaps"]}
                ]
            },
            "validations": [{"expression": "true"}, {"expression": expression}],
            "failurePolicy": failure_policy,
        },
    }


def test_lint_names_the_expressions_cel_python_evaluates_for_cel_expr(tmp_path: Path) -> None:
    deep = "size(object.metadata.name)" + " + 1" * 40 + " > 0"  # 40 levels: cel-cpp parses 32
    (tmp_path / "deep.yaml").write_text(yaml.safe_dump(_policy(deep)), encoding="utf-8")
    (report,) = lint([tmp_path])
    (policy,) = report.policies
    assert policy.portable
    assert policy.fallbacks == (f"cel-python: {deep}",)


def test_lint_names_no_fallback_for_an_ordinary_policy(tmp_path: Path) -> None:
    (tmp_path / "flat.yaml").write_text(yaml.safe_dump(_policy("size(object.metadata.name) > 0")), encoding="utf-8")
    (report,) = lint([tmp_path])
    assert report.policies[0].fallbacks == ()


@pytest.mark.parametrize(("failure_policy", "failed"), [("Ignore", True), ("Fail", False)])
def test_lint_reports_an_expression_estimated_above_the_per_expression_limit(
    tmp_path: Path, failure_policy: str, failed: bool
) -> None:
    """The apiserver creates such a policy (tests/data/oracle/policy_costs.yaml), so it loads; it is not portable:
    its evaluations may be cancelled at run time. A cancelled evaluation is an error: with failurePolicy Ignore
    the request is admitted unchecked (the policy fails lint), with Fail it is denied (the policy holds)."""
    (recorded, *_) = tables.load("oracle/policy_costs.yaml")
    nested = recorded["expression"]
    (tmp_path / "nested.yaml").write_text(yaml.safe_dump(_policy(nested, failure_policy)), encoding="utf-8")
    (report,) = lint([tmp_path])
    assert report.errors == ()
    (policy,) = report.policies
    assert not policy.portable
    assert policy.extensions == ()
    assert policy.expensive == (ExpensiveExpression(nested, SATURATED),)
    assert (policy.failed, report.failed) == (failed, failed)
    assert policy.expensive[0].message == (
        "may be cancelled at run time: estimated cost 18446744073709551615 exceeds the per-expression limit 1000000"
    )


def test_lint_keeps_a_cheap_policy_portable(tmp_path: Path) -> None:
    (tmp_path / "cheap.yaml").write_text(
        yaml.safe_dump(_policy("object.metadata.name.startsWith('a') && object.spec.replicas <= 3")), encoding="utf-8"
    )
    (report,) = lint([tmp_path])
    assert report.policies[0].expensive == ()
    assert report.policies[0].portable


def _spec_policy(tmp_path: Path, spec: dict[str, object]) -> PolicyReport:
    """The report of one ValidatingAdmissionPolicy on ConfigMaps with ``spec``'s fields (a ConfigMap param)."""
    document = _policy("true")
    policy_spec = document["spec"]
    assert isinstance(policy_spec, dict)
    policy_spec.update({"paramKind": {"apiVersion": "v1", "kind": "ConfigMap"}, **spec})
    (tmp_path / "policy.yaml").write_text(yaml.safe_dump(document), encoding="utf-8")
    (report,) = lint([tmp_path])
    assert report.errors == ()
    (policy,) = report.policies
    return policy


def _estimated(tmp_path: Path, expression: str) -> int:
    """The expression's estimate with every value as large as a request allows (what lint went by before)."""
    loaded = load_policy_set([tmp_path / "policy.yaml"])
    (policy,) = loaded.validating_policies
    return next(v.expression.program.estimated_cost for v in policy.validations if v.expression.text == expression)


BUNDLED = sorted((ROOT / "policies").glob("*.yaml"))


@pytest.mark.parametrize("path", BUNDLED, ids=[path.name for path in BUNDLED])
def test_the_bundled_policies_lint_clean(path: Path) -> None:
    """They load, and each fails closed: an evaluation cancelled on cost denies the request (failurePolicy Fail)."""
    (report,) = lint([path])
    assert report.errors == ()
    assert [policy.name for policy in report.policies if policy.failure_policy != "Fail"] == []
    assert not report.failed


@pytest.mark.parametrize(
    "path",
    [
        pytest.param(
            path,
            id=path.name,
            marks=[
                pytest.mark.xfail(
                    strict=True,
                    reason="spec.supportedConfigs of the ClusterManagementAddOn (no maxItems in OCM's CRD) is mapped "
                    "per element: a write with some 100,000 entries costs past the limit, and the policy denies it",
                )
            ]
            if path.name == "addon-placements.yaml"
            else [],
        )
        for path in BUNDLED
    ],
)
def test_no_request_takes_a_bundled_policy_past_the_cost_limit(path: Path) -> None:
    """Their estimates pass the per-expression limit only with the settings, the cluster's objects or the user's
    groups larger than anything bounds."""
    (report,) = lint([path])
    assert [(policy.name, policy.expensive) for policy in report.policies if policy.expensive] == []


def test_what_the_requester_does_not_choose_is_named_not_failed(tmp_path: Path) -> None:
    """A list from the settings (through a composited variable) and the cluster's objects are as large as
    anything allows only in the open estimate; lint names them and passes the policy."""
    in_settings = "object.metadata.name in variables.names"
    listed = "cluster.list('v1', 'ConfigMap').exists(c, c.metadata.name == object.metadata.name)"
    policy = _spec_policy(
        tmp_path,
        {
            "variables": [{"name": "names", "expression": "params.data.names.split(',')"}],
            "validations": [{"expression": in_settings}, {"expression": listed}],
        },
    )
    assert _estimated(tmp_path, in_settings) > PER_CALL_LIMIT
    assert _estimated(tmp_path, listed) > PER_CALL_LIMIT
    assert (policy.expensive, policy.failed) == ((), False)
    assert policy.unbounded == ("cluster.list", "params")


def test_an_expression_the_request_alone_takes_past_the_limit_fails_through_a_variable(tmp_path: Path) -> None:
    """Every pair of the object's items: a few thousand of them, a request of some kilobytes, pass the limit."""
    pairs = "variables.items.all(x, variables.items.all(y, x == y || x != y))"
    policy = _spec_policy(
        tmp_path,
        {
            "variables": [{"name": "items", "expression": "object.spec.items"}],
            "validations": [{"expression": pairs}],
            "failurePolicy": "Ignore",
        },
    )
    assert [found.expression for found in policy.expensive] == [pairs]
    assert policy.failed


def test_a_message_expression_is_not_counted(tmp_path: Path) -> None:
    """When a messageExpression fails (cancelled included) the apiserver words the denial as without it: the
    decision stands, so its cost fails nothing."""
    message = "string(object.spec.a) + string(object.spec.b) + string(object.spec.c) + string(object.spec.d)"
    policy = _spec_policy(tmp_path, {"validations": [{"expression": "false", "messageExpression": message}]})
    (loaded,) = load_policy_set([tmp_path / "policy.yaml"]).validating_policies
    message_expression = loaded.validations[-1].message_expression
    assert message_expression is not None
    assert message_expression.program.estimated_cost > PER_CALL_LIMIT
    assert (policy.expensive, policy.failed, policy.unbounded) == ((), False, ())


def test_the_annotations_of_an_admitted_object_are_a_map_of_bounded_strings(tmp_path: Path) -> None:
    """``in`` on a map costs 1, and annotations hold 256 KiB in all: the request cannot make this expensive, where
    the estimate of a dyn ``object`` counted a list as long as a request allows."""
    acknowledged = (
        "has(object.metadata.annotations) && 'example.com/ack' in object.metadata.annotations"
        " && object.metadata.annotations['example.com/ack'] == object.metadata.namespace"
    )
    policy = _spec_policy(tmp_path, {"validations": [{"expression": acknowledged}]})
    assert _estimated(tmp_path, acknowledged) > PER_CALL_LIMIT
    assert (policy.expensive, policy.unbounded) == ((), ())
