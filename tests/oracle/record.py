"""Record what a real kube-apiserver decides, as data under tests/data/oracle/, for replay tests.

    .venv/bin/python -m tests.oracle.record                       # starts ../shared/kube's 1.32, records, stops it
    .venv/bin/python -m tests.oracle.record --kube-version 1.36   # the same against 1.36: tests/data/oracle/v1.36/
    .venv/bin/python -m tests.oracle.record --kubeconfig FILE     # records with a running (fresh) apiserver

The binaries come from ``python -m tests.tools.build``. Records of 1.32 go to ``tests/data/oracle/``, those of
another version to ``tests/data/oracle/v<minor>/``; each file's header names the version that answered.

CEL facts (``cel.yaml``): every portable row of tests/data/cel/*.yaml without variables (the extension
functions and the MutatingAdmissionPolicy-only ``jsonpatch`` library have no in-tree counterpart) is evaluated
in-tree as the variable ``v`` of a ValidatingAdmissionPolicy of its own, bound with ``Deny`` and selected by an
object label, through one dry-run ConfigMap CREATE:

- the policy is refused at create (the apiserver type-checks it): ``compile`` and the checker's message;
- the validation compares ``v`` with the row's expected value (same top-level type and ``==``): an admitted
  request is ``equal``; a denied one carries the rendering of ``v`` (``<type>:<string(v)>``, from
  ``messageExpression``) as ``value``;
- rows that expect an error only render ``v``: an error is ``evaluate`` (or ``cost``) with the error text.

Policy decisions (``decisions.yaml``): see ``decisions.py``; the real-world corpus (``corpus.yaml``): see
``corpus.py``, recorded on its own. The replay tests (tests/oracle/test_*.py) need no apiserver and replay each
version's records with the environment of that version (``replay.RECORDED``); run this again, against each version,
after changing the tables.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import yaml

from tests import tables
from tests.oracle import decisions
from tests.oracle.apiserver import ROOT, Apiserver, out_directory, run_recorder
from tests.oracle.decisions import binding, probe, wait_until_effective
from webhook.cel.environment import Environment, backend_named
from webhook.errors import CelError

TABLES = ROOT / "tests" / "data" / "cel"
ADMISSION = "/apis/admissionregistration.k8s.io/v1"
V1 = "admissionregistration.k8s.io/v1"
#: Not evaluable in a ValidatingAdmissionPolicy: jsonpatch is MutatingAdmissionPolicy-only.
SKIPPED_TABLES = frozenset({"known_differences", "jsonpatch", "addons", "cost"})
_TYPES = (
    ("int", "int"),
    ("uint", "uint"),
    ("double", "double"),
    ("bool", "bool"),
    ("bytes", "bytes"),
    ("google.protobuf.Timestamp", "timestamp"),
    ("google.protobuf.Duration", "duration"),
)
#: ``<type>:<string(v)>`` for the kinds ``string()`` converts, ``<type>:`` for others; ``other:`` for library types.
RENDER = (
    " : ".join(f"type(variables.v) == {cel} ? '{name}:' + string(dyn(variables.v))" for cel, name in _TYPES)
    + " : type(variables.v) == string ? 'string:' + dyn(variables.v)"
    + " : type(variables.v) == null_type ? 'null:' : type(variables.v) == list ? 'list:'"
    + " : type(variables.v) == map ? 'map:' : 'other:'"
)
RECORDER = "tests/oracle/record.py"
EVALUATION_ERROR = "resulted in error: "
VARIABLE_ERROR = 'composited variable "v" fails to evaluate: '


def literal(value: Any) -> str:
    """``value`` (JSON-shaped) as a CEL literal."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        text = repr(value)
        return text if any(mark in text for mark in ".en") else text + ".0"
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'
    if isinstance(value, list):
        return "[" + ", ".join(literal(item) for item in value) + "]"
    return "{" + ", ".join(f"{literal(key)}: {literal(item)}" for key, item in value.items()) + "}"


def fact_rows() -> dict[str, dict[str, Any]]:
    """The rows to record, keyed by test id: portable, without variables, in tables a VAP can evaluate."""
    found: dict[str, dict[str, Any]] = {}
    backend = backend_named("cel-expr")
    for table in sorted(TABLES.glob("*.yaml")):
        if table.stem in SKIPPED_TABLES:
            continue
        for row in tables.load(table):
            if row.get("variables") or row.get("phase") == "cost":
                continue
            try:
                if Environment((), backend=backend).compile(row["expression"]).extensions:
                    continue
            except CelError:
                pass
            found[f"{table.stem}: {row['why']}"] = row
    return found


def fact_policy(name: str, row: Mapping[str, Any]) -> dict[str, Any]:
    """The ValidatingAdmissionPolicy that evaluates ``row`` for ConfigMaps labelled ``fact: <name>``."""
    if "expected" in row:
        expected = f"dyn({literal(row['expected'])})"
        check = f"type(variables.v) == type({expected}) && variables.v == {expected}"
    else:
        check = "[variables.v].size() == 0"
    return {
        "apiVersion": V1,
        "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": name},
        "spec": {
            "failurePolicy": "Fail",
            "matchConstraints": {
                "resourceRules": [
                    {"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["configmaps"]}
                ],
                "objectSelector": {"matchLabels": {"fact": name}},
            },
            "variables": [{"name": "v", "expression": row["expression"]}],
            "validations": [{"expression": check, "messageExpression": RENDER, "message": "unrendered:"}],
        },
    }


def compile_message(answer: Mapping[str, Any]) -> str:
    """The checker's first message in a refused create (``compilation failed: ERROR: <input>:1:3: ...``)."""
    message = str(answer.get("message", ""))
    start = message.find("compilation failed: ")
    text = message[start + len("compilation failed: ") :] if start >= 0 else message
    return text.split("\n")[0].removeprefix("ERROR: <input>:").strip()


def denial_text(answer: Mapping[str, Any]) -> str:
    """What follows ``denied request: `` in a denial."""
    message = str(answer.get("message", ""))
    return message.split("denied request: ", 1)[-1]


def record_facts(api: Apiserver, rows: Mapping[str, Mapping[str, Any]]) -> list[dict[str, Any]]:
    """One recorded outcome per row (see the module docstring)."""
    names = {row_id: f"fact-{number}" for number, row_id in enumerate(rows)}
    outcomes: dict[str, dict[str, str]] = {}
    for row_id, row in rows.items():
        status, answer = api.apply(f"{ADMISSION}/validatingadmissionpolicies", fact_policy(names[row_id], row))
        if status >= 300:
            outcomes[row_id] = {"outcome": "compile", "text": compile_message(answer)}
            continue
        api.apply(f"{ADMISSION}/validatingadmissionpolicybindings", binding(names[row_id], names[row_id]))
    wait_until_effective(api, "fact-sentinel")
    for row_id in rows:
        if row_id not in outcomes:
            outcomes[row_id] = fact_outcome(*probe(api, names[row_id]))
    return [{"id": row_id, "expression": rows[row_id]["expression"], **outcomes[row_id]} for row_id in rows]


def fact_outcome(status: int, answer: Mapping[str, Any]) -> dict[str, str]:
    """``equal`` (admitted), ``value`` with the rendering, or ``evaluate``/``cost`` with the error text."""
    if status == 201:
        return {"outcome": "equal"}
    text = denial_text(answer)
    if EVALUATION_ERROR in text:
        error = text.split(EVALUATION_ERROR, 1)[1].removeprefix(VARIABLE_ERROR)
        return {"outcome": "cost" if "cost" in error else "evaluate", "text": error}
    return {"outcome": "value", "text": text}


def write(api: Apiserver, recorder: str, name: str, records: Iterable[Mapping[str, Any]]) -> Path:
    """``<out_directory(api)>/<name>`` as YAML under a header naming ``recorder`` and the version; the path."""
    out = out_directory(api)
    out.mkdir(parents=True, exist_ok=True)
    header = f"# Recorded by {recorder} from kube-apiserver {api.version}: do not edit.\n"
    body = yaml.safe_dump(list(records), sort_keys=False, allow_unicode=True, width=120)
    (out / name).write_text(header + body, "utf-8")
    return out / name


def main() -> None:
    """Start an apiserver (or use ``--kubeconfig FILE``'s) and record the CEL facts and the policy decisions."""
    run_recorder(record, __doc__)


def record(api: Apiserver) -> None:
    """Record both files with ``api``."""
    facts = record_facts(api, fact_rows())
    write(api, RECORDER, "cel.yaml", facts)
    written = write(api, RECORDER, "decisions.yaml", decisions.record(api))
    print(f"recorded {len(facts)} CEL facts and the policy decisions in {written.parent.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
