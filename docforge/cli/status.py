"""`docforge status`: what is indexed, with which model generations (docs/generations.md)."""

from __future__ import annotations

import json

import click
from psycopg.rows import dict_row

from docforge.cli import config_option, json_option
from pipeline.config import load_settings
from pipeline.store import generations
from pipeline.store.db import connect, store_url
from pipeline.store.schema import open_built

_PER_SOURCE = """
SELECT d.source, count(DISTINCT d.key) AS documents, count(c.id) AS chunks, max(d.last_crawled_at) AS last_indexed
FROM documents d LEFT JOIN chunks c ON c.doc_key = d.key GROUP BY d.source
"""


@click.command("status")
@config_option
@json_option
def command(config: str, as_json: bool) -> None:
    """Show sources, document and chunk counts, model and dimension."""
    settings = load_settings(config)
    with connect(store_url(settings)) as conn:
        built = open_built(conn)
        with conn.cursor(row_factory=dict_row) as cur:
            rows = {r["source"]: r for r in cur.execute(_PER_SOURCE)} if built else {}
        fails = dict(conn.execute("SELECT source, count(*) FROM failures GROUP BY source").fetchall()) if built else {}
        gens = [_generation(conn, g) for g in generations.every(conn) if g.state != "dropped"] if built else []
    names = list(dict.fromkeys([s.name for s in settings.sources] + list(rows)))
    none = {"documents": 0, "chunks": 0, "last_indexed": None}
    sources = [{"name": n, "configured": any(s.name == n for s in settings.sources),
                "documents": rows.get(n, none)["documents"], "chunks": rows.get(n, none)["chunks"],
                "last_indexed": last.isoformat() if (last := rows.get(n, none)["last_indexed"]) else None,
                "failures": fails.get(n, 0)} for n in names]
    report = {"model": built[0] if built else None, "dimension": built[1] if built else None,
              "documents": sum(s["documents"] for s in sources), "chunks": sum(s["chunks"] for s in sources),
              "generations": gens, "sources": sources}
    if as_json:
        click.echo(json.dumps(report, indent=2))
        return
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text  # names and the model path are text, never rich markup

    table = Table("source", "documents", "chunks", "failures", "last indexed",
                  title=Text(f"model {report['model']} · dim {report['dimension']}"))
    for s in sources:
        table.add_row(Text(s["name"] + ("" if s["configured"] else " (not in config)")), str(s["documents"]),
                      str(s["chunks"]), str(s["failures"]), s["last_indexed"] or "never")
    console = Console()
    console.print(table)
    for g in gens:
        line = f"generation {g['id']} · {g['state']} · {g['model']} · dim {g['dimension']} ({g['vector_type']})"
        if g["state"] == "building":
            line += f" · {g['vectors']}/{g['chunks']} chunks embedded"
        console.print(Text(line))


def _generation(conn, gen: generations.Generation) -> dict:
    """A generation as status shows it; a building one with its progress."""
    row = {"id": gen.id, "state": gen.state, "model": gen.model, "name": gen.name, "dimension": gen.dimension,
           "vector_type": gen.vector_type, "live_at": gen.live_at.isoformat() if gen.live_at else None}
    if gen.state == "building":
        row["vectors"], row["chunks"] = generations.coverage(conn, gen)
    return row
