"""``plan_addon`` and ``set_scalars`` without git: the add-on installVersion lifecycle cases of
tests/data/gitops/addon-plans.yaml, the AddOnTemplate cases of tests/data/gitops/addon-template-plans.yaml, and the
minimal-edit rules of ``webhook.plan.yamledit``."""

from __future__ import annotations

import datetime
from pathlib import Path
from typing import Any

import pytest

from tests import tables
from webhook.errors import ManifestError
from webhook.plan.addons import plan_addon
from webhook.plan.addonstate import AddOnContext
from webhook.plan.extensions import Change
from webhook.plan.manifests import read_addons
from webhook.plan.yamledit import ScalarEdit, set_scalars
from webhook.sync.views import ObjectsView, observe

ROOT = Path(__file__).resolve().parents[2]
CASES = [*tables.load("gitops/addon-plans.yaml"), *tables.load("gitops/addon-template-plans.yaml")]
NOW = datetime.datetime(2026, 3, 1, 12, 0, 0, tzinfo=datetime.UTC)


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_plan(case: dict[str, Any], tmp_path: Path) -> None:
    for name, text in case["files"].items():
        (tmp_path / name).write_text(text)
    found = read_addons(tmp_path, ["."])
    assert found.problems == ()
    [addon] = found.addons
    canaries = tuple(case.get("canaryPlacements", ["default/canary-placement"]))
    context = AddOnContext(canaries, datetime.timedelta(hours=1), "upgrade-gate/", NOW)
    state = observe(ObjectsView(case["hub"]), addon, canaries, "cluster")
    plan = plan_addon(addon, case["files"], state, context)
    expect = case["expect"]
    if not isinstance(plan, Change):
        got = {"action": plan.action, "reason": plan.reason, "ready_at": plan.ready_at}
        assert got == {"ready_at": None} | {k: v for k, v in expect.items() if k != "files"}
        return
    assert plan.addon is not None
    assert expect["action"] == "proposed"
    assert plan.title == expect["title"]
    assert [f"{m.where} from {m.from_version}" for m in plan.addon.moves] == expect["moves"]
    assert [f"{m.where} from {m.from_version}" for m in plan.addon.held] == expect.get("held", [])
    if "canary" in expect:
        assert plan.addon.canary == expect["canary"]
    if "rollout" in expect:
        rows = [f"{r.order} | {r.what} | {r.clusters} | {r.strategy} | {r.status}" for r in plan.addon.rollout]
        assert rows == expect["rollout"]
    for file, (old, new) in expect.get("files", {}).items():
        [written] = [f.content for f in plan.files if f.path == file]
        assert written == case["files"][file].replace(old, new)


BLOCK = "# keep me\nspec:\n  installVersion: v1   # pinned\n  configs: [{name: a}]\n"


@pytest.mark.parametrize(
    ("text", "value", "expected"),
    [
        pytest.param(BLOCK, "v2", BLOCK.replace("v1 ", "v2 "), id="a plain scalar stays plain, comments stay"),
        pytest.param('spec: {installVersion: "v1"}\n', "v2", 'spec: {installVersion: "v2"}\n', id="double quotes"),
        pytest.param("spec:\n  installVersion: 'v1'\n", "v2", "spec:\n  installVersion: 'v2'\n", id="single quotes"),
        pytest.param(
            "spec:\n  installVersion: v1\n",
            "1.10",
            'spec:\n  installVersion: "1.10"\n',
            id="a float-like plain value is quoted",
        ),
        pytest.param(
            "spec:\n  installVersion: v1\n",
            "true",
            'spec:\n  installVersion: "true"\n',
            id="a bool-like plain value is quoted",
        ),
        pytest.param(
            '{"spec": {"installVersion": "v1"}}\n', "v2", '{"spec": {"installVersion": "v2"}}\n', id="JSON stays JSON"
        ),
        pytest.param(
            "spéc: é\nspec:\n  installVersion: v1\n",
            "v2",
            "spéc: é\nspec:\n  installVersion: v2\n",
            id="offsets count characters",
        ),
    ],
)
def test_a_scalar_is_replaced_in_place(text: str, value: str, expected: str) -> None:
    line = 2 if text.startswith("#") else 1
    assert set_scalars(text, "f.yaml", [ScalarEdit(line, ("spec", "installVersion"), value)]) == expected


def test_edits_in_several_documents_of_one_file_do_not_move_each_other() -> None:
    text = "a: v1\n---\n# second\nb: {c: [x, v1]}\n"
    edits = [ScalarEdit(1, ("a",), "v22"), ScalarEdit(4, ("b", "c", 1), "v3")]
    assert set_scalars(text, "f.yaml", edits) == "a: v22\n---\n# second\nb: {c: [x, v3]}\n"


@pytest.mark.parametrize(
    ("text", "path", "message"),
    [
        pytest.param(
            "spec: {}\n",
            ("spec", "installVersion"),
            "f.yaml:1: cannot edit spec.installVersion: it is not written there",
            id="a missing key",
        ),
        pytest.param("spec: {a: 1}\n", ("spec",), "f.yaml:1: cannot edit spec: it is not a scalar", id="a mapping"),
        pytest.param(
            "x: &v v1\nspec: {installVersion: *v}\n",
            ("spec", "installVersion"),
            "f.yaml:2: cannot edit spec.installVersion: it is a YAML anchor or alias",
            id="an alias",
        ),
        pytest.param(
            "spec: {installVersion: &v v1}\n",
            ("spec", "installVersion"),
            "f.yaml:1: cannot edit spec.installVersion: it is a YAML anchor or alias",
            id="an anchor",
        ),
        pytest.param(
            "spec: [\n",
            ("spec",),
            "f.yaml:2: invalid YAML: did not find expected node content",
            id="broken YAML",
        ),
    ],
)
def test_an_edit_that_cannot_be_made_is_one_error(text: str, path: tuple[str, ...], message: str) -> None:
    with pytest.raises(ManifestError) as raised:
        set_scalars(text, "f.yaml", [ScalarEdit(1, path, "v2")])
    assert str(raised.value) == message


@pytest.mark.parametrize(
    ("document", "problem"),
    [
        pytest.param(
            "kind: ClusterManagementAddOn\nmetadata: {name: a}\nstatus: [v1]\n", "status must be a mapping", id="status"
        ),
        pytest.param(
            "kind: ClusterManagementAddOn\nmetadata: {name: a}\nstatus: {supportedVersions: [v1, 2]}\n",
            "status.supportedVersions must be a list of strings",
            id="supported versions",
        ),
        pytest.param(
            "kind: ClusterManagementAddOn\nmetadata: {name: a}\nstatus: {defaultVersion: 2}\n",
            "status.defaultVersion must be a string or a list of strings",
            id="default version",
        ),
        pytest.param(
            "kind: ManagedClusterAddOn\nmetadata: {name: a, namespace: c}\nstatus: {conditions: {type: Progressing}}\n",
            "status.conditions must be a list of mappings",
            id="conditions",
        ),
        pytest.param(
            "kind: PlacementDecision\nmetadata: {name: d, namespace: n, labels: [a]}\n",
            "metadata.labels must be a mapping",
            id="labels",
        ),
    ],
)
def test_an_add_on_object_of_the_wrong_shape_is_a_problem_of_its_file(
    tmp_path: Path, document: str, problem: str
) -> None:
    (tmp_path / "a.yaml").write_text("# first\n---\n" + document)
    found = read_addons(tmp_path, ["a.yaml"])
    assert (found.addons, found.decisions) == ((), ())
    assert [str(p) for p in found.problems] == [f"a.yaml:3: {problem}"]
