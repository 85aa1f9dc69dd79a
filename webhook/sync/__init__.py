"""The GitOps sync loop: configuration, sources, views of the repository, one cycle."""
