"""The GitOps sync loop and the review of pull requests: the only code that runs ``git`` or calls a forge.

``config`` (upgrade-gate.yaml) · ``manifests`` (repository files) · ``proposals`` (the pure plan) ·
``templates`` (catalog image templates) · ``addonplans`` (the pure add-on installVersion plan) · ``addonviews``
(add-on facts from the cluster or the manifests) · ``yamledit`` (in-place scalar edits) · ``body`` (pull request
text) · ``policycheck`` (the policies' verdict on a proposal) · ``repo`` (git) · ``forge`` (GitHub/GitLab REST) ·
``fakeforge`` (a loopback fake GitHub) · ``sources`` (catalogs, cluster) · ``sync`` (one cycle, its lock and its
report) · ``requests`` (admission requests a manifest makes, and their evaluation) · ``changes`` (the governed
objects two trees differ by) · ``review`` (a change's requests as the applier and the reviewers) · ``reviewrun``
(one ``upgrade-gate review``: git, forge and policies).
"""
