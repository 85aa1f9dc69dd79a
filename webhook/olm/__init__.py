"""OLM v1 semantics: version dialects, File-Based Catalogs, resolution, and what operator-controller's release
objects say."""

from webhook.olm.catalog import Catalog, VersionRelease
from webhook.olm.fbc import catalog_from_cluster_catalog, catalog_from_stream, load_catalog
from webhook.olm.release import read_release
from webhook.olm.resolve.extension import API_VERSION, ClusterExtension, InstalledBundle
from webhook.olm.resolve.resolver import Resolution
from webhook.olm.resolve.revision import RevisionProposal, UpgradeCheck, check_extension, is_pinned
from webhook.olm.resolve.successors import Edge

__all__ = [
    "API_VERSION",
    "Catalog",
    "ClusterExtension",
    "Edge",
    "InstalledBundle",
    "Resolution",
    "RevisionProposal",
    "UpgradeCheck",
    "VersionRelease",
    "catalog_from_cluster_catalog",
    "catalog_from_stream",
    "check_extension",
    "is_pinned",
    "load_catalog",
    "read_release",
]
