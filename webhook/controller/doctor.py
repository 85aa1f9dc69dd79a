"""``upgrade-gate doctor``: does the installed gate really hold OLM v1 upgrades on this cluster?

The gate holds an upgrade by denying operator-controller's CREATE of the new release (operator-controller's appliers,
``internal/operator-controller/applier/{helm,boxcutter}.go``):
a Helm release index Secret (``type: operatorframework.io/index.v1``, labels ``owner=operator-controller``,
``type=index``, ``status=pending-upgrade``) in operator-controller's namespace, or a ``ClusterObjectSet`` with the
Boxcutter applier. The chart's webhooks ``upgrades-helm.upgrade-gate.dev`` and ``upgrades-boxcutter.upgrade-gate.dev``
send only that write, selected by namespace (``webhook.gate.olmNamespace``) and user
(``webhook.gate.operatorControllerUsers``); the policy admits only writes of the users of the settings' key
``operatorControllerUsers``. If operator-controller runs elsewhere or as someone else, no request ever reaches the
gate and upgrades go through silently: these checks find that out.

Checks (``Check``: an id, ``ok`` / ``warn`` / ``fail``, a one-line message, and what to do), pure functions over the
objects read from the cluster as plain JSON dicts (``Observed``), in the order ``examine`` runs them:

============================== ========================================================================================
``operator-controller``        where it runs and as whom: a Deployment labelled ``app.kubernetes.io/name=operator-
                               controller`` or named ``operator-controller-controller-manager`` (its namespace and
                               ``serviceAccountName`` give ``system:serviceaccount:NS:SA``); else the namespaces of
                               Helm release Secrets (``owner=operator-controller``); else those of the Secrets the
                               ClusterObjectSets refer to (``olm.operatorframework.io/revision-name``, in OLM's
                               system namespace). A namespace found without a Deployment assumes upstream's
                               ServiceAccount (``warn``); nothing found is a ``warn``.
``applier``                    Boxcutter when ``BoxcutterRuntime=true`` in the Deployment's ``--feature-gates`` (the
                               gate is Alpha, off by default, in operator-controller v1.11.0) or when ClusterObjectSets
                               labelled ``olm.operatorframework.io/owner-kind=ClusterExtension`` exist; else Helm.
``gate-webhooks``              a ValidatingWebhookConfiguration holds the applier's gate webhook, and the API server
                               would send operator-controller's upgrade write to it: its ``rules``,
                               ``namespaceSelector`` (namespaced Secrets only, on the Namespace's labels),
                               ``objectSelector`` and ``matchConditions`` (evaluated with upgrade-gate's CEL engine on
                               the write operator-controller makes, as the API server does) all match, and its
                               ``failurePolicy`` is ``Fail`` (``Ignore``: a ``warn``).
``settings``                   the ConfigMap ``upgrade-gate-settings`` exists and its ``operatorControllerUsers``
                               (comma-separated; absent: the policy's default, upstream's ServiceAccount in
                               ``olmv1-system``) names operator-controller's user. Not found: a ``warn``, since the
                               webhook reads the settings of its policy directory first, which no read here sees.
``revision-crd``               ``clusterextensionrevisions.olm.operatorframework.io`` is upgrade-gate's: its schema has
                               ``spec.clusterExtensionRef`` and ``spec.version``. Older OLM v1 releases shipped an
                               experimental CRD of that name (the object renamed ClusterObjectSet in v1.9.0): ``fail``.
                               Without the chart's Helm labels: ``warn``. Absent: ``warn`` (nothing can be approved).
``webhook-ready``              GET ``/readyz`` of each gate webhook's Service through the API server's service proxy
                               answers 200; anything else (RBAC forbidding ``services/proxy``, no endpoint, not
                               ready, a ``url`` clientConfig that the proxy cannot reach) is a ``warn`` saying why.
``one-operator-controller``    more than one operator-controller found: a ``warn`` (each must be held).
============================== ========================================================================================

``diagnose`` reads through ``DoctorReads`` (``webhook.io.kube.Cluster`` implements it) and hands the objects to
``examine``; the controller can run the same checks on its own reads.
"""

from __future__ import annotations

import re
import urllib.parse
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from webhook.errors import CelError, ClusterError, InputError
from webhook.objects import KubeObject, LabelSelector
from webhook.policy import evaluate, rule_dict_matches

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

_NAMESPACE_LABEL = "kubernetes.io/metadata.name"
_SERVICE_ACCOUNT = "system:serviceaccount:{namespace}:{name}"
_POLICY_DEFAULT_NAMESPACE = "olmv1-system"  # policies/upgrade-approval.yaml without operatorControllerUsers
_USERS_CONDITION = re.compile(r"^\s*request\.userInfo\.username\s+in\s+\[(?P<list>.*)\]\s*$", re.DOTALL)
_CEL_STRING = re.compile(r"""\s*(?:'(?P<single>(?:[^'\\]|\\.)*)'|"(?P<double>(?:[^"\\]|\\.)*)")\s*(?:,|$)""")
_GO_TRUE = frozenset({"1", "t", "T", "TRUE", "true", "True"})  # strconv.ParseBool
_GO_FALSE = frozenset({"0", "f", "F", "FALSE", "false", "False"})


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


def diagnose(reads: DoctorReads, *, settings_namespace: str = DEFAULT_SETTINGS_NAMESPACE) -> Report:
    """Read what the checks need through ``reads`` and ``examine`` it.

    Reads only what it needs: Deployments by label and by name; ClusterObjectSets' metadata; Secrets' metadata only
    when no Deployment was found; the Namespaces found; the webhook configurations, the CRD, the settings
    ConfigMap; and GET ``/readyz`` of each gate webhook's Service for the appliers in use. Raises ``ClusterError``
    when a read fails (a service proxy GET that fails is the ``webhook-ready`` check's warning instead).
    """
    by_label = reads.deployments(label_selector=OPERATOR_CONTROLLER_LABEL)
    by_name = reads.deployments(field_selector=f"metadata.name={OPERATOR_CONTROLLER_DEPLOYMENT}")
    deployments = list({_name_of(d): d for d in [*by_label, *by_name]}.values())
    object_sets = reads.cluster_object_set_metadata(OBJECT_SET_LABEL)
    release_secrets = [] if deployments else reads.secret_metadata(RELEASE_SECRET_LABEL)
    object_set_secrets = []
    if not deployments and not release_secrets and object_sets:
        object_set_secrets = reads.secret_metadata(OBJECT_DATA_LABEL)
    found = find_operator_controllers(deployments, release_secrets, object_sets, object_set_secrets)
    namespaces = {}
    for name in sorted({oc.namespace for oc in found}):
        namespace = reads.namespace(name)
        if namespace is not None:
            namespaces[name] = namespace
    configurations = reads.validating_webhook_configurations()
    probes: dict[str, Mapping[str, Any]] = {}
    for service in probe_targets(configurations, {oc.applier for oc in found}):
        try:
            probes[service.key] = reads.service_proxy_get(service.namespace, service.name, service.port, READYZ)
        except ClusterError as error:
            probes[service.key] = {"status": 0, "body": str(error)}
    observed = Observed(
        deployments=deployments,
        release_secrets=release_secrets,
        object_sets=object_sets,
        object_set_secrets=object_set_secrets,
        namespaces=namespaces,
        webhook_configurations=configurations,
        crd=reads.custom_resource_definition(REVISION_CRD_NAME),
        settings=reads.config_map(settings_namespace, SETTINGS_NAME),
        settings_namespace=settings_namespace,
        probes=probes,
    )
    return examine(observed)


def examine(observed: Observed) -> Report:
    """Run every check on ``observed``; pure."""
    found = find_operator_controllers(
        observed.deployments, observed.release_secrets, observed.object_sets, observed.object_set_secrets
    )
    configurations = observed.webhook_configurations
    checks = (
        check_operator_controller(found, observed.object_sets),
        check_applier(found),
        check_gate_webhooks(found, configurations, observed.namespaces),
        check_settings(found, observed.settings, observed.settings_namespace),
        check_revision_crd(observed.crd),
        check_webhook_ready(configurations, {oc.applier for oc in found}, observed.probes),
        check_one_operator_controller(found),
    )
    first = found[0] if found else None
    gate = [f"{name}/{hook.get('name')}" for name, hook in gate_webhooks(configurations)]
    facts = {
        "namespace": first.namespace if first else None,
        "user": first.user if first else None,
        "applier": first.applier if first else None,
        "operatorControllers": [oc.to_dict() for oc in found],
        "webhooks": gate,
        "webhookServices": [s.key for s in probe_targets(configurations, {oc.applier for oc in found})],
        "settings": f"{observed.settings_namespace}/{SETTINGS_NAME}",
        USERS_KEY: list(settings_users(observed.settings)) if observed.settings is not None else None,
    }
    return Report(checks, facts)


# --- finding operator-controller -------------------------------------------------------------------------------


def find_operator_controllers(
    deployments: Iterable[KubeObject],
    release_secrets: Iterable[KubeObject] = (),
    object_sets: Sequence[KubeObject] | None = None,
    object_set_secrets: Iterable[KubeObject] = (),
) -> tuple[OperatorController, ...]:
    """The operator-controllers these objects show, sorted by namespace: each Deployment labelled
    ``app.kubernetes.io/name=operator-controller`` or named ``operator-controller-controller-manager`` (its user is
    its pod template's ServiceAccount); without one, each namespace holding Helm release Secrets
    (``owner=operator-controller``), else each holding Secrets that ClusterObjectSets refer to, with upstream's
    ServiceAccount assumed. The applier is Boxcutter when the Deployment turns ``BoxcutterRuntime`` on or any
    ClusterObjectSet owned by a ClusterExtension exists."""
    object_set_count = len(object_sets or ())
    found: dict[tuple[str, str], OperatorController] = {}
    for deployment in deployments:
        metadata = deployment.get("metadata") or {}
        labels = metadata.get("labels") or {}
        name, namespace = str(metadata.get("name", "")), str(metadata.get("namespace", ""))
        if labels.get("app.kubernetes.io/name") != "operator-controller" and name != OPERATOR_CONTROLLER_DEPLOYMENT:
            continue
        pod = ((deployment.get("spec") or {}).get("template") or {}).get("spec") or {}
        account = str(pod.get("serviceAccountName") or pod.get("serviceAccount") or "default")
        gate = boxcutter_gate(deployment)
        if gate:
            applier, why = BOXCUTTER, f"{BOXCUTTER_GATE}=true in --feature-gates"
        elif object_set_count:
            applier, why = BOXCUTTER, f"{_plural(object_set_count, 'ClusterObjectSet')} owned by ClusterExtensions"
        else:
            state = "off" if gate is False else "not set, off by default"
            applier, why = HELM, f"{BOXCUTTER_GATE} {state}"
        found[(namespace, name)] = OperatorController(
            namespace, service_account_user(namespace, account), applier, f"Deployment {namespace}/{name}", why
        )
    if not found:
        sources = (
            (release_secrets, "its Helm release Secrets (owner=operator-controller) are there"),
            (object_set_secrets, "the Secrets its ClusterObjectSets refer to are there"),
        )
        for secrets, why_there in sources:
            namespaces = sorted({str((s.get("metadata") or {}).get("namespace", "")) for s in secrets} - {""})
            for namespace in namespaces:
                applier = BOXCUTTER if object_set_count else HELM
                applier_by = (
                    f"{_plural(object_set_count, 'ClusterObjectSet')} owned by ClusterExtensions"
                    if object_set_count
                    else "Helm release Secrets, no ClusterObjectSet"
                )
                found[(namespace, "")] = OperatorController(
                    namespace, service_account_user(namespace), applier, why_there, applier_by, assumed_user=True
                )
            if found:
                break
    return tuple(found[key] for key in sorted(found))


def boxcutter_gate(deployment: KubeObject) -> bool | None:
    """The value of the feature gate ``BoxcutterRuntime`` in the ``--feature-gates`` arguments of the Deployment's
    containers (``None``: not set). Read as component-base's flag does: ``--feature-gates=A=true,B=false`` or
    ``--feature-gates A=true``, repeatable, the last value of a gate wins, values as Go's ``strconv.ParseBool``."""
    pod = ((deployment.get("spec") or {}).get("template") or {}).get("spec") or {}
    value: bool | None = None
    for container in pod.get("containers") or []:
        args = [str(a) for a in container.get("args") or []]
        for index, arg in enumerate(args):
            if arg.startswith(("--feature-gates=", "-feature-gates=")):
                pairs = arg.split("=", 1)[1]
            elif arg in ("--feature-gates", "-feature-gates") and index + 1 < len(args):
                pairs = args[index + 1]
            else:
                continue
            for pair in pairs.split(","):
                key, _, text = pair.strip().partition("=")
                if key.strip() == BOXCUTTER_GATE and text.strip() in _GO_TRUE | _GO_FALSE:
                    value = text.strip() in _GO_TRUE
    return value


def check_operator_controller(
    found: Sequence[OperatorController], object_sets: Sequence[KubeObject] | None = None
) -> Check:
    """``operator-controller``: where it runs and as whom; a ``warn`` when it is not found, or found only by its
    Secrets (the user is then assumed)."""
    if not found:
        message = "no OLM v1 operator-controller found (no Deployment labelled app.kubernetes.io/name=operator-"
        message += "controller or named operator-controller-controller-manager, no release Secrets"
        if object_sets:
            message += f"; {_plural(len(object_sets), 'ClusterObjectSet')} exist but say not where it runs)"
        else:
            message += ", no ClusterObjectSets): nothing here to hold"
        return Check(
            OPERATOR_CONTROLLER,
            WARN,
            message,
            "install OLM v1 first, or point doctor at the cluster where operator-controller runs (--kubeconfig)",
        )
    parts = [f"runs in {oc.namespace} as {oc.user} ({oc.found_by})" for oc in found if not oc.assumed_user]
    assumed = [oc for oc in found if oc.assumed_user]
    parts += [f"runs in {oc.namespace} ({oc.found_by}), as {oc.user} presumably: no Deployment found" for oc in assumed]
    if assumed:
        return Check(
            OPERATOR_CONTROLLER,
            WARN,
            "operator-controller " + "; ".join(parts),
            "check operator-controller's ServiceAccount: if it is not "
            f"{OPERATOR_CONTROLLER_DEPLOYMENT}, add its user to webhook.gate.operatorControllerUsers and to the "
            "settings' operatorControllerUsers",
        )
    return Check(OPERATOR_CONTROLLER, OK, "operator-controller " + "; ".join(parts))


def check_applier(found: Sequence[OperatorController]) -> Check:
    """``applier``: which write an upgrade starts with (informational; ``warn`` when unknown)."""
    if not found:
        return Check(APPLIER, WARN, "unknown: no operator-controller found")
    parts = []
    for oc in found:
        where = f" ({oc.namespace})" if len(found) > 1 else ""
        if oc.applier == BOXCUTTER:
            parts.append(f"Boxcutter{where}: an upgrade starts with the CREATE of a ClusterObjectSet ({oc.applier_by})")
        else:
            parts.append(
                f"Helm{where}: an upgrade starts with the CREATE of a release index Secret in {oc.namespace} "
                f"({oc.applier_by})"
            )
    return Check(APPLIER, OK, "; ".join(parts))


# --- the gate's webhooks -----------------------------------------------------------------------------------------


def gate_webhooks(configurations: Iterable[KubeObject], applier: str | None = None) -> list[tuple[str, KubeObject]]:
    """``(configuration name, webhook)`` of every gate webhook (of ``applier`` only, when given), sorted by
    configuration name."""
    names = {WEBHOOK_NAMES[applier]} if applier else set(WEBHOOK_NAMES.values())
    found = [
        (str((configuration.get("metadata") or {}).get("name", "")), hook)
        for configuration in configurations
        for hook in configuration.get("webhooks") or []
        if hook.get("name") in names
    ]
    return sorted(found, key=lambda pair: (pair[0], str(pair[1].get("name"))))


@dataclass(frozen=True)
class _Match:
    """Whether the API server would send operator-controller's upgrade write to a webhook: what excludes it
    (``misses``: kind, text) and what could not be decided (``unknown``)."""

    misses: tuple[tuple[str, str], ...] = ()
    unknown: tuple[str, ...] = ()
    users: tuple[str, ...] | None = None  # the users its match condition names, when it reads as the chart's


def upgrade_write(oc: OperatorController, applier: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(request, object)``: the admission request of operator-controller's first write at an upgrade with
    ``applier``, as the API server builds it (operator-controller's ``applier`` package): the CREATE of the index Secret
    ``sh.helm.release.v1.<extension>.v<N+1>`` in its namespace, or of the ClusterObjectSet ``<extension>-<N+1>``."""
    if applier == BOXCUTTER:
        obj: dict[str, Any] = {
            "apiVersion": "olm.operatorframework.io/v1",
            "kind": "ClusterObjectSet",
            "metadata": {
                "name": "extension-2",
                "labels": {
                    "olm.operatorframework.io/owner-kind": "ClusterExtension",
                    "olm.operatorframework.io/owner-name": "extension",
                },
            },
            "spec": {"revision": 2, "lifecycleState": "Active"},
        }
        resource = {"group": "olm.operatorframework.io", "version": "v1", "resource": "clusterobjectsets"}
        namespace = ""
    else:
        name = "sh.helm.release.v1.extension.v2"
        obj = {
            "apiVersion": "v1",
            "kind": "Secret",
            "type": "operatorframework.io/index.v1",
            "metadata": {
                "name": name,
                "namespace": oc.namespace,
                "labels": {
                    "name": "extension",
                    "owner": "operator-controller",
                    "status": "pending-upgrade",
                    "version": "2",
                    "key": name,
                    "type": "index",
                },
            },
        }
        resource = {"group": "", "version": "v1", "resource": "secrets"}
        namespace = oc.namespace
    kind = {"group": resource["group"], "version": resource["version"], "kind": obj["kind"]}
    request = {
        "kind": kind,
        "resource": resource,
        "requestKind": kind,
        "requestResource": resource,
        "name": obj["metadata"]["name"],
        "namespace": namespace,
        "operation": "CREATE",
        "userInfo": {
            "username": oc.user,
            "groups": ["system:serviceaccounts", f"system:serviceaccounts:{oc.namespace}"],
        },
        "dryRun": False,
        "options": {"apiVersion": "meta.k8s.io/v1", "kind": "CreateOptions"},
    }
    return request, obj


def webhook_match(hook: KubeObject, oc: OperatorController, namespace: KubeObject | None = None) -> _Match:
    """Would the API server send ``oc``'s upgrade write to ``hook``? Follows the apiserver's webhook matching
    (``k8s.io/apiserver/pkg/admission/plugin/webhook``): ``rules`` (operation, group, version, resource, scope),
    ``namespaceSelector`` on the labels of ``namespace`` (only for namespaced writes; the Namespace's name label
    when it was not read), ``objectSelector``, then every ``matchConditions`` expression on ``object`` and
    ``request``; an expression that cannot be evaluated is reported in ``unknown`` (the apiserver then applies
    the webhook's failurePolicy)."""
    request, obj = upgrade_write(oc, oc.applier)
    misses: list[tuple[str, str]] = []
    unknown: list[str] = []
    resource = request["resource"]
    if not any(rule_dict_matches(rule, request) for rule in hook.get("rules") or []):
        misses.append(("rules", f"its rules do not send the CREATE of {resource['resource']}"))
    if request["namespace"]:
        labels = ((namespace or {}).get("metadata") or {}).get("labels") or {_NAMESPACE_LABEL: oc.namespace}
        try:
            if not LabelSelector.from_dict(hook.get("namespaceSelector")).matches(labels):
                misses.append(("namespace", f"sends only {_describe_namespaces(hook.get('namespaceSelector'))}"))
        except InputError as error:
            unknown.append(f"namespaceSelector: {error}")
    try:
        if not LabelSelector.from_dict(hook.get("objectSelector")).matches(obj["metadata"]["labels"]):
            selected = LabelSelector.from_dict(hook.get("objectSelector"))
            misses.append(("object", f"its objectSelector {selected} does not select operator-controller's write"))
    except InputError as error:
        unknown.append(f"objectSelector: {error}")
    users: tuple[str, ...] | None = None
    for condition in hook.get("matchConditions") or []:
        name, expression = str(condition.get("name", "")), str(condition.get("expression", ""))
        listed = condition_users(expression)
        if listed is not None:
            users = listed
        try:
            matched = evaluate(expression, {"object": obj, "oldObject": None, "request": request})
        except CelError as error:
            unknown.append(f"match condition {name}: {error}")
            continue
        if matched is True:
            continue
        if listed is not None:
            misses.append(("user", f"only writes by {', '.join(listed) or 'nobody'}"))
        elif "request.userInfo" in expression:
            misses.append(("user", f"not the writes of {oc.user} (match condition {name})"))
        else:
            misses.append(("condition", f"its match condition {name} is false for the upgrade write"))
    return _Match(tuple(misses), tuple(unknown), users)


def condition_users(expression: str) -> tuple[str, ...] | None:
    """The users a match condition of the chart's form ``request.userInfo.username in ['a', 'b']`` names (CEL
    string literals, quotes escaped with ``\\``); ``None`` for any other expression."""
    matched = _USERS_CONDITION.match(expression)
    if matched is None:
        return None
    text, users, position = matched.group("list"), [], 0
    while position < len(text.rstrip()):
        literal = _CEL_STRING.match(text, position)
        if literal is None:
            return None
        quoted = literal.group("single") if literal.group("single") is not None else literal.group("double")
        users.append(re.sub(r"\\(.)", r"\1", quoted))
        position = literal.end()
    return tuple(users)


def check_gate_webhooks(
    found: Sequence[OperatorController],
    configurations: Sequence[KubeObject],
    namespaces: Mapping[str, KubeObject] | None = None,
) -> Check:
    """``gate-webhooks``: for each operator-controller, some gate webhook of its applier is sent its upgrade
    write (``webhook_match``) with failurePolicy Fail. ``fail`` when none is; the message says what each webhook
    sends instead, the action the chart value to set. Without an operator-controller, only that gate webhooks
    exist is checked."""
    every = gate_webhooks(configurations)
    if not every:
        return Check(
            GATE_WEBHOOKS,
            FAIL,
            f"no ValidatingWebhookConfiguration holds the gate's webhooks ({', '.join(WEBHOOK_NAMES.values())}): "
            "nothing holds upgrades",
            "install the upgrade-gate chart with webhook.gate.enabled=true (the default)",
        )
    if not found:
        named = ", ".join(f"{hook.get('name')} ({name})" for name, hook in every)
        return Check(GATE_WEBHOOKS, OK, f"present: {named}; not matched to an operator-controller (none found)")
    results: list[Check] = [_gate_for(oc, configurations, (namespaces or {}).get(oc.namespace)) for oc in found]
    worst = max((c.result for c in results), key=RESULTS.index)
    message = "; ".join(c.message for c in results if c.result == worst)
    actions = "; ".join(dict.fromkeys(c.action for c in results if c.result == worst and c.action))
    return Check(GATE_WEBHOOKS, worst, message, actions)


def _gate_for(oc: OperatorController, configurations: Sequence[KubeObject], namespace: KubeObject | None) -> Check:
    webhook = WEBHOOK_NAMES[oc.applier]
    candidates = gate_webhooks(configurations, oc.applier)
    if not candidates:
        other = [f"{hook.get('name')} ({name})" for name, hook in gate_webhooks(configurations)]
        applier = "Boxcutter applier (ClusterObjectSets)" if oc.applier == BOXCUTTER else "Helm applier"
        return Check(
            GATE_WEBHOOKS,
            FAIL,
            f"operator-controller in {oc.namespace} uses the {applier}, but no webhook {webhook} exists (only "
            f"{', '.join(other)}): its upgrades go through unchecked",
            f"add {oc.applier} to webhook.gate.appliers and upgrade the release",
        )
    matches = [(name, hook, webhook_match(hook, oc, namespace)) for name, hook in candidates]
    sending = [(name, hook, m) for name, hook, m in matches if not m.misses]
    if sending:
        failing_closed = [(n, h, m) for n, h, m in sending if h.get("failurePolicy", "Fail") == "Fail"]
        name, hook, match = (failing_closed or sending)[0]
        write = _write_phrase(oc)
        if match.unknown:
            return Check(
                GATE_WEBHOOKS,
                WARN,
                f"cannot tell whether {webhook} ({name}) is sent {write}: {'; '.join(match.unknown)}",
                "compare the webhook configuration with the chart's (helm template) and upgrade the release",
            )
        if not failing_closed:
            return Check(
                GATE_WEBHOOKS,
                WARN,
                f"{webhook} ({name}) is sent {write}, but with failurePolicy {hook.get('failurePolicy')}: while "
                "the webhook is unreachable, upgrades go through unchecked",
                "set webhook.gate.failurePolicy=Fail",
            )
        return Check(GATE_WEBHOOKS, OK, f"{webhook} ({name}) is sent {write}; failurePolicy Fail")
    name, hook, match = matches[0]
    excluded = " and ".join(text for _, text in match.misses)
    more = f" (and {len(matches) - 1} other configurations likewise)" if len(matches) > 1 else ""
    message = (
        f"{webhook} ({name}) {excluded}{more}, but operator-controller writes "
        f"{'its releases in ' + oc.namespace if oc.applier == HELM else 'its ClusterObjectSets'} as {oc.user}: "
        "its upgrades go through unchecked"
    )
    return Check(GATE_WEBHOOKS, FAIL, message, _gate_action(oc, hook, match))


def _write_phrase(oc: OperatorController) -> str:
    if oc.applier == BOXCUTTER:
        return f"every upgrade (ClusterObjectSet CREATE by {oc.user})"
    return f"every upgrade (release index Secret CREATE in {oc.namespace} by {oc.user})"


def _gate_action(oc: OperatorController, hook: KubeObject, match: _Match) -> str:
    """The chart values that would make ``hook`` send ``oc``'s upgrades."""
    kinds = {kind for kind, _ in match.misses}
    actions: list[str] = []
    configured = _configured_namespace(hook, match.users)
    derived = oc.user == service_account_user(oc.namespace) and match.users is not None
    follows = derived and configured is not None and match.users == (service_account_user(configured),)
    if "namespace" in kinds or ("user" in kinds and follows):
        actions.append(f"set webhook.gate.olmNamespace={oc.namespace}")
        if "user" in kinds and follows:
            actions[-1] += " (webhook.gate.operatorControllerUsers, left empty, follows it)"
    if "user" in kinds and not follows:
        actions.append(f"add {oc.user} to webhook.gate.operatorControllerUsers")
    if kinds - {"namespace", "user"}:
        actions.append("compare the webhook configuration with the chart's (helm template)")
    return " and ".join(actions) + ", then upgrade the release"


def _configured_namespace(hook: KubeObject, users: tuple[str, ...] | None) -> str | None:
    """The ``webhook.gate.olmNamespace`` the chart rendered ``hook`` with: its namespace selector's name label, else
    the namespace of its single default user."""
    labels = (hook.get("namespaceSelector") or {}).get("matchLabels") or {}
    if _NAMESPACE_LABEL in labels:
        return str(labels[_NAMESPACE_LABEL])
    if users and len(users) == 1:
        parts = users[0].split(":")
        if len(parts) == 4 and parts[:2] == ["system", "serviceaccount"] and parts[3] == OPERATOR_CONTROLLER_DEPLOYMENT:
            return parts[2]
    return None


def _describe_namespaces(selector: Any) -> str:
    """``namespace olmv1-system`` for the chart's name selector, else the selector in kubectl's syntax."""
    try:
        parsed = LabelSelector.from_dict(selector)
    except InputError:
        return f"namespaces matching {selector}"
    if len(parsed.requirements) == 1:
        (requirement,) = parsed.requirements
        if requirement.key == _NAMESPACE_LABEL and requirement.operator == "In":
            names = sorted(requirement.values)
            return ("namespace " if len(names) == 1 else "namespaces ") + ", ".join(names)
    return f"namespaces matching {parsed}"


# --- settings, CRD, readiness, count -----------------------------------------------------------------------------


def settings_users(settings: KubeObject | None) -> tuple[str, ...]:
    """The users the policy ``upgrade-gate-upgrade-approval`` holds, from the settings ConfigMap as it reads them:
    ``operatorControllerUsers`` split at commas and trimmed, else upstream's ServiceAccount in ``olmv1-system``."""
    data = (settings or {}).get("data") or {}
    if USERS_KEY not in data:
        return (service_account_user(_POLICY_DEFAULT_NAMESPACE),)
    return tuple(user.strip() for user in str(data[USERS_KEY]).split(","))


def check_settings(found: Sequence[OperatorController], settings: KubeObject | None, namespace: str) -> Check:
    """``settings``: the ConfigMap ``upgrade-gate-settings`` exists in ``namespace`` and its
    ``operatorControllerUsers`` names every operator-controller's user."""
    where = f"ConfigMap {namespace}/{SETTINGS_NAME}"
    user = found[0].user if found else service_account_user(_POLICY_DEFAULT_NAMESPACE)
    if settings is None:  # the webhook reads its policy directory's settings first (the bundled settings.yaml)
        return Check(
            SETTINGS,
            WARN,
            f"{where} not found: the webhook uses the settings of its policy directory (the chart's policies or the "
            "bundled policies/settings.yaml), which this check cannot read",
            f"make sure those settings name {user} in {USERS_KEY} (or give --settings-namespace where the "
            "ConfigMap lives)",
        )
    users = settings_users(settings)
    if not found:
        return Check(SETTINGS, OK, f"{where} found ({USERS_KEY}: {', '.join(users)}); no operator-controller to match")
    missing = [oc.user for oc in found if oc.user not in users]
    if missing:
        read = (
            f"names {', '.join(users) or 'nobody'} in {USERS_KEY}"
            if USERS_KEY in (settings.get("data") or {})
            else f"has no {USERS_KEY} (the policy then holds only {users[0]})"
        )
        return Check(
            SETTINGS,
            FAIL,
            f"{where} {read}, not operator-controller's user {', '.join(missing)}: the policy admits its "
            "upgrades unchecked",
            f"add {', '.join(missing)} to {USERS_KEY} in {where} (comma-separated)",
        )
    return Check(SETTINGS, OK, f"{where} names {', '.join(oc.user for oc in found)} in {USERS_KEY}")


def check_revision_crd(crd: KubeObject | None) -> Check:
    """``revision-crd``: the ClusterExtensionRevision CRD is upgrade-gate's (a ``spec`` schema with
    ``clusterExtensionRef`` and ``version`` in some version), not the experimental CRD of that name an older OLM v1
    shipped (``spec.revision``, ``phases``, ``lifecycleState``; renamed ClusterObjectSet in v1.9.0)."""
    if crd is None:
        return Check(
            REVISION_CRD,
            WARN,
            f"CRD {REVISION_CRD_NAME} is not installed: no upgrade can be approved, every upgrade stays held",
            "install the chart with crds.install=true (the default)",
        )
    fields: set[str] = set()
    ours = False
    for version in (crd.get("spec") or {}).get("versions") or []:
        schema = ((version.get("schema") or {}).get("openAPIV3Schema") or {}).get("properties") or {}
        spec = set(((schema.get("spec") or {}).get("properties") or {}).keys())
        fields |= spec
        ours = ours or {"clusterExtensionRef", "version"} <= spec
    metadata = crd.get("metadata") or {}
    labels, annotations = metadata.get("labels") or {}, metadata.get("annotations") or {}
    if not ours:
        origin = []
        if annotations.get("olm.operatorframework.io/generator"):
            origin.append(f"OLM generator {annotations['olm.operatorframework.io/generator']}")
        if annotations.get("meta.helm.sh/release-name"):
            origin.append(
                f"Helm release {annotations.get('meta.helm.sh/release-namespace', '')}/"
                f"{annotations['meta.helm.sh/release-name']}"
            )
        if labels.get("app.kubernetes.io/part-of"):
            origin.append(f"part of {labels['app.kubernetes.io/part-of']}")
        origin_text = f", {', '.join(origin)}" if origin else ""
        return Check(
            REVISION_CRD,
            FAIL,
            f"CRD {REVISION_CRD_NAME} is not upgrade-gate's (spec fields {', '.join(sorted(fields)) or 'none'}, no "
            f"clusterExtensionRef/version{origin_text}): an older OLM v1's experimental ClusterExtensionRevision "
            "(renamed ClusterObjectSet in v1.9.0); no upgrade can be approved",
            "upgrade OLM v1 to v1.9.0 or later, then delete this CRD once no OLM uses it (kubectl delete crd "
            f"{REVISION_CRD_NAME} deletes its objects) and upgrade the upgrade-gate release",
        )
    chart = str(labels.get("helm.sh/chart", ""))
    if labels.get("app.kubernetes.io/managed-by") != "Helm" or not chart.startswith("upgrade-gate-"):
        return Check(
            REVISION_CRD,
            WARN,
            f"CRD {REVISION_CRD_NAME} has upgrade-gate's schema but not the chart's labels (app.kubernetes.io/"
            "managed-by: Helm, helm.sh/chart: upgrade-gate-*): helm upgrade will not keep it current",
            "let the chart own it (crds.install=true; Helm adopts it with its meta.helm.sh/release-name and "
            "release-namespace annotations)",
        )
    return Check(REVISION_CRD, OK, f"CRD {REVISION_CRD_NAME} is upgrade-gate's ({chart})")


def probe_targets(configurations: Iterable[KubeObject], appliers: Iterable[str] = ()) -> list[ServiceRef]:
    """The Services of the gate webhooks of ``appliers`` (of every gate webhook when none is given), sorted; a
    webhook called at a ``url`` has none."""
    wanted = set(appliers) or set(WEBHOOK_NAMES)
    targets = set()
    for applier in wanted:
        for _, hook in gate_webhooks(configurations, applier):
            service = (hook.get("clientConfig") or {}).get("service")
            if service:
                targets.add(ServiceRef(str(service.get("namespace")), str(service.get("name")), _port(service)))
    return sorted(targets)


def check_webhook_ready(
    configurations: Sequence[KubeObject], appliers: Iterable[str], probes: Mapping[str, Mapping[str, Any]]
) -> Check:
    """``webhook-ready``: each gate webhook Service answers GET ``/readyz`` with 200 through the API server's
    service proxy (``probes``); otherwise a ``warn`` with the API server's reason (403: the doctor's user may not
    ``get`` ``services/proxy``)."""
    wanted = set(appliers) or set(WEBHOOK_NAMES)
    hooks = [(name, hook) for applier in sorted(wanted) for name, hook in gate_webhooks(configurations, applier)]
    if not hooks:
        return Check(WEBHOOK_READY, WARN, "no gate webhook to ask")
    problems: list[str] = []
    answered: list[str] = []
    actions: list[str] = []
    for name, hook in hooks:
        url = (hook.get("clientConfig") or {}).get("url")
        if url:
            parts = urllib.parse.urlsplit(str(url))
            problems.append(f"{hook.get('name')} ({name}) calls {url}: not asked (doctor asks Services only)")
            actions.append(f"check {parts.scheme}://{parts.netloc}{READYZ} from the API server's network")
    for service in probe_targets(configurations, wanted):
        probe = probes.get(service.key)
        where = f"GET {READYZ} of Service {service.namespace}/{service.name} through the API server's proxy"
        if probe is None:
            problems.append(f"{where}: not asked")
            continue
        status, body = int(probe.get("status", 0)), _shorten(" ".join(str(probe.get("body", "")).split()))
        if status == 200:
            answered.append(f"{where}: 200")
        elif status == 403:
            problems.append(f"cannot ask the gate's webhook: {where} is forbidden ({body})")
            actions.append(
                f"run doctor as a user RBAC lets get services/proxy in {service.namespace}, or check the webhook's "
                f"pods: kubectl -n {service.namespace} get pods,endpoints"
            )
        else:
            said = f"{status} {body}" if status else body
            problems.append(f"the gate's webhook does not answer: {where}: {said}")
            actions.append(
                f"check the webhook's pods and endpoints: kubectl -n {service.namespace} get pods,endpoints "
                f"{service.name} (upgrades wait while it is down with failurePolicy Fail)"
            )
    if problems:
        return Check(WEBHOOK_READY, WARN, "; ".join(problems + answered), "; ".join(actions))
    return Check(WEBHOOK_READY, OK, "the gate's webhook answers: " + "; ".join(answered))


def check_one_operator_controller(found: Sequence[OperatorController]) -> Check:
    """``one-operator-controller``: a ``warn`` when more than one operator-controller was found."""
    if len(found) > 1:
        named = ", ".join(f"{oc.namespace} as {oc.user} ({oc.found_by})" for oc in found)
        return Check(
            ONE_OPERATOR_CONTROLLER,
            WARN,
            f"{len(found)} operator-controllers found: {named}; each reconciles every ClusterExtension, so each one's "
            "upgrades must be held",
            "remove the operator-controller that should not run (a leftover installation?)",
        )
    return Check(ONE_OPERATOR_CONTROLLER, OK, "one operator-controller" if found else "no operator-controller")


def _port(service: Mapping[str, Any]) -> int:
    try:
        return int(service.get("port") or 443)
    except (TypeError, ValueError):
        return 443


def _name_of(obj: KubeObject) -> tuple[str, str]:
    metadata = obj.get("metadata") or {}
    return str(metadata.get("namespace", "")), str(metadata.get("name", ""))


def _shorten(text: str, limit: int = 240) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}" + ("" if count == 1 else "s")
