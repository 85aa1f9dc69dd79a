"""blang/semver v4.0.0, as OLM v1 reads bundle versions and ``olm.skipRange``, reproduced quirk for quirk.

* Bundle and installed versions are read by ``Parse`` (strict SemVer 2.0.0): ``parse_version``; ``key_of``
  reads a version for a range check the same way (operator-controller parses candidates with ``Parse``).
* ``olm.skipRange`` of a catalog entry is a ``ParseRange`` range: ``parse_skip_range`` → ``SkipRange``.

Error messages are blang's own texts, with Go's ``%q`` quoting.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field

import semver

from webhook.errors import InvalidConstraint, InvalidVersion
from webhook.golang import quote as go_quote
from webhook.versions.keys import DIGITS, RELEASE, UINT64_MAX, Key, Test, plain_test, prerelease_key, version_key

_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
_ALPHANUM = frozenset("0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ-")
# Go's unicode.IsSpace, used by strings.TrimSpace.
_GO_SPACE = "\t\n\v\f\r \x85\xa0\u1680" + "".join(map(chr, range(0x2000, 0x200B))) + "\u2028\u2029\u202f\u205f\u3000"


def _blang_number(text: str, part: str) -> int:
    """One of major/minor/patch as blang ``Parse`` reads it; raises ``InvalidVersion`` (blang's text)."""
    if not set(text) <= DIGITS:
        raise InvalidVersion(f"Invalid character(s) found in {part} number {go_quote(text)}")
    if len(text) > 1 and text[0] == "0":
        raise InvalidVersion(f"{part.capitalize()} number must not contain leading zeroes {go_quote(text)}")
    return _parse_uint64(text)


def _parse_uint64(digits: str) -> int:
    """Go ``strconv.ParseUint(digits, 10, 64)`` on a string of ASCII digits; raises ``InvalidVersion``."""
    if not digits:
        raise InvalidVersion('strconv.ParseUint: parsing "": invalid syntax')
    value = int(digits)
    if value > UINT64_MAX:
        raise InvalidVersion(f"strconv.ParseUint: parsing {go_quote(digits)}: value out of range")
    return value


def _blang_parse(text: str) -> tuple[int, int, int, list[str], list[str]]:
    """blang v4 ``Parse``: ``(major, minor, patch, prerelease ids, build ids)``; raises ``InvalidVersion``."""
    if not text:
        raise InvalidVersion("Version string empty")
    parts = text.split(".", 2)
    if len(parts) != 3:
        raise InvalidVersion("No Major.Minor.Patch elements found")
    major = _blang_number(parts[0], "major")
    minor = _blang_number(parts[1], "minor")
    rest, has_build, build_text = parts[2].partition("+")
    patch_text, has_pre, pre_text = rest.partition("-")
    patch = _blang_number(patch_text, "patch")
    pre = pre_text.split(".") if has_pre else []
    build = build_text.split(".") if has_build else []
    for ident in pre:
        if not ident:
            raise InvalidVersion("Prerelease is empty")
        if set(ident) <= DIGITS:
            if len(ident) > 1 and ident[0] == "0":
                raise InvalidVersion(f"Numeric PreRelease version must not contain leading zeroes {go_quote(ident)}")
            _parse_uint64(ident)
        elif not set(ident) <= _ALPHANUM:
            raise InvalidVersion(f"Invalid character(s) found in prerelease {go_quote(ident)}")
    for ident in build:
        if not ident:
            raise InvalidVersion("Build meta data is empty")
        if not set(ident) <= _ALPHANUM:
            raise InvalidVersion(f"Invalid character(s) found in build meta data {go_quote(ident)}")
    return major, minor, patch, pre, build


def parse_version(text: str) -> semver.Version:
    """Parse a bundle or installed version exactly as blang/semver v4.0.0 ``Parse`` does.

    Strict SemVer 2.0.0: ``MAJOR.MINOR.PATCH[-PRE][+BUILD]``, no ``v`` prefix, no leading zeros in
    numbers or numeric prerelease ids, every number (and numeric prerelease id) within uint64.
    Raises ``InvalidVersion`` with blang's reason, e.g.
    ``invalid version "1.2": No Major.Minor.Patch elements found``. Kept per text (``semver.Version`` is immutable).
    """
    return _parse(text)


@functools.lru_cache(maxsize=4096)
def _parse(text: str) -> semver.Version:
    try:
        major, minor, patch, pre, build = _blang_parse(text)
    except InvalidVersion as err:
        raise InvalidVersion(f"invalid version {go_quote(text)}: {err}") from None
    return semver.Version(major, minor, patch, ".".join(pre) or None, ".".join(build) or None)


@functools.lru_cache(maxsize=65536)
def _text_key(text: str) -> Key | None:
    """Comparison key of a strict version string, or ``None`` when blang ``Parse`` rejects it."""
    try:
        major, minor, patch, pre, _ = _blang_parse(text)
    except InvalidVersion:
        return None
    return (major, minor, patch, prerelease_key(".".join(pre)) if pre else RELEASE)


def key_of(version: str | semver.Version) -> Key | None:
    """The key of ``version``: a ``str`` read by ``Parse`` (``None`` when it rejects it), a ``semver.Version`` as it
    is."""
    return _text_key(version) if isinstance(version, str) else version_key(version)


_BLANG_OPS = {"": "=", "=": "=", "==": "=", "!": "!=", "!=": "!=", ">": ">", ">=": ">=", "<": "<", "<=": "<="}
_GO_INT = re.compile(r"[+-]?[0-9]+", re.ASCII)


def _blang_tokens(text: str) -> list[str]:
    """blang ``splitAndTrim``: split on the byte ' ' unless the last non-space byte was ``<``, ``>`` or
    ``=``; pieces shorter than two bytes are dropped; spaces left inside a piece are removed."""
    data = text.encode("utf-8", "surrogatepass")
    pieces: list[bytes] = []
    last = last_char = 0
    for i, byte in enumerate(data):
        if byte == 0x20 and last_char not in b"<>=":
            if last < i - 1:
                pieces.append(data[last:i])
            last = i + 1
        elif byte != 0x20:
            last_char = byte
    if last < len(data) - 1:
        pieces.append(data[last:])
    return [piece.replace(b" ", b"").decode("utf-8", "surrogatepass") for piece in pieces]


def _split_comparator(token: str) -> tuple[str, str]:
    """blang ``splitComparatorVersion``: operator (before the first digit, trimmed) and version."""
    for i, ch in enumerate(token):
        if ch.isdecimal():
            return token[:i].strip(_GO_SPACE), token[i:]
    raise InvalidConstraint(f"Could not get version from string: {go_quote(token)}")


def _bump(flat: str, index: int) -> str:
    """Part ``index`` plus one, as Go ``strconv.Atoi`` + ``Itoa`` (int64, wrapping); "" where Go errs."""
    parts = flat.split(".")
    if index < 0 or not _GO_INT.fullmatch(parts[index]) or not _INT64_MIN <= int(parts[index]) <= _INT64_MAX:
        return ""
    value = int(parts[index]) + 1
    parts[index] = str(_INT64_MIN if value > _INT64_MAX else value)
    return ".".join(parts)


def _expand_wildcard(token: str) -> list[str]:
    """blang ``expandWildcardVersion`` for one token that contains an ``x``, bugs included.

    ``1.x.x`` is flattened like a patch wildcard (``<1.1.0``); ``!=1.x`` yields two ANDed tokens
    (``<1.0.0 >=2.0.0``: nothing); an unknown operator is dropped (``~1.x`` → ``1.0.0``); an ``x`` that
    is not a wildcard (``1.0.0-x``) leaves an operator without version when a bound must be bumped.
    """
    op, version = _split_comparator(token)
    parts = version.split(".")
    # a minor wildcard (1.x) bumps the major, a patch wildcard (1.2.x, and 1.x.x) the minor
    bump_at = len(parts) - 2 if parts[-1] == "x" and len(parts) in (2, 3) else -1
    flat = version.replace(".x.x", ".x", 1).replace(".x", ".0", 1)
    if flat.count(".") == 1:
        flat += ".0"
    out: list[str] = []
    if op in ("", "=", "=="):
        out.append(">=" + flat)
        result, bump = "<", True
    elif op in ("!=", "!"):
        out.append("<" + flat)
        result, bump = ">=", True
    else:
        result, bump = {">": (">=", True), ">=": (">=", False), "<": ("<", False), "<=": ("<", True)}.get(
            op, ("", False)
        )
    out.append(result + (_bump(flat, bump_at) if bump else flat))
    return out


@dataclass(frozen=True, slots=True)
class SkipRange:
    """A parsed blang/semver v4 range (``olm.skipRange``); ``text`` is the range as written.

    Groups are ORed, the comparators of a group ANDed. No prerelease filtering at all.
    """

    text: str
    _groups: tuple[tuple[Test, ...], ...] = field(repr=False, compare=False)

    def admits(self, version: str | semver.Version) -> bool:
        """True if ``version`` is in the range, as the blang v4 ``Range`` function answers.

        Plain SemVer precedence per comparator, build metadata ignored, prereleases compared like any
        version. A ``str`` that is not strict SemVer is admitted by nothing. Where blang panics (an
        empty OR group, as in ``"1.0.0 || || 2.0.0"``, reached before a match), the empty group
        admits nothing and the groups after it are still tried.
        """
        key = key_of(version)
        if key is None:
            return False
        for group in self._groups:
            if not group:
                continue
            for test in group:
                if not test(key):
                    break
            else:
                return True
        return False


@functools.lru_cache(maxsize=8192)
def parse_skip_range(text: str) -> SkipRange:
    """Parse ``text`` as blang/semver v4.0.0 ``ParseRange`` does.

    Comparators ``"" = == != ! > >= < <=`` before a strict version, ANDed by the space character,
    ORed by a ``||`` token; a space after ``<``, ``>`` or ``=`` does not separate; tokens shorter than
    two bytes are silently dropped; lowercase ``x`` wildcards are expanded (with upstream's bugs, see
    ``_expand_wildcard``). No commas, no tabs as separators, no ``~``/``^``/``v``.
    Raises ``InvalidConstraint`` with blang's text, e.g. ``Last element in range is '||'`` or
    ``Could not parse Range "<1.2": Could not parse version "1.2" in "<1.2": No Major.Minor.Patch
    elements found``.
    """
    tokens = _blang_tokens(text)
    groups: list[list[str]] = []
    last = 0
    for i, token in enumerate(tokens):
        if token == "||":
            if i == 0:
                raise InvalidConstraint("First element in range is '||'")
            groups.append(tokens[last:i])
            last = i + 1
    if last == len(tokens):
        raise InvalidConstraint("Last element in range is '||'")
    groups.append(tokens[last:])
    expanded = [[p for t in group for p in (_expand_wildcard(t) if "x" in t else [t])] for group in groups]
    compiled: list[tuple[Test, ...]] = []
    for group in expanded:
        tests: list[Test] = []
        for token in group:
            op, version = _split_comparator(token)
            if op not in _BLANG_OPS:
                raise InvalidConstraint(
                    f"Could not parse Range {go_quote(token)}: "
                    f"Could not parse comparator {go_quote(op)} in {go_quote(op + version)}"
                )
            try:
                major, minor, patch, pre, _ = _blang_parse(version)
            except InvalidVersion as err:
                raise InvalidConstraint(
                    f"Could not parse Range {go_quote(token)}: "
                    f"Could not parse version {go_quote(version)} in {go_quote(op + version)}: {err}"
                ) from None
            bound = (major, minor, patch, prerelease_key(".".join(pre)) if pre else RELEASE)
            tests.append(plain_test(_BLANG_OPS[op], bound))
        compiled.append(tuple(tests))
    return SkipRange(text, tuple(compiled))
