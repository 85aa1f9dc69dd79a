"""What the estimator knows of a value (``Shape``: its kind and the most ``size()`` can return), the bounds the
apiserver's largest request (``MAX_REQUEST_SIZE_BYTES``, 3 MiB) puts on every size nothing else bounds, the shape of
a value of an OpenAPI v3 schema (``from_schema``) and the shapes of the admission variables (``ADMISSION_VARIABLES``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

#: The apiserver's largest request body (``MaxRequestSizeBytes``), which bounds every unbounded size.
MAX_REQUEST_SIZE_BYTES = 3 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class Shape:
    """What the estimator knows of a value.

    ``kind``: ``scalar`` (int, uint, double, bool, timestamp, duration, library values), ``string``,
    ``bytes``, ``list``, ``map``, ``object`` (known ``fields``; others are ``element``) or ``dyn``;
    ``size``: the most ``size()`` can be (code points, bytes, elements, entries; 1 for scalars; for ``dyn``
    as a list); ``element``: a list's elements or a map's values (``None``: ``dyn``); ``minimum``: the
    smallest JSON text of such a value, in bytes, which bounds how many fit in a request; ``limit``: for
    ``dyn``, the most any string, list or map in it holds, at any depth (``None``: what a request allows).
    """

    kind: str
    size: int = 1
    element: Shape | None = None
    fields: Mapping[str, Shape] = field(default_factory=dict)
    minimum: int = 1
    limit: int | None = None

    @property
    def text_size(self) -> int:
        """The most code points (or bytes) the value has as a string: ``dyn`` may be the longest string."""
        if self.kind != "dyn":
            return self.size
        return _MAX_STRING if self.limit is None else self.limit

    @property
    def members(self) -> Shape:
        """The shape of an element, a map value or a field not declared (a bounded ``dyn``'s are as bounded)."""
        if self.element is not None:
            return self.element
        return self if self.kind == "dyn" and self.limit is not None else DYN

    def select(self, name: str) -> Shape:
        """The shape of field (or map key) ``name``."""
        return self.fields.get(name) or self.members


_MAX_STRING = MAX_REQUEST_SIZE_BYTES - 2  # the quotes


def _most_items(element_minimum: int) -> int:
    """How many elements of at least ``element_minimum`` JSON bytes fit in a request (brackets, commas)."""
    return (MAX_REQUEST_SIZE_BYTES - 2) // (element_minimum + 1)


#: The bytes a map entry takes beyond its value, as the apiserver counts them (measured: 6).
_ENTRY_OVERHEAD = 6


def _most_entries(value_minimum: int) -> int:
    """How many entries with values of at least ``value_minimum`` JSON bytes fit in a request."""
    return (MAX_REQUEST_SIZE_BYTES - 2) // (value_minimum + _ENTRY_OVERHEAD)


INT = Shape("scalar", minimum=1)
BOOL = Shape("scalar", minimum=4)
DYN = Shape("dyn", _most_items(1))
"""A value of unknown type: any field or element of it is ``dyn`` too."""


def bounded(limit: int) -> Shape:
    """A value of unknown type none of whose strings, lists or maps holds more than ``limit`` (``Shape.limit``)."""
    return Shape("dyn", limit, limit=limit)


def string(max_length: int | None = None) -> Shape:
    """A string of at most ``max_length`` code points (default: as long as a request allows)."""
    return Shape("string", _MAX_STRING if max_length is None else max_length, minimum=2)


def list_of(element: Shape, max_items: int | None = None) -> Shape:
    """A list of ``element``s, at most ``max_items`` (default: as many as fit in a request)."""
    return Shape("list", _most_items(element.minimum) if max_items is None else max_items, element, minimum=2)


def map_of(value: Shape, max_entries: int | None = None) -> Shape:
    """A map of string keys to ``value``s, at most ``max_entries`` (default: as many as fit in a request)."""
    return Shape("map", _most_entries(value.minimum) if max_entries is None else max_entries, value, minimum=2)


def object_of(fields: Mapping[str, Shape]) -> Shape:
    """An object with these fields."""
    return Shape("object", len(fields), fields=dict(fields), minimum=2)


#: Numbers and booleans of a schema: their declared types have no size, so the apiserver sizes them 0 (equality
#: with one costs nothing) where a literal or a function's number has size 1.
_SCHEMA_NUMBER = Shape("scalar", 0, minimum=1)
_SCHEMA_BOOL = Shape("scalar", 0, minimum=4)
#: The most UTF-8 bytes one character takes: the apiserver bounds a string's size by ``maxLength`` times it.
_UTF8_MOST = 4


def from_schema(schema: Mapping[str, Any]) -> Shape:
    """The shape of a value of an OpenAPI v3 structural ``schema`` as the apiserver sizes it: ``maxItems``,
    ``maxProperties`` and 4 bytes per character of ``maxLength`` where given, else what fits in a request;
    ``x-kubernetes-int-or-string`` and ``x-kubernetes-preserve-unknown-fields`` without properties are ``dyn``."""
    kind = schema.get("type")
    if schema.get("x-kubernetes-int-or-string") or (
        schema.get("x-kubernetes-preserve-unknown-fields") and "properties" not in schema
    ):
        return DYN
    if kind in ("integer", "number", "boolean"):
        return _SCHEMA_BOOL if kind == "boolean" else _SCHEMA_NUMBER
    if kind == "string":
        most = schema.get("maxLength")
        return string(None if most is None else most * _UTF8_MOST)
    if kind == "array":
        return list_of(from_schema(schema.get("items", {})), schema.get("maxItems"))
    additional = schema.get("additionalProperties")
    if isinstance(additional, Mapping):
        return map_of(from_schema(additional), schema.get("maxProperties"))
    if kind == "object":
        return object_of({name: from_schema(value) for name, value in schema.get("properties", {}).items()})
    return DYN


_STRING = {"type": "string"}
_STRINGS = {"type": "array", "items": _STRING}


def _string_fields(*names: str) -> dict[str, Any]:
    return {"type": "object", "properties": dict.fromkeys(names, _STRING)}


_REQUEST_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        **dict.fromkeys(("kind", "requestKind"), _string_fields("group", "version", "kind")),
        **dict.fromkeys(("resource", "requestResource"), _string_fields("group", "version", "resource")),
        **dict.fromkeys(("subResource", "requestSubResource", "name", "namespace", "operation"), _STRING),
        "userInfo": {
            "type": "object",
            "properties": {
                "username": _STRING,
                "uid": _STRING,
                "groups": _STRINGS,
                "extra": {"type": "object", "additionalProperties": _STRINGS},
            },
        },
        "dryRun": {"type": "boolean"},
        "options": {"x-kubernetes-preserve-unknown-fields": True},
    },
}
_STRING_MAP = {"type": "object", "additionalProperties": _STRING}
_NAMESPACE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "metadata": {
            "type": "object",
            "properties": {
                **dict.fromkeys(("name", "generateName", "namespace", "uid", "creationTimestamp"), _STRING),
                **dict.fromkeys(("deletionTimestamp", "resourceVersion"), _STRING),
                "labels": _STRING_MAP,
                "annotations": _STRING_MAP,
                "finalizers": _STRINGS,
                "generation": {"type": "integer"},
                "deletionGracePeriodSeconds": {"type": "integer"},
            },
        },
        "spec": {"type": "object", "properties": {"finalizers": _STRINGS}},
        "status": {"x-kubernetes-preserve-unknown-fields": True},
    },
}

#: What the apiserver lets through in an object's metadata whatever its kind (``ValidateObjectMeta``): a namespace
#: is a DNS label (63 characters), a label value 63 characters, and all annotations together, keys and values,
#: 256 KiB (``TotalAnnotationSizeLimitB``).
_LABEL_VALUE, _DNS_LABEL, _ANNOTATIONS = 63, 63, 256 * 1024


def admitted_object(*, validated: bool) -> Shape:
    """``object`` (and ``oldObject``) as an admission policy sees it; fields other than ``metadata``'s are ``dyn``.

    The apiserver decodes a request's object, a custom resource's too, into its ``ObjectMeta`` before any
    admission, so ``labels`` and ``annotations`` are maps of strings (``in`` on them costs 1), as large as a
    request allows. A ValidatingAdmissionPolicy sees it after the apiserver ``validated`` it (a
    MutatingAdmissionPolicy before), so a namespace, a label value and the annotations are as small as
    ``ValidateObjectMeta`` allows."""
    if not validated:
        return object_of({"metadata": object_of({"labels": map_of(string()), "annotations": map_of(string())})})
    metadata = {
        "namespace": string(_DNS_LABEL),
        "labels": map_of(string(_LABEL_VALUE)),
        "annotations": Shape("map", _ANNOTATIONS, string(_ANNOTATIONS), minimum=2),
    }
    return object_of({"metadata": object_of(metadata)})


ADMISSION_VARIABLES: Mapping[str, Shape] = {
    "object": DYN,
    "oldObject": DYN,
    "params": DYN,
    "request": from_schema(_REQUEST_SCHEMA),
    "namespaceObject": from_schema(_NAMESPACE_SCHEMA),
    "variables": object_of({}),
    "authorizer": Shape("scalar"),
}
"""The variables of a ValidatingAdmissionPolicy or MutatingAdmissionPolicy expression: ``object``,
``oldObject`` and ``params`` are ``dyn``; ``request`` and ``namespaceObject`` are typed as in the apiserver
(``AdmissionRequest``, ``Namespace``) with request-bounded strings and lists; ``variables.<name>`` is ``dyn``."""


def union(first: Shape, second: Shape) -> Shape:
    """A shape covering both: the larger size, the same kind where they agree, else ``dyn`` (bounded by the
    larger of their bounds where both have one, ``bound``)."""
    if first.kind != second.kind:
        limits = (bound(first), bound(second))
        return DYN if None in limits else bounded(max(limit or 0 for limit in limits))
    return first if first.size >= second.size else second


def bound(shape: Shape) -> int | None:
    """The most any string, list or map in a value of ``shape`` holds, at any depth; ``None`` where a request
    bounds it (``DYN``)."""
    if shape.kind == "dyn":
        return shape.limit
    inner = [*shape.fields.values(), shape.members] if shape.kind in ("list", "map", "object") and shape.size else []
    limits = [bound(part) for part in inner]
    return None if None in limits else max([shape.size, *(limit or 0 for limit in limits)])


def union_all(shapes: Any) -> Shape | None:
    """A shape covering every one of ``shapes`` (``union``), ``None`` when there is none."""
    found: Shape | None = None
    for shape in shapes:
        found = shape if found is None else union(found, shape)
    return found
