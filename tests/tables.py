"""The one loader of the case tables in ``tests/data/``: a table is YAML, a row is one case whose ``why`` reads as
a sentence and becomes its pytest id."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml
from _pytest.mark.structures import ParameterSet

DATA = Path(__file__).resolve().parent / "data"


def load(relative: str | Path) -> Any:
    """The YAML document at ``tests/data/<relative>`` (UTF-8), read anew on each call."""
    return yaml.safe_load((DATA / relative).read_text("utf-8"))


def params(rows: Iterable[Mapping[str, Any]], key: str = "why") -> list[ParameterSet]:
    """One ``pytest.param`` per row, its id the row's ``key``."""
    return [pytest.param(row, id=str(row[key])) for row in rows]
