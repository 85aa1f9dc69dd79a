"""``upgrade-gate sync`` as a user runs it: the summary table, ``-o json``, exit codes, one-line errors."""

from __future__ import annotations

import json
import shutil

import pytest
import yaml
from click.testing import CliRunner

from tests.sync.conftest import ROOT, World
from webhook.cli import main
from webhook.cli.sync import _render, parse_duration
from webhook.errors import InputError


def run(world: World, *args: str) -> tuple[int, str, str]:
    env = {"UPGRADE_GATE_CLUSTER": "off", "UPGRADE_GATE_FORGE_TOKEN": "t0ken"}
    argv = ["sync", "--repo", str(world.remote), "--workdir", str(world.workdir), "--no-progress", *args]
    result = CliRunner().invoke(main, argv, env=env)
    return result.exit_code, result.stdout, result.stderr


def test_the_summary_table_lists_what_changed_and_counts_the_rest(world: World) -> None:
    code, out, _ = run(world, "--once")
    lines = out.splitlines()
    assert code == 0
    assert lines[0].split() == ["SUBJECT", "ACTION", "FROM", "TO", "BRANCH", "PULL", "REQUEST", "REASON"]
    assert lines[1].split()[:5] == ["cloudnative-pg", "proposed", "1.29.2", "1.30.0", "upgrade-gate/cloudnative-pg"]
    assert lines[-1].startswith("1 proposed, 2 unchanged (base main at "), "the actions that happened, counted"


def test_a_dashboard_the_forge_refuses_is_one_warning_line_and_the_cycle_stands(world: World) -> None:
    world.set_config(lambda text: text + "dashboard:\n  enabled: true\n")
    world.push("dashboard on")
    world.github.rate_limit(only="/issues$")
    code, out, err = run(world, "--once", "-o", "json")
    assert (code, json.loads(out)["counts"]["proposed"]) == (0, 1)
    assert err == (
        "upgrade-gate: warning: github: cannot write the issue <!-- upgrade-gate:dashboard --> (upgrade-gate "
        "dashboard): GET /repos/example-org/clusters/issues: rate limited (HTTP 403, the limit resets at "
        "2026-03-01T13:00:00Z)\n"
    )
    assert json.loads(out)["warnings"] == [err.removeprefix("upgrade-gate: warning: ").rstrip("\n")]


def test_json_output_has_counts_and_every_entry(world: World) -> None:
    code, out, _ = run(world, "--once", "-o", "json")
    document = json.loads(out)
    assert code == 0
    assert document["counts"]["proposed"] == 1
    assert [e["subject"] for e in document["entries"]] == [
        "cloudnative-pg",
        "clustercatalog/certified-operators",
        "crunchy-postgres-operator",
    ]
    assert document["entries"][0]["pull_request"] == "https://github.invalid/example-org/clusters/pull/1"


def test_an_invalid_config_exits_2_with_one_line(world: World) -> None:
    world.set_config(lambda text: text.replace("baseBranch: main", "baseBranch: [main]"))
    world.push("a broken config")
    code, _, err = run(world, "--once")
    assert (code, err) == (2, "upgrade-gate: upgrade-gate.yaml: baseBranch: must be a non-empty string\n")


def test_an_unavailable_forge_exits_3_with_one_line(world: World) -> None:
    world.github.fail_with = 502
    code, _, err = run(world, "--once")
    assert code == 3
    assert err.startswith("upgrade-gate: github: GET /repos/example-org/clusters/pulls: HTTP 502")


def test_once_and_interval_exclude_each_other(world: World) -> None:
    assert run(world, "--once", "--interval", "10m")[::2] == (
        2,
        "upgrade-gate: --once and --interval exclude each other\n",
    )


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("10m", 600.0), ("1h30m", 5400.0), ("45s", 45.0), ("1.5h", 5400.0), ("500ms", 0.5)],
    ids=str,
)
def test_intervals_are_go_durations(text: str, seconds: float) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["10", "ten minutes", "0s", "10m "], ids=repr)
def test_other_intervals_are_refused(text: str) -> None:
    with pytest.raises(InputError, match="--interval"):
        parse_duration(text)


def test_a_held_add_on_is_listed_with_the_gate_message_and_its_ready_time_in_json(world: World) -> None:
    addons = ROOT / "tests" / "data" / "gitops" / "addons"
    shutil.copytree(addons / "clusters", world.human / "clusters", dirs_exist_ok=True)
    cma = (addons / "clusters/hub/addons/helloworld.yaml").read_text()
    world.write("clusters/hub/addons/helloworld.yaml", cma.replace('installVersion: "v1"', 'installVersion: "v2"'))
    objects = yaml.safe_load((addons / "cluster.yaml").read_text())
    canary = objects[-1]
    canary["spec"]["installVersion"] = canary["status"]["currentVersion"] = "v2"
    canary["status"]["conditions"][0]["lastTransitionTime"] = "2999-01-01T00:00:00Z"
    world.write("clusters/hub/addons/managed.yaml", yaml.safe_dump_all([canary]))
    world.write("clusters/hub/addons/decisions.yaml", yaml.safe_dump_all(objects[1:3]))
    world.set_config(lambda text: text + "addons: {manifests: clusters/hub/addons, installed: status}\n")
    world.push("helloworld's canary runs v2")
    code, out, _ = run(world, "--once")
    [row] = [line for line in out.splitlines() if line.startswith("addon/helloworld")]
    assert (code, row.split()[:2]) == (0, ["addon/helloworld", "held"])
    assert row.endswith(
        "placement default/global-placement waits for the canary placement default/canary-placement: canaries run v2 "
        "successfully; the soak of 1h ends at 2999-01-01T01:00:00Z"
    )
    code, out, _ = run(world, "--once", "-o", "json")
    [held] = [e for e in json.loads(out)["entries"] if e["subject"] == "addon/helloworld"]
    assert (held["action"], held["ready_at"]) == ("held", "2999-01-01T01:00:00Z")


def test_a_run_with_problems_lists_them_by_file_and_exits_1_with_one_line(world: World) -> None:
    world.write("clusters/prod/extensions/broken.yaml", "kind: ClusterExtension\nmetadata: {name: [\n")
    path = world.human / "clusters/prod/extensions/crunchy-postgres-operator.yaml"
    path.write_text(path.read_text().replace("packageName: crunchy-postgres-operator", "packageName: nope"))
    world.push("a broken file and a package no catalog has")
    code, out, err = run(world, "--once")
    rows = {line.split()[0]: line.split()[1] for line in out.splitlines()[1:-1]}
    assert rows == {
        "clusters/prod/extensions/broken.yaml:3": "invalid",
        "cloudnative-pg": "proposed",
        "crunchy-postgres-operator": "unresolved",
    }
    assert (code, err) == (1, "upgrade-gate: 2 need attention (1 invalid, 1 unresolved)\n")


def test_a_base_branch_the_remote_lacks_is_bad_input(world: World) -> None:
    world.set_config(lambda text: text.replace("baseBranch: main", "baseBranch: nope"))
    world.push("a base branch that does not exist")
    assert run(world, "--once")[::2] == (
        2,
        "upgrade-gate: upgrade-gate.yaml: baseBranch: the remote has no branch nope\n",
    )


def test_an_unreachable_catalogd_url_exits_3_with_one_line(world: World) -> None:
    world.set_config(lambda text: text.replace("content: fbc/{name}", "content: http://127.0.0.1:9/catalogs/{name}"))
    world.push("catalogd that is not there")
    code, _, err = run(world, "--once")
    assert code == 3, "an outage: retry (docs/cli.md, exit codes)"
    assert err.startswith("upgrade-gate: http://127.0.0.1:9/catalogs/certified-operators/api/v1/all: cannot fetch")
    assert err.count("\n") == 1


def test_a_dry_run_prints_the_diffs_and_says_nothing_was_pushed(world: World) -> None:
    code, out, _ = run(world, "--once", "--dry-run")
    assert code == 0
    assert "cloudnative-pg on upgrade-gate/cloudnative-pg:\n--- /dev/null\n+++ b/clusters/prod/revisions/" in out
    assert out.rstrip().endswith("; dry run: nothing pushed, nothing written to the forge)")
    assert list(world.branches()) == ["main"]


def test_interval_cycles_print_their_time_and_only_what_changed(
    world: World, capsys: pytest.CaptureFixture[str]
) -> None:
    first = world.sync()
    _render(first, "text", stamp="2026-03-01T12:00:00Z")
    second = world.sync()
    _render(second, "text", stamp="2026-03-01T12:10:00Z", previous=first)
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "2026-03-01T12:00:00Z cycle"
    assert lines[2].startswith("cloudnative-pg  proposed")
    assert lines[-2] == "2026-03-01T12:10:00Z cycle", "nothing changed: the time and the counts only"
