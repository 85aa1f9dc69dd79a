"""Tests of ``webhook.versions``, driven by the tables in ``tests/data/versions/``."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import pytest
import semver

from tests import tables
from webhook.errors import InvalidVersion
from webhook.versions import parse_version


def rows(name: str, section: str) -> list[Any]:
    return tables.params(tables.load(f"versions/{name}")[section])


def candidates(text: str) -> list[str | semver.Version]:
    """The version as a string, and as a ``semver.Version`` too when it is strict SemVer."""
    try:
        return [text, parse_version(text)]
    except InvalidVersion:
        return [text]


def check_admits(admits: Callable[[str | semver.Version], bool], row: Mapping[str, Any]) -> None:
    """``admits`` answers ``row["admits"]`` for ``row["version"]``, as a string and as a ``semver.Version``."""
    for version in candidates(row["version"]):
        assert admits(version) is row["admits"], f"{row['range']!r} vs {version!r}"


def check_error(parse: Callable[[str], object], error: type[Exception], text: str, message: str) -> None:
    """``parse(text)`` raises ``error`` whose text is ``message``, whole."""
    with pytest.raises(error) as caught:
        parse(text)
    assert str(caught.value) == message
