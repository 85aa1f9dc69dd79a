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
