"""The ``upgrade-gate`` command line: one thin module per command group, one convention (``webhook.cli.common``,
docs/cli.md "Conventions").

Exit codes, for every command: 0 success, 1 a negative result (denied, unresolvable, failing test case),
2 bad input (one line on stderr, never a traceback), 3 a service the command needs was unavailable (retry).
"""

from __future__ import annotations

from typing import Any

import click

from webhook.cli.apply import apply_command
from webhook.cli.cel import cel
from webhook.cli.certs import certs
from webhook.cli.common import EXIT_BAD_INPUT, fail
from webhook.cli.controller import controller
from webhook.cli.doctor import doctor
from webhook.cli.policy import policy
from webhook.cli.resolve import resolve
from webhook.cli.review import review
from webhook.cli.serve import serve
from webhook.cli.sync import sync

__all__ = ["main"]


class _Cli(click.Group):
    """The command group: a usage error (an unknown option, a missing file, a bad value) is one line on stderr,
    ``upgrade-gate: <what is wrong> (see '<command> --help')``, and exit 2, as every other bad input, instead of
    click's usage block."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except click.UsageError as error:
            where = error.ctx.command_path if error.ctx is not None else ctx.command_path
            fail(f"{error.format_message()} (see '{where} --help')", EXIT_BAD_INPUT)


@click.group(cls=_Cli, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(package_name="upgrade-gate")
def main() -> None:
    """Govern operator upgrades as code.

    \b
    Serve policies to the kube-apiserver:      upgrade-gate serve --policies policies/
    Resolve upgrades exactly as OLM v1 does:   upgrade-gate resolve -f ext.yaml --catalog DIR
    Propose upgrades as pull requests:        upgrade-gate sync --repo URL --once
    Check a pull request in CI:               upgrade-gate review --pull 42
    Check manifests against the policies:     upgrade-gate apply -f revision.yaml --as alice
    Test admission policies as code:          upgrade-gate policy test policies/tests
    Check policies, and which are portable:   upgrade-gate policy lint policies
    Report and clean up revisions in-cluster: upgrade-gate controller --mode gitops
    Check that upgrades are really held:      upgrade-gate doctor
    Try a CEL expression:                     upgrade-gate cel eval 'semver("1.2.3").major()'
    """


main.add_command(resolve)
main.add_command(policy)
main.add_command(cel)
main.add_command(serve)
main.add_command(certs)
main.add_command(sync)
main.add_command(review)
main.add_command(apply_command)
main.add_command(controller)
main.add_command(doctor)
