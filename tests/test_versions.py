"""The two version-range dialects of OLM v1, driven by the tables in ``tests/data/versions/``."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import semver

from tests import tables
from webhook.errors import InvalidConstraint, InvalidVersion
from webhook.versions import Constraint, SkipRange, parse_constraint, parse_skip_range, parse_version

DATA = Path(__file__).parent / "data" / "versions"


def _rows(name: str, section: str) -> list[Any]:
    return tables.params(tables.load(f"versions/{name}")[section])


def _candidates(text: str) -> list[str | semver.Version]:
    """The version as a string, and as a ``semver.Version`` too when it is strict SemVer."""
    try:
        return [text, parse_version(text)]
    except InvalidVersion:
        return [text]


@pytest.mark.parametrize("row", _rows("masterminds.yaml", "admits"))
def test_constraint_admits(row: dict[str, Any]) -> None:
    constraint = parse_constraint(row["range"])
    for version in _candidates(row["version"]):
        assert constraint.admits(version) is row["admits"], f"{row['range']!r} vs {version!r}"


@pytest.mark.parametrize("row", _rows("masterminds.yaml", "invalid"))
def test_constraint_invalid(row: dict[str, Any]) -> None:
    with pytest.raises(InvalidConstraint) as caught:
        parse_constraint(row["range"])
    assert str(caught.value) == row["error"]


@pytest.mark.parametrize("row", _rows("masterminds.yaml", "render"))
def test_constraint_renders_like_upstream(row: dict[str, Any]) -> None:
    assert str(parse_constraint(row["range"])) == row["string"]


@pytest.mark.parametrize("row", _rows("blang.yaml", "admits"))
def test_skip_range_admits(row: dict[str, Any]) -> None:
    skip_range = parse_skip_range(row["range"])
    for version in _candidates(row["version"]):
        assert skip_range.admits(version) is row["admits"], f"{row['range']!r} vs {version!r}"


@pytest.mark.parametrize("row", _rows("blang.yaml", "invalid"))
def test_skip_range_invalid(row: dict[str, Any]) -> None:
    with pytest.raises(InvalidConstraint) as caught:
        parse_skip_range(row["range"])
    assert str(caught.value) == row["error"]


@pytest.mark.parametrize("row", _rows("parse_version.yaml", "valid"))
def test_parse_version_valid(row: dict[str, Any]) -> None:
    assert parse_version(row["version"]) == semver.Version(*row["parts"])
    assert str(parse_version(row["version"])) == row["version"]


@pytest.mark.parametrize("row", _rows("parse_version.yaml", "invalid"))
def test_parse_version_invalid(row: dict[str, Any]) -> None:
    with pytest.raises(InvalidVersion) as caught:
        parse_version(row["version"])
    assert str(caught.value) == row["error"]


def test_errors_are_value_errors_too() -> None:
    with pytest.raises(ValueError, match="improper constraint"):
        parse_constraint("foobar")
    with pytest.raises(ValueError, match="Last element"):
        parse_skip_range("")
    with pytest.raises(ValueError, match="Version string empty"):
        parse_version("")


def test_parsed_ranges_are_frozen_values_cached_by_text() -> None:
    constraint = parse_constraint(">=1.0.0 <2.0.0")
    assert parse_constraint(">=1.0.0 <2.0.0") is constraint
    assert isinstance(constraint, Constraint)
    assert constraint == Constraint(">=1.0.0 <2.0.0", (), "")
    assert hash(constraint) == hash(Constraint(">=1.0.0 <2.0.0", (), ""))
    assert repr(constraint) == "Constraint(text='>=1.0.0 <2.0.0')"
    skip_range = parse_skip_range(">=1.0.0 <2.0.0")
    assert isinstance(skip_range, SkipRange)
    assert parse_skip_range(">=1.0.0 <2.0.0") is skip_range
    assert repr(skip_range) == "SkipRange(text='>=1.0.0 <2.0.0')"
    with pytest.raises(AttributeError):
        constraint.text = "*"  # type: ignore[misc]


def test_version_objects_are_taken_as_they_are() -> None:
    """A ``semver.Version`` skips string parsing; its precedence alone decides."""
    assert parse_constraint("^1.2").admits(semver.Version(1, 9, 0, build="x"))
    assert not parse_constraint("^1.2").admits(semver.Version(1, 9, 0, "rc.1"))
    assert parse_skip_range("<1.9.0").admits(semver.Version(1, 9, 0, "rc.1"))


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
