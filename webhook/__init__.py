"""upgrade-gate: govern operator upgrades as code.

Subpackages, top layer first (the contract is checked by import-linter, see ``pyproject.toml``):
``cli`` → ``serve | sync | controller`` → ``io`` → ``plan`` → ``policy`` → ``olm | ocm`` →
``objects | manifests | conditions | windows | versions`` → ``golang`` → ``settings | logs`` → ``errors``.
Each subpackage declares its public surface (``__all__``); other packages import from it only those names
(``tests/test_quality.py``).
"""
