"""OLM v1 semantics: version dialects, File-Based Catalogs, resolution, and what operator-controller's release
objects say."""
