"""The comparison key every dialect orders versions by: ``(major, minor, patch, prerelease)``.

SemVer 2.0.0 precedence, as blang/semver, Masterminds/semver and python-semver all apply it: numbers numerically, a
release above its prereleases, prerelease ids left to right (numeric ids numerically and below alphanumeric ones,
fewer ids first); build metadata never takes part. A parsed range is a tuple of ``Test`` functions on keys, so
checking a version costs a few tuple comparisons.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import semver

PreKey = tuple[tuple[int, int | str], ...]
Key = tuple[int, int, int, PreKey]
Test = Callable[[Key], bool]

# A release sorts above every prerelease: prerelease ids are tagged 0 (numeric) or 1 (alphanumeric).
RELEASE: PreKey = ((2, 0),)
UINT64_MAX = 2**64 - 1
DIGITS = frozenset("0123456789")


@functools.lru_cache(maxsize=4096)
def prerelease_key(text: str) -> PreKey:
    """Precedence key of a dot-separated prerelease: numeric ids numerically, below alphanumeric ids."""
    return tuple((0, int(i)) if i.isascii() and i.isdigit() else (1, i) for i in text.split("."))


def version_key(version: semver.Version) -> Key:
    """The key of a ``semver.Version``."""
    pre = version.prerelease
    return (version.major, version.minor, version.patch, prerelease_key(pre) if pre else RELEASE)


def plain_test(op: str, base: Key) -> Test:
    """The comparison ``op`` (``= != > >= < <=``) against ``base`` by plain precedence."""
    if op == "!=":
        return lambda k: k != base
    if op == ">":
        return lambda k: k > base
    if op == "<=":
        return lambda k: k <= base
    if op == "<":
        return lambda k: k < base
    if op == ">=":
        return lambda k: k >= base
    return lambda k: k == base
