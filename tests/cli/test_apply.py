"""``upgrade-gate apply`` as a user runs it, against the bundled ``policies/``: each verdict below follows from a
rule the policies document in their header comments and from their settings (``policies/settings.yaml``:
approverGroups ``upgrade-approvers,platform-admins``, soakPeriod ``24h``), not from what the code printed."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
import xmlschema
import yaml
from click.testing import CliRunner

from webhook.cli import main

ROOT = Path(__file__).resolve().parents[2]
POLICIES = ROOT / "policies"
JUNIT_XSD = ROOT / "tests" / "data" / "junit" / "junit-10.xsd"
NOW = "2026-06-01T12:00:00Z"
APPROVAL = "upgrade-gate-revision-approval"
INTEGRITY = "upgrade-gate-revision-integrity"
RULE = {"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["configmaps"]}


def revision(
    name: str, version: str, *, approved: bool | None = None, since: str = "2026-05-01T00:00:00Z"
) -> dict[str, Any]:
    extension = name.rsplit("-", 1)[0]
    spec: dict[str, Any] = {"clusterExtensionRef": {"name": extension}, "version": version, "availableSince": since}
    if approved is not None:
        spec["approved"] = approved
    return {
        "apiVersion": "olm.operatorframework.io/v1",
        "kind": "ClusterExtensionRevision",
        "metadata": {"name": name},
        "spec": spec,
    }


def write(path: Path, *documents: dict[str, Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump_all(documents, sort_keys=False), encoding="utf-8")
    return path


def run(*args: str) -> tuple[int, str, str]:
    """``apply`` with the bundled policies (unless ``args`` name others) at ``NOW``."""
    policies = [] if "--policies" in args else ["--policies", str(POLICIES)]
    result = CliRunner().invoke(main, ["apply", *policies, "--now", NOW, *args])
    return result.exit_code, result.stdout, result.stderr


def results(*args: str) -> tuple[int, list[dict[str, Any]]]:
    code, out, _ = run(*args, "-o", "json")
    return code, json.loads(out)["results"]


def test_an_unapproved_revision_is_created_with_the_defaults_patch(tmp_path: Path) -> None:
    """revision-defaults: ``approved: false`` and the ``clusterextension`` label on create; nothing else denies."""
    manifest = write(tmp_path / "rev.yaml", revision("cloudnative-pg-1.28.0", "1.28.0"))
    code, [row] = results("-f", str(manifest), "--as", "bob")
    assert code == 0
    assert {k: row[k] for k in ("file", "line", "object", "operation", "verdict", "policy")} == {
        "file": str(manifest),
        "line": 1,
        "object": "ClusterExtensionRevision cloudnative-pg-1.28.0",
        "operation": "CREATE",
        "verdict": "admitted",
        "policy": None,
    }
    patched = {(p["op"], p["path"]): p["value"] for p in row["patch"]}
    assert patched == {
        ("add", "/metadata/labels"): {"clusterextension": "cloudnative-pg"},
        ("add", "/spec/approved"): False,
    }


def test_an_approval_by_a_non_approver_is_denied_with_the_policys_message(tmp_path: Path) -> None:
    manifest = write(tmp_path / "rev.yaml", revision("cloudnative-pg-1.28.0", "1.28.0", approved=True))
    code, out, err = run("-f", str(manifest), "--as", "bob")
    message = (
        'user "bob" may not approve cloudnative-pg-1.28.0: approvers are members of '
        "[upgrade-approvers, platform-admins]"
    )
    header, row, summary = out.splitlines()
    assert header.split() == ["FILE", "OBJECT", "OPERATION", "VERDICT", "POLICY", "MESSAGE"]
    assert row.split(None, 6) == [f"{manifest}:1", "ClusterExtensionRevision", "cloudnative-pg-1.28.0", "CREATE",
                                  "denied", APPROVAL, message]  # fmt: skip
    assert summary == f"1 denied (as bob, at {NOW})"
    assert (code, err) == (1, "upgrade-gate: 1 of 1 objects not admitted (1 denied)\n")


def test_an_approver_is_admitted_and_stamped(tmp_path: Path) -> None:
    """An approver group member after the soak: admitted; revision-defaults records who and when."""
    manifest = write(tmp_path / "rev.yaml", revision("cloudnative-pg-1.28.0", "1.28.0", approved=True))
    code, [row] = results("-f", str(manifest), "--as", "alice", "--as-group", "platform-admins")
    assert (code, row["verdict"]) == (0, "admitted")
    assert {p["path"]: p["value"] for p in row["patch"]}.items() >= {
        "/spec/approvedBy": "alice",
        "/spec/approvedAt": NOW,
    }.items()


def test_an_object_the_cluster_holds_is_updated_with_it_as_old_object(tmp_path: Path) -> None:
    """The cluster holds the unapproved revision, available since this morning: approving it is an UPDATE, and
    the 24h soak period of the settings denies it."""
    since = "2026-06-01T00:00:00Z"
    cluster = write(
        tmp_path / "cluster" / "rev.yaml", revision("cloudnative-pg-1.28.0", "1.28.0", approved=False, since=since)
    )
    manifest = write(tmp_path / "rev.yaml", revision("cloudnative-pg-1.28.0", "1.28.0", approved=True, since=since))
    args = ("-f", str(manifest), "--as", "alice", "--as-group", "upgrade-approvers")
    code, [row] = results(*args, "--cluster-objects", str(tmp_path / "cluster"))
    assert (code, row["operation"], row["verdict"], row["policy"]) == (1, "UPDATE", "denied", APPROVAL)
    assert row["message"] == (
        f"cloudnative-pg-1.28.0 became available at {since}; it may be approved after the 24h soak period, "
        "from 2026-06-02T00:00:00Z"
    )
    assert cluster.exists()
    code, [row] = results(*args, "--cluster-objects", str(cluster), "--now", "2026-06-02T00:00:00Z")
    assert (code, row["operation"], row["verdict"]) == (0, "UPDATE", "admitted")


def test_lookups_read_the_cluster_objects(tmp_path: Path) -> None:
    """revision-approval reads the ClusterExtension (cluster.get): 1.27.1 installed, so approving 2.0.0 is a major
    upgrade that needs its acknowledgement; revision-integrity lists the revisions (cluster.list): one per
    extension."""
    extension = {
        "apiVersion": "olm.operatorframework.io/v1",
        "kind": "ClusterExtension",
        "metadata": {"name": "cloudnative-pg"},
        "spec": {"source": {"sourceType": "Catalog", "catalog": {"packageName": "cloudnative-pg"}}},
        "status": {"install": {"bundle": {"name": "cloudnative-pg.v1.27.1", "version": "1.27.1"}}},
    }
    cluster = write(tmp_path / "cluster.yaml", extension, revision("cloudnative-pg-1.28.0", "1.28.0", approved=False))
    proposal = write(tmp_path / "proposal.yaml", revision("cloudnative-pg-2.0.0", "2.0.0"))
    code, [row] = results("-f", str(proposal), "--cluster-objects", str(cluster))
    assert (code, row["operation"], row["verdict"], row["policy"]) == (1, "CREATE", "denied", INTEGRITY)
    assert row["message"] == (
        "ClusterExtension cloudnative-pg already has the revision cloudnative-pg-1.28.0; update it instead of creating "
        "another"
    )
    approval = write(tmp_path / "approval.yaml", revision("cloudnative-pg-2.0.0", "2.0.0", approved=True))
    only_extension = write(tmp_path / "extension.yaml", extension)
    args = ("-f", str(approval), "--as", "alice", "--as-group", "platform-admins")
    code, [row] = results(*args, "--cluster-objects", str(only_extension))
    assert (code, row["verdict"], row["policy"]) == (1, "denied", APPROVAL)
    assert row["message"].endswith(
        "upgrading cloudnative-pg from 1.27.1 to 2.0.0 is a major upgrade: acknowledge it with the annotation "
        'upgrade-gate.io/acknowledge-major-upgrade: "2.0.0"'
    )


def test_objects_are_applied_in_order_and_later_ones_see_earlier_ones(tmp_path: Path) -> None:
    """kubectl apply -f writes one object after the other: a second revision of the same extension is refused by
    the one-per-extension rule, and the same object given twice is created, then updated."""
    first, second = revision("cloudnative-pg-1.28.0", "1.28.0"), revision("cloudnative-pg-1.29.0", "1.29.0")
    write(tmp_path / "a" / "first.yaml", first)
    write(tmp_path / "b.yaml", second, first)
    code, rows = results("-f", str(tmp_path))
    assert [(Path(r["file"]).name, r["operation"], r["verdict"], r["policy"]) for r in rows] == [
        ("first.yaml", "CREATE", "admitted", None),
        ("b.yaml", "CREATE", "denied", INTEGRITY),
        ("b.yaml", "UPDATE", "admitted", None),
    ]
    assert code == 1


def test_settings_among_the_cluster_objects_win_over_the_policies_own(tmp_path: Path) -> None:
    settings = yaml.safe_load((POLICIES / "settings.yaml").read_text(encoding="utf-8"))
    settings["data"]["approverGroups"] = "release-managers"
    cluster = write(tmp_path / "settings.yaml", settings)
    manifest = write(tmp_path / "rev.yaml", revision("cloudnative-pg-1.28.0", "1.28.0", approved=True))
    args = ("-f", str(manifest), "--as", "bob", "--as-group", "release-managers")
    assert results(*args)[1][0]["verdict"] == "denied"
    assert results(*args, "--cluster-objects", str(cluster))[1][0]["verdict"] == "admitted"


def test_a_warn_binding_gives_a_warned_row_and_exit_0(tmp_path: Path) -> None:
    policy = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": "labelled"},
        "spec": {
            "matchConstraints": {"resourceRules": [RULE]},
            "validations": [{"expression": "has(object.metadata.labels)", "message": "label it"}],
        },
    }
    binding = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": "labelled"},
        "spec": {"policyName": "labelled", "validationActions": ["Warn"]},
    }
    policies = write(tmp_path / "policies.yaml", policy, binding)
    manifest = write(
        tmp_path / "cm.yaml", {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "n"}}
    )
    result = CliRunner().invoke(main, ["apply", "-f", str(manifest), "--policies", str(policies), "-o", "json"])
    [row] = json.loads(result.stdout)["results"]
    assert (result.exit_code, row["object"], row["verdict"], row["policy"]) == (
        0,
        "ConfigMap n/c",
        "warned",
        "labelled",
    )
    assert (
        row["message"] == "Validation failed for ValidatingAdmissionPolicy 'labelled' with binding 'labelled': label it"
    )


def test_a_document_that_is_not_yaml_is_an_invalid_row_at_the_parsers_line(tmp_path: Path) -> None:
    write(tmp_path / "good.yaml", revision("cloudnative-pg-1.28.0", "1.28.0"))
    (tmp_path / "bad.yaml").write_text("kind: ConfigMap\nmetadata:\n  name: [x\n", encoding="utf-8")
    code, rows = results("-f", str(tmp_path))
    assert code == 1
    assert [(Path(r["file"]).name, r["line"], r["verdict"]) for r in rows] == [
        ("bad.yaml", 4, "invalid"),
        ("good.yaml", 1, "admitted"),
    ]
    assert rows[0]["message"].startswith("invalid YAML: ")


def test_an_update_of_an_object_the_cluster_does_not_hold_is_invalid(tmp_path: Path) -> None:
    manifest = write(tmp_path / "rev.yaml", revision("cloudnative-pg-1.28.0", "1.28.0"))
    code, [row] = results("-f", str(manifest), "--operation", "UPDATE")
    assert (code, row["operation"], row["verdict"]) == (1, "UPDATE", "invalid")
    assert "NotFound" in row["message"]


def test_json_document_shape(tmp_path: Path) -> None:
    manifest = write(tmp_path / "rev.yaml", revision("cloudnative-pg-1.28.0", "1.28.0"))
    code, out, _ = run("-f", str(manifest), "--as", "bob", "--as-group", "dev", "-o", "json")
    document = json.loads(out)
    assert code == 0
    assert set(document) == {"user", "now", "results", "passed"}
    assert document["user"] == {"username": "bob", "groups": ["dev", "system:authenticated"]}
    assert (document["now"], document["passed"]) == (NOW, True)
    assert set(document["results"][0]) == {
        "file",
        "line",
        "object",
        "operation",
        "verdict",
        "policy",
        "message",
        "patch",
    }


def test_junit_has_a_case_per_row_and_validates_against_the_junit_schema(tmp_path: Path) -> None:
    write(tmp_path / "in" / "a.yaml", revision("cloudnative-pg-1.28.0", "1.28.0"))
    write(tmp_path / "in" / "b.yaml", revision("other-1.0.0", "1.0.0", approved=True))
    report = tmp_path / "apply.xml"
    code, out, _ = run("-f", str(tmp_path / "in"), "--as", "bob", "-o", "junit", "--output-file", str(report))
    assert code == 1
    assert out.splitlines()[0].split()[0] == "FILE", "the table is printed beside the file"
    xmlschema.XMLSchema(JUNIT_XSD).validate(report)
    (suite,) = ET.parse(report).getroot().findall("testsuite")
    assert (suite.get("name"), suite.get("tests"), suite.get("failures")) == ("apply", "2", "1")
    failures = {c.get("name"): c.find("failure") for c in suite.findall("testcase")}
    assert failures["CREATE ClusterExtensionRevision cloudnative-pg-1.28.0"] is None
    failure = failures["CREATE ClusterExtensionRevision other-1.0.0"]
    assert failure is not None and failure.get("type") == "denied"
    assert 'user "bob" may not approve other-1.0.0' in failure.get("message", "")


@pytest.mark.parametrize(
    ("args", "error"),
    [
        pytest.param(["--policies", "{path}/settings.yaml"], "no admission policy in {path}/settings.yaml",
                     id="no policy"),
        pytest.param(["-f", "{path}/empty"], "{path}/empty: no manifest file (*.yaml, *.yml, *.json) in it",
                     id="no file"),
        pytest.param(["-f", "{path}/latin1.yaml"], "{path}/latin1.yaml: cannot read: ", id="an unreadable file"),
        pytest.param(["-f", "{path}/rev.yaml", "--now", "tomorrow"], "--now 'tomorrow': expected an RFC 3339 time "
                     "such as 2026-06-01T12:00:00Z", id="a bad time"),
        pytest.param(["-f", "{path}/rev.yaml", "--cluster-objects", "{path}/broken.yaml"],
                     "--cluster-objects: {path}/broken.yaml:2: invalid YAML: ", id="broken cluster objects"),
    ],
)  # fmt: skip
def test_bad_input_is_one_line_and_exit_2(tmp_path: Path, args: list[str], error: str) -> None:
    (tmp_path / "empty").mkdir()
    (tmp_path / "latin1.yaml").write_bytes("name: caf\xe9\n".encode("latin-1"))
    (tmp_path / "broken.yaml").write_text("[\n", encoding="utf-8")
    write(tmp_path / "settings.yaml", {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "s"}})
    write(tmp_path / "rev.yaml", revision("cloudnative-pg-1.28.0", "1.28.0"))
    argv = [a.format(path=tmp_path) for a in args]
    code, out, err = run(*(argv if "-f" in argv else ["-f", str(tmp_path / "rev.yaml"), *argv]))
    assert (code, out) == (2, "")
    assert err.startswith("upgrade-gate: " + error.format(path=tmp_path))
    assert err.count("\n") == 1


def test_the_help_lists_apply_and_its_examples() -> None:
    assert "upgrade-gate apply -f" in CliRunner().invoke(main, ["--help"]).stdout
    help_text = CliRunner().invoke(main, ["apply", "--help"]).stdout
    for text in (
        "--cluster-objects",
        "--as-group",
        "--operation",
        "-o, --output",
        "--output-file",
        "--now",
        "Exit codes",
    ):
        assert text in help_text


def test_the_example_of_docs_cli_md_runs_as_shown(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    section = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8").split("## `upgrade-gate apply`", 1)[1]
    manifest = section.split("```yaml\n", 1)[1].split("```", 1)[0]
    command, shown = section.split("\n$ ", 1)[1].split("```", 1)[0].split("\n", 1)
    (tmp_path / "revision.yaml").write_text(manifest, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    argv = command.split()
    assert argv[:2] == ["upgrade-gate", "apply"]
    result = CliRunner().invoke(main, [*argv[1:], "--policies", str(POLICIES)])
    assert (result.exit_code, result.stdout) == (1, shown)
