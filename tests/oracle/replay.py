"""Replay the apiserver's recorded CEL facts and decisions (tests/data/oracle/) on upgrade-gate's engines.

    .venv/bin/python -m tests.oracle.replay     # agreement per version and engine, and every disagreement

Each Kubernetes version of ``RECORDED`` has its recordings in its own directory (1.32 in tests/data/oracle, 1.36
in tests/data/oracle/v1.36), and is replayed with the environment of that version (``--kubernetes-version``: the
libraries its apiserver gives a new expression, the admission APIs it serves). ``agreement(engine, fact, version)``
is what the replay test asserts for each recorded fact; see record.py for what a recording holds. An error agrees
when the phase agrees (compile, evaluate, cost), as cel-cpp and cel-go word some errors differently.
"""

from __future__ import annotations

import base64
import datetime
import math
from functools import cache
from pathlib import Path
from typing import Any

import jsonpatch
import yaml

from tests import tables
from tests.cel.tables import rows, strict
from tests.oracle.apiserver import RECORDED_MAP_API
from tests.oracle.decisions import mutating, stable
from webhook.cel import extension_bindings
from webhook.cel.environment import Environment, backend_named
from webhook.cel.semantics import kind
from webhook.errors import CelCompileError, CelError, CostLimitExceeded, PolicyLoadError
from webhook.objects import InMemoryObjectStore
from webhook.policy.admitting.engine import PolicyEngine
from webhook.policy.loading.loader import load_policy_text, serves
from webhook.settings import CEL_ENGINES

ROOT = Path(__file__).resolve().parents[2]
ORACLE = ROOT / "tests" / "data" / "oracle"
#: Kubernetes version -> the directory of its recordings (``apiserver.out_directory``).
RECORDED = {"1.32": ORACLE, "1.36": ORACLE / "v1.36"}
DECISION_CASES = ORACLE / "decision_cases.yaml"
NOW = datetime.datetime(2024, 5, 6, 7, 8, 9, tzinfo=datetime.UTC)
_RENDERED_KINDS = frozenset({"int", "uint", "double", "bool", "bytes", "string", "timestamp", "duration"})


@cache
def facts(version: str) -> dict[str, dict[str, Any]]:
    """The facts recorded from the apiserver of ``version`` by row id."""
    return {fact["id"]: fact for fact in tables.load(RECORDED[version] / "cel.yaml")}


def known_differences(version: str, name: str) -> list[dict[str, Any]]:
    """The entries of ``<name>`` (``cel_differences.yaml``, ``decision_differences.yaml``) of ``version``'s
    recordings, each with ``cause``, ``engines`` and ``rows``; none where the file does not exist."""
    path = RECORDED[version] / name
    return list(tables.load(path)) if path.exists() else []


@cache
def table_rows() -> dict[str, dict[str, Any]]:
    """The rows of tests/data/cel/*.yaml by id (``<table>: <why>``)."""
    return rows()


def outcome(engine: str, expression: str, version: str) -> tuple[str, Any, str]:
    """``(phase, plain value, rendering)`` in the environment of Kubernetes ``version``: phase ``value`` with the
    value and its record.py rendering, or ``compile``/``evaluate``/``cost`` with the message as the rendering."""
    backend = backend_named(engine)
    try:
        program = Environment((), backend=backend, kubernetes_version=version).compile(expression)
    except CelCompileError as error:
        return "compile", None, str(error)
    try:
        value = program.evaluate(extension_bindings(None, NOW))
    except CostLimitExceeded as error:
        return "cost", None, str(error)
    except CelError as error:
        return "evaluate", None, str(error)
    plain = backend.to_python(value)
    return "value", plain, render(kind(value), plain)


def render(found: str, plain: Any) -> str:
    """record.py's ``<type>:<string(v)>`` for a value of CEL kind ``found`` whose plain form is ``plain``."""
    if found not in _RENDERED_KINDS:
        return f"{found}:" if found in ("null", "list", "map") else "other:"
    if found == "bool":
        return f"bool:{'true' if plain else 'false'}"
    if found == "double":
        return f"double:{go_float(plain)}"
    if found == "bytes":
        return "bytes:" + base64.b64decode(plain).decode("utf-8", "replace")
    return f"{found}:{plain}"


def go_float(value: float) -> str:
    """Go's ``strconv.FormatFloat(value, 'g', -1, 64)``, which cel-go's ``string(double)`` uses."""
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if math.isnan(value):
        return "NaN"
    text = repr(value)
    mantissa, _, exponent = text.partition("e")
    mantissa = mantissa.removesuffix(".0")
    if not exponent:
        return mantissa if abs(value) < 1e21 else f"{mantissa}e+21"
    sign = exponent[0] if exponent[0] in "+-" else "+"
    digits = exponent.lstrip("+-").rjust(2, "0")
    return f"{mantissa}e{sign}{digits}"


def agreement(engine: str, fact: dict[str, Any], version: str) -> tuple[bool, str]:
    """Whether ``engine`` agrees with ``fact``, recorded from the apiserver of ``version``, and a line saying both
    answers."""
    phase, plain, rendering = outcome(engine, fact["expression"], version)
    recorded = fact["outcome"]
    if recorded == "equal":
        expected = table_rows()[fact["id"]]["expected"]
        agrees = phase == "value" and strict(plain) == strict(expected)
        apiserver = f"equal to {expected!r}"
    elif recorded == "value":
        agrees = phase == "value" and rendering == fact["text"]
        apiserver = f"value {fact['text']}"
    else:
        agrees = phase == recorded
        apiserver = f"{recorded} error: {fact.get('text', '')}"
    ours = f"{phase}: {plain!r}" if phase == "value" else f"{phase} error: {rendering}"
    return agrees, f"apiserver {apiserver}; {engine} {ours}"


@cache
def decisions(version: str) -> list[dict[str, Any]]:
    """The decisions recorded from the apiserver of ``version`` (requests and refused cases), in recording order."""
    return list(tables.load(RECORDED[version] / "decisions.yaml"))


@cache
def decision_cases(path: Path = DECISION_CASES) -> dict[str, dict[str, Any]]:
    """The cases of ``path`` (decision_cases.yaml, or the corpus's) by ``why``."""
    return {case["why"]: case for case in tables.load(path)["cases"]}


def known_decision_differences(version: str) -> dict[tuple[str, str, str], str]:
    """(case, request, engine) -> cause, from ``version``'s decision_differences.yaml."""
    return {
        (row["case"], row["why"], engine): entry["cause"]
        for entry in known_differences(version, "decision_differences.yaml")
        for row in entry["rows"]
        for engine in entry["engines"]
    }


def decision_outcome(
    engine: str, entry: dict[str, Any], version: str, cases: Path = DECISION_CASES
) -> tuple[dict[str, Any], dict[str, Any]]:
    """(ours, the apiserver's) for an entry of a case of ``cases`` recorded from the apiserver of ``version``, in the
    same terms: ``refused`` (which policy documents do not load), or ``allowed`` with ``code``/``message`` when
    denied and ``warnings``."""
    case = decision_cases(cases)[entry["case"]]
    documents = as_sent(case["policies"], version)
    if "refused" in entry:
        refused = sorted(
            document["metadata"]["name"] for document in documents if not _loads(document, engine, version)
        )
        recorded = sorted(message.split('"')[1] for message in entry["refused"])
        return {"refused": refused}, {"refused": recorded}
    text = yaml.safe_dump_all(documents)
    policies = load_policy_text(text, file=case["why"], engine=engine, version=version)
    store = InMemoryObjectStore([*case.get("objects", ()), *policies.params])
    recorded = entry["apiserver"]
    if mutating(case):
        decision = PolicyEngine(policies, store).mutate(entry["request"], entry.get("namespaceObject"))
        patched = jsonpatch.apply_patch(entry["request"]["object"], list(decision.patch))
        return {"allowed": decision.allowed, "object": stable(patched) if decision.allowed else None}, {
            "allowed": recorded["allowed"],
            "object": recorded.get("object"),
        }
    decision = PolicyEngine(policies, store).validate(entry["request"], entry.get("namespaceObject"))
    ours: dict[str, Any] = {"allowed": decision.allowed}
    if not decision.allowed:
        ours.update(code=decision.code, message=decision.message)
    if decision.warnings:
        ours["warnings"] = list(decision.warnings)
    theirs: dict[str, Any] = {"allowed": recorded["allowed"]}
    if not recorded["allowed"]:
        theirs.update(code=recorded["status"], message=recorded["message"])
    if recorded.get("warnings"):
        theirs["warnings"] = recorded["warnings"]
    return ours, theirs


def as_sent(documents: list[dict[str, Any]], version: str) -> list[dict[str, Any]]:
    """``documents`` as the recorder sent them to the apiserver of ``version``: MutatingAdmissionPolicies written as
    ``RECORDED_MAP_API`` in the newest version it serves (``apiserver.Apiserver``, ``loader.SERVED``)."""
    group = RECORDED_MAP_API.rpartition("/")[0]
    newest = next(v for v in ("v1", "v1beta1", "v1alpha1") if serves(version, "MutatingAdmissionPolicy", v))
    return [
        {**document, "apiVersion": f"{group}/{newest}"} if document["apiVersion"] == RECORDED_MAP_API else document
        for document in documents
    ]


def _loads(document: dict[str, Any], engine: str, version: str) -> bool:
    try:
        load_policy_text(yaml.safe_dump(document), engine=engine, version=version)
    except PolicyLoadError:
        return False
    return True


def main() -> None:
    """Print, per recorded version, the agreement of each engine with its facts and decisions, and each
    disagreement."""
    for version in RECORDED:
        for engine in CEL_ENGINES:
            misses = []
            for entry in decisions(version):
                ours, theirs = decision_outcome(engine, entry, version)
                if ours != theirs:
                    misses.append(f"  {entry['case']}: {entry['why']}: apiserver {theirs}; {engine} {ours}")
            print(f"{version} {engine}: {figure(len(decisions(version)), len(misses))} decisions agree")
            print("\n".join(misses))
        for engine in CEL_ENGINES:
            misses = []
            for fact_id, fact in facts(version).items():
                agrees, line = agreement(engine, fact, version)
                if not agrees:
                    misses.append(f"  {fact_id}: {line}")
            print(f"{version} {engine}: {figure(len(facts(version)), len(misses))} CEL facts agree")
            print("\n".join(misses))


def figure(total: int, misses: int) -> str:
    """``<agreeing>/<total> (<percent> %)``."""
    return f"{total - misses}/{total} ({100 * (total - misses) / max(total, 1):.1f} %)"


if __name__ == "__main__":
    main()
