"""The add-on version an AddOnTemplate carries, and the template references that name it.

Upstream OCM (api ``addon/v1alpha1/types_addontemplate.go``) gives an AddOnTemplate ``spec.addonName`` and the
agent's ManifestWork, but no version field: a new add-on release is a new template that the ClusterManagementAddOn
points at (``spec.installStrategy.placements[].configs``, ``spec.supportedConfigs[].defaultConfig``) or a
ManagedClusterAddOn names in its ``spec.configs``. The version is read, first match wins, from:

1. the label ``open-cluster-management.io/addon-version`` (the label the add-on's ManifestWorks carry);
2. the last ``-`` separated part of the template's name when it is ``v`` followed by an add-on version
   (``hello-template-v2``, ``hello-v1.2.0``: read as ``webhook.ocm.addons.parse_addon_version`` reads it).

A template with neither has no version: it is never a target, and a reference to it is never moved.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from webhook.ocm.addons import is_addon_version
from webhook.ocm.hub import TEMPLATES
from webhook.ocm.lifecycle import VERSION_LABEL

TEMPLATE_KIND = "AddOnTemplate"


def is_template_ref(config: object) -> bool:
    """True when ``config`` (an ``AddOnConfig`` or ``defaultConfig`` owner's mapping) is of group
    ``addon.open-cluster-management.io``, resource ``addontemplates``, with a name."""
    return (
        isinstance(config, Mapping)
        and ((config.get("group") or ""), config.get("resource")) == TEMPLATES
        and isinstance(config.get("name"), str)
        and bool(config["name"])
    )


def template_version(name: str, template: Mapping[str, Any] | None = None) -> str | None:
    """The add-on version of AddOnTemplate ``name`` (``template`` is the object, when known): its version label,
    else its name's ``-v<version>`` suffix (module docstring); ``None`` when it carries none."""
    labels = ((template or {}).get("metadata") or {}).get("labels") or {}
    label = labels.get(VERSION_LABEL) if isinstance(labels, Mapping) else None
    if isinstance(label, str) and is_addon_version(label):
        return label
    suffix = name.rsplit("-", 1)[-1]
    return suffix if suffix.startswith("v") and is_addon_version(suffix) else None


def addon_templates(objects: Iterable[Mapping[str, Any]], addon: str) -> dict[str, str]:
    """The AddOnTemplates of add-on ``addon`` (``spec.addonName``) among ``objects`` that carry a version:
    template name → version."""
    found = {}
    for item in objects:
        name = (item.get("metadata") or {}).get("name")
        if item.get("kind") != TEMPLATE_KIND or (item.get("spec") or {}).get("addonName") != addon:
            continue
        version = template_version(name, item) if isinstance(name, str) else None
        if version is not None:
            found[str(name)] = version
    return found
