"""``upgrade-gate.yaml``: defaults, and one clear error per invalid file (cases in tests/data/gitops)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from webhook.errors import InputError
from webhook.gitops.config import CATALOGD_CONTENT, CatalogConfig, ForgeConfig, load_config, parse_config

ROOT = Path(__file__).resolve().parents[2]
CASES = yaml.safe_load((ROOT / "tests" / "data" / "gitops" / "configs.yaml").read_text())


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_config(case: dict[str, Any]) -> None:
    if case["error"] is None:
        parse_config(case["config"])
        return
    with pytest.raises(InputError) as raised:
        parse_config(case["config"])
    assert str(raised.value) == case["error"]


def test_the_example_repository_reads_as_documented() -> None:
    config = load_config(ROOT / "examples" / "gitops-repo")
    assert config.extensions == ("clusters/prod/extensions",)
    assert config.catalogs == (CatalogConfig("clusterCatalogs", "clusters/prod/catalogs", CATALOGD_CONTENT),)
    assert (config.base_branch, config.branch_prefix) == ("main", "upgrade-gate/")
    assert config.forge == ForgeConfig("github", "example-org/clusters", "https://api.github.com")


@pytest.mark.parametrize(
    ("text", "error"),
    [
        pytest.param("extensions: [\n", "upgrade-gate.yaml:2: invalid YAML: ", id="broken YAML names the line"),
        pytest.param("- a\n- b\n", "upgrade-gate.yaml: expected one YAML mapping", id="a list is not a config"),
    ],
)
def test_an_unreadable_config_is_one_error(tmp_path: Path, text: str, error: str) -> None:
    (tmp_path / "upgrade-gate.yaml").write_text(text)
    with pytest.raises(InputError) as raised:
        load_config(tmp_path)
    assert str(raised.value).startswith(error)
