"""The estimator's walk over a checked parse tree: ``estimate`` charges each node as cel-go's ``checker/cost.go``
does (the dearer branch of ``?:``, comprehensions by cel-go's macro expansions, ``_Macro``) and each call what
``functions.function_cost`` says, with the comprehension variables' shapes in scope."""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from typing import Any

import lark
from celpy.evaluation import celbytes, celstr

from webhook.cel.cost import DEFAULT_COST_LIMIT
from webhook.cel.estimate.functions import (
    Estimate,
    add_cost,
    add_shape,
    equality_size,
    function_cost,
    ordering_cost,
    traverse,
)
from webhook.cel.estimate.shapes import ADMISSION_VARIABLES, BOOL, DYN, INT, Shape, string, union, union_all
from webhook.cel.frontend.tree import Node, call_arguments, identifier, unwrap

#: The apiserver's per-evaluation limit (``PerCallLimit``): an expression estimated above it may be cancelled.
PER_CALL_LIMIT = DEFAULT_COST_LIMIT
#: cel-go's cost arithmetic saturates at the largest uint64.
SATURATED = 2**64 - 1

_LIST_CREATE, _MAP_CREATE, _OBJECT_CREATE = 10, 30, 40


def estimate(tree: Node, variables: Mapping[str, Shape] = ADMISSION_VARIABLES, namespaces: Collection[str] = ()) -> int:
    """The worst-case cost of evaluating ``tree`` (a collapsed parse tree that passed ``check``), in cel-go's
    cost units, at most ``SATURATED``. ``variables``: the shapes of the declared variables (others are
    ``dyn``); ``namespaces``: the names that qualify functions (``sets``, ``strings``, ``cluster``, ...)."""
    return estimate_shape(tree, variables, namespaces)[0]


def estimate_shape(
    tree: Node,
    variables: Mapping[str, Shape] = ADMISSION_VARIABLES,
    namespaces: Collection[str] = (),
    results: Mapping[str, Shape] | None = None,
) -> tuple[int, Shape]:
    """``estimate``, and the shape of the value ``tree`` evaluates to (what a composited variable of it holds).
    ``results``: the shapes of what the functions named return, in place of what ``function_cost`` says (their
    cost stays its)."""
    cost, shape = _Estimator(frozenset(namespaces), results or {}).visit(tree, dict(variables))
    return min(cost, SATURATED), shape


Scope = dict[str, Shape]


#: The qualifiers of library type names (``net.IP``, ``kubernetes.Quantity``).
_TYPE_QUALIFIERS = frozenset({"net", "kubernetes"})


class _Estimator:
    """One estimate: a recursive walk returning (cost, shape) per node, with the comprehension variables in
    scope. The tree's depth is bounded by the checker (``check.MAX_TREE_DEPTH``)."""

    def __init__(self, namespaces: frozenset[str], results: Mapping[str, Shape]) -> None:
        self.namespaces = namespaces
        self.qualifiers = namespaces | _TYPE_QUALIFIERS
        self.results = results

    def visit(self, node: Node, scope: Scope) -> Estimate:
        rule = node.data
        if rule in ("primary", "paren_expr", "expr") and len(node.children) == 1:
            return self.visit(node.children[0], scope)
        handler = _RULES.get(rule)
        if handler is None:  # pragma: no cover - every rule of the grammar is handled
            return sum(self.visit(child, scope)[0] for child in _trees(node)), DYN
        return handler(self, node, scope)

    def literal(self, node: Node, scope: Scope) -> Estimate:
        token = node.children[0]
        kind = getattr(token, "type", "")
        if kind in ("STRING_LIT", "MLSTRING_LIT"):
            return 0, string(len(_decoded(token, celstr)))
        if kind == "BYTES_LIT":
            return 0, Shape("bytes", len(_decoded(token, celbytes)))
        return 0, BOOL if kind == "BOOL_LIT" else INT

    def ident(self, node: Node, scope: Scope) -> Estimate:
        return 1, scope.get(str(node.children[0]), DYN)

    def dot_ident(self, node: Node, scope: Scope) -> Estimate:
        return 1, DYN

    def select(self, node: Node, scope: Scope) -> Estimate:
        operand, name = node.children[0], str(node.children[1])
        qualifier = identifier(operand)
        if qualifier is not None and qualifier not in scope and qualifier in self.qualifiers:
            return 1, DYN  # a qualified name (a type such as net.IP)
        cost, shape = self.visit(operand, scope)
        # cel-go charges a typed selection; a field an object's shape does not declare is read as dyn
        typed = shape.kind == "map" or (shape.kind == "object" and name in shape.fields)
        if node.data == "member_dot_opt":
            return cost + 1, shape.select(name)  # the optional selection function
        return cost + (1 if typed else 0), shape.select(name)

    def index(self, node: Node, scope: Scope) -> Estimate:
        (container, container_shape), (key, _) = (self.visit(child, scope) for child in _trees(node))
        return container + key + 1, container_shape.members

    def create_object(self, node: Node, scope: Scope) -> Estimate:
        values = _trees(node.children[1]) if len(node.children) > 1 else []
        return _OBJECT_CREATE + sum(self.visit(value, scope)[0] for value in values), DYN

    def create_list(self, node: Node, scope: Scope) -> Estimate:
        elements = [self.visit(child, scope) for child in _elements(node)]
        element = union_all(shape for _, shape in elements)
        return _LIST_CREATE + sum(cost for cost, _ in elements), Shape("list", len(elements), element, minimum=2)

    def create_map(self, node: Node, scope: Scope) -> Estimate:
        entries = [self.visit(child, scope) for child in _elements(node)]
        value = union_all(shape for _, shape in entries[1::2])
        return _MAP_CREATE + sum(cost for cost, _ in entries), Shape("map", len(entries) // 2, value, minimum=2)

    def optional_element(self, node: Node, scope: Scope) -> Estimate:
        return self.visit(node.children[0], scope)

    def logical(self, node: Node, scope: Scope) -> Estimate:
        return sum(self.visit(child, scope)[0] for child in _trees(node)), BOOL

    def conditional(self, node: Node, scope: Scope) -> Estimate:
        (condition, _), (then, then_shape), (otherwise, otherwise_shape) = (
            self.visit(child, scope) for child in _trees(node)
        )
        return condition + max(then, otherwise), union(then_shape, otherwise_shape)

    def unary(self, node: Node, scope: Scope) -> Estimate:
        operator, operand = node.children
        if operator.data == "unary_neg" and unwrap(operand).data == "literal":
            return 0, INT  # cel-go's parser folds a negative number literal
        cost, shape = self.visit(operand, scope)
        return cost + 1, shape if operator.data == "unary_neg" else BOOL

    def binary(self, node: Node, scope: Scope) -> Estimate:
        operator, right_node = node.children
        left, left_shape = self.visit(operator.children[0], scope)
        right, right_shape = self.visit(right_node, scope)
        operands = left + right
        name = operator.data
        if name in ("relation_eq", "relation_ne"):
            smallest = min(equality_size(left_shape), equality_size(right_shape))
            return operands + traverse(smallest), BOOL
        if name == "relation_in":
            return operands + (right_shape.size if right_shape.kind in ("list", "dyn") else 1), BOOL
        if name.startswith("relation_"):
            return operands + ordering_cost(left_shape, right_shape), BOOL
        if name == "addition_add":
            return operands + add_cost(left_shape, right_shape), add_shape(left_shape, right_shape)
        return operands + 1, left_shape if left_shape.kind == "scalar" else DYN

    def global_call(self, node: Node, scope: Scope) -> Estimate:
        name = str(node.children[0])
        arguments = call_arguments(node, 1)
        if name == "has":
            return self.visit(unwrap(arguments[0]).children[0], scope)[0], BOOL
        if name == "dyn":
            cost, shape = self.visit(arguments[0], scope)
            return cost + 1, shape
        return self.call(name, None, arguments, scope)

    def member_call(self, node: Node, scope: Scope) -> Estimate:
        receiver, name = node.children[0], str(node.children[1])
        arguments = call_arguments(node, 2)
        qualifier = identifier(receiver)
        if qualifier is not None and qualifier not in scope and qualifier in self.namespaces:
            return self.call(f"{qualifier}.{name}", None, arguments, scope)
        macro = _MACROS.get(name, {}).get(len(arguments))
        if macro is not None:
            return self.comprehension(macro, receiver, arguments, scope)
        if name in _OPTIONAL_MACROS and len(arguments) == 2:
            return self.optional_map(name, receiver, arguments, scope)
        target = self.visit(receiver, scope)
        return self.call(name, target, arguments, scope)

    def call(self, name: str, target: Estimate | None, arguments: list[Node], scope: Scope) -> Estimate:
        """A function call: its target's and arguments' costs, plus the function's own (``function_cost``)."""
        estimates = [self.visit(argument, scope) for argument in arguments]
        literals = [_literal_int(argument) for argument in arguments]
        shapes = [shape for _, shape in estimates]
        own, result = function_cost(name, target[1] if target else None, shapes, literals)
        result = self.results.get(name, result)
        return (target[0] if target else 0) + sum(cost for cost, _ in estimates) + own, result

    def optional_map(self, name: str, receiver: Node, arguments: list[Node], scope: Scope) -> Estimate:
        """``o.optMap(v, e)``: cel-go's ``o.hasValue() ? optional.of(cel.bind(v, o.value(), e)) : optional.none()``
        (``optFlatMap`` without ``optional.of``), where the binding costs an empty list (10) and ``o.value()``."""
        optional, shape = self.visit(receiver, scope)
        inner = {**scope, identifier(arguments[0]) or "": shape}
        body, result = self.visit(arguments[1], inner)
        return 2 * optional + body + _OPTIONAL_MACROS[name], result

    def comprehension(self, macro: _Macro, receiver: Node, arguments: list[Node], scope: Scope) -> Estimate:
        """cel-go's comprehension cost: the range, then per element the loop condition and step."""
        range_cost, range_shape = self.visit(receiver, scope)
        names = [identifier(argument) or "" for argument in arguments[: macro.variables]]
        inner = dict(scope)
        if macro.variables == 1:
            inner[names[0]] = range_shape.members if range_shape.kind != "map" else string()
        else:
            inner[names[0]] = INT if range_shape.kind == "list" else string()
            inner[names[1]] = range_shape.members
        bodies = [self.visit(argument, inner) for argument in arguments[macro.variables :]]
        per_element = macro.per_element + sum(cost for cost, _ in bodies)
        count = range_shape.size
        cost = range_cost + macro.fixed + count * per_element
        if macro.result == "list":
            return cost, Shape("list", count, bodies[-1][1], minimum=2)
        if macro.result == "filtered":
            return cost, Shape("list", count, range_shape.members, minimum=2)
        if macro.result == "map":
            return cost, Shape("map", count, bodies[-1][1], minimum=2)
        return cost, BOOL


@dataclass(frozen=True, slots=True)
class _Macro:
    """A comprehension macro's cost in cel-go's expansion: ``fixed`` (accumulator initialisation, result) and
    ``per_element`` (loop condition and step, beyond the bodies); ``variables``: iteration variables."""

    fixed: int
    per_element: int
    result: str = "bool"
    variables: int = 1


_ALL, _EXISTS, _EXISTS_ONE = _Macro(1, 3), _Macro(1, 4), _Macro(2, 2)
_MACROS: dict[str, dict[int, _Macro]] = {
    # all: init true, loop condition @not_strictly_false(accu) = 2, step accu && p = 1 + p, result accu = 1
    "all": {2: _ALL, 3: _Macro(1, 3, variables=2)},
    # exists: init false, condition @not_strictly_false(!accu) = 3, step accu || p = 1 + p, result accu = 1
    "exists": {2: _EXISTS, 3: _Macro(1, 4, variables=2)},
    # exists_one: init 0, condition true, step p ? accu + 1 : accu = p + 2, result accu == 1 = 2
    "exists_one": {2: _EXISTS_ONE},
    "existsOne": {3: _Macro(2, 2, variables=2)},
    # map: init [] = 10, step accu + [f] = 1 + 1 + 10 + f (+ p when filtered), result accu = 1
    "map": {2: _Macro(11, 12, "list"), 3: _Macro(11, 12, "list")},
    "transformList": {3: _Macro(11, 12, "list", 2), 4: _Macro(11, 12, "list", 2)},
    # filter: step p ? accu + [x] : accu = p + 13
    "filter": {2: _Macro(11, 13, "filtered")},
    # transformMap: init {} = 30, step cel.@mapInsert(accu, k, f) = 3 + f; transformMapEntry: 2 + f
    "transformMap": {3: _Macro(31, 3, "map", 2), 4: _Macro(31, 3, "map", 2)},
    "transformMapEntry": {3: _Macro(31, 2, "map", 2), 4: _Macro(31, 2, "map", 2)},
    # sortBy: cel.bind(v, x, v.@sortByAssociatedKeys(v.map(e, k))): the map's cost; the list keeps its shape
    "sortBy": {2: _Macro(11, 12, "filtered")},
}


#: optMap and optFlatMap beyond twice the optional and the body: hasValue, value, the binding's empty list (10)
#: and, for optMap, optional.of.
_OPTIONAL_MACROS = {"optMap": 13, "optFlatMap": 12}

_RULES: dict[str, Callable[[_Estimator, Node, Scope], Estimate]] = {
    "literal": _Estimator.literal,
    "ident": _Estimator.ident,
    "dot_ident": _Estimator.dot_ident,
    "member_dot": _Estimator.select,
    "member_dot_opt": _Estimator.select,
    "member_index": _Estimator.index,
    "member_index_opt": _Estimator.index,
    "member_object": _Estimator.create_object,
    "list_lit": _Estimator.create_list,
    "map_lit": _Estimator.create_map,
    "opt_elem": _Estimator.optional_element,
    "conditionalor": _Estimator.logical,
    "conditionaland": _Estimator.logical,
    "expr": _Estimator.conditional,
    "unary": _Estimator.unary,
    "relation": _Estimator.binary,
    "addition": _Estimator.binary,
    "multiplication": _Estimator.binary,
    "ident_arg": _Estimator.global_call,
    "dot_ident_arg": _Estimator.global_call,
    "member_dot_arg": _Estimator.member_call,
}


def _trees(node: Node) -> list[Node]:
    return [child for child in node.children if isinstance(child, lark.Tree)]


def _elements(node: Node) -> list[Node]:
    """The element (or key and value) expressions of a list or map literal."""
    return _trees(node.children[0]) if node.children else []


def _decoded(token: Any, decode: Callable[[Any], Any]) -> Any:
    try:
        return decode(token)
    except Exception:  # an invalid escape: the checker or the evaluator reports it
        return str(token)


def _literal_int(node: Node) -> int | None:
    inner = unwrap(node)
    token = inner.children[0] if inner.data == "literal" else None
    return int(str(token)) if getattr(token, "type", "") == "INT_LIT" else None
