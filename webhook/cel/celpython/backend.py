"""The cel-python implementation of ``backend.Backend``: parse, check, evaluate with a budget.

Every failure leaves as ``CelCompileError``, ``CelEvaluationError``/``CostLimitExceeded`` or the request's
``DeadlineExceeded`` (``cost.Budget.settle``, whatever the evaluator caught on the way): cel-python's
``CELEvalError`` values, ``RecursionError`` and any other Python exception are wrapped (the cel-python notes
list raw ``ValueError``, ``RecursionError`` and internal syntax errors among what it can raise).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Collection, Iterable, Mapping
from typing import Any

from celpy.evaluation import Activation, CELEvalError, Evaluator, base_functions

from webhook.cel import values
from webhook.cel.backend import Executable, Limits
from webhook.cel.celpython.evaluator import Scope
from webhook.cel.celpython.functions import dispatch_tables
from webhook.cel.celpython.operators import OPERATORS
from webhook.cel.celpython.optionals import OptionalEvaluator
from webhook.cel.cost import Budget, check_deadline
from webhook.cel.frontend.check import FrontEnd, Signatures, front_end
from webhook.cel.frontend.standard import STANDARD, TYPE_VALUES
from webhook.cel.frontend.tree import Node
from webhook.cel.frontend.variables import check_variable_selections
from webhook.cel.libraries import net, optional, quantity, semver, urls
from webhook.cel.libraries.registry import Namespace, Overload
from webhook.errors import CelError, CelEvaluationError

_ARITHMETIC = ("!_", "-_", "_/_", "_%_")
#: Python's recursion limit while this backend is in use (process-wide; cel-python's own ``Environment`` sets
#: 2500): the evaluator recurses 3-4 frames per level of the parse tree, up to ``check.MAX_TREE_DEPTH``.
RECURSION_LIMIT = 6000
#: A type checker: the result type of ``(source, declared variables, limits)`` (``None``: unknown); raises
#: ``CelCompileError``.
TypeCheck = Callable[[str, Collection[str], Limits], "str | None"]
# cel-python's texts for errors cel-go words differently.
_MESSAGES = {
    "return error for overflow": "integer overflow",
    "modulus or divide by zero": "division by zero",
}


def _library_types() -> dict[str, Any]:
    """Type values by name: the standard ones and the library types (``optional_type``; ``net.IP`` as the
    selection of ``IP`` on the mapping ``net``, which only a type name can reach)."""
    found: dict[str, Any] = {**TYPE_VALUES, optional.Optional.cel_type_name: optional.Optional}
    for cls in (net.IP, net.CIDR, quantity.Quantity, semver.Semver, urls.URL):
        package, _, name = cls.cel_type_name.partition(".")
        found.setdefault(package, {})[name] = cls
    return found


_TYPES = _library_types()


class CelPythonExecutable:
    """A checked parse tree with the function tables; evaluations share nothing mutable."""

    __slots__ = ("_backend", "_cost_limit", "_literals", "_tree", "estimated_cost", "extensions", "result_type")

    def __init__(
        self,
        backend: CelPythonBackend,
        checked: FrontEnd,
        cost_limit: int | None,
        result_type: str | None = None,
    ) -> None:
        self._backend = backend
        self._tree = tree = checked.tree
        for node in tree.iter_subtrees():  # rule names as plain str: lark's Token compares in Python, str in C
            node.data = str(node.data)
        self._literals = literal_values(tree)
        self._cost_limit = cost_limit
        self.extensions = checked.extensions
        self.estimated_cost = checked.estimated_cost
        self.result_type = result_type

    def evaluate(self, activation: Mapping[str, object]) -> object:
        """See ``backend.Executable.evaluate``."""
        backend = self._backend
        scope = Scope({**backend.namespaces, **activation}, backend.functions, backend.methods, _TYPES)
        budget = Budget(self._cost_limit)
        check_deadline()
        try:
            result = OptionalEvaluator(self._tree, scope, budget, self._literals).evaluate()
        except CELEvalError as error:
            raise CelEvaluationError(_message(error)) from None
        except CelError:
            raise
        except RecursionError:
            raise CelEvaluationError("expression nesting is too deep to evaluate") from None
        except Exception as error:  # cel-python internals: never let a raw Python exception escape
            raise CelEvaluationError(f"internal error: {type(error).__name__}: {error}") from None
        finally:
            budget.settle()
        found = _nested_error(result)
        if found is not None:
            raise CelEvaluationError(found)
        return values.normalise(result)


def literal_values(tree: Node) -> dict[int, Any]:
    """The value of every literal node of ``tree`` by node id, computed once (an invalid literal, such as an
    int beyond int64, becomes its ``CELEvalError``, raised if evaluation reaches it)."""
    parsing = Evaluator(tree, Activation())
    return {id(node): parsing.literal(node) for node in tree.iter_subtrees() if node.data == "literal"}


def _nested_error(value: object) -> str | None:
    """The message of an error value left inside a list or map result, if any: cel-python builds a literal
    around an erroring element where cel-go fails the whole expression."""
    if isinstance(value, CELEvalError):
        return _message(value)
    items = value.values() if isinstance(value, Mapping) else value if isinstance(value, list) else ()
    for item in items:
        found = _nested_error(item)
        if found is not None:
            return found
    return None


def _message(error: CELEvalError) -> str:
    text = str(error.args[0]) if error.args else "evaluation error"
    return _MESSAGES.get(text, text)


class CelPythonBackend:
    """Compiles with cel-python's parser, our checker and evaluator, and the declared ``overloads``; the optional
    library (``optional.SYNTAX_OVERLOADS``) is always declared."""

    def __init__(
        self, overloads: Iterable[Overload], namespaces: Iterable[Namespace], type_check: TypeCheck | None = None
    ) -> None:
        self._type_check = type_check
        sys.setrecursionlimit(max(sys.getrecursionlimit(), RECURSION_LIMIT))
        declared = (*overloads, *STANDARD, *optional.SYNTAX_OVERLOADS)
        namespaces = (*namespaces, optional.NAMESPACE)
        global_table, member_table = dispatch_tables(declared)
        self.functions: dict[str, Any] = {
            **{name: base_functions[name] for name in _ARITHMETIC},
            **OPERATORS,
            **global_table,
        }
        self.methods: dict[str, Any] = dict(member_table)
        self.namespaces: dict[str, Namespace] = {namespace.name: namespace for namespace in namespaces}
        self.signatures = Signatures.of(declared)

    def compile(
        self,
        source: str,
        variables: Collection[str],
        limits: Limits,
        definitions: Mapping[str, Executable] | None = None,
        exclusive: Collection[str] = (),
    ) -> CelPythonExecutable:
        """See ``backend.Backend.compile``."""
        checked = front_end(source, {*variables, *self.namespaces}, self.signatures, limits)
        check_variable_selections(checked.tree, definitions)
        result_type = self._type_check(source, variables, limits) if self._type_check is not None else None
        return CelPythonExecutable(self, checked, limits.cost_limit, result_type)

    def to_cel(self, value: object) -> object:
        """See ``values.to_cel``."""
        return values.to_cel(value)

    def from_json(self, value: object) -> object:
        """See ``backend.Backend.from_json``: celpy's values are its own types, so this converts as ``to_cel``."""
        return values.to_cel(value)

    def to_python(self, value: object) -> object:
        """See ``values.to_python``."""
        return values.to_python(value)

    def error_value(self, message: str) -> object:
        """A ``CELEvalError``: cel-python's evaluator treats it as an error value wherever it appears."""
        return CELEvalError(message)
