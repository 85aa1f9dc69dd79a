"""The policy settings ConfigMap ``upgrade-gate-settings``: the users it holds (``operatorControllerUsers``) and the
check ``settings``."""

from __future__ import annotations

from collections.abc import Sequence

from webhook.controller.doctor.model import (
    FAIL,
    OK,
    SETTINGS,
    SETTINGS_NAME,
    USERS_KEY,
    WARN,
    Check,
    OperatorController,
    service_account_user,
)
from webhook.objects import KubeObject

_POLICY_DEFAULT_NAMESPACE = "olmv1-system"  # policies/upgrade-approval.yaml without operatorControllerUsers


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
