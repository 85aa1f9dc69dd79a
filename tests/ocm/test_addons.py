"""The add-on installVersion lifecycle: versions, the Progressing condition, its examples, driven by the tables in
``tests/data/addons/`` whose expectations are the lifecycle's (and upstream OCM's), not our code's."""

from __future__ import annotations

from typing import Any

import pytest
import semver

from tests.ocm import EXAMPLE_TIME, rows
from tests.versions import check_error
from webhook.conditions import parse_time, set_condition
from webhook.errors import InputError, InvalidVersion
from webhook.ocm.addons import AddOnVersions, VersionChange, classify, parse_addon_version, progressing_condition


@pytest.mark.parametrize("row", rows("examples.yaml", "examples"))
def test_lifecycle_example(row: dict[str, Any]) -> None:
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
        assert classify(status.get("lastVersion"), version) is VersionChange(want["change"])
    condition = progressing_condition(
        version, status.get("currentVersion"), status.get("lastVersion"), supported_versions=versions.supported
    )
    assert set_condition([], condition, now=EXAMPLE_TIME) == [want["condition"]]


@pytest.mark.parametrize("row", rows("examples.yaml", "lifecycles"))
def test_lifecycle_sequence(row: dict[str, Any]) -> None:
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


@pytest.mark.parametrize("row", rows("versions.yaml", "parse"))
def test_parse_addon_version(row: dict[str, Any]) -> None:
    assert parse_addon_version(row["version"]) == semver.Version(*row["parts"])


@pytest.mark.parametrize("row", rows("versions.yaml", "invalid"))
def test_parse_addon_version_invalid(row: dict[str, Any]) -> None:
    check_error(parse_addon_version, InvalidVersion, row["version"], row["error"])


@pytest.mark.parametrize("row", rows("versions.yaml", "classify"))
def test_classify(row: dict[str, Any]) -> None:
    assert classify(row["last"], row["install"]) is VersionChange(row["change"])


@pytest.mark.parametrize("row", rows("versions.yaml", "classify_invalid"))
def test_classify_invalid(row: dict[str, Any]) -> None:
    with pytest.raises(InvalidVersion):
        classify(row["last"], row["install"])


@pytest.mark.parametrize("row", rows("versions.yaml", "validate"))
def test_validate(row: dict[str, Any]) -> None:
    assert AddOnVersions.from_status(row["status"]).validate(row["install"]) == row["denial"]


@pytest.mark.parametrize("row", rows("versions.yaml", "status_invalid"))
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
