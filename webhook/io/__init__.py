"""Everything that talks to the world: git, forges, the Kubernetes API."""
