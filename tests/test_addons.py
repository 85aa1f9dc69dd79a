"""The add-on installVersion lifecycle and its upstream config-rollout twin, driven by the tables in
``tests/data/addons/`` whose expectations are the seed's (and peers.md §C's), not our code's."""

from __future__ import annotations

import datetime
from pathlib import Path
from typing import Any

import pytest
import semver

from tests import tables
from webhook.addons import (
    AddOnVersions,
    Change,
    Observation,
    canary_gate,
    classify,
    classify_configs,
    parse_addon_version,
    placement_changes,
    progressing_condition,
    render_configs,
)
from webhook.conditions import parse_time, set_condition
from webhook.errors import InputError, InvalidVersion

DATA = Path(__file__).parent / "data" / "addons"
SEED_TIME = parse_time("2022-11-02T05:48:12Z")


def _rows(name: str, section: str) -> list[Any]:
    return tables.params(tables.load(f"addons/{name}")[section])


def _change(value: str | None) -> Change | None:
    return None if value is None else Change(value)


@pytest.mark.parametrize("row", _rows("examples.yaml", "examples"))
def test_seed_example(row: dict[str, Any]) -> None:
    versions = AddOnVersions.from_status(row["cma"]["status"])
    spec, status = row["addon"]["spec"], row["addon"]["status"]
    version = versions.resolve(spec.get("installVersion"))
    want = row["want"]
    assert version == want["version"]
    assert version is not None
    assert versions.validate(spec.get("installVersion")) == want["denial"]
    if want["change"] is None:
        with pytest.raises(InvalidVersion):
            classify(status.get("lastVersion"), version)
    else:
        assert classify(status.get("lastVersion"), version) is Change(want["change"])
    condition = progressing_condition(
        version, status.get("currentVersion"), status.get("lastVersion"), supported_versions=versions.supported
    )
    assert set_condition([], condition, now=SEED_TIME) == [want["condition"]]


@pytest.mark.parametrize("row", _rows("examples.yaml", "lifecycles"))
def test_seed_lifecycle(row: dict[str, Any]) -> None:
    conditions = row["conditions"]
    others = [entry for entry in conditions if entry["type"] != "Progressing"]
    for step in row["steps"]:
        status = step["status"]
        condition = progressing_condition(
            status["installVersion"],
            status["currentVersion"],
            status["lastVersion"],
            supported_versions=row["supportedVersions"],
        )
        conditions = set_condition(conditions, condition, now=parse_time(step["now"]))
        assert conditions == [*others, step["progressing"]], step["now"]


def test_a_failure_reason_fails_the_condition() -> None:
    condition = progressing_condition("v2", "unknown", "v1", "ManifestWork addon-helloworld-deploy is not available")
    assert condition == {
        "type": "Progressing",
        "status": "False",
        "reason": "Failed",
        "message": "could not upgrade to version v2: ManifestWork addon-helloworld-deploy is not available",
    }


def test_an_empty_install_version_must_be_resolved_first() -> None:
    with pytest.raises(InputError, match="installVersion is empty"):
        progressing_condition("", "unknown", None)


@pytest.mark.parametrize("row", _rows("versions.yaml", "parse"))
def test_parse_addon_version(row: dict[str, Any]) -> None:
    assert parse_addon_version(row["version"]) == semver.Version(*row["parts"])


@pytest.mark.parametrize("row", _rows("versions.yaml", "invalid"))
def test_parse_addon_version_invalid(row: dict[str, Any]) -> None:
    with pytest.raises(InvalidVersion) as caught:
        parse_addon_version(row["version"])
    assert str(caught.value) == row["error"]


@pytest.mark.parametrize("row", _rows("versions.yaml", "classify"))
def test_classify(row: dict[str, Any]) -> None:
    assert classify(row["last"], row["install"]) is Change(row["change"])


@pytest.mark.parametrize("row", _rows("versions.yaml", "classify_invalid"))
def test_classify_invalid(row: dict[str, Any]) -> None:
    with pytest.raises(InvalidVersion):
        classify(row["last"], row["install"])


@pytest.mark.parametrize("row", _rows("versions.yaml", "validate"))
def test_validate(row: dict[str, Any]) -> None:
    assert AddOnVersions.from_status(row["status"]).validate(row["install"]) == row["denial"]


@pytest.mark.parametrize("row", _rows("versions.yaml", "status_invalid"))
def test_status_invalid(row: dict[str, Any]) -> None:
    with pytest.raises(InputError) as caught:
        AddOnVersions.from_status(row["status"])
    assert str(caught.value) == row["error"]


def test_validate_names_the_field() -> None:
    versions = AddOnVersions(("v1", "v2"), "v2")
    field = "spec.installStrategy.placements[1].addonTemplate.installVersion"
    assert (
        versions.validate("v3", field=field) == f'{field} "v3" is not a supported version; supported versions: v1, v2'
    )


@pytest.mark.parametrize("row", _rows("placements.yaml", "placements"))
def test_placement_changes(row: dict[str, Any]) -> None:
    changes = placement_changes(row["old"], row["new"])
    assert [
        {
            "namespace": c.namespace,
            "name": c.name,
            "last_version": c.last_version,
            "install_version": c.install_version,
            "change": c.change,
            "config_change": c.config_change,
        }
        for c in changes
    ] == [
        {**want, "change": _change(want["change"]), "config_change": Change(want["config_change"])}
        for want in row["want"]
    ]


@pytest.mark.parametrize("row", _rows("placements.yaml", "configs"))
def test_classify_configs(row: dict[str, Any]) -> None:
    assert classify_configs(row["previous"], row["desired"], row["good"]) is Change(row["change"])


def test_a_config_needs_a_resource_and_a_name() -> None:
    with pytest.raises(InputError, match="an add-on config needs a resource and a name"):
        classify_configs([], [{"resource": "addontemplates"}])


def _verdict(target: str, canaries: list[Observation], row: dict[str, Any]) -> None:
    verdict = canary_gate(
        target, canaries, soak=datetime.timedelta(seconds=row["soak_seconds"]), now=parse_time(row["now"])
    )
    want = row["want"]
    assert verdict.allowed is want["allowed"]
    assert verdict.message == want["message"]
    assert verdict.ready_at == (None if want["ready_at"] is None else parse_time(want["ready_at"]))


@pytest.mark.parametrize("row", _rows("canary.yaml", "gates"))
def test_canary_gate(row: dict[str, Any]) -> None:
    _verdict(row["target"], [Observation.of_install_version(addon) for addon in row["canaries"]], row)


@pytest.mark.parametrize("row", _rows("canary.yaml", "config_gates"))
def test_canary_gate_on_configs(row: dict[str, Any]) -> None:
    _verdict(render_configs(row["target"]), [Observation.of_configs(addon) for addon in row["canaries"]], row)


def test_canary_gate_reads_a_naive_now_as_utc() -> None:
    canary = Observation("cluster1", "v2", SEED_TIME, "Succeed")
    verdict = canary_gate("v2", [canary], soak=datetime.timedelta(0), now=datetime.datetime(2022, 11, 2, 5, 48, 12))
    assert verdict.allowed
