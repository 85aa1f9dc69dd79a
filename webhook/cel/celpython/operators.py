"""CEL operators for cel-python, replacing the ones that leak Python semantics.

cel-python's defaults reject ``1 == 1.0`` and ``1 < 1.5``, index strings (``'abc'[0]``) and lists from the
end (``l[-1]``), and return raw Python ``list``/``str`` from ``+``. These versions follow the cel-spec as
Kubernetes configures cel-go: heterogeneous equality, cross-type numeric ordering, ``in`` by CEL equality,
index errors with cel-go's texts (``index out of bounds: N``, ``no such key: k``), CEL-typed results.
Each takes operands that may be ``CELEvalError`` values and passes the first such error on.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Mapping
from typing import Any

from celpy import celtypes
from celpy.evaluation import CELEvalError

from webhook.cel import semantics
from webhook.cel.values import cel_int, normalise
from webhook.errors import CelEvaluationError

Operator = Callable[[Any, Any], Any]


def _error_operand(left: object, right: object) -> CELEvalError | None:
    if isinstance(left, CELEvalError):
        return left
    if isinstance(right, CELEvalError):
        return right
    return None


def equals(left: object, right: object) -> object:
    """``_==_``: heterogeneous equality (``semantics.cel_equals``)."""
    return _error_operand(left, right) or celtypes.BoolType(semantics.cel_equals(left, right))


def not_equals(left: object, right: object) -> object:
    """``_!=_``: the negation of ``_==_``."""
    return _error_operand(left, right) or celtypes.BoolType(not semantics.cel_equals(left, right))


def _ordering(test: Callable[[int], bool]) -> Operator:
    def compare(left: object, right: object) -> object:
        error = _error_operand(left, right)
        if error is not None:
            return error
        order = semantics.cel_compare(left, right)
        return celtypes.BoolType(order is not None and test(order))

    return compare


less = _ordering(lambda order: order < 0)
less_equal = _ordering(lambda order: order <= 0)
greater = _ordering(lambda order: order > 0)
greater_equal = _ordering(lambda order: order >= 0)


def contained_in(item: object, container: object) -> object:
    """``_in_``: list membership by CEL equality, map key presence (numeric keys across kinds)."""
    error = _error_operand(item, container)
    if error is not None:
        return error
    if isinstance(container, list):
        return celtypes.BoolType(any(semantics.cel_equals(item, element) for element in container))
    if isinstance(container, Mapping):
        return celtypes.BoolType(not semantics.is_missing(semantics.find_key(container, item)))
    raise TypeError(f"no such overload: {semantics.kind(item)} in {semantics.kind(container)}")


def index(container: object, key: object) -> object:
    """``_[_]``: list index (int, uint or integral double) or map key; strings cannot be indexed."""
    error = _error_operand(container, key)
    if error is not None:
        return error
    if isinstance(container, list):
        if not isinstance(key, int | float) or not semantics.is_number(key) or float(key) != int(key):
            raise TypeError(f"no such overload: list[{semantics.kind(key)}]")
        position = int(key)
        if not 0 <= position < len(container):
            return CELEvalError(f"index out of bounds: {position}")
        return container[position]
    if isinstance(container, Mapping):
        found = semantics.find_key(container, key)
        if semantics.is_missing(found):
            return CELEvalError(f"no such key: {key}")
        return container[found]
    raise TypeError(f"no such overload: {semantics.kind(container)}[{semantics.kind(key)}]")


def _arithmetic(function: Operator) -> Operator:
    def arithmetic(left: object, right: object) -> object:
        error = _error_operand(left, right)
        if error is not None:
            return error
        if type(left) is celtypes.IntType and type(right) is celtypes.IntType:  # the fast, common case
            try:
                return cel_int(function(int(left), int(right)))
            except CelEvaluationError:
                raise ValueError("integer overflow") from None
        return normalise(function(left, right))

    return arithmetic


#: ``_+_ _-_ _*_``: cel-python's (overflow-checked) arithmetic, with a fast path for two ints, and list
#: and string results as CEL values.
add = _arithmetic(operator.add)
subtract = _arithmetic(operator.sub)
multiply = _arithmetic(operator.mul)


#: The operator table merged over ``celpy.evaluation.base_functions``.
OPERATORS: dict[str, Operator] = {
    "_==_": equals,
    "_!=_": not_equals,
    "_<_": less,
    "_<=_": less_equal,
    "_>_": greater,
    "_>=_": greater_equal,
    "_in_": contained_in,
    "_[_]": index,
    "_+_": add,
    "_-_": subtract,
    "_*_": multiply,
}
