"""Go's ``%q`` (``strconv.Quote``), on cases modelled on Go's own strconv quote tests (runes, not bytes)."""

from __future__ import annotations

import pytest

from webhook.golang import quote


@pytest.mark.parametrize(
    ("text", "quoted"),
    [
        pytest.param("\a\b\f\r\n\t\v", '"\\a\\b\\f\\r\\n\\t\\v"', id="control characters have their short escapes"),
        pytest.param("\\", '"\\\\"', id="a backslash is escaped"),
        pytest.param("abc\xffdef", '"abc\xffdef"', id="a printable Latin-1 character stays as it is"),
        pytest.param("\u263a", '"\u263a"', id="a printable rune stays as it is"),
        pytest.param("\U0010ffff", '"\\U0010ffff"', id="a non-printable rune above the BMP is a long escape"),
        pytest.param("\x04", '"\\x04"', id="another control character is a hex escape"),
        pytest.param('"', '"\\""', id="a double quote is escaped"),
        pytest.param("\u200b", '"\\u200b"', id="a format character is a unicode escape"),
    ],
)
def test_quote_matches_strconv_quote(text: str, quoted: str) -> None:
    assert quote(text) == quoted
