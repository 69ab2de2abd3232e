"""`docforge sources`: list and validate the configured sources, with what the store holds of each."""

from __future__ import annotations

import json

import click

from docforge.cli.options import config_option, json_option
from pipeline.config import load_settings
from pipeline.errors import DocforgeError


@click.command("sources")
@config_option
@json_option
@click.option("--no-counts", is_flag=True, help="Only validate and list: do not open the store for counts.")
def command(config: str | None, as_json: bool, no_counts: bool) -> None:
    """Validate sources.yml and list its sources (exit 1 with the problem if invalid).

    The table: name, type, location (and who may read it, when its `access:`
    says), documents, chunks and last ingest of each.
    """
    settings = load_settings(config)
    counts, problem = ({}, None) if no_counts else _counts(settings)
    if as_json:
        rows = [s.model_dump(mode="json") | _stored(counts, s.name) for s in settings.sources]
        click.echo(json.dumps(rows, indent=2))
        return
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    import docforge.cli.render as render
    from docforge.cli.when import ago
    from pipeline.printable import printable  # a path holding a control shows it as `\\x1b`

    console = Console(highlight=False)
    console.print(Text(printable(f"config: {settings.config_path}"), style="dim"))
    if not settings.sources:
        console.print("No sources configured: add a `sources:` list, or run `docforge ingest PATH…` for a folder.")
        return
    # Counts in a table; where each source reads from below it, a whole line each (a long path beside
    # five columns would be cut into pieces at 80 columns), broken after a `/` when it must wrap.
    table = Table("name", "type", "documents", "chunks", "last ingest")
    places = Table.grid(padding=(0, 1))
    places.add_column(no_wrap=True)
    places.add_column(overflow="fold")
    name_width = max(len(s.name) for s in settings.sources)
    for s in settings.sources:
        stored = counts.get(s.name)
        table.add_row(
            Text(printable(s.name)),
            s.type,
            str(stored["documents"]) if stored else "-",
            str(stored["chunks"]) if stored else "-",
            ago(stored["last_indexed"], exact=False) if stored else "-",
        )
        where = render.path_lines(Text(printable(_location(s))), console.width - name_width - 2)
        if s.access is not None:
            where.append(f"\nreadable by: {printable(', '.join(s.access)) or 'admins only'}")
        places.add_row(Text(printable(s.name) + ":", style="bold"), where)
    console.print(table)
    console.print(places)
    if problem:
        console.print(Text(printable(f"counts unavailable: {problem}"), style="yellow"))


def _location(s) -> str:
    """Where a source reads from: a repository, a folder, a site and space."""
    if s.type == "confluence":
        return f"{s.base_url} (space {s.space})" if s.space else s.base_url
    return str(getattr(s, "repo", None) or getattr(s, "path", ""))


def _counts(settings) -> tuple[dict[str, dict], str | None]:
    """{source: its documents, chunks, last ingest}; a store that cannot be read gives {} and why."""
    from pipeline.store.admin import per_source
    from pipeline.store.db import connect, store_url
    from pipeline.store.schema import open_built

    try:
        with connect(store_url(settings)) as conn:
            built = open_built(conn) is not None
            rows = per_source(conn, [s.name for s in settings.sources], built=built)
    except DocforgeError as e:
        return {}, str(e)
    return {r["name"]: r for r in rows}, None


def _stored(counts: dict[str, dict], name: str) -> dict:
    r = counts.get(name)
    return {k: r[k] for k in ("documents", "chunks", "last_indexed")} if r else {}
