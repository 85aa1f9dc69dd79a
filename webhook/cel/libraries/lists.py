"""List functions: Kubernetes' list library (``pkg/cel/library/lists.go``) and cel-go's ``ext/lists.go`` (v3).

Kubernetes (member functions on ``list``)::

    isSorted() -> bool    sum() -> T (int, uint, double, duration; [].sum() == 0)
    min() -> T            max() -> T          (error ``min called on empty list`` / ``max ...``)
    indexOf(T) -> int     lastIndexOf(T) -> int   (-1 when absent; CEL equality)

cel-go extension (``lists.range`` is namespaced)::

    slice(int, int) -> list    flatten([int]) -> list    distinct() -> list    sort() -> list
    reverse() -> list          lists.range(int) -> list<int>

Ordering uses CEL ordering (``semantics.cel_compare``): numbers across kinds, strings, bytes, bools,
timestamps, durations; anything else is no such overload.
"""

from __future__ import annotations

import functools
import itertools
import operator
from typing import Any

from webhook.cel import semantics
from webhook.cel.libraries.registry import Namespace, Overload, member, namespaced
from webhook.errors import CelEvaluationError

NAMESPACE = Namespace("lists")
_SUMMABLE = frozenset({"int", "uint", "double", "duration"})


def _order(left: Any, right: Any) -> int:
    order = semantics.cel_compare(left, right)
    return 0 if order is None else order


def is_sorted(items: list[Any]) -> bool:
    """True if every element is ≤ its successor."""
    return all(_order(a, b) <= 0 for a, b in itertools.pairwise(items))


def sum_of(items: list[Any]) -> Any:
    """The sum of numbers or durations (overflow is an error); 0 for an empty list."""
    if not items:
        return 0
    if not all(semantics.kind(item) in _SUMMABLE for item in items):
        raise TypeError("sum")
    return functools.reduce(operator.add, items)


def _extreme(items: list[Any], name: str, sign: int) -> Any:
    if not items:
        raise CelEvaluationError(f"{name} called on empty list")
    best = items[0]
    for item in items[1:]:
        if _order(item, best) * sign > 0:
            best = item
    return best


def min_of(items: list[Any]) -> Any:
    """The least element; error ``min called on empty list``."""
    return _extreme(items, "min", -1)


def max_of(items: list[Any]) -> Any:
    """The greatest element; error ``max called on empty list``."""
    return _extreme(items, "max", 1)


def index_of(items: list[Any], value: Any) -> int:
    """Index of the first element equal to ``value``, or -1."""
    return next((i for i, item in enumerate(items) if semantics.cel_equals(item, value)), -1)


def last_index_of(items: list[Any], value: Any) -> int:
    """Index of the last element equal to ``value``, or -1."""
    return next((i for i in range(len(items) - 1, -1, -1) if semantics.cel_equals(items[i], value)), -1)


def slice_of(items: list[Any], start: int, end: int) -> list[Any]:
    """Elements ``[start, end)``; cel-go's errors for negative, reversed or too large indices."""
    if start < 0 or end < 0:
        raise CelEvaluationError(f"cannot slice({start}, {end}), negative indexes not supported")
    if start > end:
        raise CelEvaluationError(f"cannot slice({start}, {end}), start index must be less than or equal to end index")
    if end > len(items):
        raise CelEvaluationError(f"cannot slice({start}, {end}), list is length {len(items)}")
    return items[start:end]


def flatten(items: list[Any], depth: int = 1) -> list[Any]:
    """Nested lists spliced in, ``depth`` levels deep; error ``level must be non-negative``."""
    if depth < 0:
        raise CelEvaluationError("level must be non-negative")
    flat: list[Any] = []
    for item in items:
        if isinstance(item, list) and depth > 0:
            flat.extend(flatten(item, depth - 1))
        else:
            flat.append(item)
    return flat


def distinct(items: list[Any]) -> list[Any]:
    """The elements without later duplicates (CEL equality), in order."""
    kept: list[Any] = []
    for item in items:
        if not any(semantics.cel_equals(item, seen) for seen in kept):
            kept.append(item)
    return kept


def sort(items: list[Any]) -> list[Any]:
    """The elements in ascending CEL order (stable)."""
    return sorted(items, key=functools.cmp_to_key(_order))


def reverse(items: list[Any]) -> list[Any]:
    """The elements in reverse order."""
    return items[::-1]


def range_of(_namespace: Namespace, count: int) -> list[int]:
    """``lists.range(n)``: ``[0, 1, ..., n-1]``."""
    return list(range(count))


OVERLOADS: tuple[Overload, ...] = (
    member("isSorted", is_sorted, "list"),
    member("sum", sum_of, "list"),
    member("min", min_of, "list"),
    member("max", max_of, "list"),
    member("indexOf", index_of, "list", "dyn"),
    member("lastIndexOf", last_index_of, "list", "dyn"),
    member("slice", slice_of, "list", "int", "int"),
    member("flatten", flatten, "list"),
    member("flatten", flatten, "list", "int"),
    member("distinct", distinct, "list"),
    member("sort", sort, "list"),
    member("reverse", reverse, "list"),
    namespaced("lists", "range", range_of, "int"),
)
