"""Binding declared ``Overload``s into cel-python: one dispatching callable per function name and call form.

cel-python looks functions up by name only, so each name gets one ``Dispatcher`` that picks the first
overload whose parameter kinds match the arguments (``semantics.kind``) and converts the result to CEL values
(``values.normalise``). No matching overload raises ``TypeError``, which the evaluator reports as
``found no matching overload``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from webhook.cel.libraries.registry import Overload
from webhook.cel.semantics import kind
from webhook.cel.values import normalise


class Dispatcher:
    """Calls the first of ``overloads`` (same name and call form) whose parameter kinds fit the arguments."""

    __slots__ = ("name", "overloads")

    def __init__(self, name: str, overloads: tuple[Overload, ...]) -> None:
        self.name = name
        self.overloads = overloads

    def __call__(self, *arguments: Any) -> Any:
        kinds = [kind(argument) for argument in arguments]
        for overload in self.overloads:
            if overload.accepts(kinds):
                return normalise(overload.implementation(*arguments))
        raise TypeError(f"no matching overload for '{self.name}' applied to ({', '.join(kinds)})")


def dispatch_tables(overloads: Iterable[Overload]) -> tuple[dict[str, Dispatcher], dict[str, Dispatcher]]:
    """``(global functions, member functions)`` by name, each a ``Dispatcher`` over overloads in order."""
    grouped: tuple[dict[str, list[Overload]], dict[str, list[Overload]]] = ({}, {})
    for overload in overloads:
        grouped[overload.member].setdefault(overload.name, []).append(overload)
    global_table, member_table = (
        {name: Dispatcher(name, tuple(found)) for name, found in table.items()} for table in grouped
    )
    return global_table, member_table
