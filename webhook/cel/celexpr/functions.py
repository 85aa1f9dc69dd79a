"""Registering the declared ``Overload``s in cel-cpp: one ``cel.CelExtension``, typed overloads, Python calls.

Each registry overload becomes a cel-cpp overload of the same name and call form, typed by ``types.py``;
a namespaced one (``sets.contains``, the member call on a namespace object in cel-python) becomes the global
function of the dotted name (cel-cpp resolves dotted names natively) with the namespace object bound in.
Namespace objects of a subclass of ``Namespace`` carry per-request data (``clock``, ``cluster``: see
``registry.Namespace``): their functions call the namespace object of the evaluation's activation (``ACTIVATION``,
by name; the backend's own object of that name when the activation has none), so one cel-cpp activation serves
every evaluation of a request. ``dyn`` parameters are declared ``dyn``: through ``cel.CelExtension`` they match every
argument kind in cel-expr-python 0.1.3 (the ``dyn`` bug of ``cel-engines.md`` §2 is in the ``functions=`` path).

Overloads that cel-cpp's standard library already implements with the same signature (``_CEL_CPP_STANDARD``:
RE2 ``matches``) are served by cel-cpp: registering them again is an ``ALREADY_EXISTS`` error.

Every call charges ``cost.library_call_cost`` to the evaluation's budget (``BUDGET``), decodes library value
messages, and turns ``TypeError``/``AttributeError`` (the implementation does not apply) into
``found no matching overload for '<name>' applied to (<kinds>)`` and ``CelEvaluationError`` into its message;
cel-cpp makes the raised exception an error value (``UNKNOWN: <message>``) that ``||``/``&&`` can absorb.
"""

from __future__ import annotations

import contextvars
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from cel_expr_python import cel

from webhook.cel.backend import Kept
from webhook.cel.celexpr.types import NAMESPACE_PREFIX, LibraryTypes
from webhook.cel.celexpr.values import to_expr
from webhook.cel.cost import Budget, library_call_cost
from webhook.cel.libraries.registry import Namespace, Overload
from webhook.cel.semantics import kind
from webhook.errors import CelEvaluationError

#: The budget of the evaluation running in this thread (``None``: no cost accounting).
BUDGET: contextvars.ContextVar[Budget | None] = contextvars.ContextVar("cel_expr_budget", default=None)
#: The activation (name -> value) of the evaluation running in this thread: per-request namespace objects and
#: the composited ``variables`` are read from it.
ACTIVATION: contextvars.ContextVar[Mapping[str, object]] = contextvars.ContextVar(
    "cel_expr_activation", default=MappingProxyType({})
)

_CEL_CPP_STANDARD = frozenset(
    {
        ("matches", True, ("string", "string")),
        ("matches", False, ("string", "string")),
    }
)
#: cel-cpp's standard conversion functions (global, one argument).
_CEL_CPP_CONVERSIONS = frozenset(
    {"bool", "bytes", "double", "duration", "dyn", "int", "string", "timestamp", "type", "uint"}
)
_ID_UNSAFE = re.compile(r"[^A-Za-z0-9_]")
#: The parameter kinds whose arguments may be library value messages (besides the library types themselves).
_MESSAGE_KINDS = frozenset({"dyn"})
#: Converted objects of the cluster snapshot kept per library function (``LibraryCall._stored``).
SNAPSHOT_OBJECTS = 1024


class LibraryCall:
    """The Python implementation of one cel-cpp overload: the first of ``overloads`` (same name, call form and
    cel-cpp argument kinds) that accepts the arguments, called as ``implementation(*bound, *arguments)``; for a
    per-request namespace (``late``), ``bound`` is the activation's namespace object of that name, else
    ``late``'s own."""

    __slots__ = ("bound", "checked", "decodes", "late", "name", "overloads", "snapshots", "types")

    def __init__(
        self,
        name: str,
        overloads: tuple[Overload, ...],
        types: LibraryTypes,
        bound: tuple[object, ...],
        late: Namespace | None = None,
    ) -> None:
        self.name = name
        self.overloads = overloads
        self.types = types
        self.bound = bound
        self.late = late
        # cel-cpp matches every library message type where one is declared: check the kinds in Python then.
        self.checked = len(overloads) > 1 or any(types.is_library_kind(p) for o in overloads for p in o.params)
        # only a parameter of a message kind can receive a library value message (``LibraryTypes.decode``)
        self.decodes = any(p in _MESSAGE_KINDS or types.is_library_kind(p) for o in overloads for p in o.params)
        # conversions of the cluster snapshot's objects (``Overload.snapshot``)
        self.snapshots = Kept(lambda found: to_expr(found, types), SNAPSHOT_OBJECTS)

    def __call__(self, *arguments: Any) -> Any:
        budget = BUDGET.get()
        if budget is not None:
            if budget.cancelled:  # abandoned: cel-cpp runs on, but its result is never used (Budget.settle)
                return None
            budget.charge(library_call_cost(arguments))
        decoded = [self.types.decode(argument) for argument in arguments] if self.decodes else arguments
        bound = self.bound if self.late is None else (ACTIVATION.get().get(self.late.name, self.late),)
        overload: Overload | None = self.overloads[0]
        if self.checked:
            kinds = [kind(argument) for argument in (*bound, *decoded)]
            overload = next((found for found in self.overloads if found.accepts(kinds)), None)
        try:
            if overload is None:
                raise TypeError(self.name)
            result = overload.implementation(*bound, *decoded)
        except (TypeError, AttributeError):
            kinds = [kind(argument) for argument in decoded]
            raise CelEvaluationError(
                f"found no matching overload for '{self.name}' applied to ({', '.join(kinds)})"
            ) from None
        if overload.snapshot:
            return [self._stored(item) for item in result] if type(result) is list else self._stored(result)
        return result if type(result) is str or type(result) is bool else to_expr(result, self.types)

    def _stored(self, found: object) -> object:
        """``to_expr`` of an object of the cluster snapshot, done once per object (``Kept``)."""
        return self.snapshots(found) if type(found) is dict else to_expr(found, self.types)


@dataclass(frozen=True)
class Declaration:
    """One cel-cpp overload: its function name, call form, declared parameter kinds (``dyn`` where the registry
    overloads behind it differ) and those overloads."""

    name: str
    member: bool
    params: tuple[str, ...]
    overloads: tuple[Overload, ...]
    namespace: str | None

    def cel_types(self, types: LibraryTypes) -> tuple[list[Any], Any]:
        """The parameter types, and the result type: the overloads' own where they agree, ``dyn`` where not."""
        results = [types.result_type(overload) for overload in self.overloads]
        result = results[0] if all(found == results[0] for found in results) else cel.Type.DYN
        return [types.cel_type(kind) for kind in self.params], result


def _declared_params(overload: Overload) -> tuple[str, ...]:
    params = overload.params
    return params[1:] if params and params[0].startswith(NAMESPACE_PREFIX) else params


def declarations(overloads: Iterable[Overload], types: LibraryTypes) -> list[Declaration]:
    """The registry overloads grouped into cel-cpp overloads.

    cel-cpp dispatches by argument *kind*, and every library value is of kind message: two overloads that differ
    only in library types cannot both be registered (``ALREADY_EXISTS``, with or without an implementation). So
    they share one cel-cpp overload (``isGreaterThan`` of Semver and of Quantity), declared ``dyn`` where they
    differ and dispatched in Python (``LibraryCall``). Namespaced overloads become global functions of the
    dotted name. Exception: a ``dyn`` parameter on a cel-cpp conversion (``string``) collides with cel-cpp's own
    overloads (``overload signature collision``), as does any other type covering two messages, so a conversion
    is declared on the first library type only (``string(net.IP)``: ``string(net.CIDR)`` is a compile error,
    a listed known difference) and still dispatches every library type of the group at run time
    (``string(dyn(cidr(...)))``).
    """
    groups: dict[tuple[str, bool, tuple[str, ...]], list[Overload]] = {}
    namespaces: dict[str, str | None] = {}
    for overload in overloads:
        if (overload.name, overload.member, overload.params) in _CEL_CPP_STANDARD:
            continue
        params = _declared_params(overload)
        namespace = overload.params[0].removeprefix(NAMESPACE_PREFIX) if params != overload.params else None
        name = f"{namespace}.{overload.name}" if namespace else overload.name
        member = overload.member and namespace is None
        groups.setdefault((name, member, tuple(map(types.runtime_kind, params))), []).append(overload)
        namespaces[name] = namespace
    found = []
    for (name, member, _), group in groups.items():
        signatures = [_declared_params(overload) for overload in group]
        if name in _CEL_CPP_CONVERSIONS:  # a dyn parameter would collide with cel-cpp's own overloads
            params = signatures[0]
        else:
            params = tuple(kinds[0] if len(set(kinds)) == 1 else "dyn" for kinds in zip(*signatures, strict=True))
        found.append(Declaration(name, member, params, tuple(group), namespaces[name]))
    return found


def extension(overloads: Iterable[Overload], types: LibraryTypes, namespaces: Sequence[Namespace]) -> Any:
    """One ``cel.CelExtension`` implementing ``overloads``: static namespaces bound to ``namespaces``' objects,
    per-request ones (a ``Namespace`` subclass) read from the evaluation's activation (``LibraryCall``)."""
    by_name = {namespace.name: namespace for namespace in namespaces}
    functions: dict[str, list[Any]] = {}
    for declaration in declarations(overloads, types):
        params, result = declaration.cel_types(types)
        namespace = by_name[declaration.namespace] if declaration.namespace is not None else None
        if namespace is not None and type(namespace) is not Namespace:
            call = LibraryCall(declaration.name, declaration.overloads, types, (), late=namespace)
        else:
            call = LibraryCall(declaration.name, declaration.overloads, types, (namespace,) if namespace else ())
        options: dict[str, Any] = {"impl": call}
        form = "member" if declaration.member else "global"
        identifier = _ID_UNSAFE.sub("_", f"{declaration.name}_{form}_{'_'.join(declaration.params)}")
        functions.setdefault(declaration.name, []).append(
            cel.Overload(identifier, result, params, is_member=declaration.member, **options)
        )
    return cel.CelExtension("upgrade_gate", [cel.FunctionDecl(name, found) for name, found in functions.items()])
