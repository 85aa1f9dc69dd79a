"""Real-world policies (tests/data/corpus/cases.yaml) recorded on the kube-apiserver and replayed.

    .venv/bin/python -m tests.oracle.corpus                       # starts 1.32, records tests/data/oracle/corpus.yaml
    .venv/bin/python -m tests.oracle.corpus --kube-version 1.36   # the same against 1.36: tests/data/oracle/v1.36/

The corpus's cases have the format of decision_cases.yaml and are recorded as decisions.py records those: whether
the apiserver creates each case's policies (``refused`` with its messages when not), and its answer to each request
(VAP: allowed, code, message, warnings; MAP: the admitted object). ``loading`` and ``deciding`` give the figures of
docs/cel-engines.md (test_corpus.py asserts each entry): the cases whose policies load as they do on the apiserver,
and the requests decided alike.
"""

from __future__ import annotations

from functools import cache
from typing import Any

import yaml

from tests import tables
from tests.oracle import decisions
from tests.oracle.apiserver import ROOT, Apiserver, run_recorder
from tests.oracle.replay import RECORDED, decision_cases, decision_outcome
from webhook.errors import PolicyLoadError
from webhook.policy.loading.loader import load_policy_text

CASES = ROOT / "tests" / "data" / "corpus" / "cases.yaml"
NAME = "corpus.yaml"


@cache
def recorded(version: str) -> list[dict[str, Any]]:
    """The corpus entries recorded from the apiserver of ``version`` (none where it was not recorded)."""
    path = RECORDED[version] / NAME
    return list(tables.load(path)) if path.exists() else []


def outcome(engine: str, entry: dict[str, Any], version: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """(ours, the apiserver's) for a recorded corpus entry (``replay.decision_outcome``)."""
    return decision_outcome(engine, entry, version, CASES)


def loading(engine: str, version: str) -> tuple[int, int]:
    """``(cases, disagreeing)``: whether each case's policies load here as the apiserver of ``version`` created them
    (a case it refused is recorded as such)."""
    refused = {entry["case"] for entry in recorded(version) if "refused" in entry}
    cases = decision_cases(CASES)
    return len(cases), sum(loads(engine, case, version) == (why in refused) for why, case in cases.items())


def loads(engine: str, case: dict[str, Any], version: str) -> bool:
    """Whether the policies of ``case`` load on ``engine`` for Kubernetes ``version``."""
    try:
        load_policy_text(yaml.safe_dump_all(case["policies"]), file=case["why"], engine=engine, version=version)
    except PolicyLoadError:
        return False
    return True


def deciding(engine: str, version: str) -> tuple[int, int]:
    """``(requests, disagreeing)`` over the corpus's recorded requests (one whose case does not load here disagrees)."""
    requests = [entry for entry in recorded(version) if "refused" not in entry]
    misses = 0
    for entry in requests:
        try:
            ours, theirs = outcome(engine, entry, version)
        except PolicyLoadError:
            ours, theirs = {}, {"loads": True}
        misses += ours != theirs
    return len(requests), misses


def record(api: Apiserver) -> None:
    """Record the corpus with ``api`` into its version's directory."""
    from tests.oracle.record import write  # noqa: PLC0415 - record imports this module's replay side

    written = write(api, "tests/oracle/corpus.py", NAME, decisions.record(api, CASES))
    print(f"recorded the corpus in {written.relative_to(ROOT)}")


def main() -> None:
    """Start an apiserver (or use ``--kubeconfig FILE``'s) and record the corpus."""
    run_recorder(record, __doc__)


if __name__ == "__main__":
    main()
