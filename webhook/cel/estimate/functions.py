"""What calling a function costs and returns, beyond its target's and arguments' costs: the operators (equality,
ordering and ``+`` of strings, bytes and lists) and the functions of CEL's and Kubernetes' libraries, by
Kubernetes' ``CostEstimator.EstimateCallCost`` where it has a rule, else cel-go's ``functionCost``, else 1."""

from __future__ import annotations

import math
from collections.abc import Callable

from webhook.cel.estimate.shapes import BOOL, DYN, INT, Shape, list_of, string, union_all

_TRAVERSAL = 0.1  # cel-go's StringTraversalCostFactor
_REGEX = 0.25  # RegexStringLengthCostFactor
_CHECK = 350_000  # an authorization check
_FORMAT_REGEX = 128  # Kubernetes' MaxNameFormatRegexSize, the regex length a format's validate is charged for

#: A cost and the shape of the value it buys.
Estimate = tuple[int, Shape]


def traverse(size: int, factor: float = _TRAVERSAL) -> int:
    """What going over ``size`` units costs at ``factor`` a unit, rounded up (cel-go's string traversal)."""
    return math.ceil(size * factor)


def _is_text(shape: Shape) -> bool:
    return shape.kind in ("string", "bytes", "dyn")


def equality_size(shape: Shape) -> int:
    """The size cel-go's equality charges a tenth per unit of: scalars 1, ``dyn`` as the longest string."""
    return shape.text_size if shape.kind in ("string", "bytes", "dyn") else shape.size


def ordering_cost(left: Shape, right: Shape) -> int:
    """``< <= > >=``: strings and bytes traverse the shorter operand, other types cost 1 (the dearer where an
    operand is ``dyn`` and either may apply)."""
    if not (_is_text(left) and _is_text(right)):
        return 1
    text = traverse(min(left.text_size, right.text_size))
    return text if "dyn" not in (left.kind, right.kind) else max(1, text)


def add_cost(left: Shape, right: Shape) -> int:
    """``+``: strings and bytes traverse the result, lists and numbers cost 1 (cel-go's overloads; the dearest
    that may apply when an operand is ``dyn``)."""
    if _is_text(left) and _is_text(right):
        return max(1, traverse(left.text_size + right.text_size))
    return 1


def add_shape(left: Shape, right: Shape) -> Shape:
    """The shape of ``left + right``: a string (bytes) or list as long as both, else a number or ``dyn``."""
    if left.kind in ("string", "bytes") and right.kind in ("string", "bytes", "dyn"):
        return Shape(left.kind, left.size + right.text_size, minimum=2)
    if left.kind == "list" or right.kind == "list":
        element = union_all(s.element for s in (left, right) if s.kind == "list" and s.element is not None)
        return Shape("list", left.size + right.size, element, minimum=2)
    return left if left.kind == "scalar" else DYN


def function_cost(name: str, target: Shape | None, args: list[Shape], literals: list[int | None]) -> Estimate:
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
        return traverse(subject.text_size), shape

    return rule


def _parse(target: Shape | None, args: list[Shape], literals: list[int | None]) -> Estimate | None:
    """``quantity isQuantity ip isIP cidr isCIDR``: a traversal of the string parsed (``cidr.ip()``, a
    member without arguments, costs 1)."""
    if not args:
        return (1, INT) if target is not None else None
    return traverse(args[0].text_size), INT


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
    return traverse(size, 2 * _TRAVERSAL), string(result)


def _split(target: Shape | None, args: list[Shape], literals: list[int | None]) -> Estimate | None:
    if target is None:
        return None
    size = target.text_size
    most = literals[1] if len(literals) > 1 and literals[1] is not None else size
    return traverse(size, 2 * _TRAVERSAL), list_of(string(size), most)


def _join(target: Shape | None, args: list[Shape], literals: list[int | None]) -> Estimate | None:
    if target is None:
        return None
    items = target.size
    size = items * target.members.text_size + (max(items - 1, 0) * args[0].text_size if args else 0)
    return traverse(size), string(size)


def _regex(result: str) -> Rule:
    """``matches``, ``find``, ``findAll``: the string's traversal (plus one) times the regex length's."""

    def rule(target: Shape | None, args: list[Shape], literals: list[int | None]) -> Estimate | None:
        subject, pattern = (target, args[0]) if target is not None else (args[0], args[1])
        cost = traverse(subject.text_size + 1) * traverse(pattern.text_size, _REGEX)
        size = subject.text_size
        return cost, BOOL if result == "bool" else string(size) if result == "string" else list_of(string(size), size)

    return rule


def _contains(target: Shape | None, args: list[Shape], literals: list[int | None]) -> Estimate | None:
    if target is None or target.kind not in ("string", "dyn"):
        return None
    return traverse(target.text_size) * traverse(args[0].text_size), BOOL


def _affix(target: Shape | None, args: list[Shape], literals: list[int | None]) -> Estimate | None:
    return traverse(args[0].text_size), BOOL


def _list_traversal(result: str) -> Rule:
    """``isSorted sum min max indexOf lastIndexOf``: 1 per element (plus a traversal of string elements); on a
    string target (``indexOf`` of the strings library) a traversal of it."""

    def rule(target: Shape | None, args: list[Shape], literals: list[int | None]) -> Estimate | None:
        if target is None:
            return None
        if target.kind == "string":
            return traverse(target.size), INT
        element = target.members
        per_element = 1 + (traverse(element.text_size) if element.kind in ("string", "bytes") else 0)
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
        cost = traverse(32) + (traverse(16) + 1 if cidr else 0)
        if args and args[0].kind in ("string", "dyn"):
            cost += traverse(args[0].text_size)
        return cost, BOOL

    return rule


def _validate(target: Shape | None, args: list[Shape], literals: list[int | None]) -> Estimate | None:
    if target is None or not args:
        return None
    return traverse(args[0].text_size) * math.ceil(_FORMAT_REGEX * _REGEX), DYN


def _conversion(target: Shape | None, args: list[Shape], literals: list[int | None]) -> Estimate | None:
    """``string(bytes)`` and ``bytes(string)`` traverse; other conversions cost 1 (a string result of unknown
    length is as long as a request allows)."""
    if target is not None or len(args) != 1:
        return None
    if args[0].kind in ("string", "bytes"):
        return traverse(args[0].size), string(args[0].size)
    return 1, string()


def _flatten(target: Shape | None, args: list[Shape], literals: list[int | None]) -> Estimate | None:
    """``flatten()``: a list of the elements of the target's lists, as many as they hold together (cost 1; with a
    depth, ``dyn``)."""
    if target is None or args:
        return None
    inner = target.members
    count = target.size * (inner.size if inner.kind in ("list", "dyn") else 1)
    return 1, Shape("list", count, inner.members if inner.kind in ("list", "dyn") else inner, minimum=2)


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
    "flatten": _flatten,
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
