"""Typed settings, read once: frozen dataclasses whose fields say unit and default.

This module is the only reader of environment variables. Each front end builds its settings with
``<Settings>.from_env()`` and then overrides fields from its own flags (``dataclasses.replace``), and passes the
result down explicitly; nothing below a front end looks at the environment.

One dataclass per front end, each with its ``UPGRADE_GATE_*`` variables listed in its docstring:

- ``ServeSettings``: the admission webhook (``upgrade-gate serve``).
- ``SyncSettings``: the GitOps sync loop (``upgrade-gate sync``).
- ``ControllerSettings``: the in-cluster controller (``upgrade-gate controller``).
"""

from __future__ import annotations

import math
import os
import sysconfig
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from webhook.errors import InputError

_PREFIX = "UPGRADE_GATE_"

#: Where a wheel or sdist installs the bundled policies, their settings and suites: ``<prefix>/share/upgrade-gate/
#: policies`` (the ``data-files`` of pyproject.toml; sysconfig's ``data`` path, e.g. ``.venv``).
INSTALLED_POLICIES = Path(sysconfig.get_path("data")) / "share" / "upgrade-gate" / "policies"


def default_policies(cwd: Path | None = None) -> Path:
    """The policies a command reads when none are given: ``./policies`` (a clone of the repository), else the
    bundled policies the installation carries (``INSTALLED_POLICIES``), else ``policies`` (whose absence the
    command then reports)."""
    local = (cwd or Path.cwd()) / "policies"
    if not local.exists() and INSTALLED_POLICIES.is_dir():
        return INSTALLED_POLICIES
    return Path("policies")


#: The CEL backends (``webhook.cel``; ``--cel-engine``, ``UPGRADE_GATE_CEL_ENGINE``, the chart's
#: ``webhook.celEngine``): cel-python (pure Python) and cel-expr (cel-cpp through cel-expr-python). The default
#: is cel-expr, by measurement: the same decisions on every bundled case, 1.4-1.8x faster per admission request
#: (2-5x on the CEL work alone), and a load-time type checker as the apiserver has (docs/cel-engines.md).
CEL_ENGINES = ("cel-python", "cel-expr")
DEFAULT_CEL_ENGINE = "cel-expr"
#: The Kubernetes versions whose apiserver's CEL environment and admission APIs a policy set can be loaded for
#: (``--kubernetes-version``, ``UPGRADE_GATE_KUBERNETES_VERSION``; ``webhook.cel.versions``); the default,
#: the newest, accepts every policy the others accept.
KUBERNETES_VERSIONS = ("1.32", "1.33", "1.34", "1.35", "1.36")
DEFAULT_KUBERNETES_VERSION = KUBERNETES_VERSIONS[-1]
KUBERNETES_VERSION_VARIABLE = f"{_PREFIX}KUBERNETES_VERSION"


def kubernetes_version(value: str, name: str = KUBERNETES_VERSION_VARIABLE) -> str:
    """``value`` (``1.34``, ``v1.34``, ``1.34.2``) as one of ``KUBERNETES_VERSIONS``; ``InputError`` naming ``name``
    and the supported versions for anything else."""
    parts = value.strip().removeprefix("v").split(".")
    short = ".".join(parts[:2])
    if short not in KUBERNETES_VERSIONS or len(parts) > 3 or not all(part.isdigit() for part in parts):
        raise InputError(
            f"{name}={value!r}: not a supported Kubernetes version (expected one of {', '.join(KUBERNETES_VERSIONS)})"
        )
    return short


def kubernetes_version_from_env(env: Mapping[str, str] | None = None) -> str:
    """``UPGRADE_GATE_KUBERNETES_VERSION`` of ``env`` (default ``os.environ``), else ``DEFAULT_KUBERNETES_VERSION``;
    ``InputError`` as ``kubernetes_version``."""
    return kubernetes_version(
        _text(os.environ if env is None else env, KUBERNETES_VERSION_VARIABLE, DEFAULT_KUBERNETES_VERSION)
    )


def _text(env: Mapping[str, str], name: str, default: str) -> str:
    return env.get(name, default).strip() or default


def _choice(env: Mapping[str, str], name: str, default: str, choices: tuple[str, ...]) -> str:
    """One of ``choices`` (case-insensitive); raises ``InputError`` naming the variable for anything else."""
    value = _text(env, name, default).lower()
    if value not in choices:
        raise InputError(f"{name}={value!r}: expected {', '.join(choices[:-1])} or {choices[-1]}")
    return value


def _cluster_mode(env: Mapping[str, str], default: str) -> str:
    """``UPGRADE_GATE_CLUSTER``: ``auto``, ``on`` or ``off``."""
    return _choice(env, f"{_PREFIX}CLUSTER", default, ("auto", "on", "off"))


def _path(env: Mapping[str, str], name: str) -> Path | None:
    value = env.get(name, "").strip()
    return Path(value) if value else None


def _number(env: Mapping[str, str], name: str, default: float, *, minimum: float = 0) -> float:
    raw = env.get(name, "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        raise InputError(f"{name}={raw!r}: not a number") from None
    if value < minimum:
        raise InputError(f"{name}={raw!r}: must be at least {minimum:g}")
    return value


def _flag(env: Mapping[str, str], name: str, default: bool) -> bool:
    raw = env.get(name, "").strip().lower()
    if not raw:
        return default
    if raw in ("1", "true", "yes", "on"):
        return True
    if raw in ("0", "false", "no", "off"):
        return False
    raise InputError(f"{name}={raw!r}: not a boolean (true/false)")


@dataclass(frozen=True, slots=True)
class ServeSettings:
    """The admission webhook's settings (``upgrade-gate serve``); every field has a flag or a variable.

    Network and TLS: ``host`` (``UPGRADE_GATE_HOST``, default ``127.0.0.1``), ``port``
    (``UPGRADE_GATE_PORT``, 8443), ``cert``/``key`` (PEM files; ``None`` = development certificates in
    ``dev_certs``, generated on first run), ``client_ca`` (PEM bundle; when set, clients must present a
    certificate it signed), ``dev_certs`` (``UPGRADE_GATE_DEV_CERTS``, ``certs``).

    Inputs: ``policies`` (``UPGRADE_GATE_POLICIES``, ``default_policies()``: the directory or file of the policy
    set), ``objects`` (``UPGRADE_GATE_OBJECTS``: manifests that stand in for the cluster; ``None`` = use the cluster
    when one is configured), ``cluster`` (``UPGRADE_GATE_CLUSTER``: ``auto`` = watch the cluster when running in a
    pod, ``on`` = watch it (in-cluster, else the kubeconfig; required), ``off``), ``in_pod`` (whether
    ``KUBERNETES_SERVICE_HOST`` is set), ``kubeconfig`` (``KUBECONFIG``), ``namespace`` (``POD_NAMESPACE``,
    ``upgrade-gate``: where a param kind is watched when no binding's ``paramRef`` names a namespace),
    ``cel_engine`` (``UPGRADE_GATE_CEL_ENGINE``, ``DEFAULT_CEL_ENGINE``: the CEL backend, one of ``CEL_ENGINES``),
    ``kubernetes_version`` (``UPGRADE_GATE_KUBERNETES_VERSION``, ``DEFAULT_KUBERNETES_VERSION``: the cluster's
    version, whose CEL libraries and admission APIs the policies may use, one of ``KUBERNETES_VERSIONS``).

    Process: ``workers`` (``UPGRADE_GATE_WORKERS``; 0 = one per CPU the container may use, ``usable_cpus``),
    ``threads`` (``UPGRADE_GATE_THREADS``, 4: evaluation threads per worker, for reviews that outlive their time
    slice on the worker's event loop),
    ``request_timeout_s`` (``UPGRADE_GATE_REQUEST_TIMEOUT``, 8 s: an evaluation still running then is stopped and
    the request refused, below the webhook configuration's default ``timeoutSeconds`` of 10), ``max_body_bytes``
    (3 MiB, the apiserver's ``MaxRequestSizeBytes``), ``reload_interval_s``
    (``UPGRADE_GATE_RELOAD_INTERVAL``, 2 s: how often policy and certificate files are checked for changes),
    ``resync_s`` (``UPGRADE_GATE_RESYNC``, 600 s: full relist period of the cluster cache), ``keepalive_s``
    (``UPGRADE_GATE_KEEPALIVE``, 120 s: how long an idle connection stays open, above the kube-apiserver's 90 s
    idle timeout so that the client closes first), ``max_connections`` (``UPGRADE_GATE_MAX_CONNECTIONS``, 250 per
    worker, idle ones included), ``io_timeout_s`` (``UPGRADE_GATE_IO_TIMEOUT``, 10 s: a connection whose TLS
    handshake, request or answer makes no progress for this long is closed), ``max_requests``
    (``UPGRADE_GATE_MAX_REQUESTS``, 20,000; 0 = never: a worker is replaced, gracefully, after about this many
    requests), ``max_worker_memory_mib`` (``UPGRADE_GATE_MAX_WORKER_MEMORY``, 140 MiB; 0 = never: a worker whose
    resident memory passes it is replaced, gracefully, within a second). Both bound a worker's memory:
    cel-expr-python 0.1.3 never frees the arguments and the result of a call into a Python function, 2-6 KB per
    admission request with the bundled policies. ``metrics_dir``
    (``PROMETHEUS_MULTIPROC_DIR``; ``None`` = a fresh temporary directory), ``log_level``
    (``UPGRADE_GATE_LOG_LEVEL``, ``INFO``).
    """

    host: str = "127.0.0.1"
    port: int = 8443
    cert: Path | None = None
    key: Path | None = None
    client_ca: Path | None = None
    dev_certs: Path = Path("certs")
    policies: Path = Path("policies")
    objects: Path | None = None
    cluster: str = "auto"
    in_pod: bool = False
    kubeconfig: Path | None = None
    namespace: str = "upgrade-gate"
    cel_engine: str = DEFAULT_CEL_ENGINE
    kubernetes_version: str = DEFAULT_KUBERNETES_VERSION
    workers: int = 0
    threads: int = 4
    request_timeout_s: float = 8.0
    max_body_bytes: int = 3 * 1024 * 1024
    reload_interval_s: float = 2.0
    resync_s: float = 600.0
    keepalive_s: float = 120.0
    max_connections: int = 250
    io_timeout_s: float = 10.0
    max_requests: int = 20_000
    max_worker_memory_mib: int = 140
    metrics_dir: Path | None = None
    log_level: str = "INFO"

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> ServeSettings:
        """Settings from ``env`` (default ``os.environ``); unset or empty variables keep the defaults.

        Raises ``InputError`` naming the variable when a value does not parse.
        """
        env = os.environ if env is None else env
        defaults = cls()
        cluster = _cluster_mode(env, defaults.cluster)
        return cls(
            host=_text(env, f"{_PREFIX}HOST", defaults.host),
            port=int(_number(env, f"{_PREFIX}PORT", defaults.port, minimum=1)),
            dev_certs=_path(env, f"{_PREFIX}DEV_CERTS") or defaults.dev_certs,
            policies=_path(env, f"{_PREFIX}POLICIES") or default_policies(),
            objects=_path(env, f"{_PREFIX}OBJECTS"),
            cluster=cluster,
            in_pod=bool(env.get("KUBERNETES_SERVICE_HOST", "").strip()),
            kubeconfig=_path(env, "KUBECONFIG"),
            namespace=_text(env, "POD_NAMESPACE", defaults.namespace),
            cel_engine=_choice(env, f"{_PREFIX}CEL_ENGINE", defaults.cel_engine, CEL_ENGINES),
            kubernetes_version=kubernetes_version_from_env(env),
            workers=int(_number(env, f"{_PREFIX}WORKERS", defaults.workers)),
            threads=int(_number(env, f"{_PREFIX}THREADS", defaults.threads, minimum=1)),
            keepalive_s=_number(env, f"{_PREFIX}KEEPALIVE", defaults.keepalive_s),
            max_connections=int(_number(env, f"{_PREFIX}MAX_CONNECTIONS", defaults.max_connections, minimum=1)),
            io_timeout_s=_number(env, f"{_PREFIX}IO_TIMEOUT", defaults.io_timeout_s, minimum=0.1),
            max_requests=int(_number(env, f"{_PREFIX}MAX_REQUESTS", defaults.max_requests, minimum=0)),
            max_worker_memory_mib=int(
                _number(env, f"{_PREFIX}MAX_WORKER_MEMORY", defaults.max_worker_memory_mib, minimum=0)
            ),
            request_timeout_s=_number(env, f"{_PREFIX}REQUEST_TIMEOUT", defaults.request_timeout_s, minimum=0.1),
            reload_interval_s=_number(env, f"{_PREFIX}RELOAD_INTERVAL", defaults.reload_interval_s, minimum=0.1),
            resync_s=_number(env, f"{_PREFIX}RESYNC", defaults.resync_s, minimum=1),
            metrics_dir=_path(env, "PROMETHEUS_MULTIPROC_DIR"),
            log_level=_text(env, f"{_PREFIX}LOG_LEVEL", defaults.log_level).upper(),
        )

    @property
    def worker_count(self) -> int:
        """``workers``, or one per CPU the process may use when 0 (``usable_cpus``)."""
        return self.workers or usable_cpus()

    @property
    def watches_cluster(self) -> bool:
        """True when lookups come from a cluster: no ``objects``, and ``cluster`` on, or auto in a pod."""
        return self.objects is None and (self.cluster == "on" or (self.cluster == "auto" and self.in_pod))

    @property
    def uses_dev_certs(self) -> bool:
        """True when no ``cert``/``key`` were given: the server uses (and creates) ``dev_certs``."""
        return self.cert is None and self.key is None


@dataclass(frozen=True, slots=True)
class SyncSettings:
    """The sync loop's settings (``upgrade-gate sync``); secrets come only from the environment.

    Credentials: ``git_username``/``git_password`` (``UPGRADE_GATE_GIT_USERNAME``/``_PASSWORD``: HTTPS; SSH uses
    ``GIT_SSH_COMMAND``, read by git itself), ``forge_token`` (``UPGRADE_GATE_FORGE_TOKEN``: GitHub/GitLab API).

    Where: ``workdir`` (``UPGRADE_GATE_SYNC_WORKDIR``; ``None`` = ``~/.cache/upgrade-gate/<repository hash>``),
    ``cluster`` (``UPGRADE_GATE_CLUSTER``: ``auto`` = in-cluster or kubeconfig when available, ``off``, ``on``),
    ``kubeconfig`` (``KUBECONFIG``).

    One active replica: ``leader_election`` (``UPGRADE_GATE_LEADER_ELECTION``, false), the Lease ``lease_name``
    (``UPGRADE_GATE_LEASE_NAME``, ``upgrade-gate-sync``) in ``namespace`` (``POD_NAMESPACE``, ``upgrade-gate``),
    held by ``identity`` (``POD_NAME``; empty = the host name) for ``lease_duration_s`` (15 s, renewed every
    third of it, as client-go's defaults of 15 s / 10 s / 2 s keep a leader).
    """

    git_username: str = ""
    git_password: str = ""
    forge_token: str = ""
    workdir: Path | None = None
    cluster: str = "auto"
    in_pod: bool = False
    kubeconfig: Path | None = None
    leader_election: bool = False
    lease_name: str = "upgrade-gate-sync"
    namespace: str = "upgrade-gate"
    identity: str = ""
    lease_duration_s: float = 15.0

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> SyncSettings:
        """Settings from ``env`` (default ``os.environ``); raises ``InputError`` naming a variable that does not
        parse."""
        env = os.environ if env is None else env
        defaults = cls()
        cluster = _cluster_mode(env, defaults.cluster)
        return cls(
            git_username=env.get(f"{_PREFIX}GIT_USERNAME", ""),
            git_password=env.get(f"{_PREFIX}GIT_PASSWORD", ""),
            forge_token=env.get(f"{_PREFIX}FORGE_TOKEN", "").strip(),
            workdir=_path(env, f"{_PREFIX}SYNC_WORKDIR"),
            cluster=cluster,
            in_pod=bool(env.get("KUBERNETES_SERVICE_HOST", "").strip()),
            kubeconfig=_path(env, "KUBECONFIG"),
            leader_election=_flag(env, f"{_PREFIX}LEADER_ELECTION", defaults.leader_election),
            lease_name=_text(env, f"{_PREFIX}LEASE_NAME", defaults.lease_name),
            namespace=_text(env, "POD_NAMESPACE", defaults.namespace),
            identity=_text(env, "POD_NAME", defaults.identity),
        )


#: The controller's modes: ``gitops`` (Git owns the revisions; status and Events only) and ``cluster`` (the
#: controller creates, updates and deletes the revisions itself, resolving against the cluster's catalogs).
CONTROLLER_MODES = ("gitops", "cluster")


@dataclass(frozen=True, slots=True)
class ControllerSettings:
    """The controller's settings (``upgrade-gate controller``); every field has a flag and a variable.

    What it does: ``mode`` (``UPGRADE_GATE_CONTROLLER_MODE``, ``gitops``: one of ``CONTROLLER_MODES``),
    ``resync_s`` (``UPGRADE_GATE_RESYNC``, 1800 s: every ClusterExtension is reconciled again this often, and
    the watch caches relist), ``catalogd_ca`` (``UPGRADE_GATE_CATALOGD_CA``: the PEM bundle that signed
    catalogd's serving certificate; ``None`` = the system's trust store), ``catalog_timeout_s``
    (``UPGRADE_GATE_CATALOG_TIMEOUT``, 30 s per catalog download).

    Where: ``kubeconfig`` (``KUBECONFIG``; the in-cluster configuration wins in a pod), ``namespace``
    (``POD_NAMESPACE``, ``upgrade-gate``: the Lease's namespace).

    One active replica: ``leader_election`` (``UPGRADE_GATE_LEADER_ELECTION``, true), the Lease ``lease_name``
    (``UPGRADE_GATE_LEASE_NAME``, ``upgrade-gate-controller``) held by ``identity`` (``POD_NAME``; empty = the
    host name) for ``lease_duration_s`` (``UPGRADE_GATE_LEASE_DURATION``, 15 s, renewed every third of it).

    Process: ``workers`` (``UPGRADE_GATE_CONTROLLER_WORKERS``, 4: ClusterExtensions reconciled at once; the work
    is mostly waiting on the API server), ``health_host``/``health_port`` (``UPGRADE_GATE_HEALTH_HOST``, ``127.0.0.1``;
    ``UPGRADE_GATE_HEALTH_PORT``, 8081; 0 = any free port) serve ``/healthz``, ``/readyz`` and ``/metrics``;
    ``gate_check_s`` (``UPGRADE_GATE_GATE_CHECK_INTERVAL``, 300 s; 0 = never): how often the leader runs the
    doctor's checks, with the policy settings ConfigMap read from ``settings_namespace``
    (``UPGRADE_GATE_SETTINGS_NAMESPACE``, ``upgrade-gate-system``); ``log_level`` (``UPGRADE_GATE_LOG_LEVEL``,
    ``INFO``).
    """

    mode: str = "gitops"
    resync_s: float = 1800.0
    catalogd_ca: Path | None = None
    catalog_timeout_s: float = 30.0
    kubeconfig: Path | None = None
    namespace: str = "upgrade-gate"
    leader_election: bool = True
    lease_name: str = "upgrade-gate-controller"
    identity: str = ""
    lease_duration_s: float = 15.0
    workers: int = 4
    health_host: str = "127.0.0.1"
    health_port: int = 8081
    gate_check_s: float = 300.0
    settings_namespace: str = "upgrade-gate-system"
    log_level: str = "INFO"

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> ControllerSettings:
        """Settings from ``env`` (default ``os.environ``); raises ``InputError`` naming a variable that does not
        parse."""
        env = os.environ if env is None else env
        defaults = cls()
        return cls(
            mode=_choice(env, f"{_PREFIX}CONTROLLER_MODE", defaults.mode, CONTROLLER_MODES),
            resync_s=_number(env, f"{_PREFIX}RESYNC", defaults.resync_s, minimum=1),
            catalogd_ca=_path(env, f"{_PREFIX}CATALOGD_CA"),
            catalog_timeout_s=_number(env, f"{_PREFIX}CATALOG_TIMEOUT", defaults.catalog_timeout_s, minimum=0.1),
            kubeconfig=_path(env, "KUBECONFIG"),
            namespace=_text(env, "POD_NAMESPACE", defaults.namespace),
            leader_election=_flag(env, f"{_PREFIX}LEADER_ELECTION", defaults.leader_election),
            lease_name=_text(env, f"{_PREFIX}LEASE_NAME", defaults.lease_name),
            identity=_text(env, "POD_NAME", defaults.identity),
            lease_duration_s=_number(env, f"{_PREFIX}LEASE_DURATION", defaults.lease_duration_s, minimum=1),
            workers=int(_number(env, f"{_PREFIX}CONTROLLER_WORKERS", defaults.workers, minimum=1)),
            health_host=_text(env, f"{_PREFIX}HEALTH_HOST", defaults.health_host),
            health_port=int(_number(env, f"{_PREFIX}HEALTH_PORT", defaults.health_port)),
            gate_check_s=_number(env, f"{_PREFIX}GATE_CHECK_INTERVAL", defaults.gate_check_s, minimum=0),
            settings_namespace=_text(env, f"{_PREFIX}SETTINGS_NAMESPACE", defaults.settings_namespace),
            log_level=_text(env, f"{_PREFIX}LOG_LEVEL", defaults.log_level).upper(),
        )


#: The cgroup v2 file of a container's CPU limit: ``<quota> <period>`` in microseconds, or ``max <period>``.
CPU_MAX = Path("/sys/fs/cgroup/cpu.max")


def usable_cpus() -> int:
    """The CPUs this process may use, at least 1: those it may run on (``os.sched_getaffinity``, else
    ``os.cpu_count``), at most its cgroup v2 CPU limit (``cpu.max``: a container's ``resources.limits.cpu``)
    rounded up, in the spirit of the Go runtime's container-aware GOMAXPROCS. A node's CPU count alone would start a
    worker per node CPU in a pod limited to two. Under cgroup v1 the limit is not read: set ``workers`` there."""
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    try:
        quota, period = CPU_MAX.read_text().split()[:2]
        if quota != "max":
            cpus = min(cpus, math.ceil(int(quota) / int(period)))
    except (OSError, ValueError, ZeroDivisionError):
        pass  # no cgroup v2 limit readable: the affinity stands
    return max(cpus, 1)
