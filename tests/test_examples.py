"""The examples a new user copies: they agree with the bundled settings and name refs that exist."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import yaml

from webhook.gitops.config import load_config, parse_duration

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"


def test_the_hub_example_soaks_canaries_as_long_as_the_bundled_policies_do() -> None:
    settings = yaml.safe_load((ROOT / "policies" / "settings.yaml").read_text())["data"]
    config = load_config(EXAMPLES / "gitops-hub")
    assert config.addons is not None
    assert config.addons.canary_soak == parse_duration(settings["addonCanarySoak"])


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
    text = re.sub(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", "<time>", text)
    return [line.rstrip() for line in text.strip("\n").splitlines()]


def test_the_offline_walkthrough_runs_as_its_readme_shows(tmp_path: Path) -> None:
    readme = (EXAMPLES / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Try it offline", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```(bash|text)\n(.*?)```", section, flags=re.DOTALL)
    script = "".join(f"echo @@block\n{code}" for kind, code in blocks if kind == "bash")
    (tmp_path / "gitconfig").write_text("")
    env = {
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        "HOME": str(tmp_path),
        "TMPDIR": str(tmp_path),
        "GIT_CONFIG_GLOBAL": str(tmp_path / "gitconfig"),
        "GIT_CONFIG_NOSYSTEM": "1",
        "UPGRADE_GATE_CLUSTER": "off",
        **{
            f"GIT_{r}_{k}": v
            for r in ("AUTHOR", "COMMITTER")
            for k, v in (("NAME", "Rita"), ("EMAIL", "rita@example.com"))
        },
    }
    done = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", script], cwd=ROOT, env=env, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    outputs = done.stdout.split("@@block\n")[1:]
    shown = [code for index, (kind, code) in enumerate(blocks) if kind == "text" and blocks[index - 1][0] == "bash"]
    ran = [out for index, out in enumerate(outputs) if _followed_by_text(blocks, index)]
    assert [_normal(o) for o in ran] == [_normal(s) for s in shown]


def _followed_by_text(blocks: list[tuple[str, str]], bash_index: int) -> bool:
    """Whether the ``bash_index``-th bash block is followed by a text block (its expected output)."""
    positions = [i for i, (kind, _) in enumerate(blocks) if kind == "bash"]
    after = positions[bash_index] + 1
    return after < len(blocks) and blocks[after][0] == "text"
