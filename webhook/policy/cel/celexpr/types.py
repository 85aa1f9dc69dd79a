"""CEL types for cel-cpp's declarations, and library values as run-time protobuf messages.

cel-cpp type-checks every call, so each declared overload needs a CEL type per parameter and for its result.
Parameter kinds come from the registry (``Overload.params``: ``string``, ``list``, ``dyn``, ``kubernetes.Semver``
...); result types from the implementation's return annotation (``-> bool``, ``-> list[str]``, ``-> Semver``;
``Any``, ``object`` and unions are ``dyn``).

cel-expr-python cannot carry an opaque Python object through cel-cpp (an ``AbstractType`` result is
``UNIMPLEMENTED``; ``cel-engines.md`` §2), so each library class (one with a ``cel_type_name``, e.g.
``kubernetes.Semver``) becomes a protobuf message type of that full name, built at run time in a private
descriptor pool, with one string field holding ``str(value)``. A message is turned back into the library value
by the library's one-string constructor function (the global overload ``(string) -> that class``: ``semver`` for
``kubernetes.Semver``), memoised by text; so a library type must round-trip through ``str`` and its constructor.

Consequences, listed in ``tests/data/cel/known_differences.yaml``: ``==`` between library values is protobuf
field equality, i.e. equality of their canonical text (Kubernetes compares ``semver('1.0.0+a') ==
semver('1.0.0+b')`` by precedence: true; here false). The field is named ``var``, a reserved CEL word, so no
expression can select it or build such a message by hand.
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

from webhook.policy.cel.libraries.registry import Overload

#: The one field of a library value message (a reserved CEL word: not selectable from an expression).
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


def return_annotation(overload: Overload) -> object:
    """The resolved return annotation of ``overload``'s implementation (``typing.Any`` when it has none)."""
    return typing.get_type_hints(overload.implementation).get("return", Any)


class LibraryTypes:
    """The library value classes used by ``overloads``, as message types of one descriptor pool.

    A library class without a one-string constructor function, or a parameter kind that is neither a CEL kind
    nor a library class, cannot be hosted: the overloads using it are left out (``supports``).
    """

    def __init__(self, overloads: Iterable[Overload]) -> None:
        declared = tuple(overloads)
        classes: dict[str, type] = {}
        constructors: dict[str, Callable[[str], object]] = {}
        for overload in declared:
            returned = return_annotation(overload)
            name = getattr(returned, "cel_type_name", None)
            if isinstance(returned, type) and isinstance(name, str):
                classes[name] = returned
                if not overload.member and overload.params == ("string",):
                    constructors[name] = overload.implementation
        #: Library types that cannot cross cel-cpp (no one-string constructor to rebuild them from text, e.g.
        #: Format values and optionals); overloads using them are not registered (``supports``).
        self.unsupported = frozenset(classes.keys() - constructors.keys())
        classes = {name: cls for name, cls in classes.items() if name in constructors}
        self.pool = descriptor_pool.DescriptorPool()
        self._names: dict[type, str] = {cls: name for name, cls in classes.items()}
        self._constructors = constructors
        self._messages: dict[str, Any] = {}
        packages: dict[str, list[str]] = {}
        for name in sorted(classes):
            packages.setdefault(name.rpartition(".")[0], []).append(name)
        for package, names in packages.items():
            file = descriptor_pb2.FileDescriptorProto(
                name=f"upgrade_gate/cel/{package or 'library'}.proto", package=package, syntax="proto3"
            )
            for name in names:
                message = file.message_type.add(name=name.rpartition(".")[2])
                message.field.add(
                    name=FIELD,
                    number=1,
                    type=descriptor_pb2.FieldDescriptorProto.TYPE_STRING,
                    label=descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL,
                )
            self.pool.Add(file)
        for name in classes:
            self._messages[name] = message_factory.GetMessageClass(self.pool.FindMessageTypeByName(name))
        self._from_text = functools.lru_cache(maxsize=4096)(self._construct)

    def cel_type(self, kind: str) -> Any:
        """The ``cel.Type`` of a registry parameter kind (``list`` is ``list(dyn)``)."""
        return KIND_TYPES.get(kind) or cel.Type(kind)

    def supports(self, overload: Overload) -> bool:
        """True if every parameter kind and the result of ``overload`` can cross cel-cpp."""
        returned = return_annotation(overload)
        if getattr(returned, "cel_type_name", None) in self.unsupported:
            return False
        return all(
            kind in KIND_TYPES or kind in self._messages or kind.startswith(NAMESPACE_PREFIX)
            for kind in overload.params
        )

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
        return cel.Type(name) if name else cel.Type.DYN

    def encode(self, value: object) -> object:
        """A library value as its message; any other value unchanged."""
        name = self._names.get(type(value))
        return value if name is None else self._messages[name](**{FIELD: str(value)})

    def is_library_value(self, value: object) -> bool:
        """True for an instance of a library class."""
        return type(value) in self._names

    def decode(self, value: object) -> object:
        """A library value message as the library value; any other value unchanged."""
        if isinstance(value, Message):
            return self._from_text(value.DESCRIPTOR.full_name, getattr(value, FIELD))
        return value

    def _construct(self, name: str, text: str) -> object:
        return self._constructors[name](text)
