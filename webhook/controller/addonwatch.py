"""The add-on installVersion lifecycle's status, written by the controller where the hub serves it.

* **Whether.** The ManagedClusterAddOn CRD is read (one GET; the chart grants ``get`` on that name only) when the
  controller starts and again every ``min(resync_s, 60 s)``, which is how a CRD change is seen
  (``webhook.controller.addons.serves_lifecycle``). Where it has no ``status.currentVersion`` (upstream OCM, or no
  OCM at all) nothing is watched or written, and one info line says so; when a CRD change adds the field, the
  watches start and every add-on is reconciled, and when one removes it they stop.
* **Watches.** Their own ``WatchCache`` of ManagedClusterAddOns, ManifestWorks (the work agent's conditions) and
  ClusterManagementAddOns (``supportedVersions``, ``defaultVersion``); every change queues the add-on it concerns
  (``keys_of``) on the controller's one work queue, with keys ``managedclusteraddon/<namespace>/<name>``, beside
  the ClusterExtension keys. Each relists every ``resync_s``, as the controller's other caches do.
* **Reconcile.** ``webhook.ocm.lifecycle.lifecycle_status`` from the cache; when it differs from the status the
  add-on has, one merge patch of its ``status`` subresource carrying the ``resourceVersion`` read (a conflict: the
  cache was behind, retried), then the Event the ``Progressing`` change calls for, in the add-on's namespace. A
  status that already says everything costs no request. A write that is refused is reported by a Warning
  ``StatusNotWritten`` Event and retried with backoff (``RetryLater``).
"""

from __future__ import annotations

import datetime
import logging
import threading
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from webhook import logs
from webhook.controller.addons import (
    ADDON_API,
    ADDON_CRD,
    ADDONS,
    MANAGERS,
    STATES,
    WORKS,
    addon_key,
    addon_notice,
    addon_state,
    keys_of,
    serves_lifecycle,
    split_key,
)
from webhook.controller.events import WARNING, Notice
from webhook.controller.health import Metrics
from webhook.controller.reconciler import RetryLater, Writer
from webhook.controller.recorder import EventRecorder
from webhook.errors import ClusterError, UpgradeGateError
from webhook.io.kube import Resource, Source, WatchCache, WriteError
from webhook.objects import KubeObject, ObjectStore
from webhook.ocm import AddOnVersions, lifecycle_status

log = logging.getLogger(__name__)

CRD_CHECK_S = 60.0
"""How often, at most, the ManagedClusterAddOn CRD is read again to see a change."""
NOT_SYNCED_AGAIN_S = 1.0


class CrdReads(Protocol):
    """Reads one CustomResourceDefinition (``webhook.io.kube.Cluster``)."""

    def custom_resource_definition(self, name: str) -> dict[str, Any] | None:
        """The CRD ``name`` (``plural.group``), or ``None``; raises ``ClusterError``."""
        ...


class AddOnCache(ObjectStore, Protocol):
    """What a reconcile reads the add-on objects from: a ``WatchCache`` of ``ADDONS``, ``WORKS`` and ``MANAGERS``."""

    def unsynced(self) -> list[str]:
        """The resources not listed yet."""
        ...

    def stop(self) -> None:
        """Stop watching."""
        ...


class AddOnLifecycle:
    """Writes the lifecycle's status of every ManagedClusterAddOn while the hub serves it (see the module doc).

    ``queue`` adds a key to the controller's work queue; ``source`` feeds the add-on watch cache; ``reconcile(key)``
    is called by the controller's workers for keys ``managedclusteraddon/...``.
    """

    def __init__(
        self,
        crds: CrdReads,
        source: Source,
        writer: Writer,
        recorder: EventRecorder,
        metrics: Metrics,
        *,
        queue: Callable[[str], None],
        resync_s: float,
        clock: Callable[[], datetime.datetime] = lambda: datetime.datetime.now(datetime.UTC),
    ) -> None:
        self.crds, self.source, self.writer, self.recorder = crds, source, writer, recorder
        self.metrics, self.queue, self.resync_s, self.clock = metrics, queue, resync_s, clock
        self.cache: AddOnCache | None = None
        self.serving: bool | None = None  # unknown until the CRD was read
        self._problem = ""

    def watch(self, stop: threading.Event) -> None:
        """Read the CRD now and again every ``min(resync_s, 60 s)`` until ``stop`` is set; then stop watching."""
        while not stop.is_set():
            self.check()
            stop.wait(min(self.resync_s, CRD_CHECK_S))
        self.stop()

    def check(self) -> None:
        """Read the CRD once; start or stop the watches when whether it serves the lifecycle changed. A CRD that
        cannot be read keeps things as they are, with one warning (again only when its text changes)."""
        self.metrics.count_request("get")
        try:
            crd = self.crds.custom_resource_definition(ADDON_CRD)
        except ClusterError as error:
            if self._problem != str(error):
                log.warning("add-on CRD not readable; left as it was", extra=logs.fields({logs.ERROR: str(error)}))
            self._problem = str(error)
            return
        self._problem = ""
        serving = serves_lifecycle(crd)
        if serving == self.serving:
            return
        self.serving = serving
        if serving:
            log.info(
                "the hub's ManagedClusterAddOn CRD has status.currentVersion: writing the add-on lifecycle status",
                extra=logs.fields({}),
            )
            self.cache = WatchCache(
                self.source, (ADDONS, WORKS, MANAGERS), resync_s=self.resync_s, listener=self._on_change
            ).start()
            return
        why = "the hub's ManagedClusterAddOn CRD has no status.currentVersion" if crd else "no ManagedClusterAddOn CRD"
        log.info(f"the add-on lifecycle status is not written: {why}", extra=logs.fields({}))
        self.stop()

    def stop(self) -> None:
        """Stop watching (the reflectors end with their current watch); nothing is reconciled after."""
        cache, self.cache = self.cache, None
        if cache is not None:
            cache.stop()
        for state in STATES:
            self.metrics.addons.labels(state).set(0)

    def _on_change(self, resource: Resource, kind: str, obj: KubeObject) -> None:
        cache = self.cache
        known = cache.list(ADDON_API, ADDONS.kind) if cache is not None and resource == MANAGERS else []
        for key in keys_of(resource, obj, known):
            self.queue(key)

    def keys(self) -> list[str]:
        """The key of every ManagedClusterAddOn in the cache (none while the hub does not serve the lifecycle)."""
        cache = self.cache
        addons = cache.list(ADDON_API, ADDONS.kind) if cache is not None else []
        return [addon_key(str(a["metadata"].get("namespace")), str(a["metadata"].get("name"))) for a in addons]

    def count_states(self) -> None:
        """Set ``upgrade_gate_controller_addons{state}`` from the cache (while the hub serves the lifecycle)."""
        cache = self.cache
        if cache is None:
            return
        counts = dict.fromkeys(STATES, 0)
        for addon in cache.list(ADDON_API, ADDONS.kind):
            counts[addon_state(addon)] += 1
        for state, count in counts.items():
            self.metrics.addons.labels(state).set(count)

    def reconcile(self, key: str) -> float | None:
        """Bring the status of the add-on of ``key`` up to date; the seconds after which to run again while the
        cache has not listed everything yet, else ``None``. Raises ``RetryLater``."""
        cache = self.cache
        if cache is None:
            return None
        if cache.unsynced():
            return NOT_SYNCED_AGAIN_S
        namespace, name = split_key(key)
        addon = cache.get(ADDON_API, ADDONS.kind, name, namespace)
        if addon is None:
            return None
        manager = cache.get(ADDON_API, MANAGERS.kind, name) or {}
        before = addon.get("status") if isinstance(addon.get("status"), Mapping) else {}
        try:
            versions = AddOnVersions.from_status(manager.get("status"))
            status = lifecycle_status(addon, cache.list(WORKS.api_version, WORKS.kind, namespace), versions,
                                      now=self.clock())  # fmt: skip
        except UpgradeGateError as error:  # the ClusterManagementAddOn's versions are malformed: reported, not retried
            note = f"ClusterManagementAddOn {name}: {error}"
            self.recorder.record(addon, Notice(WARNING, "StatusNotWritten", "WriteStatus", note))
            return None
        if status == (before or {}):
            return None
        patch = {"metadata": {"resourceVersion": addon["metadata"].get("resourceVersion")}, "status": status}
        try:
            self.writer.patch(Resource(ADDON_API, ADDONS.kind, ADDONS.plural, namespace), name, patch, status=True)
        except ClusterError as error:
            if not isinstance(error, WriteError) or error.status != 409:
                self.recorder.record(addon, Notice(WARNING, "StatusNotWritten", "WriteStatus", str(error)))
            raise RetryLater(f"ManagedClusterAddOn {namespace}/{name}: {error}") from None
        notice = addon_notice(addon, (before or {}).get("conditions"), status)
        if notice is not None:
            self.recorder.record(addon, notice)
        return None
