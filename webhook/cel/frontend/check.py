"""Load-time checks of a parse tree, standing in for cel-go's type checker where it matters to policies.

What the apiserver rejects when a policy is created (``reference/k8s-cel-admission.md`` §6, §10) and is
checkable without types: undeclared variables and functions, member-vs-global call form and arity of known
functions, macro shapes (``has(a.b)``, ``all(x, p)``, ``map(x, [p,] f)``), invalid regex, duration and
timestamp *literals*, heterogeneous list and map literals (``HomogeneousAggregateLiterals``), ``==``,
``!=`` and ``in`` between literals of different types (``1 == 1.0``), and the nesting limit. Errors are
``CelCompileError`` with ``<line>:<column>: <message>``. The walk is iterative, so a deep tree never raises
``RecursionError``. It also reports which extension (non-portable) functions are used.

``front_end`` (length limit, parse, checks) is the load-time front end of *both* backends: the cel-expr
backend runs it before cel-cpp's own type checker, so the two accept the same policies with the same messages
and cel-cpp can only reject more (ill-typed expressions, which cel-go rejects too).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple, TypeAlias

import lark
from celpy import celtypes

from webhook.cel.backend import Limits
from webhook.cel.estimate import ADMISSION_VARIABLES, estimate
from webhook.cel.frontend.parser import parse
from webhook.cel.frontend.tree import Node, call_arguments, collapse, identifier, string_literal, unwrap
from webhook.cel.libraries.regex import compile_pattern
from webhook.cel.libraries.registry import Overload
from webhook.errors import CelCompileError, CelEvaluationError

_NESTING_RULES = frozenset(
    {"paren_expr", "list_lit", "map_lit", "member_dot_arg", "ident_arg", "member_index", "member_index_opt", "expr"}
)
#: Functions whose list-literal argument may mix types (cel-go's exemption from homogeneous literals).
_HETEROGENEOUS_ARGUMENT = frozenset({"format"})
_REGEX_FUNCTIONS = frozenset({"matches", "find", "findAll"})
_LITERAL_KINDS = {
    "INT_LIT": "int",
    "UINT_LIT": "uint",
    "FLOAT_LIT": "double",
    "STRING_LIT": "string",
    "MLSTRING_LIT": "string",
    "BYTES_LIT": "bytes",
    "BOOL_LIT": "bool",
    "NULL_LIT": "null",
}
#: The equality operators by parse-tree rule (cel-go's function names).
_EQUALITY = {"relation_eq": "_==_", "relation_ne": "_!=_", "relation_in": "@in"}
#: A type fixed by literals (``_static_type``): ``("int",)``, ``("list", element)``, ``("map", key, value)``;
#: ``None`` where it depends on data.
StaticType: TypeAlias = "tuple[Any, ...] | None"
#: Depth of the collapsed parse tree (``tree.collapse``) the evaluator walks (3-4 frames per node) within
#: the recursion limit the cel-python backend sets (``RECURSION_LIMIT``): room for cel-go's 250 levels of
#: nesting, which take up to 4 tree levels each.
MAX_TREE_DEPTH = 1100
#: Binary and unary operator rules: each nests one level, as in cel-go's parser (``&&`` and ``||`` chains are
#: balanced there, so they do not count).
_OPERATOR_RULES = frozenset({"relation", "addition", "multiplication", "unary"})

MACROS: Mapping[str, Mapping[int, int]] = {
    "all": {2: 1, 3: 2},
    "exists": {2: 1, 3: 2},
    "exists_one": {2: 1, 3: 2},
    "existsOne": {3: 2},
    "filter": {2: 1},
    "map": {2: 1, 3: 1},
    "transformList": {3: 2, 4: 2},
    "transformMap": {3: 2, 4: 2},
    "transformMapEntry": {3: 2, 4: 2},
    "sortBy": {2: 1},
}
"""The comprehension macros (the evaluators expand them): name -> arguments -> iteration variables. Those with two
variables (an index or key and a value) are cel-go's ``ext.TwoVarComprehensions``, and ``sortBy`` is cel-go's
``ext.Lists`` v2+, which a Kubernetes version offers or not (``webhook.cel.versions``)."""
OPTIONAL_MACROS = frozenset({"optMap", "optFlatMap"})
"""The optional library's macros."""


@dataclass(frozen=True)
class Signatures:
    """What the checker knows: arities per global and member function name, namespace members, and the
    parameter kinds of each (qualified name, member form), the receiver first."""

    global_arities: Mapping[str, frozenset[int]]
    member_arities: Mapping[str, frozenset[int]]
    namespace_members: Mapping[str, Mapping[str, frozenset[int]]]
    extensions: frozenset[str]
    params: Mapping[tuple[str, bool], frozenset[tuple[str, ...]]]

    @classmethod
    def of(cls, overloads: Collection[Overload]) -> Signatures:
        """Signatures of ``overloads`` (namespaced ones are listed under their namespace)."""
        global_arities: dict[str, set[int]] = {}
        member_arities: dict[str, set[int]] = {}
        namespaces: dict[str, dict[str, set[int]]] = {}
        extensions: set[str] = set()
        params: dict[tuple[str, bool], set[tuple[str, ...]]] = {}
        for overload in overloads:
            receiver = overload.params[0] if overload.params else ""
            if overload.member and receiver.startswith("namespace:"):
                namespace = receiver.removeprefix("namespace:")
                namespaces.setdefault(namespace, {}).setdefault(overload.name, set()).add(overload.arity)
                qualified = f"{namespace}.{overload.name}"
                params.setdefault((qualified, False), set()).add(overload.params[1:])
            else:
                table = member_arities if overload.member else global_arities
                table.setdefault(overload.name, set()).add(overload.arity)
                qualified = overload.name
                params.setdefault((qualified, overload.member), set()).add(overload.params)
            if not overload.portable:
                extensions.add(qualified)
        return cls(
            {name: frozenset(arities) for name, arities in global_arities.items()},
            {name: frozenset(arities) for name, arities in member_arities.items()},
            {ns: {name: frozenset(a) for name, a in members.items()} for ns, members in namespaces.items()},
            frozenset(extensions),
            {key: frozenset(found) for key, found in params.items()},
        )


class FrontEnd(NamedTuple):
    """What the front end found: the collapsed parse tree (``tree.collapse``), the extension functions it calls,
    and its worst-case cost in the apiserver's units with the admission variables' shapes (``estimate``)."""

    tree: Node
    extensions: frozenset[str]
    estimated_cost: int


def front_end(source: str, names: Collection[str], signatures: Signatures, limits: Limits) -> FrontEnd:
    """The ``FrontEnd`` of ``source`` once it is within ``limits`` and passes ``check`` with ``names`` declared.
    Raises ``CelCompileError``."""
    if len(source) > limits.max_expression_length:
        raise CelCompileError(
            f"1:1: expression is {len(source)} characters long, over the limit of {limits.max_expression_length}"
        )
    tree = collapse(parse(source))
    try:
        extensions = check(tree, names, signatures, max_nesting=limits.max_nesting)
    except RecursionError:  # pragma: no cover - the checker is iterative; defence in depth
        raise CelCompileError("1:1: expression is nested too deeply") from None
    return FrontEnd(tree, extensions, estimate(tree, ADMISSION_VARIABLES, signatures.namespace_members.keys()))


_OPTIONAL_RULES = frozenset({"member_dot_opt", "member_index_opt", "opt_elem"})
_OPTIONAL_NAMES = frozenset({"optional", "optional_type"})


def uses_optionals(tree: Node) -> bool:
    """True if ``tree`` uses the optional syntax (``a.?b``, ``m[?k]``, ``[?x]``, ``{?k: v}``), the ``optional``
    namespace or the ``optMap``/``optFlatMap`` macros."""
    for node in tree.iter_subtrees():
        if node.data in _OPTIONAL_RULES or (node.data == "ident" and str(node.children[0]) in _OPTIONAL_NAMES):
            return True
        if node.data == "member_dot_arg" and str(node.children[1]) in OPTIONAL_MACROS:
            return True
    return False


def check(
    tree: Node,
    variables: Collection[str],
    signatures: Signatures,
    *,
    max_nesting: int,
) -> frozenset[str]:
    """Check ``tree``; return the extension functions it calls. Raises ``CelCompileError``."""
    used: set[str] = set()
    exempt: set[int] = set()  # ids of list literals that may mix types
    stack: list[tuple[Any, int, int, frozenset[str]]] = [(tree, 0, 0, frozenset(variables))]
    while stack:
        node, nesting, depth, scope = stack.pop()
        if not isinstance(node, lark.Tree):
            continue
        if nesting > max_nesting:
            _fail(node, f"expression recursion limit exceeded: {max_nesting}")
        if depth > MAX_TREE_DEPTH:
            _fail(node, f"expression nesting exceeds the limit of {MAX_TREE_DEPTH} operations")
        rule = node.data
        if (rule in _NESTING_RULES and (rule != "expr" or len(node.children) > 1)) or (
            rule in _OPERATOR_RULES and len(node.children) > 1
        ):
            nesting += 1
        children: list[tuple[Any, int, int, frozenset[str]]] = [
            (child, nesting, depth + 1, scope) for child in node.children
        ]
        if rule == "member_dot" and _qualified_name(node) in QUALIFIED_TYPE_NAMES:
            continue  # a library type name (net.IP): no identifier to check
        if rule == "ident":
            name = str(node.children[0])
            if name not in scope and name not in _TYPE_NAMES:
                _fail(node, f"undeclared reference to '{name}'")
        elif rule == "ident_arg":
            _check_global_call(node, signatures, used)
        elif rule == "member_dot_arg":
            children = _check_member_call(node, nesting, depth, scope, signatures=signatures, used=used)
            if str(node.children[1]) in _HETEROGENEOUS_ARGUMENT:
                exempt.update(id(_literal_node(argument)) for argument in call_arguments(node, 2))
        elif rule in ("list_lit", "map_lit") and id(node) not in exempt:
            _check_homogeneous(node)
        elif rule == "relation" and node.children[0].data in _EQUALITY:
            _check_equality(node)
        stack.extend(children)
    return frozenset(used)


#: Type names with a dot, usable as values (``type(ip('::1')) == net.IP``).
QUALIFIED_TYPE_NAMES = frozenset({"net.IP", "net.CIDR", "kubernetes.Quantity", "kubernetes.Semver", "kubernetes.URL"})


def _qualified_name(node: Node) -> str | None:
    """``a.b`` for a selection of the field ``b`` on the bare identifier ``a``, else None."""
    operand = identifier(node.children[0])
    return f"{operand}.{node.children[1]}" if operand is not None else None


_TYPE_NAMES = frozenset(
    {
        "optional_type",
        "int",
        "uint",
        "double",
        "bool",
        "string",
        "bytes",
        "list",
        "map",
        "null_type",
        "type",
        "timestamp",
        "duration",
    }
)


def _check_global_call(node: Node, signatures: Signatures, used: set[str]) -> None:
    name = str(node.children[0])
    arguments = call_arguments(node, 1)
    _check_no_optional_elements(arguments)
    if name == "has":
        if len(arguments) != 1 or unwrap(arguments[0]).data != "member_dot":
            _fail(node, "invalid argument to has() macro")
        return
    if name == "dyn":
        if len(arguments) != 1:
            _fail(node, "found no matching overload for 'dyn'")
        return
    arities = signatures.global_arities.get(name)
    if arities is None:
        raise _error(node, f"undeclared reference to '{name}'")
    if len(arguments) not in arities:
        _fail(node, f"found no matching overload for '{name}' with {len(arguments)} argument(s)")
    if name in signatures.extensions:
        used.add(name)
    _check_argument_kinds(node, name, None, arguments, signatures)
    _check_literal_arguments(node, name, arguments, member=False)


def _check_member_call(
    node: Node,
    nesting: int,
    depth: int,
    scope: frozenset[str],
    *,
    signatures: Signatures,
    used: set[str],
) -> list[tuple[Any, int, int, frozenset[str]]]:
    receiver, name_token = node.children[0], node.children[1]
    name = str(name_token)
    arguments = call_arguments(node, 2)
    _check_no_optional_elements(arguments)
    inner = [(child, nesting, depth + 1, scope) for child in arguments]
    receiver_entry = (receiver, nesting, depth + 1, scope)
    if name in MACROS or name in OPTIONAL_MACROS:
        shapes = MACROS.get(name, {2: 1})
        if len(arguments) not in shapes:
            _fail(node, f"macro '{name}' takes {' or '.join(map(str, sorted(shapes)))} arguments")
        count = shapes[len(arguments)]
        names = [identifier(argument) for argument in arguments[:count]]
        if None in names:
            raise _error(node, f"argument to macro '{name}' must be a simple name")
        body_scope = scope | {found for found in names if found is not None}
        return [receiver_entry, *((child, nesting, depth + 1, body_scope) for child in arguments[count:])]
    namespace = identifier(receiver)
    if namespace is not None and namespace in signatures.namespace_members:
        members = signatures.namespace_members[namespace]
        if name not in members:
            _fail(node, f"undeclared reference to '{namespace}.{name}'")
        arities = members[name]
        qualified = f"{namespace}.{name}"
    else:
        found = signatures.member_arities.get(name)
        if found is None:
            raise _error(node, f"undeclared reference to '{name}'")
        arities, qualified = found, name
    if len(arguments) not in arities:
        _fail(node, f"found no matching overload for '{qualified}' with {len(arguments)} argument(s)")
    if qualified in signatures.extensions:
        used.add(qualified)
    _check_argument_kinds(node, qualified, None if qualified != name else receiver, arguments, signatures)
    _check_literal_arguments(node, name, arguments, member=True)
    return [receiver_entry, *inner]


#: Element types a list literal receiver may have (Kubernetes' and cel-go's ``list(T)`` declarations).
_ELEMENT_KINDS = {
    "sum": frozenset({"int", "uint", "double", "duration"}),
    "join": frozenset({"string"}),
    **dict.fromkeys(
        ("min", "max", "isSorted"),
        frozenset({"int", "uint", "double", "bool", "duration", "timestamp", "string", "bytes"}),
    ),
}
_SAME_ELEMENTS = frozenset({"sets.contains", "sets.equivalent", "sets.intersects"})


def _check_argument_kinds(
    node: Node, name: str, receiver: Node | None, arguments: list[Node], signatures: Signatures
) -> None:
    """A call whose literal arguments (or literal receiver) no overload accepts is a compile error, as cel-go's
    checker finds: ``'a'.join()`` of ints, ``['a'].sum()``, ``quantity('1').compareTo(1)``,
    ``sets.contains([1], [1.0])``. Arguments whose type depends on data (``dyn``) always pass."""
    operands = ([receiver] if receiver is not None else []) + arguments
    types = [_static_type(operand) for operand in operands]
    kinds = [found[0] if found is not None else None for found in types]
    candidates = signatures.params.get((name, receiver is not None), frozenset())
    if candidates and not any(
        len(params) == len(kinds) and all(p == "dyn" or k is None or p == k for p, k in zip(params, kinds, strict=True))
        for params in candidates
    ):
        _fail_overload(node, name, types, member=receiver is not None)
    if receiver is not None and name in _ELEMENT_KINDS and types[0] is not None and types[0][0] == "list":
        element = types[0][1]
        if element is not None and element[0] not in _ELEMENT_KINDS[name]:
            _fail_overload(node, name, types, member=True)
    if name in _SAME_ELEMENTS and len(types) == 2 and None not in types and not _assignable(types[0], types[1]):
        _fail_overload(node, name, types, member=False)


def _fail_overload(node: Node, name: str, types: list[StaticType], *, member: bool) -> None:
    texts = [_type_text(found) for found in types]
    applied = f"{texts[0]}.({', '.join(texts[1:])})" if member else f"({', '.join(texts)})"
    _fail(node, f"found no matching overload for '{name}' applied to '{applied}'")


def _literal_node(tree: Node) -> Node:
    """The list or map literal node ``tree`` passes through to, or the innermost single-child node."""
    node = tree
    while (
        node.data not in ("list_lit", "map_lit") and len(node.children) == 1 and isinstance(node.children[0], lark.Tree)
    ):
        node = node.children[0]
    return node


def _check_no_optional_elements(arguments: list[Node]) -> None:
    """``?x`` is an element of a list or map literal, never an argument."""
    for argument in arguments:
        if argument.data == "opt_elem":
            _fail(argument, "unsupported syntax '?'")


def _check_literal_arguments(node: Node, name: str, arguments: list[Node], *, member: bool) -> None:
    literals = [string_literal(argument) for argument in arguments]
    pattern = literals[0 if member else -1] if literals else None
    if name in _REGEX_FUNCTIONS and pattern is not None:
        try:
            compile_pattern(pattern)
        except CelEvaluationError as error:
            _fail(node, str(error))
    if name in ("duration", "timestamp") and len(literals) == 1 and literals[0] is not None:
        convert = celtypes.DurationType if name == "duration" else celtypes.TimestampType
        try:
            convert(literals[0])
        except Exception as error:  # cel-python raises ValueError or TypeError variants
            _fail(node, f"invalid {name} literal {literals[0]!r}: {error}")


def _check_homogeneous(node: Node) -> None:
    """cel-go's ``ValidateHomogeneousAggregateLiterals``: the elements (keys, values) of a literal have one exact
    type, ``dyn`` included (``[dyn(1), [2]]`` is refused as ``[1, [2]]`` is; every element ``dyn(...)`` mixes
    types)."""
    if not node.children:
        return
    elements = [child for child in node.children[0].children if isinstance(child, lark.Tree)]
    groups = [elements] if node.data == "list_lit" else [elements[0::2], elements[1::2]]
    for group in groups:
        found = (_DYN_CALL if _is_data(element) else _static_kind(element) for element in group)
        kinds = [kind for kind in found if kind not in ("dyn", "null")]
        other = next((kind for kind in kinds if kind != kinds[0]), None)
        if other is not None:
            _fail(node, f"expected type '{kinds[0].strip('()')}' but found '{other.strip('()')}'")


#: The variables that are ``dyn`` in the apiserver too (``request`` and ``namespaceObject`` are typed there).
_DYN_ROOTS = frozenset({"object", "oldObject", "params"})


def _is_data(tree: Node) -> bool:
    """True for a field selection or index on ``object``, ``oldObject`` or ``params``: a ``dyn`` value, which
    cel-go's homogeneous literal check does not let a literal element of a concrete type sit beside."""
    node = unwrap(tree)
    if node.data not in ("member_dot", "member_index"):
        return False
    while node.data in ("member_dot", "member_index"):
        node = unwrap(node.children[0])
    return identifier(node) in _DYN_ROOTS


#: The kind of an explicit ``dyn(...)`` and of data (``_is_data``): exactly ``dyn`` in cel-go's literal check, unlike
#: what this checker cannot type (``dyn``, which passes).
_DYN_CALL = "(dyn)"


def _static_kind(tree: Node) -> str:
    node = _literal_node(tree)  # not ``unwrap``: a one-element list literal is a list, not its element
    if node.data == "ident_arg" and str(node.children[0]) == "dyn":
        return _DYN_CALL
    if node.data == "literal":
        return _LITERAL_KINDS.get(getattr(node.children[0], "type", ""), "dyn")
    if node.data in ("list_lit", "map_lit"):
        return node.data.removesuffix("_lit")
    if node.data == "unary" and unwrap(node.children[1]).data == "literal":
        return _static_kind(node.children[1])
    return "dyn"


def _check_equality(node: Node) -> None:
    """``==``, ``!=`` and ``in`` are declared ``(A, A)`` and ``(A, list(A))``/``(A, map(A, B))``: operands whose
    types are fixed by literals must agree (``1 == 1.0`` is a compile error in cel-go; ``dyn(1) == 1.0`` is
    true at run time). Only ordering has cross-type numeric overloads (``CrossTypeNumericComparisons``)."""
    operator, right = node.children
    left = operator.children[0]
    left_type, right_type = _static_type(left), _static_type(right)
    if operator.data == "relation_in" and right_type is not None and right_type[0] in ("list", "map"):
        agree = _assignable(left_type, right_type[1])
    else:
        agree = _assignable(left_type, right_type) if operator.data != "relation_in" or right_type is None else False
    if not agree:
        name = _EQUALITY[operator.data]
        column = operator.meta.end_column - len(name.strip("_@"))
        raise CelCompileError(
            f"{operator.meta.line}:{column}: found no matching overload for '{name}' applied to "
            f"'({_type_text(left_type)}, {_type_text(right_type)})'"
        )


def _static_type(tree: Node) -> StaticType:
    """The CEL type of a literal (a negated number too) or a list or map literal of them, as ``("int",)``,
    ``("list", element)``, ``("map", key, value)``; ``None`` where it depends on data, or for ``null``."""
    node = tree
    while node.data not in ("literal", "list_lit", "map_lit") and len(node.children) == 1:
        if not isinstance(node.children[0], lark.Tree):
            return None
        node = node.children[0]  # primary, paren_expr: the type of what they hold
    if node.data == "unary" and node.children[0].data == "unary_neg":
        found = _static_type(node.children[1])
        return found if found in (("int",), ("double",)) else None
    if node.data == "literal":
        kind = _LITERAL_KINDS.get(getattr(node.children[0], "type", ""))
        return (kind,) if kind is not None and kind != "null" else None
    if node.data not in ("list_lit", "map_lit"):
        return None
    elements = [child for child in node.children[0].children if isinstance(child, lark.Tree)] if node.children else []
    if node.data == "list_lit":
        return ("list", _element_type(elements))
    return ("map", _element_type(elements[0::2]), _element_type(elements[1::2]))


def _element_type(elements: list[Node]) -> StaticType:
    """The type all ``elements`` have, or ``None`` (an empty literal, or one with data-dependent elements)."""
    types = [_static_type(element) for element in elements]
    return types[0] if types and None not in types and all(found == types[0] for found in types) else None


def _assignable(left: StaticType, right: StaticType) -> bool:
    """False only when both types are fixed and differ (``None`` is ``dyn``)."""
    if left is None or right is None:
        return True
    return left[0] == right[0] and all(_assignable(a, b) for a, b in zip(left[1:], right[1:], strict=True))


def _type_text(found: StaticType) -> str:
    """cel-go's text of a type: ``int``, ``list(int)``, ``map(string, double)``, ``dyn``."""
    if found is None:
        return "dyn"
    name, *parameters = found
    return f"{name}({', '.join(map(_type_text, parameters))})" if parameters else name


def _error(node: Node, message: str) -> CelCompileError:
    meta = node.meta
    return CelCompileError(f"{getattr(meta, 'line', 1)}:{getattr(meta, 'column', 1)}: {message}")


def _fail(node: Node, message: str) -> None:
    raise _error(node, message)
