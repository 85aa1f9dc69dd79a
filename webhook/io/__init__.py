"""Everything that talks to the world: git, forges, the Kubernetes API."""

from webhook.io.catalogd import fetch_catalog, open_catalog
from webhook.io.git import Author, Credentials, NewCommit, RefUpdate, Repo

__all__ = ["Author", "Credentials", "NewCommit", "RefUpdate", "Repo", "fetch_catalog", "open_catalog"]
