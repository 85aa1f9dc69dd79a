"""The fidelity table of docs/cel-engines.md: how often each engine answers as the real kube-apiserver, per version.

    .venv/bin/python -m tests.oracle.report     # Markdown, one table per recorded Kubernetes version

Rows, each replayed with the environment of the version that answered (``replay``): the CEL facts (cel.yaml), the
ValidatingAdmissionPolicy decisions and the MutatingAdmissionPolicy patches (decisions.yaml: the requests of each
case), the load-time refusals (decisions.yaml: the cases the apiserver refused to create, which must not load),
and the real-world corpus (corpus.yaml: its policies that load, and its requests decided alike). Cells are
``agreeing/recorded (percent)``; what still differs is listed, with its cause, in each version's
``*_differences.yaml``. The replay tests (test_cel_facts.py, test_decisions.py, test_corpus.py) assert the same.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from tests.oracle import corpus
from tests.oracle.decisions import mutating
from tests.oracle.replay import RECORDED, agreement, decision_cases, decision_outcome, decisions, facts, figure
from webhook.settings import CEL_ENGINES


def _count(entries: Iterable[Any], agrees: Callable[[Any], bool]) -> tuple[int, int]:
    """``(total, disagreeing)`` of ``entries``."""
    found = list(entries)
    return len(found), sum(not agrees(entry) for entry in found)


def rows(version: str, engine: str) -> dict[str, tuple[int, int]]:
    """Row name -> ``(total, disagreeing)`` for ``engine`` on the recordings of ``version``."""
    recorded = decisions(version)

    def decided(entry: dict[str, Any]) -> bool:
        ours, theirs = decision_outcome(engine, entry, version)
        return ours == theirs

    def kind(entry: dict[str, Any]) -> str:
        if "refused" in entry:
            return "refused"
        return "mutating" if mutating(decision_cases()[entry["case"]]) else "validating"

    fidelity = {
        "CEL facts": _count(facts(version).values(), lambda fact: agreement(engine, fact, version)[0]),
        "VAP decisions": _count((e for e in recorded if kind(e) == "validating"), decided),
        "MAP patches": _count((e for e in recorded if kind(e) == "mutating"), decided),
        "load-time refusals": _count((e for e in recorded if kind(e) == "refused"), decided),
    }
    if corpus.recorded(version):
        fidelity["corpus: policies that load"] = corpus.loading(engine, version)
        fidelity["corpus: requests decided alike"] = corpus.deciding(engine, version)
    return fidelity


def table(version: str) -> str:
    """The Markdown table of ``version``: one row per kind of record, one column per engine."""
    per_engine = {engine: rows(version, engine) for engine in CEL_ENGINES}
    names = list(per_engine[CEL_ENGINES[0]])
    lines = [
        f"| kube-apiserver {version} | {' | '.join(CEL_ENGINES)} |",
        "|---|" + "---|" * len(CEL_ENGINES),
    ]
    lines += [f"| {name} | {' | '.join(figure(*per_engine[e][name]) for e in CEL_ENGINES)} |" for name in names]
    return "\n".join(lines)


def main() -> None:
    """Print one table per recorded version."""
    print("\n\n".join(table(version) for version in RECORDED))


if __name__ == "__main__":
    main()
