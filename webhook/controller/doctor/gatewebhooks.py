"""The gate's webhooks: would the API server send operator-controller's upgrade write to them (rules, selectors,
match conditions evaluated with upgrade-gate's CEL engine), and the check ``gate-webhooks``."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from webhook.controller.doctor.model import (
    BOXCUTTER,
    FAIL,
    GATE_WEBHOOKS,
    HELM,
    OK,
    OPERATOR_CONTROLLER_DEPLOYMENT,
    RESULTS,
    WARN,
    WEBHOOK_NAMES,
    Check,
    OperatorController,
    service_account_user,
)
from webhook.errors import CelError, InputError
from webhook.objects import KubeObject, LabelSelector
from webhook.policy import evaluate, rule_dict_matches

_NAMESPACE_LABEL = "kubernetes.io/metadata.name"
_USERS_CONDITION = re.compile(r"^\s*request\.userInfo\.username\s+in\s+\[(?P<list>.*)\]\s*$", re.DOTALL)
_CEL_STRING = re.compile(r"""\s*(?:'(?P<single>(?:[^'\\]|\\.)*)'|"(?P<double>(?:[^"\\]|\\.)*)")\s*(?:,|$)""")


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
