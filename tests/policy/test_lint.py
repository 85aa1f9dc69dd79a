"""``policy lint`` on policies whose expressions the apiserver accepts but cel-cpp's parser cannot nest."""

from __future__ import annotations

from pathlib import Path

import yaml

from webhook.policy.lint import lint


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
    deep = "size(" + " + ".join(["object.metadata.name"] * 40) + ") > 0"  # 40 levels: cel-cpp parses 32
    (tmp_path / "deep.yaml").write_text(yaml.safe_dump(_policy(deep)), encoding="utf-8")
    (report,) = lint([tmp_path])
    (policy,) = report.policies
    assert policy.portable
    assert policy.fallbacks == (f"cel-python: {deep}",)


def test_lint_names_no_fallback_for_an_ordinary_policy(tmp_path: Path) -> None:
    (tmp_path / "flat.yaml").write_text(yaml.safe_dump(_policy("size(object.metadata.name) > 0")), encoding="utf-8")
    (report,) = lint([tmp_path])
    assert report.policies[0].fallbacks == ()
