"""`docforge search`: query the index, with citations."""

from __future__ import annotations

import json

import click

from pipeline.cli import config_option, json_option
from pipeline.config import load_settings
from pipeline.query import MODES, Searcher


@click.command("search")
@click.argument("query")
@config_option
@click.option("--mode", "-m", type=click.Choice(MODES), default="hybrid", show_default=True,
              envvar="DOCFORGE_SEARCH_MODE", help="Dense vectors, keyword (full text), or both fused.")
@click.option("--limit", "-n", type=click.IntRange(1, 100), default=5, show_default=True, help="Hits to return.")
@json_option
def command(query: str, config: str, mode: str, limit: int, as_json: bool) -> None:
    """Search the indexed documentation.

    \b
    Examples:
      docforge search "how do I rotate credentials?"
      docforge search "error E0502" --mode keyword --json
    """
    searcher = Searcher(load_settings(config))
    try:
        hits = searcher.search(query, limit=limit, mode=mode)
    finally:
        searcher.close()
    if as_json:
        keys = ("source", "url", "title", "section", "text", "score", "chunk_index", "partition", "type")
        click.echo(json.dumps([{k: h.as_dict()[k] for k in keys} for h in hits], indent=2, ensure_ascii=False))
        return
    _print(query, hits)


def _print(query: str, hits) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console()
    if not hits:
        console.print(f"No results for {query!r}.")
        return
    table = Table("#", "score", "title › section", "excerpt", "citation", title=f"Results for {query!r}",
                  show_lines=True)
    for i, h in enumerate(hits, 1):
        excerpt = " ".join(h.text.split())[:160]
        where = h.title + (f" › {h.section}" if h.section and h.section != h.title else "")
        table.add_row(str(i), f"{h.score:.3f}", where, excerpt, h.url)
    console.print(table)
