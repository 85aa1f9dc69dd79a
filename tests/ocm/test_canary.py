"""The canary gate over versions and config sets (tests/data/addons/canary.yaml)."""

from __future__ import annotations

import datetime
from typing import Any

import pytest

from tests.ocm import EXAMPLE_TIME, rows
from webhook.conditions import parse_time
from webhook.ocm.canary import Observation, canary_gate
from webhook.ocm.rollout import render_configs


def _verdict(target: str, canaries: list[Observation], row: dict[str, Any]) -> None:
    verdict = canary_gate(
        target, canaries, soak=datetime.timedelta(seconds=row["soak_seconds"]), now=parse_time(row["now"])
    )
    want = row["want"]
    assert verdict.allowed is want["allowed"]
    assert verdict.message == want["message"]
    assert verdict.ready_at == (None if want["ready_at"] is None else parse_time(want["ready_at"]))


@pytest.mark.parametrize("row", rows("canary.yaml", "gates"))
def test_canary_gate(row: dict[str, Any]) -> None:
    _verdict(row["target"], [Observation.of_install_version(addon) for addon in row["canaries"]], row)


@pytest.mark.parametrize("row", rows("canary.yaml", "config_gates"))
def test_canary_gate_on_configs(row: dict[str, Any]) -> None:
    _verdict(render_configs(row["target"]), [Observation.of_configs(addon) for addon in row["canaries"]], row)


def test_canary_gate_reads_a_naive_now_as_utc() -> None:
    canary = Observation("cluster1", "v2", EXAMPLE_TIME, "Succeed")
    verdict = canary_gate("v2", [canary], soak=datetime.timedelta(0), now=datetime.datetime(2022, 11, 2, 5, 48, 12))
    assert verdict.allowed
