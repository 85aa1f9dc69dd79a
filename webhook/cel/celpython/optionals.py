"""The optional syntax of cel-go's ``OptionalTypes`` on the cel-python evaluator.

``OptionalEvaluator`` adds to ``BudgetEvaluator`` (as cel-go evaluates them; Kubernetes enables optionals
since 1.28):

* ``a.?f`` (``member_dot_opt``): ``optional.of(a.f)`` if the map ``a`` has the key, else ``optional.none()``
  (also when ``a`` is null);
  ``m[?k]`` (``member_index_opt``): the same for a map key or a list index (out of range: none);
* selecting or indexing an optional stays optional: ``a.?f.g`` and ``opt[k]`` are empty when the optional is
  empty or the field, key or index is absent;
* ``[?x]`` and ``{?k: x}`` (``opt_elem``): the element or entry is left out when ``x`` is empty; ``x`` must
  be an optional;
* the macros ``opt.optMap(v, e)`` (``optional.of(e)`` with ``v`` bound to the value) and
  ``opt.optFlatMap(v, e)`` (``e`` must be an optional), empty when ``opt`` is.

A duplicate key in a map literal keeps the last value, as the apiserver's cel-go does.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from celpy import celtypes
from celpy.evaluation import CELEvalError

from webhook.cel.celpython.evaluator import BudgetEvaluator
from webhook.cel.frontend.check import OPTIONAL_MACROS
from webhook.cel.frontend.tree import Node, call_arguments, identifier
from webhook.cel.libraries.optional import Optional
from webhook.cel.semantics import find_key, is_missing, kind

#: The macros on optionals, with their argument count.


class _Element:
    """An ``opt_elem`` (``?x``) inside a list or map literal: the value, to be unwrapped by the literal."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value


class OptionalEvaluator(BudgetEvaluator):
    """``BudgetEvaluator`` with the optional syntax (see the module docstring)."""

    def member_dot_opt(self, tree: Node) -> Any:
        operand = self.visit(tree.children[0])
        if isinstance(operand, Optional):
            if not operand.present:
                return operand
            operand = operand.value
        return self._optional_select(operand, str(tree.children[1]))

    def select(self, operand: Any, field: str) -> Any:
        if isinstance(operand, Optional):
            return self._optional_select(operand.value, field) if operand.present else operand
        return super().select(operand, field)

    def _optional_select(self, operand: Any, field: str) -> Any:
        if isinstance(operand, CELEvalError):
            return operand
        if operand is None:
            return Optional.none()
        if not isinstance(operand, Mapping):
            return CELEvalError(f"type '{kind(operand)}' does not support field selection")
        return Optional.of(operand[field]) if field in operand else Optional.none()

    def member_index_opt(self, tree: Node) -> Any:
        container = self.visit(tree.children[0])
        key = self.visit(tree.children[1])
        if isinstance(container, Optional):
            if not container.present:
                return container
            container = container.value
        return self._optional_index(container, key)

    def _operate(self, name: str, *operands: Any) -> Any:
        if name == "_[_]" and isinstance(operands[0], Optional):
            container = operands[0]
            return self._optional_index(container.value, operands[1]) if container.present else container
        return super()._operate(name, *operands)

    def _optional_index(self, container: Any, key: Any) -> Any:
        for operand in (container, key):
            if isinstance(operand, CELEvalError):
                return operand
        if isinstance(container, list) and kind(key) in ("int", "uint"):
            return Optional.of(container[key]) if 0 <= key < len(container) else Optional.none()
        if isinstance(container, list) and kind(key) == "double" and float(key).is_integer():
            return self._optional_index(container, int(key))
        if isinstance(container, Mapping):
            found = find_key(container, key)
            return Optional.none() if is_missing(found) else Optional.of(container[found])
        return CELEvalError(f"no matching overload for '_[?_]' applied to ({kind(container)}, {kind(key)})")

    def opt_elem(self, tree: Node) -> Any:
        value = self.visit(tree.children[0])
        return value if isinstance(value, CELEvalError) else _Element(value)

    def exprlist(self, tree: Node) -> Any:
        items: list[Any] = []
        for value in self.visit_children(tree):
            if isinstance(value, CELEvalError):
                return value
            if not isinstance(value, _Element):
                items.append(value)
            elif not isinstance(value.value, Optional):
                return CELEvalError(f"found no matching overload for '?_' applied to ({kind(value.value)})")
            elif value.value.present:
                items.append(value.value.value)
        return celtypes.ListType(items)

    def mapinits(self, tree: Node) -> Any:
        values = self.visit_children(tree)
        result = celtypes.MapType()
        for written_key, written_value in zip(values[0::2], values[1::2], strict=True):
            for part in (written_key, written_value):
                if isinstance(part, CELEvalError):
                    return part
            key, value = written_key, written_value
            if isinstance(written_key, _Element):
                if not isinstance(written_value, Optional):
                    return CELEvalError(f"found no matching overload for '?_' applied to ({kind(written_value)})")
                if not written_value.present:
                    continue
                key, value = written_key.value, written_value.value
            try:
                result[key] = value
            except TypeError:
                return CELEvalError(f"unsupported map key type: {kind(key)}")
        return result

    def member_dot_arg(self, tree: Node) -> Any:
        name = str(tree.children[1])
        if name not in OPTIONAL_MACROS:
            return super().member_dot_arg(tree)
        target = self.visit(tree.children[0])
        if isinstance(target, CELEvalError):
            return target
        if not isinstance(target, Optional):
            return CELEvalError(f"found no matching overload for '{name}' applied to ({kind(target)})")
        if not target.present:
            return target
        arguments = call_arguments(tree, 2)
        variable = identifier(arguments[0])
        if variable is None:
            return CELEvalError(f"{name}() variable name must be a simple identifier")
        scope = self.scope.nested()
        scope.variables[variable] = target.value
        body = type(self)(arguments[1], scope, self.budget, self.literals)
        result = body.visit(body.ast)
        if isinstance(result, CELEvalError) or name == "optFlatMap":
            if name == "optFlatMap" and not isinstance(result, (Optional, CELEvalError)):
                return CELEvalError(f"found no matching overload for 'optFlatMap' applied to ({kind(result)})")
            return result
        return Optional.of(result)
