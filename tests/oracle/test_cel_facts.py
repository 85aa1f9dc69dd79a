"""Replay of the CEL facts recorded from kube-apiserver 1.32 (tests/data/oracle/cel.yaml) on both engines.

Each fact is a row of tests/data/cel/*.yaml evaluated in-tree by ``record.py``; an engine agrees when it gives
the same kind of outcome (the row's expected value, the apiserver's rendering of the value, or an error of the
same phase). The (fact, engine) pairs of tests/data/oracle/cel_differences.yaml must still disagree, so the
list of known differences cannot go stale.
"""

from __future__ import annotations

import pytest

from tests import tables
from tests.oracle.replay import ROOT, agreement, facts
from webhook.settings import CEL_ENGINES

DIFFERENCES = ROOT / "tests" / "data" / "oracle" / "cel_differences.yaml"
KNOWN = {
    (row, engine): entry["cause"]
    for entry in tables.load(DIFFERENCES)
    for row in entry["rows"]
    for engine in entry["engines"]
}
CASES = [(fact_id, engine) for fact_id in facts() for engine in CEL_ENGINES]


def test_known_differences_name_recorded_facts_and_both_answers() -> None:
    assert {row for row, _ in KNOWN} <= set(facts())
    for entry in tables.load(DIFFERENCES):
        assert {"cause", "engines", "apiserver", "ours", "why", "rows"} <= set(entry), entry["cause"]


@pytest.mark.parametrize(("fact_id", "engine"), CASES, ids=[f"{engine}: {fact_id}" for fact_id, engine in CASES])
def test_engine_agrees_with_the_apiserver(fact_id: str, engine: str) -> None:
    agrees, line = agreement(engine, facts()[fact_id])
    if (fact_id, engine) in KNOWN:
        assert not agrees, f"now agrees: remove it from {DIFFERENCES.name} ({KNOWN[fact_id, engine]})"
    else:
        assert agrees, line
