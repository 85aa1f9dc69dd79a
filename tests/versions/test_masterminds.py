"""Masterminds/semver v3 constraints (``spec.source.catalog.version``) and loose versions, driven by the tables
in tests/data/versions/ and tests/data/addons/."""

from __future__ import annotations

import re
from typing import Any

import pytest
import semver

from tests.versions import check_admits, check_error, rows
from webhook.errors import InvalidConstraint, InvalidVersion
from webhook.versions import parse_constraint, parse_loose_version
from webhook.versions.masterminds import LOOSE_FORM


@pytest.mark.parametrize("row", rows("masterminds.yaml", "admits"))
def test_constraint_admits(row: dict[str, Any]) -> None:
    check_admits(parse_constraint(row["range"]).admits, row)


@pytest.mark.parametrize("row", rows("masterminds.yaml", "invalid"))
def test_constraint_invalid(row: dict[str, Any]) -> None:
    check_error(parse_constraint, InvalidConstraint, row["range"], row["error"])


@pytest.mark.parametrize("row", rows("masterminds.yaml", "render"))
def test_constraint_renders_like_upstream(row: dict[str, Any]) -> None:
    assert str(parse_constraint(row["range"])) == row["string"]


@pytest.mark.parametrize(
    ("text", "error"),
    [
        pytest.param(">=1.0.0 " * 64, None, id="a constraint of 512 bytes parses"),
        pytest.param(">=1.0.0 " * 64 + "1", "constraint string is too long (max 512 bytes)", id="513 bytes do not"),
        pytest.param(" || ".join(["1"] * 32), None, id="32 OR groups parse"),
        pytest.param(" || ".join(["1"] * 33), "too many constraint groups (max 32)", id="33 OR groups do not"),
    ],
)
def test_constraint_size_limits(text: str, error: str | None) -> None:
    if error is None:
        assert parse_constraint(text).admits("1.0.0")
    else:
        with pytest.raises(InvalidConstraint, match=rf"^{re.escape(error)}$"):
            parse_constraint(text)


@pytest.mark.parametrize("row", rows("../addons/versions.yaml", "parse"))
def test_loose_versions_read_as_new_version_does(row: dict[str, Any]) -> None:
    assert parse_loose_version(row["version"]) == semver.Version(*row["parts"])


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        pytest.param("latest", f"want {LOOSE_FORM}", id="a word is no version"),
        pytest.param("1.2.3.4", f"want {LOOSE_FORM}", id="four parts are too many"),
        pytest.param("v18446744073709551616", "a number is beyond uint64", id="a part beyond uint64 is refused"),
        pytest.param("1.0.0-01", 'prerelease id "01" has a leading zero', id="a numeric prerelease id has no 0 first"),
    ],
)
def test_a_malformed_loose_version_gives_the_reason_alone(text: str, reason: str) -> None:
    with pytest.raises(InvalidVersion, match=rf"^{re.escape(reason)}$"):
        parse_loose_version(text)
