"""CEL types for cel-cpp's declarations, and library values as run-time protobuf messages.

cel-cpp type-checks every call, so each declared overload needs a CEL type per parameter and for its result.
Parameter kinds come from the registry (``Overload.params``: ``string``, ``list``, ``dyn``, ``kubernetes.Semver``
...); result types from the implementation's return annotation (``-> bool``, ``-> list[str]``, ``-> Semver``;
``Any``, ``object`` and unions are ``dyn``).

cel-expr-python cannot carry an opaque Python object through cel-cpp (an ``AbstractType`` result is
``UNIMPLEMENTED``; ``cel-engines.md`` §2), so each library class (one with a ``cel_type_name``, e.g.
``kubernetes.Semver``) becomes a protobuf message type of that full name, built at run time in a private
descriptor pool, with one string field holding its text: ``str(value)``, or the class's ``equality_text()``
where its equality ignores part of the text (a Semver's build metadata). A message is turned back into the
library value by the class's text constructor: the library's global one-string function returning the class
(``semver`` for ``kubernetes.Semver``) or, where the library has none, the class's own ``from_text``
(``kubernetes.NamedFormat``), memoised by text. The field is named ``var``, a reserved CEL word, so no
expression can select it or build such a message by hand.

Optionals (``libraries/optional.py``, cel-go's ``optional_type``) cannot cross cel-expr-python 0.1.3 at all (a
declared ``optional_type(T)`` result is ``UNIMPLEMENTED: Unimplemented type``, a ``cel.Value`` holding one is
refused as a non-CEL value): a library function returning ``Optional[T]`` is declared to return ``list(T)``, a list
of zero or one element (``values.to_expr``), which the expression turns into cel-cpp's optional where the call is
(``optionals.py``).

``==`` between library values is protobuf field equality (cel-expr-python cannot override it: an ``_==_``
overload replaces equality for every type), i.e. equality of their texts, which is Kubernetes' equality where
the text is canonical. ``tests/data/cel/known_differences.yaml`` lists where the text and Kubernetes' value
differ: a shown Semver has no build metadata, a quantity's text carries its suffix kind (so ``1Gi`` is not
``1073741824``) but not apimachinery's int64-vs-decimal form (``isInteger``).
"""

from __future__ import annotations

import datetime
import functools
import typing
from collections.abc import Callable, Iterable
from typing import Any

from cel_expr_python import cel
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from google.protobuf.message import Message

from webhook.cel.libraries.optional import Optional
from webhook.cel.libraries.registry import Overload

#: The text field of a library value message (a reserved CEL word: not selectable from an expression).
FIELD = "var"
NAMESPACE_PREFIX = "namespace:"

KIND_TYPES: dict[str, Any] = {
    "dyn": cel.Type.DYN,
    "int": cel.Type.INT,
    "uint": cel.Type.UINT,
    "double": cel.Type.DOUBLE,
    "string": cel.Type.STRING,
    "bool": cel.Type.BOOL,
    "bytes": cel.Type.BYTES,
    "null": cel.Type.NULL,
    "timestamp": cel.Type.TIMESTAMP,
    "duration": cel.Type.DURATION,
    "list": cel.Type.List(cel.Type.DYN),
    "map": cel.Type.Map(cel.Type.DYN, cel.Type.DYN),
}
_ANNOTATION_TYPES: dict[object, Any] = {
    bool: cel.Type.BOOL,
    int: cel.Type.INT,
    float: cel.Type.DOUBLE,
    str: cel.Type.STRING,
    bytes: cel.Type.BYTES,
    type(None): cel.Type.NULL,
    datetime.datetime: cel.Type.TIMESTAMP,
    datetime.timedelta: cel.Type.DURATION,
}
_STRING = descriptor_pb2.FieldDescriptorProto.TYPE_STRING
_SINGLE = descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL


def return_annotation(overload: Overload) -> object:
    """The resolved return annotation of ``overload``'s implementation (``typing.Any`` when it has none)."""
    return typing.get_type_hints(overload.implementation).get("return", Any)


def _text_constructors(overloads: tuple[Overload, ...], classes: dict[str, type]) -> dict[str, Callable[[str], Any]]:
    """The text constructor of every class of ``classes``; ``TypeError`` if one has none."""
    constructors: dict[str, Callable[[str], Any]] = {}
    for overload in overloads:
        name = getattr(return_annotation(overload), "cel_type_name", None)
        if isinstance(name, str) and not overload.member and overload.params == ("string",):
            constructors[name] = overload.implementation
    for name, cls in classes.items():
        if name not in constructors:
            from_text = getattr(cls, "from_text", None)
            if from_text is None:
                raise TypeError(f"library type {name} has no one-string constructor to cross cel-cpp")
            constructors[name] = from_text
    return constructors


class LibraryTypes:
    """The library value classes used by ``overloads``, as message types of one descriptor pool.

    Raises ``TypeError`` for a library class that cannot cross cel-cpp (no text constructor).
    """

    def __init__(self, overloads: Iterable[Overload]) -> None:
        declared = tuple(overloads)
        classes: dict[str, type] = {}
        for overload in declared:
            returned = return_annotation(overload)
            name = getattr(returned, "cel_type_name", None)
            if isinstance(returned, type) and isinstance(name, str):
                classes[name] = returned
        self._constructors = _text_constructors(declared, classes)
        self.pool = descriptor_pool.DescriptorPool()
        self._names: dict[type, str] = {cls: name for name, cls in classes.items()}
        self._texts: dict[type, Callable[[Any], str]] = {cls: getattr(cls, "equality_text", str) for cls in self._names}
        packages: dict[str, list[str]] = {}
        for name in sorted(classes):
            packages.setdefault(name.rpartition(".")[0], []).append(name)
        for package, names in packages.items():
            file = descriptor_pb2.FileDescriptorProto(
                name=f"upgrade_gate/cel/{package or 'library'}.proto", package=package, syntax="proto3"
            )
            for name in names:
                message = file.message_type.add(name=name.rpartition(".")[2])
                message.field.add(name=FIELD, number=1, type=_STRING, label=_SINGLE)
            self.pool.Add(file)
        self._messages: dict[str, Any] = {
            name: message_factory.GetMessageClass(self.pool.FindMessageTypeByName(name)) for name in classes
        }
        self._from_text = functools.lru_cache(maxsize=4096)(self._construct)

    def cel_type(self, kind: str) -> Any:
        """The ``cel.Type`` of a registry parameter kind (``list`` is ``list(dyn)``)."""
        return KIND_TYPES.get(kind) or cel.Type(kind)

    def is_library_kind(self, kind: str) -> bool:
        """True for a library type's name (``kubernetes.Semver``)."""
        return kind in self._messages

    def runtime_kind(self, kind: str) -> str:
        """The kind cel-cpp's runtime dispatches on: ``message`` for every library type, else ``kind``."""
        return "message" if kind in self._messages else kind

    def result_type(self, overload: Overload) -> Any:
        """The ``cel.Type`` of ``overload``'s result, from its implementation's return annotation."""
        return self._annotation_type(return_annotation(overload))

    def _annotation_type(self, annotation: object) -> Any:
        found = _ANNOTATION_TYPES.get(annotation)
        if found is not None:
            return found
        origin, arguments = typing.get_origin(annotation), typing.get_args(annotation)
        if (origin is list or origin is Optional) and len(arguments) == 1:  # an optional crosses as a list
            return cel.Type.List(self._annotation_type(arguments[0]))
        if origin is dict and len(arguments) == 2:
            return cel.Type.Map(self._annotation_type(arguments[0]), self._annotation_type(arguments[1]))
        name = self._names.get(annotation) if isinstance(annotation, type) else None
        return cel.Type(name) if name else cel.Type.DYN

    def encode(self, value: object) -> object:
        """A library value as its message; any other value unchanged."""
        name = self._names.get(type(value))
        if name is None:
            return value
        return self._messages[name](**{FIELD: self._texts[type(value)](value)})

    def is_library_value(self, value: object) -> bool:
        """True for an instance of a library class."""
        return type(value) in self._names

    def decode(self, value: object) -> object:
        """A library value message as the library value; any other value unchanged."""
        if not isinstance(value, Message):
            return value
        name = value.DESCRIPTOR.full_name
        if name in self._constructors:
            return self._from_text(name, getattr(value, FIELD))
        return value

    def _construct(self, name: str, text: str) -> object:
        return self._constructors[name](text)
