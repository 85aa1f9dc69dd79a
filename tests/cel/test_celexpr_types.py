"""Library values as cel-cpp messages (celexpr/types.py): the round trip through text, optionals as lists, and
what cannot cross."""

from __future__ import annotations

import datetime
from typing import Any

import pytest
from google.protobuf import timestamp_pb2

from webhook.cel.celexpr.types import LibraryTypes
from webhook.cel.celexpr.values import from_expr, to_expr
from webhook.cel.libraries import LIBRARY, format, net, semver
from webhook.cel.libraries.optional import Optional
from webhook.cel.libraries.registry import function
from webhook.errors import CelEvaluationError

TYPES = LibraryTypes(LIBRARY)


@pytest.mark.parametrize(
    "value",
    [
        pytest.param(semver.parse("1.2.3-rc.1"), id="a semver"),
        pytest.param(net.parse_cidr("10.0.0.1/8"), id="a CIDR"),
        pytest.param(format.FORMATS["uuid"], id="a format, rebuilt by its name"),
    ],
)
def test_library_value_round_trips(value: object) -> None:
    assert TYPES.decode(TYPES.encode(value)) == value


def test_a_semver_message_holds_what_equality_compares() -> None:
    assert TYPES.encode(semver.parse("1.0.0+a")) == TYPES.encode(semver.parse("1.0.0+b"))


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        pytest.param(Optional.none(), [], id="an empty optional"),
        pytest.param(Optional.of([]), [[]], id="an optional empty list, which is not an empty optional"),
        pytest.param(Optional.of(1), [1], id="an optional int"),
        pytest.param(Optional.of(format.FORMATS["date"]), [TYPES.encode(format.FORMATS["date"])], id="a format"),
    ],
)
def test_an_optional_crosses_as_a_list_of_zero_or_one_element(value: object, expected: object) -> None:
    assert to_expr(value, TYPES) == expected


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


def test_plain_json_is_passed_to_cel_cpp_as_it_is_and_only_what_changes_is_copied() -> None:
    items: list[object] = [{"a": {}}]
    plain = {"spec": {"versions": ["1.2.3", 4, 5.5, True, None]}, "items": items}
    assert to_expr(plain, TYPES) is plain
    moment = datetime.datetime(2026, 1, 2, tzinfo=datetime.UTC)
    when: list[object] = [1, moment]
    converted: Any = to_expr({"keep": items, "when": when}, TYPES)
    assert converted["keep"] is items
    assert isinstance(converted["when"][1], timestamp_pb2.Timestamp)
    assert when[1] is moment  # the input is never changed


def test_a_result_is_converted_only_where_it_is_not_plain_json() -> None:
    plain: list[object] = [{"op": "add", "value": [1, 2.5, None]}]
    assert from_expr(plain) is plain
    assert from_expr([{"b": bytearray(b"x")}, 1]) == [{"b": b"x"}, 1]


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        pytest.param(
            {1: "a", "b": [2**63 - 1, -(2**63)]}, {1: "a", "b": [2**63 - 1, -(2**63)]}, id="a key not a string"
        ),
        pytest.param({"a": [b"x", bytearray(b"y")]}, {"a": [b"x", b"y"]}, id="bytes"),
        pytest.param({"a": {"b": (1, 2)}}, {"a": {"b": [1, 2]}}, id="a tuple"),
    ],
)
def test_what_is_not_plain_json_is_converted_where_it_is(value: object, expected: object) -> None:
    assert to_expr(value, TYPES) == expected


@pytest.mark.parametrize(
    ("value", "message"),
    [
        pytest.param({"a": [{"b": 2**63}]}, "$.a[0].b: integer overflow", id="an int beyond int64"),
        pytest.param([[{"b": -(2**63) - 1}]], "$[0][0].b: integer overflow", id="an int below int64 in a list"),
        pytest.param({"a": {"b": bytearray(b"x"), "c": 2**64}}, "$.a.c: integer overflow", id="beside a bytearray"),
        pytest.param({"a": (1, object())}, "$.a[1]: a object is not a JSON value", id="a non-JSON value"),
    ],
)
def test_a_value_cel_cannot_hold_is_named_by_its_path(value: object, message: str) -> None:
    with pytest.raises(CelEvaluationError) as raised:
        to_expr(value, TYPES)
    assert str(raised.value).startswith(message)


@pytest.mark.parametrize(
    "value",
    [
        datetime.datetime(2026, 1, 5, 10, 0, 0, 123456, tzinfo=datetime.UTC),
        datetime.datetime(2026, 1, 5, 10, 0, 0, 5),  # naive: read as UTC
        datetime.datetime(2026, 1, 5, 10, 0, tzinfo=datetime.timezone(datetime.timedelta(hours=-7, minutes=-30))),
        datetime.datetime(1969, 12, 31, 23, 59, 59, 999999, tzinfo=datetime.UTC),  # before the epoch
        datetime.datetime(1, 1, 1, tzinfo=datetime.UTC),
        datetime.datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=datetime.UTC),
    ],
    ids=str,
)
def test_a_timestamp_is_the_message_protobuf_makes_of_it(value: datetime.datetime) -> None:
    expected = timestamp_pb2.Timestamp()
    expected.FromDatetime(value if value.tzinfo else value.replace(tzinfo=datetime.UTC))
    assert to_expr(value, TYPES) == expected
