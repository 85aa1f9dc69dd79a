"""Open Cluster Management: the add-on installVersion lifecycle (``addons``) and the status it asks for (``lifecycle``),
config-set rollouts and placements (``rollout``), the canary gate over either (``canary``), that gate on a real hub
(``hub``), the version an AddOnTemplate carries (``templates``) and a placement's rollout in words (``rolloutplan``)."""

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
from webhook.ocm.hub import TEMPLATES, hub_canary_gate, placement_conflicts
from webhook.ocm.lifecycle import ADDON_LABEL, VERSION_LABEL, lifecycle_status
from webhook.ocm.rollout import Placement, classify_configs, last_known_good_configs, placement_changes, render_configs
from webhook.ocm.rolloutplan import PlacementStep, placement_step
from webhook.ocm.templates import TEMPLATE_KIND, addon_templates, is_template_ref, template_version

__all__ = [
    "ADDON_LABEL",
    "PROGRESSING",
    "TEMPLATES",
    "TEMPLATE_KIND",
    "VERSION_LABEL",
    "AddOnVersions",
    "CanaryGate",
    "Observation",
    "Placement",
    "PlacementStep",
    "Reason",
    "VersionChange",
    "addon_templates",
    "canary_gate",
    "classify",
    "classify_configs",
    "hub_canary_gate",
    "is_addon_version",
    "is_template_ref",
    "last_known_good_configs",
    "lifecycle_status",
    "parse_addon_version",
    "placement_changes",
    "placement_conflicts",
    "placement_step",
    "render_configs",
    "template_version",
]
