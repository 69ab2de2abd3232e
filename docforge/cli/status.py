"""`docforge status`: what is indexed, with which model generations (docs/generations.md)."""

from __future__ import annotations

import json

import click

from docforge.cli.options import config_option, json_option


@click.command("status")
@config_option
@json_option
def command(config: str, as_json: bool) -> None:
    """Show sources, document and chunk counts, model and dimension."""
    from docforge.cli.running import in_progress_line, ingesting
    from pipeline.config import load_settings
    from pipeline.store import generations
    from pipeline.store.admin import per_source
    from pipeline.store.db import connect, store_url
    from pipeline.store.schema import open_built

    settings = load_settings(config)
    with connect(store_url(settings)) as conn:
        built = open_built(conn)
        sources = per_source(conn, [s.name for s in settings.sources], built=bool(built))
        gens = [_generation(conn, g) for g in generations.every(conn) if g.state != "dropped"] if built else []
        running = ingesting(conn, [s.name for s in settings.sources])
    report = {
        "model": built[0] if built else None,
        "dimension": built[1] if built else None,
        "documents": sum(s["documents"] for s in sources),
        "chunks": sum(s["chunks"] for s in sources),
        "generations": gens,
        "sources": sources,
        "ingesting": running,
    }
    if built and (configured := _configured(settings)) != built[0]:
        report["configured_model"] = configured  # sources.yml names another model than the store's
    if as_json:
        click.echo(json.dumps(report, indent=2))
        return
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text  # names and the model path are text, never rich markup

    from docforge.cli.when import ago
    from pipeline.printable import printable  # a name or path holding a control shows it as `\\x1b`

    if built:
        heading = f"model {report['model']} · dim {report['dimension']}"
    elif running:
        heading = f"nothing indexed yet: {in_progress_line(running)}"
    else:
        heading = (
            "nothing indexed yet: `docforge ingest` indexes the configured sources, `docforge ingest PATH…` a folder"
        )
    table = Table("source", "documents", "chunks", "failures", "last indexed", title=Text(printable(heading)))
    for s in sources:
        table.add_row(
            Text(printable(s["name"]) + ("" if s["configured"] else " (not in config)")),
            str(s["documents"]),
            str(s["chunks"]),
            str(s["failures"]),
            "ingesting now" if s["name"] in running else ago(s["last_indexed"]),
        )
    console = Console()
    console.print(Text(printable(f"config: {settings.config_path} · store: {settings.home}"), style="dim"))
    console.print(table)
    if "configured_model" in report:
        console.print(
            Text(
                printable(
                    f"embedding.model is {report['configured_model']}, but the store's vectors come from "
                    f"{report['model']}: search and ingest follow the store; `docforge reindex --model "
                    f"{settings.embedding.model}` switches it"
                )
            )
        )
    for g in gens:
        line = f"generation {g['id']} · {g['state']} · {g['model']} · dim {g['dimension']} ({g['vector_type']})"
        if g["state"] == "building":
            line += f" · {g['vectors']}/{g['chunks']} chunks embedded"
        console.print(Text(printable(line)))


def _generation(conn, gen) -> dict:
    """A generation as status shows it; a building one with its progress."""
    row = {
        "id": gen.id,
        "state": gen.state,
        "model": gen.model,
        "name": gen.name,
        "dimension": gen.dimension,
        "vector_type": gen.vector_type,
        "live_at": gen.live_at.isoformat() if gen.live_at else None,
    }
    if gen.state == "building":
        from pipeline.store import generations

        row["vectors"], row["chunks"] = generations.coverage(conn, gen)
    return row


def _configured(settings) -> str:
    """The model id sources.yml's embedding.model resolves to (no model loaded)."""
    from pipeline.embed import locate

    return locate(settings.embedding.model)[0]
