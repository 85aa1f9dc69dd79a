"""``upgrade-gate policy test|lint`` and ``cel eval`` as a user runs them."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from click.testing import CliRunner

from webhook.cli import main

ROOT = Path(__file__).resolve().parents[2]
SUITES = ROOT / "tests" / "data" / "policy" / "suites"


def _run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.stdout, result.stderr


def test_the_bundled_suites_pass_and_write_junit(tmp_path: Path) -> None:
    report = tmp_path / "junit.xml"
    code, out, _ = _run("policy", "test", str(ROOT / "policies" / "tests"), "--junit", str(report))
    assert code == 0
    assert out.rstrip().endswith(" passed, 0 failed")
    suites = ET.parse(report).getroot().findall("testsuite")
    assert {s.get("name") for s in suites} >= {"revision-approval", "revision-defaults", "revision-integrity"}
    assert all(s.get("failures") == "0" for s in suites)


def test_the_bundled_suites_pass_on_the_cel_expr_engine() -> None:
    code, out, _ = _run("policy", "test", str(ROOT / "policies" / "tests"), "--cel-engine", "cel-expr", "-o", "json")
    assert code == 0
    assert sum(len(suite["cases"]) for suite in json.loads(out)) > 50


def test_an_unknown_cel_engine_is_bad_input() -> None:
    code, _, err = _run("policy", "test", str(ROOT / "policies" / "tests"), "--cel-engine", "cel-go")
    assert code == 2
    assert "'cel-go' is not one of 'cel-python', 'cel-expr'" in err


def test_a_failing_case_exits_1_and_is_listed() -> None:
    code, out, err = _run("policy", "test", str(SUITES / "wrong-expectations.yaml"), "-o", "json")
    assert code == 1
    (suite,) = json.loads(out)
    assert [c["passed"] for c in suite["cases"]] == [True, False, False, False]
    assert err == "upgrade-gate: 3 of 4 cases failed\n"


def test_a_directory_without_suites_is_bad_input_with_one_line(tmp_path: Path) -> None:
    (tmp_path / "policy.yaml").write_text((ROOT / "policies" / "revision-integrity.yaml").read_text())
    code, out, err = _run("policy", "test", str(tmp_path))
    assert (code, out) == (2, "")
    assert err == f"upgrade-gate: no PolicyTest suite (kind: PolicyTest) found in {tmp_path}\n"


def test_lint_of_a_directory_without_policy_files_is_bad_input_with_one_line(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("nothing to lint")
    code, out, err = _run("policy", "lint", str(tmp_path))
    assert (code, out) == (2, "")
    assert err == f"upgrade-gate: no policy file (*.yaml, *.yml, *.json) found in {tmp_path}\n"


def test_lint_reports_a_binding_that_names_no_policy(tmp_path: Path) -> None:
    binding = (
        "apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingAdmissionPolicyBinding\n"
        "metadata: {name: orphan}\nspec: {policyName: upgrade-gate-revision-integrty, validationActions: [Deny]}\n"
    )
    (tmp_path / "binding.yaml").write_text(binding)
    (tmp_path / "policy.yaml").write_text((ROOT / "policies" / "revision-integrity.yaml").read_text())
    code, _, err = _run("policy", "lint", str(tmp_path))
    assert code == 1
    assert err == (
        f"{tmp_path / 'binding.yaml'}: ValidatingAdmissionPolicyBinding orphan: spec.policyName "
        "'upgrade-gate-revision-integrty' names no ValidatingAdmissionPolicy here\n"
    )


def test_a_missing_suite_path_is_bad_input(tmp_path: Path) -> None:
    code, _, err = _run("policy", "test", str(tmp_path / "nope"))
    assert code == 2
    assert err == f"upgrade-gate: {tmp_path / 'nope'}: no such file or directory\n"


def test_lint_lists_every_file_and_reports_the_broken_one(tmp_path: Path) -> None:
    (tmp_path / "good.yaml").write_text((SUITES / "deny-latest.yaml").read_text(encoding="utf-8"), encoding="utf-8")
    (tmp_path / "bad.yaml").write_text((SUITES / "broken.policy").read_text(encoding="utf-8"), encoding="utf-8")
    code, out, err = _run("policy", "lint", str(tmp_path), "-o", "json")
    assert code == 1
    by_file = {Path(r["file"]).name: r for r in json.loads(out)}
    assert by_file["good.yaml"]["policies"] == [
        {
            "kind": "ValidatingAdmissionPolicy",
            "name": "no-latest",
            "portable": False,
            "since": "1.32",
            "failed": False,
            "failurePolicy": "Fail",
            "unbounded": [],
            "extensions": [],
            "fallbacks": [],
            "expensive": [
                {
                    "expression": "object.spec.containers.all(c, !c.image.endsWith(':latest'))",
                    "estimatedCost": 9_437_180,  # 2 + 6 per element, as many as fit in a request: (3 MiB - 2) / 2
                    "message": "may be cancelled at run time: estimated cost 9437180 exceeds the per-expression limit "
                    "1000000",
                }
            ],
        }
    ]
    assert by_file["bad.yaml"]["errors"]
    assert err.startswith(f"{tmp_path / 'bad.yaml'}:8:")
    assert "spec.validations[0].expression" in err


def test_lint_says_which_bundled_policies_are_portable() -> None:
    code, out, _ = _run("policy", "lint", str(ROOT / "policies"), "-o", "json")
    assert code == 0
    portable = {p["name"]: p["portable"] for r in json.loads(out) for p in r["policies"]}
    assert portable["upgrade-gate-clusterextension-guards"] is True
    assert portable["upgrade-gate-revision-approval"] is False


def test_lint_lists_the_expressions_that_may_be_cancelled_at_run_time(tmp_path: Path) -> None:
    # a list read from the object holds up to (3 MiB - 2) / 2 elements; all() costs 2 + (3 + body) per element
    positive = "object.spec.items.all(y, y > 0)"
    policy = (SUITES / "deny-latest.yaml").read_text(encoding="utf-8")
    (tmp_path / "items.yaml").write_text(
        policy.replace("object.spec.containers", f"{positive} && object.spec.containers"), encoding="utf-8"
    )
    code, out, err = _run("policy", "lint", str(tmp_path))
    assert (code, err) == (0, ""), "failurePolicy Fail: a cancelled evaluation denies, the policy holds"
    table, findings = out.split("\n\n")
    assert "no-latest  no        1.32   1 expression(s) may be cancelled at run time" in table
    line = (
        f"{tmp_path / 'items.yaml'}: ValidatingAdmissionPolicy no-latest: {positive} && object.spec.containers...: "
        "may be cancelled at run time: estimated cost 17301497 exceeds the per-expression limit 1000000"
    )
    assert findings == f"{line} (failurePolicy Fail: such a request is denied)\n"
    (tmp_path / "items.yaml").write_text(
        (tmp_path / "items.yaml").read_text(encoding="utf-8").replace("failurePolicy: Fail", "failurePolicy: Ignore"),
        encoding="utf-8",
    )
    code, out, err = _run("policy", "lint", str(tmp_path))
    assert (code, err) == (1, ""), "failurePolicy Ignore: a cancelled evaluation admits unchecked"
    table, findings = out.split("\n\n")
    assert "may be cancelled at run time (FAILED)" in table
    assert (
        findings == f"{line} (failurePolicy Ignore: such a request is admitted unchecked, so the policy fails lint)\n"
    )
    code, out, _ = _run("policy", "lint", str(tmp_path), "-o", "json")
    (expensive,) = json.loads(out)[0]["policies"][0]["expensive"]
    assert expensive["estimatedCost"] == (2 + 5 * 1_572_863) + (2 + 6 * 1_572_863)


@pytest.mark.parametrize(
    ("args", "code", "out"),
    [
        pytest.param(['semver("1.2.3").isLessThan(semver("1.10.0"))'], 0, "true", id="a semver comparison"),
        pytest.param(["x.map(i, i * 2)", "--var", "x=[1, 2]"], 0, "[\n  2,\n  4\n]", id="a JSON variable"),
        pytest.param(['olm.inRange("1.4.0", ">=1.2 <2")'], 0, "true", id="an OLM range"),
        pytest.param(
            ['clock.now() == timestamp("2026-01-01T00:00:00Z")', "--now", "2026-01-01T00:00:00Z"],
            0,
            "true",
            id="the clock",
        ),
    ],
)
@pytest.mark.parametrize("engine", ["cel-python", "cel-expr"])
def test_cel_eval_prints_json(args: list[str], code: int, out: str, engine: str) -> None:
    assert _run("cel", "eval", *args, "--cel-engine", engine)[:2] == (code, out + "\n")


def test_cel_eval_reads_a_variable_from_a_file(tmp_path: Path) -> None:
    path = tmp_path / "rev.yaml"
    path.write_text("spec: {version: 1.2.3}\n", encoding="utf-8")
    assert _run("cel", "eval", "object.spec.version", "--var", f"object=@{path}")[:2] == (0, '"1.2.3"\n')


@pytest.mark.parametrize(
    ("args", "code", "error"),
    [
        pytest.param(["1 +"], 2, "upgrade-gate: compile error: ", id="a syntax error is bad input"),
        pytest.param(["1 / 0"], 1, "upgrade-gate: evaluation error: division by zero", id="a runtime error exits 1"),
        pytest.param(["x", "--var", "x=nope"], 2, "upgrade-gate: --var x: 'nope' is not JSON", id="a bad variable"),
    ],
)
@pytest.mark.parametrize("engine", ["cel-python", "cel-expr"])
def test_cel_eval_errors_are_one_line(args: list[str], code: int, error: str, engine: str) -> None:
    got, out, err = _run("cel", "eval", *args, "--cel-engine", engine)
    assert (got, out) == (code, "")
    assert err.startswith(error)
    assert err.count("\n") == 1


def test_lint_passes_the_bundled_policies() -> None:
    """They fail closed: whatever a request costs, lint does not fail them (exit 0, no FAILED)."""
    result = CliRunner().invoke(main, ["policy", "lint", str(ROOT / "policies")])
    assert result.exit_code == 0
    assert "FAILED" not in result.output
