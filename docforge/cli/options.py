"""Options that several commands share (`from docforge.cli.options import config_option`).

They live here, not in the package's __init__, which imports every command: a command
importing its own package back would be an import cycle.
"""

from __future__ import annotations

import json

import click

config_option = click.option(
    "--config",
    "-c",
    "config",
    default="sources.yml",
    show_default=True,
    envvar="DOCFORGE_CONFIG",
    type=click.Path(dir_okay=False),
    help="Path to sources.yml [env: DOCFORGE_CONFIG].",
)
json_option = click.option("--json", "as_json", is_flag=True, help="Print JSON on stdout, for machines.")


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
