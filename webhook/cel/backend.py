"""The engine-neutral interface between ``Environment``/``Program`` and a CEL implementation.

A backend compiles source with a set of declared variable names into an ``Executable`` and evaluates it on an
activation of CEL values under a cost limit. It reports every failure as ``webhook.errors.CelCompileError``
(compile) or ``CelEvaluationError``/``CostLimitExceeded`` (evaluation) and nothing else. Two backends implement
it (``webhook.settings.CEL_ENGINES``): cel-python (``celpython/backend.py``) and cel-cpp through cel-expr-python
(``celexpr/backend.py``), both with the same library functions (``libraries/``, pure Python over CEL values).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from typing import Protocol

#: The activation entry of the composited variables, which a backend reads lazily, one variable at a time.
VARIABLES = "variables"


class Values(dict[str, object]):
    """An activation that keeps what a backend prepared from it for evaluation (``prepared``: cel-cpp's converted
    activation) across the evaluations that share it. Setting an entry other than ``VARIABLES`` drops it."""

    __slots__ = ("__weakref__", "prepared")

    def __init__(self, values: Mapping[str, object] = {}) -> None:
        super().__init__(values)
        self.prepared: object = None

    def __setitem__(self, name: str, value: object) -> None:
        if name != VARIABLES:
            self.prepared = None
        super().__setitem__(name, value)


class Kept:
    """``convert`` of objects that are never changed once made (a store replaces an object it updates), done once
    per object and kept by its identity (the object held alive), at most ``limit`` of them, then started over.
    Thread-safe: a conversion may run twice, never wrongly."""

    def __init__(self, convert: Callable[[object], object], limit: int) -> None:
        self._convert = convert
        self._limit = limit
        self._kept: dict[int, tuple[object, object]] = {}

    def __call__(self, found: object) -> object:
        kept = self._kept.get(id(found))
        if kept is None or kept[0] is not found:
            if len(self._kept) >= self._limit:
                self._kept.clear()
            kept = self._kept[id(found)] = (found, self._convert(found))
        return kept[1]


@dataclass(frozen=True)
class Limits:
    """Load-time and run-time limits of an environment.

    ``cost_limit``: cost units per evaluation (``None``: unlimited); ``max_expression_length``: code points;
    ``max_nesting``: nesting depth of calls, operators, indexing, parentheses and literals.
    """

    cost_limit: int | None
    max_expression_length: int
    max_nesting: int


class Executable(Protocol):
    """A compiled expression, safe to evaluate concurrently from several threads.

    ``extensions``: the non-portable extension functions it calls (``cluster.get``, ...), for ``policy lint``;
    ``result_type``: the type the checker gives its result (``bool``, ``string``, ``null_type``, ``dyn``,
    ``list(dyn)``...), ``None`` where no type checker ran; ``estimated_cost``: its worst-case cost in the
    apiserver's units (``webhook.cel.estimate``).
    """

    extensions: frozenset[str]
    result_type: str | None
    estimated_cost: int

    def evaluate(self, activation: Mapping[str, object]) -> object:
        """The CEL value of the expression; raises ``CelEvaluationError`` (``CostLimitExceeded``) only."""
        ...


class Backend(Protocol):
    """Compiles CEL source against declared variable names."""

    def compile(
        self,
        source: str,
        variables: Collection[str],
        limits: Limits,
        definitions: Mapping[str, Executable] | None = None,
        exclusive: Collection[str] = (),
    ) -> Executable:
        """An ``Executable``; raises ``CelCompileError`` (``<line>:<column>: ...``) only. ``definitions``: the
        compiled composited variables ``variables.<name>`` may read, by name in declaration order (a backend may
        use them to evaluate such reads faster; they are evaluated from the activation's ``variables`` all the
        same). ``exclusive``: those of them whose value no other expression of the policy needs on a request it
        admits (``webhook.policy.loading.specs.exclusive_variables``), so that evaluating one where it is read costs no
        more than reading it from ``variables``."""
        ...

    def to_cel(self, value: object) -> object:
        """A JSON-shaped Python value as this backend's CEL value; ``CelEvaluationError`` if impossible."""
        ...

    def from_json(self, value: object) -> object:
        """A value as decoded from JSON, with every integer within int64 (only dict, list, str, int, float, bool and
        None): what ``to_cel`` gives, without its checks where the backend takes such values as they are."""
        ...

    def to_python(self, value: object) -> object:
        """A CEL value of this backend as plain JSON-able Python."""
        ...

    def error_value(self, message: str) -> object:
        """A CEL error value that a lazily read map (``variables``, a ``Mapping``) may return for a key, so that
        only the expressions reading it fail."""
        ...
