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

Upstream Open Cluster Management (shared/reference/peers.md §C) has no ``installVersion``: a rollout is a
change of the **config set** (``ManagedClusterAddOn.spec.configs``, a placement's ``configs``), tracked in
status as ``desiredConfig`` / ``lastAppliedConfig`` / ``lastKnownGoodConfig`` with ``Progressing`` reason
``Completed`` on success. What maps onto the installVersion lifecycle, and what does not:

============================  =======================================================================
installVersion lifecycle      config-based rollout (``classify_configs``, ``Observation.of_configs``)
============================  =======================================================================
Installing (no lastVersion)   no previous object, hence no previous config set
Unchanged                     the same set of config references (order-insensitive)
Rollingback (last > install)  the desired set equals the placement's ``lastKnownGoodConfig`` set
Upgrading (last < install)    any other change: configs are names, not ordered, so "forward" is
                              "not back to the last known good"
Succeed                       ``Progressing`` False with reason ``Completed``
currentVersion                the ``lastAppliedConfig`` set of ``status.configReferences``
supportedVersions / default   *no equivalent*: configs are validated by the addon manager
                              (``ConfigurationUnsupported``), not listed in advance
(not visible here)            an in-place edit of a config object (same name, new ``specHash``) rolls
                              out too, but it is a change of that object, not of these specs
============================  =======================================================================
"""

from __future__ import annotations

import datetime
import enum
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import semver

from webhook.conditions import Condition, find_condition, format_duration, format_time, parse_time
from webhook.errors import InputError, InvalidVersion

__all__ = [
    "PROGRESSING",
    "UNKNOWN",
    "AddOnVersions",
    "CanaryVerdict",
    "Change",
    "ConfigRef",
    "Observation",
    "Placement",
    "PlacementChange",
    "Reason",
    "canary_gate",
    "classify",
    "classify_configs",
    "config_set",
    "last_known_good_configs",
    "parse_addon_version",
    "placement_changes",
    "progressing_condition",
    "render_configs",
]

PROGRESSING = "Progressing"
"""The condition type the add-on installVersion lifecycle adds to ManagedClusterAddOn ("New condition")."""
UNKNOWN = "unknown"
"""The value the lifecycle writes to ``currentVersion`` while installing and to ``lastVersion`` for an invalid one."""
SUCCESS_MESSAGE = "install completed with no errors."
"""The message of ``Progressing`` reason ``Succeed``, verbatim (also after an upgrade or rollback)."""
UPSTREAM_SUCCESS = "Completed"
"""Upstream OCM's ``ProgressingReasonCompleted`` (addon/v1alpha1 types_managedclusteraddon.go)."""

_VERSION_RE = re.compile(
    r"v?([0-9]+)(?:\.([0-9]+))?(?:\.([0-9]+))?"
    r"(?:-([0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*))?(?:\+([0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*))?",
    re.ASCII,
)
_UINT64_MAX = 2**64 - 1


class Change(enum.StrEnum):
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
    Change.INSTALLING: "install",
    Change.UPGRADING: "upgrade to",
    Change.ROLLINGBACK: "rollback to",
    Change.UNCHANGED: "install",
}


def parse_addon_version(text: str) -> semver.Version:
    """Parse an add-on version as Masterminds/semver v3 ``NewVersion`` does (see the module docstring).

    ``v1`` → 1.0.0, ``v1.2`` → 1.2.0, ``2.7.0-rc.1+b`` → 2.7.0-rc.1+b. Raises ``InvalidVersion``:
    ``invalid add-on version "latest": want v<major>[.<minor>[.<patch>]][-<prerelease>][+<build>]``, or
    the reason (a part beyond uint64, a numeric prerelease id with a leading zero).
    """
    match = _VERSION_RE.fullmatch(text) if isinstance(text, str) else None
    if match is None:
        raise InvalidVersion(
            f"invalid add-on version {json.dumps(text)}: want v<major>[.<minor>[.<patch>]][-<prerelease>][+<build>]"
        )
    numbers = [int(part or "0") for part in match.group(1, 2, 3)]
    if max(numbers) > _UINT64_MAX:
        raise InvalidVersion(f"invalid add-on version {json.dumps(text)}: a number is beyond uint64")
    prerelease, build = match[4], match[5]
    for ident in prerelease.split(".") if prerelease else ():
        if ident.isdigit() and len(ident) > 1 and ident[0] == "0":
            raise InvalidVersion(
                f"invalid add-on version {json.dumps(text)}: prerelease id {json.dumps(ident)} has a leading zero"
            )
    major, minor, patch = numbers
    return semver.Version(major, minor, patch, prerelease, build)


def _is_unknown(version: str | None) -> bool:
    return version is None or version in ("", UNKNOWN)


def classify(last_version: str | None, install_version: str) -> Change:
    """Classify a move from ``last_version`` to ``install_version`` (the add-on installVersion lifecycle, "Condition").

    ``last_version`` ``None``, empty, ``unknown`` or malformed (the lifecycle: "invalid version is treated as
    unknown") → ``INSTALLING``; otherwise SemVer precedence of the two: ``UPGRADING``, ``ROLLINGBACK`` or
    ``UNCHANGED`` (``v2`` and ``v2.0.0`` are the same version). Raises ``InvalidVersion`` when
    ``install_version`` is malformed, since no move to it can be ordered.
    """
    install = parse_addon_version(install_version)
    if last_version is None or _is_unknown(last_version):
        return Change.INSTALLING
    try:
        order = parse_addon_version(last_version).compare(install)
    except InvalidVersion:
        return Change.INSTALLING
    return Change.UNCHANGED if order == 0 else Change.UPGRADING if order < 0 else Change.ROLLINGBACK


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
    if _is_unknown(current_version) and change is not Change.UNCHANGED:
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


@dataclass(frozen=True, order=True)
class ConfigRef:
    """One add-on config reference (upstream ``AddOnConfig``: ``group``, ``resource``, ``namespace``,
    ``name``); ``str`` renders ``group/resource/namespace/name`` (namespace empty when cluster-scoped)."""

    group: str
    resource: str
    namespace: str
    name: str

    @classmethod
    def from_dict(cls, config: Mapping[str, Any]) -> ConfigRef:
        """Read an ``AddOnConfig`` mapping; raises ``InputError`` when ``resource`` or ``name`` is missing."""
        if not config.get("resource") or not config.get("name"):
            raise InputError(
                f"an add-on config needs a resource and a name: {json.dumps(dict(config), sort_keys=True)}"
            )
        return cls(config.get("group") or "", config["resource"], config.get("namespace") or "", config["name"])

    def __str__(self) -> str:
        return f"{self.group}/{self.resource}/{self.namespace}/{self.name}"


def config_set(configs: Iterable[Mapping[str, Any]] | None) -> frozenset[ConfigRef]:
    """The set of config references of a ``configs`` list (order and duplicates do not matter upstream)."""
    return frozenset(ConfigRef.from_dict(config) for config in configs or ())


def classify_configs(
    previous: Iterable[Mapping[str, Any]] | None,
    desired: Iterable[Mapping[str, Any]] | None,
    last_known_good: Iterable[Mapping[str, Any]] | None = None,
) -> Change:
    """Classify a change of a config list the way ``classify`` classifies a version change (module table).

    ``previous`` is the old object's ``configs`` (``None`` when there is no old object: CREATE),
    ``desired`` the new one's, ``last_known_good`` the placement's ``lastKnownGoodConfig`` references
    (see ``last_known_good_configs``). No previous object → ``INSTALLING``; the same set → ``UNCHANGED``;
    back to a non-empty last-known-good set → ``ROLLINGBACK``; any other change → ``UPGRADING``.
    Raises ``InputError`` for a malformed config entry.
    """
    if previous is None:
        return Change.INSTALLING
    after = config_set(desired)
    if config_set(previous) == after:
        return Change.UNCHANGED
    good = config_set(last_known_good)
    return Change.ROLLINGBACK if good and after == good else Change.UPGRADING


def last_known_good_configs(cma: Mapping[str, Any], namespace: str, name: str) -> list[dict[str, str]]:
    """The ``lastKnownGoodConfig`` references of placement ``namespace/name`` in a ClusterManagementAddOn's
    ``status.installProgressions[].configReferences[]`` (upstream OCM, peers.md §C2), as ``AddOnConfig``
    dicts; empty when the placement has no progression or no last known good config yet."""
    for progression in (cma.get("status") or {}).get("installProgressions") or ():
        if progression.get("namespace") == namespace and progression.get("name") == name:
            return [
                {
                    "group": reference.get("group") or "",
                    "resource": reference.get("resource") or "",
                    "namespace": (reference.get("lastKnownGoodConfig") or {}).get("namespace") or "",
                    "name": (reference.get("lastKnownGoodConfig") or {}).get("name") or "",
                }
                for reference in progression.get("configReferences") or ()
                if (reference.get("lastKnownGoodConfig") or {}).get("name")
            ]
    return []


@dataclass(frozen=True)
class Placement:
    """One ``spec.installStrategy.placements[]`` entry: the lifecycle's ``addonTemplate.installVersion`` and the
    configs (upstream ``configs``, else the lifecycle's ``addonTemplate.configs``)."""

    namespace: str
    name: str
    install_version: str
    configs: tuple[Mapping[str, Any], ...]

    @classmethod
    def from_dict(cls, placement: Mapping[str, Any]) -> Placement:
        """Read a placement entry; raises ``InputError`` when ``name`` is missing."""
        if not placement.get("name"):
            raise InputError("a placement needs a name")
        template = placement.get("addonTemplate") or {}
        configs = placement["configs"] if "configs" in placement else template.get("configs")
        return cls(
            placement.get("namespace") or "",
            placement["name"],
            template.get("installVersion") or "",
            tuple(configs or ()),
        )

    @classmethod
    def all_of(cls, cma: Mapping[str, Any] | None) -> dict[tuple[str, str], Placement]:
        """The placements of a ClusterManagementAddOn keyed by ``(namespace, name)``, in spec order."""
        entries = (((cma or {}).get("spec") or {}).get("installStrategy") or {}).get("placements") or ()
        return {(p.namespace, p.name): p for p in map(cls.from_dict, entries)}


@dataclass(frozen=True)
class PlacementChange:
    """How one placement of a ClusterManagementAddOn UPDATE (or CREATE) moves: its effective versions
    before and after (``AddOnVersions.resolve``; ``None`` = none known), the version ``change``, and the
    ``config_change`` of its configs (``classify_configs``)."""

    namespace: str
    name: str
    last_version: str | None
    install_version: str | None
    change: Change | None
    """``None`` when no version is known after the change, or it is malformed (``validate`` reports it)."""
    config_change: Change


def placement_changes(old: Mapping[str, Any] | None, new: Mapping[str, Any]) -> tuple[PlacementChange, ...]:
    """Every placement of ``new`` (a ClusterManagementAddOn) with how it moved from ``old`` (``None`` on
    CREATE), in ``new``'s spec order. A placement without ``installVersion`` runs its CMA's defaultVersion
    ("Fresh install"), so a new default moves it ("Auto upgrade"). A placement new in
    ``new`` is Installing (its clusters may still move from another placement's version; their
    ManagedClusterAddOns show that). The last-known-good configs come from ``new``'s status.
    """
    before, after = Placement.all_of(old), Placement.all_of(new)
    old_versions = AddOnVersions.from_status((old or {}).get("status")) if old is not None else None
    new_versions = AddOnVersions.from_status(new.get("status"))
    changes = []
    for key, placement in after.items():
        previous = before.get(key)
        last = old_versions.resolve(previous.install_version) if previous and old_versions else None
        install = new_versions.resolve(placement.install_version)
        try:
            change = classify(last, install) if install else None
        except InvalidVersion:
            change = None
        good = last_known_good_configs(new, *key)
        config_change = classify_configs(previous.configs if previous else None, placement.configs, good)
        changes.append(PlacementChange(key[0], key[1], last, install, change, config_change))
    return tuple(changes)


@dataclass(frozen=True)
class Observation:
    """What one canary ManagedClusterAddOn runs: ``cluster`` (its namespace), ``running`` (the version, or
    the rendered config set, it runs successfully; ``None`` when it does not), and ``since`` (when its
    ``Progressing`` condition turned to success: "lastTransitionTime record the finish time")."""

    cluster: str
    running: str | None
    since: datetime.datetime | None
    state: str
    """The ``Progressing`` reason, or ``no Progressing condition``; used in messages."""

    @classmethod
    def of_install_version(cls, addon: Mapping[str, Any]) -> Observation:
        """Runs ``status.currentVersion`` when ``Progressing`` is False with reason ``Succeed``."""
        status = addon.get("status") or {}
        return cls._observe(addon, status.get("currentVersion") or None, Reason.SUCCEED)

    @classmethod
    def of_configs(cls, addon: Mapping[str, Any]) -> Observation:
        """Upstream OCM: runs the ``lastAppliedConfig`` set of ``status.configReferences`` (rendered as
        ``render_configs`` does) when ``Progressing`` is False with reason ``Completed``."""
        references = (addon.get("status") or {}).get("configReferences") or ()
        applied = [
            {**(ref.get("lastAppliedConfig") or {}), "group": ref.get("group"), "resource": ref.get("resource")}
            for ref in references
            if (ref.get("lastAppliedConfig") or {}).get("name")
        ]
        return cls._observe(addon, render_configs(applied), UPSTREAM_SUCCESS)

    @classmethod
    def _observe(cls, addon: Mapping[str, Any], running: str | None, success: str) -> Observation:
        cluster = (addon.get("metadata") or {}).get("namespace") or ""
        condition = find_condition((addon.get("status") or {}).get("conditions"), PROGRESSING)
        if condition is None:
            return cls(cluster, None, None, "no Progressing condition")
        state = str(condition.get("reason") or "")
        if condition.get("status") != "False" or state != success or not condition.get("lastTransitionTime"):
            return cls(cluster, None, None, state)
        return cls(cluster, running, parse_time(condition["lastTransitionTime"]), state)


def render_configs(configs: Iterable[Mapping[str, Any]] | None) -> str:
    """A config set as one comparable string: its ``ConfigRef`` renderings sorted and joined by ``, ``."""
    return ", ".join(map(str, sorted(config_set(configs))))


@dataclass(frozen=True)
class CanaryVerdict:
    """The answer of ``canary_gate``: ``allowed``, a deterministic ``message``, and ``ready_at`` (when the
    soak ends or ended; ``None`` while some canary does not run the target)."""

    allowed: bool
    message: str
    ready_at: datetime.datetime | None


def canary_gate(
    target: str, canaries: Sequence[Observation], *, soak: datetime.timedelta, now: datetime.datetime
) -> CanaryVerdict:
    """May ``target`` (a version, or ``render_configs`` of a config set) reach a non-canary placement?

    "Canary upgrade": a version reaches the other placements after the canary placement runs it
    successfully; here, when every ``canaries`` observation (the canary placement's ManagedClusterAddOns)
    runs ``target`` with a success ``since`` at least ``soak`` before ``now`` (upstream's ``minSuccessTime``).
    No canary → not allowed. ``now`` is the caller's clock (naive = UTC). Messages (clusters sorted)::

        no canary runs v2
        canary cluster1 does not run v2 successfully (Upgrading), canary cluster2 runs v1
        canaries run v2 successfully; the soak of 1h ends at 2022-11-02T06:48:12Z
        canaries cluster1, cluster2 have run v2 successfully since 2022-11-02T05:48:12Z, soak 1:00:00 passed
    """
    now = now if now.tzinfo else now.replace(tzinfo=datetime.UTC)
    if not canaries:
        return CanaryVerdict(False, f"no canary runs {target}", None)
    ordered = sorted(canaries, key=lambda seen: seen.cluster)
    behind = [seen for seen in ordered if seen.running != target or seen.since is None]
    if behind:
        reasons = [
            f"canary {seen.cluster} runs {seen.running}"
            if seen.running is not None
            else f"canary {seen.cluster} does not run {target} successfully ({seen.state})"
            for seen in behind
        ]
        return CanaryVerdict(False, ", ".join(reasons), None)
    latest = max(seen.since for seen in ordered if seen.since is not None)
    ready_at = latest + soak
    if ready_at > now:
        return CanaryVerdict(
            False,
            f"canaries run {target} successfully; the soak of {format_duration(soak)} ends at {format_time(ready_at)}",
            ready_at,
        )
    names = ", ".join(seen.cluster for seen in ordered)
    since = format_time(latest)
    message = f"canaries {names} have run {target} successfully since {since}, soak {format_duration(soak)} passed"
    return CanaryVerdict(True, message, ready_at)
