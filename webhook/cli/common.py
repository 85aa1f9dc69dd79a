"""What every command shares: turning the error tree into one stderr line and an exit code; shared options."""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from typing import Any, NoReturn, ParamSpec, TypeVar

import click

from webhook.errors import InputError, UpgradeGateError
from webhook.settings import CEL_ENGINES, DEFAULT_CEL_ENGINE

P = ParamSpec("P")
R = TypeVar("R")

EXIT_NEGATIVE = 1
EXIT_BAD_INPUT = 2


def cel_engine_option(default: str | None = DEFAULT_CEL_ENGINE) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """``--cel-engine cel-python|cel-expr``: the CEL backend that compiles and evaluates the policies
    (``default`` ``None``: the command's settings decide)."""
    shown = default or f"{DEFAULT_CEL_ENGINE}, or UPGRADE_GATE_CEL_ENGINE"
    return click.option(
        "--cel-engine",
        type=click.Choice(CEL_ENGINES),
        default=default,
        help=f"CEL backend: cel-python (pure Python) or cel-expr (cel-cpp, faster).  [default: {shown}]",
    )


def fail(message: str, code: int = EXIT_BAD_INPUT) -> NoReturn:
    """Print ``upgrade-gate: <message>`` on stderr and exit with ``code``."""
    click.echo(f"upgrade-gate: {message}", err=True)
    raise SystemExit(code)


def handle_errors(command: Callable[P, R]) -> Callable[P, R]:
    """Map the error tree to exit codes: ``InputError`` 2, any other ``UpgradeGateError`` 1."""

    @functools.wraps(command)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return command(*args, **kwargs)
        except InputError as error:
            fail(str(error), EXIT_BAD_INPUT)
        except UpgradeGateError as error:
            fail(str(error), EXIT_NEGATIVE)

    return wrapper


def echo_json(document: Any) -> None:
    """Print ``document`` as indented JSON with sorted keys (stable for diffs and tests)."""
    click.echo(json.dumps(document, indent=2, sort_keys=True))
