"""``upgrade-gate.yaml``: how ``upgrade-gate sync`` works on a GitOps repository (read from its root).

Schema (every path is relative to the repository root unless absolute; unknown keys are errors)::

    extensions: clusters/prod/extensions     # str or list: directories (every *.yaml/*.yml/*.json below)
                                             # or globs (clusters/*/extensions/*.yaml) of ClusterExtensions
    revisions: clusters/prod/revisions       # the directory ClusterExtensionRevision manifests go to
    catalogs: clusters/prod/catalogs         # str: ClusterCatalog manifests served by catalogd (see below)
    # or a list of sources, each exactly one of:
    #   - path: catalogs/certified-operators-v4.22          an FBC directory or file
    #   - url: https://catalogd.example/catalogs/operators  a catalogd base URL (<url>/api/v1/all)
    #   - clusterCatalogs: clusters/prod/catalogs           ClusterCatalog manifests (directory or glob);
    #     content: https://catalogd-service.olmv1-system.svc/catalogs/{name}   default; or a path with {name}
    installed: status                        # status: the manifests' status.install.bundle (offline)
                                             # cluster: the ClusterExtensions' status in the cluster
    kubeVersion: "1.31.2"                    # optional: the cluster version catalog image templates use
    baseBranch: main                         # default main
    branchPrefix: upgrade-gate/              # default upgrade-gate/; one branch per extension
    forge:
      type: github                           # github | gitlab | none (push branches only); default none
      repository: example-org/clusters       # owner/name (GitHub) or group/project (GitLab)
      url: https://api.github.com            # API base; defaults per type (GitLab: https://gitlab.com/api/v4)
      labels: [upgrade-gate]                 # added to new pull requests
      reviewers: [alice]                     # requested on new pull requests (user names)
    policyCheck:                             # optional: the policies pull requests are checked against
      policies: policies                     # str or list of policy files/directories
      applier:                               # who applies merged changes (Argo CD's or Flux's service
                                             # account): every request of the check comes from it
        username: system:serviceaccount:argocd:argocd-application-controller   # default
        groups: [system:serviceaccounts, system:serviceaccounts:argocd, system:authenticated]  # default
      teams:                                 # forge team -> Kubernetes group of an approving reviewer
        example-org/platform-admins: platform-admins   # GitHub ORG/TEAM-SLUG; GitLab the group's full path
    git:
      authorName: upgrade-gate               # the bot's identity; a branch with a commit by anyone else
      authorEmail: upgrade-gate@noreply.invalid   # is left alone
    addons:                                  # optional: add-on upgrades (installVersion pins; else the
                                             # AddOnTemplate references of an upstream hub)
      manifests: clusters/hub/addons         # str or list: directories or globs of ClusterManagementAddOn and
                                             # ManagedClusterAddOn manifests (PlacementDecisions and
                                             # AddOnTemplates there are read too, offline)
      installed: cluster                     # status: supportedVersions, AddOnTemplates, placement decisions
                                             # and canary progress from the manifests (offline); cluster: from
                                             # the cluster. Default: the top-level installed
      canaryPlacements: default/canary-placement  # str or list of NAMESPACE/NAME; [] = no canary stage.
                                             # Default: addonCanaryPlacement of policies/settings.yaml
      canarySoak: 1h                         # how long every canary runs a version successfully before the
                                             # other placements get it (Go duration); default:
                                             # addonCanarySoak of policies/settings.yaml
    dashboard:                               # optional: one issue listing every subject the loop governs
      enabled: false                         # default false (off: no issue is written)
      title: upgrade-gate dashboard          # the issue's title (default); it is found again by a hidden marker
    schedule: ["Sat 02:00-06:00"]            # optional: windows when branches are opened or updated (weekly
                                             # DAYS HH:MM-HH:MM in UTC or START/END in RFC 3339, as freeze and
                                             # maintenance windows); outside them a due change is "waiting".
                                             # Default [] = any time
    grouping: per-extension                  # per-extension (default): one branch and pull request per
                                             # extension; per-cluster: one for every ClusterExtensionRevision
                                             # change of the cluster (the revisions directory), on branch
                                             # <branchPrefix>cluster/<revisions>
    automerge:                               # optional: merge a proposal the policies admit without a person
      enabled: false                         # default false; needs policyCheck. The revision is proposed
                                             # approved and merged when its approval is admitted for the
                                             # applier and for no one in particular (upgrade-gate review's rows)
      change: [patch]                        # the change levels that may merge (patch, minor, major)

With ``addons`` set, ``extensions``, ``revisions`` and ``catalogs`` may be left out together (a repository of
add-ons only); otherwise they are required.

Errors: ``load_config`` raises one ``InputError`` ``upgrade-gate.yaml: <field>: <problem>``.
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from webhook.errors import InputError, ManifestError
from webhook.io.forges import ForgeConfig
from webhook.manifests import iter_yaml_documents, read_text
from webhook.plan import PolicyCheckConfig, UserInfo
from webhook.windows import Window, parse_window

CONFIG_FILE = "upgrade-gate.yaml"
CATALOGD_CONTENT = "https://catalogd-service.olmv1-system.svc/catalogs/{name}"
FORGE_URLS = {"github": "https://api.github.com", "gitlab": "https://gitlab.com/api/v4", "none": ""}
INSTALLED_SOURCES = ("status", "cluster")
DEFAULT_CANARY_PLACEMENT = "default/canary-placement"
"""``addonCanaryPlacement`` of the bundled ``policies/settings.yaml`` (a test keeps the two equal)."""
DEFAULT_CANARY_SOAK = datetime.timedelta(hours=1)
"""``addonCanarySoak`` of the bundled ``policies/settings.yaml`` (a test keeps the two equal)."""
_DURATION = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|ms|s|m|h)")
_UNITS = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
GROUPINGS = ("per-extension", "per-cluster")
CHANGE_LEVELS = ("patch", "minor", "major")
_REF_PART = re.compile(r"[A-Za-z0-9_-]([A-Za-z0-9._-]*[A-Za-z0-9_-])?")
_PLACEMENT = re.compile(r"[a-z0-9]([-a-z0-9.]*[a-z0-9])?/[a-z0-9]([-a-z0-9.]*[a-z0-9])?")


@dataclass(frozen=True, slots=True)
class CatalogConfig:
    """One catalog source: ``kind`` is ``path``, ``url`` or ``clusterCatalogs``; ``content`` (a URL or
    path with ``{name}``) says where a ClusterCatalog's FBC is served."""

    kind: str
    location: str
    content: str = ""


@dataclass(frozen=True, slots=True)
class AddOnConfig:
    """Where add-on manifests are (``manifests``), where their status is read (``installed``: status or
    cluster), the canary placements (``NAMESPACE/NAME``) and how long canaries soak."""

    manifests: tuple[str, ...]
    installed: str = "status"
    canary_placements: tuple[str, ...] = (DEFAULT_CANARY_PLACEMENT,)
    canary_soak: datetime.timedelta = DEFAULT_CANARY_SOAK


@dataclass(frozen=True, slots=True)
class DashboardConfig:
    """The dashboard issue: written when ``enabled`` (default off), under ``title``."""

    enabled: bool = False
    title: str = "upgrade-gate dashboard"


@dataclass(frozen=True, slots=True)
class AutomergeConfig:
    """Automerge: off unless ``enabled``; only changes of the ``change`` levels (``CHANGE_LEVELS``) merge."""

    enabled: bool = False
    change: tuple[str, ...] = ("patch",)


@dataclass(frozen=True, slots=True)
class SyncConfig:
    """The parsed ``upgrade-gate.yaml`` (see the module docstring for every key and default)."""

    extensions: tuple[str, ...]
    revisions: str
    catalogs: tuple[CatalogConfig, ...]
    installed: str = "status"
    kube_version: str | None = None
    base_branch: str = "main"
    branch_prefix: str = "upgrade-gate/"
    forge: ForgeConfig = field(default_factory=ForgeConfig)
    policy_check: PolicyCheckConfig | None = None
    author_name: str = "upgrade-gate"
    author_email: str = "upgrade-gate@noreply.invalid"
    addons: AddOnConfig | None = None
    dashboard: DashboardConfig = field(default_factory=DashboardConfig)
    schedule: tuple[Window, ...] = ()
    grouping: str = GROUPINGS[0]
    automerge: AutomergeConfig = field(default_factory=AutomergeConfig)


def load_config(root: Path) -> SyncConfig:
    """Read ``<root>/upgrade-gate.yaml``; raises ``InputError`` when it is missing or invalid."""
    path = root / CONFIG_FILE
    if not path.is_file():
        raise InputError(f"{CONFIG_FILE}: not found at the repository root")
    try:
        return read_config(read_text(path))
    except ManifestError as error:
        raise InputError(str(error)) from None


def read_config(text: str) -> SyncConfig:
    """Parse the text of an ``upgrade-gate.yaml``; raises ``InputError`` when it is invalid."""
    try:
        documents = [doc for doc, _ in iter_yaml_documents(text, CONFIG_FILE)]
    except ManifestError as error:
        raise InputError(str(error)) from None
    if len(documents) != 1 or not isinstance(documents[0], Mapping):
        raise InputError(f"{CONFIG_FILE}: expected one YAML mapping")
    return parse_config(documents[0])


_TOP_KEYS = {
    "extensions",
    "revisions",
    "catalogs",
    "installed",
    "kubeVersion",
    "baseBranch",
    "branchPrefix",
    "forge",
    "policyCheck",
    "git",
    "addons",
    "dashboard",
    "schedule",
    "grouping",
    "automerge",
}


def parse_config(data: Mapping[str, Any]) -> SyncConfig:
    """Validate a decoded ``upgrade-gate.yaml``; raises ``InputError`` naming the field."""
    _no_unknown(data, _TOP_KEYS, "")
    installed = _str(data, "installed", "status")
    if installed not in INSTALLED_SOURCES:
        raise _error("installed", f"must be one of {', '.join(INSTALLED_SOURCES)}, not {installed!r}")
    git = _mapping(data, "git")
    _no_unknown(git, {"authorName", "authorEmail"}, "git.")
    defaults = SyncConfig((), "", ())
    forge = _forge(_mapping(data, "forge"))
    policy_check = _policy_check(data.get("policyCheck"))
    for team in policy_check.teams if policy_check is not None and forge.type == "github" else ():
        if team.count("/") != 1:
            raise _error(f"policyCheck.teams.{team}", "a GitHub team is ORG/TEAM-SLUG")
    addons = _addons(data.get("addons"), installed)
    add_ons_only = addons is not None and not any(k in data for k in ("extensions", "revisions", "catalogs"))
    return SyncConfig(
        extensions=() if add_ons_only else _strings(data, "extensions", required=True),
        revisions="" if add_ons_only else _str(data, "revisions"),
        catalogs=() if add_ons_only else _catalogs(data.get("catalogs")),
        installed=installed,
        kube_version=_str(data, "kubeVersion", "") or None,
        base_branch=_str(data, "baseBranch", defaults.base_branch),
        branch_prefix=_str(data, "branchPrefix", defaults.branch_prefix),
        forge=forge,
        policy_check=policy_check,
        author_name=_str(git, "authorName", defaults.author_name, "git."),
        author_email=_str(git, "authorEmail", defaults.author_email, "git."),
        addons=addons,
        dashboard=_dashboard(_mapping(data, "dashboard")),
        schedule=_schedule(data),
        grouping=_grouping(data),
        automerge=_automerge(_mapping(data, "automerge"), policy_check),
    )


def _automerge(data: Mapping[str, Any], policy_check: PolicyCheckConfig | None) -> AutomergeConfig:
    _no_unknown(data, {"enabled", "change"}, "automerge.")
    default = AutomergeConfig()
    change = _strings(data, "change", prefix="automerge.") if "change" in data else default.change
    for level in change:
        if level not in CHANGE_LEVELS:
            raise _error("automerge.change", f"must list {', '.join(CHANGE_LEVELS)}, not {level!r}")
    enabled = _bool(data, "enabled", default.enabled, "automerge.")
    if enabled and policy_check is None:
        raise _error("automerge.enabled", "needs policyCheck: the policies decide what merges without a person")
    return AutomergeConfig(enabled, change)


def _grouping(data: Mapping[str, Any]) -> str:
    grouping = _str(data, "grouping", GROUPINGS[0])
    if grouping not in GROUPINGS:
        raise _error("grouping", f"must be one of {', '.join(GROUPINGS)}, not {grouping!r}")
    revisions = data.get("revisions")
    if grouping == "per-cluster" and isinstance(revisions, str) and not _branch_safe(revisions):
        why = f"per-cluster names a branch after revisions, and {revisions!r} cannot be part of a branch name"
        raise _error("grouping", why)
    return grouping


def _branch_safe(path: str) -> bool:
    """Whether ``path`` is a valid part of a Git branch name as ``git check-ref-format`` reads it (components of
    letters, digits, ``.``, ``_`` and ``-``, none starting or ending with a dot, without ``..`` or ``.lock``)."""
    parts = path.strip("/").split("/")
    return all(_REF_PART.fullmatch(p) and ".." not in p and not p.endswith(".lock") for p in parts)


def _schedule(data: Mapping[str, Any]) -> tuple[Window, ...]:
    windows = []
    for index, text in enumerate(_strings(data, "schedule")):
        try:
            windows.append(parse_window(text))
        except InputError as error:
            raise _error(f"schedule[{index}]", str(error)) from None
    return tuple(windows)


def _dashboard(data: Mapping[str, Any]) -> DashboardConfig:
    _no_unknown(data, {"enabled", "title"}, "dashboard.")
    default = DashboardConfig()
    return DashboardConfig(
        enabled=_bool(data, "enabled", default.enabled, "dashboard."),
        title=_str(data, "title", default.title, "dashboard."),
    )


def parse_duration(text: str) -> datetime.timedelta | None:
    """A Go ``time.ParseDuration`` string without sign (``90m``, ``1h30m``, ``1.5h``, ``500ms``, ``0``) as a
    ``timedelta``; ``None`` when ``text`` has another shape."""
    if text == "0":
        return datetime.timedelta(0)
    terms = list(_DURATION.finditer(text))
    if not terms or "".join(t.group(0) for t in terms) != text:
        return None
    return datetime.timedelta(seconds=sum(float(t.group(1)) * _UNITS[t.group(2)] for t in terms))


def _addons(value: Any, installed: str) -> AddOnConfig | None:
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise _error("addons", "must be a mapping")
    _no_unknown(value, {"manifests", "installed", "canaryPlacements", "canarySoak"}, "addons.")
    source = _str(value, "installed", installed, "addons.")
    if source not in INSTALLED_SOURCES:
        raise _error("addons.installed", f"must be one of {', '.join(INSTALLED_SOURCES)}, not {source!r}")
    canaries = (
        _strings(value, "canaryPlacements", prefix="addons.")
        if "canaryPlacements" in value
        else (DEFAULT_CANARY_PLACEMENT,)
    )
    for canary in canaries:
        if not _PLACEMENT.fullmatch(canary):
            raise _error("addons.canaryPlacements", f"must be NAMESPACE/NAME of a Placement, not {canary!r}")
    soak_text = value.get("canarySoak")
    soak = (
        DEFAULT_CANARY_SOAK if soak_text is None else parse_duration(soak_text) if isinstance(soak_text, str) else None
    )
    if soak is None:
        raise _error("addons.canarySoak", f"must be a duration such as 30m, 1h or 1h30m, not {soak_text!r}")
    return AddOnConfig(
        manifests=_strings(value, "manifests", required=True, prefix="addons."),
        installed=source,
        canary_placements=canaries,
        canary_soak=soak,
    )


def _catalogs(value: Any) -> tuple[CatalogConfig, ...]:
    if value is None:
        raise _error("catalogs", "is required")
    if isinstance(value, str) and value:
        return (CatalogConfig("clusterCatalogs", value, CATALOGD_CONTENT),)
    if not isinstance(value, list) or not value:
        raise _error("catalogs", "must be a path or a non-empty list of catalog sources")
    found = []
    for index, item in enumerate(value):
        where = f"catalogs[{index}]."
        if not isinstance(item, Mapping):
            raise _error(f"catalogs[{index}]", "must be a mapping with path, url or clusterCatalogs")
        _no_unknown(item, {"path", "url", "clusterCatalogs", "content"}, where)
        kinds = [k for k in ("path", "url", "clusterCatalogs") if k in item]
        if len(kinds) != 1:
            raise _error(f"catalogs[{index}]", "needs exactly one of path, url, clusterCatalogs")
        kind = kinds[0]
        if "content" in item and kind != "clusterCatalogs":
            raise _error(f"{where}content", "is only for clusterCatalogs")
        content = _str(item, "content", CATALOGD_CONTENT, where) if kind == "clusterCatalogs" else ""
        if kind == "clusterCatalogs" and "{name}" not in content:
            raise _error(f"{where}content", "must contain {name}")
        found.append(CatalogConfig(kind, _str(item, kind, prefix=where), content))
    return tuple(found)


def _forge(data: Mapping[str, Any]) -> ForgeConfig:
    _no_unknown(data, {"type", "repository", "url", "labels", "reviewers"}, "forge.")
    kind = _str(data, "type", "none", "forge.")
    if kind not in FORGE_URLS:
        raise _error("forge.type", f"must be one of github, gitlab, none, not {kind!r}")
    repository = _str(data, "repository", "", "forge.")
    if kind != "none" and "/" not in repository:
        raise _error("forge.repository", f"must be owner/name for forge type {kind}")
    return ForgeConfig(
        type=kind,
        repository=repository,
        url=_str(data, "url", FORGE_URLS[kind], "forge.").rstrip("/"),
        labels=_strings(data, "labels", prefix="forge."),
        reviewers=_strings(data, "reviewers", prefix="forge."),
    )


def _policy_check(value: Any) -> PolicyCheckConfig | None:
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise _error("policyCheck", "must be a mapping")
    _no_unknown(value, {"policies", "applier", "teams"}, "policyCheck.")
    applier = _mapping(value, "applier", "policyCheck.")
    _no_unknown(applier, {"username", "groups"}, "policyCheck.applier.")
    default = PolicyCheckConfig(()).applier
    username = _str(applier, "username", default.username, "policyCheck.applier.")
    groups = _strings(applier, "groups", prefix="policyCheck.applier.")
    teams = _mapping(value, "teams", "policyCheck.")
    for team, group in teams.items():
        if not isinstance(team, str) or not team or not isinstance(group, str) or not group:
            raise _error(f"policyCheck.teams.{team}", "must map a forge team to a group name")
    return PolicyCheckConfig(
        policies=_strings(value, "policies", required=True, prefix="policyCheck."),
        applier=UserInfo(username, groups if "groups" in applier else default.groups),
        teams=dict(teams),
    )


def _error(name: str, problem: str) -> InputError:
    return InputError(f"{CONFIG_FILE}: {name}: {problem}")


def _no_unknown(data: Mapping[str, Any], known: set[str], prefix: str) -> None:
    unknown = sorted(str(k) for k in data if k not in known)
    if unknown:
        raise _error(f"{prefix}{unknown[0]}", f"unknown key (expected one of {', '.join(sorted(known))})")


def _mapping(data: Mapping[str, Any], key: str, prefix: str = "") -> Mapping[str, Any]:
    value = data.get(key)
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise _error(f"{prefix}{key}", "must be a mapping")
    return value


_REQUIRED = object()


def _str(data: Mapping[str, Any], key: str, default: Any = _REQUIRED, prefix: str = "") -> str:
    value = data.get(key)
    if value is None:
        if default is _REQUIRED:
            raise _error(f"{prefix}{key}", "is required")
        return str(default)
    if not isinstance(value, str) or (not value and default is _REQUIRED):
        raise _error(f"{prefix}{key}", "must be a non-empty string")
    return value


def _bool(data: Mapping[str, Any], key: str, default: bool, prefix: str = "") -> bool:
    value = data.get(key, default)
    if not isinstance(value, bool):
        raise _error(f"{prefix}{key}", f"must be true or false, not {value!r}")
    return value


def _strings(data: Mapping[str, Any], key: str, *, required: bool = False, prefix: str = "") -> tuple[str, ...]:
    value = data.get(key)
    if value is None and not required:
        return ()
    if isinstance(value, str) and value:
        return (value,)
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value) or (required and not value):
        raise _error(f"{prefix}{key}", "must be a string or a list of non-empty strings")
    return tuple(value)
