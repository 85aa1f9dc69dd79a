"""Replay of admission policy decisions recorded from kube-apiserver 1.32 (tests/data/oracle/decisions.yaml).

Each recorded request runs through ``PolicyEngine`` on both CEL engines with the case's policies and objects
(params, Namespaces) in the object store. ValidatingAdmissionPolicy: the decision must be the apiserver's
(allowed, the HTTP code of a denial, its message ``ValidatingAdmissionPolicy '<p>' with binding '<b>' denied
request: ...``, the warnings). MutatingAdmissionPolicy: allowed, and the object the patch makes of the
request's object must be the object the apiserver admitted (metadata that differs between dry runs aside).
A case the apiserver refused to create must not load either. Requests listed in
tests/data/oracle/decision_differences.yaml must still differ.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.oracle.replay import decision_outcome, decisions, known_decision_differences
from webhook.settings import CEL_ENGINES

KNOWN = known_decision_differences()
CASES = [(number, engine) for number in range(len(decisions())) for engine in CEL_ENGINES]


def _id(number: int, engine: str) -> str:
    entry: dict[str, Any] = decisions()[number]
    return f"{engine}: {entry['case']}: {entry['why']}"


@pytest.mark.parametrize(("number", "engine"), CASES, ids=[_id(n, e) for n, e in CASES])
def test_engine_decides_as_the_apiserver(number: int, engine: str) -> None:
    entry = decisions()[number]
    ours, theirs = decision_outcome(engine, entry)
    key = (entry["case"], entry["why"], engine)
    if key in KNOWN:
        assert ours != theirs, f"now agrees: remove it from decision_differences.yaml ({KNOWN[key]})"
    else:
        assert ours == theirs
