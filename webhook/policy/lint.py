"""``policy lint``: load-time validation per file, and which policies run unchanged in the kube-apiserver.

A policy is portable to in-tree ValidatingAdmissionPolicy / MutatingAdmissionPolicy when none of its
expressions calls an upgrade-gate extension function (``webhook.policy.cel.EXTENSION_FUNCTIONS``: request
time, cluster lookups, OLM version ranges) and none is estimated to cost more than the apiserver's
per-expression limit (``expensive``: such an expression may be cancelled at run time, in the apiserver as here;
``webhook.policy.cel.estimate``); each compiled program says which functions it calls and what it may cost.
The apiserver creates such policies all the same, so loading them is no error. The report also names the
expressions another CEL engine evaluates (``fallbacks``: on cel-expr, those nested deeper than cel-cpp's
parser allows run on cel-python).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from webhook.errors import PolicyLoadError
from webhook.policy.cel import PER_CALL_LIMIT
from webhook.policy.documents import policy_files
from webhook.policy.loader import load_policy_set
from webhook.policy.model import MutatingPolicy, ValidatingPolicy, expressions


@dataclass(frozen=True, slots=True)
class ExpensiveExpression:
    """An expression whose worst-case cost estimate (apiserver cost units) exceeds ``PER_CALL_LIMIT``."""

    expression: str
    estimated_cost: int

    @property
    def message(self) -> str:
        """``may be cancelled at run time: estimated cost <N> exceeds the per-expression limit 1000000``."""
        return (
            f"may be cancelled at run time: estimated cost {self.estimated_cost} exceeds the per-expression limit "
            f"{PER_CALL_LIMIT}"
        )


@dataclass(frozen=True, slots=True)
class PolicyReport:
    """One policy: its kind, name, the extension functions it calls, ``fallbacks``: ``<engine>: <expression>``
    for each expression an engine other than the set's evaluates, and ``expensive``: its expressions (each once)
    estimated above the per-expression limit. Portable when it calls no extension and none is expensive."""

    kind: str
    name: str
    extensions: tuple[str, ...]
    fallbacks: tuple[str, ...] = ()
    expensive: tuple[ExpensiveExpression, ...] = ()

    @property
    def portable(self) -> bool:
        """True when the kube-apiserver can run the policy unchanged (and never stops it on cost)."""
        return not self.extensions and not self.expensive


@dataclass(frozen=True, slots=True)
class FileReport:
    """One file: the policies it defines, or the load errors (one per line, with field and column)."""

    file: Path
    policies: tuple[PolicyReport, ...] = ()
    errors: tuple[str, ...] = ()


def lint(paths: Iterable[str | Path]) -> list[FileReport]:
    """Lint every policy file under ``paths`` on its own (so a broken file hides nothing else).

    A binding whose ``policyName`` names no policy of its kind in any file linted is an error of its file
    (the kube-apiserver accepts it, and it never takes effect). Raises ``PolicyLoadError`` only for a path
    that does not exist.
    """
    reports = []
    bindings: list[tuple[int, str, str, str]] = []  # report index, policy kind, binding name, policyName
    for file in policy_files(paths):
        try:
            loaded = load_policy_set([file])
        except PolicyLoadError as error:
            reports.append(FileReport(file, errors=error.problems))
            continue
        policies: list[ValidatingPolicy | MutatingPolicy] = [*loaded.validating_policies, *loaded.mutating_policies]
        bindings += [(len(reports), VALIDATING, b.name, b.policy_name) for b in loaded.validating_bindings]
        bindings += [(len(reports), MUTATING, b.name, b.policy_name) for b in loaded.mutating_bindings]
        reports.append(
            FileReport(
                file,
                tuple(
                    PolicyReport(
                        _kind(policy),
                        policy.name,
                        tuple(sorted(set(_extensions(policy)))),
                        tuple(_fallbacks(policy)),
                        tuple(_expensive(policy)),
                    )
                    for policy in policies
                ),
            )
        )
    defined = {(p.kind, p.name) for report in reports for p in report.policies}
    for index, kind, binding, policy_name in bindings:
        if (kind, policy_name) not in defined:
            report = reports[index]
            problem = f"{report.file}: {kind}Binding {binding}: spec.policyName {policy_name!r} names no {kind} here"
            reports[index] = dataclasses.replace(report, errors=(*report.errors, problem))
    return reports


VALIDATING, MUTATING = "ValidatingAdmissionPolicy", "MutatingAdmissionPolicy"


def _kind(policy: ValidatingPolicy | MutatingPolicy) -> str:
    return MUTATING if isinstance(policy, MutatingPolicy) else VALIDATING


def _extensions(policy: ValidatingPolicy | MutatingPolicy) -> Iterator[str]:
    """The extension functions called by the policy's expressions."""
    for expression in expressions(policy):
        yield from getattr(expression.program, "extensions", ())


def _fallbacks(policy: ValidatingPolicy | MutatingPolicy) -> Iterator[str]:
    """``<engine>: <expression>`` for each of the policy's expressions that another engine evaluates."""
    for expression in expressions(policy):
        engine = getattr(expression.program, "fallback", None)
        if engine:
            yield f"{engine}: {expression.text}"


def _expensive(policy: ValidatingPolicy | MutatingPolicy) -> Iterator[ExpensiveExpression]:
    """The policy's distinct expressions whose estimated cost exceeds the per-expression limit."""
    costs = {expression.text: getattr(expression.program, "estimated_cost", 0) for expression in expressions(policy)}
    for text, cost in costs.items():
        if cost > PER_CALL_LIMIT:
            yield ExpensiveExpression(text, cost)
