"""Evaluations per second of the issue's expressions on both CEL backends, side by side (one core, warm).

(a)-(e) are the issue's; (f) calls Kubernetes' format and semver libraries (library values and an optional
crossing cel-cpp as messages).

The activation is an Upgrade-like object (100 containers, 20 labels, spec.version), its old object and a
request with four groups, converted once per backend (``Backend.to_cel``) and shared by every evaluation, as
one admission request shares it across its policies. Run: ``.venv/bin/python benchmarks/cel_backends.py``.
"""

from __future__ import annotations

import gc
import json
import os
import statistics
import time
from typing import Any

from webhook.cel.environment import Environment, backend_named
from webhook.settings import CEL_ENGINES as ENGINES

EXPRESSIONS = {
    "a": 'object.spec.approved == false || request.userInfo.groups.exists(g, g == "upgrade-approvers")',
    "b": 'int(object.spec.version.split(".")[0]) <= int(oldObject.spec.version.split(".")[0]) + 1',
    "c": "object.spec.containers.filter(c, c.image.startsWith('registry.example.com/')).size()"
    " == object.spec.containers.size()",
    "d": 'object.metadata.labels.all(k, k.matches("^[a-z0-9./-]+$")) && size(object.metadata.labels) < 64',
    "e": '"upgrade of " + object.metadata.name + " to " + object.spec.version + " denied"',
    "f": "!format.dns1123Subdomain().validate(object.metadata.name).hasValue()"
    " && semver(object.spec.version).isGreaterThan(semver(oldObject.spec.version))",
}


EXPECTED = (True, "upgrade of operator-upgrade to 2.3.1 denied")


def _inputs() -> dict[str, Any]:
    containers = [
        {"name": f"c{i}", "image": f"registry.example.com/app/c{i}:1.{i}.0", "env": [{"name": "A", "value": "b"}]}
        for i in range(100)
    ]
    labels = {f"example.com/label-{i}": f"value-{i}" for i in range(20)}
    new = {
        "metadata": {"name": "operator-upgrade", "labels": labels},
        "spec": {"approved": True, "version": "2.3.1", "containers": containers},
    }
    old = json.loads(json.dumps(new))
    old["spec"]["version"] = "2.2.0"
    request = {"userInfo": {"username": "alice", "groups": ["dev", "ops", "audit", "upgrade-approvers"]}}
    return {"object": new, "oldObject": old, "request": request}


def _rate(program: Any, activation: dict[str, object], seconds: float = 0.4) -> float:
    """Evaluations per second: the median of five batches of about ``seconds / 5`` each."""
    start, count = time.perf_counter(), 0
    while time.perf_counter() - start < 0.05:
        program.evaluate(activation)
        count += 1
    batch = max(1, int(count / 0.05 * seconds / 5))
    rates = []
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(batch):
            program.evaluate(activation)
        rates.append(batch / (time.perf_counter() - start))
    return statistics.median(rates)


def main() -> None:
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    inputs = _inputs()
    results: dict[str, dict[str, float]] = {}
    for engine in ENGINES:
        backend = backend_named(engine)
        environment = Environment(inputs, backend=backend)
        start = time.perf_counter()
        activation = {name: backend.to_cel(value) for name, value in inputs.items()}
        convert = (time.perf_counter() - start) * 1e6
        row = {"convert_us": convert}
        for label, expression in EXPRESSIONS.items():
            start = time.perf_counter()
            program = environment.compile(expression)
            row[f"compile_{label}_us"] = (time.perf_counter() - start) * 1e6
            assert backend.to_python(program.evaluate(activation)) in EXPECTED
            gc.collect()
            row[label] = _rate(program, activation)
        results[engine] = row
    first, second = ENGINES
    print(f"{'':3} {'expression':72} {first + ' evals/s':>18} {second + ' evals/s':>18} {'ratio':>7}")
    for label, expression in EXPRESSIONS.items():
        slow, fast = results[first][label], results[second][label]
        print(f"{label:3} {expression[:72]:72} {slow:18,.0f} {fast:18,.0f} {fast / slow:6.0f}x")
    for engine in ENGINES:
        compiles = [results[engine][f"compile_{label}_us"] for label in EXPRESSIONS]
        print(
            f"{engine}: to_cel of the request {results[engine]['convert_us']:,.0f} us;"
            f" compile {min(compiles):,.0f}-{max(compiles):,.0f} us per expression"
        )


if __name__ == "__main__":
    main()
