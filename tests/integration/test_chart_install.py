"""The chart's `lookup` checks, on a real kube-apiserver: ``helm install`` (the Helm SDK, as the CLI runs it) refuses
a foreign ClusterExtensionRevision CRD and an OLM namespace that does not match where operator-controller runs, and
installs and upgrades over its own CRD.

The API server is a throwaway one started by this module (not the session's, whose ClusterExtensionRevision CRD is
the chart's own and is shared with other tests): a foreign CRD of that name may only exist here.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import helm_python as helm
import pytest
import yaml
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from tests import apiserver as harness
from tests.apiserver import ApiServer, upstream_crds, wait_for
from tests.test_chart import CHART, NAMESPACE, RELEASE, render

CRD = "clusterextensionrevisions.olm.operatorframework.io"
OPERATOR_CONTROLLER = "operator-controller-controller-manager"

# Older OLM v1's experimental ClusterExtensionRevision (the Boxcutter applier's object, renamed ClusterObjectSet
# upstream), the shape of upstream's helm/olmv1/base/operator-controller/crd/experimental CRD (descriptions cut): the
# name, group and kind of the chart's CRD, another schema (revision, phases, lifecycleState; no clusterExtensionRef),
# labelled as OLM v1's manifests label their objects, applied with kubectl (no Helm ownership annotations).
FOREIGN_CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {
        "name": CRD,
        "labels": {"app.kubernetes.io/part-of": "olm"},
        "annotations": {
            "controller-gen.kubebuilder.io/version": "v0.19.0",
            "olm.operatorframework.io/generator": "experimental",
        },
    },
    "spec": {
        "group": "olm.operatorframework.io",
        "names": {
            "kind": "ClusterExtensionRevision",
            "listKind": "ClusterExtensionRevisionList",
            "plural": "clusterextensionrevisions",
            "singular": "clusterextensionrevision",
        },
        "scope": "Cluster",
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "subresources": {"status": {}},
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "properties": {
                            "spec": {
                                "type": "object",
                                "required": ["revision"],
                                "properties": {
                                    "lifecycleState": {
                                        "type": "string",
                                        "default": "Active",
                                        "enum": ["Active", "Paused", "Archived"],
                                    },
                                    "revision": {"type": "integer", "format": "int64", "minimum": 1},
                                    "phases": {
                                        "type": "array",
                                        "items": {
                                            "type": "object",
                                            "required": ["name", "objects"],
                                            "properties": {
                                                "name": {"type": "string"},
                                                "objects": {
                                                    "type": "array",
                                                    "items": {
                                                        "type": "object",
                                                        "required": ["object"],
                                                        "properties": {
                                                            "collisionProtection": {"type": "string"},
                                                            "object": {
                                                                "type": "object",
                                                                "x-kubernetes-embedded-resource": True,
                                                                "x-kubernetes-preserve-unknown-fields": True,
                                                            },
                                                        },
                                                    },
                                                },
                                            },
                                        },
                                    },
                                },
                            },
                            "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                        },
                    }
                },
            }
        ],
    },
}

REFUSAL = (
    "refusing to install over CustomResourceDefinition clusterextensionrevisions.olm.operatorframework.io, which is "
    "not upgrade-gate's: found kind ClusterExtensionRevision (versions v1), owned by {owner}, labels "
    "{{app.kubernetes.io/part-of: olm}}, spec fields [lifecycleState, phases, revision] without "
    "spec.clusterExtensionRef. This is the experimental ClusterExtensionRevision CRD of an older OLM v1 (upstream "
    "renamed it ClusterObjectSet in v1.9.0). Upgrade OLM v1 to v1.9.0 or later, or remove the older OLM's "
    "experimental CRDs, then delete this leftover CRD (kubectl delete crd "
    "clusterextensionrevisions.olm.operatorframework.io; this deletes its objects, so only once no OLM uses them) "
    "and install again."
)
NOT_HELM = "no Helm release (no meta.helm.sh/release-name annotation)"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ApiServer]:
    """A kube-apiserver 1.32 of this module's own."""
    with harness.running(tmp_path_factory.mktemp("kube-chart-install"), "1.32") as started:
        yield started


@pytest.fixture
def cluster(server: ApiServer) -> Iterator[helm.Config]:
    """Helm's configuration for the server; the releases, the CRD and the test's operator-controller Deployments are
    removed after (namespaces stay: nothing finalizes their deletion on this API server)."""
    with helm.Config(kubeconfig_path=server.kubeconfig, namespace=NAMESPACE) as config:
        try:
            yield config
        finally:
            for release in config.list(all_states=True):
                config.uninstall(release["name"], timeout=60)
            _delete_crd(server)
            apps = client.AppsV1Api(server.client())
            for namespace in ("olmv1-system", "openshift-operator-controller"):
                _ignore_missing(apps.delete_namespaced_deployment, OPERATOR_CONTROLLER, namespace)


def _ignore_missing(delete: Any, *args: str) -> None:
    try:
        delete(*args)
    except ApiException as error:
        if error.status != 404:
            raise


def _crd(server: ApiServer) -> dict[str, Any] | None:
    """The CRD of that name as JSON, or ``None``."""
    api = server.client()
    try:
        found = client.ApiextensionsV1Api(api).read_custom_resource_definition(CRD)
    except ApiException as error:
        if error.status == 404:
            return None
        raise
    crd: dict[str, Any] = api.sanitize_for_serialization(found)  # type: ignore[no-untyped-call]
    return crd


def _delete_crd(server: ApiServer) -> None:
    _ignore_missing(client.ApiextensionsV1Api(server.client()).delete_custom_resource_definition, CRD)
    wait_for(lambda: _crd(server) is None, f"CRD {CRD} deleted")


def _spec_fields(server: ApiServer) -> list[str]:
    crd = _crd(server)
    assert crd is not None
    return sorted(crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"])


def _install(cluster: helm.Config, values: dict[str, Any] | None = None, name: str = RELEASE) -> Any:
    with helm.Chart.load(CHART) as chart:
        return cluster.install(chart, name, values or {}, namespace=NAMESPACE, create_namespace=True, timeout=60)


def _render(cluster: helm.Config, values: dict[str, Any] | None = None, name: str = RELEASE) -> dict[str, str]:
    """Render as ``helm install --dry-run=server`` does: `lookup` reads the cluster; nothing is written."""
    with helm.Chart.load(CHART) as chart:
        return cluster.render(chart, values or {}, name=name, namespace=NAMESPACE, is_install=True)


def _operator_controller_in(server: ApiServer, namespace: str) -> None:
    labels = {"app.kubernetes.io/name": "operator-controller"}
    server.apply(
        [
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}},
            {
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "metadata": {"name": OPERATOR_CONTROLLER, "namespace": namespace},
                "spec": {
                    "selector": {"matchLabels": labels},
                    "template": {
                        "metadata": {"labels": labels},
                        "spec": {"containers": [{"name": "manager", "image": "quay.io/operator-framework/x:v1"}]},
                    },
                },
            },
        ]
    )


# --- a foreign ClusterExtensionRevision CRD -------------------------------------------------------------------


def test_the_foreign_crd_has_the_shape_of_upstreams_experimental_object() -> None:
    """FOREIGN_CRD's spec is the Boxcutter applier's: its fields are those of ClusterObjectSet, the renamed kind."""
    path = upstream_crds() / "olm.operatorframework.io_clusterobjectsets.yaml"
    if not path.is_file():
        pytest.skip(f"no upstream CRDs at {path.parent}")
    upstream = yaml.safe_load(path.read_text())
    spec = upstream["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
    ours = FOREIGN_CRD["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
    assert set(ours) <= set(spec)
    assert upstream["spec"]["group"] == FOREIGN_CRD["spec"]["group"]


def test_an_install_over_a_foreign_crd_fails_naming_it_and_writes_nothing(
    server: ApiServer, cluster: helm.Config
) -> None:
    server.install_crds([FOREIGN_CRD])
    with pytest.raises(helm.HelmReleaseError) as refused:
        _install(cluster)
    message = str(refused.value)
    assert message.startswith("execution error at (upgrade-gate/templates/crd-clusterextensionrevisions.yaml:")
    assert message.endswith("): " + REFUSAL.format(owner=NOT_HELM))
    # Nothing was written: no release, no webhook configuration, the foreign CRD as it was.
    assert cluster.list(all_states=True) == []
    webhooks = client.AdmissionregistrationV1Api(server.client()).list_validating_webhook_configuration()
    assert webhooks.items == []
    assert _spec_fields(server) == ["lifecycleState", "phases", "revision"]
    crd = _crd(server)
    assert crd is not None
    assert "meta.helm.sh/release-name" not in crd["metadata"].get("annotations", {})
    # `helm template` (no cluster) cannot look, and renders the chart's CRD as before.
    with helm.Chart.load(CHART) as chart:
        assert [o["metadata"]["name"] for o in render(chart) if o["kind"] == "CustomResourceDefinition"] == [CRD]


def test_a_foreign_crd_of_another_helm_release_is_refused_naming_that_release(
    server: ApiServer, cluster: helm.Config
) -> None:
    annotations = {"meta.helm.sh/release-name": "olm", "meta.helm.sh/release-namespace": "olmv1-system"}
    owned = {**FOREIGN_CRD, "metadata": {**FOREIGN_CRD["metadata"], "annotations": annotations}}
    server.install_crds([owned])
    with pytest.raises(helm.HelmRenderError) as refused:
        _render(cluster)
    assert str(refused.value).endswith("): " + REFUSAL.format(owner="Helm release olmv1-system/olm"))


def test_the_chart_readme_quotes_the_refusal() -> None:
    readme = " ".join((CHART / "README.md").read_text().split())
    assert REFUSAL.format(owner=NOT_HELM) in readme


# --- the chart's own CRD ----------------------------------------------------------------------------------------


def test_the_chart_installs_and_upgrades_over_its_own_crd(server: ApiServer, cluster: helm.Config) -> None:
    assert _crd(server) is None
    assert _install(cluster)["status"] == "deployed"
    crd = _crd(server)
    assert crd is not None
    assert crd["metadata"]["annotations"]["meta.helm.sh/release-name"] == RELEASE
    assert "clusterExtensionRef" in _spec_fields(server)
    with helm.Chart.load(CHART) as chart:
        upgraded = cluster.upgrade(chart, RELEASE, {"webhook": {"replicas": 2}}, namespace=NAMESPACE, timeout=60)
    assert (upgraded["revision"], upgraded["status"]) == (2, "deployed")
    # Another release (or a renderer that adds no Helm annotations, as Argo CD) finds the chart's own CRD: no refusal.
    assert any(path.endswith("crd-clusterextensionrevisions.yaml") for path in _render(cluster, name="other"))


# --- the OLM namespace ---------------------------------------------------------------------------------------------

WRONG_NAMESPACE = (
    "webhook.gate.olmNamespace is olmv1-system, but operator-controller runs in openshift-operator-controller "
    "(Deployment operator-controller-controller-manager found there, none in olmv1-system): the gate would never "
    "receive its upgrade writes and would fail OPEN silently. Set "
    "webhook.gate.olmNamespace=openshift-operator-controller (and the policy settings' operatorControllerUsers to "
    "system:serviceaccount:openshift-operator-controller:operator-controller-controller-manager), or set "
    "webhook.gate.checkOlmNamespace=false if that namespace is right."
)


def test_the_default_olm_namespace_is_refused_where_operator_controller_runs_as_on_openshift(
    server: ApiServer, cluster: helm.Config
) -> None:
    _operator_controller_in(server, "openshift-operator-controller")
    with pytest.raises(helm.HelmRenderError) as refused:
        _render(cluster)
    assert str(refused.value).endswith("): " + WRONG_NAMESPACE)
    openshift = {"webhook": {"gate": {"olmNamespace": "openshift-operator-controller"}}}
    gates = yaml.safe_load_all(_render(cluster, openshift)["upgrade-gate/templates/admission-webhooks.yaml"])
    (validating,) = [d for d in gates if d and d["kind"] == "ValidatingWebhookConfiguration"]
    helm_gate = next(w for w in validating["webhooks"] if w["name"] == "upgrades-helm.upgrade-gate.dev")
    assert helm_gate["namespaceSelector"] == {
        "matchLabels": {"kubernetes.io/metadata.name": "openshift-operator-controller"}
    }
    assert _render(cluster, {"webhook": {"gate": {"checkOlmNamespace": False}}})


def test_the_olm_namespace_passes_where_operator_controller_runs_in_it_or_nowhere(
    server: ApiServer, cluster: helm.Config
) -> None:
    assert _render(cluster)  # OLM v1 not installed (yet): nothing to compare with
    _operator_controller_in(server, "olmv1-system")
    _operator_controller_in(server, "openshift-operator-controller")
    assert _render(cluster)  # found in olmNamespace: the other one does not matter


def test_the_webhook_may_read_the_settings_where_the_bindings_name_them_once_that_namespace_exists(
    server: ApiServer, cluster: helm.Config
) -> None:
    """The bundled bindings read ``upgrade-gate-settings`` in ``upgrade-gate-system``; the release lives elsewhere.
    Where that namespace exists, the chart lets the webhook read ConfigMaps there (a Role beside the settings);
    where it does not, nothing is rendered into it and the settings beside the policies apply."""

    def settings_roles(values: dict[str, Any] | None = None) -> list[tuple[str, str]]:
        texts = [text for path, text in _render(cluster, values).items() if not path.endswith("NOTES.txt")]
        objects = [doc for text in texts for doc in yaml.safe_load_all(text) if doc]
        return [
            (o["kind"], o["metadata"]["namespace"])
            for o in objects
            if o["kind"] in ("Role", "RoleBinding") and o["metadata"]["name"].endswith("-webhook-settings")
        ]

    server.apply([{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-settings"}}])
    assert settings_roles({"policies": {"settingsNamespace": "absent-settings"}}) == []
    expected = [("Role", "team-settings"), ("RoleBinding", "team-settings")]
    assert settings_roles({"policies": {"settingsNamespace": "team-settings"}}) == expected
    assert settings_roles({"policies": {"settingsNamespace": NAMESPACE}}) == [], "the release's own Role covers it"
