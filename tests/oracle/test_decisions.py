"""Replay of admission policy decisions recorded from kube-apiserver 1.32 and 1.36
(tests/data/oracle/{,v1.36/}decisions.yaml), each loaded for the version that answered.

Each recorded request runs through ``PolicyEngine`` on both CEL engines with the case's policies and objects
(params, Namespaces) in the object store. ValidatingAdmissionPolicy: the decision must be the apiserver's
(allowed, the HTTP code of a denial, its message ``ValidatingAdmissionPolicy '<p>' with binding '<b>' denied
request: ...``, the warnings). MutatingAdmissionPolicy: allowed, and the object the patch makes of the
request's object must be the object the apiserver admitted (metadata that differs between dry runs aside).
A case the apiserver refused to create must not load either. Requests listed in the version's
decision_differences.yaml must still differ.
"""

from __future__ import annotations

import pytest

from tests.oracle.replay import RECORDED, decision_outcome, decisions, known_decision_differences
from webhook.settings import CEL_ENGINES

KNOWN = {version: known_decision_differences(version) for version in RECORDED}
CASES = [
    (version, number, engine)
    for version in RECORDED
    for number in range(len(decisions(version)))
    for engine in CEL_ENGINES
]


def _id(version: str, number: int, engine: str) -> str:
    entry = decisions(version)[number]
    return f"{version} {engine}: {entry['case']}: {entry['why']}"


@pytest.mark.parametrize(("version", "number", "engine"), CASES, ids=[_id(*case) for case in CASES])
def test_engine_decides_as_the_apiserver(version: str, number: int, engine: str) -> None:
    entry = decisions(version)[number]
    ours, theirs = decision_outcome(engine, entry, version)
    key = (entry["case"], entry["why"], engine)
    if key in KNOWN[version]:
        assert ours != theirs, (
            f"now agrees: remove it from decision_differences.yaml of {version} ({KNOWN[version][key]})"
        )
    else:
        assert ours == theirs
