"""The CEL runtime of the admission policies, as the kube-apiserver's: its environment per Kubernetes version, its
libraries and cost estimator, on two backends. May import ``webhook.olm``, ``webhook.ocm`` and the pure core.

Public API::

    Environment(variables, *, cost_limit=1_000_000, max_expression_length=100_000, max_nesting=250)
        .compile(expression) -> Program                  # CelCompileError
    Program.evaluate(activation) -> CEL value            # CelEvaluationError, CostLimitExceeded
    Program.expression, Program.extensions
    to_python(cel_value) -> JSON-able Python
    evaluate(expression, variables=None) -> Python value # one-shot: compile, evaluate, convert
    EXTENSION_FUNCTIONS                                  # names that are not portable to the apiserver
    extension_bindings(store, now) -> {"cluster": ..., "clock": ...}   # merge into each activation
    lookups(expression) -> Lookups(kinds, computed)      # the kinds its cluster.get/list calls name
    backend_named(engine) -> Backend                     # an engine's to_cel / to_python (CEL_ENGINES)
    with deadline(seconds): ...                          # bounds the evaluations in the block
    Values(activation)                                   # an activation that keeps its backend's prepared form
    Kept(convert, limit)                                 # conversions of never-changed objects, by identity
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping

from webhook.cel.backend import Backend, Kept, Values
from webhook.cel.cost import deadline
from webhook.cel.environment import Environment, Program, backend_named, default_backend
from webhook.cel.estimate import PER_CALL_LIMIT
from webhook.cel.lexical import STRING_LITERAL, VARIABLE_REFERENCE, blank_strings, read_names
from webhook.cel.libraries import EXTENSION_FUNCTIONS
from webhook.cel.libraries.extensions import extension_bindings
from webhook.cel.reads import Lookups, lookups
from webhook.cel.versions import since, version_key
from webhook.objects import ObjectStore
from webhook.settings import DEFAULT_CEL_ENGINE, DEFAULT_KUBERNETES_VERSION

__all__ = [
    "EXTENSION_FUNCTIONS",
    "PER_CALL_LIMIT",
    "STRING_LITERAL",
    "VARIABLE_REFERENCE",
    "Backend",
    "Environment",
    "Kept",
    "Lookups",
    "Program",
    "Values",
    "backend_named",
    "blank_strings",
    "deadline",
    "evaluate",
    "extension_bindings",
    "lookups",
    "read_names",
    "since",
    "to_python",
    "version_key",
]


def to_python(value: object) -> object:
    """A CEL value as plain JSON-able Python (timestamps RFC 3339, durations ``"3600s"``, library values as
    their canonical strings)."""
    return default_backend().to_python(value)


def evaluate(
    expression: str,
    variables: Mapping[str, object] | None = None,
    *,
    now: datetime.datetime | None = None,
    store: ObjectStore | None = None,
    engine: str = DEFAULT_CEL_ENGINE,
    kubernetes_version: str = DEFAULT_KUBERNETES_VERSION,
) -> object:
    """Compile ``expression`` with ``variables``' names declared, evaluate it on their values and return
    plain Python. Raises a ``webhook.errors.CelError`` (compile or evaluation) and nothing else.

    ``clock.now()`` returns ``now`` (default: the current time, UTC); ``cluster.get/list`` read ``store``
    (default: none bound, so they fail with "not available"). ``engine``: the backend (``CEL_ENGINES``);
    ``ValueError`` for another name. ``kubernetes_version``: the apiserver whose CEL libraries it may use
    (``versions``).

    >>> evaluate("object.spec.replicas > 2", {"object": {"spec": {"replicas": 3}}})
    True
    """
    values = dict(variables or {})
    backend = backend_named(engine)
    program = Environment(values, backend=backend, kubernetes_version=kubernetes_version).compile(expression)
    activation = {name: backend.to_cel(value) for name, value in values.items()}
    bindings = extension_bindings(store, now or datetime.datetime.now(datetime.UTC))
    return backend.to_python(program.evaluate({**bindings, **activation}))
