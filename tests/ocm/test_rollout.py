"""Config-set rollouts and placement changes (tests/data/addons/placements.yaml)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.ocm import change, rows
from webhook.errors import InputError
from webhook.ocm.addons import VersionChange
from webhook.ocm.rollout import classify_configs, placement_changes


@pytest.mark.parametrize("row", rows("placements.yaml", "placements"))
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
        {**want, "change": change(want["change"]), "config_change": VersionChange(want["config_change"])}
        for want in row["want"]
    ]


@pytest.mark.parametrize("row", rows("placements.yaml", "configs"))
def test_classify_configs(row: dict[str, Any]) -> None:
    assert classify_configs(row["previous"], row["desired"], row["good"]) is VersionChange(row["change"])


def test_a_config_needs_a_resource_and_a_name() -> None:
    with pytest.raises(InputError, match="an add-on config needs a resource and a name"):
        classify_configs([], [{"resource": "addontemplates"}])
