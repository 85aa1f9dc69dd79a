"""``upgrade-gate.yaml``: defaults, and one clear error per invalid file (cases in tests/data/gitops)."""

from __future__ import annotations

import datetime
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests import tables
from webhook.errors import InputError
from webhook.io.forges import ForgeConfig
from webhook.plan.manifests import read_addons
from webhook.plan.policycheck import PolicyCheckConfig
from webhook.plan.requests import UserInfo
from webhook.sync.config import (
    CATALOGD_CONTENT,
    AddOnConfig,
    CatalogConfig,
    DashboardConfig,
    load_config,
    parse_config,
    parse_duration,
)

ROOT = Path(__file__).resolve().parents[2]
CASES = tables.load("gitops/configs.yaml")


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


def test_add_on_canary_defaults_are_the_bundled_policy_settings() -> None:
    settings = yaml.safe_load((ROOT / "policies" / "settings.yaml").read_text())["data"]
    config = parse_config({"addons": {"manifests": "clusters/hub/addons"}})
    assert config.addons == AddOnConfig(("clusters/hub/addons",))
    assert config.addons.canary_placements == (settings["addonCanaryPlacement"],)
    assert config.addons.canary_soak == parse_duration(settings["addonCanarySoak"])
    assert (config.extensions, config.revisions, config.catalogs) == ((), "", ())


def test_add_on_status_is_read_where_installed_versions_are_unless_told_otherwise() -> None:
    base = {"extensions": "e", "revisions": "r", "catalogs": "c", "installed": "cluster"}
    assert parse_config({**base, "addons": {"manifests": "a"}}).addons == AddOnConfig(("a",), "cluster")
    soak = {"manifests": "a", "installed": "status", "canarySoak": "1h30m", "canaryPlacements": "hub/canaries"}
    assert parse_config({**base, "addons": soak}).addons == AddOnConfig(
        ("a",), "status", ("hub/canaries",), datetime.timedelta(minutes=90)
    )


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("0", 0.0), ("0s", 0.0), ("90m", 5400.0), ("1h30m", 5400.0), ("1.5h", 5400.0), ("250ms", 0.25), ("2us", 2e-6)],
    ids=repr,
)
def test_durations_read_as_go_parses_them(text: str, seconds: float) -> None:
    duration = parse_duration(text)
    assert duration is not None
    assert duration.total_seconds() == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["", "1", "1d", "-1h", "1h 30m", "h"], ids=repr)
def test_other_durations_are_none(text: str) -> None:
    assert parse_duration(text) is None


def test_the_example_hub_repository_reads_as_documented() -> None:
    config = load_config(ROOT / "examples" / "gitops-hub")
    assert config.addons == AddOnConfig(
        ("addons",), "cluster", ("default/canary-placement",), datetime.timedelta(hours=1)
    )
    assert (config.extensions, config.catalogs) == ((), ())
    found = read_addons(ROOT / "examples" / "gitops-hub", config.addons.manifests)
    assert [a.name for a in found.addons] == ["hello-template", "helloworld"]
    assert [t.manifest["metadata"]["name"] for t in found.templates] == ["hello-template-v1", "hello-template-v2"]


def test_the_policy_check_applier_defaults_to_argo_cds_application_controller() -> None:
    config = parse_config({"extensions": "e", "revisions": "r", "catalogs": "c", "policyCheck": {"policies": "p"}})
    assert config.policy_check == PolicyCheckConfig(
        ("p",),
        UserInfo(
            "system:serviceaccount:argocd:argocd-application-controller",
            ("system:serviceaccounts", "system:serviceaccounts:argocd", "system:authenticated"),
        ),
        {},
    )


BASE = {"extensions": "e", "revisions": "r", "catalogs": "c"}


def test_the_renovate_style_settings_are_off_by_default() -> None:
    config = parse_config(BASE)
    assert (config.dashboard, config.schedule) == (DashboardConfig(enabled=False), ())


def test_the_dashboard_and_the_schedule_read_as_documented() -> None:
    config = parse_config(
        {**BASE, "dashboard": {"enabled": True, "title": "Fleet"}, "schedule": ["Sat 02:00-06:00", "Sun 02:00-06:00"]}
    )
    assert config.dashboard == DashboardConfig(enabled=True, title="Fleet")
    assert [w.text for w in config.schedule] == ["Sat 02:00-06:00", "Sun 02:00-06:00"]


@pytest.mark.parametrize(
    ("extra", "error"),
    [
        ({"dashboard": {"enabled": "yes"}}, "dashboard.enabled: must be true or false, not 'yes'"),
        ({"dashboard": {"enable": True}}, "dashboard.enable: unknown key (expected one of enabled, title)"),
        ({"dashboard": True}, "dashboard: must be a mapping"),
        (
            {"schedule": ["Sat 02:00-06:00", "Sun 25:00-26:00"]},
            'schedule[1]: window "Sun 25:00-26:00": 25:00 is not a time of day',
        ),
        ({"schedule": [3]}, "schedule: must be a string or a list of non-empty strings"),
    ],
)
def test_a_bad_setting_is_one_error_naming_it(extra: dict[str, Any], error: str) -> None:
    with pytest.raises(InputError) as raised:
        parse_config({**BASE, **extra})
    assert str(raised.value) == f"upgrade-gate.yaml: {error}"


def test_grouping_defaults_to_per_extension_and_reads_per_cluster() -> None:
    assert parse_config(BASE).grouping == "per-extension"
    assert parse_config({**BASE, "revisions": "clusters/prod/revisions", "grouping": "per-cluster"}).grouping == (
        "per-cluster"
    )


@pytest.mark.parametrize(
    ("extra", "error"),
    [
        ({"grouping": "per-team"}, "grouping: must be one of per-extension, per-cluster, not 'per-team'"),
        ({"grouping": ["per-cluster"]}, "grouping: must be a non-empty string"),
        *(
            (
                {"grouping": "per-cluster", "revisions": revisions},
                f"grouping: per-cluster names a branch after revisions, and {revisions!r} cannot be part of a "
                "branch name",
            )
            # git check-ref-format refuses each: a space, a component starting with a dot, "..", ".lock"
            for revisions in ("clusters/prod revisions", "clusters/.revisions", "a..b", "revisions.lock")
        ),
    ],
)
def test_a_bad_grouping_is_one_error_naming_it(extra: dict[str, Any], error: str) -> None:
    with pytest.raises(InputError) as raised:
        parse_config({**BASE, **extra})
    assert str(raised.value) == f"upgrade-gate.yaml: {error}"
