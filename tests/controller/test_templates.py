"""Catalog image templates on ClusterCatalogs in the cluster (``webhook.controller.templates``), driven by
``tests/data/controller/templates.yaml``: the catalog-switching design's conditions and image switch."""

from __future__ import annotations

import datetime
from typing import Any

import pytest

from tests import tables
from webhook.controller.templates import catalog_status, image_switch, template_of
from webhook.plan.templates import render_template

TABLE = tables.load("controller/templates.yaml")
NOW = datetime.datetime(2026, 3, 2, 10, 0, 0, tzinfo=datetime.UTC)
SERVING = {"type": "Serving", "status": "True", "reason": "Available", "message": "Serving desired content",
           "lastTransitionTime": "2026-03-01T00:00:00Z"}  # fmt: skip
SAMPLE = {"spec": {"foo": {"bar": "v2"}}}


def lookup(api_version: str, kind: str, name: str, namespace: str) -> dict[str, Any] | None:
    return (
        SAMPLE if (api_version, kind, name, namespace) == ("foo.example.com/v1", "Sample", "MySample", "ns") else None
    )


def catalog(row: dict[str, Any]) -> dict[str, Any]:
    ours = [{"type": "TemplatesHaveResolved", "status": "True", "reason": "AllTemplatesResolved", "message": "x",
             "lastTransitionTime": "2026-03-01T00:00:00Z"}] if row.get("before") else []  # fmt: skip
    annotations = {"olm.catalogImageTemplate": row["template"]} if row["template"] else {}
    return {
        "apiVersion": "olm.operatorframework.io/v1",
        "kind": "ClusterCatalog",
        "metadata": {"name": "dynamic", "generation": 3, "annotations": annotations},
        "spec": {"source": {"type": "Image", "image": {"ref": row["image"]}}},
        "status": {"conditions": [SERVING, *ours]},
    }


@pytest.mark.parametrize("row", tables.params(TABLE["rows"]))
def test_catalog_image_templates(row: dict[str, Any]) -> None:
    obj = catalog(row)
    template = template_of(obj)
    result = render_template(template, "v1.32.13", lookup) if template else None
    status = catalog_status(obj, result, now=NOW)
    assert [[c["type"], c["status"], c["reason"], c["message"]] for c in status["conditions"]] == row["conditions"]
    assert status["conditions"][0] == SERVING, "catalogd's condition keeps its content and place"
    assert all(c["observedGeneration"] == 3 for c in status["conditions"][1:])
    assert image_switch(obj, result) == row["switch"]


def test_a_status_that_already_says_it_is_left_as_it_is() -> None:
    obj = catalog(TABLE["rows"][0])
    result = render_template(template_of(obj) or "", "v1.32.13", None)
    written = {**obj, "status": catalog_status(obj, result, now=NOW)}
    later = NOW + datetime.timedelta(hours=1)
    assert catalog_status(written, result, now=later) == written["status"]
    plain = {**obj, "metadata": {"name": "plain"}, "status": {"conditions": [SERVING]}}
    assert catalog_status(plain, None, now=NOW) == plain["status"]
