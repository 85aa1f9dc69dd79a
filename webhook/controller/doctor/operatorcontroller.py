"""Finding operator-controller (where it runs, as whom, with which applier) and the checks ``operator-controller``,
``applier`` and ``one-operator-controller``."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from webhook.controller.doctor.model import (
    APPLIER,
    BOXCUTTER,
    BOXCUTTER_GATE,
    HELM,
    OK,
    ONE_OPERATOR_CONTROLLER,
    OPERATOR_CONTROLLER,
    OPERATOR_CONTROLLER_DEPLOYMENT,
    WARN,
    Check,
    OperatorController,
    service_account_user,
)
from webhook.objects import KubeObject

_GO_TRUE = frozenset({"1", "t", "T", "TRUE", "true", "True"})  # strconv.ParseBool
_GO_FALSE = frozenset({"0", "f", "F", "FALSE", "false", "False"})


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


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}" + ("" if count == 1 else "s")
