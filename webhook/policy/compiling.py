"""The default ``Compiler`` of the loader: ``webhook.policy.cel`` environments, one per set of variable names."""

from __future__ import annotations

from webhook.policy.cel import Environment, Program


class CelCompiler:
    """Compiles CEL text with the environment declaring exactly the given top-level variables.

    Environments are built on first use and kept; raises ``webhook.errors.CelCompileError``
    (``<line>:<column>: <message>``).
    """

    def __init__(self) -> None:
        self._environments: dict[frozenset[str], Environment] = {}

    def __call__(self, text: str, variables: frozenset[str]) -> Program:
        """Compile ``text`` for ``variables``."""
        environment = self._environments.get(variables)
        if environment is None:
            environment = self._environments[variables] = Environment(variables)
        return environment.compile(text)
