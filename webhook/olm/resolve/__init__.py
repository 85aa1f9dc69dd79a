"""OLM v1 bundle resolution over File-Based Catalogs.

Follows operator-controller ``internal/operator-controller/resolve`` and ``catalogmetadata/filter``.
"""
