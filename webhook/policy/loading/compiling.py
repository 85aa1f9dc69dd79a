"""The ``Compiler`` of the loader: ``webhook.cel`` environments on one backend, one per set of variable names,
and the programs they compiled."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Mapping

from webhook.cel import Environment, Program, backend_named
from webhook.settings import DEFAULT_KUBERNETES_VERSION

#: Programs kept per compiler, the least recently used dropped first: many times a policy set's expressions, so
#: that loading a set again (a reload that changed one file) compiles only what changed.
PROGRAMS_KEPT = 4096


_Key = tuple[frozenset[str], str, tuple[tuple[str, Program], ...], frozenset[str]]


class CelCompiler:
    """Compiles CEL text on the backend called ``engine`` (``ENGINES``) with the environment declaring exactly
    the given top-level variables (and the programs of the composited variables), with the libraries the apiserver
    of Kubernetes ``version`` gives a new expression (``webhook.cel.versions``).

    Environments are built on first use and kept; so are the last ``PROGRAMS_KEPT`` programs compiled, which are
    immutable and evaluate concurrently, by text and variables. Raises ``webhook.errors.CelCompileError``
    (``<line>:<column>: <message>``). ``ValueError`` for an unknown ``engine``. Thread-safe.
    """

    def __init__(self, engine: str, version: str = DEFAULT_KUBERNETES_VERSION) -> None:
        self._backend = backend_named(engine)
        self._version = version
        self._environments: dict[frozenset[str], Environment] = {}
        self._programs: OrderedDict[_Key, Program] = OrderedDict()
        self._lock = threading.Lock()

    def __call__(
        self,
        text: str,
        variables: frozenset[str],
        definitions: Mapping[str, Program] | None = None,
        exclusive: frozenset[str] = frozenset(),
    ) -> Program:
        """Compile ``text`` for ``variables`` and the composited variables ``definitions``, ``exclusive`` among them
        (``Environment.compile``), or return the program compiled before for the same four."""
        key = (variables, text, tuple((definitions or {}).items()), exclusive)
        with self._lock:
            program = self._programs.get(key)
            if program is not None:
                self._programs.move_to_end(key)
                return program
            environment = self._environments.get(variables)
            if environment is None:
                environment = self._environments[variables] = Environment(
                    variables, backend=self._backend, kubernetes_version=self._version
                )
        program = environment.compile(text, definitions, exclusive)
        with self._lock:
            self._programs[key] = program
            if len(self._programs) > PROGRAMS_KEPT:
                self._programs.popitem(last=False)
        return program
