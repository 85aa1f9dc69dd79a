"""Freeze and maintenance windows (cases in tests/data/windows.yaml)."""

from __future__ import annotations

import datetime
from pathlib import Path
from typing import Any

import pytest
import yaml

from webhook.errors import InputError
from webhook.windows import parse_window

CASES: dict[str, list[dict[str, Any]]] = yaml.safe_load(
    (Path(__file__).parent / "data" / "windows.yaml").read_text(encoding="utf-8")
)


@pytest.mark.parametrize("case", CASES["contains"], ids=[c["why"] for c in CASES["contains"]])
def test_window_contains(case: dict[str, Any]) -> None:
    at = datetime.datetime.fromisoformat(case["at"])
    assert parse_window(case["window"]).contains(at) is case["want"]


@pytest.mark.parametrize("case", CASES["errors"], ids=[c["why"] for c in CASES["errors"]])
def test_window_errors(case: dict[str, Any]) -> None:
    with pytest.raises(InputError) as raised:
        parse_window(case["window"])
    assert str(raised.value) == case["error"]


FRIDAY = datetime.datetime(2026, 11, 27, 16, 7, 30, tzinfo=datetime.UTC)


@pytest.mark.parametrize(
    ("window", "moment", "closes", "opens"),
    [
        pytest.param("2026-11-27T16:00:00Z/2026-11-27T16:10:00Z", FRIDAY, "2026-11-27T16:10:00+00:00",
                     "2026-11-27T16:07:30+00:00", id="inside an interval: it closes at its end, is open now"),
        pytest.param("2026-11-28T00:00:00Z/2026-11-29T00:00:00Z", FRIDAY, None, "2026-11-28T00:00:00+00:00",
                     id="before an interval: it opens at its start"),
        pytest.param("2026-11-20T00:00:00Z/2026-11-21T00:00:00Z", FRIDAY, None, None,
                     id="after an interval: it never opens again"),
        pytest.param("Fri 16:00-17:00", FRIDAY, "2026-11-27T17:00:00+00:00", "2026-11-27T16:07:30+00:00",
                     id="inside a weekly span"),
        pytest.param("Sat 02:00-06:00", FRIDAY, None, "2026-11-28T02:00:00+00:00", id="before this week's span"),
        pytest.param("Mon 02:00-06:00", FRIDAY, None, "2026-11-30T02:00:00+00:00", id="next week's span"),
        pytest.param("Fri-Mon 18:00-08:00", datetime.datetime(2026, 11, 30, 7, 0, tzinfo=datetime.UTC),
                     "2026-11-30T08:00:00+00:00", "2026-11-30T07:00:00+00:00",
                     id="a span past midnight, seen on the next day"),
        pytest.param("Sun 22:00-02:00", datetime.datetime(2026, 11, 30, 1, 0, tzinfo=datetime.UTC),
                     "2026-11-30T02:00:00+00:00", "2026-11-30T01:00:00+00:00", id="a span that wraps the week"),
    ],
)  # fmt: skip
def test_when_a_window_closes_and_opens(window: str, moment: datetime.datetime, closes: str | None, opens: str | None):
    parsed = parse_window(window)
    found = (parsed.closes_at(moment), parsed.opens_at(moment))
    assert tuple(t.isoformat() if t else None for t in found) == (closes, opens)
