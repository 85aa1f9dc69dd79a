"""The cel-cpp activations evaluations run with: one ``cel.Activation`` per distinct set of values, kept by a
``Values`` and, per thread, by the identities of its values (the evaluations of one request share one conversion)."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

from webhook.cel.backend import VARIABLES, Values
from webhook.cel.libraries.registry import Namespace

#: Activations kept per thread (each holds its converted variables and temporaries in a cel-cpp arena).
_CACHED_ACTIVATIONS = 8
#: The activation's name of the param; absent for a policy without a paramKind (``activation.activation``).
PARAMS = "params"


class Activations(threading.local):
    """This thread's recent activations of ``environment`` (a cel-cpp environment declaring no variable), by the
    names and identities of their values except ``variables`` (so the tuples of one request that share params share
    one conversion of ``object``), each with the values kept alive."""

    def __init__(self, environment: Any) -> None:
        self._environment = environment
        self.entries: dict[tuple[tuple[str, ...], tuple[int, ...]], tuple[tuple[object, ...], Any]] = {}

    def activation(self, values: Mapping[str, object]) -> Any:
        """The ``cel.Activation`` of ``values`` (this backend's CEL values and namespace objects): kept by ``values``
        if it is a ``Values``, and shared while the same value objects come back (the evaluations of one request
        with the same params). Values without ``params`` (a policy with no paramKind) share the activation of the
        same values with any params, if one of the request's policies with a paramKind came first (the names an
        expression does not declare are never read). ``variables`` and the namespace objects are not part of it:
        the functions reading them read the activation the evaluation runs with (``functions.ACTIVATION``)."""
        if isinstance(values, Values) and values.prepared is not None:
            return values.prepared
        entries = self.entries
        key = _without(VARIABLES, tuple(values), tuple(map(id, values.values())))
        found = entries.get(key)
        if found is None:
            kept = {name: v for name, v in values.items() if name != VARIABLES}  # ``variables`` is not part of it
            data = {name: v for name, v in kept.items() if not isinstance(v, Namespace)}
            found = entries[key] = (tuple(kept.values()), self._environment.Activation(data))
            if PARAMS in values:
                entries.setdefault(_without(PARAMS, *key), found)
            while len(entries) > _CACHED_ACTIVATIONS:
                del entries[next(iter(entries))]
        if isinstance(values, Values):
            values.prepared = found[1]
        return found[1]


def _without(name: str, names: tuple[str, ...], ids: tuple[int, ...]) -> tuple[tuple[str, ...], tuple[int, ...]]:
    """``names`` and the ``ids`` of their values, without ``name`` if it is one of them."""
    if name not in names:
        return names, ids
    index = names.index(name)
    return names[:index] + names[index + 1 :], ids[:index] + ids[index + 1 :]
