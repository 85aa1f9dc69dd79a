"""A cel-python tree-walking evaluator with a cost budget, CEL macros and short-circuit logic.

Subclasses ``celpy.evaluation.Evaluator`` and replaces what Kubernetes policies need done differently:

* every evaluation step is charged to a ``Budget`` (``cost.py``), also inside macros, and comprehension
  iterations are counted against cel-cpp's cap (``cost.MAX_ITERATIONS`` per evaluation), so a runaway
  comprehension stops with ``CostLimitExceeded`` as on cel-expr; the budget also checks the request deadline;
* the macros ``all exists exists_one filter map(x, f) map(x, p, f)`` are evaluated here with one variable
  scope per comprehension (cel-python's ``map`` has no 3-argument form, and its ``min``/``reduce`` macros
  are gone: ``min`` is the Kubernetes list function);
* ``||``, ``&&`` and ``?:`` short-circuit with CEL's commutative error absorption (``err || true`` is true);
* ``has(a.b)`` is an error when ``a`` itself cannot be evaluated (cel-go), not false, and so is
  ``has(variables.x)`` when the composited variable ``x`` fails to evaluate (``lazy.MapValue.Find``);
* variables resolve in a plain dict (cel-python's package-aware name resolution is not needed and slow);
* functions resolve in one table; library calls are charged by input size and Python exceptions become
  ``CELEvalError`` values (so ``||``/``&&``/``exists``/``all`` can absorb them).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import lark
from celpy import celtypes
from celpy.evaluation import CELEvalError, Evaluator

from webhook.cel.cost import Budget, library_call_cost
from webhook.cel.frontend.check import MACROS
from webhook.cel.frontend.tree import Node, call_arguments, identifier, unwrap
from webhook.cel.semantics import cel_compare, kind
from webhook.errors import CelEvaluationError, CostLimitExceeded

Function = Callable[..., Any]

_UNIT_COST_RULES = frozenset(
    {"ident", "member_dot", "member_index", "member_dot_arg", "ident_arg", "list_lit", "map_lit"}
)
_OPERATOR_RULES = frozenset(
    {"expr", "conditionalor", "conditionaland", "relation", "addition", "multiplication", "unary"}
)
_OPERATOR_NAMES = {
    "relation_lt": "_<_",
    "relation_le": "_<=_",
    "relation_gt": "_>_",
    "relation_ge": "_>=_",
    "relation_eq": "_==_",
    "relation_ne": "_!=_",
    "relation_in": "_in_",
    "addition_add": "_+_",
    "addition_sub": "_-_",
    "multiplication_mul": "_*_",
    "multiplication_div": "_/_",
    "multiplication_mod": "_%_",
    "unary_not": "!_",
    "unary_neg": "-_",
}


class Scope:
    """The names visible to an evaluation: variables (a dict) and functions (a dict); celpy's
    ``Activation`` interface as far as ``Evaluator`` uses it."""

    __slots__ = ("functions", "methods", "types", "variables")

    def __init__(
        self,
        variables: dict[str, Any],
        functions: Mapping[str, Function],
        methods: Mapping[str, Function],
        types: Mapping[str, Any],
    ) -> None:
        self.variables = variables
        self.functions = functions
        self.methods = methods
        self.types = types

    def resolve_variable(self, name: str) -> Any:
        """The variable's value, else the type named ``name`` (``int``, ``string``, ...); ``KeyError``."""
        try:
            return self.variables[name]
        except KeyError:
            return self.types[name]

    def resolve_function(self, name: str) -> Function:
        """The global function (or operator) named ``name``; ``KeyError`` if none."""
        return self.functions[name]

    def nested(self) -> Scope:
        """A child scope that shares the functions and copies the variables (for one comprehension)."""
        return Scope(dict(self.variables), self.functions, self.methods, self.types)


class BudgetEvaluator(Evaluator):
    """Evaluates one parse tree in one ``Scope``, charging ``budget`` (its ``limit`` ``None``: steps are counted
    but not limited; comprehension iterations and the deadline still are)."""

    def __init__(self, ast: Node, scope: Scope, budget: Budget, literals: Mapping[int, Any]) -> None:
        self.ast = ast
        self.literals = literals
        self.scope = scope
        self.activation = scope  # type: ignore[assignment]  # celpy's methods use only resolve_function
        self.base_activation = self.activation
        self.budget = budget
        self.level = 0

    # -- the walk -----------------------------------------------------------------------------------------

    def _visit_tree(self, tree: Node) -> Any:
        rule = tree.data
        if rule in _UNIT_COST_RULES or (rule in _OPERATOR_RULES and len(tree.children) > 1):
            self.budget.charge(1)
        return getattr(self, rule)(tree)

    def visit(self, tree: Node) -> Any:
        return self._visit_tree(tree)

    def visit_children(self, tree: Node) -> list[Any]:
        return [self._visit_tree(child) if isinstance(child, lark.Tree) else child for child in tree.children]

    def evaluate(self, context: Any = None) -> Any:
        """The value of the tree; raises the ``CELEvalError`` it evaluates to, if any."""
        value = self.visit(self.ast)
        if isinstance(value, CELEvalError):
            raise value
        return value

    # -- operators, identifiers, literals (cel-python's versions spend most time in typing casts) --------

    def _binary(self, tree: Node) -> Any:
        if len(tree.children) == 1:
            return self._visit_tree(tree.children[0])
        operator_tree, right_tree = tree.children
        left = self._visit_tree(operator_tree.children[0])
        return self._operate(_OPERATOR_NAMES[operator_tree.data], left, self._visit_tree(right_tree))

    relation = addition = multiplication = _binary

    def unary(self, tree: Node) -> Any:
        if len(tree.children) == 1:
            return self._visit_tree(tree.children[0])
        operator_tree, operand_tree = tree.children
        return self._operate(_OPERATOR_NAMES[operator_tree.data], self._visit_tree(operand_tree))

    def member_index(self, tree: Node) -> Any:
        container_tree, key_tree = tree.children
        return self._operate("_[_]", self._visit_tree(container_tree), self._visit_tree(key_tree))

    def _operate(self, name: str, *operands: Any) -> Any:
        for operand in operands:
            if isinstance(operand, CELEvalError):
                return operand
        try:
            return self.scope.functions[name](*operands)
        except TypeError:
            return CELEvalError(f"no matching overload for '{name}' applied to ({_kinds(list(operands))})")
        except ZeroDivisionError:
            return CELEvalError("modulus by zero" if name == "_%_" else "division by zero")
        except (ValueError, OverflowError):
            return CELEvalError("integer overflow" if semantics_is_integral(operands) else "numeric overflow")

    def primary(self, tree: Node) -> Any:
        child = tree.children[0]
        if child.data == "ident":
            name = str(child.children[0])
            try:
                return self.scope.resolve_variable(name)
            except KeyError:
                return CELEvalError(f"undeclared reference to '{name}'")
        if child.data == "literal":
            return self.literals[id(child)]
        return super().primary(tree)

    # -- logic ----------------------------------------------------------------------------------------------

    def expr(self, tree: Node) -> Any:
        if len(tree.children) == 1:
            return self.visit(tree.children[0])
        condition = self.visit(tree.children[0])
        if isinstance(condition, CELEvalError):
            return condition
        if not isinstance(condition, celtypes.BoolType):
            return CELEvalError("no matching overload for '_?_:_' applied to a non-bool condition")
        return self.visit(tree.children[1] if condition else tree.children[2])

    def conditionalor(self, tree: Node) -> Any:
        return self._logic(tree, absorbing=True)

    def conditionaland(self, tree: Node) -> Any:
        return self._logic(tree, absorbing=False)

    def _logic(self, tree: Node, *, absorbing: bool) -> Any:
        """``||`` (``absorbing`` = true wins) and ``&&`` (false wins), left to right, errors absorbed."""
        if len(tree.children) == 1:
            return self.visit(tree.children[0])
        left = self.visit(tree.children[0])
        if _is_bool(left, absorbing):
            return left
        right = self.visit(tree.children[1])
        if _is_bool(right, absorbing):
            return right
        for side in (left, right):
            if isinstance(side, CELEvalError):
                return side
            if not isinstance(side, celtypes.BoolType):
                operator = "_||_" if absorbing else "_&&_"
                return CELEvalError(f"no matching overload for '{operator}'")
        return right

    # -- calls and macros ---------------------------------------------------------------------------------

    def member_dot_arg(self, tree: Node) -> Any:
        member_tree, name_token = tree.children[:2]
        name = str(name_token)
        if name in MACROS:
            return self._macro(name, self.visit(member_tree), call_arguments(tree, 2))
        receiver = self.visit(member_tree)
        arguments = self.visit_children(tree.children[2]) if len(tree.children) > 2 else []
        return self._call(name, [receiver, *arguments], self.scope.methods)

    def function_eval(self, name_token: lark.Token, exprlist: Any = None) -> Any:
        return self._call(str(name_token), list(exprlist or []), self.scope.functions)

    def _call(self, name: str, arguments: list[Any], table: Mapping[str, Function]) -> Any:
        for argument in arguments:
            if isinstance(argument, CELEvalError):
                return argument
        function = table.get(name)
        if function is None:
            return CELEvalError(f"undeclared reference to '{name}'")
        self.budget.charge(library_call_cost(tuple(arguments)))
        try:
            return function(*arguments)
        except CostLimitExceeded:
            raise
        except CelEvaluationError as error:
            return CELEvalError(str(error))
        except (TypeError, AttributeError):
            return CELEvalError(f"found no matching overload for '{name}' applied to ({_kinds(arguments)})")
        except RecursionError:
            raise
        except Exception as error:  # a library bug must not escape as a raw Python exception
            return CELEvalError(f"{name}: {error}")

    def member_dot(self, tree: Node) -> Any:
        return self.select(self.visit(tree.children[0]), str(tree.children[1]))

    def select(self, operand: Any, field: str) -> Any:
        """``operand.field``: the value of a map's key, else an error value."""
        if isinstance(operand, CELEvalError):
            return operand
        if isinstance(operand, Mapping):
            if field in operand:
                return operand[field]
            return CELEvalError(f"no such key: {field}")
        return CELEvalError(f"type '{kind(operand)}' does not support field selection")

    def macro_has_eval(self, exprlist: Node) -> Any:
        selection = _single_selection(exprlist)
        if selection is None:
            return CELEvalError("invalid argument to has() macro")
        operand = self.visit(selection.children[0])
        if isinstance(operand, CELEvalError):
            return operand
        field = str(selection.children[1])
        if isinstance(operand, Mapping):
            if field not in operand:
                return celtypes.BoolType(False)
            # cel-go's presence test reads the entry (``Mapper.Find``): the composited variables' lazy map
            # evaluates the variable there, so has(variables.x) is its error if it fails
            found = operand[field]
            return found if isinstance(found, CELEvalError) else celtypes.BoolType(True)
        return CELEvalError(f"no such overload: has() on {type(operand).__name__}")

    def _macro(self, name: str, target: Any, arguments: list[Node]) -> Any:
        if isinstance(target, CELEvalError):
            return target
        if not isinstance(target, list | Mapping):
            return CELEvalError(f"found no matching overload for '{name}' applied to a non-list, non-map")
        count = MACROS[name].get(len(arguments), 1)
        variables = [found for argument in arguments[:count] if (found := identifier(argument)) is not None]
        if len(variables) < count:
            return CELEvalError(f"{name}() variable name must be a simple identifier")
        scope = self.scope.nested()
        bodies = [type(self)(body, scope, self.budget, self.literals) for body in arguments[count:]]
        # one variable: the element (a map's key); two (ext.TwoVarComprehensions): the index or key, and the value
        pairs = (
            list(target.items())
            if isinstance(target, Mapping)
            else [(celtypes.IntType(i), v) for i, v in enumerate(target)]
        )
        if count == 1:
            pairs = [(item, item) for item in target]

        def each(evaluator: BudgetEvaluator) -> Iterator[tuple[Any, Any]]:
            for key, value in pairs:
                self.budget.iterate()
                scope.variables[variables[0]] = key
                if count == 2:
                    scope.variables[variables[1]] = value
                yield value, evaluator.visit(evaluator.ast)

        if name == "all":
            return _quantify(each(bodies[0]), decisive=False)
        if name == "exists":
            return _quantify(each(bodies[0]), decisive=True)
        if name in ("exists_one", "existsOne"):
            return _exists_one(each(bodies[0]))
        if name == "sortBy":  # cel-go's @sortByAssociatedKeys is declared on lists only
            return _sort_by(each(bodies[0])) if isinstance(target, list) else CELEvalError("no such overload")
        if name in ("transformMap", "transformMapEntry"):
            return _transform_map(
                each(bodies[0]), [key for key, _ in pairs], bodies[1:], entries=name.endswith("Entry")
            )
        if name == "filter" or len(bodies) == 2:
            return _select(each(bodies[0]), transform=bodies[1] if len(bodies) == 2 else None)
        return _collect(value for _, value in each(bodies[0]))


def _is_bool(value: Any, wanted: bool) -> bool:
    return isinstance(value, celtypes.BoolType) and bool(value) is wanted


def _quantify(results: Iterator[tuple[Any, Any]], *, decisive: bool) -> Any:
    """``exists`` (a true result decides) and ``all`` (a false one decides); otherwise the first error."""
    error: Any = None
    for _, result in results:
        if _is_bool(result, decisive):
            return result
        if error is None and not isinstance(result, celtypes.BoolType):
            error = result if isinstance(result, CELEvalError) else CELEvalError("predicate result is not a bool")
    return error if error is not None else celtypes.BoolType(not decisive)


def _exists_one(results: Iterator[tuple[Any, Any]]) -> Any:
    count = 0
    for _, result in results:
        if not isinstance(result, celtypes.BoolType):
            return result if isinstance(result, CELEvalError) else CELEvalError("predicate result is not a bool")
        count += bool(result)
    return celtypes.BoolType(count == 1)


def _select(results: Iterator[tuple[Any, Any]], *, transform: BudgetEvaluator | None) -> Any:
    """``filter(x, p)`` (``transform`` None) and ``map(x, p, f)``: the kept items, transformed."""
    kept: list[Any] = []
    for item, keep in results:
        if not isinstance(keep, celtypes.BoolType):
            return keep if isinstance(keep, CELEvalError) else CELEvalError("predicate result is not a bool")
        if keep:
            value = item if transform is None else transform.visit(transform.ast)
            if isinstance(value, CELEvalError):
                return value
            kept.append(value)
    return celtypes.ListType(kept)


def _transform_map(
    results: Iterator[tuple[Any, Any]], keys: list[Any], transform: list[BudgetEvaluator], *, entries: bool
) -> Any:
    """cel-go's ``transformMap(k, v, [p,] f)`` (``{k: f}``) and ``transformMapEntry(k, v, [p,] e)`` (the entries of
    each map ``e`` merged, a repeated key an error), over the pairs (key or index, value) of the target."""
    built: dict[Any, Any] = {}
    for key, (_, body) in zip(keys, results, strict=False):
        result = body
        if transform:
            if not isinstance(body, celtypes.BoolType):
                return body if isinstance(body, CELEvalError) else CELEvalError("predicate result is not a bool")
            if not body:
                continue
            result = transform[0].visit(transform[0].ast)
        if isinstance(result, CELEvalError):
            return result
        if not entries:
            built[key] = result
            continue
        if not isinstance(result, Mapping):
            return CELEvalError(f"found no matching overload for 'cel.@mapInsert' applied to (map, {kind(result)})")
        for entry, value in result.items():
            if entry in built:
                return CELEvalError(f"insert failed: key {entry} already exists")
            built[entry] = value
    return celtypes.MapType(built)


#: The kinds cel-go's ``@sortByAssociatedKeys`` orders (``traits.Comparer``).
_COMPARABLE = frozenset({"int", "uint", "double", "bool", "duration", "timestamp", "string", "bytes"})


def _sort_by(results: Iterator[tuple[Any, Any]]) -> Any:
    """cel-go's ``sortBy(e, key)`` (``ext.Lists``): the elements ordered by their keys, which must be comparable
    and of the first key's type (``list elements must be comparable`` / ``... have the same type``)."""
    pairs: list[tuple[Any, Any]] = []
    for item, key in results:
        if isinstance(key, CELEvalError):
            return key
        pairs.append((item, key))
    if not pairs:
        return celtypes.ListType([])
    first = kind(pairs[0][1])
    if first not in _COMPARABLE:
        return CELEvalError("list elements must be comparable")
    if any(kind(key) != first for _, key in pairs):
        return CELEvalError("list elements must have the same type")

    def order(left: tuple[Any, Any], right: tuple[Any, Any]) -> int:
        return cel_compare(left[1], right[1]) or 0

    return celtypes.ListType([item for item, _ in sorted(pairs, key=functools.cmp_to_key(order))])


def _collect(values: Iterator[Any]) -> Any:
    collected: list[Any] = []
    for value in values:
        if isinstance(value, CELEvalError):
            return value
        collected.append(value)
    return celtypes.ListType(collected)


def _single_selection(exprlist: Node) -> Node | None:
    """The ``member_dot`` node of ``has(a.b)``'s argument, or None if it is not a field selection."""
    if len(exprlist.children) != 1:
        return None
    node = unwrap(exprlist.children[0])
    return node if node.data == "member_dot" else None


def semantics_is_integral(operands: tuple[Any, ...]) -> bool:
    """True if every operand is an int or uint (an overflow is then an integer overflow)."""
    return all(kind(operand) in ("int", "uint") for operand in operands)


def _kinds(arguments: list[Any]) -> str:
    return ", ".join(kind(argument) for argument in arguments)
