"""Tests of ``webhook.ocm``, driven by the tables in ``tests/data/addons/`` whose expectations are the add-on
installVersion lifecycle's (and upstream OCM's config rollout), not our code's."""

from __future__ import annotations

from typing import Any

from tests import tables
from webhook.conditions import parse_time
from webhook.ocm.addons import VersionChange

EXAMPLE_TIME = parse_time("2022-11-02T05:48:12Z")


def rows(name: str, section: str) -> list[Any]:
    return tables.params(tables.load(f"addons/{name}")[section])


def change(value: str | None) -> VersionChange | None:
    return None if value is None else VersionChange(value)
