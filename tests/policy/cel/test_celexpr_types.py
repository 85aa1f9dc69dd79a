"""Library values as cel-cpp messages (celexpr/types.py): the round trip through text, and what cannot cross."""

from __future__ import annotations

import pytest
from google.protobuf import timestamp_pb2

from webhook.errors import CelEvaluationError
from webhook.policy.cel.celexpr.types import LibraryTypes
from webhook.policy.cel.libraries import LIBRARY, format, net, semver
from webhook.policy.cel.libraries.optional import Optional
from webhook.policy.cel.libraries.registry import function

TYPES = LibraryTypes(LIBRARY)


@pytest.mark.parametrize(
    "value",
    [
        pytest.param(semver.parse("1.2.3-rc.1"), id="a semver"),
        pytest.param(net.parse_cidr("10.0.0.1/8"), id="a CIDR"),
        pytest.param(format.FORMATS["uuid"], id="a format, rebuilt by its name"),
        pytest.param(Optional.none(), id="an empty optional"),
        pytest.param(Optional.of(["a", "b"]), id="an optional list of strings"),
        pytest.param(Optional.of([]), id="an optional empty list, which is not an empty optional"),
        pytest.param(Optional.of(format.FORMATS["date"]), id="an optional format"),
    ],
)
def test_library_value_round_trips(value: object) -> None:
    assert TYPES.decode(TYPES.encode(value)) == value


def test_a_semver_message_holds_what_equality_compares() -> None:
    assert TYPES.encode(semver.parse("1.0.0+a")) == TYPES.encode(semver.parse("1.0.0+b"))


def test_an_optional_of_another_value_cannot_cross() -> None:
    with pytest.raises(CelEvaluationError, match="an optional of int cannot cross cel-cpp"):
        TYPES.encode(Optional.of(1))


def test_other_messages_are_not_library_values() -> None:
    timestamp = timestamp_pb2.Timestamp(seconds=1)
    assert TYPES.decode(timestamp) is timestamp


class _Opaque:
    cel_type_name = "test.Opaque"


def _opaque() -> _Opaque:
    return _Opaque()


def test_a_library_type_without_a_text_constructor_is_refused() -> None:
    with pytest.raises(TypeError, match=r"library type test\.Opaque has no one-string constructor"):
        LibraryTypes([function("opaque", _opaque)])
