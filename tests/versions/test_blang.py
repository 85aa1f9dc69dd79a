"""blang/semver v4 versions and skip ranges (``olm.skipRange``), driven by tests/data/versions/blang.yaml and
parse_version.yaml."""

from __future__ import annotations

from typing import Any

import pytest
import semver

from tests.versions import check_admits, check_error, rows
from webhook.errors import InvalidConstraint, InvalidVersion
from webhook.versions import parse_skip_range, parse_version


@pytest.mark.parametrize("row", rows("blang.yaml", "admits"))
def test_skip_range_admits(row: dict[str, Any]) -> None:
    check_admits(parse_skip_range(row["range"]).admits, row)


@pytest.mark.parametrize("row", rows("blang.yaml", "invalid"))
def test_skip_range_invalid(row: dict[str, Any]) -> None:
    check_error(parse_skip_range, InvalidConstraint, row["range"], row["error"])


@pytest.mark.parametrize("row", rows("parse_version.yaml", "valid"))
def test_parse_version_valid(row: dict[str, Any]) -> None:
    assert parse_version(row["version"]) == semver.Version(*row["parts"])
    assert str(parse_version(row["version"])) == row["version"]


@pytest.mark.parametrize("row", rows("parse_version.yaml", "invalid"))
def test_parse_version_invalid(row: dict[str, Any]) -> None:
    check_error(parse_version, InvalidVersion, row["version"], row["error"])
