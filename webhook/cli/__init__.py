"""The ``upgrade-gate`` command line: one thin module per command group.

Exit codes, for every command: 0 success, 1 a negative result (denied, unresolvable, failing test case),
2 bad input (one line on stderr, never a traceback).
"""

from __future__ import annotations

import click

from webhook.cli.resolve import resolve


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(package_name="upgrade-gate")
def main() -> None:
    """Govern operator upgrades as code.

    \b
    Resolve upgrades exactly as OLM v1 does:   upgrade-gate resolve -f ext.yaml --catalog DIR
    """


main.add_command(resolve)
