"""The `docforge` command group: commands loaded on use, one module per command."""

from __future__ import annotations

import importlib
import logging
import sys

import click

from docforge.cli.extras import missing_extra
from docforge.cli.options import CONFIG_HELP
from pipeline import __version__
from pipeline.errors import DocforgeError

CONTEXT = {"help_option_names": ["-h", "--help"]}


# Command name -> its module; a module is imported only when its command runs (or help lists them all), so
# `docforge verify` starts without the config, the store and the embedding stack.
COMMANDS = {
    "ingest": "ingest",
    "search": "search",
    "ask": "ask",
    "verify": "verify",
    "tune": "tune",
    "answers": "answers",
    "gaps": "gaps",
    "status": "status",
    "sources": "sources",
    "reindex": "reindex",
    "db": "db",
    "serve": "serve",
}


class LazyGroup(click.Group):
    """Commands loaded on use; DocforgeError becomes a clean one-line error (exit 1) instead of a traceback."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in COMMANDS:
            return None
        return importlib.import_module(f"docforge.cli.{COMMANDS[cmd_name]}").command

    def invoke(self, ctx: click.Context):
        from pipeline.printable import printable

        try:
            return super().invoke(ctx)
        except click.ClickException as e:  # a message may name a document: its controls shown, not obeyed
            e.message = printable(e.message, lines=True)
            raise
        except DocforgeError as e:
            raise click.ClickException(printable(str(e), lines=True)) from None
        except ModuleNotFoundError as e:  # an install without the extra this command needs
            if (hint := missing_extra(e)) is None:
                raise
            raise click.ClickException(hint) from None


@click.group(cls=LazyGroup, context_settings=CONTEXT)
@click.version_option(__version__, "--version", prog_name="docforge")
@click.option("-v", "--verbose", count=True, help="More log output on stderr (-vv for debug).")
@click.option("--config", "-c", "config", default=None, type=click.Path(dir_okay=False), help=CONFIG_HELP)
def main(verbose: int, config: str | None) -> None:
    """docforge: keep a search index of your documentation fresh.

    \b
    Examples:
      docforge ingest                      # every source in ./sources.yml
      docforge search "how do I deploy?"   # hybrid search with citations
      docforge status --json
    """
    level = logging.WARNING - 10 * verbose
    logging.basicConfig(level=level, stream=sys.stderr, format="%(levelname)s %(name)s: %(message)s")
    from pipeline.redact import redact_logs

    redact_logs()  # every library's records too: httpcore's debug log prints echoed headers
    from docforge.cli.quiet import quiet_third_parties

    quiet_third_parties(verbose)
