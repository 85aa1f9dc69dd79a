"""The ClusterExtensionRevision lifecycle in the cluster (``webhook.controller.lifecycle``), driven by
``tests/data/controller/lifecycle.yaml`` against the real cloudnative-pg package."""

from __future__ import annotations

from typing import Any

import pytest

from tests import tables
from tests.apiserver import ROOT
from webhook.controller.lifecycle import plan_revisions
from webhook.olm.catalog import Catalog
from webhook.olm.fbc import load_catalog
from webhook.olm.resolve.extension import ClusterExtension
from webhook.olm.resolve.revision import check_extension

TABLE = tables.load("controller/lifecycle.yaml")
NOW = "2026-03-02T10:00:00Z"


@pytest.fixture(scope="module")
def catalog() -> Catalog:
    return load_catalog(ROOT / "catalogs" / "certified-operators-v4.22" / "cloudnative-pg")


def extension(given: dict[str, Any]) -> dict[str, Any]:
    source = {"packageName": given.get("package", "cloudnative-pg"), "channels": ["stable-v1"],
              "version": given.get("version", ">=1.27.0 <2.0.0")}  # fmt: skip
    installed = given["installed"]
    return {
        "apiVersion": "olm.operatorframework.io/v1",
        "kind": "ClusterExtension",
        "metadata": {"name": "cnpg", "uid": "6b1e-cnpg"},
        "spec": {"source": {"sourceType": "Catalog", "catalog": source}},
        **({"status": {"install": {"bundle": {"name": f"cloudnative-pg.v{installed}", "version": installed}}}}
           if installed else {}),
    }  # fmt: skip


def revision(name: str, version: str) -> dict[str, Any]:
    return {
        "apiVersion": "olm.operatorframework.io/v1",
        "kind": "ClusterExtensionRevision",
        "metadata": {"name": name, "uid": f"uid-{name}"},
        "spec": {"clusterExtensionRef": {"name": "cnpg"}, "version": str(version), "approved": True},
    }


@pytest.mark.parametrize("row", tables.params(TABLE["rows"]))
def test_plan_revisions(row: dict[str, Any], catalog: Catalog) -> None:
    obj = extension(row["extension"]) if row["extension"] is not None else None
    check = check_extension(ClusterExtension.from_manifest(obj, "test"), [catalog]) if obj is not None else None
    revisions = [revision(name, version) for name, version in row["revisions"].items()]
    actions = plan_revisions(obj, check, revisions, now=NOW)
    assert [[a.kind, a.name, a.reason] for a in actions] == row["writes"]
    for action in actions:
        if action.kind == "delete":
            assert action.uid == f"uid-{action.name}", "a delete names the object it read"
        elif action.kind == "update":
            assert action.body["spec"]["approved"] is False and action.body["spec"]["availableSince"] == NOW


def test_a_created_revision_is_owned_by_its_extension_and_waits_for_approval(catalog: Catalog) -> None:
    obj = extension({"installed": "1.27.1"})
    (action,) = plan_revisions(obj, check_extension(ClusterExtension.from_manifest(obj, "t"), [catalog]), [], now=NOW)
    assert action.body == {
        "apiVersion": "olm.operatorframework.io/v1",
        "kind": "ClusterExtensionRevision",
        "metadata": {
            "name": "cnpg-1.28.0",
            "labels": {"clusterextension": "cnpg"},
            "ownerReferences": [{"apiVersion": "olm.operatorframework.io/v1", "kind": "ClusterExtension",
                                 "name": "cnpg", "uid": "6b1e-cnpg", "controller": True}],
        },
        "spec": {
            "clusterExtensionRef": {"name": "cnpg"},
            "version": "1.28.0",
            "bundleMetadata": {"name": "cloudnative-pg.v1.28.0", "version": "1.28.0"},
            "availableSince": NOW,
            "approved": False,
        },
    }  # fmt: skip
