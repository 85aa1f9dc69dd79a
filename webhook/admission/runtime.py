"""The policy set being served, swapped whole on reload, and the admitter that applies it.

``PolicyRuntime`` loads the policy files (and the ``--objects`` manifests) into an immutable ``Snapshot``.
``load()`` builds a new snapshot and replaces the old one in a single assignment; when the new set does not
load, the error is kept for ``/readyz``, logged and counted, and the previous snapshot keeps serving (the
apiserver likewise keeps its last good compilation of a policy).

Across processes (gunicorn's master loads, its forked workers decide): with a ``SharedRecord``, each ``load``
publishes what it read (the files' texts, the objects, the error) and ``current()`` in a worker first adopts
the latest publication, compiling the same texts under the worker's lock. So once the master has published a
set, no worker decides with an older one, and no worker restarts for a reload.

``changed()`` says whether the files differ from the last attempt, by (path, inode, size, mtime) of each file,
so that a Kubernetes ConfigMap volume's atomic symlink swap counts as a change.
"""

from __future__ import annotations

import datetime
import logging
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from webhook import logs
from webhook.admission.metrics import Metrics
from webhook.admission.review import Decision
from webhook.admission.shared import SharedRecord
from webhook.admission.stores import LayeredObjectStore, read_objects
from webhook.errors import InputError
from webhook.objects import InMemoryObjectStore, KubeObject, ObjectStore
from webhook.policy.documents import Source, policy_files, read_sources
from webhook.policy.engine import PolicyEngine
from webhook.policy.loader import load_policy_sources
from webhook.policy.model import PolicySet
from webhook.settings import DEFAULT_CEL_ENGINE

log = logging.getLogger(__name__)

Fingerprint = tuple[tuple[str, int, int, int], ...]


class Admitter(Protocol):
    """Decides admission requests (the ``request`` of an AdmissionReview) with one policy set."""

    def validate(self, request: Mapping[str, Any]) -> Decision:
        """The ValidatingAdmissionPolicies' decision. Raises ``ReviewError`` for an unreadable request."""
        ...

    def mutate(self, request: Mapping[str, Any]) -> Decision:
        """The MutatingAdmissionPolicies' decision, with its patch. Raises ``ReviewError`` likewise."""
        ...


class ClusterCache(ObjectStore, Protocol):
    """An ``ObjectStore`` filled from a cluster, which is ready once every watched kind is listed."""

    def unsynced(self) -> list[str]:
        """The kinds not yet listed (empty when the cache is synced)."""
        ...


class EngineAdmitter:
    """An ``Admitter`` over ``webhook.policy.engine.PolicyEngine``: looks up the request's Namespace in
    ``store`` (``namespaceObject``) and gives the engine each request's time from ``clock`` (``clock.now()``)."""

    def __init__(
        self,
        policies: PolicySet,
        store: ObjectStore,
        clock: Callable[[], datetime.datetime] = lambda: datetime.datetime.now(datetime.UTC),
    ) -> None:
        self.policies = policies
        self.store = store
        self.clock = clock
        self.engine = PolicyEngine(policies, store)

    def _namespace(self, request: Mapping[str, Any]) -> KubeObject | None:
        name = request.get("namespace")
        return self.store.get("v1", "Namespace", name) if isinstance(name, str) and name else None

    def validate(self, request: Mapping[str, Any]) -> Decision:
        """See ``Admitter.validate``."""
        return self.engine.validate(request, self._namespace(request), now=self.clock())

    def mutate(self, request: Mapping[str, Any]) -> Decision:
        """See ``Admitter.mutate``."""
        return self.engine.mutate(request, self._namespace(request), now=self.clock())


AdmitterFactory = Callable[[PolicySet, ObjectStore], Admitter]


@dataclass(frozen=True)
class Published:
    """What a ``load`` publishes to the workers: the current set's generation, sources and objects (generation
    0 and nothing before a first successful load), and the load's error (``None`` after a success)."""

    generation: int
    sources: tuple[Source, ...]
    objects: tuple[KubeObject, ...]
    error: str | None


@dataclass(frozen=True, slots=True)
class Snapshot:
    """One loaded policy set: ``generation`` (1, 2, ... per successful load), the policy files' ``sources``
    (file name, text) and the ``policies`` compiled from them, the ``objects`` read from ``--objects`` and the
    ``admitter`` serving them."""

    generation: int
    sources: tuple[Source, ...]
    policies: PolicySet
    objects: tuple[KubeObject, ...]
    admitter: Admitter

    def summary(self) -> dict[str, int | str]:
        """For ``/readyz``: generation, the CEL engine, counts of policies and bindings of each type, param
        objects and objects."""
        return {
            "generation": self.generation,
            "celEngine": self.policies.engine,
            "validatingPolicies": len(self.policies.validating_policies),
            "validatingBindings": len(self.policies.validating_bindings),
            "mutatingPolicies": len(self.policies.mutating_policies),
            "mutatingBindings": len(self.policies.mutating_bindings),
            "params": len(self.policies.params),
            "objects": len(self.objects),
        }


class PolicyRuntime:
    """The current ``Snapshot`` of the policy set at ``policies`` (a directory or file), with lookups served
    by its params, then the ``objects`` manifests, then the cluster cache once ``attach``-ed.

    ``snapshot`` is ``None`` until the first successful ``load``; ``error`` is the last load's error text
    (``None`` after a success). ``metrics`` (optional) gets the generation and load errors. ``engine``: the
    CEL backend the set is compiled for (``webhook.settings.CEL_ENGINES``). ``shared``: where ``load`` publishes
    and ``current`` reads in forked processes (see the module docstring); ``None`` in a single process.
    """

    def __init__(
        self,
        policies: Path,
        objects: Path | None = None,
        *,
        metrics: Metrics | None = None,
        make_admitter: AdmitterFactory = EngineAdmitter,
        engine: str = DEFAULT_CEL_ENGINE,
        shared: SharedRecord | None = None,
    ) -> None:
        self.policies_path = policies
        self.engine = engine
        self.objects_path = objects
        self.metrics = metrics
        self.make_admitter = make_admitter
        self.cluster: ClusterCache | None = None
        self.snapshot: Snapshot | None = None
        self.error: str | None = None
        self._fingerprint: Fingerprint | None = None
        self.shared = shared
        self._seen = 0  # the version of ``shared`` this process serves
        self._lock = threading.Lock()

    def fingerprint(self) -> Fingerprint:
        """(path, inode, size, mtime in ns) of every input file; a missing path gives an empty entry."""
        entries: list[tuple[str, int, int, int]] = []
        for path in (self.policies_path, self.objects_path):
            if path is None:
                continue
            try:
                files = list(policy_files([path]))
            except InputError:
                entries.append((str(path), 0, 0, 0))
                continue
            for file in files:
                try:
                    stat = file.stat()
                except OSError:
                    entries.append((str(file), 0, 0, 0))
                else:
                    entries.append((str(file), stat.st_ino, stat.st_size, stat.st_mtime_ns))
        return tuple(entries)

    def changed(self) -> bool:
        """True if the input files differ from what the last ``load`` read."""
        return self.fingerprint() != self._fingerprint

    def load(self) -> bool:
        """Load the files into a new snapshot and serve it; True on success. On failure keep the current
        snapshot, set ``error``, log it and count it. Either way publish the outcome to ``shared``. Never raises
        for bad input (``InputError``)."""
        self._fingerprint = self.fingerprint()
        generation = self.snapshot.generation + 1 if self.snapshot else 1
        try:
            sources = tuple(read_sources([self.policies_path]))
            policies = load_policy_sources(sources, engine=self.engine)
            objects = tuple(read_objects(self.objects_path)) if self.objects_path else ()
            snapshot = self._snapshot(generation, sources, policies, objects)
            self._publish(snapshot, None)
        except InputError as error:
            self.error = str(error)
            log.error(
                "policy set not loaded; the previous set keeps serving" if self.snapshot else "policy set not loaded",
                extra=logs.fields({logs.PATH: str(self.policies_path), logs.ERROR: self.error}),
            )
            if self.metrics:
                self.metrics.load_errors.inc()
                self.metrics.load_failed.set(1)
            self._publish(self.snapshot, self.error)
            return False
        self.snapshot = snapshot
        self.error = None
        log.info(
            "policy set loaded",
            extra=logs.fields({logs.PATH: str(self.policies_path), **snapshot.summary()}),
        )
        if self.metrics:
            self.metrics.generation.set(generation)
            self.metrics.load_failed.set(0)
        return True

    def _publish(self, snapshot: Snapshot | None, error: str | None) -> None:
        """Publish ``snapshot``'s set and ``error`` to ``shared`` (if any); ``InputError`` if too large to share."""
        if self.shared is None:
            return
        if snapshot is None:
            published = Published(0, (), (), error)
        else:
            published = Published(snapshot.generation, snapshot.sources, snapshot.objects, error)
        try:
            self._seen = self.shared.publish(published)
        except ValueError as failure:
            raise InputError(f"{self.policies_path}: {failure}") from None

    def current(self) -> Snapshot | None:
        """The snapshot to decide with (``None`` before a first load). In a process forked after ``shared`` was
        made: first adopt the last published set if it is newer than this process's, compiling its sources here
        (concurrent callers wait for that), so no decision uses a set older than the last published."""
        if self.shared is not None and self.shared.version() != self._seen:
            with self._lock:
                version, published = self.shared.read()
                if version != self._seen:
                    self._adopt(published)
                    self._seen = version
        return self.snapshot

    def _adopt(self, published: Published) -> None:
        if published.generation != (self.snapshot.generation if self.snapshot else 0):
            policies = load_policy_sources(published.sources, engine=self.engine)
            self.snapshot = self._snapshot(published.generation, published.sources, policies, published.objects)
            log.info("policy set adopted", extra=logs.fields(self.snapshot.summary()))
        self.error = published.error

    def attach(self, cluster: ClusterCache) -> None:
        """Serve lookups from ``cluster`` too (after params and objects); rebuilds the current admitter."""
        self.cluster = cluster
        if self.snapshot is not None:
            current = self.snapshot
            self.snapshot = self._snapshot(current.generation, current.sources, current.policies, current.objects)

    def _snapshot(
        self, generation: int, sources: tuple[Source, ...], policies: PolicySet, objects: tuple[KubeObject, ...]
    ) -> Snapshot:
        cluster = [self.cluster] if self.cluster is not None else []
        store = LayeredObjectStore([InMemoryObjectStore(policies.params), InMemoryObjectStore(objects), *cluster])
        return Snapshot(generation, sources, policies, objects, self.make_admitter(policies, store))

    def readiness(self) -> tuple[bool, dict[str, Any]]:
        """(ready, detail): ready once a policy set is loaded and the cluster cache, if any, is synced.
        The detail names the set (``Snapshot.summary``), the last load error and the unsynced kinds."""
        snapshot = self.current()
        unsynced = self.cluster.unsynced() if self.cluster is not None else []
        detail: dict[str, Any] = {
            "policies": snapshot.summary() if snapshot else None,
            "loadError": self.error,
            "unsyncedKinds": unsynced,
        }
        return snapshot is not None and not unsynced, detail
