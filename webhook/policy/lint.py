"""``policy lint``: load-time validation per file, and which policies run unchanged in the kube-apiserver.

A policy is portable to in-tree ValidatingAdmissionPolicy / MutatingAdmissionPolicy when none of its
expressions calls an upgrade-gate extension function (``webhook.cel.EXTENSION_FUNCTIONS``: request
time, cluster lookups, OLM version ranges) and none can be cancelled at run time. The report also names the
expressions another CEL engine evaluates (``fallbacks``: on cel-expr, those nested deeper than cel-cpp's
parser allows run on cel-python), and ``since``: the first Kubernetes version whose apiserver creates it (serves its
API version, ``loader.SERVED``, and gives new expressions every CEL library it uses, ``cel.versions``).

Cost (``webhook.cel.estimate``). The apiserver creates a policy whatever its expressions' estimated costs
and cancels an evaluation that passes ``PerCallLimit`` (1,000,000) at run time (here too); a cancelled
expression is an error, which the policy's failurePolicy decides. Lint finds the expressions a request can make
that expensive (``expensive``). With failurePolicy ``Fail`` such a request is denied: the policy still holds, and
lint reports the expression as information. With ``Ignore`` such a request is admitted unchecked, a way around
the policy: the policy fails lint. Each expression that decides (a validation, a match
condition, an audit annotation, a mutation, and the composited variables they read) is estimated with what the
requester chooses as large as a 3 MiB request allows (``object``, ``oldObject``, the request's names), the
metadata of an object as the apiserver decoded (and, for a ValidatingAdmissionPolicy, validated) it
(``admitted_object``),
each composited variable with the shape of its expression, and what the requester does not choose (``params``,
the requesting user, what the extension functions return) at its smallest. An expression that passes the limit
only with those large is not the request's doing: its report names them (``unbounded``: ``params``,
``request.userInfo``, ``cluster.list``, ...), as information. A ``messageExpression`` is not estimated: when one
fails, the apiserver words the denial as if it were unset, and the decision stands.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from webhook.cel import EXTENSION_FUNCTIONS, PER_CALL_LIMIT, blank_strings, read_names, since, version_key
from webhook.cel.estimate import (
    ADMISSION_VARIABLES,
    Shape,
    admitted_object,
    bounded,
    estimate_text,
    object_of,
)
from webhook.errors import PolicyLoadError
from webhook.policy.loading.documents import policy_files
from webhook.policy.loading.loader import SERVED, load_policy_set
from webhook.policy.model import FAIL, IGNORE, Expression, MutatingPolicy, ValidatingPolicy, expressions
from webhook.settings import DEFAULT_KUBERNETES_VERSION


@dataclass(frozen=True, slots=True)
class ExpensiveExpression:
    """An expression a request can make cost more than ``PER_CALL_LIMIT`` (its ``estimated_cost``, apiserver cost
    units, with what the requester does not choose at its smallest)."""

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
    for each expression an engine other than the set's evaluates, ``expensive``: its deciding expressions (each
    once) a request can make cost more than the per-expression limit, and ``unbounded``: what the requester does
    not choose (``params``, ``request.userInfo``, extension functions) whose size alone can take one of them
    past it (information). Portable when it calls no extension and none is expensive; ``failed`` when one is and
    its ``failure_policy`` is ``Ignore``. ``since``: the first Kubernetes version (``1.33``) whose apiserver creates
    it."""

    kind: str
    name: str
    extensions: tuple[str, ...]
    fallbacks: tuple[str, ...] = ()
    expensive: tuple[ExpensiveExpression, ...] = ()
    unbounded: tuple[str, ...] = ()
    failure_policy: str = FAIL
    since: str = ""

    @property
    def portable(self) -> bool:
        """True when the kube-apiserver can run the policy unchanged (and a request cannot make it stop on cost)."""
        return not self.extensions and not self.expensive

    @property
    def failed(self) -> bool:
        """True when a request can make one of its deciding expressions pass the per-expression limit and be
        admitted for it (failurePolicy ``Ignore``)."""
        return bool(self.expensive) and self.failure_policy == IGNORE


@dataclass(frozen=True, slots=True)
class FileReport:
    """One file: the policies it defines, or the load errors (one per line, with field and column)."""

    file: Path
    policies: tuple[PolicyReport, ...] = ()
    errors: tuple[str, ...] = ()

    @property
    def failed(self) -> bool:
        """True when the file does not load, or one of its policies failed (``PolicyReport.failed``): exit 1."""
        return bool(self.errors) or any(policy.failed for policy in self.policies)


def lint(paths: Iterable[str | Path], version: str = DEFAULT_KUBERNETES_VERSION) -> list[FileReport]:
    """Lint every policy file under ``paths`` on its own (so a broken file hides nothing else), loaded for Kubernetes
    ``version`` (``webhook.settings.KUBERNETES_VERSIONS``).

    A binding whose ``policyName`` names no policy of its kind in any file linted is an error of its file
    (the kube-apiserver accepts it, and it never takes effect). Raises ``PolicyLoadError`` only for a path
    that does not exist.
    """
    reports = []
    bindings: list[tuple[int, str, str, str]] = []  # report index, policy kind, binding name, policyName
    for file in policy_files(paths):
        try:
            loaded = load_policy_set([file], version=version)
        except PolicyLoadError as error:
            reports.append(FileReport(file, errors=error.problems))
            continue
        policies: list[ValidatingPolicy | MutatingPolicy] = [*loaded.validating_policies, *loaded.mutating_policies]
        bindings += [(len(reports), VALIDATING, b.name, b.policy_name) for b in loaded.validating_bindings]
        bindings += [(len(reports), MUTATING, b.name, b.policy_name) for b in loaded.mutating_bindings]
        reports.append(FileReport(file, tuple(_report(policy) for policy in policies)))
    defined = {(p.kind, p.name) for report in reports for p in report.policies}
    for index, kind, binding, policy_name in bindings:
        if (kind, policy_name) not in defined:
            report = reports[index]
            problem = f"{report.file}: {kind}Binding {binding}: spec.policyName {policy_name!r} names no {kind} here"
            reports[index] = dataclasses.replace(report, errors=(*report.errors, problem))
    return reports


VALIDATING, MUTATING = "ValidatingAdmissionPolicy", "MutatingAdmissionPolicy"


def _report(policy: ValidatingPolicy | MutatingPolicy) -> PolicyReport:
    costs = _Costs(policy)
    return PolicyReport(
        _kind(policy),
        policy.name,
        tuple(sorted(set(_extensions(policy)))),
        tuple(_fallbacks(policy)),
        tuple(costs.expensive),
        tuple(sorted(costs.unbounded)),
        policy.failure_policy,
        _since(policy),
    )


def _since(policy: ValidatingPolicy | MutatingPolicy) -> str:
    """The first Kubernetes version that serves the policy's API version and gives its expressions their libraries."""
    served = SERVED[_kind(policy), policy.api_version][0]
    return max((served, *(since(expression.text) for expression in expressions(policy))), key=version_key)


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


#: What the requester does not choose, at its smallest: every string, list and map of it holds one item.
_SMALLEST = bounded(1)
#: Reads of what the requester does not choose, beside the extension functions: the name a report gives each.
_NOT_CHOSEN = {"params": re.compile(r"(?<![\w.])params\b"), "request.userInfo": re.compile(r"\buserInfo\b")}


class _Costs:
    """The deciding expressions of ``policy`` a request can make pass ``PER_CALL_LIMIT`` (``expensive``), and
    what else takes one past it alone (``unbounded``); see the module's docstring.

    Each expression is estimated in several regimes, each with its composited variables' shapes: ``""`` (all
    that the requester does not choose at its smallest), ``"*"`` (all of it as large as it may be) and, for each
    such source the policy reads, that source alone as large as it may be."""

    def __init__(self, policy: ValidatingPolicy | MutatingPolicy) -> None:
        self.expensive: list[ExpensiveExpression] = []
        self.unbounded: set[str] = set()
        seen = admitted_object(validated=isinstance(policy, ValidatingPolicy))
        texts = [expression.text for expression in expressions(policy)]
        read = {label for label, pattern in _NOT_CHOSEN.items() if any(pattern.search(blank_strings(t)) for t in texts)}
        self.regimes = {
            opened: _Regime.of(seen, opened) for opened in ("", "*", *sorted(read), *sorted(set(_extensions(policy))))
        }
        self.sources: dict[str, set[str]] = {}
        deciding = _deciding(policy)
        for variable in policy.variables:
            self.sources[variable.name] = self.add(variable.expression, variable.name, variable.name in deciding)
        for expression in _deciding_expressions(policy):
            self.add(expression, None, True)

    def add(self, expression: Expression, name: str | None, deciding: bool) -> set[str]:
        """Estimate ``expression`` (the variable ``name``'s, if given) in every regime; record it if it decides and
        passes the limit. Returns what it reads, directly or through variables, that the requester does not
        choose."""
        costs = {opened: regime.estimate(expression.text, name) for opened, regime in self.regimes.items()}
        code = blank_strings(expression.text)
        sources = {label for label, pattern in _NOT_CHOSEN.items() if pattern.search(code)}
        sources |= set(getattr(expression.program, "extensions", ())) & EXTENSION_FUNCTIONS
        for variable in read_names(expression.text):
            sources |= self.sources.get(variable, set())
        if not deciding:
            return sources
        if costs[""] > PER_CALL_LIMIT:
            if all(found.expression != expression.text for found in self.expensive):
                self.expensive.append(ExpensiveExpression(expression.text, costs[""]))
        elif costs["*"] > PER_CALL_LIMIT:
            alone = {source for source in sources if costs.get(source, 0) > PER_CALL_LIMIT}
            self.unbounded |= alone or sources
        return sources


@dataclass(slots=True)
class _Regime:
    """The admission variables' shapes and the extension functions' results of one regime (``_Costs``), and the
    composited variables' shapes estimated so far."""

    variables: dict[str, Shape]
    results: dict[str, Shape]
    shapes: dict[str, Shape]

    @classmethod
    def of(cls, seen: Shape, opened: str) -> _Regime:
        """``opened``: the source as large as it may be (``*``: every one), the others at their smallest."""
        request = ADMISSION_VARIABLES["request"]
        variables = {**ADMISSION_VARIABLES, "object": seen, "oldObject": seen}
        if opened not in ("*", "params"):
            variables["params"] = _SMALLEST
        if opened not in ("*", "request.userInfo"):
            variables["request"] = object_of({**request.fields, "userInfo": _SMALLEST})
        results = {} if opened == "*" else dict.fromkeys(EXTENSION_FUNCTIONS - {opened}, _SMALLEST)
        return cls(variables, results, {})

    def estimate(self, text: str, name: str | None) -> int:
        """The cost of ``text``; the shape of its value is kept as the variable ``name``'s, if given."""
        cost, shape = estimate_text(text, {**self.variables, "variables": object_of(self.shapes)}, self.results)
        if name is not None:
            self.shapes[name] = shape
        return cost


def _deciding_expressions(policy: ValidatingPolicy | MutatingPolicy) -> list[Expression]:
    """The expressions whose error the failurePolicy decides: match conditions, validations, audit annotations
    and mutations (not messages: a failing ``messageExpression`` leaves the denial worded as without it)."""
    found = [condition.expression for condition in policy.match_conditions]
    if isinstance(policy, MutatingPolicy):
        return found + [mutation.expression for mutation in policy.mutations]
    found += [validation.expression for validation in policy.validations]
    return found + [annotation.value_expression for annotation in policy.audit_annotations]


def _deciding(policy: ValidatingPolicy | MutatingPolicy) -> set[str]:
    """The composited variables a deciding expression reads, directly or through another such variable."""
    reads = {variable.name: set(read_names(variable.expression.text)) for variable in policy.variables}
    found = {name for expression in _deciding_expressions(policy) for name in read_names(expression.text)}
    pending = list(found)
    while pending:
        for name in reads.get(pending.pop(), set()) - found:
            found.add(name)
            pending.append(name)
    return found
