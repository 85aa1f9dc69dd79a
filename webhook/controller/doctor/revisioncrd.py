"""The check ``revision-crd``: the ClusterExtensionRevision CRD installed is upgrade-gate's, not an older OLM v1's
experimental CRD of that name."""

from __future__ import annotations

from webhook.controller.doctor.model import FAIL, OK, REVISION_CRD, REVISION_CRD_NAME, WARN, Check
from webhook.objects import KubeObject


def check_revision_crd(crd: KubeObject | None) -> Check:
    """``revision-crd``: the ClusterExtensionRevision CRD is upgrade-gate's (a ``spec`` schema with
    ``clusterExtensionRef`` and ``version`` in some version), not the experimental CRD of that name an older OLM v1
    shipped (``spec.revision``, ``phases``, ``lifecycleState``; renamed ClusterObjectSet in v1.9.0)."""
    if crd is None:
        return Check(
            REVISION_CRD,
            WARN,
            f"CRD {REVISION_CRD_NAME} is not installed: no upgrade can be approved, every upgrade stays held",
            "install the chart with crds.install=true (the default)",
        )
    fields: set[str] = set()
    ours = False
    for version in (crd.get("spec") or {}).get("versions") or []:
        schema = ((version.get("schema") or {}).get("openAPIV3Schema") or {}).get("properties") or {}
        spec = set(((schema.get("spec") or {}).get("properties") or {}).keys())
        fields |= spec
        ours = ours or {"clusterExtensionRef", "version"} <= spec
    metadata = crd.get("metadata") or {}
    labels, annotations = metadata.get("labels") or {}, metadata.get("annotations") or {}
    if not ours:
        origin = []
        if annotations.get("olm.operatorframework.io/generator"):
            origin.append(f"OLM generator {annotations['olm.operatorframework.io/generator']}")
        if annotations.get("meta.helm.sh/release-name"):
            origin.append(
                f"Helm release {annotations.get('meta.helm.sh/release-namespace', '')}/"
                f"{annotations['meta.helm.sh/release-name']}"
            )
        if labels.get("app.kubernetes.io/part-of"):
            origin.append(f"part of {labels['app.kubernetes.io/part-of']}")
        origin_text = f", {', '.join(origin)}" if origin else ""
        return Check(
            REVISION_CRD,
            FAIL,
            f"CRD {REVISION_CRD_NAME} is not upgrade-gate's (spec fields {', '.join(sorted(fields)) or 'none'}, no "
            f"clusterExtensionRef/version{origin_text}): an older OLM v1's experimental ClusterExtensionRevision "
            "(renamed ClusterObjectSet in v1.9.0); no upgrade can be approved",
            "upgrade OLM v1 to v1.9.0 or later, then delete this CRD once no OLM uses it (kubectl delete crd "
            f"{REVISION_CRD_NAME} deletes its objects) and upgrade the upgrade-gate release",
        )
    chart = str(labels.get("helm.sh/chart", ""))
    if labels.get("app.kubernetes.io/managed-by") != "Helm" or not chart.startswith("upgrade-gate-"):
        return Check(
            REVISION_CRD,
            WARN,
            f"CRD {REVISION_CRD_NAME} has upgrade-gate's schema but not the chart's labels (app.kubernetes.io/"
            "managed-by: Helm, helm.sh/chart: upgrade-gate-*): helm upgrade will not keep it current",
            "let the chart own it (crds.install=true; Helm adopts it with its meta.helm.sh/release-name and "
            "release-namespace annotations)",
        )
    return Check(REVISION_CRD, OK, f"CRD {REVISION_CRD_NAME} is upgrade-gate's ({chart})")
