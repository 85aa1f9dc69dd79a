"""A watch-based cache of the cluster objects policies look up and take as params: an ``ObjectStore``.

One reflector thread per watched kind, as client-go's ``Reflector`` does: list (the kind is then synced),
watch from the list's ``resourceVersion`` with bookmarks, apply ADDED/MODIFIED/DELETED; relist when the
watch's resourceVersion has expired (HTTP 410 / an ERROR event with code 410), every ``resync_s`` seconds,
every minute for a kind the cluster does not serve (HTTP 404: empty, but synced), and after any failure
(exponential ``backoff_s``, 1 s doubling to 30 s; a reflector never dies). Lookups read an immutable
per-kind mapping that each change replaces, so readers never lock.

``ApiSource`` lists and watches through the official ``kubernetes`` client (raw JSON, no models);
``WatchCache`` is handed any ``Source``, so it runs in tests without a cluster. A ``listener`` (a controller's
event handler, as client-go's informers call theirs) hears every change after the cache holds it: each object of
a (re)list as ``ADDED`` (a relist is the resync), each object a relist no longer finds as ``DELETED``, and every
watch event.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Protocol

from kubernetes.watch.watch import iter_resp_lines

from webhook import logs
from webhook.errors import ClusterError, Expired, Forbidden, NotServed
from webhook.objects import KubeObject, LabelSelector, plural_of
from webhook.policy import ClusterReads

log = logging.getLogger(__name__)

WATCH_TIMEOUT_S = 300
NOT_SERVED_RECHECK_S = 60


@dataclass(frozen=True, slots=True)
class Resource:
    """A watched kind: ``api_version`` (``v1``, ``group/version``), ``kind``, ``plural``, and ``namespace``
    to watch one namespace only (``None``: all namespaces, or a cluster-scoped kind). ``fallback``: a param kind,
    for which other objects stand in: when the API server forbids reading it, it counts as synced and empty (and
    a warning says so), so the param objects beside the policies apply instead of readiness failing."""

    api_version: str
    kind: str
    plural: str
    namespace: str | None = None
    fallback: bool = False

    def path(self) -> str:
        """The collection's API path, e.g. ``/apis/olm.operatorframework.io/v1/clusterextensions``."""
        base = f"/api/{self.api_version}" if "/" not in self.api_version else f"/apis/{self.api_version}"
        scope = f"/namespaces/{self.namespace}" if self.namespace else ""
        return f"{base}{scope}/{self.plural}"

    def __str__(self) -> str:
        return f"{self.kind}.{self.api_version}" + (f" in {self.namespace}" if self.namespace else "")


def policy_resources(reads: ClusterReads, namespace: str) -> tuple[Resource, ...]:
    """The resources to watch for a policy set that ``reads`` these kinds (``webhook.policy.admitting.lookups``): each
    kind read everywhere in all namespaces, each namespaced param kind in the namespace its bindings' ``paramRef``
    names, as the API server reads it (``namespace``, the deployment's own, where none is named). The chart's Role
    lets the webhook read its params in its own namespace and the settings namespace; where it may not read them,
    the param objects beside the policies apply (``Resource.fallback``). A kind's resource is its default plural
    (``objects.plural_of``), as Kubernetes and CRDs name them."""
    everywhere = [Resource(api_version, kind, plural_of(kind)) for api_version, kind in reads.everywhere]
    params = dict.fromkeys(
        Resource(api_version, kind, plural_of(kind), named or namespace, fallback=True)
        for api_version, kind, named in reads.params
    )
    return (*everywhere, *params)


class Source(Protocol):
    """Lists and watches one kind of object (plain JSON dicts)."""

    def list(self, resource: Resource) -> tuple[list[KubeObject], str]:
        """(items, the list's resourceVersion). Raises ``NotServed`` for a kind the cluster lacks,
        ``ClusterError`` otherwise."""
        ...

    def watch(self, resource: Resource, resource_version: str, timeout_s: int) -> Iterator[tuple[str, KubeObject]]:
        """(event type, object) from ``resource_version`` until the server ends the watch after
        ``timeout_s``. Raises ``Expired`` for HTTP 410 or an ERROR event, ``ClusterError`` otherwise."""
        ...


class ApiSource:
    """A ``Source`` over a ``kubernetes.client.ApiClient`` (GET with the client's authentication)."""

    def __init__(self, api_client: Any) -> None:
        self.api = api_client

    def _get(self, resource: Resource, query: list[tuple[str, str]], timeout_s: float) -> Any:
        method, url, headers, _, _ = self.api.param_serialize(
            "GET",
            resource.path(),
            query_params=query,
            header_params={"Accept": "application/json"},
            auth_settings=["BearerToken"],
        )
        try:
            answer = self.api.call_api(method, url, header_params=headers, _request_timeout=timeout_s)
        except Exception as error:  # urllib3 and ssl errors: the cluster is unreachable
            raise ClusterError(f"{resource}: {type(error).__name__}: {error}") from None
        if answer.status == 410:
            raise Expired(f"{resource}: resourceVersion expired")
        if answer.status == 404:
            raise NotServed(f"{resource}: not served by this cluster")
        if answer.status == 403:
            raise Forbidden(f"{resource}: forbidden (HTTP 403): the service account may not list it")
        if answer.status >= 400:
            raise ClusterError(f"{resource}: HTTP {answer.status} {answer.reason}")
        return answer.response

    def list(self, resource: Resource) -> tuple[list[KubeObject], str]:
        """See ``Source.list``; items get the list's apiVersion and kind (the API omits them)."""
        document = json.loads(self._get(resource, [], 60).data)
        items: list[KubeObject] = [
            {**item, "apiVersion": resource.api_version, "kind": resource.kind} for item in document["items"]
        ]
        return items, str(document["metadata"].get("resourceVersion", ""))

    def watch(self, resource: Resource, resource_version: str, timeout_s: int) -> Iterator[tuple[str, KubeObject]]:
        """See ``Source.watch``."""
        query = [
            ("watch", "true"),
            ("resourceVersion", resource_version),
            ("allowWatchBookmarks", "true"),
            ("timeoutSeconds", str(timeout_s)),
        ]
        response = self._get(resource, query, timeout_s + 30)
        try:
            for line in iter_resp_lines(response):  # type: ignore[no-untyped-call]
                event = json.loads(line)
                obj = event.get("object") or {}
                if event.get("type") == "ERROR":
                    kind = Expired if obj.get("code") == 410 else ClusterError
                    raise kind(f"{resource}: watch error: {obj.get('message', '')}")
                yield str(event.get("type")), {**obj, "apiVersion": resource.api_version, "kind": resource.kind}
        finally:
            response.release_conn()


_Objects = Mapping[tuple[str, str], KubeObject]  # (namespace or "", name) -> object
Listener = Callable[[Resource, str, KubeObject], None]
"""Called with the resource, the event type (``ADDED``, ``MODIFIED``, ``DELETED``) and the object."""


class WatchCache:
    """An ``ObjectStore`` (and ``webhook.serve.runtime.ClusterCache``) of ``resources``, filled from
    ``source``. Kinds that are not watched are empty. Call ``start()`` once (in the serving process)."""

    def __init__(
        self,
        source: Source,
        resources: Iterable[Resource],
        *,
        resync_s: float = 600,
        backoff_s: tuple[float, float] = (1.0, 30.0),
        listener: Listener | None = None,
    ) -> None:
        self.source = source
        self.listener = listener
        self.resources = tuple(resources)
        self.resync_s = resync_s
        self.backoff_s = backoff_s
        self._objects: dict[Resource, _Objects] = {}  # each resource's objects, once listed
        self._of_kind: dict[tuple[str, str], tuple[Resource, ...]] = {}
        for resource in self.resources:
            key = (resource.api_version, resource.kind)
            self._of_kind[key] = (*self._of_kind.get(key, ()), resource)
        self._failing: dict[Resource, str] = {}  # the resources whose last list or watch failed, and why
        self._stop = threading.Event()

    def start(self) -> WatchCache:
        """Start one daemon reflector thread per resource; returns ``self``."""
        for resource in self.resources:
            threading.Thread(target=self._reflect, args=(resource,), name=f"watch {resource}", daemon=True).start()
        return self

    def stop(self) -> None:
        """Ask the reflectors to stop (each ends when its current watch does)."""
        self._stop.set()

    def unsynced(self) -> list[str]:
        """The resources not listed yet, as ``Kind.apiVersion`` texts."""
        return [str(r) for r in self.resources if r not in self._objects]

    def get(self, api_version: str, kind: str, name: str, namespace: str | None = None) -> KubeObject | None:
        """See ``ObjectStore.get``."""
        for objects in self._listed(api_version, kind):
            found = objects.get((namespace or "", name))
            if found is not None:
                return found
        return None

    def list(
        self,
        api_version: str,
        kind: str,
        namespace: str | None = None,
        selector: LabelSelector | None = None,
    ) -> list[KubeObject]:
        """See ``ObjectStore.list``."""
        objects = {key: obj for listed in self._listed(api_version, kind) for key, obj in listed.items()}
        return [
            objects[key]
            for key in sorted(objects)
            if (namespace is None or key[0] == namespace)
            and (selector is None or selector.matches((objects[key].get("metadata") or {}).get("labels")))
        ]

    def _listed(self, api_version: str, kind: str) -> Iterator[_Objects]:
        """The objects of each listed resource of the kind (one per namespace it is watched in)."""
        for resource in self._of_kind.get((api_version, kind), ()):
            objects = self._objects.get(resource)
            if objects is not None:
                yield objects

    def sync_once(self, resource: Resource) -> None:
        """List ``resource``, then follow its watches until the resync period ends. Raises ``ClusterError``
        (``Expired`` included) when the list or a watch fails."""
        try:
            items, version = self.source.list(resource)
        except NotServed as error:
            # An absent kind has no objects; being synced, it does not hold readiness back. Checked again later.
            log.warning("kind not served; looked up as empty", extra=logs.fields({logs.ERROR: str(error)}))
            self._empty_until_rechecked(resource)
            return
        except Forbidden as error:
            if not resource.fallback:
                raise
            # Params the webhook may not read: the param objects beside the policies apply. Checked again later.
            if self._failing.get(resource) != str(error):
                log.warning(
                    "params not readable; the param objects beside the policies apply",
                    extra=logs.fields({logs.RESOURCE: str(resource), logs.ERROR: str(error)}),
                )
            self._failing[resource] = str(error)
            self._empty_until_rechecked(resource)
            return
        if self._failing.pop(resource, None) is not None:
            log.info("watch works again", extra=logs.fields({logs.RESOURCE: str(resource)}))
        listed = {_key(obj): obj for obj in items}
        gone = [obj for key, obj in self._objects.get(resource, {}).items() if key not in listed]
        self._objects[resource] = MappingProxyType(listed)
        if self.listener is not None:
            for obj in gone:
                self.listener(resource, "DELETED", obj)
            for obj in items:
                self.listener(resource, "ADDED", obj)
        resync_at = time.monotonic() + self.resync_s
        while not self._stop.is_set():
            remaining = int(resync_at - time.monotonic())
            if remaining <= 0:
                return
            for kind, obj in self.source.watch(resource, version, min(remaining, WATCH_TIMEOUT_S)):
                version = str((obj.get("metadata") or {}).get("resourceVersion") or version)
                if kind in ("ADDED", "MODIFIED", "DELETED"):
                    self._apply(resource, kind, obj)

    def _empty_until_rechecked(self, resource: Resource) -> None:
        """``resource`` synced with no objects (so it holds readiness back no longer), until it is listed again."""
        self._objects[resource] = MappingProxyType({})
        self._stop.wait(min(self.resync_s, NOT_SERVED_RECHECK_S))

    def _apply(self, resource: Resource, kind: str, obj: KubeObject) -> None:
        current = dict(self._objects.get(resource, {}))
        if kind == "DELETED":
            current.pop(_key(obj), None)
        else:
            current[_key(obj)] = obj
        self._objects[resource] = MappingProxyType(current)
        if self.listener is not None:
            self.listener(resource, kind, obj)

    def _reflect(self, resource: Resource) -> None:
        """List and watch ``resource`` until stopped. A failure is logged once as a warning (again only when its
        text changes), its end (the next list that works) once at info: an outage is a few lines, not one per
        retry."""
        backoff = self.backoff_s[0]
        while not self._stop.is_set():
            try:
                self.sync_once(resource)
                backoff = self.backoff_s[0]
            except Expired as error:
                log.info(
                    "watch expired; relisting",
                    extra=logs.fields({logs.RESOURCE: str(resource), logs.ERROR: str(error)}),
                )
            except Exception as error:  # a reflector must outlive any failure: relist after a pause
                if self._failing.get(resource) != str(error):
                    log.warning(
                        "watch failed; relisting after a pause, with backoff, until it works again",
                        extra=logs.fields({logs.RESOURCE: str(resource), logs.ERROR: str(error)}),
                    )
                self._failing[resource] = str(error)
                self._stop.wait(backoff)
                backoff = min(backoff * 2, self.backoff_s[1])


def _key(obj: KubeObject) -> tuple[str, str]:
    metadata = obj.get("metadata") or {}
    return str(metadata.get("namespace") or ""), str(metadata.get("name") or "")
