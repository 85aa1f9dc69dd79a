"""The doctor's model: result and check ids, what OLM v1 writes and the chart installs, ``Check``,
``OperatorController``, ``Observed``, ``Report``, a webhook's ``ServiceRef`` and the ``DoctorReads`` protocol."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from webhook.objects import KubeObject

OK, WARN, FAIL = "ok", "warn", "fail"
RESULTS = (OK, WARN, FAIL)  # from best to worst
HELM, BOXCUTTER = "helm", "boxcutter"

# The check ids, in the order ``examine`` reports them.
OPERATOR_CONTROLLER = "operator-controller"
APPLIER = "applier"
GATE_WEBHOOKS = "gate-webhooks"
SETTINGS = "settings"
REVISION_CRD = "revision-crd"
WEBHOOK_READY = "webhook-ready"
ONE_OPERATOR_CONTROLLER = "one-operator-controller"
CHECKS = (OPERATOR_CONTROLLER, APPLIER, GATE_WEBHOOKS, SETTINGS, REVISION_CRD, WEBHOOK_READY, ONE_OPERATOR_CONTROLLER)

# What OLM v1 (operator-framework/operator-controller, helm/olmv1 and its appliers) writes.
OPERATOR_CONTROLLER_LABEL = "app.kubernetes.io/name=operator-controller"
OPERATOR_CONTROLLER_DEPLOYMENT = "operator-controller-controller-manager"  # also its ServiceAccount's name
RELEASE_SECRET_LABEL = "owner=operator-controller"
OBJECT_SET_LABEL = "olm.operatorframework.io/owner-kind=ClusterExtension"
OBJECT_DATA_LABEL = "olm.operatorframework.io/revision-name"  # the Secrets a ClusterObjectSet refers to
BOXCUTTER_GATE = "BoxcutterRuntime"

# What the chart installs (charts/upgrade-gate: templates/admission-webhooks.yaml, crd-clusterextensionrevisions.yaml).
WEBHOOK_NAMES = {HELM: "upgrades-helm.upgrade-gate.dev", BOXCUTTER: "upgrades-boxcutter.upgrade-gate.dev"}
REVISION_CRD_NAME = "clusterextensionrevisions.olm.operatorframework.io"
SETTINGS_NAME = "upgrade-gate-settings"
DEFAULT_SETTINGS_NAMESPACE = "upgrade-gate-system"
USERS_KEY = "operatorControllerUsers"
READYZ = "/readyz"
_SERVICE_ACCOUNT = "system:serviceaccount:{namespace}:{name}"


def service_account_user(namespace: str, name: str = OPERATOR_CONTROLLER_DEPLOYMENT) -> str:
    """The user name the API server gives a ServiceAccount's token: ``system:serviceaccount:NS:NAME``."""
    return _SERVICE_ACCOUNT.format(namespace=namespace, name=name)


@dataclass(frozen=True)
class Check:
    """One check's outcome: ``result`` is ``ok``, ``warn`` or ``fail``; ``action`` says what to do (empty when
    nothing is to be done)."""

    id: str
    result: str
    message: str
    action: str = ""

    def to_dict(self) -> dict[str, str]:
        """``{"id", "result", "message", "action"}``."""
        return {"id": self.id, "result": self.result, "message": self.message, "action": self.action}


@dataclass(frozen=True)
class OperatorController:
    """An operator-controller found in the cluster: where it writes its Helm releases, as whom, with which
    applier, and how each was found (``found_by``, ``applier_by``: phrases for messages). ``assumed_user``: no
    Deployment was found, so the user is upstream's ServiceAccount in ``namespace``."""

    namespace: str
    user: str
    applier: str
    found_by: str
    applier_by: str
    assumed_user: bool = False

    def to_dict(self) -> dict[str, Any]:
        """``{"namespace", "user", "applier", "foundBy", "assumedUser"}``."""
        return {
            "namespace": self.namespace,
            "user": self.user,
            "applier": self.applier,
            "foundBy": self.found_by,
            "assumedUser": self.assumed_user,
        }


@dataclass(frozen=True)
class Observed:
    """What the doctor read from the cluster, as the API serves it (plain JSON dicts).

    ``deployments``: the candidate operator-controller Deployments (``apps/v1``, any namespace);
    ``release_secrets``: metadata of the Secrets labelled ``owner=operator-controller`` (read only when no
    Deployment was found); ``object_sets``: metadata of the ClusterObjectSets labelled
    ``olm.operatorframework.io/owner-kind=ClusterExtension`` (``None``: the kind is not served);
    ``object_set_secrets``: metadata of the Secrets ClusterObjectSets refer to (read only when nothing else
    located operator-controller); ``namespaces``: the Namespace objects of operator-controller's namespaces, by
    name; ``webhook_configurations``: every ValidatingWebhookConfiguration; ``crd``: the CRD
    ``clusterextensionrevisions.olm.operatorframework.io`` or ``None``; ``settings``: the ConfigMap
    ``upgrade-gate-settings`` of ``settings_namespace`` or ``None``; ``probes``: ``{ServiceRef.key: {"status":
    int, "body": str}}``, the answers to GET ``/readyz`` through the API server's service proxy (status 0: the API
    server could not be reached, ``body`` says why).
    """

    deployments: Sequence[KubeObject] = ()
    release_secrets: Sequence[KubeObject] = ()
    object_sets: Sequence[KubeObject] | None = None
    object_set_secrets: Sequence[KubeObject] = ()
    namespaces: Mapping[str, KubeObject] = field(default_factory=dict)
    webhook_configurations: Sequence[KubeObject] = ()
    crd: KubeObject | None = None
    settings: KubeObject | None = None
    settings_namespace: str = DEFAULT_SETTINGS_NAMESPACE
    probes: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)


@dataclass(frozen=True)
class Report:
    """Every check, in ``CHECKS`` order, and the facts found (``to_dict``)."""

    checks: tuple[Check, ...]
    facts: Mapping[str, Any]

    @property
    def result(self) -> str:
        """The worst result: ``fail`` if any check fails, else ``warn`` if any warns, else ``ok``."""
        return max((c.result for c in self.checks), key=RESULTS.index, default=OK)

    def count(self, result: str) -> int:
        """How many checks have ``result``."""
        return sum(1 for check in self.checks if check.result == result)

    def exit_code(self, *, strict: bool = False) -> int:
        """0 when every check is ok (or only warns, unless ``strict``), 1 otherwise."""
        return 1 if self.result == FAIL or (strict and self.result == WARN) else 0

    def to_dict(self) -> dict[str, Any]:
        """``{"result", "checks": [Check.to_dict()], "facts"}``: the document ``upgrade-gate doctor -o json``
        prints."""
        return {"result": self.result, "checks": [c.to_dict() for c in self.checks], "facts": dict(self.facts)}


@dataclass(frozen=True, order=True)
class ServiceRef:
    """A webhook's Service, as its ``clientConfig.service`` names it (``port`` defaults to 443)."""

    namespace: str
    name: str
    port: int = 443

    @property
    def key(self) -> str:
        """``namespace/name:port``, the key of ``Observed.probes``."""
        return f"{self.namespace}/{self.name}:{self.port}"


class DoctorReads(Protocol):
    """The reads ``diagnose`` makes (``webhook.io.kube.Cluster``); each raises ``ClusterError`` when the API server
    cannot be reached or refuses, except ``service_proxy_get``, which returns the refusal."""

    def deployments(self, *, label_selector: str = "", field_selector: str = "") -> list[dict[str, Any]]:
        """Deployments of every namespace matching the selectors."""
        ...

    def secret_metadata(self, label_selector: str) -> list[dict[str, Any]]:
        """Metadata of the Secrets of every namespace matching ``label_selector``."""
        ...

    def cluster_object_set_metadata(self, label_selector: str) -> list[dict[str, Any]] | None:
        """Metadata of the ClusterObjectSets matching ``label_selector``; ``None``: the kind is not served."""
        ...

    def validating_webhook_configurations(self) -> list[dict[str, Any]]:
        """Every ValidatingWebhookConfiguration."""
        ...

    def custom_resource_definition(self, name: str) -> dict[str, Any] | None:
        """One CRD, or ``None``."""
        ...

    def config_map(self, namespace: str, name: str) -> dict[str, Any] | None:
        """One ConfigMap, or ``None``."""
        ...

    def namespace(self, name: str) -> dict[str, Any] | None:
        """One Namespace, or ``None``."""
        ...

    def service_proxy_get(
        self, namespace: str, service: str, port: int | str, path: str, *, scheme: str = "https", timeout_s: float = 5
    ) -> dict[str, Any]:
        """``{"status", "body"}`` of GET ``path`` of a Service through the API server's proxy."""
        ...
