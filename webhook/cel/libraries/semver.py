"""Kubernetes' semver library (``pkg/cel/library/semverlib.go``, blang/semver v4 underneath)::

    semver(string[, bool normalize]) -> Semver       isSemver(string[, bool normalize]) -> bool
    <Semver>.major() / .minor() / .patch() -> int
    <Semver>.isGreaterThan(Semver) / .isLessThan(Semver) -> bool
    <Semver>.compareTo(Semver) -> int (-1, 0, 1)

Strict SemVer 2.0.0 as blang ``Parse`` reads it (``webhook.versions.parse_version``): no ``v``, three parts,
no leading zeros; the error text is blang's (``No Major.Minor.Patch elements found``). With ``normalize``
true a leading ``v`` is dropped, missing minor/patch parts are padded with ``.0`` and leading zeros are
removed first (``semver("v01.01", true) == semver("1.1.0")``). Equality and order follow SemVer precedence
(build metadata ignored).
"""

from __future__ import annotations

import re

import semver as python_semver

from webhook.cel.libraries.registry import Overload, function, member
from webhook.errors import CelEvaluationError, InvalidVersion
from webhook.versions import parse_version

_CORE = re.compile(r"^(\d+)(?:\.(\d+))?(?:\.(\d+))?(.*)$", re.DOTALL)


class Semver:
    """A parsed semantic version (CEL type ``kubernetes.Semver``); ``str`` is its canonical text."""

    cel_type_name = "kubernetes.Semver"
    __slots__ = ("version",)

    def __init__(self, version: python_semver.Version) -> None:
        self.version = version

    def compare_to(self, other: Semver) -> int:
        """-1, 0 or 1 by SemVer precedence."""
        return int(self.version.compare(other.version))

    def equality_text(self) -> str:
        """The text of what ``==`` compares: the version without its build metadata (``1.0.0-rc.1``), which
        SemVer precedence (blang's ``EQ``) ignores and no function of the library reads."""
        return str(self.version).partition("+")[0]  # SemVer identifiers have no "+": it starts the build

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Semver) and self.compare_to(other) == 0

    def __hash__(self) -> int:
        return hash(self.equality_text())

    def __str__(self) -> str:
        return str(self.version)


def _normalize(text: str) -> str:
    text = text.removeprefix("v")
    core = _CORE.match(text)
    if core is None:
        return text
    major, minor, patch, rest = core.groups()
    return ".".join(str(int(part or "0")) for part in (major, minor, patch)) + rest


def parse(text: str, normalize: bool = False) -> Semver:
    """``semver(text[, normalize])``; raises ``CelEvaluationError`` with blang's reason."""
    try:
        return Semver(parse_version(_normalize(text) if normalize else text))
    except InvalidVersion as error:
        raise CelEvaluationError(str(error)) from None


def is_semver(text: str, normalize: bool = False) -> bool:
    """True if ``semver(text, normalize)`` would succeed."""
    try:
        parse(text, normalize)
    except CelEvaluationError:
        return False
    return True


def major(version: Semver) -> int:
    """The major version number."""
    return int(version.version.major)


def minor(version: Semver) -> int:
    """The minor version number."""
    return int(version.version.minor)


def patch(version: Semver) -> int:
    """The patch version number."""
    return int(version.version.patch)


def compare_to(version: Semver, other: Semver) -> int:
    """-1, 0 or 1 by SemVer precedence."""
    return version.compare_to(other)


def is_greater_than(version: Semver, other: Semver) -> bool:
    """True if ``version`` has higher precedence than ``other``."""
    return version.compare_to(other) > 0


def is_less_than(version: Semver, other: Semver) -> bool:
    """True if ``version`` has lower precedence than ``other``."""
    return version.compare_to(other) < 0


_T = Semver.cel_type_name
OVERLOADS: tuple[Overload, ...] = (
    function("semver", parse, "string"),
    function("semver", parse, "string", "bool"),
    function("isSemver", is_semver, "string"),
    function("isSemver", is_semver, "string", "bool"),
    member("major", major, _T),
    member("minor", minor, _T),
    member("patch", patch, _T),
    member("compareTo", compare_to, _T, _T),
    member("isGreaterThan", is_greater_than, _T, _T),
    member("isLessThan", is_less_than, _T, _T),
)
