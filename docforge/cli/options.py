"""Options that several commands share (`from docforge.cli.options import config_option`).

They live here, not in the package's __init__, which imports every command: a command
importing its own package back would be an import cycle.
"""

from __future__ import annotations

import json

import click

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
