"""The add-on ``installVersion`` lifecycle, and its upstream equivalent, config-based rollout.

Pure functions over JSON-shaped dicts (ManagedClusterAddOn, ClusterManagementAddOn); no I/O, no clock.

Its rules, one by one:

* **API changes.** ``ClusterManagementAddOn.status.supportedVersions`` lists the valid versions and
  ``status.defaultVersion`` the version used when ``ManagedClusterAddOn.spec.installVersion`` is empty:
  ``AddOnVersions`` (``from_status``, ``resolve``, ``validate``). A placement's
  ``addonTemplate.installVersion`` follows the same rules: ``Placement``, ``placement_changes``.
* **Workflow / "The installVersion, lastVersion and currentVersion".** ``lastVersion`` is the previous
  ``installVersion`` (empty on a fresh install, ``unknown`` when the previous one was invalid);
  ``currentVersion`` is ``unknown`` until the install finishes: ``classify`` (Installing / Upgrading /
  Rollingback / Unchanged).
* **Condition.** The ``Progressing`` condition from ``installVersion``, ``currentVersion`` and
  ``lastVersion``: ``progressing_condition`` (reasons Installing / Upgrading / Rollingback / Succeed /
  Failed, the lifecycle's messages). Set it into ``status.conditions`` with ``webhook.conditions.set_condition``.
* **Examples, canary upgrade.** A version reaches the other placements after the canary placement runs it:
  ``canary_gate`` over ``Observation`` values of the canary placement's ManagedClusterAddOns.

Versions. The lifecycle writes ``v1``, ``v2``, ``v3``, ``v0`` and compares them with ``<`` / ``>``; they are not
strict SemVer. They are read as Masterminds/semver v3 ``NewVersion`` reads a version (the loose reading OLM
v1 applies to ``spec.version``): an optional ``v``, one to three numeric parts (missing ones are 0, leading
zeros are accepted), an optional SemVer prerelease and build; ordered by SemVer precedence, build ignored.
So ``v1 < v2 < v10`` and ``v2 == v2.0.0`` in order, while *membership* in ``supportedVersions`` is by exact
string. In the lifecycle's examples "invalid version v3 / v0" are well-formed versions that are not in
``supportedVersions`` [v1, v2]; a malformed string (``latest``) is invalid too.

Upstream OCM rolls out config sets instead: ``webhook.ocm.rollout``; the canary gate over either is
``webhook.ocm.canary``.
"""

from __future__ import annotations

import enum
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import semver

from webhook.conditions import Condition
from webhook.errors import InputError, InvalidVersion
from webhook.versions import parse_loose_version

PROGRESSING = "Progressing"
"""The condition type the add-on installVersion lifecycle adds to ManagedClusterAddOn ("New condition")."""
UNKNOWN = "unknown"
"""The value the lifecycle writes to ``currentVersion`` while installing and to ``lastVersion`` for an invalid one."""
SUCCESS_MESSAGE = "install completed with no errors."
"""The message of ``Progressing`` reason ``Succeed``, verbatim (also after an upgrade or rollback)."""
UPSTREAM_SUCCESS = "Completed"
"""Upstream OCM's ``ProgressingReasonCompleted`` (addon/v1alpha1 types_managedclusteraddon.go)."""


class VersionChange(enum.StrEnum):
    """How ``installVersion`` moves relative to the previous one (the add-on installVersion lifecycle, "Condition")."""

    INSTALLING = "Installing"
    """No previous version: ``lastVersion`` is empty or ``unknown`` (an invalid version reads as unknown)."""
    UPGRADING = "Upgrading"
    """``lastVersion < installVersion``."""
    ROLLINGBACK = "Rollingback"
    """``lastVersion > installVersion``."""
    UNCHANGED = "Unchanged"
    """``lastVersion`` and ``installVersion`` are the same version."""


class Reason(enum.StrEnum):
    """Reasons of the ``Progressing`` condition ("New condition"); spellings are the lifecycle's."""

    INSTALLING = "Installing"
    UPGRADING = "Upgrading"
    ROLLINGBACK = "Rollingback"
    SUCCEED = "Succeed"
    FAILED = "Failed"


# What a failure message says was attempted, per change ("could not upgrade to invalid version v3").
_ATTEMPT = {
    VersionChange.INSTALLING: "install",
    VersionChange.UPGRADING: "upgrade to",
    VersionChange.ROLLINGBACK: "rollback to",
    VersionChange.UNCHANGED: "install",
}


def parse_addon_version(text: str) -> semver.Version:
    """Parse an add-on version as Masterminds/semver v3 ``NewVersion`` does (see the module docstring;
    ``webhook.versions.parse_loose_version``).

    ``v1`` → 1.0.0, ``v1.2`` → 1.2.0, ``2.7.0-rc.1+b`` → 2.7.0-rc.1+b. Raises ``InvalidVersion``:
    ``invalid add-on version "latest": want v<major>[.<minor>[.<patch>]][-<prerelease>][+<build>]``, or
    the reason (a part beyond uint64, a numeric prerelease id with a leading zero).
    """
    try:
        return parse_loose_version(text)
    except InvalidVersion as error:
        raise InvalidVersion(f"invalid add-on version {json.dumps(text)}: {error}") from None


def _is_unknown(version: str | None) -> bool:
    return version is None or version in ("", UNKNOWN)


def classify(last_version: str | None, install_version: str) -> VersionChange:
    """Classify a move from ``last_version`` to ``install_version`` (the add-on installVersion lifecycle, "Condition").

    ``last_version`` ``None``, empty, ``unknown`` or malformed (the lifecycle: "invalid version is treated as
    unknown") → ``INSTALLING``; otherwise SemVer precedence of the two: ``UPGRADING``, ``ROLLINGBACK`` or
    ``UNCHANGED`` (``v2`` and ``v2.0.0`` are the same version). Raises ``InvalidVersion`` when
    ``install_version`` is malformed, since no move to it can be ordered.
    """
    install = parse_addon_version(install_version)
    if last_version is None or _is_unknown(last_version):
        return VersionChange.INSTALLING
    try:
        order = parse_addon_version(last_version).compare(install)
    except InvalidVersion:
        return VersionChange.INSTALLING
    return (
        VersionChange.UNCHANGED if order == 0 else VersionChange.UPGRADING if order < 0 else VersionChange.ROLLINGBACK
    )


def _attempt(last_version: str | None, install_version: str) -> str:
    """The verb phrase of a failure message; ``change to`` when a malformed version leaves it unordered."""
    try:
        return _ATTEMPT[classify(last_version, install_version)]
    except InvalidVersion:
        return "install" if _is_unknown(last_version) else "change to"


def progressing_condition(
    install_version: str,
    current_version: str | None,
    last_version: str | None,
    failed_reason: str | None = None,
    *,
    supported_versions: Sequence[str] | None = None,
) -> Condition:
    """The ``Progressing`` condition the add-on installVersion lifecycle, "Condition" derives from the three versions.

    ``install_version`` is the resolved ``spec.installVersion`` (see ``AddOnVersions.resolve``);
    ``current_version`` is ``status.currentVersion`` (``None``, empty and ``unknown`` all mean unknown);
    ``last_version`` is ``status.lastVersion``; ``failed_reason`` is what went wrong, if anything (e.g. from
    the ManifestWork); ``supported_versions``, when given, makes an unlisted version invalid. Rules, first
    match wins:

    1. ``currentVersion == installVersion`` → False, ``Succeed``, ``install completed with no errors.``
    2. the version is invalid (malformed, or not in ``supported_versions``) → False, ``Failed``,
       ``could not upgrade to invalid version v3`` (``install`` / ``upgrade to`` / ``rollback to`` by
       ``classify``; ``change to`` when the version is malformed and there was a last version).
    3. ``failed_reason`` → False, ``Failed``, ``could not upgrade to version v2: <failed_reason>``.
    4. currentVersion unknown and the change is Installing / Upgrading / Rollingback → True, that reason,
       ``Upgrading addon to version v2.`` (the lifecycle's messages; Installing follows the same pattern).
    5. anything else ("Any other reasons", e.g. lastVersion == installVersion while currentVersion is
       unknown, or currentVersion another version) → False, ``Failed``,
       ``could not install version v1: current version is unknown``.

    Returns ``{"type": "Progressing", "status", "reason", "message"}`` without ``lastTransitionTime``
    (``webhook.conditions.set_condition`` stamps it). Raises ``InputError`` for an empty ``install_version``.
    """
    if not install_version:
        raise InputError("installVersion is empty: resolve it with the defaultVersion first")
    if current_version == install_version:
        return _progressing(False, Reason.SUCCEED, SUCCESS_MESSAGE)
    attempt = _attempt(last_version, install_version)
    if not is_addon_version(install_version) or (
        supported_versions is not None and install_version not in supported_versions
    ):
        return _progressing(False, Reason.FAILED, f"could not {attempt} invalid version {install_version}")
    if failed_reason:
        return _progressing(False, Reason.FAILED, f"could not {attempt} version {install_version}: {failed_reason}")
    change = classify(last_version, install_version)
    if _is_unknown(current_version) and change is not VersionChange.UNCHANGED:
        return _progressing(True, Reason(change.value), f"{change.value} addon to version {install_version}.")
    current = current_version or UNKNOWN
    return _progressing(
        False, Reason.FAILED, f"could not {attempt} version {install_version}: current version is {current}"
    )


def is_addon_version(version: str) -> bool:
    """True when ``parse_addon_version`` accepts ``version``."""
    try:
        parse_addon_version(version)
    except InvalidVersion:
        return False
    return True


def _progressing(status: bool, reason: Reason, message: str) -> Condition:
    return {"type": PROGRESSING, "status": "True" if status else "False", "reason": reason.value, "message": message}


@dataclass(frozen=True)
class AddOnVersions:
    """What a ClusterManagementAddOn offers ("API changes"): ``supported`` in status order
    (duplicates dropped) and the ``default`` version, or ``None``."""

    supported: tuple[str, ...]
    default: str | None

    @classmethod
    def from_status(cls, status: Mapping[str, Any] | None) -> AddOnVersions:
        """Read ``ClusterManagementAddOn.status`` (``supportedVersions``, ``defaultVersion``).

        ``defaultVersion`` is a string in the lifecycle's Go type and a one-element list in its YAML; both are
        read, and so is an empty list (no default). Raises ``InputError`` for a list of several defaults
        or for entries that are not strings.
        """
        status = status or {}
        supported = status.get("supportedVersions") or []
        default = status.get("defaultVersion") or None
        if isinstance(default, list):
            if len(default) > 1:
                raise InputError(f"defaultVersion names {len(default)} versions; want one: {', '.join(default)}")
            default = default[0] if default else None
        if not isinstance(supported, list) or not all(isinstance(v, str) for v in supported):
            raise InputError("supportedVersions must be a list of strings")
        if default is not None and not isinstance(default, str):
            raise InputError("defaultVersion must be a string")
        return cls(tuple(dict.fromkeys(supported)), default or None)

    def resolve(self, install_version: str | None) -> str | None:
        """The effective version: ``install_version`` when non-empty, else the default (the lifecycle:
        "If installVersion is not specified, the ClusterManagementAddOn status.defaultVersion will be
        used"); ``None`` when neither is known."""
        return install_version or self.default

    def validate(self, install_version: str | None, *, field: str = "installVersion") -> str | None:
        """The denial message for ``install_version`` (``field`` names it), or ``None`` when it is valid.

        Valid means: the resolved version is listed in ``supported`` (exact string, "Valid
        installVersion are listed in ClusterManagementAddOn status.supportedVersion") and parses (so that
        upgrade and rollback are defined). Messages, all ending with the supported versions in status order::

            installVersion "v3" is not a supported version; supported versions: v1, v2
            installVersion "latest" is not a version; supported versions: v1, v2
            installVersion is empty and there is no defaultVersion; supported versions: v1, v2
            installVersion "v1" is not a supported version; supported versions: none

        An empty ``install_version`` resolves to the default; a bad default is reported as
        ``installVersion is empty and defaultVersion "v9" is not a supported version; ...``.
        """
        supported = f"supported versions: {', '.join(self.supported) or 'none'}"
        version = self.resolve(install_version)
        if version is None:
            return f"{field} is empty and there is no defaultVersion; {supported}"
        quoted = json.dumps(version)
        subject = f"{field} {quoted}" if install_version else f"{field} is empty and defaultVersion {quoted}"
        if not is_addon_version(version):
            return f"{subject} is not a version; {supported}"
        if version not in self.supported:
            return f"{subject} is not a supported version; {supported}"
        return None
