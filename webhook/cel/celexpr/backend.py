"""The cel-expr-python implementation of ``backend.Backend``: cel-cpp compiles, type-checks and evaluates.

Compile: the shared front end (``frontend.check.front_end``: length and nesting limits, undeclared names,
arity, macro shapes, homogeneous literals, regex/duration/timestamp literals) and then cel-cpp's parser and
type checker, in one cel-cpp environment per set of declared variables (all ``dyn``; the library functions
from ``functions.extension``). cel-cpp's compile ``RuntimeError`` (``INVALID_ARGUMENT: ERROR: <input>:1:5:
found no matching overload ...``) becomes ``CelCompileError`` ``1:5: found no matching overload ...``.

Evaluate (``executable.CelExprExecutable``): one ``cel.Activation`` per distinct activation apart from ``variables``
(``activations.Activations``: kept by a ``Values`` activation, and cached per thread by the identity of its values, so
the evaluation tuples of one request that share params share one conversion of ``object``; CEL values are never
mutated). An expression that calls no Python function (``calls_python``) runs without a budget or context. The
per-request namespaces (``clock``, ``cluster``) and ``variables`` (a lazy mapping, read through the function that
``variables.<name>`` compiles to, ``composition.read_variables``) are read by their functions from the activation the
evaluation runs with (``functions.ACTIVATION``); a variable that calls no Python function and does not iterate, or that
one expression alone needs (``exclusive``), is bound in cel-cpp instead, in each expression that reads it
(``composition.bound_variables``). Errors come back as ERROR values or, for a few, as ``RuntimeError``; both become
``CelEvaluationError`` with cel-go's wording where one is known (``messages.evaluation_message``). Limits: cel-cpp's
fixed 10,000 comprehension iterations per evaluation (``Iteration budget exceeded``) and the library calls' cost
(``cost.library_call_cost`` against ``Limits.cost_limit``) both end in ``CostLimitExceeded`` with the cel-python
budget's message; cel-cpp's own steps are not counted. The request's deadline is checked as each evaluation starts and
ends and in every library call (``cost.Budget``): cel-cpp turns the ``DeadlineExceeded`` a library call raises into an
error value, and ``Budget.settle`` raises it again. The parser nests at most 32 levels (its fixed limit; cel-go's, and
ours, is 250): a deeper expression is compiled and evaluated by the fallback backend, cel-python (``fallback.py``).
Where cel-cpp's checker refuses what cel-go accepts (ordering between int, uint and double; ``string(cidr)``), the
operands are made ``dyn`` and compiled again (``rewrite.dyn_wraps``)."""

from __future__ import annotations

import contextlib
import typing
from collections.abc import Collection, Iterable, Mapping
from typing import Any, cast

from cel_expr_python import cel
from cel_expr_python.ext.ext_bindings import ExtBindings

from webhook.cel.backend import VARIABLES, Backend, Executable, Limits
from webhook.cel.celexpr.activations import Activations
from webhook.cel.celexpr.composition import (
    VARIABLE_READER,
    binding,
    bound_variables,
    optional_variables,
    read_variables,
)
from webhook.cel.celexpr.executable import CelExprExecutable
from webhook.cel.celexpr.fallback import Fallback
from webhook.cel.celexpr.functions import ACTIVATION, BUDGET, declarations, extension
from webhook.cel.celexpr.messages import CEL_CPP_ONLY, CHECKER_ONLY, PARSER_LIMIT, compile_message, type_text
from webhook.cel.celexpr.optionals import OPTIONAL_TYPE, optional_wraps, to_list
from webhook.cel.celexpr.rewrite import dyn_wraps, exists_one_renames, wrapped
from webhook.cel.celexpr.types import LibraryTypes, return_annotation
from webhook.cel.celexpr.values import to_expr, to_python
from webhook.cel.frontend.check import Signatures, front_end, uses_optionals
from webhook.cel.frontend.standard import STANDARD
from webhook.cel.frontend.tree import Node
from webhook.cel.frontend.variables import check_variable_selections
from webhook.cel.lexical import read_names
from webhook.cel.libraries import optional
from webhook.cel.libraries.optional import Optional
from webhook.cel.libraries.registry import Namespace, Overload
from webhook.errors import CelCompileError, CelEvaluationError

#: cel-cpp's optional types (syntax and library), for the expressions that use them: the optional syntax or library
#: (``uses_optionals``, ``_OPTIONAL_MEMBERS``), a library function returning an optional or a read of an optional
#: variable (``optionals.py``).
_OPTIONALS = cel.NewEnvConfigFromYaml("extensions:\n  - name: optional\n  - name: two-var-comprehensions\n")
#: cel-go's two-variable comprehensions (``ext.TwoVarComprehensions``), which every environment parses and checks
#: (a Kubernetes version without them refuses them first, ``webhook.cel.versions``).
_TWO_VARIABLES = cel.NewEnvConfigFromYaml("extensions:\n  - name: two-var-comprehensions\n")
#: Macros cel-cpp expands into ``cel.@mapInsert``, which its runtime does not implement: such an expression is
#: compiled and evaluated by the fallback backend (``fallback.FallbackExecutable``).
_FALLBACK_MACROS = frozenset({"transformMap", "transformMapEntry"})
#: Macros cel-cpp has only in its own lists extension, whose functions collide with the Python ones
#: (``libraries/lists.py``): such an expression is not given to cel-cpp at all, the fallback backend compiles it.
_UNDECLARED_MACROS = frozenset({"sortBy"})


class _NotForCelCpp(Exception):
    """The expression uses a macro cel-cpp cannot compile here (``_UNDECLARED_MACROS``)."""


#: The comprehension macros. A variable bound in cel-cpp (``composition``) is evaluated once per expression that reads
#: it instead of once per evaluation tuple, which costs less than the reader's calls into Python unless it iterates:
#: a variable whose expression uses one of these stays read from Python, unless only one expression needs it.
_COMPREHENSIONS = frozenset(
    {"all", "exists", "exists_one", "existsOne", "map", "filter", "transformList", "transformMap", "transformMapEntry"}
)
#: The member functions cel-cpp's optional library declares (on a ``dyn`` receiver, a variable holding an optional).
_OPTIONAL_MEMBERS = frozenset({"hasValue", "value", "or", "orValue"})

_SCALARS = (str, int, float, bool, bytes, type(None))


class CelExprBackend:
    """Compiles with the shared front end and cel-cpp, with ``overloads`` registered as cel-cpp functions."""

    def __init__(
        self,
        overloads: Iterable[Overload],
        namespaces: Iterable[Namespace],
        fallback: tuple[str, Backend] | None = None,
    ) -> None:
        declared = tuple(overloads)
        self.namespaces: dict[str, Namespace] = {namespace.name: namespace for namespace in namespaces}
        self.signatures = Signatures.of((*declared, *STANDARD, *optional.SYNTAX_OVERLOADS))
        self.types = LibraryTypes(declared)
        self._fallback = None if fallback is None else Fallback(*fallback, self.types)
        #: the library functions returning an ``Optional`` (``optionals.optional_wraps``)
        self._optional_functions = frozenset(
            overload.name for overload in declared if typing.get_origin(return_annotation(overload)) is Optional
        )
        self._extension = extension(declared, self.types, tuple(self.namespaces.values()))
        declared_names = (declaration.name for declaration in declarations(declared, self.types))
        self._python_functions = frozenset(name.rpartition(".")[2] for name in declared_names)
        self._environments: dict[tuple[frozenset[str], bool], Any] = {}
        reader = cel.Overload(VARIABLE_READER, cel.Type.DYN, [cel.Type.STRING], impl=self._read_variable)
        self._variables = cel.CelExtension("upgrade_gate_variables", [cel.FunctionDecl(VARIABLE_READER, [reader])])
        undeclared = self._environment(frozenset())
        undeclared.compile("true")  # cel-cpp builds lazily: surface declaration errors now
        self._activations = Activations(undeclared)

    def _environment(self, variables: frozenset[str], optionals: bool = False) -> Any:
        """The cel-cpp environment declaring ``variables``, with cel-cpp's optional library when ``optionals``."""
        environment = self._environments.get((variables, optionals))
        if environment is None:
            environment = self._environments[variables, optionals] = cel.NewEnv(
                self.types.pool,
                config=_OPTIONALS if optionals else _TWO_VARIABLES,
                variables=dict.fromkeys(sorted(variables - {VARIABLES}), cel.Type.DYN),
                extensions=[self._extension, self._variables, ExtBindings()],
            )
        return environment

    def compile(
        self,
        source: str,
        variables: Collection[str],
        limits: Limits,
        definitions: Mapping[str, Executable] | None = None,
        exclusive: Collection[str] = (),
    ) -> Executable:
        """See ``backend.Backend.compile``. ``variables.<name>`` compiles to a call of the activation's variable
        reader (``composition.read_variables``), so each variable is read, and evaluated, only when an expression
        needs it. The variables among ``definitions`` that use cel-cpp's optional types as the expression does or
        use none are also bound in cel-cpp (``CelExprExecutable``) where they are ``exclusive``
        (evaluated once either way), or call no Python function and do not iterate: one that calls Python or
        iterates and that other expressions need too is evaluated once and read (its arguments would cross into
        Python, or its iterations run, again in each of them). An expression nested deeper than cel-cpp's parser
        allows (32) is compiled by the fallback backend, if any (``fallback.FallbackExecutable``)."""
        try:
            compiled = self._compile(source, variables, limits, definitions, exclusive)
        except CelCompileError as error:
            if self._fallback is None or not PARSER_LIMIT.search(str(error)):
                raise
        except _NotForCelCpp:
            if self._fallback is None:
                raise CelCompileError("1:1: sortBy is evaluated by cel-python only") from None
        else:
            if self._fallback is None or not compiled.unsupported:
                return compiled
        return self._fallback.compile(source, variables, limits)

    def _compile(
        self,
        source: str,
        variables: Collection[str],
        limits: Limits,
        definitions: Mapping[str, Executable] | None = None,
        exclusive: Collection[str] = (),
    ) -> CelExprExecutable:
        checked = front_end(source, {*variables, *self.namespaces, "optional"}, self.signatures, limits)
        tree = checked.tree
        if calls_any(tree, _UNDECLARED_MACROS):
            raise _NotForCelCpp
        check_variable_selections(tree, definitions)
        reads = VARIABLES in variables
        optional_reads = optional_variables(source, definitions) if reads else frozenset()
        wraps = [*optional_wraps(tree, self._optional_functions), *exists_one_renames(tree)]
        optionals = uses_optionals(tree) or bool(wraps) or bool(optional_reads) or calls_any(tree, _OPTIONAL_MEMBERS)
        environment = self._environment(frozenset(variables), optionals)
        compiled = wrapped(source, wraps)

        def cel_cpp(text: str) -> Any:
            return environment.compile(read_variables(text, optional=optional_reads) if reads else text)

        try:
            expression = cel_cpp(compiled)
        except RuntimeError as error:
            message = str(error)
            if not any(pattern.search(message) for pattern in CHECKER_ONLY):
                raise CelCompileError(compile_message(message)) from None
            compiled = wrapped(source, [*wraps, *dyn_wraps(tree)])
            try:  # cel-go accepts it: retry with the operands cel-cpp refuses made dyn
                expression = cel_cpp(compiled)
            except RuntimeError:
                raise CelCompileError(compile_message(message)) from None
        optional_result = type_text(str(expression.return_type())).startswith(OPTIONAL_TYPE)
        executable = CelExprExecutable(
            self._activations,
            compiled,
            expression,
            checked,
            limits,
            calls_library=calls_any(tree, self._python_functions),
            reads_variables=reads and bool(read_names(compiled)),
            optionals=optionals,
            iterates=calls_any(tree, _COMPREHENSIONS),
            unsupported=calls_any(tree, _FALLBACK_MACROS),
            listed=cel_cpp(to_list(compiled)) if optional_result else None,
        )
        bindable = {
            name: definition
            for name, definition in (definitions or {}).items()
            if isinstance(definition, CelExprExecutable)
            and (optionals or not definition.optionals)
            and (name in exclusive or (not definition.calls_library and not definition.iterates))
        }
        sources = {name: found.source for name, found in bindable.items()}
        bound_source = bound_variables(compiled, sources, optional_reads) if reads else None
        if bound_source is not None:
            calls = any(found.calls_library and binding(name) in bound_source for name, found in bindable.items())
            evaluated = to_list(bound_source) if optional_result else bound_source
            with contextlib.suppress(RuntimeError):  # deeper than cel-cpp's parser takes: read them all from Python
                executable.bind(environment.compile(evaluated), bound_source, calls)
        return executable

    def type_check(self, source: str, variables: Collection[str], limits: Limits) -> str | None:
        """The result type cel-cpp's type checker gives ``source`` (``messages.type_text``), or the ``CelCompileError``
        it reports if cel-go reports it too (none for cel-cpp's own limits, ``messages.CEL_CPP_ONLY``: the type is then
        unknown, ``None``). The cel-python backend uses it as the type checker it lacks."""
        try:
            return self._compile(source, variables, limits).result_type
        except _NotForCelCpp:
            return None
        except CelCompileError as error:
            if not any(pattern.search(str(error)) for pattern in CEL_CPP_ONLY):
                raise
            return None

    def _read_variable(self, name: str) -> object:
        """The implementation of ``VARIABLE_READER``: the current evaluation's variable ``name`` as cel-cpp takes
        it, converted once per ``variables`` mapping and kept by it (``LazyVariables.converted``; scalars need
        nothing). An error value (an exception, ``error_value``) or an unknown name is raised, so cel-cpp makes it
        an error value."""
        budget = BUDGET.get()
        if budget is not None and budget.cancelled:  # abandoned, as in LibraryCall
            return None
        variables = cast(Mapping[str, object], ACTIVATION.get().get(VARIABLES))
        try:
            value = variables[name]  # a lazy Mapping (None where the activation has none: no such key either)
        except (KeyError, TypeError):
            raise CelEvaluationError(f"no such key: {name}") from None
        if isinstance(value, BaseException):
            raise value
        if isinstance(value, _SCALARS):
            return value
        converted: dict[str, object] | None = getattr(variables, "converted", None)
        if converted is None:  # a plain mapping: nowhere to keep it
            return to_expr(value, self.types)
        found = converted.get(name)
        if found is None:
            found = converted[name] = to_expr(value, self.types)
        return found

    def to_cel(self, value: object) -> object:
        """See ``values.to_expr``."""
        return to_expr(value, self.types)

    def from_json(self, value: object) -> object:
        """See ``backend.Backend.from_json``: cel-expr-python takes such values as they are (``to_expr`` would walk
        them only to find nothing to convert)."""
        return value

    def to_python(self, value: object) -> object:
        """See ``values.to_python``."""
        return to_python(value, self.types)

    def error_value(self, message: str) -> CelEvaluationError:
        """A ``CelEvaluationError``: the variable reader raises it, and cel-cpp makes it an error value."""
        return CelEvaluationError(message)


def calls_any(tree: Node, names: Collection[str]) -> bool:
    """Whether ``tree`` calls a function of one of ``names`` (bare names: ``list`` for ``cluster.list``), as a global
    or member function."""
    for node in tree.iter_subtrees():
        if node.data == "ident_arg" and str(node.children[0]) in names:
            return True
        if node.data == "member_dot_arg" and str(node.children[1]) in names:
            return True
    return False
