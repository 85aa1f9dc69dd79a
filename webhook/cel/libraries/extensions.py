"""upgrade-gate's extension functions: NOT in the kube-apiserver, so a policy using one is not portable.

Per-request namespaces (bound by the engine through ``extension_bindings(store, now)`` into each
activation; without them a call is the error ``... is not available``)::

    clock.now() -> timestamp                          the request time (soak periods, freeze windows)
    clock.inWindow(window string) -> bool             the request time is inside the window
                                                      (webhook.windows: START/END in RFC 3339, or a
                                                      weekly DAYS HH:MM-HH:MM in UTC)
    cluster.get(apiVersion, kind, name) -> map|null   a cluster-scoped object from the object store
    cluster.get(apiVersion, kind, name, namespace) -> map|null
    cluster.list(apiVersion, kind) -> list<map>       objects of a kind (all namespaces), sorted
    cluster.list(apiVersion, kind, namespace) -> list<map>
    cluster.list(apiVersion, kind, namespace, matchLabels map<string,string>) -> list<map>
                                                      (namespace '' = all namespaces)

A request looks each object, and each list, up once: all of its expressions see the same ones.

Static namespace::

    olm.inRange(version string, range string) -> bool       Masterminds constraint (OLM v1 spec.version)
    olm.changeType(from string|null, to string) -> string   install | upgrade | rollback | unchanged
    olm.changeLevel(from string|null, to string) -> string  major | minor | patch | prerelease | none
    olm.release(object map) -> map                          the release behind operator-controller's index
                                                            Secret or ClusterObjectSet (webhook.olm.release):
                                                            {applier, extension, revision, status, migrated,
                                                            bundle: {name, version, package, reference[,
                                                            release]}}

Versions are read strictly (blang ``Parse``); an invalid version or range is an evaluation error, and so is
an object ``olm.release`` cannot read (``webhook.errors.ReleaseError``'s message).
"""

from __future__ import annotations

import datetime
from collections.abc import Callable, Mapping
from typing import Any

from webhook.cel.libraries.registry import Namespace, Overload, namespaced, plain
from webhook.errors import CelEvaluationError, InputError
from webhook.objects import LabelSelector, ObjectStore
from webhook.olm import read_release
from webhook.versions import parse_constraint, parse_version
from webhook.windows import parse_window


class Clock(Namespace):
    """``clock``: the request time, or ``None`` when the caller bound none."""

    __slots__ = ("now",)

    def __init__(self, now: datetime.datetime | None) -> None:
        super().__init__("clock")
        self.now = now


class Cluster(Namespace):
    """``cluster``: an ``ObjectStore`` (``None`` when the caller bound none), and what one request found in it
    (``found``, by lookup): each lookup is done once per request, so that all of a request's expressions see the
    same objects while the store changes."""

    __slots__ = ("found", "store")

    def __init__(self, store: ObjectStore | None) -> None:
        super().__init__("cluster")
        self.store = store
        self.found: dict[tuple[object, ...], Any] = {}


OLM = Namespace("olm")
UNBOUND: tuple[Namespace, ...] = (Clock(None), Cluster(None), OLM)


def extension_bindings(store: ObjectStore | None, now: datetime.datetime) -> dict[str, object]:
    """The per-request namespaces to merge into an activation: ``cluster`` over ``store``, ``clock`` at
    ``now`` (a naive ``now`` is read as UTC)."""
    aware = now if now.tzinfo else now.replace(tzinfo=datetime.UTC)
    return {"clock": Clock(aware), "cluster": Cluster(store)}


def clock_now(clock: Clock) -> datetime.datetime:
    """``clock.now()``."""
    if clock.now is None:
        raise CelEvaluationError("clock.now() is not available: no request time is bound")
    return clock.now


def clock_in_window(clock: Clock, window: str) -> bool:
    """``clock.inWindow(window)``: ``parse_window(window).contains(clock.now())``."""
    try:
        return parse_window(str(window)).contains(clock_now(clock))
    except InputError as error:
        raise CelEvaluationError(str(error)) from None


def _store(cluster: Cluster, name: str) -> ObjectStore:
    if cluster.store is None:
        raise CelEvaluationError(f"cluster.{name}() is not available: no object store is bound")
    return cluster.store


def cluster_get(cluster: Cluster, api_version: str, kind: str, name: str, namespace: str = "") -> Any:
    """``cluster.get(...)``: the object as a map, or null; the same one for the rest of the request."""
    api_version, kind, name, namespace = str(api_version), str(kind), str(name), str(namespace)

    def get() -> Any:
        found = _store(cluster, "get").get(api_version, kind, name, namespace or None)
        return None if found is None else _snapshot(found)

    return _once(cluster, ("get", api_version, kind, name, namespace), get)


def cluster_list(cluster: Cluster, api_version: str, kind: str, namespace: str = "", labels: Any = None) -> list[Any]:
    """``cluster.list(...)``: the matching objects as maps, sorted by namespace and name; the same ones for the
    rest of the request."""
    api_version, kind, namespace, match = str(api_version), str(kind), str(namespace), dict(labels or {})
    try:
        selector = LabelSelector.from_dict({"matchLabels": match}) if match else None
    except InputError as error:
        raise CelEvaluationError(str(error)) from None

    def listed() -> list[Any]:
        return [
            _snapshot(found) for found in _store(cluster, "list").list(api_version, kind, namespace or None, selector)
        ]

    return list(_once(cluster, ("list", api_version, kind, namespace, tuple(sorted(match.items()))), listed))


def _once(cluster: Cluster, lookup: tuple[object, ...], find: Callable[[], Any]) -> Any:
    """What ``find`` gives for ``lookup``, found at the request's first ``lookup`` and kept (``Cluster.found``)."""
    if lookup not in cluster.found:
        cluster.found[lookup] = find()
    return cluster.found[lookup]


def _snapshot(found: Mapping[str, Any]) -> Mapping[str, Any]:
    """A stored object as a map: itself if it is a dict (stores replace objects, never change them), so that its
    conversion to CEL can be kept (``Overload.snapshot``)."""
    return found if type(found) is dict else dict(found)


def _version(text: str) -> Any:
    try:
        return parse_version(str(text))
    except InputError as error:
        raise CelEvaluationError(str(error)) from None


def in_range(_olm: Namespace, version: str, constraint: str) -> bool:
    """``olm.inRange(version, range)``: ``webhook.versions.parse_constraint(range).admits(version)``."""
    try:
        return parse_constraint(str(constraint)).admits(_version(version))
    except InputError as error:
        raise CelEvaluationError(str(error)) from None


def change_type(_olm: Namespace, old: str | None, new: str) -> str:
    """``olm.changeType(from, to)``: ``install`` (no ``from``), ``upgrade``, ``rollback`` or ``unchanged``."""
    if old is None or old == "":
        return "install"
    order = _version(old).compare(_version(new))
    return "unchanged" if order == 0 else "upgrade" if order < 0 else "rollback"


def change_level(_olm: Namespace, old: str | None, new: str) -> str:
    """``olm.changeLevel(from, to)``: the most significant part that differs (``prerelease`` when only the
    prerelease differs, ``none`` when equal or installing)."""
    if old is None or old == "":
        return "none"
    before, after = _version(old), _version(new)
    for part in ("major", "minor", "patch", "prerelease"):
        if getattr(before, part) != getattr(after, part):
            return part
    return "none"


def release(_olm: Namespace, obj: Any) -> dict[str, Any]:
    """``olm.release(object)``: ``webhook.olm.release.read_release(object).as_map()``."""
    try:
        return read_release(plain(obj)).as_map()
    except InputError as error:
        raise CelEvaluationError(str(error)) from None


OVERLOADS: tuple[Overload, ...] = (
    namespaced("clock", "now", clock_now, portable=False),
    namespaced("clock", "inWindow", clock_in_window, "string", portable=False),
    namespaced("cluster", "get", cluster_get, "string", "string", "string", portable=False, snapshot=True),
    namespaced("cluster", "get", cluster_get, "string", "string", "string", "string", portable=False, snapshot=True),
    namespaced("cluster", "list", cluster_list, "string", "string", portable=False, snapshot=True),
    namespaced("cluster", "list", cluster_list, "string", "string", "string", portable=False, snapshot=True),
    namespaced("cluster", "list", cluster_list, "string", "string", "string", "map", portable=False, snapshot=True),
    namespaced("olm", "inRange", in_range, "string", "string", portable=False),
    namespaced("olm", "changeType", change_type, "dyn", "string", portable=False),
    namespaced("olm", "changeLevel", change_level, "dyn", "string", portable=False),
    namespaced("olm", "release", release, "map", portable=False),
)
