"""docs/cel-engines.md shows the fidelity tables ``python -m tests.oracle.report`` prints from the recordings."""

from __future__ import annotations

import pytest

from tests.oracle.replay import RECORDED, ROOT
from tests.oracle.report import table


@pytest.mark.parametrize("version", RECORDED)
def test_the_documented_fidelity_is_the_recordings(version: str) -> None:
    assert table(version) in (ROOT / "docs" / "cel-engines.md").read_text(encoding="utf-8")
