"""``upgrade-gate apply``: check plain manifests against the policies, offline, as the API server would admit them."""

from __future__ import annotations

import datetime
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import click

from webhook.cli.common import (
    EXIT_NEGATIVE,
    Case,
    Output,
    cel_engine_option,
    fail,
    handle_errors,
    junit_cases,
    kubernetes_version_option,
    now_option,
    output_options,
    rendered,
    table,
)
from webhook.errors import InputError
from webhook.manifests import manifest_files, read_text
from webhook.plan import APPLY_OPERATIONS, AUTHENTICATED, Apply, ApplyRow, UserInfo, apply, read_manifests, rfc3339
from webhook.policy import load_policy_set
from webhook.settings import default_policies

DEFAULT_USER = "kubernetes-admin"
"""The user of kubeadm's admin kubeconfig, whom ``kubectl apply`` runs as on a fresh cluster."""
_COLUMNS = ("FILE", "OBJECT", "OPERATION", "VERDICT", "POLICY", "MESSAGE")
_PATHS = click.Path(exists=True, path_type=Path)


@click.command("apply")
@click.option(
    "-f",
    "--filename",
    "manifests",
    multiple=True,
    required=True,
    type=_PATHS,
    metavar="FILE|DIR",
    help="Manifests to check: a file (several YAML documents, or JSON) or a directory (recursively); repeatable.",
)
@click.option(
    "--policies",
    multiple=True,
    default=lambda: [str(default_policies())],
    type=_PATHS,
    metavar="DIR|FILE",
    help="The admission policies, their bindings and param objects (the settings ConfigMap); repeatable.  "
    "[default: ./policies, else the bundled policies installed with upgrade-gate]",
)
@click.option("--as", "as_user", default=DEFAULT_USER, show_default=True, metavar="USER", help="The requesting user.")
@click.option("--as-group", multiple=True, metavar="GROUP", help="A group of the user (repeatable).")
@click.option(
    "--operation",
    type=click.Choice(APPLY_OPERATIONS),
    help="Send every object as this operation.  [default: UPDATE when --cluster-objects holds it, else CREATE]",
)
@click.option(
    "--cluster-objects",
    multiple=True,
    type=_PATHS,
    metavar="DIR|FILE",
    help="Objects the cluster holds: old objects of UPDATEs, params, cluster.get/list lookups; repeatable.",
)
@output_options()
@now_option()
@cel_engine_option()
@kubernetes_version_option()
@handle_errors
def apply_command(
    *,
    manifests: tuple[Path, ...],
    policies: tuple[Path, ...],
    as_user: str,
    as_group: tuple[str, ...],
    operation: str | None,
    cluster_objects: tuple[Path, ...],
    output: Output,
    now: datetime.datetime,
    cel_engine: str,
    kubernetes_version: str,
) -> None:
    """Check Kubernetes manifests against the admission policies, offline, as the API server would admit them.

    Every object of the manifests becomes the admission request applying it sends: a CREATE, or an UPDATE with
    the cluster's object as oldObject when --cluster-objects holds one of the same group, kind, namespace and
    name. The mutating policies run first (their patch is shown), then the validating policies on the patched
    object. Params and cluster.get/list lookups read --cluster-objects, the param objects beside the policies
    (their settings ConfigMap), and the objects admitted before in the same run, in file and document order, as
    kubectl apply -f writes them one after the other. The user has the group system:authenticated, as every
    authenticated user, and the --as-group groups.

    One row per object: FILE (file:line), OBJECT, OPERATION, VERDICT (admitted, warned, denied, invalid),
    POLICY (the one that denied, or those that warned) and MESSAGE (the denial, the warnings, the patch). A
    document that is not YAML or not a Kubernetes object is an invalid row at the parser's line. -o junit: one
    test case per row, a failure when denied or invalid.

    \b
    Examples:
      upgrade-gate apply -f clusters/prod/revisions/ --as alice --as-group platform-admins
      upgrade-gate apply -f revision.yaml --cluster-objects cluster/ -o junit --output-file apply.xml
    \b
    Exit codes: 0 every object admitted (warnings too); 1 an object denied or invalid; 2 bad input (no policies,
    an unreadable file, no object to check).
    """
    policy_set = load_policy_set(policies, engine=cel_engine, version=kubernetes_version)
    if not (policy_set.validating_policies or policy_set.mutating_policies):
        raise InputError(f"no admission policy in {_names(policies)}")
    subjects = read_manifests(_texts(manifests))
    if not subjects.objects and not subjects.problems:
        raise InputError(f"no Kubernetes object in {_names(manifests)}")
    cluster = read_manifests(_texts(cluster_objects))
    if cluster.problems:
        raise InputError(f"--cluster-objects: {cluster.problems[0]}")
    user = UserInfo(as_user, (*dict.fromkeys(as_group), AUTHENTICATED))
    inputs = Apply(subjects, [m.object for m in cluster.objects], policy_set, user, now, operation)
    rows = apply(inputs)
    output.emit(lambda form: _render(form, rows, inputs))
    failing = [row for row in rows if row.failing]
    if failing:
        fail(f"{len(failing)} of {len(rows)} objects not admitted ({_counts(failing)})", EXIT_NEGATIVE)


def _names(paths: Iterable[Path]) -> str:
    return ", ".join(map(str, paths))


def _texts(paths: Iterable[Path]) -> dict[str, str]:
    """``{file: text}`` of the files given and the manifest files below the directories given; raises
    ``ManifestError`` (bad input) for a file that cannot be read, ``InputError`` for a directory without any."""
    texts: dict[str, str] = {}
    for path in paths:
        files = manifest_files(path) if path.is_dir() else [path]
        if not files:
            raise InputError(f"{path}: no manifest file (*.yaml, *.yml, *.json) in it")
        texts.update((str(file), read_text(file)) for file in files)
    return texts


def _counts(rows: Iterable[ApplyRow]) -> str:
    counts: dict[str, int] = {}
    for row in rows:
        counts[row.verdict] = counts.get(row.verdict, 0) + 1
    return ", ".join(f"{n} {verdict}" for verdict, n in sorted(counts.items()))


def _render(form: str, rows: list[ApplyRow], inputs: Apply) -> str:
    return rendered(
        form,
        table=lambda: _table(rows, inputs),
        document=lambda: _document(rows, inputs),
        junit=lambda: junit_cases("apply", [_case(row) for row in rows]),
    )


def _table(rows: list[ApplyRow], inputs: Apply) -> str:
    summary = f"{_counts(rows)} (as {inputs.user.username}, at {rfc3339(inputs.now)})"
    cells = [
        (f"{r.file}:{r.line}", r.object, r.operation, r.verdict, r.policy or "-", _message(r).replace("\n", " "))
        for r in rows
    ]
    return "".join(f"{line}\n" for line in [*table(_COLUMNS, cells), summary])


def _message(row: ApplyRow) -> str:
    """The row's message, and its patch as ``patch: <op> <path>, ...``."""
    patch = ", ".join(f"{p['op']} {p['path']}" for p in row.patch)
    return "; ".join(part for part in (row.message, f"patch: {patch}" if patch else "") if part)


def _document(rows: list[ApplyRow], inputs: Apply) -> dict[str, Any]:
    """The JSON document (docs/cli.md, ``upgrade-gate apply``)."""
    return {
        "user": inputs.user.user_info(),
        "now": rfc3339(inputs.now),
        "results": [
            {
                "file": r.file,
                "line": r.line,
                "object": r.object,
                "operation": r.operation,
                "verdict": r.verdict,
                "policy": r.policy or None,
                "message": r.message,
                "patch": [dict(p) for p in r.patch],
            }
            for r in rows
        ],
        "passed": not any(r.failing for r in rows),
    }


def _case(row: ApplyRow) -> Case:
    """A JUnit test case: ``<OPERATION> <object>`` (``<file>:<line>`` for an invalid document), class name the file;
    a failure of type ``denied`` or ``invalid`` with the message, else the message and the patch as system-out."""
    name = f"{row.operation} {row.object}" if row.object != "-" else f"{row.file}:{row.line}"
    if row.failing:
        return Case(name, row.file, row.message, row.verdict)
    message = _message(row)
    return Case(name, row.file, output=f"{row.verdict}: {message}" if message else "")
