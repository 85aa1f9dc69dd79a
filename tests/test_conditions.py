"""metav1.Condition list helpers (the condition conventions, apimachinery ``meta``), driven by
``tests/data/addons/conditions.yaml``."""

from __future__ import annotations

import copy
import datetime
from typing import Any

import pytest

from tests import tables
from webhook.conditions import find_condition, format_duration, format_time, parse_time, remove_condition, set_condition
from webhook.errors import InputError
from webhook.gitops.config import parse_duration

TABLE = tables.load("addons/conditions.yaml")


def _rows(section: str) -> list[Any]:
    return tables.params(TABLE[section])


@pytest.mark.parametrize("row", _rows("set"))
def test_set_condition(row: dict[str, Any]) -> None:
    before = copy.deepcopy(row["conditions"])
    result = set_condition(row["conditions"], row["condition"], now=parse_time(row["now"]))
    assert result == row["want"]
    assert [list(entry) for entry in result if entry["type"] == row["condition"]["type"]] == [
        [
            key
            for key in ("type", "status", "observedGeneration", "lastTransitionTime", "reason", "message")
            if key in entry
        ]
        for entry in row["want"]
        if entry["type"] == row["condition"]["type"]
    ], "keys follow metav1.Condition's JSON order"
    assert row["conditions"] == before, "the input list is not mutated"


@pytest.mark.parametrize("row", _rows("invalid"))
def test_set_condition_refuses_an_invalid_condition(row: dict[str, Any]) -> None:
    with pytest.raises(InputError) as caught:
        set_condition([], row["condition"], now=datetime.datetime(2022, 11, 2, tzinfo=datetime.UTC))
    assert str(caught.value) == row["error"]


@pytest.mark.parametrize("row", _rows("remove"))
def test_remove_condition(row: dict[str, Any]) -> None:
    assert remove_condition(row["conditions"], row["type"]) == row["want"]


def test_find_condition_returns_a_copy_of_the_first_entry_of_the_type() -> None:
    conditions = [{"type": "Available", "status": "True"}, {"type": "Progressing", "status": "False"}]
    found = find_condition(conditions, "Progressing")
    assert found == {"type": "Progressing", "status": "False"}
    assert found is not conditions[1]
    assert find_condition(conditions, "Degraded") is None
    assert find_condition(None, "Progressing") is None


def test_setting_twice_at_a_later_time_changes_nothing() -> None:
    condition = {
        "type": "Progressing",
        "status": "True",
        "reason": "Upgrading",
        "message": "Upgrading addon to version v2.",
    }
    once = set_condition([], condition, now=datetime.datetime(2022, 11, 2, 5, 48, 12, tzinfo=datetime.UTC))
    assert set_condition(once, condition, now=datetime.datetime(2022, 11, 3, tzinfo=datetime.UTC)) == once


def test_times_are_rfc3339_seconds_in_utc() -> None:
    assert format_time(datetime.datetime(2022, 11, 2, 5, 48, 12, 999999)) == "2022-11-02T05:48:12Z"
    assert parse_time("2022-11-02T07:48:12+02:00") == datetime.datetime(2022, 11, 2, 5, 48, 12, tzinfo=datetime.UTC)
    with pytest.raises(InputError, match="invalid lastTransitionTime '2022-11-02'"):
        parse_time("2022-11-02")


@pytest.mark.parametrize(
    ("duration", "text"),
    [
        (datetime.timedelta(hours=1), "1h"),
        (datetime.timedelta(days=1), "24h"),
        (datetime.timedelta(minutes=90), "1h30m"),
        (datetime.timedelta(minutes=10), "10m"),
        (datetime.timedelta(seconds=45), "45s"),
        (datetime.timedelta(milliseconds=1500), "1.5s"),
        (datetime.timedelta(hours=25, seconds=1), "25h1s"),
        (datetime.timedelta(0), "0s"),
        (-datetime.timedelta(minutes=10), "-10m"),
    ],
    ids=lambda value: str(value) if isinstance(value, datetime.timedelta) else f"prints as {value}",
)
def test_durations_print_as_go_durations(duration: datetime.timedelta, text: str) -> None:
    assert format_duration(duration) == text
    assert parse_duration(text.removeprefix("-")) == abs(duration)
