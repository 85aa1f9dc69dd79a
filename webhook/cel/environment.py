"""Compile CEL expressions once against declared variables; evaluate them many times.

``Environment`` and ``Program`` are engine-neutral: they talk to a ``backend.Backend``, chosen by name with
``backend_named`` (``CEL_ENGINES``: ``cel-python``, pure Python, or ``cel-expr`` (the default), cel-cpp through
cel-expr-python); ``--cel-engine`` and the chart setting pass one of these names. Limits follow the apiserver:
a per-evaluation cost limit (``PerCallLimit`` 1,000,000), an expression length limit and a nesting limit
checked at load time.
"""

from __future__ import annotations

import functools
from collections.abc import Collection, Mapping
from typing import cast

from webhook.cel.backend import Backend, Executable, Limits
from webhook.cel.celpython.backend import CelPythonBackend, TypeCheck
from webhook.cel.cost import DEFAULT_COST_LIMIT
from webhook.cel.libraries import LIBRARY, NAMESPACES
from webhook.cel.versions import refusal
from webhook.settings import CEL_ENGINES, DEFAULT_CEL_ENGINE, DEFAULT_KUBERNETES_VERSION

#: cel-go's default limit on expression size, in code points.
DEFAULT_MAX_EXPRESSION_LENGTH = 100_000
#: Nesting of calls, indexing, parentheses, literals, conditionals and operators: cel-go's parser recursion
#: limit, which the apiserver keeps (``expression recursion limit exceeded: 250``). cel-cpp's parser stops at 32;
#: the cel-expr backend compiles deeper expressions with cel-python (``celexpr.fallback.FallbackExecutable``).
DEFAULT_MAX_NESTING = 250


@functools.cache
def backend_named(name: str) -> Backend:
    """The process-wide backend called ``name`` (one of ``CEL_ENGINES``) with every library registered, built on
    first use. Raises ``ValueError`` for another name. CEL values (``to_cel``) of one backend are not values of
    the other: convert a request with the backend that evaluates it (``Backend.to_cel``)."""
    if name == "cel-python":
        return CelPythonBackend(LIBRARY, NAMESPACES, _cel_cpp_type_check())
    if name == "cel-expr":
        from webhook.cel.celexpr.backend import CelExprBackend  # noqa: PLC0415 - loads cel-cpp (50 MB)

        return CelExprBackend(LIBRARY, NAMESPACES, fallback=("cel-python", backend_named("cel-python")))
    raise ValueError(f"unknown CEL engine {name!r}: expected one of {', '.join(CEL_ENGINES)}")


def _cel_cpp_type_check() -> TypeCheck | None:
    """cel-cpp's type checker for the cel-python backend, or None where cel-expr-python is not installed (it
    has wheels for glibc Linux, macOS and Windows only): cel-python alone has no type checker, so without it
    statically ill-typed expressions fail when they run instead of when the policy loads."""
    try:
        from webhook.cel.celexpr.backend import CelExprBackend  # noqa: PLC0415 - loads cel-cpp (50 MB)
    except ImportError:  # pragma: no cover - cel-expr-python is a dependency where it has wheels
        return None

    def type_check(source: str, variables: Collection[str], limits: Limits) -> str | None:
        return cast(CelExprBackend, backend_named("cel-expr")).type_check(source, variables, limits)

    return type_check


def default_backend() -> Backend:
    """The default backend (``webhook.settings.DEFAULT_CEL_ENGINE``)."""
    return backend_named(DEFAULT_CEL_ENGINE)


class Program:
    """A compiled expression. ``evaluate`` may be called concurrently from several threads.

    ``expression``: the source text; ``extensions``: the non-portable extension functions it calls;
    ``result_type``: the checked type of its result (``None`` where no type checker ran); ``fallback``: the
    engine that evaluates it when the environment's own cannot (cel-python for an expression nested deeper than
    cel-cpp's parser allows), else ``None``; ``estimated_cost``: its worst-case cost in the apiserver's units
    (``webhook.cel.estimate``: above ``PER_CALL_LIMIT`` an evaluation may be cancelled); ``optionals``: the
    engine compiled it with cel-cpp's optional types (cel-expr, for an expression that uses them).
    """

    __slots__ = ("_executable", "estimated_cost", "expression", "extensions", "fallback", "optionals", "result_type")

    def __init__(self, expression: str, executable: Executable) -> None:
        self.expression = expression
        self.extensions = executable.extensions
        self.result_type = executable.result_type
        self.estimated_cost = executable.estimated_cost
        self.fallback: str | None = getattr(executable, "fallback", None)
        self.optionals: bool = getattr(executable, "optionals", False)
        self._executable = executable

    def evaluate(self, activation: Mapping[str, object]) -> object:
        """The CEL value of the expression for ``activation`` (variable name -> CEL value from ``to_cel``).

        Raises ``webhook.errors.CelEvaluationError`` (a run-time CEL error, with cel-go's message where one
        is known) or its subclass ``CostLimitExceeded``; no other exception escapes.
        """
        return self._executable.evaluate(activation)

    def __repr__(self) -> str:
        return f"Program({self.expression!r})"


class Environment:
    """Which top-level variables exist (``object``, ``oldObject``, ``request``, ``params``...), and limits.

    The library namespaces (``sets``, ``strings``, ``lists``, and the extensions ``cluster``, ``clock``,
    ``olm``) are always declared; a variable of the same name in an activation takes precedence.
    ``kubernetes_version``: the apiserver whose environment for new expressions this is (``versions``): a library
    it brings later is refused at compile time, with its message.
    """

    def __init__(
        self,
        variables: Collection[str],
        *,
        cost_limit: int | None = DEFAULT_COST_LIMIT,
        max_expression_length: int = DEFAULT_MAX_EXPRESSION_LENGTH,
        max_nesting: int = DEFAULT_MAX_NESTING,
        backend: Backend | None = None,
        kubernetes_version: str = DEFAULT_KUBERNETES_VERSION,
    ) -> None:
        self.variables = frozenset(variables)
        self.kubernetes_version = kubernetes_version
        self.limits = Limits(cost_limit, max_expression_length, max_nesting)
        self._backend = backend or default_backend()

    def compile(
        self, expression: str, definitions: Mapping[str, Program] | None = None, exclusive: Collection[str] = ()
    ) -> Program:
        """A ``Program``; raises ``webhook.errors.CelCompileError`` (``<line>:<column>: <message>``) for a
        syntax error, an undeclared variable or function, a wrong number of arguments, an invalid regex,
        duration or timestamp literal, a heterogeneous list or map literal, or an expression over the size or
        nesting limits. ``definitions``: the programs of the composited variables ``variables.<name>`` may read,
        by name in declaration order, and ``exclusive``, those of them whose value no other expression of the policy
        needs on a request it admits (see ``Backend.compile``).
        """
        refused = refusal(expression, self.kubernetes_version)
        if refused is not None:
            raise refused
        executables = {name: program._executable for name, program in (definitions or {}).items()}
        return Program(
            expression, self._backend.compile(expression, self.variables, self.limits, executables, exclusive)
        )
