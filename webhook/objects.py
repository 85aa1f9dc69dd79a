"""Kubernetes objects as this project handles them: JSON-shaped mappings, label selectors, and object stores.

- ``KubeObject``: an object as the Kubernetes API returns it (a plain mapping).
- ``LabelSelector`` (``metav1.LabelSelector``), parsed once, matched many times. Follows apimachinery
  ``metav1.LabelSelectorAsSelector`` and ``labels.Requirement.Matches``: ``matchLabels`` and
  ``matchExpressions`` are ANDed; operators ``In``, ``NotIn``, ``Exists``, ``DoesNotExist``; ``NotIn`` and
  ``DoesNotExist`` match objects that lack the key. An empty selector (``{}``) matches everything. An absent
  selector (``None``) also matches everything here, because every field this project reads (ClusterExtension
  ``spec.source.catalog.selector``, admission ``namespaceSelector``/``objectSelector`` after defaulting) treats an
  absent selector as "all".
- ``ObjectStore``: read-only lookups of cluster objects, injected into the policy engine (never imported by it).
  ``webhook.io.kube`` implements it over a watch cache of a real cluster, ``InMemoryObjectStore`` over manifests
  (tests, ``policy test``, ``serve --objects DIR``, the sync loop's checks).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from webhook.errors import InputError

KubeObject = Mapping[str, Any]
_Key = tuple[str, str, str, str]  # (apiVersion, kind, namespace or "", name)

_OPERATORS = frozenset({"In", "NotIn", "Exists", "DoesNotExist"})


@dataclass(frozen=True, slots=True)
class Requirement:
    """One ``matchExpressions`` entry (``matchLabels`` entries become ``In`` with one value)."""

    key: str
    operator: str
    values: frozenset[str]

    def __str__(self) -> str:
        """kubectl's syntax for one requirement: ``key=value``, ``key in (a,b)``, ``key``, ``!key``."""
        if self.operator == "In" and len(self.values) == 1:
            return f"{self.key}={next(iter(self.values))}"
        if self.operator in ("In", "NotIn"):
            return f"{self.key} {self.operator.lower()} ({','.join(sorted(self.values))})"
        return self.key if self.operator == "Exists" else f"!{self.key}"

    def matches(self, labels: Mapping[str, str]) -> bool:
        """True if ``labels`` (a label map) satisfies this requirement."""
        present = self.key in labels
        if self.operator == "In":
            return present and labels[self.key] in self.values
        if self.operator == "NotIn":
            return not present or labels[self.key] not in self.values
        if self.operator == "Exists":
            return present
        return not present


@dataclass(frozen=True, slots=True)
class LabelSelector:
    """A parsed label selector: the AND of its requirements."""

    requirements: tuple[Requirement, ...] = ()

    @classmethod
    def from_dict(cls, selector: Mapping[str, Any] | None) -> LabelSelector:
        """Parse a ``metav1.LabelSelector`` mapping (``matchLabels``, ``matchExpressions``).

        Raises ``InputError`` with apimachinery's message, e.g. ``"bad" is not a valid label selector
        operator`` or ``for 'in', 'notin' operators, values set can't be empty``.
        """
        if not selector:
            return cls()
        if not isinstance(selector, Mapping):
            raise InputError(f"a label selector must be a mapping, not {type(selector).__name__}")
        requirements: list[Requirement] = []
        match_labels = selector.get("matchLabels") or {}
        if not isinstance(match_labels, Mapping):
            raise InputError("matchLabels must be a mapping of label keys to values")
        for key, value in match_labels.items():
            requirements.append(Requirement(str(key), "In", frozenset({_label_value(value)})))
        expressions = selector.get("matchExpressions") or []
        if not isinstance(expressions, list):
            raise InputError("matchExpressions must be a list")
        requirements.extend(_requirement(expression) for expression in expressions)
        return cls(tuple(sorted(requirements, key=lambda r: (r.key, r.operator))))

    def matches(self, labels: Mapping[str, str] | None) -> bool:
        """True if ``labels`` (``None`` is read as no labels) satisfies every requirement."""
        have = labels or {}
        return all(requirement.matches(have) for requirement in self.requirements)

    @property
    def is_empty(self) -> bool:
        """True for the selector that matches everything."""
        return not self.requirements

    def __str__(self) -> str:
        """kubectl's selector syntax: ``a=b,c in (d,e),!f`` (``<everything>`` when empty)."""
        return ",".join(str(r) for r in self.requirements) or "<everything>"


def _label_value(value: object) -> str:
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise InputError(f"label value {value!r} must be a string")
    return str(value)


def _requirement(expression: object) -> Requirement:
    if not isinstance(expression, Mapping):
        raise InputError("each matchExpressions entry must be a mapping with key, operator and values")
    key = expression.get("key")
    operator = expression.get("operator")
    values = expression.get("values") or []
    if not isinstance(key, str) or not key:
        raise InputError("a matchExpressions entry needs a non-empty key")
    if operator not in _OPERATORS:
        raise InputError(f'"{operator}" is not a valid label selector operator')
    if not isinstance(values, list):
        raise InputError(f"values of matchExpressions key {key!r} must be a list")
    if operator in ("In", "NotIn") and not values:
        raise InputError("for 'in', 'notin' operators, values set can't be empty")
    if operator in ("Exists", "DoesNotExist") and values:
        raise InputError("values set must be empty for exists and does not exist")
    return Requirement(key, str(operator), frozenset(_label_value(v) for v in values))


def plural_of(kind: str) -> str:
    """The resource name Kubernetes gives a kind by default: lower case, plural (``Policy`` → ``policies``)."""
    lower = kind.lower()
    if lower.endswith("y") and lower[-2:-1] not in ("a", "e", "i", "o", "u"):
        return lower[:-1] + "ies"
    if lower.endswith(("s", "x", "z", "ch", "sh")):
        return lower + "es"
    return lower + "s"


class ObjectStore(Protocol):
    """Read-only lookups of cluster objects by apiVersion and kind (``v1``, ``group/version``)."""

    def get(self, api_version: str, kind: str, name: str, namespace: str | None = None) -> KubeObject | None:
        """The object, or ``None`` if there is none. ``namespace=None`` means a cluster-scoped object."""
        ...

    def list(
        self,
        api_version: str,
        kind: str,
        namespace: str | None = None,
        selector: LabelSelector | None = None,
    ) -> list[KubeObject]:
        """Objects of the kind, in one namespace (or all when ``None``), matching ``selector``.

        Sorted by (namespace, name) so callers are deterministic.
        """
        ...


class InMemoryObjectStore:
    """An ``ObjectStore`` over a fixed set of manifests (dicts with apiVersion, kind, metadata.name)."""

    def __init__(self, objects: Iterable[KubeObject] = ()) -> None:
        self._objects: dict[_Key, KubeObject] = {}
        for obj in objects:
            self.add(obj)

    def add(self, obj: KubeObject) -> None:
        """Insert or replace ``obj``; raises ``ValueError`` if it lacks apiVersion, kind or metadata.name."""
        metadata = obj.get("metadata") or {}
        api_version, kind, name = obj.get("apiVersion"), obj.get("kind"), metadata.get("name")
        if not (isinstance(api_version, str) and isinstance(kind, str) and isinstance(name, str)):
            raise ValueError("an object needs apiVersion, kind and metadata.name")
        self._objects[(api_version, kind, metadata.get("namespace") or "", name)] = obj

    def get(self, api_version: str, kind: str, name: str, namespace: str | None = None) -> KubeObject | None:
        """See ``ObjectStore.get``."""
        return self._objects.get((api_version, kind, namespace or "", name))

    def list(
        self,
        api_version: str,
        kind: str,
        namespace: str | None = None,
        selector: LabelSelector | None = None,
    ) -> list[KubeObject]:
        """See ``ObjectStore.list``."""
        found = [
            (key, obj)
            for key, obj in self._objects.items()
            if key[0] == api_version
            and key[1] == kind
            and (namespace is None or key[2] == namespace)
            and (selector is None or selector.matches((obj.get("metadata") or {}).get("labels")))
        ]
        return [obj for _, obj in sorted(found, key=lambda item: (item[0][2], item[0][3]))]

    def __len__(self) -> int:
        return len(self._objects)


class LayeredObjectStore:
    """An ``ObjectStore`` reading ``layers`` in order: ``get`` returns the first layer's object, ``list``
    merges every layer, the first layer winning for an object (namespace, name) found in several."""

    def __init__(self, layers: Iterable[ObjectStore]) -> None:
        self.layers = tuple(layers)

    def get(self, api_version: str, kind: str, name: str, namespace: str | None = None) -> KubeObject | None:
        """See ``ObjectStore.get``."""
        for layer in self.layers:
            found = layer.get(api_version, kind, name, namespace)
            if found is not None:
                return found
        return None

    def list(
        self,
        api_version: str,
        kind: str,
        namespace: str | None = None,
        selector: LabelSelector | None = None,
    ) -> list[KubeObject]:
        """See ``ObjectStore.list``."""
        merged: dict[tuple[str, str], KubeObject] = {}
        for layer in self.layers:
            for obj in layer.list(api_version, kind, namespace, selector):
                metadata = obj.get("metadata") or {}
                merged.setdefault((metadata.get("namespace") or "", metadata.get("name") or ""), obj)
        return [merged[key] for key in sorted(merged)]
