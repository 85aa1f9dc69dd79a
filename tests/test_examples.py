"""The examples a new user copies: they agree with the bundled settings and name refs that exist."""

from __future__ import annotations

import datetime
import os
import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from tests import apiserver as harness
from tests.tools import build
from webhook.cli.review import review
from webhook.plan import AddOnContext, plan_addon, read_addons
from webhook.sync.config import load_config, parse_duration
from webhook.sync.views import ObjectsView, observe

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"


def test_the_hub_example_soaks_canaries_as_long_as_the_bundled_policies_do() -> None:
    settings = yaml.safe_load((ROOT / "policies" / "settings.yaml").read_text())["data"]
    config = load_config(EXAMPLES / "gitops-hub")
    assert config.addons is not None
    assert config.addons.canary_soak == parse_duration(settings["addonCanarySoak"])


def test_the_hub_example_proposes_the_canary_template_first() -> None:
    """The hub example on a hub serving its objects: the canary placement moves to hello-template-v2 first."""
    hub = EXAMPLES / "gitops-hub"
    found = read_addons(hub, ["addons"])
    assert found.problems == ()
    [addon] = [a for a in found.addons if a.name == "hello-template"]
    texts = {file: (hub / file).read_text() for file in addon.files}
    config = load_config(hub)
    assert config.addons is not None
    canaries = config.addons.canary_placements
    context = AddOnContext(
        canaries, config.addons.canary_soak, config.branch_prefix, datetime.datetime.now(datetime.UTC)
    )
    view = ObjectsView(doc.manifest for doc in (addon.management, *found.templates) if doc is not None)
    plan = plan_addon(addon, texts, observe(view, addon, canaries, "cluster"), context)
    assert plan.change is not None, plan.outcome
    assert plan.change.title == "Upgrade add-on hello-template to hello-template-v2 (v2.0.0) on its canaries"
    assert plan.change.addon is not None
    assert [row.what for row in plan.change.addon.rollout] == [
        "placement default/canary-placement (canary)",
        "placement default/global-placement",
    ]


def test_the_argo_cd_and_flux_examples_track_the_main_branch_as_no_release_is_tagged() -> None:
    argocd = yaml.safe_load((EXAMPLES / "argocd" / "application.yaml").read_text())
    [repository, *_] = yaml.safe_load_all((EXAMPLES / "flux" / "helmrelease.yaml").read_text())
    assert argocd["spec"]["source"]["targetRevision"] == "main"
    assert repository["spec"]["ref"] == {"branch": "main"}


def test_nothing_a_user_reads_names_a_design_document() -> None:
    jargon = re.compile(r"seed[ -]?0[0-4]", re.IGNORECASE)
    places = [ROOT / "README.md", *(ROOT / d for d in ("webhook", "policies", "charts", "examples"))]
    files = [p for place in places for p in ([place] if place.is_file() else sorted(place.rglob("*"))) if p.is_file()]
    found = [
        f"{file.relative_to(ROOT)}:{number}"
        for file in files
        if file.suffix in (".py", ".md", ".yaml", ".yml", ".tpl", ".txt", ".json")
        for number, line in enumerate(file.read_text(encoding="utf-8").splitlines(), start=1)
        if jargon.search(line)
    ]
    assert found == [], "name the behaviour (the ClusterExtensionRevision lifecycle, catalog image templates, ...)"


def _normal(text: str) -> list[str]:
    """Output lines without what changes from run to run: commits and times."""
    text = re.sub(r"base main at [0-9a-f]{12}", "base main at <commit>", text)
    text = re.sub(r"merge base [0-9a-f]{12} to head [0-9a-f]{12}", "merge base <commit> to head <commit>", text)
    text = re.sub(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", "<time>", text)
    return [line.rstrip() for line in text.strip("\n").splitlines()]


def _run_section(title: str, tmp_path: Path, env: dict[str, str] | None = None, path: Path | None = None) -> None:
    """Run the bash blocks of the examples README's section ``title`` in one shell, from the repository root
    (``path`` first on PATH, then this Python's scripts), and compare the output of each block followed by a text
    block with that block."""
    readme = (EXAMPLES / "README.md").read_text(encoding="utf-8")
    section = readme.split(f"## {title}\n", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```(bash|text)\n(.*?)```", section, flags=re.DOTALL)
    script = "".join(f"echo @@block\n{code}" for kind, code in blocks if kind == "bash")
    (tmp_path / "gitconfig").write_text("")
    identity = {f"GIT_{r}_{k}": v for r in ("AUTHOR", "COMMITTER") for k, v in (("NAME", "Rita"), ("EMAIL", "r@x.io"))}
    environment = {
        "PATH": os.pathsep.join([*([str(path)] if path else []), str(Path(sys.executable).parent), os.environ["PATH"]]),
        "HOME": str(tmp_path),
        "TMPDIR": str(tmp_path),
        "GIT_CONFIG_GLOBAL": str(tmp_path / "gitconfig"),
        "GIT_CONFIG_NOSYSTEM": "1",
        "UPGRADE_GATE_CLUSTER": "off",
        **identity,
        **(env or {}),
    }
    done = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", script],
        cwd=ROOT,
        env=environment,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    outputs = iter(done.stdout.split("@@block\n")[1:])
    ran, shown = [], []
    for index, (kind, _) in enumerate(blocks):
        if kind == "bash":
            output = next(outputs)
            if index + 1 < len(blocks) and blocks[index + 1][0] == "text":
                ran.append(_normal(output))
                shown.append(_normal(blocks[index + 1][1]))
    assert ran == shown


def test_the_offline_walkthrough_runs_as_its_readme_shows(tmp_path: Path) -> None:
    _run_section("Try it offline", tmp_path)


@pytest.fixture(scope="module")
def walkthrough_apiserver(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    """A real kube-apiserver of its own (the walkthrough reads every ClusterExtension in the cluster) with OLM v1's
    ClusterExtension CRD: its kubeconfig and the kubectl to use."""
    harness.skip_unless_available("kube", _no_kubectl())
    with harness.running(tmp_path_factory.mktemp("apiserver")) as server:
        server.install_crds([harness.upstream_crds() / "olm.operatorframework.io_clusterextensions.yaml"])
        yield server.kubeconfig, _kubectl()


def _kubectl() -> str:
    """The kubectl the build cache holds (the 1.32 of the tests' kube-apiserver), else the one on PATH."""
    built = harness.binaries() / "kubectl"
    return str(built) if built.is_file() else shutil.which("kubectl") or "kubectl"


def _no_kubectl() -> str | None:
    found = (harness.binaries() / "kubectl").is_file() or shutil.which("kubectl")
    return None if found else build.why_missing("kubectl", harness.binaries())


def test_the_api_server_walkthrough_runs_as_its_readme_shows(
    tmp_path: Path, walkthrough_apiserver: tuple[str, str]
) -> None:
    kubeconfig, kubectl = walkthrough_apiserver
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "kubectl").symlink_to(kubectl)
    variables = {"KUBECONFIG": kubeconfig, "UPGRADE_GATE_CLUSTER": "auto"}
    _run_section("Try it against an API server", tmp_path, variables, path=tmp_path / "bin")


def test_the_ci_example_runs_upgrade_gate_review_with_options_it_has() -> None:
    workflow = yaml.safe_load((EXAMPLES / "ci" / "github-actions.yaml").read_text())
    [command] = [s["run"] for s in workflow["jobs"]["review"]["steps"] if "upgrade-gate review" in s.get("run", "")]
    argv = shlex.split(re.sub(r"\$\{\{[^}]*\}\}", "7", command))
    assert argv[:2] == ["upgrade-gate", "review"]
    context = review.make_context("review", argv[2:])
    assert (context.params["pull"], context.params["output"], context.params["comment"]) == (7, "junit", True)
    assert workflow["permissions"]["pull-requests"] == "write", "--comment writes the pull request's comment"
    triggers = workflow[True]  # YAML 1.1 reads the key `on` as true
    assert triggers["pull_request_review"]["types"] == ["submitted", "dismissed"]
