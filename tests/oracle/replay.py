"""Replay the apiserver's recorded CEL facts (tests/data/oracle/cel.yaml) on upgrade-gate's engines.

    .venv/bin/python -m tests.oracle.replay     # agreement per engine, and every disagreement

``agreement(engine, fact)`` is what the replay test asserts for each recorded fact; see record.py for what a
recording holds. An error agrees when the phase agrees (compile, evaluate, cost); its text is compared by
``same_message`` for the figures only, as cel-cpp and cel-go word some errors differently.
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
from tests.oracle.decisions import mutating, stable
from tests.policy.cel.tables import rows, strict
from webhook.errors import CelCompileError, CelError, CostLimitExceeded, PolicyLoadError
from webhook.objects import InMemoryObjectStore
from webhook.policy.cel import extension_bindings
from webhook.policy.cel.environment import Environment, backend_named
from webhook.policy.cel.semantics import kind
from webhook.policy.engine import PolicyEngine
from webhook.policy.loader import load_policy_text
from webhook.settings import CEL_ENGINES

ROOT = Path(__file__).resolve().parents[2]
FACTS = ROOT / "tests" / "data" / "oracle" / "cel.yaml"
DECISIONS = ROOT / "tests" / "data" / "oracle" / "decisions.yaml"
DECISION_CASES = ROOT / "tests" / "data" / "oracle" / "decision_cases.yaml"
DECISION_DIFFERENCES = ROOT / "tests" / "data" / "oracle" / "decision_differences.yaml"
NOW = datetime.datetime(2024, 5, 6, 7, 8, 9, tzinfo=datetime.UTC)
_RENDERED_KINDS = frozenset({"int", "uint", "double", "bool", "bytes", "string", "timestamp", "duration"})


@cache
def facts() -> dict[str, dict[str, Any]]:
    """The recorded facts by row id."""
    return {fact["id"]: fact for fact in tables.load(FACTS)}


@cache
def table_rows() -> dict[str, dict[str, Any]]:
    """The rows of tests/data/cel/*.yaml by id (``<table>: <why>``)."""
    return rows()


def outcome(engine: str, expression: str) -> tuple[str, Any, str]:
    """``(phase, plain value, rendering)``: phase ``value`` with the value and its record.py rendering, or
    ``compile``/``evaluate``/``cost`` with the message as the rendering."""
    backend = backend_named(engine)
    try:
        program = Environment((), backend=backend).compile(expression)
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


def agreement(engine: str, fact: dict[str, Any]) -> tuple[bool, str]:
    """Whether ``engine`` agrees with the recorded ``fact``, and a line saying both answers."""
    phase, plain, rendering = outcome(engine, fact["expression"])
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
def decisions() -> list[dict[str, Any]]:
    """The recorded decisions (requests and refused cases), in recording order."""
    return list(tables.load(DECISIONS))


@cache
def decision_cases() -> dict[str, dict[str, Any]]:
    """The cases of decision_cases.yaml by ``why``."""
    return {case["why"]: case for case in tables.load(DECISION_CASES)["cases"]}


def known_decision_differences() -> dict[tuple[str, str, str], str]:
    """(case, request, engine) -> cause, from decision_differences.yaml."""
    if not DECISION_DIFFERENCES.exists():
        return {}
    return {
        (row["case"], row["why"], engine): entry["cause"]
        for entry in tables.load(DECISION_DIFFERENCES)
        for row in entry["rows"]
        for engine in entry["engines"]
    }


def decision_outcome(engine: str, entry: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(ours, the apiserver's) for a recorded entry, in the same terms: ``refused`` (which policy documents do
    not load), or ``allowed`` with ``code``/``message`` when denied and ``warnings``."""
    case = decision_cases()[entry["case"]]
    if "refused" in entry:
        refused = sorted(document["metadata"]["name"] for document in case["policies"] if not _loads(document, engine))
        recorded = sorted(message.split('"')[1] for message in entry["refused"])
        return {"refused": refused}, {"refused": recorded}
    policies = load_policy_text(yaml.safe_dump_all(case["policies"]), file=case["why"], engine=engine)
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


def _loads(document: dict[str, Any], engine: str) -> bool:
    try:
        load_policy_text(yaml.safe_dump(document), engine=engine)
    except PolicyLoadError:
        return False
    return True


def main() -> None:
    """Print the agreement of each engine with the recorded facts and decisions, and each disagreement."""
    for engine in CEL_ENGINES:
        misses = []
        for entry in decisions():
            ours, theirs = decision_outcome(engine, entry)
            if ours != theirs:
                misses.append(f"  {entry['case']}: {entry['why']}: apiserver {theirs}; {engine} {ours}")
        total = len(decisions())
        print(f"{engine}: {total - len(misses)}/{total} decisions ({100 * (total - len(misses)) / total:.1f} %) agree")
        print("\n".join(misses))
    for engine in CEL_ENGINES:
        misses = []
        for fact_id, fact in facts().items():
            agrees, line = agreement(engine, fact)
            if not agrees:
                misses.append(f"  {fact_id}: {line}")
        total = len(facts())
        print(f"{engine}: {total - len(misses)}/{total} ({100 * (total - len(misses)) / total:.1f} %) agree")
        print("\n".join(misses))


if __name__ == "__main__":
    main()
