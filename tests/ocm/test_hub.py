"""The canary gate on a real hub, its progress deadlines and placement conflicts (tests/data/addons/hub.yaml)."""

from __future__ import annotations

import datetime
from typing import Any

import pytest

from tests import tables
from tests.ocm import rows
from webhook.conditions import parse_time
from webhook.errors import InputError
from webhook.ocm.hub import hub_canary_gate, placement_conflicts, progress_deadline

DEFAULTS = tables.load("addons/hub.yaml")["defaults"]


@pytest.mark.parametrize("row", rows("hub.yaml", "gates"))
def test_hub_canary_gate(row: dict[str, Any]) -> None:
    canaries = [(canary["addon"], canary["works"]) for canary in row["canaries"]]
    verdict = hub_canary_gate(
        row.get("target", DEFAULTS["v2"]),
        canaries,
        row.get("cma", DEFAULTS["cma"]),
        "hub/canary",
        soak=datetime.timedelta(minutes=10),
        now=parse_time(row["now"]),
        override=row.get("override", False),
    )
    want = row["want"]
    assert (verdict.allowed, verdict.message) == (want["allowed"], want["message"])
    assert verdict.ready_at == (None if want["ready_at"] is None else parse_time(want["ready_at"]))


@pytest.mark.parametrize("row", rows("hub.yaml", "deadlines"))
def test_progress_deadline(row: dict[str, Any]) -> None:
    if "error" in row:
        with pytest.raises(InputError) as raised:
            progress_deadline(row["placement"])
        assert str(raised.value) == row["error"]
        return
    deadline = progress_deadline(row["placement"])
    assert (None if deadline is None else deadline.total_seconds()) == row["want"]


@pytest.mark.parametrize("row", rows("hub.yaml", "conflicts"))
def test_placement_conflicts(row: dict[str, Any]) -> None:
    assert placement_conflicts(row["placements"], canary=row.get("canary", "")) == row["want"]
