"""A checked cel-cpp expression and its evaluations: the cost budget and activation of the Python functions it
calls, its form with variables bound in cel-cpp tried first, and its result or error as this backend's."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cel_expr_python import cel

from webhook.cel.backend import Limits
from webhook.cel.celexpr.activations import Activations
from webhook.cel.celexpr.composition import VARIABLE_READER
from webhook.cel.celexpr.functions import ACTIVATION, BUDGET
from webhook.cel.celexpr.messages import ITERATION_BUDGET, evaluation_message, type_text
from webhook.cel.celexpr.values import from_expr
from webhook.cel.cost import COST_LIMIT_MESSAGE, Budget, check_deadline
from webhook.cel.frontend.check import FrontEnd
from webhook.cel.libraries.optional import Optional
from webhook.errors import CelEvaluationError, CostLimitExceeded


class CelExprExecutable:
    """A checked cel-cpp expression; evaluations share nothing mutable across threads. ``calls_python``: it calls
    a function implemented in Python (a library function, ``calls_library``, or the reader of ``variables``), so
    an evaluation carries a cost budget and its activation for them (``BUDGET``, ``ACTIVATION``); an expression
    that calls none runs in cel-cpp alone, with the request's deadline checked as it starts and ends.

    ``source``: the text compiled; ``optionals``: it is compiled with cel-cpp's optional types (an expression
    without them can be bound in one with them); ``optional_result``: its result is an optional, read back through
    its ``optionals.to_list`` form; ``iterates``: it uses a comprehension macro. ``bind`` gives it the same expression
    with the variables it reads bound in cel-cpp (``composition.bound_variables``), which is evaluated first; an
    evaluation of that form that fails is done again as written, for the apiserver's text of a failing variable (or
    its own budget per variable, past the cost limit); where the form as written then ends without an error, the
    first error stands (a value read back through Python lost what it held: a uint, a type)."""

    __slots__ = (
        "_activations",
        "_bound",
        "_bound_calls_python",
        "_cost_limit",
        "_expression",
        "calls_library",
        "calls_python",
        "estimated_cost",
        "extensions",
        "iterates",
        "optional_result",
        "optionals",
        "result_type",
        "source",
        "unsupported",
    )

    def __init__(
        self,
        activations: Activations,
        source: str,
        expression: Any,
        checked: FrontEnd,
        limits: Limits,
        *,
        calls_library: bool,
        reads_variables: bool,
        optionals: bool,
        iterates: bool,
        unsupported: bool,
        listed: Any = None,
    ) -> None:
        self._activations = activations
        self.source = source
        self._expression = expression
        self._cost_limit = limits.cost_limit
        self.calls_library = calls_library
        self.calls_python = calls_library or reads_variables
        self.optionals = optionals
        self.iterates = iterates
        self.extensions = checked.extensions
        #: it uses a macro cel-cpp's runtime lacks (``backend._FALLBACK_MACROS``: the fallback backend runs it)
        self.unsupported = unsupported
        self.estimated_cost = checked.estimated_cost
        self.result_type: str | None = type_text(str(expression.return_type()))
        #: the result is an optional: ``_expression`` is then its ``optionals.to_list`` form (``listed``)
        self.optional_result = listed is not None
        if listed is not None:
            self._expression = listed
        self._bound: Any = None
        self._bound_calls_python = False

    def bind(self, expression: Any, source: str, binds_library_calls: bool) -> None:
        """Evaluate ``expression``, compiled from ``source`` (see the class), first; ``binds_library_calls``: a
        variable bound in it calls a library function, so it runs with a cost budget and its activation too."""
        self._bound = expression
        self._bound_calls_python = self.calls_library or binds_library_calls or VARIABLE_READER in source

    def evaluate(self, activation: Mapping[str, object]) -> object:
        """See ``backend.Executable.evaluate``."""
        bound = self._activations.activation(activation)
        check_deadline()
        if self._bound is not None:
            try:
                return self._result(self._run(self._bound, self._bound_calls_python, bound, activation))
            except CostLimitExceeded:
                pass  # again as written, where each variable read spends a budget of its own, as in the apiserver
            except CelEvaluationError as error:
                # again as written, for the apiserver's text of a failing variable; where that form ends without
                # an error, a variable read back through Python lost its value (a uint, a type): the error stands
                self._result(self._run(self._expression, self.calls_python, bound, activation))
                raise error from None
        return self._result(self._run(self._expression, self.calls_python, bound, activation))

    def _run(self, expression: Any, calls_python: bool, bound: Any, activation: Mapping[str, object]) -> Any:
        if not calls_python:
            result = self._eval(expression, bound)
            check_deadline()
            return result
        budget = Budget(self._cost_limit)
        token = BUDGET.set(budget)
        reading = ACTIVATION.set(activation)
        try:
            return self._eval(expression, bound)
        finally:
            ACTIVATION.reset(reading)
            BUDGET.reset(token)
            budget.settle()

    def _result(self, result: Any) -> object:
        value = result.plain_value()
        if type(value) is str and result.type() == cel.Type.ERROR:  # an error's plain value is its text
            raise CelEvaluationError(evaluation_message(value))
        if self.optional_result:  # the list of zero or one element of ``optionals.to_list``
            return Optional.of(from_expr(value[0])) if value else Optional.none()
        return from_expr(value)

    @staticmethod
    def _eval(expression: Any, bound: Any) -> Any:
        try:
            return expression.eval(bound)
        except RuntimeError as error:  # duplicate map keys, the iteration cap, unimplemented types
            if ITERATION_BUDGET in str(error):
                raise CostLimitExceeded(COST_LIMIT_MESSAGE) from None
            raise CelEvaluationError(evaluation_message(str(error))) from None
