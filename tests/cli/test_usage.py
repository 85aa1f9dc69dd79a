"""A usage error of any command (a missing file, an unknown command or option, a bad value) is one line on stderr
and exit 2, as every other bad input, never click's usage block."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from webhook.cli import main


@pytest.mark.parametrize(
    ("argv", "line"),
    [
        pytest.param(["resolve", "-f", "nosuch.yaml"],
                     "upgrade-gate: Invalid value for '-f' / '--filename': Path 'nosuch.yaml' does not exist. "
                     "(see 'upgrade-gate resolve --help')", id="a file that does not exist"),
        pytest.param(["nosuch"], "upgrade-gate: No such command 'nosuch'. (see 'upgrade-gate --help')",
                     id="an unknown command"),
        pytest.param(["policy", "test", "--bogus"],
                     "upgrade-gate: No such option '--bogus'. (see 'upgrade-gate policy test --help')",
                     id="an unknown option of a nested command"),
        pytest.param(["controller", "--workers", "0"],
                     "upgrade-gate: Invalid value for '--workers': 0 is not in the range x>=1. "
                     "(see 'upgrade-gate controller --help')", id="a value out of range"),
    ],
)  # fmt: skip
def test_a_usage_error_is_one_line_and_exit_2(argv: list[str], line: str) -> None:
    result = CliRunner().invoke(main, argv, prog_name="upgrade-gate")
    assert (result.exit_code, result.stdout, result.stderr) == (2, "", line + "\n")
