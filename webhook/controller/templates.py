"""Catalog image templates on ClusterCatalogs in the cluster: the status they report and the image they switch to.
Pure: the template is rendered by ``webhook.plan.templates.render_template`` (the sync loop's renderer), the time is
passed in.

A ClusterCatalog annotated ``olm.catalogImageTemplate`` reports, in conditions the controller owns (the
catalog-switching design's; catalogd's own conditions keep their content and place):

* every variable resolved: ``TemplatesHaveResolved`` True ``AllTemplatesResolved`` ("catalog image reference was
  successfully resolved") and ``ResolvedImage`` True ``AllTemplatesResolved`` with the image as its message;
* a variable did not resolve: both False ``UnableToResolve``, the first with
  ``Cannot construct catalog image reference, variable(s) "{...}" couldn't be resolved``, the second with the
  template itself;
* no annotation (any more): neither condition (the user left automatic catalog switching).

In ``cluster`` mode a resolved image that differs from ``spec.source.image.ref`` replaces it (catalogd then
unpacks the new image as if a user had changed it); in ``gitops`` mode the sync loop proposes that change in Git.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any

from webhook.conditions import remove_condition, set_condition
from webhook.objects import KubeObject
from webhook.plan import TEMPLATE_ANNOTATION, TemplateResult

TEMPLATES_HAVE_RESOLVED, RESOLVED_IMAGE = "TemplatesHaveResolved", "ResolvedImage"
RESOLVED, UNABLE = "AllTemplatesResolved", "UnableToResolve"


def template_of(catalog: KubeObject) -> str | None:
    """The ClusterCatalog's ``olm.catalogImageTemplate`` annotation, or ``None``."""
    annotations = (catalog.get("metadata") or {}).get("annotations") or {}
    template = annotations.get(TEMPLATE_ANNOTATION)
    return template if isinstance(template, str) and template else None


def current_image(catalog: KubeObject) -> str | None:
    """``spec.source.image.ref``, or ``None``."""
    ref = (((catalog.get("spec") or {}).get("source") or {}).get("image") or {}).get("ref")
    return ref if isinstance(ref, str) else None


def catalog_status(catalog: KubeObject, result: TemplateResult | None, *, now: datetime.datetime) -> dict[str, Any]:
    """The status ``catalog`` should have for its rendered template (``None``: it has none), see the module doc."""
    status = catalog.get("status") if isinstance(catalog.get("status"), Mapping) else {}
    original = [dict(c) for c in (status or {}).get("conditions") or ()]
    conditions = original
    generation = int((catalog.get("metadata") or {}).get("generation") or 0)
    template = template_of(catalog)
    if result is None or template is None:
        for kind in (TEMPLATES_HAVE_RESOLVED, RESOLVED_IMAGE):
            conditions = remove_condition(conditions, kind)
    else:
        if result.image is not None:
            rows = [
                ("True", RESOLVED, "catalog image reference was successfully resolved"),
                ("True", RESOLVED, result.image),
            ]
        else:
            rows = [("False", UNABLE, result.message), ("False", UNABLE, template)]
        for kind, (state, reason, message) in zip((TEMPLATES_HAVE_RESOLVED, RESOLVED_IMAGE), rows, strict=True):
            condition = {"type": kind, "status": state, "reason": reason, "message": message}
            conditions = set_condition(conditions, {**condition, "observedGeneration": generation}, now=now)
    return {**(status or {}), "conditions": conditions} if conditions != original else dict(status or {})


def image_switch(catalog: KubeObject, result: TemplateResult | None) -> str | None:
    """The image reference to set on ``catalog``: the resolved one when it differs from the current one."""
    if result is None or result.image is None or result.image == current_image(catalog):
        return None
    return result.image
