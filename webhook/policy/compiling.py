"""The ``Compiler`` of the loader: ``webhook.policy.cel`` environments on one backend, one per set of variable names."""

from __future__ import annotations

from webhook.policy.cel import Environment, Program
from webhook.policy.cel.environment import backend_named


class CelCompiler:
    """Compiles CEL text on the backend called ``engine`` (``ENGINES``) with the environment declaring exactly
    the given top-level variables.

    Environments are built on first use and kept; raises ``webhook.errors.CelCompileError``
    (``<line>:<column>: <message>``). ``ValueError`` for an unknown ``engine``.
    """

    def __init__(self, engine: str) -> None:
        self._backend = backend_named(engine)
        self._environments: dict[frozenset[str], Environment] = {}

    def __call__(self, text: str, variables: frozenset[str]) -> Program:
        """Compile ``text`` for ``variables``."""
        environment = self._environments.get(variables)
        if environment is None:
            environment = self._environments[variables] = Environment(variables, backend=self._backend)
        return environment.compile(text)
