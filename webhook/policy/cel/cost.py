"""The per-evaluation cost budget: a counter that stops a runaway expression.

Follows the spirit of the apiserver's ``PerCallLimit`` (``k8s.io/apiserver/pkg/apis/cel/config.go``, cel-go
``CostLimit``): every evaluation step (a variable read, a field selection, an operator, a function call, one
iteration of a comprehension) costs 1, and library functions cost in proportion to the size of their inputs
(``library_call_cost``). The units are close to, not identical with, cel-go's runtime cost: an expression that
costs N in the apiserver costs roughly N here. When the budget runs out the evaluation stops with
``CostLimitExceeded`` (``operation cancelled: actual cost limit exceeded``), the apiserver's text.
"""

from __future__ import annotations

import math
from collections.abc import Sized

from webhook.errors import CostLimitExceeded

#: The apiserver's per-expression limit (``PerCallLimit``).
DEFAULT_COST_LIMIT = 1_000_000

COST_LIMIT_MESSAGE = "operation cancelled: actual cost limit exceeded"


class Budget:
    """A mutable cost counter for one evaluation; ``charge`` raises once ``limit`` is passed.

    Not thread-safe by design: one ``Budget`` per evaluation, created by the caller that evaluates.
    """

    __slots__ = ("limit", "spent")

    def __init__(self, limit: int = DEFAULT_COST_LIMIT) -> None:
        self.limit = limit
        self.spent = 0

    def charge(self, amount: int) -> None:
        """Add ``amount`` (≥ 0) to the cost spent; raises ``CostLimitExceeded`` past the limit."""
        self.spent += amount
        if self.spent > self.limit:
            raise CostLimitExceeded(COST_LIMIT_MESSAGE)


def library_call_cost(args: tuple[object, ...]) -> int:
    """The cost of a library call: 1, plus 0.1 per character of string arguments and 1 per list/map entry.

    This is the shape of the Kubernetes cost model (``pkg/cel/library/cost.go``): string functions are
    linear in the string length with factor 0.1, list functions traverse the list once.
    """
    cost = 1
    for arg in args:
        if isinstance(arg, str | bytes):
            cost += math.ceil(len(arg) * 0.1)
        elif isinstance(arg, Sized):
            cost += len(arg)
    return cost
