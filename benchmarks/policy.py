"""Policy engine benchmark: the bundled policies on realistic admission requests, one core, on each CEL backend.

Usage: python benchmarks/policy.py [--seconds 1.0] [--cel-engine cel-python|cel-expr] [--json]

For each request (approval, create, ClusterExtension update, a non-matching Pod) it measures the two
AdmissionReviews the kube-apiserver sends (one to /validate, one to /mutate: ``PolicyEngine.validate`` and
``.mutate``, called as the webhook calls them, on a request decoded from JSON) and, in the same run, the bare CEL
work of each: every ``Program.evaluate`` call the engine made (a policy's program of all its validations or
mutations included), recorded once and replayed. The difference is the engine's own cost (matching, conversion to CEL,
dispatch, messages, patches). Both backends are measured side by side unless ``--cel-engine`` picks one. Goals:
overhead <= 30% over bare evaluation; a non-matching request < 50 us; an approval < 2 ms; with cel-expr, the
bundled set under 200 us per request.
"""

from __future__ import annotations

import argparse
import copy
import datetime
import functools
import json
import os
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, cast

from webhook.cel import Program
from webhook.objects import InMemoryObjectStore
from webhook.policy import model
from webhook.policy.admitting.engine import PolicyEngine
from webhook.policy.loading.loader import load_policy_set
from webhook.settings import CEL_ENGINES

ROOT = Path(__file__).resolve().parent.parent
NOW = datetime.datetime(2026, 6, 10, 12, tzinfo=datetime.UTC)
EXTENSION: dict[str, Any] = {
    "apiVersion": "olm.operatorframework.io/v1",
    "kind": "ClusterExtension",
    "metadata": {"name": "cloudnative-pg"},
    "spec": {
        "namespace": "cnpg-system",
        "source": {
            "sourceType": "Catalog",
            "catalog": {
                "packageName": "cloudnative-pg",
                "version": ">=1.27.0 <2.0.0",
                "selector": {"matchLabels": {"olm.operatorframework.io/metadata.name": "certified-operators"}},
            },
        },
    },
    "status": {"install": {"bundle": {"name": "cloudnative-pg.v1.27.1", "version": "1.27.1"}}},
}


def revision(approved: bool, extension: str = "cloudnative-pg") -> dict[str, Any]:
    return {
        "apiVersion": "olm.operatorframework.io/v1",
        "kind": "ClusterExtensionRevision",
        "metadata": {"name": f"{extension}-1.28.0", "labels": {"clusterextension": extension}},
        "spec": {
            "clusterExtensionRef": {"name": extension},
            "version": "1.28.0",
            "bundleMetadata": {"name": "cloudnative-pg.v1.28.0", "version": "1.28.0"},
            "availableSince": "2026-06-08T09:00:00Z",
            "approved": approved,
        },
    }


def request(obj: Mapping[str, Any], old: Mapping[str, Any] | None, resource: str, operation: str) -> dict[str, Any]:
    group, _, version = str(obj["apiVersion"]).rpartition("/")
    gvk = {"group": group, "version": version, "kind": obj["kind"]}
    gvr = {"group": group, "version": version, "resource": resource}
    found: dict[str, Any] = {
        "uid": "705ab4f5-6393-11e8-b7cc-42010a800002",
        "kind": gvk,
        "resource": gvr,
        "requestKind": gvk,
        "requestResource": gvr,
        "name": obj["metadata"]["name"],
        "operation": operation,
        "userInfo": {"username": "alice", "groups": ["upgrade-approvers", "system:authenticated"]},
        "object": obj,
        "oldObject": old,
        "dryRun": False,
        "options": {"apiVersion": "meta.k8s.io/v1", "kind": f"{operation.title()}Options"},
    }
    if obj["metadata"].get("namespace"):
        found["namespace"] = obj["metadata"]["namespace"]
    return found


def scenarios() -> dict[str, tuple[dict[str, Any], dict[str, Any] | None]]:
    moved = copy.deepcopy(EXTENSION)
    moved["spec"]["source"]["catalog"]["version"] = ">=1.28.0 <1.29.0"
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "web-0", "namespace": "shop", "labels": {"app": "web"}},
        "spec": {"containers": [{"name": "web", "image": "nginx:1.27", "ports": [{"containerPort": 80}]}]},
    }
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "shop"}}
    return {
        "approval (UPDATE revision)": (
            request(revision(True), revision(False), "clusterextensionrevisions", "UPDATE"),
            None,
        ),
        "create revision": (
            request(revision(False, "argocd-operator"), None, "clusterextensionrevisions", "CREATE"),
            None,
        ),
        "version change (UPDATE extension)": (request(moved, EXTENSION, "clusterextensions", "UPDATE"), None),
        "non-matching Pod": (request(pod, None, "pods", "CREATE"), namespace),
    }


class Recorder:
    """Wraps every compiled program of a policy set to record (program, activation) of each call."""

    def __init__(self) -> None:
        self.calls: list[tuple[Program, Mapping[str, Any]]] = []
        self.recording = False

    def wrap(self, program: Program) -> Program:
        recorder = self

        class Recorded:
            extensions = getattr(program, "extensions", ())
            result_type = program.result_type

            def evaluate(self, activation: Mapping[str, Any]) -> Any:
                if recorder.recording:
                    recorder.calls.append((program, activation))
                return program.evaluate(activation)

        return cast(Program, Recorded())  # duck-typed: the engine only calls evaluate and reads result_type


def instrument(value: Any, recorder: Recorder) -> None:
    """Replace, in place, every ``Expression.program`` below ``value``, and each policy's program of all its
    validations or mutations (``all_validations``, ``all_mutations``), by a recording wrapper."""
    if isinstance(value, model.Expression):
        object.__setattr__(value, "program", recorder.wrap(value.program))
    elif hasattr(value, "__dataclass_fields__"):
        for together in ("all_validations", "all_mutations"):
            if getattr(value, together, None) is not None:
                object.__setattr__(value, together, recorder.wrap(getattr(value, together)))
        for name in value.__dataclass_fields__:
            instrument(getattr(value, name), recorder)
    elif isinstance(value, tuple | list):
        for item in value:
            instrument(item, recorder)


def replay(calls: list[tuple[Program, Mapping[str, Any]]]) -> None:
    for program, activation in calls:
        program.evaluate(activation)


def per_call_us(run: Callable[[], object], seconds: float) -> float:
    run()
    count, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        run()
        count += 1
    return (time.perf_counter() - start) / count * 1e6


def measure(engine_name: str, seconds: float) -> dict[str, dict[str, float]]:
    """Figures of every scenario and endpoint with the policies compiled for ``engine_name``."""
    policies = load_policy_set([ROOT / "policies"], engine=engine_name)
    recorder = Recorder()
    for part in (policies.validating_policies, policies.mutating_policies):
        instrument(part, recorder)
    store = InMemoryObjectStore([*policies.params, EXTENSION, revision(True)])
    engine = PolicyEngine(policies, store)
    figures: dict[str, dict[str, float]] = {}
    for name, (req, namespace) in scenarios().items():
        validate = functools.partial(engine.validate, now=NOW, from_json=True)
        mutate = functools.partial(engine.mutate, now=NOW, from_json=True)
        for endpoint, run in (("validate", validate), ("mutate", mutate)):
            recorder.calls.clear()
            recorder.recording = True
            decision = run(req, namespace)
            recorder.recording = False
            calls = list(recorder.calls)
            total = per_call_us(functools.partial(run, req, namespace), seconds)
            bare = per_call_us(functools.partial(replay, calls), seconds)
            figures[f"{name} /{endpoint}"] = {
                "allowed": float(decision.allowed),
                "expressions": float(len(calls)),
                "request_us": total,
                "requests_per_s": 1e6 / total,
                "bare_cel_us": bare if calls else 0.0,
                "overhead_pct": (total - bare) / bare * 100 if calls else float("nan"),
            }
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=1.0, help="time per measurement")
    parser.add_argument("--cel-engine", choices=CEL_ENGINES, help="measure one backend only (default: both)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    engines = [args.cel_engine] if args.cel_engine else list(CEL_ENGINES)
    figures = {engine: measure(engine, args.seconds) for engine in engines}
    if args.json:
        print(json.dumps(figures, indent=2))
        return
    columns = "".join(f" {engine + ' us':>15} {'bare CEL':>9} {'overhead':>8}" for engine in engines)
    print(f"{'request':46} {'allowed':>7} {'exprs':>5}{columns}")
    first = figures[engines[0]]
    for name, f in first.items():
        cells = ""
        for engine in engines:
            g = figures[engine][name]
            overhead = f"{g['overhead_pct']:7.0f}%" if g["expressions"] else "      -"
            cells += f" {g['request_us']:15.1f} {g['bare_cel_us']:9.1f} {overhead:>8}"
        print(f"{name:46} {bool(f['allowed'])!s:>7} {f['expressions']:5.0f}{cells}")
    for scenario in scenarios():
        both = "  ".join(
            f"{engine} {sum(figures[engine][f'{scenario} /{e}']['request_us'] for e in ('validate', 'mutate')):.0f} us"
            for engine in engines
        )
        print(f"{scenario + ' (validate + mutate)':46} {both}")
    print("goals: overhead <= 30% over bare CEL; non-matching < 50 us; approval < 2,000 us; cel-expr < 200 us/request")


if __name__ == "__main__":
    main()
