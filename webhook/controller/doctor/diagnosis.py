"""Running the checks: ``diagnose`` reads the cluster through ``DoctorReads``, ``examine`` runs every check in
``CHECKS`` order on the ``Observed`` objects and gathers the facts into a ``Report``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from webhook.controller.doctor.gatewebhooks import check_gate_webhooks, gate_webhooks
from webhook.controller.doctor.model import (
    DEFAULT_SETTINGS_NAMESPACE,
    OBJECT_DATA_LABEL,
    OBJECT_SET_LABEL,
    OPERATOR_CONTROLLER_DEPLOYMENT,
    OPERATOR_CONTROLLER_LABEL,
    READYZ,
    RELEASE_SECRET_LABEL,
    REVISION_CRD_NAME,
    SETTINGS_NAME,
    USERS_KEY,
    DoctorReads,
    Observed,
    Report,
)
from webhook.controller.doctor.operatorcontroller import (
    check_applier,
    check_one_operator_controller,
    check_operator_controller,
    find_operator_controllers,
)
from webhook.controller.doctor.readiness import check_webhook_ready, probe_targets
from webhook.controller.doctor.revisioncrd import check_revision_crd
from webhook.controller.doctor.settings import check_settings, settings_users
from webhook.errors import ClusterError
from webhook.objects import KubeObject


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


def _name_of(obj: KubeObject) -> tuple[str, str]:
    metadata = obj.get("metadata") or {}
    return str(metadata.get("namespace", "")), str(metadata.get("name", ""))
