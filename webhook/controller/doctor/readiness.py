"""The gate webhooks' Services to probe (GET ``/readyz`` through the API server's service proxy) and the check
``webhook-ready`` over the answers."""

from __future__ import annotations

import urllib.parse
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from webhook.controller.doctor.gatewebhooks import gate_webhooks
from webhook.controller.doctor.model import OK, READYZ, WARN, WEBHOOK_NAMES, WEBHOOK_READY, Check, ServiceRef
from webhook.objects import KubeObject


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


def _port(service: Mapping[str, Any]) -> int:
    try:
        return int(service.get("port") or 443)
    except (TypeError, ValueError):
        return 443


def _shorten(text: str, limit: int = 240) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."
