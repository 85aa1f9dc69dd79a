"""Open Cluster Management: the add-on installVersion lifecycle (``addons``), config-set rollouts and placements
(``rollout``), the canary gate over either (``canary``), and that gate on a real hub (``hub``)."""

from webhook.ocm.addons import AddOnVersions, Change, classify, is_addon_version, parse_addon_version
from webhook.ocm.canary import CanaryVerdict, Observation, canary_gate
from webhook.ocm.hub import hub_canary_gate, placement_conflicts
from webhook.ocm.rollout import Placement, classify_configs, last_known_good_configs, placement_changes, render_configs

__all__ = [
    "AddOnVersions",
    "CanaryVerdict",
    "Change",
    "Observation",
    "Placement",
    "canary_gate",
    "classify",
    "classify_configs",
    "hub_canary_gate",
    "is_addon_version",
    "last_known_good_configs",
    "parse_addon_version",
    "placement_changes",
    "placement_conflicts",
    "render_configs",
]
