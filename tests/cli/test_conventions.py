"""The one CLI convention (docs/cli.md, "Conventions"), across commands: ``-o`` and ``--output-file``, ``--now``,
one ``upgrade-gate: ...`` line per error, exit 2 for bad input, 3 for a service that was unavailable."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

import click
import pytest
import xmlschema
from click.testing import CliRunner

from webhook.cli import main
from webhook.cli.common import handle_errors
from webhook.errors import ForgeUnavailable, GitError, InputError, ResolutionError, UpgradeGateError

ROOT = Path(__file__).resolve().parents[2]
JUNIT_XSD = ROOT / "tests" / "data" / "junit" / "junit-10.xsd"
SUITES = ROOT / "tests" / "data" / "policy" / "suites"
BAD_NOW = "upgrade-gate: --now 'next week': expected an RFC 3339 time such as 2026-06-01T12:00:00Z\n"


def _run(*args: str, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args), env=env)
    return result.exit_code, result.stdout, result.stderr


@pytest.mark.parametrize(
    "argv",
    [
        pytest.param(["cel", "eval", "1", "--now", "next week"], id="cel eval"),
        pytest.param(["apply", "-f", str(ROOT / "policies" / "settings.yaml"), "--policies", str(ROOT / "policies"),
                      "--now", "next week"], id="apply"),
    ],
)  # fmt: skip
def test_a_bad_now_is_the_same_one_line_everywhere(argv: list[str]) -> None:
    assert _run(*argv) == (2, "", BAD_NOW)


def test_now_is_what_clock_now_returns_and_an_offset_is_kept() -> None:
    code, out, _ = _run(
        "cel", "eval", 'clock.now() == timestamp("2026-06-01T10:00:00Z")', "--now", "2026-06-01T12:00:00+02:00"
    )
    assert (code, out) == (0, "true\n")


def test_policy_test_junit_output_file_and_the_hidden_junit_alias_write_the_same_report(tmp_path: Path) -> None:
    suites = str(ROOT / "policies" / "tests")
    code, out, _ = _run("policy", "test", suites, "-o", "junit", "--output-file", str(tmp_path / "new.xml"))
    assert code == 0 and out.rstrip().endswith(" passed, 0 failed"), "the table is printed beside the file"
    assert _run("policy", "test", suites, "--junit", str(tmp_path / "old.xml"))[0] == 0
    untimed = [re.sub(r' time="[0-9.]+"', "", (tmp_path / n).read_text()) for n in ("new.xml", "old.xml")]
    assert untimed[0] == untimed[1]
    xmlschema.XMLSchema(JUNIT_XSD).validate(tmp_path / "new.xml")
    help_text = _run("policy", "test", "--help")[1]
    assert "--junit" not in help_text and "[table|json|junit]" in help_text


def test_policy_lint_junit_fails_the_broken_file(tmp_path: Path) -> None:
    (tmp_path / "broken.yaml").write_text((SUITES / "broken.policy").read_text(encoding="utf-8"), encoding="utf-8")
    code, out, _ = _run(
        "policy", "lint", str(SUITES / "deny-latest.yaml"), str(tmp_path / "broken.yaml"), "-o", "junit"
    )
    assert code == 1
    root = ET.fromstring(out)
    xmlschema.XMLSchema(JUNIT_XSD).validate(out)
    cases = {Path(c.get("name", "")).name: c.find("failure") for c in root.iter("testcase")}
    assert cases["deny-latest.yaml"] is None
    assert cases["broken.yaml"] is not None


def test_text_is_a_hidden_alias_of_table() -> None:
    for command in (["resolve"], ["sync"], ["doctor"]):
        help_text = _run(*command, "--help")[1]
        assert "text" not in help_text.split("-o, --output", 1)[1].split("\n", 1)[0]
    code, _, err = _run("doctor", "-o", "text", env={"KUBECONFIG": "/nowhere/config", "KUBERNETES_SERVICE_HOST": ""})
    assert (code, err.startswith("upgrade-gate: no cluster configuration: /nowhere/config: ")) == (2, True)


def test_sync_without_a_kubeconfig_it_needs_names_it_and_exits_2(tmp_path: Path) -> None:
    env = {"UPGRADE_GATE_CLUSTER": "on", "KUBECONFIG": str(tmp_path / "config"), "KUBERNETES_SERVICE_HOST": ""}
    code, out, err = _run("sync", "--repo", str(tmp_path), "--once", env=env)
    assert (code, out) == (2, "")
    missing = tmp_path / "config"
    assert (
        err == f"upgrade-gate: no cluster configuration: {missing}: Invalid kube-config file. No configuration found.\n"
    )


def test_a_multi_line_error_is_one_line_with_a_count(tmp_path: Path) -> None:
    """A policy set that does not load lists every problem on its own line; the CLI prints the first and counts
    the rest (policy lint lists them all)."""
    policy = (SUITES / "broken.policy").read_text(encoding="utf-8")
    broken = tmp_path / "policies.yaml"
    broken.write_text(f"{policy}\n---\n{policy.replace('name: broken', 'name: broken-too')}", encoding="utf-8")
    code, out, err = _run("apply", "-f", str(ROOT / "policies" / "settings.yaml"), "--policies", str(broken))
    assert (code, out, err.count("\n")) == (2, "", 1)
    assert err.startswith("upgrade-gate: the policy set does not load (") and err.endswith(" (and 1 more)\n")


@pytest.mark.parametrize(
    ("error", "code"),
    [
        pytest.param(ForgeUnavailable("github: GET /repos/o/r/pulls: HTTP 503"), 3, id="an unavailable forge"),
        pytest.param(InputError("--repo /: not a git repository"), 2, id="bad input"),
        pytest.param(GitError("git push: refusing to push"), 1, id="another git or forge failure"),
        pytest.param(ResolutionError("no bundles found for package"), 1, id="a negative result"),
    ],
)
def test_the_error_tree_maps_to_the_documented_exit_codes(error: UpgradeGateError, code: int) -> None:
    @click.command()
    @handle_errors
    def command() -> None:
        raise error

    result = CliRunner().invoke(command, [])
    assert (result.exit_code, result.stdout, result.stderr) == (code, "", f"upgrade-gate: {error}\n")


def test_review_help_documents_exit_3() -> None:
    help_text = " ".join(_run("review", "--help")[1].split())
    assert "3 the forge was unavailable (no answer, HTTP 5xx, rate limited): retry." in help_text
