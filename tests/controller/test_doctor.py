"""The doctor's checks (``webhook.controller.doctor``) over objects shaped exactly as the real ones: the chart's
webhook configurations and CRD rendered by Helm, operator-controller's Deployment as OLM v1's manifests write it,
the bundled policy settings, upstream's older experimental ClusterExtensionRevision CRD.

The helpers here (``render_chart``, ``olm_deployment``, ``settings_config_map`` ...) also serve the CLI and the
integration tests of ``upgrade-gate doctor``."""

from __future__ import annotations

import copy
import functools
import json
from pathlib import Path
from typing import Any

import helm_python as helm
import pytest
import yaml

from webhook.controller.doctor import DoctorReads, Observed, Report, diagnose, examine
from webhook.controller.doctor.gatewebhooks import condition_users
from webhook.controller.doctor.model import BOXCUTTER, CHECKS, FAIL, HELM, OK, WARN
from webhook.controller.doctor.operatorcontroller import boxcutter_gate, find_operator_controllers

ROOT = Path(__file__).resolve().parents[2]
OLM_NAMESPACE = "olmv1-system"
OPENSHIFT_NAMESPACE = "openshift-operator-controller"
USER = f"system:serviceaccount:{OLM_NAMESPACE}:operator-controller-controller-manager"
OPENSHIFT_USER = f"system:serviceaccount:{OPENSHIFT_NAMESPACE}:operator-controller-controller-manager"
SERVICE = "upgrade-gate/gate-upgrade-gate-webhook:443"
OTHER_SERVICE = "upgrade-gate/other-upgrade-gate-webhook:443"
READY = {"status": 200, "body": '{"ready": true}'}

# operator-controller's Deployment in operator-framework/operator-controller's manifests/standard.yaml
# (commit 0198d4bce5e71b40a5d8a6454f0c9e7a8d97cac4, Apache License 2.0), as `kubectl apply` sends it; the chart
# helm/olmv1 adds one `--feature-gates=<gate>=true|false` argument per gate (helm/experimental.yaml enables
# BoxcutterRuntime). NAMESPACE replaces olmv1-system.
OLM_DEPLOYMENT = """
apiVersion: apps/v1
kind: Deployment
metadata:
  annotations:
    kubectl.kubernetes.io/default-logs-container: manager
    olm.operatorframework.io/feature-set: standard
  labels:
    app.kubernetes.io/name: operator-controller
    app.kubernetes.io/part-of: olm
  name: operator-controller-controller-manager
  namespace: NAMESPACE
spec:
  replicas: 1
  strategy:
    type: RollingUpdate
    rollingUpdate:
      maxSurge: 1
      maxUnavailable: 0
  selector:
    matchLabels:
      control-plane: operator-controller-controller-manager
  template:
    metadata:
      annotations:
        kubectl.kubernetes.io/default-container: manager
        olm.operatorframework.io/feature-set: standard
      labels:
        app.kubernetes.io/name: operator-controller
        control-plane: operator-controller-controller-manager
        app.kubernetes.io/part-of: olm
    spec:
      containers:
        - args:
            - --health-probe-bind-address=:8081
            - --metrics-bind-address=:8443
            - --leader-elect
            - --tls-cert=/var/certs/tls.crt
            - --tls-key=/var/certs/tls.key
            - --catalogd-cas-dir=/var/ca-certs
            - --pull-cas-dir=/var/ca-certs
          command:
            - /operator-controller
          image: "quay.io/operator-framework/operator-controller:devel"
          name: manager
          livenessProbe:
            httpGet:
              path: /healthz
              port: 8081
            initialDelaySeconds: 15
            periodSeconds: 20
          readinessProbe:
            httpGet:
              path: /readyz
              port: 8081
            initialDelaySeconds: 5
            periodSeconds: 10
          resources:
            requests:
              cpu: 10m
              memory: 64Mi
          volumeMounts:
            - mountPath: /var/cache
              name: cache
            - mountPath: /tmp
              name: tmp
            - mountPath: /var/certs
              name: operator-controller-certs
              readOnly: true
            - mountPath: /var/ca-certs
              name: ca-certs
              readOnly: true
          imagePullPolicy: IfNotPresent
          securityContext:
            allowPrivilegeEscalation: false
            capabilities:
              drop:
              - ALL
            readOnlyRootFilesystem: true
          terminationMessagePolicy: FallbackToLogsOnError
      serviceAccountName: operator-controller-controller-manager
      volumes:
        - emptyDir: {}
          name: cache
        - emptyDir: {}
          name: tmp
        - name: operator-controller-certs
          secret:
            items:
              - key: tls.crt
                path: tls.crt
              - key: tls.key
                path: tls.key
            optional: false
            secretName: operator-controller-cert
        - name: ca-certs
          secret:
            items:
              - key: ca.crt
                path: olm-ca.crt
            optional: false
            secretName: operator-controller-cert
      nodeSelector:
        kubernetes.io/os: linux
        node-role.kubernetes.io/control-plane: ""
      securityContext:
        runAsNonRoot: true
        seccompProfile:
          type: RuntimeDefault
      terminationGracePeriodSeconds: 10
      tolerations:
        - effect: NoSchedule
          key: node-role.kubernetes.io/control-plane
          operator: Exists
"""

# The experimental ClusterExtensionRevision CRD of an older OLM v1 (operator-framework/operator-controller,
# helm/olmv1/base/operator-controller/crd/experimental/olm.operatorframework.io_clusterextensionrevisions.yaml,
# commit 00e9b9fc2944207dd09c5bc7c730129851a4a10c; descriptions and status cut), as the API server serves it.
FOREIGN_CRD = """
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  annotations:
    controller-gen.kubebuilder.io/version: v0.19.0
    olm.operatorframework.io/generator: experimental
  name: clusterextensionrevisions.olm.operatorframework.io
spec:
  group: olm.operatorframework.io
  names:
    kind: ClusterExtensionRevision
    listKind: ClusterExtensionRevisionList
    plural: clusterextensionrevisions
    singular: clusterextensionrevision
  scope: Cluster
  versions:
  - name: v1
    served: true
    storage: true
    subresources:
      status: {}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          apiVersion: {type: string}
          kind: {type: string}
          metadata: {type: object}
          spec:
            type: object
            required: [revision]
            properties:
              lifecycleState:
                type: string
                default: Active
                enum: [Active, Paused, Archived]
              phases:
                type: array
                items:
                  type: object
                  required: [name, objects]
                  properties:
                    name: {type: string}
                    objects:
                      type: array
                      items:
                        type: object
                        required: [object]
                        properties:
                          collisionProtection: {type: string}
                          object:
                            type: object
                            x-kubernetes-embedded-resource: true
                            x-kubernetes-preserve-unknown-fields: true
              revision:
                type: integer
                format: int64
                minimum: 1
          status:
            type: object
            x-kubernetes-preserve-unknown-fields: true
"""


@functools.cache
def _render(values_json: str, name: str, namespace: str) -> tuple[dict[str, Any], ...]:
    with helm.Chart.load(ROOT / "charts" / "upgrade-gate") as chart:
        rendered = chart.render(json.loads(values_json), name=name, namespace=namespace, is_install=True)
    return tuple(
        doc
        for path, text in sorted(rendered.items())
        if path.endswith(".yaml")
        for doc in yaml.safe_load_all(text)
        if doc
    )


def render_chart(
    values: dict[str, Any] | None = None, *, name: str = "gate", namespace: str = "upgrade-gate"
) -> list[dict[str, Any]]:
    """The chart's objects rendered by Helm with ``values``, as tests/integration/conftest.py renders them."""
    return copy.deepcopy(list(_render(json.dumps(values or {}, sort_keys=True), name, namespace)))


def gate_values(**gate: Any) -> dict[str, Any]:
    """Chart values that set ``webhook.gate.*``."""
    return {"webhook": {"gate": gate}}


def webhook_configurations(values: dict[str, Any] | None = None, **options: str) -> list[dict[str, Any]]:
    """The chart's ValidatingWebhookConfigurations."""
    return [o for o in render_chart(values, **options) if o["kind"] == "ValidatingWebhookConfiguration"]


def chart_crd() -> dict[str, Any]:
    (crd,) = [o for o in render_chart() if o["kind"] == "CustomResourceDefinition"]
    return crd


def foreign_crd() -> dict[str, Any]:
    return dict(yaml.safe_load(FOREIGN_CRD))


def olm_deployment(
    namespace: str = OLM_NAMESPACE,
    *,
    name: str = "operator-controller-controller-manager",
    service_account: str | None = None,
    feature_gates: tuple[str, ...] = (),
) -> dict[str, Any]:
    """operator-controller's Deployment as OLM's manifests write it, in ``namespace``; ``feature_gates`` are
    appended as helm/olmv1 writes them (``--feature-gates=BoxcutterRuntime=true``)."""
    deployment = yaml.safe_load(OLM_DEPLOYMENT.replace("NAMESPACE", namespace))
    deployment["metadata"]["name"] = name
    pod = deployment["spec"]["template"]["spec"]
    pod["containers"][0]["args"] += [f"--feature-gates={gate}" for gate in feature_gates]
    if service_account is not None:
        pod["serviceAccountName"] = service_account
    return dict(deployment)


def olm_namespace(name: str = OLM_NAMESPACE) -> dict[str, Any]:
    """The Namespace of OLM's manifests as the API server serves it (with its name label)."""
    labels = {
        "app.kubernetes.io/name": "olmv1",
        "app.kubernetes.io/part-of": "olm",
        "kubernetes.io/metadata.name": name,
        "pod-security.kubernetes.io/enforce": "restricted",
    }
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels}}


def settings_config_map(users: str | None = USER, namespace: str = "upgrade-gate-system") -> dict[str, Any]:
    """The bundled policy settings (policies/settings.yaml) with ``operatorControllerUsers`` set to ``users``
    (``None``: the key removed)."""
    settings = yaml.safe_load((ROOT / "policies" / "settings.yaml").read_text())
    settings["metadata"]["namespace"] = namespace
    if users is None:
        settings["data"].pop("operatorControllerUsers")
    else:
        settings["data"]["operatorControllerUsers"] = users
    return dict(settings)


def object_set(name: str = "argocd", revision: int = 1) -> dict[str, Any]:
    """A ClusterObjectSet's metadata as a metadata-only list serves it (OLM's Boxcutter applier)."""
    labels = {"olm.operatorframework.io/owner-kind": "ClusterExtension", "olm.operatorframework.io/owner-name": name}
    return {
        "apiVersion": "olm.operatorframework.io/v1",
        "kind": "ClusterObjectSet",
        "metadata": {"name": f"{name}-{revision}", "labels": labels},
    }


def release_secret(namespace: str = OLM_NAMESPACE, name: str = "argocd", version: int = 1) -> dict[str, Any]:
    """A Helm release index Secret's metadata (helm-operator-plugins' chunked driver) as a metadata-only list
    serves it."""
    key = f"sh.helm.release.v1.{name}.v{version}"
    labels = {"name": name, "owner": "operator-controller", "status": "deployed", "type": "index", "key": key}
    return {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": key, "namespace": namespace, "labels": labels}}


def observed(**changes: Any) -> Observed:
    """The default layout: upstream OLM v1 in olmv1-system, the chart at its defaults, the bundled settings, the
    webhook answering; ``changes`` replace fields."""
    defaults: dict[str, Any] = {
        "deployments": [olm_deployment()],
        "object_sets": [],
        "namespaces": {OLM_NAMESPACE: olm_namespace()},
        "webhook_configurations": webhook_configurations(),
        "crd": chart_crd(),
        "settings": settings_config_map(),
        "probes": {SERVICE: READY},
    }
    return Observed(**{**defaults, **changes})


def results(report: Report) -> dict[str, str]:
    return {check.id: check.result for check in report.checks}


def check(report: Report, check_id: str):
    (found,) = [c for c in report.checks if c.id == check_id]
    return found


# --- the layouts of the brief --------------------------------------------------------------------------------------


def test_the_default_layout_is_all_ok():
    report = examine(observed())
    assert results(report) == dict.fromkeys(CHECKS, OK), [c for c in report.checks if c.result != OK]
    assert report.exit_code() == 0 and report.exit_code(strict=True) == 0
    assert report.to_dict()["facts"] == {
        "namespace": OLM_NAMESPACE,
        "user": USER,
        "applier": HELM,
        "operatorControllers": [
            {
                "namespace": OLM_NAMESPACE,
                "user": USER,
                "applier": HELM,
                "foundBy": "Deployment olmv1-system/operator-controller-controller-manager",
                "assumedUser": False,
            }
        ],
        "webhooks": [
            "gate-upgrade-gate/upgrades-boxcutter.upgrade-gate.dev",
            "gate-upgrade-gate/upgrades-helm.upgrade-gate.dev",
        ],
        "webhookServices": [SERVICE],
        "settings": "upgrade-gate-system/upgrade-gate-settings",
        "operatorControllerUsers": [USER],
    }
    assert check(report, "gate-webhooks").message == (
        "upgrades-helm.upgrade-gate.dev (gate-upgrade-gate) is sent every upgrade (release index Secret CREATE in "
        f"olmv1-system by {USER}); failurePolicy Fail"
    )


def test_operator_controller_on_openshift_with_the_chart_at_its_defaults_fails_naming_the_namespace_and_value():
    report = examine(
        observed(
            deployments=[olm_deployment(OPENSHIFT_NAMESPACE)],
            namespaces={OPENSHIFT_NAMESPACE: olm_namespace(OPENSHIFT_NAMESPACE)},
        )
    )
    gate = check(report, "gate-webhooks")
    assert gate.result == FAIL
    assert gate.message == (
        "upgrades-helm.upgrade-gate.dev (gate-upgrade-gate) sends only namespace olmv1-system and only writes by "
        f"{USER}, but operator-controller writes its releases in openshift-operator-controller as {OPENSHIFT_USER}: "
        "its upgrades go through unchecked"
    )
    assert gate.action == (
        "set webhook.gate.olmNamespace=openshift-operator-controller (webhook.gate.operatorControllerUsers, left "
        "empty, follows it), then upgrade the release"
    )
    settings = check(report, "settings")
    assert (
        settings.result == FAIL and OPENSHIFT_USER in settings.message and "operatorControllerUsers" in settings.action
    )
    assert check(report, "operator-controller").message == (
        f"operator-controller runs in openshift-operator-controller as {OPENSHIFT_USER} "
        "(Deployment openshift-operator-controller/operator-controller-controller-manager)"
    )
    assert report.exit_code() == 1


def test_the_chart_set_for_openshift_holds_its_upgrades():
    report = examine(
        observed(
            deployments=[olm_deployment(OPENSHIFT_NAMESPACE)],
            namespaces={OPENSHIFT_NAMESPACE: olm_namespace(OPENSHIFT_NAMESPACE)},
            webhook_configurations=webhook_configurations(gate_values(olmNamespace=OPENSHIFT_NAMESPACE)),
            settings=settings_config_map(OPENSHIFT_USER),
        )
    )
    assert results(report) == dict.fromkeys(CHECKS, OK)


def test_another_service_account_fails_naming_operator_controller_users():
    other = f"system:serviceaccount:{OLM_NAMESPACE}:olm-operator-controller"
    report = examine(observed(deployments=[olm_deployment(service_account="olm-operator-controller")]))
    gate, settings = check(report, "gate-webhooks"), check(report, "settings")
    assert gate.result == FAIL
    assert gate.message == (
        f"upgrades-helm.upgrade-gate.dev (gate-upgrade-gate) only writes by {USER}, but operator-controller writes "
        f"its releases in olmv1-system as {other}: its upgrades go through unchecked"
    )
    assert gate.action == f"add {other} to webhook.gate.operatorControllerUsers, then upgrade the release"
    assert settings.result == FAIL
    assert settings.action == (
        f"add {other} to operatorControllerUsers in ConfigMap upgrade-gate-system/upgrade-gate-settings "
        "(comma-separated)"
    )
    fixed = examine(
        observed(
            deployments=[olm_deployment(service_account="olm-operator-controller")],
            webhook_configurations=webhook_configurations(gate_values(operatorControllerUsers=[USER, other])),
            settings=settings_config_map(f"{USER}, {other}"),
        )
    )
    assert results(fixed) == dict.fromkeys(CHECKS, OK)


def test_a_foreign_clusterextensionrevision_crd_fails_naming_it():
    report = examine(observed(crd=foreign_crd()))
    crd = check(report, "revision-crd")
    assert crd.result == FAIL
    assert crd.message == (
        "CRD clusterextensionrevisions.olm.operatorframework.io is not upgrade-gate's (spec fields lifecycleState, "
        "phases, revision, no clusterExtensionRef/version, OLM generator experimental): an older OLM v1's "
        "experimental ClusterExtensionRevision (renamed ClusterObjectSet in v1.9.0); no upgrade can be approved"
    )
    assert "kubectl delete crd clusterextensionrevisions.olm.operatorframework.io" in crd.action
    assert report.exit_code() == 1


@pytest.mark.parametrize(
    ("crd", "result", "says"),
    [
        pytest.param(None, WARN, "is not installed", id="an absent CRD warns: nothing can be approved"),
        pytest.param("unlabelled", WARN, "not the chart's labels", id="the chart's schema without its labels warns"),
    ],
)
def test_the_crd_absent_or_not_the_charts_warns(crd, result, says):
    given = None
    if crd == "unlabelled":
        given = chart_crd()
        given["metadata"].pop("labels")
    found = check(examine(observed(crd=given)), "revision-crd")
    assert (found.result, says in found.message) == (result, True)


def test_no_operator_controller_warns_and_does_not_fail():
    report = examine(observed(deployments=[], namespaces={}))
    assert results(report) == {**dict.fromkeys(CHECKS, OK), "operator-controller": WARN, "applier": WARN}
    assert check(report, "operator-controller").message.startswith("no OLM v1 operator-controller found")
    assert report.exit_code() == 0 and report.exit_code(strict=True) == 1
    assert report.to_dict()["facts"]["namespace"] is None


def test_without_a_deployment_the_release_secrets_locate_it_and_the_user_is_assumed():
    found = find_operator_controllers([], [release_secret(OPENSHIFT_NAMESPACE)])
    assert [(oc.namespace, oc.user, oc.applier, oc.assumed_user) for oc in found] == [
        (OPENSHIFT_NAMESPACE, OPENSHIFT_USER, HELM, True)
    ]
    report = examine(observed(deployments=[], release_secrets=[release_secret()]))
    assert check(report, "operator-controller").result == WARN
    assert check(report, "gate-webhooks").result == OK


def test_two_operator_controllers_warn():
    second = olm_deployment(name="operator-controller-v2")
    report = examine(observed(deployments=[olm_deployment(), second]))
    assert results(report) == {**dict.fromkeys(CHECKS, OK), "one-operator-controller": WARN}
    assert check(report, "one-operator-controller").message.startswith("2 operator-controllers found: ")
    assert report.exit_code() == 0 and report.exit_code(strict=True) == 1


def test_two_operator_controllers_in_different_namespaces_each_must_be_held():
    report = examine(
        observed(
            deployments=[olm_deployment(), olm_deployment(OPENSHIFT_NAMESPACE)],
            namespaces={OLM_NAMESPACE: olm_namespace(), OPENSHIFT_NAMESPACE: olm_namespace(OPENSHIFT_NAMESPACE)},
        )
    )
    assert check(report, "one-operator-controller").result == WARN
    assert check(report, "gate-webhooks").result == FAIL
    assert "openshift-operator-controller" in check(report, "gate-webhooks").message


@pytest.mark.parametrize(
    ("deployment", "object_sets"),
    [
        pytest.param(olm_deployment(feature_gates=("BoxcutterRuntime=true",)), [], id="BoxcutterRuntime=true"),
        pytest.param(olm_deployment(), [object_set()], id="ClusterObjectSets owned by ClusterExtensions"),
    ],
)
def test_the_boxcutter_applier_without_the_boxcutter_webhook_fails_naming_appliers(deployment, object_sets):
    report = examine(
        observed(
            deployments=[deployment],
            object_sets=object_sets,
            webhook_configurations=webhook_configurations(gate_values(appliers=["helm"])),
        )
    )
    assert check(report, "applier").message.startswith(
        "Boxcutter: an upgrade starts with the CREATE of a ClusterObjectSet"
    )
    gate = check(report, "gate-webhooks")
    assert gate.result == FAIL
    assert gate.message == (
        "operator-controller in olmv1-system uses the Boxcutter applier (ClusterObjectSets), but no webhook "
        "upgrades-boxcutter.upgrade-gate.dev exists (only upgrades-helm.upgrade-gate.dev (gate-upgrade-gate)): "
        "its upgrades go through unchecked"
    )
    assert gate.action == "add boxcutter to webhook.gate.appliers and upgrade the release"
    assert report.to_dict()["facts"]["applier"] == BOXCUTTER
    with_both = examine(observed(deployments=[deployment], object_sets=object_sets))
    assert check(with_both, "gate-webhooks").result == OK


def test_the_boxcutter_webhook_follows_the_namespace_through_its_default_user():
    report = examine(
        observed(
            deployments=[olm_deployment(OPENSHIFT_NAMESPACE, feature_gates=("BoxcutterRuntime=true",))],
            namespaces={},
            webhook_configurations=webhook_configurations(gate_values(appliers=["boxcutter"])),
            settings=settings_config_map(OPENSHIFT_USER),
        )
    )
    gate = check(report, "gate-webhooks")
    assert gate.result == FAIL
    assert gate.message.startswith(f"upgrades-boxcutter.upgrade-gate.dev (gate-upgrade-gate) only writes by {USER}, ")
    assert gate.action.startswith("set webhook.gate.olmNamespace=openshift-operator-controller")


# --- details -------------------------------------------------------------------------------------------------------


def test_failure_policy_ignore_warns():
    configurations = webhook_configurations(gate_values(failurePolicy="Ignore"))
    gate = check(examine(observed(webhook_configurations=configurations)), "gate-webhooks")
    assert (gate.result, gate.action) == (WARN, "set webhook.gate.failurePolicy=Fail")


def test_a_namespace_selector_is_matched_on_the_namespaces_labels():
    configurations = webhook_configurations()
    for configuration in configurations:
        for hook in configuration["webhooks"]:
            if hook["name"] == "upgrades-helm.upgrade-gate.dev":
                hook["namespaceSelector"] = {"matchLabels": {"app.kubernetes.io/part-of": "olm"}}
    assert check(examine(observed(webhook_configurations=configurations)), "gate-webhooks").result == OK
    gate = check(examine(observed(webhook_configurations=configurations, namespaces={})), "gate-webhooks")
    assert gate.result == FAIL and "sends only namespaces matching app.kubernetes.io/part-of=olm" in gate.message


def test_a_match_condition_that_does_not_evaluate_warns():
    configurations = webhook_configurations()
    for configuration in configurations:
        for hook in configuration["webhooks"]:
            if hook["name"] == "upgrades-helm.upgrade-gate.dev":
                hook["matchConditions"][0]["expression"] = (
                    "authorizer.group('').resource('secrets').check('create').allowed()"
                )
    gate = check(examine(observed(webhook_configurations=configurations)), "gate-webhooks")
    assert gate.result == WARN and "match condition written-by-operator-controller" in gate.message


@pytest.mark.parametrize(
    ("probe", "says"),
    [
        pytest.param(
            {"status": 403, "body": 'services "gate-upgrade-gate-webhook" is forbidden: User "bob" cannot get '
             'resource "services/proxy" in API group "" in the namespace "upgrade-gate"'},
            "forbidden",
            id="a forbidden proxy says RBAC",
        ),
        pytest.param(
            {"status": 503, "body": 'no endpoints available for service "gate-upgrade-gate-webhook"'},
            "503 no endpoints available",
            id="no endpoint",
        ),
        pytest.param({"status": 0, "body": "connection refused"}, "connection refused", id="an unreachable API server"),
    ],
)  # fmt: skip
def test_a_webhook_that_does_not_answer_warns_with_the_reason(probe, says):
    ready = check(examine(observed(probes={SERVICE: probe})), "webhook-ready")
    assert ready.result == WARN and says in ready.message
    assert ("services/proxy" in ready.action) == (probe["status"] == 403)


def test_a_webhook_called_at_a_url_is_not_asked():
    configurations = webhook_configurations()
    for configuration in configurations:
        for hook in configuration["webhooks"]:
            hook["clientConfig"] = {"url": "https://gate.example.com/validate"}
    report = examine(observed(webhook_configurations=configurations, probes={}))
    ready = check(report, "webhook-ready")
    assert (ready.result, ready.action) == (WARN, "check https://gate.example.com/readyz from the API server's network")
    assert check(report, "gate-webhooks").result == OK
    other = webhook_configurations(name="other")
    both = examine(observed(webhook_configurations=[*configurations, *other], probes={OTHER_SERVICE: READY}))
    assert check(both, "webhook-ready").message == (
        "upgrades-helm.upgrade-gate.dev (gate-upgrade-gate) calls https://gate.example.com/validate: not asked "
        "(doctor asks Services only); GET /readyz of Service upgrade-gate/other-upgrade-gate-webhook through the API "
        "server's proxy: 200"
    )


def test_settings_absent_or_without_the_key():
    absent = check(examine(observed(settings=None)), "settings")
    assert (absent.result, absent.message) == (
        WARN,
        "ConfigMap upgrade-gate-system/upgrade-gate-settings not found: the webhook uses the settings of its policy "
        "directory (the chart's policies or the bundled policies/settings.yaml), which this check cannot read",
    )
    assert check(examine(observed(settings=settings_config_map(None))), "settings").result == OK
    openshift = examine(
        observed(
            deployments=[olm_deployment(OPENSHIFT_NAMESPACE)],
            webhook_configurations=webhook_configurations(gate_values(olmNamespace=OPENSHIFT_NAMESPACE)),
            settings=settings_config_map(None),
        )
    )
    assert check(openshift, "settings").message == (
        "ConfigMap upgrade-gate-system/upgrade-gate-settings has no operatorControllerUsers (the policy then holds "
        f"only {USER}), not operator-controller's user {OPENSHIFT_USER}: the policy admits its upgrades unchecked"
    )


@pytest.mark.parametrize(
    ("args", "value"),
    [
        pytest.param([], None, id="not set"),
        pytest.param(["--feature-gates=BoxcutterRuntime=true"], True, id="as helm/olmv1 writes it"),
        pytest.param(["--feature-gates=PreflightPermissions=true,BoxcutterRuntime=True"], True, id="a list"),
        pytest.param(["--feature-gates", "BoxcutterRuntime=1"], True, id="the value as the next argument"),
        pytest.param(["--feature-gates=BoxcutterRuntime=true", "--feature-gates=BoxcutterRuntime=false"], False,
                     id="the last value wins"),
        pytest.param(["--feature-gates=BoxcutterRuntime=maybe"], None, id="not a Go boolean"),
        pytest.param(["--feature-gates=HelmChartSupport=true"], None, id="another gate"),
    ],
)  # fmt: skip
def test_the_boxcutter_feature_gate_is_read_as_component_base_reads_it(args, value):
    deployment = olm_deployment()
    deployment["spec"]["template"]["spec"]["containers"][0]["args"] = args
    assert boxcutter_gate(deployment) is value


@pytest.mark.parametrize(
    ("expression", "users"),
    [
        pytest.param(f"request.userInfo.username in ['{USER}']", (USER,), id="the chart's, one user"),
        pytest.param("request.userInfo.username in ['a', \"b\", 'o\\'brien']", ("a", "b", "o'brien"),
                     id="several, both quotes, an escaped quote"),
        pytest.param("request.userInfo.username in []", (), id="nobody"),
        pytest.param("request.userInfo.username.startsWith('system:')", None, id="another expression"),
    ],
)  # fmt: skip
def test_the_users_of_the_charts_match_condition_are_read(expression, users):
    assert condition_users(expression) == users


def test_the_charts_escaping_of_a_user_is_read_back():
    odd = "system:serviceaccount:olm:it's"
    configurations = webhook_configurations(gate_values(operatorControllerUsers=[odd]))
    (helm_hook,) = [h for h in configurations[0]["webhooks"] if h["name"] == "upgrades-helm.upgrade-gate.dev"]
    assert condition_users(helm_hook["matchConditions"][0]["expression"]) == (odd,)


class FakeReads:
    """``DoctorReads`` over fixed objects, recording each read."""

    def __init__(self, state: Observed, *, secrets: list[dict[str, Any]] | None = None) -> None:
        self.state, self.secrets = state, secrets or []
        self.calls: list[tuple[str, str]] = []

    def deployments(self, *, label_selector="", field_selector=""):
        self.calls.append(("deployments", label_selector or field_selector))
        return list(self.state.deployments)

    def secret_metadata(self, label_selector):
        self.calls.append(("secrets", label_selector))
        return self.secrets

    def cluster_object_set_metadata(self, label_selector):
        self.calls.append(("clusterobjectsets", label_selector))
        return self.state.object_sets

    def validating_webhook_configurations(self):
        return list(self.state.webhook_configurations)

    def custom_resource_definition(self, name):
        return self.state.crd

    def config_map(self, namespace, name):
        self.calls.append(("configmap", f"{namespace}/{name}"))
        return self.state.settings

    def namespace(self, name):
        return self.state.namespaces.get(name)

    def service_proxy_get(self, namespace, service, port, path, *, scheme="https", timeout_s=5):
        self.calls.append(("proxy", f"{scheme}:{namespace}/{service}:{port}{path}"))
        return READY


def test_diagnose_reads_what_the_checks_need_and_no_secret_when_a_deployment_is_found():
    reads = FakeReads(observed())
    typed: DoctorReads = reads
    report = diagnose(typed, settings_namespace="elsewhere")
    assert results(report) == dict.fromkeys(CHECKS, OK)
    assert reads.calls == [
        ("deployments", "app.kubernetes.io/name=operator-controller"),
        ("deployments", "metadata.name=operator-controller-controller-manager"),
        ("clusterobjectsets", "olm.operatorframework.io/owner-kind=ClusterExtension"),
        ("proxy", "https:upgrade-gate/gate-upgrade-gate-webhook:443/readyz"),
        ("configmap", "elsewhere/upgrade-gate-settings"),
    ]
    without = FakeReads(observed(deployments=[]), secrets=[release_secret()])
    assert check(diagnose(without), "operator-controller").result == WARN
    assert ("secrets", "owner=operator-controller") in without.calls


@pytest.mark.parametrize(
    ("rules", "sent"),
    [
        pytest.param([{"operations": ["UPDATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["secrets"]}],
                     False, id="a rule for UPDATEs only misses the CREATE"),
        pytest.param([{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["secrets"],
                       "scope": "Cluster"}], False, id="a cluster-scoped rule misses a namespaced Secret"),
        pytest.param([{"operations": ["*"], "apiGroups": ["*"], "apiVersions": ["*"], "resources": ["*/*"]}],
                     True, id="wildcards send it"),
        pytest.param([{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["secrets/*"]}],
                     True, id="secrets/* covers the Secret too, as rules.Matcher splits it (sub * matches none)"),
    ],
)  # fmt: skip
def test_the_gate_webhooks_rules_are_matched_as_the_api_server_does(rules, sent):
    configurations = webhook_configurations()
    for configuration in configurations:
        for hook in configuration["webhooks"]:
            if hook["name"] == "upgrades-helm.upgrade-gate.dev":
                hook["rules"] = rules
    gate = check(examine(observed(webhook_configurations=configurations)), "gate-webhooks")
    assert (gate.result == OK) == sent, gate
    if not sent:
        assert "its rules do not send the CREATE of secrets" in gate.message
