"""The only code that talks to a Kubernetes cluster, through the official ``kubernetes`` client.

Everything else reaches cluster data through protocols it is handed (``webhook.objects.ObjectStore``
and the sync loop's cluster view), so the rest of upgrade-gate runs and tests without a cluster.
"""

from webhook.io.kube.cache import ApiSource, Resource, Source, WatchCache, policy_resources
from webhook.io.kube.cluster import Cluster, LeaseElector, connect
from webhook.io.kube.writer import ApiWriter, WriteError

__all__ = [
    "ApiSource",
    "ApiWriter",
    "Cluster",
    "LeaseElector",
    "Resource",
    "Source",
    "WatchCache",
    "WriteError",
    "connect",
    "policy_resources",
]
