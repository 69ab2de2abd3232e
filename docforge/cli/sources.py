"""`docforge sources`: list and validate the configured sources."""

from __future__ import annotations

import json

import click

from docforge.cli.options import config_option, json_option
from pipeline.config import load_settings


@click.command("sources")
@config_option
@json_option
def command(config: str, as_json: bool) -> None:
    """Validate sources.yml and list its sources (exit 1 with the problem if invalid)."""
    settings = load_settings(config)
    rows = [s.model_dump(mode="json") for s in settings.sources]
    if as_json:
        click.echo(json.dumps(rows, indent=2))
        return
    for s in settings.sources:
        where = getattr(s, "repo", None) or getattr(s, "base_url", "")
        click.echo(f"{s.name}\t{s.type}\t{where}")
