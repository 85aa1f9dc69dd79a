"""Replay of the CEL facts recorded from kube-apiserver 1.32 and 1.36 (tests/data/oracle/{,v1.36/}cel.yaml) on both
engines, each in the environment of the version that answered.

Each fact is a row of tests/data/cel/*.yaml evaluated in-tree by ``record.py``; an engine agrees when it gives
the same kind of outcome (the row's expected value, the apiserver's rendering of the value, or an error of the
same phase). The (fact, engine) pairs of the version's cel_differences.yaml must still disagree, so the list of
known differences cannot go stale.
"""

from __future__ import annotations

import pytest

from tests.oracle.replay import RECORDED, agreement, facts, known_differences
from webhook.settings import CEL_ENGINES

DIFFERENCES = "cel_differences.yaml"
KNOWN = {
    (version, row, engine): entry["cause"]
    for version in RECORDED
    for entry in known_differences(version, DIFFERENCES)
    for row in entry["rows"]
    for engine in entry["engines"]
}
CASES = [(version, fact_id, engine) for version in RECORDED for fact_id in facts(version) for engine in CEL_ENGINES]


@pytest.mark.parametrize("version", RECORDED)
def test_known_differences_name_recorded_facts_and_both_answers(version: str) -> None:
    assert {row for found, row, _ in KNOWN if found == version} <= set(facts(version))
    for entry in known_differences(version, DIFFERENCES):
        assert {"cause", "engines", "apiserver", "ours", "why", "rows"} <= set(entry), entry["cause"]


@pytest.mark.parametrize(
    ("version", "fact_id", "engine"), CASES, ids=[f"{version} {engine}: {fact}" for version, fact, engine in CASES]
)
def test_engine_agrees_with_the_apiserver(version: str, fact_id: str, engine: str) -> None:
    agrees, line = agreement(engine, facts(version)[fact_id], version)
    if (version, fact_id, engine) in KNOWN:
        assert not agrees, f"now agrees: remove it from {DIFFERENCES} of {version} ({KNOWN[version, fact_id, engine]})"
    else:
        assert agrees, line
