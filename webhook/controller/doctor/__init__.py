"""``upgrade-gate doctor``: does the installed gate really hold OLM v1 upgrades on this cluster?

The gate holds an upgrade by denying operator-controller's CREATE of the new release (operator-controller's appliers,
``internal/operator-controller/applier/{helm,boxcutter}.go``):
a Helm release index Secret (``type: operatorframework.io/index.v1``, labels ``owner=operator-controller``,
``type=index``, ``status=pending-upgrade``) in operator-controller's namespace, or a ``ClusterObjectSet`` with the
Boxcutter applier. The chart's webhooks ``upgrades-helm.upgrade-gate.dev`` and ``upgrades-boxcutter.upgrade-gate.dev``
send only that write, selected by namespace (``webhook.gate.olmNamespace``) and user
(``webhook.gate.operatorControllerUsers``); the policy admits only writes of the users of the settings' key
``operatorControllerUsers``. If operator-controller runs elsewhere or as someone else, no request ever reaches the
gate and upgrades go through silently: these checks find that out.

Checks (``Check``: an id, ``ok`` / ``warn`` / ``fail``, a one-line message, and what to do), pure functions over the
objects read from the cluster as plain JSON dicts (``Observed``), in the order ``examine`` runs them:

============================== ========================================================================================
``operator-controller``        where it runs and as whom: a Deployment labelled ``app.kubernetes.io/name=operator-
                               controller`` or named ``operator-controller-controller-manager`` (its namespace and
                               ``serviceAccountName`` give ``system:serviceaccount:NS:SA``); else the namespaces of
                               Helm release Secrets (``owner=operator-controller``); else those of the Secrets the
                               ClusterObjectSets refer to (``olm.operatorframework.io/revision-name``, in OLM's
                               system namespace). A namespace found without a Deployment assumes upstream's
                               ServiceAccount (``warn``); nothing found is a ``warn``.
``applier``                    Boxcutter when ``BoxcutterRuntime=true`` in the Deployment's ``--feature-gates`` (the
                               gate is Alpha, off by default, in operator-controller v1.11.0) or when ClusterObjectSets
                               labelled ``olm.operatorframework.io/owner-kind=ClusterExtension`` exist; else Helm.
``gate-webhooks``              a ValidatingWebhookConfiguration holds the applier's gate webhook, and the API server
                               would send operator-controller's upgrade write to it: its ``rules``,
                               ``namespaceSelector`` (namespaced Secrets only, on the Namespace's labels),
                               ``objectSelector`` and ``matchConditions`` (evaluated with upgrade-gate's CEL engine on
                               the write operator-controller makes, as the API server does) all match, and its
                               ``failurePolicy`` is ``Fail`` (``Ignore``: a ``warn``).
``settings``                   the ConfigMap ``upgrade-gate-settings`` exists and its ``operatorControllerUsers``
                               (comma-separated; absent: the policy's default, upstream's ServiceAccount in
                               ``olmv1-system``) names operator-controller's user. Not found: a ``warn``, since the
                               webhook reads the settings of its policy directory first, which no read here sees.
``revision-crd``               ``clusterextensionrevisions.olm.operatorframework.io`` is upgrade-gate's: its schema has
                               ``spec.clusterExtensionRef`` and ``spec.version``. Older OLM v1 releases shipped an
                               experimental CRD of that name (the object renamed ClusterObjectSet in v1.9.0): ``fail``.
                               Without the chart's Helm labels: ``warn``. Absent: ``warn`` (nothing can be approved).
``webhook-ready``              GET ``/readyz`` of each gate webhook's Service through the API server's service proxy
                               answers 200; anything else (RBAC forbidding ``services/proxy``, no endpoint, not
                               ready, a ``url`` clientConfig that the proxy cannot reach) is a ``warn`` saying why.
``one-operator-controller``    more than one operator-controller found: a ``warn`` (each must be held).
============================== ========================================================================================

``diagnose`` reads through ``DoctorReads`` (``webhook.io.kube.Cluster`` implements it) and hands the objects to
``examine``; the controller can run the same checks on its own reads. Modules: ``model`` (the ids, names and
values above), ``operatorcontroller`` (finding it; ``operator-controller``, ``applier``,
``one-operator-controller``), ``gatewebhooks``, ``settings``, ``revisioncrd``, ``readiness`` (``webhook-ready``)
and ``diagnosis`` (``diagnose``, ``examine``).
"""

from webhook.controller.doctor.diagnosis import diagnose, examine
from webhook.controller.doctor.model import (
    DEFAULT_SETTINGS_NAMESPACE,
    FAIL,
    RESULTS,
    REVISION_CRD_NAME,
    Check,
    DoctorReads,
    Observed,
    Report,
)

__all__ = [
    "DEFAULT_SETTINGS_NAMESPACE",
    "FAIL",
    "RESULTS",
    "REVISION_CRD_NAME",
    "Check",
    "DoctorReads",
    "Observed",
    "Report",
    "diagnose",
    "examine",
]
