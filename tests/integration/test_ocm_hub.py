"""Add-on upgrades on an Open Cluster Management hub: the upstream hub CRDs (``tests/data/ocm/crds``) in a real
kube-apiserver, the gate's policies served by a local ``upgrade-gate serve --cluster on`` that the API server calls.

The hub: a canary cluster and 20 others, each a ManagedCluster with its namespace; Placement ``ocm-hub/canary``
deciding the canary, Placement ``ocm-hub/fleet`` deciding the 20 others in 3 decision groups (one PlacementDecision
per group, labelled ``cluster.open-cluster-management.io/placement`` and ``.../decision-group-index`` /
``decision-group-name`` as upstream's placement controller writes them). Each test installs an add-on of its own
(an AddOnTemplate per version, a ClusterManagementAddOn whose placements name the template, a ManagedClusterAddOn
and a ManifestWork per cluster), so the tests do not share add-on state.

No OCM controller runs: the tests write status through the status subresource as they would
(open-cluster-management-io/ocm ``pkg/addon/controllers/addonprogressing``: the addon manager sets a
ManagedClusterAddOn's ``Progressing`` True, reason ``Progressing``, while its works are not ready, then False,
reason ``Completed``, copying each ``desiredConfig`` to ``lastAppliedConfig``; ``cmainstallprogression`` writes
``installProgressions`` with ``lastKnownGoodConfig``; the work agent writes a ManifestWork's ``Applied`` /
``Available`` / ``Degraded`` conditions with the ``observedGeneration`` they are about, api ``work/v1/types.go``).
The add-ons' spec writes (their upgrades and rollbacks) come from an approver, alice in upgrade-approvers, as the
bundled policies want; mallory, in developers, may write add-ons (cluster-admin) but is no approver.
"""

from __future__ import annotations

import contextlib
import datetime
import json
import re
from collections.abc import Iterator
from typing import Any, cast

import pytest
import yaml
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from tests.apiserver import ROOT, ApiServer, cluster_admin, wait_for
from tests.integration.conftest import Webhook, serving
from tests.integration.olm import APPROVER, APPROVER_GROUP

CRDS = ROOT / "tests" / "data" / "ocm" / "crds"
HUB = "ocm-hub"
CANARY = "hub-canary"
FLEET = [f"hub-c{index:02d}" for index in range(1, 21)]
GROUPS = [FLEET[0:7], FLEET[7:14], FLEET[14:20]]
SOAK = 4  # seconds, the settings' addonCanarySoak for this module
DEVELOPER, DEVELOPERS = "mallory", "developers"
ADDON_GROUP = "addon.open-cluster-management.io"
TEMPLATES = (ADDON_GROUP, "v1alpha1", "addontemplates")
CMAS = (ADDON_GROUP, "v1alpha1", "clustermanagementaddons")
MCAS = (ADDON_GROUP, "v1alpha1", "managedclusteraddons")
WORKS = ("work.open-cluster-management.io", "v1", "manifestworks")
DECISIONS = ("cluster.open-cluster-management.io", "v1beta1", "placementdecisions")
GATE = 'admission webhook "validate.upgrade-gate.dev" denied the request: '
PLACEMENTS = (
    "ValidatingAdmissionPolicy 'upgrade-gate-addon-placements' with binding 'upgrade-gate-addon-placements' "
    "denied request: "
)


def _in(resource: tuple[str, str, str], namespace: str) -> tuple[str, str, str, str]:
    """A namespaced resource's arguments to ``CustomObjectsApi``: group, version, namespace, plural."""
    group, version, plural = resource
    return group, version, namespace, plural


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _condition(kind: str, status: str, reason: str, message: str, generation: int | None = None) -> dict[str, Any]:
    observed = {} if generation is None else {"observedGeneration": generation}
    return {
        "type": kind,
        "status": status,
        "lastTransitionTime": _now(),
        "reason": reason,
        "message": message,
        **observed,
    }


def _decision(placement: str, index: int, group: str) -> dict[str, Any]:
    labels = {
        "cluster.open-cluster-management.io/placement": placement,
        "cluster.open-cluster-management.io/decision-group-index": str(index),
        "cluster.open-cluster-management.io/decision-group-name": group,
    }
    return {
        "apiVersion": "cluster.open-cluster-management.io/v1beta1",
        "kind": "PlacementDecision",
        "metadata": {"name": f"{placement}-decision-{index + 1}", "namespace": HUB, "labels": labels},
    }


def _decide(api: client.CustomObjectsApi, placement: str, index: int, clusters: list[str]) -> None:
    body = {"status": {"decisions": [{"clusterName": name, "reason": ""} for name in clusters]}}
    api.patch_namespaced_custom_object_status(*_in(DECISIONS, HUB), f"{placement}-decision-{index + 1}", body)


@pytest.fixture(scope="module")
def hub(cluster: ApiServer) -> Iterator[ApiServer]:
    """The hub's CRDs, clusters, placements and decisions, and cluster-admin for the developers; the CRDs (and so
    every object of theirs), the namespaces and that binding are deleted after the module."""
    crds = sorted(CRDS.glob("*.yaml"))
    cluster.install_crds(crds)
    namespaces = [HUB, CANARY, *FLEET]
    placement = {"apiVersion": "cluster.open-cluster-management.io/v1beta1", "kind": "Placement"}
    groups = [{"groupName": f"group-{index}", "groupClusterSelector": {}} for index in range(3)]
    cluster.apply(
        [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}} for name in namespaces]
        + [{"apiVersion": "cluster.open-cluster-management.io/v1", "kind": "ManagedCluster", "metadata": {"name": name},
            "spec": {"hubAcceptsClient": True}} for name in [CANARY, *FLEET]]
        + [{**placement, "metadata": {"name": "canary", "namespace": HUB}, "spec": {"numberOfClusters": 1}},
           {**placement, "metadata": {"name": "fleet", "namespace": HUB},
            "spec": {"decisionStrategy": {"groups": groups}}},
           _decision("canary", 0, ""),
           cluster_admin("hub-developers", {"kind": "Group", "name": DEVELOPERS})]
        + [_decision("fleet", index, f"group-{index}") for index in range(len(GROUPS))]
    )  # fmt: skip
    objects = client.CustomObjectsApi(cluster.client())
    _decide(objects, "canary", 0, [CANARY])
    for index, members in enumerate(GROUPS):
        _decide(objects, "fleet", index, members)
    yield cluster
    extensions = client.ApiextensionsV1Api(cluster.client())
    for path in crds:
        with contextlib.suppress(ApiException):
            extensions.delete_custom_resource_definition(yaml.safe_load(path.read_text())["metadata"]["name"])
    core = client.CoreV1Api(cluster.client())
    for name in namespaces:
        with contextlib.suppress(ApiException):
            core.delete_namespace(name)
    with contextlib.suppress(ApiException):
        client.RbacAuthorizationV1Api(cluster.client()).delete_cluster_role_binding("hub-developers")


@pytest.fixture(scope="module")
def webhook(hub: ApiServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Webhook]:
    """The gate, started once the hub's CRDs are served (so that it watches their kinds), with the hub's canary
    placement and a soak of a few seconds."""
    with (
        serving(hub, tmp_path_factory.mktemp("hub-gate")) as served,
        served.settings(addonCanaryPlacement=f"{HUB}/canary", addonCanarySoak=f"{SOAK}s", freezeWindows=""),
    ):
        yield served


# --- an add-on as the addon manager and the work agents keep it ------------------------------------------------


def _ref(name: str) -> dict[str, str]:
    return {"group": ADDON_GROUP, "resource": "addontemplates", "name": name}


def _rendered(name: str) -> str:
    return f"{ADDON_GROUP}/addontemplates//{name}"


class AddOn:
    """One add-on on the hub, written as the addon manager and the work agents would write it; its
    ClusterManagementAddOn and ManagedClusterAddOn specs as an approver (``write``)."""

    def __init__(self, server: ApiServer, name: str, *, deadline: str = "None", version: str = "v1") -> None:
        self.server, self.name, self.deadline, self.version = server, name, deadline, version
        self.api = client.CustomObjectsApi(server.client())
        self.approver = client.CustomObjectsApi(server.client(APPROVER, APPROVER_GROUP))
        self.placements = {"canary": f"{name}-{version}", "fleet": f"{name}-{version}"}

    def template(self, version: str) -> None:
        deployment = {"apiVersion": "apps/v1", "kind": "Deployment",
                      "metadata": {"name": f"{self.name}-agent", "namespace": "open-cluster-management-agent-addon"},
                      "spec": {"template": {"spec": {"containers": [{"name": "agent",
                                                                     "image": f"hello:{version}"}]}}}}  # fmt: skip
        body = {"apiVersion": f"{ADDON_GROUP}/v1alpha1", "kind": "AddOnTemplate",
                "metadata": {"name": f"{self.name}-{version}"},
                "spec": {"addonName": self.name, "agentSpec": {"workload": {"manifests": [deployment]}}}}  # fmt: skip
        self.api.create_cluster_custom_object(*TEMPLATES, body)

    def cma(self, annotations: dict[str, str] | None = None) -> dict[str, Any]:
        """The ClusterManagementAddOn with the placements' current templates."""
        strategies = {
            "canary": {"type": "All", "all": {"progressDeadline": self.deadline}},
            "fleet": {"type": "ProgressivePerGroup", "progressivePerGroup": {"mandatoryDecisionGroups": []}},
        }
        placements = [
            {"namespace": HUB, "name": key, "configs": [_ref(template)], "rolloutStrategy": strategies[key]}
            for key, template in self.placements.items()
        ]
        current = self._get_cma()
        metadata: dict[str, Any] = {"name": self.name, "annotations": annotations or {}}
        if current is not None:
            metadata["resourceVersion"] = current["metadata"]["resourceVersion"]
        return {
            "apiVersion": f"{ADDON_GROUP}/v1alpha1",
            "kind": "ClusterManagementAddOn",
            "metadata": metadata,
            "spec": {
                "supportedConfigs": [{"group": ADDON_GROUP, "resource": "addontemplates"}],
                "installStrategy": {"type": "Placements", "placements": placements},
            },
        }

    def _get_cma(self) -> dict[str, Any] | None:
        try:
            found = cast(dict[str, Any], self.api.get_cluster_custom_object(*CMAS, self.name))
        except ApiException as error:
            if error.status == 404:
                return None
            raise
        return found

    def install(self) -> None:
        """Its version installed everywhere: templates v1 and v2, the CMA, and per cluster a completed MCA and a
        ready work."""
        self.template("v1")
        self.template("v2")
        cma = self.cma()  # admitted once the gate's cache has seen the templates
        wait_for(lambda: self.write(cma) is None, f"the creation of ClusterManagementAddOn {self.name}")
        for cluster in [CANARY, *FLEET]:
            mca = {"apiVersion": f"{ADDON_GROUP}/v1alpha1", "kind": "ManagedClusterAddOn",
                   "metadata": {"name": self.name, "namespace": cluster},
                   "spec": {"installNamespace": "open-cluster-management-agent-addon"}}  # fmt: skip
            self.api.create_namespaced_custom_object(*_in(MCAS, cluster), mca)
            work = {"apiVersion": "work.open-cluster-management.io/v1", "kind": "ManifestWork",
                    "metadata": {"name": self.work, "namespace": cluster,
                                 "labels": {"open-cluster-management.io/addon-name": self.name}},
                    "spec": {"workload": {"manifests": [self._manifest(self.version)]}}}  # fmt: skip
            self.api.create_namespaced_custom_object(*_in(WORKS, cluster), work)
            self.progress(cluster, self.version, render=False)
            self.applied(cluster, self.version)
            self.work_status(cluster, healthy=True)

    @property
    def work(self) -> str:
        return f"addon-{self.name}-deploy-0"

    def _manifest(self, version: str) -> dict[str, Any]:
        return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": self.name, "namespace": "default"},
                "data": {"version": version}}  # fmt: skip

    def write(
        self, obj: dict[str, Any], *, dry_run: bool = False, by: client.CustomObjectsApi | None = None
    ) -> str | None:
        """CREATE or UPDATE the CMA, or UPDATE a cluster's MCA (server-side dry run: admitted, not stored), as the
        approver or ``by``; None when admitted, else why not."""
        dry = "All" if dry_run else None
        api = by or self.approver
        try:
            if obj["kind"] == "ManagedClusterAddOn":
                where = _in(MCAS, obj["metadata"]["namespace"])
                api.replace_namespaced_custom_object(*where, self.name, obj, dry_run=dry)
            elif "resourceVersion" in obj["metadata"]:
                api.replace_cluster_custom_object(*CMAS, self.name, obj, dry_run=dry)
            else:
                api.create_cluster_custom_object(*CMAS, obj, dry_run=dry)
        except ApiException as error:
            return str(json.loads(error.body or "{}").get("message"))
        return None

    def own_configs(self, cluster: str, version: str) -> dict[str, Any]:
        """The cluster's MCA naming the template of ``version`` in its own ``spec.configs`` (not written)."""
        found = cast(dict[str, Any], self.api.get_namespaced_custom_object(*_in(MCAS, cluster), self.name))
        found["spec"]["configs"] = [_ref(f"{self.name}-{version}")]
        return found

    def move(self, placement: str, version: str, **annotations: str) -> dict[str, Any]:
        """The CMA with ``placement`` naming the template of ``version`` (not written)."""
        self.placements[placement] = f"{self.name}-{version}"
        return self.cma(annotations)

    def progress(self, cluster: str, version: str, *, render: bool = True) -> None:
        """The addon manager: the cluster's desired config is the template of ``version``, not applied yet."""
        status = self._mca_status(cluster)
        references = status.get("configReferences") or [{"group": ADDON_GROUP, "resource": "addontemplates"}]
        references[0]["name"] = f"{self.name}-{version}"  # the inline ConfigReferent, required, as desired
        references[0]["desiredConfig"] = {"name": f"{self.name}-{version}", "specHash": f"hash-{version}"}
        conditions = [_condition("Progressing", "True", "Progressing", "progressing... work is not ready")]
        self._mca_write(cluster, {"configReferences": references, "conditions": conditions})
        if render:  # the addon manager renders the new template into the cluster's work
            body = {"spec": {"workload": {"manifests": [self._manifest(version)]}}}
            self.api.patch_namespaced_custom_object(*_in(WORKS, cluster), self.work, body)

    def applied(self, cluster: str, version: str) -> None:
        """The addon manager, once every work is ready: ``lastAppliedConfig`` = desired, Progressing Completed."""
        status = self._mca_status(cluster)
        references = status["configReferences"]
        references[0]["lastAppliedConfig"] = dict(references[0]["desiredConfig"])
        assert references[0]["desiredConfig"]["name"] == f"{self.name}-{version}"
        conditions = [_condition("Progressing", "False", "Completed", "completed with no errors.")]
        self._mca_write(cluster, {"configReferences": references, "conditions": conditions})

    def failed(self, cluster: str, message: str) -> None:
        """The addon manager: the rollout to the cluster failed (Progressing False, reason Failed)."""
        conditions = [_condition("Progressing", "False", "Failed", message)]
        self._mca_write(cluster, {**self._mca_status(cluster), "conditions": conditions})

    def work_status(self, cluster: str, *, healthy: bool, reason: str = "", message: str = "") -> None:
        """The work agent: Applied and Available True at the work's generation, or Degraded with ``reason``."""
        work = cast(dict[str, Any], self.api.get_namespaced_custom_object(*_in(WORKS, cluster), self.work))
        generation = work["metadata"]["generation"]
        conditions = [
            _condition("Applied", "True", "AppliedManifestWorkComplete", "Apply manifest work complete", generation),
            _condition("Available", "True", "ResourcesAvailable", "All resources are available", generation),
        ]
        if not healthy:
            conditions.append(_condition("Degraded", "True", reason, message, generation))
        self.api.patch_namespaced_custom_object_status(
            *_in(WORKS, cluster), self.work, {"status": {"conditions": conditions}}
        )

    def progression(self, placement: str, *, desired: str, last_known_good: str) -> None:
        """The addon manager's install progression of ``placement`` (status of the CMA)."""
        reference = {"group": ADDON_GROUP, "resource": "addontemplates",
                     "desiredConfig": {"name": f"{self.name}-{desired}", "specHash": f"hash-{desired}"},
                     "lastAppliedConfig": {"name": f"{self.name}-{desired}", "specHash": f"hash-{desired}"},
                     "lastKnownGoodConfig": {"name": f"{self.name}-{last_known_good}",
                                             "specHash": f"hash-{last_known_good}"}}  # fmt: skip
        condition = _condition(
            "Progressing", "False", "Completed", "20/20 completed with no errors, 0 failed 0 timeout."
        )
        progression = {"namespace": HUB, "name": placement, "configReferences": [reference], "conditions": [condition]}
        self.api.patch_cluster_custom_object_status(
            *CMAS, self.name, {"status": {"installProgressions": [progression]}}
        )

    def _mca_status(self, cluster: str) -> dict[str, Any]:
        found = cast(dict[str, Any], self.api.get_namespaced_custom_object(*_in(MCAS, cluster), self.name))
        return dict(found.get("status") or {})

    def _mca_write(self, cluster: str, status: dict[str, Any]) -> None:
        self.api.patch_namespaced_custom_object_status(*_in(MCAS, cluster), self.name, {"status": status})

    def cleanup(self) -> None:
        for cluster in [CANARY, *FLEET]:
            for resource in (MCAS, WORKS):
                with contextlib.suppress(ApiException):
                    name = self.name if resource is MCAS else self.work
                    self.api.delete_namespaced_custom_object(*resource, cluster, name)
        with contextlib.suppress(ApiException):
            self.api.delete_cluster_custom_object(*CMAS, self.name)
        for version in ("v1", "v2"):
            with contextlib.suppress(ApiException):
                self.api.delete_cluster_custom_object(*TEMPLATES, f"{self.name}-{version}")


@contextlib.contextmanager
def installed(server: ApiServer, name: str, *, deadline: str = "None", version: str = "v1") -> Iterator[AddOn]:
    addon = AddOn(server, name, deadline=deadline, version=version)
    try:
        addon.install()
        yield addon
    finally:
        addon.cleanup()


def answered(
    addon: AddOn,
    obj: dict[str, Any],
    pattern: str,
    *,
    timeout: float = 20.0,
    by: client.CustomObjectsApi | None = None,
) -> None:
    """The write of ``obj`` (the CMA, or a cluster's MCA) as the approver (or ``by``) is answered ``pattern`` (a
    regular expression over the message; ``''``: admitted): probed with dry runs until the gate's caches have
    caught up, then written for real."""
    answers: list[str | None] = []

    def probe() -> bool:
        answers.append(addon.write(obj, dry_run=True, by=by))
        return re.fullmatch(pattern, answers[-1] or "") is not None

    try:
        wait_for(probe, f"the answer {pattern!r}", timeout=timeout)
    except AssertionError as error:
        raise AssertionError(f"{error}; last answer: {answers[-1]}") from None
    final = addon.write(obj, by=by)
    assert re.fullmatch(pattern, final or ""), final


def denial(text: str) -> str:
    return re.escape(GATE + PLACEMENTS + text)


def held(addon: AddOn, why: str, *, suffix: str = "", timeout: float = 20.0) -> None:
    """The fleet's move to v2 is denied while the canary gate is closed for ``why`` (text), then ``suffix`` (a
    regular expression)."""
    head = (
        f"add-on {addon.name} waits for the canary placement {HUB}/canary to run its target for {SOAK}s: placement "
        f"{HUB}/fleet may not move to configs {_rendered(addon.name + '-v2')}: "
    )
    answered(addon, addon.move("fleet", "v2"), denial(head + why) + suffix, timeout=timeout)


# --- the tests ----------------------------------------------------------------------------------------------------


def test_the_hub_prunes_the_install_version_fields_so_the_version_rules_see_nothing(hub, webhook):
    """Upstream's schemas do not declare ``spec.installVersion`` nor ``status.currentVersion`` / ``lastVersion``:
    the API server drops them before admission, so the installVersion policy, which refuses a version the add-on
    does not list, admits an unknown one here: it never sees it."""
    api = client.CustomObjectsApi(hub.client())
    mca = {"apiVersion": f"{ADDON_GROUP}/v1alpha1", "kind": "ManagedClusterAddOn",
           "metadata": {"name": "pruned", "namespace": CANARY},
           "spec": {"installNamespace": "default", "installVersion": "no-such-version"}}  # fmt: skip
    try:
        created = cast(dict[str, Any], api.create_namespaced_custom_object(*_in(MCAS, CANARY), mca))
        assert "installVersion" not in created["spec"]
        status = {"status": {"currentVersion": "v2", "lastVersion": "v1", "namespace": "default"}}
        patched = api.patch_namespaced_custom_object_status(*_in(MCAS, CANARY), "pruned", status)
        stored = cast(dict[str, Any], patched)["status"]
        assert (stored.get("namespace"), "currentVersion" in stored, "lastVersion" in stored) == (
            "default",
            False,
            False,
        )
    finally:
        api.delete_namespaced_custom_object(*_in(MCAS, CANARY), "pruned")


def test_a_template_upgrade_reaches_the_canary_first_and_the_fleet_after_the_soak(hub, webhook):
    with installed(hub, "hello-up", deadline="10m") as addon:
        v1, v2 = _rendered("hello-up-v1"), _rendered("hello-up-v2")
        held(addon, f"the canary placement {HUB}/canary names {v1}, not {v2}: move it first")
        addon.placements["fleet"] = "hello-up-v1"
        answered(addon, addon.move("canary", "v2"), "")  # the canary placement is never held

        addon.progress(CANARY, "v2")
        held(addon, f"canary {CANARY} does not run {v2} successfully (Progressing)")
        addon.work_status(CANARY, healthy=True)  # the agent applied the new work; the addon manager has not noticed
        addon.applied(CANARY, "v2")
        held(addon, f"canaries run {v2} successfully; the soak of {SOAK}s ends at ", suffix=r"\S+Z")
        answered(addon, addon.move("fleet", "v2"), "", timeout=SOAK + 20)


def test_a_failing_canary_holds_every_placement_and_says_which_cluster_and_why(hub, webhook):
    with installed(hub, "hello-bad", deadline="10m") as addon:
        answered(addon, addon.move("canary", "v2"), "")
        addon.progress(CANARY, "v2")
        degraded = f"canary {CANARY} failed: ManifestWork {addon.work} Degraded"
        addon.work_status(CANARY, healthy=False, reason="CrashLoopBackOff", message="hello-bad-agent restarts")
        held(addon, f"{degraded} (CrashLoopBackOff: hello-bad-agent restarts)")
        addon.work_status(CANARY, healthy=True)
        addon.failed(CANARY, "work is not ready")
        held(addon, f"canary {CANARY} failed: Progressing Failed: work is not ready")
        # a canary that completed and then turned unhealthy still holds (lastAppliedConfig does not move back)
        addon.applied(CANARY, "v2")
        addon.work_status(CANARY, healthy=False, reason="ProbeFailed", message="readiness probe failed")
        held(addon, f"{degraded} (ProbeFailed: readiness probe failed)")


def test_a_cluster_s_own_configs_wait_for_a_healthy_canary_too(hub, webhook):
    with installed(hub, "hello-own", deadline="10m") as addon:
        answered(addon, addon.move("canary", "v2"), "")
        addon.progress(CANARY, "v2")
        addon.work_status(CANARY, healthy=False, reason="ImagePullBackOff", message="hello:v2 not found")
        cluster, v2 = FLEET[4], _rendered("hello-own-v2")
        answered(addon, addon.own_configs(cluster, "v2"), re.escape(GATE + (
            "ValidatingAdmissionPolicy 'upgrade-gate-addon-install-version' with binding "
            f"'upgrade-gate-addon-install-version' denied request: add-on hello-own on cluster {cluster} may not "
            f"move to configs {v2} before the canary placement {HUB}/canary has run them for {SOAK}s: canary "
            f"{CANARY} failed: ManifestWork {addon.work} Degraded (ImagePullBackOff: hello:v2 not found)"
        )))  # fmt: skip
        addon.work_status(CANARY, healthy=True)
        addon.applied(CANARY, "v2")
        answered(addon, addon.own_configs(cluster, "v2"), "", timeout=SOAK + 20)


def test_a_canary_past_its_progress_deadline_has_timed_out(hub, webhook):
    with installed(hub, "hello-slow", deadline="2s") as addon:
        answered(addon, addon.move("canary", "v2"), "")
        addon.progress(CANARY, "v2")
        timed_out = re.escape(", past the progressDeadline 2s (Progressing)")
        held(addon, f"canary {CANARY} timed out: progressing since ", suffix=r"\S+Z" + timed_out, timeout=30)


def test_a_rollback_to_the_last_known_good_template_needs_its_acknowledgement(hub, webhook):
    with installed(hub, "hello-back", version="v2") as addon:  # upgraded from v1, which was good
        addon.progression("fleet", desired="v2", last_known_good="v1")
        v1 = _rendered("hello-back-v1")
        answered(addon, addon.move("fleet", "v1"), denial(
            f"rolling add-on hello-back back: placement {HUB}/fleet back to its last known good configs needs the "
            f'annotation upgrade-gate.io/acknowledge-rollback: "{v1}"'
        ))  # fmt: skip
        acknowledged = addon.move("fleet", "v1", **{"upgrade-gate.io/acknowledge-rollback": v1})
        answered(addon, acknowledged, "")  # a rollback does not wait for the canary


def test_a_canary_that_leaves_the_hub_mid_rollout_does_not_leave_the_gate_stuck(hub, webhook):
    objects = client.CustomObjectsApi(hub.client())
    with installed(hub, "hello-gone", deadline="10m") as addon:
        answered(addon, addon.move("canary", "v2"), "")
        addon.progress(CANARY, "v2")
        objects.delete_namespaced_custom_object(*_in(MCAS, CANARY), addon.name)  # the canary cluster is detached
        held(addon, f"the canary placement {HUB}/canary selects no cluster with this add-on")
        replacement = FLEET[0]
        try:
            _decide(objects, "canary", 0, [replacement])  # the placement controller picks another cluster
            _decide(objects, "fleet", 0, GROUPS[0][1:])
            addon.progress(replacement, "v2")
            addon.work_status(replacement, healthy=True)
            addon.applied(replacement, "v2")
            answered(addon, addon.move("fleet", "v2"), "", timeout=SOAK + 20)
        finally:
            _decide(objects, "canary", 0, [CANARY])
            _decide(objects, "fleet", 0, GROUPS[0])


def test_placements_that_cannot_roll_out_are_refused_with_what_to_fix(hub, webhook):
    with installed(hub, "hello-typo") as addon:
        answered(addon, addon.move("canary", "v3"), denial(
            f"add-on hello-typo: placement {HUB}/canary names AddOnTemplate hello-typo-v3, which does not exist"
        ))  # fmt: skip
        unknown = addon.move("canary", "v1")
        unknown["spec"]["installStrategy"]["placements"][0]["configs"] = [
            {"group": "example.com", "resource": "widgets", "name": "w"}
        ]
        answered(addon, unknown, denial(
            f"add-on hello-typo: placement {HUB}/canary names a config of an unknown kind example.com/widgets "
            f"(this add-on takes {ADDON_GROUP}/addontemplates)"
        ))  # fmt: skip
        both = addon.move("canary", "v1")
        both["spec"]["installStrategy"]["placements"].append(
            {"namespace": HUB, "name": "canary-again", "configs": [_ref("hello-typo-v2")]}
        )
        objects = client.CustomObjectsApi(hub.client())
        decision = _decision("canary-again", 0, "")
        objects.create_namespaced_custom_object(*_in(DECISIONS, HUB), decision)
        try:
            _decide(objects, "canary-again", 0, [CANARY])
            answered(addon, both, denial(
                f"add-on hello-typo: placements {HUB}/canary ({_rendered('hello-typo-v1')}) and {HUB}/canary-again "
                f"({_rendered('hello-typo-v2')}) both select {CANARY}, which run {HUB}/canary-again's template "
                "(the later placement wins): make the placements disjoint or name one template"
            ))  # fmt: skip
        finally:
            objects.delete_namespaced_custom_object(*_in(DECISIONS, HUB), decision["metadata"]["name"])


def test_an_add_on_upgrade_is_held_by_a_freeze_window(hub, webhook):
    frozen = webhook.settings(
        addonCanaryPlacement=f"{HUB}/canary", addonCanarySoak=f"{SOAK}s", freezeWindows="Mon-Sun 00:00-24:00"
    )
    with installed(hub, "hello-frozen") as addon, frozen:
        answered(addon, addon.move("canary", "v2"), denial(
            f"add-on hello-frozen: upgrading placement {HUB}/canary is held by the freeze window Mon-Sun "
            "00:00-24:00 (settings freezeWindows, UTC); rollbacks are not held"
        ))  # fmt: skip


def test_a_template_bump_by_a_writer_outside_the_approver_groups_is_denied(hub, webhook):
    """RBAC lets mallory write add-ons; the gate lets only an approver move one (as a revision approval), and
    leaves a write that moves nothing to anybody RBAC allows."""
    developer = client.CustomObjectsApi(hub.client(DEVELOPER, DEVELOPERS))
    with installed(hub, "hello-who") as addon:
        answered(addon, addon.move("canary", "v2"), denial(
            f'user "{DEVELOPER}" may not upgrade add-on hello-who on placement {HUB}/canary: approvers are members '
            "of [upgrade-approvers, platform-admins]"
        ), by=developer)  # fmt: skip
        answered(addon, addon.move("canary", "v2"), "")  # alice, in upgrade-approvers, may
        answered(addon, addon.cma({"example.com/owner": "team-apps"}), "", by=developer)  # moves nothing
