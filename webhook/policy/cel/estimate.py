"""Worst-case cost estimates of CEL expressions at load time, in the apiserver's cost units.

``estimate(tree, variables, namespaces)`` walks a checked parse tree (``frontend.check.front_end``) and returns
the most an evaluation can cost, the figure cel-go's estimator (``checker/cost.go``) computes with Kubernetes'
``CostEstimator`` (``k8s.io/apiserver/pkg/cel/library/cost.go``, ``reference/k8s-cel-admission.md`` §8):

- an identifier costs 1, a field selection 1 on a map or object (0 on ``dyn``, as cel-go charges only typed
  selections), a literal 0 (``-1`` too: cel-go's parser folds it), an index or an O(1) function 1, ``&&``,
  ``||`` and ``?:`` nothing beyond their operands (the dearer branch of ``?:``); list literals 10, map
  literals 30, object initializers 40, plus their elements;
- a comprehension costs its range, then range size * (loop condition + step) of cel-go's macro expansion:
  ``all`` 3 + body per element, ``exists`` 4 +, ``exists_one`` 2 +, ``map`` 12 +, ``filter`` 13 + (and
  the two-variable forms alike); ``has()`` costs its operand only (the apiserver sets its presence test to 0);
- string functions cost ``ceil(size * 0.1)`` per traversal (``replace``/``split`` two), ``matches``,
  ``find`` and ``findAll`` ``ceil((size + 1) * 0.1) * ceil(len(regex) * 0.25)``, ``contains`` the product of
  both traversals, equality and ordering of strings ``ceil(min size * 0.1)``, string concatenation the
  result's traversal; ``in`` a list and the Kubernetes list functions one traversal; the sets functions every
  pair of elements (``sets.equivalent`` twice); ``check`` 350,000.

Sizes (the most ``size()`` can return) come from literals, from what functions return, from the bounds a
``Shape`` declares (a CRD schema's ``maxItems``/``maxLength``/``maxProperties``, ``from_schema``), and
otherwise from the request: nothing in a request is longer than ``MAX_REQUEST_SIZE_BYTES`` (3 MiB), so a list
holds at most ``(3 MiB - 2) / (its smallest element's JSON size + 1)`` elements and a string
``3 MiB - 2`` characters, as the apiserver bounds unbounded schema fields. That is what ``object``,
``oldObject``, ``params`` (``dyn``, no schema in a ValidatingAdmissionPolicy) and the untyped parts of
``request`` get here (cel-go alone would call them unbounded). Costs saturate at 2**64 - 1 like cel-go's.

What the apiserver does with an estimate (recorded from kube-apiserver 1.32 in ``tests/data/oracle/crd_costs.yaml``
and ``policy_costs.yaml``):
a CRD ``x-kubernetes-validations`` rule whose estimate exceeds 10,000,000 (``StaticEstimatedCostLimit``) is
refused at create (``estimated rule cost exceeds budget by factor of ...``); a ValidatingAdmissionPolicy or a
MutatingAdmissionPolicy is created whatever its expressions' estimates (a triple nested comprehension over
``object`` included), with no ``status.typeChecking`` written within 10 s (the status controller that type-checks
policies runs in kube-controller-manager, which the recording lacked), and only the run-time limit
(``PerCallLimit``, 1,000,000 per evaluation) stops it. So the
policy loader refuses nothing on an estimate; ``policy lint`` reports each expression whose estimate exceeds
``PER_CALL_LIMIT`` (it may be cancelled at run time) and does not call its policy portable.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from typing import Any

import lark
from celpy.evaluation import celbytes, celstr

from webhook.policy.cel.cost import DEFAULT_COST_LIMIT
from webhook.policy.cel.frontend.tree import Node, call_arguments, identifier, unwrap

#: The apiserver's per-evaluation limit (``PerCallLimit``): an expression estimated above it may be cancelled.
PER_CALL_LIMIT = DEFAULT_COST_LIMIT
#: The apiserver's largest request body (``MaxRequestSizeBytes``), which bounds every unbounded size.
MAX_REQUEST_SIZE_BYTES = 3 * 1024 * 1024
#: cel-go's cost arithmetic saturates at the largest uint64.
SATURATED = 2**64 - 1

_TRAVERSAL = 0.1  # cel-go's StringTraversalCostFactor
_REGEX = 0.25  # RegexStringLengthCostFactor
_LIST_CREATE, _MAP_CREATE, _OBJECT_CREATE = 10, 30, 40
_CHECK = 350_000  # an authorization check
_FORMAT_REGEX = 128  # Kubernetes' MaxNameFormatRegexSize, the regex length a format's validate is charged for


@dataclass(frozen=True, slots=True)
class Shape:
    """What the estimator knows of a value.

    ``kind``: ``scalar`` (int, uint, double, bool, timestamp, duration, library values), ``string``,
    ``bytes``, ``list``, ``map``, ``object`` (known ``fields``; others are ``element``) or ``dyn``;
    ``size``: the most ``size()`` can be (code points, bytes, elements, entries; 1 for scalars; for ``dyn``
    as a list); ``element``: a list's elements or a map's values (``None``: ``dyn``); ``minimum``: the
    smallest JSON text of such a value, in bytes, which bounds how many fit in a request.
    """

    kind: str
    size: int = 1
    element: Shape | None = None
    fields: Mapping[str, Shape] = field(default_factory=dict)
    minimum: int = 1

    @property
    def text_size(self) -> int:
        """The most code points (or bytes) the value has as a string: ``dyn`` may be the longest string."""
        return _MAX_STRING if self.kind == "dyn" else self.size

    @property
    def members(self) -> Shape:
        """The shape of an element, a map value or a field not declared."""
        return self.element if self.element is not None else DYN

    def select(self, name: str) -> Shape:
        """The shape of field (or map key) ``name``."""
        return self.fields.get(name) or self.members


_MAX_STRING = MAX_REQUEST_SIZE_BYTES - 2  # the quotes


def _most_items(element_minimum: int) -> int:
    """How many elements of at least ``element_minimum`` JSON bytes fit in a request (brackets, commas)."""
    return (MAX_REQUEST_SIZE_BYTES - 2) // (element_minimum + 1)


#: The bytes a map entry takes beyond its value, as the apiserver counts them (measured: 6).
_ENTRY_OVERHEAD = 6


def _most_entries(value_minimum: int) -> int:
    """How many entries with values of at least ``value_minimum`` JSON bytes fit in a request."""
    return (MAX_REQUEST_SIZE_BYTES - 2) // (value_minimum + _ENTRY_OVERHEAD)


INT = Shape("scalar", minimum=1)
BOOL = Shape("scalar", minimum=4)
DYN = Shape("dyn", _most_items(1))
"""A value of unknown type: any field or element of it is ``dyn`` too."""


def string(max_length: int | None = None) -> Shape:
    """A string of at most ``max_length`` code points (default: as long as a request allows)."""
    return Shape("string", _MAX_STRING if max_length is None else max_length, minimum=2)


def list_of(element: Shape, max_items: int | None = None) -> Shape:
    """A list of ``element``s, at most ``max_items`` (default: as many as fit in a request)."""
    return Shape("list", _most_items(element.minimum) if max_items is None else max_items, element, minimum=2)


def map_of(value: Shape, max_entries: int | None = None) -> Shape:
    """A map of string keys to ``value``s, at most ``max_entries`` (default: as many as fit in a request)."""
    return Shape("map", _most_entries(value.minimum) if max_entries is None else max_entries, value, minimum=2)


def object_of(fields: Mapping[str, Shape]) -> Shape:
    """An object with these fields."""
    return Shape("object", len(fields), fields=dict(fields), minimum=2)


#: Numbers and booleans of a schema: their declared types have no size, so the apiserver sizes them 0 (equality
#: with one costs nothing) where a literal or a function's number has size 1.
_SCHEMA_NUMBER = Shape("scalar", 0, minimum=1)
_SCHEMA_BOOL = Shape("scalar", 0, minimum=4)
#: The most UTF-8 bytes one character takes: the apiserver bounds a string's size by ``maxLength`` times it.
_UTF8_MOST = 4


def from_schema(schema: Mapping[str, Any]) -> Shape:
    """The shape of a value of an OpenAPI v3 structural ``schema`` as the apiserver sizes it: ``maxItems``,
    ``maxProperties`` and 4 bytes per character of ``maxLength`` where given, else what fits in a request;
    ``x-kubernetes-int-or-string`` and ``x-kubernetes-preserve-unknown-fields`` without properties are ``dyn``."""
    kind = schema.get("type")
    if schema.get("x-kubernetes-int-or-string") or (
        schema.get("x-kubernetes-preserve-unknown-fields") and "properties" not in schema
    ):
        return DYN
    if kind in ("integer", "number", "boolean"):
        return _SCHEMA_BOOL if kind == "boolean" else _SCHEMA_NUMBER
    if kind == "string":
        most = schema.get("maxLength")
        return string(None if most is None else most * _UTF8_MOST)
    if kind == "array":
        return list_of(from_schema(schema.get("items", {})), schema.get("maxItems"))
    additional = schema.get("additionalProperties")
    if isinstance(additional, Mapping):
        return map_of(from_schema(additional), schema.get("maxProperties"))
    if kind == "object":
        return object_of({name: from_schema(value) for name, value in schema.get("properties", {}).items()})
    return DYN


_STRING = {"type": "string"}
_STRINGS = {"type": "array", "items": _STRING}


def _string_fields(*names: str) -> dict[str, Any]:
    return {"type": "object", "properties": dict.fromkeys(names, _STRING)}


_REQUEST_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        **dict.fromkeys(("kind", "requestKind"), _string_fields("group", "version", "kind")),
        **dict.fromkeys(("resource", "requestResource"), _string_fields("group", "version", "resource")),
        **dict.fromkeys(("subResource", "requestSubResource", "name", "namespace", "operation"), _STRING),
        "userInfo": {
            "type": "object",
            "properties": {
                "username": _STRING,
                "uid": _STRING,
                "groups": _STRINGS,
                "extra": {"type": "object", "additionalProperties": _STRINGS},
            },
        },
        "dryRun": {"type": "boolean"},
        "options": {"x-kubernetes-preserve-unknown-fields": True},
    },
}
_STRING_MAP = {"type": "object", "additionalProperties": _STRING}
_NAMESPACE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "metadata": {
            "type": "object",
            "properties": {
                **dict.fromkeys(("name", "generateName", "namespace", "uid", "creationTimestamp"), _STRING),
                **dict.fromkeys(("deletionTimestamp", "resourceVersion"), _STRING),
                "labels": _STRING_MAP,
                "annotations": _STRING_MAP,
                "finalizers": _STRINGS,
                "generation": {"type": "integer"},
                "deletionGracePeriodSeconds": {"type": "integer"},
            },
        },
        "spec": {"type": "object", "properties": {"finalizers": _STRINGS}},
        "status": {"x-kubernetes-preserve-unknown-fields": True},
    },
}

ADMISSION_VARIABLES: Mapping[str, Shape] = {
    "object": DYN,
    "oldObject": DYN,
    "params": DYN,
    "request": from_schema(_REQUEST_SCHEMA),
    "namespaceObject": from_schema(_NAMESPACE_SCHEMA),
    "variables": object_of({}),
    "authorizer": Shape("scalar"),
}
"""The variables of a ValidatingAdmissionPolicy or MutatingAdmissionPolicy expression: ``object``,
``oldObject`` and ``params`` are ``dyn``; ``request`` and ``namespaceObject`` are typed as in the apiserver
(``AdmissionRequest``, ``Namespace``) with request-bounded strings and lists; ``variables.<name>`` is ``dyn``."""


def estimate(tree: Node, variables: Mapping[str, Shape] = ADMISSION_VARIABLES, namespaces: Collection[str] = ()) -> int:
    """The worst-case cost of evaluating ``tree`` (a collapsed parse tree that passed ``check``), in cel-go's
    cost units, at most ``SATURATED``. ``variables``: the shapes of the declared variables (others are
    ``dyn``); ``namespaces``: the names that qualify functions (``sets``, ``strings``, ``cluster``, ...)."""
    cost, _ = _Estimator(frozenset(namespaces)).visit(tree, dict(variables))
    return min(cost, SATURATED)


Scope = dict[str, Shape]
Estimate = tuple[int, Shape]


#: The qualifiers of library type names (``net.IP``, ``kubernetes.Quantity``).
_TYPE_QUALIFIERS = frozenset({"net", "kubernetes"})


def _traverse(size: int, factor: float = _TRAVERSAL) -> int:
    return math.ceil(size * factor)


def _union(first: Shape, second: Shape) -> Shape:
    """A shape covering both: the larger size, the same kind where they agree, else ``dyn``."""
    if first.kind != second.kind:
        return DYN
    return first if first.size >= second.size else second


def _is_text(shape: Shape) -> bool:
    return shape.kind in ("string", "bytes", "dyn")


class _Estimator:
    """One estimate: a recursive walk returning (cost, shape) per node, with the comprehension variables in
    scope. The tree's depth is bounded by the checker (``check.MAX_TREE_DEPTH``)."""

    def __init__(self, namespaces: frozenset[str]) -> None:
        self.namespaces = namespaces
        self.qualifiers = namespaces | _TYPE_QUALIFIERS

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
        typed = shape.kind in ("map", "object")
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
        element = _union_all(shape for _, shape in elements)
        return _LIST_CREATE + sum(cost for cost, _ in elements), Shape("list", len(elements), element, minimum=2)

    def create_map(self, node: Node, scope: Scope) -> Estimate:
        entries = [self.visit(child, scope) for child in _elements(node)]
        value = _union_all(shape for _, shape in entries[1::2])
        return _MAP_CREATE + sum(cost for cost, _ in entries), Shape("map", len(entries) // 2, value, minimum=2)

    def optional_element(self, node: Node, scope: Scope) -> Estimate:
        return self.visit(node.children[0], scope)

    def logical(self, node: Node, scope: Scope) -> Estimate:
        return sum(self.visit(child, scope)[0] for child in _trees(node)), BOOL

    def conditional(self, node: Node, scope: Scope) -> Estimate:
        (condition, _), (then, then_shape), (otherwise, otherwise_shape) = (
            self.visit(child, scope) for child in _trees(node)
        )
        return condition + max(then, otherwise), _union(then_shape, otherwise_shape)

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
            smallest = min(_equality_size(left_shape), _equality_size(right_shape))
            return operands + _traverse(smallest), BOOL
        if name == "relation_in":
            return operands + (right_shape.size if right_shape.kind in ("list", "dyn") else 1), BOOL
        if name.startswith("relation_"):
            return operands + _ordering_cost(left_shape, right_shape), BOOL
        if name == "addition_add":
            return operands + _add_cost(left_shape, right_shape), _add_shape(left_shape, right_shape)
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
        """A function call: its target's and arguments' costs, plus the function's own (``_function_cost``)."""
        estimates = [self.visit(argument, scope) for argument in arguments]
        literals = [_literal_int(argument) for argument in arguments]
        shapes = [shape for _, shape in estimates]
        own, result = _function_cost(name, target[1] if target else None, shapes, literals)
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


def _union_all(shapes: Any) -> Shape | None:
    found: Shape | None = None
    for shape in shapes:
        found = shape if found is None else _union(found, shape)
    return found


def _decoded(token: Any, decode: Callable[[Any], Any]) -> Any:
    try:
        return decode(token)
    except Exception:  # an invalid escape: the checker or the evaluator reports it
        return str(token)


def _literal_int(node: Node) -> int | None:
    inner = unwrap(node)
    token = inner.children[0] if inner.data == "literal" else None
    return int(str(token)) if getattr(token, "type", "") == "INT_LIT" else None


def _equality_size(shape: Shape) -> int:
    """The size cel-go's equality charges a tenth per unit of: scalars 1, ``dyn`` as the longest string."""
    return shape.text_size if shape.kind in ("string", "bytes", "dyn") else shape.size


def _ordering_cost(left: Shape, right: Shape) -> int:
    """``< <= > >=``: strings and bytes traverse the shorter operand, other types cost 1 (the dearer where an
    operand is ``dyn`` and either may apply)."""
    if not (_is_text(left) and _is_text(right)):
        return 1
    text = _traverse(min(left.text_size, right.text_size))
    return text if "dyn" not in (left.kind, right.kind) else max(1, text)


def _add_cost(left: Shape, right: Shape) -> int:
    """``+``: strings and bytes traverse the result, lists and numbers cost 1 (cel-go's overloads; the dearest
    that may apply when an operand is ``dyn``)."""
    if _is_text(left) and _is_text(right):
        return max(1, _traverse(left.text_size + right.text_size))
    return 1


def _add_shape(left: Shape, right: Shape) -> Shape:
    if left.kind in ("string", "bytes") and right.kind in ("string", "bytes", "dyn"):
        return Shape(left.kind, left.size + right.text_size, minimum=2)
    if left.kind == "list" or right.kind == "list":
        element = _union_all(s.element for s in (left, right) if s.kind == "list" and s.element is not None)
        return Shape("list", left.size + right.size, element, minimum=2)
    return left if left.kind == "scalar" else DYN


def _function_cost(name: str, target: Shape | None, args: list[Shape], literals: list[int | None]) -> Estimate:
    """A function's own cost and result shape: Kubernetes' ``CostEstimator.EstimateCallCost`` where it has
    one, else cel-go's (``functionCost``), else 1. Member functions of a library type (``Quantity``,
    ``Semver``, ``URL``, ``IP``, ``CIDR``) and constructors of library values cost 1 and return scalars."""
    rule = _FUNCTIONS.get(name)
    found = rule(target, args, literals) if rule is not None else None
    if found is not None:
        return found
    return 1, BOOL if name in _PREDICATES else INT if name in _SCALARS else DYN


Rule = Callable[[Shape | None, list[Shape], list[int | None]], Estimate | None]


def _string_traversal(result: str) -> Rule:
    """``lowerAscii upperAscii substring trim`` (of the target), ``url`` and ``jsonpatch.escapeKey`` (of
    the argument): one traversal; the result is as long."""

    def rule(target: Shape | None, args: list[Shape], literals: list[int | None]) -> Estimate | None:
        subject = target if target is not None else args[0] if args else None
        if subject is None:
            return None
        shape = INT if result == "scalar" else string(subject.text_size)
        return _traverse(subject.text_size), shape

    return rule


def _parse(target: Shape | None, args: list[Shape], literals: list[int | None]) -> Estimate | None:
    """``quantity isQuantity ip isIP cidr isCIDR``: a traversal of the string parsed (``cidr.ip()``, a
    member without arguments, costs 1)."""
    if not args:
        return (1, INT) if target is not None else None
    return _traverse(args[0].text_size), INT


def _replace(target: Shape | None, args: list[Shape], literals: list[int | None]) -> Estimate | None:
    if target is None or len(args) < 2:
        return None
    size, old, new = target.text_size, args[0], args[1]
    if old.kind == "string" and old.size > 0 and new.text_size <= old.size:
        result = size
    elif old.kind == "string" and old.size > 0:
        result = math.ceil(size / old.size) * new.text_size
    else:
        result = (size + 1) * new.text_size + size
    return _traverse(size, 2 * _TRAVERSAL), string(result)


def _split(target: Shape | None, args: list[Shape], literals: list[int | None]) -> Estimate | None:
    if target is None:
        return None
    size = target.text_size
    most = literals[1] if len(literals) > 1 and literals[1] is not None else size
    return _traverse(size, 2 * _TRAVERSAL), list_of(string(size), most)


def _join(target: Shape | None, args: list[Shape], literals: list[int | None]) -> Estimate | None:
    if target is None:
        return None
    items = target.size
    size = items * target.members.text_size + (max(items - 1, 0) * args[0].text_size if args else 0)
    return _traverse(size), string(size)


def _regex(result: str) -> Rule:
    """``matches``, ``find``, ``findAll``: the string's traversal (plus one) times the regex length's."""

    def rule(target: Shape | None, args: list[Shape], literals: list[int | None]) -> Estimate | None:
        subject, pattern = (target, args[0]) if target is not None else (args[0], args[1])
        cost = _traverse(subject.text_size + 1) * _traverse(pattern.text_size, _REGEX)
        size = subject.text_size
        return cost, BOOL if result == "bool" else string(size) if result == "string" else list_of(string(size), size)

    return rule


def _contains(target: Shape | None, args: list[Shape], literals: list[int | None]) -> Estimate | None:
    if target is None or target.kind not in ("string", "dyn"):
        return None
    return _traverse(target.text_size) * _traverse(args[0].text_size), BOOL


def _affix(target: Shape | None, args: list[Shape], literals: list[int | None]) -> Estimate | None:
    return _traverse(args[0].text_size), BOOL


def _list_traversal(result: str) -> Rule:
    """``isSorted sum min max indexOf lastIndexOf``: 1 per element (plus a traversal of string elements); on a
    string target (``indexOf`` of the strings library) a traversal of it."""

    def rule(target: Shape | None, args: list[Shape], literals: list[int | None]) -> Estimate | None:
        if target is None:
            return None
        if target.kind == "string":
            return _traverse(target.size), INT
        element = target.members
        per_element = 1 + (_traverse(element.text_size) if element.kind in ("string", "bytes") else 0)
        return target.size * per_element, element if result == "element" else BOOL if result == "bool" else INT

    return rule


def _sets(factor: int) -> Rule:
    """``sets.contains/intersects`` (``factor`` 1) and ``sets.equivalent`` (2, both ways): every pair of elements,
    plus the call (cel-go's sets estimator)."""

    def rule(target: Shape | None, args: list[Shape], literals: list[int | None]) -> Estimate | None:
        return (factor * args[0].size * args[1].size + 1, BOOL) if len(args) == 2 else None

    return rule


def _fixed(cost: int, result: Shape = INT) -> Rule:
    return lambda target, args, literals: (cost, result)


def _contains_network(cidr: bool) -> Rule:
    """``containsIP``/``containsCIDR``: comparing 16-byte addresses, plus parsing a string argument."""

    def rule(target: Shape | None, args: list[Shape], literals: list[int | None]) -> Estimate | None:
        cost = _traverse(32) + (_traverse(16) + 1 if cidr else 0)
        if args and args[0].kind in ("string", "dyn"):
            cost += _traverse(args[0].text_size)
        return cost, BOOL

    return rule


def _validate(target: Shape | None, args: list[Shape], literals: list[int | None]) -> Estimate | None:
    if target is None or not args:
        return None
    return _traverse(args[0].text_size) * math.ceil(_FORMAT_REGEX * _REGEX), DYN


def _conversion(target: Shape | None, args: list[Shape], literals: list[int | None]) -> Estimate | None:
    """``string(bytes)`` and ``bytes(string)`` traverse; other conversions cost 1 (a string result of unknown
    length is as long as a request allows)."""
    if target is not None or len(args) != 1:
        return None
    if args[0].kind in ("string", "bytes"):
        return _traverse(args[0].size), string(args[0].size)
    return 1, string()


_FUNCTIONS: dict[str, Rule] = {
    **dict.fromkeys(("lowerAscii", "upperAscii", "substring", "trim", "jsonpatch.escapeKey"), _string_traversal("s")),
    "url": _string_traversal("scalar"),
    **dict.fromkeys(("quantity", "isQuantity", "ip", "isIP", "cidr", "isCIDR"), _parse),
    "replace": _replace,
    "split": _split,
    "join": _join,
    "matches": _regex("bool"),
    "find": _regex("string"),
    "findAll": _regex("list"),
    "contains": _contains,
    "startsWith": _affix,
    "endsWith": _affix,
    **dict.fromkeys(("isSorted",), _list_traversal("bool")),
    **dict.fromkeys(("sum", "min", "max"), _list_traversal("element")),
    **dict.fromkeys(("indexOf", "lastIndexOf"), _list_traversal("int")),
    **dict.fromkeys(("sets.contains", "sets.intersects"), _sets(1)),
    "sets.equivalent": _sets(2),
    "check": _fixed(_CHECK),
    "containsIP": _contains_network(cidr=False),
    "containsCIDR": _contains_network(cidr=True),
    "validate": _validate,
    "string": _conversion,
    "bytes": _conversion,
}
_PREDICATES = frozenset(
    {"isGreaterThan", "isLessThan", "isInteger", "hasValue", "allowed", "errored", "isSemver", "isURL", "isFormat"}
    | {"isUnspecified", "isLoopback", "isLinkLocalMulticast", "isLinkLocalUnicast", "isGlobalUnicast"}
    | {"ip.isCanonical", "isQuantity", "isIP", "isCIDR"}
)
#: Functions whose result has a constant size (numbers, timestamps, durations, library values, types).
_SCALARS = frozenset(
    {"size", "int", "uint", "double", "bool", "type", "duration", "timestamp", "sign", "compareTo", "asInteger"}
    | {"asApproximateFloat", "add", "sub", "semver", "quantity", "ip", "cidr", "url", "major", "minor", "patch"}
    | {"family", "prefixLength", "masked", "getFullYear", "getMonth", "getDate", "getDayOfMonth", "getDayOfWeek"}
    | {"getDayOfYear", "getHours", "getMinutes", "getSeconds", "getMilliseconds", "check"}
)
