"""PolicyTest suites: the bundled policies' own suites, and the runner's reporting (it must be able to fail)."""

from __future__ import annotations

import functools
from pathlib import Path

import pytest

from webhook.errors import InputError
from webhook.policy.suites import CaseResult, SuiteResult, load_suites, run_suite
from webhook.settings import CEL_ENGINES

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data" / "policy" / "suites"
SUITES = {suite.name: suite for suite in load_suites([ROOT / "policies" / "tests"])}
BUNDLED = [(name, case.name) for name, suite in SUITES.items() for case in suite.cases]


@functools.cache
def _bundled_result(name: str, engine: str) -> SuiteResult:
    return run_suite(SUITES[name], engine=engine)


def _bundled_case(suite: str, case: str, engine: str) -> CaseResult:
    result = _bundled_result(suite, engine)
    assert result.error is None
    return next(r for r in result.cases if r.case == case)


@pytest.mark.parametrize("engine", CEL_ENGINES)
@pytest.mark.parametrize(("suite", "case"), BUNDLED, ids=[f"{s}: {c}" for s, c in BUNDLED])
def test_bundled_policy_case(suite: str, case: str, engine: str) -> None:
    assert _bundled_case(suite, case, engine).failures == ()


@pytest.mark.parametrize(("suite", "case"), BUNDLED, ids=[f"{s}: {c}" for s, c in BUNDLED])
def test_both_cel_engines_admit_a_bundled_case_identically(suite: str, case: str) -> None:
    """Beyond the case's expectations: the same patch, messages, warnings and audit annotations."""
    first, second = (_bundled_case(suite, case, engine).admission for engine in CEL_ENGINES)
    assert first is not None
    assert first == second


def test_every_bundled_policy_file_has_a_suite() -> None:
    tested = {p.resolve() for suite in load_suites([ROOT / "policies" / "tests"]) for p in suite.policies}
    policies = {p.resolve() for p in (ROOT / "policies").glob("*.yaml")}
    assert policies - tested == set()


def _results(name: str) -> dict[str, CaseResult]:
    (suite,) = load_suites([DATA / name])
    return {case.case: case for case in run_suite(suite).cases}


def test_unmet_expectations_are_reported_as_sentences() -> None:
    results = _results("wrong-expectations.yaml")
    denial = "ValidatingAdmissionPolicy 'no-latest' with binding 'no-latest' denied request: images must be pinned"
    assert results["a pinned image passes"].failures == ()
    assert results["expecting a latest image to pass fails the case"].failures == (
        f"expected allowed=True, got allowed=False: {denial}",
    )
    assert results["a wrong message and code fail the case"].failures == (
        "expected code 403, got 422",
        f"expected message 'images must be signed', got {denial!r}",
    )
    assert results["a regex that does not match fails the case"].failures == (
        f"expected a message matching '^images must be signed$', got {denial!r}",
        "expected warnings ['careful'], got []",
    )


def test_a_policy_that_does_not_load_fails_only_its_suite() -> None:
    (suite,) = load_suites([DATA / "broken-policy.yaml"])
    result = run_suite(suite)
    assert not result.passed
    assert result.error is not None
    assert "broken.policy:8" in result.error


@pytest.mark.parametrize(
    ("text", "error"),
    [
        pytest.param(
            "apiVersion: v1\nkind: PolicyTest\n", "needs apiVersion upgrade-gate.io/v1alpha1", id="wrong group"
        ),
        pytest.param(
            "apiVersion: upgrade-gate.io/v1alpha1\nkind: PolicyTest\nmetadata: {name: s}\nspec: {policies: [p.yaml]}\n",
            "spec.cases must list at least one case",
            id="no cases",
        ),
        pytest.param(
            "apiVersion: upgrade-gate.io/v1alpha1\nkind: PolicyTest\nmetadata: {name: s}\n"
            "spec: {policies: [p.yaml], cases: [{name: c, operation: PATCH, object: {}, expect: {}}]}\n",
            "case 'c': operation must be one of CREATE, UPDATE, DELETE, CONNECT, not 'PATCH'",
            id="unknown operation",
        ),
        pytest.param(
            "apiVersion: upgrade-gate.io/v1alpha1\nkind: PolicyTest\nmetadata: {name: s}\nspec: {policies: [p.yaml], "
            "cases: [{name: c, object: {apiVersion: v1, kind: Pod}, expect: {allow: true}}]}\n",
            "case 'c': unknown expectation(s) allow",
            id="misspelt expectation",
        ),
    ],
)
def test_a_malformed_suite_names_its_file_and_problem(tmp_path: Path, text: str, error: str) -> None:
    path = tmp_path / "suite.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(InputError) as raised:
        load_suites([path])
    assert str(raised.value).startswith(f"{path}:1: ")
    assert error in str(raised.value)
