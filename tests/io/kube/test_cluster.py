"""``Cluster``'s add-on lookups through the real kubernetes client against a loopback fake API server that serves
Open Cluster Management objects at their REST paths (tests/data/gitops/addons/cluster.yaml)."""

from __future__ import annotations

import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client

from tests.io.kube.fakeapi import JsonHandler, serving
from webhook.errors import ClusterError, ClusterUnavailable, Unavailable
from webhook.io.kube.cluster import Cluster

ROOT = Path(__file__).resolve().parents[3]
OBJECTS: list[dict[str, Any]] = yaml.safe_load(
    (ROOT / "tests" / "data" / "gitops" / "addons" / "cluster.yaml").read_text()
)
PLURALS = {"ClusterManagementAddOn": "clustermanagementaddons", "ManagedClusterAddOn": "managedclusteraddons"}


def _path(item: dict[str, Any]) -> str:
    metadata = item["metadata"]
    scope = f"/namespaces/{metadata['namespace']}" if metadata.get("namespace") else ""
    plural = PLURALS.get(item["kind"], "placementdecisions")
    return f"/apis/{item['apiVersion']}{scope}/{plural}"


class FakeApiserver(JsonHandler):
    """GET of one object or of a label-selected collection; ``/broken/`` paths answer 500."""

    def do_GET(self) -> None:
        url = urllib.parse.urlsplit(self.path)
        for namespace, code in (("broken", 500), ("throttled", 429), ("forbidden", 403)):
            if f"/namespaces/{namespace}/" in url.path:
                return self.answer(code, {"kind": "Status", "code": code, "message": namespace})
        for item in OBJECTS:
            if url.path == f"{_path(item)}/{item['metadata']['name']}":
                return self.answer(200, item)
        selector = dict(urllib.parse.parse_qsl(url.query)).get("labelSelector", "")
        key, _, value = selector.partition("=")
        listed = [i for i in OBJECTS if _path(i) == url.path and i["metadata"].get("labels", {}).get(key) == value]
        if listed:
            items = [{k: v for k, v in i.items() if k not in ("apiVersion", "kind")} for i in listed]
            return self.answer(200, {"apiVersion": "v1", "kind": "PlacementDecisionList", "items": items})
        if "placementdecisions" in url.path and "/default/" in url.path:
            return self.answer(200, {"kind": "PlacementDecisionList", "items": []})
        return self.answer(404, {"kind": "Status", "code": 404, "reason": "NotFound"})


@pytest.fixture
def served() -> Iterator[tuple[Cluster, list[str]]]:
    with serving(FakeApiserver) as (api_client, requests):
        yield Cluster(api_client), requests


def test_the_add_on_objects_are_read_as_the_api_serves_them(served: tuple[Cluster, list[str]]) -> None:
    cluster, requests = served
    assert cluster.cluster_management_addon("helloworld") == OBJECTS[0]
    assert cluster.managed_cluster_addon("helloworld", "cluster1") == OBJECTS[-1]
    assert cluster.placement_decisions("default", "canary-placement") == [OBJECTS[1]]
    assert requests == [
        "/apis/addon.open-cluster-management.io/v1alpha1/clustermanagementaddons/helloworld",
        "/apis/addon.open-cluster-management.io/v1alpha1/namespaces/cluster1/managedclusteraddons/helloworld",
        "/apis/cluster.open-cluster-management.io/v1beta1/namespaces/default/placementdecisions"
        "?labelSelector=cluster.open-cluster-management.io/placement%3Dcanary-placement",
    ]


def test_absent_objects_and_kinds_read_as_none_or_empty(served: tuple[Cluster, list[str]]) -> None:
    cluster, _ = served
    assert cluster.cluster_management_addon("other") is None
    assert cluster.managed_cluster_addon("helloworld", "cluster9") is None
    assert cluster.placement_decisions("default", "nowhere") == []
    assert cluster.placement_decisions("hub", "canary-placement") == [], "404: the kind is not served"


@pytest.mark.parametrize(
    ("namespace", "text", "unavailable"),
    [
        pytest.param("broken", "500 Internal Server Error", True, id="HTTP 500: unavailable, retry"),
        pytest.param("throttled", "429 Too Many Requests", True, id="HTTP 429 (API Priority and Fairness): retry"),
        pytest.param("forbidden", "403 Forbidden", False, id="HTTP 403 (RBAC): a refusal, not an outage"),
    ],
)
def test_an_api_failure_is_one_cluster_error_and_an_outage_is_unavailable(
    served: tuple[Cluster, list[str]], namespace: str, text: str, unavailable: bool
) -> None:
    cluster, _ = served
    with pytest.raises(ClusterError, match=rf"^get managedclusteraddon {namespace}/helloworld: {text}$") as raised:
        cluster.managed_cluster_addon("helloworld", namespace)
    assert isinstance(raised.value, Unavailable) is unavailable
    assert isinstance(raised.value, ClusterUnavailable) is unavailable


def test_an_unreachable_api_server_is_unavailable() -> None:
    configuration = client.Configuration(host="http://127.0.0.1:9")
    configuration.retries = 0
    with pytest.raises(ClusterUnavailable, match=r"^get clustermanagementaddon helloworld: "):
        Cluster(client.ApiClient(configuration)).cluster_management_addon("helloworld")


def test_manifest_works_and_addon_templates_are_listed_as_the_api_serves_them(
    served: tuple[Cluster, list[str]],
) -> None:
    cluster, requests = served
    assert (cluster.manifest_works("cluster1", "helloworld"), cluster.addon_templates("helloworld")) == ([], [])
    assert requests == [
        "/apis/work.open-cluster-management.io/v1/namespaces/cluster1/manifestworks"
        "?labelSelector=open-cluster-management.io/addon-name%3Dhelloworld",
        "/apis/addon.open-cluster-management.io/v1alpha1/addontemplates",
    ]
