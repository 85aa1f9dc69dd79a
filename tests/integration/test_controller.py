"""``upgrade-gate controller`` against a real kube-apiserver, in both modes, as a separate process.

The chart's CRD and webhook configurations are in the API server (``cluster`` and ``webhook`` fixtures), with
upstream OLM v1's ClusterExtension and ClusterCatalog CRDs. Nothing else reconciles: the tests write
ClusterExtension status as operator-controller does (installed bundle, ``Progressing`` ``Retrying`` with the
gate's denial), ClusterCatalog status as catalogd does, and serve the catalog's content over HTTP as catalogd
does (``<base>/api/v1/all``), built from the real catalog in ``catalogs/``.
"""

from __future__ import annotations

import datetime
import hashlib
import http.server
import json
import os
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, cast

import pytest
from kubernetes import client

from tests.apiserver import ROOT, ApiServer, upstream_crds, wait_for
from tests.integration.conftest import _chart_objects
from tests.integration.olm import (
    EXTENSIONS,
    REVISIONS,
    approve,
    as_operator_controller,
    create,
    extension,
    index_secret,
    propose,
)
from tests.serve.process import terminate
from webhook.olm.fbc import iter_json_stream

CATALOGS = ("olm.operatorframework.io", "v1", "clustercatalogs")
PACKAGE = ROOT / "catalogs" / "certified-operators-v4.22" / "cloudnative-pg" / "catalog.json"
FREEZE = "2020-01-01T00:00:00Z/2099-01-01T00:00:00Z"


def digest(name: str, content: str) -> str:
    """An image reference by digest, as catalogd resolves a ClusterCatalog's tag."""
    return f"quay.io/example/{name}@sha256:{hashlib.sha256(content.encode()).hexdigest()}"


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


# --- a catalogd stand-in --------------------------------------------------------------------------------------------


class Catalogd:
    """Serves ``/catalogs/<name>/api/v1/all`` from ``content`` (name -> JSON stream text) on a loopback port."""

    def __init__(self) -> None:
        self.content: dict[str, str] = {}
        served = self.content

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                name = self.path.removeprefix("/catalogs/").removesuffix("/api/v1/all")
                body = served.get(name)
                self.send_response(200 if body is not None else 404)
                self.send_header("Content-Type", "application/jsonl")
                self.end_headers()
                self.wfile.write((body or "").encode())

            def log_message(self, *args: object) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def base(self, name: str) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/catalogs/{name}"


def cnpg_catalog(up_to: str, skip_range: dict[str, str] | None = None) -> str:
    """The real cloudnative-pg package with the bundles of channel stable-v1 up to ``up_to`` only (as the
    catalog was then), and ``skip_range`` (bundle -> range) added to channel entries, as a z-stream does."""
    blobs = [blob for blob, _, _ in iter_json_stream(PACKAGE.read_text(), str(PACKAGE))]
    order = next(b for b in blobs if b["schema"] == "olm.channel" and b["name"] == "stable-v1")["entries"]
    names = [e["name"] for e in order]
    kept = set(names[: names.index(f"cloudnative-pg.v{up_to}") + 1])
    out = []
    for blob in blobs:
        if blob["schema"] == "olm.bundle" and blob["name"] not in kept:
            continue
        if blob["schema"] == "olm.channel":
            if blob["name"] != "stable-v1":
                continue
            ranges = skip_range or {}
            entries = [{**e, **({"skipRange": ranges[e["name"]]} if e["name"] in ranges else {})}
                       for e in blob["entries"] if e["name"] in kept]  # fmt: skip
            out.append(json.dumps({**blob, "entries": entries}))
            continue
        out.append(json.dumps(blob))
    return "\n".join(out) + "\n"


# --- fixtures -------------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def olm(cluster: ApiServer) -> ApiServer:
    cluster.install_crds([upstream_crds() / "olm.operatorframework.io_clustercatalogs.yaml"])
    return cluster


@pytest.fixture(scope="module")
def catalogd() -> Iterator[Catalogd]:
    served = Catalogd()
    yield served
    served.server.shutdown()
    served.server.server_close()


Start = Callable[..., subprocess.Popen[bytes]]


@pytest.fixture
def controllers(olm: ApiServer, tmp_path: Path) -> Iterator[Start]:
    """Start ``upgrade-gate controller`` processes (stopped at the end of the test)."""
    started: list[subprocess.Popen[bytes]] = []
    logs: list[Any] = []

    def start(
        identity: str = "controller-0", *, mode: str = "gitops", lease: str = "ctl-lease", kubeconfig: str = ""
    ) -> subprocess.Popen[bytes]:
        env = {
            **os.environ,
            "KUBECONFIG": kubeconfig or olm.kubeconfig,
            "POD_NAMESPACE": "upgrade-gate",
            "POD_NAME": identity,
            "UPGRADE_GATE_CONTROLLER_MODE": mode,
            "UPGRADE_GATE_LEASE_NAME": lease,
            "UPGRADE_GATE_LEASE_DURATION": "3",
            "UPGRADE_GATE_HEALTH_PORT": "0",
        }
        log = (tmp_path / f"{identity}.log").open("ab")
        logs.append(log)
        process = subprocess.Popen(
            [str(Path(sys.executable).parent / "upgrade-gate"), "controller"],
            env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=log,
        )  # fmt: skip
        started.append(process)
        return process

    yield start
    for process in started:
        if process.poll() is None:
            terminate(process)
    for log in logs:
        log.close()


# --- reading what the controller wrote --------------------------------------------------------------------------------


def revision(cluster: ApiServer, name: str) -> dict[str, Any] | None:
    try:
        found = cast(
            "dict[str, Any]", client.CustomObjectsApi(cluster.client()).get_cluster_custom_object(*REVISIONS, name)
        )
    except client.ApiException as error:
        if error.status == 404:
            return None
        raise
    return found


def conditions(cluster: ApiServer, name: str) -> dict[str, dict[str, Any]]:
    found = revision(cluster, name) or {}
    return {c["type"]: c for c in (found.get("status") or {}).get("conditions") or []}


def summary(cluster: ApiServer, name: str) -> dict[str, tuple[str, str]]:
    """``{type: (status, reason)}`` of the revision's conditions."""
    return {kind: (c["status"], c["reason"]) for kind, c in conditions(cluster, name).items()}


def events(cluster: ApiServer, regarding: str, reason: str | None = None) -> list[dict[str, Any]]:
    custom = client.CustomObjectsApi(cluster.client())
    answer = cast("dict[str, Any]", custom.list_namespaced_custom_object("events.k8s.io", "v1", "default", "events"))
    return [
        e
        for e in answer["items"]
        if e["regarding"].get("name") == regarding and (reason is None or e["reason"] == reason)
    ]


def until(check: Callable[[], object], what: str, timeout: float = 30.0) -> Any:
    return wait_for(check, what, timeout=timeout, interval=0.2)


PENDING = {
    "Approved": ("False", "PendingApproval"),
    "Progressing": ("False", "PendingApproval"),
    "Succeeded": ("False", "PendingApproval"),
    "Ready": ("False", "PendingApproval"),
}
UPGRADING = {
    "Approved": ("True", "Approved"),
    "Progressing": ("True", "Upgrading"),
    "Succeeded": ("False", "Upgrading"),
    "Reconciling": ("True", "Upgrading"),
    "Ready": ("False", "Upgrading"),
}
SUCCEEDED = {
    "Approved": ("True", "Approved"),
    "Progressing": ("False", "Succeeded"),
    "Succeeded": ("True", "Succeeded"),
    "Reconciling": ("False", "Succeeded"),
    "Ready": ("True", "Succeeded"),
}


def extension_status(
    cluster: ApiServer, name: str, installed: str, progressing: tuple[str, str, str], package: str = ""
) -> None:
    """Write the ClusterExtension's status as operator-controller does: installed bundle (of ``package``, else
    the package named as the extension) and Progressing."""
    status, reason, message = progressing
    now = _now()
    body = {
        "status": {
            "install": {"bundle": {"name": f"{package or name}.v{installed}", "version": installed}},
            "conditions": [
                {"type": "Installed", "status": "True", "reason": "Succeeded", "message": "Installed bundle",
                 "observedGeneration": 1, "lastTransitionTime": now},
                {"type": "Progressing", "status": status, "reason": reason, "message": message,
                 "observedGeneration": 1, "lastTransitionTime": now},
            ],
        }
    }  # fmt: skip
    client.CustomObjectsApi(cluster.client()).patch_cluster_custom_object_status(*EXTENSIONS, name, body)


# --- gitops mode ----------------------------------------------------------------------------------------------------


def test_a_revision_goes_from_pending_approval_to_held_by_the_gate_to_succeeded(olm, webhook, controllers):
    extension(olm.client(), "ctl-a", "1.27.1")
    propose(olm, "ctl-a", "1.28.0")
    foreign = {
        "type": "example.com/Scanned",
        "status": "True",
        "reason": "Clean",
        "message": "",
        "lastTransitionTime": _now(),
    }
    client.CustomObjectsApi(olm.client()).patch_cluster_custom_object_status(
        *REVISIONS, "ctl-a-1.28.0", {"status": {"conditions": [foreign]}}
    )
    controllers()

    until(lambda: summary(olm, "ctl-a-1.28.0") == {"example.com/Scanned": ("True", "Clean"), **PENDING}, "pending")
    written = revision(olm, "ctl-a-1.28.0") or {}
    assert written["status"]["observedGeneration"] == written["metadata"]["generation"]
    assert (written["status"]["state"], written["status"]["fromVersion"]) == ("PendingApproval", "1.27.1")
    assert written["status"]["conditions"][0]["type"] == "example.com/Scanned", "others keep their place"
    assert conditions(olm, "ctl-a-1.28.0")["Progressing"]["message"] == (
        "upgrade of ctl-a from 1.27.1 to 1.28.0 is waiting for approval: approve ClusterExtensionRevision ctl-a-1.28.0"
    )
    until(lambda: events(olm, "ctl-a-1.28.0", "UpgradeAvailable") and events(olm, "ctl-a", "UpgradeAvailable"),
          "UpgradeAvailable on the revision and its ClusterExtension")  # fmt: skip
    (available,) = events(olm, "ctl-a-1.28.0", "UpgradeAvailable")
    assert available["related"]["name"] == "ctl-a" and available["type"] == "Normal"
    assert available["reportingController"] == "upgrade-gate.io/controller"

    approve(olm, "ctl-a-1.28.0")
    until(lambda: summary(olm, "ctl-a-1.28.0") == {"example.com/Scanned": ("True", "Clean"), **UPGRADING}, "upgrading")
    until(lambda: events(olm, "ctl-a-1.28.0", "Approved"), "the Approved Event")
    approved_since = conditions(olm, "ctl-a-1.28.0")["Approved"]["lastTransitionTime"]

    # The gate holds operator-controller's upgrade write (a freeze window); operator-controller reports the denial.
    with webhook.settings(freezeWindows=FREEZE):
        denial = until(lambda: create(as_operator_controller(olm), index_secret("ctl-a", 2, "1.28.0",
                                                                                  "pending-upgrade"), dry_run=True),
                       "the gate's denial")  # fmt: skip
    assert "held by the freeze window" in denial
    report = f'error for resolved bundle "ctl-a.v1.28.0" with version "1.28.0": {denial}'
    extension_status(olm, "ctl-a", "1.27.1", ("True", "Retrying", report))
    sentence = denial.rsplit("denied request: ", 1)[1]  # the policy's own words, said once
    assert sentence.startswith("upgrade of ctl-a from 1.27.1 to 1.28.0 is approved but held by the freeze window")
    until(lambda: conditions(olm, "ctl-a-1.28.0")["Progressing"]["message"] == sentence, "the hold on the revision")
    assert summary(olm, "ctl-a-1.28.0")["Progressing"] == ("True", "Held")
    assert revision(olm, "ctl-a-1.28.0")["status"]["state"] == "Held"  # type: ignore[index]
    until(lambda: events(olm, "ctl-a-1.28.0", "UpgradeHeld"), "the UpgradeHeld Event")
    (held,) = events(olm, "ctl-a-1.28.0", "UpgradeHeld")
    assert held["type"] == "Warning" and held["note"] == sentence

    extension_status(olm, "ctl-a", "1.28.0", ("True", "Succeeded", "Desired state reached"))
    until(lambda: summary(olm, "ctl-a-1.28.0") == {"example.com/Scanned": ("True", "Clean"), **SUCCEEDED}, "succeeded")
    until(lambda: events(olm, "ctl-a", "Succeeded"), "the Succeeded Event on the ClusterExtension")
    assert conditions(olm, "ctl-a-1.28.0")["Approved"]["lastTransitionTime"] == approved_since
    assert revision(olm, "ctl-a-1.28.0") is not None, "in gitops mode the sync loop removes it, not the controller"


def test_a_revision_of_a_missing_extension_fails_with_a_warning(olm, webhook, controllers):
    propose(olm, "ctl-ghost", "1.0.0")
    controllers()
    until(lambda: summary(olm, "ctl-ghost-1.0.0").get("Stalled") == ("True", "Failed"), "stalled")
    assert conditions(olm, "ctl-ghost-1.0.0")["Ready"]["message"] == "ClusterExtension ctl-ghost not found"
    until(lambda: events(olm, "ctl-ghost-1.0.0", "Failed"), "the Failed Event")
    assert events(olm, "ctl-ghost-1.0.0", "Failed")[0]["type"] == "Warning"


def test_a_controller_restarted_mid_way_loses_nothing_and_repeats_no_event(olm, webhook, controllers):
    extension(olm.client(), "ctl-b", "0.9.0")
    propose(olm, "ctl-b", "0.9.1")
    first = controllers()
    until(lambda: summary(olm, "ctl-b-0.9.1") == PENDING, "pending")
    first.kill()  # no clean shutdown
    first.wait()
    approve(olm, "ctl-b-0.9.1")  # while no controller runs
    controllers("controller-1")
    until(lambda: summary(olm, "ctl-b-0.9.1") == UPGRADING, "upgrading after the restart")
    until(lambda: events(olm, "ctl-b-0.9.1", "Approved"), "the Approved Event")
    assert len(events(olm, "ctl-b-0.9.1", "UpgradeAvailable")) == 1, "the restart repeats no Event"
    assert len(events(olm, "ctl-b-0.9.1", "Approved")) == 1


def test_two_replicas_elect_one_leader_and_the_other_takes_over(olm, webhook, controllers):
    extension(olm.client(), "ctl-c", "0.9.0")
    propose(olm, "ctl-c", "0.9.1")
    replicas = {
        "replica-a": controllers("replica-a", lease="ctl-two"),
        "replica-b": controllers("replica-b", lease="ctl-two"),
    }
    until(lambda: events(olm, "ctl-c-0.9.1", "UpgradeAvailable"), "the first status")
    lease = client.CoordinationV1Api(olm.client()).read_namespaced_lease("ctl-two", "upgrade-gate")
    leader = lease.spec.holder_identity if lease.spec else None
    assert leader in replicas
    writers = {e["reportingInstance"] for e in events(olm, "ctl-c-0.9.1")}
    assert writers == {f"upgrade-gate.io/controller-{leader}"}, "only the leader writes"

    replicas[leader].kill()
    replicas[leader].wait()
    approve(olm, "ctl-c-0.9.1")
    until(lambda: summary(olm, "ctl-c-0.9.1") == UPGRADING, "the other replica to take over", timeout=40)
    (other,) = set(replicas) - {leader}
    (approved,) = events(olm, "ctl-c-0.9.1", "Approved")
    assert approved["reportingInstance"] == f"upgrade-gate.io/controller-{other}"


# --- cluster mode ---------------------------------------------------------------------------------------------------


def cluster_catalog(cluster: ApiServer, catalogd: Catalogd, name: str, image: str) -> None:
    """Create (or re-point) the ClusterCatalog ``name`` with status as catalogd writes it once unpacked."""
    custom = client.CustomObjectsApi(cluster.client())
    body = {
        "apiVersion": "olm.operatorframework.io/v1",
        "kind": "ClusterCatalog",
        "metadata": {"name": name},
        "spec": {"source": {"type": "Image", "image": {"ref": f"quay.io/example/{name}:latest"}}},
    }
    try:
        custom.create_cluster_custom_object(*CATALOGS, body)
    except client.ApiException as error:
        if error.status != 409:
            raise
    now = _now()
    status = {
        "conditions": [
            {"type": "Serving", "status": "True", "reason": "Available", "message": "Serving desired content",
             "observedGeneration": 1, "lastTransitionTime": now},
            {"type": "Progressing", "status": "True", "reason": "Succeeded", "message": "Successfully unpacked",
             "observedGeneration": 1, "lastTransitionTime": now},
        ],
        "resolvedSource": {"type": "Image", "image": {"ref": image}},
        "urls": {"base": catalogd.base(name)},
        "lastUnpacked": now,
    }  # fmt: skip
    custom.patch_cluster_custom_object_status(*CATALOGS, name, {"status": status})


def cnpg_extension(cluster: ApiServer, name: str, catalog: str, installed: str) -> dict[str, Any]:
    body = {
        "apiVersion": "olm.operatorframework.io/v1",
        "kind": "ClusterExtension",
        "metadata": {"name": name},
        "spec": {
            "namespace": "cnpg-system",
            "serviceAccount": {"name": "installer"},
            "source": {"sourceType": "Catalog", "catalog": {
                "packageName": "cloudnative-pg", "version": ">=1.27.0 <2.0.0", "channels": ["stable-v1"],
                "selector": {"matchLabels": {"olm.operatorframework.io/metadata.name": catalog}}}},
        },
    }  # fmt: skip
    created = cast(
        "dict[str, Any]", client.CustomObjectsApi(cluster.client()).create_cluster_custom_object(*EXTENSIONS, body)
    )
    extension_status(cluster, name, installed, ("True", "Succeeded", "Desired state reached"), "cloudnative-pg")
    return created


def test_cluster_mode_creates_updates_in_place_and_deletes_the_revision(olm, webhook, controllers, catalogd):
    catalogd.content["ctl-catalog"] = cnpg_catalog("1.27.1")
    cluster_catalog(olm, catalogd, "ctl-catalog", digest("ctl-catalog", "01"))
    ext = cnpg_extension(olm, "ctl-pg", "ctl-catalog", "1.27.1")
    controllers(mode="cluster", lease="ctl-cluster")

    # A catalog change: 1.28.0 is published, the controller proposes it.
    catalogd.content["ctl-catalog"] = cnpg_catalog("1.28.0")
    cluster_catalog(olm, catalogd, "ctl-catalog", digest("ctl-catalog", "02"))
    until(lambda: summary(olm, "ctl-pg-1.28.0") == PENDING, "the proposal and its status")
    created = revision(olm, "ctl-pg-1.28.0") or {}
    assert created["spec"]["approved"] is False and created["spec"]["version"] == "1.28.0"
    assert created["spec"]["bundleMetadata"] == {"name": "cloudnative-pg.v1.28.0", "version": "1.28.0"}
    assert created["metadata"]["labels"] == {"clusterextension": "ctl-pg"}
    (owner,) = created["metadata"]["ownerReferences"]
    assert (owner["kind"], owner["name"], owner["uid"], owner["controller"]) == (
        "ClusterExtension", "ctl-pg", ext["metadata"]["uid"], True)  # fmt: skip
    until(lambda: events(olm, "ctl-pg", "RevisionCreated"), "RevisionCreated on the ClusterExtension")

    with webhook.settings(soakPeriod="0s"):
        approve(olm, "ctl-pg-1.28.0")
        until(lambda: summary(olm, "ctl-pg-1.28.0")["Approved"] == ("True", "Approved"), "approved")

    # A newer upgrade from the installed version (a z-stream that skips 1.28.0): updated in place, approval reset.
    catalogd.content["ctl-catalog"] = cnpg_catalog("1.28.1", {"cloudnative-pg.v1.28.1": ">=1.27.0 <1.28.1"})
    cluster_catalog(olm, catalogd, "ctl-catalog", digest("ctl-catalog", "03"))
    until(lambda: (revision(olm, "ctl-pg-1.28.0") or {}).get("spec", {}).get("version") == "1.28.1", "in-place update")
    updated = revision(olm, "ctl-pg-1.28.0") or {}
    assert updated["spec"]["approved"] is False and updated["metadata"]["uid"] == created["metadata"]["uid"]
    until(lambda: summary(olm, "ctl-pg-1.28.0")["Approved"] == ("False", "ApprovalReset"), "ApprovalReset")
    until(lambda: events(olm, "ctl-pg-1.28.0", "ApprovalReset"), "the ApprovalReset Event")

    # The upgrade completes: the revision reports it, then goes.
    extension_status(olm, "ctl-pg", "1.28.1", ("True", "Succeeded", "Desired state reached"), "cloudnative-pg")
    until(lambda: revision(olm, "ctl-pg-1.28.0") is None, "the completed revision deleted")
    until(lambda: events(olm, "ctl-pg", "RevisionDeleted"), "RevisionDeleted on the ClusterExtension")
    (deleted,) = events(olm, "ctl-pg", "RevisionDeleted")
    assert deleted["note"] == "ClusterExtensionRevision ctl-pg-1.28.0: the upgrade to 1.28.1 has completed"
    assert events(olm, "ctl-pg", "Succeeded"), "Succeeded was reported before the deletion"


def test_cluster_mode_reports_a_catalog_it_cannot_read_and_changes_nothing(olm, webhook, controllers, catalogd):
    cluster_catalog(olm, catalogd, "ctl-broken", digest("ctl-broken", "01"))  # nothing served: 404
    cnpg_extension(olm, "ctl-pg2", "ctl-broken", "1.27.1")
    controllers(mode="cluster", lease="ctl-cluster-2")
    until(lambda: events(olm, "ctl-pg2", "ResolutionFailed"), "a Warning on the ClusterExtension")
    (warning,) = events(olm, "ctl-pg2", "ResolutionFailed")
    assert warning["type"] == "Warning" and "catalog ctl-broken" in warning["note"] and "404" in warning["note"]
    assert revision(olm, "ctl-pg2-1.28.0") is None

    # Retried with backoff (1 s, 2 s, ...): the same Warning again is one Event with a count, as client-go records it.
    def repeated() -> bool:
        (again,) = events(olm, "ctl-pg2", "ResolutionFailed")
        return int((again.get("series") or {}).get("count", 1)) >= 3

    until(repeated, "a series count of 3 on the one Event")


# --- catalog image templates ----------------------------------------------------------------------------------------


def catalog_conditions(cluster: ApiServer, name: str) -> list[tuple[str, str, str, str]]:
    found = cast("dict[str, Any]", client.CustomObjectsApi(cluster.client()).get_cluster_custom_object(*CATALOGS, name))
    return [
        (c["type"], c["status"], c["reason"], c["message"]) for c in (found.get("status") or {}).get("conditions") or []
    ]


def catalog_image(cluster: ApiServer, name: str) -> str:
    found = cast("dict[str, Any]", client.CustomObjectsApi(cluster.client()).get_cluster_custom_object(*CATALOGS, name))
    return str(found["spec"]["source"]["image"]["ref"])


def test_a_templated_catalog_reports_its_image_and_in_cluster_mode_switches_to_it(olm, webhook, controllers, catalogd):
    template = "quay.io/example/catalog:v{kube_major_version}.{kube_minor_version}"
    body = {
        "apiVersion": "olm.operatorframework.io/v1", "kind": "ClusterCatalog",
        "metadata": {"name": "ctl-dynamic", "annotations": {"olm.catalogImageTemplate": template}},
        "spec": {"source": {"type": "Image", "image": {"ref": "quay.io/example/catalog:v1.0"}}},
    }  # fmt: skip
    client.CustomObjectsApi(olm.client()).create_cluster_custom_object(*CATALOGS, body)
    cluster_catalog(olm, catalogd, "ctl-dynamic", digest("ctl-dynamic", "01"))  # catalogd's status
    gitops = controllers(lease="ctl-dyn-gitops")
    resolved = [
        ("TemplatesHaveResolved", "True", "AllTemplatesResolved", "catalog image reference was successfully resolved"),
        ("ResolvedImage", "True", "AllTemplatesResolved", "quay.io/example/catalog:v1.32"),
    ]
    until(lambda: catalog_conditions(olm, "ctl-dynamic")[2:] == resolved, "the template's conditions")
    assert [c[0] for c in catalog_conditions(olm, "ctl-dynamic")[:2]] == ["Serving", "Progressing"], "catalogd's kept"
    assert catalog_image(olm, "ctl-dynamic") == "quay.io/example/catalog:v1.0", "in gitops mode Git switches it"
    gitops.terminate()
    gitops.wait()

    controllers("controller-1", mode="cluster", lease="ctl-dyn-cluster")
    until(lambda: catalog_image(olm, "ctl-dynamic") == "quay.io/example/catalog:v1.32", "the switch in cluster mode")
    until(lambda: events(olm, "ctl-dynamic", "CatalogImageSwitched"), "the CatalogImageSwitched Event")

    unresolvable = "quay.io/example/catalog:{kube_distro_version}"
    client.CustomObjectsApi(olm.client()).patch_cluster_custom_object(
        *CATALOGS, "ctl-dynamic", {"metadata": {"annotations": {"olm.catalogImageTemplate": unresolvable}}}
    )
    message = 'Cannot construct catalog image reference, variable(s) "{kube_distro_version}" couldn\'t be resolved'
    until(lambda: catalog_conditions(olm, "ctl-dynamic")[2][1:] == ("False", "UnableToResolve", message), "unresolved")
    until(lambda: events(olm, "ctl-dynamic", "TemplateUnresolved"), "the TemplateUnresolved Warning")
    assert catalog_image(olm, "ctl-dynamic") == "quay.io/example/catalog:v1.32", "nothing switched"


# --- the chart's least privilege ------------------------------------------------------------------------------------


def service_account_kubeconfig(cluster: ApiServer, tmp_path: Path) -> str:
    """A kubeconfig of the chart's controller ServiceAccount (a TokenRequest), with the chart's RBAC applied."""
    controller = "gate-upgrade-gate-controller"
    kinds = {"ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"}
    cluster.apply(o for o in _chart_objects({}) if o["kind"] in kinds and o["metadata"]["name"].startswith(controller))
    request = {"spec": {"expirationSeconds": 3600}}
    answer: Any = client.CoreV1Api(cluster.client()).create_namespaced_service_account_token(
        controller,
        "upgrade-gate",
        request,  # type: ignore[arg-type]  # a plain dict body, as the client's docs show
    )
    config = {
        "apiVersion": "v1", "kind": "Config", "current-context": "sa",
        "clusters": [{"name": "c", "cluster": {"server": cluster.server, "certificate-authority": cluster.ca_crt}}],
        "users": [{"name": "sa", "user": {"token": answer.status.token}}],
        "contexts": [{"name": "sa", "context": {"cluster": "c", "user": "sa"}}],
    }  # fmt: skip
    path = tmp_path / "controller.kubeconfig"
    path.write_text(json.dumps(config))
    return str(path)


def test_the_charts_gitops_rbac_suffices_and_refuses_what_only_cluster_mode_may_write(
    olm, webhook, controllers, catalogd, tmp_path
):
    kubeconfig = service_account_kubeconfig(olm, tmp_path)
    lease = "gate-upgrade-gate-controller"  # the one Lease the chart's Role lets it update
    extension(olm.client(), "ctl-rbac", "0.9.0")
    propose(olm, "ctl-rbac", "0.9.1")
    gitops = controllers("rbac-0", lease=lease, kubeconfig=kubeconfig)
    until(lambda: summary(olm, "ctl-rbac-0.9.1") == PENDING, "the status, written as the chart's ServiceAccount")
    until(lambda: events(olm, "ctl-rbac-0.9.1", "UpgradeAvailable"), "its Event")
    gitops.terminate()
    gitops.wait()

    # The same RBAC in cluster mode: creating a revision is forbidden, said by a Warning on the ClusterExtension.
    catalogd.content["ctl-rbac-catalog"] = cnpg_catalog("1.28.0")
    cluster_catalog(olm, catalogd, "ctl-rbac-catalog", digest("ctl-rbac-catalog", "01"))
    cnpg_extension(olm, "ctl-rbac-pg", "ctl-rbac-catalog", "1.27.1")
    controllers("rbac-1", mode="cluster", lease=lease, kubeconfig=kubeconfig)
    until(lambda: events(olm, "ctl-rbac-pg", "RevisionNotWritten"), "the refusal as a Warning")
    (refused,) = events(olm, "ctl-rbac-pg", "RevisionNotWritten")
    assert (
        refused["type"] == "Warning"
        and "ctl-rbac-pg-1.28.0 not created: create ClusterExtensionRevision" in refused["note"]
    )
    assert "403" in refused["note"] and "forbidden" in refused["note"]
    assert revision(olm, "ctl-rbac-pg-1.28.0") is None


def test_two_cluster_mode_replicas_create_once_and_the_survivor_finishes_a_change_the_leader_left(
    olm, webhook, controllers, catalogd
):
    catalogd.content["ctl-ha-catalog"] = cnpg_catalog("1.28.0")
    cluster_catalog(olm, catalogd, "ctl-ha-catalog", digest("ctl-ha-catalog", "01"))
    cnpg_extension(olm, "ctl-ha", "ctl-ha-catalog", "1.27.1")
    replicas = {name: controllers(name, mode="cluster", lease="ctl-ha") for name in ("ha-a", "ha-b")}
    until(lambda: summary(olm, "ctl-ha-1.28.0") == PENDING, "the proposal")
    (created,) = events(olm, "ctl-ha", "RevisionCreated")
    leader = created["reportingInstance"].removeprefix("upgrade-gate.io/controller-")

    # A catalog change, and the leader killed at once: the other replica takes over and finishes it.
    catalogd.content["ctl-ha-catalog"] = cnpg_catalog("1.28.1", {"cloudnative-pg.v1.28.1": ">=1.27.0 <1.28.1"})
    cluster_catalog(olm, catalogd, "ctl-ha-catalog", digest("ctl-ha-catalog", "02"))
    replicas[leader].kill()
    replicas[leader].wait()

    def updated() -> bool:
        found = revision(olm, "ctl-ha-1.28.0") or {}
        status = found.get("status") or {}
        return bool(
            found["spec"]["version"] == "1.28.1" and status["observedGeneration"] == found["metadata"]["generation"]
        )

    until(updated, "the update and its status, by the survivor", timeout=40)
    assert summary(olm, "ctl-ha-1.28.0") == PENDING
    assert len(events(olm, "ctl-ha", "RevisionCreated")) == 1, "created once"
    assert len(events(olm, "ctl-ha", "RevisionUpdated")) == 1, "updated once"
