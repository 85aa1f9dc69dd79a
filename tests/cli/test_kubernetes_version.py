"""``--kubernetes-version`` / ``UPGRADE_GATE_KUBERNETES_VERSION`` as a user runs them: the cluster's version decides
which CEL libraries and admission API versions a policy may use (``webhook.cel.versions``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from webhook.cli import main

TWO_VARIABLES = "{'a': 1}.transformMap(k, v, v + 1)"
POLICY = """\
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: sizes}
spec:
  matchConstraints:
    resourceRules: [{apiGroups: [''], apiVersions: [v1], operations: [CREATE], resources: [configmaps]}]
  validations:
    - expression: "object.data.all(k, v, size(v) < 10)"
---
apiVersion: admissionregistration.k8s.io/v1beta1
kind: MutatingAdmissionPolicy
metadata: {name: stamp}
spec:
  reinvocationPolicy: Never
  matchConstraints:
    resourceRules: [{apiGroups: [''], apiVersions: [v1], operations: [CREATE], resources: [configmaps]}]
  mutations: [{patchType: JSONPatch, jsonPatch: {expression: "[]"}}]
"""


def _run(*args: str, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args), env=env)
    return result.exit_code, result.stdout, result.stderr


def test_cel_eval_refuses_a_function_the_version_lacks_with_the_apiservers_message() -> None:
    code, _, err = _run("cel", "eval", TWO_VARIABLES, "--kubernetes-version", "1.32")
    assert code == 2
    assert err.startswith("upgrade-gate: compile error: 1:22: undeclared reference to 'transformMap' (in container '')")
    assert "1.33" in err and err.count("\n") == 1
    code, out, _ = _run("cel", "eval", TWO_VARIABLES, "--kubernetes-version", "1.33")
    assert (code, json.loads(out)) == (0, {"a": 2})


def test_the_variable_names_the_version_and_the_flag_wins() -> None:
    code, _, err = _run("cel", "eval", TWO_VARIABLES, env={"UPGRADE_GATE_KUBERNETES_VERSION": "1.32"})
    assert code == 2 and "transformMap" in err
    code, _, _ = _run(
        "cel", "eval", TWO_VARIABLES, "--kubernetes-version", "v1.36.2", env={"UPGRADE_GATE_KUBERNETES_VERSION": "1.32"}
    )
    assert code == 0


@pytest.mark.parametrize("given", ["1.31", "1.37", "latest", "1.34.x"])
def test_an_unknown_version_is_one_line_of_bad_input(given: str) -> None:
    code, _, err = _run("cel", "eval", "1", "--kubernetes-version", given)
    assert code == 2
    assert err.startswith("upgrade-gate: ") and err.count("\n") == 1
    assert f"'{given}': not a supported Kubernetes version (expected one of 1.32, 1.33, 1.34, 1.35, 1.36)" in err


def test_lint_says_since_which_version_a_policy_loads_and_refuses_it_before(tmp_path: Path) -> None:
    (tmp_path / "policy.yaml").write_text(POLICY)
    code, out, _ = _run("policy", "lint", str(tmp_path), "-o", "json")
    assert code == 0
    (report,) = json.loads(out)
    assert {(p["name"], p["since"]) for p in report["policies"]} == {("sizes", "1.33"), ("stamp", "1.34")}
    code, out, _ = _run("policy", "lint", str(tmp_path), "--kubernetes-version", "1.33", "-o", "json")
    assert code == 1
    (report,) = json.loads(out)
    (problem,) = report["errors"]
    assert (
        "(MutatingAdmissionPolicy/stamp): apiVersion: admissionregistration.k8s.io/v1beta1 is not served by " in problem
    )
    assert "Kubernetes 1.33" in problem
