"""``upgrade-gate controller`` writing the add-on installVersion lifecycle's status on a real kube-apiserver, as its
own process.

The hub starts with upstream OCM's CRDs (``tests/data/ocm/crds``: no ``status.currentVersion``), where the controller
must leave every add-on untouched; then the ManagedClusterAddOn and ClusterManagementAddOn CRDs are replaced by the
lifecycle's variant (``tests/data/ocm/lifecycle``), which the controller sees without a restart. The CRDs are deleted
after the module. No OCM controller runs: the tests write a ClusterManagementAddOn's ``supportedVersions`` as its
addon manager would, and each ManifestWork as the addon manager labels it (``open-cluster-management.io/addon-name``,
``open-cluster-management.io/addon-version``) and the work agent reports it (``Applied``, ``Available``,
``Degraded`` with the ``observedGeneration`` they are about, api ``work/v1/types.go``). Expectations are the
lifecycle's: its reasons, messages and versions.
"""

from __future__ import annotations

import contextlib
import datetime
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import pytest
import yaml
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from tests.apiserver import ROOT, ApiServer, wait_for
from tests.integration.conftest import _chart_objects, controlling

OCM = ROOT / "tests" / "data" / "ocm"
UPSTREAM = [OCM / "crds" / name for name in (
    "0000_00_addon.open-cluster-management.io_clustermanagementaddons.crd.yaml",
    "0000_01_addon.open-cluster-management.io_managedclusteraddons.crd.yaml",
    "0000_00_work.open-cluster-management.io_manifestworks.crd.yaml",
)]  # fmt: skip
VARIANT = [OCM / "lifecycle" / "clustermanagementaddons.crd.yaml", OCM / "lifecycle" / "managedclusteraddons.crd.yaml"]
GROUP = "addon.open-cluster-management.io"
CMAS = (GROUP, "v1alpha1", "clustermanagementaddons")
MCAS = (GROUP, "v1alpha1", "managedclusteraddons")
WORKS = ("work.open-cluster-management.io", "v1", "manifestworks")
CLUSTERS = ["lc-cluster1", "lc-cluster2", "lc-cluster3", "lc-cluster4", "lc-cluster5"]
NOT_WRITTEN = (
    "the add-on lifecycle status is not written: the hub's ManagedClusterAddOn CRD has no status.currentVersion"
)
DONE = ("False", "Succeed", "install completed with no errors.")


def _names(files: list[Path]) -> list[str]:
    return [yaml.safe_load(path.read_text())["metadata"]["name"] for path in files]


def _gone(server: ApiServer, names: list[str]) -> None:
    """Delete the CRDs ``names`` (if there) and wait until the API server no longer has them."""
    extensions = client.ApiextensionsV1Api(server.client())
    for name in names:
        with contextlib.suppress(ApiException):
            extensions.delete_custom_resource_definition(name)

    def absent() -> bool:
        found = {
            (crd.metadata.name if crd.metadata else "") for crd in extensions.list_custom_resource_definition().items
        }
        return not found & set(names)

    wait_for(absent, f"CRDs {', '.join(names)} to be deleted", timeout=60)


@pytest.fixture(scope="module")
def hub(cluster: ApiServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ApiServer, Path]]:
    """Upstream's add-on and work CRDs, the clusters' namespaces, and the controller as ``controlling`` runs it (with
    its own Lease, and a resync of 2 s: it reads the CRD again every 2 s); the CRDs and namespaces are deleted after
    the module. The gate's webhook configurations another module left (pointing at a webhook no longer served) are
    removed: here nothing but the controller is tested."""
    names = _names(UPSTREAM)
    _gone(cluster, names)
    admission = client.AdmissionregistrationV1Api(cluster.client())
    for configuration in (o for o in _chart_objects({}) if o["kind"].endswith("WebhookConfiguration")):
        delete = (admission.delete_validating_webhook_configuration if configuration["kind"].startswith("Validating")
                  else admission.delete_mutating_webhook_configuration)  # fmt: skip
        with contextlib.suppress(ApiException):
            delete(configuration["metadata"]["name"])
    cluster.install_crds(UPSTREAM)
    cluster.apply([{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}} for name in CLUSTERS])
    log_path = tmp_path_factory.mktemp("addon-controller") / "controller.log"
    with contextlib.ExitStack() as stack:
        with pytest.MonkeyPatch.context() as patch:  # the controller's environment: its own Lease, CRD read every 2 s
            patch.setenv("UPGRADE_GATE_LEASE_NAME", "addon-lifecycle")
            patch.setenv("UPGRADE_GATE_RESYNC", "2")
            stack.enter_context(controlling(cluster, log_path))
        try:
            yield cluster, log_path
        finally:
            stack.close()
            _gone(cluster, names)
            core = client.CoreV1Api(cluster.client())
            for name in CLUSTERS:
                with contextlib.suppress(ApiException):
                    core.delete_namespace(name)


@pytest.fixture(scope="module")
def lifecycle(hub: tuple[ApiServer, Path]) -> tuple[ApiServer, Path]:
    """The hub with the lifecycle's CRD variant in place of upstream's (the same names: an update of each CRD)."""
    server, _ = hub
    server.install_crds(VARIANT)
    return hub


def _dict(found: object) -> dict[str, Any]:
    """An answer of ``CustomObjectsApi`` (typed ``object``) as the JSON object it is."""
    return cast("dict[str, Any]", found)


def _lines(log_path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in log_path.read_text().splitlines() if line.startswith("{")]


class AddOn:
    """One add-on (its ClusterManagementAddOn) on the hub, and its ManagedClusterAddOn and work in one cluster."""

    def __init__(
        self, server: ApiServer, name: str, cluster: str, supported: list[str], *, served: bool = True
    ) -> None:
        self.server, self.name, self.cluster = server, name, cluster
        self.api = client.CustomObjectsApi(server.client())
        self.work = f"addon-{name}-deploy-0"
        body = {"apiVersion": f"{GROUP}/v1alpha1", "kind": "ClusterManagementAddOn", "metadata": {"name": name}}
        with contextlib.suppress(ApiException):  # 409: made by an earlier test
            self.api.create_cluster_custom_object(*CMAS, {**body, "spec": {}})
        status = {"status": {"supportedVersions": supported, "defaultVersion": supported[-1]}}

        def stored() -> bool:  # a CRD just updated may still be served with its old schema, which prunes these
            found = _dict(self.api.patch_cluster_custom_object_status(*CMAS, name, status))
            return not served or bool((found.get("status") or {}).get("supportedVersions"))

        wait_for(stored, f"ClusterManagementAddOn {name}'s supportedVersions to be stored")

    def _in(self, resource: tuple[str, str, str]) -> tuple[str, str, str, str]:
        group, version, plural = resource
        return group, version, self.cluster, plural

    def create(self, version: str | None) -> None:
        """The ManagedClusterAddOn, with ``spec.installVersion`` ``version`` (``None``: none)."""
        spec = {"installNamespace": "open-cluster-management-agent-addon"}
        body = {"apiVersion": f"{GROUP}/v1alpha1", "kind": "ManagedClusterAddOn",
                "metadata": {"name": self.name, "namespace": self.cluster},
                "spec": {**spec, **({"installVersion": version} if version else {})}}  # fmt: skip
        self.api.create_namespaced_custom_object(*self._in(MCAS), body)

    def install_version(self, version: str) -> None:
        patch = {"spec": {"installVersion": version}}
        wait_for(lambda: _dict(self.api.patch_namespaced_custom_object(*self._in(MCAS), self.name, patch))["spec"]
                 .get("installVersion") == version, f"installVersion {version} to be stored")  # fmt: skip

    def get(self) -> dict[str, Any]:
        return _dict(self.api.get_namespaced_custom_object(*self._in(MCAS), self.name))

    def deploy(self, version: str) -> int:
        """The addon manager: the work carries ``version`` (label and content); its generation."""
        labels = {
            "open-cluster-management.io/addon-name": self.name,
            "open-cluster-management.io/addon-version": version,
        }
        manifest = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": self.name, "namespace": "default"},
                    "data": {"version": version}}  # fmt: skip
        body = {"apiVersion": "work.open-cluster-management.io/v1", "kind": "ManifestWork",
                "metadata": {"name": self.work, "namespace": self.cluster, "labels": labels},
                "spec": {"workload": {"manifests": [manifest]}}}  # fmt: skip
        try:
            found = _dict(self.api.create_namespaced_custom_object(*self._in(WORKS), body))
        except ApiException as error:
            if error.status != 409:
                raise
            patch = {"metadata": {"labels": labels}, "spec": body["spec"]}
            found = _dict(self.api.patch_namespaced_custom_object(*self._in(WORKS), self.work, patch))
        return int(found["metadata"]["generation"])

    def report(self, generation: int, *, healthy: bool = True) -> None:
        """The work agent: the work applied at ``generation``, and available (or degraded)."""
        now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")

        def condition(kind: str, status: str, reason: str, message: str) -> dict[str, Any]:
            return {"type": kind, "status": status, "observedGeneration": generation, "lastTransitionTime": now,
                    "reason": reason, "message": message}  # fmt: skip

        conditions = [condition("Applied", "True", "AppliedManifestWorkComplete", "Apply manifest work complete")]
        if healthy:
            conditions.append(condition("Available", "True", "ResourcesAvailable", "All resources are available"))
        else:
            conditions.append(condition("Degraded", "True", "CrashLoop", "agent restarts"))
        self.api.patch_namespaced_custom_object_status(
            *self._in(WORKS), self.work, {"status": {"conditions": conditions}}
        )

    def installed(self, version: str) -> None:
        """The add-on created at ``version`` and its work reported available there: ``Succeed``."""
        self.create(version)
        self.report(self.deploy(version))
        self.until(("", version, DONE))

    def lifecycle(self) -> tuple[str | None, str | None, tuple[str, str, str] | None]:
        """``(lastVersion, currentVersion, (status, reason, message) of Progressing)``."""
        status = self.get().get("status") or {}
        found = next((c for c in status.get("conditions") or () if c["type"] == "Progressing"), None)
        progressing = None if found is None else (found["status"], found["reason"], found["message"])
        return status.get("lastVersion"), status.get("currentVersion"), progressing

    def until(self, want: tuple[str | None, str | None, tuple[str, str, str] | None]) -> None:
        try:
            wait_for(lambda: self.lifecycle() == want, f"{self.cluster}/{self.name} to be {want}", timeout=30,
                     interval=0.2)  # fmt: skip
        except AssertionError as error:
            raise AssertionError(f"{error}; it is {self.lifecycle()}") from None

    def events(self) -> list[tuple[str, str, str]]:
        """``(type, reason, note)`` of the Events about the add-on, in its namespace, oldest first."""
        answer = _dict(self.api.list_namespaced_custom_object("events.k8s.io", "v1", self.cluster, "events"))
        found = [e for e in answer["items"] if e["regarding"].get("name") == self.name
                 and e["regarding"].get("kind") == "ManagedClusterAddOn"]  # fmt: skip
        return [(e["type"], e["reason"], e["note"]) for e in sorted(found, key=lambda e: e["eventTime"])]


def test_upstreams_crd_is_left_untouched_with_one_info_line(hub: tuple[ApiServer, Path]) -> None:
    server, log_path = hub
    addon = AddOn(server, "upstream", CLUSTERS[0], ["v1"], served=False)
    addon.create("v1")
    addon.deploy("v1")
    wait_for(lambda: any(line["message"] == NOT_WRITTEN for line in _lines(log_path)),
             "the controller to say it writes no add-on status", timeout=30)  # fmt: skip
    wait_for(lambda: sum("leading" in line["message"] for line in _lines(log_path)) >= 1, "the controller to lead")
    found = addon.get()
    assert "installVersion" not in found["spec"], "upstream's schema prunes it"
    assert "status" not in found, "nothing written"
    lines = _lines(log_path)
    assert [line["message"] for line in lines].count(NOT_WRITTEN) == 1, "said once, not at every CRD read"
    assert not [line for line in lines if line["level"] in ("WARNING", "ERROR") and "addon" in line["logger"]]


def test_a_crd_change_to_the_variant_is_seen_and_the_add_on_gets_its_status(lifecycle: tuple[ApiServer, Path]) -> None:
    server, _ = lifecycle
    addon = AddOn(server, "upstream", CLUSTERS[0], ["v1"])  # the ClusterManagementAddOn of the test above
    addon.install_version("v1")
    addon.until(("", "unknown", ("True", "Installing", "Installing addon to version v1.")))
    addon.report(addon.deploy("v1"))
    addon.until(("", "v1", DONE))


def test_an_install_then_an_upgrade_with_events_and_printer_columns(lifecycle: tuple[ApiServer, Path]) -> None:
    server, _ = lifecycle
    addon = AddOn(server, "hello", CLUSTERS[1], ["v1", "v2"])
    addon.create("v1")
    addon.until(("", "unknown", ("True", "Installing", "Installing addon to version v1.")))
    addon.report(addon.deploy("v1"))
    addon.until(("", "v1", DONE))
    addon.install_version("v2")
    addon.until(("v1", "unknown", ("True", "Upgrading", "Upgrading addon to version v2.")))
    generation = addon.deploy("v2")
    addon.report(generation - 1)  # the work agent has not seen the new generation yet
    addon.until(("v1", "unknown", ("True", "Upgrading", "Upgrading addon to version v2.")))
    addon.report(generation)
    addon.until(("v1", "v2", DONE))
    where = f"add-on hello on cluster {CLUSTERS[1]}"
    wait_for(lambda: len(addon.events()) == 4, "four Events")
    assert addon.events() == [
        ("Normal", "AddOnUpgrading", f"{where}: Installing addon to version v1."),
        ("Normal", "AddOnUpgraded", f"{where} runs v1: install completed with no errors."),
        ("Normal", "AddOnUpgrading", f"{where}: Upgrading addon to version v2."),
        ("Normal", "AddOnUpgraded", f"{where} runs v2: install completed with no errors."),
    ]
    status = addon.get()["status"]
    progressing = next(c for c in status["conditions"] if c["type"] == "Progressing")
    work = _dict(addon.api.get_namespaced_custom_object(*addon._in(WORKS), addon.work))
    available = next(c for c in work["status"]["conditions"] if c["type"] == "Available")
    assert progressing["lastTransitionTime"] == available["lastTransitionTime"], "the completed time"
    # kubectl get managedclusteraddons -o wide: the API server's Table of the CRD's printer columns
    api = server.client()
    method, url, headers, _, _ = api.param_serialize(
        "GET", f"/apis/{GROUP}/v1alpha1/namespaces/{CLUSTERS[1]}/managedclusteraddons/hello",
        header_params={"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io"}, auth_settings=["BearerToken"],
    )  # fmt: skip
    answer = api.call_api(method, url, header_params=headers)
    table = json.loads(answer.response.data)
    columns = [column["name"] for column in table["columnDefinitions"]]
    row = dict(zip(columns, table["rows"][0]["cells"], strict=True))
    assert {k: row[k] for k in ("Progressing", "Reason", "Install", "Current", "Last")} == {
        "Progressing": "False", "Reason": "Succeed", "Install": "v2", "Current": "v2", "Last": "v1",
    }  # fmt: skip


def test_a_failed_work_fails_the_upgrade_with_a_warning(lifecycle: tuple[ApiServer, Path]) -> None:
    server, _ = lifecycle
    addon = AddOn(server, "crashy", CLUSTERS[2], ["v1", "v2"])
    addon.installed("v1")
    addon.install_version("v2")
    addon.report(addon.deploy("v2"), healthy=False)
    message = "could not upgrade to version v2: ManifestWork addon-crashy-deploy-0 Degraded (CrashLoop: agent restarts)"
    addon.until(("v1", "unknown", ("False", "Failed", message)))
    wait_for(lambda: addon.events()[-1:] == [("Warning", "AddOnFailed", f"add-on crashy on cluster {CLUSTERS[2]}: "
                                              f"{message}")], "an AddOnFailed Warning")  # fmt: skip


def test_a_rollback_then_an_invalid_version(lifecycle: tuple[ApiServer, Path]) -> None:
    server, _ = lifecycle
    addon = AddOn(server, "back", CLUSTERS[3], ["v1", "v2"])
    addon.installed("v2")
    addon.install_version("v1")
    addon.until(("v2", "unknown", ("True", "Rollingback", "Rollingback addon to version v1.")))
    addon.report(addon.deploy("v1"))
    addon.until(("v2", "v1", DONE))
    wait_for(lambda: ("Normal", "AddOnRollingBack", f"add-on back on cluster {CLUSTERS[3]}: Rollingback addon to "
                      "version v1.") in addon.events(), "an AddOnRollingBack Event")  # fmt: skip
    addon.install_version("v0")
    addon.until(("v1", "unknown", ("False", "Failed", "could not rollback to invalid version v0")))
    addon.install_version("v2")
    addon.until(("unknown", "unknown", ("True", "Installing", "Installing addon to version v2.")))
