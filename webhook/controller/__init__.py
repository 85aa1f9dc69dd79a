"""``upgrade-gate controller``: the in-cluster reconciler of ClusterExtensionRevisions (a front end beside ``serve``
and ``sync``).

Pure decisions (table-tested): ``status`` (the revision's state and its conditions), ``events`` (which Events a
change calls for), ``lifecycle`` (``cluster`` mode: which revision to create, update or delete). Around them:
``reconciler`` (one ClusterExtension, from the watch cache), ``recorder`` (``events.k8s.io/v1`` Events with
client-go's deduplication), ``catalogs`` (the cluster's ClusterCatalogs through catalogd), ``queue`` (the work
queue with backoff), ``health`` (metrics, ``/healthz``, ``/readyz``) and ``run`` (caches, leader, worker).
``doctor`` (``upgrade-gate doctor``): pure checks that the installed gate really holds OLM v1 upgrades, over the
objects ``diagnose`` reads.
"""

from webhook.controller.catalogs import CatalogLoader
from webhook.controller.doctor import DEFAULT_SETTINGS_NAMESPACE, Check, Report, diagnose
from webhook.controller.health import Metrics
from webhook.controller.recorder import CONTROLLER_NAME, EventRecorder
from webhook.controller.run import Controller, EventsOverApi

__all__ = [
    "CONTROLLER_NAME",
    "DEFAULT_SETTINGS_NAMESPACE",
    "CatalogLoader",
    "Check",
    "Controller",
    "EventRecorder",
    "EventsOverApi",
    "Metrics",
    "Report",
    "diagnose",
]
