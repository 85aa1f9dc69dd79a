"""The policy set being served, swapped whole on reload, and the admitter that applies it.

``PolicyRuntime`` loads the policy files (and the ``--objects`` manifests) into an immutable ``Snapshot``.
``load()`` builds a new snapshot and replaces the old one in a single assignment; when the new set does not
load, the error is kept for ``/readyz``, logged and counted, and the previous snapshot keeps serving (the
apiserver likewise keeps its last good compilation of a policy).

Across processes (gunicorn's master loads, its forked workers decide): with a ``SharedRecord``, the master
publishes what it read (the files' texts, the objects, the load error) in two steps. ``stage()`` loads and
publishes the new set as staged: workers compile it ahead (``prepare``, in a background thread) while they keep
deciding with the active one. ``activate()`` publishes it as active: ``current()`` in a worker adopts it before
the next decision, from what ``prepare`` compiled or, if that is not done, compiling the same texts itself.
So once the master has activated a set, no worker decides with an older one, and no worker restarts.

``changed()`` says whether the files differ from the last attempt, by (path, inode, size, mtime) of each file,
so that a Kubernetes ConfigMap volume's atomic symlink swap counts as a change.
"""

from __future__ import annotations

import datetime
import logging
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from webhook import logs
from webhook.errors import InputError
from webhook.objects import InMemoryObjectStore, KubeObject, LayeredObjectStore, ObjectStore
from webhook.policy import Decision, PolicyEngine, PolicySet, Source, load_policy_sources, policy_files, read_sources
from webhook.serve.metrics import Metrics
from webhook.serve.shared import SharedRecord
from webhook.serve.stores import read_objects
from webhook.settings import DEFAULT_CEL_ENGINE, DEFAULT_KUBERNETES_VERSION

log = logging.getLogger(__name__)

Fingerprint = tuple[tuple[str, int, int, int], ...]

#: How often a worker looks for a staged set to compile ahead (``prepare_in_background``): rarely enough that the
#: looking takes nothing measurable from the request threads (every 20 ms, cheap requests beside busy threads
#: answered later).
PREPARE_INTERVAL_S = 0.25


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
    """An ``Admitter`` over ``webhook.policy.admitting.engine.PolicyEngine``: looks up the request's Namespace in
    ``store`` (``namespaceObject``) and gives the engine each request's time from ``clock`` (``clock.now()``).
    Requests are as ``webhook.serve.admissionreview.parse_review`` decodes them (``from_json``)."""

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
        return self.engine.validate(request, self._namespace(request), now=self.clock(), from_json=True)

    def mutate(self, request: Mapping[str, Any]) -> Decision:
        """See ``Admitter.mutate``."""
        return self.engine.mutate(request, self._namespace(request), now=self.clock(), from_json=True)


AdmitterFactory = Callable[[PolicySet, ObjectStore], Admitter]


@dataclass(frozen=True)
class Loaded:
    """A loaded set as the workers receive it: its generation, the policy files' sources and the objects."""

    generation: int
    sources: tuple[Source, ...]
    objects: tuple[KubeObject, ...]


@dataclass(frozen=True)
class Published:
    """What the master publishes to its workers: the ``active`` set, the one to decide with (``None`` before a
    first successful load); a ``staged`` set, loaded and about to become active, that workers compile ahead
    (or ``None``); and the last load's ``error`` (``None`` after a success)."""

    active: Loaded | None
    staged: Loaded | None
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
    (``None`` after a success); ``staged`` a set ``stage`` loaded and ``activate`` has not served yet.
    ``metrics`` (optional) gets the generation and load errors. ``engine``: the CEL backend the set is compiled
    for (``webhook.settings.CEL_ENGINES``); ``kubernetes_version``: the cluster's version it is loaded for.
    ``shared``: where ``stage`` and ``activate`` publish and ``current`` and ``prepare`` read in forked processes
    (see the module docstring); ``None`` in a single process.
    """

    def __init__(
        self,
        policies: Path,
        objects: Path | None = None,
        *,
        metrics: Metrics | None = None,
        make_admitter: AdmitterFactory = EngineAdmitter,
        engine: str = DEFAULT_CEL_ENGINE,
        kubernetes_version: str = DEFAULT_KUBERNETES_VERSION,
        shared: SharedRecord | None = None,
    ) -> None:
        self.policies_path = policies
        self.engine = engine
        self.kubernetes_version = kubernetes_version
        self.objects_path = objects
        self.metrics = metrics
        self.make_admitter = make_admitter
        self.cluster: ClusterCache | None = None
        self.snapshot: Snapshot | None = None
        self.error: str | None = None
        self._fingerprint: Fingerprint | None = None
        self.staged: Snapshot | None = None
        self.shared = shared
        self._seen = 0  # the version of ``shared`` whose active set this process serves
        self._lock = threading.Lock()
        self._compiled: Snapshot | None = None  # the last set compiled from a publication
        self._prepared = 0  # the version of ``shared`` ``prepare`` last looked at
        self._compile_lock = threading.Lock()

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
        """Load the files into a new snapshot and serve it (``stage``, then ``activate``); True on success. On
        failure keep the current snapshot, set ``error``, log it and count it. Never raises for bad input
        (``InputError``)."""
        if not self.stage():
            return False
        self.activate()
        return True

    def stage(self) -> bool:
        """Load the files into ``staged``, published (with ``shared``) for the workers to compile ahead, not yet
        served; True on success. On failure as ``load``, the failure published."""
        self._fingerprint = self.fingerprint()
        generation = self.snapshot.generation + 1 if self.snapshot else 1
        try:
            sources = tuple(read_sources([self.policies_path]))
            policies = load_policy_sources(sources, engine=self.engine, version=self.kubernetes_version)
            objects = tuple(read_objects(self.objects_path)) if self.objects_path else ()
            staged = self._snapshot(generation, sources, policies, objects)
            self._publish(Published(_loaded(self.snapshot), _loaded(staged), None))
        except InputError as error:
            self.error = str(error)
            log.error(
                "policy set not loaded; the previous set keeps serving" if self.snapshot else "policy set not loaded",
                extra=logs.fields({logs.PATH: str(self.policies_path), logs.ERROR: self.error}),
            )
            if self.metrics:
                self.metrics.load_errors.inc()
                self.metrics.load_failed.set(1)
            self._publish(Published(_loaded(self.snapshot), None, self.error))
            return False
        self.staged = staged
        return True

    def activate(self) -> None:
        """Serve the ``staged`` set (published as active with ``shared``); nothing without one."""
        if self.staged is None:
            return
        self.snapshot, self.staged, self.error = self.staged, None, None
        self._publish(Published(_loaded(self.snapshot), None, None))
        log.info(
            "policy set loaded",
            extra=logs.fields({logs.PATH: str(self.policies_path), **self.snapshot.summary()}),
        )
        if self.metrics:
            self.metrics.generation.set(self.snapshot.generation)
            self.metrics.load_failed.set(0)

    def _publish(self, published: Published) -> None:
        """Publish to ``shared`` (if any); ``InputError`` if too large to share."""
        if self.shared is not None:
            try:
                self._seen = self.shared.publish(published)
            except ValueError as failure:
                raise InputError(f"{self.policies_path}: {failure}") from None

    def current(self) -> Snapshot | None:
        """The snapshot to decide with (``None`` before a first load). In a process forked after ``shared`` was
        made: first adopt the active set last published if it is not this process's (compiled ahead by
        ``prepare``, else here; concurrent callers wait), so no decision uses a set older than the last active
        one published."""
        if self.shared is not None and self.shared.version() != self._seen:
            with self._lock:
                version, published = self.shared.read()
                if version != self._seen:
                    active = published.active
                    if active is not None and active.generation != _generation(self.snapshot):
                        self.snapshot = self._compile(active)
                        log.info("policy set adopted", extra=logs.fields(self.snapshot.summary()))
                    self.error = published.error
                    self._seen = version
        return self.snapshot

    def prepare(self) -> Snapshot | None:
        """Compile the staged set last published, if any and not compiled yet, so that ``current`` finds it;
        returns it when compiled by this call."""
        if self.shared is None or self.shared.version() == self._prepared:
            return None
        self._prepared, published = self.shared.read()
        staged = published.staged
        if staged is None or staged.generation == _generation(self._compiled):
            return None
        return self._compile(staged)

    def prepare_in_background(self, interval_s: float = PREPARE_INTERVAL_S) -> None:
        """Run ``prepare`` every ``interval_s`` in a daemon thread (in a worker, after the fork)."""

        def loop() -> None:
            while True:
                time.sleep(interval_s)
                try:
                    self.prepare()
                except Exception:  # adopting the set compiles it again and answers the failure
                    log.exception("policy set not compiled ahead")

        threading.Thread(target=loop, name="policy-set-prepare", daemon=True).start()

    def _compile(self, loaded: Loaded) -> Snapshot:
        """``loaded`` compiled here, once: the last compiled set is kept."""
        with self._compile_lock:
            if self._compiled is None or self._compiled.generation != loaded.generation:
                policies = load_policy_sources(loaded.sources, engine=self.engine, version=self.kubernetes_version)
                self._compiled = self._snapshot(loaded.generation, loaded.sources, policies, loaded.objects)
            return self._compiled

    def attach(self, cluster: ClusterCache) -> None:
        """Serve lookups and params from ``cluster`` first (before the param objects beside the policies and the
        ``--objects`` manifests, which fill in what the cluster lacks); rebuilds the current admitter."""
        self.cluster = cluster
        self.staged = self._compiled = None
        if self.snapshot is not None:
            current = self.snapshot
            self.snapshot = self._snapshot(current.generation, current.sources, current.policies, current.objects)

    def _snapshot(
        self, generation: int, sources: tuple[Source, ...], policies: PolicySet, objects: tuple[KubeObject, ...]
    ) -> Snapshot:
        cluster = [self.cluster] if self.cluster is not None else []
        store = LayeredObjectStore([*cluster, InMemoryObjectStore(policies.params), InMemoryObjectStore(objects)])
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


def _loaded(snapshot: Snapshot | None) -> Loaded | None:
    return Loaded(snapshot.generation, snapshot.sources, snapshot.objects) if snapshot is not None else None


def _generation(snapshot: Snapshot | None) -> int:
    return snapshot.generation if snapshot is not None else 0
