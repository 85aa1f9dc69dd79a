"""The code checks that are part of the test suite: lint, format, types and the layer contract."""

from __future__ import annotations

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
