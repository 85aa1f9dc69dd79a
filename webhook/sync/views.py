"""Where the add-on planner's facts come from: the cluster, or offline the repository's manifests.

``AddOnView`` is the protocol (``webhook.io.kube.cluster.Cluster`` implements it with the kubernetes client);
``ObjectsView`` implements it over objects in memory, the manifests read from the repository (``installed:
status``) or a test's fake cluster. Objects keep the shapes of Open Cluster Management's API:
``addon.open-cluster-management.io/v1alpha1`` ClusterManagementAddOn (cluster-scoped) and ManagedClusterAddOn
(in the cluster's namespace), ``cluster.open-cluster-management.io/v1beta1`` PlacementDecision (labelled
``cluster.open-cluster-management.io/placement: <placement>``, ``status.decisions[].clusterName``).

``observe`` asks a view what ``plan_addon`` needs for one add-on: five kinds of lookup, a call per placement and per
canary cluster. ``work.open-cluster-management.io/v1`` ManifestWorks (label ``open-cluster-management.io/addon-name``)
and ``addon.open-cluster-management.io/v1alpha1`` AddOnTemplates (``spec.addonName``) are read as served too.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Protocol

from webhook.ocm import ADDON_LABEL, TEMPLATE_KIND
from webhook.plan import (
    MANAGED_ADDON_KIND,
    MANAGEMENT_ADDON_KIND,
    PLACEMENT_DECISION_KIND,
    PLACEMENT_LABEL,
    AddOnDocuments,
    AddOnManifests,
    AddOnState,
    decided_clusters,
    listed_canaries,
    placement_entries,
    placement_key,
)

WORK_KIND = "ManifestWork"


class AddOnView(Protocol):
    """Read-only lookups of add-on objects (JSON-shaped mappings, as the API returns them)."""

    def cluster_management_addon(self, name: str) -> Mapping[str, Any] | None:
        """The ClusterManagementAddOn ``name``, or ``None``."""

    def placement_decisions(self, namespace: str, placement: str) -> Sequence[Mapping[str, Any]]:
        """The PlacementDecisions in ``namespace`` labelled ``cluster.open-cluster-management.io/placement:
        <placement>``, sorted by name; empty when there are none (or the kind is not served)."""

    def managed_cluster_addon(self, name: str, namespace: str) -> Mapping[str, Any] | None:
        """The ManagedClusterAddOn ``name`` in the cluster namespace ``namespace``, or ``None``."""

    def manifest_works(self, namespace: str, addon: str) -> Sequence[Mapping[str, Any]]:
        """The ManifestWorks in cluster namespace ``namespace`` labelled ``open-cluster-management.io/addon-name:
        <addon>``, sorted by name; empty when there are none (or the kind is not served)."""

    def addon_templates(self, addon: str) -> Sequence[Mapping[str, Any]]:
        """The AddOnTemplates whose ``spec.addonName`` is ``addon``, sorted by name; empty when there are none (or
        the kind is not served)."""


class ObjectsView:
    """An ``AddOnView`` over objects in memory; objects of other kinds, or without a name, are ignored.

    Kinds are matched by name whatever the API version, since manifests in Git may use v1alpha1 or v1beta1.
    """

    def __init__(self, objects: Iterable[Mapping[str, Any]]) -> None:
        self._objects: dict[tuple[str, str, str], Mapping[str, Any]] = {}
        self._decisions: dict[tuple[str, str], list[tuple[str, Mapping[str, Any]]]] = {}
        self._works: dict[tuple[str, str], list[tuple[str, Mapping[str, Any]]]] = {}
        self._templates: dict[str, list[tuple[str, Mapping[str, Any]]]] = {}
        for item in objects:
            metadata = item.get("metadata") or {}
            kind, name, namespace = item.get("kind"), metadata.get("name"), str(metadata.get("namespace") or "")
            if not isinstance(kind, str) or not isinstance(name, str):
                continue
            self._objects[(kind, namespace, name)] = item
            labels = metadata.get("labels") or {}
            placement, addon = labels.get(PLACEMENT_LABEL), labels.get(ADDON_LABEL)
            if kind == PLACEMENT_DECISION_KIND and isinstance(placement, str):
                self._decisions.setdefault((namespace, placement), []).append((name, item))
            elif kind == WORK_KIND and isinstance(addon, str):
                self._works.setdefault((namespace, addon), []).append((name, item))
            elif kind == TEMPLATE_KIND and isinstance(addon := (item.get("spec") or {}).get("addonName"), str):
                self._templates.setdefault(addon, []).append((name, item))

    @classmethod
    def of_documents(cls, found: AddOnDocuments) -> ObjectsView:
        """The view of the repository's add-on manifests, PlacementDecisions and AddOnTemplates, status included."""
        docs = [*found.decisions, *found.templates]
        for addon in found.addons:
            docs += [*([addon.management] if addon.management else []), *addon.managed]
        return cls(doc.manifest for doc in docs)

    def cluster_management_addon(self, name: str) -> Mapping[str, Any] | None:
        """See ``AddOnView``."""
        return self._objects.get((MANAGEMENT_ADDON_KIND, "", name))

    def placement_decisions(self, namespace: str, placement: str) -> Sequence[Mapping[str, Any]]:
        """See ``AddOnView``."""
        return _sorted(self._decisions.get((namespace, placement), ()))

    def managed_cluster_addon(self, name: str, namespace: str) -> Mapping[str, Any] | None:
        """See ``AddOnView``."""
        return self._objects.get((MANAGED_ADDON_KIND, namespace, name))

    def manifest_works(self, namespace: str, addon: str) -> Sequence[Mapping[str, Any]]:
        """See ``AddOnView``."""
        return _sorted(self._works.get((namespace, addon), ()))

    def addon_templates(self, addon: str) -> Sequence[Mapping[str, Any]]:
        """See ``AddOnView``."""
        return _sorted(self._templates.get(addon, ()))


def _sorted(named: Iterable[tuple[str, Mapping[str, Any]]]) -> list[Mapping[str, Any]]:
    return [item for _, item in sorted(named, key=lambda pair: pair[0])]


def observe(view: AddOnView, addon: AddOnManifests, canary_placements: Sequence[str], source: str) -> AddOnState:
    """What ``view`` says about ``addon``: its ClusterManagementAddOn, the PlacementDecisions of each placement it
    lists (those of the configured canary placements apart), its ManagedClusterAddOns on the canary clusters with
    their ManifestWorks, and its AddOnTemplates. ``source`` is ``cluster`` or ``status``. Raises what the view
    raises (``ClusterError`` from a cluster)."""
    management = view.cluster_management_addon(addon.name)
    placements = {
        key: tuple(view.placement_decisions(*key.split("/", 1)))
        for key in map(placement_key, placement_entries(addon, management))
    }
    decisions = [d for canary in listed_canaries(addon, management, canary_placements) for d in placements[canary]]
    canaries = [view.managed_cluster_addon(addon.name, cluster) for cluster in decided_clusters(decisions)]
    found = tuple(c for c in canaries if c is not None)
    works = {
        str(c["metadata"]["namespace"]): tuple(view.manifest_works(c["metadata"]["namespace"], addon.name))
        for c in found
    }
    templates = tuple(view.addon_templates(addon.name))
    return AddOnState(management, tuple(decisions), found, source, works, placements, templates)
