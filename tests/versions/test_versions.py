"""What both dialects share: errors that are ``ValueError`` too, parsed ranges as frozen values cached by text,
``semver.Version`` objects taken as they are."""

from __future__ import annotations

import pytest
import semver

from webhook.versions import Constraint, SkipRange, parse_constraint, parse_skip_range, parse_version


def test_errors_are_value_errors_too() -> None:
    with pytest.raises(ValueError, match="improper constraint"):
        parse_constraint("foobar")
    with pytest.raises(ValueError, match="Last element"):
        parse_skip_range("")
    with pytest.raises(ValueError, match="Version string empty"):
        parse_version("")


def test_parsed_ranges_are_frozen_values_cached_by_text() -> None:
    constraint = parse_constraint(">=1.0.0 <2.0.0")
    assert parse_constraint(">=1.0.0 <2.0.0") is constraint
    assert isinstance(constraint, Constraint)
    assert constraint == Constraint(">=1.0.0 <2.0.0", (), "")
    assert hash(constraint) == hash(Constraint(">=1.0.0 <2.0.0", (), ""))
    assert repr(constraint) == "Constraint(text='>=1.0.0 <2.0.0')"
    skip_range = parse_skip_range(">=1.0.0 <2.0.0")
    assert isinstance(skip_range, SkipRange)
    assert parse_skip_range(">=1.0.0 <2.0.0") is skip_range
    assert repr(skip_range) == "SkipRange(text='>=1.0.0 <2.0.0')"
    with pytest.raises(AttributeError):
        constraint.text = "*"  # type: ignore[misc]


def test_version_objects_are_taken_as_they_are() -> None:
    """A ``semver.Version`` skips string parsing; its precedence alone decides."""
    assert parse_constraint("^1.2").admits(semver.Version(1, 9, 0, build="x"))
    assert not parse_constraint("^1.2").admits(semver.Version(1, 9, 0, "rc.1"))
    assert parse_skip_range("<1.9.0").admits(semver.Version(1, 9, 0, "rc.1"))
