"""`docforge status`: what is indexed, with which model."""

from __future__ import annotations

import json

import click

from docforge.cli import config_option, json_option
from pipeline.config import load_settings
from pipeline.store.db import connect, store_url
from pipeline.store.schema import store_model

_PER_SOURCE = """
SELECT s.partition, count(DISTINCT s.key), count(c.id), max(s.last_crawled_at)
FROM sources s LEFT JOIN chunks c ON c.source_key = s.key GROUP BY s.partition
"""


@click.command("status")
@config_option
@json_option
def command(config: str, as_json: bool) -> None:
    """Show sources, document and chunk counts, model and dimension."""
    settings = load_settings(config)
    with connect(store_url(settings)) as conn:
        built = store_model(conn)
        rows = {r[0]: r[1:] for r in conn.execute(_PER_SOURCE)} if built else {}
        fails = dict(conn.execute("SELECT partition, count(*) FROM failures GROUP BY partition").fetchall()) if built else {}
    names = list(dict.fromkeys([s.name for s in settings.sources] + list(rows)))
    sources = [{"name": n, "configured": any(s.name == n for s in settings.sources),
                "documents": rows.get(n, (0, 0, None))[0], "chunks": rows.get(n, (0, 0, None))[1],
                "last_indexed": rows[n][2].isoformat() if n in rows and rows[n][2] else None,
                "failures": fails.get(n, 0)} for n in names]
    report = {"model": built[0] if built else None, "dimension": built[1] if built else None,
              "documents": sum(s["documents"] for s in sources), "chunks": sum(s["chunks"] for s in sources),
              "sources": sources}
    if as_json:
        click.echo(json.dumps(report, indent=2))
        return
    from rich.console import Console
    from rich.table import Table

    table = Table("source", "documents", "chunks", "failures", "last indexed",
                  title=f"model {report['model']} · dim {report['dimension']}")
    for s in sources:
        table.add_row(s["name"] + ("" if s["configured"] else " (not in config)"), str(s["documents"]),
                      str(s["chunks"]), str(s["failures"]), s["last_indexed"] or "never")
    Console().print(table)
