"""The real OLM v1 for integration tests: operator-controller and catalogd (built from source by
``python -m tests.tools.build``) with a local registry, through the harness of ``../shared/olm``.

The harness is looked for at ``$UPGRADE_GATE_OLM_HARNESS`` or ``<repository>/../shared/olm/harness.py``; its
command line starts and stops the processes, and its ``Kube`` client is loaded as a module. It runs the binaries of
``$OLM_HARNESS_BIN``, by default the build cache's bin directory, on a kube-apiserver of its own started first in
the same run directory (operator-controller reconciles every ClusterExtension, including those other tests write
by hand with the status operator-controller would write). It
needs root (each controller runs under ``unshare --mount`` with its ServiceAccount token at the pod path).
"""

from __future__ import annotations

import functools
import importlib.util
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from tests import apiserver
from tests.tools import build

EXTENSIONS = "olm.operatorframework.io/v1"
#: The binaries the OLM harness links from ``$OLM_HARNESS_BIN``.
BINARIES = ("operator-controller", "catalogd")


def harness_path() -> Path:
    """Where the OLM harness should be (it may not exist)."""
    configured = os.environ.get("UPGRADE_GATE_OLM_HARNESS")
    return Path(configured) if configured else apiserver.ROOT.parent / "shared" / "olm" / "harness.py"


def binaries() -> Path:
    """``$OLM_HARNESS_BIN``, else the build cache's bin directory."""
    return Path(os.environ.get("OLM_HARNESS_BIN") or build.bin_dir())


def unavailable() -> str | None:
    """Why the real OLM cannot run here (one line), or ``None`` when it can."""
    if not harness_path().is_file():
        return (
            f"no OLM harness at {harness_path()} (put ../shared/olm beside the checkout, or set "
            "UPGRADE_GATE_OLM_HARNESS)"
        )
    if os.geteuid() != 0:
        return "the real OLM needs root: its controllers run under unshare --mount"
    if shutil.which("unshare") is None:
        return "the real OLM needs unshare (util-linux) on PATH"
    for name in BINARIES:
        if not (binaries() / name).is_file():
            return build.why_missing(name, binaries())
    return apiserver.unavailable()


@dataclass(frozen=True)
class Olm:
    """A running OLM: its run directory, what ``up`` returned (``registry``, ``system_namespace``,
    ``operator_controller_user``, ``logs``, ...) and the API server it runs on."""

    run: Path
    info: dict[str, Any]
    server: apiserver.ApiServer

    def publish(self, packages: dict[str, list[str]], *options: str) -> dict[str, Any]:
        """Serve exactly ``packages`` (``{"demo": ["1.0.0", "1.1.0"]}``, upgrade order) from ClusterCatalog
        ``harness`` (``options``: ``--catalog NAME``, ``--skip-range``); returns once catalogd serves them."""
        specs = [f"{package}={','.join(versions)}" for package, versions in packages.items()]
        return _harness("publish", str(self.run), *options, *specs)

    def kube(self) -> Any:
        """The harness's admin REST client (``apply``, ``get``, ``list``, ``patch``, ``delete``)."""
        return load().Kube(self.run)

    def install(self, package: str) -> None:
        """Create ``package``'s namespace, installer ServiceAccount and ClusterExtension ``package`` (any 1.x from
        channel ``stable`` of the ClusterCatalog ``harness``)."""
        namespace = f"{package}-system"
        kube = self.kube()
        kube.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
        account = {"kind": "ServiceAccount", "name": "installer", "namespace": namespace}
        kube.apply(
            {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "installer", "namespace": namespace}}
        )
        kube.apply(apiserver.cluster_admin(f"{package}-installer", account))
        catalog = {
            "packageName": package,
            "channels": ["stable"],
            "version": ">=1.0.0 <2.0.0",
            "selector": {"matchLabels": {"olm.operatorframework.io/metadata.name": "harness"}},
        }
        kube.apply({
            "apiVersion": EXTENSIONS,
            "kind": "ClusterExtension",
            "metadata": {"name": package},
            "spec": {"namespace": namespace, "serviceAccount": {"name": "installer"},
                     "source": {"sourceType": "Catalog", "catalog": catalog}},
        })  # fmt: skip

    def extension(self, name: str) -> dict[str, Any]:
        """The ClusterExtension ``name`` (empty when absent)."""
        found: dict[str, Any] = self.kube().get(EXTENSIONS, "ClusterExtension", name) or {}
        return found

    def installed(self, name: str) -> str | None:
        """The bundle version operator-controller reports installed, once ``Installed`` is True."""
        status = self.extension(name).get("status", {})
        ok = any(c["type"] == "Installed" and c["status"] == "True" for c in status.get("conditions", []))
        version: str | None = status.get("install", {}).get("bundle", {}).get("version")
        return version if ok else None

    def progressing(self, name: str) -> dict[str, Any]:
        """The ClusterExtension's ``Progressing`` condition (empty before one is written)."""
        conditions = self.extension(name).get("status", {}).get("conditions", [])
        return next((c for c in conditions if c["type"] == "Progressing"), {})


def cluster_admin_binding(namespace: str) -> dict[str, Any]:
    """operator-controller's ServiceAccount bound to cluster-admin, as the manifests of the release built here
    (v1.11.0) bind it: that release installs a bundle as itself, no longer as ``spec.serviceAccount``, and the
    harness applies the RBAC of an older build, which lacks this binding."""
    subject = {"kind": "ServiceAccount", "name": "operator-controller-controller-manager", "namespace": namespace}
    return apiserver.cluster_admin("operator-controller-cluster-admin-rolebinding", subject)


@functools.cache
def load() -> ModuleType:
    """The OLM harness as a module (for its ``Kube`` client; processes are started through its command line)."""
    spec = importlib.util.spec_from_file_location("olm_harness_of_shared", harness_path())
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _harness(*argv: str) -> dict[str, Any]:
    """Run the harness's command line with the binaries of this checkout; the JSON line it prints.
    ``RuntimeError`` with its output when it fails."""
    environment = {**apiserver.harness_environment(), "OLM_HARNESS_BIN": str(binaries())}
    done = subprocess.run(
        [sys.executable, str(harness_path()), *argv], capture_output=True, text=True, check=False, env=environment
    )
    if done.returncode != 0:
        raise RuntimeError(f"the OLM harness failed ({' '.join(argv[:1])}):\n{done.stdout}{done.stderr}")
    lines = done.stdout.strip().splitlines()
    answer: dict[str, Any] = json.loads(lines[-1]) if lines else {}
    return answer


@contextmanager
def running(run: Path, *options: str) -> Iterator[Olm]:
    """A kube-apiserver, then ``up`` on it in ``run`` (``options``: ``--boxcutter``, ``--mark-available``,
    ``--system-namespace NS``); ``down`` and the server's stop after. The harness runs as a command, so its
    processes are not this process's children."""
    with apiserver.running(run) as server:
        try:
            info = _harness("up", str(run), *options)
        except RuntimeError as error:  # a port it picked was taken before it bound it (by another process)
            if "address already in use" not in str(error):
                raise
            _harness("down", str(run))
            info = _harness("up", str(run), *options)
        try:
            load().Kube(run).apply(cluster_admin_binding(info["system_namespace"]))
            yield Olm(run, info, server)
        finally:
            _harness("down", str(run))
