"""The Helm chart, rendered by the real Helm SDK (helm-python-sdk binds Helm v4's Go SDK; no helm binary).

Every variant of ``tests/data/chart/variants.yaml`` is rendered, linted and validated against the Kubernetes
OpenAPI schemas bundled by ``kubernetes-validate`` (oldest supported and newest bundled Kubernetes). Then
concrete facts are asserted on the rendered objects: the webhook rules select exactly the governed kinds, the
CA bundle is the CA that signed the serving certificate, probes, hardening, RBAC verbs, Secret-only
credentials. ClusterExtensionRevisions of ``tests/data/chart/revisions.yaml`` are checked against the CRD's
schema and its CEL rules (evaluated with cel-python, as the API server would), and invalid values of
``tests/data/chart/bad_values.yaml`` must fail at render time with values.schema.json's message.
"""

from __future__ import annotations

import base64
import re
from collections import Counter
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import celpy
import helm_python as helm
import jsonschema
import kubernetes_validate  # type: ignore[import-untyped]
import pytest
import yaml
from celpy.adapter import json_to_cel
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.x509.oid import ExtendedKeyUsageOID
from prometheus_client.metrics import MetricWrapperBase

from webhook.controller.doctor import RESULTS as DOCTOR_RESULTS
from webhook.controller.health import Metrics as ControllerMetrics
from webhook.controller.status import FAILED, HELD, PENDING, PROGRESSING, SUCCEEDED
from webhook.io.kube.cache import policy_resources
from webhook.policy import evaluate
from webhook.policy.admitting.lookups import cluster_reads
from webhook.policy.loading.loader import load_policy_set
from webhook.serve.metrics import CONNECTION_STATES, ENDPOINTS
from webhook.serve.metrics import Metrics as WebhookMetrics

ROOT = Path(__file__).resolve().parent.parent
CHART = ROOT / "charts" / "upgrade-gate"
EXAMPLES = ROOT / "examples"
DATA = Path(__file__).resolve().parent / "data" / "chart"
RELEASE = "gate"
NAMESPACE = "upgrade-gate"
FULLNAME = "gate-upgrade-gate"
WEBHOOK = f"{FULLNAME}-webhook"
SYNC = f"{FULLNAME}-sync"
CONTROLLER = f"{FULLNAME}-controller"
TLS_SECRET = f"{WEBHOOK}-tls"
SERVICE_HOST = f"{WEBHOOK}.{NAMESPACE}.svc"
# The oldest Kubernetes the chart supports (Chart.yaml kubeVersion) and the newest kubernetes-validate bundles.
KUBE_VERSIONS = ("1.30", kubernetes_validate.utils.latest_version())
# Kinds from CRDs of other projects: kubernetes-validate has no schema for them; dedicated tests cover them.
THIRD_PARTY_KINDS = {
    ("cert-manager.io/v1", "Issuer"),
    ("cert-manager.io/v1", "Certificate"),
    ("monitoring.coreos.com/v1", "ServiceMonitor"),
    ("monitoring.coreos.com/v1", "PodMonitor"),
    ("monitoring.coreos.com/v1", "PrometheusRule"),
}
# The governed kinds (group, version, resource, scope) and the operations, per webhook.
OPERATIONS = ["CREATE", "UPDATE"]
VALIDATED = {
    ("olm.operatorframework.io", "v1", "clusterextensionrevisions", "Cluster"),
    ("olm.operatorframework.io", "v1", "clusterextensions", "Cluster"),
    ("addon.open-cluster-management.io", "v1alpha1", "managedclusteraddons", "Namespaced"),
    ("addon.open-cluster-management.io", "v1alpha1", "clustermanagementaddons", "Cluster"),
}
MUTATED = VALIDATED - {("addon.open-cluster-management.io", "v1alpha1", "clustermanagementaddons", "Cluster")}
READ = ["get", "list", "watch"]
# The image the default values name: the registry the project publishes to, tagged with the chart's appVersion (the
# Dockerfile's `docker build -t`, checked by tests/test_packaging.py).
DEFAULT_IMAGE = "ghcr.io/upgrade-gate/upgrade-gate:0.1.0"

Manifest = dict[str, Any]


def _load(name: str) -> list[dict[str, Any]]:
    cases: list[dict[str, Any]] = yaml.safe_load((DATA / name).read_text())
    return cases


VARIANTS = {case["id"]: case for case in _load("variants.yaml")}
BAD_VALUES = _load("bad_values.yaml")
REVISIONS = _load("revisions.yaml")


@pytest.fixture(scope="module")
def chart() -> Iterator[helm.Chart]:
    with helm.Chart.load(CHART) as loaded:
        yield loaded


def render(chart: helm.Chart, values: dict[str, Any] | None = None) -> list[Manifest]:
    """Render like `helm template gate charts/upgrade-gate -n upgrade-gate`; the objects, NOTES.txt left out."""
    rendered = chart.render(values or {}, name=RELEASE, namespace=NAMESPACE, is_install=True)
    objects: list[Manifest] = []
    for path, text in sorted(rendered.items()):
        if path.endswith("NOTES.txt"):
            continue
        objects.extend(doc for doc in yaml.safe_load_all(text) if doc)
    return objects


@pytest.fixture(scope="module")
def rendered(chart: helm.Chart) -> dict[str, list[Manifest]]:
    return {variant: render(chart, case["values"]) for variant, case in VARIANTS.items()}


def find(objects: list[Manifest], kind: str, name: str | None = None) -> Manifest:
    matches = [o for o in objects if o["kind"] == kind and (name is None or o["metadata"]["name"] == name)]
    assert len(matches) == 1, f"expected one {kind} {name or ''}, found {len(matches)}"
    return matches[0]


def container(pod_spec: Manifest) -> Manifest:
    (only,) = pod_spec["containers"]
    c: Manifest = only
    return c


def env_of(c: Manifest) -> dict[str, Any]:
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in c.get("env", [])}


# --- every variant: renders, lints clean, validates against Kubernetes OpenAPI -------------------------------


@pytest.mark.parametrize("variant", VARIANTS, ids=lambda v: f"{v} renders exactly the expected objects")
def test_variant_renders_exactly_the_expected_objects(rendered, variant):
    kinds = Counter(o["kind"] for o in rendered[variant])
    assert dict(kinds) == VARIANTS[variant]["kinds"]
    for o in rendered[variant]:
        labels = o["metadata"]["labels"]
        assert labels["app.kubernetes.io/instance"] == RELEASE
        assert labels["app.kubernetes.io/managed-by"] == "Helm"
        assert labels["helm.sh/chart"] == "upgrade-gate-0.1.0"


@pytest.mark.parametrize("variant", VARIANTS, ids=lambda v: f"{v} validates against Kubernetes OpenAPI")
@pytest.mark.parametrize("kube", KUBE_VERSIONS, ids=lambda k: f"Kubernetes {k}")
def test_variant_validates_against_kubernetes_openapi(rendered, variant, kube):
    for o in rendered[variant]:
        if (o["apiVersion"], o["kind"]) in THIRD_PARTY_KINDS:
            continue
        try:
            kubernetes_validate.validate(o, kube, strict=True)
        except kubernetes_validate.ValidationError as error:
            pytest.fail(f"{o['kind']}/{o['metadata']['name']} at {list(error.path)}: {error.message}")


def test_openapi_validation_is_not_vacuous(rendered):
    deployment = find(rendered["the default values (generated certificates, no sync loop)"], "Deployment", WEBHOOK)
    broken = yaml.safe_load(yaml.safe_dump(deployment))
    broken["spec"]["template"]["spec"]["containers"][0]["livenessprobe"] = {}
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(broken, KUBE_VERSIONS[0], strict=True)


@pytest.mark.parametrize("variant", VARIANTS, ids=lambda v: f"helm lint is clean for {v}")
def test_helm_lint_is_clean(variant):
    report = helm.lint(CHART, VARIANTS[variant]["values"], strict=True, namespace=NAMESPACE, kube_version="v1.30.0")
    # Severity 1 is INFO ("icon is recommended"); anything from WARNING up is a finding.
    findings = [m for m in report["messages"] if m["severity"] >= 2]
    assert findings == []
    assert report["errors"] == []


# --- bad input fails at render time with the schema's message ------------------------------------------------


@pytest.mark.parametrize("case", BAD_VALUES, ids=lambda c: f"rendering is refused for {c['id']}")
def test_invalid_values_fail_at_render_time_with_the_schema_message(chart, case):
    with pytest.raises(helm.HelmValuesError) as raised:
        chart.render(case["values"], name=RELEASE, namespace=NAMESPACE)
    assert "values don't meet the specifications of the schema" in str(raised.value)
    assert case["message"] in str(raised.value)


def test_the_default_values_pass_the_schema(chart):
    chart.validate_schema(chart.values)


# --- the webhook configurations --------------------------------------------------------------------------------


def governing(objects: list[Manifest], kind: str) -> Manifest:
    """The webhook of a configuration that governs the upgrade-gate kinds (the gate's webhooks aside)."""
    webhooks: list[Manifest] = find(objects, kind)["webhooks"]
    (webhook,) = [w for w in webhooks if not w["name"].startswith("upgrades-")]
    return webhook


def _rules(webhook: Manifest) -> set[tuple[str, str, str, str]]:
    selected: set[tuple[str, str, str, str]] = set()
    for rule in webhook["rules"]:
        assert rule["operations"] == OPERATIONS
        for group in rule["apiGroups"]:
            for version in rule["apiVersions"]:
                for resource in rule["resources"]:
                    assert "*" not in (group, version, resource)
                    selected.add((group, version, resource, rule["scope"]))
    return selected


@pytest.mark.parametrize("variant", VARIANTS, ids=lambda v: f"the webhooks govern exactly the kinds for {v}")
def test_webhook_rules_select_exactly_the_governed_kinds(rendered, variant):
    validating = governing(rendered[variant], "ValidatingWebhookConfiguration")
    (mutating,) = find(rendered[variant], "MutatingWebhookConfiguration")["webhooks"]
    assert _rules(validating) == VALIDATED
    assert _rules(mutating) == MUTATED


def test_webhooks_are_side_effect_free_v1_and_take_failure_policy_and_timeout_from_values(rendered):
    for variant, failure, timeout in [
        ("the default values (generated certificates, no sync loop)", "Fail", 10),
        ("generated certificates failing open with a short timeout and an extra exempt namespace", "Ignore", 5),
    ]:
        objects = rendered[variant]
        service = find(objects, "Service", WEBHOOK)
        for kind, path in [
            ("ValidatingWebhookConfiguration", "/validate"),
            ("MutatingWebhookConfiguration", "/mutate"),
        ]:
            webhook = governing(objects, kind)
            assert webhook["sideEffects"] == "None"
            assert webhook["admissionReviewVersions"] == ["v1"]
            assert webhook["failurePolicy"] == failure
            assert webhook["timeoutSeconds"] == timeout
            assert webhook["matchPolicy"] == "Equivalent"
            assert webhook["clientConfig"]["service"] == {
                "name": service["metadata"]["name"],
                "namespace": NAMESPACE,
                "path": path,
                "port": service["spec"]["ports"][0]["port"],
            }


def test_the_namespace_selector_exempts_kube_system_the_release_namespace_and_extra_namespaces(rendered):
    for variant, exempt in [
        ("the default values (generated certificates, no sync loop)", ["kube-system", NAMESPACE]),
        (
            "generated certificates failing open with a short timeout and an extra exempt namespace",
            ["kube-system", NAMESPACE, "open-cluster-management"],
        ),
    ]:
        for kind in ("ValidatingWebhookConfiguration", "MutatingWebhookConfiguration"):
            webhook = governing(rendered[variant], kind)
            assert webhook["namespaceSelector"] == {
                "matchExpressions": [{"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": exempt}]
            }


# --- the upgrade gate: only operator-controller's upgrade writes are sent -------------------------------------------

OPERATOR_CONTROLLER = "system:serviceaccount:olmv1-system:operator-controller-controller-manager"
OPERATORS_CONTROLLER = "system:serviceaccount:operators:operator-controller-controller-manager"
HELM_GATE, BOXCUTTER_GATE = "upgrades-helm.upgrade-gate.dev", "upgrades-boxcutter.upgrade-gate.dev"


def gate_webhooks(objects: list[Manifest]) -> dict[str, Manifest]:
    webhooks = find(objects, "ValidatingWebhookConfiguration")["webhooks"]
    return {w["name"]: w for w in webhooks if w["name"].startswith("upgrades-")}


def test_the_gate_sends_only_the_create_of_a_pending_upgrade_index_secret_or_a_cluster_object_set(rendered):
    gates = gate_webhooks(rendered["the default values (generated certificates, no sync loop)"])
    assert set(gates) == {HELM_GATE, BOXCUTTER_GATE}
    helm_gate, boxcutter_gate = gates[HELM_GATE], gates[BOXCUTTER_GATE]
    assert helm_gate["rules"] == [
        {
            "apiGroups": [""],
            "apiVersions": ["v1"],
            "operations": ["CREATE"],
            "resources": ["secrets"],
            "scope": "Namespaced",
        }
    ]
    assert helm_gate["namespaceSelector"] == {"matchLabels": {"kubernetes.io/metadata.name": "olmv1-system"}}
    assert helm_gate["objectSelector"] == {"matchLabels": {"owner": "operator-controller", "type": "index"}}
    assert boxcutter_gate["rules"] == [
        {
            "apiGroups": ["olm.operatorframework.io"],
            "apiVersions": ["v1"],
            "operations": ["CREATE"],
            "resources": ["clusterobjectsets"],
            "scope": "Cluster",
        }
    ]
    assert boxcutter_gate["objectSelector"] == {
        "matchLabels": {"olm.operatorframework.io/owner-kind": "ClusterExtension"}
    }
    for gate in (helm_gate, boxcutter_gate):
        assert gate["failurePolicy"] == "Fail"
        assert gate["sideEffects"] == "None"
        assert gate["clientConfig"]["service"]["path"] == "/validate"


def _admits(condition: Manifest, username: str, labels: dict[str, str]) -> bool:
    request = {"userInfo": {"username": username}}
    return evaluate(condition["expression"], {"request": request, "object": {"metadata": {"labels": labels}}}) is True


@pytest.mark.parametrize(
    ("username", "status", "sent"),
    [
        (OPERATOR_CONTROLLER, "pending-upgrade", True),
        (OPERATOR_CONTROLLER, "pending-install", False),
        (OPERATOR_CONTROLLER, "deployed", False),
        ("system:serviceaccount:argocd:argocd-application-controller", "pending-upgrade", False),
    ],
    ids=[
        "operator-controller's pending upgrade is sent to the gate",
        "a first install is not sent",
        "a release marked deployed is not sent",
        "another user's index-shaped Secret is not sent",
    ],
)
def test_the_helm_gate_match_conditions_select_operator_controllers_pending_upgrades(rendered, username, status, sent):
    gate = gate_webhooks(rendered["the default values (generated certificates, no sync loop)"])[HELM_GATE]
    labels = {"owner": "operator-controller", "type": "index", "status": status}
    assert all(_admits(condition, username, labels) for condition in gate["matchConditions"]) is sent


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        ({"appliers": ["helm"]}, {HELM_GATE: ("olmv1-system", [OPERATOR_CONTROLLER], "Fail")}),
        ({"appliers": ["boxcutter"]}, {BOXCUTTER_GATE: (None, [OPERATOR_CONTROLLER], "Fail")}),
        ({"enabled": False}, {}),
        (
            {"olmNamespace": "operators", "failurePolicy": "Ignore"},
            {
                HELM_GATE: (
                    "operators",
                    ["system:serviceaccount:operators:operator-controller-controller-manager"],
                    "Ignore",
                ),
                BOXCUTTER_GATE: (
                    None,
                    ["system:serviceaccount:operators:operator-controller-controller-manager"],
                    "Ignore",
                ),
            },
        ),
        (
            {"appliers": ["helm"], "operatorControllerUsers": ["olm-bot", "o'brien"]},
            {HELM_GATE: ("olmv1-system", ["olm-bot", "o'brien"], "Fail")},
        ),
    ],
    ids=[
        "only the Helm applier is governed",
        "only the Boxcutter applier is governed",
        "the gate can be turned off",
        "another OLM namespace names operator-controller's service account there",
        "explicit users are quoted as CEL strings",
    ],
)
def test_the_gate_follows_its_values(chart, values, expected):
    gates = gate_webhooks(render(chart, {"webhook": {"gate": values}}))
    assert set(gates) == set(expected)
    for name, (namespace, users, failure) in expected.items():
        gate = gates[name]
        if namespace is not None:
            assert gate["namespaceSelector"] == {"matchLabels": {"kubernetes.io/metadata.name": namespace}}
        assert gate["failurePolicy"] == failure
        (by_user, *_) = gate["matchConditions"]
        labels = {"status": "pending-upgrade"}
        assert [u for u in [*users, "someone-else"] if _admits(by_user, u, labels)] == users


def test_a_webhook_failing_open_leaves_the_gate_closed(rendered):
    objects = rendered["generated certificates failing open with a short timeout and an extra exempt namespace"]
    assert governing(objects, "ValidatingWebhookConfiguration")["failurePolicy"] == "Ignore"
    assert {gate["failurePolicy"] for gate in gate_webhooks(objects).values()} == {"Fail"}


# --- TLS: the CA bundle always matches the serving certificate ------------------------------------------------


def test_generated_ca_bundle_is_the_ca_that_signed_the_serving_certificate_in_every_resource(rendered):
    objects = rendered["the default values (generated certificates, no sync loop)"]
    secret = find(objects, "Secret", TLS_SECRET)
    assert secret["type"] == "kubernetes.io/tls"
    bundles = {
        kind: find(objects, kind)["webhooks"][0]["clientConfig"]["caBundle"]
        for kind in ("ValidatingWebhookConfiguration", "MutatingWebhookConfiguration")
    }
    assert set(bundles.values()) == {secret["data"]["ca.crt"]}

    ca = x509.load_pem_x509_certificate(base64.b64decode(secret["data"]["ca.crt"]))
    serving = x509.load_pem_x509_certificate(base64.b64decode(secret["data"]["tls.crt"]))
    key = serialization.load_pem_private_key(base64.b64decode(secret["data"]["tls.key"]), password=None)
    serving.verify_directly_issued_by(ca)
    assert ca.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    assert key.public_key().public_numbers() == serving.public_key().public_numbers()  # type: ignore[union-attr]
    names = serving.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert names.get_values_for_type(x509.DNSName) == [
        WEBHOOK,
        f"{WEBHOOK}.{NAMESPACE}",
        SERVICE_HOST,
        f"{SERVICE_HOST}.cluster.local",
    ]
    usage = serving.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert ExtendedKeyUsageOID.SERVER_AUTH in usage

    # The pods serve that very Secret.
    pod = find(objects, "Deployment", WEBHOOK)["spec"]["template"]["spec"]
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert volumes["tls"]["secret"]["secretName"] == TLS_SECRET
    args = container(pod)["args"]
    assert "--cert=/etc/upgrade-gate/tls/tls.crt" in args
    assert "--key=/etc/upgrade-gate/tls/tls.key" in args


def test_each_render_generates_a_fresh_ca_without_a_cluster_to_look_up(chart):
    first = find(render(chart), "Secret", TLS_SECRET)["data"]["ca.crt"]
    second = find(render(chart), "Secret", TLS_SECRET)["data"]["ca.crt"]
    assert first != second


@pytest.mark.parametrize(
    ("variant", "issuer"),
    [
        (
            "cert-manager issues the certificate from a chart-created CA",
            {"name": f"{WEBHOOK}-ca", "kind": "Issuer", "group": "cert-manager.io"},
        ),
        (
            "cert-manager issues the certificate from an existing ClusterIssuer",
            {"name": "corporate-ca", "kind": "ClusterIssuer", "group": "cert-manager.io"},
        ),
    ],
    ids=["cert-manager injects the CA of a chart-created CA", "cert-manager injects the CA of a ClusterIssuer"],
)
def test_cert_manager_issues_the_served_secret_and_injects_its_ca(rendered, variant, issuer):
    objects = rendered[variant]
    certificate = find(objects, "Certificate", WEBHOOK)
    assert certificate["spec"]["secretName"] == TLS_SECRET
    assert certificate["spec"]["issuerRef"] == issuer
    assert certificate["spec"]["dnsNames"] == [
        WEBHOOK,
        f"{WEBHOOK}.{NAMESPACE}",
        SERVICE_HOST,
        f"{SERVICE_HOST}.cluster.local",
    ]
    assert "server auth" in certificate["spec"]["usages"]
    assert not [o for o in objects if o["kind"] == "Secret"]
    for kind in ("ValidatingWebhookConfiguration", "MutatingWebhookConfiguration"):
        configuration = find(objects, kind)
        assert configuration["metadata"]["annotations"] == {"cert-manager.io/inject-ca-from": f"{NAMESPACE}/{WEBHOOK}"}
        assert "caBundle" not in configuration["webhooks"][0]["clientConfig"]
    pod = find(objects, "Deployment", WEBHOOK)["spec"]["template"]["spec"]
    assert {v["name"]: v for v in pod["volumes"]}["tls"]["secret"]["secretName"] == TLS_SECRET


def test_the_chart_created_ca_chain_roots_in_a_self_signed_issuer(rendered):
    objects = rendered["cert-manager issues the certificate from a chart-created CA"]
    selfsigned = find(objects, "Issuer", f"{WEBHOOK}-selfsigned")
    ca_certificate = find(objects, "Certificate", f"{WEBHOOK}-ca")
    ca_issuer = find(objects, "Issuer", f"{WEBHOOK}-ca")
    assert selfsigned["spec"] == {"selfSigned": {}}
    assert ca_certificate["spec"]["isCA"] is True
    assert ca_certificate["spec"]["issuerRef"]["name"] == selfsigned["metadata"]["name"]
    assert ca_issuer["spec"] == {"ca": {"secretName": ca_certificate["spec"]["secretName"]}}


# --- the webhook Deployment -------------------------------------------------------------------------------------


def test_the_webhook_deployment_is_highly_available_probed_and_hardened(rendered):
    objects = rendered["the default values (generated certificates, no sync loop)"]
    deployment = find(objects, "Deployment", WEBHOOK)
    pod = deployment["spec"]["template"]["spec"]
    c = container(pod)
    assert deployment["spec"]["replicas"] == 3
    assert deployment["spec"]["strategy"]["rollingUpdate"] == {"maxUnavailable": 0, "maxSurge": 1}
    assert c["image"] == DEFAULT_IMAGE
    assert c["args"][0] == "serve"
    assert "--policies=/app/policies" in c["args"]
    assert "--port=8443" in c["args"]
    assert "--cel-engine=cel-expr" in c["args"]
    assert not [a for a in c["args"] if a.startswith("--kubernetes-version")], "the newest supported by default"
    assert "--workers=2" in c["args"]  # two workers fit the memory limit, whatever the node's CPU count
    assert c["ports"] == [{"name": "https", "containerPort": 8443, "protocol": "TCP"}]
    assert c["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "https", "scheme": "HTTPS"}
    assert c["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "https", "scheme": "HTTPS"}
    assert c["resources"]["requests"] == {"cpu": "100m", "memory": "128Mi"}
    assert c["securityContext"]["runAsNonRoot"] is True
    assert c["securityContext"]["readOnlyRootFilesystem"] is True
    assert c["securityContext"]["allowPrivilegeEscalation"] is False
    assert c["securityContext"]["capabilities"] == {"drop": ["ALL"]}
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    assert {m["mountPath"] for m in c["volumeMounts"]} == {"/etc/upgrade-gate/tls", "/tmp"}

    selector = deployment["spec"]["selector"]["matchLabels"]
    assert selector.items() <= pod_labels(deployment).items()
    term = pod["affinity"]["podAntiAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"][0]
    assert term["podAffinityTerm"]["topologyKey"] == "kubernetes.io/hostname"
    assert term["podAffinityTerm"]["labelSelector"]["matchLabels"] == selector

    pdb = find(objects, "PodDisruptionBudget", WEBHOOK)
    assert pdb["spec"] == {"maxUnavailable": 1, "selector": {"matchLabels": selector}}
    service = find(objects, "Service", WEBHOOK)
    assert service["spec"]["selector"] == selector
    assert service["spec"]["ports"] == [{"name": "https", "port": 443, "targetPort": "https", "protocol": "TCP"}]


def pod_labels(workload: Manifest) -> dict[str, str]:
    labels: dict[str, str] = workload["spec"]["template"]["metadata"]["labels"]
    return labels


def test_hard_anti_affinity_and_an_image_from_a_registry(rendered):
    objects = rendered["generated certificates failing open with a short timeout and an extra exempt namespace"]
    pod = find(objects, "Deployment", WEBHOOK)["spec"]["template"]["spec"]
    (term,) = pod["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert term["topologyKey"] == "kubernetes.io/hostname"
    assert container(pod)["image"] == "registry.example.com/platform/upgrade-gate:0.1.0-rc1"


def test_policies_from_values_are_a_mounted_configmap(rendered):
    objects = rendered["policies overridden from values as a ConfigMap"]
    configmap = find(objects, "ConfigMap", f"{FULLNAME}-policies")
    policy = yaml.safe_load(configmap["data"]["deny-unapproved.yaml"])
    assert policy["kind"] == "ValidatingAdmissionPolicy"
    deployment = find(objects, "Deployment", WEBHOOK)
    pod = deployment["spec"]["template"]["spec"]
    c = container(pod)
    assert "--policies=/etc/upgrade-gate/policies" in c["args"]
    assert {"name": "policies", "configMap": {"name": f"{FULLNAME}-policies"}} in pod["volumes"]
    assert {"name": "policies", "mountPath": "/etc/upgrade-gate/policies", "readOnly": True} in c["volumeMounts"]
    assert re.fullmatch(r"[0-9a-f]{64}", deployment["spec"]["template"]["metadata"]["annotations"]["checksum/policies"])


# --- RBAC: least privilege ---------------------------------------------------------------------------------------


def _grants(rules: list[Manifest]) -> set[tuple[str, str, str]]:
    return {(g, r, v) for rule in rules for g in rule["apiGroups"] for r in rule["resources"] for v in rule["verbs"]}


def test_the_webhook_may_only_read_what_policies_look_up(rendered):
    objects = rendered["the default values (generated certificates, no sync loop)"]
    cluster_role = find(objects, "ClusterRole", WEBHOOK)
    expected = {
        (group, resource, verb)
        for group, resources in [
            ("olm.operatorframework.io", ["clusterextensionrevisions", "clusterextensions", "clustercatalogs"]),
            ("addon.open-cluster-management.io", ["managedclusteraddons", "clustermanagementaddons", "addontemplates"]),
            ("cluster.open-cluster-management.io", ["placements", "placementdecisions"]),
            ("work.open-cluster-management.io", ["manifestworks"]),
            ("", ["namespaces"]),
        ]
        for resource in resources
        for verb in READ
    }
    assert _grants(cluster_role["rules"]) == expected
    resources = policy_resources(cluster_reads(load_policy_set([ROOT / "policies"])), NAMESPACE)
    watched = {(r.api_version.rpartition("/")[0], r.plural) for r in resources if not r.namespace}
    assert watched <= {(group, resource) for group, resource, _ in expected}
    role = find(objects, "Role", WEBHOOK)
    assert role["metadata"]["namespace"] == NAMESPACE
    assert _grants(role["rules"]) == {("", "configmaps", verb) for verb in READ}
    assert {(r.api_version, r.plural) for r in resources if r.namespace} == {("v1", "configmaps")}
    for binding_kind, role_kind in [("ClusterRoleBinding", "ClusterRole"), ("RoleBinding", "Role")]:
        binding = find(objects, binding_kind, WEBHOOK)
        assert binding["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": role_kind, "name": WEBHOOK}
        assert binding["subjects"] == [{"kind": "ServiceAccount", "name": WEBHOOK, "namespace": NAMESPACE}]
    pod = find(objects, "Deployment", WEBHOOK)["spec"]["template"]["spec"]
    assert pod["serviceAccountName"] == WEBHOOK


def test_the_sync_loop_reads_extensions_catalogs_and_add_ons_and_holds_only_its_lease(rendered):
    objects = rendered["the sync loop as a Deployment with leader election and HTTPS credentials"]
    assert _grants(find(objects, "ClusterRole", SYNC)["rules"]) == {
        (group, resource, verb)
        for group, resources in [
            ("olm.operatorframework.io", ["clusterextensions", "clustercatalogs"]),
            ("addon.open-cluster-management.io", ["clustermanagementaddons", "managedclusteraddons"]),
            ("cluster.open-cluster-management.io", ["placementdecisions"]),
        ]
        for resource in resources
        for verb in READ
    }
    lease_role = find(objects, "Role", SYNC)
    assert lease_role["metadata"]["namespace"] == NAMESPACE
    assert lease_role["rules"] == [
        {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["create"]},
        {
            "apiGroups": ["coordination.k8s.io"],
            "resources": ["leases"],
            "resourceNames": [SYNC],
            "verbs": ["get", "update"],
        },
    ]
    c = container(find(objects, "Deployment", SYNC)["spec"]["template"]["spec"])
    assert env_of(c)["UPGRADE_GATE_LEASE_NAME"] == SYNC


# --- the controller -----------------------------------------------------------------------------------------------

# What the controller reads for the doctor's checks (no Secret: operator-controller is found by its Deployment).
DOCTOR_READS = {
    ("apps", "deployments", "list"),
    ("", "namespaces", "get"),
    ("olm.operatorframework.io", "clusterobjectsets", "list"),
    ("admissionregistration.k8s.io", "validatingwebhookconfigurations", "list"),
    ("apiextensions.k8s.io", "customresourcedefinitions", "get"),
    ("", "configmaps", "get"),
}


# What the controller reads and writes for the add-on installVersion lifecycle: the add-ons' status only, and Events
# about them in their namespaces (the Role in default covers cluster-scoped objects only).
ADDON_LIFECYCLE = {
    *(("addon.open-cluster-management.io", r, v) for r in ("managedclusteraddons", "clustermanagementaddons")
      for v in ("get", "list", "watch")),
    ("addon.open-cluster-management.io", "managedclusteraddons/status", "patch"),
    *(("work.open-cluster-management.io", "manifestworks", v) for v in ("get", "list", "watch")),
    ("events.k8s.io", "events", "create"),
    ("events.k8s.io", "events", "patch"),
}  # fmt: skip


CLUSTER_MODE = "the controller in cluster mode with catalogd's CA and no leader election, the webhook alone otherwise"


@pytest.mark.parametrize(
    ("variant", "writes"),
    [
        pytest.param("the default values (generated certificates, no sync loop)", set(),
                     id="in gitops mode the controller writes status and the retry annotation only"),
        pytest.param(CLUSTER_MODE, {"create", "patch", "delete"},
                     id="in cluster mode the controller also writes revisions and switches catalog images"),
    ],
)  # fmt: skip
def test_the_controller_writes_only_status_events_and_retries_unless_it_owns_the_revisions(rendered, variant, writes):
    objects = rendered[variant]
    kinds = ("clusterextensionrevisions", "clusterextensions", "clustercatalogs")
    read = {("olm.operatorframework.io", r, v) for r in kinds for v in READ}
    assert _grants(find(objects, "ClusterRole", CONTROLLER)["rules"]) == read | {
        ("olm.operatorframework.io", "clusterextensionrevisions/status", "patch"),
        ("olm.operatorframework.io", "clustercatalogs/status", "patch"),
        ("olm.operatorframework.io", "clusterextensions", "patch"),  # the retry annotation, once per approval
        *DOCTOR_READS,  # the doctor's checks, run by the leader
        *(("olm.operatorframework.io", "clusterextensionrevisions", verb) for verb in writes),
        *([("olm.operatorframework.io", "clustercatalogs", "patch")] if writes else []),
        *ADDON_LIFECYCLE,  # only where the hub's ManagedClusterAddOn CRD serves status.currentVersion
    }
    events = find(objects, "Role", f"{CONTROLLER}-events")
    assert events["metadata"]["namespace"] == "default", "Events about cluster-scoped objects live in default"
    assert _grants(events["rules"]) == {("events.k8s.io", "events", "create"), ("events.k8s.io", "events", "patch")}
    binding = find(objects, "RoleBinding", f"{CONTROLLER}-events")
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": CONTROLLER, "namespace": NAMESPACE}]
    rules = find(objects, "ClusterRole", CONTROLLER)["rules"]
    named = {tuple(r["resources"]): r.get("resourceNames") for r in rules if r.get("resourceNames")}
    assert named == {
        ("customresourcedefinitions",): [
            "clusterextensionrevisions.olm.operatorframework.io",
            "managedclusteraddons.addon.open-cluster-management.io",
        ],
        ("configmaps",): ["upgrade-gate-settings"],
    }, "the CRD and the settings by name only"
    probe = find(objects, "Role", f"{CONTROLLER}-probe")
    assert probe["metadata"]["namespace"] == NAMESPACE
    assert _grants(probe["rules"]) == {("", "services/proxy", "get")}


def test_the_controller_runs_two_replicas_with_a_lease_probes_and_a_pdb(rendered):
    objects = rendered["the default values (generated certificates, no sync loop)"]
    deployment = find(objects, "Deployment", CONTROLLER)
    assert deployment["spec"]["replicas"] == 2
    pod = deployment["spec"]["template"]["spec"]
    assert pod["serviceAccountName"] == CONTROLLER
    c = container(pod)
    assert c["args"] == ["controller"]
    env = env_of(c)
    assert (env["UPGRADE_GATE_CONTROLLER_MODE"], env["UPGRADE_GATE_LEADER_ELECTION"]) == ("gitops", "true")
    assert (env["UPGRADE_GATE_LEASE_NAME"], env["UPGRADE_GATE_HEALTH_PORT"]) == (CONTROLLER, "8081")
    assert env["POD_NAMESPACE"] == {"fieldRef": {"fieldPath": "metadata.namespace"}}
    assert (c["livenessProbe"]["httpGet"]["path"], c["readinessProbe"]["httpGet"]["path"]) == ("/healthz", "/readyz")
    assert c["securityContext"]["readOnlyRootFilesystem"] is True
    assert find(objects, "PodDisruptionBudget", CONTROLLER)["spec"]["maxUnavailable"] == 1
    lease = find(objects, "Role", CONTROLLER)
    assert lease["rules"][1] == {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"],
                                 "resourceNames": [CONTROLLER], "verbs": ["get", "update"]}  # fmt: skip


def test_the_controller_in_cluster_mode_verifies_catalogd_with_the_given_ca(rendered):
    pod = find(rendered[CLUSTER_MODE], "Deployment", CONTROLLER)["spec"]["template"]["spec"]
    c = container(pod)
    assert env_of(c)["UPGRADE_GATE_CONTROLLER_MODE"] == "cluster"
    assert env_of(c)["UPGRADE_GATE_CATALOGD_CA"] == "/etc/upgrade-gate/catalogd/ca.crt"
    volume = next(v for v in pod["volumes"] if v["name"] == "catalogd-ca")
    assert volume["secret"] == {"secretName": "olmv1-cert", "items": [{"key": "ca.crt", "path": "ca.crt"}]}
    assert not [o for o in rendered[CLUSTER_MODE] if o["kind"] == "Role" and o["metadata"]["name"] == CONTROLLER]


# --- the sync loop ------------------------------------------------------------------------------------------------


def test_the_sync_deployment_loops_with_leader_election_and_credentials_from_secrets(rendered):
    objects = rendered["the sync loop as a Deployment with leader election and HTTPS credentials"]
    deployment = find(objects, "Deployment", SYNC)
    assert deployment["spec"]["replicas"] == 2
    pod = deployment["spec"]["template"]["spec"]
    c = container(pod)
    assert c["args"] == ["sync", "--repo=https://git.example.com/platform/clusters.git", "--interval=10m"]
    env = env_of(c)
    assert env["UPGRADE_GATE_LEADER_ELECTION"] == "true"
    assert env["UPGRADE_GATE_GIT_USERNAME"] == {"secretKeyRef": {"name": "gitops-credentials", "key": "username"}}
    assert env["UPGRADE_GATE_GIT_PASSWORD"] == {"secretKeyRef": {"name": "gitops-credentials", "key": "password"}}
    assert env["UPGRADE_GATE_FORGE_TOKEN"] == {"secretKeyRef": {"name": "forge-token", "key": "token"}}
    assert c["securityContext"]["readOnlyRootFilesystem"] is True
    assert pod["serviceAccountName"] == SYNC


def test_the_sync_cronjob_runs_once_per_schedule_with_an_ssh_key_file(rendered):
    objects = rendered["the sync loop as a CronJob with an SSH key"]
    cronjob = find(objects, "CronJob", SYNC)
    assert cronjob["spec"]["schedule"] == "*/15 * * * *"
    assert cronjob["spec"]["concurrencyPolicy"] == "Forbid"
    pod = cronjob["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    assert pod["restartPolicy"] == "Never"
    c = container(pod)
    assert c["args"] == ["sync", "--repo=git@git.example.com:platform/clusters.git", "--once"]
    env = env_of(c)
    assert "UPGRADE_GATE_LEASE_NAME" not in env
    assert env["GIT_SSH_COMMAND"] == (
        "ssh -i /etc/upgrade-gate/git/ssh-privatekey -o IdentitiesOnly=yes"
        " -o UserKnownHostsFile=/etc/upgrade-gate/git/known_hosts -o StrictHostKeyChecking=yes"
    )
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert volumes["git-ssh"]["secret"] == {
        "secretName": "gitops-ssh",
        "defaultMode": 0o400,
        "items": [{"key": "identity", "path": "ssh-privatekey"}, {"key": "known_hosts", "path": "known_hosts"}],
    }
    assert not [o for o in objects if o["kind"] == "Role" and o["metadata"]["name"] == SYNC]


@pytest.mark.parametrize("variant", VARIANTS, ids=lambda v: f"no credential is rendered in clear for {v}")
def test_no_credential_is_rendered_in_clear(rendered, variant):
    for o in rendered[variant]:
        if o["kind"] not in {"Deployment", "CronJob"}:
            continue
        spec = o["spec"]["jobTemplate"]["spec"] if o["kind"] == "CronJob" else o["spec"]
        for name, value in env_of(container(spec["template"]["spec"])).items():
            if re.search(r"PASSWORD|TOKEN|USERNAME", name):
                assert set(value) == {"secretKeyRef"}, name


# --- NetworkPolicy and ServiceMonitor -----------------------------------------------------------------------------

NETWORK_POLICIES = "NetworkPolicies and monitors around the webhook, the controller and the sync loop"
ALERTS = "alerts and monitors, the scrapes admitted by the NetworkPolicies"
WEBHOOK_ALERTS_ONLY = "alerts on the webhook alone, without the controller"


def test_network_policies_admit_the_api_server_and_let_out_only_dns_api_and_git(rendered):
    objects = rendered[NETWORK_POLICIES]
    webhook_pods = pod_labels(find(objects, "Deployment", WEBHOOK))
    webhook = find(objects, "NetworkPolicy", WEBHOOK)["spec"]
    assert webhook["podSelector"]["matchLabels"].items() <= webhook_pods.items()
    assert webhook["ingress"] == [
        {"ports": [{"port": "https", "protocol": "TCP"}], "from": [{"ipBlock": {"cidr": "10.0.0.0/16"}}]}
    ]
    egress_ports = [{(p["port"], p["protocol"]) for p in rule["ports"]} for rule in webhook["egress"]]
    assert egress_ports == [{(53, "UDP"), (53, "TCP")}, {(443, "TCP"), (6443, "TCP")}]

    sync_pods = pod_labels(find(objects, "Deployment", SYNC))
    sync = find(objects, "NetworkPolicy", SYNC)["spec"]
    assert sync["podSelector"]["matchLabels"].items() <= sync_pods.items()
    assert sync["ingress"] == []
    egress_ports = [{(p["port"], p["protocol"]) for p in rule["ports"]} for rule in sync["egress"]]
    assert egress_ports == [{(53, "UDP"), (53, "TCP")}, {(443, "TCP"), (6443, "TCP")}, {(443, "TCP"), (22, "TCP")}]


def test_the_service_monitor_scrapes_metrics_over_https_verified_by_the_serving_ca(rendered):
    objects = rendered[NETWORK_POLICIES]
    monitor = find(objects, "ServiceMonitor", WEBHOOK)
    assert monitor["metadata"]["labels"]["release"] == "prometheus"
    assert monitor["spec"]["selector"]["matchLabels"] == find(objects, "Service", WEBHOOK)["spec"]["selector"]
    (endpoint,) = monitor["spec"]["endpoints"]
    assert endpoint["port"] == "https"
    assert endpoint["path"] == "/metrics"
    assert endpoint["scheme"] == "https"
    assert endpoint["tlsConfig"] == {
        "serverName": SERVICE_HOST,
        "ca": {"secret": {"name": TLS_SECRET, "key": "ca.crt"}},
    }


# --- monitoring: the controller's PodMonitor and the alerts ---------------------------------------------------------

# The parts of the Prometheus Operator's CRDs (monitoring.coreos.com/v1) the chart uses, strict: a misspelled or
# misplaced field fails here as it would under the API server's strict field validation with the real CRDs.
_DURATION = {
    "type": "string",
    "pattern": r"^(0|(([0-9]+)y)?(([0-9]+)w)?(([0-9]+)d)?(([0-9]+)h)?(([0-9]+)m)?(([0-9]+)s)?(([0-9]+)ms)?)$",
}
_STRING_MAP = {"type": "object", "additionalProperties": {"type": "string"}}
_METADATA = {"type": "object", "required": ["name", "namespace", "labels"], "properties": {"labels": _STRING_MAP}}


def _object(required: list[str], **properties: Any) -> dict[str, Any]:
    return {"type": "object", "required": required, "properties": properties, "additionalProperties": False}


_RELABELING = _object(
    ["action"],
    sourceLabels={"type": "array", "items": {"type": "string"}},
    separator={"type": "string"},
    targetLabel={"type": "string"},
    regex={"type": "string"},
    replacement={"type": "string"},
    action={"enum": ["replace", "keep", "drop", "hashmod", "labelmap", "labeldrop", "labelkeep"]},
)
POD_MONITOR_SCHEMA = _object(
    ["apiVersion", "kind", "metadata", "spec"],
    apiVersion={"const": "monitoring.coreos.com/v1"},
    kind={"const": "PodMonitor"},
    metadata=_METADATA,
    spec=_object(
        ["selector", "podMetricsEndpoints"],
        namespaceSelector=_object(
            [], any={"type": "boolean"}, matchNames={"type": "array", "items": {"type": "string"}}
        ),
        selector=_object(["matchLabels"], matchLabels=_STRING_MAP),
        podMetricsEndpoints={
            "type": "array",
            "minItems": 1,
            "items": _object(
                ["port"],
                port={"type": "string", "minLength": 1},
                path={"type": "string", "pattern": "^/"},
                scheme={"enum": ["http", "https"]},
                interval=_DURATION,
                scrapeTimeout=_DURATION,
                relabelings={"type": "array", "items": _RELABELING},
            ),
        },
    ),
)
PROMETHEUS_RULE_SCHEMA = _object(
    ["apiVersion", "kind", "metadata", "spec"],
    apiVersion={"const": "monitoring.coreos.com/v1"},
    kind={"const": "PrometheusRule"},
    metadata=_METADATA,
    spec=_object(
        ["groups"],
        groups={
            "type": "array",
            "minItems": 1,
            "items": _object(
                ["name", "rules"],
                name={"type": "string", "minLength": 1},
                rules={
                    "type": "array",
                    "minItems": 1,
                    "items": _object(
                        ["alert", "expr", "labels", "annotations"],
                        alert={"type": "string", "pattern": "^[A-Za-z_][A-Za-z0-9_]*$"},
                        expr={"type": "string", "minLength": 1},
                        labels=_STRING_MAP,
                        annotations=_object(
                            ["runbook_url", "summary", "description"],
                            runbook_url={"type": "string", "format": "uri", "pattern": "^https://[^#]+#[a-z]+$"},
                            summary={"type": "string", "minLength": 1},
                            description={"type": "string", "minLength": 1},
                        ),
                        **{"for": _DURATION},
                    ),
                },
            ),
        },
    ),
)

# Each alert: its expression with the selectors of the webhook's series written {W} and the controller's {C} (as in
# the chart README's table), its `for` and its severity.
ALERTS_EXPECTED = {
    "UpgradeGateWebhookDown": ("sum by (namespace, job) (up{W}) == 0 or absent(up{W})", "5m", "critical"),
    "UpgradeGateFailClosed": (
        "sum by (namespace, policy) (rate(upgrade_gate_fail_closed_total{W}[5m])) > 0", None, "warning"),
    "UpgradeGatePolicyLoadFailed": (
        "max by (namespace, pod) (upgrade_gate_policy_load_failed{W}) == 1", "10m", "warning"),
    "UpgradeGateWebhookErrors": (
        "sum by (namespace, endpoint) (rate(upgrade_gate_evaluation_errors_total{W}[5m])) > 0", "10m", "warning"),
    "UpgradeGateWebhookSlow": (
        "histogram_quantile(0.99, sum by (namespace, endpoint, le) "
        "(rate(upgrade_gate_admission_duration_seconds_bucket{W}[5m]))) > 1", "15m", "warning"),
    "UpgradeGateUnapprovedUpgrade": (
        "sum by (namespace) (increase(upgrade_gate_controller_unapproved_upgrades_total{C}[15m])) > 0", None,
        "critical"),
    "UpgradeGateUpgradeHeldLong": (
        'max by (namespace) ((upgrade_gate_controller_revisions{C, state="progressing"} or '
        'upgrade_gate_controller_revisions{C, state="held"}) and on (instance) '
        "(upgrade_gate_controller_leader{C} == 1)) > 0", "24h", "warning"),
    "UpgradeGateNotEnforced": (
        'max by (namespace, check) (upgrade_gate_controller_gate_check{C, result="fail"} and on (instance) '
        "(upgrade_gate_controller_leader{C} == 1)) == 1", "10m", "critical"),
    "UpgradeGateControllerNotLeading": (
        "sum by (namespace) (upgrade_gate_controller_leader{C}) == 0 or absent(upgrade_gate_controller_leader{C})",
        "10m", "warning"),
}  # fmt: skip
WEBHOOK_SELECTOR = f'job="{WEBHOOK}", namespace="{NAMESPACE}"'
CONTROLLER_SELECTOR = f'job="{CONTROLLER}", namespace="{NAMESPACE}"'
# Labels Prometheus adds to every series of a target (the Prometheus Operator's monitors), not the code.
TARGET_LABELS = {"job", "namespace", "pod", "instance", "container", "endpoint", "service"}
# PromQL's keywords, which are not series.
_PROMQL_WORDS = {"and", "or", "unless", "by", "without", "on", "ignoring", "group_left", "group_right", "bool"}


def _exported(metrics: object) -> dict[str, set[str]]:
    """The series a ``Metrics`` object of the code exposes on /metrics, each with its label names (a counter as
    ``<name>_total``, a histogram as its ``_bucket``, ``_sum`` and ``_count``)."""
    suffixes = {"counter": ["_total"], "gauge": [""], "histogram": ["_bucket", "_sum", "_count"]}
    series: dict[str, set[str]] = {}
    for collector in vars(metrics).values():
        if isinstance(collector, MetricWrapperBase):
            for suffix in suffixes[str(collector._type)]:
                series[collector._name + suffix] = set(collector._labelnames) | (
                    {"le"} if suffix == "_bucket" else set()
                )
    return series


WEBHOOK_SERIES = {**_exported(WebhookMetrics()), "up": set()}  # up: Prometheus' own series of each scrape
CONTROLLER_SERIES = _exported(ControllerMetrics())
# The values of upgrade_gate_controller_revisions' state label: the states of webhook.controller.status, and unknown
# for a revision without a status yet.
REVISION_STATES = {PENDING, PROGRESSING, HELD, SUCCEEDED, FAILED, "unknown"}
# The values each enumerated label takes, as the metrics' docstrings (webhook.serve.metrics,
# webhook.controller.health) give them.
LABEL_VALUES = {
    "state": REVISION_STATES | set(CONNECTION_STATES),
    "endpoint": set(ENDPOINTS),
    "decision": {"allowed", "denied", "refused", "invalid"},
    "result": {"ok", "retry"} | set(DOCTOR_RESULTS),
}


def promql_findings(
    expr: str, webhook: str = WEBHOOK, controller: str = CONTROLLER, namespace: str = NAMESPACE
) -> list[str]:
    """What in ``expr`` the code does not back: a series neither the webhook nor the controller exports, a selector
    without the job and namespace of the monitor that scrapes the series (``webhook``, ``controller``, ``namespace``:
    the values the selectors must name, e.g. a dashboard's variables), a label the series does not carry, a value
    of an enumerated label (revision state, decision, endpoint, result) the code never sets."""
    findings: list[str] = []
    selected: set[str] = set()
    series_labels: set[str] = set(TARGET_LABELS)
    for name, body in re.findall(r"\b([a-zA-Z_:][a-zA-Z0-9_:]*)\s*\{([^}]*)\}", expr):
        selected.add(name)
        exporter, job = (WEBHOOK_SERIES, webhook) if name in WEBHOOK_SERIES else (CONTROLLER_SERIES, controller)
        if name not in exporter:
            findings.append(f"{name}: not exported by the webhook or the controller")
            continue
        series_labels |= exporter[name]
        matchers = dict(re.findall(r'([a-zA-Z_][a-zA-Z0-9_]*)\s*=\s*"([^"]*)"', body))
        if (matchers.get("job"), matchers.get("namespace")) != (job, namespace):
            findings.append(f"{name}: not selected by job={job!r} and namespace={namespace!r}")
        for label, value in matchers.items():
            if label not in exporter[name] | TARGET_LABELS:
                findings.append(f"{name}: has no label {label}")
            elif label in LABEL_VALUES and value not in LABEL_VALUES[label]:
                findings.append(f"{name}: the code sets no {label} {value!r}")
    bare = re.sub(r'"[^"]*"|\{[^}]*\}|\[[^\]]*\]', " ", expr)
    for grouping in re.findall(r"\b(?:by|without|on|ignoring)\s*\(([^)]*)\)", bare):
        for label in (g.strip() for g in grouping.split(",")):
            if label not in series_labels:
                findings.append(f"grouping by {label}: no series of the expression has it")
    bare = re.sub(r"\b(?:by|without|on|ignoring)\s*\([^)]*\)", " ", bare)
    for word in re.findall(r"\b[a-zA-Z_:][a-zA-Z0-9_:]*\b(?!\s*\()", bare):
        if word not in _PROMQL_WORDS and word not in selected:
            findings.append(f"{word}: a series without a selector")
    if not selected:
        findings.append("no series")
    return findings


def _normalized(expr: str) -> str:
    text = re.sub(r"\s+", " ", expr).replace("( ", "(").replace(" )", ")")
    return text.replace(WEBHOOK_SELECTOR, "W").replace(CONTROLLER_SELECTOR, "C")


def alert_rules(objects: list[Manifest]) -> dict[str, Manifest]:
    rule = find(objects, "PrometheusRule", FULLNAME)
    return {r["alert"]: r for group in rule["spec"]["groups"] for r in group["rules"]}


def test_the_alerts_are_the_expected_ones(rendered):
    rule = find(rendered[ALERTS], "PrometheusRule", FULLNAME)
    jsonschema.validate(rule, PROMETHEUS_RULE_SCHEMA)
    assert rule["metadata"]["labels"]["release"] == "prometheus"
    assert [g["name"] for g in rule["spec"]["groups"]] == ["upgrade-gate.webhook", "upgrade-gate.controller"]
    rules = alert_rules(rendered[ALERTS])
    assert {name: (_normalized(r["expr"]), r.get("for"), r["labels"]["severity"]) for name, r in rules.items()} == (
        ALERTS_EXPECTED
    )
    for name, r in rules.items():
        assert r["labels"] == {"severity": ALERTS_EXPECTED[name][2], "team": "platform"}


@pytest.mark.parametrize("alert", ALERTS_EXPECTED, ids=lambda a: f"{a} selects only series the code exports")
def test_every_alert_selects_series_the_code_exports(rendered, alert):
    assert promql_findings(alert_rules(rendered[ALERTS])[alert]["expr"]) == []


def test_the_series_check_is_not_vacuous():
    assert promql_findings(f"rate(upgrade_gate_fail_closed{{{WEBHOOK_SELECTOR}}}[5m]) > 0") == [
        "upgrade_gate_fail_closed: not exported by the webhook or the controller"  # a counter is read as _total
    ]
    assert promql_findings(f'upgrade_gate_controller_revisions{{{CONTROLLER_SELECTOR}, state="Progressing"}}') == [
        "upgrade_gate_controller_revisions: the code sets no state 'Progressing'"
    ]
    assert promql_findings(f'upgrade_gate_admission_requests_total{{{WEBHOOK_SELECTOR}, decision="deny"}}') == [
        "upgrade_gate_admission_requests_total: the code sets no decision 'deny'"
    ]
    assert promql_findings(f"rate(upgrade_gate_admission_duration_seconds{{{WEBHOOK_SELECTOR}}}[5m])") == [
        "upgrade_gate_admission_duration_seconds: not exported by the webhook or the controller"  # a histogram
    ]
    assert promql_findings(f'upgrade_gate_controller_leader{{job="{WEBHOOK}", namespace="{NAMESPACE}"}} == 0') == [
        f"upgrade_gate_controller_leader: not selected by job={CONTROLLER!r} and namespace={NAMESPACE!r}"
    ]
    assert promql_findings(f"sum by (policy) (upgrade_gate_policy_load_failed{{{WEBHOOK_SELECTOR}}})") == [
        "grouping by policy: no series of the expression has it"
    ]
    assert promql_findings("absent(upgrade_gate_controller_leader)") == [
        "upgrade_gate_controller_leader: a series without a selector",
        "no series",
    ]


@pytest.mark.parametrize("alert", ALERTS_EXPECTED, ids=lambda a: f"{a} says what happened and what to check")
def test_every_alert_says_what_to_check(rendered, alert):
    rule = alert_rules(rendered[ALERTS])[alert]
    annotations = rule["annotations"]
    assert "kubectl" in annotations["description"]
    # Prometheus' templates survive Helm's, and name only labels the expression keeps.
    kept = set(re.findall(r"\bby \(([^)]*)\)", rule["expr"])[0].replace(" ", "").split(","))
    for text in annotations.values():
        assert "{{ ." not in text
        assert set(re.findall(r"\{\{ \$labels\.(\w+) \}\}", text)) <= kept


def test_the_chart_readme_lists_every_alert_with_its_expression():
    rows = [line.strip("|").split("|") for line in (CHART / "README.md").read_text().splitlines()]
    table = {
        cells[0].strip().strip("`"): (cells[1].strip().strip("`"), cells[2].strip() or None, cells[3].strip())
        for cells in rows
        if len(cells) == 4 and cells[0].strip().startswith("`UpgradeGate")
    }
    assert table == ALERTS_EXPECTED


RUNBOOKS = ROOT / "docs" / "alerts.md"
DASHBOARD_VARIANT = "the Grafana dashboard in a folder, the alerts with their thresholds and runbooks from values"


def github_anchor(heading: str) -> str:
    """The anchor GitHub gives a Markdown heading: lower case, punctuation but hyphens dropped, spaces as hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def runbook_sections() -> dict[str, str]:
    """The ``## `` sections of docs/alerts.md by their anchor, each with its text."""
    sections = re.split(r"^## (.+)$", RUNBOOKS.read_text(), flags=re.MULTILINE)[1:]
    return {github_anchor(heading): text for heading, text in zip(sections[::2], sections[1::2], strict=True)}


def test_every_alert_links_its_runbook_section_and_every_section_is_an_alert(chart, rendered):
    rules = alert_rules(rendered[ALERTS])
    base = chart.values["prometheusRule"]["runbookBaseURL"]
    assert base.endswith("/docs/alerts.md")
    assert {name: r["annotations"]["runbook_url"] for name, r in rules.items()} == {
        name: f"{base}#{github_anchor(name)}" for name in ALERTS_EXPECTED
    }
    assert set(runbook_sections()) == {github_anchor(name) for name in ALERTS_EXPECTED}


@pytest.mark.parametrize(
    "alert", ALERTS_EXPECTED, ids=lambda a: f"the runbook of {a} says what, how to check, how to fix"
)
def test_every_runbook_says_what_it_means_how_to_check_and_how_to_fix(alert):
    text = runbook_sections()[github_anchor(alert)]
    assert [part for part in ("**What it means.**", "**Check.**", "**Fix.**") if part not in text] == []
    assert "kubectl" in text or "upgrade-gate doctor" in text


def test_the_alert_thresholds_and_runbooks_follow_the_values(rendered):
    rules = alert_rules(rendered[DASHBOARD_VARIANT])
    assert rules["UpgradeGateUpgradeHeldLong"]["for"] == "3d"
    assert "3d" in rules["UpgradeGateUpgradeHeldLong"]["annotations"]["summary"]
    assert _normalized(rules["UpgradeGateWebhookSlow"]["expr"]).endswith(") > 0.5")
    assert rules["UpgradeGateNotEnforced"]["annotations"]["runbook_url"] == (
        "https://docs.example.com/upgrade-gate/alerts.html#upgradegatenotenforced"
    )


def test_without_the_controller_only_the_webhook_alerts_are_rendered(rendered):
    objects = rendered[WEBHOOK_ALERTS_ONLY]
    assert set(alert_rules(objects)) == {
        "UpgradeGateWebhookDown",
        "UpgradeGateFailClosed",
        "UpgradeGatePolicyLoadFailed",
        "UpgradeGateWebhookErrors",
        "UpgradeGateWebhookSlow",
    }
    assert not [o for o in objects if o["kind"] == "PodMonitor"]


def test_the_pod_monitor_scrapes_the_controllers_metrics_on_the_pod_ip(rendered):
    objects = rendered[ALERTS]
    monitor = find(objects, "PodMonitor", CONTROLLER)
    jsonschema.validate(monitor, POD_MONITOR_SCHEMA)
    assert monitor["metadata"]["labels"]["release"] == "prometheus"
    assert monitor["spec"]["namespaceSelector"] == {"matchNames": [NAMESPACE]}
    controller = find(objects, "Deployment", CONTROLLER)
    selector = monitor["spec"]["selector"]["matchLabels"]
    assert selector.items() <= pod_labels(controller).items()
    assert not selector.items() <= pod_labels(find(objects, "Deployment", WEBHOOK)).items()
    (endpoint,) = monitor["spec"]["podMetricsEndpoints"]
    c = container(controller["spec"]["template"]["spec"])
    (port,) = [p for p in c["ports"] if p["name"] == endpoint["port"]]
    assert port["containerPort"] == 8081 == int(env_of(c)["UPGRADE_GATE_HEALTH_PORT"])
    assert env_of(c)["UPGRADE_GATE_HEALTH_HOST"] == "0.0.0.0"  # the binary's default, 127.0.0.1, cannot be scraped
    assert (endpoint["path"], endpoint["scheme"]) == ("/metrics", "http")
    # The job label the controller's alerts select.
    assert endpoint["relabelings"] == [{"action": "replace", "targetLabel": "job", "replacement": CONTROLLER}]


def test_the_service_monitor_gives_the_webhook_series_the_job_the_alerts_select(rendered):
    objects = rendered[ALERTS]
    monitor = find(objects, "ServiceMonitor", WEBHOOK)
    service = find(objects, "Service", WEBHOOK)
    assert "jobLabel" not in monitor["spec"]  # so the job label is the Service's name
    assert service["metadata"]["name"] == WEBHOOK
    assert monitor["spec"]["selector"]["matchLabels"].items() <= service["metadata"]["labels"].items()


def test_the_network_policies_admit_the_scrapes(rendered):
    objects = rendered[ALERTS]
    https = [{"port": "https", "protocol": "TCP"}]
    assert find(objects, "NetworkPolicy", WEBHOOK)["spec"]["ingress"] == [
        {"ports": https, "from": [{"ipBlock": {"cidr": "10.0.0.0/16"}}]},
        {
            "ports": https,
            "from": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}}}],
        },
    ]
    (endpoint,) = find(objects, "ServiceMonitor", WEBHOOK)["spec"]["endpoints"]
    assert find(objects, "Service", WEBHOOK)["spec"]["ports"][0]["targetPort"] == endpoint["port"] == "https"
    # The controller's health port admits any source: the kubelet's probes and the PodMonitor's scrapes.
    assert find(objects, "NetworkPolicy", CONTROLLER)["spec"]["ingress"] == [
        {"ports": [{"port": 8081, "protocol": "TCP"}]}
    ]


# --- the ClusterExtensionRevision CRD -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def crd(rendered) -> Manifest:
    return find(rendered["the default values (generated certificates, no sync loop)"], "CustomResourceDefinition")


PLAIN_CRD = CHART / "files" / "crds" / "clusterextensionrevisions.yaml"


@pytest.mark.parametrize("keep", [True, False], ids=lambda k: f"the rendered CRD is the plain file (crds.keep {k})")
def test_the_rendered_crd_is_the_plain_file_with_the_release_labels(chart, keep):
    (rendered_crd,) = [o for o in render(chart, {"crds": {"keep": keep}}) if o["kind"] == "CustomResourceDefinition"]
    plain = yaml.safe_load(PLAIN_CRD.read_text())
    metadata = rendered_crd.pop("metadata")
    assert rendered_crd == {k: v for k, v in plain.items() if k != "metadata"}
    assert metadata["name"] == plain["metadata"]["name"]
    assert plain["metadata"]["labels"].items() <= metadata["labels"].items()
    assert metadata["labels"]["app.kubernetes.io/managed-by"] == "Helm"
    assert metadata.get("annotations") == ({"helm.sh/resource-policy": "keep"} if keep else None)


def test_the_crd_serves_cluster_scoped_v1_with_status_and_printer_columns(crd):
    assert crd["metadata"]["name"] == "clusterextensionrevisions.olm.operatorframework.io"
    assert crd["metadata"]["annotations"] == {"helm.sh/resource-policy": "keep"}
    assert crd["spec"]["scope"] == "Cluster"
    assert crd["spec"]["names"]["kind"] == "ClusterExtensionRevision"
    (version,) = crd["spec"]["versions"]
    assert (version["name"], version["served"], version["storage"]) == ("v1", True, True)
    assert version["subresources"] == {"status": {}}
    assert [(c["name"], c["type"], c["jsonPath"]) for c in version["additionalPrinterColumns"]] == [
        ("Extension", "string", ".spec.clusterExtensionRef.name"),
        ("From", "string", ".status.fromVersion"),
        ("To", "string", ".spec.version"),
        ("Approved", "boolean", ".spec.approved"),
        ("State", "string", ".status.state"),
        ("Message", "string", '.status.conditions[?(@.type=="Ready")].message'),
        ("Available Since", "date", ".spec.availableSince"),
        ("Age", "date", ".metadata.creationTimestamp"),
    ]
    schema = version["schema"]["openAPIV3Schema"]
    spec = schema["properties"]["spec"]["properties"]
    assert spec["approved"] == {
        "description": spec["approved"]["description"],
        "type": "boolean",
        "default": False,
    }
    assert set(spec) == {
        "clusterExtensionRef",
        "version",
        "bundleMetadata",
        "availableSince",
        "approved",
        "approvedBy",
        "approvedAt",
    }
    conditions = schema["properties"]["status"]["properties"]["conditions"]
    assert conditions["x-kubernetes-list-type"] == "map"
    assert conditions["x-kubernetes-list-map-keys"] == ["type"]
    assert conditions["items"]["required"] == ["type", "status", "lastTransitionTime", "reason", "message"]


_RFC3339 = re.compile(r"^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$")
_FORMATS = jsonschema.FormatChecker(formats=())


@_FORMATS.checks("date-time", raises=ValueError)
def _is_date_time(value: object) -> bool:
    if not isinstance(value, str):
        return True
    return bool(_RFC3339.match(value)) and bool(datetime.fromisoformat(value.upper().replace("Z", "+00:00")))


def _strict(schema: Any) -> Any:
    """The schema with unknown fields rejected, as `kubectl apply` does by default (fieldValidation=Strict)."""
    if isinstance(schema, dict):
        strict = {key: _strict(value) for key, value in schema.items()}
        if strict.get("type") == "object" and "properties" in strict:
            strict.setdefault("additionalProperties", False)
        if strict.get("type") == "object" and "properties" not in strict:
            strict.pop("additionalProperties", None)  # metadata: validated by the API server itself
        return strict
    if isinstance(schema, list):
        return [_strict(item) for item in schema]
    return schema


def _path(parts: list[Any]) -> str:
    text = ""
    for part in parts:
        text += f"[{part}]" if isinstance(part, int) else f".{part}"
    return text.lstrip(".") or "(root)"


def _cel_findings(schema: Manifest, value: Any, old: Any, parts: list[Any]) -> Iterator[str]:
    """Evaluate x-kubernetes-validations (self, oldSelf) and list-map keys, as the API server does."""
    for rule in schema.get("x-kubernetes-validations", []):
        if "oldSelf" in rule["rule"] and old is None:
            continue  # a transition rule runs only on update, when there is an old value
        env = celpy.Environment()
        program = env.program(env.compile(rule["rule"]))
        activation = {"self": json_to_cel(value)}
        if old is not None:
            activation["oldSelf"] = json_to_cel(old)
        if not bool(program.evaluate(activation)):
            yield f"{_path(parts)}: {rule['message']}"
    if isinstance(value, dict):
        for key, child in schema.get("properties", {}).items():
            if key in value:
                old_child = old.get(key) if isinstance(old, dict) else None
                yield from _cel_findings(child, value[key], old_child, [*parts, key])
    if isinstance(value, list) and "items" in schema:
        keys = schema.get("x-kubernetes-list-map-keys", [])
        seen: set[tuple[Any, ...]] = set()
        for index, item in enumerate(value):
            if schema.get("x-kubernetes-list-type") == "map":
                key = tuple(item.get(k) for k in keys)
                if key in seen:
                    pairs = ",".join(f"{k}={v}" for k, v in zip(keys, key, strict=True))
                    yield f"{_path([*parts, index])}: duplicate list-map key {pairs}"
                seen.add(key)
            yield from _cel_findings(schema["items"], item, None, [*parts, index])


def crd_findings(crd: Manifest, obj: Manifest, old: Manifest | None = None) -> list[str]:
    schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    validator = jsonschema.Draft7Validator(_strict(schema), format_checker=_FORMATS)
    findings = [f"{_path(list(e.absolute_path))}: {e.validator}" for e in validator.iter_errors(obj)]
    if findings:
        return sorted(findings)  # CEL rules run here only on a schema-valid object: one cause per case
    return sorted(_cel_findings(schema, obj, old, []))


@pytest.mark.parametrize("case", REVISIONS, ids=lambda c: c["id"])
def test_cluster_extension_revisions_against_the_crd(crd, case):
    assert crd_findings(crd, case["object"], case.get("old")) == case["errors"]


def test_every_cel_rule_of_the_crd_compiles(crd):
    def rules(schema: Any) -> Iterator[str]:
        if isinstance(schema, dict):
            for rule in schema.get("x-kubernetes-validations", []):
                yield rule["rule"]
            for value in schema.values():
                yield from rules(value)

    found = list(rules(crd["spec"]["versions"][0]["schema"]))
    assert len(found) == 3
    env = celpy.Environment()
    for rule in found:
        env.compile(rule)


# --- examples ----------------------------------------------------------------------------------------------


def _example_docs(path: Path) -> list[Manifest]:
    return [doc for doc in yaml.safe_load_all(path.read_text()) if doc]


def test_the_argo_cd_application_installs_the_chart_with_schema_valid_values(chart):
    (app,) = _example_docs(EXAMPLES / "argocd" / "application.yaml")
    assert (app["apiVersion"], app["kind"]) == ("argoproj.io/v1alpha1", "Application")
    source = app["spec"]["source"]
    assert source["path"] == "charts/upgrade-gate"
    chart.validate_schema(source["helm"]["valuesObject"])
    assert app["spec"]["destination"]["namespace"] == NAMESPACE
    objects = chart.render(source["helm"]["valuesObject"], name=source["helm"]["releaseName"], namespace=NAMESPACE)
    assert objects


def test_the_flux_helm_release_installs_the_chart_with_schema_valid_values(chart):
    docs = _example_docs(EXAMPLES / "flux" / "helmrelease.yaml")
    kinds = {(d["apiVersion"], d["kind"]): d for d in docs}
    repository = kinds[("source.toolkit.fluxcd.io/v1", "GitRepository")]
    release = kinds[("helm.toolkit.fluxcd.io/v2", "HelmRelease")]
    source = release["spec"]["chart"]["spec"]
    assert source["chart"] == "./charts/upgrade-gate"
    assert source["sourceRef"] == {"kind": "GitRepository", "name": repository["metadata"]["name"]}
    chart.validate_schema(release["spec"]["values"])


@pytest.mark.parametrize(
    "path",
    sorted((EXAMPLES / "gitops-repo").rglob("*.yaml")),
    ids=lambda p: f"the example repository's {p.relative_to(EXAMPLES / 'gitops-repo')} is well-formed",
)
def test_the_example_gitops_repository_manifests(crd, path):
    for doc in _example_docs(path):
        if path.name == "upgrade-gate.yaml":
            assert "kind" not in doc
            continue
        if doc["kind"] == "ClusterExtensionRevision":
            assert crd_findings(crd, doc) == []
            name, version = doc["spec"]["clusterExtensionRef"]["name"], doc["spec"]["version"]
            assert doc["metadata"]["name"] == f"{name}-{version}"
            assert doc["metadata"]["labels"]["clusterextension"] == name
        elif doc["apiVersion"] == "olm.operatorframework.io/v1":
            assert doc["kind"] in {"ClusterExtension", "ClusterCatalog"}
        else:
            kubernetes_validate.validate(doc, KUBE_VERSIONS[0], strict=True)


def _value_keys(values: dict[str, Any], prefix: str = "") -> Iterator[str]:
    for key, value in values.items():
        if isinstance(value, dict) and value and all(isinstance(v, dict) for v in value.values()):
            yield from _value_keys(value, f"{prefix}{key}.")
        else:
            yield f"{prefix}{key}"


def test_the_chart_readme_documents_every_value(chart):
    readme = (CHART / "README.md").read_text()
    undocumented = [key for key in _value_keys(chart.values) if f"`{key}" not in readme]
    assert undocumented == []


def test_the_clusters_kubernetes_version_reaches_the_webhook(chart):
    deployment = find(render(chart, {"webhook": {"kubernetesVersion": "1.34"}}), "Deployment", WEBHOOK)
    assert "--kubernetes-version=1.34" in container(deployment["spec"]["template"]["spec"])["args"]
