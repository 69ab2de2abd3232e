"""The `docforge` command group; one module per command."""

from __future__ import annotations

import json
import logging
import sys

import click

from pipeline import __version__
from pipeline.errors import DocforgeError

CONTEXT = {"help_option_names": ["-h", "--help"]}
CONFIG_HELP = (
    "Path to sources.yml [env: DOCFORGE_CONFIG; default: ./sources.yml, else the sources "
    "`docforge ingest PATH…` recorded]."
)


def _inherit_config(ctx: click.Context, param, value: str | None) -> str | None:
    """`docforge -c x status` and `docforge status -c x` are the same: a flag given on the group beats
    DOCFORGE_CONFIG as the subcommand's own flag would."""
    group = ctx.find_root().params.get("config")
    typed = ctx.get_parameter_source(param.name) == click.core.ParameterSource.COMMANDLINE
    return value if typed or group is None else group


config_option = click.option(
    "--config",
    "-c",
    "config",
    default=None,
    envvar="DOCFORGE_CONFIG",
    type=click.Path(dir_okay=False),
    callback=_inherit_config,
    help=CONFIG_HELP,
)
# pipeline.query.MODES, named here so that `--help` and `ingest` do not import the search stack (models,
# HTTP clients: most of a second); tests/test_first_hour.py checks the two agree.
SEARCH_MODES = ("dense", "keyword", "hybrid")
json_option = click.option("--json", "as_json", is_flag=True, help="Print JSON on stdout, for machines.")


def mode_option(help: str, envvar: str | None = None):
    """`--mode/-m`: dense, keyword or hybrid (the default)."""
    return click.option(
        "--mode",
        "-m",
        type=click.Choice(SEARCH_MODES),
        default="hybrid",
        show_default=True,
        envvar=envvar,
        help=help,
    )


def filter_option(help: str):
    """`--filter/-f JSON`: a filter expression (docs/query.md), parsed into `filters`."""
    return click.option("--filter", "-f", "filters", callback=_parse_filter, metavar="JSON", help=help)


def _parse_filter(ctx, param, value: str | None) -> dict | None:
    if not value:
        return None
    try:
        expr = json.loads(value)
    except json.JSONDecodeError as e:
        raise click.BadParameter(f"not valid JSON ({e.msg} at column {e.colno})") from None
    if not isinstance(expr, dict):
        raise click.BadParameter('must be a JSON object, e.g. \'{"tags": "ops"}\'')
    return expr


class Group(click.Group):
    """Turn DocforgeError into a clean one-line error (exit 1) instead of a traceback."""

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except DocforgeError as e:
            raise click.ClickException(str(e)) from None


@click.group(cls=Group, context_settings=CONTEXT)
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
    from docforge.cli.quiet import quiet_third_parties

    quiet_third_parties(verbose)


def _register() -> None:
    from docforge.cli import answers, ask, db, ingest, reindex, search, serve, sources, status, verify

    for mod in (ingest, search, ask, verify, answers, status, sources, reindex, db, serve):
        main.add_command(mod.command)


_register()
