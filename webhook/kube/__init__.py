"""The only code that talks to a Kubernetes cluster, through the official ``kubernetes`` client.

Everything else reaches cluster data through protocols it is handed (``webhook.objects.ObjectStore``
and the sync loop's cluster view), so the rest of upgrade-gate runs and tests without a cluster.
"""
