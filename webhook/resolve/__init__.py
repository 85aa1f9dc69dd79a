"""OLM v1 bundle resolution over File-Based Catalogs (operator-controller ``internal/operator-controller/resolve``)."""
