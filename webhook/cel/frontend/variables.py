"""Load-time typing of field selections on composited variables, as the apiserver's checker types them.

The composited compiler (``k8s.io/apiserver/pkg/admission/plugin/cel/composition.go``) declares ``variables`` as
an object type whose field ``<name>`` has the type the checker gave the variable's expression (its
``OutputType``). So ``variables.<name>.<field>``, ``variables.<name>.?<field>`` and ``has(variables.<name>.<field>)``
are refused when the policy is created if that type supports no field selection (``type 'string' does not
support field selection``): only ``dyn`` and maps do (and optionals, through ``.?``); scalars, lists, ``null``,
types and the opaque library types do not. The backends type every read of a variable as ``dyn`` otherwise.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import cast

import lark

from webhook.cel.backend import Executable
from webhook.cel.frontend.tree import Node, call_arguments, identifier, unwrap
from webhook.errors import CelCompileError

_SELECTIONS = frozenset({"member_dot", "member_dot_opt"})
#: Type texts (``backend.Executable.result_type``) whose values a field selection may read.
_SELECTABLE_PREFIXES = ("dyn", "map(", "optional_type(")


def check_variable_selections(tree: Node, definitions: Mapping[str, Executable] | None) -> None:
    """Raise ``CelCompileError`` (``<line>:<column>: type '<type>' does not support field selection``) for the
    first field selection in ``tree`` on a composited variable of ``definitions`` (name -> its compiled
    expression) whose result type supports none; a variable of unknown type (``None``) is ``dyn``."""
    if not definitions:
        return
    nodes = list(tree.iter_subtrees())
    tested = {  # the argument of a has() -> where cel-go reports it: the macro's "("
        id(unwrap(call_arguments(node, 1)[0])): (_token(node, 0).line or 1, _token(node, 0).end_column or 1)
        for node in nodes
        if node.data == "ident_arg" and str(node.children[0]) == "has" and len(call_arguments(node, 1)) == 1
    }
    selections = [node for node in nodes if node.data in _SELECTIONS]
    for node in sorted(selections, key=lambda found: _place(_token(found, 1))):
        operand = node.children[0]
        if operand.data != "member_dot" or identifier(operand.children[0]) != "variables":
            continue
        definition = definitions.get(str(operand.children[1]))
        found = definition.result_type if definition is not None else None
        if found is not None and not found.startswith(_SELECTABLE_PREFIXES):
            line, column = _place(_token(node, 1))  # a selection is reported at its ".", before the field's name
            line, column = tested.get(id(node), (line, max(column - 1, 1)))
            raise CelCompileError(f"{line}:{column}: type '{found}' does not support field selection")


def _token(node: Node, index: int) -> lark.Token:
    """Child ``index`` of ``node``, a token (a name)."""
    return cast(lark.Token, node.children[index])


def _place(token: lark.Token) -> tuple[int, int]:
    """Where ``token`` is: line and column, from 1."""
    return token.line or 1, token.column or 1
