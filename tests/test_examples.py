"""The examples a new user copies: they agree with the bundled settings and name refs that exist."""

from __future__ import annotations

import re
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
