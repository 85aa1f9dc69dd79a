"""The import contracts can fail: in a throw-away copy of the package, one probe module per contract makes the
import that contract forbids, and import-linter must report that contract broken. A contract that a probe
cannot break checks nothing (a source list that misses the package the probe lives in, say)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LINT_IMPORTS = shutil.which("lint-imports", path=str(Path(sys.executable).parent)) or "lint-imports"

#: (a word of the contract's name, the probe's path in the package, its import). Each probe sits where a
#: careless change would put it: a module the contract's author did not think of.
PROBES = [
    ("layers of docs", "webhook/policy/_probe.py", "import webhook.serve"),
    ("Inside webhook.policy", "webhook/policy/admitting/_probe.py", "import webhook.policy.loading.loader"),
    ("pure core", "webhook/olm/_probe.py", "import subprocess"),
    ("flask", "webhook/controller/_probe.py", "import flask"),
    ("celpy", "webhook/policy/_probe.py", "import celpy"),
    ("kubernetes client", "webhook/sync/_probe.py", "import kubernetes"),
    ("backends are independent", "webhook/cel/celexpr/_probe.py", "import webhook.cel.celpython"),
    ("front end, cost estimator", "webhook/cel/estimate/_probe.py", "import webhook.cel.celexpr"),
    ("public API", "webhook/controller/_probe.py", "from webhook.cel.celexpr import backend"),
]


def _contract_names() -> list[str]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))
    return [contract["name"] for contract in config["tool"]["importlinter"]["contracts"]]


def test_every_contract_has_a_probe() -> None:
    names = _contract_names()
    for name in names:
        assert sum(word in name for word, _, _ in PROBES) == 1, f"no single probe for the contract {name!r}"
    assert len(PROBES) == len(names)


@pytest.fixture(scope="module")
def copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("contracts")
    shutil.copytree(ROOT / "webhook", root / "webhook", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", root / "pyproject.toml")
    return root


def _broken(root: Path) -> list[str]:
    """The names of the contracts lint-imports reports broken for the package under ``root``."""
    env = {**os.environ, "PYTHONPATH": str(root)}  # the copy, not the installed package
    done = subprocess.run([LINT_IMPORTS, "--no-cache"], cwd=root, env=env, capture_output=True, text=True, check=False)
    report = "".join(done.stdout.split())  # lint-imports wraps long names, and may join a name and its verdict
    return [name for name in _contract_names() if "".join(name.split()) + "BROKEN" in report]


@pytest.mark.parametrize(("word", "path", "statement"), PROBES, ids=[word for word, _, _ in PROBES])
def test_a_forbidden_import_breaks_its_contract(copy: Path, word: str, path: str, statement: str) -> None:
    probe = copy / path
    probe.write_text(f"{statement}  # a probe\n", "utf-8")
    try:
        broken = _broken(copy)
    finally:
        probe.unlink()
    assert [name for name in broken if word in name], f"{statement} in {path} broke only {broken}"


def test_the_copy_keeps_every_contract(copy: Path) -> None:
    """The probes prove something only if the unprobed copy passes."""
    assert _broken(copy) == []
    assert not list(copy.rglob("_probe.py"))
