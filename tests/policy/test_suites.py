"""PolicyTest suites: the bundled policies' own suites, and the runner's reporting (it must be able to fail)."""

from __future__ import annotations

import dataclasses
import functools
import re
import shutil
from pathlib import Path

import pytest
import yaml

from webhook.errors import InputError
from webhook.policy.suites import SUMMARY_WIDTH, CaseResult, Suite, SuiteResult, load_suites, run_suite
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


#: A value a team might give each setting of policies/settings.yaml, each unlike the shipped default and each one
#: that changes a bundled case's decision (a freeze window over every day, a maintenance window the suites' times
#: fall outside, ...).
CUSTOMISED = {
    "approverGroups": "release-managers",
    "gitopsAppliers": "system:serviceaccount:argocd:argocd-application-controller",
    "soakPeriod": "72h",
    "freezeWindows": "Mon-Sun 00:00-24:00",
    "maintenanceWindows": "Sat 02:00-06:00",
    "operatorControllerUsers": "system:serviceaccount:olm:operator-controller",
    "requireCatalogSelector": "true",
    "addonCanaryPlacement": "open-cluster-management/canary",
    "addonCanarySoak": "24h",
}


def _customised(tmp_path: Path, settings: dict[str, str]) -> list[Suite]:
    """The bundled suites of a copy of policies/ whose settings.yaml has ``settings``."""
    copy = tmp_path / "policies"
    shutil.copytree(ROOT / "policies", copy)
    document = yaml.safe_load((copy / "settings.yaml").read_text(encoding="utf-8"))
    assert set(settings) <= set(document["data"]), "a customised setting the shipped settings.yaml lacks"
    document["data"].update(settings)
    (copy / "settings.yaml").write_text(yaml.safe_dump(document), encoding="utf-8")
    return load_suites([copy / "tests"])


def _failed(suites: list[Suite], engine: str) -> list[str]:
    results = [run_suite(suite, engine=engine) for suite in suites]
    assert all(result.error is None for result in results)
    return [f"{r.name}: {c.case}: {c.summary}" for r in results for c in r.cases if not c.passed]


@pytest.mark.parametrize("engine", CEL_ENGINES)
@pytest.mark.parametrize("setting", sorted(CUSTOMISED))
def test_the_bundled_suites_pass_whatever_a_team_sets(tmp_path: Path, setting: str, engine: str) -> None:
    """Every case that depends on the setting states it (spec.settings, cases[].settings), so customising it breaks
    no case; without the stated settings the same copy fails some, so the customisation is felt."""
    suites = _customised(tmp_path, {setting: CUSTOMISED[setting]})
    assert _failed(suites, engine) == []
    unstated = [
        dataclasses.replace(suite, cases=tuple(dataclasses.replace(case, settings={}) for case in suite.cases))
        for suite in suites
    ]
    assert _failed(unstated, engine) != []


def test_the_bundled_suites_pass_with_every_setting_customised(tmp_path: Path) -> None:
    assert _failed(_customised(tmp_path, CUSTOMISED), CEL_ENGINES[0]) == []


def test_stated_settings_are_laid_over_the_repository_settings() -> None:
    """The suite's prefix with the settings ConfigMap's suffix, a case's prefix over the suite's, settings over a
    ConfigMap a case gives; a stated setting that contradicts the expectation still fails the case."""
    (stated, _) = load_suites([DATA / "settings.yaml"])
    results = {case.case: case for case in run_suite(stated).cases}
    assert {name: result.outcome for name, result in results.items()} == {
        "the suite's prefix and the repository's suffix": "PASS",
        "a case's prefix over the suite's": "PASS",
        "a stated prefix that contradicts the expectation fails the case": "FAIL",
        "settings laid over a ConfigMap the case gives": "PASS",
    }
    assert results["a stated prefix that contradicts the expectation fails the case"].failures == (
        "expected allowed=True, got allowed=False: ValidatingAdmissionPolicy 'named' with binding 'named' denied "
        "request: names start with ops- and end with -config",
    )


def test_settings_no_binding_reads_skip_the_case_with_the_reason() -> None:
    (_, unread) = load_suites([DATA / "settings.yaml"])
    skipped, ran = run_suite(unread).cases
    assert (skipped.outcome, skipped.passed, skipped.admission) == ("SKIP", True, None)
    assert skipped.summary == "the case states settings, but no binding of its policies reads a param"
    assert (ran.outcome, ran.skipped) == ("PASS", None)


def test_settings_of_a_param_the_binding_does_not_find_skip_the_case(tmp_path: Path) -> None:
    """Without the repository's ConfigMap only the case that gives one runs."""
    policy = (DATA / "settings-policy.yaml").read_text(encoding="utf-8")
    policy = policy.replace("metadata: {name: naming,", "metadata: {name: other,")
    (tmp_path / "policy.yaml").write_text(policy, encoding="utf-8")
    suite = (DATA / "settings.yaml").read_text(encoding="utf-8").replace("settings-policy.yaml", "policy.yaml")
    (tmp_path / "suite.yaml").write_text(suite, encoding="utf-8")
    (stated, _) = load_suites([tmp_path / "suite.yaml"])
    *skipped, given = run_suite(stated).cases
    reason = (
        "the case states settings, but binding named cannot read its param: "
        "no params found for policy binding with `Deny` parameterNotFoundAction"
    )
    assert [case.skipped for case in skipped] == [reason] * 3
    assert given.outcome == "PASS"


def test_a_setting_that_is_not_a_string_is_bad_input(tmp_path: Path) -> None:
    path = tmp_path / "suite.yaml"
    path.write_text(
        "apiVersion: upgrade-gate.io/v1alpha1\nkind: PolicyTest\nmetadata: {name: s}\nspec:\n  policies: [p.yaml]\n"
        "  settings: {requireCatalogSelector: true}\n"
        "  cases: [{name: c, object: {apiVersion: v1, kind: Pod}, expect: {}}]\n",
        encoding="utf-8",
    )
    with pytest.raises(InputError, match=r"spec\.settings\.requireCatalogSelector must be a string"):
        load_suites([path])


def test_a_failure_summary_is_one_short_line_and_the_failures_stay_whole() -> None:
    results = _results("wrong-expectations.yaml")
    two = results["a wrong message and code fail the case"]
    assert two.summary == "expected code 403, got 422 (+1 more)"
    assert len(two.failures) == 2
    latest = results["expecting a latest image to pass fails the case"]
    assert latest.summary == "expected allowed=True, got allowed=False: no-latest: images must be pinned"


def test_a_long_message_mismatch_is_summarised_around_its_first_difference(tmp_path: Path) -> None:
    """The bundled approver denial, ~240 characters, expected with other approver groups: the summary shows where
    they part (the issue's ~600-character failure line), the failure itself keeps both messages whole."""
    suites = _customised(tmp_path, {"approverGroups": "release-managers"})
    suite = next(s for s in suites if s.name == "revision-approval")
    case = next(c for c in suite.cases if c.name == "a user outside the approver groups may not approve")
    unstated = dataclasses.replace(suite, cases=(dataclasses.replace(case, settings={}),))
    (result,) = run_suite(unstated).cases
    (failure,) = result.failures
    assert "[upgrade-approvers, platform-admins]" in failure
    assert "[release-managers]" in failure
    assert "\n" not in result.summary
    assert len(result.summary) <= SUMMARY_WIDTH
    assert result.summary.startswith("expected message …'")
    assert "members of [upgrade-approvers, platform-ad'…" in result.summary
    assert result.summary.endswith("members of [release-managers]'")


def test_a_patched_object_mismatch_is_summarised_at_its_first_differing_field() -> None:
    suite = SUITES["revision-defaults"]
    case = next(c for c in suite.cases if c.name == "a new revision gets approved false and the clusterextension label")
    wrong = {**case.expect["patched"], "spec": {**case.expect["patched"]["spec"], "approved": True}}
    (result,) = run_suite(
        dataclasses.replace(suite, cases=(dataclasses.replace(case, expect={"patched": wrong}),))
    ).cases
    assert result.summary == "the patched object differs at /spec/approved: expected True, got False"


def test_every_shipped_setting_is_customised_above() -> None:
    document = yaml.safe_load((ROOT / "policies" / "settings.yaml").read_text(encoding="utf-8"))
    assert set(document["data"]) == set(CUSTOMISED)


@pytest.mark.parametrize(("suite", "case"), BUNDLED, ids=[f"{s}: {c}" for s, c in BUNDLED])
def test_a_bundled_case_states_every_setting_its_policies_read(suite: str, case: str) -> None:
    """Where the suite's policies read the settings (``params.data.<name>``), each case states every one."""
    found = SUITES[suite]
    if not any(path.name == "settings.yaml" for path in found.policies):
        return  # the suite runs without the settings ConfigMap
    texts = [path.read_text(encoding="utf-8") for path in found.policies if path.name != "settings.yaml"]
    read = {name for text in texts for name in re.findall(r"params\.data\.([A-Za-z]+)", text)}
    stated = next(c for c in found.cases if c.name == case).settings
    assert read - set(stated) == set()
