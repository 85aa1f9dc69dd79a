"""``upgrade-gate cel eval``: evaluate one expression in the policies' CEL environment."""

from __future__ import annotations

import datetime
import json
from pathlib import Path
from typing import Any

import click

from webhook.cli.common import (
    EXIT_NEGATIVE,
    cel_engine_option,
    echo_json,
    fail,
    handle_errors,
    kubernetes_version_option,
    now_option,
)
from webhook.errors import CelCompileError, CelEvaluationError, InputError
from webhook.manifests import iter_yaml_documents, read_text
from webhook.policy import evaluate


@click.group()
def cel() -> None:
    """Work with CEL expressions as the admission policies see them."""


@cel.command("eval")
@click.argument("expression")
@click.option(
    "--var",
    "variables",
    multiple=True,
    metavar="NAME=JSON|@FILE",
    help="A variable: a JSON value, or @FILE (YAML or JSON). Repeat for several.",
)
@now_option()
@cel_engine_option()
@kubernetes_version_option()
@handle_errors
def eval_command(
    expression: str, variables: tuple[str, ...], now: datetime.datetime, cel_engine: str, kubernetes_version: str
) -> None:
    """Evaluate EXPRESSION and print the result as JSON.

    The environment is the policies' own: the Kubernetes CEL libraries and upgrade-gate's extensions.
    The result is one JSON value, so there is no -o: no table, and no test cases for JUnit.
    Exit 1 for an evaluation error, 2 for a compile error or bad --var or --now.

    \b
    Examples:
      upgrade-gate cel eval 'semver("1.2.3").isLessThan(semver("1.10.0"))'
      upgrade-gate cel eval 'object.spec.version' --var object=@revision.yaml
      upgrade-gate cel eval 'olm.inRange(v, ">=1.2 <2")' --var v='"1.4.0"'
    """
    values = dict(_variable(text) for text in variables)
    try:
        result = evaluate(expression, values, now=now, engine=cel_engine, kubernetes_version=kubernetes_version)
    except CelCompileError as error:
        raise InputError(f"compile error: {error}") from None
    except CelEvaluationError as error:
        fail(f"evaluation error: {error}", EXIT_NEGATIVE)
    echo_json(result)


def _variable(text: str) -> tuple[str, Any]:
    name, sep, raw = text.partition("=")
    if not sep or not name.isidentifier():
        raise InputError(f"--var {text!r}: expected NAME=JSON or NAME=@FILE")
    if raw.startswith("@"):
        path = Path(raw[1:])
        documents = [doc for doc, _ in iter_yaml_documents(read_text(path), str(path))]
        if len(documents) != 1:
            raise InputError(f"{path}: expected exactly one YAML or JSON document for --var {name}")
        return name, documents[0]
    try:
        return name, json.loads(raw)
    except json.JSONDecodeError as error:
        raise InputError(f"--var {name}: {raw!r} is not JSON ({error.msg}); quote strings: {name}='\"text\"'") from None
