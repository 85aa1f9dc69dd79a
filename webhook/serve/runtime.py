"""The policy set being served, swapped whole on reload, and the admitter that applies it.

``PolicyRuntime`` loads the policy files (and the ``--objects`` manifests) into an immutable ``Snapshot``.
``load()`` builds a new snapshot and replaces the old one in a single assignment; when the new set does not
load, the error is kept for ``/readyz``, logged and counted, and the previous snapshot keeps serving (the
apiserver likewise keeps its last good compilation of a policy). ``changed()`` says whether the files differ
from the last attempt, by (path, inode, size, mtime) of each file, so that a Kubernetes ConfigMap volume's
atomic symlink swap counts as a change.
"""

from __future__ import annotations

import datetime
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from webhook import logs
from webhook.errors import InputError
from webhook.objects import InMemoryObjectStore, KubeObject, LayeredObjectStore, ObjectStore
from webhook.policy.documents import policy_files
from webhook.policy.engine import PolicyEngine
from webhook.policy.loader import load_policy_set
from webhook.policy.model import PolicySet
from webhook.serve.metrics import Metrics
from webhook.serve.review import Decision
from webhook.serve.stores import read_objects
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


@dataclass(frozen=True, slots=True)
class Snapshot:
    """One loaded policy set: ``generation`` (1, 2, ... per successful load), the ``policies``, the
    ``objects`` read from ``--objects`` and the ``admitter`` serving them."""

    generation: int
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
    CEL backend the set is compiled for (``webhook.settings.CEL_ENGINES``).
    """

    def __init__(
        self,
        policies: Path,
        objects: Path | None = None,
        *,
        metrics: Metrics | None = None,
        make_admitter: AdmitterFactory = EngineAdmitter,
        engine: str = DEFAULT_CEL_ENGINE,
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
        snapshot, set ``error``, log it and count it. Never raises for bad input (``InputError``)."""
        self._fingerprint = self.fingerprint()
        generation = self.snapshot.generation + 1 if self.snapshot else 1
        try:
            policies = load_policy_set([self.policies_path], engine=self.engine)
            objects = tuple(read_objects(self.objects_path)) if self.objects_path else ()
        except InputError as error:
            self.error = str(error)
            log.error(
                "policy set not loaded; the previous set keeps serving",
                extra=logs.fields({logs.PATH: str(self.policies_path), logs.ERROR: self.error}),
            )
            if self.metrics:
                self.metrics.load_errors.inc()
                self.metrics.load_failed.set(1)
            return False
        self.snapshot = self._snapshot(generation, policies, objects)
        self.error = None
        log.info(
            "policy set loaded",
            extra=logs.fields({logs.PATH: str(self.policies_path), **self.snapshot.summary()}),
        )
        if self.metrics:
            self.metrics.generation.set(generation)
            self.metrics.load_failed.set(0)
        return True

    def attach(self, cluster: ClusterCache) -> None:
        """Serve lookups from ``cluster`` too (after params and objects); rebuilds the current admitter."""
        self.cluster = cluster
        if self.snapshot is not None:
            current = self.snapshot
            self.snapshot = self._snapshot(current.generation, current.policies, current.objects)

    def _snapshot(self, generation: int, policies: PolicySet, objects: tuple[KubeObject, ...]) -> Snapshot:
        cluster = [self.cluster] if self.cluster is not None else []
        store = LayeredObjectStore([InMemoryObjectStore(policies.params), InMemoryObjectStore(objects), *cluster])
        return Snapshot(generation, policies, objects, self.make_admitter(policies, store))

    def readiness(self) -> tuple[bool, dict[str, Any]]:
        """(ready, detail): ready once a policy set is loaded and the cluster cache, if any, is synced.
        The detail names the set (``Snapshot.summary``), the last load error and the unsynced kinds."""
        unsynced = self.cluster.unsynced() if self.cluster is not None else []
        detail: dict[str, Any] = {
            "policies": self.snapshot.summary() if self.snapshot else None,
            "loadError": self.error,
            "unsyncedKinds": unsynced,
        }
        return self.snapshot is not None and not unsynced, detail
