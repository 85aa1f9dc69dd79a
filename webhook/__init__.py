"""upgrade-gate: govern operator upgrades as code.

Subpackages, top layer first (the contract is checked by import-linter, see ``pyproject.toml``):
``cli`` → ``admission | gitops`` → ``policy | resolve`` → ``versions | catalog | kube`` → ``settings | logs``
→ ``errors``.
"""
