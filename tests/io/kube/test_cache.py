"""The watch cache: reflector semantics against a scripted source, and the API source against a fake
apiserver on loopback."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.io.kube.fakeapi import JsonHandler, serving
from webhook.errors import ClusterError, Expired, Forbidden, NotServed
from webhook.io.kube.cache import ApiSource, Resource, WatchCache, policy_resources
from webhook.objects import KubeObject, LabelSelector
from webhook.policy.admitting.lookups import ClusterReads, cluster_reads
from webhook.policy.loading.loader import load_policy_set

ROOT = Path(__file__).resolve().parents[3]

NAMESPACES = Resource("v1", "Namespace", "namespaces")
REVISIONS = Resource("olm.operatorframework.io/v1", "ClusterExtensionRevision", "clusterextensionrevisions")


def obj(name: str, version: str, namespace: str = "", **labels: str) -> KubeObject:
    metadata: dict[str, Any] = {"name": name, "resourceVersion": version, "labels": labels}
    if namespace:
        metadata["namespace"] = namespace
    return {"metadata": metadata}


class Scripted:
    """A ``Source`` that plays lists and watches from queues; a step may be an exception to raise."""

    def __init__(self, lists: list[Any], watches: list[Any]) -> None:
        self.lists, self.watches = lists, watches
        self.calls: list[str] = []

    def list(self, resource: Resource) -> tuple[list[KubeObject], str]:
        self.calls.append("list")
        step = self.lists.pop(0) if self.lists else ([], "0")
        if isinstance(step, Exception):
            raise step
        return step  # type: ignore[no-any-return]

    def watch(self, resource: Resource, resource_version: str, timeout_s: int) -> Iterator[tuple[str, KubeObject]]:
        self.calls.append(f"watch@{resource_version}")
        if not self.watches:
            time.sleep(0.05)
            return
        for event in self.watches.pop(0):
            if isinstance(event, Exception):
                raise event
            yield event


def eventually(check: Callable[[], bool], timeout: float = 5) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "condition not reached in time"
        time.sleep(0.01)


def test_a_kind_is_unsynced_until_listed_then_follows_its_watch() -> None:
    source = Scripted(
        lists=[([obj("a", "1"), obj("b", "2")], "2")],
        watches=[
            [("ADDED", obj("c", "3", team="x")), ("MODIFIED", obj("a", "4", team="x")), ("DELETED", obj("b", "5"))]
        ],
    )
    cache = WatchCache(source, [NAMESPACES], resync_s=3600)
    assert cache.unsynced() == ["Namespace.v1"]
    cache.start()
    eventually(lambda: "watch@5" in source.calls)
    cache.stop()
    assert cache.unsynced() == []
    assert cache.get("v1", "Namespace", "b") is None
    assert cache.get("v1", "Namespace", "a") == obj("a", "4", team="x")
    selector = LabelSelector.from_dict({"matchLabels": {"team": "x"}})
    assert [o["metadata"]["name"] for o in cache.list("v1", "Namespace", selector=selector)] == ["a", "c"]
    assert source.calls[:3] == ["list", "watch@2", "watch@5"]


def test_an_expired_watch_relists_at_once_and_a_failure_relists_after_a_pause() -> None:
    source = Scripted(
        lists=[([obj("a", "1")], "1"), ClusterError("connection refused"), ([obj("z", "9")], "9")],
        watches=[[Expired("too old")]],
    )
    cache = WatchCache(source, [NAMESPACES], backoff_s=(0.01, 0.01)).start()
    eventually(lambda: cache.get("v1", "Namespace", "z") is not None)
    cache.stop()
    assert cache.get("v1", "Namespace", "a") is None
    assert source.calls[:4] == ["list", "watch@1", "list", "list"]


def test_a_kind_the_cluster_does_not_serve_is_synced_and_empty() -> None:
    source = Scripted(lists=[NotServed("ClusterManagementAddOn: not served")], watches=[])
    cache = WatchCache(source, [REVISIONS]).start()
    eventually(lambda: not cache.unsynced())
    cache.stop()
    assert cache.list(REVISIONS.api_version, REVISIONS.kind) == []


@pytest.mark.parametrize("fallback", [True, False])
def test_a_forbidden_param_kind_is_synced_empty_and_any_other_kind_stays_unsynced(fallback: bool) -> None:
    """Params the service account may not read give way to the param objects beside the policies; a lookup kind
    it may not read holds readiness back (a policy would decide on nothing)."""
    source = Scripted(lists=[Forbidden("ConfigMap.v1 in settings: forbidden")] * 50, watches=[])
    configmaps = Resource("v1", "ConfigMap", "configmaps", "settings", fallback=fallback)
    cache = WatchCache(source, [configmaps], backoff_s=(0.01, 0.01)).start()
    time.sleep(0.2)
    cache.stop()
    assert cache.unsynced() == ([] if fallback else ["ConfigMap.v1 in settings"])
    assert cache.list("v1", "ConfigMap") == []


def test_namespaced_objects_are_found_in_their_namespace_only() -> None:
    source = Scripted(lists=[([obj("approvers", "1", "upgrade-gate")], "1")], watches=[])
    configmaps = Resource("v1", "ConfigMap", "configmaps", "upgrade-gate")
    cache = WatchCache(source, [configmaps]).start()
    eventually(lambda: not cache.unsynced())
    cache.stop()
    assert cache.get("v1", "ConfigMap", "approvers", "upgrade-gate") is not None
    assert cache.get("v1", "ConfigMap", "approvers") is None
    assert cache.list("v1", "ConfigMap", "other") == []
    assert cache.get("v1", "Secret", "approvers", "upgrade-gate") is None


class PerNamespace(Scripted):
    """A ``Source`` listing each namespace's objects of a kind (and no watch events)."""

    def __init__(self, objects: dict[str, list[KubeObject]]) -> None:
        super().__init__(lists=[], watches=[])
        self.objects = objects

    def list(self, resource: Resource) -> tuple[list[KubeObject], str]:
        return self.objects.get(resource.namespace or "", []), "1"


def test_a_kind_watched_in_two_namespaces_keeps_the_objects_of_both() -> None:
    """A param kind is watched where each binding's paramRef names it: one namespace's list must not replace the
    other's."""
    source = PerNamespace({"a": [obj("settings", "1", "a")], "b": [obj("settings", "2", "b")]})
    resources = [Resource("v1", "ConfigMap", "configmaps", "a"), Resource("v1", "ConfigMap", "configmaps", "b")]
    cache = WatchCache(source, resources).start()
    eventually(lambda: not cache.unsynced())
    cache.stop()
    assert cache.get("v1", "ConfigMap", "settings", "a") == obj("settings", "1", "a")
    assert cache.get("v1", "ConfigMap", "settings", "b") == obj("settings", "2", "b")
    assert [o["metadata"]["namespace"] for o in cache.list("v1", "ConfigMap")] == ["a", "b"]


@pytest.mark.parametrize(
    ("resource", "path"),
    [
        pytest.param(NAMESPACES, "/api/v1/namespaces", id="a core kind lives under /api"),
        pytest.param(REVISIONS, "/apis/olm.operatorframework.io/v1/clusterextensionrevisions", id="a CRD under /apis"),
        pytest.param(
            Resource("v1", "ConfigMap", "configmaps", "ug"), "/api/v1/namespaces/ug/configmaps", id="a namespaced watch"
        ),
    ],
)
def test_resource_paths(resource: Resource, path: str) -> None:
    assert resource.path() == path


class FakeApiserver(JsonHandler):
    """GET /api/v1/namespaces: a list, or with watch=true a stream of events, then a 410 ERROR event."""

    def do_GET(self) -> None:
        if "watch=true" in self.path:
            events = [
                {"type": "ADDED", "object": {"metadata": {"name": "b", "resourceVersion": "11"}}},
                {"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": "12"}}},
                {"type": "ERROR", "object": {"kind": "Status", "code": 410, "message": "too old resource version"}},
            ]
            body = "".join(json.dumps(event) + "\n" for event in events).encode()
        else:
            body = json.dumps(
                {
                    "kind": "NamespaceList",
                    "metadata": {"resourceVersion": "10"},
                    "items": [{"metadata": {"name": "a", "resourceVersion": "7"}}],
                }
            ).encode()
        self.answer(200, body)


def test_the_api_source_lists_and_watches_through_the_kubernetes_client() -> None:
    with serving(FakeApiserver) as (api_client, requests):
        source = ApiSource(api_client)
        items, version = source.list(NAMESPACES)
        assert (items, version) == (
            [{"metadata": {"name": "a", "resourceVersion": "7"}, "apiVersion": "v1", "kind": "Namespace"}],
            "10",
        )
        events = source.watch(NAMESPACES, version, 5)
        assert next(events) == (
            "ADDED",
            {"metadata": {"name": "b", "resourceVersion": "11"}, "apiVersion": "v1", "kind": "Namespace"},
        )
        assert next(events)[0] == "BOOKMARK"
        with pytest.raises(Expired, match="too old resource version"):
            next(events)
    assert requests[1] == "/api/v1/namespaces?watch=true&resourceVersion=10&allowWatchBookmarks=true&timeoutSeconds=5"


class RefusingApiserver(JsonHandler):
    """Every GET answered as the API server answers what RBAC does not allow, or a kind it does not serve."""

    def do_GET(self) -> None:
        code = 404 if "/apis/" in self.path else 403
        self.answer(code, {"kind": "Status", "code": code, "reason": "Forbidden" if code == 403 else "NotFound"})


def test_the_api_source_tells_a_forbidden_list_from_a_kind_not_served() -> None:
    with serving(RefusingApiserver) as (api_client, _):
        source = ApiSource(api_client)
        with pytest.raises(Forbidden, match=re.escape("ConfigMap.v1 in ug: forbidden")):
            source.list(Resource("v1", "ConfigMap", "configmaps", "ug"))
        with pytest.raises(NotServed):
            source.list(REVISIONS)


def test_the_cache_watches_every_kind_the_bundled_policies_look_up() -> None:
    """A lookup of an unwatched kind finds nothing in a cluster (the canary gate would see no canaries)."""
    calls = re.findall(
        r"cluster\.(?:get|list)\(\s*'([^']+)',\s*'([^']+)'",
        "".join(path.read_text("utf-8") for path in (ROOT / "policies").glob("*.yaml")),
    )
    assert len(calls) > 5
    resources = policy_resources(cluster_reads(load_policy_set([ROOT / "policies"])), "upgrade-gate")
    watched = {(resource.api_version, resource.kind) for resource in resources if resource.namespace is None}
    assert set(calls) <= watched
    params = [resource for resource in resources if resource.namespace is not None]
    assert params == [Resource("v1", "ConfigMap", "configmaps", "upgrade-gate-system", fallback=True)], "as named"


def test_a_kind_read_everywhere_is_watched_in_every_namespace_and_a_param_kind_where_its_binding_names_it() -> None:
    reads = ClusterReads(
        everywhere=(("v1", "Namespace"), ("example.com/v1", "Policy")),
        params=(("v1", "Secret", ""), ("v1", "Secret", "ug"), ("v1", "ConfigMap", "settings")),
        computed=(),
    )
    assert policy_resources(reads, "ug") == (
        Resource("v1", "Namespace", "namespaces"),
        Resource("example.com/v1", "Policy", "policies"),
        Resource("v1", "Secret", "secrets", "ug", fallback=True),
        Resource("v1", "ConfigMap", "configmaps", "settings", fallback=True),
    )
