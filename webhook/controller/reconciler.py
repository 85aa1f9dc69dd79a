"""One reconcile of one ClusterExtension and its ClusterExtensionRevisions, read from the watch cache.

1. For each revision of the extension: its state (``webhook.controller.status.assess``) and the status the
   contract asks for; when that differs from the status it has, one PATCH of the ``status`` subresource carrying
   the ``resourceVersion`` read (a conflict means the cache was behind: retried), then the Events the change
   calls for (``webhook.controller.events``), on the revision and on its ClusterExtension. A status that already
   says everything costs no request: a resync of unchanged objects makes none.
2. Once a revision whose upgrade operator-controller reports held is approved, or the freeze or maintenance window
   that holds it lets it go, one merge patch of the ClusterExtension's ``upgrade-gate.io/retry-for`` annotation
   makes operator-controller retry at once instead of at the end of its backoff (``webhook.controller.retry``),
   reported by a ``RetryRequested`` Event; until a window lets it go, the reconcile asks to run again then.
3. In ``cluster`` mode: the extension resolved against the cluster's catalogs (``check_extension``) and the
   revisions created, updated in place or deleted (``webhook.controller.lifecycle``), each write reported by an
   Event on the ClusterExtension.

A key ``clustercatalog/<name>`` reconciles that ClusterCatalog's catalog image template instead
(``webhook.controller.templates``): its ``TemplatesHaveResolved`` and ``ResolvedImage`` conditions through the
status subresource and, in ``cluster`` mode, the switch of ``spec.source.image.ref``. The Kubernetes version comes
from the API server's ``/version`` (read again at most every ``version_ttl_s``), a ``{group:...}`` variable from a
GET of that object: only templated ClusterCatalogs cost these requests.

Failures never stop the controller: a catalog that cannot be read, a status or revision write that is refused
(403, an admission webhook's denial) is reported by a Warning Event; every failure ends the reconcile with
``RetryLater`` so that the work queue retries it with backoff.
"""

from __future__ import annotations

import datetime
import logging
import threading
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from webhook import logs
from webhook.conditions import format_time
from webhook.controller.catalogs import CatalogLoader, LoadedCatalogs
from webhook.controller.events import NORMAL, WARNING, Notice, notices
from webhook.controller.lifecycle import CREATE, DELETE, NOTHING_IN_RANGE, Action, plan_revisions
from webhook.controller.recorder import EventRecorder
from webhook.controller.retry import RETRY_ANNOTATION, retry_plan
from webhook.controller.status import Assessment, assess, revision_status
from webhook.controller.templates import catalog_status, current_image, image_switch, template_of
from webhook.errors import ClusterError, UpgradeGateError
from webhook.io.kube import Resource, WriteError
from webhook.objects import KubeObject, ObjectStore
from webhook.olm import ClusterExtension, UpgradeCheck, check_extension
from webhook.plan import TEMPLATE_ANNOTATION, render_template

log = logging.getLogger(__name__)

OLM = "olm.operatorframework.io/v1"
REVISIONS = Resource(OLM, "ClusterExtensionRevision", "clusterextensionrevisions")
EXTENSIONS = Resource(OLM, "ClusterExtension", "clusterextensions")
CATALOGS = Resource(OLM, "ClusterCatalog", "clustercatalogs")
_WRITTEN = {CREATE: "RevisionCreated", "update": "RevisionUpdated", DELETE: "RevisionDeleted"}


CATALOG_KEY = "clustercatalog/"


class ClusterReads(Protocol):
    """What catalog image templates and the add-on lifecycle read from the cluster
    (``webhook.io.kube.cluster.Cluster``)."""

    def server_version(self) -> str:
        """The API server's ``gitVersion``."""
        ...

    def get_object(self, api_version: str, kind: str, name: str, namespace: str) -> Mapping[str, Any] | None:
        """One object, or ``None``."""
        ...

    def custom_resource_definition(self, name: str) -> dict[str, Any] | None:
        """The CustomResourceDefinition ``name``, or ``None`` (``webhook.controller.addonwatch``)."""
        ...


class RetryLater(ClusterError):
    """The reconcile could not finish (a write failed, a catalog could not be read): retry with backoff."""


class Writer(Protocol):
    """The writes a reconcile makes (``webhook.io.kube.writer.ApiWriter``); each raises ``ClusterError``."""

    def create(self, resource: Resource, body: Mapping[str, Any]) -> dict[str, Any]:
        """Create an object."""
        ...

    def patch(self, resource: Resource, name: str, patch: Mapping[str, Any], *, status: bool = False) -> dict[str, Any]:
        """Merge-patch an object or its status."""
        ...

    def delete(self, resource: Resource, name: str, uid: str = "") -> None:
        """Delete an object."""
        ...


class Reconciler:
    """Reconciles ClusterExtensions (``reconcile(name)``, thread-safe for distinct names) from ``store`` (the
    watch cache).

    ``revisions_of(name)`` names the revisions of an extension (an index the controller keeps); ``catalogs``
    is the catalog loader in ``cluster`` mode, ``None`` in ``gitops`` mode (status and Events only).
    """

    def __init__(
        self,
        store: ObjectStore,
        revisions_of: Callable[[str], list[str]],
        writer: Writer,
        recorder: EventRecorder,
        *,
        catalogs: CatalogLoader | None = None,
        cluster: ClusterReads | None = None,
        version_ttl_s: float = 600.0,
        clock: Callable[[], datetime.datetime] = lambda: datetime.datetime.now(datetime.UTC),
    ) -> None:
        self.store, self.revisions_of = store, revisions_of
        self.writer, self.recorder = writer, recorder
        self.catalogs, self.cluster = catalogs, cluster
        self.version_ttl_s = version_ttl_s
        self.clock = clock
        self._version: tuple[datetime.datetime, str] | None = None
        self._loaded: tuple[tuple[tuple[str, str], ...], LoadedCatalogs] | None = None
        self._catalog_lock = threading.Lock()

    def reconcile(self, name: str) -> float | None:
        """Bring the revisions of the ClusterExtension ``name`` up to date (or the ClusterCatalog of a key
        ``clustercatalog/<name>``); the seconds after which to reconcile it again (a window that holds its upgrade
        changes then), else ``None``. Raises ``RetryLater``."""
        if name.startswith(CATALOG_KEY):
            self._reconcile_catalog(name.removeprefix(CATALOG_KEY))
            return None
        now = self.clock()
        extension = self.store.get(OLM, "ClusterExtension", name)
        revisions = [r for n in self.revisions_of(name) if (r := self.store.get(OLM, REVISIONS.kind, n)) is not None]
        assessed = [(revision, assess(revision, extension)) for revision in revisions]
        failures = [
            f for revision, assessment in assessed if (f := self._write_status(revision, assessment, extension, now))
        ]
        plan = retry_plan(extension, assessed, now)
        if (
            plan.write is not None
            and extension is not None
            and (failure := self._request_retry(extension, *plan.write))
        ):
            failures.append(failure)
        if self.catalogs is not None:
            failures.extend(self._lifecycle(name, extension, revisions))
        if failures:
            raise RetryLater(f"ClusterExtension {name}: {'; '.join(failures)}")
        return (plan.again_at - now).total_seconds() if plan.again_at is not None else None

    def _write_status(
        self, revision: KubeObject, assessment: Assessment, extension: KubeObject | None, now: datetime.datetime
    ) -> str | None:
        metadata = revision.get("metadata") or {}
        name = str(metadata.get("name"))
        before = revision.get("status") if isinstance(revision.get("status"), Mapping) else {}
        status = revision_status(revision, assessment, now=now)
        if status == before:
            return None
        patch = {"metadata": {"resourceVersion": metadata.get("resourceVersion")}, "status": status}
        try:
            self.writer.patch(REVISIONS, name, patch, status=True)
        except ClusterError as error:
            if not isinstance(error, WriteError) or error.status != 409:
                self.recorder.record(
                    revision, Notice(WARNING, "StatusNotWritten", "WriteStatus", str(error)), extension
                )
            return str(error)
        for notice in notices(name, (before or {}).get("conditions"), assessment):
            self.recorder.record(revision, notice, extension)
            if extension is not None:
                self.recorder.record(extension, notice, revision)
        return None

    def _request_retry(self, extension: KubeObject, revision: KubeObject, token: str) -> str | None:
        """Write ``token`` in the ClusterExtension's retry annotation (``webhook.controller.retry``) so that
        operator-controller retries the approved upgrade now; the failure to retry for, or ``None``."""
        name = str((extension.get("metadata") or {}).get("name"))
        version = (revision.get("spec") or {}).get("version")
        revision_name = (revision.get("metadata") or {}).get("name")
        try:
            self.writer.patch(EXTENSIONS, name, {"metadata": {"annotations": {RETRY_ANNOTATION: token}}})
        except ClusterError as error:
            note = f"could not ask operator-controller to retry the upgrade to {version} now: {error}"
            self.recorder.record(extension, Notice(WARNING, "RetryNotRequested", "Retry", note), revision)
            return str(error)
        note = f"ClusterExtensionRevision {revision_name} is approved: operator-controller retries the upgrade to "
        note += f"{version} now"
        self.recorder.record(extension, Notice(NORMAL, "RetryRequested", "Retry", note), revision)
        return None

    def _lifecycle(self, name: str, extension: KubeObject | None, revisions: list[KubeObject]) -> list[str]:
        failures: list[str] = []
        check = None
        if extension is not None:
            check, problem = self._check(name, extension)
            if problem:
                failures.append(problem)
        for action in plan_revisions(extension, check, revisions, now=format_time(self.clock())):
            try:
                self._apply(action)
            except ClusterError as error:
                failures.append(str(error))
                if extension is not None:
                    note = f"ClusterExtensionRevision {action.name} not {action.kind}d: {error}"
                    self.recorder.record(extension, Notice(WARNING, "RevisionNotWritten", action.kind.title(), note))
                continue
            log.info(action.reason, extra=logs.fields({logs.NAME: action.name, logs.EVENT: action.kind}))
            if extension is not None:
                note = f"ClusterExtensionRevision {action.name}: {action.reason}"
                self.recorder.record(extension, Notice(NORMAL, _WRITTEN[action.kind], action.kind.title(), note))
        return failures

    def _check(self, name: str, extension: KubeObject) -> tuple[UpgradeCheck | None, str]:
        """The extension's upgrade check, and the problem to retry for: a resolution that failed while some
        catalog could not be read (a resolution error over readable catalogs waits for the next catalog change).
        """
        assert self.catalogs is not None
        loaded = self._catalogs()
        try:
            manifest = ClusterExtension.from_manifest(extension, f"ClusterExtension {name}")
            check = check_extension(manifest, loaded.catalogs)
        except UpgradeGateError as error:
            self.recorder.record(extension, Notice(WARNING, "ResolutionFailed", "Resolve", str(error)))
            return None, ""
        if not check.unavailable and (check.error is None or NOTHING_IN_RANGE in check.error):
            return check, ""
        why = f"{check.unavailable}: {check.error}" if check.unavailable else f"resolution failed: {check.error}"
        unreadable = "; ".join(f"catalog {n}: {problem}" for n, problem in sorted(loaded.problems.items()))
        why += f" ({unreadable})" if unreadable else ""
        self.recorder.record(extension, Notice(WARNING, "ResolutionFailed", "Resolve", why))
        return check, why if unreadable else ""

    def _catalogs(self) -> LoadedCatalogs:
        """The catalogs, loaded again only when a ClusterCatalog changed (by name and resourceVersion)."""
        assert self.catalogs is not None
        manifests = self.store.list(OLM, CATALOGS.kind)
        key = tuple((str(m["metadata"].get("name")), str(m["metadata"].get("resourceVersion"))) for m in manifests)
        with self._catalog_lock:  # one download per change, whichever worker sees it first
            if self._loaded is None or self._loaded[0] != key or self._loaded[1].problems:
                self._loaded = (key, self.catalogs.load(manifests))
            return self._loaded[1]

    def _reconcile_catalog(self, name: str) -> None:
        catalog = self.store.get(OLM, CATALOGS.kind, name)
        if catalog is None:
            return
        template = template_of(catalog)
        try:
            result = render_template(template, self._kube_version(), self._lookup) if template else None
        except ClusterError as error:
            raise RetryLater(f"ClusterCatalog {name}: {error}") from None
        before = catalog.get("status") if isinstance(catalog.get("status"), Mapping) else {}
        status = catalog_status(catalog, result, now=self.clock())
        try:
            if status != (before or {}):
                version = (catalog.get("metadata") or {}).get("resourceVersion")
                self.writer.patch(
                    CATALOGS, name, {"metadata": {"resourceVersion": version}, "status": status}, status=True
                )
                if (
                    result is not None
                    and result.image is None
                    and status.get("conditions") != (before or {}).get("conditions")
                ):
                    self.recorder.record(catalog, Notice(WARNING, "TemplateUnresolved", "Resolve", result.message))
            image = image_switch(catalog, result) if self.catalogs is not None else None
            if image is not None:
                self.writer.patch(CATALOGS, name, {"spec": {"source": {"image": {"ref": image}}}})
                note = f"spec.source.image.ref {current_image(catalog)} -> {image} ({TEMPLATE_ANNOTATION})"
                self.recorder.record(catalog, Notice(NORMAL, "CatalogImageSwitched", "Switch", note))
        except ClusterError as error:
            raise RetryLater(f"ClusterCatalog {name}: {error}") from None

    def _kube_version(self) -> str | None:
        """The API server's version, read again once ``version_ttl_s`` has passed."""
        if self.cluster is None:
            return None
        now = self.clock()
        if self._version is None or (now - self._version[0]).total_seconds() > self.version_ttl_s:
            self._version = (now, self.cluster.server_version())
        return self._version[1]

    def _lookup(self, api_version: str, kind: str, name: str, namespace: str) -> Mapping[str, Any] | None:
        return self.cluster.get_object(api_version, kind, name, namespace) if self.cluster is not None else None

    def _apply(self, action: Action) -> None:
        if action.kind == CREATE:
            self.writer.create(REVISIONS, action.body)
        elif action.kind == DELETE:
            self.writer.delete(REVISIONS, action.name, action.uid)
        else:
            self.writer.patch(REVISIONS, action.name, action.body)
