"""Replay of the real-world corpus (tests/data/corpus/cases.yaml) recorded from kube-apiserver 1.32 and 1.36.

Every case's policies must load here exactly when the apiserver created them, and every recorded request must be
decided as there (``replay.decision_outcome``: a VAP's decision and message, a MAP's admitted object), on both
engines, each version with its own environment. Entries listed in the version's corpus_differences.yaml must
still differ.
"""

from __future__ import annotations

import pytest

from tests.oracle.corpus import CASES, loads, outcome, recorded
from tests.oracle.replay import RECORDED, decision_cases, known_differences
from webhook.settings import CEL_ENGINES

KNOWN = {
    (version, row["case"], row["why"], engine): entry["cause"]
    for version in RECORDED
    for entry in known_differences(version, "corpus_differences.yaml")
    for row in entry["rows"]
    for engine in entry["engines"]
}
REQUESTS = [
    (version, number, engine)
    for version in RECORDED
    for number, entry in enumerate(recorded(version))
    for engine in CEL_ENGINES
    if "refused" not in entry
]
LOADS = [(version, why, engine) for version in RECORDED for why in decision_cases(CASES) for engine in CEL_ENGINES]


def test_every_version_has_the_corpus_recorded() -> None:
    for version in RECORDED:
        assert {entry["case"] for entry in recorded(version)} == set(decision_cases(CASES)), version


@pytest.mark.parametrize(("version", "why", "engine"), LOADS, ids=[f"{v} {e}: {w}" for v, w, e in LOADS])
def test_a_policy_loads_where_the_apiserver_creates_it(version: str, why: str, engine: str) -> None:
    refused = any(entry["case"] == why and "refused" in entry for entry in recorded(version))
    assert loads(engine, decision_cases(CASES)[why], version) is not refused


@pytest.mark.parametrize(
    ("version", "number", "engine"),
    REQUESTS,
    ids=[f"{v} {e}: {recorded(v)[n]['case']}: {recorded(v)[n]['why']}" for v, n, e in REQUESTS],
)
def test_a_request_is_decided_as_the_apiserver_decides_it(version: str, number: int, engine: str) -> None:
    entry = recorded(version)[number]
    ours, theirs = outcome(engine, entry, version)
    if (version, entry["case"], entry["why"], engine) in KNOWN:
        assert ours != theirs, "now agrees: remove it from corpus_differences.yaml"
    else:
        assert ours == theirs
