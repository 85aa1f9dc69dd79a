"""The real OLM v1 for integration tests: operator-controller and catalogd (built from source by
``python -m tests.tools.build``) with a local registry, through the harness of ``../shared/olm``.

The harness is looked for at ``$UPGRADE_GATE_OLM_HARNESS`` or ``<repository>/../shared/olm/harness.py`` and loaded
as a module (it is a single file, not a package). It runs the binaries of ``$OLM_HARNESS_BIN``, by default the
build cache's bin directory, and starts the kube-apiserver harness beside it in the same run directory: OLM gets an
API server of its own, since operator-controller reconciles every ClusterExtension, including those other tests
write by hand with the status operator-controller would write. It needs root (each controller runs under
``unshare --mount`` with its ServiceAccount token at the pod path).
"""

from __future__ import annotations

import importlib.util
import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from tests import apiserver
from tests.tools import build

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
    """A running OLM: the loaded harness module, its run directory and what ``up`` returned (``kubeconfig``,
    ``server``, ``registry``, ``system_namespace``, ``operator_controller_user``, ...)."""

    harness: ModuleType
    run: Path
    info: dict[str, Any]

    def publish(self, packages: dict[str, list[str]], **options: Any) -> dict[str, Any]:
        """Serve exactly ``packages`` (``{"demo": ["1.0.0", "1.1.0"]}``, upgrade order) from ClusterCatalog
        ``harness``; returns once catalogd serves them (the harness's ``publish``)."""
        published: dict[str, Any] = self.harness.publish(self.run, packages, **options)
        return published

    def kube(self) -> Any:
        """The harness's admin REST client (``apply``, ``get``, ``patch``, ``delete``)."""
        return self.harness.Kube(self.run)


def load() -> ModuleType:
    """The OLM harness as a module."""
    spec = importlib.util.spec_from_file_location("olm_harness_of_shared", harness_path())
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@contextmanager
def running(run: Path, **options: Any) -> Iterator[Olm]:
    """``up`` in ``run`` (``options``: ``boxcutter``, ``mark_available``, ``system_namespace``), then ``down``."""
    variables = {"OLM_HARNESS_BIN": str(binaries()), "KUBE_HARNESS_BIN": str(apiserver.binaries())}
    saved = {name: os.environ.get(name) for name in variables}
    os.environ.update(variables)  # the harness reads them from the environment, in this process
    harness = load()
    try:
        info = harness.up(run, **options)
        try:
            yield Olm(harness, run, info)
        finally:
            harness.down(run)
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
