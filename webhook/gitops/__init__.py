"""The GitOps sync loop: the only code that runs ``git`` or calls a forge.

``config`` (upgrade-gate.yaml) · ``manifests`` (repository files) · ``proposals`` (the pure plan) ·
``templates`` (catalog image templates) · ``body`` (pull request text) · ``repo`` (git) · ``forge``
(GitHub/GitLab REST) · ``fakeforge`` (a loopback fake GitHub) · ``sources`` (catalogs, cluster) ·
``sync`` (one cycle, its lock and its report).
"""
