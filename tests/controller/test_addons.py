"""The add-on installVersion lifecycle in the controller without a cluster: whether a hub serves it (read from the
real upstream CRD and the lifecycle's variant in ``tests/data/ocm/``), the keys its objects queue, its Events, and
one reconcile's writes against an in-memory store."""

from __future__ import annotations

import datetime
import logging
from typing import Any

import pytest
import yaml

from tests.controller.test_runtime import Sink, Writer
from tests.tables import DATA
from webhook.controller.addons import (
    ADDONS,
    MANAGERS,
    WORKS,
    addon_key,
    addon_notice,
    addon_state,
    keys_of,
    serves_lifecycle,
)
from webhook.controller.addonwatch import AddOnLifecycle
from webhook.controller.events import Notice
from webhook.controller.health import Metrics
from webhook.controller.reconciler import RetryLater
from webhook.controller.recorder import EventRecorder
from webhook.objects import InMemoryObjectStore

UPSTREAM = DATA / "ocm" / "crds" / "0000_01_addon.open-cluster-management.io_managedclusteraddons.crd.yaml"
VARIANT = DATA / "ocm" / "lifecycle" / "managedclusteraddons.crd.yaml"
NOW = datetime.datetime(2022, 11, 2, 5, 48, 12, tzinfo=datetime.UTC)
API = "addon.open-cluster-management.io/v1alpha1"


def crd(path: Any) -> dict[str, Any]:
    return dict(yaml.safe_load(path.read_text()))


@pytest.mark.parametrize(
    ("found", "serves"),
    [
        pytest.param(lambda: crd(VARIANT), True, id="the lifecycle's CRD variant serves it"),
        pytest.param(lambda: crd(UPSTREAM), False, id="upstream's CRD does not: it would prune currentVersion"),
        pytest.param(lambda: None, False, id="no ManagedClusterAddOn CRD at all serves nothing"),
        pytest.param(
            lambda: {**crd(VARIANT), "spec": {**crd(VARIANT)["spec"],
                     "versions": [{**crd(VARIANT)["spec"]["versions"][0], "served": False}]}},
            False, id="a version that is not served does not count",
        ),
    ],
)  # fmt: skip
def test_whether_the_hub_serves_the_lifecycle_is_read_from_the_crd_schema(found: Any, serves: bool) -> None:
    assert serves_lifecycle(found()) is serves


def addon(name: str = "helloworld", namespace: str = "cluster1", **status: Any) -> dict[str, Any]:
    return {
        "apiVersion": API,
        "kind": "ManagedClusterAddOn",
        "metadata": {"name": name, "namespace": namespace, "generation": 1, "resourceVersion": "7", "uid": "u1"},
        "spec": {"installVersion": "v1"},
        **({"status": status} if status else {}),
    }


def test_each_add_on_object_queues_the_add_ons_it_concerns() -> None:
    work = {"metadata": {"name": "addon-helloworld-deploy", "namespace": "cluster2",
                         "labels": {"open-cluster-management.io/addon-name": "helloworld"}}}  # fmt: skip
    unlabelled = {"metadata": {"name": "something-else", "namespace": "cluster2"}}
    known = [addon("helloworld", "cluster1"), addon("other", "cluster1"), addon("helloworld", "cluster3")]
    assert keys_of(ADDONS, addon(), []) == ["managedclusteraddon/cluster1/helloworld"]
    assert keys_of(WORKS, work, []) == ["managedclusteraddon/cluster2/helloworld"]
    assert keys_of(WORKS, unlabelled, []) == [], "a work of no add-on concerns none"
    assert keys_of(MANAGERS, {"metadata": {"name": "helloworld"}}, known) == [
        "managedclusteraddon/cluster1/helloworld",
        "managedclusteraddon/cluster3/helloworld",
    ]


def progressing(status: str, reason: str, message: str) -> dict[str, Any]:
    return {"type": "Progressing", "status": status, "reason": reason, "message": message}


UPGRADING = progressing("True", "Upgrading", "Upgrading addon to version v2.")
DONE = progressing("False", "Succeed", "install completed with no errors.")


@pytest.mark.parametrize(
    ("before", "after", "want"),
    [
        pytest.param(None, progressing("True", "Installing", "Installing addon to version v1."),
                     Notice("Normal", "AddOnUpgrading", "Install",
                            "add-on helloworld on cluster cluster1: Installing addon to version v1."),
                     id="an install is reported as AddOnUpgrading"),
        pytest.param([DONE], UPGRADING,
                     Notice("Normal", "AddOnUpgrading", "Upgrade",
                            "add-on helloworld on cluster cluster1: Upgrading addon to version v2."),
                     id="an upgrade is reported as AddOnUpgrading"),
        pytest.param([UPGRADING], DONE,
                     Notice("Normal", "AddOnUpgraded", "Complete",
                            "add-on helloworld on cluster cluster1 runs v2: install completed with no errors."),
                     id="a finished upgrade is reported as AddOnUpgraded with the version it runs"),
        pytest.param([DONE], progressing("True", "Rollingback", "Rollingback addon to version v1."),
                     Notice("Normal", "AddOnRollingBack", "Rollback",
                            "add-on helloworld on cluster cluster1: Rollingback addon to version v1."),
                     id="a rollback is reported as AddOnRollingBack"),
        pytest.param([UPGRADING], progressing("False", "Failed", "could not upgrade to invalid version v3"),
                     Notice("Warning", "AddOnFailed", "Fail",
                            "add-on helloworld on cluster cluster1: could not upgrade to invalid version v3"),
                     id="a failure is a Warning AddOnFailed"),
        pytest.param([UPGRADING], UPGRADING, None, id="an unchanged condition calls for no Event"),
        pytest.param([DONE], progressing("False", "Completed", "completed"), None,
                     id="a reason that is not the lifecycle's calls for no Event"),
    ],
)  # fmt: skip
def test_the_event_a_progressing_change_calls_for(before: Any, after: Any, want: Notice | None) -> None:
    assert addon_notice(addon(), before, {"currentVersion": "v2", "conditions": [after]}) == want


def test_an_add_on_is_counted_by_its_progressing_reason() -> None:
    assert addon_state(addon(conditions=[UPGRADING])) == "upgrading"
    assert addon_state(addon(conditions=[progressing("True", "Rollingback", "")])) == "rolling back"
    assert addon_state(addon(conditions=[DONE])) == "succeeded"
    assert addon_state(addon(conditions=[progressing("False", "Completed", "")])) == "unknown", "upstream's own"
    assert addon_state(addon()) == "unknown"


# --- one reconcile --------------------------------------------------------------------------------------------------


class Cache(InMemoryObjectStore):
    """The add-on watch cache, listed."""

    def unsynced(self) -> list[str]:
        return []

    def stop(self) -> None:
        pass


class Crds:
    def __init__(self, found: dict[str, Any] | None) -> None:
        self.found = found

    def custom_resource_definition(self, name: str) -> dict[str, Any] | None:
        return self.found


def lifecycle(writer: Writer, sink: Sink, *objects: dict[str, Any], crds: Crds | None = None) -> AddOnLifecycle:
    recorder = EventRecorder(sink, "pod-a", clock=lambda: NOW)
    found = AddOnLifecycle(crds or Crds(None), Source(), writer, recorder, Metrics(), queue=lambda key: None,
                           resync_s=60, clock=lambda: NOW)  # fmt: skip
    found.cache = Cache(objects)
    return found


class Source:
    def list(self, resource: Any) -> tuple[list[Any], str]:
        raise AssertionError("nothing is listed")

    def watch(self, resource: Any, version: str, timeout_s: int) -> Any:
        raise AssertionError("nothing is watched")


def test_a_reconcile_writes_the_status_once_with_its_resource_version_and_records_the_event() -> None:
    writer, sink = Writer(), Sink()
    reconcile = lifecycle(writer, sink, addon()).reconcile
    assert reconcile(addon_key("cluster1", "helloworld")) is None
    ((verb, name, patch),) = writer.writes
    assert (verb, name, patch["metadata"]) == ("patch status", "helloworld", {"resourceVersion": "7"})
    assert patch["status"]["currentVersion"] == "unknown"
    ((namespace, event),) = sink.created
    assert namespace == "cluster1", "Events live in the add-on's namespace"
    assert (event["reason"], event["regarding"]["kind"]) == ("AddOnUpgrading", "ManagedClusterAddOn")
    again = lifecycle(writer, sink, {**addon(), "status": patch["status"]})
    assert again.reconcile(addon_key("cluster1", "helloworld")) is None
    assert len(writer.writes) == 1 and len(sink.created) == 1, "a current status costs no request"


@pytest.mark.parametrize(("status", "warned"), [(409, False), (403, True)])
def test_a_status_write_that_fails_is_retried_later(status: int, warned: bool) -> None:
    writer, sink = Writer(refuse=status), Sink()
    with pytest.raises(RetryLater):
        lifecycle(writer, sink, addon()).reconcile(addon_key("cluster1", "helloworld"))
    assert [body["reason"] for _, body in sink.created] == (["StatusNotWritten"] if warned else [])


def test_a_gone_add_on_or_a_hub_without_the_lifecycle_writes_nothing() -> None:
    writer, sink = Writer(), Sink()
    found = lifecycle(writer, sink)
    assert found.reconcile(addon_key("cluster1", "helloworld")) is None
    found.cache = None
    assert found.reconcile(addon_key("cluster1", "helloworld")) is None
    assert writer.writes == [] and sink.created == []


def test_malformed_versions_of_the_cluster_management_add_on_are_reported_not_retried() -> None:
    writer, sink = Writer(), Sink()
    manager = {"apiVersion": API, "kind": "ClusterManagementAddOn", "metadata": {"name": "helloworld"},
               "status": {"supportedVersions": ["v1"], "defaultVersion": ["v1", "v2"]}}  # fmt: skip
    assert lifecycle(writer, sink, addon(), manager).reconcile(addon_key("cluster1", "helloworld")) is None
    assert writer.writes == []
    ((_, event),) = sink.created
    assert event["note"] == "ClusterManagementAddOn helloworld: defaultVersion names 2 versions; want one: v1, v2"


def test_upstreams_crd_is_left_untouched_with_one_info_line(caplog: pytest.LogCaptureFixture) -> None:
    found = lifecycle(Writer(), Sink(), crds=Crds(crd(UPSTREAM)))
    found.cache = None
    with caplog.at_level(logging.INFO, logger="webhook.controller.addonwatch"):
        found.check()
        found.check()
    assert found.cache is None and found.serving is False
    assert [r.getMessage() for r in caplog.records] == [
        "the add-on lifecycle status is not written: the hub's ManagedClusterAddOn CRD has no status.currentVersion"
    ]
