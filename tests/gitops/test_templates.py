"""Catalog image templates: well-known variables, GVK with JSONPath, and the unresolved message."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from webhook.gitops.templates import render_template

GVK = "{group:foo.example.com,version:v1,kind:Sample,name:MySample,namespace:ns,jsonpath:{.spec.foo.bar}}"
SAMPLE = {"apiVersion": "foo.example.com/v1", "kind": "Sample", "spec": {"foo": {"bar": "v2"}}}


def lookup(api_version: str, kind: str, name: str, namespace: str) -> Mapping[str, Any] | None:
    if (api_version, kind, name, namespace) == ("foo.example.com/v1", "Sample", "MySample", "ns"):
        return SAMPLE
    return None


@pytest.mark.parametrize(
    ("template", "kube", "image", "unresolved"),
    [
        pytest.param(
            "quay.io/kube-release-v{kube_major_version}/catalog:v{kube_major_version}.{kube_minor_version}",
            "v1.19.0",
            "quay.io/kube-release-v1/catalog:v1.19",
            (),
            id="the seed's Kubernetes 1.19 example resolves to v1.19",
        ),
        pytest.param(
            "catalog:{kube_patch_version}",
            "v1.17.1+6af3663",
            "catalog:1",
            (),
            id="gitVersion build metadata is dropped",
        ),
        pytest.param(
            f"quay.io/sample/catalog:{GVK}", None, "quay.io/sample/catalog:v2", (), id="the seed's GVK example"
        ),
        pytest.param(
            "catalog:v{kube_major_version}", None, None, ("{kube_major_version}",), id="no cluster version, no image"
        ),
        pytest.param(
            "catalog:{kube_patch_version}", "1.31", None, ("{kube_patch_version}",), id="a version without patch"
        ),
        pytest.param("catalog:{ocp_minor_version}", "1.31.0", None, ("{ocp_minor_version}",), id="rejected names"),
        pytest.param(
            GVK.replace("MySample", "Other"), None, None, (GVK.replace("MySample", "Other"),), id="a missing object"
        ),
        pytest.param(
            GVK.replace("bar", "baz"), None, None, (GVK.replace("bar", "baz"),), id="a JSONPath without a value"
        ),
    ],
)
def test_render_template(template: str, kube: str | None, image: str | None, unresolved: tuple[str, ...]) -> None:
    result = render_template(template, kube, lookup)
    assert (result.image, result.unresolved) == (image, unresolved)


def test_the_unresolved_message_is_the_seeds() -> None:
    result = render_template("quay.io/sample{kube_major_version}/catalog:" + GVK, None, None)
    assert result.message == (
        'Cannot construct catalog image reference, variable(s) "{kube_major_version}", '
        '"{group:foo.example.com,version:v1,kind:Sample,name:MySample,namespace:ns,jsonpath:{.spec.foo.bar}}" '
        "couldn't be resolved"
    )
