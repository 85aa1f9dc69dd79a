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

Optionals (``libraries/optional.py``, cel-go's ``optional_type``) cannot be returned from Python at all in
cel-expr-python 0.1.3 (a declared ``optional_type(T)`` result is ``UNIMPLEMENTED: Unimplemented type``, a
``cel.Value`` holding one is refused as a non-CEL value), so an ``Optional`` returned by a library function
(``format.named``, ``<Format>.validate``) is the message ``upgrade_gate.Optional`` (``MESSAGE_NAMES``; cel-cpp's
own ``optional_type``, of the optional syntax and ``optional.of``, is a different type): ``var`` names what it
holds (empty: ``optional.none()``; ``list``: a list of strings, held in the repeated field ``let``; a library
type's name: that value, its text in ``let``). Its members ``hasValue() value() orValue()`` are the optional
library's overloads on that message; two are equal when both are empty or hold equal values, as in cel-go.

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

from webhook.errors import CelEvaluationError
from webhook.policy.cel.libraries.optional import Optional
from webhook.policy.cel.libraries.registry import Overload

#: The text field of a library value message (a reserved CEL word: not selectable from an expression).
FIELD = "var"
#: The optional message's repeated field of texts (also a reserved CEL word).
CONTENT = "let"
#: What an optional message holding a list of strings says in ``FIELD``.
LIST_CONTENT = "list"
NAMESPACE_PREFIX = "namespace:"
#: Message names that differ from the library type's ``cel_type_name``.
MESSAGE_NAMES = {Optional.cel_type_name: "upgrade_gate.Optional"}


def message_name(name: str) -> str:
    """The full name of the message type carrying the library type ``name``."""
    return MESSAGE_NAMES.get(name, name)


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
_REPEATED = descriptor_pb2.FieldDescriptorProto.LABEL_REPEATED


def return_annotation(overload: Overload) -> object:
    """The resolved return annotation of ``overload``'s implementation (``typing.Any`` when it has none)."""
    return typing.get_type_hints(overload.implementation).get("return", Any)


def _text_constructors(overloads: tuple[Overload, ...], classes: dict[str, type]) -> dict[str, Callable[[str], Any]]:
    """The text constructor of every class of ``classes`` but ``Optional``; ``TypeError`` if one has none."""
    constructors: dict[str, Callable[[str], Any]] = {}
    for overload in overloads:
        name = getattr(return_annotation(overload), "cel_type_name", None)
        if isinstance(name, str) and not overload.member and overload.params == ("string",):
            constructors[name] = overload.implementation
    for name, cls in classes.items():
        if name not in constructors and cls is not Optional:
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
            packages.setdefault(message_name(name).rpartition(".")[0], []).append(name)
        for package, names in packages.items():
            file = descriptor_pb2.FileDescriptorProto(
                name=f"upgrade_gate/cel/{package or 'library'}.proto", package=package, syntax="proto3"
            )
            for name in names:
                message = file.message_type.add(name=message_name(name).rpartition(".")[2])
                message.field.add(name=FIELD, number=1, type=_STRING, label=_SINGLE)
                if classes[name] is Optional:
                    message.field.add(name=CONTENT, number=2, type=_STRING, label=_REPEATED)
            self.pool.Add(file)
        self._messages: dict[str, Any] = {
            name: message_factory.GetMessageClass(self.pool.FindMessageTypeByName(message_name(name)))
            for name in classes
        }
        self._from_text = functools.lru_cache(maxsize=4096)(self._construct)
        self._optional = functools.lru_cache(maxsize=4096)(self._construct_optional)

    def cel_type(self, kind: str) -> Any:
        """The ``cel.Type`` of a registry parameter kind (``list`` is ``list(dyn)``)."""
        return KIND_TYPES.get(kind) or cel.Type(message_name(kind))

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
        if origin is list and len(arguments) == 1:
            return cel.Type.List(self._annotation_type(arguments[0]))
        if origin is dict and len(arguments) == 2:
            return cel.Type.Map(self._annotation_type(arguments[0]), self._annotation_type(arguments[1]))
        name = self._names.get(annotation) if isinstance(annotation, type) else None
        return cel.Type(message_name(name)) if name else cel.Type.DYN

    def encode(self, value: object) -> object:
        """A library value as its message; any other value unchanged. Raises ``CelEvaluationError`` for an
        optional holding something other than a list of strings or a library value."""
        name = self._names.get(type(value))
        if name is None:
            return value
        if isinstance(value, Optional):
            return self._messages[name](**self._optional_fields(value))
        return self._messages[name](**{FIELD: self._texts[type(value)](value)})

    def _optional_fields(self, optional: Optional) -> dict[str, Any]:
        if not optional.present:
            return {}
        content = optional.value
        name = self._names.get(type(content))
        if name is not None:
            return {FIELD: name, CONTENT: [self._texts[type(content)](content)]}
        if isinstance(content, list) and all(isinstance(item, str) for item in content):
            return {FIELD: LIST_CONTENT, CONTENT: content}
        raise CelEvaluationError(f"an optional of {type(content).__name__} cannot cross cel-cpp")

    def is_library_value(self, value: object) -> bool:
        """True for an instance of a library class."""
        return type(value) in self._names

    def decode(self, value: object) -> object:
        """A library value message as the library value; any other value unchanged."""
        if not isinstance(value, Message):
            return value
        name = value.DESCRIPTOR.full_name
        if name == MESSAGE_NAMES[Optional.cel_type_name]:
            return self._optional(getattr(value, FIELD), tuple(getattr(value, CONTENT)))
        if name in self._constructors:
            return self._from_text(name, getattr(value, FIELD))
        return value

    def _construct(self, name: str, text: str) -> object:
        return self._constructors[name](text)

    def _construct_optional(self, held: str, texts: tuple[str, ...]) -> Optional:
        if not held:
            return Optional.none()
        if held == LIST_CONTENT:
            return Optional.of(list(texts))
        return Optional.of(self._from_text(held, texts[0]))
