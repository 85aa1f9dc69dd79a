"""The controller process: watch caches, a work queue, one worker, one leader.

* **Watches.** ``WatchCache`` reflectors list and watch ClusterExtensionRevisions, ClusterExtensions and
  ClusterCatalogs; every change queues the ClusterExtension it concerns (a revision queues its
  ``spec.clusterExtensionRef.name``; a ClusterCatalog queues itself, for its image template, and in ``cluster``
  mode every ClusterExtension). Each cache relists every
  ``resync_s`` (30 minutes by default), which queues everything again: the periodic resync costs one LIST per
  kind, and reconciling unchanged objects costs no request at all.
* **Add-ons.** Where the hub serves the add-on installVersion lifecycle (its ManagedClusterAddOn CRD has
  ``status.currentVersion``), ``AddOnLifecycle`` watches ManagedClusterAddOns and their ManifestWorks and queues
  keys ``managedclusteraddon/<namespace>/<name>`` on the same queue, for the same workers
  (``webhook.controller.addonwatch``); elsewhere it reads one CRD now and then and does nothing else.
* **Leader.** With leader election, only the replica holding the Lease (``LeaseElector``, client-go's rules)
  reconciles; the others keep their caches warm and take over when the Lease expires. A new leader queues
  every ClusterExtension, so nothing that happened while another replica led (or none did) is lost.
* **Workers.** ``workers`` threads take keys from the queue; a ClusterExtension is never reconciled by two at
  once (the queue hands a key to one worker at a time).
* **Retries.** A reconcile that fails is queued again with per-key exponential backoff (1 s doubling to 5 min);
  the worker waits on the queue, never spins.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator, Mapping
from typing import Any

from webhook import logs
from webhook.controller.addons import ADDON_KEY
from webhook.controller.addonwatch import AddOnLifecycle
from webhook.controller.breach import unapproved_change
from webhook.controller.catalogs import CatalogLoader
from webhook.controller.doctor import DoctorReads
from webhook.controller.events import WARNING, Notice
from webhook.controller.gatecheck import GateCheck
from webhook.controller.health import Metrics, serve_health
from webhook.controller.queue import WorkQueue
from webhook.controller.reconciler import (
    CATALOG_KEY,
    CATALOGS,
    EXTENSIONS,
    OLM,
    REVISIONS,
    ClusterReads,
    Reconciler,
    Writer,
)
from webhook.controller.recorder import EventRecorder
from webhook.controller.status import installed_version, state_of
from webhook.io.kube import ApiWriter, LeaseElector, Resource, Source, WatchCache
from webhook.objects import KubeObject
from webhook.settings import ControllerSettings

log = logging.getLogger(__name__)

_STATES = ("pending approval", "progressing", "held", "succeeded", "failed", "unknown")


class EventsOverApi:
    """The recorder's ``EventSink`` over an ``ApiWriter`` (``events.k8s.io/v1`` Events)."""

    def __init__(self, writer: ApiWriter) -> None:
        self.writer = writer

    def create_event(self, namespace: str, body: Mapping[str, Any]) -> None:
        """Create one Event in ``namespace``."""
        self.writer.create(_events(namespace), body)

    def patch_event(self, namespace: str, name: str, patch: Mapping[str, Any]) -> None:
        """Merge-patch the Event ``name`` in ``namespace``."""
        self.writer.patch(_events(namespace), name, patch)


class CountingSource:
    """A watch cache ``Source`` that counts its LIST and WATCH requests in ``metrics``."""

    def __init__(self, source: Source, metrics: Metrics) -> None:
        self.source, self.metrics = source, metrics

    def list(self, resource: Resource) -> tuple[list[KubeObject], str]:
        """See ``Source.list``."""
        self.metrics.count_request("list")
        return self.source.list(resource)

    def watch(self, resource: Resource, resource_version: str, timeout_s: int) -> Iterator[tuple[str, KubeObject]]:
        """See ``Source.watch``."""
        self.metrics.count_request("watch")
        return self.source.watch(resource, resource_version, timeout_s)


def _events(namespace: str) -> Resource:
    return Resource("events.k8s.io/v1", "Event", "events", namespace)


class RevisionIndex:
    """Which revisions name which ClusterExtension, kept from the watch events (thread-safe)."""

    def __init__(self) -> None:
        self._owner: dict[str, str] = {}
        self._names: dict[str, set[str]] = {}
        self._lock = threading.Lock()

    def update(self, kind: str, revision: KubeObject) -> str:
        """Record a watch event of ``revision``; returns the extension it names."""
        name = str((revision.get("metadata") or {}).get("name"))
        spec = revision.get("spec") or {}
        extension = str((spec.get("clusterExtensionRef") or {}).get("name") or "")
        with self._lock:
            previous = self._owner.pop(name, None)
            if previous is not None:
                self._names.get(previous, set()).discard(name)
            if kind != "DELETED":
                self._owner[name] = extension
                self._names.setdefault(extension, set()).add(name)
        return extension

    def names(self, extension: str) -> list[str]:
        """The revisions of ``extension``, sorted."""
        with self._lock:
            return sorted(self._names.get(extension, ()))

    def extensions(self) -> list[str]:
        """Every extension some revision names."""
        with self._lock:
            return [name for name, revisions in self._names.items() if revisions]


class Controller:
    """The controller: ``run(stop)`` until ``stop`` is set. ``writer`` makes every write (``ApiWriter``);
    ``source`` feeds the watch caches; ``elector`` is ``None`` without leader election; ``metrics`` (made here
    when not given) are served on ``/metrics``."""

    def __init__(
        self,
        settings: ControllerSettings,
        source: Source,
        writer: Writer,
        recorder: EventRecorder,
        *,
        elector: LeaseElector | None = None,
        catalogs: CatalogLoader | None = None,
        cluster: ClusterReads | None = None,
        doctor: DoctorReads | None = None,
        metrics: Metrics | None = None,
    ) -> None:
        self.settings, self.elector, self.cluster = settings, elector, cluster
        self.queue = WorkQueue()
        self.index = RevisionIndex()
        self.metrics = metrics or Metrics()
        self.resolves = catalogs is not None
        self._installed: dict[str, str | None] = {}  # ClusterExtension -> installed version last seen
        counted = CountingSource(source, self.metrics)
        resources = (REVISIONS, EXTENSIONS, CATALOGS)
        self.cache = WatchCache(counted, resources, resync_s=settings.resync_s, listener=self._on_change)
        self.gate_check = (
            GateCheck(doctor, recorder, self.metrics, settings_namespace=settings.settings_namespace)
            if doctor is not None and settings.gate_check_s > 0
            else None
        )
        self.reconciler = Reconciler(
            self.cache, self.index.names, writer, recorder, catalogs=catalogs, cluster=cluster,
            version_ttl_s=settings.resync_s,
        )  # fmt: skip
        self.addons = (
            AddOnLifecycle(
                cluster, counted, writer, recorder, self.metrics, queue=self.queue.add, resync_s=settings.resync_s
            )
            if cluster is not None
            else None
        )

    def _on_change(self, resource: Resource, kind: str, obj: KubeObject) -> None:
        """A watch event: queue the ClusterExtension it concerns (and check a ClusterExtension's version change)."""
        if resource == REVISIONS:
            self.queue.add(self.index.update(kind, obj))
        elif resource == EXTENSIONS:
            name = str((obj.get("metadata") or {}).get("name"))
            self._check_version(name, kind, obj)
            self.queue.add(name)
        else:
            self.queue.add(CATALOG_KEY + str((obj.get("metadata") or {}).get("name")))
            if self.resolves:
                self.queue_all()

    def _check_version(self, name: str, kind: str, extension: KubeObject) -> None:
        """Remember ``name``'s installed version; where it changed with no approved revision, the leader records a
        Warning ``UnapprovedUpgrade`` on the ClusterExtension, logs it and counts it."""
        before = self._installed.pop(name, None)
        if kind == "DELETED":
            return
        self._installed[name] = installed_version(extension)
        # read only where the version changed: most watch events of a ClusterExtension are other status updates
        revisions = (r for n in self.index.names(name) if (r := self.cache.get(OLM, REVISIONS.kind, n)) is not None)
        note = unapproved_change(before, extension, revisions)
        if note is None or (self.elector is not None and not self.elector.is_leader):
            return
        self.metrics.unapproved_upgrades.inc()
        log.warning(note, extra=logs.fields({logs.NAME: name, logs.EVENT: "UnapprovedUpgrade"}))
        self.reconciler.recorder.record(extension, Notice(WARNING, "UnapprovedUpgrade", "Detect", note))

    def queue_all(self) -> None:
        """Queue every ClusterCatalog, every ClusterExtension known and every extension a revision names."""
        for catalog in self.cache.list(OLM, CATALOGS.kind):
            self.queue.add(CATALOG_KEY + str(catalog["metadata"]["name"]))
        names = {str(e["metadata"]["name"]) for e in self.cache.list(OLM, EXTENSIONS.kind)}
        for name in sorted(names | set(self.index.extensions())):
            self.queue.add(name)
        for key in self.addons.keys() if self.addons is not None else ():
            self.queue.add(key)

    def run(self, stop: threading.Event) -> None:
        """Watch, elect, reconcile until ``stop`` is set; the health endpoints serve meanwhile. What would only
        keep it idle fails the start instead, with one message: an API server it cannot reach (``ClusterError``),
        a Lease namespace that does not exist (``InputError``)."""
        server = serve_health(self.settings.health_host, self.settings.health_port, self.metrics, self.not_ready)
        try:
            if self.cluster is not None:
                self.cluster.server_version()
            if self.elector is not None:
                self.elector.try_acquire()
                threading.Thread(target=self.elector.keep, args=(stop,), name="lease", daemon=True).start()
            self.cache.start()
            if self.gate_check is not None:
                threading.Thread(target=self._check_gate, args=(stop,), name="gate check", daemon=True).start()
            if self.addons is not None:
                threading.Thread(target=self.addons.watch, args=(stop,), name="add-ons", daemon=True).start()
            self._work(stop)
        finally:
            server.shutdown()
            server.server_close()
            self.cache.stop()

    def not_ready(self) -> list[str]:
        """What keeps this replica from being ready: watch caches not yet synced, and leader election failing
        (an API error, not another replica leading)."""
        waiting = [f"not synced: {kind}" for kind in self.cache.unsynced()]
        problem = self.elector.problem if self.elector is not None else None
        return waiting + ([f"leader election: {problem}"] if problem else [])

    def _work(self, stop: threading.Event) -> None:
        """Gate the workers: they reconcile while this replica leads and the caches are synced."""
        leading = threading.Event()
        for number in range(self.settings.workers):
            threading.Thread(target=self._worker, args=(stop, leading), name=f"worker {number}", daemon=True).start()
        while not stop.is_set():
            ready = (self.elector is None or self.elector.is_leader) and not self.cache.unsynced()
            if ready and not leading.is_set():
                log.info("leading: reconciling every ClusterExtension", extra=logs.fields({}))
                self.queue_all()
                leading.set()
            elif not ready and leading.is_set():
                leading.clear()
            self.metrics.leader.set(1 if leading.is_set() else 0)
            stop.wait(0.1 if not leading.is_set() else 0.5)

    def _check_gate(self, stop: threading.Event) -> None:
        """Run the doctor's checks every ``gate_check_s`` while this replica leads (the first round at once)."""
        assert self.gate_check is not None
        while not stop.is_set():
            if self.elector is None or self.elector.is_leader:
                self.gate_check.run()
            stop.wait(self.settings.gate_check_s)

    def _worker(self, stop: threading.Event, leading: threading.Event) -> None:
        while not stop.is_set():
            if leading.wait(0.5):
                self.process(timeout_s=0.5)

    def process(self, timeout_s: float) -> bool:
        """Reconcile the next key due within ``timeout_s``; False when none was."""
        key = self.queue.get(timeout_s)
        self.metrics.queue_depth.set(self.queue.depth())
        if key is None:
            self._count_states()
            return False
        try:
            again = (
                self.addons if self.addons is not None and key.startswith(ADDON_KEY) else self.reconciler
            ).reconcile(key)
        except Exception as error:  # a reconcile must never stop the worker: retry with backoff
            delay = self.queue.retry(key)
            self.metrics.reconciles.labels("retry").inc()
            fields = {logs.NAME: key, logs.ERROR: str(error), "retry_in_s": delay}
            log.warning("reconcile failed; retrying", extra=logs.fields(fields))
        else:
            self.queue.forget(key)
            if again is not None:
                self.queue.add_after(key, again)
            self.metrics.reconciles.labels("ok").inc()
        finally:
            self.queue.done(key)
        return True

    def _count_states(self) -> None:
        counts = dict.fromkeys(_STATES, 0)
        for revision in self.cache.list(OLM, REVISIONS.kind):
            counts[state_of((revision.get("status") or {}).get("conditions")) or "unknown"] += 1
        for state, count in counts.items():
            self.metrics.revisions.labels(state).set(count)
        if self.addons is not None:
            self.addons.count_states()
