"""cel-go's sets extension (``ext/sets.go``), namespaced under ``sets``::

    sets.contains(list, list) -> bool     every element of the second is in the first
    sets.equivalent(list, list) -> bool   each contains the other
    sets.intersects(list, list) -> bool   some element is in both

Membership is CEL equality, so numbers match across kinds (``sets.contains([1, 2.0, 3u], [1.0, 2u, 3])``).
"""

from __future__ import annotations

from typing import Any

from webhook.cel import semantics
from webhook.cel.libraries.registry import Namespace, Overload, namespaced

NAMESPACE = Namespace("sets")


def _has(items: list[Any], value: Any) -> bool:
    return any(semantics.cel_equals(item, value) for item in items)


def contains(_namespace: Namespace, items: list[Any], subset: list[Any]) -> bool:
    """True if every element of ``subset`` is in ``items``."""
    return all(_has(items, value) for value in subset)


def equivalent(namespace: Namespace, left: list[Any], right: list[Any]) -> bool:
    """True if both lists hold the same elements (ignoring order and duplicates)."""
    return contains(namespace, left, right) and contains(namespace, right, left)


def intersects(_namespace: Namespace, left: list[Any], right: list[Any]) -> bool:
    """True if some element is in both lists."""
    return any(_has(left, value) for value in right)


OVERLOADS: tuple[Overload, ...] = (
    namespaced("sets", "contains", contains, "list", "list"),
    namespaced("sets", "equivalent", equivalent, "list", "list"),
    namespaced("sets", "intersects", intersects, "list", "list"),
)
