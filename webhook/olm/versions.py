"""Version ranges of OLM v1 on top of python-semver: two dialects, reproduced quirk for quirk.

* ``spec.source.catalog.version`` of a ClusterExtension is a **Masterminds/semver v3** constraint
  (``NewConstraint`` + ``Check`` with ``IncludePrerelease=false``, v3.4.0 .. v3.5.0 semantics):
  ``parse_constraint`` → ``Constraint``.
* ``olm.skipRange`` of a catalog entry is a **blang/semver v4.0.0** range (``ParseRange``):
  ``parse_skip_range`` → ``SkipRange``.
* Bundle and installed versions are read by blang ``Parse`` (strict SemVer 2.0.0): ``parse_version``.

Both range types are parsed once into small frozen objects whose terms are precompiled tests on a
comparison key ``(major, minor, patch, prerelease)`` (build metadata never takes part, as in both
libraries), so ``admits`` costs a few tuple comparisons. Error messages are the libraries' own texts,
with Go's ``%q`` quoting.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from dataclasses import dataclass, field

import semver

from webhook.errors import InvalidConstraint, InvalidVersion
from webhook.golang import quote as go_quote

__all__ = ["Constraint", "SkipRange", "parse_constraint", "parse_skip_range", "parse_version"]

_PreKey = tuple[tuple[int, int | str], ...]
_Key = tuple[int, int, int, _PreKey]
_Test = Callable[[_Key], bool]

# A release sorts above every prerelease: prerelease ids are tagged 0 (numeric) or 1 (alphanumeric).
_RELEASE: _PreKey = ((2, 0),)
_UINT64_MAX = 2**64 - 1
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
_DIGITS = frozenset("0123456789")
_ALPHANUM = frozenset("0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ-")
# Go's unicode.IsSpace, used by strings.TrimSpace.
_GO_SPACE = "\t\n\v\f\r \x85\xa0\u1680" + "".join(map(chr, range(0x2000, 0x200B))) + "\u2028\u2029\u202f\u205f\u3000"


@functools.lru_cache(maxsize=4096)
def _prerelease_key(text: str) -> _PreKey:
    """Precedence key of a dot-separated prerelease: numeric ids numerically, below alphanumeric ids."""
    return tuple((0, int(i)) if i.isascii() and i.isdigit() else (1, i) for i in text.split("."))


def _version_key(version: semver.Version) -> _Key:
    pre = version.prerelease
    return (version.major, version.minor, version.patch, _prerelease_key(pre) if pre else _RELEASE)


# --- blang/semver v4 Parse ------------------------------------------------------------------------


def _blang_number(text: str, part: str) -> int:
    """One of major/minor/patch as blang ``Parse`` reads it; raises ``InvalidVersion`` (blang's text)."""
    if not set(text) <= _DIGITS:
        raise InvalidVersion(f"Invalid character(s) found in {part} number {go_quote(text)}")
    if len(text) > 1 and text[0] == "0":
        raise InvalidVersion(f"{part.capitalize()} number must not contain leading zeroes {go_quote(text)}")
    return _parse_uint64(text)


def _parse_uint64(digits: str) -> int:
    """Go ``strconv.ParseUint(digits, 10, 64)`` on a string of ASCII digits; raises ``InvalidVersion``."""
    if not digits:
        raise InvalidVersion('strconv.ParseUint: parsing "": invalid syntax')
    value = int(digits)
    if value > _UINT64_MAX:
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
        if set(ident) <= _DIGITS:
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
    ``invalid version "1.2": No Major.Minor.Patch elements found``.
    """
    try:
        major, minor, patch, pre, build = _blang_parse(text)
    except InvalidVersion as err:
        raise InvalidVersion(f"invalid version {go_quote(text)}: {err}") from None
    return semver.Version(major, minor, patch, ".".join(pre) or None, ".".join(build) or None)


@functools.lru_cache(maxsize=65536)
def _text_key(text: str) -> _Key | None:
    """Comparison key of a strict version string, or ``None`` when blang ``Parse`` rejects it."""
    try:
        major, minor, patch, pre, _ = _blang_parse(text)
    except InvalidVersion:
        return None
    return (major, minor, patch, _prerelease_key(".".join(pre)) if pre else _RELEASE)


def _key_of(version: str | semver.Version) -> _Key | None:
    return _text_key(version) if isinstance(version, str) else _version_key(version)


# --- Masterminds/semver v3 NewConstraint / Check -----------------------------------------------------

_WS = " \t\n\f\r"  # Go regexp \s
_SEG = r"[0-9|xX*]+"  # upstream's class [0-9|x|X|\*] also admits '|'
_IDS = r"[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*"
_CV = rf"v?({_SEG})(?:\.({_SEG}))?(?:\.({_SEG}))?(?:-({_IDS}))?(?:\+{_IDS})?"
_CV_RE = re.compile(_CV)
_PLAIN_CV = re.sub(r"\((?!\?)", "(?:", _CV)
_HYPHEN_RE = re.compile(rf"[{_WS}]*({_PLAIN_CV})[{_WS}]+-[{_WS}]+({_PLAIN_CV})[{_WS}]*")
_ATOM_RE = re.compile(rf"[{_WS}]*([=!<>~^]*)[{_WS}]*([^{_WS},]*)[{_WS}]*")
_MM_OPS = {"": "=", "=": "=", "!=": "!=", ">": ">", "<": "<", ">=": ">=", "=>": ">=", "<=": "<="}
_MM_OPS |= {"=<": "<=", "~": "~", "~>": "~", "^": "^"}
_WILDCARDS = ("x", "X", "*")
_MAX_CONSTRAINT_BYTES, _MAX_CONSTRAINT_GROUPS = 512, 32  # upstream MaxConstraintLen, MaxConstraintGroups


def _rewrite_hyphen_ranges(text: str) -> str:
    """Upstream ``rewriteRange``: every ``A - B`` (whitespace around ``-``) becomes ``>= A, <= B ``."""
    if "-" not in text:
        return text
    out = text
    for match in _HYPHEN_RE.finditer(text):
        out = out.replace(match[0], f">= {match[1]}, <= {match[2]} ", 1)
    return out


def _split_group(group: str) -> list[tuple[str, str]] | None:
    """``(operator, version)`` terms of one OR group, or ``None`` when the group is improper.

    Terms are separated by whitespace or by one comma (with optional whitespace around it); an
    operator may be followed by whitespace; nothing else may stand between or around terms.
    """
    terms: list[tuple[str, str]] = []
    pos = 0
    while True:
        match = _ATOM_RE.match(group, pos)
        assert match is not None  # every part of the pattern is optional
        op, cv = match[1], match[2]
        if op not in _MM_OPS or not _CV_RE.fullmatch(cv):
            return None
        terms.append((op, cv))
        pos = match.end()
        if pos == len(group):
            return terms
        if group[pos] == ",":
            pos += 1


def _mm_number(text: str) -> int:
    """A numeric part for Masterminds ``NewVersion`` (leading zeros coerced since v3.4.0)."""
    if not set(text) <= _DIGITS or int(text) > _UINT64_MAX:
        raise ValueError(text)
    return int(text)


def _mm_term(op: str, cv: str) -> tuple[_Test, bool]:
    """One Masterminds term: its test and whether its version carries a prerelease; raises ``ValueError``."""
    match = _CV_RE.fullmatch(cv)
    assert match is not None  # validated by _split_group
    major_s, minor_s, patch_s, pre = match.groups()
    if pre and any(i[0] == "0" and len(i) > 1 and set(i) <= _DIGITS for i in pre.split(".")):
        raise ValueError(pre)
    pre_key = _prerelease_key(pre) if pre else _RELEASE
    minor_dirty = patch_dirty = False
    dirty = True
    if major_s in _WILDCARDS:  # everything after a wildcard major is ignored
        base: _Key = (0, 0, 0, pre_key)
    elif minor_s is None or minor_s in _WILDCARDS:
        minor_dirty = True
        base = (_mm_number(major_s), 0, 0, pre_key)
    elif patch_s is None or patch_s in _WILDCARDS:
        patch_dirty = True
        base = (_mm_number(major_s), _mm_number(minor_s), 0, pre_key)
    else:
        dirty = False
        base = (_mm_number(major_s), _mm_number(minor_s), _mm_number(patch_s), pre_key)
    return _mm_test(_MM_OPS[op], base, minor_dirty, patch_dirty, dirty), pre is not None


def _mm_test(op: str, base: _Key, minor_dirty: bool, patch_dirty: bool, dirty: bool) -> _Test:
    """The Masterminds v3 comparison ``op`` against ``base`` (plain precedence; prereleases are
    filtered per OR group by the caller). ``dirty`` = partial or wildcard version."""
    major, minor, patch = base[0], base[1], base[2]
    if op == "=" and dirty:
        op = "~"
    if op == "~":
        if base[:3] == (0, 0, 0) and not minor_dirty and not patch_dirty:
            return lambda k: k >= base  # ~0.0.0, ~*, *: everything from the base on
        if minor_dirty:
            return lambda k: k >= base and k[0] == major
        return lambda k: k >= base and k[0] == major and k[1] == minor
    if op == "^":
        if major > 0 or minor_dirty:
            return lambda k: k >= base and k[0] == major
        if minor > 0 or patch_dirty:
            return lambda k: k >= base and k[0] == 0 and k[1] == minor
        return lambda k: k >= base and k[0] == 0 and k[1] == 0 and k[2] == patch  # also ^*
    if op == "!=":
        if minor_dirty:
            return lambda k: k[0] != major
        if patch_dirty:
            return lambda k: k[0] != major or k[1] != minor or k[3] != base[3]
        return lambda k: k != base
    if op == ">":
        if minor_dirty:
            return lambda k: k[0] > major
        if patch_dirty:
            return lambda k: k[0] > major or (k[0] == major and k[1] > minor)
        return lambda k: k > base
    if op == "<=":
        if minor_dirty:
            return lambda k: k[0] <= major
        if dirty:
            return lambda k: k[0] < major or (k[0] == major and k[1] <= minor)  # <=1.2, and <=* = 0.0.x
        return lambda k: k <= base
    if op == "<":
        return lambda k: k < base
    if op == ">=":
        return lambda k: k >= base
    return lambda k: k == base


@dataclass(frozen=True, slots=True)
class _Group:
    """An AND group: its tests, and whether a term's version has a prerelease (then prereleases count)."""

    prerelease: bool
    tests: tuple[_Test, ...]


@dataclass(frozen=True, slots=True)
class Constraint:
    """A parsed Masterminds/semver v3 constraint (``spec.source.catalog.version``).

    ``text`` is the constraint as written; equality and hashing use it. ``str(c)`` renders like
    Masterminds ``Constraints.String()``: terms as operator + original version, AND by ``" "``,
    OR by ``" || "``, hyphen ranges rewritten (``"1 - 2, 3 ||4"`` → ``">=1 <=2 3 || 4"``).
    """

    text: str
    _groups: tuple[_Group, ...] = field(repr=False, compare=False)
    _rendered: str = field(repr=False, compare=False)

    def admits(self, version: str | semver.Version) -> bool:
        """True if ``version`` satisfies the constraint, as Masterminds v3.4+ ``Constraints.Check``.

        ``IncludePrerelease`` is false: a prerelease version is considered only by the OR groups
        in which some term's version carries a prerelease; then every term compares by plain SemVer
        precedence (build metadata ignored). A ``str`` is read by ``parse_version`` rules; one that
        is not strict SemVer is admitted by nothing. A ``semver.Version`` is taken as it is.
        """
        key = _key_of(version)
        if key is None:
            return False
        prerelease = key[3] is not _RELEASE
        for group in self._groups:
            if prerelease and not group.prerelease:
                continue
            for test in group.tests:
                if not test(key):
                    break
            else:
                return True
        return False

    def __str__(self) -> str:
        return self._rendered


@functools.lru_cache(maxsize=1024)
def parse_constraint(text: str) -> Constraint:
    """Parse ``text`` as Masterminds/semver v3 ``NewConstraint`` (v3.4.0 .. v3.5.0) does.

    Grammar: OR groups split on ``||``; terms ANDed by whitespace or a comma; operators
    ``= != > < >= => <= =< ~ ~> ^`` or none; versions ``v?N(.N)?(.N)?(-PRE)?(+BUILD)?`` where each ``N``
    is digits (leading zeros coerced) or a wildcard ``x X *``; hyphen ranges ``A - B``.
    Raises ``InvalidConstraint`` with upstream's (v3.5.0) text: ``improper constraint: "<OR group>"``
    when a group does not match the grammar (also for ``""``); ``constraint parser error: "<term>"``
    when a term's version is not a valid version (number beyond uint64, leading zero in a numeric
    prerelease id, a part such as ``1x`` or ``|``; upstream's own text stops before the colon);
    ``constraint string is too long (max 512 bytes)``; ``too many constraint groups (max 32)``.
    """
    if len(text.encode("utf-8", "surrogatepass")) > _MAX_CONSTRAINT_BYTES:
        raise InvalidConstraint(f"constraint string is too long (max {_MAX_CONSTRAINT_BYTES} bytes)")
    or_groups = _rewrite_hyphen_ranges(text).split("||")
    if len(or_groups) > _MAX_CONSTRAINT_GROUPS:
        raise InvalidConstraint(f"too many constraint groups (max {_MAX_CONSTRAINT_GROUPS})")
    groups: list[_Group] = []
    rendered: list[str] = []
    for group in or_groups:
        terms = _split_group(group)
        if terms is None:
            raise InvalidConstraint(f"improper constraint: {go_quote(group)}")
        tests: list[_Test] = []
        prerelease = False
        for op, cv in terms:
            try:
                test, has_pre = _mm_term(op, cv)
            except ValueError:
                raise InvalidConstraint(f"constraint parser error: {go_quote(op + cv)}") from None
            tests.append(test)
            prerelease = prerelease or has_pre
        groups.append(_Group(prerelease, tuple(tests)))
        rendered.append(" ".join(op + cv for op, cv in terms))
    return Constraint(text, tuple(groups), " || ".join(rendered))


# --- blang/semver v4 ParseRange -----------------------------------------------------------------------

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
    _groups: tuple[tuple[_Test, ...], ...] = field(repr=False, compare=False)

    def admits(self, version: str | semver.Version) -> bool:
        """True if ``version`` is in the range, as the blang v4 ``Range`` function answers.

        Plain SemVer precedence per comparator, build metadata ignored, prereleases compared like any
        version. A ``str`` that is not strict SemVer is admitted by nothing. Where blang panics (an
        empty OR group, as in ``"1.0.0 || || 2.0.0"``, reached before a match), the empty group
        admits nothing and the groups after it are still tried.
        """
        key = _key_of(version)
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
    compiled: list[tuple[_Test, ...]] = []
    for group in expanded:
        tests: list[_Test] = []
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
            bound = (major, minor, patch, _prerelease_key(".".join(pre)) if pre else _RELEASE)
            tests.append(_mm_test(_BLANG_OPS[op], bound, False, False, False))
        compiled.append(tuple(tests))
    return SkipRange(text, tuple(compiled))
