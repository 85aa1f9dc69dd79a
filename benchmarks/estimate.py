"""What load-time cost estimation adds to loading the bundled policies, on each CEL backend, side by side.

Usage: python benchmarks/estimate.py [--rounds 7] [--cel-engine cel-python|cel-expr] [--json]

Each round loads ``policies/`` from scratch (the loader's program cache emptied) twice: as shipped, with every
expression's worst-case cost estimated by the front end (``webhook.cel.estimate``), and with the front end's
estimator swapped for one that returns 0 at once. Rounds alternate, so both see the same machine load; the best
round of each is reported, with their ratio, and the estimator alone over the parse trees of one load.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any
from unittest import mock

from webhook.cel.estimate import estimate
from webhook.cel.frontend import check
from webhook.policy.loading import loader
from webhook.settings import CEL_ENGINES

POLICIES = Path(__file__).resolve().parent.parent / "policies"


def estimator(replacement: Callable[..., int]) -> AbstractContextManager[Any]:
    """A context in which the front end estimates through ``replacement``."""
    return mock.patch.object(check, "estimate", replacement)


def load_seconds(engine: str) -> float:
    """Seconds to load ``policies/`` with nothing compiled before."""
    loader._compiler.cache_clear()
    started = time.perf_counter()
    loader.load_policy_set([POLICIES], engine=engine)
    return time.perf_counter() - started


def measure(engine: str, rounds: int) -> dict[str, Any]:
    """Best load time with and without estimation, and the estimator alone."""
    load_seconds(engine)  # warm: backend, parser, libraries
    with_estimates, without = [], []
    for _ in range(rounds):
        with_estimates.append(load_seconds(engine))
        with estimator(lambda *_: 0):
            without.append(load_seconds(engine))
    trees: list[Any] = []

    def recording(tree: Any, *arguments: Any) -> int:
        trees.append((tree, arguments))
        return estimate(tree, *arguments)

    with estimator(recording):
        load_seconds(engine)
    started = time.perf_counter()
    for tree, arguments in trees:
        estimate(tree, *arguments)
    alone = time.perf_counter() - started
    best_with, best_without = min(with_estimates), min(without)
    return {
        "engine": engine,
        "expressions": len(trees),
        "load_with_estimates_ms": round(best_with * 1000, 1),
        "load_without_estimates_ms": round(best_without * 1000, 1),
        "ratio": round(best_with / best_without, 3),
        "estimator_alone_ms": round(alone * 1000, 2),
        "estimator_per_expression_us": round(alone / len(trees) * 1e6, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--cel-engine", choices=CEL_ENGINES)
    parser.add_argument("--json", action="store_true")
    arguments = parser.parse_args()
    results = [
        measure(engine, arguments.rounds)
        for engine in ([arguments.cel_engine] if arguments.cel_engine else CEL_ENGINES)
    ]
    if arguments.json:
        print(json.dumps(results, indent=2))
        return
    print(f"loading {POLICIES.name}/ from scratch, best of {arguments.rounds} rounds")
    for row in results:
        print(
            f"{row['engine']:<11} {row['expressions']} expressions: {row['load_with_estimates_ms']} ms with estimates, "
            f"{row['load_without_estimates_ms']} ms without (x{row['ratio']}); the estimator alone "
            f"{row['estimator_alone_ms']} ms ({row['estimator_per_expression_us']} us per expression)"
        )


if __name__ == "__main__":
    main()
