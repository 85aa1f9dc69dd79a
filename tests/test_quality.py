"""The code checks that are part of the test suite: lint, format, types, the layer contract and the packages'
public surfaces."""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent


def _run(*argv: str) -> None:
    tool = shutil.which(argv[0], path=str(BIN)) or argv[0]
    done = subprocess.run([tool, *argv[1:]], cwd=ROOT, capture_output=True, text=True, check=False)
    assert done.returncode == 0, f"{' '.join(argv)} failed:\n{done.stdout}\n{done.stderr}"


@pytest.mark.parametrize(
    "argv",
    [
        pytest.param(("ruff", "check", "."), id="ruff finds no lint"),
        pytest.param(("ruff", "format", "--check", "."), id="ruff finds the code formatted"),
        pytest.param(("mypy",), id="mypy strict finds no type error"),
        pytest.param(("lint-imports", "--no-cache"), id="import-linter finds the layer contract kept"),
    ],
)
def test_code_check(argv: tuple[str, ...]) -> None:
    _run(*argv)


#: The subpackages that declare a public surface (``__all__`` in their ``__init__.py``).
PACKAGES = (
    "webhook.cli",
    "webhook.controller",
    "webhook.io",
    "webhook.io.forges",
    "webhook.io.kube",
    "webhook.ocm",
    "webhook.olm",
    "webhook.plan",
    "webhook.policy",
    "webhook.cel",
    "webhook.cel.estimate",
    "webhook.serve",
    "webhook.sync",
    "webhook.versions",
)


def surface_violations(root: Path, packages: tuple[str, ...] = PACKAGES) -> list[str]:
    """Where modules of ``root/webhook`` break the surface rule, as ``module:line: problem`` lines.

    The rule: a module outside package P imports from P only as ``from webhook.P import name``, with ``name`` in
    P's ``__all__``. P is the innermost of ``packages`` that holds the imported module (``webhook.olm.resolve.resolver``
    belongs to ``webhook.olm``, ``webhook.io.kube.cache`` to ``webhook.io.kube``); modules inside P import P's modules
    directly. Re-exporting through ``__init__`` costs nothing at start-up that importing the modules did not (the
    layers keep the packages acyclic; the CLI imports ``webhook.serve``, Flask and gunicorn, inside the commands
    that serve).
    """
    surfaces: dict[str, set[str]] = {}
    problems: list[str] = []
    for package in packages:
        init = root.joinpath(*package.split("."), "__init__.py")
        declared = [
            node.value
            for node in ast.parse(init.read_text("utf-8")).body
            if (isinstance(node, ast.Assign) and [getattr(t, "id", "") for t in node.targets] == ["__all__"])
            or (isinstance(node, ast.AnnAssign) and getattr(node.target, "id", "") == "__all__")
        ]
        if not declared or declared[0] is None:
            problems.append(f"{package}: __init__.py declares no __all__")
        surfaces[package] = set(ast.literal_eval(declared[0])) if declared and declared[0] is not None else set()
    for path in sorted((root / "webhook").rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        module = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if not isinstance(node, ast.ImportFrom) or node.level or not (node.module or "").startswith("webhook."):
                continue
            target = node.module or ""
            holders = [p for p in packages if target == p or target.startswith(p + ".")]
            if not holders:
                continue
            package = max(holders, key=len)
            if module == package or module.startswith(package + "."):
                continue
            if target != package:
                problems.append(f"{module}:{node.lineno}: imports {target}; import from {package}")
            problems += [
                f"{module}:{node.lineno}: {alias.name} is not in {package}.__all__"
                for alias in node.names
                if alias.name not in surfaces[package]
            ]
    return problems


def test_packages_are_imported_through_their_public_surface() -> None:
    assert surface_violations(ROOT) == []


def test_the_surface_check_finds_a_module_import_and_a_name_outside_the_surface(tmp_path: Path) -> None:
    files = {
        "webhook/__init__.py": "",
        "webhook/a/__init__.py": 'from webhook.a.inner import f, g\n\n__all__ = ["f"]\n',
        "webhook/a/inner.py": "def f() -> None: ...\ndef g() -> None: ...\n",
        "webhook/b/__init__.py": '"""No surface declared."""\n',
        "webhook/b/user.py": "from webhook.a import f, g\nfrom webhook.a.inner import f as h\n",
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text, encoding="utf-8")
    assert surface_violations(tmp_path, ("webhook.a", "webhook.b")) == [
        "webhook.b: __init__.py declares no __all__",
        "webhook.b.user:1: g is not in webhook.a.__all__",
        "webhook.b.user:2: imports webhook.a.inner; import from webhook.a",
    ]
