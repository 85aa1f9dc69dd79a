"""What every command shares: the CLI convention (docs/cli.md, "Conventions").

Errors become one ``upgrade-gate: <what is wrong>`` line on stderr and an exit code (0 success, 1 a negative
result, 2 bad input, 3 a service the command needs was unavailable: retry); ``output_options`` gives every command
with results ``-o/--output`` and ``--output-file``; ``now_option`` gives ``--now RFC3339``; ``table`` and
``junit_suite`` render results the same way everywhere.
"""

from __future__ import annotations

import datetime
import functools
import json
import os
import tempfile
import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn, ParamSpec, TypeVar

import click

from webhook.errors import InputError, Unavailable, UpgradeGateError
from webhook.settings import (
    CEL_ENGINES,
    DEFAULT_CEL_ENGINE,
    DEFAULT_KUBERNETES_VERSION,
    KUBERNETES_VERSIONS,
    kubernetes_version,
    kubernetes_version_from_env,
)

P = ParamSpec("P")
R = TypeVar("R")

EXIT_NEGATIVE = 1
EXIT_BAD_INPUT = 2
EXIT_UNAVAILABLE = 3


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


def kubernetes_version_option(from_env: bool = True) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """``--kubernetes-version 1.34``: the cluster's Kubernetes version, whose apiserver's CEL libraries and admission
    APIs the policies are loaded for (``webhook.settings.KUBERNETES_VERSIONS``); without it,
    ``UPGRADE_GATE_KUBERNETES_VERSION``, else the newest (``from_env`` False: ``None``, the command's settings
    decide). A version not supported is a usage error."""

    def check(_context: click.Context, _parameter: click.Parameter, value: str | None) -> str | None:
        try:
            if value is None:
                return kubernetes_version_from_env() if from_env else None
            return kubernetes_version(value, "--kubernetes-version")
        except InputError as error:
            raise click.BadParameter(str(error)) from None

    return click.option(
        "--kubernetes-version",
        metavar="VERSION",
        callback=check,
        help=(
            f"The cluster's Kubernetes version ({', '.join(KUBERNETES_VERSIONS)}): a policy that uses a CEL library "
            "or an admission API it lacks does not load.  [default: UPGRADE_GATE_KUBERNETES_VERSION, else "
            f"{DEFAULT_KUBERNETES_VERSION}]"
        ),
    )


def fail(message: str, code: int = EXIT_BAD_INPUT) -> NoReturn:
    """Print ``upgrade-gate: <message>`` on stderr, on one line (``one_line``), and exit with ``code``."""
    click.echo(f"upgrade-gate: {one_line(message)}", err=True)
    raise SystemExit(code)


def warn(message: str) -> None:
    """Print ``upgrade-gate: warning: <message>`` on stderr, on one line; the command goes on."""
    click.echo(f"upgrade-gate: warning: {one_line(message)}", err=True)


def one_line(message: str) -> str:
    """A multi-line error (a policy set's problems, one per line after a heading) as its first line and first
    problem, and how many more there are."""
    lines = message.splitlines()
    if len(lines) <= 2:
        return " ".join(lines)
    return f"{lines[0]} {lines[1]} (and {len(lines) - 2} more)"


def exit_code(error: UpgradeGateError, otherwise: int = EXIT_NEGATIVE) -> int:
    """The exit code of ``error`` (``webhook.errors``): ``Unavailable`` 3, ``InputError`` 2, any other
    ``otherwise`` (1: an operational failure; a command that cannot have run at all says 2)."""
    if isinstance(error, Unavailable):
        return EXIT_UNAVAILABLE
    return EXIT_BAD_INPUT if isinstance(error, InputError) else otherwise


def handle_errors(command: Callable[P, R]) -> Callable[P, R]:
    """Map the error tree to exit codes (``exit_code``): ``Unavailable`` 3, ``InputError`` 2, any other
    ``UpgradeGateError`` 1."""

    @functools.wraps(command)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return command(*args, **kwargs)
        except UpgradeGateError as error:
            fail(str(error), exit_code(error))

    return wrapper


def echo_json(document: Any) -> None:
    """Print ``document`` as ``json_text`` does."""
    click.echo(json_text(document), nl=False)


@dataclass(frozen=True, slots=True)
class Output:
    """Where a command's results go: ``format`` (a choice of ``output_options``) and ``file`` (``--output-file``,
    ``None`` for stdout)."""

    format: str
    file: Path | None = None

    def emit(self, render: Callable[[str], str]) -> None:
        """Print ``render(format)`` on stdout, or write it to ``file`` atomically (a temporary file beside it,
        renamed over it: a reader never sees half a report); then, for a format other than ``table``, print
        ``render("table")`` on stdout so that a CI log shows the result too. Raises ``InputError`` when the file
        cannot be written."""
        text = render(self.format)
        if self.file is None:
            click.echo(text, nl=False)
            return
        write_atomically(self.file, text)
        if self.format != "table":
            click.echo(render("table"), nl=False)


def write_atomically(path: Path, text: str) -> None:
    """Write ``text`` (UTF-8) to ``path`` through a temporary file in its directory and ``os.replace``; raises
    ``InputError`` ``--output-file <path>: cannot write: <reason>``."""
    temporary: Path | None = None
    try:
        handle, name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        temporary = Path(name)
        with os.fdopen(handle, "w", encoding="utf-8") as stream:
            stream.write(text)
        temporary.replace(path)
    except OSError as error:
        if temporary is not None:
            temporary.unlink(missing_ok=True)
        raise InputError(f"--output-file {path}: cannot write: {error.strerror or error}") from None


class _Formats(click.Choice):  # type: ignore[type-arg]
    """``click.Choice`` that also takes hidden deprecated ``aliases`` (alias to format) and answers the format."""

    def __init__(self, formats: Sequence[str], aliases: Mapping[str, str]) -> None:
        super().__init__(list(formats))
        self.aliases = dict(aliases)

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        return super().convert(self.aliases.get(value, value), param, ctx)


def output_options(
    formats: Sequence[str] = ("table", "json", "junit"), *, aliases: Mapping[str, str] | None = None
) -> Callable[[Callable[..., R]], Callable[..., R]]:
    """``-o/--output FORMAT`` (the first of ``formats`` by default; ``aliases`` are accepted and not shown) and
    ``--output-file FILE``; the command receives them as one keyword argument ``output: Output``."""

    def decorate(command: Callable[..., R]) -> Callable[..., R]:
        @functools.wraps(command)
        def wrapper(*args: Any, output: str, output_file: Path | None, **kwargs: Any) -> R:
            return command(*args, output=Output(output, output_file), **kwargs)

        with_file = click.option(
            "--output-file",
            type=click.Path(dir_okay=False, path_type=Path),
            metavar="FILE",
            help="Write the output to FILE (atomically) instead of stdout; json and junit print the table too.",
        )(wrapper)
        return click.option(
            "-o",
            "--output",
            type=_Formats(formats, aliases or {}),
            default=formats[0],
            show_default=True,
            help="Output format.",
        )(with_file)

    return decorate


def parse_now(text: str) -> datetime.datetime:
    """An RFC 3339 time (UTC when it names no offset); raises ``InputError`` ``--now '<text>': expected an RFC
    3339 time such as 2026-06-01T12:00:00Z``."""
    try:
        moment = datetime.datetime.fromisoformat(text.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        raise InputError(f"--now {text!r}: expected an RFC 3339 time such as 2026-06-01T12:00:00Z") from None
    return moment if moment.tzinfo else moment.replace(tzinfo=datetime.UTC)


def _now(_ctx: click.Context, _param: click.Parameter, value: str | None) -> datetime.datetime:
    if value is None:
        return datetime.datetime.now(datetime.UTC)
    try:
        return parse_now(value)
    except InputError as error:
        fail(str(error), EXIT_BAD_INPUT)


def now_option() -> Callable[[Callable[P, R]], Callable[P, R]]:
    """``--now RFC3339``: the time the command evaluates at (``clock.now()``), parsed once into an aware
    ``datetime`` (the current time, UTC, when not given); a bad value is one line and exit 2."""
    return click.option(
        "--now",
        metavar="RFC3339",
        callback=_now,
        help="Evaluate at this time (clock.now()), e.g. 2026-06-01T12:00:00Z.  [default: the current time]",
    )


def table(header: Sequence[str], rows: Iterable[Sequence[str]]) -> list[str]:
    """The lines of a table: every column but the last padded to its widest cell, two spaces between columns,
    trailing blanks stripped."""
    lines = [header, *rows]
    widths = [max(len(row[i]) for row in lines) for i in range(len(header) - 1)]
    return [
        ("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=False)) + "  " + row[-1]).rstrip()
        for row in lines
    ]


@dataclass(frozen=True, slots=True)
class Case:
    """A JUnit test case: ``failure`` is its failure message (``None``: it passed), ``output`` its system-out."""

    name: str
    classname: str
    failure: str | None = None
    failure_type: str = ""
    output: str = ""


def junit_suite(root: ET.Element, name: str, cases: Sequence[Case]) -> None:
    """Append a JUnit ``testsuite`` ``name`` of ``cases`` to ``root`` (the shape Jenkins' JUnit schema reads: a
    ``failure`` with ``message`` and ``type`` per failing case, ``system-out`` for a note)."""
    failures = sum(1 for case in cases if case.failure is not None)
    suite = ET.SubElement(root, "testsuite", name=name, tests=str(len(cases)), failures=str(failures), errors="0")
    for case in cases:
        element = ET.SubElement(suite, "testcase", name=case.name, classname=case.classname)
        if case.failure is not None:
            ET.SubElement(element, "failure", message=case.failure, type=case.failure_type).text = case.failure
        if case.output:
            ET.SubElement(element, "system-out").text = case.output


def junit_cases(command: str, cases: Sequence[Case]) -> ET.Element:
    """The JUnit document ``testsuites`` ``upgrade-gate <command>`` of one test suite ``command`` of ``cases``."""
    root = ET.Element("testsuites", name=f"upgrade-gate {command}")
    junit_suite(root, command, cases)
    return root


def rendered(
    form: str,
    *,
    table: Callable[[], str],
    document: Callable[[], Any],
    junit: Callable[[], ET.Element] | None = None,
) -> str:
    """The output in the format ``form``: ``document()`` as ``json_text``, ``junit()`` as ``junit_text``, else
    ``table()``. Each is called only when asked for."""
    if form == "json":
        return json_text(document())
    if form == "junit" and junit is not None:
        return junit_text(junit())
    return table()


def junit_text(root: ET.Element) -> str:
    """``root`` as an indented XML document with its declaration."""
    ET.indent(root)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def json_text(document: Any) -> str:
    """``document`` as indented JSON with sorted keys and a final newline (stable for diffs and tests)."""
    return json.dumps(document, indent=2, sort_keys=True) + "\n"
