"""The cel-expr-python implementation of ``backend.Backend``: cel-cpp compiles, type-checks and evaluates.

Compile: the shared front end (``frontend.check.front_end``: length and nesting limits, undeclared names,
arity, macro shapes, homogeneous literals, regex/duration/timestamp literals) and then cel-cpp's parser and
type checker, in one cel-cpp environment per set of declared variables (all ``dyn``; the library functions
from ``functions.extension``). cel-cpp's compile ``RuntimeError`` (``INVALID_ARGUMENT: ERROR: <input>:1:5:
found no matching overload ...``) becomes ``CelCompileError`` ``1:5: found no matching overload ...``.

Evaluate: one ``cel.Activation`` per distinct activation apart from ``variables`` (kept by a ``Values`` activation,
and cached per thread by the identity of its values, so the evaluation tuples of one request that share params share
one conversion of ``object``; CEL values are never mutated). An expression that calls no Python function
(``calls_python``) runs without a budget or context. The per-request namespaces (``clock``, ``cluster``) and
``variables`` (a lazy mapping, read through the function that ``variables.<name>`` compiles to,
``composition.read_variables``) are read by their functions from the activation the evaluation runs with
(``functions.ACTIVATION``); a variable that calls no Python function and does not iterate, or that one expression
alone needs (``exclusive``), is bound in cel-cpp instead, in each expression that reads it
(``composition.bound_variables``). Errors come
back as ERROR values or, for a few, as ``RuntimeError``; both become ``CelEvaluationError`` with cel-go's wording
where one is known (``_MESSAGES``). Limits: cel-cpp's fixed 10,000 comprehension iterations per evaluation
(``Iteration budget exceeded``) and the library calls' cost (``cost.library_call_cost`` against
``Limits.cost_limit``) both end in ``CostLimitExceeded`` with the cel-python budget's message; cel-cpp's own steps
are not counted. The request's deadline is checked as each evaluation starts and ends and in every library call
(``cost.Budget``): cel-cpp turns the ``DeadlineExceeded`` a library call raises into an error value, and
``Budget.settle`` raises it again. The parser nests at most 32 levels (its fixed limit; cel-go's, and ours, is 250):
a deeper expression is compiled and evaluated by the fallback backend, cel-python (``FallbackExecutable``). Where
cel-cpp's checker refuses what cel-go accepts (ordering between int, uint and double; ``string(cidr)``), the
operands are made ``dyn`` and compiled again (``dyn_wraps``)."""

from __future__ import annotations

import contextlib
import datetime
import re
import threading
import typing
from collections.abc import Collection, Iterable, Iterator, Mapping
from typing import Any, cast

from cel_expr_python import cel
from cel_expr_python.ext.ext_bindings import ExtBindings
from google.protobuf import duration_pb2, timestamp_pb2
from lark import Token

from webhook.cel import values as shared_values
from webhook.cel.backend import VARIABLES, Backend, Executable, Limits, Values
from webhook.cel.celexpr.composition import (
    VARIABLE_READER,
    binding,
    bound_variables,
    optional_variables,
    read_variables,
)
from webhook.cel.celexpr.functions import ACTIVATION, BUDGET, declarations, extension
from webhook.cel.celexpr.optionals import OPTIONAL_TYPE, optional_wraps, to_list
from webhook.cel.celexpr.rewrite import Wrap, wrapped
from webhook.cel.celexpr.types import LibraryTypes, return_annotation
from webhook.cel.celexpr.values import decoded, from_expr, plain_json, to_expr
from webhook.cel.cost import COST_LIMIT_MESSAGE, Budget, check_deadline
from webhook.cel.frontend.check import FrontEnd, Signatures, front_end, uses_optionals
from webhook.cel.frontend.standard import STANDARD
from webhook.cel.frontend.tree import Node, call_arguments
from webhook.cel.frontend.variables import check_variable_selections
from webhook.cel.lexical import read_names
from webhook.cel.libraries import optional
from webhook.cel.libraries.optional import Optional
from webhook.cel.libraries.registry import Namespace, Overload
from webhook.errors import CelCompileError, CelEvaluationError, CostLimitExceeded

_STATUS = re.compile(r"^[A-Z_]+: ")
_COMPILE_ERROR = re.compile(r"ERROR: <input>:(-?\d+):(-?\d+): ([^\n]*)")
_ITERATION_BUDGET = "Iteration budget exceeded"
# cel-cpp's texts for errors cel-go words differently (cel-go's wording; the cel-python backend's too).
_MESSAGES: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r'^Key not found in map : "?(.*?)"?$', re.DOTALL), r"no such key: \1"),
    (re.compile(r"^Index error: index=(-?\d+) size=\d+$"), r"index out of bounds: \1"),
    (re.compile(r"^divide by zero$"), "division by zero"),
    (re.compile(r"^No matching overloads found : (.*)$", re.DOTALL), r"found no matching overload for \1"),
    (re.compile(r"^invalid regular expression: (.*)$", re.DOTALL), r"error parsing regexp: \1"),
)
#: cel-cpp compile errors that cel-go does not have: its parser's recursion limit (32), ordering between
#: int, uint and double operands (Kubernetes enables cel-go's CrossTypeNumericComparisons), and ``string(cidr)``
#: (cel-cpp cannot declare a second library type's conversion, ``functions.declarations``).
_CEL_CPP_ONLY = (
    re.compile(r"recursion (limit|depth)"),
    re.compile(r"no matching overload for 'string' applied to '\(net\.CIDR\)'"),
    re.compile(r"no matching overload for '_(<|<=|>|>=)_' applied to '\((int|uint|double), (int|uint|double)\)'"),
)
_COMPILE_MESSAGES = (
    (
        re.compile(r"^expression of type '(.*)' cannot be the operand of a select operation$"),
        r"type '\1' does not support field selection",
    ),
)
#: Activations kept per thread (each holds its converted variables and temporaries in a cel-cpp arena).
_CACHED_ACTIVATIONS = 8
#: The activation's name of the param; absent for a policy without a paramKind (``activation.activation``).
PARAMS = "params"
#: cel-cpp's optional types (syntax and library), for the expressions that use them: the optional syntax or library
#: (``uses_optionals``, ``_OPTIONAL_MEMBERS``), a library function returning an optional or a read of an optional
#: variable (``optionals.py``).
_OPTIONALS = cel.NewEnvConfigFromYaml("extensions:\n  - name: optional\n  - name: two-var-comprehensions\n")
#: cel-go's two-variable comprehensions (``ext.TwoVarComprehensions``), which every environment parses and checks
#: (a Kubernetes version without them refuses them first, ``webhook.cel.versions``).
_TWO_VARIABLES = cel.NewEnvConfigFromYaml("extensions:\n  - name: two-var-comprehensions\n")
#: Macros cel-cpp expands into ``cel.@mapInsert``, which its runtime does not implement: such an expression is
#: compiled and evaluated by the fallback backend (``FallbackExecutable``).
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


def evaluation_message(text: str) -> str:
    """cel-cpp's error text without its status code, in cel-go's wording where ``_MESSAGES`` knows one."""
    message = _STATUS.sub("", text.strip(), count=1).removesuffix(" [UNKNOWN]").strip()
    for pattern, replacement in _MESSAGES:
        if pattern.match(message):
            return pattern.sub(replacement, message)
    return message


def compile_message(text: str) -> str:
    """``<line>:<column>: <message>`` of cel-cpp's first compile error (``1:1:`` when it has no position), in
    cel-go's wording where ``_COMPILE_MESSAGES`` knows one."""
    found = _COMPILE_ERROR.search(text)
    if found is None:
        return f"1:1: {_STATUS.sub('', text.strip(), count=1)}"
    line, column, message = found.groups()
    if int(line) < 1:
        line, column = "1", "1"
    message = message.strip()
    for pattern, replacement in _COMPILE_MESSAGES:
        message = pattern.sub(replacement, message)
    return f"{line}:{column}: {message}"


class CelExprExecutable:
    """A checked cel-cpp expression; evaluations share nothing mutable across threads. ``calls_python``: it calls
    a function implemented in Python (a library function, ``calls_library``, or the reader of ``variables``), so
    an evaluation carries a cost budget and its activation for them (``BUDGET``, ``ACTIVATION``); an expression
    that calls none runs in cel-cpp alone, with the request's deadline checked as it starts and ends.

    ``source``: the text compiled; ``optionals``: it is compiled with cel-cpp's optional types (an expression
    without them can be bound in one with them); ``optional_result``: its result is an optional, read back through
    its ``optionals.to_list`` form; ``iterates``: it uses a comprehension macro. ``bind`` gives it the same expression
    with the variables it reads bound in cel-cpp (``composition.bound_variables``), which is evaluated first; an
    evaluation of that form that fails is done again as written, for the apiserver's text of a failing variable (or
    its own budget per variable, past the cost limit); where the form as written then ends without an error, the
    first error stands (a value read back through Python lost what it held: a uint, a type)."""

    __slots__ = (
        "_backend",
        "_bound",
        "_bound_calls_python",
        "_cost_limit",
        "_expression",
        "calls_library",
        "calls_python",
        "estimated_cost",
        "extensions",
        "iterates",
        "optional_result",
        "optionals",
        "result_type",
        "source",
        "unsupported",
    )

    def __init__(
        self,
        backend: CelExprBackend,
        source: str,
        expression: Any,
        checked: FrontEnd,
        limits: Limits,
        *,
        calls_library: bool,
        reads_variables: bool,
        optionals: bool,
        iterates: bool,
        listed: Any = None,
    ) -> None:
        self._backend = backend
        self.source = source
        self._expression = expression
        self._cost_limit = limits.cost_limit
        self.calls_library = calls_library
        self.calls_python = calls_library or reads_variables
        self.optionals = optionals
        self.iterates = iterates
        self.extensions = checked.extensions
        #: it uses a macro cel-cpp's runtime lacks (``_FALLBACK_MACROS``)
        self.unsupported = calls_any(checked.tree, _FALLBACK_MACROS)
        self.estimated_cost = checked.estimated_cost
        self.result_type: str | None = type_text(str(expression.return_type()))
        #: the result is an optional: ``_expression`` is then its ``optionals.to_list`` form (``listed``)
        self.optional_result = listed is not None
        if listed is not None:
            self._expression = listed
        self._bound: Any = None
        self._bound_calls_python = False

    def bind(self, expression: Any, source: str, binds_library_calls: bool) -> None:
        """Evaluate ``expression``, compiled from ``source`` (see the class), first; ``binds_library_calls``: a
        variable bound in it calls a library function, so it runs with a cost budget and its activation too."""
        self._bound = expression
        self._bound_calls_python = self.calls_library or binds_library_calls or VARIABLE_READER in source

    def evaluate(self, activation: Mapping[str, object]) -> object:
        """See ``backend.Executable.evaluate``."""
        bound = self._backend.activation(activation)
        check_deadline()
        if self._bound is not None:
            try:
                return self._result(self._run(self._bound, self._bound_calls_python, bound, activation))
            except CostLimitExceeded:
                pass  # again as written, where each variable read spends a budget of its own, as in the apiserver
            except CelEvaluationError as error:
                # again as written, for the apiserver's text of a failing variable; where that form ends without
                # an error, a variable read back through Python lost its value (a uint, a type): the error stands
                self._result(self._run(self._expression, self.calls_python, bound, activation))
                raise error from None
        return self._result(self._run(self._expression, self.calls_python, bound, activation))

    def _run(self, expression: Any, calls_python: bool, bound: Any, activation: Mapping[str, object]) -> Any:
        if not calls_python:
            result = self._eval(expression, bound)
            check_deadline()
            return result
        budget = Budget(self._cost_limit)
        token = BUDGET.set(budget)
        reading = ACTIVATION.set(activation)
        try:
            return self._eval(expression, bound)
        finally:
            ACTIVATION.reset(reading)
            BUDGET.reset(token)
            budget.settle()

    def _result(self, result: Any) -> object:
        value = result.plain_value()
        if type(value) is str and result.type() == cel.Type.ERROR:  # an error's plain value is its text
            raise CelEvaluationError(evaluation_message(value))
        if self.optional_result:  # the list of zero or one element of ``optionals.to_list``
            return Optional.of(from_expr(value[0])) if value else Optional.none()
        return from_expr(value)

    @staticmethod
    def _eval(expression: Any, bound: Any) -> Any:
        try:
            return expression.eval(bound)
        except RuntimeError as error:  # duplicate map keys, the iteration cap, unimplemented types
            if _ITERATION_BUDGET in str(error):
                raise CostLimitExceeded(COST_LIMIT_MESSAGE) from None
            raise CelEvaluationError(evaluation_message(str(error))) from None


class FallbackExecutable:
    """An expression cel-cpp cannot parse, compiled by the fallback backend (cel-python): cel-cpp's parser nests
    at most 32 levels (``Exceeded max recursion depth of 32``) where cel-go's, and the apiserver's, allows 250.
    Each evaluation converts the activation to the fallback's values and the result back; ``fallback`` names
    the engine, for ``policy lint``."""

    __slots__ = ("_backend", "_executable", "estimated_cost", "extensions", "fallback", "result_type")

    def __init__(self, backend: CelExprBackend, executable: Executable, fallback: str) -> None:
        self._backend = backend
        self._executable = executable
        self.extensions = executable.extensions
        self.estimated_cost = executable.estimated_cost
        self.result_type = executable.result_type
        self.fallback = fallback

    def evaluate(self, activation: Mapping[str, object]) -> object:
        """See ``backend.Executable.evaluate``."""
        backend = self._backend
        converted = {name: backend.fallback_value(value) for name, value in activation.items()}
        return to_expr(_plain(self._executable.evaluate(converted)), backend.types)


class _FallbackVariables(Mapping[str, object]):
    """The composited ``variables`` of a cel-expr activation, read lazily as fallback values."""

    def __init__(self, backend: CelExprBackend, variables: Mapping[str, object]) -> None:
        self._backend, self._variables = backend, variables

    def __getitem__(self, name: str) -> object:
        value = self._variables[name]
        return self._backend.fallback_value(value)

    def __iter__(self) -> Iterator[str]:
        return iter(self._variables)

    def __len__(self) -> int:
        return len(self._variables)


def _json(value: object, types: LibraryTypes) -> object:
    """``to_python`` in one walk: plain JSON values (``from_expr`` gives builtin types) are rebuilt as they are,
    anything else (bytes, timestamps, library values...) rendered by ``values.to_python``."""
    kind = type(value)
    if kind is str or kind is int or kind is bool or kind is float or value is None:
        return value
    if kind is list:
        return [_json(item, types) for item in cast(list[object], value)]
    if kind is dict:
        return {_json(key, types): _json(item, types) for key, item in cast(dict[object, object], value).items()}
    return shared_values.to_python(decoded(value, types))


def _plain(value: object) -> object:
    """A cel-python result as plain Python (``celtypes`` subclasses as their base types), library values kept."""
    return shared_values.untyped(value, lambda leaf: bytes(leaf) if isinstance(leaf, bytes) else leaf)


def _from_messages(value: object, types: LibraryTypes) -> object:
    """A cel-expr value as plain Python: library messages as library values, Timestamp and Duration messages
    as ``datetime``/``timedelta``."""
    if isinstance(value, list):
        return [_from_messages(item, types) for item in value]
    if isinstance(value, dict):
        return {_from_messages(key, types): _from_messages(item, types) for key, item in value.items()}
    if isinstance(value, timestamp_pb2.Timestamp):
        return value.ToDatetime(tzinfo=datetime.UTC)
    if isinstance(value, duration_pb2.Duration):
        return value.ToTimedelta()
    return types.decode(value)


_SCALARS = (str, int, float, bool, bytes, type(None))


class _Activations(threading.local):
    """This thread's recent activations, by the names and identities of their values except ``variables`` (so the
    tuples of one request that share params share one conversion of ``object``), each with the values kept alive."""

    def __init__(self) -> None:
        self.entries: dict[tuple[tuple[str, ...], tuple[int, ...]], tuple[tuple[object, ...], Any]] = {}


class CelExprBackend:
    """Compiles with the shared front end and cel-cpp, with ``overloads`` registered as cel-cpp functions."""

    def __init__(
        self,
        overloads: Iterable[Overload],
        namespaces: Iterable[Namespace],
        fallback: tuple[str, Backend] | None = None,
    ) -> None:
        self._fallback = fallback
        declared = tuple(overloads)
        self.namespaces: dict[str, Namespace] = {namespace.name: namespace for namespace in namespaces}
        self.signatures = Signatures.of((*declared, *STANDARD, *optional.SYNTAX_OVERLOADS))
        self.types = LibraryTypes(declared)
        #: the library functions returning an ``Optional`` (``optionals.optional_wraps``)
        self._optional_functions = frozenset(
            overload.name for overload in declared if typing.get_origin(return_annotation(overload)) is Optional
        )
        self._extension = extension(declared, self.types, tuple(self.namespaces.values()))
        declared_names = (declaration.name for declaration in declarations(declared, self.types))
        self._python_functions = frozenset(name.rpartition(".")[2] for name in declared_names)
        self._environments: dict[tuple[frozenset[str], bool], Any] = {}
        self._activations = _Activations()
        reader = cel.Overload(VARIABLE_READER, cel.Type.DYN, [cel.Type.STRING], impl=self._read_variable)
        self._variables = cel.CelExtension("upgrade_gate_variables", [cel.FunctionDecl(VARIABLE_READER, [reader])])
        self._environment(frozenset()).compile("true")  # cel-cpp builds lazily: surface declaration errors now

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
        allows (32) is compiled by the fallback backend, if any (``FallbackExecutable``)."""
        try:
            compiled = self._compile(source, variables, limits, definitions, exclusive)
        except CelCompileError as error:
            if self._fallback is None or not _CEL_CPP_ONLY[0].search(str(error)):
                raise
        except _NotForCelCpp:
            if self._fallback is None:
                raise CelCompileError("1:1: sortBy is evaluated by cel-python only") from None
        else:
            if self._fallback is None or not compiled.unsupported:
                return compiled
        name, fallback = self._fallback
        return FallbackExecutable(self, fallback.compile(source, variables, limits), name)

    def fallback_value(self, value: object) -> object:
        """A value of a cel-expr activation as the fallback backend's value (namespace objects unchanged)."""
        if isinstance(value, Namespace):
            return value
        if isinstance(value, BaseException) and self._fallback is not None:  # a variable's error
            return self._fallback[1].error_value(str(value))
        if isinstance(value, Mapping) and not isinstance(value, dict):  # the lazy composited variables
            return _FallbackVariables(self, value)
        return shared_values.normalise(_from_messages(value, self.types))

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
            if not any(pattern.search(message) for pattern in _CEL_CPP_ONLY[1:]):
                raise CelCompileError(compile_message(message)) from None
            compiled = wrapped(source, [*wraps, *dyn_wraps(tree)])
            try:  # cel-go accepts it: retry with the operands cel-cpp refuses made dyn
                expression = cel_cpp(compiled)
            except RuntimeError:
                raise CelCompileError(compile_message(message)) from None
        optional_result = type_text(str(expression.return_type())).startswith(OPTIONAL_TYPE)
        executable = CelExprExecutable(
            self,
            compiled,
            expression,
            checked,
            limits,
            calls_library=calls_any(tree, self._python_functions),
            reads_variables=reads and bool(read_names(compiled)),
            optionals=optionals,
            iterates=calls_any(tree, _COMPREHENSIONS),
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
        """The result type cel-cpp's type checker gives ``source`` (``type_text``), or the ``CelCompileError``
        it reports if cel-go reports it too (none for cel-cpp's own parser limits, ``_CEL_CPP_ONLY``: the type is
        then unknown, ``None``). The cel-python backend uses it as the type checker it lacks."""
        try:
            return self._compile(source, variables, limits).result_type
        except _NotForCelCpp:
            return None
        except CelCompileError as error:
            if not any(pattern.search(str(error)) for pattern in _CEL_CPP_ONLY):
                raise
            return None

    def activation(self, values: Mapping[str, object]) -> Any:
        """The ``cel.Activation`` of ``values`` (this backend's CEL values and namespace objects): kept by ``values``
        if it is a ``Values``, and shared while the same value objects come back (the evaluations of one request
        with the same params). Values without ``params`` (a policy with no paramKind) share the activation of the
        same values with any params, if one of the request's policies with a paramKind came first (the names an
        expression does not declare are never read). ``variables`` and the namespace objects are not part of it:
        the functions reading them read the activation the evaluation runs with (``ACTIVATION``)."""
        if isinstance(values, Values) and values.prepared is not None:
            return values.prepared
        entries = self._activations.entries
        key = _without(VARIABLES, tuple(values), tuple(map(id, values.values())))
        found = entries.get(key)
        if found is None:
            kept = {name: v for name, v in values.items() if name != VARIABLES}  # ``variables`` is not part of it
            data = {name: v for name, v in kept.items() if not isinstance(v, Namespace)}
            found = entries[key] = (tuple(kept.values()), self._environment(frozenset()).Activation(data))
            if PARAMS in values:
                entries.setdefault(_without(PARAMS, *key), found)
            while len(entries) > _CACHED_ACTIVATIONS:
                del entries[next(iter(entries))]
        if isinstance(values, Values):
            values.prepared = found[1]
        return found[1]

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
        """See ``webhook.cel.values.to_python``: the same plain, JSON-able rendering, library values decoded;
        plain JSON (``values.plain_json``: an evaluation's result, which no one else holds) is not copied."""
        if value is True or value is False or value is None:  # most results: nothing to walk
            return value
        if plain_json(value):
            return value
        return _json(value, self.types)

    def error_value(self, message: str) -> CelEvaluationError:
        """A ``CelEvaluationError``: the variable reader raises it, and cel-cpp makes it an error value."""
        return CelEvaluationError(message)


def _without(name: str, names: tuple[str, ...], ids: tuple[int, ...]) -> tuple[tuple[str, ...], tuple[int, ...]]:
    """``names`` and the ``ids`` of their values, without ``name`` if it is one of them."""
    if name not in names:
        return names, ids
    index = names.index(name)
    return names[:index] + names[index + 1 :], ids[:index] + ids[index + 1 :]


_ORDERING = frozenset({"relation_lt", "relation_le", "relation_gt", "relation_ge"})
_CEL_CPP_TYPE_NAMES = {"NULL": "null_type", "NULL_TYPE": "null_type"}


def type_text(name: str) -> str:
    """cel-go's text of a cel-cpp type name: ``BOOL`` -> ``bool``, ``LIST<DYN>`` -> ``list(dyn)``, ``NULL`` ->
    ``null_type``; message names as they are."""
    parts = re.split(r"([<>,]\s*)", name)
    words = [_CEL_CPP_TYPE_NAMES.get(part, part.lower() if part.isupper() else part) for part in parts]
    return "".join(words).replace("<", "(").replace(">", ")")


def dyn_wraps(tree: Node) -> list[Wrap]:
    """``dyn()`` around the right operand of every ``<``, ``<=``, ``>``, ``>=`` and the argument of every one-argument
    ``string()`` (``rewrite.wrapped``): what cel-go type-checks (cross-type numeric ordering, ``string(cidr)``) and
    cel-cpp's checker refuses (``_CEL_CPP_ONLY``); cel-cpp's runtime then evaluates them as cel-go does."""
    spans: list[Any] = []
    for node in tree.iter_subtrees():
        if node.data == "relation" and len(node.children) == 2 and node.children[0].data in _ORDERING:
            spans.append(node.children[1].meta)
        elif node.data == "ident_arg" and str(node.children[0]) == "string" and len(node.children) == 2:
            arguments = node.children[1]
            if len(arguments.children) == 1:
                spans.append(arguments.meta)
    # (a literal keyword has no position: nothing to wrap there)
    return [Wrap.around(span.start_pos, span.end_pos, "dyn(", ")") for span in spans if span.start_pos is not None]


def exists_one_renames(tree: Node) -> list[Wrap]:
    """``exists_one`` with two variables renamed ``existsOne``: cel-go takes both names for it, cel-cpp the latter
    only."""
    tokens = [
        node.children[1]
        for node in tree.iter_subtrees()
        if node.data == "member_dot_arg" and str(node.children[1]) == "exists_one" and len(call_arguments(node, 2)) == 3
    ]
    return [
        Wrap(token.start_pos, token.end_pos, token.end_pos, token.end_pos, "existsOne", "")
        for token in tokens
        if isinstance(token, Token) and token.start_pos is not None and token.end_pos is not None
    ]


def calls_any(tree: Node, names: Collection[str]) -> bool:
    """Whether ``tree`` calls a function of one of ``names`` (bare names: ``list`` for ``cluster.list``), as a global
    or member function."""
    for node in tree.iter_subtrees():
        if node.data == "ident_arg" and str(node.children[0]) in names:
            return True
        if node.data == "member_dot_arg" and str(node.children[1]) in names:
            return True
    return False
