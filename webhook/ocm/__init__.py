"""Open Cluster Management: the add-on installVersion lifecycle (``addons``) and the status it asks for (``lifecycle``),
config-set rollouts and placements (``rollout``), the canary gate over either (``canary``), and that gate on a real
hub (``hub``)."""

from webhook.ocm.addons import (
    PROGRESSING,
    AddOnVersions,
    Reason,
    VersionChange,
    classify,
    is_addon_version,
    parse_addon_version,
)
from webhook.ocm.canary import CanaryGate, Observation, canary_gate
from webhook.ocm.hub import hub_canary_gate, placement_conflicts
from webhook.ocm.lifecycle import ADDON_LABEL, lifecycle_status
from webhook.ocm.rollout import Placement, classify_configs, last_known_good_configs, placement_changes, render_configs

__all__ = [
    "ADDON_LABEL",
    "PROGRESSING",
    "AddOnVersions",
    "CanaryGate",
    "Observation",
    "Placement",
    "Reason",
    "VersionChange",
    "canary_gate",
    "classify",
    "classify_configs",
    "hub_canary_gate",
    "is_addon_version",
    "last_known_good_configs",
    "lifecycle_status",
    "parse_addon_version",
    "placement_changes",
    "placement_conflicts",
    "render_configs",
]
