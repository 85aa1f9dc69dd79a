"""``policy lint`` on policies the apiserver accepts but that cel-cpp cannot nest or that may run out of cost."""

from __future__ import annotations

from pathlib import Path

import yaml

from tests import tables
from webhook.policy.cel.estimate import SATURATED
from webhook.policy.lint import ExpensiveExpression, lint


def _policy(expression: str) -> dict[str, object]:
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


def test_lint_reports_an_expression_estimated_above_the_per_expression_limit(tmp_path: Path) -> None:
    """The apiserver creates such a policy (tests/data/oracle/policy_costs.yaml), so it loads; it is not portable:
    its evaluations may be cancelled at run time."""
    (recorded, *_) = tables.load("oracle/policy_costs.yaml")
    nested = recorded["expression"]
    (tmp_path / "nested.yaml").write_text(yaml.safe_dump(_policy(nested)), encoding="utf-8")
    (report,) = lint([tmp_path])
    assert report.errors == ()
    (policy,) = report.policies
    assert not policy.portable
    assert policy.extensions == ()
    assert policy.expensive == (ExpensiveExpression(nested, SATURATED),)
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
