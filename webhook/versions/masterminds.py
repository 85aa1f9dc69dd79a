"""Masterminds/semver v3, as OLM v1 reads ``spec.source.catalog.version`` and as Open Cluster Management's add-on
lifecycle reads versions, reproduced quirk for quirk (v3.4.0 .. v3.5.0 semantics).

* ``NewConstraint`` + ``Check`` with ``IncludePrerelease=false``: ``parse_constraint`` → ``Constraint``; the
  versions it checks are read by blang ``Parse`` (``blang.key_of``), as operator-controller does.
* ``NewVersion`` (the loose reading, ``CoerceNewVersion``): ``parse_loose_version``.

Error messages are the library's own texts, with Go's ``%q`` quoting.
"""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass, field

import semver

from webhook.errors import InvalidConstraint, InvalidVersion
from webhook.golang import quote as go_quote
from webhook.versions.blang import key_of
from webhook.versions.keys import DIGITS, RELEASE, UINT64_MAX, Key, Test, plain_test, prerelease_key

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
_LOOSE_RE = re.compile(rf"v?([0-9]+)(?:\.([0-9]+))?(?:\.([0-9]+))?(?:-({_IDS}))?(?:\+({_IDS}))?", re.ASCII)
LOOSE_FORM = "v<major>[.<minor>[.<patch>]][-<prerelease>][+<build>]"
"""The form ``parse_loose_version`` reads."""
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
    if not set(text) <= DIGITS or int(text) > UINT64_MAX:
        raise ValueError(text)
    return int(text)


def _mm_term(op: str, cv: str) -> tuple[Test, bool]:
    """One Masterminds term: its test and whether its version carries a prerelease; raises ``ValueError``."""
    match = _CV_RE.fullmatch(cv)
    assert match is not None  # validated by _split_group
    major_s, minor_s, patch_s, pre = match.groups()
    if pre and any(i[0] == "0" and len(i) > 1 and set(i) <= DIGITS for i in pre.split(".")):
        raise ValueError(pre)
    pre_key = prerelease_key(pre) if pre else RELEASE
    minor_dirty = patch_dirty = False
    dirty = True
    if major_s in _WILDCARDS:  # everything after a wildcard major is ignored
        base: Key = (0, 0, 0, pre_key)
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


def _mm_test(op: str, base: Key, minor_dirty: bool, patch_dirty: bool, dirty: bool) -> Test:
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
    if op == "!=" and minor_dirty:
        return lambda k: k[0] != major
    if op == "!=" and patch_dirty:
        return lambda k: k[0] != major or k[1] != minor or k[3] != base[3]
    if op == ">" and minor_dirty:
        return lambda k: k[0] > major
    if op == ">" and patch_dirty:
        return lambda k: k[0] > major or (k[0] == major and k[1] > minor)
    if op == "<=" and minor_dirty:
        return lambda k: k[0] <= major
    if op == "<=" and dirty:
        return lambda k: k[0] < major or (k[0] == major and k[1] <= minor)  # <=1.2, and <=* = 0.0.x
    return plain_test(op, base)


@dataclass(frozen=True, slots=True)
class _Group:
    """An AND group: its tests, and whether a term's version has a prerelease (then prereleases count)."""

    prerelease: bool
    tests: tuple[Test, ...]


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
        key = key_of(version)
        if key is None:
            return False
        prerelease = key[3] is not RELEASE
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
        tests: list[Test] = []
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


def parse_loose_version(text: str) -> semver.Version:
    """Parse ``text`` as Masterminds/semver v3 ``NewVersion`` does (``CoerceNewVersion``): an optional ``v``, one
    to three numeric parts (missing ones are 0, leading zeros accepted), an optional SemVer prerelease and build.

    ``v1`` → 1.0.0, ``v1.2`` → 1.2.0, ``2.7.0-rc.1+b`` → 2.7.0-rc.1+b. Raises ``InvalidVersion`` with the reason
    alone: ``want <LOOSE_FORM>``, ``a number is beyond uint64`` or ``prerelease id "01" has a leading zero``.
    """
    if not isinstance(text, str):
        raise InvalidVersion(f"want {LOOSE_FORM}")
    return _parse_loose(text)


@functools.lru_cache(maxsize=4096)
def _parse_loose(text: str) -> semver.Version:
    """``parse_loose_version`` of a string, kept per text (``semver.Version`` is immutable)."""
    match = _LOOSE_RE.fullmatch(text)
    if match is None:
        raise InvalidVersion(f"want {LOOSE_FORM}")
    numbers = [int(part or "0") for part in match.group(1, 2, 3)]
    if max(numbers) > UINT64_MAX:
        raise InvalidVersion("a number is beyond uint64")
    prerelease, build = match[4], match[5]
    for ident in prerelease.split(".") if prerelease else ():
        if ident.isdigit() and len(ident) > 1 and ident[0] == "0":
            raise InvalidVersion(f"prerelease id {json.dumps(ident)} has a leading zero")
    major, minor, patch = numbers
    return semver.Version(major, minor, patch, prerelease, build)
